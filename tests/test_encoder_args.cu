/* Argument checks of the encoder family, the padding offsets, the cuBLAS wrapper and the
 * composed layers: each bad input returns the right status and a message naming the
 * function, without any CUDA call (these run in CI, without a GPU; the fake pointers and
 * handles are never used because no check lets them through). */
#include <math.h>

#include "bert_layer.cuh"
#include "decoder_layer.cuh"
#include "ft/variants.h"

#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))
static void *const Q = P(0x10000), *const K = P(0x20000), *const V = P(0x30000), *const O1 = P(0x40000),
                   *const O2 = P(0x50000), *const O3 = P(0x60000);
static int *const OFF = (int *)P(0x70000);

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_ENCODER_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])

#define EXPECT_STATUS(t, call, want, needle)                                                     \
    do {                                                                                         \
        ft_last_error();                                                                         \
        ft_status got_ = (call);                                                                 \
        FT_EXPECT(t, got_ == (want), "%s: got %s, want %s (%s)", #call, ft_status_string(got_),   \
                  ft_status_string(want), ft_last_error());                                      \
        FT_EXPECT(t, strstr(ft_last_error(), (needle)) != NULL, "%s: message '%s' lacks '%s'",    \
                  #call, ft_last_error(), (needle));                                             \
    } while (0)

FT_TEST(encoder_args_pointers)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_add_qkv_bias_transpose(dt, NULL, K, V, NULL, NULL, NULL, O1, O2, O3, 2, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "q is NULL");
        EXPECT_STATUS(t, ft_add_qkv_bias_transpose(dt, Q, K, V, NULL, NULL, NULL, O1, NULL, O3, 2, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "k_out is NULL");
        EXPECT_STATUS(t, ft_add_fused_qkv_bias_transpose(dt, NULL, NULL, O1, O2, O3, 2, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "qkv is NULL");
        EXPECT_STATUS(t, ft_add_qkv_bias_rebuild_padding(dt, Q, K, V, NULL, NULL, NULL, O1, O2, O3, NULL, 2, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "seq_offsets is NULL");
        EXPECT_STATUS(t, ft_add_fused_qkv_bias_rebuild_padding(dt, Q, NULL, O1, O2, O3, NULL, 2, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "seq_offsets is NULL");
        EXPECT_STATUS(t, ft_masked_softmax(dt, NULL, NULL, NULL, 2, 2, 8, 0.1f, 0), FT_ERR_INVALID_ARGUMENT,
                      "scores is NULL");
        EXPECT_STATUS(t, ft_transpose_heads(dt, Q, NULL, 2, 8, 2, 64, 0), FT_ERR_INVALID_ARGUMENT, "y is NULL");
        EXPECT_STATUS(t, ft_transpose_remove_padding(dt, Q, K, NULL, 2, 8, 2, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "seq_offsets is NULL");
        EXPECT_STATUS(t, ft_remove_padding(dt, Q, K, NULL, 2, 8, 64, 0), FT_ERR_INVALID_ARGUMENT, "seq_offsets");
        EXPECT_STATUS(t, ft_rebuild_padding(dt, NULL, K, OFF, 2, 8, 64, 0), FT_ERR_INVALID_ARGUMENT, "x is NULL");
        EXPECT_STATUS(t, ft_build_attention_mask(dt, NULL, Q, 2, 8, 0), FT_ERR_INVALID_ARGUMENT, "lengths is NULL");
        /* misaligned for the element: one byte off */
        EXPECT_STATUS(t, ft_masked_softmax(dt, (char *)Q + 1, NULL, NULL, 2, 2, 8, 0.1f, 0), FT_ERR_MISALIGNED,
                      "scores");
        EXPECT_STATUS(t, ft_remove_padding(dt, Q, K, (int *)((char *)OFF + 2), 2, 8, 64, 0), FT_ERR_MISALIGNED,
                      "seq_offsets");
    }
}

/* ft_fastdiv (the softmax's row indices): every dividend up to 70000 and the top of the
 * range for divisors 1-2048, then random divisors up to 2^31 - 1 at multiples, their
 * neighbours and random dividends; the host computes what the kernels compute. */
static int fastdiv_check(ft_test *t, int d, int n)
{
    const int q = ft_fastdiv_q(ft_fastdiv_make(d), n);
    FT_EXPECT(t, q == n / d, "ft_fastdiv: %d / %d gave %d, want %d", n, d, q, n / d);
    return q == n / d;
}

FT_TEST(fastdiv)
{
    for (int d = 1; d <= 2048; d++) {
        const ft_fastdiv f = ft_fastdiv_make(d);
        int bad = 0;
        for (int n = 0; n <= 70000 && !bad; n++)
            bad = ft_fastdiv_q(f, n) != n / d;
        for (int n = INT32_MAX; n > INT32_MAX - 70000 && !bad; n--)
            bad = ft_fastdiv_q(f, n) != n / d;
        FT_EXPECT(t, !bad, "ft_fastdiv: divisor %d fails", d);
        if (bad)
            return;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 200000; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int sh = (int)(x >> 59) + 1; /* divisors of 1 to 31 bits */
        const int d = (int)((x >> 20) & ((1ull << sh) - 1) & INT32_MAX) | 1 << (sh - 1 < 30 ? sh - 1 : 30);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        /* a multiple of d, at most INT32_MAX */
        const int m = (int)((x >> 33) % ((uint64_t)INT32_MAX / (uint64_t)d + 1)) * d;
        const int ns[4] = {(int)(x >> 33), m, m > 0 ? m - 1 : 0, m < INT32_MAX ? m + 1 : INT32_MAX};
        for (int j = 0; j < 4; j++)
            if (!fastdiv_check(t, d, ns[j]))
                return;
    }
}

FT_TEST(encoder_args_sizes)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_add_qkv_bias_transpose(dt, Q, K, V, NULL, NULL, NULL, O1, O2, O3, 0, 8, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "must be positive");
        EXPECT_STATUS(t, ft_add_fused_qkv_bias_transpose(dt, Q, NULL, O1, O2, O3, 2, 8, 2, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "must be positive");
        EXPECT_STATUS(t, ft_transpose_heads(dt, Q, K, 2, -1, 2, 64, 0), FT_ERR_INVALID_ARGUMENT, "must be positive");
        EXPECT_STATUS(t, ft_add_qkv_bias_transpose(dt, Q, K, V, NULL, NULL, NULL, O1, O2, O3, 2, 8, 1 << 20, 1 << 12, 0),
                      FT_ERR_INVALID_ARGUMENT, "hidden size");
        EXPECT_STATUS(t, ft_add_qkv_bias_transpose(dt, Q, K, V, NULL, NULL, NULL, O1, O2, O3, 1 << 16, 1 << 16, 2, 64, 0),
                      FT_ERR_INVALID_ARGUMENT, "rows exceed");
        EXPECT_STATUS(t, ft_masked_softmax(dt, Q, NULL, NULL, 2, 0, 8, 0.1f, 0), FT_ERR_INVALID_ARGUMENT,
                      "must be positive");
        EXPECT_STATUS(t, ft_masked_softmax(dt, Q, NULL, NULL, 2, 2, 8, NAN, 0), FT_ERR_INVALID_ARGUMENT,
                      "scale must be finite");
        EXPECT_STATUS(t, ft_masked_softmax(dt, Q, NULL, NULL, 1 << 12, 64, 1 << 14, 0.1f, 0), FT_ERR_UNSUPPORTED,
                      "split the batch");
        EXPECT_STATUS(t, ft_remove_padding(dt, Q, K, OFF, 2, 8, 0, 0), FT_ERR_INVALID_ARGUMENT, "must be positive");
        EXPECT_STATUS(t, ft_build_attention_mask(dt, OFF, Q, 0, 8, 0), FT_ERR_INVALID_ARGUMENT, "must be positive");
    }
    /* a dtype the manifest does not generate */
    const ft_dtype dt = FT_INT8;
    EXPECT_STATUS(t, ft_masked_softmax(dt, Q, NULL, NULL, 2, 2, 8, 0.1f, 0), FT_ERR_UNSUPPORTED, "--family encoder");
}

FT_TEST(padding_offsets_args)
{
    EXPECT_STATUS(t, ft_padding_offsets(NULL, 4, 8, OFF, NULL, 0), FT_ERR_INVALID_ARGUMENT, "lengths is NULL");
    EXPECT_STATUS(t, ft_padding_offsets(OFF, 4, 8, NULL, NULL, 0), FT_ERR_INVALID_ARGUMENT, "seq_offsets is NULL");
    EXPECT_STATUS(t, ft_padding_offsets(OFF, 0, 8, OFF, NULL, 0), FT_ERR_INVALID_ARGUMENT, "must be positive");
    EXPECT_STATUS(t, ft_padding_offsets(OFF, 1 << 16, 1 << 16, OFF, NULL, 0), FT_ERR_UNSUPPORTED, "int32");
}

FT_TEST(gemm_args)
{
    ft_gemm_ctx none;
    memset(&none, 0, sizeof none);
    ft_gemm_ctx c = none;
    c.blas = (cublasHandle_t)P(0x1000); /* never used: every call below fails its checks */
    EXPECT_STATUS(t, ft_gemm(&none, FT_FP16, 0, 0, 4, 4, 4, 1.0f, Q, 4, K, 4, 0.0f, O1, 4, 0),
                  FT_ERR_INVALID_ARGUMENT, "no cuBLAS handle");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 0, 0, 0, 4, 4, 1.0f, Q, 4, K, 4, 0.0f, O1, 4, 0), FT_ERR_INVALID_ARGUMENT,
                  "must be positive");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 0, 0, 4, 4, 4, 1.0f, NULL, 4, K, 4, 0.0f, O1, 4, 0),
                  FT_ERR_INVALID_ARGUMENT, "A is NULL");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 0, 0, 4, 8, 6, 1.0f, Q, 5, K, 8, 0.0f, O1, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "lda 5 (need >= 6)");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 1, 0, 4, 8, 6, 1.0f, Q, 3, K, 8, 0.0f, O1, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "lda 3 (need >= 4)");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 0, 1, 4, 8, 6, 1.0f, Q, 6, K, 5, 0.0f, O1, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "ldb 5 (>= 6)");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP16, 0, 0, 4, 8, 6, 1.0f, Q, 6, K, 8, 0.0f, O1, 7, 0), FT_ERR_INVALID_ARGUMENT,
                  "ldc 7");
    EXPECT_STATUS(t, ft_gemm(&c, FT_INT8, 0, 0, 4, 4, 4, 1.0f, Q, 4, K, 4, 0.0f, O1, 4, 0), FT_ERR_UNSUPPORTED,
                  "ft_gemm_int8");
    EXPECT_STATUS(t, ft_gemm(&c, FT_FP32, 0, 0, 4, 4, 4, 1.0f, (char *)Q + 2, 4, K, 4, 0.0f, O1, 4, 0),
                  FT_ERR_MISALIGNED, "A");
    EXPECT_STATUS(t,
                  ft_gemm_strided_batched(&c, FT_FP16, 0, 0, 4, 4, 4, 1.0f, Q, 4, 16, K, 4, 16, 0.0f, O1, 4, 8, 3, 0),
                  FT_ERR_INVALID_ARGUMENT, "stride_c 8 < m*ldc 16");
    EXPECT_STATUS(t,
                  ft_gemm_strided_batched(&c, FT_FP16, 0, 0, 4, 4, 4, 1.0f, Q, 4, 16, K, 4, 16, 0.0f, O1, 4, 16, 0, 0),
                  FT_ERR_INVALID_ARGUMENT, "batch must be positive");
    EXPECT_STATUS(t,
                  ft_gemm_batched(&c, FT_BF16, 0, 0, 4, 4, 4, 1.0f, (const void *const *)((char *)Q + 4), 4,
                                  (const void *const *)K, 4, 0.0f, (void *const *)O1, 4, 2, 0),
                  FT_ERR_MISALIGNED, "pointer arrays");
    EXPECT_STATUS(t, ft_gemm_int8(&none, 4, 4, 4, (int8_t *)Q, (int8_t *)K, (int32_t *)O1, 0), FT_ERR_INVALID_ARGUMENT,
                  "no cuBLASLt handle");
    c.lt = (cublasLtHandle_t)P(0x2000);
    EXPECT_STATUS(t, ft_gemm_int8(&c, 4, 6, 4, (int8_t *)Q, (int8_t *)K, (int32_t *)O1, 0), FT_ERR_UNSUPPORTED,
                  "multiples of 4");
    EXPECT_STATUS(t, ft_gemm_int8(&c, 4, 4, 4, (int8_t *)Q + 4, (int8_t *)K, (int32_t *)O1, 0), FT_ERR_MISALIGNED,
                  "A");
}

