/* ftkernels: a thin row-major wrapper over cuBLAS / cuBLASLt for what transformer layers
 * need between the generated kernels (catalog §2: GemmEx, GemmStridedBatchedEx,
 * GemmBatchedEx, an int8 GEMM through cuBLASLt, and a GEMM with the bias and activation
 * in cuBLASLt's epilogue).
 *
 * All matrices are row-major, as every other ftkernels tensor:
 *     C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C
 * op(X) is X, or X transposed when trans_x is non-zero (then X is stored [k, m] / [n, k]).
 * lda/ldb/ldc are row strides in elements (at least the stored row length). fp32, fp16
 * and bf16 GEMMs accumulate in fp32, with alpha/beta as floats; fp32 GEMMs may use TF32
 * tensor cores when the context allows it.
 *
 * Handles, the workspace and the stream stay with the caller: ft_gemm_ctx holds them and
 * ft_gemm_ctx_init creates them for convenience. Every cuBLAS status is turned into an
 * ft_status with a message (ft_last_error()); arguments are checked before any call. The
 * using target links CUDA::cublas and CUDA::cublasLt. */
#ifndef FT_GEMM_CUH
#define FT_GEMM_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <stddef.h>
#include <string.h>

#include "ft/common.cuh"

/* One remembered cuBLASLt algorithm of ft_gemm_bias_act (its shape and the handle it was
 * chosen for). */
typedef struct ft_gemm_lt_algo {
    const void *lt;
    int m, n, k, dt, act, tf32;
    int64_t lda, ldb, ldc;
    size_t workspace_bytes;
    cublasLtMatmulAlgo_t algo;
} ft_gemm_lt_algo;

enum { FT_GEMM_LT_ALGOS = 16 };

/* Zero it before filling it by hand (memset), or let ft_gemm_ctx_init fill it. Like its
 * cuBLAS handle, a context serves one host thread at a time: ft_gemm_bias_act remembers
 * the algorithm cuBLASLt's heuristic chose per shape in it (the query costs more host
 * time than a small GEMM runs). */
typedef struct ft_gemm_ctx {
    cublasHandle_t blas;  /* required */
    cublasLtHandle_t lt;  /* required by ft_gemm_int8 and ft_gemm_bias_act */
    void *workspace;      /* device memory for cuBLAS(Lt), or NULL */
    size_t workspace_bytes;
    int allow_tf32;       /* fp32 GEMMs may run on TF32 tensor cores */
    int owns;             /* set by ft_gemm_ctx_init: destroy frees the handles */
    ft_gemm_lt_algo lt_algos[FT_GEMM_LT_ALGOS]; /* ft_gemm_bias_act's choices, most recent first */
} ft_gemm_ctx;

static inline const char *ft_cublas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

/* cuBLAS status -> ft_status: unsupported configurations stay distinguishable. */
static inline ft_status ft_cublas_status(const char *fn, const char *call, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return FT_OK;
    return ft_fail(s == CUBLAS_STATUS_NOT_SUPPORTED ? FT_ERR_UNSUPPORTED : FT_ERR_CUDA, "%s: %s failed: %s (%d)", fn,
                   call, ft_cublas_status_name(s), (int)s);
}

/* Creates both handles and a workspace of `workspace_bytes` (0: none). */
static inline ft_status ft_gemm_ctx_init(ft_gemm_ctx *ctx, size_t workspace_bytes)
{
    static const char fn[] = "ft_gemm_ctx_init";
    if (!ctx)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    memset(ctx, 0, sizeof *ctx);
    ft_status st = ft_cublas_status(fn, "cublasCreate", cublasCreate(&ctx->blas));
    if (st != FT_OK)
        return st;
    if ((st = ft_cublas_status(fn, "cublasLtCreate", cublasLtCreate(&ctx->lt))) != FT_OK) {
        cublasDestroy(ctx->blas);
        return st;
    }
    if (workspace_bytes) {
        cudaError_t e = cudaMalloc(&ctx->workspace, workspace_bytes);
        if (e != cudaSuccess) {
            cublasLtDestroy(ctx->lt);
            cublasDestroy(ctx->blas);
            return ft_fail(FT_ERR_CUDA, "%s: cudaMalloc(%zu) failed: %s", fn, workspace_bytes, cudaGetErrorString(e));
        }
        ctx->workspace_bytes = workspace_bytes;
        st = ft_cublas_status(fn, "cublasSetWorkspace", cublasSetWorkspace(ctx->blas, ctx->workspace, workspace_bytes));
        if (st != FT_OK)
            return st;
    }
    ctx->owns = 1;
    return FT_OK;
}

