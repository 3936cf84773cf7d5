/* ftbench: one command-line benchmark for every ftkernels kernel.
 *
 *   ftbench                                   the default suite
 *   ftbench layernorm --dtype fp16 --m 16384 --n 4096
 *   ftbench add_bias_residual_layernorm --sum --m 4096 --n 1024 --csv
 *   ftbench --list                            kernels and flags
 *
 * At start it measures the device's copy bandwidth (device-to-device cudaMemcpy, bytes
 * read + written). Each kernel is timed with CUDA events around every launch after a
 * warm-up, two ways (time_launches): per call (the host launching as the GPU runs) and
 * device (the launches queued behind a spinning kernel, run back to back); the medians
 * are reported. Inputs rotate through enough buffer sets that the
 * working set exceeds 3x the L2 cache, so no repeat reads what the previous left in L2.
 * Bytes are the fewest the operation must move: every input read once, every output
 * written once. Correctness is established by tests/ (run them first); here a launch
 * that returns an error aborts the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft/attention.cuh"
#include "ft/batching.cuh"
#include "ft/decoding.cuh"
#include "ft/encoder.cuh"
#include "ft/llama.cuh"
#include "ft/norm.cuh"
#include "ft/search.cuh"
#include "ft/topk.cuh"

#include "bert_layer.cuh"
#include "cuda_util.h"
#include "gemm_util.h"
#include "decoder_layer.cuh"
#include "inferencer.cuh"
#include "llama_layer.cuh"

typedef struct bench_opts {
    const char *kernel;
    ft_dtype dt;
    int64_t m, n;
    ft_act act;
    int sum; /* add_bias_residual_*: also write sum_out */
    /* attention */
    int batch, heads, kv_heads, head_size, len, layout, splits, impl;
    int indir; /* self_attention: beam width of a random cache indirection table (0: none) */
    int counters; /* self_ and cross_attention: split counters (FT_ATTN_SPLIT_COUNTERS); packed_attention:
                     tile counters (the persistent kernel at head size 128); zeroed once */
    int host;     /* also print the host's time inside each call (the launcher's own cost) */
    /* encoder pieces and layers */
    int seq, hidden, ffn, avg_len, mem_len, use_mask, remove_padding, causal;
    /* decoding: vocabulary, top-K / beam width, top-p, update_logits mode */
    int vocab, k, beam, mode;
    int form;   /* top-p sampling: ft_topp_form */
    int tkform; /* top-K selection and sampling, beam candidates: ft_topk_form */
    int tkblocks; /* the row form's blocks per row (0: its own choice) */
    int lgform; /* update_logits: ft_logits_form */
    int lgstats; /* update_logits stream form: stats warps (0: by the mode) */
    float p;
    int iters, warmup;
    int csv;
} bench_opts;

typedef struct bench_env {
    cudaDeviceProp prop;
    double copy_gbps;
} bench_env;

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- timing */

typedef ft_status (*launch_fn)(const bench_opts *o, void **bufs, cudaStream_t s);

/* Holds the GPU for `ns` nanoseconds (a queue filler: the launches behind it are queued
 * by the host while it runs, so they then run back to back). */
static __global__ void bench_spin(unsigned long long ns)
{
    const unsigned long long t0 = ft_globaltimer();
    do
        __nanosleep(1000);
    while (ft_globaltimer() - t0 < ns);
}

/* N(0, 1) in dtype `dt`, element i from a hash of (seed, i) (splitmix64, then Box-Muller):
 * the benchmark's random source, made on the device (a host loop took 10-20 s for the
 * gigabyte caches of the large attention rows). */
static __device__ __forceinline__ unsigned long long bench_mix(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static __global__ void bench_fill_normal(void *dst, size_t count, int dt, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const unsigned long long r = bench_mix(seed ^ bench_mix(i));
        const float u1 = ((float)(r >> 40) + 1.0f) * (1.0f / 16777216.0f); /* (0, 1] */
        const float u2 = (float)(r & 0xffffffull) * (1.0f / 16777216.0f);  /* [0, 1) */
        const float z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
        if (dt == FT_FP32)
            ((float *)dst)[i] = z;
        else if (dt == FT_FP16)
            ((__half *)dst)[i] = __float2half_rn(z);
        else
            ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(z);
    }
}

/* FILL_INTS: int32 uniform in [-100000, 100000] (an int8 GEMM's outputs); FILL_SCALES: fp32
 * uniform in [0.5e-3, 1.5e-3] (per-row and per-channel quantisation scales) */
static __global__ void bench_fill_ints(void *dst, size_t count, int scales, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const unsigned long long r = bench_mix(seed ^ bench_mix(i));
        if (scales)
            ((float *)dst)[i] = 0.5e-3f + 1e-3f * (float)(r >> 40) * (1.0f / 16777216.0f);
        else
            ((int *)dst)[i] = (int)(r % 200001ull) - 100000;
    }
}

static double host_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times `iters` launches, each on the next buffer set (bufs[set][...]), two ways; medians
 * in microseconds.
 *   per_call: the host launches one by one while the GPU runs them: what a plain loop of
 *             calls sees, the host's launch cost included where it exceeds the kernel's.
 *   device:   the same launches queued behind a spinning kernel, so the GPU runs them
 *             back to back: the kernels' own time (and the gaps between the kernels of
 *             one call), what a CUDA graph or a deep queue sees. The spin is lengthened
 *             until the host finished queueing before it ended. One event pair spans the
 *             queue (events between the calls would add their own GPU work, ~2 us, to
 *             each); the figure is its time over the number of calls.
 *   host:     the host's own time inside each call of the per-call pass (the launcher's
 *             checks, plan and launches; `--host` prints it). */
static void time_launches(const bench_opts *o, launch_fn fn, void ***sets, int nsets, cudaStream_t s,
                          float *per_call, float *device, float *host)
{
    cudaEvent_t *ev = (cudaEvent_t *)malloc(sizeof(cudaEvent_t) * 2 * o->iters);
    for (int i = 0; i < 2 * o->iters; i++)
        FT_CHECK_CUDA(cudaEventCreate(&ev[i]));
    for (int i = 0; i < o->warmup; i++) {
        if (fn(o, sets[i % nsets], s) != FT_OK) {
            fprintf(stderr, "ftbench: %s: %s\n", o->kernel, ft_last_error());
            exit(2);
        }
    }
    float *ms = (float *)malloc(sizeof(float) * o->iters);
    float *hs = (float *)malloc(sizeof(float) * o->iters); /* host us inside each call (pass 0) */
    double spin_s = 2e-3 + 20e-6 * o->iters;
    /* pass 0: per call; passes 1-5: queued, the spin doubled after a pass the host outran */
    for (int pass = 0; pass < 6; pass++) {
        const int queued = pass > 0;
        cudaEvent_t spun;
        if (queued) {
            FT_CHECK_CUDA(cudaEventCreate(&spun));
            bench_spin<<<1, 1, 0, s>>>((unsigned long long)(spin_s * 1e9));
            FT_CHECK_CUDA(cudaEventRecord(spun, s));
        }
        const double t0 = host_seconds();
        if (queued) /* one event pair around the whole queue: no event work between the calls */
            FT_CHECK_CUDA(cudaEventRecord(ev[0], s));
        for (int i = 0; i < o->iters; i++) {
            if (!queued)
                FT_CHECK_CUDA(cudaEventRecord(ev[2 * i], s));
            const double h0 = queued ? 0.0 : host_seconds();
            fn(o, sets[(o->warmup + i) % nsets], s);
            if (!queued) {
                hs[i] = (float)((host_seconds() - h0) * 1e6);
                FT_CHECK_CUDA(cudaEventRecord(ev[2 * i + 1], s));
            }
        }
        if (queued)
            FT_CHECK_CUDA(cudaEventRecord(ev[1], s));
        const double queue_s = host_seconds() - t0;
        /* still spinning after the host queued everything? then the timing is the GPU's */
        const int behind = queued && cudaEventQuery(spun) == cudaErrorNotReady;
        FT_CHECK_CUDA(cudaStreamSynchronize(s));
        FT_CHECK_CUDA(cudaGetLastError());
        if (queued)
            cudaEventDestroy(spun);
        if (!queued) {
            for (int i = 0; i < o->iters; i++)
                FT_CHECK_CUDA(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
            qsort(ms, o->iters, sizeof(float), cmp_float);
            *per_call = ms[o->iters / 2] * 1000.0f;
            qsort(hs, o->iters, sizeof(float), cmp_float);
            *host = hs[o->iters / 2];
            continue;
        }
        float total = 0.0f;
        FT_CHECK_CUDA(cudaEventElapsedTime(&total, ev[0], ev[1]));
        *device = total * 1000.0f / o->iters;
        if (behind)
            break;
        spin_s = 2.0 * (spin_s > queue_s ? spin_s : queue_s); /* the host outran the spin: longer */
    }
    for (int i = 0; i < 2 * o->iters; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    free(hs);
}

static double measure_copy_gbps(void)
{
    const size_t bytes = (size_t)512 << 20;
    void *a = dev_alloc(bytes), *b = dev_alloc(bytes);
    FT_CHECK_CUDA(cudaMemset(a, 1, bytes));
    cudaEvent_t e0, e1;
    FT_CHECK_CUDA(cudaEventCreate(&e0));
    FT_CHECK_CUDA(cudaEventCreate(&e1));
    float best[15];
    for (int i = 0; i < 3; i++)
        FT_CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    for (int i = 0; i < 15; i++) {
        FT_CHECK_CUDA(cudaEventRecord(e0, 0));
        FT_CHECK_CUDA(cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0));
        FT_CHECK_CUDA(cudaEventRecord(e1, 0));
        FT_CHECK_CUDA(cudaEventSynchronize(e1));
        FT_CHECK_CUDA(cudaEventElapsedTime(&best[i], e0, e1));
    }
    qsort(best, 15, sizeof(float), cmp_float);
    cudaFree(a);
    cudaFree(b);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return 2.0 * (double)bytes / (best[7] * 1e-3) / 1e9;
}

/* ---------------------------------------------------------------- kernels
 *
 * A kernel names its buffers (count, element type, whether it rotates through the
 * buffer sets or is shared, how it is filled), how to launch on one set, and the bytes
 * the operation must move. */
enum buf_fill { FILL_RANDOM, FILL_LENGTHS, FILL_OFFSETS, FILL_NONE, FILL_ZERO, FILL_BEAMS, FILL_INTS, FILL_SCALES };

typedef struct buf_spec {
    size_t count;
    int is_int; /* int32 instead of the kernel's dtype */
    int rotate; /* one per buffer set (streamed data) or one shared (small inputs, outputs) */
    int fill;
    int range;  /* FILL_BEAMS: values uniform in [0, range) */
    int esize;  /* bytes an element when set (int8 1, fp32 scales 4), else by is_int / dtype */
} buf_spec;

#define MAX_BUFS 16

typedef struct kernel_desc {
    const char *name;
    const char *about;
    /* fills specs, returns how many buffers */
    int (*buffers)(const bench_opts *o, buf_spec *specs);
    ft_status (*run)(const bench_opts *o, void **b, cudaStream_t s);
    double (*bytes)(const bench_opts *o);
    void (*describe)(const bench_opts *o, char *variant, char *shape, size_t len);
} kernel_desc;

/* norm family: slots 0 x, 1 residual, 2 bias, 3 gamma, 4 beta, 5 y, 6 sum_out */
static int norm_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t mn = (size_t)o->m * o->n;
    const int rows[7] = {1, 1, 0, 0, 0, 1, 1};
    for (int i = 0; i < 7; i++) {
        sp[i].count = rows[i] ? mn : (size_t)o->n;
        sp[i].is_int = 0;
        sp[i].rotate = rows[i];
        sp[i].fill = FILL_RANDOM;
    }
    return 7;
}

static int is_abr(const char *k)
{
    return strcmp(k, "add_bias_residual_layernorm") == 0 || strcmp(k, "add_bias_residual_rmsnorm") == 0;
}

static double norm_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), mn = (double)o->m * o->n * es, n = (double)o->n * es;
    const char *k = o->kernel;
    if (strcmp(k, "layernorm") == 0)
        return 2 * mn + 2 * n;
    if (strcmp(k, "rmsnorm") == 0)
        return 2 * mn + n;
    if (strcmp(k, "add_bias_residual_layernorm") == 0)
        return (3 + o->sum) * mn + 3 * n;
    if (strcmp(k, "add_bias_residual_rmsnorm") == 0)
        return (3 + o->sum) * mn + 2 * n;
    if (strcmp(k, "add_bias_act") == 0)
        return 2 * mn + n;
    return 3 * mn + n; /* add_bias_residual */
}

static void norm_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    if (strcmp(o->kernel, "add_bias_act") == 0)
        snprintf(variant, len, "%s", ft_act_name(o->act));
    else
        snprintf(variant, len, "%s", is_abr(o->kernel) && o->sum ? "sum_out" : "-");
    snprintf(shape, len, "m=%lld n=%lld", (long long)o->m, (long long)o->n);
}

static ft_status run_layernorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_layernorm(o->dt, b[0], b[3], b[4], b[5], o->m, o->n, 1e-5f, s);
}
static ft_status run_abr_layernorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual_layernorm(o->dt, b[0], b[1], b[2], b[3], b[4], b[5], o->sum ? b[6] : NULL, o->m,
                                          o->n, 1e-5f, s);
}
static ft_status run_rmsnorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_rmsnorm(o->dt, b[0], b[3], b[5], o->m, o->n, 1e-6f, s);
}
static ft_status run_abr_rmsnorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual_rmsnorm(o->dt, b[0], b[1], b[2], b[3], b[5], o->sum ? b[6] : NULL, o->m, o->n,
                                        1e-6f, s);
}
static ft_status run_add_bias_act(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_act(o->dt, b[0], b[2], b[5], o->m, o->n, o->act, s);
}
static ft_status run_add_bias_residual(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual(o->dt, b[0], b[1], b[2], b[5], o->m, o->n, s);
}

/* Whether a self_attention run reads through a random cache indirection table (the
 * attention buffers also serve kv_read, kv_stream, launch_empty and cross_attention, which
 * take none). */
static int attn_table(const bench_opts *o)
{
    return o->indir > 0 && strcmp(o->kernel, "self_attention") == 0;
}

/* The slot of the split counters (--counters), after the table if any. */
static int attn_counter_slot(const bench_opts *o)
{
    return attn_table(o) ? 9 : 8;
}

/* attention: slots 0 k cache, 1 v cache, 2 q, 3 k, 4 v, 5 out, 6 lengths, 7 workspace,
 * then the table (--indirection) and the split counters (--counters), zeroed once.
 * Every sequence holds len-1 cached steps and appends one: len steps are attended. */
