/* Example: one forward of FasterLLaMA's int8 decoder layer (seed 002 §3) composed from the
 * llama family's launchers and int8 / floating-point GEMMs, for the prompt (S tokens) or a
 * generation step (S = 1) of B sequences that all start at position `start`. fp32, fp16
 * or bf16 activations, chosen at run time; every weight matrix int8 with a per-output-
 * channel scale, every activation entering an int8 GEMM quantised per row.
 *
 *   x8, s1     = int8 of RMSNorm(x) * gamma1                        ft_rmsnorm_quant
 *   acc        = x8 Wqkv^T                                          ft_gemm_int8
 *   q, k, v    = dequant, rotary on q and k, heads split; k and v   ft_qkv_dequant_rope
 *                straight into the caches at start .. start + S - 1
 *   a          = softmax(q K^T / sqrt(D)) V over the caches' first start + S rows:
 *                a prompt (S > 1):
 *                  scores = q K^T                                    one GEMM a (sequence, kv
 *                                                                    head): its G query heads' S rows at once
 *                  p      = causal softmax(scores / sqrt(D))         ft_causal_softmax
 *                  a      = p V                                      one GEMM a (sequence, kv head)
 *                a decode step (S = 1, a generated head size):       ft_cross_attention_decode
 *                  over the caches as memory of start + 1 steps (the cache read once, split
 *                  over the GPU for long caches; q, k, v already rotated and appended)
 *   a8, s2     = int8 of a, heads merged                             ft_attn_quant_transpose
 *   acc        = a8 Wo^T                                             ft_gemm_int8
 *   h, h8, s3  = dequant + x (kept); int8 of RMSNorm(h) * gamma2     ft_dequant_residual_rmsnorm_quant
 *   acc1, acc3 = h8 W1^T, h8 W3^T                                    ft_gemm_int8 twice
 *   f8, s4     = int8 of silu(dequant acc1) * dequant acc3           ft_dequant_silu_mul_quant
 *   acc        = f8 W2^T                                             ft_gemm_int8
 *   y          = dequant + h                                         ft_dequant_residual
 *
 * The seed's attention GEMMs are fp32 over an fp32 cache; here they run in the activation
 * dtype over a cache of it (grouped-query heads share their kv head's cache). Weights are
 * [out, in] (nn.Linear's layout, what ft_gemm_int8 takes). Built and tested by
 * tests/test_layers.cu. */
#ifndef FT_EXAMPLE_LLAMA_LAYER_CUH
#define FT_EXAMPLE_LLAMA_LAYER_CUH

#include <math.h>

#include "ft/attention.cuh"
#include "ft/gemm.cuh"
#include "ft/llama.cuh"

#include "example_common.cuh"

typedef struct ft_llama_weights {
    const void *gamma1, *gamma2;                /* [N], activation dtype */
    const int8_t *w_qkv;                        /* [(H + 2 Hkv) D, N]: q, k, v rows */
    const float *qkv_scale;                     /* [(H + 2 Hkv) D] */
    const int8_t *w_o;                          /* [N, H D] */
    const float *o_scale;                       /* [N] */
    const int8_t *w1, *w3;                      /* [F, N] */
    const float *w1_scale, *w3_scale;           /* [F] */
    const int8_t *w2;                           /* [N, F] */
    const float *w2_scale;                      /* [N] */
} ft_llama_weights;

typedef struct ft_llama_config {
    ft_dtype dtype;
    int hidden;           /* N = H D */
    int heads, kv_heads;  /* H, Hkv (H % Hkv == 0) */
    int ffn;              /* F */
    float eps;            /* RMSNorm's */
    int rope;             /* ft_rope (FasterLLaMA: FT_ROPE_INTERLEAVED) */
    float rope_base;      /* 0: 10000 */
    const float *rope_table; /* [max_pos, D] from ft_rope_table, or NULL */
    int max_pos;
} ft_llama_config;

/* Where each buffer of one forward lives in the workspace. */
typedef struct ft_llama_buffers {
    int8_t *x8, *a8, *h8, *f8;
    float *s1, *s2, *s3, *s4;
    int32_t *acc, *acc3;
    char *q, *scores, *att, *h;
    int *lens;                  /* fused decode steps: [B] steps each sequence attends to */
    void *attn_ws;              /* fused decode steps: split-KV partials (scores: none) */
    size_t attn_ws_bytes;
} ft_llama_buffers;

