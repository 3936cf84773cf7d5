/* GPU tests of the continuous-batching inferencer (catalog §6): the kernels of
 * ft/batching_<dtype>.cuh through ft/batching.cuh for every generated dtype, against the C
 * references in ref/ref_batching.c, and examples/inferencer.cuh with the item processor
 * (ft/items.h) against the seed's model run on the CPU for each item alone. Shapes from one
 * element up, rows off the 16-byte vectors and misaligned pointers (the element-wise forms),
 * per-slot lengths from 0 past the capacity (clamped), forced and automatic splits.
 * Outputs are poisoned (NaN) before every launch; what a kernel must not write is checked
 * to still be poison. */
#include <math.h>
#include <string.h>

#include "ft/batching.cuh"
#include "ft/items.h"
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "inferencer.cuh"
#include "ref/ref_batching.h"

#define FT_X(sfx, en) en,
static const ft_dtype batch_dtypes[] = {FT_BATCHING_VARIANTS(FT_X)};
#undef FT_X
#define NDT (int)(sizeof batch_dtypes / sizeof batch_dtypes[0])

static float *rand_floats(size_t n, ref_rng *rng, double sd, ft_dtype dt)
{
    float *h = (float *)malloc(n * sizeof(float) + 4);
    fill_normal(h, n, rng, 0.0, sd, dt);
    return h;
}

static void *dev_floats_as(const float *h, size_t n, ft_dtype dt)
{
    void *d = dev_alloc(n * ft_dtype_size(dt) + 16);
    dev_upload(d, h, n, dt);
    return d;
}

static int *dev_ints_back(const int *d, int n)
{
    int *h = (int *)malloc((size_t)n * sizeof(int) + 4);
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(h, d, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
    return h;
}

/* bits of a float that must be the all-ones poison */
static int is_poison32(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u == 0xffffffffu;
}

/* ---------------------------------------------------------------- slot insertion */

FT_GPU_TEST(batching_insert_items)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb1);
    const int cases[][5] = {/* B, N, rows_per_item, ld_emb, ld_x */
                            {5, 64, 4, 64, 64},
                            {7, 37, 3, 40, 41},
                            {1, 8, 1, 8, 8},
                            {33, 1000, 6, 1000, 1024}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        for (int c = 0; c < 4; c++) {
            const int B = cases[c][0], N = cases[c][1], P = cases[c][2], lde = cases[c][3], ldx = cases[c][4];
            const size_t ne = (size_t)B * P * lde, nx = (size_t)B * ldx;
            float *emb = rand_floats(ne, &rng, 1.0, dt), *x0 = rand_floats(nx, &rng, 1.0, dt);
            int idx[64], nlen[64], len0[64];
            int perm[64];
            for (int i = 0; i < B; i++)
                perm[i] = i;
            for (int i = B - 1; i > 0; i--) { /* new items in a shuffled slot order */
                const int j = (int)ref_rng_range(&rng, 0, i), s = perm[i];
                perm[i] = perm[j], perm[j] = s;
            }
            for (int b = 0; b < B; b++) {
                const int kind = (int)ref_rng_range(&rng, 0, 3);
                idx[b] = kind == 0 ? FT_SLOT_KEEP : kind == 1 ? FT_SLOT_EMPTY : perm[b];
                nlen[b] = (int)ref_rng_range(&rng, 1, P);
                len0[b] = (int)ref_rng_range(&rng, 1, 50);
            }
            nlen[0] = 0;     /* an invalid length empties its slot */
            nlen[B - 1] = P; /* the last row of an item */
            if (B > 2)
                nlen[1] = P + 1;
            void *de = dev_floats_as(emb, ne, dt), *dx = dev_floats_as(x0, nx, dt);
            int *didx = dev_upload_ints(idx, B), *dnl = dev_upload_ints(nlen, B), *dl = dev_upload_ints(len0, B);
            ft_status st = ft_insert_items(dt, didx, dnl, de, lde, P, dx, ldx, dl, B, N, 0);
            FT_EXPECT(t, st == FT_OK, "%s insert case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gx = (float *)malloc(nx * 4);
            dev_download(gx, dx, nx, dt);
            int *gl = dev_ints_back(dl, B);
            size_t bad = 0;
            for (int b = 0; b < B; b++) {
                int want_len = len0[b];
                const float *src = NULL;
                if (idx[b] >= 0) {
                    const int L = nlen[idx[b]];
                    if (L >= 1 && L <= P) {
                        want_len = L;
                        src = emb + ((size_t)idx[b] * P + L - 1) * lde;
                    } else {
                        want_len = 0;
                    }
                } else if (idx[b] == FT_SLOT_EMPTY) {
                    want_len = 0;
                }
                bad += gl[b] != want_len;
                for (int n = 0; n < ldx; n++) {
                    const float want = src && n < N ? src[n] : x0[(size_t)b * ldx + n];
                    bad += gx[(size_t)b * ldx + n] != want;
                }
            }
            FT_EXPECT(t, bad == 0, "%s insert case %d: %zu values wrong", ft_dtype_name(dt), c, bad);
            FT_CHECK_CUDA(cudaFree(de));
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(didx));
            FT_CHECK_CUDA(cudaFree(dnl));
            FT_CHECK_CUDA(cudaFree(dl));
            free(emb), free(x0), free(gx), free(gl);
        }
    }
}