static inline void ft_gemm_ctx_destroy(ft_gemm_ctx *ctx)
{
    if (!ctx || !ctx->owns)
        return;
    if (ctx->workspace)
        cudaFree(ctx->workspace);
    cublasLtDestroy(ctx->lt);
    cublasDestroy(ctx->blas);
    memset(ctx, 0, sizeof *ctx);
}

/* ---------------------------------------------------------------- checks */

typedef struct ft_gemm_types {
    cudaDataType_t data;
    cublasComputeType_t compute;
} ft_gemm_types;

static inline ft_status ft_gemm_types_for(const char *fn, const ft_gemm_ctx *ctx, ft_dtype dt, ft_gemm_types *t)
{
    switch (dt) {
    case FT_FP32:
        t->data = CUDA_R_32F;
        t->compute = ctx->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        return FT_OK;
    case FT_FP16: t->data = CUDA_R_16F, t->compute = CUBLAS_COMPUTE_32F; return FT_OK;
    case FT_BF16: t->data = CUDA_R_16BF, t->compute = CUBLAS_COMPUTE_32F; return FT_OK;
    default:
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: dtype %s is not a floating-point GEMM type (int8: ft_gemm_int8)", fn,
                       ft_dtype_name(dt));
    }
}

/* Shape, leading dimensions and the context of one row-major GEMM. */
static inline ft_status ft_gemm_check(const char *fn, const ft_gemm_ctx *ctx, ft_dtype dt, int trans_a, int trans_b,
                                      int m, int n, int k, const void *A, int64_t lda, const void *B, int64_t ldb,
                                      const void *C, int64_t ldc, int batch)
{
    if (!ctx || !ctx->blas)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: no cuBLAS handle (ctx or ctx->blas is NULL)", fn);
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: m, n, k, batch must be positive (got %d, %d, %d, %d)", fn, m, n,
                       k, batch);
    const size_t es = ft_dtype_size(dt);
    ft_status st;
    if ((st = ft_check_ptr(fn, "A", A, es)) != FT_OK || (st = ft_check_ptr(fn, "B", B, es)) != FT_OK ||
        (st = ft_check_ptr(fn, "C", C, es)) != FT_OK)
        return st;
    const int64_t a_row = trans_a ? m : k, b_row = trans_b ? k : n;
    if (lda < a_row || ldb < b_row || ldc < n)
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: leading dimensions too small: lda %lld (need >= %lld), ldb %lld (>= %lld), "
                       "ldc %lld (>= %d)",
                       fn, (long long)lda, (long long)a_row, (long long)ldb, (long long)b_row, (long long)ldc, n);
    if (lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: leading dimensions above 2^31-1", fn);
    return FT_OK;
}

/* ---------------------------------------------------------------- GEMMs */

/* C[m,n] = alpha*op(A)*op(B) + beta*C, one GEMM. In column-major terms this is
 * C^T = op(B)^T op(A)^T, so cuBLAS receives B first with the same transpose flags. */
static inline ft_status ft_gemm(const ft_gemm_ctx *ctx, ft_dtype dt, int trans_a, int trans_b, int m, int n, int k,
                                float alpha, const void *A, int64_t lda, const void *B, int64_t ldb, float beta,
                                void *C, int64_t ldc, cudaStream_t stream)
{
    static const char fn[] = "ft_gemm";
    ft_gemm_types t;
    ft_status st = ft_gemm_check(fn, ctx, dt, trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, 1);
    if (st != FT_OK || (st = ft_gemm_types_for(fn, ctx, dt, &t)) != FT_OK)
        return st;
    if ((st = ft_cublas_status(fn, "cublasSetStream", cublasSetStream(ctx->blas, stream))) != FT_OK)
        return st;
    return ft_cublas_status(fn, "cublasGemmEx",
                            cublasGemmEx(ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, B, t.data, (int)ldb, A,
                                         t.data, (int)lda, &beta, C, t.data, (int)ldc, t.compute,
                                         CUBLAS_GEMM_DEFAULT));
}