static int attn_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t cache = (size_t)o->batch * o->kv_heads * o->len * o->head_size;
    const size_t q = (size_t)o->batch * o->heads * o->head_size, kv = (size_t)o->batch * o->kv_heads * o->head_size;
    const size_t ws = ft_attention_workspace_bytes(o->batch, o->heads, o->head_size, FT_ATTN_MAX_SPLITS) /
                      ft_dtype_size(o->dt) + 16;
    const size_t counts[8] = {cache, cache, q, kv, kv, q, (size_t)o->batch, ws};
    for (int i = 0; i < 8; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 6;
        sp[i].rotate = i < 2;
        sp[i].fill = i == 6 ? FILL_LENGTHS : i == 7 ? FILL_NONE : FILL_RANDOM;
    }
    if (attn_table(o)) { /* 8: the table [B, L] */
        sp[8].count = (size_t)o->batch * o->len;
        sp[8].is_int = 1;
        sp[8].rotate = 0;
        sp[8].fill = FILL_BEAMS;
        sp[8].range = o->indir;
    }
    const int n = attn_counter_slot(o);
    if (!o->counters)
        return n;
    sp[n].count = ft_attention_split_counter_bytes(o->batch, o->heads) / sizeof(int);
    sp[n].is_int = 1;
    sp[n].rotate = 0;
    sp[n].fill = FILL_ZERO;
    return n + 1;
}

static double attn_bytes(const bench_opts *o)
{
    /* the K and V cache read once; q, out and the appended k, v are counted too */
    const double es = (double)ft_dtype_size(o->dt);
    const double cache = 2.0 * o->batch * o->kv_heads * (double)o->len * o->head_size * es;
    return cache + 2.0 * o->batch * o->heads * o->head_size * es + 4.0 * o->batch * o->kv_heads * o->head_size * es;
}

static void attn_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    const char *layout = o->layout == FT_KV_LBHD ? "LBHD" : o->layout == FT_KV_BLHD ? "BLHD" : "BHLD";
    const char *impl = o->impl == FT_ATTN_IMPL_REGISTER ? " register" : o->impl == FT_ATTN_IMPL_ASYNC ? " async" : "";
    char table[32] = "";
    if (attn_table(o))
        snprintf(table, sizeof table, " table W=%d", o->indir);
    const char *counters = o->counters ? " counters" : "";
    if (o->splits)
        snprintf(variant, len, "%s splits=%d%s%s%s", layout, o->splits, impl, table, counters);
    else
        snprintf(variant, len, "%s splits=auto%s%s%s", layout, impl, table, counters);
    snprintf(shape, len, "B=%d H=%d Hkv=%d D=%d L=%d", o->batch, o->heads, o->kv_heads, o->head_size, o->len);
}

static ft_status run_self_attention(const bench_opts *o, void **b, cudaStream_t s)
{
    ft_self_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = o->batch;
    a.num_heads = o->heads;
    a.num_kv_heads = o->kv_heads;
    a.max_len = o->len;
    a.max_seq_len = o->len;
    a.k_cache = b[0];
    a.v_cache = b[1];
    a.q = b[2];
    a.k = b[3];
    a.v = b[4];
    a.out = b[5];
    a.lengths = (const int *)b[6];
    a.workspace = b[7];
    a.workspace_bytes = ft_attention_workspace_bytes(o->batch, o->heads, o->head_size, FT_ATTN_MAX_SPLITS);
    a.layout = (ft_kv_layout)o->layout;
    a.splits = o->splits;
    a.impl = (ft_attn_impl)o->impl;
    if (attn_table(o)) {
        a.cache_indirection = (const int *)b[8];
        a.beam_width = o->indir;
    }
    if (o->counters) {
        a.split_counters = (unsigned int *)b[attn_counter_slot(o)];
        a.split_counters_bytes = ft_attention_split_counter_bytes(o->batch, o->heads);
    }
    return ft_masked_self_attention_decode(o->dt, o->head_size, &a, s);
}

static ft_status run_cross_attention(const bench_opts *o, void **b, cudaStream_t s)
{
    ft_cross_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = o->batch;
    a.num_heads = o->heads;
    a.num_kv_heads = o->kv_heads;
    a.mem_len = o->len;
    a.max_mem_seq_len = o->len;
    a.k_mem = b[0];
    a.v_mem = b[1];
    a.q = b[2];
    a.out = b[5];
    a.mem_lengths = (const int *)b[6];
    a.workspace = b[7];
    a.workspace_bytes = ft_attention_workspace_bytes(o->batch, o->heads, o->head_size, FT_ATTN_MAX_SPLITS);
    a.layout = o->layout == FT_KV_LBHD ? FT_KV_BLHD : (ft_kv_layout)o->layout;
    a.splits = o->splits;
    a.impl = (ft_attn_impl)o->impl;
    if (o->counters) {
        a.split_counters = (unsigned int *)b[attn_counter_slot(o)];
        a.split_counters_bytes = ft_attention_split_counter_bytes(o->batch, o->heads);
    }
    return ft_cross_attention_decode(o->dt, o->head_size, &a, s);
}

/* kv_read: the floor under a decode step of self_attention with the same flags: its K and
 * V caches read once and nothing else (16-byte streaming loads, eight in flight a thread,
 * four 512-thread blocks per SM); the same buffers and byte count as self_attention. */
static __global__ void __launch_bounds__(512) kv_read_kernel(const uint4 *k, const uint4 *v, size_t n16,
                                                             unsigned *sink)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += 4 * stride) {
        uint4 a[4], c[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const size_t j = i + u * stride;
            a[u] = j < n16 ? __ldcs(k + j) : make_uint4(0, 0, 0, 0);
            c[u] = j < n16 ? __ldcs(v + j) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w ^ c[u].x ^ c[u].y ^ c[u].z ^ c[u].w;
    }
    if (acc == 0x9e3779b9u) /* practically never: keeps the loads */
        sink[blockIdx.x & 15] = acc;
}

static ft_status run_kv_read(const bench_opts *o, void **b, cudaStream_t s)
{
    static int sms = 0;
    if (sms == 0 && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
        return FT_ERR_CUDA;
    const size_t bytes = (size_t)o->batch * o->kv_heads * o->len * o->head_size * ft_dtype_size(o->dt);
    kv_read_kernel<<<4 * sms, 512, 0, s>>>((const uint4 *)b[0], (const uint4 *)b[1], bytes / 16, (unsigned *)b[5]);
    return cudaGetLastError() == cudaSuccess ? FT_OK : FT_ERR_CUDA;
}

/* kv_stream: the same bytes streamed as the sm_90 attention kernel streams them, and nothing
 * else done: a block per (key/value head, split), a producer warp filling three 32 KB
 * stages with bulk copies of K rows and V rows (L2 evict-first), four warps releasing each
 * stage as it lands; launched as a programmatic dependent. A decode step's time minus this
 * is what its compute, merge and write cost where they do not overlap the stream.
 * --splits as self_attention's (0: the most, in powers of two, that keep the grid within
 * two blocks an SM). [B, Hkv, L, D] caches whose rows of a head fill whole 16 KB tiles. */
enum { KVS_STAGES = 3, KVS_TILE = 16384, KVS_CONSUMERS = 4 };

static __global__ void __launch_bounds__(32 * (KVS_CONSUMERS + 1))
    kv_stream_kernel(const char *k, const char *v, size_t head_bytes, int splits, int per, unsigned *sink)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char kvs_stages[];
    __shared__ __align__(8) unsigned long long full[KVS_STAGES], empty[KVS_STAGES];
    const int head = blockIdx.x / splits, split = blockIdx.x % splits, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int i = 0; i < KVS_STAGES; i++) {
            ft_mbar_init(&full[i], 1);
            ft_mbar_init(&empty[i], KVS_CONSUMERS);
        }
        ft_mbar_init_fence();
    }
    __syncthreads();
    ft_pdl_wait();
    const char *kh = k + head * head_bytes, *vh = v + head * head_bytes;
    if (warp == KVS_CONSUMERS) {
        if (lane == 0)
            for (int i = 0; i < per; i++) {
                const int st = i % KVS_STAGES;
                const size_t off = (size_t)(split * per + i) * KVS_TILE;
                if (i >= KVS_STAGES)
                    ft_mbar_wait(&empty[st], (unsigned)(i / KVS_STAGES - 1) & 1u);
                ft_mbar_expect_tx(&full[st], 2u * KVS_TILE);
                ft_bulk_load_stream(kvs_stages + (size_t)st * 2 * KVS_TILE, kh + off, KVS_TILE, &full[st]);
                ft_bulk_load_stream(kvs_stages + (size_t)st * 2 * KVS_TILE + KVS_TILE, vh + off, KVS_TILE, &full[st]);
            }
        return;
    }
    unsigned acc = 0;
    for (int i = 0; i < per; i++) {
        const int st = i % KVS_STAGES;
        ft_mbar_wait(&full[st], (unsigned)(i / KVS_STAGES) & 1u);
        const uint4 w = ((const uint4 *)(kvs_stages + (size_t)st * 2 * KVS_TILE))[threadIdx.x];
        acc ^= w.x ^ w.w;
        ft_fence_proxy_async(); /* the read before the copy that refills the stage */
        __syncwarp();
        if (lane == 0)
            ft_mbar_arrive(&empty[st]);
    }
    if (acc == 0x9e3779b9u) /* practically never: keeps the reads */
        sink[blockIdx.x & 15] = acc;
#endif
}

static ft_status run_kv_stream(const bench_opts *o, void **b, cudaStream_t s)
{
    static int raised[64]; /* ft_smem_limit's record of the kernel's shared-memory limit */
    const int smem = 2 * KVS_STAGES * KVS_TILE;
    int sms = 0, arch = 0;
    ft_status st;
    if ((st = ft_sm_count("kv_stream", &sms)) != FT_OK || (st = ft_code_arch("kv_stream", &arch)) != FT_OK)
        return st;
    size_t head_bytes = (size_t)o->len * o->head_size * ft_dtype_size(o->dt);
    const int heads = o->batch * o->kv_heads, tiles = (int)(head_bytes / KVS_TILE);
    int splits = o->splits;
    if (splits <= 0)
        for (splits = 1; 2 * splits <= tiles && tiles % (2 * splits) == 0 && (int64_t)heads * 2 * splits <= 2 * sms;)
            splits *= 2;
    if (arch < 90 || o->layout != FT_KV_BHLD || head_bytes % KVS_TILE != 0 || tiles % splits != 0)
        return ft_fail(FT_ERR_UNSUPPORTED, "kv_stream needs sm_90 code, --layout bhld and whole %d-byte tiles a head, as "
                       "many a split (%zu bytes a head, %d splits)", KVS_TILE, head_bytes, splits);
    if ((st = ft_smem_limit("kv_stream", (const void *)kv_stream_kernel, smem, raised)) != FT_OK)
        return st;
    const char *k = (const char *)b[0], *v = (const char *)b[1];
    int per = tiles / splits;
    unsigned *sink = (unsigned *)b[5];
    void *args[] = {&k, &v, &head_bytes, &splits, &per, &sink};
    return ft_launch_ex("kv_stream", (const void *)kv_stream_kernel, dim3((unsigned)(heads * splits)),
                        dim3(32 * (KVS_CONSUMERS + 1)), (size_t)smem, s, args, 1, 1);
}

/* launch_empty: an empty kernel, launched as the attention kernels are (a programmatic
 * dependent, 128 threads a block, a block an SM): the fixed cost of a call, timed as every
 * row is. Takes self_attention's flags and buffers and moves no bytes. */
static __global__ void launch_empty_kernel(int x)
{
    ft_pdl_wait();
    if (x == 0x5eed) /* never: keeps the launch */
        printf("%d\n", x);
}

static ft_status run_launch_empty(const bench_opts *o, void **b, cudaStream_t s)
{
    (void)o;
    (void)b;
    int sms = 0, x = 0;
    ft_status st = ft_sm_count("launch_empty", &sms);
    if (st != FT_OK)
        return st;
    void *args[] = {&x};
    return ft_launch_ex("launch_empty", (const void *)launch_empty_kernel, dim3((unsigned)sms), dim3(128), 0, s, args,
                        1, 1);
}

static double no_bytes(const bench_opts *o)
{
    (void)o;
    return 0.0;
}

/* kv_reorder: what a cache indirection table saves. The K and V caches of a
 * self_attention shape (--batch rows of --beam beams each) gathered by parent beam into
 * a second pair of caches (ft_kv_cache_reorder over both at once, as two layers), len
 * steps a head: slots 0 source caches, 1 destination caches, 6 parent ids. */
static int reorder_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t caches = 2 * (size_t)o->batch * o->kv_heads * o->len * o->head_size;
    const size_t counts[7] = {caches, caches, 0, 0, 0, 0, (size_t)o->batch};
    for (int i = 0; i < 7; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 6;
        sp[i].rotate = i < 2;
        sp[i].fill = i == 6 ? FILL_BEAMS : i == 0 ? FILL_RANDOM : FILL_NONE;
        sp[i].range = o->beam;
    }
    return 7;
}

static double reorder_bytes(const bench_opts *o)
{
    return 4.0 * o->batch * o->kv_heads * (double)o->len * o->head_size * ft_dtype_size(o->dt);
}

static void reorder_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "%s beam=%d", o->layout == FT_KV_LBHD ? "LBHD" : "BHLD", o->beam);
    snprintf(shape, len, "B=%d Hkv=%d D=%d L=%d", o->batch, o->kv_heads, o->head_size, o->len);
}

static ft_status run_kv_reorder(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_kv_cache_reorder(b[0], b[1], (const int *)b[6], 2, (ft_kv_layout)o->layout, o->batch / o->beam, o->beam,
                               o->kv_heads, o->len, o->head_size, (int)ft_dtype_size(o->dt), o->len, s);
}

/* Lengths a kernel's FILL_LENGTHS buffer holds for sequence b. Attention: len-1 cached
 * steps (cross: len memory steps). Encoder: --avg-len spreads lengths evenly over
 * [1, S] around that mean (S when absent). Decoder layer and the
 * continuous-batching pieces: len steps (the greedy step: at least 1, a running slot). */
static int bench_length(const bench_opts *o, int b)
{
    if (strcmp(o->kernel, "self_attention") == 0)
        return o->len - 1;
    if (strcmp(o->kernel, "cross_attention") == 0 || strcmp(o->kernel, "decoder_layer") == 0 ||
        strcmp(o->kernel, "qkt") == 0 || strcmp(o->kernel, "softmax_lengths") == 0 || strcmp(o->kernel, "softmax_v") == 0 ||
        strcmp(o->kernel, "inferencer_step") == 0)
        return o->len;
    if (strcmp(o->kernel, "greedy_step") == 0) /* running slots */
        return o->len > 0 ? o->len : 1;
    if (o->avg_len <= 0 || o->avg_len >= o->seq)
        return o->seq;
    const int v = (int)lround(2.0 * o->avg_len * (b + 0.5) / o->batch);
    return v < 1 ? 1 : v > o->seq ? o->seq : v;
}

