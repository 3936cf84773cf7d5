/* Argument checks of the attention launchers and dispatchers: every bad input returns
 * the right status and names itself, without a CUDA call (these run in CI). */
#include "ft/attention.cuh"

#include "harness.h"

#define P(addr) ((void *)(uintptr_t)(addr))

static ft_self_attention_args good_self(void)
{
    ft_self_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = 2;
    a.num_heads = 8;
    a.num_kv_heads = 2;
    a.max_len = 128;
    a.q = P(0x1000);
    a.k = P(0x2000);
    a.v = P(0x3000);
    a.k_cache = P(0x10000);
    a.v_cache = P(0x20000);
    a.layout = FT_KV_BHLD;
    a.lengths = (const int *)P(0x4000);
    a.out = P(0x5000);
    a.splits = 4; /* forced: planned without asking the device */
    a.workspace = P(0x100000);
    a.workspace_bytes = ft_attention_workspace_bytes(2, 8, 128, 4);
    return a;
}

static ft_cross_attention_args good_cross(void)
{
    ft_cross_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = 2;
    a.num_heads = 8;
    a.num_kv_heads = 8;
    a.mem_len = 64;
    a.q = P(0x1000);
    a.k_mem = P(0x10000);
    a.v_mem = P(0x20000);
    a.layout = FT_KV_BLHD;
    a.mem_lengths = (const int *)P(0x4000);
    a.out = P(0x5000);
    a.splits = 2;
    a.workspace = P(0x100000);
    a.workspace_bytes = ft_attention_workspace_bytes(2, 8, 128, 2);
    return a;
}