/* `batch` GEMMs of one shape at fixed element strides: C_i = op(A_i) op(B_i), with
 * X_i = X + i*stride_x. A stride of 0 reuses one operand for every GEMM: the fused Q/K/V
 * projection is x [M,N] times weights [3,N,N] into [3,M,N] with stride_a = 0. Also the
 * per-head Q K^T and P V of encoder attention (batch = B*H). */
static inline ft_status ft_gemm_strided_batched(const ft_gemm_ctx *ctx, ft_dtype dt, int trans_a, int trans_b, int m,
                                                int n, int k, float alpha, const void *A, int64_t lda,
                                                int64_t stride_a, const void *B, int64_t ldb, int64_t stride_b,
                                                float beta, void *C, int64_t ldc, int64_t stride_c, int batch,
                                                cudaStream_t stream)
{
    static const char fn[] = "ft_gemm_strided_batched";
    ft_gemm_types t;
    ft_status st = ft_gemm_check(fn, ctx, dt, trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, batch);
    if (st != FT_OK || (st = ft_gemm_types_for(fn, ctx, dt, &t)) != FT_OK)
        return st;
    if (stride_a < 0 || stride_b < 0 || (stride_c < (int64_t)m * ldc && batch > 1))
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: strides must be >= 0 and C's must keep the outputs apart (stride_c %lld < m*ldc %lld)", fn,
                       (long long)stride_c, (long long)m * ldc);
    if ((st = ft_cublas_status(fn, "cublasSetStream", cublasSetStream(ctx->blas, stream))) != FT_OK)
        return st;
    return ft_cublas_status(fn, "cublasGemmStridedBatchedEx",
                            cublasGemmStridedBatchedEx(ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                       trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, B, t.data,
                                                       (int)ldb, stride_b, A, t.data, (int)lda, stride_a, &beta, C,
                                                       t.data, (int)ldc, stride_c, batch, t.compute,
                                                       CUBLAS_GEMM_DEFAULT));
}

/* `batch` GEMMs of one shape on arrays of device pointers (each array itself in device
 * memory, `batch` entries): seed 003 §5.1's batched Q/K/V projection when the three
 * weights are separate allocations. */
static inline ft_status ft_gemm_batched(const ft_gemm_ctx *ctx, ft_dtype dt, int trans_a, int trans_b, int m, int n,
                                        int k, float alpha, const void *const *A, int64_t lda, const void *const *B,
                                        int64_t ldb, float beta, void *const *C, int64_t ldc, int batch,
                                        cudaStream_t stream)
{
    static const char fn[] = "ft_gemm_batched";
    ft_gemm_types t;
    ft_status st = ft_gemm_check(fn, ctx, dt, trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, batch);
    if (st != FT_OK || (st = ft_gemm_types_for(fn, ctx, dt, &t)) != FT_OK)
        return st;
    if (!ft_aligned(A, sizeof(void *)) || !ft_aligned(B, sizeof(void *)) || !ft_aligned(C, sizeof(void *)))
        return ft_fail(FT_ERR_MISALIGNED, "%s: the pointer arrays must be aligned to %zu bytes", fn, sizeof(void *));
    if ((st = ft_cublas_status(fn, "cublasSetStream", cublasSetStream(ctx->blas, stream))) != FT_OK)
        return st;
    return ft_cublas_status(fn, "cublasGemmBatchedEx",
                            cublasGemmBatchedEx(ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, (const void **)B,
                                                t.data, (int)ldb, (const void **)A, t.data, (int)lda, &beta,
                                                (void **)C, t.data, (int)ldc, batch, t.compute, CUBLAS_GEMM_DEFAULT));
}