/* ---- encoder pieces */

/* masked_softmax: 0 scores [B,H,S,S], 1 mask [B,S,S], 2 lengths */
static int softmax_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t ss = (size_t)o->seq * o->seq;
    const size_t counts[3] = {(size_t)o->batch * o->heads * ss, (size_t)o->batch * ss, (size_t)o->batch};
    for (int i = 0; i < 3; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 2;
        sp[i].rotate = i == 0;
        sp[i].fill = i == 2 ? FILL_LENGTHS : FILL_RANDOM;
    }
    return 3;
}
static double softmax_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), ss = (double)o->seq * o->seq;
    return 2.0 * o->batch * o->heads * ss * es + (o->use_mask ? o->batch * ss * es : 0.0);
}
static void enc_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "%s", strcmp(o->kernel, "masked_softmax") ? "fused" : o->use_mask ? "mask" : "lengths");
    snprintf(shape, len, "B=%d H=%d S=%d D=%d", o->batch, o->heads, o->seq, o->head_size);
}
static ft_status run_masked_softmax(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_masked_softmax(o->dt, b[0], o->use_mask ? b[1] : NULL, o->use_mask ? NULL : (const int *)b[2],
                             o->batch, o->heads, o->seq, 1.0f / sqrtf((float)o->head_size), s);
}

/* packed_attention: 0 qkv [rows, 3N] (room for B*S rows), 1 bias [3N], 2 offsets [B+1],
 * 3 out [rows, N], then (--counters) 4 the tile counters, zeroed once */
static int packed_rows(const bench_opts *o)
{
    int rows = 0;
    for (int b = 0; b < o->batch; b++)
        rows += bench_length(o, b);
    return rows;
}
static int packed_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t n = (size_t)o->heads * o->head_size, rows = (size_t)o->batch * o->seq;
    const size_t counts[4] = {3 * rows * n, 3 * n, (size_t)o->batch + 1, rows * n};
    for (int i = 0; i < 4; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 2;
        sp[i].rotate = i == 0 || i == 3;
        sp[i].fill = i == 2 ? FILL_OFFSETS : i == 3 ? FILL_NONE : FILL_RANDOM;
    }
    if (!o->counters)
        return 4;
    sp[4].count = 2;
    sp[4].is_int = 1;
    sp[4].rotate = 0;
    sp[4].fill = FILL_ZERO;
    return 5;
}
static double packed_bytes(const bench_opts *o)
{
    /* the packed rows' Q, K, V read once and the context written once */
    return 4.0 * packed_rows(o) * o->heads * o->head_size * (double)ft_dtype_size(o->dt);
}
static void packed_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "%s%s%s", o->causal ? "causal" : "bias",
             o->impl == FT_ATTN_IMPL_REGISTER ? " register" : o->impl == FT_ATTN_IMPL_ASYNC ? " async" : "",
             o->counters ? " counters" : "");
    snprintf(shape, len, "B=%d H=%d S=%d D=%d avg=%d", o->batch, o->heads, o->seq, o->head_size,
             o->avg_len > 0 && o->avg_len < o->seq ? o->avg_len : o->seq);
}
static ft_status run_packed_attention(const bench_opts *o, void **b, cudaStream_t s)
{
    ft_packed_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = o->batch;
    a.num_heads = o->heads;
    a.num_kv_heads = o->heads;
    a.max_seq_len = o->seq;
    a.seq_offsets = (const int *)b[2];
    a.qkv = b[0];
    a.qkv_bias = o->causal ? NULL : b[1];
    a.out = b[3];
    a.causal = o->causal;
    a.impl = (ft_attn_impl)o->impl;
    a.tile_counters = o->counters ? (unsigned int *)b[4] : NULL;
    return ft_packed_attention(o->dt, o->head_size, &a, s);
}

/* add_fused_qkv_bias_transpose: 0 qkv [B*S, 3N], 1 bias [3N], 2-4 q/k/v [B,H,S,D];
 * transpose_heads: 0 x [B,H,S,D], 2 y [B,S,N] */
static int heads_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t bsn = (size_t)o->batch * o->seq * o->heads * o->head_size;
    const int qkv = strcmp(o->kernel, "transpose_heads") != 0;
    const size_t counts[5] = {qkv ? 3 * bsn : bsn, 3 * (size_t)o->heads * o->head_size, bsn, bsn, bsn};
    for (int i = 0; i < 5; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = 0;
        sp[i].rotate = i != 1;
        sp[i].fill = i < 2 ? FILL_RANDOM : FILL_NONE;
    }
    return qkv ? 5 : 3;
}
static double heads_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), bsn = (double)o->batch * o->seq * o->heads * o->head_size * es;
    return strcmp(o->kernel, "transpose_heads") ? 6.0 * bsn : 2.0 * bsn;
}
static ft_status run_qkv_transpose(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_fused_qkv_bias_transpose(o->dt, b[0], b[1], b[2], b[3], b[4], o->batch, o->seq, o->heads,
                                           o->head_size, s);
}
static ft_status run_transpose_heads(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_transpose_heads(o->dt, b[0], b[2], o->batch, o->seq, o->heads, o->head_size, s);
}

/* ---- composed layers (examples/): weights in one buffer, carved in a fixed order */

/* Carves `n` tensors of the given element counts out of one buffer (256-element aligned). */
static size_t carve(void *base, size_t es, const size_t *counts, int n, const void **out)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (out)
            out[i] = (const char *)base + off * es;
        off += (counts[i] + 255) / 256 * 256;
    }
    return off;
}

static int bert_weight_counts(const bench_opts *o, size_t *c)
{
    const size_t N = (size_t)o->hidden, F = (size_t)o->ffn;
    const size_t v[12] = {3 * N * N, 3 * N, N * N, N, N, N, N * F, F, F * N, N, N, N};
    memcpy(c, v, sizeof v);
    return 12;
}
static ft_bert_config bert_config(const bench_opts *o)
{
    ft_bert_config c = {o->dt, o->hidden, o->heads, o->ffn, 1e-6f, o->remove_padding};
    return c;
}
/* bert_layer: 0 x [B,S,N], 1 y, 2 lengths, 3 weights, 4 workspace */
static int bert_buffers(const bench_opts *o, buf_spec *sp)
{
    size_t c[16];
    const int nw = bert_weight_counts(o, c);
    const ft_bert_config cfg = bert_config(o);
    const size_t bsn = (size_t)o->batch * o->seq * o->hidden;
    const size_t counts[5] = {bsn, bsn, (size_t)o->batch, carve(NULL, 1, c, nw, NULL),
                              ft_bert_workspace_bytes(&cfg, o->batch, o->seq) / ft_dtype_size(o->dt) + 1};
    for (int i = 0; i < 5; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 2;
        sp[i].rotate = 0;
        sp[i].fill = i == 2 ? FILL_LENGTHS : i == 1 || i == 4 ? FILL_NONE : FILL_RANDOM;
    }
    return 5;
}
static int decoder_weight_counts(const bench_opts *o, size_t *c);
static double layer_bytes(const bench_opts *o)
{
    /* weights read once plus the layer's input and output */
    size_t c[24];
    const int nw = strcmp(o->kernel, "bert_layer") == 0 ? bert_weight_counts(o, c) : decoder_weight_counts(o, c);
    double w = 0;
    for (int i = 0; i < nw; i++)
        w += (double)c[i];
    const double rows = strcmp(o->kernel, "bert_layer") == 0 ? (double)o->batch * o->seq : (double)o->batch;
    return (w + 2.0 * rows * o->hidden) * (double)ft_dtype_size(o->dt);
}
static void layer_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    if (strcmp(o->kernel, "bert_layer") == 0) {
        snprintf(variant, len, "%s", o->remove_padding ? "remove_padding" : "padded");
        snprintf(shape, len, "B=%d S=%d N=%d H=%d F=%d avg=%d", o->batch, o->seq, o->hidden, o->heads, o->ffn,
                 o->avg_len > 0 && o->avg_len < o->seq ? o->avg_len : o->seq);
    } else {
        snprintf(variant, len, "LBHD cache");
        snprintf(shape, len, "B=%d N=%d H=%d F=%d L=%d Lmem=%d", o->batch, o->hidden, o->heads, o->ffn, o->len,
                 o->mem_len);
    }
}
static ft_status run_bert_layer(const bench_opts *o, void **b, cudaStream_t s)
{
    size_t c[16];
    const void *w[16];
    const int nw = bert_weight_counts(o, c);
    carve(b[3], ft_dtype_size(o->dt), c, nw, w);
    const ft_bert_weights bw = {w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11]};
    const ft_bert_config cfg = bert_config(o);
    int valid = 0;
    for (int i = 0; i < o->batch; i++)
        valid += bench_length(o, i); /* known on the host, as in a server that batched the requests */
    return ft_bert_layer_forward(shared_gemm_ctx(), &cfg, &bw, b[0], (const int *)b[2], o->batch, o->seq, valid, b[1],
                                 b[4], ft_bert_workspace_bytes(&cfg, o->batch, o->seq), s);
}

static int decoder_weight_counts(const bench_opts *o, size_t *c)
{
    const size_t N = (size_t)o->hidden, F = (size_t)o->ffn;
    const size_t v[22] = {N, N, 3 * N * N, 3 * N, N * N, N, N, N, N * N, N, N * N, N,
                          N * N, N, N * N, N, N, N, N * F, F, F * N, N};
    memcpy(c, v, sizeof v);
    return 22;
}
static ft_decoder_config decoder_config(const bench_opts *o)
{
    ft_decoder_config c = {o->dt, o->hidden, o->heads, o->ffn, o->hidden, 1e-6f};
    return c;
}
/* decoder_layer: 0 x [B,N], 1 y, 2 lengths, 3 weights, 4 workspace, 5/6 self K/V cache
 * [L+1, B, N], 7/8 memory K/V [B, Lmem, N], 9 memory lengths */
static int decoder_buffers(const bench_opts *o, buf_spec *sp)
{
    size_t c[24];
    const int nw = decoder_weight_counts(o, c);
    const ft_decoder_config cfg = decoder_config(o);
    const size_t bn = (size_t)o->batch * o->hidden, cache = bn * (o->len + 1), mem = bn * o->mem_len;
    const size_t counts[10] = {bn, bn, (size_t)o->batch, carve(NULL, 1, c, nw, NULL),
                               ft_decoder_workspace_bytes(&cfg, o->batch) / ft_dtype_size(o->dt) + 1,
                               cache, cache, mem, mem, (size_t)o->batch};
    for (int i = 0; i < 10; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 2 || i == 9;
        sp[i].rotate = 0;
        sp[i].fill = i == 2 || i == 9 ? FILL_LENGTHS : i == 1 || i == 4 ? FILL_NONE : FILL_RANDOM;
    }
    return 10;
}
static ft_status run_decoder_layer(const bench_opts *o, void **b, cudaStream_t s)
{
    size_t c[24];
    const void *w[24];
    const int nw = decoder_weight_counts(o, c);
    carve(b[3], ft_dtype_size(o->dt), c, nw, w);
    const ft_decoder_weights dw = {w[0],  w[1],  w[2],  w[3],  w[4],  w[5],  w[6],  w[7],  w[8],  w[9],  w[10],
                                   w[11], w[12], w[13], w[14], w[15], w[16], w[17], w[18], w[19], w[20], w[21]};
    const ft_decoder_config cfg = decoder_config(o);
    return ft_decoder_layer_step(shared_gemm_ctx(), &cfg, &dw, b[0], b[5], b[6], FT_KV_LBHD, o->len + 1,
                                 (const int *)b[2], NULL, 0, b[7], b[8], o->mem_len, (const int *)b[9], o->batch, b[1], b[4],
                                 ft_decoder_workspace_bytes(&cfg, o->batch), s);
}

/* ---- decoding: logits [B*beam, V] N(0,1) (flat: a top-p set of p = 0.9 holds most of
 * the vocabulary, the sorted form's longest walk) */

