/* CPU reference of decoder attention (self and cross), plain C, double accumulation. */
#ifndef FT_REF_ATTENTION_H
#define FT_REF_ATTENTION_H

#include <stdint.h>

#include "ref_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rotary embedding of x[0..D) at position pos, in place (style ft_rope, the leading rd
 * elements rotated). The angle is formed in float exactly as the kernels form it; the
 * rotation itself is done in double. Shared with the llama references. */
void ref_rope(double *x, int D, int pos, int style, int rd, float log2_base);

typedef struct ref_attn {
    int B, H, Hkv, D, L; /* L: cache / memory capacity */
    int layout;          /* ft_kv_layout */
    int is_self;
    const int *lengths;  /* self: cached steps (new token at lengths[b]); cross: memory steps */
    const int *indir;    /* self, or NULL: [B, L] beam (0..beam-1) of b's item whose row holds step t */
    int beam;            /* rows per item for indir */
    const float *q, *q_bias;                 /* [B, H*D], [H*D] or NULL */
    const float *k_new, *v_new;              /* self: [B, Hkv*D] */
    const float *k_bias, *v_bias;            /* self: [Hkv*D] or NULL */
    float *k_cache, *v_cache;                /* in layout; self appends the new k, v (rounded to dt) */
    int rope, rotary_dim;                    /* ft_rope; rotary_dim already resolved (0 -> D) */
    float log2_base;                         /* log2f(base), as the launcher computes it */
    double scale;                            /* already resolved (0 -> 1/sqrt(D)) */
    ft_dtype dt;
    double *out;                             /* [B, H*D] */
} ref_attn;

/* Index of (b, h, t, d) in a cache of the given layout. */
int64_t ref_kv_index(int layout, int B, int Hkv, int L, int D, int b, int h, int t, int d);

void ref_attention_decode(const ref_attn *a);

/* Self-attention over packed sequences (ft_packed_attention_args): each row of qkv holds H
 * query heads, then Hkv key heads, then Hkv value heads of D values. The biased q is
 * rounded to dt (as the kernel stages it); k and v take their bias exactly (the kernel
 * adds neither to the stored values: a key bias cannot change a softmax, a value bias is
 * added to the output); the rest is double. */
typedef struct ref_packed_attn {
    int B, H, Hkv, D;
    const int *offsets;  /* [B + 1] */
    const float *qkv;    /* [offsets[B], (H + 2 Hkv) * D] */
    const float *bias;   /* [(H + 2 Hkv) * D] or NULL */
    double scale;
    int causal;
    ft_dtype dt;
    double *out;         /* [offsets[B], H * D] */
} ref_packed_attn;

void ref_packed_attention(const ref_packed_attn *a);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_ATTENTION_H */
