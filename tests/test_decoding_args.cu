/* Argument checks of the decoding family (ft/topk.cuh, ft/decoding.cuh, ft/search.cuh):
 * each bad input returns the right status and a message naming the problem, without any
 * CUDA call (these run in CI, without a GPU; the fake pointers are never dereferenced
 * because no check lets them through). */
#include <math.h>

#include "ft/decoding.cuh"
#include "ft/search.cuh"
#include "ft/topk.cuh"
#include "ft/variants.h"

#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))
static void *const X = P(0x10000), *const Y = P(0x20000);
static float *const FV = (float *)P(0x30000);
static int *const IV = (int *)P(0x40000);
static bool *const BV = (bool *)P(0x50000);

static const ft_dtype dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_DECODING_VARIANTS(FT_X)
#undef FT_X
};
#define NDT (sizeof dtypes / sizeof dtypes[0])

#define EXPECT_STATUS(t, call, want, needle)                                                     \
    do {                                                                                         \
        ft_status got_ = (call);                                                                 \
        FT_EXPECT(t, got_ == (want), "%s: got %s, want %s (%s)", #call, ft_status_string(got_),   \
                  ft_status_string(want), ft_last_error());                                      \
        FT_EXPECT(t, strstr(ft_last_error(), (needle)) != NULL, "%s: message '%s' lacks '%s'",    \
                  #call, ft_last_error(), (needle));                                             \
    } while (0)

static ft_sampling good_sampling(void)
{
    ft_sampling s;
    memset(&s, 0, sizeof s);
    s.k = 4, s.p = 0.9f, s.temperature = 1.0f, s.end_id = 2;
    return s;
}

static ft_decode_io good_io(void)
{
    ft_decode_io io;
    memset(&io, 0, sizeof io);
    io.ids = IV;
    return io;
}

FT_TEST(topk_args)
{
    for (size_t d = 0; d < NDT; d++) {
        const ft_dtype dt = dtypes[d];
        EXPECT_STATUS(t, ft_topk(dt, NULL, 100, 2, 100, 4, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "x is NULL");
        EXPECT_STATUS(t, ft_topk(dt, X, 100, 2, 100, 4, NULL, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "values is NULL");
        EXPECT_STATUS(t, ft_topk(dt, X, 100, 0, 100, 4, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "rows (0)");
        EXPECT_STATUS(t, ft_topk(dt, X, 10, 2, 100, 4, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "ld (10)");
        /* K larger than V, k of 0, k above every generated K */
        EXPECT_STATUS(t, ft_topk(dt, X, 3, 2, 3, 4, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "k = 4");
        EXPECT_STATUS(t, ft_topk(dt, X, 100, 2, 100, 0, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "k = 0");
        EXPECT_STATUS(t, ft_topk(dt, X, 100000, 2, 100000, 5000, FV, IV, NULL, 0, 0), FT_ERR_UNSUPPORTED,
                      "--family topk");
        EXPECT_STATUS(t, ft_topk(dt, (char *)X + 1, 100, 2, 100, 4, FV, IV, NULL, 0, 0), FT_ERR_MISALIGNED, "x");
        /* beam search candidates */
        EXPECT_STATUS(t, ft_beam_topk(dt, X, 100, FV, 0, 4, 100, 4, FV, IV, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "batch (0)");
        EXPECT_STATUS(t, ft_beam_topk(dt, X, 100, (float *)((char *)FV + 2), 2, 4, 100, 4, FV, IV, NULL, 0, 0),
                      FT_ERR_MISALIGNED, "cum_log_probs");
        EXPECT_STATUS(t, ft_beam_topk(dt, X, 1 << 20, FV, 1, 4096, 1 << 20, 4, FV, IV, NULL, 0, 0), FT_ERR_UNSUPPORTED,
                      "beam*V");
        /* sampling settings */
        ft_sampling s = good_sampling();
        ft_decode_io io = good_io();
        EXPECT_STATUS(t, ft_topk_sampling(dt, X, 100, 2, 100, NULL, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "required");
        s.p = 0.0f;
        EXPECT_STATUS(t, ft_topk_sampling(dt, X, 100, 2, 100, &s, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "outside (0, 1]");
        s.p = 1.5f;
        EXPECT_STATUS(t, ft_topp_sampling(dt, X, 100, 2, 100, &s, &io, 0), FT_ERR_INVALID_ARGUMENT, "outside (0, 1]");
        s.p = NAN;
        EXPECT_STATUS(t, ft_topp_sampling(dt, X, 100, 2, 100, &s, &io, 0), FT_ERR_INVALID_ARGUMENT, "outside (0, 1]");
        s = good_sampling();
        s.temperature = 0.0f;
        EXPECT_STATUS(t, ft_topk_sampling(dt, X, 100, 2, 100, &s, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "temperature");
        s = good_sampling();
        s.k = 0;
        EXPECT_STATUS(t, ft_topk_sampling(dt, X, 100, 2, 100, &s, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "top-p alone");
        s = good_sampling();
        s.k = 60; /* a variant holds 60, the rows do not */
        EXPECT_STATUS(t, ft_topk_sampling(dt, X, 50, 2, 50, &s, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT, "k = 60");
        s = good_sampling();
        io.ids = NULL;
        EXPECT_STATUS(t, ft_topp_sampling(dt, X, 100, 2, 100, &s, &io, 0), FT_ERR_INVALID_ARGUMENT, "io.ids is NULL");
        io = good_io();
        io.prompt = IV;
        EXPECT_STATUS(t, ft_topp_sampling(dt, X, 100, 2, 100, &s, &io, 0), FT_ERR_INVALID_ARGUMENT, "prompt_lengths");
        io = good_io();
        EXPECT_STATUS(t, ft_topp_sampling_sorted(dt, X, 100, 2, 100, &s, &io, NULL, 0, 0), FT_ERR_INVALID_ARGUMENT,
                      "workspace");
        /* 40000 rows of 151936: 16 row bits and 18 index bits overflow the sort's place words */
        EXPECT_STATUS(t, ft_topp_sampling_sorted(dt, X, 151936, 40000, 151936, &s, &io, X, 1ull << 40, 0),
                      FT_ERR_UNSUPPORTED, "exceeds 2^32");
        FT_EXPECT(t, ft_topp_sorted_workspace_bytes(dt, 40000, 151936) == 0, "the workspace of an unsupported shape");
    }
}

FT_TEST(decoding_args)
{
    for (size_t d = 0; d < NDT; d++) {
        const ft_dtype dt = dtypes[d];
        EXPECT_STATUS(t, ft_update_logits(dt, X, 100, 2, 100, NULL, BV, 100, 1.0f, NULL, FT_LOGITS_LOG_SOFTMAX, FV, 100, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "end_id 100");
        EXPECT_STATUS(t, ft_update_logits(dt, X, 100, 2, 100, NULL, NULL, 0, -1.0f, NULL, FT_LOGITS_RAW, FV, 100, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "temperature");
        EXPECT_STATUS(t, ft_update_logits(dt, X, 100, 2, 100, NULL, NULL, 0, 1.0f, NULL, (ft_logits_mode)7, FV, 100, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "unknown mode");
        EXPECT_STATUS(t, ft_update_logits(dt, X, 100, 2, 100, NULL, NULL, 0, 1.0f, NULL, FT_LOGITS_RAW,
                                          (float *)((char *)X + 64), 100, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "overlaps");
        EXPECT_STATUS(t, ft_update_logits(dt, X, 100, 2, 100, NULL, NULL, 0, 1.0f, NULL, FT_LOGITS_RAW, FV, 50, NULL, 0, 0),
                      FT_ERR_INVALID_ARGUMENT, "out_ld");
        EXPECT_STATUS(t, ft_embedding_lookup(dt, X, 100, 64, NULL, 4, 1, 0, NULL, 1.0f, NULL, 0, 1, Y, 0),
                      FT_ERR_INVALID_ARGUMENT, "ids is NULL");
        EXPECT_STATUS(t, ft_embedding_lookup(dt, X, 100, 63, IV, 4, 1, 0, NULL, 1.0f, NULL, 0, 1, Y, 0),
                      FT_ERR_INVALID_ARGUMENT, "even N");
        EXPECT_STATUS(t, ft_embedding_lookup(dt, X, 100, 64, IV, 4, 1, 0, NULL, 1.0f, Y, 0, 0, Y, 0),
                      FT_ERR_INVALID_ARGUMENT, "max_pos");
        EXPECT_STATUS(t, ft_embedding_lookup(dt, X, 100, 64, IV, 4, 0, 0, NULL, 1.0f, NULL, 0, 0, Y, 0),
                      FT_ERR_INVALID_ARGUMENT, "tokens_per_seq (0)");
        EXPECT_STATUS(t, ft_sine_position_table(dt, Y, 16, 7, 0), FT_ERR_INVALID_ARGUMENT, "even");
    }
}

FT_TEST(search_args)
{
    EXPECT_STATUS(t, ft_init_decoding(BV, IV, IV, FV, 0, 4, 1, 0), FT_ERR_INVALID_ARGUMENT, "batch (0)");
    EXPECT_STATUS(t, ft_beam_update(FV, IV, 4, 2, 2000, 100, 1, FV, IV, IV, NULL, IV, BV, 0), FT_ERR_UNSUPPORTED,
                  "beam = 2000");
    EXPECT_STATUS(t, ft_beam_update(FV, IV, 2, 2, 4, 100, 1, FV, IV, IV, NULL, IV, BV, 0), FT_ERR_INVALID_ARGUMENT,
                  "cand_ld (2)");
    EXPECT_STATUS(t, ft_beam_update(FV, IV, 4, 2, 4, 100, 100, FV, IV, IV, NULL, IV, BV, 0), FT_ERR_INVALID_ARGUMENT,
                  "end_id 100");
    EXPECT_STATUS(t, ft_beam_update(FV, NULL, 4, 2, 4, 100, 1, FV, IV, IV, NULL, IV, BV, 0), FT_ERR_INVALID_ARGUMENT,
                  "cand_ids is NULL");
    EXPECT_STATUS(t, ft_kv_cache_reorder(X, X, IV, 1, FT_KV_BHLD, 2, 2, 4, 16, 64, 2, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "overlap");
    EXPECT_STATUS(t, ft_kv_cache_reorder(X, P(0x90000000), IV, 1, FT_KV_BLHD, 2, 2, 4, 16, 64, 2, 8, 0),
                  FT_ERR_INVALID_ARGUMENT, "layout");
    EXPECT_STATUS(t, ft_kv_cache_reorder(X, P(0x90000000), IV, 1, FT_KV_LBHD, 2, 2, 4, 16, 64, 2, 17, 0),
                  FT_ERR_INVALID_ARGUMENT, "len = 17");
    EXPECT_STATUS(t, ft_kv_cache_reorder(X, P(0x90000000), IV, 1, FT_KV_LBHD, 2, 2, 4, 16, 64, 3, 8, 0),
                  FT_ERR_INVALID_ARGUMENT, "elem_bytes");
    EXPECT_STATUS(t, ft_cache_indirection_update(IV, IV, IV, 2, 2, 16, 3, 0), FT_ERR_INVALID_ARGUMENT, "overlap");
    EXPECT_STATUS(t, ft_cache_indirection_update(NULL, IV, IV, 2, 2, 16, 16, 0), FT_ERR_INVALID_ARGUMENT, "step = 16");
    EXPECT_STATUS(t, ft_cache_indirection_update(NULL, IV, IV, 2, 0, 16, 3, 0), FT_ERR_INVALID_ARGUMENT, "beam (0)");
    EXPECT_STATUS(t, ft_cache_indirection_update(NULL, IV, NULL, 2, 2, 16, 3, 0), FT_ERR_INVALID_ARGUMENT,
                  "parent_ids is NULL");
    EXPECT_STATUS(t, ft_cache_indirection_update(NULL, (int *)((char *)IV + 2), IV, 2, 2, 16, 3, 0), FT_ERR_MISALIGNED,
                  "dst");
    EXPECT_STATUS(t, ft_beam_gather_tree(IV, IV, 0, 2, 2, IV, 0), FT_ERR_INVALID_ARGUMENT, "steps (0)");
    EXPECT_STATUS(t, ft_count_finished(BV, 0, IV, 0), FT_ERR_INVALID_ARGUMENT, "n = 0");
    EXPECT_STATUS(t, ft_count_finished(BV, 5, (int *)((char *)IV + 1), 0), FT_ERR_MISALIGNED, "count");
    EXPECT_STATUS(t, ft_remove_prompt_tokens(IV, 4, 2, NULL, 0, NULL, 0, IV, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "prompt_lengths is NULL");
    EXPECT_STATUS(t, ft_remove_prompt_tokens(IV, 4, 2, IV, -1, NULL, 0, IV, 8, 0), FT_ERR_INVALID_ARGUMENT,
                  "start_pos (-1)");
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
