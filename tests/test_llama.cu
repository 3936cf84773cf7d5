/* GPU tests of the LLaMA int8 path (ft/llama_<dtype>.cuh through ft/llama.cuh, and
 * ft/quant.cuh) against the C references in ref/ref_llama.c, for every generated dtype:
 * shapes from one element to rows past the registers (read twice), row lengths off the
 * 4-element vectors and misaligned pointers (the element-wise kernels), rows of zeros,
 * in-place forms; q/k/v with grouped heads, both rotary styles, partial rotary, the table
 * and on-the-fly angles, per-sequence positions, a fused GEMM output and writes straight
 * into a KV cache (rows outside it untouched). Outputs are poisoned before every launch:
 * int8 with -128 (outside every quantised range), the rest with NaN. */
#include <math.h>
#include <string.h>

#include "ft/llama.cuh"
#include "ft/quant.cuh"
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_attention.h"
#include "ref/ref_llama.h"

#define FT_X(sfx, en) en,
static const ft_dtype llama_dtypes[] = {FT_LLAMA_VARIANTS(FT_X)};
#undef FT_X
#define NDT (int)(sizeof llama_dtypes / sizeof llama_dtypes[0])

/* ---------------------------------------------------------------- data */

static void fill_acc(int32_t *h, size_t n, ref_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (int32_t)ref_rng_range(rng, -100000, 100000);
}

static void fill_uniform(float *h, size_t n, ref_rng *rng, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(lo + (hi - lo) * ref_rng_uniform(rng));
}

/* Every q within 1/2 (+ fp32 slack) of its target and inside [-127, 127] (the poison -128
 * is not), every scale within 1e-5 of the reference. Returns 1 when all pass. */
static int expect_quant(ft_test *t, const char *what, const int8_t *q, const float *scale, const double *target,
                        const double *scale_ref, int64_t m, int64_t n)
{
    int64_t bad = 0, worst = -1;
    double worst_err = 0.0;
    for (int64_t r = 0; r < m; r++) {
        const double sr = scale_ref[r];
        if (!(fabs(scale[r] - sr) <= 1e-5 * sr + 1e-30)) {
            FT_EXPECT(t, 0, "%s: row %lld scale %.9g, want %.9g", what, (long long)r, (double)scale[r], sr);
            return 0;
        }
        for (int64_t c = 0; c < n; c++) {
            const int64_t i = r * n + c;
            const double err = fabs((double)q[i] - target[i]);
            if (q[i] < -127 || !(err <= 0.51)) {
                bad++;
                if (err > worst_err || worst < 0)
                    worst_err = err, worst = i;
            }
        }
    }
    FT_EXPECT(t, bad == 0, "%s: %lld of %lld int8 off; worst [%lld] got %d want %.4f", what, (long long)bad,
              (long long)(m * n), (long long)worst, worst >= 0 ? q[worst] : 0, worst >= 0 ? target[worst] : 0.0);
    return bad == 0;
}

/* downloads m*n int8 and m scales */
static void get_quant(int8_t *q, float *scale, const int8_t *dq, const float *dscale, int64_t m, int64_t n)
{
    FT_CHECK_CUDA(cudaDeviceSynchronize());
    FT_CHECK_CUDA(cudaMemcpy(q, dq, (size_t)(m * n), cudaMemcpyDeviceToHost));
    FT_CHECK_CUDA(cudaMemcpy(scale, dscale, (size_t)m * 4, cudaMemcpyDeviceToHost));
}

/* rows x cols with `off` elements of slack in front (a misaligned view at `off` > 0) */
typedef struct shape2 {
    int64_t m, n;
    int off, zero_row;
} shape2;

static const shape2 row_shapes[] = {
    {1, 1, 0, -1},     {3, 7, 0, 1},     {5, 4096, 0, 2},  {2, 4100, 0, -1}, {7, 33, 0, -1},
    {4, 4096, 1, -1},  {2, 40000, 0, 0}, {2, 9001, 0, -1}, {64, 11008, 0, 5}, {1, 32768, 0, -1},
};
#define NROW_SHAPES (int)(sizeof row_shapes / sizeof row_shapes[0])

/* ---------------------------------------------------------------- rmsnorm_quant */

