/* CPU references for the continuous-batching inferencer (catalog §6; ft/batching_<dtype>.cuh,
 * examples/inferencer.cuh): q . K^T over per-slot lengths, softmax with lengths, p . V, the
 * arg-max rule, and the seed's whole model for one sequence. Plain C, double accumulation.
 * Layouts as the kernels': kt [B, E, S], v [B, S, E], E = H * D. */
#ifndef FT_REF_BATCHING_H
#define FT_REF_BATCHING_H

#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lengths as the kernels clamp them: to [0, S]. */
int ref_clamp_len(int len, int S);

/* scores[(b * H + h) * S + j] = scale * q[b, head h] . kt[b, head h, j] for j < the slot's
 * length; the other entries untouched. q: [B] rows of ld_q. */
void ref_qkt(const float *q, int64_t ld_q, const float *kt, const int *lengths, int B, int H, int D, int S, double scale,
             double *scores);

/* p[(b * H + h) * S + j]: softmax of x's row (ld_x apart) over j < the slot's length, 0 for
 * the rest of [0, S). */
void ref_softmax_lengths(const float *x, int64_t ld_x, const int *lengths, int B, int H, int S, double *p);

/* out[b * H * D + e] = sum over j < the slot's length of p[b, h, j] * v[b, j, e] (e in head h) */
void ref_softmax_v(const float *p, int64_t ld_p, const float *v, const int *lengths, int B, int H, int D, int S,
                   double *out);

/* Index of the largest of x[0..n) in the library's candidate order (ref_order_key: NaN
 * above +inf, -0.0 == +0.0), ties to the lower index. */
int ref_argmax(const float *x, int n);

/* The seed's model (examples/inferencer.cuh) in double, for one sequence: the logits of
 * the token after tokens[0..len). Each value the example stores in its dtype (q, k, v, the
 * attention output, h, the logits) is rounded to dt there; scores and probabilities stay
 * as they are (the kernels keep them in fp32). */
typedef struct ref_infer_model {
    int N, H, D, V;
    const float *embedding; /* [V, N] */
    const float *w_qkv;     /* [N, 3E] */
    const float *w_o;       /* [E, N] */
} ref_infer_model;

void ref_infer_logits(const ref_infer_model *m, const int *tokens, int len, ft_dtype dt, double *logits);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_BATCHING_H */
