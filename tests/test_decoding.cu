/* GPU tests of the decoding family against the C references in ref/ref_decoding.c:
 * top-K per generated K and dtype (exact sets and order, ties, NaN, +-inf, -0), beam
 * candidates, top-k / top-p sampling (chi-square against the renormalised reference
 * distribution, never a token outside the set, determinism by seed, prompt-aware and
 * finished rows, per-row settings), update_logits, embeddings and positions, the
 * dtype-free search kernels, and a beam search run over several steps. Outputs are
 * poisoned before every launch. */
#include <math.h>
#include <string.h>

#include "ft/decoding.cuh"
#include "ft/search.cuh"
#include "ft/topk.cuh"
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_decoding.h"

typedef ft_status (*topk_fn)(const void *, int64_t, int, int, int, float *, int *, void *, size_t, cudaStream_t);
typedef ft_status (*beam_fn)(const void *, int64_t, const float *, int, int, int, int, float *, int *, void *, size_t,
                             cudaStream_t);
typedef ft_status (*ksamp_fn)(const void *, int64_t, int, int, const ft_sampling *, const ft_decode_io *, void *,
                              size_t, cudaStream_t);
typedef size_t (*ws_fn)(int, int, int);

typedef struct topk_variant {
    const char *suffix;
    ft_dtype dt;
    int K;
    topk_fn topk;
    beam_fn beam;
    ksamp_fn sample;
    ws_fn ws;
} topk_variant;