/* The top-K form and blocks per row a run asks for (before sizing the workspace too). */
static void topk_policy(const bench_opts *o)
{
    ft_topk_set_form((ft_topk_form)o->tkform);
    ft_topk_set_row_blocks(o->tkblocks);
}
/* 0 logits, 1 values / ids (4-byte), 2 indices, 3 workspace, 4 cum_log_probs (zero) */
static size_t decoding_ws_bytes(const bench_opts *o)
{
    topk_policy(o);
    const int rows = o->batch * (strcmp(o->kernel, "beam_topk") == 0 ? o->beam : 1);
    if (strcmp(o->kernel, "topp_sampling_sorted") == 0)
        return ft_topp_sorted_workspace_bytes(o->dt, rows, o->vocab);
    if (strcmp(o->kernel, "update_logits") == 0)
        return ft_update_logits_workspace_bytes(o->dt, rows, o->vocab);
    if (strcmp(o->kernel, "topk") == 0 || strcmp(o->kernel, "topk_sampling") == 0 ||
        strcmp(o->kernel, "beam_topk") == 0)
        return ft_topk_workspace_bytes(o->dt, rows, strcmp(o->kernel, "beam_topk") == 0 ? o->beam : 1, o->vocab, o->k);
    return 0;
}
/* update_logits and its floor logits_copy write the rows out as fp32 */
static int writes_logits(const bench_opts *o)
{
    return strcmp(o->kernel, "update_logits") == 0 || strcmp(o->kernel, "logits_copy") == 0;
}
static int decoding_buffers(const bench_opts *o, buf_spec *sp)
{
    const int beams = strcmp(o->kernel, "beam_topk") == 0 ? o->beam : 1;
    const size_t rows = (size_t)o->batch * beams, es = ft_dtype_size(o->dt);
    const int logits_out = writes_logits(o);
    const size_t counts[5] = {rows * o->vocab, logits_out ? rows * o->vocab : (size_t)o->batch * o->k,
                              (size_t)o->batch * o->k, (decoding_ws_bytes(o) + es - 1) / es + 64, rows};
    for (int i = 0; i < 5; i++) {
        sp[i].count = counts[i];
        sp[i].is_int = i == 1 || i == 2 || i == 4;
        sp[i].rotate = i == 0 || (i == 1 && logits_out);
        sp[i].fill = i == 0 ? FILL_RANDOM : i == 3 || i == 4 ? FILL_ZERO : FILL_NONE; /* workspaces start zeroed */
    }
    return 5;
}
static double decoding_bytes(const bench_opts *o)
{
    const int beams = strcmp(o->kernel, "beam_topk") == 0 ? o->beam : 1;
    const double n = (double)o->batch * beams * o->vocab;
    /* the logits read once, and written as fp32 where the kernel does */
    return n * (double)ft_dtype_size(o->dt) + (writes_logits(o) ? 4.0 * n : 0.0);
}
static void decoding_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    static const char *modes[3] = {"raw", "softmax", "log_softmax"};
    if (strcmp(o->kernel, "logits_copy") == 0)
        snprintf(variant, len, "copy to fp32");
    else if (strcmp(o->kernel, "update_logits") == 0)
        snprintf(variant, len, "%s%s%s%.0d", modes[o->mode],
                 o->lgform == FT_LOGITS_FORM_STREAM ? " stream" : o->lgform == FT_LOGITS_FORM_CLUSTER ? " cluster" : "",
                 o->lgstats ? " stats=" : "", o->lgstats);
    else if (strstr(o->kernel, "topp") || (strcmp(o->kernel, "topk_sampling") == 0 && o->p < 1.0f))
        snprintf(variant, len, "p=%.2f%s", o->p,
                 o->form == FT_TOPP_FORM_ONE_BLOCK ? " one_block" : o->form == FT_TOPP_FORM_CLUSTER ? " cluster" : "");
    else
        snprintf(variant, len, "K=%d%s%.0d", ft_topk_variant_k(o->dt, o->k),
                 o->tkform == FT_TOPK_FORM_SPLIT ? " split" : o->tkform == FT_TOPK_FORM_ROW ? " row" : "", o->tkblocks);
    if (strcmp(o->kernel, "beam_topk") == 0)
        snprintf(shape, len, "B=%d W=%d V=%d k=%d", o->batch, o->beam, o->vocab, o->k);
    else if (strstr(o->kernel, "topk"))
        snprintf(shape, len, "B=%d V=%d k=%d", o->batch, o->vocab, o->k);
    else
        snprintf(shape, len, "B=%d V=%d", o->batch, o->vocab);
}
static ft_sampling bench_sampling(const bench_opts *o)
{
    ft_sampling smp;
    memset(&smp, 0, sizeof smp);
    smp.k = o->k, smp.p = o->p, smp.temperature = 1.0f, smp.seed = 7, smp.step = 3, smp.end_id = 2;
    return smp;
}
static ft_status run_topk(const bench_opts *o, void **b, cudaStream_t s)
{
    topk_policy(o);
    return ft_topk(o->dt, b[0], o->vocab, o->batch, o->vocab, o->k, (float *)b[1], (int *)b[2], b[3],
                   decoding_ws_bytes(o), s);
}
static ft_status run_beam_topk(const bench_opts *o, void **b, cudaStream_t s)
{
    topk_policy(o);
    return ft_beam_topk(o->dt, b[0], o->vocab, (const float *)b[4], o->batch, o->beam, o->vocab, o->k, (float *)b[1],
                        (int *)b[2], b[3], decoding_ws_bytes(o), s);
}
static ft_status run_topk_sampling(const bench_opts *o, void **b, cudaStream_t s)
{
    const ft_sampling smp = bench_sampling(o);
    ft_decode_io io;
    memset(&io, 0, sizeof io);
    io.ids = (int *)b[1];
    topk_policy(o);
    return ft_topk_sampling(o->dt, b[0], o->vocab, o->batch, o->vocab, &smp, &io, b[3], decoding_ws_bytes(o), s);
}
static ft_status run_topp_sampling(const bench_opts *o, void **b, cudaStream_t s)
{
    const ft_sampling smp = bench_sampling(o);
    ft_decode_io io;
    memset(&io, 0, sizeof io);
    ft_topp_set_form((ft_topp_form)o->form);
    io.ids = (int *)b[1];
    if (strcmp(o->kernel, "topp_sampling_sorted") == 0)
        return ft_topp_sampling_sorted(o->dt, b[0], o->vocab, o->batch, o->vocab, &smp, &io, b[3],
                                       decoding_ws_bytes(o), s);
    return ft_topp_sampling(o->dt, b[0], o->vocab, o->batch, o->vocab, &smp, &io, s);
}
/* logits_copy: the floor under update_logits with the same flags: the logits read once
 * and written to the fp32 output, converted and nothing else (16-byte streaming loads,
 * four in flight a thread, streaming stores, four 512-thread blocks per SM); the same
 * buffers and byte count as update_logits. n16: 16-byte words of logits; rows whose
 * length is not a multiple of the word are not supported (the suite's are). */
static __global__ void __launch_bounds__(512) logits_copy_kernel(const uint4 *x, float4 *y, size_t n16, int dt)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += 4 * stride) {
        uint4 w[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            w[u] = i + u * stride < n16 ? __ldcs(x + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const size_t j = i + u * stride;
            if (j >= n16)
                break;
            if (dt == FT_FP32) {
                __stcs(y + j, make_float4(__uint_as_float(w[u].x), __uint_as_float(w[u].y), __uint_as_float(w[u].z),
                                          __uint_as_float(w[u].w)));
            } else {
                float f[8];
                if (dt == FT_FP16)
                    ft_unpack_fp16x8(w[u], f);
                else
                    ft_unpack_bf16x8(w[u], f);
                __stcs(y + 2 * j, make_float4(f[0], f[1], f[2], f[3]));
                __stcs(y + 2 * j + 1, make_float4(f[4], f[5], f[6], f[7]));
            }
        }
    }
}

static ft_status run_logits_copy(const bench_opts *o, void **b, cudaStream_t s)
{
    static int sms = 0;
    if (sms == 0 && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
        return FT_ERR_CUDA;
    const size_t bytes = (size_t)o->batch * o->vocab * ft_dtype_size(o->dt);
    if (bytes % 16 != 0)
        return ft_fail(FT_ERR_UNSUPPORTED, "logits_copy: batch * vocab * %d bytes is not a multiple of 16",
                       (int)ft_dtype_size(o->dt));
    logits_copy_kernel<<<4 * sms, 512, 0, s>>>((const uint4 *)b[0], (float4 *)b[1], bytes / 16, (int)o->dt);
    return cudaGetLastError() == cudaSuccess ? FT_OK : FT_ERR_CUDA;
}
static ft_status run_update_logits(const bench_opts *o, void **b, cudaStream_t s)
{
    ft_logits_set_form((ft_logits_form)o->lgform);
    ft_logits_set_stream_stats(o->lgstats);
    return ft_update_logits(o->dt, b[0], o->vocab, o->batch, o->vocab, NULL, NULL, 0, 1.0f, NULL,
                            (ft_logits_mode)o->mode, (float *)b[1], o->vocab, b[3], decoding_ws_bytes(o), s);
}

/* ---- the LLaMA int8 path (ft/llama.cuh, ft/quant.cuh) */

/* one buffer spec: count elements of esize bytes (0: the dtype's), rotated or shared */
static void spec(buf_spec *sp, size_t count, int esize, int rotate, int fill)
{
    sp->count = count;
    sp->is_int = 0;
    sp->esize = esize;
    sp->rotate = rotate;
    sp->fill = fill;
}

static int is_kernel(const bench_opts *o, const char *name)
{
    return strcmp(o->kernel, name) == 0;
}

/* rows m x n: 0 acc/w1 (int32), 1 w3 (int32), 2 row scale, 3 col scale, 4 col scale 2, 5 x /
 * residual, 6 gamma, 7 sum / out, 8 q (int8), 9 q scale */
static int quant_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t mn = (size_t)o->m * o->n, m = (size_t)o->m, n = (size_t)o->n;
    const int acc = !is_kernel(o, "rmsnorm_quant"), silu = is_kernel(o, "dequant_silu_mul_quant");
    spec(sp + 0, acc ? mn : 1, 4, acc, acc ? FILL_INTS : FILL_ZERO);
    spec(sp + 1, silu ? mn : 1, 4, silu, silu ? FILL_INTS : FILL_ZERO);
    spec(sp + 2, m, 4, 1, FILL_SCALES);
    spec(sp + 3, n, 4, 0, FILL_SCALES);
    spec(sp + 4, n, 4, 0, FILL_SCALES);
    spec(sp + 5, silu ? 1 : mn, 0, !silu, FILL_RANDOM);
    spec(sp + 6, n, 0, 0, FILL_RANDOM);
    spec(sp + 7, mn, 0, 1, FILL_NONE);
    spec(sp + 8, mn, 1, 1, FILL_NONE);
    spec(sp + 9, m, 4, 1, FILL_NONE);
    return 10;
}
static double quant_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), mn = (double)o->m * o->n, m = (double)o->m, n = (double)o->n;
    if (is_kernel(o, "rmsnorm_quant"))
        return mn * es + n * es + mn + 4 * m;
    if (is_kernel(o, "dequant_residual_rmsnorm_quant"))
        return 4 * mn + 4 * m + 4 * n + 2 * mn * es + n * es + mn + 4 * m;
    if (is_kernel(o, "dequant_silu_mul_quant"))
        return 8 * mn + 4 * m + 8 * n + mn + 4 * m;
    return 4 * mn + 4 * m + 4 * n + 2 * mn * es; /* dequant_residual */
}
static ft_status run_rmsnorm_quant(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_rmsnorm_quant(o->dt, b[5], b[6], (int8_t *)b[8], (float *)b[9], o->m, o->n, 1e-6f, s);
}
static ft_status run_dequant_residual_rmsnorm_quant(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_dequant_residual_rmsnorm_quant(o->dt, (const int32_t *)b[0], (const float *)b[2], (const float *)b[3],
                                             b[5], b[6], b[7], (int8_t *)b[8], (float *)b[9], o->m, o->n, 1e-6f, s);
}
static ft_status run_dequant_residual(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_dequant_residual(o->dt, (const int32_t *)b[0], (const float *)b[2], (const float *)b[3], b[5], b[7], o->m,
                               o->n, s);
}
static ft_status run_dequant_silu_mul_quant(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_dequant_silu_mul_quant((const int32_t *)b[0], (const int32_t *)b[1], (const float *)b[2],
                                     (const float *)b[3], (const float *)b[4], (int8_t *)b[8], (float *)b[9], o->m,
                                     o->n, s);
}

/* qkv_dequant_rope: 0 the fused int32 [B*S, (H + 2 Hkv) D], 1 row scale, 2 channel scales
 * [(H + 2 Hkv) D], 3 q [B,H,S,D], 4 k, 5 v ([B,Hkv,L,D] caches with --len, else [B,Hkv,S,D]) */
/* --len past --seq: k and v go into caches of that many rows (the tokens at their end) */
static int qkv_cache(const bench_opts *o)
{
    return o->len > o->seq;
}
static int qkv_cache_len(const bench_opts *o)
{
    return qkv_cache(o) ? o->len : o->seq;
}
static int qkv_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t T = (size_t)o->batch * o->seq, W = (size_t)(o->heads + 2 * o->kv_heads) * o->head_size;
    const size_t kv = (size_t)o->batch * o->kv_heads * qkv_cache_len(o) * o->head_size;
    spec(sp + 0, T * W, 4, 1, FILL_INTS);
    spec(sp + 1, T, 4, 1, FILL_SCALES);
    spec(sp + 2, W, 4, 0, FILL_SCALES);
    spec(sp + 3, (size_t)o->batch * o->heads * o->seq * o->head_size, 0, 1, FILL_NONE);
    spec(sp + 4, kv, 0, 1, FILL_NONE);
    spec(sp + 5, kv, 0, 1, FILL_NONE);
    return 6;
}
static double qkv_bytes(const bench_opts *o)
{
    const double T = (double)o->batch * o->seq, W = (double)(o->heads + 2 * o->kv_heads) * o->head_size;
    return T * W * (4.0 + (double)ft_dtype_size(o->dt)) + 4 * T + 4 * W;
}
static void qkv_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "interleaved%s", qkv_cache(o) ? " cache" : "");
    snprintf(shape, len, "B=%d S=%d H=%d Hkv=%d D=%d L=%d", o->batch, o->seq, o->heads, o->kv_heads, o->head_size,
             qkv_cache_len(o));
}
static ft_status run_qkv_dequant_rope(const bench_opts *o, void **b, cudaStream_t s)
{
    const int H = o->heads, Hkv = o->kv_heads, D = o->head_size, W = (H + 2 * Hkv) * D;
    /* every dtype's args struct has this layout */
    ft_qkv_dequant_args_fp32 a;
    memset(&a, 0, sizeof a);
    const int32_t *acc = (const int32_t *)b[0];
    const float *cs = (const float *)b[2];
    a.q = acc, a.k = acc + H * D, a.v = acc + (H + Hkv) * D, a.ldq = a.ldk = a.ldv = W;
    a.row_scale = (const float *)b[1], a.q_scale = cs, a.k_scale = cs + H * D, a.v_scale = cs + (H + Hkv) * D;
    a.rope = FT_ROPE_INTERLEAVED; /* angles computed on the fly (no table) */
    a.start = qkv_cache(o) ? o->len - o->seq : 0, a.cache_len = qkv_cache(o) ? o->len : 0;
    a.q_out = (float *)b[3], a.k_out = (float *)b[4], a.v_out = (float *)b[5];
    a.B = o->batch, a.S = o->seq, a.H = H, a.Hkv = Hkv, a.D = D;
    return ft_qkv_dequant_rope(o->dt, &a, s);
}

/* causal_softmax over [B, H, S, S]: 0 scores, 1 probabilities */
static int csm_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t n = (size_t)o->batch * o->heads * o->seq * o->seq;
    spec(sp + 0, n, 0, 1, FILL_RANDOM);
    spec(sp + 1, n, 0, 1, FILL_NONE);
    return 2;
}
/* the fewest: each row's visible keys read (S (S + 1) / 2 a head), every entry written */
static double csm_bytes(const bench_opts *o)
{
    const double S = o->seq;
    return (double)o->batch * o->heads * (S * (S + 1) / 2 + S * S) * (double)ft_dtype_size(o->dt);
}
static void csm_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "causal");
    snprintf(shape, len, "B=%d H=%d S=%d", o->batch, o->heads, o->seq);
}
static ft_status run_causal_softmax(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_causal_softmax(o->dt, b[0], b[1], NULL, 0, 0, o->batch, o->heads, o->seq, o->seq, 1,
                             1.0f / sqrtf(64.0f), s);
}

/* attn_quant_transpose: 0 x [B,H,S,D], 1 q [B*S, H*D] int8, 2 scales */
static int aqt_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t n = (size_t)o->batch * o->seq * o->heads * o->head_size;
    spec(sp + 0, n, 0, 1, FILL_RANDOM);
    spec(sp + 1, n, 1, 1, FILL_NONE);
    spec(sp + 2, (size_t)o->batch * o->seq, 4, 1, FILL_NONE);
    return 3;
}
static double aqt_bytes(const bench_opts *o)
{
    const double n = (double)o->batch * o->seq * o->heads * o->head_size;
    return n * (double)ft_dtype_size(o->dt) + n + 4.0 * o->batch * o->seq;
}
static void aqt_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "heads");
    snprintf(shape, len, "B=%d S=%d H=%d D=%d", o->batch, o->seq, o->heads, o->head_size);
}
static ft_status run_attn_quant_transpose(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_attn_quant_transpose(o->dt, b[0], (int8_t *)b[1], (float *)b[2], o->batch, o->heads, o->seq,
                                   o->head_size, 1, s);
}

