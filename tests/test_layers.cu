/* GPU tests of the composed layers in examples/: the BERT encoder layer (with and without
 * padding removal) and one step of the FasterTransformer v2.0 decoder layer, each against
 * a C reference of the whole layer (ref/ref_encoder.c) on random weights and shapes.
 * fp32 runs its GEMMs without TF32, so all three dtypes are held to tolerances that
 * follow from their own rounding. */
#include <string.h>

#include "bert_layer.cuh"
#include "decoder_layer.cuh"
#include "decoding.cuh"
#include "llama_layer.cuh"

#include "cuda_util.h"
#include "gemm_util.h"
#include "harness.h"
#include "ref/ref_decoding.h"
#include "ref/ref_encoder.h"
#include "ref/ref_llama.h"
#include "ref/ref_norm.h"

/* A host tensor of dtype-representable values and its device copy. */
typedef struct tensor {
    float *h;
    void *d;
    size_t n;
} tensor;

#define MAX_TENSORS 128
typedef struct pool {
    tensor t[MAX_TENSORS];
    int n;
    ft_dtype dt;
    ref_rng *rng;
} pool;

static tensor *make(pool *p, size_t n, double mean, double sd)
{
    tensor *t = &p->t[p->n++];
    t->n = n;
    t->h = (float *)malloc(n * sizeof(float));
    fill_normal(t->h, n, p->rng, mean, sd, p->dt);
    t->d = dev_alloc(n * ft_dtype_size(p->dt));
    dev_upload(t->d, t->h, n, p->dt);
    return t;
}

static void pool_free(pool *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->t[i].h);
        cudaFree(p->t[i].d);
    }
    p->n = 0;
}

/* Whole-layer tolerance: a multiple of the dtype's rounding tolerance, since a rounding
 * that differs in an intermediate propagates through two GEMMs and a layernorm. */
static ref_tol layer_tol(ft_dtype dt)
{
    ref_tol t = ref_tolerance(dt);
    const double f = dt == FT_FP32 ? 20.0 : 10.0;
    t.atol *= f;
    t.rtol *= f;
    return t;
}

static void run_bert(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S, int N, int H, int F)
{
    pool p;
    memset(&p, 0, sizeof p);
    p.dt = dt, p.rng = rng;
    const double ws = 1.0 / sqrt((double)N), wf = 1.0 / sqrt((double)F);
    tensor *x = make(&p, (size_t)B * S * N, 0.0, 1.0);
    tensor *w_qkv = make(&p, 3 * (size_t)N * N, 0.0, ws), *b_qkv = make(&p, 3 * N, 0.0, 0.2);
    tensor *w_out = make(&p, (size_t)N * N, 0.0, ws), *b_out = make(&p, N, 0.0, 0.2);
    tensor *g1 = make(&p, N, 1.0, 0.2), *be1 = make(&p, N, 0.0, 0.2);
    tensor *w1 = make(&p, (size_t)N * F, 0.0, ws), *b1 = make(&p, F, 0.0, 0.2);
    tensor *w2 = make(&p, (size_t)F * N, 0.0, wf), *b2 = make(&p, N, 0.0, 0.2);
    tensor *g2 = make(&p, N, 1.0, 0.2), *be2 = make(&p, N, 0.0, 0.2);
    int *len = (int *)malloc(B * sizeof(int));
    int valid = 0;
    for (int b = 0; b < B; b++) {
        len[b] = b == 0 ? S : (int)ref_rng_range(rng, 1, S);
        valid += len[b];
    }
    int *dlen = dev_upload_ints(len, B);
    const size_t count = (size_t)B * S * N;
    double *ref = (double *)malloc(count * sizeof(double));
    float *got = (float *)malloc(count * sizeof(float)), *gv = (float *)malloc(count * sizeof(float));
    double *rv = (double *)malloc(count * sizeof(double));
    ref_bert_w rw = {w_qkv->h, b_qkv->h, w_out->h, b_out->h, g1->h, be1->h, w1->h, b1->h, w2->h, b2->h, g2->h, be2->h};
    ref_bert_layer(&rw, x->h, len, B, S, N, H, F, 1e-6, dt, ref);
    ft_bert_weights w = {w_qkv->d, b_qkv->d, w_out->d, b_out->d, g1->d, be1->d, w1->d, b1->d, w2->d, b2->d, g2->d, be2->d};
    void *y = dev_alloc(count * ft_dtype_size(dt));
    for (int rp = 0; rp < 2; rp++) {
        ft_bert_config c = {dt, N, H, F, 1e-6f, rp};
        const size_t ws_bytes = ft_bert_workspace_bytes(&c, B, S);
        void *work = dev_alloc(ws_bytes);
        dev_poison(y, count * ft_dtype_size(dt));
        dev_poison(work, ws_bytes);
        ft_status st =
            ft_bert_layer_forward(shared_gemm_ctx(), &c, &w, x->d, dlen, B, S, rp ? -1 : 0, y, work, ws_bytes, 0);
        char what[200];
        snprintf(what, sizeof what, "bert %s B=%d S=%d N=%d H=%d F=%d remove_padding=%d", ft_dtype_name(dt), B, S, N,
                 H, F, rp);
        FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
        if (st == FT_OK) {
            dev_download(got, y, count, dt);
            size_t k = 0;
            for (int b = 0; b < B; b++)
                for (int s = 0; s < len[b]; s++)
                    for (int n = 0; n < N; n++, k++) {
                        const size_t i = ((size_t)b * S + s) * N + n;
                        gv[k] = got[i];
                        rv[k] = ref[i];
                    }
            ref_tol tol = layer_tol(dt);
            ft_expect_close(t, what, gv, rv, k, tol.atol, tol.rtol);
            if (rp) { /* padding rows come back as zeros */
                int nonzero = 0;
                for (int b = 0; b < B; b++)
                    for (int s = len[b]; s < S; s++)
                        for (int n = 0; n < N; n++)
                            nonzero += got[((size_t)b * S + s) * N + n] != 0.0f;
                FT_EXPECT(t, nonzero == 0, "%s: %d padding elements are not zero", what, nonzero);
            }
        }
        cudaFree(work);
    }
    (void)valid;
    cudaFree(y), cudaFree(dlen);
    free(len), free(ref), free(got), free(gv), free(rv);
    pool_free(&p);
}