/* the typed launchers differ only in the element type of their first pointer */
#define FT_X(sfx, en, K)                                                                                        \
    {#sfx, en, K, (topk_fn)ft_topk_##sfx, (beam_fn)ft_beam_topk_##sfx, (ksamp_fn)ft_topk_sampling_##sfx,       \
     ft_topk_workspace_bytes_##sfx},
static const topk_variant topk_variants[] = {FT_TOPK_VARIANTS(FT_X)};
#undef FT_X
#define FT_X(sfx, en) en,
static const ft_dtype decoding_dtypes[] = {FT_DECODING_VARIANTS(FT_X)};
#undef FT_X

/* ---------------------------------------------------------------- data */

enum { VALS_NORMAL, VALS_TIES, VALS_SPECIAL, VALS_MODES };

/* Row values representable in dt: normal, heavily tied (few levels), or with NaN, +-inf,
 * +-0 sprinkled in. */
static void fill_values(float *h, size_t n, ref_rng *rng, int mode, ft_dtype dt)
{
    for (size_t i = 0; i < n; i++) {
        double v = 3.0 * ref_rng_normal(rng);
        if (mode == VALS_TIES)
            v = (double)ref_rng_range(rng, -3, 3);
        if (mode == VALS_SPECIAL) {
            switch (ref_rng_range(rng, 0, 40)) {
            case 0: v = NAN; break;
            case 1: v = INFINITY; break;
            case 2: v = -INFINITY; break;
            case 3: v = 0.0; break;
            case 4: v = -0.0; break;
            default: break;
            }
        }
        h[i] = (float)ref_round(v, dt);
    }
}

static int same_value(float a, float b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void *ws_alloc(size_t bytes)
{
    return bytes ? dev_alloc(bytes) : NULL;
}

/* update_logits' workspace as its launcher expects it on first use: zeroed. */
static void *logits_ws_alloc(size_t bytes)
{
    void *p = ws_alloc(bytes);
    if (p)
        FT_CHECK_CUDA(cudaMemset(p, 0, bytes));
    return p;
}

/* ---------------------------------------------------------------- top-K */

static void run_topk(ft_test *t, const topk_variant *tv, ref_rng *rng, int rows, int V, int k, int pad, int mode)
{
    const ft_dtype dt = tv->dt;
    const size_t es = ft_dtype_size(dt);
    const int64_t ld = V + pad;
    const size_t n = (size_t)rows * ld;
    float *h = (float *)malloc(n * sizeof(float));
    fill_values(h, n, rng, mode, dt);
    /* misaligned row starts when pad is odd: offset the buffer by one element */
    void *base = dev_alloc((n + 16) * es);
    void *x = (char *)base + (pad % 2 ? es : 0);
    dev_upload(x, h, n, dt);
    float *dv = (float *)dev_alloc((size_t)rows * k * sizeof(float));
    int *di = (int *)dev_alloc((size_t)rows * k * sizeof(int));
    dev_poison(dv, (size_t)rows * k * sizeof(float));
    dev_poison(di, (size_t)rows * k * sizeof(int));
    const size_t wb = tv->ws(rows, 1, V);
    void *ws = ws_alloc(wb);
    ft_status st = tv->topk(x, ld, rows, V, k, dv, di, ws, wb, 0);
    FT_EXPECT(t, st == FT_OK, "%s rows=%d V=%d k=%d: %s", tv->suffix, rows, V, k, ft_last_error());
    float *gv = (float *)malloc((size_t)rows * k * sizeof(float)), *rv = (float *)malloc(k * sizeof(float));
    int *gi = (int *)malloc((size_t)rows * k * sizeof(int)), *ri = (int *)malloc(k * sizeof(int));
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(gv, dv, (size_t)rows * k * sizeof(float), cudaMemcpyDeviceToHost));
    FT_CHECK_CUDA(cudaMemcpy(gi, di, (size_t)rows * k * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < rows && bad < 3; r++) {
        ref_topk(h + (size_t)r * ld, V, 0.0f, 0, k, rv, ri);
        for (int i = 0; i < k; i++) {
            if (gi[(size_t)r * k + i] != ri[i] || !same_value(gv[(size_t)r * k + i], rv[i])) {
                FT_EXPECT(t, 0, "%s rows=%d V=%d k=%d mode=%d pad=%d: row %d rank %d got (%d, %g) want (%d, %g)",
                          tv->suffix, rows, V, k, mode, pad, r, i, gi[(size_t)r * k + i], gv[(size_t)r * k + i],
                          ri[i], rv[i]);
                bad++;
                break;
            }
        }
    }
    free(h), free(gv), free(rv), free(gi), free(ri);
    cudaFree(base), cudaFree(dv), cudaFree(di), cudaFree(ws);
}

/* The top-K forms a test runs for K: the split form; for K <= 64 also the row form with
 * its own choice of blocks per row and with 3 blocks per row (shares and the second pass
 * on every shape). */
static int topk_forms(int K)
{
    return K <= 64 ? 3 : 1;
}

static void set_topk_form(int f)
{
    ft_topk_set_form(f == 0 ? FT_TOPK_FORM_SPLIT : f < 0 ? FT_TOPK_FORM_AUTO : FT_TOPK_FORM_ROW);
    ft_topk_set_row_blocks(f == 2 ? 3 : 0);
}

static void test_topk(ft_test *t)
{
    const topk_variant *tv = (const topk_variant *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ (uint64_t)tv->K * 77 ^ (uint64_t)tv->dt);
    const int K = tv->K;
    /* rows, V, pad: one row and many, V = k exactly, short rows, ragged vector tails,
     * vocabulary sizes of real models, padded / misaligned rows */
    const int shapes[][3] = {{1, K, 0},      {3, K + 1, 1},    {5, 37, 0},      {64, 1000, 0},   {2, 4097, 3},
                             {7, 32000, 0},  {1, 50257, 0},    {1, 128256, 0},  {130, 3000, 5},  {16, 151936, 0}};
    /* every form on every shape (the row form's candidate list overflows on ties and NaN
     * rows, and it runs warp lists instead) */
    for (int f = 0; f < topk_forms(K); f++) {
        set_topk_form(f);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int rows = shapes[s][0], V = shapes[s][1], pad = shapes[s][2];
            if (V < 1)
                continue;
            for (int mode = 0; mode < VALS_MODES; mode++) {
                const int k = mode == 1 ? (K > 1 ? K / 2 + 1 : 1) : K;
                if (k > V)
                    continue;
                run_topk(t, tv, &rng, rows, V, k, pad, mode);
            }
        }
    }
    set_topk_form(-1);
}

static void test_beam_topk(ft_test *t)
{
    const topk_variant *tv = (const topk_variant *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xbea3 ^ (uint64_t)tv->K);
    const ft_dtype dt = tv->dt;
    const int cases[][3] = {{1, 1, 50}, {4, 2, 1000}, {3, 4, 32000}, {2, 8, 777}, {1, 16, 5000}, {5, 3, 50257}};
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < topk_forms(tv->K) * ncases; c++) { /* each form on each case */
        set_topk_form(c / ncases);
        const int cc = c % ncases, B = cases[cc][0], beam = cases[cc][1], V = cases[cc][2];
        const int k = tv->K < beam * V ? tv->K : beam * V;
        const int rows = B * beam;
        const size_t n = (size_t)rows * V;
        float *h = (float *)malloc(n * sizeof(float)), *cum = (float *)malloc(rows * sizeof(float));
        fill_values(h, n, &rng, cc % 2 ? VALS_TIES : VALS_NORMAL, dt);
        for (int r = 0; r < rows; r++)
            cum[r] = cc == 0 ? 0.0f : (r % beam == 0 ? 0.0f : (cc == 2 ? -1e20f : (float)(-3.0 * ref_rng_uniform(&rng))));
        void *x = dev_alloc(n * ft_dtype_size(dt));
        dev_upload(x, h, n, dt);
        float *dcum = (float *)dev_alloc(rows * sizeof(float));
        FT_CHECK_CUDA(cudaMemcpy(dcum, cum, rows * sizeof(float), cudaMemcpyHostToDevice));
        float *dv = (float *)dev_alloc((size_t)B * k * sizeof(float));
        int *di = (int *)dev_alloc((size_t)B * k * sizeof(int));
        dev_poison(dv, (size_t)B * k * sizeof(float));
        dev_poison(di, (size_t)B * k * sizeof(int));
        const size_t wb = tv->ws(rows, beam, V);
        void *ws = ws_alloc(wb);
        ft_status st = tv->beam(x, V, dcum, B, beam, V, k, dv, di, ws, wb, 0);
        FT_EXPECT(t, st == FT_OK, "beam B=%d beam=%d V=%d: %s", B, beam, V, ft_last_error());
        float *gv = (float *)malloc((size_t)B * k * sizeof(float)), *rv = (float *)malloc(k * sizeof(float));
        int *gi = (int *)malloc((size_t)B * k * sizeof(int)), *ri = (int *)malloc(k * sizeof(int));
        FT_CHECK_CUDA(cudaDeviceSynchronize());
        FT_CHECK_CUDA(cudaMemcpy(gv, dv, (size_t)B * k * sizeof(float), cudaMemcpyDeviceToHost));
        FT_CHECK_CUDA(cudaMemcpy(gi, di, (size_t)B * k * sizeof(int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < B; b++) {
            ref_beam_topk(h + (size_t)b * beam * V, V, cum + b * beam, beam, V, k, rv, ri);
            for (int i = 0; i < k; i++)
                if (gi[b * k + i] != ri[i] || !same_value(gv[b * k + i], rv[i])) {
                    FT_EXPECT(t, 0, "beam B=%d beam=%d V=%d k=%d: item %d rank %d got (%d, %g) want (%d, %g)", B, beam,
                              V, k, b, i, gi[b * k + i], gv[b * k + i], ri[i], rv[i]);
                    break;
                }
        }
        free(h), free(cum), free(gv), free(rv), free(gi), free(ri);
        cudaFree(x), cudaFree(dcum), cudaFree(dv), cudaFree(di), cudaFree(ws);
    }
    set_topk_form(-1);
}

/* ---------------------------------------------------------------- sampling */

/* Chi-square of observed counts against expected probabilities (cells with expected
 * count < 5 pooled); returns the statistic and the degrees of freedom. */
static double chi_square(const int *counts, const double *prob, int V, int draws, int *df)
{
    double stat = 0.0, pool_o = 0.0, pool_e = 0.0;
    int cells = 0;
    for (int i = 0; i < V; i++) {
        const double e = prob[i] * draws;
        if (e <= 0.0)
            continue;
        if (e < 5.0) {
            pool_o += counts[i];
            pool_e += e;
            continue;
        }
        stat += (counts[i] - e) * (counts[i] - e) / e;
        cells++;
    }
    if (pool_e > 0.0) {
        stat += (pool_o - pool_e) * (pool_o - pool_e) / (pool_e > 1e-9 ? pool_e : 1e-9);
        cells++;
    }
    *df = cells > 1 ? cells - 1 : 1;
    return stat;
}

typedef enum samp_kind { SAMP_TOPK, SAMP_TOPP, SAMP_TOPP_SORTED } samp_kind;

typedef struct samp_ctx {
    samp_kind kind;
    const topk_variant *tv; /* SAMP_TOPK */
    ft_dtype dt;
} samp_ctx;

/* One sampling launch over `rows` rows of logits x (device, [rows, V]). */
static ft_status sample_once(const samp_ctx *c, const void *x, int rows, int V, const ft_sampling *s,
                             const ft_decode_io *io)
{
    if (c->kind == SAMP_TOPK) {
        const size_t wb = c->tv->ws(rows, 1, V);
        void *ws = ws_alloc(wb);
        ft_status st = c->tv->sample(x, V, rows, V, s, io, ws, wb, 0);
        FT_CHECK_CUDA(cudaDeviceSynchronize());
        cudaFree(ws);
        return st;
    }
    if (c->kind == SAMP_TOPP)
        return ft_topp_sampling(c->dt, x, V, rows, V, s, io, 0);
    const size_t wb = ft_topp_sorted_workspace_bytes(c->dt, rows, V);
    void *ws = ws_alloc(wb);
    ft_status st = ft_topp_sampling_sorted(c->dt, x, V, rows, V, s, io, ws, wb, 0);
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    cudaFree(ws);
    return st;
}

/* The reference set of one row: top-k (exact, ties by index) then top-p inside it
 * (samp: k = 0 means no top-k). in[] = 1 for members. */
static void reference_set(const float *row, int V, int k, double temp, double p, unsigned char *in)
{
    if (k > 0 && k < V) {
        float *vals = (float *)malloc(k * sizeof(float));
        int *idx = (int *)malloc(k * sizeof(int));
        ref_topk(row, V, 0.0f, 0, k, vals, idx);
        float *sub = (float *)malloc(k * sizeof(float));
        for (int i = 0; i < k; i++)
            sub[i] = row[idx[i]];
        unsigned char *sin = (unsigned char *)malloc(k);
        ref_topp_set(sub, k, temp, p, sin, NULL);
        memset(in, 0, V);
        for (int i = 0; i < k; i++)
            in[idx[i]] = sin[i];
        free(vals), free(idx), free(sub), free(sin);
        return;
    }
    ref_topp_set(row, V, temp, p, in, NULL);
}

/* Whether token g is a member of the set in[] (0 for a token outside [0, V)). */
static int in_set(const unsigned char *in, int V, int g)
{
    return g >= 0 && g < V && in[g];
}

/* Many rows of the same logits: the empirical distribution matches the reference set's
 * renormalised probabilities; every token is inside the set (computed with p slightly
 * above, so rounding at the boundary cannot fail it); the same seed repeats the tokens. */
static void check_distribution(ft_test *t, const samp_ctx *c, ref_rng *rng, int V, int k, double temp, double p,
                               int ties, int draws)
{
    const ft_dtype dt = c->dt;
    float *row = (float *)malloc(V * sizeof(float));
    for (int i = 0; i < V; i++)
        row[i] = (float)ref_round(ties ? (i < 2 ? 3.0 : i < 22 ? 1.0 : -4.0 + 0.001 * i) : 1.5 * ref_rng_normal(rng), dt);
    float *h = (float *)malloc((size_t)draws * V * sizeof(float));
    for (int r = 0; r < draws; r++)
        memcpy(h + (size_t)r * V, row, V * sizeof(float));
    void *x = dev_alloc((size_t)draws * V * ft_dtype_size(dt));
    dev_upload(x, h, (size_t)draws * V, dt);
    int *ids = (int *)dev_alloc(draws * sizeof(int));
    dev_poison(ids, draws * sizeof(int));
    ft_sampling s;
    memset(&s, 0, sizeof s);
    s.k = k, s.p = (float)p, s.temperature = (float)temp, s.seed = 1234, s.step = 7, s.end_id = -1;
    ft_decode_io io;
    memset(&io, 0, sizeof io);
    io.ids = ids;
    ft_status st = sample_once(c, x, draws, V, &s, &io);
    FT_EXPECT(t, st == FT_OK, "sampling V=%d k=%d p=%g: %s", V, k, p, ft_last_error());
    int *g = (int *)malloc(draws * sizeof(int)), *g2 = (int *)malloc(draws * sizeof(int));
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(g, ids, draws * sizeof(int), cudaMemcpyDeviceToHost));
    unsigned char *in = (unsigned char *)malloc(V), *in_hi = (unsigned char *)malloc(V);
    reference_set(row, V, k, temp, p, in);
    reference_set(row, V, k, temp, p < 1.0 ? fmin(1.0, p + 1e-4) : 1.0, in_hi);
    double *prob = (double *)malloc(V * sizeof(double));
    ref_set_probs(row, V, temp, in, prob);
    int *counts = (int *)calloc(V, sizeof(int));
    int outside = 0, first_bad = -1;
    for (int r = 0; r < draws; r++) {
        if (!in_set(in_hi, V, g[r])) {
            if (first_bad < 0)
                first_bad = g[r];
            outside++;
            continue;
        }
        counts[g[r]]++;
    }
    FT_EXPECT(t, outside == 0, "V=%d k=%d p=%g temp=%g form=%d: %d of %d draws outside the set (first: %d)", V, k, p,
              temp, (int)ft_topp_get_form(), outside, draws, first_bad);
    int df = 0;
    const double stat = chi_square(counts, prob, V, draws, &df), crit = ref_chi2_critical(df, 1e-6);
    FT_EXPECT(t, stat <= crit, "V=%d k=%d p=%g temp=%g ties=%d form=%d: chi-square %.1f > %.1f (df %d, %d draws)", V,
              k, p, temp, ties, (int)ft_topp_get_form(), stat, crit, df, draws);
    /* same seed and step: same tokens; another seed: different ones */
    dev_poison(ids, draws * sizeof(int));
    st = sample_once(c, x, draws, V, &s, &io);
    FT_CHECK_CUDA(cudaMemcpy(g2, ids, draws * sizeof(int), cudaMemcpyDeviceToHost));
    FT_EXPECT(t, st == FT_OK && memcmp(g, g2, draws * sizeof(int)) == 0, "V=%d: the same seed gave other tokens", V);
    int members = 0;
    for (int i = 0; i < V; i++)
        members += in[i];
    if (members > 1) {
        s.seed = 99;
        st = sample_once(c, x, draws, V, &s, &io);
        FT_CHECK_CUDA(cudaMemcpy(g2, ids, draws * sizeof(int), cudaMemcpyDeviceToHost));
        FT_EXPECT(t, st == FT_OK && memcmp(g, g2, draws * sizeof(int)) != 0, "V=%d: another seed gave the same tokens", V);
    }
    free(row), free(h), free(g), free(g2), free(in), free(in_hi), free(prob), free(counts);
    cudaFree(x), cudaFree(ids);
}

/* Prompt-aware, finished and greedy rows, per-row k / p / temperature; the state update. */
static void check_state(ft_test *t, const samp_ctx *c, ref_rng *rng, int V, int kmax, int rows)
{
    const ft_dtype dt = c->dt;
    const int step = 5, end_id = 3, pld = 9;
    float *h = (float *)malloc((size_t)rows * V * sizeof(float));
    fill_values(h, (size_t)rows * V, rng, VALS_NORMAL, dt);
    void *x = dev_alloc((size_t)rows * V * ft_dtype_size(dt));
    dev_upload(x, h, (size_t)rows * V, dt);
    int *plen = (int *)malloc(rows * sizeof(int)), *prompt = (int *)malloc((size_t)rows * pld * sizeof(int));
    int *len0 = (int *)malloc(rows * sizeof(int)), *kr = (int *)malloc(rows * sizeof(int));
    int *g = (int *)malloc(rows * sizeof(int)), *glen = (int *)malloc(rows * sizeof(int));
    float *pr = (float *)malloc(rows * sizeof(float)), *tr = (float *)malloc(rows * sizeof(float));
    bool *fin0 = (bool *)malloc(rows), *gfin = (bool *)malloc(rows);
    for (int r = 0; r < rows; r++) {
        plen[r] = r % 4 == 0 ? 7 : r % 4 == 1 ? 5 : 2; /* 7 > step: still in the prompt */
        for (int j = 0; j < pld; j++)
            prompt[r * pld + j] = (r * 31 + j * 7) % V;
        len0[r] = r;
        fin0[r] = r % 8 == 3;
        kr[r] = 1 + r % kmax;
        pr[r] = r % 3 == 0 ? 1.0f : 0.5f;
        tr[r] = r % 16 == 5 ? 0.0f : 0.7f; /* 0: greedy */
    }
    int *dplen = dev_upload_ints(plen, rows), *dprompt = dev_upload_ints(prompt, rows * pld);
    int *dlen = dev_upload_ints(len0, rows), *dk = dev_upload_ints(kr, rows);
    int *ids = (int *)dev_alloc(rows * sizeof(int));
    bool *dfin = (bool *)dev_alloc(rows);
    float *dp = (float *)dev_alloc(rows * sizeof(float)), *dt_ = (float *)dev_alloc(rows * sizeof(float));
    FT_CHECK_CUDA(cudaMemcpy(dfin, fin0, rows, cudaMemcpyHostToDevice));
    FT_CHECK_CUDA(cudaMemcpy(dp, pr, rows * sizeof(float), cudaMemcpyHostToDevice));
    FT_CHECK_CUDA(cudaMemcpy(dt_, tr, rows * sizeof(float), cudaMemcpyHostToDevice));
    dev_poison(ids, rows * sizeof(int));
    ft_sampling s;
    memset(&s, 0, sizeof s);
    s.k = c->kind == SAMP_TOPK ? kmax : 0, s.k_per_row = c->kind == SAMP_TOPK ? dk : NULL;
    s.p = 1.0f, s.p_per_row = dp, s.temperature = 1.0f, s.temperature_per_row = dt_;
    s.seed = 77, s.step = step, s.end_id = end_id;
    ft_decode_io io;
    io.ids = ids, io.lengths = dlen, io.finished = dfin, io.prompt = dprompt, io.prompt_lengths = dplen;
    io.prompt_ld = pld;
    ft_status st = sample_once(c, x, rows, V, &s, &io);
    FT_EXPECT(t, st == FT_OK, "state V=%d: %s", V, ft_last_error());
    FT_CHECK_CUDA(cudaMemcpy(g, ids, rows * sizeof(int), cudaMemcpyDeviceToHost));
    FT_CHECK_CUDA(cudaMemcpy(glen, dlen, rows * sizeof(int), cudaMemcpyDeviceToHost));
    FT_CHECK_CUDA(cudaMemcpy(gfin, dfin, rows, cudaMemcpyDeviceToHost));
    unsigned char *in = (unsigned char *)malloc(V);
    for (int r = 0; r < rows; r++) {
        const float *row = h + (size_t)r * V;
        if (plen[r] > step) {
            FT_EXPECT(t, g[r] == prompt[r * pld + step] && glen[r] == len0[r] && gfin[r] == fin0[r],
                      "row %d in its prompt: got id %d len %d, want %d %d", r, g[r], glen[r], prompt[r * pld + step],
                      len0[r]);
            continue;
        }
        if (fin0[r]) {
            FT_EXPECT(t, g[r] == end_id && glen[r] == len0[r] && gfin[r], "finished row %d: id %d len %d", r, g[r],
                      glen[r]);
            continue;
        }
        if (tr[r] <= 0.0f) {
            float v;
            int best;
            ref_topk(row, V, 0.0f, 0, 1, &v, &best);
            FT_EXPECT(t, g[r] == best, "greedy row %d: got %d want %d", r, g[r], best);
        } else {
            reference_set(row, V, c->kind == SAMP_TOPK ? kr[r] : 0, tr[r], pr[r] < 1.0f ? pr[r] + 1e-4 : 1.0, in);
            FT_EXPECT(t, in_set(in, V, g[r]), "row %d (k %d p %g): token %d outside the set", r, kr[r], pr[r],
                      g[r]);
        }
        FT_EXPECT(t, glen[r] == len0[r] + 1 && gfin[r] == (g[r] == end_id), "row %d: len %d fin %d after id %d", r,
                  glen[r], gfin[r], g[r]);
    }
    free(h), free(in), free(plen), free(prompt), free(len0), free(kr), free(g), free(glen), free(pr), free(tr);
    free(fin0), free(gfin);
    cudaFree(x), cudaFree(dplen), cudaFree(dprompt), cudaFree(dlen), cudaFree(dk), cudaFree(ids), cudaFree(dfin);
    cudaFree(dp), cudaFree(dt_);
}

static void test_topk_sampling(ft_test *t)
{
    const topk_variant *tv = (const topk_variant *)t->arg;
    samp_ctx c = {SAMP_TOPK, tv, tv->dt};
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x5a ^ (uint64_t)tv->K);
    const int K = tv->K;
    for (int f = 0; f < topk_forms(K); f++) {
        set_topk_form(f);
        check_distribution(t, &c, &rng, 300, K, 0.8, 1.0, 0, 20000);
        if (K >= 4)
            check_distribution(t, &c, &rng, 300, K, 1.3, 0.7, 0, 20000);
        check_distribution(t, &c, &rng, 5000, K, 1.0, 1.0, 0, 4000);
        check_distribution(t, &c, &rng, 64, K < 64 ? K : 64, 1.0, 1.0, 1, 8000); /* tied logits */
        check_state(t, &c, &rng, 1000, K, 64);
        /* few rows of a real vocabulary: each row over several first-pass blocks whose
         * lists the second pass merges (split form, and the row form with 3 blocks) */
        check_distribution(t, &c, &rng, 32000, K, 1.0, 1.0, 0, 64);
        check_state(t, &c, &rng, 32000, K, 64);
    }
    set_topk_form(-1);
}

