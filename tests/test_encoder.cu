/* GPU tests of the encoder family (ft/encoder_<dtype>.cuh, ft/padding.cuh) against the C
 * references in ref/ref_encoder.c. One test per (operation, generated dtype), registered
 * from ft/variants.h. Shapes cover the vector and element-wise paths (head sizes and
 * hidden sizes not a multiple of the vector, misaligned pointers), every softmax register
 * bucket and the streaming kernel, lengths of 0, 1, S and in between; outputs are
 * poisoned to NaN before every launch. */
#include <string.h>

#include "ft/encoder.cuh"
#include "ft/padding.cuh"
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_encoder.h"

typedef enum enc_op { OP_QKV, OP_FROM_HEADS, OP_PADDING, OP_SOFTMAX, OP_MASK, OP_COUNT } enc_op;
static const char *op_names[OP_COUNT] = {"add_qkv_bias_transpose", "transpose_heads", "remove_rebuild_padding",
                                         "masked_softmax", "build_attention_mask"};

typedef struct enc_arg {
    enc_op op;
    ft_dtype dt;
} enc_arg;

/* A device buffer with room for a one-element misalignment. */
static void *dalloc(size_t count, ft_dtype dt, int misalign, void **base)
{
    const size_t es = ft_dtype_size(dt);
    *base = dev_alloc((count + 16) * es);
    return (char *)*base + (misalign ? es : 0);
}

static void random_lengths(ref_rng *rng, int *len, int B, int S, int mode)
{
    for (int b = 0; b < B; b++) {
        switch ((b + mode) % 5) {
        case 0: len[b] = S; break;
        case 1: len[b] = mode % 2 ? 0 : 1; break;
        case 2: len[b] = (int)ref_rng_range(rng, 0, S); break;
        case 3: len[b] = S + 3; break; /* clamped to S */
        default: len[b] = (int)ref_rng_range(rng, 1, S); break;
        }
    }
}

