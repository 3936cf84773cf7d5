/* GPU tests of the cuBLAS wrapper (ft/gemm.cuh) against double-precision products:
 * every transpose combination, strided-batched (including a stride-0 operand), batched
 * on pointer arrays, fp32 (with and without TF32), fp16, bf16, the int8 GEMM (exact), and
 * the GEMM with bias and activation in the epilogue. */
#include <string.h>

#include "ft/gemm.cuh"

#include "cuda_util.h"
#include "gemm_util.h"
#include "harness.h"
#include "ref/ref_norm.h"

/* element (r, c) of op(X) where X is stored row-major with leading dimension ld */
static double op_at(const float *X, int64_t ld, int trans, int r, int c)
{
    return trans ? X[(int64_t)c * ld + r] : X[(int64_t)r * ld + c];
}

static void ref_gemm(const float *A, int64_t lda, int ta, const float *B, int64_t ldb, int tb, double *C, int64_t ldc,
                     int m, int n, int k, double alpha)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < k; p++)
                acc += op_at(A, lda, ta, i, p) * op_at(B, ldb, tb, p, j);
            C[(int64_t)i * ldc + j] = alpha * acc;
        }
}

/* fp32 without TF32 keeps ~1e-6 relative per term; TF32 and 16-bit inputs round the
 * output to their own precision after an fp32 sum of k terms of size ~1. */
static void tolerance(ft_dtype dt, int tf32, int k, double *atol, double *rtol)
{
    const double sk = sqrt((double)k);
    switch (dt) {
    case FT_FP16: *atol = 2e-3 * sk; *rtol = 2e-3; break;
    case FT_BF16: *atol = 1.6e-2 * sk; *rtol = 1.6e-2; break;
    default:
        *atol = tf32 ? 2e-3 * sk : 1e-5 * sk;
        *rtol = tf32 ? 2e-3 : 1e-5;
        break;
    }
}

/* mode 0: single GEMM, 1: strided batched, 2: strided batched with A stride 0, 3: batched */
static void run(ft_test *t, ft_dtype dt, int tf32, int mode, int ta, int tb, int m, int n, int k, int batch,
                ref_rng *rng)
{
    ft_gemm_ctx *c = shared_gemm_ctx();
    c->allow_tf32 = tf32;
    const int64_t lda = (ta ? m : k) + (mode == 0 ? 3 : 0), ldb = (tb ? k : n), ldc = n + (mode == 0 ? 1 : 0);
    const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    const int64_t sa = mode == 2 ? 0 : a_rows * lda, sb = b_rows * ldb, sc = (int64_t)m * ldc;
    const int nb = mode == 0 ? 1 : batch;
    const int64_t a_count = mode == 2 ? a_rows * lda : sa * nb, b_count = sb * nb, c_count = sc * nb;
    float *hA = (float *)malloc(a_count * sizeof(float)), *hB = (float *)malloc(b_count * sizeof(float));
    float *got = (float *)malloc(c_count * sizeof(float));
    double *ref = (double *)malloc(c_count * sizeof(double));
    fill_normal(hA, a_count, rng, 0.0, 1.0, dt);
    fill_normal(hB, b_count, rng, 0.0, 1.0, dt);
    const size_t es = ft_dtype_size(dt);
    char *dA = (char *)dev_alloc(a_count * es), *dB = (char *)dev_alloc(b_count * es);
    char *dC = (char *)dev_alloc(c_count * es);
    dev_upload(dA, hA, a_count, dt);
    dev_upload(dB, hB, b_count, dt);
    dev_poison(dC, c_count * es);
    const float alpha = 0.5f;
    ft_status st;
    void **ptrs = NULL;
    if (mode == 0) {
        st = ft_gemm(c, dt, ta, tb, m, n, k, alpha, dA, lda, dB, ldb, 0.0f, dC, ldc, 0);
    } else if (mode == 3) {
        void *h[3 * 64];
        for (int i = 0; i < nb; i++) {
            h[i] = dA + i * sa * es;
            h[nb + i] = dB + i * sb * es;
            h[2 * nb + i] = dC + i * sc * es;
        }
        ptrs = (void **)dev_alloc(3 * nb * sizeof(void *));
        FT_CHECK_CUDA(cudaMemcpy(ptrs, h, 3 * nb * sizeof(void *), cudaMemcpyHostToDevice));
        st = ft_gemm_batched(c, dt, ta, tb, m, n, k, alpha, (const void *const *)ptrs, lda,
                             (const void *const *)(ptrs + nb), ldb, 0.0f, ptrs + 2 * nb, ldc, nb, 0);
    } else {
        st = ft_gemm_strided_batched(c, dt, ta, tb, m, n, k, alpha, dA, lda, sa, dB, ldb, sb, 0.0f, dC, ldc, sc, nb, 0);
    }
    char what[200];
    snprintf(what, sizeof what, "gemm %s tf32=%d mode=%d ta=%d tb=%d m=%d n=%d k=%d batch=%d", ft_dtype_name(dt), tf32,
             mode, ta, tb, m, n, k, nb);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        for (int i = 0; i < nb; i++)
            ref_gemm(hA + i * sa, lda, ta, hB + i * sb, ldb, tb, ref + i * sc, ldc, m, n, k, alpha);
        dev_download(got, dC, c_count, dt);
        /* only the m x n part of each C is written: compare it */
        int64_t w = 0;
        for (int i = 0; i < nb; i++)
            for (int r = 0; r < m; r++)
                for (int j = 0; j < n; j++, w++) {
                    got[w] = got[i * sc + r * ldc + j];
                    ref[w] = ref[i * sc + r * ldc + j];
                }
        double atol, rtol;
        tolerance(dt, tf32, k, &atol, &rtol);
        ft_expect_close(t, what, got, ref, (size_t)w, atol, rtol);
    }
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
    if (ptrs)
        cudaFree(ptrs);
    free(hA), free(hB), free(got), free(ref);
}

