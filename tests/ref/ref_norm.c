#include "ref_norm.h"

#include <math.h>
#include <stdlib.h>

void ref_norm_rows(const float *x, const float *residual, const float *bias, const float *gamma,
                   const float *beta, double *y, double *sum_out, int64_t m, int64_t n, double eps, int rms,
                   ft_dtype dt)
{
    double *s = (double *)malloc((size_t)n * sizeof(double));
    for (int64_t r = 0; r < m; r++) {
        const int64_t off = r * n;
        double mean = 0.0, var = 0.0;
        for (int64_t c = 0; c < n; c++) {
            double v = (double)x[off + c];
            if (residual)
                v += residual[off + c];
            if (bias)
                v += bias[c];
            v = ref_round(v, dt); /* the kernel normalises s as stored in dt */
            if (sum_out)
                sum_out[off + c] = v;
            s[c] = v;
            mean += v;
        }
        mean = rms ? 0.0 : mean / (double)n;
        for (int64_t c = 0; c < n; c++)
            var += (s[c] - mean) * (s[c] - mean);
        const double rstd = 1.0 / sqrt(var / (double)n + eps);
        for (int64_t c = 0; c < n; c++)
            y[off + c] = (s[c] - mean) * rstd * gamma[c] + (beta ? beta[c] : 0.0);
    }
    free(s);
}

double ref_act(double x, ft_act act)
{
    switch (act) {
    case FT_ACT_GELU: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case FT_ACT_RELU: return x > 0.0 ? x : 0.0;
    case FT_ACT_SILU: return x / (1.0 + exp(-x));
    default: return x;
    }
}

void ref_pointwise(const float *x, const float *bias, const float *residual, double *y, int64_t m, int64_t n,
                   ft_act act)
{
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
            const int64_t i = r * n + c;
            double v = ref_act((double)x[i] + (bias ? bias[c] : 0.0), act);
            if (residual)
                v += residual[i];
            y[i] = v;
        }
}
