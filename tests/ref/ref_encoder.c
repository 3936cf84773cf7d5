#include "ref_encoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"
#include "ref_norm.h"

static int clamp_len(int v, int S)
{
    return v < 0 ? 0 : v > S ? S : v;
}

int ref_padding_offsets(const int *lengths, int B, int S, int *seq_offsets, int *token_offsets)
{
    int total = 0;
    for (int b = 0; b < B; b++) {
        const int len = clamp_len(lengths[b], S);
        seq_offsets[b] = total;
        for (int s = 0; s < len; s++)
            if (token_offsets)
                token_offsets[total + s] = b * S - total;
        total += len;
    }
    seq_offsets[B] = total;
    return total;
}

/* Packed row of padded (b, s), or -1. */
static int64_t packed_row(const int *seq_offsets, int b, int s, int S)
{
    if (!seq_offsets)
        return (int64_t)b * S + s;
    return s < seq_offsets[b + 1] - seq_offsets[b] ? (int64_t)seq_offsets[b] + s : -1;
}

void ref_rows_to_heads(const float *rows, int64_t ld, const float *bias, const int *seq_offsets, int B, int S, int H,
                       int D, double *heads)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                const int64_t r = packed_row(seq_offsets, b, s, S);
                for (int d = 0; d < D; d++) {
                    const int n = h * D + d;
                    heads[(((int64_t)b * H + h) * S + s) * D + d] =
                        r < 0 ? 0.0 : (double)rows[r * ld + n] + (bias ? bias[n] : 0.0);
                }
            }
}

void ref_heads_to_rows(const float *heads, const int *seq_offsets, int B, int S, int H, int D, double *rows)
{
    const int N = H * D;
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            const int64_t r = packed_row(seq_offsets, b, s, S);
            if (r < 0)
                continue;
            for (int n = 0; n < N; n++)
                rows[r * N + n] = heads[(((int64_t)b * H + n / D) * S + s) * D + n % D];
        }
}

void ref_masked_softmax(const float *scores, const float *mask, const int *lengths, int B, int H, int S, double scale,
                        double *out)
{
    double *v = (double *)malloc((size_t)S * sizeof(double));
    for (int b = 0; b < B; b++) {
        const int len = lengths ? clamp_len(lengths[b], S) : S;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < S; i++) {
                const int64_t off = (((int64_t)b * H + h) * S + i) * S;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < S; j++) {
                    const double keep = mask ? mask[((int64_t)b * S + i) * S + j] : (i < len && j < len) ? 1.0 : 0.0;
                    v[j] = scores[off + j] * scale + (1.0 - keep) * -10000.0;
                    if (v[j] > mx)
                        mx = v[j];
                }
                for (int j = 0; j < S; j++)
                    sum += (v[j] = exp(v[j] - mx));
                for (int j = 0; j < S; j++)
                    out[off + j] = v[j] / sum;
            }
    }
    free(v);
}

void ref_matmul(const double *A, const double *B, double *C, int m, int n, int k)
{
    for (int i = 0; i < m; i++) {
        double *c = C + (int64_t)i * n;
        for (int j = 0; j < n; j++)
            c[j] = 0.0;
        for (int p = 0; p < k; p++) {
            const double a = A[(int64_t)i * k + p];
            const double *bp = B + (int64_t)p * n;
            for (int j = 0; j < n; j++)
                c[j] += a * bp[j];
        }
    }
}

void ref_round_all(double *x, int64_t count, ft_dtype dt)
{
    for (int64_t i = 0; i < count; i++)
        x[i] = ref_round(x[i], dt);
}

static double *to_double(const float *x, int64_t count)
{
    double *d = (double *)calloc((size_t)(count > 0 ? count : 1), sizeof(double));
    for (int64_t i = 0; i < count; i++)
        d[i] = x[i];
    return d;
}

static float *to_float(const double *x, int64_t count)
{
    float *f = (float *)calloc((size_t)(count > 0 ? count : 1), sizeof(float));
    for (int64_t i = 0; i < count; i++)
        f[i] = (float)x[i];
    return f;
}

/* y = round(x W) for row-major x [m, k] (already dt values) and W [k, n] given as float. */
static void lin(const double *x, const float *W, double *y, int m, int n, int k, ft_dtype dt)
{
    double *w = to_double(W, (int64_t)k * n);
    ref_matmul(x, w, y, m, n, k);
    ref_round_all(y, (int64_t)m * n, dt);
    free(w);
}

