/* CPU references for the decoding family (catalog §4): ordering keys and top-K, update_logits,
 * embeddings and sine positions, the top-p set, beam update and KV-cache reorder, gather
 * tree and prompt removal. Plain C, double accumulation. */
#ifndef FT_REF_DECODING_H
#define FT_REF_DECODING_H

#include <stdbool.h>
#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's candidate order (ft/search.cuh): larger value first, NaN above +inf,
 * -0.0 == +0.0, ties to the lower index. ref_order_key mirrors ft_order_key bit for bit. */
uint32_t ref_order_key(float v);
/* The value a key stands for (NaN canonical, -0.0 as +0.0). */
float ref_order_value(uint32_t k);

/* The k best of x[0..n) (after adding `add` in float, as the kernel does): values and
 * indices (index + index_base), best first. */
void ref_topk(const float *x, int n, float add, int index_base, int k, float *values, int *indices);

/* Beam candidates: for item b, the k best of cum[i] + lp[i*ld + w] over i < beam, w < V;
 * ids i*V + w. values, ids: [k]. */
void ref_beam_topk(const float *lp, int64_t ld, const float *cum, int beam, int V, int k, float *values, int *ids);

/* update_logits of one row into out (double): modes as ft_logits_mode. */
void ref_update_logits(const float *x, const float *bias, int V, bool finished, int end_id, double temperature,
                       int mode, double *out);

double ref_sine_position(int pos, int i, int n);

/* The top-p set of a row of logits at temperature t: in[i] = 1 for members. Returns the
 * member count and writes the set's mass / the row's mass to *mass_frac. */
int ref_topp_set(const float *x, int V, double temperature, double p, unsigned char *in, double *mass_frac);

/* Probabilities softmax(x / t) restricted to `in` (NULL: all), renormalised. */
void ref_set_probs(const float *x, int V, double temperature, const unsigned char *in, double *prob);

/* Beam update of one batch item in place (ft_beam_update's semantics). */
void ref_beam_update(const float *cand_values, const int *cand_ids, int beam, int V, int end_id, float *cum,
                     int *parent, int *word, int *lengths, bool *finished);

/* Upper-tail critical value of chi-square with df degrees of freedom at significance
 * alpha (Wilson-Hilferty). */
double ref_chi2_critical(int df, double alpha);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_DECODING_H */
