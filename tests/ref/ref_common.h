/* Shared pieces of the CPU references, in plain C: a seeded RNG, fp16/bf16 rounding
 * done bit-exactly on the host (round to nearest even, as the device's _rn conversions),
 * and the tolerance model per dtype. */
#ifndef FT_REF_COMMON_H
#define FT_REF_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "ft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64: small, seedable, good enough for test data */
typedef struct ref_rng {
    uint64_t s;
} ref_rng;

void ref_rng_seed(ref_rng *r, uint64_t seed);
uint64_t ref_rng_u64(ref_rng *r);
double ref_rng_uniform(ref_rng *r);                 /* [0, 1) */
double ref_rng_normal(ref_rng *r);                  /* N(0, 1) */
int64_t ref_rng_range(ref_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */

/* The test seed: FT_TEST_SEED from the environment, else a fixed default. */
uint64_t ref_test_seed(void);

uint16_t ref_f32_to_f16_bits(float f);
float ref_f16_bits_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16_bits(float f);
float ref_bf16_bits_to_f32(uint16_t h);

/* The value `v` takes once stored in `dt` (fp32: rounded to float). */
double ref_round(double v, ft_dtype dt);

/* Encodes float values as dtype elements into `dst` (ft_dtype_size(dt) bytes each), and
 * back. */
void ref_encode(void *dst, const float *src, size_t count, ft_dtype dt);
void ref_decode(float *dst, const void *src, size_t count, ft_dtype dt);

/* Tolerance for outputs stored in `dt` that were computed in fp32:
 * |got - ref| <= atol + rtol*|ref|. */
typedef struct ref_tol {
    double atol, rtol;
} ref_tol;
ref_tol ref_tolerance(ft_dtype dt);

#ifdef __cplusplus
}
#endif

#endif /* FT_REF_COMMON_H */