/* llama_layer (examples/llama_layer.cuh): a forward of --seq tokens of --batch sequences
 * that end at step --len (start = len - seq; len <= seq: a prompt from 0): 0 x [B S, N],
 * 1 y, 2 int8 weights (Wqkv, Wo, W1, W3, W2, carved), 3 their fp32 scales, 4 gamma1 and
 * gamma2, 5 workspace, 6/7 k/v caches [B, Hkv, L, D] (rows before start as if cached) */
static int llama_len(const bench_opts *o)
{
    return o->len > o->seq ? o->len : o->seq;
}
static ft_llama_config llama_config(const bench_opts *o)
{
    ft_llama_config c;
    memset(&c, 0, sizeof c);
    c.dtype = o->dt, c.hidden = o->hidden, c.heads = o->heads, c.kv_heads = o->kv_heads, c.ffn = o->ffn;
    c.eps = 1e-6f, c.rope = FT_ROPE_INTERLEAVED; /* angles computed on the fly */
    return c;
}
/* int8 weight and fp32 scale element counts, in llama_buffers' carving order */
static void llama_counts(const bench_opts *o, size_t *w, size_t *sc)
{
    const size_t N = (size_t)o->hidden, F = (size_t)o->ffn, Wd = (size_t)(o->heads + 2 * o->kv_heads) * (N / o->heads);
    const size_t wv[5] = {Wd * N, N * N, F * N, F * N, N * F}, sv[5] = {Wd, N, F, F, N};
    memcpy(w, wv, sizeof wv);
    memcpy(sc, sv, sizeof sv);
}
static int llama_buffers(const bench_opts *o, buf_spec *sp)
{
    size_t w[5], sc[5];
    llama_counts(o, w, sc);
    const ft_llama_config c = llama_config(o);
    const size_t M = (size_t)o->batch * o->seq, N = (size_t)o->hidden, L = (size_t)llama_len(o);
    const size_t kv = (size_t)o->batch * o->kv_heads * L * (N / o->heads);
    spec(sp + 0, M * N, 0, 1, FILL_RANDOM);
    spec(sp + 1, M * N, 0, 1, FILL_NONE);
    spec(sp + 2, carve(NULL, 1, w, 5, NULL), 1, 0, FILL_RANDOM); /* random bytes */
    spec(sp + 3, carve(NULL, 1, sc, 5, NULL), 4, 0, FILL_SCALES);
    spec(sp + 4, 2 * N, 0, 0, FILL_RANDOM);
    spec(sp + 5, ft_llama_workspace_bytes(&c, o->batch, o->seq, (int)L), 1, 0, FILL_NONE);
    spec(sp + 6, kv, 0, 0, FILL_RANDOM);
    spec(sp + 7, kv, 0, 0, FILL_RANDOM);
    return 8;
}
/* the weights and their scales once, x read and y written, the caches' first len rows read
 * (k and v; the step's own rows written) */
static double llama_bytes(const bench_opts *o)
{
    size_t w[5], sc[5];
    llama_counts(o, w, sc);
    double b = 0;
    for (int i = 0; i < 5; i++)
        b += (double)w[i] + 4.0 * (double)sc[i];
    const double es = (double)ft_dtype_size(o->dt), N = o->hidden, D = (double)o->hidden / o->heads;
    return b + 2.0 * N * es + 2.0 * o->batch * o->seq * N * es + 2.0 * o->batch * o->kv_heads * llama_len(o) * D * es;
}
static void llama_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    const ft_llama_config c = llama_config(o);
    snprintf(variant, len, "%s", o->seq == 1 ? (ft_llama_fused_decode(&c, 1) ? "decode fused" : "decode gemm")
                                             : "prompt");
    snprintf(shape, len, "B=%d S=%d N=%d H=%d Hkv=%d F=%d L=%d", o->batch, o->seq, o->hidden, o->heads, o->kv_heads,
             o->ffn, llama_len(o));
}
static ft_status run_llama_layer(const bench_opts *o, void **b, cudaStream_t s)
{
    size_t w[5], sc[5];
    const void *wp[5], *sp[5];
    llama_counts(o, w, sc);
    carve(b[2], 1, w, 5, wp);
    carve(b[3], 4, sc, 5, sp);
    ft_llama_weights lw;
    lw.gamma1 = b[4], lw.gamma2 = (const char *)b[4] + (size_t)o->hidden * ft_dtype_size(o->dt);
    lw.w_qkv = (const int8_t *)wp[0], lw.w_o = (const int8_t *)wp[1], lw.w1 = (const int8_t *)wp[2];
    lw.w3 = (const int8_t *)wp[3], lw.w2 = (const int8_t *)wp[4];
    lw.qkv_scale = (const float *)sp[0], lw.o_scale = (const float *)sp[1], lw.w1_scale = (const float *)sp[2];
    lw.w3_scale = (const float *)sp[3], lw.w2_scale = (const float *)sp[4];
    const ft_llama_config c = llama_config(o);
    const int L = llama_len(o);
    return ft_llama_layer_forward(shared_gemm_ctx(), &c, &lw, b[0], o->batch, o->seq, L - o->seq, b[6], b[7], L, b[5],
                                  ft_llama_workspace_bytes(&c, o->batch, o->seq, L), b[1], s);
}

/* ---- the continuous-batching inferencer (ft/batching.cuh): every slot at --len steps,
 * caches of --len (kt [B, E, L], v [B, L, E]) */

/* qkt: 0 q [B, E], 1 kt, 2 lengths, 3 scores fp32 [B, H, L]; softmax_lengths: 0 scores;
 * softmax_v: 0 probabilities fp32, 1 v, 2 lengths, 3 out [B, E], 4 workspace */
static int batch_buffers(const bench_opts *o, buf_spec *sp)
{
    const size_t B = (size_t)o->batch, E = (size_t)o->heads * o->head_size, L = (size_t)o->len;
    const size_t rows = B * o->heads * L;
    if (is_kernel(o, "qkt")) {
        spec(sp + 0, B * E, 0, 0, FILL_RANDOM);
        spec(sp + 1, B * E * L, 0, 1, FILL_RANDOM);
        spec(sp + 2, B, 4, 0, FILL_LENGTHS);
        spec(sp + 3, rows, 4, 1, FILL_NONE);
        return 4;
    }
    if (is_kernel(o, "softmax_lengths")) {
        spec(sp + 0, rows, 4, 1, FILL_SCALES);
        spec(sp + 1, B, 4, 0, FILL_LENGTHS);
        return 2;
    }
    spec(sp + 0, rows, 4, 1, FILL_SCALES);
    spec(sp + 1, B * L * E, 0, 1, FILL_RANDOM);
    spec(sp + 2, B, 4, 0, FILL_LENGTHS);
    spec(sp + 3, B * E, 0, 1, FILL_NONE);
    const size_t ws = ft_softmax_v_workspace(o->dt, o->batch, o->heads, o->head_size, o->len);
    spec(sp + 4, ws ? ws : 1, 1, 0, FILL_NONE);
    return 5;
}
static double batch_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), B = o->batch, E = (double)o->heads * o->head_size;
    const double L = o->len, rows = B * o->heads * L;
    if (is_kernel(o, "qkt"))
        return B * E * es + B * E * L * es + 4 * rows;
    if (is_kernel(o, "softmax_lengths"))
        return 8 * rows;
    return 4 * rows + B * L * E * es + B * E * es;
}
static void batch_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "all at L");
    snprintf(shape, len, "B=%d H=%d D=%d L=%d", o->batch, o->heads, o->head_size, o->len);
}
static ft_status run_qkt(const bench_opts *o, void **b, cudaStream_t s)
{
    const int E = o->heads * o->head_size;
    return ft_qkt(o->dt, b[0], E, b[1], (const int *)b[2], (float *)b[3], o->len, o->batch, o->heads, o->head_size,
                  o->len, 1.0f / sqrtf((float)o->head_size), s);
}
static ft_status run_softmax_lengths(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_softmax_lengths(o->dt, (float *)b[0], o->len, (const int *)b[1], o->batch, o->heads, o->len, s);
}
static ft_status run_softmax_v(const bench_opts *o, void **b, cudaStream_t s)
{
    const int E = o->heads * o->head_size;
    const size_t ws = ft_softmax_v_workspace(o->dt, o->batch, o->heads, o->head_size, o->len);
    return ft_softmax_v(o->dt, (const float *)b[0], o->len, b[1], (const int *)b[2], b[3], E, o->batch, o->heads,
                        o->head_size, o->len, ws ? b[4] : NULL, ws, 0, s);
}

/* greedy_step: 0 logits [B, V], 1 embedding table [V, N], 2 lengths (grow by one a call,
 * the capacity never reached), 3 tokens, 4 next inputs [B, N], 5 workspace */
static int greedy_buffers(const bench_opts *o, buf_spec *sp)
{
    spec(sp + 0, (size_t)o->batch * o->vocab, 0, 1, FILL_RANDOM);
    spec(sp + 1, (size_t)o->vocab * o->hidden, 0, 0, FILL_RANDOM);
    spec(sp + 2, (size_t)o->batch, 4, 0, FILL_LENGTHS);
    spec(sp + 3, (size_t)o->batch, 4, 1, FILL_NONE);
    spec(sp + 4, (size_t)o->batch * o->hidden, 0, 1, FILL_NONE);
    const size_t ws = ft_greedy_workspace(o->dt, o->batch, o->vocab);
    spec(sp + 5, ws ? ws : 1, 1, 0, FILL_NONE);
    return 6;
}
/* the logits read, one table row read and written a slot, the tokens and lengths */
static double greedy_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt);
    return (double)o->batch * ((double)o->vocab * es + 2.0 * o->hidden * es + 12.0);
}
static void greedy_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "argmax+embed");
    snprintf(shape, len, "B=%d V=%d N=%d", o->batch, o->vocab, o->hidden);
}
static ft_status run_greedy_step(const bench_opts *o, void **b, cudaStream_t s)
{
    const size_t ws = ft_greedy_workspace(o->dt, o->batch, o->vocab);
    return ft_greedy_step(o->dt, b[0], o->vocab, b[1], o->vocab, o->hidden, (int *)b[2], 0x7fffffff, (int *)b[3], b[4],
                          o->hidden, o->batch, ws ? b[5] : NULL, ws, s);
}

/* inferencer_step: one step of examples/inferencer.cuh for every slot, all at --len steps
 * of caches of --len (the greedy step then appends nothing, so every call is the same
 * work): 0 the inferencer's workspace (zeros), 1 embedding [V, N], 2 W_qkv [N, 3E], 3 W_o
 * [E, N], 4 lengths */
static ft_inferencer_config infer_config(const bench_opts *o)
{
    ft_inferencer_config c;
    c.dtype = o->dt;
    c.slots = o->batch;
    c.hidden = o->hidden;
    c.heads = o->heads;
    c.head_size = o->head_size;
    c.vocab = o->vocab;
    c.capacity = o->len;
    c.max_prompt = 1;
    return c;
}
static int infer_buffers(const bench_opts *o, buf_spec *sp)
{
    const ft_inferencer_config c = infer_config(o);
    ft_inferencer_buffers ib;
    const size_t E = (size_t)o->heads * o->head_size, N = (size_t)o->hidden;
    spec(sp + 0, ft_inferencer_carve(&c, NULL, &ib), 1, 0, FILL_ZERO);
    spec(sp + 1, (size_t)o->vocab * N, 0, 0, FILL_RANDOM);
    spec(sp + 2, N * 3 * E, 0, 0, FILL_RANDOM);
    spec(sp + 3, E * N, 0, 0, FILL_RANDOM);
    spec(sp + 4, (size_t)o->batch, 4, 0, FILL_LENGTHS);
    return 5;
}
/* the weights and both caches read once */
static double infer_bytes(const bench_opts *o)
{
    const double es = (double)ft_dtype_size(o->dt), E = (double)o->heads * o->head_size, N = o->hidden;
    return ((double)o->vocab * N + 4.0 * N * E + 2.0 * o->batch * E * o->len) * es;
}
static void infer_describe(const bench_opts *o, char *variant, char *shape, size_t len)
{
    snprintf(variant, len, "greedy step");
    snprintf(shape, len, "B=%d N=%d H=%d D=%d V=%d L=%d", o->batch, o->hidden, o->heads, o->head_size, o->vocab,
             o->len);
}
static ft_status run_inferencer_step(const bench_opts *o, void **b, cudaStream_t s)
{
    const ft_inferencer_config c = infer_config(o);
    ft_inferencer_buffers ib;
    ft_inferencer_carve(&c, b[0], &ib);
    ib.lengths = (int *)b[4];
    const ft_inferencer_weights w = {b[1], b[2], b[3]};
    return ft_inferencer_step(&c, &w, shared_gemm_ctx(), &ib, s);
}