/* y = round(LN(round(x + residual + bias))) through ref_norm_rows; sum gets the rounded sum. */
static void add_ln(const double *x, const double *res, const float *bias, const float *g, const float *b, double *y,
                   double *sum, int m, int n, double eps, ft_dtype dt)
{
    float *xf = to_float(x, (int64_t)m * n), *rf = res ? to_float(res, (int64_t)m * n) : NULL;
    ref_norm_rows(xf, rf, bias, g, b, y, sum, m, n, eps, 0, dt);
    ref_round_all(y, (int64_t)m * n, dt);
    free(xf);
    free(rf);
}

void ref_bert_layer(const ref_bert_w *w, const float *x, const int *lengths, int B, int S, int N, int H, int F,
                    double eps, ft_dtype dt, double *y)
{
    const int M = B * S, D = N / H;
    const int64_t MN = (int64_t)M * N;
    double *xd = to_double(x, MN);
    double *qkv = (double *)malloc(3 * MN * sizeof(double));
    lin(xd, w->w_qkv, qkv, M, 3 * N, N, dt); /* [M, 3N] */
    double *heads = (double *)malloc(3 * MN * sizeof(double));
    float *rows = to_float(qkv, 3 * MN);
    for (int p = 0; p < 3; p++)
        ref_rows_to_heads(rows + p * N, 3 * N, w->b_qkv + (int64_t)p * N, NULL, B, S, H, D, heads + p * MN);
    free(rows);
    ref_round_all(heads, 3 * MN, dt);
    const int64_t SS = (int64_t)S * S;
    double *scores = (double *)malloc((size_t)B * H * SS * sizeof(double));
    double *ctx_h = (double *)malloc(MN * sizeof(double));
    for (int bh = 0; bh < B * H; bh++) {
        const double *q = heads + (int64_t)bh * S * D, *k = heads + MN + (int64_t)bh * S * D;
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) {
                double acc = 0.0;
                for (int d = 0; d < D; d++)
                    acc += q[(int64_t)i * D + d] * k[(int64_t)j * D + d];
                scores[bh * SS + (int64_t)i * S + j] = acc;
            }
    }
    ref_round_all(scores, (int64_t)B * H * SS, dt);
    float *sf = to_float(scores, (int64_t)B * H * SS);
    ref_masked_softmax(sf, NULL, lengths, B, H, S, 1.0 / sqrt((double)D), scores);
    ref_round_all(scores, (int64_t)B * H * SS, dt);
    for (int bh = 0; bh < B * H; bh++)
        ref_matmul(scores + bh * SS, heads + 2 * MN + (int64_t)bh * S * D, ctx_h + (int64_t)bh * S * D, S, D, S);
    ref_round_all(ctx_h, MN, dt);
    float *cf = to_float(ctx_h, MN);
    double *ctx = (double *)malloc(MN * sizeof(double)), *attn = (double *)malloc(MN * sizeof(double));
    double *h1 = (double *)malloc(MN * sizeof(double)), *out = (double *)malloc(MN * sizeof(double));
    double *inter = (double *)malloc((size_t)M * F * sizeof(double));
    ref_heads_to_rows(cf, NULL, B, S, H, D, ctx);
    lin(ctx, w->w_out, attn, M, N, N, dt);
    add_ln(attn, xd, w->b_out, w->ln1_g, w->ln1_b, h1, NULL, M, N, eps, dt);
    lin(h1, w->w_ffn1, inter, M, F, N, dt);
    for (int64_t i = 0; i < (int64_t)M * F; i++)
        inter[i] = ref_round(ref_act(inter[i] + w->b_ffn1[i % F], FT_ACT_GELU), dt);
    lin(inter, w->w_ffn2, out, M, N, F, dt);
    add_ln(out, h1, w->b_ffn2, w->ln2_g, w->ln2_b, y, NULL, M, N, eps, dt);
    free(xd), free(qkv), free(heads), free(scores), free(sf), free(ctx_h), free(cf);
    free(ctx), free(attn), free(h1), free(out), free(inter);
}

