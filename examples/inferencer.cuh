/* Example: seed 004's continuous-batching inferencer (catalog §6) composed from ftkernels
 * launchers, cuBLAS GEMMs and the host item processor (ft/items.h). A batch of `slots` rows
 * keeps decoding greedily while items come and go: each step every running slot adds one
 * token; finished items leave and waiting ones take their slots, their prompts' K and V
 * computed once into the caches.
 *
 * The model is the seed's: one self-attention block (H heads of D, E = H * D) over token
 * embeddings, no positions, and the next token the arg-max of the similarity between the
 * block's output and the embedding table:
 *
 *   insertion (slots that changed):
 *     plan, prompts, lengths to the device (one copy)             ft_items_insert_new
 *     x = embedding[prompt tokens]                                 ft_embedding_lookup
 *     [k | v] = x W_qkv[:, E:3E]; into the slots' caches (K^T)     ft_gemm, ft_fill_new_kv_cache
 *     x_next = the last prompt token's row, lengths set            ft_insert_items
 *   step (every slot at its own length L):
 *     [q | k | v] = x_next W_qkv; k, v at step L - 1               ft_gemm, ft_append_kv
 *     p = softmax(q K^T / sqrt(D)) over the L steps                ft_qkt, ft_softmax_lengths
 *     a = p V; h = a W_o; logits = h embedding^T                   ft_softmax_v, ft_gemm x 2
 *     token = arg-max, x_next = embedding[token], L + 1            ft_greedy_step
 *     tokens to the host (B ints), items updated                   ft_items_process_decoder_result
 *
 * Caches: kt [B, E, S] and v [B, S, E] with S = capacity, the most tokens an item holds
 * (the processor's max_len must not exceed it). Everything lives in one workspace carved
 * by ft_inferencer_carve; the host side keeps a small staging area of its own. */
#ifndef FT_EXAMPLE_INFERENCER_CUH
#define FT_EXAMPLE_INFERENCER_CUH

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ft/batching.cuh"
#include "ft/decoding.cuh"
#include "ft/items.h"

#include "example_common.cuh"

typedef struct ft_inferencer_config {
    ft_dtype dtype;
    int slots;            /* B */
    int hidden;           /* N: the embedding width */
    int heads, head_size; /* H, D */
    int vocab;            /* V */
    int capacity;         /* S: the caches' steps, at least the processor's max_len */
    int max_prompt;       /* P: rows a prompt may take in an insertion (at most S) */
} ft_inferencer_config;

typedef struct ft_inferencer_weights {
    const void *embedding; /* [V, N]: the inputs' rows and the output similarity */
    const void *w_qkv;     /* [N, 3E]: q | k | v */
    const void *w_o;       /* [E, N] */
} ft_inferencer_weights;

typedef struct ft_inferencer_buffers {
    char *x_next, *qkv, *kt, *v, *attn, *h, *logits, *new_emb, *kv_new;
    float *scores;
    int *lengths, *tokens, *plan; /* plan: new_batch_idx [B], new_lengths [B], new_tokens [B, P] */
    void *pv_ws, *greedy_ws;
    size_t pv_ws_bytes, greedy_ws_bytes;
} ft_inferencer_buffers;

/* Host staging of one insertion and one step's tokens (ft_inferencer_host_init). */
typedef struct ft_inferencer_host {
    int *plan;   /* as the device's plan */
    int *tokens; /* [B] */
} ft_inferencer_host;

static inline size_t ft_inferencer_carve(const ft_inferencer_config *c, void *base, ft_inferencer_buffers *b)
{
    const size_t es = ft_dtype_size(c->dtype), B = c->slots, N = c->hidden, V = c->vocab, S = c->capacity;
    const size_t E = (size_t)c->heads * c->head_size, P = c->max_prompt;
    ft_ex_arena a = {(char *)base, 0};
    b->x_next = (char *)ft_ex_take(&a, B * N * es);
    b->qkv = (char *)ft_ex_take(&a, B * 3 * E * es);
    b->kt = (char *)ft_ex_take(&a, B * E * S * es);
    b->v = (char *)ft_ex_take(&a, B * S * E * es);
    b->attn = (char *)ft_ex_take(&a, B * E * es);
    b->h = (char *)ft_ex_take(&a, B * N * es);
    b->logits = (char *)ft_ex_take(&a, B * V * es);
    b->new_emb = (char *)ft_ex_take(&a, B * P * N * es);
    b->kv_new = (char *)ft_ex_take(&a, B * P * 2 * E * es);
    b->scores = (float *)ft_ex_take(&a, B * c->heads * S * sizeof(float));
    b->lengths = (int *)ft_ex_take(&a, B * sizeof(int));
    b->tokens = (int *)ft_ex_take(&a, B * sizeof(int));
    b->plan = (int *)ft_ex_take(&a, (2 * B + B * P) * sizeof(int));
    b->pv_ws_bytes = ft_softmax_v_workspace(c->dtype, c->slots, c->heads, c->head_size, c->capacity);
    b->pv_ws = b->pv_ws_bytes ? ft_ex_take(&a, b->pv_ws_bytes) : NULL;
    b->greedy_ws_bytes = ft_greedy_workspace(c->dtype, c->slots, c->vocab);
    b->greedy_ws = b->greedy_ws_bytes ? ft_ex_take(&a, b->greedy_ws_bytes) : NULL;
    return a.used;
}

