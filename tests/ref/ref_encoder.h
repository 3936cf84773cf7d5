/* CPU references of the encoder family and of the composed layers (examples/), plain C,
 * double accumulation. */
#ifndef FT_REF_ENCODER_H
#define FT_REF_ENCODER_H

#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* seq_offsets[B+1] and FasterTransformer's token_offsets[valid] from lengths (clamped to
 * [0, S]); returns the valid count. */
int ref_padding_offsets(const int *lengths, int B, int S, int *seq_offsets, int *token_offsets);

/* rows (padded [B*S, ld] or, with seq_offsets, packed [valid, ld]) + bias -> heads
 * [B, H, S, D]; padding rows give zeros. */
void ref_rows_to_heads(const float *rows, int64_t ld, const float *bias, const int *seq_offsets, int B, int S, int H,
                       int D, double *heads);

/* heads [B, H, S, D] -> rows [B*S, H*D], or packed [valid, H*D] with seq_offsets. */
void ref_heads_to_rows(const float *heads, const int *seq_offsets, int B, int S, int H, int D, double *rows);

/* softmax(score*scale + (1 - mask)*-10000) over rows of S; mask [B, S, S] or NULL, then
 * lengths (keep i, j < len) or NULL (keep all). */
void ref_masked_softmax(const float *scores, const float *mask, const int *lengths, int B, int H, int S, double scale,
                        double *out);

/* C[m, n] = A[m, k] B[k, n] (row-major, [in, out] weights), double accumulation. */
void ref_matmul(const double *A, const double *B, double *C, int m, int n, int k);

/* Rounds every element of x to dt in place (what storing it between kernels does). */
void ref_round_all(double *x, int64_t count, ft_dtype dt);

/* The weights of one BERT layer as float values (already representable in dt); w_qkv is
 * [N, 3N]. */
typedef struct ref_bert_w {
    const float *w_qkv, *b_qkv, *w_out, *b_out, *ln1_g, *ln1_b, *w_ffn1, *b_ffn1, *w_ffn2, *b_ffn2, *ln2_g, *ln2_b;
} ref_bert_w;

/* One BERT layer (examples/bert_layer.cuh) on x [B, S, N]; y [B, S, N]. Intermediates are
 * rounded to dt where the GPU stores them. Only rows s < lengths[b] are meaningful. */
void ref_bert_layer(const ref_bert_w *w, const float *x, const int *lengths, int B, int S, int N, int H, int F,
                    double eps, ft_dtype dt, double *y);

typedef struct ref_dec_w {
    const float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *w_so, *b_so, *ln2_g, *ln2_b, *w_cq, *b_cq, *w_ck, *b_ck, *w_cv,
        *b_cv, *w_co, *b_co, *ln3_g, *ln3_b, *w_f1, *b_f1, *w_f2, *b_f2;
} ref_dec_w;

/* One decoder step (examples/decoder_layer.cuh). x [B, N]; memory [B, Lmem, Nmem];
 * k_cache/v_cache float in the given layout with capacity L (the new k, v are appended at
 * lengths[b]); y [B, N]. */
void ref_decoder_step(const ref_dec_w *w, const float *x, const float *memory, int B, int N, int H, int F, int Nmem,
                      int Lmem, const int *mem_lengths, float *k_cache, float *v_cache, int layout, int L,
                      const int *lengths, double eps, ft_dtype dt, double *y);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_ENCODER_H */
