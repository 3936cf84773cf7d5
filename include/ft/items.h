/* ftkernels: the continuous-batching item processor (catalog §6, seed 004), host C.
 *
 * A batch of `slots` rows keeps decoding while items (prompts) come and go: after each
 * step the processor takes the step's tokens, appends them to the running items, retires
 * the items that produced the end token or reached max_len tokens (prompt included), and
 * fills the freed slots with waiting items, in the order they were submitted. The kernels
 * of ft/batching_<dtype>.cuh do the device side; examples/inferencer.cuh composes both.
 *
 *   ft_items p;
 *   ft_items_init(&p, slots, max_len, end_id);
 *   ft_items_submit(&p, prompt, len, &id);                  any number, at any time
 *   while (ft_items_busy(&p)) {
 *       ft_items_insert_new(&p, new_batch_idx, new_tokens, ld, new_lengths, &n_new, &changed);
 *       if (changed) upload them, run the insertion kernels;
 *       run a step, copy its tokens [slots] back;
 *       ft_items_process_decoder_result(&p, tokens, &n_finished);
 *       while (ft_items_pop_finished(&p, &id, &out, &n)) hand the item back;
 *   }
 *   ft_items_free(&p);
 *
 * The slot plan ft_items_insert_new writes, per slot b, new_batch_idx[b]:
 *   i >= 0          slot b takes new item i of this insertion: its tokens are
 *                   new_tokens[i * ld ...], its length new_lengths[i]
 *   FT_SLOT_KEEP    unchanged (running, or empty and already cleared)
 *   FT_SLOT_EMPTY   freed since the last insertion, nothing waiting: its length becomes 0
 * The device's per-slot lengths follow this plan (ft_insert_items_<dtype>) and the greedy
 * step (one more token a step); the processor keeps the same counts on the host, so no
 * lengths travel back. A slot of length 0 yields token -1 (ft_greedy_step_<dtype>).
 *
 * Plain C: no CUDA call is made here. Every function returns FT_OK or a status with a
 * message (ft_last_error()); allocation failure is FT_ERR_INVALID_ARGUMENT with "out of
 * memory". */
#ifndef FT_ITEMS_H
#define FT_ITEMS_H

#include <stdlib.h>
#include <string.h>

#include "ft/types.h"

#define FT_SLOT_KEEP (-1)
#define FT_SLOT_EMPTY (-2)

typedef enum ft_item_state {
    FT_ITEM_WAITING = 0,
    FT_ITEM_RUNNING = 1,
    FT_ITEM_FINISHED = 2, /* done, not yet handed back */
    FT_ITEM_RETURNED = 3
} ft_item_state;

typedef struct ft_item {
    int *tokens;      /* prompt, then the generated tokens: max_len entries */
    int prompt_len;
    int len;          /* prompt_len + generated */
    int slot;         /* while running */
    ft_item_state state;
} ft_item;

typedef struct ft_items {
    int slots, max_len, end_id;
    int *slot_item;   /* [slots]: the running item's id, or -1 */
    int *slot_len;    /* [slots]: its length (the device's lengths[b]); 0 when empty */
    unsigned char *slot_freed; /* [slots]: emptied since the last insertion */
    ft_item *items;   /* by id, in submission order */
    int n_items, cap_items;
    int next_wait;    /* items [next_wait, n_items) wait, oldest first */
    int *done;        /* ids finished, not yet handed back: done[done_head .. done_tail) */
    int done_head, done_tail;
    int running;
} ft_items;

static inline ft_status ft_items_oom_(const char *fn)
{
    return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: out of memory", fn);
}

static inline void ft_items_free(ft_items *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_items; i++)
        free(p->items[i].tokens);
    free(p->items);
    free(p->done);
    free(p->slot_item);
    free(p->slot_len);
    free(p->slot_freed);
    memset(p, 0, sizeof *p);
}

/* slots: rows of the device batch; max_len: an item is done when it holds this many tokens
 * (prompt included; the device caches need at least this capacity); end_id: the token that
 * ends an item (a negative end_id: none does, items run to max_len). */