void ref_decoder_step(const ref_dec_w *w, const float *x, const float *memory, int B, int N, int H, int F, int Nmem,
                      int Lmem, const int *mem_lengths, float *k_cache, float *v_cache, int layout, int L,
                      const int *lengths, double eps, ft_dtype dt, double *y)
{
    const int D = N / H;
    const int64_t BN = (int64_t)B * N, ML = (int64_t)B * Lmem;
    double *xd = to_double(x, BN);
    double *n1 = (double *)malloc(BN * sizeof(double)), *qkv = (double *)malloc(3 * BN * sizeof(double));
    ref_norm_rows(x, NULL, NULL, w->ln1_g, w->ln1_b, n1, NULL, B, N, eps, 0, dt);
    ref_round_all(n1, BN, dt);
    for (int p = 0; p < 3; p++)
        lin(n1, w->w_qkv + (int64_t)p * N * N, qkv + p * BN, B, N, N, dt);
    float *qf = to_float(qkv, BN), *kf = to_float(qkv + BN, BN), *vf = to_float(qkv + 2 * BN, BN);
    double *att = (double *)malloc(BN * sizeof(double));
    ref_attn a;
    memset(&a, 0, sizeof a);
    a.B = B, a.H = H, a.Hkv = H, a.D = D, a.L = L, a.layout = layout, a.is_self = 1, a.lengths = lengths;
    a.q = qf, a.q_bias = w->b_qkv, a.k_new = kf, a.v_new = vf, a.k_bias = w->b_qkv + N, a.v_bias = w->b_qkv + 2 * N;
    a.k_cache = k_cache, a.v_cache = v_cache, a.scale = 1.0 / sqrt((double)D), a.dt = dt, a.out = att;
    ref_attention_decode(&a);
    ref_round_all(att, BN, dt);
    double *m = (double *)malloc(BN * sizeof(double)), *s1 = (double *)malloc(BN * sizeof(double));
    double *n2 = (double *)malloc(BN * sizeof(double));
    lin(att, w->w_so, m, B, N, N, dt);
    add_ln(m, xd, w->b_so, w->ln2_g, w->ln2_b, n2, s1, B, N, eps, dt);
    /* memory K/V with bias, as ft_decoder_prepare_memory stores them */
    double *memd = to_double(memory, ML * Nmem);
    double *km = (double *)malloc(ML * N * sizeof(double)), *vm = (double *)malloc(ML * N * sizeof(double));
    lin(memd, w->w_ck, km, (int)ML, N, Nmem, dt);
    lin(memd, w->w_cv, vm, (int)ML, N, Nmem, dt);
    for (int64_t i = 0; i < ML * N; i++) {
        km[i] = ref_round(km[i] + w->b_ck[i % N], dt);
        vm[i] = ref_round(vm[i] + w->b_cv[i % N], dt);
    }
    float *kmf = to_float(km, ML * N), *vmf = to_float(vm, ML * N);
    double *qc = (double *)malloc(BN * sizeof(double)), *cx = (double *)malloc(BN * sizeof(double));
    lin(n2, w->w_cq, qc, B, N, N, dt);
    float *qcf = to_float(qc, BN);
    memset(&a, 0, sizeof a);
    a.B = B, a.H = H, a.Hkv = H, a.D = D, a.L = Lmem, a.layout = FT_KV_BLHD, a.is_self = 0, a.lengths = mem_lengths;
    a.q = qcf, a.q_bias = w->b_cq, a.k_cache = kmf, a.v_cache = vmf, a.scale = 1.0 / sqrt((double)D), a.dt = dt;
    a.out = cx;
    ref_attention_decode(&a);
    ref_round_all(cx, BN, dt);
    double *c2 = (double *)malloc(BN * sizeof(double)), *s2 = (double *)malloc(BN * sizeof(double));
    double *n3 = (double *)malloc(BN * sizeof(double)), *inter = (double *)malloc((size_t)B * F * sizeof(double));
    double *out = (double *)malloc(BN * sizeof(double));
    lin(cx, w->w_co, c2, B, N, N, dt);
    add_ln(c2, s1, w->b_co, w->ln3_g, w->ln3_b, n3, s2, B, N, eps, dt);
    lin(n3, w->w_f1, inter, B, F, N, dt);
    for (int64_t i = 0; i < (int64_t)B * F; i++)
        inter[i] = ref_round(ref_act(inter[i] + w->b_f1[i % F], FT_ACT_RELU), dt);
    lin(inter, w->w_f2, out, B, N, F, dt);
    for (int64_t i = 0; i < BN; i++)
        y[i] = out[i] + s2[i] + w->b_f2[i % N];
    free(xd), free(n1), free(qkv), free(qf), free(kf), free(vf), free(att), free(m), free(s1), free(n2);
    free(memd), free(km), free(vm), free(kmf), free(vmf), free(qc), free(cx), free(qcf);
    free(c2), free(s2), free(n3), free(inter), free(out);
}
