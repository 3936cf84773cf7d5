/* GPU tests of the composed layers in examples/: the BERT encoder layer (with and without
 * padding removal) and one step of the FasterTransformer v2.0 decoder layer, each against
 * a C reference of the whole layer (ref/ref_encoder.c) on random weights and shapes.
 * fp32 runs its GEMMs without TF32, so all three dtypes are held to tolerances that
 * follow from their own rounding. */
#include <string.h>

#include "bert_layer.cuh"
#include "decoder_layer.cuh"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_encoder.h"

static ft_gemm_ctx g_ctx;

static ft_gemm_ctx *ctx(void)
{
    if (!g_ctx.blas && ft_gemm_ctx_init(&g_ctx, 32u << 20) != FT_OK) {
        fprintf(stderr, "ft_gemm_ctx_init: %s\n", ft_last_error());
        exit(2);
    }
    g_ctx.allow_tf32 = 0;
    return &g_ctx;
}

/* A host tensor of dtype-representable values and its device copy. */
typedef struct tensor {
    float *h;
    void *d;
    size_t n;
} tensor;

#define MAX_TENSORS 32
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
        ft_status st = ft_bert_layer_forward(ctx(), &c, &w, x->d, dlen, B, S, rp ? -1 : 0, y, work, ws_bytes, 0);
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
    ft_status st = ft_decoder_prepare_memory(ctx(), &c, &w, mem->d, B, Lmem, kmem, vmem, 0);
    FT_EXPECT(t, st == FT_OK, "%s (memory): %s", what, ft_last_error());
    if (st == FT_OK)
        st = ft_decoder_layer_step(ctx(), &c, &w, x->d, kc->d, vc->d, layout, L, dlen, kmem, vmem, Lmem, dmlen, B, y,
                                   work, ws_bytes, 0);
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

__attribute__((constructor)) static void register_layer_tests(void)
{
    static const ft_dtype dts[] = {FT_FP32, FT_FP16, FT_BF16};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "bert_layer_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, bert_test, (void *)(intptr_t)dts[i], 1);
        snprintf(name, sizeof name, "decoder_layer_%s", ft_dtype_name(dts[i]));
        ft_test_register(name, decoder_test, (void *)(intptr_t)dts[i], 1);
    }
}

int main(int argc, char **argv)
{
    int rc = ft_test_main(argc, argv, ft_cuda_probe);
    ft_gemm_ctx_destroy(&g_ctx);
    return rc;
}