static void run_decoder(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int N, int H, int Nmem, int Lmem, int L,
                        ft_kv_layout layout)
{
    pool p;
    memset(&p, 0, sizeof p);
    p.dt = dt, p.rng = rng;
    const int F = 4 * N, D = N / H;
    const double ws = 1.0 / sqrt((double)N), wf = 1.0 / sqrt((double)F), wm = 1.0 / sqrt((double)Nmem);
    tensor *x = make(&p, (size_t)B * N, 0.0, 1.0), *mem = make(&p, (size_t)B * Lmem * Nmem, 0.0, 1.0);
    tensor *kc = make(&p, (size_t)B * L * N, 0.0, 1.0), *vc = make(&p, (size_t)B * L * N, 0.0, 1.0);
    tensor *g1 = make(&p, N, 1.0, 0.2), *be1 = make(&p, N, 0.0, 0.2);
    tensor *w_qkv = make(&p, 3 * (size_t)N * N, 0.0, ws), *b_qkv = make(&p, 3 * N, 0.0, 0.2);
    tensor *w_so = make(&p, (size_t)N * N, 0.0, ws), *b_so = make(&p, N, 0.0, 0.2);
    tensor *g2 = make(&p, N, 1.0, 0.2), *be2 = make(&p, N, 0.0, 0.2);
    tensor *w_cq = make(&p, (size_t)N * N, 0.0, ws), *b_cq = make(&p, N, 0.0, 0.2);
    tensor *w_ck = make(&p, (size_t)Nmem * N, 0.0, wm), *b_ck = make(&p, N, 0.0, 0.2);
    tensor *w_cv = make(&p, (size_t)Nmem * N, 0.0, wm), *b_cv = make(&p, N, 0.0, 0.2);
    tensor *w_co = make(&p, (size_t)N * N, 0.0, ws), *b_co = make(&p, N, 0.0, 0.2);
    tensor *g3 = make(&p, N, 1.0, 0.2), *be3 = make(&p, N, 0.0, 0.2);
    tensor *w1 = make(&p, (size_t)N * F, 0.0, ws), *b1 = make(&p, F, 0.0, 0.2);
    tensor *w2 = make(&p, (size_t)F * N, 0.0, wf), *b2 = make(&p, N, 0.0, 0.2);
    int *len = (int *)malloc(B * sizeof(int)), *mlen = (int *)malloc(B * sizeof(int));
    for (int b = 0; b < B; b++) {
        len[b] = b == 0 ? L - 1 : (int)ref_rng_range(rng, 0, L - 1);
        mlen[b] = b == 0 ? Lmem : (int)ref_rng_range(rng, 1, Lmem);
    }
    int *dlen = dev_upload_ints(len, B), *dmlen = dev_upload_ints(mlen, B);
    const size_t BN = (size_t)B * N;
    double *ref = (double *)malloc(BN * sizeof(double));
    float *got = (float *)malloc(BN * sizeof(float));
    ref_dec_w rw = {g1->h, be1->h, w_qkv->h, b_qkv->h, w_so->h, b_so->h, g2->h, be2->h, w_cq->h, b_cq->h, w_ck->h,
                    b_ck->h, w_cv->h, b_cv->h, w_co->h, b_co->h, g3->h, be3->h, w1->h, b1->h, w2->h, b2->h};
    ref_decoder_step(&rw, x->h, mem->h, B, N, H, F, Nmem, Lmem, mlen, kc->h, vc->h, (int)layout, L, len, 1e-6, dt, ref);
    ft_decoder_weights w = {g1->d, be1->d, w_qkv->d, b_qkv->d, w_so->d, b_so->d, g2->d, be2->d,
                            w_cq->d, b_cq->d, w_ck->d, b_ck->d, w_cv->d, b_cv->d, w_co->d, b_co->d,
                            g3->d, be3->d, w1->d, b1->d, w2->d, b2->d};
    ft_decoder_config c = {dt, N, H, F, Nmem, 1e-6f};
    const size_t es = ft_dtype_size(dt);
    void *kmem = dev_alloc((size_t)B * Lmem * N * es), *vmem = dev_alloc((size_t)B * Lmem * N * es);
    const size_t ws_bytes = ft_decoder_workspace_bytes(&c, B);
    void *work = dev_alloc(ws_bytes), *y = dev_alloc(BN * es);
    dev_poison(work, ws_bytes);
    dev_poison(y, BN * es);
    char what[200];
    snprintf(what, sizeof what, "decoder %s B=%d N=%d H=%d (D=%d) Nmem=%d Lmem=%d L=%d layout=%d", ft_dtype_name(dt),
             B, N, H, D, Nmem, Lmem, L, (int)layout);
    ft_status st = ft_decoder_prepare_memory(shared_gemm_ctx(), &c, &w, mem->d, B, Lmem, kmem, vmem, 0);
    FT_EXPECT(t, st == FT_OK, "%s (memory): %s", what, ft_last_error());
    if (st == FT_OK)
        st = ft_decoder_layer_step(shared_gemm_ctx(), &c, &w, x->d, kc->d, vc->d, layout, L, dlen, NULL, 0, kmem, vmem,
                                   Lmem, dmlen, B, y, work, ws_bytes, 0);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        dev_download(got, y, BN, dt);
        ref_tol tol = layer_tol(dt);
        ft_expect_close(t, what, got, ref, BN, tol.atol, tol.rtol);
    }
    cudaFree(kmem), cudaFree(vmem), cudaFree(work), cudaFree(y), cudaFree(dlen), cudaFree(dmlen);
    free(len), free(mlen), free(ref), free(got);
    pool_free(&p);
}

