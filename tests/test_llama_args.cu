/* Argument checks of every launcher of the LLaMA int8 path (ft/llama.cuh, ft/quant.cuh):
 * each bad input returns the right status and a message naming the launcher, without any
 * CUDA call (these run in CI, without a GPU; no check lets the fake pointers through). */
#include "ft/llama.cuh"
#include "ft/quant.cuh"
#include "ft/variants.h"

#include "args_check.h"
#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))
static void *const X = P(0x10000), *const G = P(0x20000), *const Q = P(0x30000), *const S = P(0x40000),
                   *const A = P(0x50000), *const RS = P(0x60000), *const CS = P(0x70000), *const O = P(0x80000);

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_LLAMA_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])

#define I8 ((int8_t *)Q)
#define F(p) ((float *)(p))
#define I32(p) ((const int32_t *)(p))

FT_TEST(llama_args_rows)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, NULL, G, I8, F(S), 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT,
                      "ft_rmsnorm_quant_");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, NULL, F(S), 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "q is NULL");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, I8, NULL, 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT,
                      "q_scale is NULL");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, I8, F(S), 0, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "m (rows)");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, I8, F(S), 4, 0, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "n (columns)");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, I8, F(S), 4, 64, -1.0f, 0), FT_ERR_INVALID_ARGUMENT, "eps");
        EXPECT_STATUS(t, ft_rmsnorm_quant(dt, (char *)X + 1, G, I8, F(S), 4, 64, 1e-5f, 0), FT_ERR_MISALIGNED,
                      "x (");
        EXPECT_STATUS(t, ft_dequant_residual_rmsnorm_quant(dt, NULL, F(RS), F(CS), X, G, O, I8, F(S), 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "acc is NULL");
        EXPECT_STATUS(t, ft_dequant_residual_rmsnorm_quant(dt, I32(A), F(RS), F(CS), X, G, NULL, I8, F(S), 4, 64, 1e-5f,
                                                           0),
                      FT_ERR_INVALID_ARGUMENT, "sum_out is NULL");
        EXPECT_STATUS(t, ft_dequant_residual_rmsnorm_quant(dt, I32(A), NULL, F(CS), X, G, O, I8, F(S), 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "row_scale is NULL");
        EXPECT_STATUS(t, ft_dequant_residual(dt, I32(A), F(RS), NULL, X, O, 4, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "col_scale is NULL");
        EXPECT_STATUS(t, ft_dequant_residual(dt, I32(A), F(RS), F(CS), X, NULL, 4, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "out is NULL");
        EXPECT_STATUS(t, ft_dequant_residual(dt, (const int32_t *)((char *)A + 2), F(RS), F(CS), X, O, 4, 64, 0),
                      FT_ERR_MISALIGNED, "acc (");
        EXPECT_STATUS(t, ft_dequant_residual(dt, I32(A), F(RS), F(CS), X, O, -3, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "m (rows)");
        EXPECT_STATUS(t, ft_attn_quant_transpose(dt, NULL, I8, F(S), 2, 4, 3, 64, 1, 0), FT_ERR_INVALID_ARGUMENT,
                      "x is NULL");
        EXPECT_STATUS(t, ft_attn_quant_transpose(dt, X, I8, F(S), 2, 0, 3, 64, 1, 0), FT_ERR_INVALID_ARGUMENT,
                      "must be positive");
        EXPECT_STATUS(t, ft_causal_softmax(dt, X, NULL, NULL, 0, 0, 1, 2, 3, 4, 1, 1.0f, 0), FT_ERR_INVALID_ARGUMENT,
                      "y is NULL");
        EXPECT_STATUS(t, ft_causal_softmax(dt, X, O, NULL, 3, 0, 1, 2, 3, 4, 1, 1.0f, 0), FT_ERR_INVALID_ARGUMENT,
                      "must be >= Sk");
        EXPECT_STATUS(t, ft_causal_softmax(dt, X, O, G, 4, 2, 1, 2, 3, 4, 1, 1.0f, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_mask");
        EXPECT_STATUS(t, ft_causal_softmax(dt, X, O, NULL, 0, 0, 1, 2, 0, 4, 1, 1.0f, 0), FT_ERR_INVALID_ARGUMENT,
                      "Sq (0)");
        EXPECT_STATUS(t, ft_causal_softmax(dt, X, O, NULL, 0, 0, 1, 2, 3, 4, 1, INFINITY, 0), FT_ERR_INVALID_ARGUMENT,
                      "scale must be finite");
        EXPECT_STATUS(t, ft_store_kv_cache(dt, X, G, NULL, O, 1, 2, 3, 64, 8, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "k_cache is NULL");
        EXPECT_STATUS(t, ft_store_kv_cache(dt, X, G, A, O, 1, 2, 3, 64, 8, NULL, 6, 0), FT_ERR_INVALID_ARGUMENT,
                      "start (6) + S (3)");
        EXPECT_STATUS(t, ft_store_kv_cache(dt, X, G, A, O, 1, 2, 3, 64, 0, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "Lmax (0)");
    }
    const ft_dtype dt = FT_INT8;
    EXPECT_STATUS(t, ft_rmsnorm_quant(dt, X, G, I8, F(S), 4, 64, 1e-5f, 0), FT_ERR_UNSUPPORTED, "no llama variant");
}

FT_TEST(llama_args_qkv)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        ft_qkv_dequant_args_fp32 ok;
        memset(&ok, 0, sizeof ok);
        ok.q = I32(A), ok.k = I32(A) + 1024, ok.v = I32(A) + 2048, ok.row_scale = F(RS), ok.q_scale = F(CS);
        ok.k_scale = F(CS), ok.v_scale = F(CS), ok.q_out = F(O), ok.k_out = F(X), ok.v_out = F(G);
        ok.rope = FT_ROPE_INTERLEAVED, ok.B = 2, ok.S = 3, ok.H = 8, ok.Hkv = 2, ok.D = 64;
        ft_qkv_dequant_args_fp32 a = ok;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, NULL, 0), FT_ERR_INVALID_ARGUMENT, "args is NULL");
        a.v = NULL;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "v is NULL");
        a = ok, a.k_out = NULL;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "k_out is NULL");
        a = ok, a.Hkv = 3;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "not a multiple of Hkv");
        a = ok, a.D = 7;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "D (7) positive and even");
        a = ok, a.B = 0;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "B (0)");
        a = ok, a.rotary_dim = 66;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "rotary_dim (66)");
        a = ok, a.rotary_dim = 31;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "rotary_dim (31)");
        a = ok, a.H = 1, a.Hkv = 1, a.D = 12290;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "rotary_dim (12290) is above");
        a = ok, a.rope = 7;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "not an ft_rope");
        a = ok, a.rope_base = 0.5f;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "rope_base");
        a = ok, a.rope_table = F(S), a.max_pos = 0;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "max_pos (0)");
        a = ok, a.ldq = 100;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "shorter than the rows");
        a = ok, a.cache_len = 4, a.start = 2;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "start (2) + S (3)");
        a = ok, a.cache_len = -1;
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_INVALID_ARGUMENT, "cache_len must be >= 0");
        a = ok, a.q = (const int32_t *)((char *)A + 2);
        EXPECT_STATUS(t, ft_qkv_dequant_rope(dt, &a, 0), FT_ERR_MISALIGNED, "q (");
    }
}