static inline ft_status ft_items_init(ft_items *p, int slots, int max_len, int end_id)
{
    static const char fn[] = "ft_items_init";
    if (!p)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: p is NULL", fn);
    memset(p, 0, sizeof *p);
    if (slots <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: slots (%d) must be positive", fn, slots);
    if (max_len < 2)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: max_len (%d) must be at least 2 (a prompt token and one more)",
                       fn, max_len);
    p->slots = slots;
    p->max_len = max_len;
    p->end_id = end_id;
    p->slot_item = (int *)malloc((size_t)slots * sizeof(int));
    p->slot_len = (int *)calloc((size_t)slots, sizeof(int));
    p->slot_freed = (unsigned char *)calloc((size_t)slots, 1);
    if (!p->slot_item || !p->slot_len || !p->slot_freed) {
        ft_items_free(p);
        return ft_items_oom_(fn);
    }
    for (int b = 0; b < slots; b++)
        p->slot_item[b] = -1;
    return FT_OK;
}

/* Queues a prompt of len tokens (1 <= len < max_len; copied) and gives its id (0, 1, ...
 * in submission order). */
static inline ft_status ft_items_submit(ft_items *p, const int *tokens, int len, int *id)
{
    static const char fn[] = "ft_items_submit";
    if (!p || !p->slot_item)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: p is NULL or not initialised", fn);
    if (!tokens)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: tokens is NULL", fn);
    if (len < 1 || len >= p->max_len)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: len (%d) must lie in [1, max_len - 1 = %d]", fn, len,
                       p->max_len - 1);
    if (p->n_items == p->cap_items) {
        const int cap = p->cap_items ? 2 * p->cap_items : 16;
        ft_item *items = (ft_item *)realloc(p->items, (size_t)cap * sizeof(ft_item));
        if (!items)
            return ft_items_oom_(fn);
        p->items = items;
        int *done = (int *)realloc(p->done, (size_t)cap * sizeof(int));
        if (!done)
            return ft_items_oom_(fn);
        p->done = done;
        p->cap_items = cap;
    }
    ft_item *it = &p->items[p->n_items];
    it->tokens = (int *)malloc((size_t)p->max_len * sizeof(int));
    if (!it->tokens)
        return ft_items_oom_(fn);
    memcpy(it->tokens, tokens, (size_t)len * sizeof(int));
    it->prompt_len = len;
    it->len = len;
    it->slot = -1;
    it->state = FT_ITEM_WAITING;
    if (id)
        *id = p->n_items;
    p->n_items++;
    return FT_OK;
}

/* Items running or waiting, plus those finished and not yet handed back. */
static inline int ft_items_busy(const ft_items *p)
{
    return p->running + (p->n_items - p->next_wait) + (p->done_tail - p->done_head);
}

static inline int ft_items_waiting(const ft_items *p)
{
    return p->n_items - p->next_wait;
}

/* Fills free slots with waiting items (oldest first). Writes the slot plan new_batch_idx
 * [slots] (see the top of this file), the new items' tokens (row i at new_tokens + i * ld,
 * ld >= the longest prompt taken) and lengths, their count *n_new, and *changed: the slots
 * whose device state must change (new or emptied); when it is 0 nothing need be uploaded
 * or run. */
