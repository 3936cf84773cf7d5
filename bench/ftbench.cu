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

#include "ft/norm.cuh"

#include "cuda_util.h"

typedef struct bench_opts {
    const char *kernel;
    ft_dtype dt;
    int64_t m, n;
    ft_act act;
    int sum; /* add_bias_residual_*: also write sum_out */
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
 * Buffer slots: 0 x, 1 residual, 2 bias, 3 gamma, 4 beta, 5 y, 6 sum_out.
 * Row-sized slots (x, residual, y, sum_out) are [m, n]; the others [n]. */
enum { B_X, B_RES, B_BIAS, B_GAMMA, B_BETA, B_Y, B_SUM, B_COUNT };
static const int row_sized[B_COUNT] = {1, 1, 0, 0, 0, 1, 1};

static ft_status run_layernorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_layernorm(o->dt, b[B_X], b[B_GAMMA], b[B_BETA], b[B_Y], o->m, o->n, 1e-5f, s);
}
static ft_status run_abr_layernorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual_layernorm(o->dt, b[B_X], b[B_RES], b[B_BIAS], b[B_GAMMA], b[B_BETA], b[B_Y],
                                          o->sum ? b[B_SUM] : NULL, o->m, o->n, 1e-5f, s);
}
static ft_status run_rmsnorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_rmsnorm(o->dt, b[B_X], b[B_GAMMA], b[B_Y], o->m, o->n, 1e-6f, s);
}
static ft_status run_abr_rmsnorm(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual_rmsnorm(o->dt, b[B_X], b[B_RES], b[B_BIAS], b[B_GAMMA], b[B_Y],
                                        o->sum ? b[B_SUM] : NULL, o->m, o->n, 1e-6f, s);
}
static ft_status run_add_bias_act(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_act(o->dt, b[B_X], b[B_BIAS], b[B_Y], o->m, o->n, o->act, s);
}
static ft_status run_add_bias_residual(const bench_opts *o, void **b, cudaStream_t s)
{
    return ft_add_bias_residual(o->dt, b[B_X], b[B_RES], b[B_BIAS], b[B_Y], o->m, o->n, s);
}

typedef struct kernel_desc {
    const char *name;
    launch_fn fn;
    /* [m, n] tensors read and written (sum_out counted when --sum), [n] vectors read */
    int rows_read, rows_written, vecs_read;
    const char *about;
} kernel_desc;

static const kernel_desc kernels[] = {
    {"layernorm", run_layernorm, 1, 1, 2, "y = LN(x)*gamma + beta"},
    {"add_bias_residual_layernorm", run_abr_layernorm, 2, 1, 3, "s = x + r + b; y = LN(s) (--sum: store s)"},
    {"rmsnorm", run_rmsnorm, 1, 1, 1, "y = RMSNorm(x)*gamma"},
    {"add_bias_residual_rmsnorm", run_abr_rmsnorm, 2, 1, 2, "s = x + r + b; y = RMSNorm(s) (--sum: store s)"},
    {"add_bias_act", run_add_bias_act, 1, 1, 1, "y = act(x + b) (--act gelu|relu|silu|identity)"},
    {"add_bias_residual", run_add_bias_residual, 2, 1, 1, "y = x + r + b"},
};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))

static const kernel_desc *find_kernel(const char *name)
{
    for (int i = 0; i < NKERNELS; i++)
        if (strcmp(kernels[i].name, name) == 0)
            return &kernels[i];
    return NULL;
}

static void print_row(const bench_env *env, const bench_opts *o, const char *variant, double us, double bytes)
{
    const double gbps = bytes / (us * 1e-6) / 1e9;
    if (o->csv)
        printf("%s,%s,%s,%lld,%lld,%.2f,%.0f,%.1f,%.3f,%.1f,\"%s\"\n", o->kernel, variant, ft_dtype_name(o->dt),
               (long long)o->m, (long long)o->n, us, bytes, gbps, gbps / env->copy_gbps, env->copy_gbps,
               env->prop.name);
    else
        printf("%-30s %-14s %-5s %7lld x %-7lld %10.2f us %12.1f MB %9.1f GB/s %6.1f%%\n", o->kernel, variant,
               ft_dtype_name(o->dt), (long long)o->m, (long long)o->n, us, bytes / 1e6, gbps,
               100.0 * gbps / env->copy_gbps);
    fflush(stdout);
}