FT_GPU_TEST(llama_rmsnorm_quant)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x11);
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = llama_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int s = 0; s < NROW_SHAPES; s++) {
            const shape2 sh = row_shapes[s];
            const int64_t m = sh.m, n = sh.n, mn = m * n;
            float *x = (float *)malloc(mn * 4), *g = (float *)malloc(n * 4), *sc = (float *)malloc(m * 4);
            double *tg = (double *)malloc(mn * 8), *sr = (double *)malloc(m * 8);
            int8_t *q = (int8_t *)malloc(mn);
            fill_normal(x, mn, &rng, 0.0, 1.0 + s, dt);
            fill_normal(g, n, &rng, 1.0, 0.3, dt);
            if (sh.zero_row >= 0)
                memset(x + sh.zero_row * n, 0, n * 4);
            char *dx = (char *)dev_alloc((mn + 8) * es), *dg = (char *)dev_alloc((n + 8) * es);
            int8_t *dq = (int8_t *)dev_alloc(mn + 16);
            float *dsc = (float *)dev_alloc(m * 4);
            dev_upload(dx + sh.off * es, x, mn, dt);
            dev_upload(dg + sh.off * es, g, n, dt);
            FT_CHECK_CUDA(cudaMemset(dq, 0x80, mn));
            dev_poison(dsc, m * 4);
            const float eps = 1e-5f;
            ft_status st = ft_rmsnorm_quant(dt, dx + sh.off * es, dg + sh.off * es, dq, dsc, m, n, eps, 0);
            FT_EXPECT(t, st == FT_OK, "%s m=%lld n=%lld: %s", ft_dtype_name(dt), (long long)m, (long long)n,
                      ft_last_error());
            get_quant(q, sc, dq, dsc, m, n);
            for (int64_t r = 0; r < m; r++)
                ref_rmsnorm_quant_row(x + r * n, g, (int)n, eps, tg + r * n, sr + r);
            char what[96];
            snprintf(what, sizeof what, "rmsnorm_quant %s m=%lld n=%lld off=%d", ft_dtype_name(dt), (long long)m,
                     (long long)n, sh.off);
            expect_quant(t, what, q, sc, tg, sr, m, n);
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(dg));
            FT_CHECK_CUDA(cudaFree(dq));
            FT_CHECK_CUDA(cudaFree(dsc));
            free(x), free(g), free(sc), free(tg), free(sr), free(q);
        }
    }
}

/* ---------------------------------------------------------------- dequant + residual (+ rmsnorm_quant) */

/* norm: the fused dequant_residual_rmsnorm_quant, else dequant_residual; inplace: the sum
 * over the residual; no_res (dequant_residual only): without a residual */
static void run_dequant_residual(ft_test *t, int norm)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ (norm ? 0x22 : 0x33));
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = llama_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        const ref_tol tol = ref_tolerance(dt);
        for (int s = 0; s < NROW_SHAPES; s++) {
            for (int mode = 0; mode < (norm ? 2 : 3); mode++) { /* 0 out of place, 1 in place, 2 no residual */
                const shape2 sh = row_shapes[s];
                const int64_t m = sh.m, n = sh.n, mn = m * n;
                int32_t *acc = (int32_t *)malloc(mn * 4);
                float *rs = (float *)malloc(m * 4), *cs = (float *)malloc(n * 4), *res = (float *)malloc(mn * 4);
                float *g = (float *)malloc(n * 4), *sum = (float *)malloc(mn * 4), *sc = (float *)malloc(m * 4);
                double *ref = (double *)malloc(mn * 8), *tg = (double *)malloc(mn * 8), *sr = (double *)malloc(m * 8);
                int8_t *q = (int8_t *)malloc(mn);
                fill_acc(acc, mn, &rng);
                fill_uniform(rs, m, &rng, 0.5e-3, 1.5e-3);
                fill_uniform(cs, n, &rng, 0.5e-2, 1.5e-2);
                fill_normal(res, mn, &rng, 0.0, 1.0, dt);
                fill_normal(g, n, &rng, 1.0, 0.3, dt);
                if (sh.zero_row >= 0) {
                    memset(acc + sh.zero_row * n, 0, n * 4);
                    memset(res + sh.zero_row * n, 0, n * 4);
                }
                /* a misaligned view: acc and the residual one element off the vectors */
                int32_t *dacc = (int32_t *)dev_alloc((mn + 8) * 4);
                FT_CHECK_CUDA(cudaMemcpy(dacc + sh.off, acc, mn * 4, cudaMemcpyHostToDevice));
                float *drs = (float *)dev_copy(rs, m * 4), *dcs = (float *)dev_copy(cs, n * 4);
                char *dres = (char *)dev_alloc((mn + 8) * es), *dg = (char *)dev_alloc((n + 8) * es);
                char *dout = (char *)dev_alloc((mn + 8) * es);
                int8_t *dq = (int8_t *)dev_alloc(mn + 16);
                float *dsc = (float *)dev_alloc(m * 4);
                dev_upload(dres + sh.off * es, res, mn, dt);
                dev_upload(dg, g, n, dt);
                dev_poison(dout, (mn + 8) * es);
                FT_CHECK_CUDA(cudaMemset(dq, 0x80, mn));
                dev_poison(dsc, m * 4);
                char *out = mode == 1 ? dres + sh.off * es : dout + sh.off * es;
                const void *resid = mode == 2 ? NULL : dres + sh.off * es;
                ft_status st;
                if (norm)
                    st = ft_dequant_residual_rmsnorm_quant(dt, dacc + sh.off, drs, dcs, resid, dg, out, dq, dsc, m, n,
                                                           1e-6f, 0);
                else
                    st = ft_dequant_residual(dt, dacc + sh.off, drs, dcs, resid, out, m, n, 0);
                FT_EXPECT(t, st == FT_OK, "%s m=%lld n=%lld mode %d: %s", ft_dtype_name(dt), (long long)m,
                          (long long)n, mode, ft_last_error());
                for (int64_t i = 0; i < mn; i++)
                    ref[i] = (double)acc[i] * rs[i / n] * cs[i % n] + (mode == 2 ? 0.0 : res[i]);
                dev_download(sum, out, mn, dt);
                char what[112];
                snprintf(what, sizeof what, "%s %s m=%lld n=%lld off=%d mode=%d",
                         norm ? "dequant_residual_rmsnorm_quant sum" : "dequant_residual", ft_dtype_name(dt),
                         (long long)m, (long long)n, sh.off, mode);
                ft_expect_close(t, what, sum, ref, (size_t)mn, tol.atol, tol.rtol);
                if (norm) {
                    /* the norm is of the sum as stored */
                    get_quant(q, sc, dq, dsc, m, n);
                    for (int64_t r = 0; r < m; r++)
                        ref_rmsnorm_quant_row(sum + r * n, g, (int)n, 1e-6, tg + r * n, sr + r);
                    expect_quant(t, what, q, sc, tg, sr, m, n);
                }
                FT_CHECK_CUDA(cudaFree(dacc));
                FT_CHECK_CUDA(cudaFree(drs));
                FT_CHECK_CUDA(cudaFree(dcs));
                FT_CHECK_CUDA(cudaFree(dres));
                FT_CHECK_CUDA(cudaFree(dg));
                FT_CHECK_CUDA(cudaFree(dout));
                FT_CHECK_CUDA(cudaFree(dq));
                FT_CHECK_CUDA(cudaFree(dsc));
                free(acc), free(rs), free(cs), free(res), free(g), free(sum), free(sc), free(ref), free(tg), free(sr);
                free(q);
            }
        }
    }
}