FT_TEST(layer_args)
{
    ft_gemm_ctx c;
    memset(&c, 0, sizeof c);
    c.blas = (cublasHandle_t)P(0x1000);
    ft_bert_weights w;
    memset(&w, 0, sizeof w);
    ft_bert_config cfg = {FT_FP16, 768, 12, 3072, 1e-6f, 1};
    EXPECT_STATUS(t, ft_bert_layer_forward(&c, &cfg, &w, Q, NULL, 2, 8, -1, K, O1, 1 << 30, 0),
                  FT_ERR_INVALID_ARGUMENT, "remove_padding needs lengths");
    EXPECT_STATUS(t, ft_bert_layer_forward(&c, &cfg, &w, Q, OFF, 2, 8, -1, K, O1, 16, 0), FT_ERR_INVALID_ARGUMENT,
                  "ft_bert_workspace_bytes");
    cfg.heads = 7;
    EXPECT_STATUS(t, ft_bert_layer_forward(&c, &cfg, &w, Q, OFF, 2, 8, -1, K, O1, 1 << 30, 0),
                  FT_ERR_INVALID_ARGUMENT, "N % H == 0");
    ft_decoder_weights dw;
    memset(&dw, 0, sizeof dw);
    ft_decoder_config dc = {FT_FP16, 512, 8, 2048, 512, 1e-6f};
    EXPECT_STATUS(t,
                  ft_decoder_layer_step(&c, &dc, &dw, Q, K, V, FT_KV_LBHD, 16, OFF, NULL, 0, O1, O2, 8, OFF, 4, O3, O1,
                                        64, 0),
                  FT_ERR_INVALID_ARGUMENT, "ft_decoder_workspace_bytes");
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