/* padding offsets on the device agree with the reference (dtype-free; run with fp32). */
static void check_offsets(ft_test *t, ref_rng *rng, int B, int S, int mode)
{
    int *len = (int *)malloc(B * sizeof(int)), *so = (int *)malloc((B + 1) * sizeof(int));
    int *to = (int *)malloc((size_t)B * S * sizeof(int)), *gso = (int *)malloc((B + 1) * sizeof(int));
    int *gto = (int *)malloc((size_t)B * S * sizeof(int));
    random_lengths(rng, len, B, S, mode);
    const int valid = ref_padding_offsets(len, B, S, so, to);
    int *dlen = dev_upload_ints(len, B), *dso = (int *)dev_alloc((B + 1) * sizeof(int));
    int *dto = (int *)dev_alloc((size_t)B * S * sizeof(int));
    FT_CHECK_CUDA(cudaMemset(dso, 0xff, (B + 1) * sizeof(int)));
    FT_CHECK_CUDA(cudaMemset(dto, 0xff, (size_t)B * S * sizeof(int)));
    ft_status st = ft_padding_offsets(dlen, B, S, dso, dto, 0);
    FT_EXPECT(t, st == FT_OK, "ft_padding_offsets B=%d S=%d: %s", B, S, ft_last_error());
    FT_CHECK_CUDA(cudaMemcpy(gso, dso, (B + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    FT_CHECK_CUDA(cudaMemcpy(gto, dto, (size_t)B * S * sizeof(int), cudaMemcpyDeviceToHost));
    FT_EXPECT(t, memcmp(gso, so, (B + 1) * sizeof(int)) == 0, "seq_offsets differ B=%d S=%d (valid %d, got %d)", B, S,
              valid, gso[B]);
    FT_EXPECT(t, memcmp(gto, to, (size_t)valid * sizeof(int)) == 0, "token_offsets differ B=%d S=%d", B, S);
    cudaFree(dlen), cudaFree(dso), cudaFree(dto);
    free(len), free(so), free(to), free(gso), free(gto);
}

/* Q/K/V rows -> heads: three buffers or fused, padded or packed input. */
static void run_qkv(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S, int H, int D, int fused, int packed,
                    int misalign, int mode)
{
    const int N = H * D;
    int *len = (int *)malloc(B * sizeof(int)), *so = (int *)malloc((B + 1) * sizeof(int));
    random_lengths(rng, len, B, S, mode);
    const int valid = ref_padding_offsets(len, B, S, so, NULL);
    const int rows = packed ? valid : B * S;
    const int64_t ld = fused ? 3 * N : N;
    const size_t in_count = (size_t)(rows > 0 ? rows : 1) * ld * (fused ? 1 : 1);
    const size_t heads = (size_t)B * H * S * D;
    float *h_in[3], *h_b = (float *)malloc(3 * N * sizeof(float)), *got = (float *)malloc(heads * sizeof(float));
    double *ref = (double *)malloc(heads * sizeof(double));
    void *bases[8];
    void *d_in[3], *d_out[3];
    fill_normal(h_b, 3 * N, rng, 0.0, 1.0, dt);
    void *d_b = dalloc(3 * N, dt, misalign, &bases[6]);
    dev_upload(d_b, h_b, 3 * N, dt);
    for (int p = 0; p < 3; p++) {
        h_in[p] = (float *)malloc(in_count * sizeof(float));
        fill_normal(h_in[p], in_count, rng, 0.0, 1.0, dt);
        d_in[p] = dalloc(in_count, dt, misalign, &bases[p]);
        dev_upload(d_in[p], h_in[p], in_count, dt);
        d_out[p] = dalloc(heads, dt, misalign, &bases[3 + p]);
        dev_poison(d_out[p], heads * ft_dtype_size(dt));
    }
    int *dso = dev_upload_ints(so, B + 1);
    const size_t es = ft_dtype_size(dt);
    ft_status st;
    const int with_bias = mode % 3 != 2;
    const char *bias = with_bias ? (const char *)d_b : NULL;
    if (fused) {
        st = packed ? ft_add_fused_qkv_bias_rebuild_padding(dt, d_in[0], bias, d_out[0], d_out[1], d_out[2], dso, B, S,
                                                            H, D, 0)
                    : ft_add_fused_qkv_bias_transpose(dt, d_in[0], bias, d_out[0], d_out[1], d_out[2], B, S, H, D, 0);
    } else {
        const void *bq = bias, *bk = bias ? bias + N * es : NULL, *bv = bias ? bias + 2 * N * es : NULL;
        st = packed ? ft_add_qkv_bias_rebuild_padding(dt, d_in[0], d_in[1], d_in[2], bq, bk, bv, d_out[0], d_out[1],
                                                      d_out[2], dso, B, S, H, D, 0)
                    : ft_add_qkv_bias_transpose(dt, d_in[0], d_in[1], d_in[2], bq, bk, bv, d_out[0], d_out[1],
                                                d_out[2], B, S, H, D, 0);
    }
    char what[200];
    snprintf(what, sizeof what, "qkv %s B=%d S=%d H=%d D=%d fused=%d packed=%d misalign=%d bias=%d",
             ft_dtype_name(dt), B, S, H, D, fused, packed, misalign, with_bias);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        ref_tol tol = ref_tolerance(dt);
        for (int p = 0; p < 3; p++) {
            const float *src = fused ? h_in[0] + p * N : h_in[p];
            ref_rows_to_heads(src, ld, with_bias ? h_b + p * N : NULL, packed ? so : NULL, B, S, H, D, ref);
            dev_download(got, d_out[p], heads, dt);
            ft_expect_close(t, what, got, ref, heads, tol.atol, tol.rtol);
        }
    }
    for (int i = 0; i < 7; i++)
        cudaFree(bases[i]);
    cudaFree(dso);
    for (int p = 0; p < 3; p++)
        free(h_in[p]);
    free(h_b), free(got), free(ref), free(len), free(so);
}

/* heads -> rows, padded or packed. */
static void run_from_heads(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S, int H, int D, int packed,
                           int misalign, int mode)
{
    const int N = H * D;
    int *len = (int *)malloc(B * sizeof(int)), *so = (int *)malloc((B + 1) * sizeof(int));
    random_lengths(rng, len, B, S, mode);
    const int valid = ref_padding_offsets(len, B, S, so, NULL);
    const size_t count = (size_t)B * S * N, out_count = (size_t)(packed ? valid : B * S) * N;
    float *hx = (float *)malloc(count * sizeof(float)), *got = (float *)malloc((count + 1) * sizeof(float));
    double *ref = (double *)malloc((count + 1) * sizeof(double));
    fill_normal(hx, count, rng, 0.0, 1.0, dt);
    void *bx, *by;
    void *dx = dalloc(count, dt, misalign, &bx), *dy = dalloc(count, dt, misalign, &by);
    dev_upload(dx, hx, count, dt);
    dev_poison(dy, count * ft_dtype_size(dt));
    int *dso = dev_upload_ints(so, B + 1);
    ft_status st = packed ? ft_transpose_remove_padding(dt, dx, dy, dso, B, S, H, D, 0)
                          : ft_transpose_heads(dt, dx, dy, B, S, H, D, 0);
    char what[200];
    snprintf(what, sizeof what, "from_heads %s B=%d S=%d H=%d D=%d packed=%d misalign=%d", ft_dtype_name(dt), B, S,
             H, D, packed, misalign);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        ref_heads_to_rows(hx, packed ? so : NULL, B, S, H, D, ref);
        dev_download(got, dy, out_count, dt);
        ft_expect_close(t, what, got, ref, out_count, 0.0, 0.0);
    }
    cudaFree(bx), cudaFree(by), cudaFree(dso);
    free(hx), free(got), free(ref), free(len), free(so);
}

/* padded -> packed -> padded: the packed rows are the valid rows, the rebuilt tensor has
 * the valid rows back and zeros elsewhere. */
static void run_padding(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S, int N, int misalign, int mode)
{
    int *len = (int *)malloc(B * sizeof(int)), *so = (int *)malloc((B + 1) * sizeof(int));
    random_lengths(rng, len, B, S, mode);
    const int valid = ref_padding_offsets(len, B, S, so, NULL);
    const size_t count = (size_t)B * S * N;
    float *hx = (float *)malloc(count * sizeof(float)), *got = (float *)malloc(count * sizeof(float));
    double *ref = (double *)malloc(count * sizeof(double));
    fill_normal(hx, count, rng, 0.0, 1.0, dt);
    void *bx, *bp, *by;
    void *dx = dalloc(count, dt, misalign, &bx), *dp = dalloc(count, dt, misalign, &bp);
    void *dy = dalloc(count, dt, misalign, &by);
    dev_upload(dx, hx, count, dt);
    dev_poison(dp, count * ft_dtype_size(dt));
    dev_poison(dy, count * ft_dtype_size(dt));
    int *dso = dev_upload_ints(so, B + 1);
    char what[200];
    snprintf(what, sizeof what, "padding %s B=%d S=%d N=%d misalign=%d valid=%d", ft_dtype_name(dt), B, S, N,
             misalign, valid);
    ft_status st = ft_remove_padding(dt, dx, dp, dso, B, S, N, 0);
    FT_EXPECT(t, st == FT_OK, "%s (remove): %s", what, ft_last_error());
    if (st == FT_OK) {
        for (int b = 0; b < B; b++)
            for (int s = 0; s < so[b + 1] - so[b]; s++)
                for (int n = 0; n < N; n++)
                    ref[((size_t)so[b] + s) * N + n] = hx[((size_t)b * S + s) * N + n];
        dev_download(got, dp, (size_t)valid * N, dt);
        ft_expect_close(t, what, got, ref, (size_t)valid * N, 0.0, 0.0);
        st = ft_rebuild_padding(dt, dp, dy, dso, B, S, N, 0);
        FT_EXPECT(t, st == FT_OK, "%s (rebuild): %s", what, ft_last_error());
        for (int b = 0; b < B; b++)
            for (int s = 0; s < S; s++)
                for (int n = 0; n < N; n++) {
                    const size_t i = ((size_t)b * S + s) * N + n;
                    ref[i] = s < so[b + 1] - so[b] ? hx[i] : 0.0;
                }
        dev_download(got, dy, count, dt);
        ft_expect_close(t, what, got, ref, count, 0.0, 0.0);
    }
    cudaFree(bx), cudaFree(bp), cudaFree(by), cudaFree(dso);
    free(hx), free(got), free(ref), free(len), free(so);
}

/* mask_mode: 0 no mask, 1 lengths, 2 mask tensor (random 0/1 entries, so the tensor is
 * really read, and whole rows masked past each length); misalign: 1 both tensors one
 * element off the 16-byte grid, 2 the mask only */
static void run_softmax(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int H, int S, int mask_mode, int misalign,
                        double sd)
{
    int *len = (int *)malloc(B * sizeof(int));
    random_lengths(rng, len, B, S, S);
    const size_t count = (size_t)B * H * S * S, mcount = (size_t)B * S * S;
    float *hs = (float *)malloc(count * sizeof(float)), *hm = (float *)malloc(mcount * sizeof(float));
    float *got = (float *)malloc(count * sizeof(float));
    double *ref = (double *)malloc(count * sizeof(double));
    fill_normal(hs, count, rng, 0.0, sd, dt);
    /* random 0/1 entries, and rows i >= len[b] masked everywhere (their softmax is that of
     * score*scale: the kernels must not lose it to the -10000 terms) */
    for (size_t i = 0; i < mcount; i++)
        hm[i] = ref_rng_uniform(rng) < 0.3 || (int)(i / S % S) >= len[i / ((size_t)S * S)] ? 0.0f : 1.0f;
    void *bs, *bm;
    void *ds = dalloc(count, dt, misalign == 1, &bs), *dm = dalloc(mcount, dt, misalign != 0, &bm);
    dev_upload(ds, hs, count, dt);
    dev_upload(dm, hm, mcount, dt);
    int *dlen = dev_upload_ints(len, B);
    const double scale = 1.0 / sqrt(64.0);
    ft_status st = ft_masked_softmax(dt, ds, mask_mode == 2 ? dm : NULL, mask_mode == 1 ? dlen : NULL, B, H, S,
                                     (float)scale, 0);
    char what[200];
    snprintf(what, sizeof what, "softmax %s B=%d H=%d S=%d mask=%d misalign=%d sd=%g", ft_dtype_name(dt), B, H, S,
             mask_mode, misalign, sd);
    FT_EXPECT(t, st == FT_OK, "%s: %s", what, ft_last_error());
    if (st == FT_OK) {
        ref_masked_softmax(hs, mask_mode == 2 ? hm : NULL, mask_mode == 1 ? len : NULL, B, H, S, scale, ref);
        dev_download(got, ds, count, dt);
        ref_tol tol = ref_tolerance(dt);
        ft_expect_close(t, what, got, ref, count, tol.atol * 0.5, tol.rtol);
    }
    cudaFree(bs), cudaFree(bm), cudaFree(dlen);
    free(len), free(hs), free(hm), free(got), free(ref);
}

static void run_mask(ft_test *t, ft_dtype dt, ref_rng *rng, int B, int S)
{
    int *len = (int *)malloc(B * sizeof(int));
    random_lengths(rng, len, B, S, S);
    const size_t count = (size_t)B * S * S;
    float *got = (float *)malloc(count * sizeof(float));
    double *ref = (double *)malloc(count * sizeof(double));
    void *bm;
    void *dm = dalloc(count, dt, 0, &bm);
    dev_poison(dm, count * ft_dtype_size(dt));
    int *dlen = dev_upload_ints(len, B);
    ft_status st = ft_build_attention_mask(dt, dlen, dm, B, S, 0);
    FT_EXPECT(t, st == FT_OK, "mask B=%d S=%d: %s", B, S, ft_last_error());
    for (int b = 0; b < B; b++)
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++)
                ref[((size_t)b * S + i) * S + j] = (i < len[b] && j < len[b]) ? 1.0 : 0.0;
    dev_download(got, dm, count, dt);
    ft_expect_close(t, "build_attention_mask", got, ref, count, 0.0, 0.0);
    cudaFree(bm), cudaFree(dlen);
    free(len), free(got), free(ref);
}