static void test_topp_sampling(ft_test *t)
{
    const samp_ctx *cp = (const samp_ctx *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x70 ^ (uint64_t)cp->kind);
    /* the sort-free launcher in both its forms (the cluster form where it applies: sm_90,
     * rows up to 131072; p = 0.5 over a flat row makes many rows miss tries) */
    const ft_topp_form forms[2] = {FT_TOPP_FORM_ONE_BLOCK, FT_TOPP_FORM_CLUSTER};
    for (int f = 0; f < (cp->kind == SAMP_TOPP ? 2 : 1); f++) {
        ft_topp_set_form(forms[f]);
        check_distribution(t, cp, &rng, 300, 0, 0.8, 0.9, 0, 20000);
        check_distribution(t, cp, &rng, 1000, 0, 1.0, 0.5, 0, 20000);
        check_distribution(t, cp, &rng, 1000, 0, 0.6, 1.0, 0, 20000);
        check_distribution(t, cp, &rng, 4097, 0, 1.0, 0.95, 0, 4000);
        check_distribution(t, cp, &rng, 64, 0, 1.0, 0.6, 1, 8000); /* the cut falls inside 20 tied logits */
        check_distribution(t, cp, &rng, 64, 0, 1.0, 0.99, 1, 8000);
        check_distribution(t, cp, &rng, 50257, 0, 1.0, 0.9, 0, 400);
        /* large vocabularies (Llama 3; one past the cluster form's reach), few draws: the
         * set and the determinism are checked */
        check_distribution(t, cp, &rng, 128256, 0, 1.0, 0.9, 0, 200);
        check_distribution(t, cp, &rng, 151936, 0, 1.0, 0.9, 0, 100);
        check_state(t, cp, &rng, 1000, 1, 64);
        check_state(t, cp, &rng, 32000, 1, 64); /* 64 rows of a real vocabulary: greedy, prompt, finished rows */
        /* more rows than the device holds clusters at once (each cluster takes several, the
         * next one's share copied while it works on one), rows starting off 16-byte
         * boundaries (an odd V) */
        check_state(t, cp, &rng, 20001, 1, 1500);
    }
    ft_topp_set_form(FT_TOPP_FORM_AUTO);
}