FT_GPU_TEST(llama_dequant_residual_rmsnorm_quant) { run_dequant_residual(t, 1); }
FT_GPU_TEST(llama_dequant_residual) { run_dequant_residual(t, 0); }

/* ---------------------------------------------------------------- silu gate */

FT_GPU_TEST(llama_dequant_silu_mul_quant)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x44);
    for (int s = 0; s < NROW_SHAPES; s++) {
        const shape2 sh = row_shapes[s];
        const int64_t m = sh.m, n = sh.n, mn = m * n;
        int32_t *w1 = (int32_t *)malloc(mn * 4), *w3 = (int32_t *)malloc(mn * 4);
        float *rs = (float *)malloc(m * 4), *s1 = (float *)malloc(n * 4), *s3 = (float *)malloc(n * 4);
        float *sc = (float *)malloc(m * 4);
        double *tg = (double *)malloc(mn * 8), *sr = (double *)malloc(m * 8);
        int8_t *q = (int8_t *)malloc(mn);
        fill_acc(w1, mn, &rng);
        fill_acc(w3, mn, &rng);
        fill_uniform(rs, m, &rng, 0.5e-3, 1.5e-3);
        fill_uniform(s1, n, &rng, 0.5e-2, 4e-2);
        fill_uniform(s3, n, &rng, 0.5e-2, 1.5e-2);
        if (sh.zero_row >= 0)
            memset(w3 + sh.zero_row * n, 0, n * 4);
        int32_t *d1 = (int32_t *)dev_alloc((mn + 8) * 4), *d3 = (int32_t *)dev_alloc((mn + 8) * 4);
        FT_CHECK_CUDA(cudaMemcpy(d1 + sh.off, w1, mn * 4, cudaMemcpyHostToDevice));
        FT_CHECK_CUDA(cudaMemcpy(d3 + sh.off, w3, mn * 4, cudaMemcpyHostToDevice));
        float *drs = (float *)dev_copy(rs, m * 4), *ds1 = (float *)dev_copy(s1, n * 4);
        float *ds3 = (float *)dev_copy(s3, n * 4);
        int8_t *dq = (int8_t *)dev_alloc(mn + 16);
        float *dsc = (float *)dev_alloc(m * 4);
        FT_CHECK_CUDA(cudaMemset(dq, 0x80, mn));
        dev_poison(dsc, m * 4);
        ft_status st = ft_dequant_silu_mul_quant(d1 + sh.off, d3 + sh.off, drs, ds1, ds3, dq, dsc, m, n, 0);
        FT_EXPECT(t, st == FT_OK, "m=%lld n=%lld: %s", (long long)m, (long long)n, ft_last_error());
        get_quant(q, sc, dq, dsc, m, n);
        for (int64_t r = 0; r < m; r++)
            ref_silu_mul_quant_row(w1 + r * n, w3 + r * n, rs[r], s1, s3, (int)n, tg + r * n, sr + r);
        char what[80];
        snprintf(what, sizeof what, "silu_mul_quant m=%lld n=%lld off=%d", (long long)m, (long long)n, sh.off);
        expect_quant(t, what, q, sc, tg, sr, m, n);
        FT_CHECK_CUDA(cudaFree(d1));
        FT_CHECK_CUDA(cudaFree(d3));
        FT_CHECK_CUDA(cudaFree(drs));
        FT_CHECK_CUDA(cudaFree(ds1));
        FT_CHECK_CUDA(cudaFree(ds3));
        FT_CHECK_CUDA(cudaFree(dq));
        FT_CHECK_CUDA(cudaFree(dsc));
        free(w1), free(w3), free(rs), free(s1), free(s3), free(sc), free(tg), free(sr), free(q);
    }
}

