/* Helpers for test and benchmark programs (never for library code): an exiting CUDA
 * check that names file and line, the GPU probe the harness uses, and typed device
 * buffers filled from float host data through the reference encoders. */
#ifndef FT_TEST_CUDA_UTIL_H
#define FT_TEST_CUDA_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "ref/ref_common.h"

#define FT_CHECK_CUDA(expr)                                                                      \
    do {                                                                                         \
        cudaError_t e_ = (expr);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                  \
                    cudaGetErrorString(e_));                                                     \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

/* Harness probe: a usable device, or the reason there is none. */
static int ft_cuda_probe(char *buf, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(buf, len, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
        return 0;
    }
    return 1;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    FT_CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* Copies `count` floats to the device as dtype elements. */
static void dev_upload(void *dst, const float *src, size_t count, ft_dtype dt)
{
    const size_t es = ft_dtype_size(dt);
    void *tmp = malloc(count * es + 1);
    ref_encode(tmp, src, count, dt);
    FT_CHECK_CUDA(cudaMemcpy(dst, tmp, count * es, cudaMemcpyHostToDevice));
    free(tmp);
}

/* Copies `count` dtype elements back as floats (after synchronising). */
static void dev_download(float *dst, const void *src, size_t count, ft_dtype dt)
{
    const size_t es = ft_dtype_size(dt);
    void *tmp = malloc(count * es + 1);
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(tmp, src, count * es, cudaMemcpyDeviceToHost));
    ref_decode(dst, tmp, count, dt);
    free(tmp);
}

/* Copies `bytes` of host data (int32, int8, fp32 scales: anything uploaded as it is) to a
 * new device buffer with 16 bytes of slack. */
static void *dev_copy(const void *h, size_t bytes)
{
    void *d = dev_alloc(bytes + 16);
    FT_CHECK_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Copies `n` host ints to a new device buffer (at least one element allocated). */
static int *dev_upload_ints(const int *h, int n)
{
    int *d = (int *)dev_alloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (n > 0)
        FT_CHECK_CUDA(cudaMemcpy(d, h, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    return d;
}

/* All-ones bytes are NaN in fp32, fp16 and bf16: an element the kernel fails to write
 * can never pass a comparison. */
static void dev_poison(void *p, size_t bytes)
{
    FT_CHECK_CUDA(cudaMemset(p, 0xff, bytes));
}

/* Host floats already representable in dt (so the reference sees the kernel's exact
 * inputs): N(mean, sd) rounded to dt. */
static void fill_normal(float *h, size_t count, ref_rng *rng, double mean, double sd, ft_dtype dt)
{
    for (size_t i = 0; i < count; i++)
        h[i] = (float)ref_round(mean + sd * ref_rng_normal(rng), dt);
}

#endif /* FT_TEST_CUDA_UTIL_H */