/* C[m,n] = act(A[m,k] B[k,n] + bias[n]), row-major, one cuBLASLt call with the bias and
 * the activation in the GEMM's epilogue (no separate pass over C): act is FT_ACT_IDENTITY,
 * FT_ACT_RELU or FT_ACT_GELU (the tanh form, as ft_add_bias_act's); FT_ACT_SILU has no
 * cuBLASLt epilogue (use ft_gemm, then ft_add_bias_act). bias [n] is of the GEMM's dtype.
 * Needs ctx->lt; uses ctx->workspace. Column-major view: C^T [n, m] = B^T-as-stored (n x k)
 * times A^T-as-stored (k x m), so the bias runs along C^T's rows, as cuBLASLt wants. */
static inline ft_status ft_gemm_bias_act(const ft_gemm_ctx *ctx, ft_dtype dt, int m, int n, int k, const void *A,
                                         int64_t lda, const void *B, int64_t ldb, const void *bias, ft_act act, void *C,
                                         int64_t ldc, cudaStream_t stream)
{
    static const char fn[] = "ft_gemm_bias_act";
    ft_gemm_types t;
    ft_status st = ft_gemm_check(fn, ctx, dt, 0, 0, m, n, k, A, lda, B, ldb, C, ldc, 1);
    if (st != FT_OK || (st = ft_gemm_types_for(fn, ctx, dt, &t)) != FT_OK)
        return st;
    if (!ctx->lt)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: no cuBLASLt handle (ctx->lt is NULL)", fn);
    if ((st = ft_check_ptr(fn, "bias", bias, ft_dtype_size(dt))) != FT_OK)
        return st;
    cublasLtEpilogue_t epi;
    switch (act) {
    case FT_ACT_IDENTITY: epi = CUBLASLT_EPILOGUE_BIAS; break;
    case FT_ACT_RELU: epi = CUBLASLT_EPILOGUE_RELU_BIAS; break;
    case FT_ACT_GELU: epi = CUBLASLT_EPILOGUE_GELU_BIAS; break;
    default:
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: activation %s has no cuBLASLt epilogue; use ft_gemm and "
                       "ft_add_bias_act", fn, ft_act_name(act));
    }
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType_t scale_type = CUDA_R_32F;
    if ((st = ft_cublas_status(fn, "cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&op, t.compute, scale_type))) ==
            FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatmulDescSetAttribute",
                               cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi))) ==
            FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatmulDescSetAttribute",
                               cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                              sizeof bias))) == FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatmulDescSetAttribute",
                               cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t.data,
                                                              sizeof t.data))) == FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate",
                               cublasLtMatrixLayoutCreate(&la, t.data, (uint64_t)n, (uint64_t)k, ldb))) == FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate",
                               cublasLtMatrixLayoutCreate(&lb, t.data, (uint64_t)k, (uint64_t)m, lda))) == FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate",
                               cublasLtMatrixLayoutCreate(&lc, t.data, (uint64_t)n, (uint64_t)m, ldc))) == FT_OK) {
        /* the heuristic's choice for this shape, remembered in the context */
        ft_gemm_lt_algo key;
        memset(&key, 0, sizeof key);
        key.lt = (const void *)ctx->lt, key.m = m, key.n = n, key.k = k, key.dt = (int)dt, key.act = (int)act;
        key.tf32 = ctx->allow_tf32, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
        key.workspace_bytes = ctx->workspace_bytes;
        ft_gemm_lt_algo *cache = ((ft_gemm_ctx *)ctx)->lt_algos; /* a cache, not the context's meaning */
        int hit = -1;
        for (int i = 0; i < FT_GEMM_LT_ALGOS && hit < 0; i++)
            if (memcmp(&cache[i], &key, offsetof(ft_gemm_lt_algo, algo)) == 0)
                hit = i;
        if (hit < 0) {
            cublasLtMatmulPreference_t pref = NULL;
            cublasLtMatmulHeuristicResult_t res;
            int found = 0;
            memset(&res, 0, sizeof res);
            if ((st = ft_cublas_status(fn, "cublasLtMatmulPreferenceCreate", cublasLtMatmulPreferenceCreate(&pref))) ==
                    FT_OK &&
                (st = ft_cublas_status(fn, "cublasLtMatmulPreferenceSetAttribute",
                                       cublasLtMatmulPreferenceSetAttribute(
                                           pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->workspace_bytes,
                                           sizeof ctx->workspace_bytes))) == FT_OK &&
                (st = ft_cublas_status(fn, "cublasLtMatmulAlgoGetHeuristic",
                                       cublasLtMatmulAlgoGetHeuristic(ctx->lt, op, la, lb, lc, lc, pref, 1, &res,
                                                                      &found))) == FT_OK &&
                found < 1)
                st = ft_fail(FT_ERR_UNSUPPORTED, "%s: cuBLASLt has no algorithm for m=%d n=%d k=%d %s with %s", fn, m,
                             n, k, ft_dtype_name(dt), ft_act_name(act));
            if (pref)
                cublasLtMatmulPreferenceDestroy(pref);
            if (st == FT_OK) {
                memmove(cache + 1, cache, (FT_GEMM_LT_ALGOS - 1) * sizeof *cache);
                key.algo = res.algo;
                cache[0] = key;
                hit = 0;
            }
        }
        if (st == FT_OK)
            st = ft_cublas_status(fn, "cublasLtMatmul",
                                  cublasLtMatmul(ctx->lt, op, &alpha, B, la, A, lb, &beta, C, lc, C, lc,
                                                 &cache[hit].algo, ctx->workspace, ctx->workspace_bytes, stream));
    }
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (op)
        cublasLtMatmulDescDestroy(op);
    return st;
}