/* ---------------------------------------------------------------- rotary table */

FT_GPU_TEST(llama_rope_table)
{
    const int cases[][3] = {{1, 2, 10000}, {4096, 128, 10000}, {300, 64, 500000}, {17, 6, 10000}};
    for (int c = 0; c < 4; c++) {
        const int P = cases[c][0], rd = cases[c][1];
        const float base = (float)cases[c][2];
        float *dt = (float *)dev_alloc((size_t)P * rd * 4);
        dev_poison(dt, (size_t)P * rd * 4);
        ft_status st = ft_rope_table(dt, P, rd, base, 0);
        FT_EXPECT(t, st == FT_OK, "rope_table %d x %d: %s", P, rd, ft_last_error());
        float *got = (float *)malloc((size_t)P * rd * 4);
        double *ref = (double *)malloc((size_t)P * rd * 8);
        dev_download(got, dt, (size_t)P * rd, FT_FP32);
        const float l2b = (float)log2((double)base);
        for (int p = 0; p < P; p++)
            for (int i = 0; i < rd / 2; i++) {
                const float inv_freq = (float)exp2(-(2.0 * i / rd) * (double)l2b);
                const float angle = (float)p * inv_freq;
                ref[(size_t)p * rd + 2 * i] = cos((double)angle);
                ref[(size_t)p * rd + 2 * i + 1] = sin((double)angle);
            }
        char what[64];
        snprintf(what, sizeof what, "rope_table %d x %d base %g", P, rd, (double)base);
        ft_expect_close(t, what, got, ref, (size_t)P * rd, 2e-6, 0.0);
        FT_CHECK_CUDA(cudaFree(dt));
        free(got), free(ref);
    }
}

/* ---------------------------------------------------------------- q/k/v */

typedef struct qkv_case {
    int B, S, H, Hkv, D, rope, rd, table, pos_array, cache_len, fused;
} qkv_case;

static const qkv_case qkv_cases[] = {
    /* B  S   H  Hkv  D    rope                rd  table pos cache fused */
    {2, 5, 4, 4, 64, FT_ROPE_INTERLEAVED, 0, 1, 0, 0, 0},
    {3, 1, 32, 8, 128, FT_ROPE_INTERLEAVED, 0, 0, 1, 40, 0},
    {2, 7, 8, 2, 128, FT_ROPE_HALF, 0, 1, 1, 64, 1},
    {1, 9, 6, 1, 80, FT_ROPE_HALF, 32, 0, 0, 0, 0},
    {4, 3, 4, 4, 6, FT_ROPE_INTERLEAVED, 0, 0, 1, 0, 0},  /* D % 4 != 0: element-wise */
    {2, 4, 2, 2, 12, FT_ROPE_HALF, 12, 1, 0, 0, 0},       /* half of 6: element-wise */
    {2, 33, 16, 16, 64, FT_ROPE_NONE, 0, 0, 1, 48, 1},
    {1, 2, 64, 8, 256, FT_ROPE_INTERLEAVED, 64, 1, 0, 4100, 0},
};
#define NQKV (int)(sizeof qkv_cases / sizeof qkv_cases[0])