static inline ft_status ft_inferencer_check(const ft_inferencer_config *c)
{
    static const char fn[] = "ft_inferencer";
    if (!c)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: config is NULL", fn);
    if (c->slots <= 0 || c->hidden <= 0 || c->heads <= 0 || c->head_size <= 0 || c->vocab <= 0 || c->capacity <= 0 ||
        c->max_prompt <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: slots, hidden, heads, head_size, vocab, capacity, max_prompt must be "
                                                "positive", fn);
    if (c->max_prompt > c->capacity)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: max_prompt (%d) must not exceed capacity (%d)", fn, c->max_prompt,
                       c->capacity);
    return FT_OK;
}

/* Sets every slot empty (lengths 0): once, before the first insertion. */
static inline ft_status ft_inferencer_reset(const ft_inferencer_config *c, const ft_inferencer_buffers *b,
                                            cudaStream_t stream)
{
    FT_EX_TRY(ft_inferencer_check(c));
    return ft_launch_error("ft_inferencer_reset", cudaMemsetAsync(b->lengths, 0, (size_t)c->slots * sizeof(int), stream));
}

/* Applies a plan of ft_items_insert_new held in host->plan (n_new new items, their rows
 * padded to max_prompt): its first 2 B + n_new P ints go to the device in one copy. */
static inline ft_status ft_inferencer_insert(const ft_inferencer_config *c, const ft_inferencer_weights *w,
                                             const ft_gemm_ctx *g, const ft_inferencer_buffers *b,
                                             const ft_inferencer_host *host, int n_new, cudaStream_t stream)
{
    FT_EX_TRY(ft_inferencer_check(c));
    const ft_dtype dt = c->dtype;
    const int B = c->slots, N = c->hidden, E = c->heads * c->head_size, P = c->max_prompt, S = c->capacity;
    const size_t es = ft_dtype_size(dt);
    const size_t plan_ints = 2 * (size_t)B + (size_t)(n_new > 0 ? n_new : 0) * P;
    FT_EX_TRY(ft_launch_error("ft_inferencer_insert", cudaMemcpyAsync(b->plan, host->plan, plan_ints * sizeof(int),
                                                                       cudaMemcpyHostToDevice, stream)));
    const int *d_idx = b->plan, *d_len = b->plan + B, *d_tok = b->plan + 2 * B;
    if (n_new > 0) {
        const int rows = n_new * P;
        FT_EX_TRY(ft_embedding_lookup(dt, w->embedding, c->vocab, N, d_tok, rows, P, 0, NULL, 1.0f, NULL, 0, 0,
                                      b->new_emb, stream));
        FT_EX_TRY(ft_gemm(g, dt, 0, 0, rows, 2 * E, N, 1.0f, b->new_emb, N, (const char *)w->w_qkv + E * es, 3 * E, 0.0f,
                          b->kv_new, 2 * E, stream));
        FT_EX_TRY(ft_fill_new_kv_cache(dt, b->kv_new, b->kv_new + E * es, 2 * E, P, d_idx, d_len, b->kt, b->v, B, E, S,
                                       0, stream));
    }
    return ft_insert_items(dt, d_idx, d_len, b->new_emb, N, P, b->x_next, N, b->lengths, B, N, stream);
}