/* ---------------------------------------------------------------- caches */

FT_GPU_TEST(batching_fill_new_kv_cache)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb2);
    const int cases[][6] = {/* B, E, S, rows_per_item, ld_new, include_last */
                            {3, 64, 40, 40, 128, 0},
                            {5, 70, 33, 17, 70, 1},
                            {2, 1, 5, 5, 1, 0},
                            {4, 130, 200, 150, 260, 1},
                            {2, 8, 10, 16, 8, 1}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int c = 0; c < 5; c++) {
            const int B = cases[c][0], E = cases[c][1], S = cases[c][2], P = cases[c][3], ld = cases[c][4];
            const int last = cases[c][5];
            const size_t nn = (size_t)B * P * ld, nc = (size_t)B * E * S;
            float *kn = rand_floats(nn, &rng, 1.0, dt), *vn = rand_floats(nn, &rng, 1.0, dt);
            int idx[8], nlen[8];
            for (int b = 0; b < B; b++) {
                idx[b] = (b % 3 == 1) ? FT_SLOT_KEEP : B - 1 - b; /* items in reverse slot order */
                nlen[b] = (int)ref_rng_range(&rng, 0, P + 2);
            }
            nlen[0] = P; /* a full item, and past it (clamped) */
            if (B > 1)
                nlen[1] = P + 3;
            void *dk = dev_floats_as(kn, nn, dt), *dv = dev_floats_as(vn, nn, dt);
            void *kt = dev_alloc(nc * es), *vc = dev_alloc(nc * es);
            dev_poison(kt, nc * es);
            dev_poison(vc, nc * es);
            int *didx = dev_upload_ints(idx, B), *dnl = dev_upload_ints(nlen, B);
            ft_status st = ft_fill_new_kv_cache(dt, dk, dv, ld, P, didx, dnl, kt, vc, B, E, S, last, 0);
            FT_EXPECT(t, st == FT_OK, "%s fill case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gk = (float *)malloc(nc * 4), *gv = (float *)malloc(nc * 4);
            dev_download(gk, kt, nc, dt);
            dev_download(gv, vc, nc, dt);
            size_t bad = 0;
            for (int b = 0; b < B; b++) {
                int n = -1;
                if (idx[b] >= 0) {
                    n = nlen[idx[b]] - (last ? 0 : 1);
                    n = n < P ? n : P;
                    n = n < S ? n : S;
                }
                for (int tt = 0; tt < S; tt++)
                    for (int e = 0; e < E; e++) {
                        const float gkt = gk[((size_t)b * E + e) * S + tt], gvv = gv[((size_t)b * S + tt) * E + e];
                        if (tt < n) {
                            const size_t s = ((size_t)idx[b] * P + tt) * ld + e;
                            bad += gkt != kn[s] || gvv != vn[s];
                        } else {
                            bad += !isnan(gkt) || !isnan(gvv);
                        }
                    }
            }
            FT_EXPECT(t, bad == 0, "%s fill case %d: %zu values wrong", ft_dtype_name(dt), c, bad);
            FT_CHECK_CUDA(cudaFree(dk));
            FT_CHECK_CUDA(cudaFree(dv));
            FT_CHECK_CUDA(cudaFree(kt));
            FT_CHECK_CUDA(cudaFree(vc));
            FT_CHECK_CUDA(cudaFree(didx));
            FT_CHECK_CUDA(cudaFree(dnl));
            free(kn), free(vn), free(gk), free(gv);
        }
    }
}