static void bert_test(ft_test *t)
{
    const ft_dtype dt = (ft_dtype)(intptr_t)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 101 * (uint64_t)dt);
    /* B, S, N, H, F: the softmax's register buckets and stream kernel, D of 8..128,
     * F not a multiple of the vector */
    static const int shapes[][5] = {{1, 1, 32, 2, 64},   {2, 7, 64, 4, 256},   {3, 33, 96, 3, 200},
                                    {2, 128, 128, 2, 512}, {4, 20, 256, 4, 1024}, {1, 300, 64, 8, 128}};
    for (int i = 0; i < 6 && !t->failures; i++)
        run_bert(t, dt, &rng, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4]);
    for (int i = 0; i < 3 && !t->failures; i++) {
        const int H = (int)ref_rng_range(&rng, 1, 4), D = 8 * (int)ref_rng_range(&rng, 1, 12);
        run_bert(t, dt, &rng, (int)ref_rng_range(&rng, 1, 5), (int)ref_rng_range(&rng, 1, 90), H * D, H,
                 (int)ref_rng_range(&rng, 8, 400));
    }
}

static void decoder_test(ft_test *t)
{
    const ft_dtype dt = (ft_dtype)(intptr_t)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 211 * (uint64_t)dt);
    /* B, N, H (N/H a generated head size), Nmem, Lmem, L */
    static const int shapes[][6] = {{1, 64, 2, 64, 5, 3},     {3, 128, 2, 96, 17, 40},  {4, 256, 4, 256, 50, 130},
                                    {2, 512, 8, 512, 33, 300}, {5, 192, 2, 128, 9, 2000}, {2, 96, 3, 64, 1, 1}};
    for (int i = 0; i < 6 && !t->failures; i++)
        run_decoder(t, dt, &rng, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], shapes[i][5],
                    i % 2 ? FT_KV_BHLD : FT_KV_LBHD);
}

