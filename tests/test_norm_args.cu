/* Argument checks of every norm launcher: each bad input returns the right status and a
 * message naming the launcher, without any CUDA call (these run in CI, without a GPU;
 * the pointers are never dereferenced because no check lets them through). */
#include "ft/norm.cuh"
#include "ft/variants.h"

#include "args_check.h"
#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))
static void *const X = P(0x10000), *const R = P(0x20000), *const B = P(0x30000), *const G = P(0x40000),
                   *const BETA = P(0x50000), *const Y = P(0x60000), *const S = P(0x70000);

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_NORM_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])

FT_TEST(norm_args_null_pointers)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_layernorm(dt, NULL, G, BETA, Y, 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "x is NULL");
        EXPECT_STATUS(t, ft_layernorm(dt, X, NULL, BETA, Y, 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "gamma is NULL");
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, NULL, 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "y is NULL");
        EXPECT_STATUS(t, ft_add_bias_residual_layernorm(dt, X, NULL, B, G, BETA, Y, S, 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "residual is NULL");
        EXPECT_STATUS(t, ft_add_bias_residual_layernorm(dt, X, R, B, NULL, BETA, Y, S, 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "gamma is NULL");
        EXPECT_STATUS(t, ft_rmsnorm(dt, NULL, G, Y, 4, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "ft_rmsnorm_");
        EXPECT_STATUS(t, ft_add_bias_residual_rmsnorm(dt, X, NULL, B, G, Y, S, 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "residual is NULL");
        EXPECT_STATUS(t, ft_add_bias_act(dt, NULL, B, Y, 4, 64, FT_ACT_GELU, 0), FT_ERR_INVALID_ARGUMENT,
                      "ft_add_bias_act_");
        EXPECT_STATUS(t, ft_add_bias_act(dt, X, B, NULL, 4, 64, FT_ACT_GELU, 0), FT_ERR_INVALID_ARGUMENT,
                      "y is NULL");
        EXPECT_STATUS(t, ft_add_bias_residual(dt, X, NULL, B, Y, 4, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "residual is NULL");
    }
}

/* ft_norm_long (the launcher's path for rows past the pipeline's registers; the tests force
 * it): a ring that cannot hold a row, a residual, too few pieces, y at another offset from
 * the 16-byte grid than x, gamma off it, or rows of fewer than 32 bytes is refused before any
 * CUDA call. */
FT_TEST(norm_args_long_ring)
{
#define FT_X(suffix, DT)                                                                                        \
    {                                                                                                           \
        const ft_dtype dt = DT;                                                                                 \
        ft_norm_args_##suffix a;                                                                                \
        memset(&a, 0, sizeof a);                                                                                \
        a.x = (decltype(a.x))X;                                                                                 \
        a.gamma = (decltype(a.gamma))G;                                                                         \
        a.y = (decltype(a.y))Y;                                                                                 \
        a.m = 100;                                                                                              \
        a.n = 65536;                                                                                            \
        a.eps = 1e-5f;                                                                                          \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 4, 0, 0), FT_ERR_UNSUPPORTED,                  \
                      "does not fit ft_norm_long's ring");                                                      \
        a.n = 4096;                                                                                             \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 0, 0, 0), FT_ERR_UNSUPPORTED, "0 pieces");     \
        a.residual = (decltype(a.residual))R;                                                                   \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 8, 0, 0), FT_ERR_UNSUPPORTED,                  \
                      "does not fit ft_norm_long's ring");                                                      \
        a.residual = NULL;                                                                                      \
        a.n = 4101; /* rows off the 16-byte grid: y at another offset from it than x, then gamma off it */     \
        a.y = (decltype(a.y))((char *)Y + 4);                                                                   \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 8, 0, 0), FT_ERR_UNSUPPORTED, "m=100 n=4101"); \
        a.y = (decltype(a.y))Y;                                                                                 \
        a.gamma = (decltype(a.gamma))((char *)G + 4);                                                           \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 8, 0, 0), FT_ERR_UNSUPPORTED, "m=100 n=4101"); \
        a.gamma = (decltype(a.gamma))G;                                                                         \
        a.n = 32 / (int)sizeof(*a.x) - 1; /* rows of fewer than 32 bytes */                                     \
        EXPECT_STATUS(t, ft_norm_long_launch_##suffix("long", a, 8, 0, 0), FT_ERR_UNSUPPORTED, "does not fit");  \
    }
    FT_NORM_VARIANTS(FT_X)
#undef FT_X
}