/* The top-p cluster form alone, small enough for compute-sanitizer: flat rows at p = 0.5
 * (rounds of tries missing) and p = 0.02 (most rows miss every round and take the first
 * block's radix selection), a real vocabulary over few rows, and the prompt / finished /
 * greedy rows. */
static void test_topp_cluster(ft_test *t)
{
    const samp_ctx *cp = (const samp_ctx *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x71);
    ft_topp_set_form(FT_TOPP_FORM_CLUSTER);
    check_distribution(t, cp, &rng, 300, 0, 0.8, 0.9, 0, 3000);
    check_distribution(t, cp, &rng, 1000, 0, 1.0, 0.5, 0, 3000);
    check_distribution(t, cp, &rng, 1000, 0, 1.0, 0.02, 0, 3000);
    check_distribution(t, cp, &rng, 64, 0, 1.0, 0.6, 1, 2000);
    check_distribution(t, cp, &rng, 32000, 0, 1.0, 0.9, 0, 64);
    check_state(t, cp, &rng, 32000, 1, 64);
    check_state(t, cp, &rng, 5001, 1, 700); /* several rows a cluster */
    ft_topp_set_form(FT_TOPP_FORM_AUTO);
}

/* The sorted form, small enough for compute-sanitizer: one row at a time (no row pass in
 * the sort: 600 seeds drawn over the same row, each token in the set, their counts against
 * the set's probabilities), ties at the cut, rows long enough for several key blocks a row
 * (V > 16384), and the prompt / finished / greedy rows. */
static void test_topp_sorted_small(ft_test *t)
{
    const samp_ctx *cp = (const samp_ctx *)t->arg;
    const ft_dtype dt = cp->dt;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x72);
    check_distribution(t, cp, &rng, 300, 0, 0.8, 0.9, 0, 2000);
    check_distribution(t, cp, &rng, 64, 0, 1.0, 0.6, 1, 2000);
    check_state(t, cp, &rng, 20001, 1, 40);
    /* one row */
    const int V = 257, draws = 600;
    float *row = (float *)malloc(V * sizeof(float));
    for (int i = 0; i < V; i++)
        row[i] = (float)ref_round(1.5 * ref_rng_normal(&rng), dt);
    void *x = dev_alloc((size_t)V * ft_dtype_size(dt));
    dev_upload(x, row, V, dt);
    int *id = (int *)dev_alloc(sizeof(int));
    unsigned char *in = (unsigned char *)malloc(V), *in_hi = (unsigned char *)malloc(V);
    reference_set(row, V, 0, 0.9, 0.8, in);
    reference_set(row, V, 0, 0.9, 0.8 + 1e-4, in_hi);
    double *prob = (double *)malloc(V * sizeof(double));
    ref_set_probs(row, V, 0.9, in, prob);
    int *counts = (int *)calloc(V, sizeof(int));
    int outside = 0;
    ft_sampling s;
    memset(&s, 0, sizeof s);
    s.p = 0.8f, s.temperature = 0.9f, s.step = 2, s.end_id = -1;
    ft_decode_io io;
    memset(&io, 0, sizeof io);
    io.ids = id;
    for (int d = 0; d < draws; d++) {
        s.seed = 1000 + (unsigned long long)d;
        dev_poison(id, sizeof(int));
        const ft_status st = sample_once(cp, x, 1, V, &s, &io);
        int g = -1;
        FT_CHECK_CUDA(cudaMemcpy(&g, id, sizeof(int), cudaMemcpyDeviceToHost));
        if (st != FT_OK || !in_set(in_hi, V, g)) {
            if (outside++ == 0)
                FT_EXPECT(t, 0, "one row, seed %d: status %d, token %d outside the set (%s)", d, (int)st, g,
                          ft_last_error());
            continue;
        }
        counts[g]++;
    }
    FT_EXPECT(t, outside == 0, "one row: %d of %d draws outside the set", outside, draws);
    int df = 0;
    const double stat = chi_square(counts, prob, V, draws, &df), crit = ref_chi2_critical(df, 1e-6);
    FT_EXPECT(t, stat <= crit, "one row: chi-square %.1f > %.1f (df %d, %d draws)", stat, crit, df, draws);
    free(row), free(in), free(in_hi), free(prob), free(counts);
    cudaFree(x), cudaFree(id);
}

/* ---------------------------------------------------------------- logits, embeddings */

/* One update_logits call on random rows, checked against the double reference: finished
 * rows r % 7 == 1 (when use_fin), per-row temperatures (when per_row), in place (fp32
 * only) when in_place. ws / wb: the workspace, or NULL / 0. ban > 0 (with use_bias): tokens
 * banned by a bias of -inf, ban of them from V / 3 on (more than a block's slice in the
 * stream form, whose blocks then see nothing but -inf) and every 97th. */