static void qkv_one(ft_test *t, ft_dtype dt, const qkv_case *c, ref_rng *rng)
{
    const size_t es = ft_dtype_size(dt);
    const ref_tol tol = ref_tolerance(dt);
    const int B = c->B, S = c->S, H = c->H, Hkv = c->Hkv, D = c->D, T = B * S;
    const int rd = c->rd ? c->rd : D, wq = H * D, wk = Hkv * D, wf = wq + 2 * wk;
    const int L = c->cache_len > 0 ? c->cache_len : S;
    /* token rows: separate arrays, or one fused [T, wf] output */
    int32_t *acc = (int32_t *)malloc((size_t)T * wf * 4);
    fill_acc(acc, (size_t)T * wf, rng);
    float *rs = (float *)malloc(T * 4), *sq = (float *)malloc(wq * 4), *sk = (float *)malloc(wk * 4),
          *sv = (float *)malloc(wk * 4);
    fill_uniform(rs, T, rng, 0.5e-3, 1.5e-3);
    fill_uniform(sq, wq, rng, 0.5e-2, 1.5e-2);
    fill_uniform(sk, wk, rng, 0.5e-2, 1.5e-2);
    fill_uniform(sv, wk, rng, 0.5e-2, 1.5e-2);
    int *start = (int *)malloc(B * 4);
    for (int b = 0; b < B; b++) /* with a cache: some sequences reach past its end */
        start[b] = c->pos_array ? (int)ref_rng_range(rng, 0, c->cache_len > 0 ? c->cache_len - 1 : 3000) : 0;
    const int start0 = c->pos_array ? 0 : (c->cache_len > 0 ? c->cache_len - S : 17);
    int32_t *dacc = (int32_t *)dev_copy(acc, (size_t)T * wf * 4);
    int32_t *dq_in, *dk_in, *dv_in;
    int32_t *sep = NULL;
    if (c->fused) {
        dq_in = dacc, dk_in = dacc + wq, dv_in = dacc + wq + wk;
    } else { /* the same values as three separate arrays */
        int32_t *h = (int32_t *)malloc((size_t)T * wf * 4);
        for (int r = 0; r < T; r++) {
            memcpy(h + (size_t)r * wq, acc + (size_t)r * wf, wq * 4);
            memcpy(h + (size_t)T * wq + (size_t)r * wk, acc + (size_t)r * wf + wq, wk * 4);
            memcpy(h + (size_t)T * (wq + wk) + (size_t)r * wk, acc + (size_t)r * wf + wq + wk, wk * 4);
        }
        sep = (int32_t *)dev_copy(h, (size_t)T * wf * 4);
        free(h);
        dq_in = sep, dk_in = sep + (size_t)T * wq, dv_in = sep + (size_t)T * (wq + wk);
    }
    float *drs = (float *)dev_copy(rs, (size_t)T * 4), *dsq = (float *)dev_copy(sq, (size_t)wq * 4);
    float *dsk = (float *)dev_copy(sk, (size_t)wk * 4), *dsv = (float *)dev_copy(sv, (size_t)wk * 4);
    int *dstart = dev_upload_ints(start, B);
    const int P = 4200;
    float *dtab = NULL;
    if (c->table) {
        dtab = (float *)dev_alloc((size_t)P * rd * 4);
        FT_CHECK_CUDA(ft_rope_table(dtab, P, rd, 10000.0f, 0) == FT_OK ? cudaSuccess : cudaErrorInvalidValue);
    }
    const size_t nq = (size_t)B * H * S * D, nk = (size_t)B * Hkv * L * D;
    void *qo = dev_alloc(nq * es), *ko = dev_alloc(nk * es), *vo = dev_alloc(nk * es);
    dev_poison(qo, nq * es);
    dev_poison(ko, nk * es);
    dev_poison(vo, nk * es);
    /* the typed args struct through the dispatch: every variant's has the same layout */
    ft_qkv_dequant_args_fp32 a;
    memset(&a, 0, sizeof a);
    a.q = dq_in, a.k = dk_in, a.v = dv_in;
    a.ldq = a.ldk = a.ldv = c->fused ? wf : 0;
    a.row_scale = drs, a.q_scale = dsq, a.k_scale = dsk, a.v_scale = dsv;
    a.rope = c->rope, a.rotary_dim = c->rd, a.rope_base = 0.0f, a.rope_table = dtab, a.max_pos = P;
    a.start_pos = c->pos_array ? dstart : NULL, a.start = start0;
    a.q_out = (float *)qo, a.k_out = (float *)ko, a.v_out = (float *)vo;
    a.cache_len = c->cache_len, a.B = B, a.S = S, a.H = H, a.Hkv = Hkv, a.D = D;
    ft_status st = ft_qkv_dequant_rope(dt, &a, 0);
    FT_EXPECT(t, st == FT_OK, "%s qkv B%d S%d H%d Hkv%d D%d: %s", ft_dtype_name(dt), B, S, H, Hkv, D, ft_last_error());
    float *gq = (float *)malloc(nq * 4), *gk = (float *)malloc(nk * 4), *gv = (float *)malloc(nk * 4);
    dev_download(gq, qo, nq, dt);
    dev_download(gk, ko, nk, dt);
    dev_download(gv, vo, nk, dt);
    double *rq = (double *)malloc(nq * 8), *rk = (double *)malloc(nk * 8), *rv = (double *)malloc(nk * 8);
    for (size_t i = 0; i < nk; i++)
        rk[i] = rv[i] = NAN; /* rows nobody writes stay poisoned */
    const float l2b = (float)log2(10000.0);
    double x[512];
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            const int tok = b * S + s, pos = (c->pos_array ? start[b] : start0) + s;
            const int row = c->cache_len > 0 ? pos : s;
            for (int hh = 0; hh < H + 2 * Hkv; hh++) {
                const int isq = hh < H, isk = !isq && hh < H + Hkv, h = isq ? hh : isk ? hh - H : hh - H - Hkv;
                const int col0 = isq ? h * D : isk ? wq + h * D : wq + wk + h * D;
                const float *cs = isq ? sq + h * D : isk ? sk + h * D : sv + h * D;
                for (int d = 0; d < D; d++)
                    x[d] = (double)acc[(size_t)tok * wf + col0 + d] * rs[tok] * cs[d];
                if (!(isq || isk) || c->rope == FT_ROPE_NONE) {
                } else {
                    ref_rope(x, D, pos, c->rope, rd, l2b);
                }
                if (isq) {
                    for (int d = 0; d < D; d++)
                        rq[(((size_t)b * H + h) * S + s) * D + d] = x[d];
                } else if (row >= 0 && row < L) {
                    double *dst = isk ? rk : rv;
                    for (int d = 0; d < D; d++)
                        dst[(((size_t)b * Hkv + h) * L + row) * D + d] = x[d];
                }
            }
        }
    char what[128];
    snprintf(what, sizeof what, "%s qkv B%d S%d H%d Hkv%d D%d rope %d rd %d table %d cache %d fused %d",
             ft_dtype_name(dt), B, S, H, Hkv, D, c->rope, rd, c->table, c->cache_len, c->fused);
    ft_expect_close(t, what, gq, rq, nq, tol.atol, tol.rtol);
    /* k and v: written rows close, the rest still NaN */
    size_t bad = 0;
    for (size_t i = 0; i < nk; i++) {
        for (int w = 0; w < 2; w++) {
            const double r = w ? rv[i] : rk[i];
            const float g = w ? gv[i] : gk[i];
            if (isnan(r) ? !isnan(g) : !(fabs(g - r) <= tol.atol + tol.rtol * fabs(r)))
                bad++;
        }
    }
    FT_EXPECT(t, bad == 0, "%s: %zu k/v elements off (or written outside their rows)", what, bad);
    FT_CHECK_CUDA(cudaFree(dacc));
    if (sep)
        FT_CHECK_CUDA(cudaFree(sep));
    FT_CHECK_CUDA(cudaFree(drs));
    FT_CHECK_CUDA(cudaFree(dsq));
    FT_CHECK_CUDA(cudaFree(dsk));
    FT_CHECK_CUDA(cudaFree(dsv));
    FT_CHECK_CUDA(cudaFree(dstart));
    if (dtab)
        FT_CHECK_CUDA(cudaFree(dtab));
    FT_CHECK_CUDA(cudaFree(qo));
    FT_CHECK_CUDA(cudaFree(ko));
    FT_CHECK_CUDA(cudaFree(vo));
    free(acc), free(rs), free(sq), free(sk), free(sv), free(start), free(gq), free(gk), free(gv), free(rq), free(rk);
    free(rv);
}

