/* ftbench: one command-line benchmark for every ftkernels kernel.
 *
 *   ftbench                                   the default suite
 *   ftbench layernorm --dtype fp16 --m 16384 --n 4096
 *   ftbench add_bias_residual_layernorm --sum --m 4096 --n 1024 --csv
 *   ftbench --list                            kernels and flags
 *
 * At start it measures the device's copy bandwidth (device-to-device cudaMemcpy, bytes
 * read + written). Each kernel is timed with CUDA events around every launch after a
 * warm-up; the median is reported. Inputs rotate through enough buffer sets that the
 * working set exceeds 3x the L2 cache, so no repeat reads what the previous left in L2.
 * Bytes are the fewest the operation must move: every input read once, every output
 * written once. Correctness is established by tests/ (run them first); here a launch
 * that returns an error aborts the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/attention.cuh"
#include "ft/norm.cuh"

#include "cuda_util.h"

typedef struct bench_opts {
    const char *kernel;
    ft_dtype dt;
    int64_t m, n;
    ft_act act;
    int sum; /* add_bias_residual_*: also write sum_out */
    /* attention */
    int batch, heads, kv_heads, head_size, len, layout, splits;
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

/* Median over `iters` launches, each launch on the next buffer set (bufs[set][...]). */
static float time_launches(const bench_opts *o, launch_fn fn, void ***sets, int nsets, cudaStream_t s)
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
    for (int i = 0; i < o->iters; i++) {
        FT_CHECK_CUDA(cudaEventRecord(ev[2 * i], s));
        fn(o, sets[(o->warmup + i) % nsets], s);
        FT_CHECK_CUDA(cudaEventRecord(ev[2 * i + 1], s));
    }
    FT_CHECK_CUDA(cudaStreamSynchronize(s));
    FT_CHECK_CUDA(cudaGetLastError());
    float *ms = (float *)malloc(sizeof(float) * o->iters);
    for (int i = 0; i < o->iters; i++)
        FT_CHECK_CUDA(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
    qsort(ms, o->iters, sizeof(float), cmp_float);
    const float med = ms[o->iters / 2];
    for (int i = 0; i < 2 * o->iters; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    return med * 1000.0f; /* microseconds */
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
enum buf_fill { FILL_RANDOM, FILL_LENGTHS, FILL_NONE };

typedef struct buf_spec {
    size_t count;
    int is_int; /* int32 instead of the kernel's dtype */
    int rotate; /* one per buffer set (streamed data) or one shared (small inputs, outputs) */
    int fill;
} buf_spec;

#define MAX_BUFS 12

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

/* attention: slots 0 k cache, 1 v cache, 2 q, 3 k, 4 v, 5 out, 6 lengths, 7 workspace.
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
    return 8;
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
    if (o->splits)
        snprintf(variant, len, "%s splits=%d", layout, o->splits);
    else
        snprintf(variant, len, "%s splits=auto", layout);
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
    return ft_cross_attention_decode(o->dt, o->head_size, &a, s);
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
    {"self_attention", "decode step, --batch --heads --kv-heads --head-size --len [--layout bhld|lbhd] [--splits]",
     attn_buffers, run_self_attention, attn_bytes, attn_describe},
    {"cross_attention", "decode step against memory, same flags (--layout bhld|blhd)", attn_buffers,
     run_cross_attention, attn_bytes, attn_describe},
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
                      double bytes)
{
    const double gbps = bytes / (us * 1e-6) / 1e9;
    if (o->csv)
        printf("%s,%s,%s,%s,%.2f,%.0f,%.1f,%.3f,%.1f,\"%s\"\n", o->kernel, variant, ft_dtype_name(o->dt), shape, us,
               bytes, gbps, gbps / env->copy_gbps, env->copy_gbps, env->prop.name);
    else
        printf("%-28s %-18s %-5s %-34s %9.2f us %10.1f MB %8.1f GB/s %6.1f%%\n", o->kernel, variant,
               ft_dtype_name(o->dt), shape, us, bytes / 1e6, gbps, 100.0 * gbps / env->copy_gbps);
    fflush(stdout);
}

static void bench_one(const bench_env *env, const bench_opts *o)
{
    const kernel_desc *k = find_kernel(o->kernel);
    buf_spec sp[MAX_BUFS];
    const int nb = k->buffers(o, sp);
    const size_t es = ft_dtype_size(o->dt);
    double rot_bytes = 0, max_count = 0;
    for (int i = 0; i < nb; i++) {
        if (sp[i].rotate)
            rot_bytes += (double)sp[i].count * es;
        if (sp[i].fill == FILL_RANDOM && sp[i].count > max_count)
            max_count = (double)sp[i].count;
    }
    /* enough sets that the rotation exceeds 3x L2; bounded by free memory */
    int nsets = rot_bytes > 0 ? (int)ceil(3.0 * env->prop.l2CacheSize / rot_bytes) + 1 : 1;
    size_t free_b = 0, total_b = 0;
    FT_CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    while (nsets > 1 && nsets * rot_bytes > 0.6 * (double)free_b)
        nsets--;

    /* one random source on the device, copied into every buffer: random data, because
     * zeros can flatter a kernel */
    ref_rng rng;
    ref_rng_seed(&rng, 1);
    float *h = (float *)malloc((size_t)max_count * sizeof(float) + 4);
    fill_normal(h, (size_t)max_count, &rng, 0.0, 1.0, o->dt);
    void *src = dev_alloc((size_t)max_count * es + 4);
    dev_upload(src, h, (size_t)max_count, o->dt);
    free(h);
    int *lens = (int *)malloc(sizeof(int) * (size_t)(o->batch > 0 ? o->batch : 1));
    for (int i = 0; i < o->batch; i++)
        lens[i] = strcmp(o->kernel, "cross_attention") == 0 ? o->len : o->len - 1;

    void ***sets = (void ***)calloc((size_t)nsets, sizeof(void **));
    void *shared[MAX_BUFS];
    for (int s = 0; s < nsets; s++)
        sets[s] = (void **)calloc(MAX_BUFS, sizeof(void *));
    for (int i = 0; i < nb; i++) {
        const size_t bytes = sp[i].count * (sp[i].is_int ? 4 : es);
        for (int s = 0; s < (sp[i].rotate ? nsets : 1); s++) {
            void *p = dev_alloc(bytes);
            if (sp[i].fill == FILL_RANDOM)
                FT_CHECK_CUDA(cudaMemcpy(p, src, bytes, cudaMemcpyDeviceToDevice));
            else if (sp[i].fill == FILL_LENGTHS)
                FT_CHECK_CUDA(cudaMemcpy(p, lens, bytes, cudaMemcpyHostToDevice));
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

    cudaStream_t stream;
    FT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const float us = time_launches(o, k->run, sets, nsets, stream);
    char variant[128], shape[128];
    k->describe(o, variant, shape, sizeof variant);
    print_row(env, o, variant, shape, us, k->bytes(o));
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
    /* other dtypes and the other code paths: short rows, streaming rows, scalar fallback */
    "layernorm --dtype fp32 --m 16384 --n 4096",
    "layernorm --dtype bf16 --m 16384 --n 4096",
    "rmsnorm --dtype bf16 --m 16384 --n 4096",
    "layernorm --dtype bf16 --m 4096 --n 1024",
    "layernorm --dtype fp16 --m 262144 --n 256",
    "layernorm --dtype fp16 --m 1024 --n 65536",
    "layernorm --dtype fp16 --m 16384 --n 4095",
    "add_bias_act --dtype bf16 --m 16384 --n 4096 --act silu",
    /* decoder attention: the attention issue's shapes, GQA, layouts, splits, dtypes */
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 1 --heads 32 --head-size 128 --len 4096 --splits 1",
    "self_attention --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 64 --heads 12 --head-size 64 --len 1024",
    "self_attention --dtype fp16 --batch 64 --heads 32 --head-size 128 --len 2048",
    "self_attention --dtype fp16 --batch 256 --heads 8 --head-size 64 --len 512",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 8 --heads 32 --kv-heads 1 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 8 --heads 32 --head-size 128 --len 4096 --layout lbhd",
    "self_attention --dtype bf16 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp32 --batch 8 --heads 32 --head-size 128 --len 4096",
    "self_attention --dtype fp16 --batch 16 --heads 32 --head-size 80 --len 2048",
    "cross_attention --dtype fp16 --batch 64 --heads 8 --head-size 64 --len 512 --layout blhd",
};
#define NSUITE ((int)(sizeof suite / sizeof suite[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ftbench [<kernel> [--dtype fp32|fp16|bf16] [shape flags]] [--iters N] [--warmup N]\n"
               "               [--csv] [--list] [--suite]\n"
               "  norm family: --m M --n N [--act gelu|relu|silu|identity] [--sum]\n"
               "  attention:   --batch B --heads H [--kv-heads Hkv] --head-size D --len L\n"
               "               [--layout bhld|lbhd|blhd] [--splits S (0 automatic)]\n"
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
        o->head_size <= 0 || o->len <= 0) {
        fprintf(stderr, "ftbench: sizes and --iters must be positive\n");
        return -1;
    }
    if (o->kv_heads <= 0)
        o->kv_heads = o->heads;
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
    o.layout = FT_KV_BHLD;
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
        printf("kernel,variant,dtype,shape,time_us,bytes,gbps,frac_copy,copy_gbps,device\n");
    else
        printf("# %s, %d SMs, L2 %d MB; measured copy bandwidth %.0f GB/s (read + write)\n"
               "%-28s %-18s %-5s %-34s %12s %13s %13s %7s\n",
               env.prop.name, env.prop.multiProcessorCount, env.prop.l2CacheSize >> 20, env.copy_gbps, "kernel",
               "variant", "dtype", "shape", "median", "bytes", "effective", "of copy");
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