static void check_update_logits(ft_test *t, ft_dtype dt, ref_rng *rng, int rows, int V, int mode, int use_bias,
                                int use_fin, int per_row, int in_place, int ban, void *ws, size_t wb)
{
    const size_t n = (size_t)rows * V;
    float *h = (float *)malloc(n * sizeof(float)), *bias = (float *)malloc(V * sizeof(float));
    fill_normal(h, n, rng, 0.0, 4.0, dt);
    fill_normal(bias, V, rng, 0.0, 1.0, dt);
    for (int j = 0; ban > 0 && j < V; j++)
        if ((j >= V / 3 && j < V / 3 + ban) || j % 97 == 3)
            bias[j] = -INFINITY;
    bool *fin = (bool *)malloc(rows);
    float *temp = (float *)malloc(rows * sizeof(float));
    for (int r = 0; r < rows; r++) {
        fin[r] = use_fin && r % 7 == 1;
        temp[r] = per_row ? 0.5f + 0.25f * r : 0.8f;
    }
    void *x = dev_alloc(n * ft_dtype_size(dt)), *db = dev_alloc(V * ft_dtype_size(dt));
    dev_upload(x, h, n, dt);
    dev_upload(db, bias, V, dt);
    bool *dfin = (bool *)dev_alloc(rows);
    float *dtemp = (float *)dev_alloc(rows * sizeof(float));
    float *out = in_place ? (float *)x : (float *)dev_alloc(n * sizeof(float));
    FT_CHECK_CUDA(cudaMemcpy(dfin, fin, rows, cudaMemcpyHostToDevice));
    FT_CHECK_CUDA(cudaMemcpy(dtemp, temp, rows * sizeof(float), cudaMemcpyHostToDevice));
    if (!in_place)
        dev_poison(out, n * sizeof(float));
    const int end_id = V > 5 ? 5 : 0;
    ft_status st = ft_update_logits(dt, x, V, rows, V, use_bias ? db : NULL, use_fin ? dfin : NULL, end_id, 0.8f,
                                    per_row ? dtemp : NULL, (ft_logits_mode)mode, out, V, ws, wb, 0);
    FT_EXPECT(t, st == FT_OK, "update_logits rows=%d V=%d mode=%d: %s", rows, V, mode, ft_last_error());
    float *g = (float *)malloc(n * sizeof(float));
    double *ref = (double *)malloc(n * sizeof(double));
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(g, out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < rows; r++)
        ref_update_logits(h + (size_t)r * V, use_bias ? bias : NULL, V, fin[r], end_id, temp[r], mode,
                          ref + (size_t)r * V);
    /* -inf entries (finished rows) must match exactly; the rest within fp32 math */
    int inf_bad = 0;
    for (size_t i = 0; i < n; i++)
        if (isinf(ref[i])) {
            inf_bad += !(isinf(g[i]) && g[i] < 0);
            g[i] = 0.0f, ref[i] = 0.0;
        }
    FT_EXPECT(t, inf_bad == 0, "update_logits rows=%d V=%d mode=%d: %d -inf entries differ", rows, V, mode, inf_bad);
    char what[128];
    snprintf(what, sizeof what, "update_logits rows=%d V=%d mode=%d ws=%zu%s%s", rows, V, mode, wb,
             in_place ? " in place" : "", ban > 0 && use_bias ? " banned tokens" : "");
    ft_expect_close(t, what, g, ref, n, mode == 1 ? 1e-7 : 2e-5, mode == 1 ? 2e-5 : 2e-6);
    free(h), free(bias), free(g), free(ref), free(fin), free(temp);
    cudaFree(x), cudaFree(db), cudaFree(dfin), cudaFree(dtemp);
    if (!in_place)
        cudaFree(out);
}

static void test_update_logits(ft_test *t)
{
    const ft_dtype dt = *(const ft_dtype *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x10 ^ (uint64_t)dt);
    /* 151936 and 300000: the single-read (cluster) form with shared memory and several
     * blocks per row; 1100000 is past its reach (581632 fp32, 1032192 fp16/bf16 values):
     * the one- and two-phase forms; 200 x 32000, 40 x 50257 and 40 x 128256: many rows.
     * With a workspace, rows of whole 16-byte vectors take the stream form on sm_90 where
     * its rule picks it (here 1-160 rows of 128256 and 2 of 151936 in fp16/bf16; in fp32
     * 3 rows of softmax and 17-160 rows, while 4 rows of log-softmax take the cluster form
     * with a workspace; test_update_logits_stream forces it elsewhere). Every third shape
     * of 50000 values or more bans tokens. */
    const int shapes[][2] = {{1, 1},      {3, 7},      {8, 1000},    {2, 32000},   {4, 50257},   {1, 128256},
                             {2, 151936}, {2, 300000}, {200, 32000}, {40, 50257},  {40, 128256}, {64, 128256},
                             {9, 50257},  {17, 128256}, {1, 1100000}, {2, 1100000}, {16, 32000}, {7, 128256},
                             {160, 128256}, {4, 128256}, {3, 128256}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const int rows = shapes[sh][0], V = shapes[sh][1];
        for (int mode = 0; mode < 3; mode++) {
            /* with a workspace (rows split over blocks when few, or the stream form) and
             * without (a block per row, or the cluster form) */
            const size_t wb = (mode + (int)sh) % 2 ? ft_update_logits_workspace_bytes(dt, rows, V) : 0;
            void *ws = logits_ws_alloc(wb);
            check_update_logits(t, dt, &rng, rows, V, mode, mode != 1, rows > 1, (int)(sh % 2), 0,
                                V >= 50000 && sh % 3 == 0 ? 2000 : 0, ws, wb);
            cudaFree(ws);
        }
    }
}

/* The stream form's workspace across calls: one workspace for calls of different row
 * counts (words that a longer call left must never read as current), the same rows in
 * place, and a launch at the epoch wrap, which zeroes the workspace for the next. */
static void test_update_logits_stream(ft_test *t)
{
    const ft_dtype dt = *(const ft_dtype *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x11 ^ (uint64_t)dt);
    const int V = 128256, most = 64;
    int arch = 0; /* the stream form is sm_90 code: elsewhere the forced form falls back */
    FT_EXPECT(t, ft_code_arch("test_update_logits_stream", &arch) == FT_OK, "ft_code_arch: %s", ft_last_error());
    if (arch < 90)
        FT_SKIP(t, "the stream form is sm_90 code; this program's kernels run as compute_%d here", arch);
    const size_t wb = ft_update_logits_workspace_bytes(dt, most, V);
    void *ws = logits_ws_alloc(wb);
    ft_logits_set_form(FT_LOGITS_FORM_STREAM); /* fp32 rows of 5-15 too, where the rule picks the cluster */
    const int rows[] = {64, 5, 64, 16, 33, 1, 64};
    for (int i = 0; i < (int)(sizeof rows / sizeof rows[0]); i++)
        check_update_logits(t, dt, &rng, rows[i], V, 1 + i % 2, i % 2, rows[i] > 1, i % 3 == 0, 0, 0, ws, wb);
    if (dt == FT_FP32)
        check_update_logits(t, dt, &rng, 24, V, FT_LOGITS_LOG_SOFTMAX, 1, 1, 1, 1, 0, ws, wb);
    /* the split of the block's working warps at its ends: one stats warp and 13 writers,
     * 13 stats warps and one writer, each mode */
    const int splits[] = {1, FT_LOGITS_STREAM_WORKERS - 1};
    for (int i = 0; i < 4; i++) {
        ft_logits_set_stream_stats(splits[i / 2]);
        check_update_logits(t, dt, &rng, i % 2 ? 64 : 37, V, 1 + i % 2, i % 2, 1, i / 2, 0, 0, ws, wb);
    }
    ft_logits_set_stream_stats(0);
    /* the wrapping launch: its results, then a workspace of zeros, then a launch from there */
    const unsigned long long last = FT_LOGITS_EPOCH_WRAP - 1;
    FT_CHECK_CUDA(cudaMemcpy(ws, &last, sizeof last, cudaMemcpyHostToDevice));
    check_update_logits(t, dt, &rng, 40, V, FT_LOGITS_LOG_SOFTMAX, 1, 1, 0, 0, 0, ws, wb);
    unsigned long long *hw = (unsigned long long *)malloc(wb);
    FT_CHECK_CUDA(cudaMemcpy(hw, ws, wb, cudaMemcpyDeviceToHost));
    size_t nonzero = 0;
    for (size_t i = 0; i < wb / 8; i++)
        nonzero += hw[i] != 0;
    FT_EXPECT(t, nonzero == 0, "update_logits stream: %zu workspace words not zero after the wrapping launch", nonzero);
    free(hw);
    check_update_logits(t, dt, &rng, 64, V, FT_LOGITS_SOFTMAX, 1, 1, 1, 0, 0, ws, wb);
    /* banned tokens: blocks whose slice of a row is all -inf, both modes */
    check_update_logits(t, dt, &rng, 64, V, FT_LOGITS_SOFTMAX, 1, 1, 1, 0, 3000, ws, wb);
    check_update_logits(t, dt, &rng, 37, V, FT_LOGITS_LOG_SOFTMAX, 1, 1, 0, 0, 3000, ws, wb);
    ft_logits_set_form(FT_LOGITS_FORM_AUTO);
    cudaFree(ws);
}