FT_GPU_TEST(llama_qkv_dequant_rope)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x55);
    for (int v = 0; v < NDT; v++)
        for (int c = 0; c < NQKV; c++)
            qkv_one(t, llama_dtypes[v], &qkv_cases[c], &rng);
}

/* ---------------------------------------------------------------- KV cache append */

FT_GPU_TEST(llama_store_kv_cache)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x66);
    const int cases[][6] = {/* B, Hkv, S, D, Lmax, per-sequence starts */
                            {2, 4, 1, 128, 64, 1},
                            {3, 2, 17, 64, 40, 1},
                            {1, 8, 5, 6, 5, 0},
                            {2, 1, 3, 80, 100, 0}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = llama_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int c = 0; c < 4; c++) {
            const int B = cases[c][0], Hkv = cases[c][1], S = cases[c][2], D = cases[c][3], L = cases[c][4];
            const size_t n = (size_t)B * Hkv * S * D, nc = (size_t)B * Hkv * L * D;
            float *k = (float *)malloc(n * 4), *vv = (float *)malloc(n * 4);
            fill_normal(k, n, &rng, 0.0, 1.0, dt);
            fill_normal(vv, n, &rng, 0.0, 1.0, dt);
            int start[8];
            for (int b = 0; b < B; b++) /* some sequences reach past the cache's end */
                start[b] = cases[c][5] ? (int)ref_rng_range(&rng, 0, L - 1) : L - S;
            void *dk = dev_alloc(n * es), *dv = dev_alloc(n * es), *kc = dev_alloc(nc * es), *vc = dev_alloc(nc * es);
            dev_upload(dk, k, n, dt);
            dev_upload(dv, vv, n, dt);
            dev_poison(kc, nc * es);
            dev_poison(vc, nc * es);
            int *ds = dev_upload_ints(start, B);
            ft_status st = ft_store_kv_cache(dt, dk, dv, kc, vc, B, Hkv, S, D, L, cases[c][5] ? ds : NULL,
                                             cases[c][5] ? 0 : L - S, 0);
            FT_EXPECT(t, st == FT_OK, "%s store_kv_cache case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            float *gk = (float *)malloc(nc * 4), *gv = (float *)malloc(nc * 4);
            dev_download(gk, kc, nc, dt);
            dev_download(gv, vc, nc, dt);
            size_t bad = 0;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < Hkv; h++)
                    for (int l = 0; l < L; l++) {
                        const int s = l - start[b];
                        for (int d = 0; d < D; d++) {
                            const size_t ic = (((size_t)b * Hkv + h) * L + l) * D + d;
                            if (s >= 0 && s < S) {
                                const size_t is = (((size_t)b * Hkv + h) * S + s) * D + d;
                                bad += gk[ic] != k[is] || gv[ic] != vv[is];
                            } else {
                                bad += !isnan(gk[ic]) || !isnan(gv[ic]);
                            }
                        }
                    }
            FT_EXPECT(t, bad == 0, "%s store_kv_cache case %d: %zu elements wrong", ft_dtype_name(dt), c, bad);
            FT_CHECK_CUDA(cudaFree(dk));
            FT_CHECK_CUDA(cudaFree(dv));
            FT_CHECK_CUDA(cudaFree(kc));
            FT_CHECK_CUDA(cudaFree(vc));
            FT_CHECK_CUDA(cudaFree(ds));
            free(k), free(vv), free(gk), free(gv);
        }
    }
}

