/* Example: FasterTransformer v2.0/v2.1's decoding loop (seed 000 §4) composed from
 * ftkernels launchers and cuBLAS GEMMs: beam search (beam = 1 is greedy search) over a
 * stack of decoder layers (examples/decoder_layer.cuh) attending to encoder memory.
 *
 *   ids = start_id; cum_log_probs = 0 for beam 0, -1e20 for the others    ft_init_decoding
 *   for step t:
 *     x = embedding[ids] * sqrt(N) + sine position t                       ft_embedding_lookup
 *     x = decoder layer l (x) for every layer, self cache appended at t   ft_decoder_layer_step
 *     logits = LayerNorm(x) W_logits                                      ft_layernorm, ft_gemm
 *     log_probs = log_softmax(logits + b), finished rows -> end_id         ft_update_logits
 *     best beam of beam*V (cum added while reading), new beams            ft_beam_topk, ft_beam_update
 *     K/V caches gathered by parent into the other buffer                  ft_kv_cache_reorder
 *       (or, with cache_indirection, only a table of which beam's row holds each step:
 *       the attention reads through it and no cache moves)              ft_cache_indirection_update
 *     stop when every row is finished (one int read back per step)         ft_count_finished
 *   sequences = ids traced back through the parents                        ft_beam_gather_tree
 *
 * Rows are R = B*beam (beam i of item b is row b*beam + i); the encoder memory is given per
 * row ([R, Lmem, Nmem], each item's memory repeated beam times, as FasterTransformer tiles
 * it). The self caches are [max_len, R, N] (FasterTransformer's layout), two buffers per
 * layer for the reorder, or one and two [R, max_len] tables with cache_indirection.
 * Everything lives in one workspace carved by ft_decoding_carve. */
#ifndef FT_EXAMPLE_DECODING_CUH
#define FT_EXAMPLE_DECODING_CUH

#include <math.h>

#include "ft/decoding.cuh"
#include "ft/search.cuh"
#include "ft/topk.cuh"

#include "decoder_layer.cuh"

typedef struct ft_decoding_config {
    ft_decoder_config layer; /* dtype, N, H, F, Nmem, eps of every decoder layer */
    int layers, vocab, beam;
    int max_len; /* most steps a run may take */
    int start_id, end_id;
    int cache_indirection; /* beam > 1: 1 reads the caches through indirection tables, 0 reorders them */
} ft_decoding_config;

typedef struct ft_decoding_weights {
    const void *embedding;           /* [V, N] */
    const ft_decoder_weights *layer; /* [layers] */
    const void *ln_gamma, *ln_beta;  /* [N] decoder_norm after the last layer */
    const void *w_logits, *b_logits; /* [N, V], [V] */
} ft_decoding_weights;

typedef struct ft_decoding_buffers {
    char *x[2], *normed, *logits, *k_mem, *v_mem, *cache[2][2]; /* cache[buffer][k or v] */
    float *log_probs, *cum, *cand_values;
    int *cand_ids, *word, *parent, *lengths, *steps_cached, *history, *parents, *count, *indir[2];
    bool *finished;
    void *layer_ws, *topk_ws, *logits_ws;
    size_t layer_ws_bytes, topk_ws_bytes, logits_ws_bytes;
} ft_decoding_buffers;

/* Carves the workspace for B items and memory length mem_len (base NULL: sizes only);
 * returns the bytes it needs. */
