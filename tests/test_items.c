/* The continuous-batching item processor (ft/items.h), host C, compiled as C: argument
 * checks, a scripted run whose every plan and state is known, and long random runs against
 * a simulated device that decodes each slot with a fixed function of its sequence (so each
 * returned item's tokens can be recomputed from its own prefix, which they only match if
 * the processor kept every slot's tokens with its item). Runs in CI. */
#include <stdint.h>
#include <string.h>

#include "ft/items.h"

#include "harness.h"
#include "ref/ref_common.h"

#define EXPECT_OK(t, call) FT_EXPECT(t, (call) == FT_OK, "%s: %s", #call, ft_last_error())
#define EXPECT_BAD(t, call, needle)                                                              \
    do {                                                                                         \
        ft_status s_ = (call);                                                                   \
        FT_EXPECT(t, s_ == FT_ERR_INVALID_ARGUMENT, "%s: got %s", #call, ft_status_string(s_));  \
        FT_EXPECT(t, strstr(ft_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", #call, \
                  ft_last_error(), needle);                                                      \
    } while (0)

FT_TEST(items_args)
{
    ft_items p;
    const int tok[4] = {1, 2, 3, 4};
    int idx[2], nt[8], nl[2], n_new, changed, nf;
    EXPECT_BAD(t, ft_items_init(NULL, 2, 8, 0), "p is NULL");
    EXPECT_BAD(t, ft_items_init(&p, 0, 8, 0), "slots (0)");
    EXPECT_BAD(t, ft_items_init(&p, 2, 1, 0), "max_len (1)");
    EXPECT_OK(t, ft_items_init(&p, 2, 4, 0));
    EXPECT_BAD(t, ft_items_submit(&p, NULL, 2, NULL), "tokens is NULL");
    EXPECT_BAD(t, ft_items_submit(&p, tok, 0, NULL), "len (0)");
    EXPECT_BAD(t, ft_items_submit(&p, tok, 4, NULL), "len (4) must lie in [1, max_len - 1 = 3]");
    EXPECT_OK(t, ft_items_submit(&p, tok, 3, NULL));
    EXPECT_BAD(t, ft_items_insert_new(&p, idx, nt, 2, nl, &n_new, &changed), "longer than ld (2)");
    FT_EXPECT(t, p.running == 0 && ft_items_waiting(&p) == 1, "a refused insertion changed the state");
    EXPECT_BAD(t, ft_items_insert_new(&p, idx, NULL, 4, nl, &n_new, &changed), "output pointer is NULL");
    EXPECT_BAD(t, ft_items_insert_new(&p, idx, nt, 0, nl, &n_new, &changed), "ld (0)");
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 4, nl, &n_new, &changed));
    const int run_empty[2] = {-1, -1}, empty_tok[2] = {5, 3};
    EXPECT_BAD(t, ft_items_process_decoder_result(&p, run_empty, &nf), "slot 0 runs item 0 but its token is -1");
    EXPECT_BAD(t, ft_items_process_decoder_result(&p, empty_tok, &nf), "slot 1 is empty but its token is 3");
    EXPECT_BAD(t, ft_items_process_decoder_result(&p, NULL, &nf), "tokens is NULL");
    ft_items_free(&p);
    ft_items_free(&p); /* twice is harmless */
}

FT_TEST(items_scripted)
{
    ft_items p;
    EXPECT_OK(t, ft_items_init(&p, 3, 6, 99));
    const int prompts[5][5] = {{10, 11}, {20}, {30, 31, 32}, {40, 41, 42, 43, 44}, {50, 51, 52}};
    const int plen[5] = {2, 1, 3, 5, 3};
    for (int i = 0; i < 5; i++) {
        int id = -1;
        EXPECT_OK(t, ft_items_submit(&p, prompts[i], plen[i], &id));
        FT_EXPECT(t, id == i, "item %d got id %d", i, id);
    }
    int idx[3], nt[3 * 5], nl[3], n_new = 0, changed = 0, nf = 0, id, len, pl;
    const int *toks;
    /* all three slots fill, oldest first */
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 5, nl, &n_new, &changed));
    FT_EXPECT(t, n_new == 3 && changed == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 2, "first plan %d %d: %d %d %d",
              n_new, changed, idx[0], idx[1], idx[2]);
    FT_EXPECT(t, nl[0] == 2 && nl[1] == 1 && nl[2] == 3 && nt[5] == 20 && nt[10 + 2] == 32, "first prompts");
    FT_EXPECT(t, p.slot_len[0] == 2 && p.slot_len[1] == 1 && p.slot_len[2] == 3, "slot lengths");
    /* item 1 ends by the end token */
    const int s1[3] = {7, 99, 8};
    EXPECT_OK(t, ft_items_process_decoder_result(&p, s1, &nf));
    FT_EXPECT(t, nf == 1 && p.running == 2 && p.slot_item[1] == -1 && p.slot_len[0] == 3, "after step 1");
    FT_EXPECT(t, ft_items_pop_finished(&p, &id, &toks, &len, &pl) && id == 1 && len == 2 && pl == 1 && toks[0] == 20 &&
                     toks[1] == 99,
              "item 1 back");
    FT_EXPECT(t, !ft_items_pop_finished(&p, &id, &toks, &len, &pl), "only one finished");
    /* item 3 takes slot 1, the others stay */
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 5, nl, &n_new, &changed));
    FT_EXPECT(t, n_new == 1 && changed == 1 && idx[0] == FT_SLOT_KEEP && idx[1] == 0 && idx[2] == FT_SLOT_KEEP &&
                     nl[0] == 5 && nt[4] == 44,
              "second plan");
    /* item 3 (5 + 1 = 6 tokens) reaches max_len; item 0 has 4, item 2 has 5 */
    const int s2[3] = {1, 2, 3};
    EXPECT_OK(t, ft_items_process_decoder_result(&p, s2, &nf));
    FT_EXPECT(t, nf == 1 && p.slot_item[1] == -1 && p.slot_len[2] == 5, "after step 2");
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 5, nl, &n_new, &changed));
    FT_EXPECT(t, n_new == 1 && idx[1] == 0 && nl[0] == 3, "item 4 into slot 1");
    /* item 2 reaches 6; nothing waits any more: its slot is emptied once, then kept */
    const int s3[3] = {4, 5, 6};
    EXPECT_OK(t, ft_items_process_decoder_result(&p, s3, &nf));
    FT_EXPECT(t, nf == 1 && p.slot_item[2] == -1, "after step 3");
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 5, nl, &n_new, &changed));
    FT_EXPECT(t, n_new == 0 && changed == 1 && idx[2] == FT_SLOT_EMPTY && idx[0] == FT_SLOT_KEEP, "slot 2 emptied");
    const int s4[3] = {99, 5, -1};
    EXPECT_OK(t, ft_items_process_decoder_result(&p, s4, &nf));
    FT_EXPECT(t, nf == 1, "item 0 ends by the end token");
    EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, 5, nl, &n_new, &changed));
    FT_EXPECT(t, changed == 1 && idx[0] == FT_SLOT_EMPTY && idx[2] == FT_SLOT_KEEP, "slot 0 emptied, 2 kept");
    const int s5[3] = {-1, 9, -1};
    EXPECT_OK(t, ft_items_process_decoder_result(&p, s5, &nf));
    FT_EXPECT(t, nf == 1 && ft_items_busy(&p) == 4 && p.running == 0, "item 4 reaches max_len");
    const int order[4] = {3, 2, 0, 4};
    const int want_len[4] = {6, 6, 6, 6};
    for (int k = 0; k < 4; k++)
        FT_EXPECT(t, ft_items_pop_finished(&p, &id, &toks, &len, &pl) && id == order[k] && len == want_len[k],
                  "finished item %d: got %d, length %d", order[k], id, len);
    FT_EXPECT(t, ft_items_busy(&p) == 0, "busy after all returned");
    ft_items_free(&p);
}

