/* Example: one step of FasterTransformer v2.0's decoder layer (seed 000 §3.2) composed
 * from ftkernels launchers and cuBLAS GEMMs, for a batch of sequences that may be at
 * different steps. fp32, fp16 or bf16, chosen at run time.
 *
 *   n1   = LayerNorm(x)                                       decoder_norm1
 *   q,k,v = n1 W_qkv                                          one strided-batched GEMM
 *   a    = masked self-attention (q/k/v bias, append k/v to the cache)
 *   s1   = a Wo + bo + x ;  n2 = LayerNorm(s1)                decoder_norm2 (two outputs)
 *   c    = cross attention (n2 Wq + bq) against the encoder memory
 *   s2   = c Wco + bco + s1 ;  n3 = LayerNorm(s2)             decoder_norm2
 *   y    = relu(n3 W1 + b1) W2 + b2 + s2                      ffn (bias and relu in the
 *                                                              first GEMM's epilogue), add_bias_input
 *
 * The memory's K/V projections (and their bias) are computed once per sequence batch by
 * ft_decoder_prepare_memory, not on "step 1" inside the step as in the seed. The self
 * cache is [Lmax, B, N] (FasterTransformer) or [B, H, Lmax, D]; lengths[b] is the number
 * of steps sequence b has cached (the step writes position lengths[b]; the caller
 * advances lengths after the step, as for ft_masked_self_attention_decode).
 *
 * Weights are row-major [in, out]. Built and tested by tests/test_layers.cu, benchmarked
 * by ftbench decoder_layer. */
#ifndef FT_EXAMPLE_DECODER_LAYER_CUH
#define FT_EXAMPLE_DECODER_LAYER_CUH

#include "ft/attention.cuh"
#include "ft/gemm.cuh"
#include "ft/norm.cuh"

#include "example_common.cuh"

typedef struct ft_decoder_weights {
    const void *ln1_gamma, *ln1_beta;             /* [N] self_layernorm */
    const void *w_qkv, *b_qkv;                    /* [3, N, N], [3N] */
    const void *w_self_out, *b_self_out;          /* [N, N], [N] */
    const void *ln2_gamma, *ln2_beta;             /* [N] cross_layernorm */
    const void *w_cross_q, *b_cross_q;            /* [N, N], [N] */
    const void *w_cross_k, *b_cross_k;            /* [Nmem, N], [N] */
    const void *w_cross_v, *b_cross_v;            /* [Nmem, N], [N] */
    const void *w_cross_out, *b_cross_out;        /* [N, N], [N] */
    const void *ln3_gamma, *ln3_beta;             /* [N] ffn_layernorm */
    const void *w_ffn1, *b_ffn1;                  /* [N, F], [F] */
    const void *w_ffn2, *b_ffn2;                  /* [F, N], [N] */
} ft_decoder_weights;

typedef struct ft_decoder_config {
    ft_dtype dtype;
    int hidden;     /* N */
    int heads;      /* H; D = N / H must be a generated attention head size */
    int ffn;        /* F (4N in the seed) */
    int mem_hidden; /* Nmem: width of the encoder output */
    float eps;
} ft_decoder_config;

/* Encoder memory [B, Lmem, Nmem] -> k_mem, v_mem [B, Lmem, N] (with bias), once per batch. */
static inline ft_status ft_decoder_prepare_memory(const ft_gemm_ctx *g, const ft_decoder_config *c,
                                                  const ft_decoder_weights *w, const void *memory, int B, int mem_len,
                                                  void *k_mem, void *v_mem, cudaStream_t stream)
{
    static const char fn[] = "ft_decoder_prepare_memory";
    if (!c || !w || !g || B <= 0 || mem_len <= 0 || c->heads <= 0 || c->hidden % c->heads)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: bad config or sizes", fn);
    const int N = c->hidden, rows = B * mem_len;
    FT_EX_TRY(ft_gemm(g, c->dtype, 0, 0, rows, N, c->mem_hidden, 1.0f, memory, c->mem_hidden, w->w_cross_k, N, 0.0f,
                      k_mem, N, stream));
    FT_EX_TRY(ft_gemm(g, c->dtype, 0, 0, rows, N, c->mem_hidden, 1.0f, memory, c->mem_hidden, w->w_cross_v, N, 0.0f,
                      v_mem, N, stream));
    return ft_add_memory_bias(c->dtype, N / c->heads, k_mem, w->b_cross_k, v_mem, w->b_cross_v, B, c->heads, mem_len,
                              FT_KV_BLHD, stream);
}

