/* A user's program: layer-normalises a small fp16 batch with ftkernels and checks the
 * result on the CPU. Built three ways by tests/consumer/build_consumers.cmake. Exits 77
 * (skipped) without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ft/norm_fp16.cuh"
#ifdef FT_CONSUMER_EXTRA
#include "ft/norm_w8_bf16.cuh"       /* generated into the build by ftkernels_generate */
#include "ft/attention_h72_fp16.cuh" /* likewise, a head size the package does not ship */
#endif

#define M 64
#define N 1000

static int check(const char *what, const float *x, const float *y, float tol)
{
    for (int r = 0; r < M; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < N; c++)
            mean += x[r * N + c];
        mean /= N;
        for (int c = 0; c < N; c++)
            var += (x[r * N + c] - mean) * (x[r * N + c] - mean);
        const double rstd = 1.0 / sqrt(var / N + 1e-5);
        for (int c = 0; c < N; c++) {
            const double want = (x[r * N + c] - mean) * rstd;
            if (!(fabs(y[r * N + c] - want) <= tol * (1 + fabs(want)))) {
                printf("FAIL %s: row %d col %d got %g want %g\n", what, r, c, y[r * N + c], want);
                return 1;
            }
        }
    }
    printf("PASS %s\n", what);
    return 0;
}

int main(void)
{
#ifdef FT_CONSUMER_EXTRA
    /* the generated attention launcher is there and checks its arguments */
    if (ft_masked_self_attention_decode_h72_fp16(NULL, 0) != FT_ERR_INVALID_ARGUMENT) {
        printf("FAIL generated attention_h72_fp16 launcher\n");
        return 1;
    }
#endif
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP consumer: no CUDA device\n");
        return 77;
    }
    static float x[M * N], y[M * N];
    static __half hx[M * N], hy[M * N], ones[N];
    for (int i = 0; i < M * N; i++) {
        hx[i] = __float2half((float)((i * 7919) % 1000) / 250.0f - 2.0f);
        x[i] = __half2float(hx[i]);
    }
    for (int i = 0; i < N; i++)
        ones[i] = __float2half(1.0f);
    __half *dx, *dy, *dg;
    cudaMalloc(&dx, sizeof hx);
    cudaMalloc(&dy, sizeof hy);
    cudaMalloc(&dg, sizeof ones);
    cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(dg, ones, sizeof ones, cudaMemcpyHostToDevice);
    ft_status st = ft_layernorm_fp16(dx, dg, NULL, dy, M, N, 1e-5f, 0);
    if (st != FT_OK) {
        printf("FAIL ft_layernorm_fp16: %s\n", ft_last_error());
        return 1;
    }
    cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    for (int i = 0; i < M * N; i++)
        y[i] = __half2float(hy[i]);
    int bad = check("consumer layernorm fp16", x, y, 4e-3f);
#ifdef FT_CONSUMER_EXTRA
    /* the same data through the generated bf16, 8-byte-access variant */
    static __nv_bfloat16 bx[M * N], by[M * N], bones[N];
    for (int i = 0; i < M * N; i++) {
        bx[i] = __float2bfloat16(x[i]);
        x[i] = __bfloat162float(bx[i]);
    }
    for (int i = 0; i < N; i++)
        bones[i] = __float2bfloat16(1.0f);
    __nv_bfloat16 *ex, *ey, *eg;
    cudaMalloc(&ex, sizeof bx);
    cudaMalloc(&ey, sizeof by);
    cudaMalloc(&eg, sizeof bones);
    cudaMemcpy(ex, bx, sizeof bx, cudaMemcpyHostToDevice);
    cudaMemcpy(eg, bones, sizeof bones, cudaMemcpyHostToDevice);
    st = ft_layernorm_w8_bf16(ex, eg, NULL, ey, M, N, 1e-5f, 0);
    if (st != FT_OK) {
        printf("FAIL ft_layernorm_w8_bf16: %s\n", ft_last_error());
        return 1;
    }
    cudaMemcpy(by, ey, sizeof by, cudaMemcpyDeviceToHost);
    for (int i = 0; i < M * N; i++)
        y[i] = __bfloat162float(by[i]);
    bad |= check("consumer layernorm w8 bf16", x, y, 2e-2f);
#endif
    return bad;
}