static void test_embedding(ft_test *t)
{
    const ft_dtype dt = *(const ft_dtype *)t->arg;
    const ref_tol tol = ref_tolerance(dt);
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xe0 ^ (uint64_t)dt);
    const int shapes[][4] = {/* V, N, B, S */ {50, 64, 3, 1}, {1000, 1024, 8, 5}, {37, 30, 2, 3}, {100, 4096, 4, 1},
                             {20, 2, 5, 2}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const int V = shapes[sh][0], N = shapes[sh][1], B = shapes[sh][2], S = shapes[sh][3];
        const int rows = B * S, max_pos = 64, start = 3;
        float *tab = (float *)malloc((size_t)V * N * sizeof(float));
        fill_normal(tab, (size_t)V * N, &rng, 0.0, 1.0, dt);
        int *ids = (int *)malloc(rows * sizeof(int)), *pos = (int *)malloc(rows * sizeof(int));
        for (int r = 0; r < rows; r++) {
            ids[r] = r == 1 ? V + 3 : r == 2 ? -1 : (int)ref_rng_range(&rng, 0, V - 1); /* two invalid ids */
            pos[r] = (int)ref_rng_range(&rng, 0, max_pos + 2);                           /* some past the table */
        }
        void *dtab = dev_alloc((size_t)V * N * ft_dtype_size(dt)), *dpt = dev_alloc((size_t)max_pos * N * ft_dtype_size(dt));
        void *dout = dev_alloc((size_t)rows * N * ft_dtype_size(dt));
        dev_upload(dtab, tab, (size_t)V * N, dt);
        int *dids = dev_upload_ints(ids, rows), *dpos = dev_upload_ints(pos, rows);
        ft_status st = ft_sine_position_table(dt, dpt, max_pos, N, 0);
        FT_EXPECT(t, st == FT_OK, "sine table N=%d: %s", N, ft_last_error());
        float *gpt = (float *)malloc((size_t)max_pos * N * sizeof(float));
        double *rpt = (double *)malloc((size_t)max_pos * N * sizeof(double));
        dev_download(gpt, dpt, (size_t)max_pos * N, dt);
        for (int p = 0; p < max_pos; p++)
            for (int i = 0; i < N; i++)
                rpt[(size_t)p * N + i] = ref_sine_position(p, i, N);
        ft_expect_close(t, "sine table", gpt, rpt, (size_t)max_pos * N, tol.atol + 1e-5, tol.rtol);
        const float scale = sqrtf((float)N);
        float *g = (float *)malloc((size_t)rows * N * sizeof(float));
        double *ref = (double *)malloc((size_t)rows * N * sizeof(double));
        for (int form = 0; form < 3; form++) { /* 0: table + per-row positions, 1: sine on the fly, 2: none */
            dev_poison(dout, (size_t)rows * N * ft_dtype_size(dt));
            st = ft_embedding_lookup(dt, dtab, V, N, dids, rows, S, start, form == 0 ? dpos : NULL, scale,
                                     form == 0 ? dpt : NULL, max_pos, form == 1, dout, 0);
            FT_EXPECT(t, st == FT_OK, "embedding V=%d N=%d form=%d: %s", V, N, form, ft_last_error());
            dev_download(g, dout, (size_t)rows * N, dt);
            for (int r = 0; r < rows; r++) {
                const int id = ids[r], ok = id >= 0 && id < V;
                const int p = form == 0 ? pos[r] : start + r % S;
                for (int i = 0; i < N; i++) {
                    double pe = 0.0;
                    if (form == 0 && p >= 0 && p < max_pos)
                        pe = gpt[(size_t)p * N + i]; /* the table as stored */
                    else if (form == 1)
                        pe = ref_sine_position(p, i, N);
                    ref[(size_t)r * N + i] = (ok ? (double)tab[(size_t)id * N + i] * scale : 0.0) + pe;
                }
            }
            char what[64];
            snprintf(what, sizeof what, "embedding V=%d N=%d form=%d", V, N, form);
            ft_expect_close(t, what, g, ref, (size_t)rows * N, tol.atol + 1e-5, tol.rtol);
        }
        free(tab), free(ids), free(pos), free(gpt), free(rpt), free(g), free(ref);
        cudaFree(dtab), cudaFree(dpt), cudaFree(dout), cudaFree(dids), cudaFree(dpos);
    }
}

/* ---------------------------------------------------------------- search kernels */