/* Where each buffer of one step lives in the workspace. */
typedef struct ft_decoder_buffers {
    char *n1, *qkv, *att, *m, *s1, *n2, *qc, *cx, *c2, *s2, *n3, *out, *inter;
    void *attn_ws; /* split-KV partials of both attentions */
    size_t attn_ws_bytes;
} ft_decoder_buffers;

/* Carves the workspace for a batch of B into b (base NULL: sizes only); returns the
 * bytes it needs. */
static inline size_t ft_decoder_carve(const ft_decoder_config *c, int B, void *base, ft_decoder_buffers *b)
{
    const size_t es = ft_dtype_size(c->dtype), BN = (size_t)B * c->hidden;
    ft_ex_arena a = {(char *)base, 0};
    char **rows[] = {&b->n1, &b->att, &b->m, &b->s1, &b->n2, &b->qc, &b->cx, &b->c2, &b->s2, &b->n3, &b->out};
    b->qkv = (char *)ft_ex_take(&a, 3 * BN * es); /* [3, B, N] */
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        *rows[i] = (char *)ft_ex_take(&a, BN * es);
    b->inter = (char *)ft_ex_take(&a, (size_t)B * c->ffn * es);
    b->attn_ws_bytes = ft_attention_workspace_bytes(B, c->heads, c->hidden / c->heads, FT_ATTN_MAX_SPLITS);
    b->attn_ws = ft_ex_take(&a, b->attn_ws_bytes);
    return a.used;
}

static inline size_t ft_decoder_workspace_bytes(const ft_decoder_config *c, int B)
{
    ft_decoder_buffers b;
    return ft_decoder_carve(c, B, NULL, &b);
}

/* x, y: [B, N]. k_cache, v_cache: the self-attention cache (layout, capacity max_len);
 * lengths: [B] int32 device, steps cached per sequence; cache_indirection: NULL, or the
 * beam-search table of ft_self_attention_args (beam_width rows per item). k_mem, v_mem:
 * [B, mem_len, N] from ft_decoder_prepare_memory; mem_lengths: [B] int32 device. */
