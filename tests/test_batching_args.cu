/* Argument checks of every launcher of the continuous-batching inferencer
 * (ft/batching.cuh): each bad input returns the right status and a message naming the
 * launcher, without any CUDA call (these run in CI, without a GPU; no check lets the fake
 * pointers through). */
#include "ft/batching.cuh"
#include "ft/variants.h"

#include "args_check.h"
#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))
static void *const A = P(0x10000), *const K = P(0x20000), *const C = P(0x30000), *const O = P(0x40000);
static int *const L = (int *)P(0x50000), *const I = (int *)P(0x60000), *const T = (int *)P(0x70000);
static float *const F = (float *)P(0x80000);

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_BATCHING_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])

FT_TEST(batching_args_slots)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_insert_items(dt, NULL, L, A, 64, 4, O, 64, L, 2, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "new_batch_idx is NULL");
        EXPECT_STATUS(t, ft_insert_items(dt, I, L, A, 64, 4, O, 64, NULL, 2, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "lengths is NULL");
        EXPECT_STATUS(t, ft_insert_items(dt, I, L, A, 64, 0, O, 64, L, 2, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "rows_per_item (0)");
        EXPECT_STATUS(t, ft_insert_items(dt, I, L, A, 32, 4, O, 64, L, 2, 64, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_emb (32)");
        EXPECT_STATUS(t, ft_insert_items(dt, I, L, (char *)A + 1, 64, 4, O, 64, L, 2, 64, 0), FT_ERR_MISALIGNED,
                      "new_emb (");
        EXPECT_STATUS(t, ft_fill_new_kv_cache(dt, A, NULL, 64, 4, I, L, K, C, 2, 64, 16, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "v_new is NULL");
        EXPECT_STATUS(t, ft_fill_new_kv_cache(dt, A, A, 64, 4, I, L, K, C, 0, 64, 16, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "B (0)");
        EXPECT_STATUS(t, ft_fill_new_kv_cache(dt, A, A, 63, 4, I, L, K, C, 2, 64, 16, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_new (63)");
        EXPECT_STATUS(t, ft_fill_new_kv_cache(dt, A, A, 64, 4, I, L, K, C, 70000, 64, 16, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "at most 65535");
        EXPECT_STATUS(t, ft_append_kv(dt, A, A, 64, L, NULL, C, 2, 64, 16, 0), FT_ERR_INVALID_ARGUMENT,
                      "kt_cache is NULL");
        EXPECT_STATUS(t, ft_append_kv(dt, A, A, 60, L, K, C, 2, 64, 16, 0), FT_ERR_INVALID_ARGUMENT, "ld (60)");
        EXPECT_STATUS(t, ft_append_kv(dt, A, A, 64, L, K, C, 2, 64, -1, 0), FT_ERR_INVALID_ARGUMENT, "S (-1)");
        EXPECT_STATUS(t, ft_append_kv(dt, A, A, 64, (int *)((char *)L + 2), K, C, 2, 64, 16, 0), FT_ERR_MISALIGNED,
                      "lengths (");
    }
    {
        const ft_dtype dt = FT_INT8;
        EXPECT_STATUS(t, ft_insert_items(dt, I, L, A, 64, 4, O, 64, L, 2, 64, 0), FT_ERR_UNSUPPORTED,
                      "no batching variant for dtype int8");
    }
}

FT_TEST(batching_args_attention)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_qkt(dt, NULL, 192, K, L, F, 16, 2, 2, 32, 16, 0.1f, 0), FT_ERR_INVALID_ARGUMENT,
                      "q is NULL");
        EXPECT_STATUS(t, ft_qkt(dt, A, 192, K, L, NULL, 16, 2, 2, 32, 16, 0.1f, 0), FT_ERR_INVALID_ARGUMENT,
                      "scores is NULL");
        EXPECT_STATUS(t, ft_qkt(dt, A, 32, K, L, F, 16, 2, 2, 32, 16, 0.1f, 0), FT_ERR_INVALID_ARGUMENT, "ld_q (32)");
        EXPECT_STATUS(t, ft_qkt(dt, A, 192, K, L, F, 8, 2, 2, 32, 16, 0.1f, 0), FT_ERR_INVALID_ARGUMENT, "ld_s (8)");
        EXPECT_STATUS(t, ft_qkt(dt, A, 192, K, L, F, 16, 2, 0, 32, 16, 0.1f, 0), FT_ERR_INVALID_ARGUMENT, "H (0)");
        EXPECT_STATUS(t, ft_qkt(dt, A, 1 << 20, K, L, F, 16, 2, 2, 4097, 16, 0.1f, 0), FT_ERR_UNSUPPORTED,
                      "D (4097) must be at most 4096");
        EXPECT_STATUS(t, ft_qkt(dt, A, 192, K, L, F, 16, 2, 2, 32, 16, INFINITY, 0), FT_ERR_INVALID_ARGUMENT,
                      "scale");
        EXPECT_STATUS(t, ft_qkt(dt, A, 192, K, L, (float *)((char *)F + 2), 16, 2, 2, 32, 16, 0.1f, 0),
                      FT_ERR_MISALIGNED, "scores (");
        EXPECT_STATUS(t, ft_softmax_lengths(dt, NULL, 16, L, 2, 2, 16, 0), FT_ERR_INVALID_ARGUMENT, "scores is NULL");
        EXPECT_STATUS(t, ft_softmax_lengths(dt, F, 15, L, 2, 2, 16, 0), FT_ERR_INVALID_ARGUMENT, "ld_s (15)");
        EXPECT_STATUS(t, ft_softmax_lengths(dt, F, 16, L, 2, 0, 16, 0), FT_ERR_INVALID_ARGUMENT, "H (0)");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 16, NULL, L, O, 64, 2, 2, 32, 16, NULL, 0, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "v_cache is NULL");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 16, C, L, O, 63, 2, 2, 32, 16, NULL, 0, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_out (63)");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 10, C, L, O, 64, 2, 2, 32, 16, NULL, 0, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_p (10)");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 16, C, L, O, 1 << 20, 2, 2, 4096, 16, NULL, 0, 0, 0), FT_ERR_UNSUPPORTED,
                      "D (4096) must be at most");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 16, C, L, O, 1 << 20, 2, 2, 257, 16, NULL, 0, 0, 0), FT_ERR_UNSUPPORTED,
                      "D (257) must be at most 256");
        EXPECT_STATUS(t, ft_softmax_v(dt, F, 16, C, L, O, 64, 2, 2, 32, 16, (char *)A + 2, 64, 0, 0),
                      FT_ERR_MISALIGNED, "workspace (");
    }
}

FT_TEST(batching_args_greedy)
{
    for (size_t v = 0; v < NVARIANTS; v++) {
        const ft_dtype dt = variant_dtypes[v];
        EXPECT_STATUS(t, ft_greedy_step(dt, NULL, 100, A, 100, 64, L, 8, T, O, 64, 2, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "logits is NULL");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, NULL, 100, 64, L, 8, T, O, 64, 2, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "table is NULL");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 8, NULL, O, 64, 2, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "tokens is NULL");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 99, A, 100, 64, L, 8, T, O, 64, 2, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld (99)");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 8, T, O, 60, 2, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "ld_x (60)");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 0, T, O, 64, 2, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "capacity (0)");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 8, T, O, 64, 70000, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "at most 65535");
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 8, T, O, 64, 2, (char *)A + 4, 64, 0),
                      FT_ERR_MISALIGNED, "workspace (");
    }
    {
        const ft_dtype dt = FT_INT32;
        EXPECT_STATUS(t, ft_greedy_step(dt, A, 100, A, 100, 64, L, 8, T, O, 64, 2, NULL, 0, 0), FT_ERR_UNSUPPORTED,
                      "ft_greedy_step");
    }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