FT_GPU_TEST(batching_append_kv)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb3);
    const int cases[][4] = {/* B, E, S, ld */ {6, 64, 20, 192}, {3, 5, 7, 5}, {40, 256, 9, 768}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int c = 0; c < 3; c++) {
            const int B = cases[c][0], E = cases[c][1], S = cases[c][2], ld = cases[c][3];
            const size_t nq = (size_t)B * ld, nc = (size_t)B * E * S;
            float *k = rand_floats(nq, &rng, 1.0, dt), *vv = rand_floats(nq, &rng, 1.0, dt);
            int len[64];
            for (int b = 0; b < B; b++)
                len[b] = (int)ref_rng_range(&rng, -1, S + 1); /* empty, and past the capacity: untouched */
            len[0] = 0;
            len[B - 1] = S;
            void *dk = dev_floats_as(k, nq, dt), *dv = dev_floats_as(vv, nq, dt);
            void *kt = dev_alloc(nc * es), *vc = dev_alloc(nc * es);
            dev_poison(kt, nc * es);
            dev_poison(vc, nc * es);
            int *dl = dev_upload_ints(len, B);
            ft_status st = ft_append_kv(dt, dk, dv, ld, dl, kt, vc, B, E, S, 0);
            FT_EXPECT(t, st == FT_OK, "%s append case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gk = (float *)malloc(nc * 4), *gv = (float *)malloc(nc * 4);
            dev_download(gk, kt, nc, dt);
            dev_download(gv, vc, nc, dt);
            size_t bad = 0;
            for (int b = 0; b < B; b++)
                for (int tt = 0; tt < S; tt++)
                    for (int e = 0; e < E; e++) {
                        const float gkt = gk[((size_t)b * E + e) * S + tt], gvv = gv[((size_t)b * S + tt) * E + e];
                        if (tt == len[b] - 1)
                            bad += gkt != k[(size_t)b * ld + e] || gvv != vv[(size_t)b * ld + e];
                        else
                            bad += !isnan(gkt) || !isnan(gvv);
                    }
            FT_EXPECT(t, bad == 0, "%s append case %d: %zu values wrong", ft_dtype_name(dt), c, bad);
            FT_CHECK_CUDA(cudaFree(dk));
            FT_CHECK_CUDA(cudaFree(dv));
            FT_CHECK_CUDA(cudaFree(kt));
            FT_CHECK_CUDA(cudaFree(vc));
            FT_CHECK_CUDA(cudaFree(dl));
            free(k), free(vv), free(gk), free(gv);
        }
    }
}

/* ---------------------------------------------------------------- attention pieces */

static void random_lengths(int *len, int B, int S, ref_rng *rng)
{
    for (int b = 0; b < B; b++)
        len[b] = (int)ref_rng_range(rng, 0, S);
    len[0] = S;
    if (B > 1)
        len[1] = 0;
    if (B > 2)
        len[2] = 1;
    if (B > 3)
        len[3] = S + 5; /* clamped to S */
}