/* the simulated device's token for a sequence: a fixed hash of all of it */
static int next_token(const int *seq, int len, int vocab)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < len; i++)
        h = (h ^ (uint64_t)(seq[i] + 1)) * 1099511628211ull;
    return (int)(h % (uint64_t)vocab);
}

FT_TEST(items_random)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x17);
    for (int run = 0; run < 40; run++) {
        const int slots = (int)ref_rng_range(&rng, 1, 9), max_len = (int)ref_rng_range(&rng, 2, 40);
        const int vocab = (int)ref_rng_range(&rng, 2, 60), end_id = run % 4 == 0 ? -1 : (int)ref_rng_range(&rng, 0, vocab - 1);
        const int n_items = (int)ref_rng_range(&rng, 1, 70), ld = max_len;
        ft_items p;
        EXPECT_OK(t, ft_items_init(&p, slots, max_len, end_id));
        int *plens = (int *)malloc((size_t)n_items * sizeof(int));
        int *prom = (int *)malloc((size_t)n_items * max_len * sizeof(int));
        int submitted = 0;
        /* the device: each slot's sequence */
        int *dev = (int *)malloc((size_t)slots * max_len * sizeof(int)), *dlen = (int *)calloc((size_t)slots, sizeof(int));
        int *idx = (int *)malloc((size_t)slots * sizeof(int)), *nt = (int *)malloc((size_t)slots * ld * sizeof(int));
        int *nl = (int *)malloc((size_t)slots * sizeof(int)), *tok = (int *)malloc((size_t)slots * sizeof(int));
        int returned = 0, steps = 0;
        size_t bad = 0;
        while (submitted < n_items || ft_items_busy(&p) > 0) {
            /* items arrive a few at a time */
            for (int k = (int)ref_rng_range(&rng, 0, 3); k > 0 && submitted < n_items; k--) {
                plens[submitted] = (int)ref_rng_range(&rng, 1, max_len - 1);
                for (int j = 0; j < plens[submitted]; j++)
                    prom[(size_t)submitted * max_len + j] = (int)ref_rng_range(&rng, 0, vocab - 1);
                int id;
                EXPECT_OK(t, ft_items_submit(&p, prom + (size_t)submitted * max_len, plens[submitted], &id));
                bad += id != submitted++;
            }
            int n_new, changed, nf;
            EXPECT_OK(t, ft_items_insert_new(&p, idx, nt, ld, nl, &n_new, &changed));
            for (int b = 0; b < slots; b++) {
                if (idx[b] >= 0) {
                    memcpy(dev + (size_t)b * max_len, nt + (size_t)idx[b] * ld, (size_t)nl[idx[b]] * sizeof(int));
                    dlen[b] = nl[idx[b]];
                } else if (idx[b] == FT_SLOT_EMPTY) {
                    dlen[b] = 0;
                }
                bad += dlen[b] != p.slot_len[b];
            }
            if (p.running > 0) {
                for (int b = 0; b < slots; b++) {
                    tok[b] = dlen[b] > 0 ? next_token(dev + (size_t)b * max_len, dlen[b], vocab) : -1;
                    if (dlen[b] > 0 && dlen[b] < max_len)
                        dev[(size_t)b * max_len + dlen[b]++] = tok[b];
                }
                EXPECT_OK(t, ft_items_process_decoder_result(&p, tok, &nf));
                steps++;
            }
            int id, len, pl;
            const int *toks;
            while (ft_items_pop_finished(&p, &id, &toks, &len, &pl)) {
                returned++;
                bad += pl != plens[id] || memcmp(toks, prom + (size_t)id * max_len, (size_t)pl * sizeof(int)) != 0;
                for (int s = pl; s < len; s++)
                    bad += toks[s] != next_token(toks, s, vocab) || (s < len - 1 && toks[s] == end_id);
                bad += !(toks[len - 1] == end_id || len == max_len);
            }
            if (steps > 100000)
                break;
        }
        FT_EXPECT(t, bad == 0 && returned == n_items, "run %d (slots %d, max_len %d): %zu wrong, %d of %d returned", run,
                  slots, max_len, bad, returned, n_items);
        ft_items_free(&p);
        free(plens), free(prom), free(dev), free(dlen), free(idx), free(nt), free(nl), free(tok);
    }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
