/* Example: one BERT encoder layer composed from ftkernels launchers and cuBLAS GEMMs —
 * FasterTransformer v1.0's 14 steps (seed 001 §3), optionally with v2.1's padding removal
 * (seed 003 §3). fp32, fp16 or bf16, chosen at run time.
 *
 *   1-3  [Q K V] = x [Wq Wk Wv]          one GEMM against the fused [N, 3N] weight
 *   4    add Q/K/V bias, [B,S,N] -> [B,H,S,D]    (rebuild padding when packed)
 *   5    scores = Q K^T per (b, h)       strided-batched GEMM
 *   6    masked softmax (scale 1/sqrt(D), mask from lengths: keep i,j < len)
 *   7    context = P V per (b, h)        strided-batched GEMM
 *   8    [B,H,S,D] -> [B,S,N]            (remove padding when packed)
 *   9    attn = context Wo
 *   10   h1 = LayerNorm(attn + bo + x)
 *   11   inter = h1 W1
 *   12   inter = gelu(inter + b1)         in the GEMM's cuBLASLt epilogue (with ctx->lt;
 *                                        else ft_add_bias_act after it)
 *   13   out = inter W2
 *   14   y = LayerNorm(out + b2 + h1)
 *
 * With remove_padding, the rows of x past each sequence's length are dropped before step
 * 1 (ft_remove_padding), every row-wise step runs on the valid rows only, and y gets them
 * back with zero padding rows (ft_rebuild_padding). Steps 4-8 then are one launch,
 * ft_packed_attention (attention over the packed rows, bias added as it reads them, tensor
 * cores), for fp16/bf16 and head sizes it has (ft_has_packed_attention); otherwise they run
 * on the padded [B,H,S,D] layout as above (rebuild padding in 4, remove it in 8). Valid rows
 * of y agree between the modes; padding rows of y are zero with remove_padding and
 * computed (and meaningless) without.
 *
 * Weights are row-major [in, out] (x W), as FasterTransformer stores them. This header is
 * the proof that the launchers compose; it is built and tested (tests/test_layers.cu) and
 * benchmarked (ftbench bert_layer). */
#ifndef FT_EXAMPLE_BERT_LAYER_CUH
#define FT_EXAMPLE_BERT_LAYER_CUH

#include <math.h>

#include "ft/attention.cuh"
#include "ft/encoder.cuh"
#include "ft/gemm.cuh"
#include "ft/norm.cuh"
#include "ft/padding.cuh"

#include "example_common.cuh"

typedef struct ft_bert_weights {
    const void *w_qkv;                 /* [N, 3N]: Q, K, V projections side by side */
    const void *b_qkv;                 /* [3N] */
    const void *w_out, *b_out;         /* [N, N], [N] */
    const void *ln1_gamma, *ln1_beta;  /* [N] */
    const void *w_ffn1, *b_ffn1;       /* [N, F], [F] */
    const void *w_ffn2, *b_ffn2;       /* [F, N], [N] */
    const void *ln2_gamma, *ln2_beta;  /* [N] */
} ft_bert_weights;

typedef struct ft_bert_config {
    ft_dtype dtype;
    int hidden;         /* N */
    int heads;          /* H; D = N / H */
    int ffn;            /* F */
    float eps;          /* layernorm epsilon */
    int remove_padding; /* run the row-wise steps on the valid rows only */
} ft_bert_config;

/* Where each buffer of the forward pass lives in the workspace. */
typedef struct ft_bert_buffers {
    int *seq_offsets;
    char *xp, *qkv, *heads, *scores, *ctx_h, *ctx, *attn, *h1, *inter, *out, *yp;
} ft_bert_buffers;

/* Whether steps 4-8 run as one ft_packed_attention launch (remove_padding, and a dtype and
 * head size that have it) rather than on the padded [B,H,S,D] layout. */
static inline int ft_bert_packed_attention(const ft_bert_config *c)
{
    return c->remove_padding && c->heads > 0 && c->hidden % c->heads == 0 &&
           ft_has_packed_attention(c->dtype, c->hidden / c->heads);
}

/* Carves the workspace for up to B sequences of S tokens into b (base NULL: sizes only);
 * returns the bytes it needs. */