FT_TEST(norm_args_sizes)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, 0, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "m (rows)");
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, -3, 64, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "m (rows)");
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, 4, 0, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "n (columns)");
        EXPECT_STATUS(t, ft_rmsnorm(dt, X, G, Y, 4, (int64_t)1 << 31, 1e-5f, 0), FT_ERR_INVALID_ARGUMENT,
                      "exceeds the supported maximum");
        EXPECT_STATUS(t, ft_add_bias_residual_layernorm(dt, X, R, B, G, BETA, Y, S, (int64_t)1 << 40, 1 << 30,
                                                        1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "overflows");
        /* more rows than a grid can hold is refused, not truncated */
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, (int64_t)1 << 33, 4096, 1e-5f, 0), FT_ERR_UNSUPPORTED,
                      "split the call");
        EXPECT_STATUS(t, ft_add_bias_act(dt, X, B, Y, 4, -1, FT_ACT_RELU, 0), FT_ERR_INVALID_ARGUMENT,
                      "n (columns)");
        EXPECT_STATUS(t, ft_add_bias_residual(dt, X, R, B, Y, 0, 8, 0), FT_ERR_INVALID_ARGUMENT, "m (rows)");
    }
}

FT_TEST(norm_args_values)
{
    const float nan = __builtin_nanf("");
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, 4, 64, -1e-5f, 0), FT_ERR_INVALID_ARGUMENT, "eps");
        EXPECT_STATUS(t, ft_rmsnorm(dt, X, G, Y, 4, 64, nan, 0), FT_ERR_INVALID_ARGUMENT, "eps");
        EXPECT_STATUS(t, ft_rmsnorm(dt, X, G, Y, 4, 64, __builtin_inff(), 0), FT_ERR_INVALID_ARGUMENT, "eps");
        EXPECT_STATUS(t, ft_add_bias_residual_layernorm(dt, X, R, B, G, BETA, Y, Y, 4, 64, 1e-5f, 0),
                      FT_ERR_INVALID_ARGUMENT, "sum_out and y");
        EXPECT_STATUS(t, ft_add_bias_act(dt, X, B, Y, 4, 64, (ft_act)99, 0), FT_ERR_INVALID_ARGUMENT,
                      "unknown activation");
        EXPECT_STATUS(t, ft_add_bias_act(dt, X, B, Y, 4, 64, (ft_act)-1, 0), FT_ERR_INVALID_ARGUMENT,
                      "unknown activation");
    }
}

FT_TEST(norm_args_alignment)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        char *odd = (char *)X + 1; /* not aligned to any element size > 1 */
        EXPECT_STATUS(t, ft_layernorm(dt, odd, G, BETA, Y, 4, 64, 1e-5f, 0), FT_ERR_MISALIGNED, "x (");
        EXPECT_STATUS(t, ft_layernorm(dt, X, G, (char *)BETA + 1, Y, 4, 64, 1e-5f, 0), FT_ERR_MISALIGNED, "beta");
        EXPECT_STATUS(t, ft_add_bias_residual_layernorm(dt, X, R, B, G, BETA, Y, (char *)S + 1, 4, 64, 1e-5f, 0),
                      FT_ERR_MISALIGNED, "sum_out");
        EXPECT_STATUS(t, ft_add_bias_residual(dt, X, (char *)R + 1, B, Y, 4, 64, 0), FT_ERR_MISALIGNED,
                      "residual");
        EXPECT_STATUS(t, ft_add_bias_act(dt, X, (char *)B + 1, Y, 4, 64, FT_ACT_SILU, 0), FT_ERR_MISALIGNED,
                      "bias");
    }
}

FT_TEST(norm_args_unsupported_dtype)
{
    const ft_dtype dt = FT_INT8;
    EXPECT_STATUS(t, ft_layernorm(dt, X, G, BETA, Y, 4, 64, 1e-5f, 0), FT_ERR_UNSUPPORTED, "generated:");
    EXPECT_STATUS(t, ft_rmsnorm(dt, X, G, Y, 4, 64, 1e-5f, 0), FT_ERR_UNSUPPORTED, "ft_rmsnorm");
    EXPECT_STATUS(t, ft_add_bias_act(dt, X, B, Y, 4, 64, FT_ACT_GELU, 0), FT_ERR_UNSUPPORTED, "int8");
    EXPECT_STATUS(t, ft_add_bias_residual(dt, X, R, B, Y, 4, 64, 0), FT_ERR_UNSUPPORTED, "gen/ftgen.py");
}

FT_TEST(norm_typed_launchers_name_themselves)
{
    const ft_dtype dt = FT_FP16;
    EXPECT_STATUS(t, ft_layernorm_fp16(NULL, (const __half *)G, NULL, (__half *)Y, 1, 1, 0.0f, 0),
                  FT_ERR_INVALID_ARGUMENT, "ft_layernorm_fp16: x is NULL");
    EXPECT_STATUS(t, ft_add_bias_residual_layernorm_bf16((const __nv_bfloat16 *)X, (const __nv_bfloat16 *)R,
                                                         NULL, NULL, NULL, (__nv_bfloat16 *)Y, NULL, 1, 1, 0.0f, 0),
                  FT_ERR_INVALID_ARGUMENT, "ft_add_bias_residual_layernorm_bf16: gamma is NULL");
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