static const kernel_desc kernels[] = {
    {"layernorm", "y = LN(x)*gamma + beta", norm_buffers, run_layernorm, norm_bytes, norm_describe},
    {"add_bias_residual_layernorm", "s = x + r + b; y = LN(s) (--sum: store s)", norm_buffers, run_abr_layernorm,
     norm_bytes, norm_describe},
    {"rmsnorm", "y = RMSNorm(x)*gamma", norm_buffers, run_rmsnorm, norm_bytes, norm_describe},
    {"add_bias_residual_rmsnorm", "s = x + r + b; y = RMSNorm(s) (--sum: store s)", norm_buffers, run_abr_rmsnorm,
     norm_bytes, norm_describe},
    {"add_bias_act", "y = act(x + b) (--act gelu|relu|silu|identity)", norm_buffers, run_add_bias_act, norm_bytes,
     norm_describe},
    {"add_bias_residual", "y = x + r + b", norm_buffers, run_add_bias_residual, norm_bytes, norm_describe},
    {"self_attention", "decode step, --batch --heads --kv-heads --head-size --len [--layout bhld|lbhd] [--splits] [--indirection W]",
     attn_buffers, run_self_attention, attn_bytes, attn_describe},
    {"kv_read", "floor of self_attention: its K and V caches read once, same flags", attn_buffers, run_kv_read,
     attn_bytes, attn_describe},
    {"kv_stream", "self_attention's K and V streamed as its sm_90 kernel streams them, nothing else, same flags (--splits)",
     attn_buffers, run_kv_stream, attn_bytes, attn_describe},
    {"launch_empty", "an empty kernel launched as the attention kernels are: a call's fixed cost", attn_buffers,
     run_launch_empty, no_bytes, attn_describe},
    {"kv_reorder", "K and V caches gathered by parent beam (what --indirection saves), --batch --beam --kv-heads --head-size --len",
     reorder_buffers, run_kv_reorder, reorder_bytes, reorder_describe},
    {"cross_attention", "decode step against memory, same flags (--layout bhld|blhd)", attn_buffers,
     run_cross_attention, attn_bytes, attn_describe},
    {"masked_softmax", "in place over [B,H,S,S], --batch --heads --seq [--mask] [--avg-len]", softmax_buffers,
     run_masked_softmax, softmax_bytes, enc_describe},
    {"packed_attention", "attention over packed rows [M,3N] -> [M,N], --batch --heads --seq --head-size [--avg-len] [--causal] [--counters]",
     packed_buffers, run_packed_attention, packed_bytes, packed_describe},
    {"add_qkv_bias_transpose", "fused [B*S,3N] + bias -> Q,K,V [B,H,S,D], --batch --seq --heads --head-size",
     heads_buffers, run_qkv_transpose, heads_bytes, enc_describe},
    {"transpose_heads", "[B,H,S,D] -> [B,S,H*D], --batch --seq --heads --head-size", heads_buffers,
     run_transpose_heads, heads_bytes, enc_describe},
    {"bert_layer", "examples/bert_layer.cuh, --batch --seq --hidden --heads --ffn [--remove-padding --avg-len A]",
     bert_buffers, run_bert_layer, layer_bytes, layer_describe},
    {"decoder_layer", "examples/decoder_layer.cuh one step, --batch --hidden --heads --ffn --len --mem-len",
     decoder_buffers, run_decoder_layer, layer_bytes, layer_describe},
    {"llama_layer", "examples/llama_layer.cuh int8 layer, --batch --seq --hidden --heads --kv-heads --ffn [--len L: the forward ends at step L]",
     llama_buffers, run_llama_layer, llama_bytes, llama_describe},
    {"topk", "the k best of each row, --batch --vocab --k [--topk-form auto|split|row|rowN (N blocks per row)]", decoding_buffers, run_topk, decoding_bytes,
     decoding_describe},
    {"beam_topk", "beam candidates with cum_log_probs, --batch --beam --vocab --k", decoding_buffers, run_beam_topk,
     decoding_bytes, decoding_describe},
    {"topk_sampling", "one token per row from the k best, --batch --vocab --k [--p]", decoding_buffers,
     run_topk_sampling, decoding_bytes, decoding_describe},
    {"topp_sampling", "sort-free top-p sampling, --batch --vocab --p [--form auto|one_block|cluster]", decoding_buffers, run_topp_sampling,
     decoding_bytes, decoding_describe},
    {"topp_sampling_sorted", "top-p by softmax + two radix sorts of all rows, --batch --vocab --p", decoding_buffers,
     run_topp_sampling, decoding_bytes, decoding_describe},
    {"update_logits", "bias / temperature / finished + softmax, --batch --vocab [--mode raw|softmax|log_softmax] [--logits-form auto|stream|cluster] [--logits-stats 1..13]",
     decoding_buffers, run_update_logits, decoding_bytes, decoding_describe},
    {"logits_copy", "floor of update_logits: the logits read once and written as fp32, same flags", decoding_buffers,
     run_logits_copy, decoding_bytes, decoding_describe},
    {"rmsnorm_quant", "int8 of RMSNorm(x)*gamma with per-row scales (LLaMA int8 path), --m --n", quant_buffers,
     run_rmsnorm_quant, quant_bytes, norm_describe},
    {"dequant_residual_rmsnorm_quant", "s = int32 acc * row * col scale + r (stored); int8 of RMSNorm(s), --m --n",
     quant_buffers, run_dequant_residual_rmsnorm_quant, quant_bytes, norm_describe},
    {"dequant_residual", "y = int32 acc * row * col scale + r, --m --n", quant_buffers, run_dequant_residual,
     quant_bytes, norm_describe},
    {"dequant_silu_mul_quant", "int8 of silu(w1 dequant) * (w3 dequant), --m --n (dtype-free)", quant_buffers,
     run_dequant_silu_mul_quant, quant_bytes, norm_describe},
    {"qkv_dequant_rope", "fused int32 q/k/v -> dequant, rotary, [B,H,S,D], --batch --seq --heads --kv-heads --head-size [--len L > S: into caches of L rows]",
     qkv_buffers, run_qkv_dequant_rope, qkv_bytes, qkv_describe},
    {"causal_softmax", "softmax(s*scale) over [B,H,S,S], causal, --batch --heads --seq", csm_buffers,
     run_causal_softmax, csm_bytes, csm_describe},
    {"attn_quant_transpose", "[B,H,S,D] -> int8 [B*S,H*D] with per-row scales, --batch --seq --heads --head-size",
     aqt_buffers, run_attn_quant_transpose, aqt_bytes, aqt_describe},
    {"qkt", "continuous batching: scores = q K^T over kt [B,E,L], --batch --heads --head-size --len", batch_buffers,
     run_qkt, batch_bytes, batch_describe},
    {"softmax_lengths", "continuous batching: softmax of fp32 scores [B,H,L] over each slot's length, same flags",
     batch_buffers, run_softmax_lengths, batch_bytes, batch_describe},
    {"softmax_v", "continuous batching: p [B,H,L] times v [B,L,E], same flags", batch_buffers, run_softmax_v,
     batch_bytes, batch_describe},
    {"greedy_step", "continuous batching: arg-max of logits [B,V], its embedding row next, --batch --vocab --hidden",
     greedy_buffers, run_greedy_step, greedy_bytes, greedy_describe},
    {"inferencer_step", "examples/inferencer.cuh one step, every slot at L, --batch --hidden --heads --head-size --vocab --len",
     infer_buffers, run_inferencer_step, infer_bytes, infer_describe},
};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))

static const kernel_desc *find_kernel(const char *name)
{
    for (int i = 0; i < NKERNELS; i++)
        if (strcmp(kernels[i].name, name) == 0)
            return &kernels[i];
    return NULL;
}

static void print_row(const bench_env *env, const bench_opts *o, const char *variant, const char *shape, double us,
                      double dev_us, double bytes)
{
    const double gbps = bytes / (us * 1e-6) / 1e9, dev_gbps = bytes / (dev_us * 1e-6) / 1e9;
    if (o->csv)
        printf("%s,%s,%s,%s,%.2f,%.2f,%.0f,%.1f,%.3f,%.3f,%.1f,\"%s\"\n", o->kernel, variant, ft_dtype_name(o->dt),
               shape, us, dev_us, bytes, gbps, gbps / env->copy_gbps, dev_gbps / env->copy_gbps, env->copy_gbps,
               env->prop.name);
    else
        printf("%-28s %-18s %-5s %-34s %9.2f us %9.2f us %10.1f MB %8.1f GB/s %6.1f%% %6.1f%%\n", o->kernel, variant,
               ft_dtype_name(o->dt), shape, us, dev_us, bytes / 1e6, gbps, 100.0 * gbps / env->copy_gbps,
               100.0 * dev_gbps / env->copy_gbps);
    fflush(stdout);
}

static void bench_one(const bench_env *env, const bench_opts *o)
{
    const kernel_desc *k = find_kernel(o->kernel);
    buf_spec sp[MAX_BUFS];
    memset(sp, 0, sizeof sp);
    const int nb = k->buffers(o, sp);
    const size_t es = ft_dtype_size(o->dt);
    double rot_bytes = 0, max_count = 0;
    for (int i = 0; i < nb; i++) {
        if (sp[i].rotate)
            rot_bytes += (double)sp[i].count * (sp[i].esize ? sp[i].esize : sp[i].is_int ? 4 : es);
        if (sp[i].fill == FILL_RANDOM && sp[i].count > max_count)
            max_count = (double)sp[i].count;
    }
    /* enough sets that the rotation exceeds 3x L2; bounded by free memory */
    int nsets = rot_bytes > 0 ? (int)ceil(3.0 * env->prop.l2CacheSize / rot_bytes) + 1 : 1;
    size_t free_b = 0, total_b = 0;
    FT_CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    while (nsets > 1 && nsets * rot_bytes > 0.6 * (double)free_b)
        nsets--;

    /* one random source, N(0, 1) made on the device, copied into every buffer: random data,
     * because zeros can flatter a kernel */
    ref_rng rng;
    ref_rng_seed(&rng, 1);
    void *src = dev_alloc((size_t)max_count * es + 4);
    if (max_count > 0) {
        bench_fill_normal<<<1024, 256>>>(src, (size_t)max_count, (int)o->dt, 1ull);
        FT_CHECK_CUDA(cudaGetLastError());
        FT_CHECK_CUDA(cudaDeviceSynchronize());
        /* a look at the first elements: a fill that went wrong (zeros, a constant) must not
         * flatter a kernel unnoticed */
        const size_t look = max_count < 65536 ? (size_t)max_count : 65536;
        float *h = (float *)malloc(look * sizeof(float));
        dev_download(h, src, look, o->dt);
        double m = 0.0, m2 = 0.0;
        for (size_t i = 0; i < look; i++) {
            m += h[i];
            m2 += (double)h[i] * h[i];
        }
        free(h);
        m /= (double)look;
        const double sd = sqrt(m2 / (double)look - m * m);
        if (look >= 4096 && !(fabs(m) < 0.05 && fabs(sd - 1.0) < 0.05)) {
            fprintf(stderr, "ftbench: the random source is off: mean %g, sd %g over %zu elements\n", m, sd, look);
            exit(2);
        }
    }
    int *lens = (int *)malloc(sizeof(int) * (size_t)(o->batch > 0 ? o->batch : 1));
    int *offs = (int *)malloc(sizeof(int) * (size_t)(o->batch > 0 ? o->batch + 1 : 1));
    offs[0] = 0;
    for (int i = 0; i < o->batch; i++) {
        lens[i] = bench_length(o, i);
        offs[i + 1] = offs[i] + lens[i];
    }

    void ***sets = (void ***)calloc((size_t)nsets, sizeof(void **));
    void *shared[MAX_BUFS];
    for (int s = 0; s < nsets; s++)
        sets[s] = (void **)calloc(MAX_BUFS, sizeof(void *));
    for (int i = 0; i < nb; i++) {
        const size_t bytes = sp[i].count * (sp[i].esize ? (size_t)sp[i].esize : sp[i].is_int ? 4 : es);
        for (int s = 0; s < (sp[i].rotate ? nsets : 1); s++) {
            void *p = dev_alloc(bytes);
            if (sp[i].fill == FILL_RANDOM)
                FT_CHECK_CUDA(cudaMemcpy(p, src, bytes, cudaMemcpyDeviceToDevice));
            else if (sp[i].fill == FILL_LENGTHS)
                FT_CHECK_CUDA(cudaMemcpy(p, lens, bytes, cudaMemcpyHostToDevice));
            else if (sp[i].fill == FILL_OFFSETS)
                FT_CHECK_CUDA(cudaMemcpy(p, offs, bytes, cudaMemcpyHostToDevice));
            else if (sp[i].fill == FILL_ZERO)
                FT_CHECK_CUDA(cudaMemset(p, 0, bytes));
            else if (sp[i].fill == FILL_INTS || sp[i].fill == FILL_SCALES) {
                bench_fill_ints<<<1024, 256>>>(p, sp[i].count, sp[i].fill == FILL_SCALES, 7ull + (unsigned long long)i);
                FT_CHECK_CUDA(cudaGetLastError());
            }
            else if (sp[i].fill == FILL_BEAMS) { /* beam indices, uniform in [0, range) */
                const int w = sp[i].range;
                int *hb = (int *)malloc(bytes);
                for (size_t j = 0; j < sp[i].count; j++)
                    hb[j] = (int)(ref_rng_u64(&rng) % (uint64_t)w);
                FT_CHECK_CUDA(cudaMemcpy(p, hb, bytes, cudaMemcpyHostToDevice));
                free(hb);
            }
            sets[s][i] = p;
        }
        if (!sp[i].rotate) {
            shared[i] = sets[0][i];
            for (int s = 1; s < nsets; s++)
                sets[s][i] = shared[i];
        }
    }
    FT_CHECK_CUDA(cudaFree(src));
    free(lens);
    free(offs);

    cudaStream_t stream;
    FT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float us = 0.0f, dev_us = 0.0f, host_us = 0.0f;
    time_launches(o, k->run, sets, nsets, stream, &us, &dev_us, &host_us);
    char variant[128], shape[128];
    k->describe(o, variant, shape, sizeof variant);
    print_row(env, o, variant, shape, us, dev_us, k->bytes(o));
    if (o->host) /* a comment line; on stderr with --csv, so that the rows stay CSV */
        fprintf(o->csv ? stderr : stdout, "# host: %s %s, %.2f us inside each call (median, per-call pass)\n",
                o->kernel, shape, host_us);
    for (int i = 0; i < nb; i++) {
        if (sp[i].rotate)
            for (int s = 0; s < nsets; s++)
                cudaFree(sets[s][i]);
        else
            cudaFree(shared[i]);
    }
    for (int s = 0; s < nsets; s++)
        free(sets[s]);
    free(sets);
    cudaStreamDestroy(stream);
}

/* ---------------------------------------------------------------- command line */