static inline size_t ft_bert_carve(const ft_bert_config *c, int B, int S, void *base, ft_bert_buffers *b)
{
    const size_t es = ft_dtype_size(c->dtype), M = (size_t)B * S, N = (size_t)c->hidden;
    ft_ex_arena a = {(char *)base, 0};
    b->seq_offsets = (int *)ft_ex_take(&a, (size_t)(B + 1) * sizeof(int));
    b->xp = (char *)ft_ex_take(&a, M * N * es);                          /* packed x */
    b->qkv = (char *)ft_ex_take(&a, 3 * M * N * es);                     /* [Q K V] projection rows */
    /* the padded attention's buffers; packed attention needs none of them */
    const int padded = !ft_bert_packed_attention(c);
    b->heads = (char *)ft_ex_take(&a, padded ? 3 * M * N * es : 0);           /* Q, K, V per head */
    b->scores = (char *)ft_ex_take(&a, padded ? (size_t)B * c->heads * S * S * es : 0);
    b->ctx_h = (char *)ft_ex_take(&a, padded ? M * N * es : 0);               /* context per head */
    b->ctx = (char *)ft_ex_take(&a, M * N * es);                         /* context rows */
    b->attn = (char *)ft_ex_take(&a, M * N * es);                        /* attention output */
    b->h1 = (char *)ft_ex_take(&a, M * N * es);
    b->inter = (char *)ft_ex_take(&a, M * (size_t)c->ffn * es);          /* FFN inner */
    b->out = (char *)ft_ex_take(&a, M * N * es);                         /* FFN output */
    b->yp = (char *)ft_ex_take(&a, M * N * es);                          /* packed y */
    return a.used;
}

/* Device workspace the forward pass needs for up to B sequences of S tokens. */
static inline size_t ft_bert_workspace_bytes(const ft_bert_config *c, int B, int S)
{
    ft_bert_buffers b;
    return ft_bert_carve(c, B, S, NULL, &b);
}

/* x, y: [B, S, N] device; lengths: [B] int32 device (NULL: every sequence has S tokens;
 * required with remove_padding). valid_tokens: with remove_padding, the sum of the
 * lengths (each clamped to [0, S]) if the caller knows it on the host, or -1 to have it
 * copied back from the device (one synchronising copy). */