static inline ft_status ft_decoder_layer_step(const ft_gemm_ctx *g, const ft_decoder_config *c,
                                              const ft_decoder_weights *w, const void *x, void *k_cache,
                                              void *v_cache, ft_kv_layout layout, int max_len, const int *lengths,
                                              const int *cache_indirection, int beam_width,
                                              const void *k_mem, const void *v_mem, int mem_len,
                                              const int *mem_lengths, int B, void *y, void *workspace,
                                              size_t workspace_bytes, cudaStream_t stream)
{
    static const char fn[] = "ft_decoder_layer_step";
    if (!c || !w || !g)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: config, weights and gemm context are required", fn);
    const ft_dtype dt = c->dtype;
    const int N = c->hidden, H = c->heads, F = c->ffn;
    if (B <= 0 || N <= 0 || H <= 0 || F <= 0 || N % H)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: need B, N, H, F > 0 and N %% H == 0", fn);
    const size_t need = ft_decoder_workspace_bytes(c, B);
    if (!workspace || workspace_bytes < need)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: workspace of %zu bytes needed (ft_decoder_workspace_bytes), got %zu",
                       fn, need, workspace ? workspace_bytes : (size_t)0);
    const int D = N / H;
    const size_t es = ft_dtype_size(dt), BN = (size_t)B * N;
    ft_decoder_buffers bb;
    ft_decoder_carve(c, B, workspace, &bb);
    char *n1 = bb.n1, *qkv = bb.qkv, *att = bb.att, *m = bb.m, *s1 = bb.s1, *n2 = bb.n2, *qc = bb.qc, *cx = bb.cx;
    char *c2 = bb.c2, *s2 = bb.s2, *n3 = bb.n3, *out = bb.out, *inter = bb.inter;
    void *attn_workspace = bb.attn_ws;
    const size_t attn_ws = bb.attn_ws_bytes;
    const char *b_qkv = (const char *)w->b_qkv;

    /* masked self-attention */
    FT_EX_TRY(ft_layernorm(dt, x, w->ln1_gamma, w->ln1_beta, n1, B, N, c->eps, stream));
    FT_EX_TRY(ft_gemm_strided_batched(g, dt, 0, 0, B, N, N, 1.0f, n1, N, 0, w->w_qkv, N, (int64_t)N * N, 0.0f, qkv, N,
                                      (int64_t)BN, 3, stream));
    ft_self_attention_args sa;
    memset(&sa, 0, sizeof sa);
    sa.batch = B, sa.num_heads = H, sa.num_kv_heads = H, sa.max_len = max_len;
    sa.q = qkv, sa.k = qkv + BN * es, sa.v = qkv + 2 * BN * es;
    sa.q_bias = b_qkv, sa.k_bias = b_qkv ? b_qkv + N * es : NULL, sa.v_bias = b_qkv ? b_qkv + 2 * N * es : NULL;
    sa.k_cache = k_cache, sa.v_cache = v_cache, sa.layout = layout, sa.lengths = lengths;
    sa.out = att, sa.workspace = attn_workspace, sa.workspace_bytes = attn_ws;
    sa.cache_indirection = cache_indirection, sa.beam_width = beam_width;
    FT_EX_TRY(ft_masked_self_attention_decode(dt, D, &sa, stream));
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, N, N, 1.0f, att, N, w->w_self_out, N, 0.0f, m, N, stream));
    FT_EX_TRY(ft_add_bias_residual_layernorm(dt, m, x, w->b_self_out, w->ln2_gamma, w->ln2_beta, n2, s1, B, N, c->eps,
                                             stream));
    /* cross attention */
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, N, N, 1.0f, n2, N, w->w_cross_q, N, 0.0f, qc, N, stream));
    ft_cross_attention_args ca;
    memset(&ca, 0, sizeof ca);
    ca.batch = B, ca.num_heads = H, ca.num_kv_heads = H, ca.mem_len = mem_len;
    ca.q = qc, ca.q_bias = w->b_cross_q, ca.k_mem = k_mem, ca.v_mem = v_mem, ca.layout = FT_KV_BLHD;
    ca.mem_lengths = mem_lengths, ca.out = cx, ca.workspace = attn_workspace, ca.workspace_bytes = attn_ws;
    FT_EX_TRY(ft_cross_attention_decode(dt, D, &ca, stream));
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, N, N, 1.0f, cx, N, w->w_cross_out, N, 0.0f, c2, N, stream));
    FT_EX_TRY(ft_add_bias_residual_layernorm(dt, c2, s1, w->b_cross_out, w->ln3_gamma, w->ln3_beta, n3, s2, B, N,
                                             c->eps, stream));
    /* FFN */
    FT_EX_TRY(ft_ex_linear_act(g, dt, B, F, N, n3, w->w_ffn1, w->b_ffn1, FT_ACT_RELU, inter, stream));
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, N, F, 1.0f, inter, F, w->w_ffn2, N, 0.0f, out, N, stream));
    return ft_add_bias_residual(dt, out, s2, w->b_ffn2, y, B, N, stream);
}

#endif /* FT_EXAMPLE_DECODER_LAYER_CUH */