/* ---------------------------------------------------------------- causal softmax */

FT_GPU_TEST(llama_causal_softmax)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x77);
    /* B, H, Sq, Sk, causal, mask, ld pad, in place */
    const int cases[][8] = {{1, 1, 1, 1, 1, 0, 0, 0},   {2, 3, 5, 5, 1, 0, 0, 0},    {1, 2, 3, 10, 1, 1, 0, 1},
                            {1, 1, 4, 2, 1, 0, 0, 0},   {2, 2, 7, 37, 1, 1, 3, 0},   {1, 1, 2, 40000, 1, 0, 0, 1},
                            {1, 1, 1, 33001, 0, 0, 0, 0}, {2, 4, 64, 64, 1, 0, 0, 1}, {1, 2, 16, 1024, 0, 1, 0, 0},
                            {1, 1, 3, 6, 1, 0, 1, 0},   {1, 2, 3, 5000, 1, 1, 0, 0}, {2, 1, 4, 700, 1, 0, 1, 1},
                            {3, 5, 9, 9, 1, 0, 1, 0},   {5, 3, 17, 130, 1, 1, 0, 1}, {4, 3, 128, 128, 1, 0, 0, 0},
                            {3, 7, 11, 33, 1, 0, 0, 0}, {2, 3, 13, 200, 1, 0, 5, 0}, {3, 1, 5, 300, 0, 1, 0, 0}};
    /* rows of up to a warp's registers (1024 keys, 512 element by element) in groups of the
       fewest lanes that hold them (1 to 32, rows count not a multiple of a block's); the
       rest a block each, in registers (5000, 700 element by element) or read again */
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = llama_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        const ref_tol tol = ref_tolerance(dt);
        for (int c = 0; c < ncases; c++) {
            const int B = cases[c][0], H = cases[c][1], Sq = cases[c][2], Sk = cases[c][3], causal = cases[c][4];
            const int use_mask = cases[c][5], ld = Sk + cases[c][6], inplace = cases[c][7];
            const size_t rows = (size_t)B * H * Sq, n = rows * ld;
            float *x = (float *)malloc(n * 4), *mask = (float *)malloc((size_t)Sq * ld * 4), *y = (float *)malloc(n * 4);
            double *ref = (double *)malloc(n * 8);
            fill_normal(x, n, &rng, 0.0, 2.0, dt);
            for (size_t i = 0; i < (size_t)Sq * ld; i++) /* additive: 0 or a large negative */
                mask[i] = ref_rng_uniform(&rng) < 0.2 ? -10000.0f : 0.0f;
            void *dx = dev_alloc(n * es), *dy = dev_alloc(n * es), *dm = dev_alloc((size_t)Sq * ld * es);
            dev_upload(dx, x, n, dt);
            dev_upload(dm, mask, (size_t)Sq * ld, dt);
            dev_poison(dy, n * es);
            const float scale = 0.125f;
            ft_status st = ft_causal_softmax(dt, dx, inplace ? dx : dy, use_mask ? dm : NULL, ld, ld, B, H, Sq, Sk,
                                             causal, scale, 0);
            FT_EXPECT(t, st == FT_OK, "%s causal_softmax case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            dev_download(y, inplace ? dx : dy, n, dt);
            float *yc = (float *)malloc(rows * Sk * 4);
            double *rc = (double *)malloc(rows * Sk * 8);
            for (size_t r = 0; r < rows; r++) {
                const int qi = (int)(r % Sq);
                const int lim = causal ? Sk - Sq + qi + 1 : Sk;
                ref_causal_softmax_row(x + r * ld, use_mask ? mask + (size_t)qi * ld : NULL, Sk, lim, scale,
                                       rc + r * Sk);
                memcpy(yc + r * Sk, y + r * ld, Sk * 4);
            }
            char what[96];
            snprintf(what, sizeof what, "%s causal_softmax B%d H%d Sq%d Sk%d causal %d mask %d ld %d inplace %d",
                     ft_dtype_name(dt), B, H, Sq, Sk, causal, use_mask, ld, inplace);
            ft_expect_close(t, what, yc, rc, rows * Sk, tol.atol * 0.1, tol.rtol);
            if (!inplace) { /* the columns past Sk are never written: still poison */
                size_t written = 0;
                for (size_t r = 0; r < rows; r++)
                    for (int j = Sk; j < ld; j++)
                        written += !isnan(y[r * ld + j]);
                FT_EXPECT(t, written == 0, "%s: %zu entries past Sk written", what, written);
            }
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(dy));
            FT_CHECK_CUDA(cudaFree(dm));
            free(x), free(mask), free(y), free(ref), free(yc), free(rc);
        }
    }
}