static inline ft_status ft_items_insert_new(ft_items *p, int *new_batch_idx, int *new_tokens, int ld,
                                            int *new_lengths, int *n_new, int *changed)
{
    static const char fn[] = "ft_items_insert_new";
    if (!p || !p->slot_item)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: p is NULL or not initialised", fn);
    if (!new_batch_idx || !new_tokens || !new_lengths || !n_new || !changed)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: an output pointer is NULL", fn);
    if (ld < 1)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: ld (%d) must be positive", fn, ld);
    /* every waiting prompt that would be taken must fit its row: check before changing anything */
    int free_slots = 0;
    for (int b = 0; b < p->slots; b++)
        free_slots += p->slot_item[b] < 0;
    for (int k = 0; k < free_slots && p->next_wait + k < p->n_items; k++)
        if (p->items[p->next_wait + k].prompt_len > ld)
            return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: item %d's prompt (%d tokens) is longer than ld (%d)", fn,
                           p->next_wait + k, p->items[p->next_wait + k].prompt_len, ld);
    int nn = 0, ch = 0;
    for (int b = 0; b < p->slots; b++) {
        new_batch_idx[b] = FT_SLOT_KEEP;
        if (p->slot_item[b] >= 0)
            continue;
        if (p->next_wait < p->n_items) {
            const int id = p->next_wait++;
            ft_item *it = &p->items[id];
            it->state = FT_ITEM_RUNNING;
            it->slot = b;
            p->slot_item[b] = id;
            p->slot_len[b] = it->len;
            p->running++;
            memcpy(new_tokens + (size_t)nn * ld, it->tokens, (size_t)it->len * sizeof(int));
            new_lengths[nn] = it->len;
            new_batch_idx[b] = nn++;
            ch++;
        } else if (p->slot_freed[b]) {
            new_batch_idx[b] = FT_SLOT_EMPTY;
            ch++;
        }
        p->slot_freed[b] = 0;
    }
    *n_new = nn;
    *changed = ch;
    return FT_OK;
}

/* Takes one step's tokens [slots] (the device's ft_greedy_step output): appends each
 * running slot's token to its item, and retires the items that produced end_id or now hold
 * max_len tokens; their slots are free for the next insertion. *n_finished: how many were
 * retired. A running slot's token must be >= 0 and an empty slot's -1 (the device's slots
 * and the processor's disagree otherwise: FT_ERR_INVALID_ARGUMENT, nothing changed). */
static inline ft_status ft_items_process_decoder_result(ft_items *p, const int *tokens, int *n_finished)
{
    static const char fn[] = "ft_items_process_decoder_result";
    if (!p || !p->slot_item)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: p is NULL or not initialised", fn);
    if (!tokens)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: tokens is NULL", fn);
    for (int b = 0; b < p->slots; b++) {
        if (p->slot_item[b] >= 0 && tokens[b] < 0)
            return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: slot %d runs item %d but its token is %d", fn, b,
                           p->slot_item[b], tokens[b]);
        if (p->slot_item[b] < 0 && tokens[b] != -1)
            return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: slot %d is empty but its token is %d (want -1)", fn, b,
                           tokens[b]);
    }
    int nf = 0;
    for (int b = 0; b < p->slots; b++) {
        const int id = p->slot_item[b];
        if (id < 0)
            continue;
        ft_item *it = &p->items[id];
        it->tokens[it->len++] = tokens[b];
        p->slot_len[b] = it->len;
        if (tokens[b] == p->end_id || it->len >= p->max_len) {
            it->state = FT_ITEM_FINISHED;
            it->slot = -1;
            p->done[p->done_tail++] = id;
            p->slot_item[b] = -1;
            p->slot_len[b] = 0;
            p->slot_freed[b] = 1;
            p->running--;
            nf++;
        }
    }
    if (n_finished)
        *n_finished = nf;
    return FT_OK;
}

/* Hands back the oldest finished item: its id, all its tokens (the prompt, then what was
 * generated, the end token included; valid until ft_items_free) and their count, and the
 * prompt's length. Returns 0 when none is left. */
static inline int ft_items_pop_finished(ft_items *p, int *id, const int **tokens, int *len, int *prompt_len)
{
    if (!p || p->done_head == p->done_tail)
        return 0;
    const int i = p->done[p->done_head++];
    ft_item *it = &p->items[i];
    it->state = FT_ITEM_RETURNED;
    if (id)
        *id = i;
    if (tokens)
        *tokens = it->tokens;
    if (len)
        *len = it->len;
    if (prompt_len)
        *prompt_len = it->prompt_len;
    return 1;
}

#endif /* FT_ITEMS_H */