FT_GPU_TEST(search_kernels)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x5e);
    /* init_decoding */
    {
        const int B = 300, beam = 4, R = B * beam;
        bool *f = (bool *)dev_alloc(R);
        int *len = (int *)dev_alloc(R * 4), *ids = (int *)dev_alloc(R * 4);
        float *cum = (float *)dev_alloc(R * 4);
        dev_poison(f, R), dev_poison(len, R * 4), dev_poison(ids, R * 4), dev_poison(cum, R * 4);
        FT_EXPECT(t, ft_init_decoding(f, len, ids, cum, B, beam, 17, 0) == FT_OK, "init: %s", ft_last_error());
        bool *hf = (bool *)malloc(R);
        int *hl = (int *)malloc(R * 4), *hi = (int *)malloc(R * 4);
        float *hc = (float *)malloc(R * 4);
        FT_CHECK_CUDA(cudaMemcpy(hf, f, R, cudaMemcpyDeviceToHost));
        FT_CHECK_CUDA(cudaMemcpy(hl, len, R * 4, cudaMemcpyDeviceToHost));
        FT_CHECK_CUDA(cudaMemcpy(hi, ids, R * 4, cudaMemcpyDeviceToHost));
        FT_CHECK_CUDA(cudaMemcpy(hc, cum, R * 4, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int r = 0; r < R; r++)
            bad += hf[r] || hl[r] != 0 || hi[r] != 17 || hc[r] != (r % beam ? -1e20f : 0.0f);
        FT_EXPECT(t, bad == 0, "init_decoding: %d rows wrong", bad);
        free(hf), free(hl), free(hi), free(hc);
        cudaFree(f), cudaFree(len), cudaFree(ids), cudaFree(cum);
    }
    /* kv_cache_reorder, both layouts, 2- and 4-byte elements, 16-byte and narrower paths */
    /* parents: 0 random, 1 all the item's first beam (one read, many writes), 2 the last;
     * segments past one 512-word chunk (partial last chunks), beam past 32 (no fan-out) */
    const int kvcases[][7] = {/* B, beam, hkv, lmax, d, es, parents */ {2, 3, 4, 16, 64, 2, 0}, {3, 2, 2, 10, 7, 2, 0},
                              {1, 4, 3, 8, 5, 4, 0},  {2, 2, 1, 4, 128, 4, 0}, {4, 16, 2, 40, 128, 2, 1},
                              {1, 40, 2, 6, 64, 2, 0}, {2, 8, 3, 20, 40, 4, 2}, {8, 8, 1, 70, 64, 2, 0}};
    for (size_t c = 0; c < sizeof kvcases / sizeof kvcases[0]; c++) {
        const int B = kvcases[c][0], beam = kvcases[c][1], hkv = kvcases[c][2], lmax = kvcases[c][3], d = kvcases[c][4];
        const int es = kvcases[c][5], R = B * beam, layers = 2, len = lmax - 2;
        for (int layout = 0; layout < 2; layout++) {
            const size_t cache = (size_t)R * hkv * lmax * d * es, total = cache * layers;
            unsigned char *hs = (unsigned char *)malloc(total), *hd = (unsigned char *)malloc(total);
            for (size_t i = 0; i < total; i++)
                hs[i] = (unsigned char)ref_rng_u64(&rng);
            int parent[64];
            for (int r = 0; r < R; r++)
                parent[r] = kvcases[c][6] == 1 ? 0 : kvcases[c][6] == 2 ? beam - 1 : (int)ref_rng_range(&rng, 0, beam - 1);
            void *src = dev_alloc(total), *dst = dev_alloc(total);
            int *dpar = dev_upload_ints(parent, R);
            FT_CHECK_CUDA(cudaMemcpy(src, hs, total, cudaMemcpyHostToDevice));
            FT_CHECK_CUDA(cudaMemset(dst, 0xab, total));
            ft_status st = ft_kv_cache_reorder(src, dst, dpar, layers, layout ? FT_KV_LBHD : FT_KV_BHLD, B, beam, hkv,
                                               lmax, d, es, len, 0);
            FT_EXPECT(t, st == FT_OK, "kv reorder: %s", ft_last_error());
            FT_CHECK_CUDA(cudaMemcpy(hd, dst, total, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int l = 0; l < layers; l++)
                for (int r = 0; r < R; r++)
                    for (int h = 0; h < hkv; h++)
                        for (int s = 0; s < lmax; s++) {
                            const int pr = r - r % beam + parent[r];
                            const size_t row = (size_t)d * es;
                            const size_t o = layout ? (((size_t)s * R + r) * hkv + h) * row
                                                    : (((size_t)r * hkv + h) * lmax + s) * row;
                            const size_t po = layout ? (((size_t)s * R + pr) * hkv + h) * row
                                                     : (((size_t)pr * hkv + h) * lmax + s) * row;
                            for (size_t e = 0; e < row; e++) {
                                const unsigned char want = s < len ? hs[l * cache + po + e] : 0xab;
                                bad += hd[l * cache + o + e] != want;
                            }
                        }
            FT_EXPECT(t, bad == 0, "kv reorder case %zu layout %d: %d bytes wrong", c, layout, bad);
            free(hs), free(hd);
            cudaFree(src), cudaFree(dst), cudaFree(dpar);
        }
    }
    /* cache_indirection_update: from a random table and from the identity (src NULL) */
    const int indcases[][4] = {/* B, beam, lmax, step */ {3, 4, 50, 49}, {2, 2, 7, 0}, {5, 3, 1000, 777}};
    for (size_t c = 0; c < 3; c++) {
        const int B = indcases[c][0], beam = indcases[c][1], lmax = indcases[c][2], step = indcases[c][3];
        const int R = B * beam;
        const size_t n = (size_t)R * lmax;
        int *hs = (int *)malloc(n * 4), *hd = (int *)malloc(n * 4), parent[64];
        for (size_t i = 0; i < n; i++)
            hs[i] = (int)ref_rng_range(&rng, 0, beam - 1);
        for (int r = 0; r < R; r++)
            parent[r] = (int)ref_rng_range(&rng, 0, beam - 1);
        int *src = dev_upload_ints(hs, (int)n), *dpar = dev_upload_ints(parent, R);
        int *dst = (int *)dev_alloc(n * 4);
        for (int identity = 0; identity < 2; identity++) {
            FT_CHECK_CUDA(cudaMemset(dst, 0x7b, n * 4));
            ft_status st = ft_cache_indirection_update(identity ? NULL : src, dst, dpar, B, beam, lmax, step, 0);
            FT_EXPECT(t, st == FT_OK, "cache indirection: %s", ft_last_error());
            FT_CHECK_CUDA(cudaMemcpy(hd, dst, n * 4, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int r = 0; r < R; r++)
                for (int s2 = 0; s2 < lmax; s2++) {
                    const int pr = r - r % beam + parent[r];
                    const int want = s2 > step                ? 0x7b7b7b7b /* untouched */
                                     : s2 == step || identity ? parent[r]
                                                              : hs[(size_t)pr * lmax + s2];
                    bad += hd[(size_t)r * lmax + s2] != want;
                }
            FT_EXPECT(t, bad == 0, "cache indirection case %zu identity %d: %d entries wrong", c, identity, bad);
        }
        free(hs), free(hd);
        cudaFree(src), cudaFree(dst), cudaFree(dpar);
    }
    /* count_finished, remove_prompt_tokens, gather_tree */
    {
        const int n = 3000;
        bool *hf = (bool *)malloc(n);
        int want = 0;
        for (int i = 0; i < n; i++)
            want += hf[i] = ref_rng_range(&rng, 0, 2) == 0;
        bool *df = (bool *)dev_alloc(n);
        int *dc = (int *)dev_alloc(4), got = -1;
        FT_CHECK_CUDA(cudaMemcpy(df, hf, n, cudaMemcpyHostToDevice));
        FT_EXPECT(t, ft_count_finished(df, n, dc, 0) == FT_OK, "count: %s", ft_last_error());
        FT_CHECK_CUDA(cudaMemcpy(&got, dc, 4, cudaMemcpyDeviceToHost));
        FT_EXPECT(t, got == want, "count_finished: got %d want %d", got, want);
        free(hf), cudaFree(df), cudaFree(dc);
    }
    {
        const int B = 4, steps = 6, start = 3, ld = 8, pad = -7;
        const int plen[4] = {3, 5, 4, 6}, glen[4] = {3, 1, 2, 0};
        int hist[24], ref[32], g[32];
        for (int i = 0; i < steps * B; i++)
            hist[i] = 100 + i;
        int *dh = dev_upload_ints(hist, steps * B), *dp = dev_upload_ints(plen, B), *dg = dev_upload_ints(glen, B);
        int *dout = (int *)dev_alloc(sizeof ref);
        FT_EXPECT(t, ft_remove_prompt_tokens(dh, steps, B, dp, start, dg, pad, dout, ld, 0) == FT_OK, "remove: %s",
                  ft_last_error());
        FT_CHECK_CUDA(cudaMemcpy(g, dout, sizeof g, cudaMemcpyDeviceToHost));
        for (int b = 0; b < B; b++) {
            const int first = plen[b] - start;
            int nb = steps - first < glen[b] ? steps - first : glen[b];
            for (int j = 0; j < ld; j++)
                ref[b * ld + j] = j < nb ? hist[(first + j) * B + b] : pad;
        }
        FT_EXPECT(t, memcmp(g, ref, sizeof g) == 0, "remove_prompt_tokens differs");
        cudaFree(dh), cudaFree(dp), cudaFree(dg), cudaFree(dout);
    }
    {
        const int B = 3, beam = 4, R = B * beam, steps = 7;
        int ids[7 * 12], par[7 * 12], ref[12 * 7], g[12 * 7];
        for (int i = 0; i < steps * R; i++) {
            ids[i] = (int)ref_rng_range(&rng, 0, 999);
            par[i] = (int)ref_rng_range(&rng, 0, beam - 1);
        }
        for (int r = 0; r < R; r++) {
            int cur = r;
            for (int s = steps - 1; s >= 0; s--) {
                ref[r * steps + s] = ids[s * R + cur];
                cur = r - r % beam + par[s * R + cur];
            }
        }
        int *di = dev_upload_ints(ids, steps * R), *dp = dev_upload_ints(par, steps * R);
        int *dout = (int *)dev_alloc(sizeof g);
        FT_EXPECT(t, ft_beam_gather_tree(di, dp, steps, B, beam, dout, 0) == FT_OK, "gather: %s", ft_last_error());
        FT_CHECK_CUDA(cudaMemcpy(g, dout, sizeof g, cudaMemcpyDeviceToHost));
        FT_EXPECT(t, memcmp(g, ref, sizeof g) == 0, "beam_gather_tree differs");
        cudaFree(di), cudaFree(dp), cudaFree(dout);
    }
}

/* Beam search over several steps: update_logits (log-softmax, finished rows), beam_topk
 * with cum_log_probs, beam_update, KV reorder and gather_tree, each step checked against
 * the reference fed the same inputs; end_id is made likely so beams finish on the way. */
static void test_beam_search(ft_test *t)
{
    const ft_dtype dt = *(const ft_dtype *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb5 ^ (uint64_t)dt);
    const int B = 3, V = 500, end_id = 2, steps = 8;
    for (int beam = 1; beam <= 8; beam *= 2) {
        const int R = B * beam, k = beam;
        float *logits = (float *)malloc((size_t)R * V * sizeof(float));
        void *dx = dev_alloc((size_t)R * V * ft_dtype_size(dt));
        float *dlp = (float *)dev_alloc((size_t)R * V * sizeof(float)), *dcum = (float *)dev_alloc(R * 4);
        float *dv = (float *)dev_alloc((size_t)B * k * 4);
        int *di = (int *)dev_alloc((size_t)B * k * 4), *dpar = (int *)dev_alloc(R * 4), *dword = (int *)dev_alloc(R * 4);
        int *dlen = (int *)dev_alloc(R * 4), *dhist = (int *)dev_alloc((size_t)steps * R * 4);
        int *dphist = (int *)dev_alloc((size_t)steps * R * 4);
        bool *dfin = (bool *)dev_alloc(R);
        FT_EXPECT(t, ft_init_decoding(dfin, dlen, dword, dcum, B, beam, 1, 0) == FT_OK, "init: %s", ft_last_error());
        float *cum = (float *)malloc(R * 4), *lp = (float *)malloc((size_t)R * V * 4), *cv = (float *)malloc(k * 4);
        int *len = (int *)malloc(R * 4), *par = (int *)malloc(R * 4), *word = (int *)malloc(R * 4), *ci = (int *)malloc(k * 4);
        bool *fin = (bool *)malloc(R);
        int *hist = (int *)malloc((size_t)steps * R * 4), *phist = (int *)malloc((size_t)steps * R * 4);
        for (int r = 0; r < R; r++)
            cum[r] = r % beam ? -1e20f : 0.0f, len[r] = 0, fin[r] = false;
        const size_t wb = ft_topk_workspace_bytes(FT_FP32, R, beam, V, k);
        void *ws = ws_alloc(wb);
        int bad = 0;
        for (int s = 0; s < steps && !bad; s++) {
            fill_normal(logits, (size_t)R * V, &rng, 0.0, 2.0, dt);
            for (int r = 0; r < R; r++)
                if (ref_rng_range(&rng, 0, 3) == 0)
                    logits[(size_t)r * V + end_id] = (float)ref_round(6.0, dt);
            dev_upload(dx, logits, (size_t)R * V, dt);
            ft_status st = ft_update_logits(dt, dx, V, R, V, NULL, dfin, end_id, 1.0f, NULL, FT_LOGITS_LOG_SOFTMAX,
                                            dlp, V, NULL, 0, 0);
            st = st == FT_OK ? ft_beam_topk(FT_FP32, dlp, V, dcum, B, beam, V, k, dv, di, ws, wb, 0) : st;
            st = st == FT_OK ? ft_beam_update(dv, di, k, B, beam, V, end_id, dcum, dpar, dword, dhist + s * R, dlen, dfin, 0)
                             : st;
            FT_CHECK_CUDA(cudaMemcpy(dphist + s * R, dpar, R * 4, cudaMemcpyDeviceToDevice));
            FT_EXPECT(t, st == FT_OK, "beam=%d step %d: %s", beam, s, ft_last_error());
            /* the reference step on the GPU's log-probs (checked against double first) */
            FT_CHECK_CUDA(cudaDeviceSynchronize());
            FT_CHECK_CUDA(cudaMemcpy(lp, dlp, (size_t)R * V * 4, cudaMemcpyDeviceToHost));
            double *rl = (double *)malloc(V * sizeof(double));
            for (int r = 0; r < R && !bad; r++) {
                ref_update_logits(logits + (size_t)r * V, NULL, V, fin[r], end_id, 1.0, 2, rl);
                for (int j = 0; j < V; j++)
                    if (isinf(rl[j]) ? !(isinf(lp[(size_t)r * V + j]) && lp[(size_t)r * V + j] < 0)
                                     : fabs(lp[(size_t)r * V + j] - rl[j]) > 2e-5 + 2e-6 * fabs(rl[j])) {
                        FT_EXPECT(t, 0, "beam=%d step %d row %d col %d: log-prob %g want %g", beam, s, r, j,
                                  lp[(size_t)r * V + j], rl[j]);
                        bad = 1;
                        break;
                    }
            }
            free(rl);
            for (int b = 0; b < B; b++) {
                ref_beam_topk(lp + (size_t)b * beam * V, V, cum + b * beam, beam, V, k, cv, ci);
                ref_beam_update(cv, ci, beam, V, end_id, cum + b * beam, par + b * beam, word + b * beam, len + b * beam,
                                fin + b * beam);
            }
            for (int r = 0; r < R; r++)
                hist[s * R + r] = word[r], phist[s * R + r] = par[r];
            float gc[64];
            int gp[64], gw[64], gl[64];
            bool gf[64];
            FT_CHECK_CUDA(cudaMemcpy(gc, dcum, R * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(gp, dpar, R * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(gw, dword, R * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(gl, dlen, R * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(gf, dfin, R, cudaMemcpyDeviceToHost));
            for (int r = 0; r < R && !bad; r++)
                if (gc[r] != cum[r] || gp[r] != par[r] || gw[r] != word[r] || gl[r] != len[r] || gf[r] != fin[r]) {
                    FT_EXPECT(t, 0, "beam=%d step %d beam row %d: got (cum %g parent %d word %d len %d fin %d) want "
                              "(%g %d %d %d %d)", beam, s, r, gc[r], gp[r], gw[r], gl[r], gf[r], cum[r], par[r], word[r],
                              len[r], fin[r]);
                    bad = 1;
                }
        }
        if (!bad) { /* the whole sequences */
            int *dout = (int *)dev_alloc((size_t)R * steps * 4), *g = (int *)malloc((size_t)R * steps * 4);
            FT_EXPECT(t, ft_beam_gather_tree(dhist, dphist, steps, B, beam, dout, 0) == FT_OK, "gather: %s",
                      ft_last_error());
            FT_CHECK_CUDA(cudaMemcpy(g, dout, (size_t)R * steps * 4, cudaMemcpyDeviceToHost));
            for (int r = 0; r < R && !bad; r++) {
                int cur = r;
                for (int s = steps - 1; s >= 0; s--) {
                    if (g[r * steps + s] != hist[s * R + cur]) {
                        FT_EXPECT(t, 0, "beam=%d: sequence %d differs at step %d", beam, r, s);
                        bad = 1;
                        break;
                    }
                    cur = r - r % beam + phist[s * R + cur];
                }
            }
            cudaFree(dout), free(g);
        }
        free(logits), free(cum), free(lp), free(cv), free(len), free(par), free(word), free(ci), free(fin), free(hist);
        free(phist);
        cudaFree(dx), cudaFree(dlp), cudaFree(dcum), cudaFree(dv), cudaFree(di), cudaFree(dpar), cudaFree(dword);
        cudaFree(dlen), cudaFree(dhist), cudaFree(dphist), cudaFree(dfin), cudaFree(ws);
    }
}

/* ---------------------------------------------------------------- registration */

static samp_ctx topp_ctx[2 * 3];

__attribute__((constructor)) static void register_decoding_tests(void)
{
    static char names[512][64];
    int n = 0;
    for (size_t i = 0; i < sizeof topk_variants / sizeof topk_variants[0]; i++) {
        const topk_variant *tv = &topk_variants[i];
        snprintf(names[n], 64, "topk_%s", tv->suffix);
        ft_test_register(names[n++], test_topk, (void *)tv, 1);
        snprintf(names[n], 64, "beam_topk_%s", tv->suffix);
        ft_test_register(names[n++], test_beam_topk, (void *)tv, 1);
        snprintf(names[n], 64, "topk_sampling_%s", tv->suffix);
        ft_test_register(names[n++], test_topk_sampling, (void *)tv, 1);
    }
    const size_t nd = sizeof decoding_dtypes / sizeof decoding_dtypes[0];
    for (size_t i = 0; i < nd && i < 3; i++) {
        const ft_dtype *dt = &decoding_dtypes[i];
        const char *dn = ft_dtype_name(*dt);
        snprintf(names[n], 64, "update_logits_%s", dn);
        ft_test_register(names[n++], test_update_logits, (void *)dt, 1);
        snprintf(names[n], 64, "update_logits_stream_%s", dn);
        ft_test_register(names[n++], test_update_logits_stream, (void *)dt, 1);
        snprintf(names[n], 64, "embedding_%s", dn);
        ft_test_register(names[n++], test_embedding, (void *)dt, 1);
        topp_ctx[2 * i] = (samp_ctx){SAMP_TOPP, NULL, *dt};
        topp_ctx[2 * i + 1] = (samp_ctx){SAMP_TOPP_SORTED, NULL, *dt};
        snprintf(names[n], 64, "topp_sampling_%s", dn);
        ft_test_register(names[n++], test_topp_sampling, &topp_ctx[2 * i], 1);
        snprintf(names[n], 64, "topp_cluster_%s", dn);
        ft_test_register(names[n++], test_topp_cluster, &topp_ctx[2 * i], 1);
        snprintf(names[n], 64, "topp_sampling_sorted_%s", dn);
        ft_test_register(names[n++], test_topp_sampling, &topp_ctx[2 * i + 1], 1);
        snprintf(names[n], 64, "topp_sorted_small_%s", dn);
        ft_test_register(names[n++], test_topp_sorted_small, &topp_ctx[2 * i + 1], 1);
        snprintf(names[n], 64, "beam_search_%s", dn);
        ft_test_register(names[n++], test_beam_search, (void *)dt, 1);
    }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
