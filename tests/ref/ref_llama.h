/* CPU references for the LLaMA int8 path (catalog §5; ft/llama_<dtype>.cuh, ft/quant.cuh):
 * quantisation targets of a row, RMSNorm, the silu gate, causal softmax. Plain C, double
 * accumulation. The tests gather and transpose themselves; these are the arithmetic. */
#ifndef FT_REF_LLAMA_H
#define FT_REF_LLAMA_H

#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The int8 a row y[0..n) should quantise to, as real numbers before rounding: scale =
 * absmax / 127 and target[i] = y[i] / scale (all 0, scale 0, for a row of zeros). A kernel's
 * q[i] must lie within 1/2 (plus its fp32 slack) of target[i]. */
void ref_quant_row(const double *y, int n, double *target, double *scale);

/* y = x * gamma / sqrt(mean(x^2) + eps) of one row, then ref_quant_row */
void ref_rmsnorm_quant_row(const float *x, const float *gamma, int n, double eps, double *target, double *scale);

/* y = silu(w1 * rs * s1) * (w3 * rs * s3) of one row, then ref_quant_row */
void ref_silu_mul_quant_row(const int32_t *w1, const int32_t *w3, double rs, const float *s1, const float *s3, int n,
                            double *target, double *scale);

/* Softmax of x[0..Sk) * scale + mask (mask NULL: none) over the first lim keys; later
 * entries (and every entry when lim <= 0) are 0. */
void ref_causal_softmax_row(const float *x, const float *mask, int Sk, int lim, double scale, double *y);

/* examples/llama_layer.cuh in double: x [B S, N] -> y, the int8 GEMMs exact, every row
 * quantised as the kernels do (round half to even), and each value the layer stores in its
 * activation dtype rounded to dt there (q, k, v, scores, probabilities, attention output,
 * h, y). k_cache, v_cache: [B, Hkv, Lmax, D], rows before `start` given; rows start ..
 * start + S - 1 are written. Weights as ft_llama_weights (int8 [out, in], fp32 scales). */
typedef struct ref_llama_w {
    const float *gamma1, *gamma2;
    const int8_t *w_qkv, *w_o, *w1, *w3, *w2;
    const float *qkv_scale, *o_scale, *w1_scale, *w3_scale, *w2_scale;
} ref_llama_w;

void ref_llama_layer(const ref_llama_w *w, const float *x, int B, int S, int start, int N, int H, int Hkv, int F,
                     int rope, double eps, float *k_cache, float *v_cache, int Lmax, ft_dtype dt, double *y);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_LLAMA_H */