static inline size_t ft_decoding_carve(const ft_decoding_config *c, int B, int mem_len, void *base,
                                       ft_decoding_buffers *b)
{
    const ft_dtype dt = c->layer.dtype;
    const size_t es = ft_dtype_size(dt), R = (size_t)B * c->beam, N = c->layer.hidden, V = c->vocab;
    const size_t L = c->layers, T = c->max_len;
    ft_ex_arena a = {(char *)base, 0};
    b->x[0] = (char *)ft_ex_take(&a, R * N * es);
    b->x[1] = (char *)ft_ex_take(&a, R * N * es);
    b->normed = (char *)ft_ex_take(&a, R * N * es);
    b->logits = (char *)ft_ex_take(&a, R * V * es);
    b->k_mem = (char *)ft_ex_take(&a, L * R * mem_len * N * es);
    b->v_mem = (char *)ft_ex_take(&a, L * R * mem_len * N * es);
    const int indirect = c->cache_indirection && c->beam > 1;
    for (int i = 0; i < 2; i++)
        for (int kv = 0; kv < 2; kv++) /* one buffer of each when the tables stand in for the reorder */
            b->cache[i][kv] = i && indirect ? b->cache[0][kv] : (char *)ft_ex_take(&a, L * T * R * N * es);
    for (int i = 0; i < 2; i++)
        b->indir[i] = indirect ? (int *)ft_ex_take(&a, R * T * sizeof(int)) : NULL;
    b->log_probs = (float *)ft_ex_take(&a, R * V * sizeof(float));
    b->cum = (float *)ft_ex_take(&a, R * sizeof(float));
    b->cand_values = (float *)ft_ex_take(&a, R * sizeof(float));
    b->cand_ids = (int *)ft_ex_take(&a, R * sizeof(int));
    b->word = (int *)ft_ex_take(&a, R * sizeof(int));
    b->parent = (int *)ft_ex_take(&a, R * sizeof(int));
    b->lengths = (int *)ft_ex_take(&a, R * sizeof(int));
    b->steps_cached = (int *)ft_ex_take(&a, (T + 1) * R * sizeof(int));
    b->history = (int *)ft_ex_take(&a, T * R * sizeof(int));
    b->parents = (int *)ft_ex_take(&a, T * R * sizeof(int));
    b->count = (int *)ft_ex_take(&a, sizeof(int));
    b->finished = (bool *)ft_ex_take(&a, R);
    b->layer_ws_bytes = ft_decoder_workspace_bytes(&c->layer, (int)R);
    b->layer_ws = ft_ex_take(&a, b->layer_ws_bytes);
    b->topk_ws_bytes = ft_topk_workspace_bytes(FT_FP32, (int)R, c->beam, (int)V, c->beam);
    b->topk_ws = ft_ex_take(&a, b->topk_ws_bytes);
    b->logits_ws_bytes = ft_update_logits_workspace_bytes(dt, (int)R, (int)V);
    b->logits_ws = ft_ex_take(&a, b->logits_ws_bytes);
    return a.used;
}

static inline size_t ft_decoding_workspace_bytes(const ft_decoding_config *c, int B, int mem_len)
{
    ft_decoding_buffers b;
    return ft_decoding_carve(c, B, mem_len, NULL, &b);
}

/* steps_cached[t*R + r] = t: the decoder layers' per-row cache lengths at step t. */
static __global__ void ft_decoding_step_table(int *table, int R, int steps)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (steps + 1) * R; i += gridDim.x * blockDim.x)
        table[i] = i / R;
}

/* memory: [R, mem_len, Nmem], mem_lengths: [R] device. Runs up to `steps` (<= max_len)
 * steps, fewer when every row finishes; *steps_run says how many. out_ids: device, at
 * least R*steps ints, written as [R, *steps_run]: row b*beam + i is the whole sequence of
 * final beam i of item b, best beam first; lengths: [R] device or NULL, generated tokens
 * per final beam (the end token counted); cum_log_probs: [R] device or NULL, their
 * scores. Synchronises the stream once per step (the finished count). */