static const char *suite[] = {
    /* the foundation issue's targets first */
    "layernorm --dtype fp16 --m 16384 --n 4096",
    "layernorm --dtype fp16 --m 4096 --n 1024",
    "rmsnorm --dtype fp16 --m 16384 --n 4096",
    "rmsnorm --dtype fp16 --m 4096 --n 1024",
    "add_bias_residual_layernorm --dtype fp16 --m 16384 --n 4096",
    "add_bias_residual_layernorm --dtype fp16 --m 16384 --n 4096 --sum",
    "add_bias_residual_layernorm --dtype fp16 --m 4096 --n 1024 --sum",
    "add_bias_residual_rmsnorm --dtype fp16 --m 16384 --n 4096 --sum",
    "add_bias_act --dtype fp16 --m 16384 --n 4096 --act gelu",
    "add_bias_act --dtype fp16 --m 4096 --n 4096 --act relu",
    "add_bias_residual --dtype fp16 --m 16384 --n 4096",
    /* other dtypes and the other code paths: short rows, streaming rows, rows off the 16-byte
     * grid (vectors between a head and a tail: through the pipeline for the plain norms' long
     * rows, short rows several a block, past one pass ft_norm_long's middles) */
    "layernorm --dtype fp32 --m 16384 --n 4096",
    "layernorm --dtype bf16 --m 16384 --n 4096",
    "rmsnorm --dtype bf16 --m 16384 --n 4096",
    "layernorm --dtype bf16 --m 4096 --n 1024",
    "layernorm --dtype fp16 --m 262144 --n 256",
    "layernorm --dtype fp16 --m 1024 --n 65536",
    /* rows past the pipeline's registers, within shared memory: ft_norm_long (from 64 KB) */
    "layernorm --dtype fp16 --m 2048 --n 65536",
    "layernorm --dtype fp16 --m 1024 --n 98304",
    "layernorm --dtype fp32 --m 2048 --n 20480",
    "layernorm --dtype fp32 --m 4096 --n 16388",
    "rmsnorm --dtype bf16 --m 2048 --n 40960",
    /* the pipeline's stage plan (two stages, four) and its rows of 513 to 1024 threads */
    "layernorm --dtype fp16 --m 32768 --n 2048",
    "layernorm --dtype fp16 --m 8192 --n 8192",
    "layernorm --dtype fp16 --m 4096 --n 16384",
    "layernorm --dtype fp16 --m 3072 --n 20480",
    "rmsnorm --dtype fp16 --m 2048 --n 32768",
    "layernorm --dtype fp16 --m 16384 --n 4095",
    "rmsnorm --dtype fp16 --m 16384 --n 4095",
    "layernorm --dtype bf16 --m 8192 --n 8191",
    "layernorm --dtype fp32 --m 16384 --n 4095",
    "add_bias_residual_layernorm --dtype fp16 --m 16384 --n 4095 --sum",
    "layernorm --dtype fp16 --m 65536 --n 127",
    "add_bias_residual_layernorm --dtype fp16 --m 16384 --n 1001 --sum",
    "layernorm --dtype fp16 --m 1024 --n 40001",
    "layernorm --dtype fp32 --m 1024 --n 36001",
    "add_bias_act --dtype fp16 --m 16384 --n 4095 --act gelu",
    "add_bias_act --dtype bf16 --m 16384 --n 4096 --act silu",
    "add_bias_act --dtype bf16 --m 16384 --n 4095 --act silu",
    "add_bias_act --dtype fp16 --m 4096 --n 1001 --act gelu",
    "add_bias_residual --dtype fp16 --m 16384 --n 4095",
    /* decoder attention: the attention issue's shapes, GQA, layouts, splits, dtypes */
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096 --counters",
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096 --impl register",
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096 --splits 1",
    "self_attention --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 64 --heads 12 --head-size 64 --len 1024",
    "self_attention --dtype fp16 --batch 64 --heads 32 --head-size 128 --len 2048",
    "self_attention --dtype fp16 --batch 256 --heads 8 --head-size 64 --len 512",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096 --impl register",
    "self_attention --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096 --impl register",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 1 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 1 --head-size 64 --len 4096",
    "self_attention --dtype fp16 --batch 1 --heads 32 --kv-heads 8 --head-size 64 --len 4096",
    /* many short rows: head groups on tensor cores two blocks an SM (D128); past D128 the heads
     * are the mma's n dimension, 8 a block: pairs (D256), groups of 8 (D256, D192) */
    "self_attention --dtype fp16 --batch 256 --heads 32 --kv-heads 8 --head-size 128 --len 256",
    "self_attention --dtype fp16 --batch 64 --heads 16 --kv-heads 8 --head-size 256 --len 1024",
    "self_attention --dtype fp16 --batch 128 --heads 8 --kv-heads 1 --head-size 256 --len 1024",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 1 --head-size 256 --len 4096",
    "self_attention --dtype fp16 --batch 64 --heads 32 --kv-heads 2 --head-size 256 --len 1024",
    "self_attention --dtype fp16 --batch 128 --heads 8 --kv-heads 1 --head-size 192 --len 1024",
    /* short GQA rows on the persistent grid: rows of one tile in tp (D64 L128), longer ones in
     * tq (D128 L128, D64 L256, and D128 L512 past t3's bound), with the producer's hand-over of q */
    "self_attention --dtype fp16 --batch 256 --heads 32 --kv-heads 8 --head-size 128 --len 128",
    "self_attention --dtype fp16 --batch 256 --heads 32 --kv-heads 8 --head-size 128 --len 512",
    "self_attention --dtype fp16 --batch 256 --heads 16 --kv-heads 4 --head-size 64 --len 256",
    "self_attention --dtype fp16 --batch 256 --heads 32 --kv-heads 8 --head-size 64 --len 256",
    "self_attention --dtype fp16 --batch 256 --heads 16 --kv-heads 4 --head-size 64 --len 128",
    "self_attention --dtype fp16 --batch 512 --heads 16 --kv-heads 4 --head-size 64 --len 128",
    /* one head a block three an SM (short rows) */
    "self_attention --dtype fp16 --batch 256 --heads 8 --head-size 64 --len 128",
    "self_attention --dtype fp16 --batch 256 --heads 32 --head-size 128 --len 128",
    /* pairs of heads (tensor cores at D64 and D128, and at D80 in a contiguous cache) */
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 16 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 256 --heads 8 --kv-heads 4 --head-size 64 --len 512",
    "self_attention --dtype fp16 --batch 256 --heads 8 --kv-heads 4 --head-size 80 --len 512",
    "self_attention --dtype fp16 --batch 256 --heads 32 --kv-heads 8 --head-size 32 --len 512",
    "self_attention --dtype fp16 --batch 256 --heads 8 --kv-heads 4 --head-size 32 --len 512",
    /* MQA at batch 1 with split counters: the combine kernel merges a group's splits */
    "self_attention --dtype fp16 --batch 1 --heads 32 --kv-heads 1 --head-size 128 --len 8192 --counters",
    "self_attention --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096 --layout lbhd",
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096 --layout lbhd",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096 --layout lbhd",
    "self_attention --dtype bf16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp32 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 16 --heads 32 --head-size 80 --len 2048",
    /* beam search, 8 items x 4 beams: plain, through a cache indirection table, and the
     * reorder the table replaces */
    "self_attention --dtype fp16 --batch 32 --heads 32 --head-size 128 --len 1024",
    "self_attention --dtype fp16 --batch 32 --heads 32 --head-size 128 --len 1024 --indirection 4",
    "self_attention --dtype fp16 --batch 32 --heads 32 --head-size 128 --len 1024 --indirection 4 --impl register",
    "kv_reorder --dtype fp16 --batch 32 --beam 4 --heads 32 --head-size 128 --len 1024",
    "cross_attention --dtype fp16 --batch 64 --heads 8 --head-size 64 --len 512 --layout blhd",
    "cross_attention --dtype fp16 --batch 64 --heads 8 --head-size 64 --len 512 --layout blhd --impl register",
    /* encoder pieces and the composed layers: the encoder issue's shapes */
    "masked_softmax --dtype fp16 --batch 32 --heads 12 --seq 128 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 32 --heads 12 --seq 128 --head-size 64",
    "masked_softmax --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 64",
    "masked_softmax --dtype fp32 --batch 8 --heads 16 --seq 512 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 2 --heads 16 --seq 4096 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 2 --heads 16 --seq 4096 --head-size 64",
    "masked_softmax --dtype fp32 --batch 1 --heads 16 --seq 4096 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 1 --heads 16 --seq 6000 --head-size 64 --mask",
    /* rows off the 16-byte grid (S odd, or 60): 16-byte words in one warp (S77 in groups of 4
     * lanes of 4 words, ViT-B/16's S197 without a mask in 8 lanes of 4, S999 in 32 lanes of 4;
     * S60 in groups of 4 lanes of 2 words and S1023 in 32 lanes of 4, both shifted into row
     * order), 16-byte words in one block (S2047); fp32 S77 in groups of 8 lanes of 4 words */
    "masked_softmax --dtype fp16 --batch 256 --heads 12 --seq 77 --head-size 64 --mask",
    "masked_softmax --dtype fp32 --batch 256 --heads 12 --seq 77 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 256 --heads 12 --seq 60 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 64 --heads 12 --seq 197 --head-size 64",
    "masked_softmax --dtype fp16 --batch 13 --heads 16 --seq 999 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 32 --heads 16 --seq 1023 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 8 --heads 16 --seq 2047 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 1 --heads 8 --seq 16384 --head-size 64 --mask",
    "masked_softmax --dtype fp16 --batch 1 --heads 8 --seq 16384 --head-size 64",
    /* streamed rows off the grid (16-byte words from the grid point below each row), fp32 streamed */
    "masked_softmax --dtype fp16 --batch 1 --heads 12 --seq 12001 --head-size 64 --mask",
    "masked_softmax --dtype fp32 --batch 1 --heads 4 --seq 16384 --head-size 64 --mask",
    "packed_attention --dtype fp16 --batch 32 --heads 12 --seq 128 --head-size 64 --avg-len 64",
    "packed_attention --dtype fp16 --batch 32 --heads 12 --seq 128 --head-size 64",
    "packed_attention --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 64",
    "packed_attention --dtype bf16 --batch 4 --heads 32 --seq 1024 --head-size 128 --causal",
    "packed_attention --dtype bf16 --batch 4 --heads 32 --seq 1024 --head-size 128 --causal --counters",
    "packed_attention --dtype bf16 --batch 4 --heads 32 --seq 1024 --head-size 128 --causal --impl register",
    "packed_attention --dtype fp16 --batch 4 --heads 32 --seq 1024 --head-size 128",
    "packed_attention --dtype fp16 --batch 4 --heads 32 --seq 1024 --head-size 128 --counters",
    "packed_attention --dtype fp16 --batch 2 --heads 32 --seq 4096 --head-size 128 --causal",
    "packed_attention --dtype fp16 --batch 2 --heads 32 --seq 4096 --head-size 128 --causal --counters",
    "packed_attention --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 128 --avg-len 384",
    "packed_attention --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 128 --avg-len 384 --counters",
    "packed_attention --dtype fp16 --batch 4 --heads 32 --seq 2048 --head-size 64 --causal",
    "packed_attention --dtype fp16 --batch 8 --heads 16 --seq 512 --head-size 64 --impl register",
    "add_qkv_bias_transpose --dtype fp16 --batch 32 --seq 128 --heads 12 --head-size 64",
    "transpose_heads --dtype fp16 --batch 32 --seq 128 --heads 12 --head-size 64",
    /* the LLaMA int8 path: LLaMA-2 7B shapes, a 4096-token prefill and a 64-sequence decode step */
    "rmsnorm_quant --dtype fp16 --m 4096 --n 4096",
    "rmsnorm_quant --dtype fp16 --m 64 --n 4096",
    "dequant_residual_rmsnorm_quant --dtype fp16 --m 4096 --n 4096",
    "dequant_residual --dtype fp16 --m 4096 --n 4096",
    "dequant_silu_mul_quant --dtype fp32 --m 4096 --n 11008",
    "dequant_silu_mul_quant --dtype fp32 --m 64 --n 11008",
    "qkv_dequant_rope --dtype fp16 --batch 1 --seq 4096 --heads 32 --kv-heads 32 --head-size 128",
    "qkv_dequant_rope --dtype fp16 --batch 64 --seq 1 --heads 32 --kv-heads 8 --head-size 128 --len 2048",
    "causal_softmax --dtype fp16 --batch 1 --heads 32 --seq 2048",
    "causal_softmax --dtype fp16 --batch 64 --heads 32 --seq 128",
    "attn_quant_transpose --dtype fp16 --batch 1 --seq 4096 --heads 32 --head-size 128",
    /* the continuous-batching inferencer's pieces, every slot at L steps (the attention
     * issue's shapes: beside self_attention's fused step) and a LLaMA-sized greedy step */
    "qkt --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "softmax_lengths --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "softmax_v --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "qkt --dtype fp16 --batch 64 --heads 12 --head-size 64 --len 1024",
    "softmax_v --dtype fp16 --batch 64 --heads 12 --head-size 64 --len 1024",
    "qkt --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096",
    "softmax_v --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096",
    "greedy_step --dtype fp16 --batch 64 --vocab 32000 --hidden 4096",
    "greedy_step --dtype fp16 --batch 8 --vocab 128256 --hidden 4096",
    "inferencer_step --dtype fp16 --batch 64 --hidden 4096 --heads 32 --head-size 128 --vocab 32000 --len 1024",
    "inferencer_step --dtype fp16 --batch 8 --hidden 4096 --heads 32 --head-size 128 --vocab 32000 --len 4096",
    "bert_layer --dtype fp16 --batch 32 --seq 128 --hidden 768 --heads 12 --ffn 3072",
    "bert_layer --dtype fp16 --batch 32 --seq 128 --hidden 768 --heads 12 --ffn 3072 --avg-len 64",
    "bert_layer --dtype fp16 --batch 32 --seq 128 --hidden 768 --heads 12 --ffn 3072 --avg-len 64 --remove-padding",
    "bert_layer --dtype bf16 --batch 32 --seq 128 --hidden 768 --heads 12 --ffn 3072",
    "decoder_layer --dtype fp16 --batch 64 --hidden 512 --heads 8 --ffn 2048 --len 128 --mem-len 128",
    /* the LLaMA int8 layer (LLaMA-2 7B sizes): a 2048-token prompt, decode steps at 1024 and 4096 */
    "llama_layer --dtype fp16 --batch 1 --seq 2048 --hidden 4096 --heads 32 --ffn 11008",
    "llama_layer --dtype fp16 --batch 8 --seq 1 --hidden 4096 --heads 32 --ffn 11008 --len 1024",
    "llama_layer --dtype fp16 --batch 64 --seq 1 --hidden 4096 --heads 32 --kv-heads 8 --ffn 11008 --len 1024",
    /* decoding: the decoding issue's shapes (fp32 logits) */
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 1",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 4",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 16",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 64",
    "topk --dtype fp32 --batch 64 --vocab 128256 --k 4",
    "topk --dtype fp32 --batch 256 --vocab 50257 --k 4",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 4 --topk-form split",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 64 --topk-form split",
    "topk --dtype fp32 --batch 256 --vocab 50257 --k 4 --topk-form split",
    "topk --dtype fp32 --batch 64 --vocab 128256 --k 4 --topk-form split",
    "topk --dtype fp32 --batch 64 --vocab 128256 --k 4 --topk-form row2",
    "topk --dtype fp32 --batch 64 --vocab 32000 --k 4 --topk-form row2",
    "topk --dtype fp16 --batch 64 --vocab 32000 --k 4",
    "beam_topk --dtype fp32 --batch 16 --beam 4 --vocab 32000 --k 4",
    "topk_sampling --dtype fp32 --batch 64 --vocab 32000 --k 4",
    "topk_sampling --dtype fp32 --batch 64 --vocab 32000 --k 64 --p 0.9",
    "topp_sampling --dtype fp32 --batch 64 --vocab 32000 --p 0.9",
    "topp_sampling --dtype fp32 --batch 64 --vocab 128256 --p 0.9",
    "topp_sampling --dtype fp32 --batch 256 --vocab 50257 --p 0.9",
    "topp_sampling --dtype fp32 --batch 64 --vocab 32000 --p 0.9 --form one_block",
    "topp_sampling --dtype fp32 --batch 64 --vocab 128256 --p 0.9 --form one_block",
    "topp_sampling --dtype fp32 --batch 256 --vocab 50257 --p 0.9 --form one_block",
    "topp_sampling --dtype fp32 --batch 64 --vocab 32000 --p 0.5",
    "topp_sampling --dtype fp32 --batch 64 --vocab 32000 --p 0.5 --form one_block",
    "topp_sampling_sorted --dtype fp32 --batch 64 --vocab 32000 --p 0.9",
    "topp_sampling_sorted --dtype fp32 --batch 64 --vocab 128256 --p 0.9",
    "topp_sampling_sorted --dtype fp32 --batch 256 --vocab 50257 --p 0.9",
    "topp_sampling_sorted --dtype fp32 --batch 1 --vocab 128256 --p 0.9",
    "topp_sampling_sorted --dtype bf16 --batch 64 --vocab 128256 --p 0.9",
    "update_logits --dtype fp32 --batch 64 --vocab 128256 --mode log_softmax",
    "update_logits --dtype fp32 --batch 64 --vocab 32000 --mode log_softmax",
    "update_logits --dtype fp16 --batch 64 --vocab 128256 --mode softmax",
    "update_logits --dtype fp32 --batch 64 --vocab 128256 --mode log_softmax --logits-form cluster",
    "update_logits --dtype fp16 --batch 64 --vocab 128256 --mode softmax --logits-form stream",
    "update_logits --dtype fp16 --batch 64 --vocab 128256 --mode softmax --logits-form cluster",
    "update_logits --dtype fp32 --batch 16 --vocab 32000 --mode log_softmax",
    "update_logits --dtype fp32 --batch 256 --vocab 128256 --mode log_softmax",
    "update_logits --dtype fp16 --batch 256 --vocab 128256 --mode softmax",
    "update_logits --dtype fp16 --batch 1 --vocab 128256 --mode softmax",
    "update_logits --dtype fp16 --batch 1 --vocab 128256 --mode softmax --logits-form cluster",
    "update_logits --dtype bf16 --batch 20 --vocab 128256 --mode log_softmax",
    "update_logits --dtype bf16 --batch 20 --vocab 128256 --mode log_softmax --logits-form cluster",
    "update_logits --dtype bf16 --batch 64 --vocab 128256 --mode softmax",
    "logits_copy --dtype fp16 --batch 64 --vocab 128256",
    "logits_copy --dtype fp32 --batch 64 --vocab 128256",
    "logits_copy --dtype fp32 --batch 256 --vocab 128256",
};
#define NSUITE ((int)(sizeof suite / sizeof suite[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ftbench [<kernel> [--dtype fp32|fp16|bf16] [shape flags]] [--iters N] [--warmup N]\n"
               "               [--csv] [--host: the host's time inside each call too] [--list] [--suite]\n"
               "  norm family: --m M --n N [--act gelu|relu|silu|identity] [--sum]\n"
               "  attention:   --batch B --heads H [--kv-heads Hkv] --head-size D --len L\n"
               "               [--layout bhld|lbhd|blhd] [--splits S (0 automatic)] [--impl register|async]\n"
               "               [--indirection W: read the cache through a random beam table of width W]\n"
               "               [--counters: split counters, the last block merges the splits; packed_attention:\n"
               "                tile counters, the persistent kernel at head size 128]\n"
               "  encoder:     --batch B --heads H --seq S [--head-size D] [--mask] [--avg-len A] [--causal]\n"
               "  layers:      --batch B --seq S --hidden N --heads H --ffn F [--remove-padding]\n"
               "               decoder_layer: --len L (cached steps) --mem-len Lmem\n"
               "  decoding:    --batch B --vocab V [--k K] [--beam W] [--p P] [--mode raw|softmax|log_softmax]\n"
               "               update_logits: [--logits-form auto|stream|cluster] [--logits-stats S: stats warps]\n"
               "With no kernel, runs the default suite (--suite prints it).\nKernels:\n");
    for (int i = 0; i < NKERNELS; i++)
        fprintf(f, "  %-30s %s\n", kernels[i].name, kernels[i].about);
}