/* ---------------------------------------------------------------- LLaMA int8 layer */

/* int8 weights [out, in] uniform in [-127, 127], and per-output scales that make the
 * dequantised weights about 1/sqrt(in) in size */
static int8_t *rand_w8(ref_rng *rng, int out, int in, float **scale)
{
    int8_t *w = (int8_t *)malloc((size_t)out * in);
    for (size_t i = 0; i < (size_t)out * in; i++)
        w[i] = (int8_t)ref_rng_range(rng, -127, 127);
    *scale = (float *)malloc((size_t)out * 4);
    for (int i = 0; i < out; i++)
        (*scale)[i] = (float)((1.2 + 0.6 * ref_rng_uniform(rng)) / (127.0 * sqrt((double)in)));
    return w;
}

/* examples/llama_layer.cuh against ref_llama_layer: the output and the cache rows it
 * writes, within a share of the output's largest magnitude (an int8 that rounds the other
 * way at an intermediate's rounding moves a GEMM output by one step of its row scale) and
 * on average much closer; the cache rows before `start` untouched. */
static void run_llama(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S, int start, int N, int H, int Hkv, int F,
                      int Lmax, int rope)
{
    const int M = B * S, D = N / H, Wd = (H + 2 * Hkv) * D;
    const size_t es = ft_dtype_size(dt), MN = (size_t)M * N, KV = (size_t)B * Hkv * Lmax * D;
    float *x = (float *)malloc(MN * 4), *g1 = (float *)malloc(N * 4), *g2 = (float *)malloc(N * 4);
    fill_normal(x, MN, rng, 0.0, 1.0, dt);
    fill_normal(g1, N, rng, 1.0, 0.2, dt);
    fill_normal(g2, N, rng, 1.0, 0.2, dt);
    float *kc = (float *)malloc(KV * 4), *vc = (float *)malloc(KV * 4);
    fill_normal(kc, KV, rng, 0.0, 1.0, dt);
    fill_normal(vc, KV, rng, 0.0, 1.0, dt);
    float *sq, *so, *s1, *s3, *s2;
    int8_t *wq = rand_w8(rng, Wd, N, &sq), *wo = rand_w8(rng, N, N, &so), *w1 = rand_w8(rng, F, N, &s1);
    int8_t *w3 = rand_w8(rng, F, N, &s3), *w2 = rand_w8(rng, N, F, &s2);
    void *dx = dev_alloc(MN * es), *dg1 = dev_alloc(N * es), *dg2 = dev_alloc(N * es), *dy = dev_alloc(MN * es);
    void *dkc = dev_alloc(KV * es), *dvc = dev_alloc(KV * es);
    dev_upload(dx, x, MN, dt);
    dev_upload(dg1, g1, N, dt);
    dev_upload(dg2, g2, N, dt);
    dev_upload(dkc, kc, KV, dt);
    dev_upload(dvc, vc, KV, dt);
    dev_poison(dy, MN * es);
    const size_t f4 = sizeof(float);
    ft_llama_weights w = {dg1,
                          dg2,
                          (const int8_t *)dev_copy(wq, (size_t)Wd * N),
                          (const float *)dev_copy(sq, Wd * f4),
                          (const int8_t *)dev_copy(wo, (size_t)N * N),
                          (const float *)dev_copy(so, N * f4),
                          (const int8_t *)dev_copy(w1, (size_t)F * N),
                          (const int8_t *)dev_copy(w3, (size_t)F * N),
                          (const float *)dev_copy(s1, F * f4),
                          (const float *)dev_copy(s3, F * f4),
                          (const int8_t *)dev_copy(w2, (size_t)N * F),
                          (const float *)dev_copy(s2, N * f4)};
    ft_llama_config c;
    memset(&c, 0, sizeof c);
    c.dtype = dt, c.hidden = N, c.heads = H, c.kv_heads = Hkv, c.ffn = F, c.eps = 1e-6f, c.rope = rope;
    const size_t ws = ft_llama_workspace_bytes(&c, B, S, Lmax);
    void *work = dev_alloc(ws);
    dev_poison(work, ws);
    ref_llama_w rw = {g1, g2, wq, wo, w1, w3, w2, sq, so, s1, s3, s2};
    double *ref = (double *)malloc(MN * 8);
    float *rk = (float *)malloc(KV * 4), *rv = (float *)malloc(KV * 4);
    memcpy(rk, kc, KV * 4);
    memcpy(rv, vc, KV * 4);
    ref_llama_layer(&rw, x, B, S, start, N, H, Hkv, F, rope, 1e-6, rk, rv, Lmax, dt, ref);
    char what[160];
    snprintf(what, sizeof what, "llama layer %s B=%d S=%d start=%d N=%d H=%d Hkv=%d F=%d rope=%d", ft_dtype_name(dt), B,
             S, start, N, H, Hkv, F, rope);
    ft_status st = ft_llama_layer_forward(shared_gemm_ctx(), &c, &w, dx, B, S, start, dkc, dvc, Lmax, work, ws, dy, 0);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        float *got = (float *)malloc(MN * 4), *gk = (float *)malloc(KV * 4), *gv = (float *)malloc(KV * 4);
        dev_download(got, dy, MN, dt);
        dev_download(gk, dkc, KV, dt);
        dev_download(gv, dvc, KV, dt);
        double big = 0.0, err = 0.0;
        for (size_t i = 0; i < MN; i++) {
            big = fmax(big, fabs(ref[i]));
            err += fabs(got[i] - ref[i]);
        }
        const double share = dt == FT_BF16 ? 0.06 : 0.03;
        ft_expect_close(t, what, got, ref, MN, share * big, 0.0);
        FT_EXPECT(t, err / MN <= share * big / 8, "%s: mean error %.3g against %.3g", what, err / MN, share * big / 8);
        double *rkd = (double *)malloc(KV * 8 * 2);
        for (size_t i = 0; i < KV; i++)
            rkd[i] = rk[i], rkd[KV + i] = rv[i];
        float *gkv = (float *)malloc(KV * 4 * 2);
        memcpy(gkv, gk, KV * 4);
        memcpy(gkv + KV, gv, KV * 4);
        char whatc[200];
        snprintf(whatc, sizeof whatc, "%s caches", what);
        ft_expect_close(t, whatc, gkv, rkd, 2 * KV, share, 0.0); /* k, v about N(0, 1) */
        free(got), free(gk), free(gv), free(rkd), free(gkv);
    }
    cudaFree(dx), cudaFree(dg1), cudaFree(dg2), cudaFree(dy), cudaFree(dkc), cudaFree(dvc), cudaFree(work);
    cudaFree((void *)w.w_qkv), cudaFree((void *)w.qkv_scale), cudaFree((void *)w.w_o), cudaFree((void *)w.o_scale);
    cudaFree((void *)w.w1), cudaFree((void *)w.w3), cudaFree((void *)w.w1_scale), cudaFree((void *)w.w3_scale);
    cudaFree((void *)w.w2), cudaFree((void *)w.w2_scale);
    free(x), free(g1), free(g2), free(kc), free(vc), free(wq), free(wo), free(w1), free(w3), free(w2);
    free(sq), free(so), free(s1), free(s3), free(s2), free(ref), free(rk), free(rv);
}