static inline ft_status ft_decoding_run(const ft_gemm_ctx *g, const ft_decoding_config *c,
                                        const ft_decoding_weights *w, const void *memory, int mem_len,
                                        const int *mem_lengths, int B, int steps, int *out_ids, int *lengths,
                                        float *cum_log_probs, int *steps_run, void *workspace,
                                        size_t workspace_bytes, cudaStream_t stream)
{
    static const char fn[] = "ft_decoding_run";
    if (!g || !c || !w || !memory || !mem_lengths || !out_ids || !steps_run)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: gemm context, config, weights, memory and outputs are required",
                       fn);
    const ft_dtype dt = c->layer.dtype;
    const int N = c->layer.hidden, V = c->vocab, beam = c->beam, R = B * beam, L = c->layers;
    if (B <= 0 || beam <= 0 || L <= 0 || V <= 0 || N <= 0 || steps <= 0 || steps > c->max_len || mem_len <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: need B, beam, layers, vocab, N, mem_len > 0 and 0 < steps <= max_len",
                       fn);
    const size_t need = ft_decoding_workspace_bytes(c, B, mem_len);
    if (!workspace || workspace_bytes < need)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: workspace of %zu bytes needed (ft_decoding_workspace_bytes), got %zu",
                       fn, need, workspace ? workspace_bytes : (size_t)0);
    ft_decoding_buffers b;
    ft_decoding_carve(c, B, mem_len, workspace, &b);
    const size_t es = ft_dtype_size(dt);
    const size_t mem_stride = (size_t)R * mem_len * N * es, cache_stride = (size_t)c->max_len * R * N * es;
    *steps_run = 0;

    /* the memory's K/V once per layer; the decoding state; the per-step cache lengths */
    for (int l = 0; l < L; l++)
        FT_EX_TRY(ft_decoder_prepare_memory(g, &c->layer, &w->layer[l], memory, R, mem_len, b.k_mem + l * mem_stride,
                                            b.v_mem + l * mem_stride, stream));
    FT_EX_TRY(ft_init_decoding(b.finished, b.lengths, b.word, b.cum, B, beam, c->start_id, stream));
    ft_decoding_step_table<<<(c->max_len + 1) * R / 256 + 1, 256, 0, stream>>>(b.steps_cached, R, c->max_len);
    FT_EX_TRY(ft_launch_status(fn));
    /* update_logits' workspace starts zeroed (its stream form keeps a launch counter there) */
    if (b.logits_ws_bytes && cudaMemsetAsync(b.logits_ws, 0, b.logits_ws_bytes, stream) != cudaSuccess)
        return ft_fail(FT_ERR_CUDA, "%s: clearing the logits workspace failed", fn);

    int cur = 0, t = 0;
    for (; t < steps; t++) {
        FT_EX_TRY(ft_embedding_lookup(dt, w->embedding, V, N, b.word, R, 1, t, NULL, sqrtf((float)N), NULL, 0, 1,
                                      b.x[0], stream));
        int xi = 0;
        for (int l = 0; l < L; l++, xi ^= 1)
            FT_EX_TRY(ft_decoder_layer_step(g, &c->layer, &w->layer[l], b.x[xi], b.cache[cur][0] + l * cache_stride,
                                            b.cache[cur][1] + l * cache_stride, FT_KV_LBHD, c->max_len,
                                            b.steps_cached + (size_t)t * R, b.indir[cur], beam, b.k_mem + l * mem_stride,
                                            b.v_mem + l * mem_stride, mem_len, mem_lengths, R, b.x[xi ^ 1],
                                            b.layer_ws, b.layer_ws_bytes, stream));
        FT_EX_TRY(ft_layernorm(dt, b.x[xi], w->ln_gamma, w->ln_beta, b.normed, R, N, c->layer.eps, stream));
        FT_EX_TRY(ft_gemm(g, dt, 0, 0, R, V, N, 1.0f, b.normed, N, w->w_logits, V, 0.0f, b.logits, V, stream));
        FT_EX_TRY(ft_update_logits(dt, b.logits, V, R, V, w->b_logits, b.finished, c->end_id, 1.0f, NULL,
                                   FT_LOGITS_LOG_SOFTMAX, b.log_probs, V, b.logits_ws, b.logits_ws_bytes, stream));
        FT_EX_TRY(ft_beam_topk(FT_FP32, b.log_probs, V, b.cum, B, beam, V, beam, b.cand_values, b.cand_ids, b.topk_ws,
                               b.topk_ws_bytes, stream));
        FT_EX_TRY(ft_beam_update(b.cand_values, b.cand_ids, beam, B, beam, V, c->end_id, b.cum, b.parent, b.word,
                                 b.history + (size_t)t * R, b.lengths, b.finished, stream));
        if (cudaMemcpyAsync(b.parents + (size_t)t * R, b.parent, R * sizeof(int), cudaMemcpyDeviceToDevice, stream) !=
            cudaSuccess)
            return ft_fail(FT_ERR_CUDA, "%s: copying the parent ids failed", fn);
        if (beam > 1 && b.indir[0]) { /* the rows read their parents' steps: steps 0..t of the table */
            FT_EX_TRY(ft_cache_indirection_update(t ? b.indir[cur] : NULL, b.indir[cur ^ 1], b.parent, B, beam,
                                                  c->max_len, t, stream));
            cur ^= 1;
        } else if (beam > 1) { /* the caches follow their beams: steps 0..t of every layer */
            for (int kv = 0; kv < 2; kv++)
                FT_EX_TRY(ft_kv_cache_reorder(b.cache[cur][kv], b.cache[cur ^ 1][kv], b.parent, L, FT_KV_LBHD, B, beam,
                                              c->layer.heads, c->max_len, N / c->layer.heads, (int)es, t + 1, stream));
            cur ^= 1;
        }
        FT_EX_TRY(ft_count_finished(b.finished, R, b.count, stream));
        int done = 0;
        if (cudaMemcpyAsync(&done, b.count, sizeof(int), cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
            cudaStreamSynchronize(stream) != cudaSuccess)
            return ft_fail(FT_ERR_CUDA, "%s: reading the finished count failed", fn);
        if (done == R) {
            t++;
            break;
        }
    }
    *steps_run = t;
    FT_EX_TRY(ft_beam_gather_tree(b.history, b.parents, t, B, beam, out_ids, stream));
    if (lengths && cudaMemcpyAsync(lengths, b.lengths, R * sizeof(int), cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
        return ft_fail(FT_ERR_CUDA, "%s: copying the lengths failed", fn);
    if (cum_log_probs &&
        cudaMemcpyAsync(cum_log_probs, b.cum, R * sizeof(float), cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
        return ft_fail(FT_ERR_CUDA, "%s: copying the scores failed", fn);
    return FT_OK;
}

#endif /* FT_EXAMPLE_DECODING_CUH */
