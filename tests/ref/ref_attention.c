#include "ref_attention.h"

#include <math.h>
#include <stdlib.h>

int64_t ref_kv_index(int layout, int B, int Hkv, int L, int D, int b, int h, int t, int d)
{
    switch (layout) {
    case FT_KV_BHLD: return (((int64_t)b * Hkv + h) * L + t) * D + d;
    case FT_KV_LBHD: return (((int64_t)t * B + b) * Hkv + h) * D + d;
    default: return (((int64_t)b * L + t) * Hkv + h) * D + d; /* BLHD */
    }
}

void ref_rope(double *x, int D, int pos, int style, int rd, float log2_base)
{
    if (style == FT_ROPE_NONE)
        return;
    double *y = (double *)malloc((size_t)D * sizeof(double));
    for (int d = 0; d < D; d++) {
        if (d >= rd) {
            y[d] = x[d];
            continue;
        }
        int i, partner;
        double sign;
        if (style == FT_ROPE_INTERLEAVED) {
            i = d >> 1;
            partner = d ^ 1;
            sign = (d & 1) ? 1.0 : -1.0;
        } else {
            const int half = rd >> 1;
            i = d < half ? d : d - half;
            partner = d < half ? d + half : d - half;
            sign = d < half ? -1.0 : 1.0;
        }
        const float inv_freq = (float)exp2(-(2.0 * i / rd) * (double)log2_base);
        const float angle = (float)pos * inv_freq;
        y[d] = x[d] * cos((double)angle) + sign * x[partner] * sin((double)angle);
    }
    for (int d = 0; d < D; d++)
        x[d] = y[d];
    free(y);
}

/* The row whose cache holds step t of row b: b itself, or with a cache indirection table
 * (self-attention, t before the new token) the beam of b's item the table names. */
static int src_row(const ref_attn *a, int b, int t, int len)
{
    if (!a->indir || !a->is_self || t >= len)
        return b;
    return b - b % a->beam + a->indir[(int64_t)b * a->L + t];
}

void ref_attention_decode(const ref_attn *a)
{
    const int D = a->D, G = a->H / a->Hkv;
    double *qv = (double *)malloc((size_t)D * sizeof(double));
    double *kv = (double *)malloc((size_t)D * sizeof(double));
    double *p = (double *)malloc(((size_t)a->L + 1) * sizeof(double));
    for (int b = 0; b < a->B; b++) {
        const int len = a->lengths[b];
        const int valid = a->is_self ? (len >= 0 && len < a->L) : (len > 0 && len <= a->L);
        const int steps = a->is_self ? len + 1 : len;
        if (!valid) {
            const int empty = a->is_self ? len < 0 : len <= 0;
            for (int i = 0; i < a->H * D; i++)
                a->out[(int64_t)b * a->H * D + i] = empty ? 0.0 : NAN;
            continue;
        }
        if (a->is_self) {
            for (int h = 0; h < a->Hkv; h++) {
                for (int d = 0; d < D; d++) {
                    const int64_t i = ((int64_t)b * a->Hkv + h) * D + d;
                    kv[d] = (double)a->k_new[i] + (a->k_bias ? a->k_bias[(int64_t)h * D + d] : 0.0);
                }
                ref_rope(kv, D, len, a->rope, a->rotary_dim, a->log2_base);
                for (int d = 0; d < D; d++) {
                    const int64_t i = ((int64_t)b * a->Hkv + h) * D + d;
                    const int64_t c = ref_kv_index(a->layout, a->B, a->Hkv, a->L, D, b, h, len, d);
                    a->k_cache[c] = (float)ref_round(kv[d], a->dt);
                    a->v_cache[c] = (float)ref_round((double)a->v_new[i] + (a->v_bias ? a->v_bias[(int64_t)h * D + d] : 0.0),
                                                     a->dt);
                }
            }
        }
        for (int h = 0; h < a->H; h++) {
            const int kvh = h / G;
            for (int d = 0; d < D; d++)
                qv[d] = (double)a->q[((int64_t)b * a->H + h) * D + d] + (a->q_bias ? a->q_bias[(int64_t)h * D + d] : 0.0);
            if (a->is_self)
                ref_rope(qv, D, len, a->rope, a->rotary_dim, a->log2_base);
            double mx = -INFINITY;
            for (int t = 0; t < steps; t++) {
                double s = 0.0;
                for (int d = 0; d < D; d++)
                    s += qv[d] * a->k_cache[ref_kv_index(a->layout, a->B, a->Hkv, a->L, D, src_row(a, b, t, len), kvh, t, d)];
                p[t] = s * a->scale;
                if (p[t] > mx)
                    mx = p[t];
            }
            double sum = 0.0;
            for (int t = 0; t < steps; t++) {
                p[t] = exp(p[t] - mx);
                sum += p[t];
            }
            for (int d = 0; d < D; d++) {
                double o = 0.0;
                for (int t = 0; t < steps; t++)
                    o += p[t] * a->v_cache[ref_kv_index(a->layout, a->B, a->Hkv, a->L, D, src_row(a, b, t, len), kvh, t, d)];
                a->out[((int64_t)b * a->H + h) * D + d] = o / sum;
            }
        }
    }
    free(qv);
    free(kv);
    free(p);
}

void ref_packed_attention(const ref_packed_attn *a)
{
    const int H = a->H, Hkv = a->Hkv, D = a->D, G = H / Hkv;
    const int ld = (H + 2 * Hkv) * D;
    int maxlen = 0;
    for (int b = 0; b < a->B; b++)
        if (a->offsets[b + 1] - a->offsets[b] > maxlen)
            maxlen = a->offsets[b + 1] - a->offsets[b];
    double *k = (double *)malloc(sizeof(double) * ((size_t)maxlen * D + 1));
    double *v = (double *)malloc(sizeof(double) * ((size_t)maxlen * D + 1));
    double *p = (double *)malloc(sizeof(double) * ((size_t)maxlen + 1));
    double q[1024];
    for (int b = 0; b < a->B; b++) {
        const int row0 = a->offsets[b], len = a->offsets[b + 1] - row0;
        for (int h = 0; h < H; h++) {
            const int kc = (H + h / G) * D, vc = (H + Hkv + h / G) * D;
            for (int j = 0; j < len; j++)
                for (int d = 0; d < D; d++) {
                    const float *row = a->qkv + (size_t)(row0 + j) * ld;
                    k[(size_t)j * D + d] = (double)row[kc + d] + (a->bias ? a->bias[kc + d] : 0.0);
                    v[(size_t)j * D + d] = (double)row[vc + d] + (a->bias ? a->bias[vc + d] : 0.0);
                }
            for (int i = 0; i < len; i++) {
                const float *row = a->qkv + (size_t)(row0 + i) * ld;
                for (int d = 0; d < D; d++)
                    q[d] = ref_round((double)row[h * D + d] + (a->bias ? a->bias[h * D + d] : 0.0), a->dt);
                const int n = a->causal ? i + 1 : len;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < n; j++) {
                    double s = 0.0;
                    for (int d = 0; d < D; d++)
                        s += q[d] * k[(size_t)j * D + d];
                    p[j] = s * a->scale;
                    if (p[j] > mx)
                        mx = p[j];
                }
                for (int j = 0; j < n; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                double *o = a->out + (size_t)(row0 + i) * H * D + (size_t)h * D;
                for (int d = 0; d < D; d++) {
                    double acc = 0.0;
                    for (int j = 0; j < n; j++)
                        acc += p[j] * v[(size_t)j * D + d];
                    o[d] = acc / sum;
                }
            }
        }
    }
    free(k);
    free(v);
    free(p);
}