FT_GPU_TEST(batching_qkt)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb4);
    const int cases[][8] = {/* B, H, D, S, ld_q, ld_s, kt offset (elements), scale x 1000 */
                            {3, 2, 64, 64, 384, 70, 0, 125},
                            {2, 3, 7, 37, 21, 40, 0, 1000},
                            {4, 32, 128, 1024, 4096, 1024, 0, 88},
                            {4, 1, 1, 8, 1, 8, 0, 1000},
                            {5, 2, 256, 300, 512, 300, 0, 62},
                            {3, 2, 64, 64, 128, 64, 1, 125},  /* misaligned cache: element by element */
                            {5, 3, 64, 1000, 192, 1000, 0, 125}}; /* two vectors a lane, lengths between */
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int c = 0; c < 7; c++) {
            const int B = cases[c][0], H = cases[c][1], D = cases[c][2], S = cases[c][3], ldq = cases[c][4];
            const int lds = cases[c][5], off = cases[c][6];
            const double scale = cases[c][7] / 1000.0;
            const size_t nq = (size_t)B * ldq, nc = (size_t)B * H * D * S, ns = (size_t)B * H * lds;
            float *q = rand_floats(nq, &rng, 1.0, dt), *kt = rand_floats(nc, &rng, 1.0, dt);
            int len[8];
            random_lengths(len, B, S, &rng);
            void *dq = dev_floats_as(q, nq, dt);
            char *dkt = (char *)dev_alloc((nc + 1) * es);
            dev_upload(dkt + off * es, kt, nc, dt);
            float *ds = (float *)dev_alloc(ns * 4);
            dev_poison(ds, ns * 4);
            int *dl = dev_upload_ints(len, B);
            ft_status st = ft_qkt(dt, dq, ldq, dkt + off * es, dl, ds, lds, B, H, D, S, (float)scale, 0);
            FT_EXPECT(t, st == FT_OK, "%s qkt case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gs = (float *)malloc(ns * 4);
            FT_CHECK_CUDA(cudaDeviceSynchronize());
            FT_CHECK_CUDA(cudaMemcpy(gs, ds, ns * 4, cudaMemcpyDeviceToHost));
            double *ref = (double *)malloc((size_t)B * H * S * sizeof(double));
            ref_qkt(q, ldq, kt, len, B, H, D, S, scale, ref);
            /* the compared entries gathered; everything else must be poison still */
            float *got = (float *)malloc(ns * 4);
            double *want = (double *)malloc(ns * sizeof(double));
            size_t m = 0, untouched_bad = 0;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int j = 0; j < lds; j++) {
                        const float g = gs[((size_t)b * H + h) * lds + j];
                        if (j < ref_clamp_len(len[b], S)) {
                            got[m] = g;
                            want[m++] = ref[((size_t)b * H + h) * S + j];
                        } else {
                            untouched_bad += !is_poison32(g);
                        }
                    }
            char what[96];
            snprintf(what, sizeof what, "%s qkt case %d", ft_dtype_name(dt), c);
            ft_expect_close(t, what, got, want, m, 2e-6 * D, 1e-5);
            FT_EXPECT(t, untouched_bad == 0, "%s: %zu scores past the lengths written", what, untouched_bad);
            FT_CHECK_CUDA(cudaFree(dq));
            FT_CHECK_CUDA(cudaFree(dkt));
            FT_CHECK_CUDA(cudaFree(ds));
            FT_CHECK_CUDA(cudaFree(dl));
            free(q), free(kt), free(gs), free(ref), free(got), free(want);
        }
    }
}

FT_GPU_TEST(batching_softmax_lengths)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb5);
    const int cases[][4] = {/* B, H, S, ld_s */ {3, 2, 50, 50}, {4, 4, 1000, 1024}, {1, 1, 1, 1}, {5, 3, 4100, 4100}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        for (int c = 0; c < 4; c++) {
            const int B = cases[c][0], H = cases[c][1], S = cases[c][2], lds = cases[c][3];
            const size_t ns = (size_t)B * H * lds;
            float *x = rand_floats(ns, &rng, 3.0, FT_FP32);
            int len[8];
            random_lengths(len, B, S, &rng);
            float *dx = (float *)dev_copy(x, ns * 4);
            int *dl = dev_upload_ints(len, B);
            ft_status st = ft_softmax_lengths(dt, dx, lds, dl, B, H, S, 0);
            FT_EXPECT(t, st == FT_OK, "%s softmax_lengths case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *g = (float *)malloc(ns * 4);
            FT_CHECK_CUDA(cudaDeviceSynchronize());
            FT_CHECK_CUDA(cudaMemcpy(g, dx, ns * 4, cudaMemcpyDeviceToHost));
            double *ref = (double *)malloc((size_t)B * H * S * sizeof(double));
            ref_softmax_lengths(x, lds, len, B, H, S, ref);
            float *got = (float *)malloc(ns * 4);
            size_t m = 0, tail_bad = 0;
            for (size_t r = 0; r < (size_t)B * H; r++) {
                for (int j = 0; j < S; j++)
                    got[m++] = g[r * lds + j];
                for (int j = S; j < lds; j++) /* past S: untouched */
                    tail_bad += g[r * lds + j] != x[r * lds + j];
            }
            char what[96];
            snprintf(what, sizeof what, "%s softmax_lengths case %d", ft_dtype_name(dt), c);
            ft_expect_close(t, what, got, ref, m, 1e-7, 1e-5);
            FT_EXPECT(t, tail_bad == 0, "%s: %zu entries past S changed", what, tail_bad);
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(dl));
            free(x), free(g), free(ref), free(got);
        }
    }
}

