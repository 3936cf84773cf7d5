#include "ref_llama.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"

void ref_quant_row(const double *y, int n, double *target, double *scale)
{
    double am = 0.0;
    for (int i = 0; i < n; i++)
        am = fmax(am, fabs(y[i]));
    *scale = am / 127.0;
    for (int i = 0; i < n; i++)
        target[i] = am > 0.0 ? y[i] * 127.0 / am : 0.0;
}

void ref_rmsnorm_quant_row(const float *x, const float *gamma, int n, double eps, double *target, double *scale)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const double rstd = 1.0 / sqrt(ss / n + eps);
    double *y = (double *)malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        y[i] = (double)x[i] * rstd * gamma[i];
    ref_quant_row(y, n, target, scale);
    free(y);
}

void ref_silu_mul_quant_row(const int32_t *w1, const int32_t *w3, double rs, const float *s1, const float *s3, int n,
                            double *target, double *scale)
{
    double *y = (double *)malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        const double a = (double)w1[i] * rs * s1[i], b = (double)w3[i] * rs * s3[i];
        y[i] = a / (1.0 + exp(-a)) * b;
    }
    ref_quant_row(y, n, target, scale);
    free(y);
}

void ref_causal_softmax_row(const float *x, const float *mask, int Sk, int lim, double scale, double *y)
{
    if (lim > Sk)
        lim = Sk;
    double m = -INFINITY;
    for (int k = 0; k < lim; k++)
        m = fmax(m, (double)x[k] * scale + (mask ? mask[k] : 0.0));
    double s = 0.0;
    for (int k = 0; k < Sk; k++) {
        y[k] = k < lim && isfinite(m) ? exp((double)x[k] * scale + (mask ? mask[k] : 0.0) - m) : 0.0;
        s += y[k];
    }
    for (int k = 0; k < Sk; k++)
        y[k] = s > 0.0 ? y[k] / s : 0.0;
}

/* int8 of a row as the kernels quantise it: q = rint(v * 127 / absmax), *scale = absmax / 127 */
static void quant_row(const double *v, int n, int8_t *q, double *scale)
{
    double *target = (double *)malloc((size_t)n * sizeof(double));
    ref_quant_row(v, n, target, scale);
    for (int i = 0; i < n; i++) {
        const double t = nearbyint(target[i]);
        q[i] = (int8_t)(t > 127.0 ? 127.0 : t < -127.0 ? -127.0 : t);
    }
    free(target);
}

/* RMSNorm(v) * gamma of one row, quantised */
static void rms_quant_row(const double *v, const float *gamma, int n, double eps, int8_t *q, double *scale)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += v[i] * v[i];
    const double rstd = 1.0 / sqrt(ss / n + eps);
    double *t = (double *)malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        t[i] = v[i] * rstd * gamma[i];
    quant_row(t, n, q, scale);
    free(t);
}

/* C[m, n] = A[m, k] W[n, k]^T, exact */
static void gemm_i8(const int8_t *A, const int8_t *W, int m, int n, int k, int64_t *C)
{
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++) {
            int64_t s = 0;
            for (int i = 0; i < k; i++)
                s += (int64_t)A[(size_t)r * k + i] * W[(size_t)c * k + i];
            C[(size_t)r * n + c] = s;
        }
}