#define EXPECT_SELF(t, mutate, want, needle)                                                      \
    do {                                                                                          \
        ft_self_attention_args a = good_self();                                                   \
        mutate;                                                                                   \
        const ft_status st = ft_masked_self_attention_decode(FT_FP16, 128, &a, 0);                \
        FT_EXPECT(t, st == (want), "%s: got %s, want %s (%s)", #mutate, ft_status_string(st),      \
                  ft_status_string(want), ft_last_error());                                       \
        FT_EXPECT(t, strstr(ft_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'",       \
                  #mutate, ft_last_error(), needle);                                              \
    } while (0)

#define EXPECT_CROSS(t, mutate, want, needle)                                                     \
    do {                                                                                          \
        ft_cross_attention_args a = good_cross();                                                 \
        mutate;                                                                                   \
        const ft_status st = ft_cross_attention_decode(FT_BF16, 128, &a, 0);                      \
        FT_EXPECT(t, st == (want), "%s: got %s, want %s (%s)", #mutate, ft_status_string(st),      \
                  ft_status_string(want), ft_last_error());                                       \
        FT_EXPECT(t, strstr(ft_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'",       \
                  #mutate, ft_last_error(), needle);                                              \
    } while (0)

FT_TEST(attention_args_shapes)
{
    EXPECT_SELF(t, a.batch = 0, FT_ERR_INVALID_ARGUMENT, "batch must be positive");
    EXPECT_SELF(t, a.num_heads = 0, FT_ERR_INVALID_ARGUMENT, "num_heads");
    EXPECT_SELF(t, a.num_kv_heads = 3, FT_ERR_INVALID_ARGUMENT, "not a multiple of num_kv_heads 3");
    EXPECT_SELF(t, a.max_len = 0, FT_ERR_INVALID_ARGUMENT, "capacity must be positive");
    EXPECT_SELF(t, a.max_seq_len = 129, FT_ERR_INVALID_ARGUMENT, "exceeds the cache capacity");
    EXPECT_SELF(t, a.max_seq_len = -1, FT_ERR_INVALID_ARGUMENT, "must not be negative");
    EXPECT_CROSS(t, a.num_kv_heads = 16, FT_ERR_INVALID_ARGUMENT, "not a multiple");
    EXPECT_CROSS(t, a.max_mem_seq_len = 65, FT_ERR_INVALID_ARGUMENT, "exceeds mem_len");
}

FT_TEST(attention_args_pointers)
{
    EXPECT_SELF(t, a.q = NULL, FT_ERR_INVALID_ARGUMENT, "q is NULL");
    EXPECT_SELF(t, a.k = NULL, FT_ERR_INVALID_ARGUMENT, "k is NULL");
    EXPECT_SELF(t, a.v_cache = NULL, FT_ERR_INVALID_ARGUMENT, "v_cache is NULL");
    EXPECT_SELF(t, a.lengths = NULL, FT_ERR_INVALID_ARGUMENT, "lengths is NULL");
    EXPECT_SELF(t, a.out = NULL, FT_ERR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_SELF(t, a.k_cache = P(0x10008), FT_ERR_MISALIGNED, "k_cache");
    EXPECT_SELF(t, a.q = P(0x1001), FT_ERR_MISALIGNED, "q (");
    EXPECT_SELF(t, a.k_bias = P(0x1003), FT_ERR_MISALIGNED, "k_bias");
    EXPECT_CROSS(t, a.k_mem = NULL, FT_ERR_INVALID_ARGUMENT, "k_mem is NULL");
    EXPECT_CROSS(t, a.v_mem = P(0x20004), FT_ERR_MISALIGNED, "v_mem");
    EXPECT_CROSS(t, a.mem_lengths = (const int *)P(0x4002), FT_ERR_MISALIGNED, "mem_lengths");
    ft_status st = ft_masked_self_attention_decode_h64_fp32(NULL, 0);
    FT_EXPECT(t, st == FT_ERR_INVALID_ARGUMENT && strstr(ft_last_error(), "args is NULL"), "NULL args: %s",
              ft_last_error());
}

FT_TEST(attention_args_options)
{
    EXPECT_SELF(t, (a.cache_indirection = (const int *)P(0x20000), a.beam_width = 0), FT_ERR_INVALID_ARGUMENT,
                "beam_width (0) must be positive and divide batch");
    EXPECT_SELF(t, (a.cache_indirection = (const int *)P(0x20000), a.beam_width = a.batch + 1), FT_ERR_INVALID_ARGUMENT,
                "must be positive and divide batch");
    EXPECT_SELF(t, (a.cache_indirection = (const int *)P(0x20002), a.beam_width = 1), FT_ERR_MISALIGNED,
                "cache_indirection");
    EXPECT_SELF(t, a.layout = FT_KV_BLHD, FT_ERR_INVALID_ARGUMENT, "FT_KV_BHLD or FT_KV_LBHD");
    EXPECT_SELF(t, a.layout = (ft_kv_layout)7, FT_ERR_INVALID_ARGUMENT, "layout");
    EXPECT_SELF(t, a.rope = (ft_rope)5, FT_ERR_INVALID_ARGUMENT, "unknown rotary style 5");
    EXPECT_SELF(t, (a.rope = FT_ROPE_HALF, a.rotary_dim = 63), FT_ERR_INVALID_ARGUMENT, "rotary_dim");
    EXPECT_SELF(t, (a.rope = FT_ROPE_HALF, a.rotary_dim = 130), FT_ERR_INVALID_ARGUMENT, "rotary_dim");
    EXPECT_SELF(t, (a.rope = FT_ROPE_INTERLEAVED, a.rotary_base = 0.5f), FT_ERR_INVALID_ARGUMENT, "rotary_base");
    EXPECT_SELF(t, a.scale = -1.0f, FT_ERR_INVALID_ARGUMENT, "scale");
    EXPECT_SELF(t, a.scale = __builtin_nanf(""), FT_ERR_INVALID_ARGUMENT, "scale");
    EXPECT_SELF(t, a.splits = 65, FT_ERR_INVALID_ARGUMENT, "splits must be");
    EXPECT_SELF(t, a.splits = -2, FT_ERR_INVALID_ARGUMENT, "splits must be");
    EXPECT_SELF(t, a.workspace = NULL, FT_ERR_INVALID_ARGUMENT, "need a workspace");
    EXPECT_SELF(t, a.workspace_bytes = 100, FT_ERR_INVALID_ARGUMENT, "need a workspace");
    EXPECT_SELF(t, a.workspace = P(0x100004), FT_ERR_MISALIGNED, "workspace");
    EXPECT_SELF(t, (a.splits = 0, a.workspace = P(0x100008)), FT_ERR_MISALIGNED, "workspace must be 16-byte aligned");
    EXPECT_CROSS(t, (a.splits = 1, a.workspace = P(0x100008)), FT_ERR_MISALIGNED, "workspace must be 16-byte aligned");
    EXPECT_SELF(t, (a.split_counters = (unsigned *)P(0x200000), a.split_counters_bytes = 63), FT_ERR_INVALID_ARGUMENT,
                "split_counters of 63 bytes, 64 needed");
    EXPECT_SELF(t, (a.split_counters = (unsigned *)P(0x200002), a.split_counters_bytes = 64), FT_ERR_MISALIGNED,
                "split_counters must be 4-byte aligned");
    EXPECT_CROSS(t, (a.split_counters = (unsigned *)P(0x200000), a.split_counters_bytes = 4), FT_ERR_INVALID_ARGUMENT,
                 "split_counters of 4 bytes, 64 needed");
    EXPECT_SELF(t, a.impl = (ft_attn_impl)3, FT_ERR_INVALID_ARGUMENT, "impl must be");
    EXPECT_CROSS(t, a.impl = (ft_attn_impl)-1, FT_ERR_INVALID_ARGUMENT, "impl must be");
    EXPECT_CROSS(t, a.layout = FT_KV_LBHD, FT_ERR_INVALID_ARGUMENT, "FT_KV_BLHD or FT_KV_BHLD");
    EXPECT_CROSS(t, a.splits = 3, FT_ERR_INVALID_ARGUMENT, "need a workspace");
}

FT_TEST(attention_args_unsupported)
{
    ft_self_attention_args a = good_self();
    ft_status st = ft_masked_self_attention_decode(FT_FP16, 72, &a, 0);
    FT_EXPECT(t, st == FT_ERR_UNSUPPORTED, "head size 72: %s", ft_status_string(st));
    FT_EXPECT(t, strstr(ft_last_error(), "--head-size 72 --dtype fp16"), "message: %s", ft_last_error());
    FT_EXPECT(t, strstr(ft_last_error(), "generated: 32 48 64"), "message lists the sizes: %s", ft_last_error());
    st = ft_masked_self_attention_decode(FT_INT8, 128, &a, 0);
    FT_EXPECT(t, st == FT_ERR_UNSUPPORTED && strstr(ft_last_error(), "int8"), "int8: %s", ft_last_error());
    ft_cross_attention_args c = good_cross();
    st = ft_cross_attention_decode(FT_FP32, 100, &c, 0);
    FT_EXPECT(t, st == FT_ERR_UNSUPPORTED && strstr(ft_last_error(), "head size 100"), "cross 100: %s",
              ft_last_error());
    st = ft_add_memory_bias(FT_BF16, 96, P(0x10000), P(0x100), P(0x20000), NULL, 0, 4, 16, FT_KV_BLHD, 0);
    FT_EXPECT(t, st == FT_ERR_INVALID_ARGUMENT && strstr(ft_last_error(), "ft_add_memory_bias_h96_bf16"),
              "memory bias batch 0: %s", ft_last_error());
    st = ft_add_memory_bias(FT_BF16, 96, P(0x10000), P(0x100), P(0x20000), NULL, 2, 4, 16, FT_KV_LBHD, 0);
    FT_EXPECT(t, st == FT_ERR_INVALID_ARGUMENT && strstr(ft_last_error(), "layout"), "memory bias layout: %s",
              ft_last_error());
}

static ft_packed_attention_args good_packed(void)
{
    ft_packed_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = 4;
    a.num_heads = 12;
    a.num_kv_heads = 4;
    a.max_seq_len = 128;
    a.seq_offsets = (const int *)P(0x4000);
    a.qkv = P(0x10000);
    a.qkv_bias = P(0x8000);
    a.out = P(0x20000);
    return a;
}

#define EXPECT_PACKED(t, dt, D, mutate, want, needle)                                             \
    do {                                                                                          \
        ft_packed_attention_args a = good_packed();                                               \
        mutate;                                                                                   \
        const ft_status st = ft_packed_attention(dt, D, &a, 0);                                   \
        FT_EXPECT(t, st == (want), "%s: got %s, want %s (%s)", #mutate, ft_status_string(st),      \
                  ft_status_string(want), ft_last_error());                                       \
        FT_EXPECT(t, strstr(ft_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'",       \
                  #mutate, ft_last_error(), needle);                                              \
    } while (0)

FT_TEST(packed_attention_args)
{
    EXPECT_PACKED(t, FT_FP16, 64, a.batch = 0, FT_ERR_INVALID_ARGUMENT, "batch must be in [1, 65535]");
    EXPECT_PACKED(t, FT_FP16, 64, a.num_kv_heads = 0, FT_ERR_INVALID_ARGUMENT, "must be positive");
    EXPECT_PACKED(t, FT_BF16, 64, a.num_kv_heads = 5, FT_ERR_INVALID_ARGUMENT, "not a multiple of num_kv_heads 5");
    EXPECT_PACKED(t, FT_FP16, 128, a.max_seq_len = -1, FT_ERR_INVALID_ARGUMENT, "max_seq_len");
    EXPECT_PACKED(t, FT_FP16, 64, a.seq_offsets = NULL, FT_ERR_INVALID_ARGUMENT, "seq_offsets is NULL");
    EXPECT_PACKED(t, FT_FP16, 64, a.qkv = NULL, FT_ERR_INVALID_ARGUMENT, "qkv is NULL");
    EXPECT_PACKED(t, FT_FP16, 64, a.out = NULL, FT_ERR_INVALID_ARGUMENT, "out is NULL");
    EXPECT_PACKED(t, FT_FP16, 64, a.qkv = P(0x10008), FT_ERR_MISALIGNED, "qkv");
    EXPECT_PACKED(t, FT_BF16, 32, a.qkv_bias = P(0x8004), FT_ERR_MISALIGNED, "qkv_bias");
    EXPECT_PACKED(t, FT_FP16, 128, a.tile_counters = (unsigned *)P(0x6002), FT_ERR_MISALIGNED, "tile_counters");
    EXPECT_PACKED(t, FT_BF16, 64, a.tile_counters = (unsigned *)P(0x6001), FT_ERR_MISALIGNED, "tile_counters");
    EXPECT_PACKED(t, FT_FP16, 64, a.scale = -1.0f, FT_ERR_INVALID_ARGUMENT, "scale");
    EXPECT_PACKED(t, FT_FP16, 64, a.scale = NAN, FT_ERR_INVALID_ARGUMENT, "scale");
    EXPECT_PACKED(t, FT_FP16, 64, a.num_heads = 70000, FT_ERR_INVALID_ARGUMENT, "at most 65535");
    EXPECT_PACKED(t, FT_BF16, 128, a.impl = (ft_attn_impl)7, FT_ERR_INVALID_ARGUMENT, "impl must be");
    FT_EXPECT(t, ft_packed_attention(FT_FP16, 64, NULL, 0) == FT_ERR_INVALID_ARGUMENT &&
                     strstr(ft_last_error(), "args is NULL"),
              "NULL args: %s", ft_last_error());
    /* variants without the tensor-core form say so, and why */
    EXPECT_PACKED(t, FT_FP32, 64, (void)0, FT_ERR_UNSUPPORTED, "fp16 or bf16");
    EXPECT_PACKED(t, FT_BF16, 160, (void)0, FT_ERR_UNSUPPORTED, "multiple of 16 up to 128");
    EXPECT_PACKED(t, FT_FP16, 72, (void)0, FT_ERR_UNSUPPORTED, "--head-size 72");
    EXPECT_PACKED(t, FT_INT8, 64, (void)0, FT_ERR_UNSUPPORTED, "int8");
    FT_EXPECT(t, ft_has_packed_attention(FT_FP16, 64) && ft_has_packed_attention(FT_BF16, 128) &&
                     ft_has_packed_attention(FT_FP16, 48) && !ft_has_packed_attention(FT_FP32, 64) &&
                     !ft_has_packed_attention(FT_FP16, 160) && !ft_has_packed_attention(FT_FP16, 72),
              "ft_has_packed_attention");
    FT_EXPECT(t, ft_has_attention(FT_FP32, 64) && ft_has_attention(FT_FP16, 256) && ft_has_attention(FT_BF16, 48) &&
                     !ft_has_attention(FT_FP16, 72) && !ft_has_attention(FT_INT8, 64),
              "ft_has_attention");
}

FT_TEST(attention_workspace_size)
{
    FT_EXPECT(t, ft_attention_workspace_bytes(2, 8, 128, 1) == 0, "one split needs no workspace");
    FT_EXPECT(t, ft_attention_workspace_bytes(2, 8, 128, 4) == (size_t)4 * 2 * 8 * 130 * 4, "4 splits");
    FT_EXPECT(t, ft_attention_workspace_bytes(0, 8, 128, 4) == 0, "empty batch");
    FT_EXPECT(t, ft_attention_split_counter_bytes(2, 8) == 64, "a counter per (sequence, head)");
    FT_EXPECT(t, ft_attention_split_counter_bytes(0, 8) == 0, "empty batch: no counters");
}

/* The split-count rule of the D64 tensor-map form (256 bytes of K and V a step), on 132
 * SMs at L4096: extra splits past the 8 a cluster merges are kept only where they take
 * more than FT_ATTN_COMBINE_BYTES off the busiest SM. */
FT_TEST(attention_cluster_split_rule)
{
    ft_attn_plan p;
    memset(&p, 0, sizeof p);
    p.max_seq = 4096;
    /* MQA B8 (16 blocks a split): 16 splits put two blocks on most SMs and save nothing */
    p.splits = 16, p.chunk = 256;
    ft_attn_prefer_cluster_splits(&p, 16, 132, 256);
    FT_EXPECT(t, p.splits == 8 && p.chunk == 512, "MQA B8 D64: %d splits of %d steps", p.splits, p.chunk);
    /* MQA B1 (2 blocks a split): 256 steps x 256 bytes = 64 KB saved, less than the workspace path */
    p.splits = 16, p.chunk = 256;
    ft_attn_prefer_cluster_splits(&p, 2, 132, 256);
    FT_EXPECT(t, p.splits == 8 && p.chunk == 512, "MQA B1 D64: %d splits of %d steps", p.splits, p.chunk);
    /* twice the bytes a step: 128 KB saved, so the 16 splits stay */
    p.splits = 16, p.chunk = 256;
    ft_attn_prefer_cluster_splits(&p, 2, 132, 512);
    FT_EXPECT(t, p.splits == 16 && p.chunk == 256, "512-byte steps: %d splits of %d steps", p.splits, p.chunk);
    /* L8192, 32 splits: 768 steps saved (192 KB), they stay */
    p.max_seq = 8192, p.splits = 32, p.chunk = 256;
    ft_attn_prefer_cluster_splits(&p, 2, 132, 256);
    FT_EXPECT(t, p.splits == 32 && p.chunk == 256, "L8192: %d splits of %d steps", p.splits, p.chunk);
    /* counts a cluster merges anyway are left alone */
    p.max_seq = 4096, p.splits = 6, p.chunk = 683;
    ft_attn_prefer_cluster_splits(&p, 2, 132, 256);
    FT_EXPECT(t, p.splits == 6 && p.chunk == 683, "6 splits: %d splits of %d steps", p.splits, p.chunk);
}

/* Who merges forced splits of the register kernel (planned without asking the device):
 * with split counters the block that ends last, without them the combine kernel. */
FT_TEST(attention_split_counter_plan)
{
    const unsigned *cnt = (const unsigned *)P(0x200000);
    const void *ws = P(0x100000);
    const size_t ws_bytes = ft_attention_workspace_bytes(2, 8, 128, 9);
    for (int splits = 1; splits <= 9; splits += 8)
        for (int with = 0; with < 2; with++) {
            ft_attn_plan p;
            memset(&p, 0, sizeof p);
            ft_status st = ft_attn_check_shape("plan", 2, 8, 2, 4000, 128, &p);
            if (st == FT_OK)
                st = ft_attn_plan_grid_h128_fp16("plan", &p, FT_ATTN_IMPL_REGISTER, FT_KV_LBHD, 0, splits, 4000, ws_bytes,
                                                 ws, with ? cnt : NULL);
            FT_EXPECT(t, st == FT_OK, "splits %d, counters %d: %s", splits, with, ft_last_error());
            FT_EXPECT(t, p.splits == splits && p.cmerge == 0 && p.lmerge == (splits > 1 && with),
                      "splits %d, counters %d: planned %d splits, cmerge %d, lmerge %d", splits, with, p.splits,
                      p.cmerge, p.lmerge);
        }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