/* C[m, n] (int32) = A[m, k] (int8) * W[n, k]^T (int8), exact integer accumulation:
 * activations row-major, weights in the [out, in] layout of nn.Linear (the "TN" form
 * cuBLASLt's int8 kernels need). k and n must be multiples of 4 and the pointers 16-byte
 * aligned. The caller dequantises C with its per-row / per-channel scales. */
static inline ft_status ft_gemm_int8(const ft_gemm_ctx *ctx, int m, int n, int k, const int8_t *A, const int8_t *W,
                                     int32_t *C, cudaStream_t stream)
{
    static const char fn[] = "ft_gemm_int8";
    if (!ctx || !ctx->lt)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: no cuBLASLt handle (ctx or ctx->lt is NULL)", fn);
    if (m <= 0 || n <= 0 || k <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: m, n, k must be positive (got %d, %d, %d)", fn, m, n, k);
    if (k % 4 || n % 4)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: k (%d) and n (%d) must be multiples of 4 for int8 tensor cores", fn,
                       k, n);
    ft_status st;
    if ((st = ft_check_ptr(fn, "A", A, 16)) != FT_OK || (st = ft_check_ptr(fn, "W", W, 16)) != FT_OK ||
        (st = ft_check_ptr(fn, "C", C, 16)) != FT_OK)
        return st;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    const cublasOperation_t tr = CUBLAS_OP_T;
    const int32_t alpha = 1, beta = 0;
    /* column-major: C^T [n, m] = (W as k x n)^T * (A as k x m) */
    if ((st = ft_cublas_status(fn, "cublasLtMatmulDescCreate",
                               cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I))) == FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatmulDescSetAttribute",
                               cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr))) ==
            FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, k, n, k))) ==
            FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, k, m, k))) ==
            FT_OK &&
        (st = ft_cublas_status(fn, "cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, n, m, n))) ==
            FT_OK)
        st = ft_cublas_status(fn, "cublasLtMatmul",
                              cublasLtMatmul(ctx->lt, op, &alpha, W, la, A, lb, &beta, C, lc, C, lc, NULL,
                                             ctx->workspace, ctx->workspace_bytes, stream));
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (op)
        cublasLtMatmulDescDestroy(op);
    return st;
}

#endif /* FT_GEMM_CUH */