/* (B, S, H, D) edges: D not a multiple of any vector, D = vector, large D, S = 1 */
static const int bshd[][4] = {{1, 1, 1, 1},  {2, 3, 2, 7},  {3, 16, 4, 8},  {2, 33, 12, 64}, {4, 128, 2, 80},
                              {1, 5, 3, 4},  {5, 17, 1, 256}, {2, 64, 16, 32}, {3, 9, 5, 12},  {2, 40, 8, 96}};

/* softmax row lengths: every warp register bucket's edges, rows off the 16-byte grid
 * (odd lengths, pointers one element off, the mask alone off), the block kernels (past
 * 2048 columns, up to 8192) and the streaming kernels past them */
static const int softmax_s[] = {1,   2,   7,    8,    15,   16,   31,   32,   33,   64,   100,  128,
                                129, 255, 256,  257,  384,  512,  513,  768,  1000, 1024, 1025, 2048,
                                2049, 2056, 3000, 4096, 4104, 5000, 6001, 8192, 8193, 8200, 3001, 7777};

/* rows off the grid ({S, mask mode, misalign}): the 2-byte types' warp kernels from the
 * grid point below each row, in groups of 2 and 4 lanes of one word (up to 4 row words),
 * of 4 lanes of 4 words (9-11 row words: 65, 77, 88), 8 lanes of 4 (17-25: 129, 150, 200)
 * and 16 of 4 (33-50 row words: 257, 300, 400 with the scores one element off) and with 4
 * words in 32 lanes (past 512 columns, up to 128 words: 1011 and 1017 reach 128 at o = 7);
 * rows shifted into row order (3, 7: 1 lane; 13, 15: 2; 29: 4; 33, 39: 2 lanes of 4 words;
 * 41, 60, 63, 64: 4 lanes of 2; 89, 114, 127, 128: 4 of 4; 201, 255, 256: 8 of 4; 1018 (its
 * scores off the grid too), 1023: 4 words in 32 lanes; 64, 128 and 256 with the scores one
 * element off reach the memory word past their bucket); element-wise rows between and past
 * them (1, 401, 505, 511, and past 1024 in softmax_s); masks off the grid by other offsets than
 * the scores' (odd S, or the mask alone). fp32's buckets (row words of 4 columns; the S
 * multiples of 4 with both tensors one element off, so every row needs the memory word
 * past its row words): 1 word shifted in 1 lane (2, 3, 4), 2-3 in 1 lane of 4 words (5, 7,
 * 12), 4 in 2 lanes of 2 (13, 15, 16: the last lane's extra word), 5-7 in 2 lanes of 4 (17,
 * 28), 8 in 4 lanes of 2 (29, 32), 9-16 in 4 lanes of 4 (33 .. 64), 17-20 as memory words in
 * 8 lanes of 4 (65, 77, 80), 21-32 shifted in 8 lanes of 4 (81 .. 128), 33-40 shifted in
 * 8 lanes of 5 (129, 160), element-wise past that (161) */