static void gemm_test(ft_test *t)
{
    const ft_dtype dt = (ft_dtype)(intptr_t)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 31 * (uint64_t)dt);
    static const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {64, 64, 64}, {33, 17, 129}, {128, 96, 768}, {7, 300, 40}};
    for (int s = 0; s < 6; s++)
        for (int mode = 0; mode < 4; mode++)
            for (int tr = 0; tr < 4; tr++) {
                const int batch = 1 + (s + mode + tr) % 4;
                run(t, dt, 0, mode, tr & 1, tr >> 1, shapes[s][0], shapes[s][1], shapes[s][2], batch, &rng);
                if (dt == FT_FP32 && tr == 0)
                    run(t, dt, 1, mode, 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], batch, &rng);
            }
}

FT_GPU_TEST(gemm_int8)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 8);
    ft_gemm_ctx *c = shared_gemm_ctx();
    static const int shapes[][3] = {{1, 4, 4}, {3, 8, 12}, {64, 64, 64}, {33, 20, 132}, {256, 768, 768}, {5, 3072, 768}};
    for (int s = 0; s < 6; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        int8_t *hA = (int8_t *)malloc((size_t)m * k), *hW = (int8_t *)malloc((size_t)n * k);
        int32_t *got = (int32_t *)malloc((size_t)m * n * 4);
        for (int i = 0; i < m * k; i++)
            hA[i] = (int8_t)ref_rng_range(&rng, -128, 127);
        for (int i = 0; i < n * k; i++)
            hW[i] = (int8_t)ref_rng_range(&rng, -128, 127);
        int8_t *dA = (int8_t *)dev_alloc((size_t)m * k), *dW = (int8_t *)dev_alloc((size_t)n * k);
        int32_t *dC = (int32_t *)dev_alloc((size_t)m * n * 4);
        FT_CHECK_CUDA(cudaMemcpy(dA, hA, (size_t)m * k, cudaMemcpyHostToDevice));
        FT_CHECK_CUDA(cudaMemcpy(dW, hW, (size_t)n * k, cudaMemcpyHostToDevice));
        FT_CHECK_CUDA(cudaMemset(dC, 0x7f, (size_t)m * n * 4));
        ft_status st = ft_gemm_int8(c, m, n, k, dA, dW, dC, 0);
        FT_EXPECT(t, st == FT_OK, "int8 m=%d n=%d k=%d: %s", m, n, k, ft_last_error());
        if (st == FT_OK) {
            FT_CHECK_CUDA(cudaMemcpy(got, dC, (size_t)m * n * 4, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int i = 0; i < m && !bad; i++)
                for (int j = 0; j < n; j++) {
                    int32_t acc = 0;
                    for (int p = 0; p < k; p++)
                        acc += (int32_t)hA[i * k + p] * hW[j * k + p];
                    if (acc != got[i * n + j]) {
                        FT_EXPECT(t, 0, "int8 m=%d n=%d k=%d: C[%d,%d] = %d, want %d", m, n, k, i, j,
                                  got[i * n + j], acc);
                        bad = 1;
                        break;
                    }
                }
        }
        cudaFree(dA), cudaFree(dW), cudaFree(dC);
        free(hA), free(hW), free(got);
    }
}