static inline ft_status ft_bert_layer_forward(const ft_gemm_ctx *g, const ft_bert_config *c, const ft_bert_weights *w,
                                              const void *x, const int *lengths, int B, int S, int valid_tokens,
                                              void *y, void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    static const char fn[] = "ft_bert_layer_forward";
    if (!c || !w || !g)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: config, weights and gemm context are required", fn);
    const ft_dtype dt = c->dtype;
    const int N = c->hidden, H = c->heads, F = c->ffn;
    if (B <= 0 || S <= 0 || N <= 0 || H <= 0 || F <= 0 || N % H)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: need B, S, N, H, F > 0 and N %% H == 0 (got %d %d %d %d %d)", fn,
                       B, S, N, H, F);
    if (c->remove_padding && !lengths)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: remove_padding needs lengths", fn);
    const size_t need = ft_bert_workspace_bytes(c, B, S);
    if (!workspace || workspace_bytes < need)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: workspace of %zu bytes needed (ft_bert_workspace_bytes), got %zu",
                       fn, need, workspace ? workspace_bytes : (size_t)0);
    if (!x || !y)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: x and y are required", fn);

    const size_t es = ft_dtype_size(dt), M0 = (size_t)B * S;
    const int D = N / H;
    ft_bert_buffers bb;
    ft_bert_carve(c, B, S, workspace, &bb);
    int *seq_offsets = bb.seq_offsets;
    char *xp = bb.xp, *qkv = bb.qkv, *heads = bb.heads, *scores = bb.scores, *ctx_h = bb.ctx_h, *ctx = bb.ctx;
    char *attn = bb.attn, *h1 = bb.h1, *inter = bb.inter, *out = bb.out, *yp = bb.yp;

    /* rows the row-wise steps run on */
    int M = B * S;
    const void *xin = x;
    void *yout = y;
    if (c->remove_padding) {
        FT_EX_TRY(ft_padding_offsets(lengths, B, S, seq_offsets, NULL, stream));
        if (valid_tokens < 0) {
            cudaError_t e = cudaMemcpyAsync(&valid_tokens, seq_offsets + B, sizeof(int), cudaMemcpyDeviceToHost, stream);
            if (e == cudaSuccess)
                e = cudaStreamSynchronize(stream);
            if (e != cudaSuccess)
                return ft_fail(FT_ERR_CUDA, "%s: reading the valid token count: %s", fn, cudaGetErrorString(e));
        }
        if (valid_tokens > B * S)
            return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: valid_tokens %d exceeds B*S = %d", fn, valid_tokens, B * S);
        M = valid_tokens;
        FT_EX_TRY(ft_remove_padding(dt, x, xp, seq_offsets, B, S, N, stream));
        xin = xp;
        yout = yp;
    }
    char *q_h = heads, *k_h = heads + M0 * N * es, *v_h = heads + 2 * M0 * N * es;

    if (M > 0) /* 1-3: [M, 3N] = x [M, N] * W_qkv [N, 3N] */
        FT_EX_TRY(ft_gemm(g, dt, 0, 0, M, 3 * N, N, 1.0f, xin, N, w->w_qkv, 3 * N, 0.0f, qkv, 3 * N, stream));
    const float scale = 1.0f / sqrtf((float)D);
    if (ft_bert_packed_attention(c)) {
        /* 4-8 in one: [M, N] context rows from the packed [M, 3N] projection */
        ft_packed_attention_args pa;
        memset(&pa, 0, sizeof pa);
        pa.batch = B;
        pa.num_heads = H;
        pa.num_kv_heads = H;
        pa.max_seq_len = S;
        pa.seq_offsets = seq_offsets;
        pa.qkv = qkv;
        pa.qkv_bias = w->b_qkv;
        pa.out = ctx;
        pa.scale = scale;
        FT_EX_TRY(ft_packed_attention(dt, D, &pa, stream));
    } else {
        /* 4 */
        if (c->remove_padding)
            FT_EX_TRY(ft_add_fused_qkv_bias_rebuild_padding(dt, qkv, w->b_qkv, q_h, k_h, v_h, seq_offsets, B, S, H,
                                                            D, stream));
        else
            FT_EX_TRY(ft_add_fused_qkv_bias_transpose(dt, qkv, w->b_qkv, q_h, k_h, v_h, B, S, H, D, stream));
        /* 5: scores [S, S] = Q [S, D] K^T per (b, h) */
        FT_EX_TRY(ft_gemm_strided_batched(g, dt, 0, 1, S, S, D, 1.0f, q_h, D, (int64_t)S * D, k_h, D,
                                          (int64_t)S * D, 0.0f, scores, S, (int64_t)S * S, B * H, stream));
        /* 6 */
        FT_EX_TRY(ft_masked_softmax(dt, scores, NULL, lengths, B, H, S, scale, stream));
        /* 7: context [S, D] = P [S, S] V [S, D] */
        FT_EX_TRY(ft_gemm_strided_batched(g, dt, 0, 0, S, D, S, 1.0f, scores, S, (int64_t)S * S, v_h, D,
                                          (int64_t)S * D, 0.0f, ctx_h, D, (int64_t)S * D, B * H, stream));
        /* 8 */
        if (c->remove_padding)
            FT_EX_TRY(ft_transpose_remove_padding(dt, ctx_h, ctx, seq_offsets, B, S, H, D, stream));
        else
            FT_EX_TRY(ft_transpose_heads(dt, ctx_h, ctx, B, S, H, D, stream));
    }
    if (M > 0) {
        /* 9, 10 */
        FT_EX_TRY(ft_gemm(g, dt, 0, 0, M, N, N, 1.0f, ctx, N, w->w_out, N, 0.0f, attn, N, stream));
        FT_EX_TRY(ft_add_bias_residual_layernorm(dt, attn, xin, w->b_out, w->ln1_gamma, w->ln1_beta, h1, NULL, M, N,
                                                 c->eps, stream));
        /* 11, 12 */
        FT_EX_TRY(ft_ex_linear_act(g, dt, M, F, N, h1, w->w_ffn1, w->b_ffn1, FT_ACT_GELU, inter, stream));
        /* 13, 14 */
        FT_EX_TRY(ft_gemm(g, dt, 0, 0, M, N, F, 1.0f, inter, F, w->w_ffn2, N, 0.0f, out, N, stream));
        FT_EX_TRY(ft_add_bias_residual_layernorm(dt, out, h1, w->b_ffn2, w->ln2_gamma, w->ln2_beta, yout, NULL, M, N,
                                                 c->eps, stream));
    }
    if (c->remove_padding)
        FT_EX_TRY(ft_rebuild_padding(dt, yp, y, seq_offsets, B, S, N, stream));
    return FT_OK;
}

#endif /* FT_EXAMPLE_BERT_LAYER_CUH */