static const int softmax_ragged[][3] = {
    {1, 2, 0},    {3, 2, 0},    {4, 2, 1},    {5, 1, 0},    {7, 2, 1},    {12, 1, 1},   {13, 2, 2},   {15, 1, 0},
    {16, 2, 1},   {17, 1, 0},   {28, 2, 1},   {29, 2, 0},   {32, 2, 1},   {33, 2, 0},   {39, 2, 1},   {41, 1, 2},
    {60, 2, 1},   {63, 2, 0},   {64, 1, 1},   {65, 2, 1},   {77, 2, 0},   {80, 2, 1},   {81, 1, 0},   {88, 2, 1},
    {89, 1, 0},   {114, 2, 1},  {127, 2, 0},  {128, 2, 1},  {129, 2, 1},  {150, 1, 0},  {160, 2, 1},  {161, 1, 0},
    {200, 2, 2},  {201, 2, 0},  {255, 2, 2},  {256, 2, 1},  {257, 2, 1},  {300, 1, 0},  {400, 2, 1},  {401, 2, 0},
    {505, 2, 1},  {511, 2, 0},  {515, 2, 0},  {700, 1, 0},  {1011, 2, 0}, {1017, 2, 1}, {1009, 1, 0}, {1018, 2, 1},
    {1023, 2, 0}};