/* Whether a forward of S tokens runs its attention as ft_cross_attention_decode (a
 * generation step at a generated head size) rather than GEMMs over a scores buffer. */
static inline int ft_llama_fused_decode(const ft_llama_config *c, int S)
{
    return S == 1 && ft_has_attention(c->dtype, c->hidden / c->heads);
}

/* Carves the workspace for B sequences of S tokens against caches of Lmax rows into b (base
 * NULL: sizes only); returns the bytes it needs. */
static inline size_t ft_llama_carve(const ft_llama_config *c, int B, int S, int Lmax, void *base,
                                    ft_llama_buffers *b)
{
    ft_ex_arena a = {(char *)base, 0};
    const size_t M = (size_t)B * S, N = (size_t)c->hidden, F = (size_t)c->ffn, es = ft_dtype_size(c->dtype);
    const size_t D = N / (size_t)c->heads, W = (size_t)(c->heads + 2 * c->kv_heads) * D;
    const size_t wide = W > F ? W : F;
    b->x8 = (int8_t *)ft_ex_take(&a, M * N);
    b->a8 = (int8_t *)ft_ex_take(&a, M * N);
    b->h8 = (int8_t *)ft_ex_take(&a, M * N);
    b->f8 = (int8_t *)ft_ex_take(&a, M * F);
    b->s1 = (float *)ft_ex_take(&a, M * 4);
    b->s2 = (float *)ft_ex_take(&a, M * 4);
    b->s3 = (float *)ft_ex_take(&a, M * 4);
    b->s4 = (float *)ft_ex_take(&a, M * 4);
    b->acc = (int32_t *)ft_ex_take(&a, M * wide * 4);
    b->acc3 = (int32_t *)ft_ex_take(&a, M * F * 4);
    b->q = (char *)ft_ex_take(&a, M * N * es);
    const int fused = ft_llama_fused_decode(c, S);
    b->scores = (char *)ft_ex_take(&a, fused ? 0 : (size_t)B * c->heads * S * (size_t)Lmax * es);
    b->att = (char *)ft_ex_take(&a, M * N * es);
    b->h = (char *)ft_ex_take(&a, M * N * es);
    b->lens = (int *)ft_ex_take(&a, (size_t)B * sizeof(int));
    b->attn_ws_bytes = fused ? ft_attention_workspace_bytes(B, c->heads, (int)D, FT_ATTN_MAX_SPLITS) : 0;
    b->attn_ws = ft_ex_take(&a, b->attn_ws_bytes);
    return a.used;
}

static inline size_t ft_llama_workspace_bytes(const ft_llama_config *c, int B, int S, int Lmax)
{
    ft_llama_buffers b;
    return ft_llama_carve(c, B, S, Lmax, NULL, &b);
}

/* x, y: [B S, N] (y may be x); k_cache, v_cache: [B, Hkv, Lmax, D], rows 0 .. start - 1
 * already filled (the tokens before), rows start .. start + S - 1 written here. */