static void llama_test(ft_test *t)
{
    const ft_dtype dt = (ft_dtype)(intptr_t)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 307 * (uint64_t)dt);
    /* a prompt after cached tokens (grouped heads), a decode step, a prompt from 0 (MQA,
       half-split rotary), N and F off 16-byte vectors of 16-bit types; decode steps through
       the attention family (grouped heads; a long cache, split over the GPU) and, at a
       head size it does not generate (D 24, MQA), through the GEMMs */
    run_llama(t, dt, &rng, 2, 5, 3, 128, 4, 2, 256, 16, FT_ROPE_INTERLEAVED);
    run_llama(t, dt, &rng, 3, 1, 7, 256, 8, 8, 512, 12, FT_ROPE_INTERLEAVED);
    run_llama(t, dt, &rng, 1, 33, 0, 64, 2, 1, 192, 40, FT_ROPE_HALF);
    run_llama(t, dt, &rng, 2, 4, 2, 96, 3, 3, 100, 9, FT_ROPE_INTERLEAVED);
    run_llama(t, dt, &rng, 4, 1, 20, 512, 8, 2, 256, 40, FT_ROPE_HALF);
    run_llama(t, dt, &rng, 2, 1, 1500, 256, 2, 2, 128, 1600, FT_ROPE_INTERLEAVED);
    run_llama(t, dt, &rng, 2, 1, 5, 72, 3, 1, 64, 8, FT_ROPE_INTERLEAVED);
}