/* One decoding step of every slot; the tokens are left in b->tokens (device). */
static inline ft_status ft_inferencer_step(const ft_inferencer_config *c, const ft_inferencer_weights *w,
                                           const ft_gemm_ctx *g, const ft_inferencer_buffers *b, cudaStream_t stream)
{
    FT_EX_TRY(ft_inferencer_check(c));
    const ft_dtype dt = c->dtype;
    const int B = c->slots, N = c->hidden, H = c->heads, D = c->head_size, E = H * D, S = c->capacity, V = c->vocab;
    const size_t es = ft_dtype_size(dt);
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, 3 * E, N, 1.0f, b->x_next, N, w->w_qkv, 3 * E, 0.0f, b->qkv, 3 * E, stream));
    FT_EX_TRY(ft_append_kv(dt, b->qkv + E * es, b->qkv + 2 * E * es, 3 * E, b->lengths, b->kt, b->v, B, E, S, stream));
    FT_EX_TRY(ft_qkt(dt, b->qkv, 3 * E, b->kt, b->lengths, b->scores, S, B, H, D, S, 1.0f / sqrtf((float)D), stream));
    FT_EX_TRY(ft_softmax_lengths(dt, b->scores, S, b->lengths, B, H, S, stream));
    FT_EX_TRY(ft_softmax_v(dt, b->scores, S, b->v, b->lengths, b->attn, E, B, H, D, S, b->pv_ws, b->pv_ws_bytes, 0,
                           stream));
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, B, N, E, 1.0f, b->attn, E, w->w_o, N, 0.0f, b->h, N, stream));
    FT_EX_TRY(ft_gemm(g, dt, 0, 1, B, V, N, 1.0f, b->h, N, w->embedding, N, 0.0f, b->logits, V, stream));
    return ft_greedy_step(dt, b->logits, V, w->embedding, V, N, b->lengths, S, b->tokens, b->x_next, N, B,
                          b->greedy_ws, b->greedy_ws_bytes, stream);
}

static inline ft_status ft_inferencer_host_init(const ft_inferencer_config *c, ft_inferencer_host *h)
{
    FT_EX_TRY(ft_inferencer_check(c));
    const size_t plan_ints = 2 * (size_t)c->slots + (size_t)c->slots * c->max_prompt;
    h->plan = (int *)malloc(plan_ints * sizeof(int));
    h->tokens = (int *)malloc((size_t)c->slots * sizeof(int));
    if (!h->plan || !h->tokens) {
        free(h->plan);
        free(h->tokens);
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "ft_inferencer_host_init: out of memory");
    }
    return FT_OK;
}

static inline void ft_inferencer_host_free(ft_inferencer_host *h)
{
    free(h->plan);
    free(h->tokens);
    h->plan = h->tokens = NULL;
}

/* Runs until no item is running or waiting (items submitted to p before the call, or from
 * on_step between steps); the finished ones stay in p for ft_items_pop_finished. The
 * processor's max_len must not exceed the capacity; call ft_inferencer_reset once before
 * the first run on a buffer. *steps (optional): steps taken. on_step (optional) runs after
 * each step's tokens are processed, e.g. to submit more items or hand finished ones back;
 * a status other than FT_OK stops the run with it. */
static inline ft_status ft_inferencer_run(const ft_inferencer_config *c, const ft_inferencer_weights *w,
                                          const ft_gemm_ctx *g, const ft_inferencer_buffers *b,
                                          ft_inferencer_host *host, ft_items *p,
                                          ft_status (*on_step)(void *ctx, ft_items *p), void *ctx, int *steps,
                                          cudaStream_t stream)
{
    static const char fn[] = "ft_inferencer_run";
    FT_EX_TRY(ft_inferencer_check(c));
    if (!p || p->slots != c->slots)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: the item processor must have the config's %d slots", fn, c->slots);
    if (p->max_len > c->capacity)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: the processor's max_len (%d) exceeds the capacity (%d)", fn,
                       p->max_len, c->capacity);
    const int B = c->slots, P = c->max_prompt;
    int taken = 0;
    while (p->running + ft_items_waiting(p) > 0) {
        int n_new = 0, changed = 0;
        FT_EX_TRY(ft_items_insert_new(p, host->plan, host->plan + 2 * B, P, host->plan + B, &n_new, &changed));
        if (changed) {
            for (int i = 0; i < n_new; i++) /* each new prompt's row padded with id -1 (looks up zeros) */
                for (int t = host->plan[B + i]; t < P; t++)
                    host->plan[2 * B + i * P + t] = -1;
            FT_EX_TRY(ft_inferencer_insert(c, w, g, b, host, n_new, stream));
        }
        FT_EX_TRY(ft_inferencer_step(c, w, g, b, stream));
        FT_EX_TRY(ft_launch_error(fn, cudaMemcpyAsync(host->tokens, b->tokens, (size_t)B * sizeof(int),
                                                      cudaMemcpyDeviceToHost, stream)));
        FT_EX_TRY(ft_launch_error(fn, cudaStreamSynchronize(stream)));
        int n_finished = 0;
        FT_EX_TRY(ft_items_process_decoder_result(p, host->tokens, &n_finished));
        taken++;
        if (on_step)
            FT_EX_TRY(on_step(ctx, p));
    }
    if (steps)
        *steps = taken;
    return FT_OK;
}

#endif /* FT_EXAMPLE_INFERENCER_CUH */