static inline ft_status ft_llama_layer_forward(const ft_gemm_ctx *g, const ft_llama_config *c,
                                               const ft_llama_weights *w, const void *x, int B, int S, int start,
                                               void *k_cache, void *v_cache, int Lmax, void *workspace,
                                               size_t workspace_bytes, void *y, cudaStream_t stream)
{
    static const char fn[] = "ft_llama_layer_forward";
    if (!g || !c || !w || !x || !y || !k_cache || !v_cache || !workspace)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: a required pointer is NULL", fn);
    if (B <= 0 || S <= 0 || start < 0 || (int64_t)start + S > Lmax || c->heads <= 0 || c->kv_heads <= 0 ||
        c->heads % c->kv_heads || c->hidden % c->heads || c->ffn <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: bad sizes (B %d, S %d, start %d, Lmax %d, N %d, H %d, Hkv %d, F %d)", fn, B, S, start, Lmax,
                       c->hidden, c->heads, c->kv_heads, c->ffn);
    if (workspace_bytes < ft_llama_workspace_bytes(c, B, S, Lmax))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: workspace of %zu bytes, needs %zu", fn, workspace_bytes,
                       ft_llama_workspace_bytes(c, B, S, Lmax));
    ft_llama_buffers b;
    ft_llama_carve(c, B, S, Lmax, workspace, &b);
    const ft_dtype dt = c->dtype;
    const int M = B * S, N = c->hidden, F = c->ffn, H = c->heads, Hkv = c->kv_heads, D = N / H, G = H / Hkv;
    const int Wd = (H + 2 * Hkv) * D, L = start + S;

    /* attention block */
    FT_EX_TRY(ft_rmsnorm_quant(dt, x, w->gamma1, b.x8, b.s1, M, N, c->eps, stream));
    FT_EX_TRY(ft_gemm_int8(g, M, Wd, N, b.x8, w->w_qkv, b.acc, stream));
    ft_qkv_dequant_args_fp32 qa; /* every dtype's args struct has this layout */
    memset(&qa, 0, sizeof qa);
    qa.q = b.acc, qa.k = b.acc + H * D, qa.v = b.acc + (H + Hkv) * D, qa.ldq = qa.ldk = qa.ldv = Wd;
    qa.row_scale = b.s1, qa.q_scale = w->qkv_scale, qa.k_scale = w->qkv_scale + H * D;
    qa.v_scale = w->qkv_scale + (H + Hkv) * D;
    qa.rope = c->rope, qa.rope_base = c->rope_base, qa.rope_table = c->rope_table, qa.max_pos = c->max_pos;
    qa.start = start, qa.cache_len = Lmax;
    qa.q_out = (float *)b.q, qa.k_out = (float *)k_cache, qa.v_out = (float *)v_cache;
    qa.B = B, qa.S = S, qa.H = H, qa.Hkv = Hkv, qa.D = D;
    FT_EX_TRY(ft_qkv_dequant_rope(dt, &qa, stream));
    if (ft_llama_fused_decode(c, S)) {
        /* a decode step: q [B, H*D] against the L cached rows, the step's own among them */
        FT_EX_TRY(ft_ex_fill_int(b.lens, B, L, stream));
        ft_cross_attention_args ca;
        memset(&ca, 0, sizeof ca);
        ca.batch = B, ca.num_heads = H, ca.num_kv_heads = Hkv, ca.mem_len = Lmax, ca.max_mem_seq_len = L;
        ca.q = b.q, ca.k_mem = k_cache, ca.v_mem = v_cache, ca.layout = FT_KV_BHLD, ca.mem_lengths = b.lens;
        ca.out = b.att, ca.workspace = b.attn_ws, ca.workspace_bytes = b.attn_ws_bytes;
        FT_EX_TRY(ft_cross_attention_decode(dt, D, &ca, stream));
    } else {
        /* per (sequence, kv head): its G heads' S query rows [G S, D] against the cache's L rows */
        FT_EX_TRY(ft_gemm_strided_batched(g, dt, 0, 1, G * S, L, D, 1.0f, b.q, D, (int64_t)G * S * D, k_cache, D,
                                          (int64_t)Lmax * D, 0.0f, b.scores, L, (int64_t)G * S * L, B * Hkv, stream));
        FT_EX_TRY(ft_causal_softmax(dt, b.scores, b.scores, NULL, L, 0, B, H, S, L, 1, 1.0f / sqrtf((float)D), stream));
        FT_EX_TRY(ft_gemm_strided_batched(g, dt, 0, 0, G * S, D, L, 1.0f, b.scores, L, (int64_t)G * S * L, v_cache, D,
                                          (int64_t)Lmax * D, 0.0f, b.att, D, (int64_t)G * S * D, B * Hkv, stream));
    }
    FT_EX_TRY(ft_attn_quant_transpose(dt, b.att, b.a8, b.s2, B, H, S, D, 1, stream));
    FT_EX_TRY(ft_gemm_int8(g, M, N, N, b.a8, w->w_o, b.acc, stream));
    FT_EX_TRY(ft_dequant_residual_rmsnorm_quant(dt, b.acc, b.s2, w->o_scale, x, w->gamma2, b.h, b.h8, b.s3, M, N,
                                                c->eps, stream));
    /* FFN */
    FT_EX_TRY(ft_gemm_int8(g, M, F, N, b.h8, w->w1, b.acc, stream));
    FT_EX_TRY(ft_gemm_int8(g, M, F, N, b.h8, w->w3, b.acc3, stream));
    FT_EX_TRY(ft_dequant_silu_mul_quant(b.acc, b.acc3, b.s3, w->w1_scale, w->w3_scale, b.f8, b.s4, M, F, stream));
    FT_EX_TRY(ft_gemm_int8(g, M, N, F, b.f8, w->w2, b.acc, stream));
    return ft_dequant_residual(dt, b.acc, b.s4, w->w2_scale, b.h, y, M, N, stream);
}

#endif /* FT_EXAMPLE_LLAMA_LAYER_CUH */