/* act(A B + bias) through cuBLASLt's epilogue against double; odd shapes, padded rows */
static void run_bias_act(ft_test *t, ft_dtype dt, ft_act act, int m, int n, int k, ref_rng *rng)
{
    ft_gemm_ctx *c = shared_gemm_ctx();
    c->allow_tf32 = 0;
    const int64_t lda = k + (m % 2) * 8, ldb = n + (k % 2) * 8, ldc = n + (n % 3) * 8;
    float *hA = (float *)malloc((size_t)m * lda * sizeof(float)), *hB = (float *)malloc((size_t)k * ldb * sizeof(float));
    float *hb = (float *)malloc((size_t)n * sizeof(float)), *got = (float *)malloc((size_t)m * ldc * sizeof(float));
    double *ref = (double *)malloc((size_t)m * ldc * sizeof(double));
    fill_normal(hA, (size_t)m * lda, rng, 0.0, 1.0, dt);
    fill_normal(hB, (size_t)k * ldb, rng, 0.0, 1.0 / sqrt((double)k), dt);
    fill_normal(hb, (size_t)n, rng, 0.0, 1.0, dt);
    const size_t es = ft_dtype_size(dt);
    void *dA = dev_alloc((size_t)m * lda * es), *dB = dev_alloc((size_t)k * ldb * es), *db = dev_alloc((size_t)n * es);
    void *dC = dev_alloc((size_t)m * ldc * es);
    dev_upload(dA, hA, (size_t)m * lda, dt);
    dev_upload(dB, hB, (size_t)k * ldb, dt);
    dev_upload(db, hb, (size_t)n, dt);
    dev_poison(dC, (size_t)m * ldc * es);
    ft_status st = ft_gemm_bias_act(c, dt, m, n, k, dA, lda, dB, ldb, db, act, dC, ldc, 0);
    char what[160];
    snprintf(what, sizeof what, "gemm_bias_act %s %s m=%d n=%d k=%d", ft_dtype_name(dt), ft_act_name(act), m, n, k);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        ref_gemm(hA, lda, 0, hB, ldb, 0, ref, ldc, m, n, k, 1.0);
        dev_download(got, dC, (size_t)m * ldc, dt);
        int64_t w = 0;
        for (int r = 0; r < m; r++)
            for (int j = 0; j < n; j++, w++) {
                got[w] = got[(int64_t)r * ldc + j];
                ref[w] = ref_act(ref[(int64_t)r * ldc + j] + hb[j], act);
            }
        double atol, rtol;
        tolerance(dt, 0, k, &atol, &rtol);
        ft_expect_close(t, what, got, ref, (size_t)w, atol / sqrt((double)k) * 4, rtol);
    }
    cudaFree(dA), cudaFree(dB), cudaFree(db), cudaFree(dC);
    free(hA), free(hB), free(hb), free(got), free(ref);
}

static void gemm_bias_act_test(ft_test *t)
{
    const ft_dtype dt = (ft_dtype)(intptr_t)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 77 * (uint64_t)dt);
    static const int shapes[][3] = {{1, 8, 8}, {3, 24, 16}, {64, 64, 64}, {33, 200, 136}, {128, 3072, 768}, {96, 768, 3072}};
    static const ft_act acts[] = {FT_ACT_IDENTITY, FT_ACT_RELU, FT_ACT_GELU};
    for (int s = 0; s < 6; s++)
        for (int a = 0; a < 3; a++)
            run_bias_act(t, dt, acts[a], shapes[s][0], shapes[s][1], shapes[s][2], &rng);
    /* no epilogue for SiLU: refused before any call */
    ft_status st = ft_gemm_bias_act(shared_gemm_ctx(), dt, 8, 8, 8, (void *)256, 8, (void *)256, 8, (void *)256,
                                    FT_ACT_SILU, (void *)256, 8, 0);
    FT_EXPECT(t, st == FT_ERR_UNSUPPORTED, "gemm_bias_act silu: want FT_ERR_UNSUPPORTED, got %d", (int)st);
}

__attribute__((constructor)) static void register_gemm_tests(void)
{
    static const ft_dtype dts[] = {FT_FP32, FT_FP16, FT_BF16};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "gemm_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, gemm_test, (void *)(intptr_t)dts[i], 1);
        snprintf(name, sizeof name, "gemm_bias_act_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, gemm_bias_act_test, (void *)(intptr_t)dts[i], 1);
    }
}

int main(int argc, char **argv)
{
    int rc = ft_test_main(argc, argv, ft_cuda_probe);
    shared_gemm_ctx_destroy();
    return rc;
}