FT_GPU_TEST(batching_softmax_v)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb6);
    const int cases[][8] = {/* B, H, D, S, ld_p, ld_out, splits (0 auto), workspace (0 none, 1 sized, 2 for 2 parts) */
                            {2, 3, 64, 100, 100, 192, 0, 1},
                            {1, 8, 128, 3000, 3000, 1024, 0, 1},
                            {3, 2, 128, 500, 512, 256, 3, 1},
                            {2, 2, 7, 33, 40, 20, 2, 1},
                            {1, 1, 1, 10, 10, 1, 1, 0},
                            {2, 1, 512, 64, 64, 512, 0, 1},
                            {1, 2, 64, 2000, 2000, 128, 5, 2},
                            {2, 4, 32, 700, 700, 128, 0, 0}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        const ref_tol tol = ref_tolerance(dt);
        for (int c = 0; c < 8; c++) {
            const int B = cases[c][0], H = cases[c][1], D = cases[c][2], S = cases[c][3], ldp = cases[c][4];
            const int ldo = cases[c][5], splits = cases[c][6], wsk = cases[c][7], E = H * D;
            if (D > FT_BATCH_NT && D % (16 / (int)es) != 0)
                continue;
            const size_t np = (size_t)B * H * ldp, nv = (size_t)B * S * E, no = (size_t)B * ldo;
            float *p = (float *)malloc(np * 4);
            int len[8];
            random_lengths(len, B, S, &rng);
            for (size_t r = 0; r < (size_t)B * H; r++) /* weights summing to about 1 over a row */
                for (int j = 0; j < ldp; j++)
                    p[r * ldp + j] = (float)(2.0 * ref_rng_uniform(&rng) / (S > 1 ? S / 4 + 1 : 1));
            float *vv = rand_floats(nv, &rng, 1.0, dt);
            float *dp = (float *)dev_copy(p, np * 4);
            void *dv = dev_floats_as(vv, nv, dt), *dout = dev_alloc(no * es);
            dev_poison(dout, no * es);
            int *dl = dev_upload_ints(len, B);
            size_t wsb = 0;
            if (wsk == 1) {
                wsb = ft_softmax_v_workspace(dt, B, H, D, S);
                const size_t forced = (size_t)(splits > 0 ? splits : 1) * B * E * 4;
                wsb = wsb > forced ? wsb : forced;
            } else if (wsk == 2) {
                wsb = (size_t)2 * B * E * 4; /* fewer parts than forced: capped by the workspace */
            }
            void *ws = wsb ? dev_alloc(wsb) : NULL;
            ft_status st = ft_softmax_v(dt, dp, ldp, dv, dl, dout, ldo, B, H, D, S, ws, wsb, splits, 0);
            FT_EXPECT(t, st == FT_OK, "%s softmax_v case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *g = (float *)malloc(no * 4);
            dev_download(g, dout, no, dt);
            double *ref = (double *)malloc((size_t)B * E * sizeof(double));
            ref_softmax_v(p, ldp, vv, len, B, H, D, S, ref);
            float *got = (float *)malloc((size_t)B * E * 4);
            size_t tail_bad = 0;
            for (int b = 0; b < B; b++) {
                memcpy(got + (size_t)b * E, g + (size_t)b * ldo, (size_t)E * 4);
                for (int e = E; e < ldo; e++)
                    tail_bad += !isnan(g[(size_t)b * ldo + e]);
            }
            char what[96];
            snprintf(what, sizeof what, "%s softmax_v case %d", ft_dtype_name(dt), c);
            ft_expect_close(t, what, got, ref, (size_t)B * E, tol.atol, tol.rtol);
            FT_EXPECT(t, tail_bad == 0, "%s: %zu columns past H * D written", what, tail_bad);
            FT_CHECK_CUDA(cudaFree(dp));
            FT_CHECK_CUDA(cudaFree(dv));
            FT_CHECK_CUDA(cudaFree(dout));
            FT_CHECK_CUDA(cudaFree(dl));
            if (ws)
                FT_CHECK_CUDA(cudaFree(ws));
            free(p), free(vv), free(g), free(ref), free(got);
        }
    }
}

/* ---------------------------------------------------------------- greedy step */