/* rows on the 16-byte grid in one warp of 3-60 words, in few lanes of several words
 * ({S, mask mode}): each bucket's edges, fp16/bf16 (8 columns a word: 24, 32 | 40, 48 | 56,
 * 64 | 72, 96 | 104, 128 | 136, 248 | 256 | 264, 320 | 328, 384 | 392, 480, and 488 past
 * them) and fp32 (4: 12, 16 | 20, 32 | 36 | 40, 64 | 68, 96 | 100, 128 | 132, 192 | 196,
 * 224, and 228 past them) */
static const int softmax_grid[][2] = {
    {12, 2},  {16, 1},  {20, 0},  {24, 2},  {32, 1},  {36, 2},  {40, 0},  {48, 1},  {56, 2},  {64, 0},
    {68, 1},  {72, 2},  {96, 1},  {100, 2}, {104, 0}, {128, 2}, {132, 1}, {136, 2}, {192, 0}, {196, 1},
    {224, 2}, {228, 0}, {248, 1}, {256, 2}, {264, 0}, {320, 2}, {328, 1}, {384, 0}, {392, 2}, {480, 1}, {488, 0}};

/* rows past the block kernels, streamed ({S, mask mode, misalign, B, H}): on the 16-byte
 * grid as words with a mask (heads fastest: two heads) and with lengths; off it as words
 * from the grid point below each row, with lengths (scores and mask one element off), with
 * a mask alone off the grid, and with both off and two batches of two heads (every row's
 * mask words at another shift from its score words, the tensor's end off the grid) */
