/* CPU references of the norm family, plain C, double accumulation. */
#ifndef FT_REF_NORM_H
#define FT_REF_NORM_H

#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* s = x + residual + bias (residual, bias may be NULL), rounded to `dt` as the kernels
 * store it; written to sum_out when that is not NULL. y = (s - mean)/sqrt(var + eps) *
 * gamma + beta (beta may be NULL); with rms, mean = 0 and var = mean(s^2). */
void ref_norm_rows(const float *x, const float *residual, const float *bias, const float *gamma,
                   const float *beta, double *y, double *sum_out, int64_t m, int64_t n, double eps, int rms,
                   ft_dtype dt);

/* y = act(x + bias) + residual (bias, residual may be NULL); gelu in tanh form. */
void ref_pointwise(const float *x, const float *bias, const float *residual, double *y, int64_t m, int64_t n,
                   ft_act act);

double ref_act(double x, ft_act act);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_NORM_H */