FT_GPU_TEST(batching_greedy_step)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb7);
    const int cases[][7] = {/* B, V, N, ld, ld_x, capacity, workspace */
                            {4, 1000, 64, 1000, 64, 10, 1},
                            {3, 50000, 128, 50000, 130, 100, 1},
                            {2, 7, 5, 9, 5, 3, 0},
                            {1, 1, 8, 8, 8, 2, 1},
                            {64, 32000, 256, 32000, 256, 50, 1},
                            {5, 3001, 33, 3001, 40, 20, 1}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = batch_dtypes[v];
        for (int c = 0; c < 6; c++) {
            const int B = cases[c][0], V = cases[c][1], N = cases[c][2], ld = cases[c][3], ldx = cases[c][4];
            const int cap = cases[c][5], wsk = cases[c][6];
            const size_t nl = (size_t)B * ld, nt = (size_t)V * N, nx = (size_t)B * ldx;
            float *lg = rand_floats(nl, &rng, 2.0, dt), *tab = rand_floats(nt, &rng, 1.0, dt);
            float *x0 = rand_floats(nx, &rng, 1.0, dt);
            int len[64];
            for (int b = 0; b < B; b++)
                len[b] = (int)ref_rng_range(&rng, 0, cap);
            len[0] = 1;
            if (B > 1)
                len[1] = 0; /* empty: -1 */
            if (B > 2)
                len[2] = cap; /* full: token, nothing appended */
            if (B > 3) /* a NaN ranks above everything, the first of two wins */
                lg[3 * (size_t)ld + V / 2] = NAN, lg[3 * (size_t)ld + V - 1] = NAN;
            if (B > 4) /* a tie: the lower index */
                for (int j = 0; j < V; j++)
                    lg[4 * (size_t)ld + j] = j % 7 == 3 ? 5.0f : -1.0f;
            void *dlg = dev_floats_as(lg, nl, dt), *dtab = dev_floats_as(tab, nt, dt), *dx = dev_floats_as(x0, nx, dt);
            int *dl = dev_upload_ints(len, B), *dtok = (int *)dev_alloc((size_t)B * 4);
            FT_CHECK_CUDA(cudaMemset(dtok, 0x7f, (size_t)B * 4));
            const size_t wsb = wsk ? ft_greedy_workspace(dt, B, V) : 0;
            void *ws = wsb ? dev_alloc(wsb) : NULL;
            ft_status st = ft_greedy_step(dt, dlg, ld, dtab, V, N, dl, cap, dtok, dx, ldx, B, ws, wsb, 0);
            FT_EXPECT(t, st == FT_OK, "%s greedy case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gx = (float *)malloc(nx * 4);
            dev_download(gx, dx, nx, dt);
            int *gl = dev_ints_back(dl, B), *gt = dev_ints_back(dtok, B);
            /* the reference sees the logits as the device holds them */
            float *lr = (float *)malloc(nl * 4);
            void *raw = malloc(nl * ft_dtype_size(dt));
            ref_encode(raw, lg, nl, dt);
            ref_decode(lr, raw, nl, dt);
            size_t bad_tok = 0, bad_row = 0, bad_len = 0;
            for (int b = 0; b < B; b++) {
                const int want = len[b] > 0 ? ref_argmax(lr + (size_t)b * ld, V) : -1;
                bad_tok += gt[b] != want;
                const int appended = len[b] > 0 && len[b] < cap;
                bad_len += gl[b] != len[b] + appended;
                for (int n = 0; n < ldx; n++) {
                    const float w = appended && n < N ? tab[(size_t)want * N + n] : x0[(size_t)b * ldx + n];
                    bad_row += gx[(size_t)b * ldx + n] != w;
                }
            }
            FT_EXPECT(t, bad_tok == 0 && bad_row == 0 && bad_len == 0,
                      "%s greedy case %d: %zu tokens, %zu values, %zu lengths wrong", ft_dtype_name(dt), c, bad_tok,
                      bad_row, bad_len);
            FT_CHECK_CUDA(cudaFree(dlg));
            FT_CHECK_CUDA(cudaFree(dtab));
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(dl));
            FT_CHECK_CUDA(cudaFree(dtok));
            if (ws)
                FT_CHECK_CUDA(cudaFree(ws));
            free(lg), free(tab), free(x0), free(gx), free(gl), free(gt), free(lr), free(raw);
        }
    }
}

/* ---------------------------------------------------------------- the inferencer */