static const int softmax_long[][5] = {
    {8200, 2, 0, 1, 2}, {8704, 1, 0, 1, 1}, {8999, 1, 1, 1, 1}, {9001, 2, 2, 1, 1}, {8201, 2, 1, 2, 2}};

static void enc_test(ft_test *t)
{
    const enc_arg *a = (const enc_arg *)t->arg;
    const ft_dtype dt = a->dt;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + 977 * (uint64_t)a->op + (uint64_t)dt);
    const int nb = (int)(sizeof bshd / sizeof bshd[0]);
    switch (a->op) {
    case OP_QKV:
        for (int i = 0; i < nb && !t->failures; i++)
            for (int v = 0; v < 4; v++)
                run_qkv(t, dt, &rng, bshd[i][0], bshd[i][1], bshd[i][2], bshd[i][3], v & 1, v >> 1, (i + v) % 4 == 3,
                        i + v);
        break;
    case OP_FROM_HEADS:
        for (int i = 0; i < nb && !t->failures; i++)
            for (int v = 0; v < 2; v++)
                run_from_heads(t, dt, &rng, bshd[i][0], bshd[i][1], bshd[i][2], bshd[i][3], v, i % 3 == 2, i + v);
        break;
    case OP_PADDING:
        if (dt == FT_FP32)
            for (int i = 0; i < 12; i++)
                check_offsets(t, &rng, i < 6 ? i + 1 : (int)ref_rng_range(&rng, 1, 700),
                              (int)ref_rng_range(&rng, 1, 300), i);
        for (int i = 0; i < nb && !t->failures; i++)
            run_padding(t, dt, &rng, bshd[i][0], bshd[i][1], bshd[i][2] * bshd[i][3], i % 4 == 1, i);
        break;
    case OP_SOFTMAX:
        for (size_t i = 0; i < sizeof softmax_s / sizeof softmax_s[0] && !t->failures; i++) {
            const int S = softmax_s[i];
            /* two batches and heads up to 4096 columns (the block kernels order rows by mask
             * row when a mask is read), one past that (the tensor is S*S per head) */
            const int B = S > 4096 ? 1 : S > 1000 ? 2 : (int)ref_rng_range(&rng, 1, 3);
            const int H = S > 4096 ? 1 : S > 1000 ? 2 : (int)ref_rng_range(&rng, 1, 4);
            run_softmax(t, dt, &rng, B, H, S, (int)(i % 3), i % 5 == 4 ? 1 : i % 6 == 2 ? 2 : 0,
                        i % 4 == 1 ? 40.0 : 3.0);
        }
        for (size_t i = 0; i < sizeof softmax_ragged / sizeof softmax_ragged[0] && !t->failures; i++) {
            const int S = softmax_ragged[i][0];
            run_softmax(t, dt, &rng, S > 1000 ? 2 : 3, S > 1000 ? 2 : 3, S, softmax_ragged[i][1], softmax_ragged[i][2],
                        i % 3 == 1 ? 40.0 : 3.0);
        }
        for (size_t i = 0; i < sizeof softmax_grid / sizeof softmax_grid[0] && !t->failures; i++)
            run_softmax(t, dt, &rng, 3, 3, softmax_grid[i][0], softmax_grid[i][1], 0, i % 3 == 1 ? 40.0 : 3.0);
        for (size_t i = 0; i < sizeof softmax_long / sizeof softmax_long[0] && !t->failures; i++)
            run_softmax(t, dt, &rng, softmax_long[i][3], softmax_long[i][4], softmax_long[i][0], softmax_long[i][1],
                        softmax_long[i][2], i % 2 ? 40.0 : 3.0);
        break;
    case OP_MASK:
        for (int S = 1; S <= 40; S += 13)
            run_mask(t, dt, &rng, 3, S);
        break;
    default: break;
    }
}

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_ENCODER_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])
static enc_arg test_args[OP_COUNT * NVARIANTS];

__attribute__((constructor)) static void register_encoder_tests(void)
{
    int k = 0;
    for (int v = 0; v < (int)NVARIANTS; v++)
        for (int op = 0; op < OP_COUNT; op++, k++) {
            test_args[k].op = (enc_op)op;
            test_args[k].dt = variant_dtypes[v];
            char name[128];
            snprintf(name, sizeof name, "%s_%s", op_names[op], ft_dtype_name(variant_dtypes[v]));
            ft_test_register(name, enc_test, &test_args[k], 1);
        }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
