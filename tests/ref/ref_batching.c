/* CPU references for the continuous-batching inferencer: see ref_batching.h. */
#include "ref_batching.h"
#include "ref_decoding.h"

#include <math.h>
#include <stdlib.h>

int ref_clamp_len(int len, int S)
{
    return len < 0 ? 0 : len > S ? S : len;
}

void ref_qkt(const float *q, int64_t ld_q, const float *kt, const int *lengths, int B, int H, int D, int S, double scale,
             double *scores)
{
    const int64_t E = (int64_t)H * D;
    for (int b = 0; b < B; b++) {
        const int len = ref_clamp_len(lengths[b], S);
        for (int h = 0; h < H; h++)
            for (int j = 0; j < len; j++) {
                double s = 0.0;
                for (int d = 0; d < D; d++)
                    s += (double)q[b * ld_q + (int64_t)h * D + d] * kt[((int64_t)b * E + (int64_t)h * D + d) * S + j];
                scores[((int64_t)b * H + h) * S + j] = s * scale;
            }
    }
}

void ref_softmax_lengths(const float *x, int64_t ld_x, const int *lengths, int B, int H, int S, double *p)
{
    for (int b = 0; b < B; b++) {
        const int len = ref_clamp_len(lengths[b], S);
        for (int h = 0; h < H; h++) {
            const float *row = x + ((int64_t)b * H + h) * ld_x;
            double *out = p + ((int64_t)b * H + h) * S;
            double m = -INFINITY, sum = 0.0;
            for (int j = 0; j < len; j++)
                m = row[j] > m ? row[j] : m;
            for (int j = 0; j < len; j++)
                sum += exp(row[j] - m);
            for (int j = 0; j < S; j++)
                out[j] = j < len ? exp(row[j] - m) / sum : 0.0;
        }
    }
}

void ref_softmax_v(const float *p, int64_t ld_p, const float *v, const int *lengths, int B, int H, int D, int S,
                   double *out)
{
    const int64_t E = (int64_t)H * D;
    for (int b = 0; b < B; b++) {
        const int len = ref_clamp_len(lengths[b], S);
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                double s = 0.0;
                for (int j = 0; j < len; j++)
                    s += (double)p[((int64_t)b * H + h) * ld_p + j] * v[((int64_t)b * S + j) * E + (int64_t)h * D + d];
                out[b * E + (int64_t)h * D + d] = s;
            }
    }
}

int ref_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) /* equal keys (ties, NaNs) keep the lower index */
        if (ref_order_key(x[i]) > ref_order_key(x[best]))
            best = i;
    return best;
}

void ref_infer_logits(const ref_infer_model *m, const int *tokens, int len, ft_dtype dt, double *logits)
{
    const int N = m->N, H = m->H, D = m->D, E = H * D;
    double *k = (double *)malloc((size_t)len * E * sizeof(double));
    double *v = (double *)malloc((size_t)len * E * sizeof(double));
    double *q = (double *)malloc((size_t)E * sizeof(double));
    double *a = (double *)malloc((size_t)E * sizeof(double));
    double *hv = (double *)malloc((size_t)N * sizeof(double));
    double *sc = (double *)malloc((size_t)len * sizeof(double));
    for (int t = 0; t < len; t++) {
        const float *x = m->embedding + (int64_t)tokens[t] * N;
        for (int e = 0; e < E; e++) {
            double sk = 0.0, sv = 0.0, sq = 0.0;
            for (int n = 0; n < N; n++) {
                const float *w = m->w_qkv + (int64_t)n * 3 * E;
                sq += (double)x[n] * w[e];
                sk += (double)x[n] * w[E + e];
                sv += (double)x[n] * w[2 * E + e];
            }
            k[(int64_t)t * E + e] = ref_round(sk, dt);
            v[(int64_t)t * E + e] = ref_round(sv, dt);
            if (t == len - 1)
                q[e] = ref_round(sq, dt);
        }
    }
    const double scale = 1.0 / sqrt((double)D);
    for (int h = 0; h < H; h++) {
        double mx = -INFINITY, sum = 0.0;
        for (int t = 0; t < len; t++) {
            double s = 0.0;
            for (int d = 0; d < D; d++)
                s += q[h * D + d] * k[(int64_t)t * E + h * D + d];
            sc[t] = s * scale;
            mx = sc[t] > mx ? sc[t] : mx;
        }
        for (int t = 0; t < len; t++)
            sum += exp(sc[t] - mx);
        for (int d = 0; d < D; d++) {
            double s = 0.0;
            for (int t = 0; t < len; t++)
                s += exp(sc[t] - mx) / sum * v[(int64_t)t * E + h * D + d];
            a[h * D + d] = ref_round(s, dt);
        }
    }
    for (int n = 0; n < N; n++) {
        double s = 0.0;
        for (int e = 0; e < E; e++)
            s += a[e] * m->w_o[(int64_t)e * N + n];
        hv[n] = ref_round(s, dt);
    }
    for (int t = 0; t < m->V; t++) {
        double s = 0.0;
        for (int n = 0; n < N; n++)
            s += hv[n] * m->embedding[(int64_t)t * N + n];
        logits[t] = ref_round(s, dt);
    }
    free(k);
    free(v);
    free(q);
    free(a);
    free(hv);
    free(sc);
}