/* ---------------------------------------------------------------- attention output quantised */

FT_GPU_TEST(llama_attn_quant_transpose)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() ^ 0x88);
    /* B, S, H, D, heads */
    const int cases[][5] = {{2, 5, 4, 64, 1}, {3, 1, 32, 128, 1}, {4, 1, 32, 128, 0}, {1, 3, 5, 6, 1},
                            {1, 2, 64, 1024, 1}, {2, 2, 3, 7, 0}, {1, 1, 40, 1000, 1}};
    for (int v = 0; v < NDT; v++) {
        const ft_dtype dt = llama_dtypes[v];
        const size_t es = ft_dtype_size(dt);
        for (int c = 0; c < 7; c++) {
            const int B = cases[c][0], S = cases[c][1], H = cases[c][2], D = cases[c][3], heads = cases[c][4];
            const int64_t m = (int64_t)B * S, n = (int64_t)H * D;
            float *x = (float *)malloc(m * n * 4), *sc = (float *)malloc(m * 4);
            double *y = (double *)malloc(m * n * 8), *tg = (double *)malloc(m * n * 8), *sr = (double *)malloc(m * 8);
            int8_t *q = (int8_t *)malloc(m * n);
            fill_normal(x, m * n, &rng, 0.0, 1.0, dt);
            if (c == 0) /* a row of zeros: token (b 1, s 2) in every head */
                for (int h = 0; h < H; h++)
                    memset(x + (((size_t)1 * H + h) * S + 2) * D, 0, D * 4);
            void *dx = dev_alloc(m * n * es);
            int8_t *dq = (int8_t *)dev_alloc(m * n + 16);
            float *dsc = (float *)dev_alloc(m * 4);
            dev_upload(dx, x, m * n, dt);
            FT_CHECK_CUDA(cudaMemset(dq, 0x80, m * n));
            dev_poison(dsc, m * 4);
            ft_status st = ft_attn_quant_transpose(dt, dx, dq, dsc, B, H, S, D, heads, 0);
            FT_EXPECT(t, st == FT_OK, "%s attn_quant_transpose case %d: %s", ft_dtype_name(dt), c, ft_last_error());
            get_quant(q, sc, dq, dsc, m, n);
            for (int b = 0; b < B; b++)
                for (int s = 0; s < S; s++)
                    for (int h = 0; h < H; h++)
                        for (int d = 0; d < D; d++)
                            y[((size_t)b * S + s) * n + h * D + d] =
                                heads ? x[(((size_t)b * H + h) * S + s) * D + d] : x[((size_t)b * S + s) * n + h * D + d];
            for (int64_t r = 0; r < m; r++)
                ref_quant_row(y + r * n, (int)n, tg + r * n, sr + r);
            char what[96];
            snprintf(what, sizeof what, "%s attn_quant_transpose B%d S%d H%d D%d heads %d", ft_dtype_name(dt), B, S, H,
                     D, heads);
            expect_quant(t, what, q, sc, tg, sr, m, n);
            FT_CHECK_CUDA(cudaFree(dx));
            FT_CHECK_CUDA(cudaFree(dq));
            FT_CHECK_CUDA(cudaFree(dsc));
            free(x), free(sc), free(y), free(tg), free(sr), free(q);
        }
    }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