/* Parses argv into o; returns 0 on success, prints why and returns -1 otherwise. */
static int parse(int argc, char **argv, bench_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--csv") == 0)
            o->csv = 1;
        else if (strcmp(a, "--sum") == 0)
            o->sum = 1;
        else if (strcmp(a, "--mask") == 0)
            o->use_mask = 1;
        else if (strcmp(a, "--remove-padding") == 0)
            o->remove_padding = 1;
        else if (strcmp(a, "--causal") == 0)
            o->causal = 1;
        else if (strcmp(a, "--counters") == 0)
            o->counters = 1;
        else if (strcmp(a, "--host") == 0)
            o->host = 1;
        else if (a[0] != '-' && !o->kernel)
            o->kernel = a;
        else if (!v) {
            fprintf(stderr, "ftbench: %s needs a value\n", a);
            return -1;
        } else {
            i++;
            if (strcmp(a, "--m") == 0)
                o->m = atoll(v);
            else if (strcmp(a, "--batch") == 0)
                o->batch = atoi(v);
            else if (strcmp(a, "--heads") == 0)
                o->heads = atoi(v);
            else if (strcmp(a, "--kv-heads") == 0)
                o->kv_heads = atoi(v);
            else if (strcmp(a, "--head-size") == 0)
                o->head_size = atoi(v);
            else if (strcmp(a, "--len") == 0)
                o->len = atoi(v);
            else if (strcmp(a, "--splits") == 0)
                o->splits = atoi(v);
            else if (strcmp(a, "--impl") == 0) {
                if (strcmp(v, "register") == 0)
                    o->impl = FT_ATTN_IMPL_REGISTER;
                else if (strcmp(v, "async") == 0)
                    o->impl = FT_ATTN_IMPL_ASYNC;
                else {
                    fprintf(stderr, "ftbench: unknown attention impl %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--seq") == 0)
                o->seq = atoi(v);
            else if (strcmp(a, "--hidden") == 0)
                o->hidden = atoi(v);
            else if (strcmp(a, "--ffn") == 0)
                o->ffn = atoi(v);
            else if (strcmp(a, "--avg-len") == 0)
                o->avg_len = atoi(v);
            else if (strcmp(a, "--mem-len") == 0)
                o->mem_len = atoi(v);
            else if (strcmp(a, "--vocab") == 0)
                o->vocab = atoi(v);
            else if (strcmp(a, "--k") == 0)
                o->k = atoi(v);
            else if (strcmp(a, "--form") == 0) {
                o->form = strcmp(v, "auto") == 0       ? FT_TOPP_FORM_AUTO
                          : strcmp(v, "one_block") == 0 ? FT_TOPP_FORM_ONE_BLOCK
                          : strcmp(v, "cluster") == 0  ? FT_TOPP_FORM_CLUSTER
                                                       : -1;
                if (o->form < 0) {
                    fprintf(stderr, "ftbench: unknown top-p form %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--topk-form") == 0) { /* rowN: the row form with N blocks per row */
                o->tkblocks = strncmp(v, "row", 3) == 0 ? atoi(v + 3) : 0;
                o->tkform = strcmp(v, "auto") == 0      ? FT_TOPK_FORM_AUTO
                            : strcmp(v, "split") == 0   ? FT_TOPK_FORM_SPLIT
                            : strncmp(v, "row", 3) == 0 ? FT_TOPK_FORM_ROW
                                                        : -1;
                if (o->tkform < 0 || o->tkblocks < 0) {
                    fprintf(stderr, "ftbench: unknown top-K form %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--logits-form") == 0) {
                o->lgform = strcmp(v, "auto") == 0      ? FT_LOGITS_FORM_AUTO
                            : strcmp(v, "stream") == 0  ? FT_LOGITS_FORM_STREAM
                            : strcmp(v, "cluster") == 0 ? FT_LOGITS_FORM_CLUSTER
                                                        : -1;
                if (o->lgform < 0) {
                    fprintf(stderr, "ftbench: unknown update_logits form %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--logits-stats") == 0) {
                o->lgstats = atoi(v);
                if (o->lgstats < 0 || o->lgstats >= FT_LOGITS_STREAM_WORKERS) {
                    fprintf(stderr, "ftbench: --logits-stats %s is outside 0..%d\n", v, FT_LOGITS_STREAM_WORKERS - 1);
                    return -1;
                }
            }
            else if (strcmp(a, "--beam") == 0)
                o->beam = atoi(v);
            else if (strcmp(a, "--indirection") == 0)
                o->indir = atoi(v);
            else if (strcmp(a, "--p") == 0)
                o->p = (float)atof(v);
            else if (strcmp(a, "--mode") == 0) {
                o->mode = strcmp(v, "raw") == 0 ? 0 : strcmp(v, "softmax") == 0 ? 1 : strcmp(v, "log_softmax") == 0 ? 2 : -1;
                if (o->mode < 0) {
                    fprintf(stderr, "ftbench: unknown mode %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--layout") == 0) {
                if (strcmp(v, "bhld") == 0)
                    o->layout = FT_KV_BHLD;
                else if (strcmp(v, "lbhd") == 0)
                    o->layout = FT_KV_LBHD;
                else if (strcmp(v, "blhd") == 0)
                    o->layout = FT_KV_BLHD;
                else {
                    fprintf(stderr, "ftbench: unknown layout %s\n", v);
                    return -1;
                }
            }
            else if (strcmp(a, "--n") == 0)
                o->n = atoll(v);
            else if (strcmp(a, "--iters") == 0)
                o->iters = atoi(v);
            else if (strcmp(a, "--warmup") == 0)
                o->warmup = atoi(v);
            else if (strcmp(a, "--dtype") == 0) {
                if (strcmp(v, "fp32") == 0)
                    o->dt = FT_FP32;
                else if (strcmp(v, "fp16") == 0)
                    o->dt = FT_FP16;
                else if (strcmp(v, "bf16") == 0)
                    o->dt = FT_BF16;
                else {
                    fprintf(stderr, "ftbench: unknown dtype %s\n", v);
                    return -1;
                }
            } else if (strcmp(a, "--act") == 0) {
                int found = 0;
                for (int k = 0; k < 4; k++)
                    if (strcmp(v, ft_act_name((ft_act)k)) == 0) {
                        o->act = (ft_act)k;
                        found = 1;
                    }
                if (!found) {
                    fprintf(stderr, "ftbench: unknown activation %s\n", v);
                    return -1;
                }
            } else {
                fprintf(stderr, "ftbench: unknown option %s\n", a);
                return -1;
            }
        }
    }
    if (o->kernel && !find_kernel(o->kernel)) {
        fprintf(stderr, "ftbench: unknown kernel %s\n", o->kernel);
        return -1;
    }
    if (o->m <= 0 || o->n <= 0 || o->iters <= 0 || o->warmup < 0 || o->batch <= 0 || o->heads <= 0 ||
        o->head_size <= 0 || o->len <= 0 || o->seq <= 0 || o->hidden <= 0 || o->ffn <= 0 || o->vocab <= 0 ||
        o->k <= 0 || o->beam <= 0 || !(o->p > 0.0f && o->p <= 1.0f)) {
        fprintf(stderr, "ftbench: sizes and --iters must be positive\n");
        return -1;
    }
    if (o->indir < 0 || (o->indir > 0 && o->batch % o->indir != 0) ||
        (o->kernel && strcmp(o->kernel, "kv_reorder") == 0 && o->batch % o->beam != 0)) {
        fprintf(stderr, "ftbench: --indirection W (self_attention) and --beam W (kv_reorder) must divide --batch\n");
        return -1;
    }
    if (o->kv_heads <= 0)
        o->kv_heads = o->heads;
    if (o->mem_len <= 0)
        o->mem_len = o->len;
    if (o->kernel && (strcmp(o->kernel, "bert_layer") == 0 || strcmp(o->kernel, "decoder_layer") == 0) &&
        o->hidden % o->heads) {
        fprintf(stderr, "ftbench: --hidden must be a multiple of --heads\n");
        return -1;
    }
    return 0;
}

static bench_opts default_opts(void)
{
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.dt = FT_FP16;
    o.m = 4096;
    o.n = 1024;
    o.act = FT_ACT_GELU;
    o.batch = 8;
    o.heads = 32;
    o.head_size = 128;
    o.len = 1024;
    o.seq = 128;
    o.hidden = 768;
    o.ffn = 3072;
    o.layout = FT_KV_BHLD;
    o.vocab = 32000;
    o.k = 4;
    o.beam = 4;
    o.p = 1.0f;
    o.mode = FT_LOGITS_LOG_SOFTMAX;
    o.iters = 100;
    o.warmup = 10;
    return o;
}

/* Splits a suite line into words and parses it on top of the defaults. */
static bench_opts parse_suite_line(const char *line, const bench_opts *common)
{
    static char buf[256];
    char *words[32];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && n < 32; t = strtok(NULL, " "))
        words[n++] = t;
    bench_opts o = default_opts();
    o.csv = common->csv;
    o.iters = common->iters;
    o.warmup = common->warmup;
    if (parse(n, words, &o) != 0)
        exit(2);
    return o;
}

int main(int argc, char **argv)
{
    bench_opts o = default_opts();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0 || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--suite") == 0) {
            for (int s = 0; s < NSUITE; s++)
                printf("%s\n", suite[s]);
            return 0;
        }
    }
    if (parse(argc - 1, argv + 1, &o) != 0) {
        usage(stderr);
        return 2;
    }
    char reason[256];
    if (!ft_cuda_probe(reason, sizeof reason)) {
        fprintf(stderr, "ftbench: %s\n", reason);
        return 77;
    }
    bench_env env;
    FT_CHECK_CUDA(cudaGetDeviceProperties(&env.prop, 0));
    env.copy_gbps = measure_copy_gbps();
    if (o.csv)
        printf("kernel,variant,dtype,shape,time_us,device_us,bytes,gbps,frac_copy,dev_frac_copy,copy_gbps,device\n");
    else
        printf("# %s, %d SMs, L2 %d MB; measured copy bandwidth %.0f GB/s (read + write)\n"
               "%-28s %-18s %-5s %-34s %12s %12s %13s %13s %7s %7s\n",
               env.prop.name, env.prop.multiProcessorCount, env.prop.l2CacheSize >> 20, env.copy_gbps, "kernel",
               "variant", "dtype", "shape", "per call", "device", "bytes", "effective", "of copy", "device");
    if (o.kernel) {
        bench_one(&env, &o);
        return 0;
    }
    for (int s = 0; s < NSUITE; s++) {
        bench_opts so = parse_suite_line(suite[s], &o);
        bench_one(&env, &so);
    }
    return 0;
}