static void bench_one(const bench_env *env, const bench_opts *o)
{
    const kernel_desc *k = find_kernel(o->kernel);
    const size_t es = ft_dtype_size(o->dt);
    const size_t row_bytes = (size_t)o->m * o->n * es, vec_bytes = (size_t)o->n * es;
    const int written = k->rows_written + (o->sum && (k->fn == run_abr_layernorm || k->fn == run_abr_rmsnorm));
    const double bytes = (double)row_bytes * (k->rows_read + written) + (double)vec_bytes * k->vecs_read;

    /* enough sets that the whole rotation exceeds 3x L2; bounded by free memory */
    const double set_bytes = (double)row_bytes * B_COUNT;
    int nsets = (int)ceil(3.0 * env->prop.l2CacheSize / ((double)row_bytes * 2.0)) + 1;
    size_t free_b = 0, total_b = 0;
    FT_CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    while (nsets > 1 && nsets * set_bytes > 0.6 * (double)free_b)
        nsets--;
    void ***sets = (void ***)malloc(sizeof(void **) * nsets);
    ref_rng rng;
    ref_rng_seed(&rng, 1);
    const size_t maxc = (size_t)o->m * o->n;
    float *h = (float *)malloc(maxc * sizeof(float));
    fill_normal(h, maxc, &rng, 0.0, 1.0, o->dt); /* random data: zeros can flatter a kernel */
    void *src = dev_alloc(maxc * es);
    dev_upload(src, h, maxc, o->dt);
    free(h);
    for (int s = 0; s < nsets; s++) {
        sets[s] = (void **)malloc(sizeof(void *) * B_COUNT);
        for (int b = 0; b < B_COUNT; b++) {
            const size_t count = row_sized[b] ? maxc : (size_t)o->n;
            sets[s][b] = dev_alloc(count * es);
            FT_CHECK_CUDA(cudaMemcpy(sets[s][b], src, count * es, cudaMemcpyDeviceToDevice));
        }
    }
    FT_CHECK_CUDA(cudaFree(src));
    cudaStream_t stream;
    FT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const float us = time_launches(o, k->fn, sets, nsets, stream);
    char variant[64];
    if (k->fn == run_add_bias_act)
        snprintf(variant, sizeof variant, "%s", ft_act_name(o->act));
    else if (k->fn == run_abr_layernorm || k->fn == run_abr_rmsnorm)
        snprintf(variant, sizeof variant, "%s", o->sum ? "sum_out" : "-");
    else
        snprintf(variant, sizeof variant, "-");
    print_row(env, o, variant, us, bytes);
    for (int s = 0; s < nsets; s++) {
        for (int b = 0; b < B_COUNT; b++)
            cudaFree(sets[s][b]);
        free(sets[s]);
    }
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
};
#define NSUITE ((int)(sizeof suite / sizeof suite[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ftbench [<kernel> [--dtype fp32|fp16|bf16] [--m M] [--n N] [--act A] [--sum]]\n"
               "               [--iters N] [--warmup N] [--csv] [--list] [--suite]\n"
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
    if (o->m <= 0 || o->n <= 0 || o->iters <= 0 || o->warmup < 0) {
        fprintf(stderr, "ftbench: --m, --n and --iters must be positive\n");
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
        printf("kernel,variant,dtype,m,n,time_us,bytes,gbps,frac_copy,copy_gbps,device\n");
    else
        printf("# %s, %d SMs, L2 %d MB; measured copy bandwidth %.0f GB/s (read + write)\n"
               "%-30s %-14s %-5s %17s %13s %15s %14s %7s\n",
               env.prop.name, env.prop.multiProcessorCount, env.prop.l2CacheSize >> 20, env.copy_gbps, "kernel",
               "variant", "dtype", "m x n", "median", "bytes", "effective", "of copy");
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