FT_TEST(llama_args_dtype_free)
{
    const ft_dtype dt = FT_FP32; /* for the macro's messages */
    EXPECT_STATUS(t, ft_rope_table(NULL, 8, 64, 10000.0f, 0), FT_ERR_INVALID_ARGUMENT, "table is NULL");
    EXPECT_STATUS(t, ft_rope_table(F(S), 8, 63, 10000.0f, 0), FT_ERR_INVALID_ARGUMENT, "rd (63)");
    EXPECT_STATUS(t, ft_rope_table(F(S), 0, 64, 10000.0f, 0), FT_ERR_INVALID_ARGUMENT, "max_pos (0)");
    EXPECT_STATUS(t, ft_rope_table(F(S), 8, 64, 1.0f, 0), FT_ERR_INVALID_ARGUMENT, "base must be");
    EXPECT_STATUS(t, ft_dequant_silu_mul_quant(NULL, I32(A), F(RS), F(CS), F(CS), I8, F(S), 4, 64, 0),
                  FT_ERR_INVALID_ARGUMENT, "w1 is NULL");
    EXPECT_STATUS(t, ft_dequant_silu_mul_quant(I32(A), I32(A), F(RS), NULL, F(CS), I8, F(S), 4, 64, 0),
                  FT_ERR_INVALID_ARGUMENT, "w1_scale is NULL");
    EXPECT_STATUS(t, ft_dequant_silu_mul_quant(I32(A), I32(A), F(RS), F(CS), F(CS), I8, NULL, 4, 64, 0),
                  FT_ERR_INVALID_ARGUMENT, "q_scale is NULL");
    EXPECT_STATUS(t, ft_dequant_silu_mul_quant(I32(A), I32(A), F(RS), F(CS), F(CS), I8, F(S), 4, 0, 0),
                  FT_ERR_INVALID_ARGUMENT, "n (columns)");
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