/* ---------------------------------------------------------------- whole decoding loop */

/* The decoding loop of examples/decoding.cuh against the same loop in C (embedding and
 * sine position, every decoder layer, final norm, logits, log-softmax, beam top-K and
 * update, cache reorder, early stop, gather tree), token for token. fp32 without TF32;
 * the reference takes each step's decision on its own numbers. */
static void run_decoding(ft_test *t, ref_rng *rng, int B, int beam, int layers, int N, int H, int Nmem, int Lmem,
                         int V, int steps, float end_bias)
{
    const ft_dtype dt = FT_FP32;
    pool p;
    memset(&p, 0, sizeof p);
    p.dt = dt, p.rng = rng;
    const int F = 4 * N, R = B * beam, start_id = 1, end_id = 2, T = steps;
    const double ws = 1.0 / sqrt((double)N), wf = 1.0 / sqrt((double)F), wm = 1.0 / sqrt((double)Nmem);
    ref_dec_w rw[4];
    ft_decoder_weights dw[4];
    for (int l = 0; l < layers; l++) {
        tensor *g1 = make(&p, N, 1.0, 0.2), *be1 = make(&p, N, 0.0, 0.2);
        tensor *w_qkv = make(&p, 3 * (size_t)N * N, 0.0, ws), *b_qkv = make(&p, 3 * N, 0.0, 0.2);
        tensor *w_so = make(&p, (size_t)N * N, 0.0, ws), *b_so = make(&p, N, 0.0, 0.2);
        tensor *g2 = make(&p, N, 1.0, 0.2), *be2 = make(&p, N, 0.0, 0.2);
        tensor *w_cq = make(&p, (size_t)N * N, 0.0, ws), *b_cq = make(&p, N, 0.0, 0.2);
        tensor *w_ck = make(&p, (size_t)Nmem * N, 0.0, wm), *b_ck = make(&p, N, 0.0, 0.2);
        tensor *w_cv = make(&p, (size_t)Nmem * N, 0.0, wm), *b_cv = make(&p, N, 0.0, 0.2);
        tensor *w_co = make(&p, (size_t)N * N, 0.0, ws), *b_co = make(&p, N, 0.0, 0.2);
        tensor *g3 = make(&p, N, 1.0, 0.2), *be3 = make(&p, N, 0.0, 0.2);
        tensor *w1 = make(&p, (size_t)N * F, 0.0, ws), *b1 = make(&p, F, 0.0, 0.2);
        tensor *w2 = make(&p, (size_t)F * N, 0.0, wf), *b2 = make(&p, N, 0.0, 0.2);
        rw[l] = (ref_dec_w){g1->h, be1->h, w_qkv->h, b_qkv->h, w_so->h, b_so->h, g2->h, be2->h, w_cq->h, b_cq->h,
                            w_ck->h, b_ck->h, w_cv->h, b_cv->h, w_co->h, b_co->h, g3->h, be3->h, w1->h, b1->h,
                            w2->h, b2->h};
        dw[l] = (ft_decoder_weights){g1->d, be1->d, w_qkv->d, b_qkv->d, w_so->d, b_so->d, g2->d, be2->d,
                                     w_cq->d, b_cq->d, w_ck->d, b_ck->d, w_cv->d, b_cv->d, w_co->d, b_co->d,
                                     g3->d, be3->d, w1->d, b1->d, w2->d, b2->d};
    }
    tensor *emb = make(&p, (size_t)V * N, 0.0, 1.0), *lg = make(&p, N, 1.0, 0.2), *lb = make(&p, N, 0.0, 0.2);
    /* peaked logits (fewer near-ties) and an end token that is often chosen */
    tensor *wl = make(&p, (size_t)N * V, 0.0, 3.0 * ws), *bl = make(&p, V, 0.0, 0.5);
    bl->h[end_id] = end_bias;
    dev_upload(bl->d, bl->h, V, dt);
    /* memory per item, repeated for its beams */
    tensor *mem1 = make(&p, (size_t)B * Lmem * Nmem, 0.0, 1.0);
    float *mem = (float *)malloc((size_t)R * Lmem * Nmem * sizeof(float));
    int *mlen = (int *)malloc(R * sizeof(int));
    for (int r = 0; r < R; r++) {
        memcpy(mem + (size_t)r * Lmem * Nmem, mem1->h + (size_t)(r / beam) * Lmem * Nmem, (size_t)Lmem * Nmem * 4);
        mlen[r] = 1 + (r / beam * 7) % Lmem;
    }
    void *dmem = dev_alloc((size_t)R * Lmem * Nmem * 4);
    dev_upload(dmem, mem, (size_t)R * Lmem * Nmem, dt);
    int *dmlen = dev_upload_ints(mlen, R);


    /* the same loop in C */
    float *kc = (float *)calloc((size_t)layers * T * R * N, 4), *vc = (float *)calloc((size_t)layers * T * R * N, 4);
    float *kt = (float *)malloc((size_t)T * R * N * 4), *x = (float *)malloc((size_t)R * N * 4);
    float *lp = (float *)malloc((size_t)R * V * 4), *logit = (float *)malloc((size_t)R * V * 4);
    double *y = (double *)malloc((size_t)R * (N > V ? N : V) * 8), *nd = (double *)malloc((size_t)R * N * 8);
    double *wd = (double *)malloc((size_t)N * V * 8), *row = (double *)malloc((size_t)V * 8);
    for (size_t i = 0; i < (size_t)N * V; i++)
        wd[i] = wl->h[i];
    float cum[64], cv[64];
    int word[64], par[64], len[64], cached[64], ci[64];
    bool fin[64];
    int *hist = (int *)malloc((size_t)T * R * 4), *phist = (int *)malloc((size_t)T * R * 4);
    for (int r = 0; r < R; r++)
        cum[r] = r % beam ? -1e20f : 0.0f, word[r] = start_id, len[r] = 0, fin[r] = false;
    int ref_steps = 0;
    for (int s = 0; s < T; s++) {
        for (int r = 0; r < R; r++) {
            cached[r] = s;
            for (int i = 0; i < N; i++)
                x[(size_t)r * N + i] =
                    (float)((double)emb->h[(size_t)word[r] * N + i] * sqrt((double)N) + ref_sine_position(s, i, N));
        }
        for (int l = 0; l < layers; l++) {
            ref_decoder_step(&rw[l], x, mem, R, N, H, F, Nmem, Lmem, mlen, kc + (size_t)l * T * R * N,
                             vc + (size_t)l * T * R * N, (int)FT_KV_LBHD, T, cached, 1e-6, dt, y);
            for (size_t i = 0; i < (size_t)R * N; i++)
                x[i] = (float)y[i];
        }
        ref_norm_rows(x, NULL, NULL, lg->h, lb->h, nd, NULL, R, N, 1e-6, 0, dt);
        for (size_t i = 0; i < (size_t)R * N; i++)
            nd[i] = (float)nd[i];
        ref_matmul(nd, wd, y, R, V, N);
        for (size_t i = 0; i < (size_t)R * V; i++)
            logit[i] = (float)y[i];
        for (int r = 0; r < R; r++) {
            ref_update_logits(logit + (size_t)r * V, bl->h, V, fin[r], end_id, 1.0, 2, row);
            for (int j = 0; j < V; j++)
                lp[(size_t)r * V + j] = (float)row[j];
        }
        for (int b = 0; b < B; b++) {
            ref_beam_topk(lp + (size_t)b * beam * V, V, cum + b * beam, beam, V, beam, cv, ci);
            ref_beam_update(cv, ci, beam, V, end_id, cum + b * beam, par + b * beam, word + b * beam, len + b * beam,
                            fin + b * beam);
        }
        for (int r = 0; r < R; r++)
            hist[s * R + r] = word[r], phist[s * R + r] = par[r];
        if (beam > 1) /* caches follow their beams */
            for (int l = 0; l < layers; l++)
                for (int kvi = 0; kvi < 2; kvi++) {
                    float *c = (kvi ? vc : kc) + (size_t)l * T * R * N;
                    memcpy(kt, c, (size_t)T * R * N * 4);
                    for (int pos = 0; pos <= s; pos++)
                        for (int r = 0; r < R; r++)
                            memcpy(c + ((size_t)pos * R + r) * N, kt + ((size_t)pos * R + r - r % beam + par[r]) * N,
                                   (size_t)N * 4);
                }
        ref_steps = s + 1;
        int all = 1;
        for (int r = 0; r < R; r++)
            all &= fin[r];
        if (all)
            break;
    }
    for (int indirect = 0; indirect < (beam > 1 ? 2 : 1); indirect++) {
        /* GPU: the caches reordered by parent, and (beam search) read through indirection tables */
        ft_decoding_config cfg = {{dt, N, H, F, Nmem, 1e-6f}, layers, V, beam, T, start_id, end_id, indirect};
        ft_decoding_weights w = {emb->d, dw, lg->d, lb->d, wl->d, bl->d};
        const size_t wsb = ft_decoding_workspace_bytes(&cfg, B, Lmem);
        void *work = dev_alloc(wsb);
        int *dout = (int *)dev_alloc((size_t)R * T * 4), *dlens = (int *)dev_alloc(R * 4);
        float *dcum = (float *)dev_alloc(R * 4);
        int steps_run = -1;
        char what[160];
        snprintf(what, sizeof what, "decoding B=%d beam=%d layers=%d N=%d H=%d V=%d steps=%d%s", B, beam, layers, N, H,
                 V, steps, indirect ? " (cache indirection)" : "");
        ft_status st = ft_decoding_run(shared_gemm_ctx(), &cfg, &w, dmem, Lmem, dmlen, B, steps, dout, dlens, dcum,
                                       &steps_run, work, wsb, 0);
        FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
        FT_EXPECT(t, steps_run == ref_steps, "%s: ran %d steps, the reference %d", what, steps_run, ref_steps);
        if (st == FT_OK && steps_run == ref_steps) {
            int *g = (int *)malloc((size_t)R * ref_steps * 4), glen[64];
            float gcum[64];
            FT_CHECK_CUDA(cudaMemcpy(g, dout, (size_t)R * ref_steps * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(glen, dlens, R * 4, cudaMemcpyDeviceToHost));
            FT_CHECK_CUDA(cudaMemcpy(gcum, dcum, R * 4, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int r = 0; r < R && !bad; r++) {
                int cur = r;
                for (int s = ref_steps - 1; s >= 0; s--) {
                    if (g[(size_t)r * ref_steps + s] != hist[s * R + cur]) {
                        FT_EXPECT(t, 0, "%s: beam row %d differs at step %d (got %d, want %d)", what, r, s,
                                  g[(size_t)r * ref_steps + s], hist[s * R + cur]);
                        bad = 1;
                        break;
                    }
                    cur = r - r % beam + phist[s * R + cur];
                }
                FT_EXPECT(t, bad || glen[r] == len[r], "%s: row %d length %d, want %d", what, r, glen[r], len[r]);
                FT_EXPECT(t, bad || fabs(gcum[r] - cum[r]) <= 1e-3 + 1e-4 * fabs(cum[r]),
                          "%s: row %d score %g, want %g", what, r, gcum[r], cum[r]);
            }
            int finished = 0;
            for (int r = 0; r < R; r++)
                finished += fin[r];
            printf("    %s: %d steps, %d of %d final beams finished\n", what, ref_steps, finished, R);
            free(g);
        }
        cudaFree(work), cudaFree(dout), cudaFree(dlens), cudaFree(dcum);
    }
    free(mem), free(mlen), free(kc), free(vc), free(kt), free(x), free(lp), free(logit), free(y), free(nd), free(wd);
    free(row), free(hist), free(phist);
    cudaFree(dmem), cudaFree(dmlen);
    pool_free(&p);
}

static void decoding_test(ft_test *t)
{
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 4242);
    run_decoding(t, &rng, 3, 1, 2, 64, 2, 48, 5, 97, 12, 1.5f);  /* greedy */
    run_decoding(t, &rng, 2, 4, 2, 64, 2, 48, 5, 97, 12, 1.5f);  /* beam search */
    run_decoding(t, &rng, 2, 8, 1, 128, 4, 64, 3, 300, 16, 1.5f);
    /* an end token likely enough that beams finish on the way and the loop stops early */
    run_decoding(t, &rng, 4, 1, 2, 64, 2, 48, 5, 97, 24, 5.0f);
    run_decoding(t, &rng, 3, 4, 2, 64, 2, 48, 5, 97, 24, 4.0f);
}

__attribute__((constructor)) static void register_layer_tests(void)
{
    static const ft_dtype dts[] = {FT_FP32, FT_FP16, FT_BF16};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "bert_layer_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, bert_test, (void *)(intptr_t)dts[i], 1);
        snprintf(name, sizeof name, "decoder_layer_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, decoder_test, (void *)(intptr_t)dts[i], 1);
        snprintf(name, sizeof name, "llama_layer_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, llama_test, (void *)(intptr_t)dts[i], 1);
    }
    ft_test_register("decoding_loop_fp32", decoding_test, NULL, 1);
}

int main(int argc, char **argv)
{
    int rc = ft_test_main(argc, argv, ft_cuda_probe);
    shared_gemm_ctx_destroy();
    return rc;
}