void ref_llama_layer(const ref_llama_w *w, const float *x, int B, int S, int start, int N, int H, int Hkv, int F,
                     int rope, double eps, float *k_cache, float *v_cache, int Lmax, ft_dtype dt, double *y)
{
    const int M = B * S, D = N / H, G = H / Hkv, Wd = (H + 2 * Hkv) * D, L = start + S;
    const size_t MN = (size_t)M * N;
    int8_t *q8 = (int8_t *)malloc(MN > (size_t)M * F ? MN : (size_t)M * F);
    double *sc = (double *)malloc((size_t)M * sizeof(double)), *row = (double *)malloc((size_t)(N > F ? N : F) * 8);
    int64_t *acc = (int64_t *)malloc((size_t)M * (Wd > F ? Wd : F) * sizeof(int64_t));
    int64_t *acc3 = (int64_t *)malloc((size_t)M * F * sizeof(int64_t));
    double *q = (double *)malloc(MN * sizeof(double)), *att = (double *)malloc(MN * sizeof(double));
    double *h = (double *)malloc(MN * sizeof(double)), *p = (double *)malloc((size_t)L * sizeof(double));
    double hd[1024];
    /* attention block */
    for (int r = 0; r < M; r++) {
        for (int i = 0; i < N; i++)
            row[i] = x[(size_t)r * N + i];
        rms_quant_row(row, w->gamma1, N, eps, q8 + (size_t)r * N, sc + r);
    }
    gemm_i8(q8, w->w_qkv, M, Wd, N, acc);
    const float l2b = (float)log2(10000.0);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            const int r = b * S + s, pos = start + s;
            for (int hh = 0; hh < H + 2 * Hkv; hh++) {
                for (int d = 0; d < D; d++)
                    hd[d] = (double)acc[(size_t)r * Wd + hh * D + d] * sc[r] * w->qkv_scale[hh * D + d];
                if (hh < H + Hkv)
                    ref_rope(hd, D, pos, rope, D, l2b);
                for (int d = 0; d < D; d++) {
                    const double v = ref_round(hd[d], dt);
                    if (hh < H)
                        q[(((size_t)b * H + hh) * S + s) * D + d] = v;
                    else if (hh < H + Hkv)
                        k_cache[(((size_t)b * Hkv + hh - H) * Lmax + pos) * D + d] = (float)v;
                    else
                        v_cache[(((size_t)b * Hkv + hh - H - Hkv) * Lmax + pos) * D + d] = (float)v;
                }
            }
        }
    const double scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < B; b++)
        for (int hq = 0; hq < H; hq++) {
            const size_t kv = ((size_t)b * Hkv + hq / G) * Lmax * D;
            for (int i = 0; i < S; i++) {
                const double *qq = q + (((size_t)b * H + hq) * S + i) * D;
                const int lim = start + i + 1;
                double m = -INFINITY, sum = 0.0;
                for (int l = 0; l < lim; l++) {
                    double dot = 0.0;
                    for (int d = 0; d < D; d++)
                        dot += qq[d] * k_cache[kv + (size_t)l * D + d];
                    p[l] = ref_round(dot, dt) * scale;
                    m = fmax(m, p[l]);
                }
                for (int l = 0; l < lim; l++) {
                    p[l] = exp(p[l] - m);
                    sum += p[l];
                }
                for (int d = 0; d < D; d++) {
                    double a = 0.0;
                    for (int l = 0; l < lim; l++)
                        a += ref_round(p[l] / sum, dt) * v_cache[kv + (size_t)l * D + d];
                    /* heads merged: token (b, i), column hq D + d */
                    att[((size_t)b * S + i) * N + hq * D + d] = ref_round(a, dt);
                }
            }
        }
    for (int r = 0; r < M; r++)
        quant_row(att + (size_t)r * N, N, q8 + (size_t)r * N, sc + r);
    gemm_i8(q8, w->w_o, M, N, N, acc);
    for (int r = 0; r < M; r++) {
        for (int i = 0; i < N; i++)
            h[(size_t)r * N + i] =
                ref_round((double)acc[(size_t)r * N + i] * sc[r] * w->o_scale[i] + x[(size_t)r * N + i], dt);
        rms_quant_row(h + (size_t)r * N, w->gamma2, N, eps, q8 + (size_t)r * N, sc + r);
    }
    /* FFN */
    gemm_i8(q8, w->w1, M, F, N, acc);
    gemm_i8(q8, w->w3, M, F, N, acc3);
    for (int r = 0; r < M; r++) {
        for (int i = 0; i < F; i++) {
            const double a = (double)acc[(size_t)r * F + i] * sc[r] * w->w1_scale[i];
            const double g = (double)acc3[(size_t)r * F + i] * sc[r] * w->w3_scale[i];
            row[i] = a / (1.0 + exp(-a)) * g;
        }
        quant_row(row, F, q8 + (size_t)r * F, sc + r);
    }
    gemm_i8(q8, w->w2, M, N, F, acc);
    for (int r = 0; r < M; r++)
        for (int i = 0; i < N; i++)
            y[(size_t)r * N + i] =
                ref_round((double)acc[(size_t)r * N + i] * sc[r] * w->w2_scale[i] + h[(size_t)r * N + i], dt);
    free(q8), free(sc), free(row), free(acc), free(acc3), free(q), free(att), free(h), free(p);
}