typedef struct late_items {
    int at_step, count, done, steps;
    int *prompts, *lens, P;
} late_items;

/* on_step: more items arrive while the batch runs */
static ft_status submit_late(void *ctx, ft_items *p)
{
    late_items *l = (late_items *)ctx;
    if (++l->steps != l->at_step || l->done)
        return FT_OK;
    l->done = 1;
    for (int i = 0; i < l->count; i++)
        FT_EX_TRY(ft_items_submit(p, l->prompts + (size_t)i * l->P, l->lens[i], NULL));
    return FT_OK;
}

/* with_end: the end token is one the model says (some items end by it), else none (every
 * item runs to max_len) */
static void inferencer_one(ft_test *t, ft_dtype dt, const ft_gemm_ctx *g, ref_rng *rng, int with_end)
{
    ft_inferencer_config c;
    c.dtype = dt;
    c.slots = 5;
    c.hidden = 64;
    c.heads = 2;
    c.head_size = 32;
    c.vocab = 1000;
    c.capacity = 40;
    c.max_prompt = 12;
    const int N = c.hidden, E = c.heads * c.head_size, V = c.vocab, max_len = 30;
    const int n_first = 13, n_late = 6, n_items = n_first + n_late;
    float *emb = rand_floats((size_t)V * N, rng, 1.0, dt);
    float *wqkv = rand_floats((size_t)N * 3 * E, rng, 1.0 / sqrt((double)N), dt);
    float *wo = rand_floats((size_t)E * N, rng, 1.0 / sqrt((double)E), dt);
    ref_infer_model m = {N, c.heads, c.head_size, V, emb, wqkv, wo};
    int *prompts = (int *)malloc((size_t)n_items * c.max_prompt * sizeof(int)), lens[32];
    for (int i = 0; i < n_items; i++) {
        lens[i] = i == 0 ? c.max_prompt : i == 1 ? 1 : (int)ref_rng_range(rng, 1, c.max_prompt);
        for (int j = 0; j < lens[i]; j++)
            prompts[(size_t)i * c.max_prompt + j] = (int)ref_rng_range(rng, 0, V - 1);
    }
    /* the end token: what the model itself says third after item 0's prompt, so that some
     * items end by it and others at max_len */
    double *lg = (double *)malloc((size_t)V * sizeof(double));
    float *lgf = (float *)malloc((size_t)V * sizeof(float));
    int seq[64];
    memcpy(seq, prompts, (size_t)lens[0] * sizeof(int));
    for (int s = 0; s < 3; s++) {
        ref_infer_logits(&m, seq, lens[0] + s, dt, lg);
        for (int j = 0; j < V; j++)
            lgf[j] = (float)lg[j];
        seq[lens[0] + s] = ref_argmax(lgf, V);
    }
    const int end_id = with_end ? seq[lens[0] + 2] : -1;

    ft_inferencer_buffers b;
    const size_t bytes = ft_inferencer_carve(&c, NULL, &b);
    void *ws = dev_alloc(bytes);
    ft_inferencer_carve(&c, ws, &b);
    ft_inferencer_weights w;
    void *demb = dev_floats_as(emb, (size_t)V * N, dt), *dwqkv = dev_floats_as(wqkv, (size_t)N * 3 * E, dt);
    void *dwo = dev_floats_as(wo, (size_t)E * N, dt);
    w.embedding = demb, w.w_qkv = dwqkv, w.w_o = dwo;
    ft_inferencer_host host;
    ft_items p;
    FT_EXPECT(t, ft_inferencer_host_init(&c, &host) == FT_OK, "%s", ft_last_error());
    FT_EXPECT(t, ft_items_init(&p, c.slots, max_len, end_id) == FT_OK, "%s", ft_last_error());
    for (int i = 0; i < n_first; i++)
        FT_EXPECT(t, ft_items_submit(&p, prompts + (size_t)i * c.max_prompt, lens[i], NULL) == FT_OK, "%s",
                  ft_last_error());
    late_items late = {4, n_late, 0, 0, prompts + (size_t)n_first * c.max_prompt, lens + n_first, c.max_prompt};
    int steps = 0;
    ft_status st = ft_inferencer_reset(&c, &b, 0);
    if (st == FT_OK)
        st = ft_inferencer_run(&c, &w, g, &b, &host, &p, submit_late, &late, &steps, 0);
    FT_EXPECT(t, st == FT_OK, "%s inferencer: %s", ft_dtype_name(dt), ft_last_error());

    /* every item back once, each generated token a near-best of the reference's logits for
     * the sequence before it (the same sequence the device saw), ended as the rules say */
    const double rel = dt == FT_FP32 ? 1e-4 : dt == FT_FP16 ? 4e-3 : 3e-2;
    int seen[32] = {0}, returned = 0, ended_by_id = 0, exact = 0, generated = 0;
    int id, len, plen;
    const int *toks;
    size_t bad_prompt = 0, bad_end = 0, bad_tok = 0;
    double worst = 0.0;
    while (ft_items_pop_finished(&p, &id, &toks, &len, &plen)) {
        returned++;
        if (id < 0 || id >= n_items || seen[id]++) {
            FT_EXPECT(t, 0, "%s inferencer: item %d returned twice or unknown", ft_dtype_name(dt), id);
            continue;
        }
        bad_prompt += plen != lens[id] || memcmp(toks, prompts + (size_t)id * c.max_prompt, (size_t)plen * 4) != 0;
        const int by_id = toks[len - 1] == end_id;
        ended_by_id += by_id;
        bad_end += !(by_id || len == max_len) || len > max_len || len <= plen;
        for (int s = plen; s < len - 1; s++)
            bad_end += toks[s] == end_id;
        int valid = 1; /* a token outside the vocabulary fails, and is never looked up */
        for (int s = 0; s < len; s++)
            valid &= toks[s] >= 0 && toks[s] < V;
        if (!valid) {
            bad_tok++;
            continue;
        }
        for (int s = plen; s < len; s++) {
            ref_infer_logits(&m, toks, s, dt, lg);
            double best = lg[0];
            for (int j = 1; j < V; j++)
                best = lg[j] > best ? lg[j] : best;
            const double gap = best - lg[toks[s]], lim = rel * (fabs(best) > 1.0 ? fabs(best) : 1.0);
            worst = gap / lim > worst ? gap / lim : worst;
            bad_tok += !(gap <= lim);
            exact += gap == 0.0;
            generated++;
        }
    }
    FT_EXPECT(t, returned == n_items, "%s inferencer: %d of %d items returned", ft_dtype_name(dt), returned, n_items);
    FT_EXPECT(t, bad_prompt == 0 && bad_end == 0, "%s inferencer: %zu prompts and %zu endings wrong", ft_dtype_name(dt),
              bad_prompt, bad_end);
    FT_EXPECT(t, bad_tok == 0, "%s inferencer: %zu of %d tokens not a best of the reference (worst gap %.2f x tol)",
              ft_dtype_name(dt), bad_tok, generated, worst);
    /* near-ties decide rarely: most tokens are the reference's own choice */
    FT_EXPECT(t, exact * 10 >= generated * 9, "%s inferencer: only %d of %d tokens the reference's arg-max",
              ft_dtype_name(dt), exact, generated);
    FT_EXPECT(t, with_end ? ended_by_id > 0 : ended_by_id == 0, "%s inferencer: %d of %d items ended by the end token",
              ft_dtype_name(dt), ended_by_id, n_items);
    /* every step adds a token to some item, and to at most every slot's */
    FT_EXPECT(t, steps <= generated && generated <= steps * c.slots, "%s inferencer: %d steps for %d tokens",
              ft_dtype_name(dt), steps, generated);
    ft_items_free(&p);
    ft_inferencer_host_free(&host);
    FT_CHECK_CUDA(cudaFree(ws));
    FT_CHECK_CUDA(cudaFree(demb));
    FT_CHECK_CUDA(cudaFree(dwqkv));
    FT_CHECK_CUDA(cudaFree(dwo));
    free(emb), free(wqkv), free(wo), free(prompts), free(lg), free(lgf);
}

FT_GPU_TEST(batching_inferencer)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0xb8);
    ft_gemm_ctx g;
    if (ft_gemm_ctx_init(&g, 0) != FT_OK) {
        FT_EXPECT(t, 0, "gemm context: %s", ft_last_error());
        return;
    }
    g.allow_tf32 = 0;
    for (int v = 0; v < NDT; v++)
        for (int with_end = 1; with_end >= 0; with_end--)
            inferencer_one(t, batch_dtypes[v], &g, &rng, with_end);
    ft_gemm_ctx_destroy(&g);
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
