#include "ref_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_rng_seed(ref_rng *r, uint64_t seed)
{
    r->s = seed ^ 0x9e3779b97f4a7c15ull;
}

uint64_t ref_rng_u64(ref_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double ref_rng_uniform(ref_rng *r)
{
    return (double)(ref_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

double ref_rng_normal(ref_rng *r)
{
    /* Box-Muller; u1 kept away from 0 */
    const double u1 = (ref_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
    const double u2 = ref_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t ref_rng_range(ref_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(ref_rng_u64(r) % (uint64_t)(hi - lo + 1));
}

uint64_t ref_test_seed(void)
{
    const char *s = getenv("FT_TEST_SEED");
    return s && *s ? strtoull(s, NULL, 0) : 20261122ull;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t ref_f32_to_f16_bits(float f)
{
    const uint32_t u = f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u)
        return sign | 0x7e00u; /* NaN */
    if (absu >= 0x477ff000u)   /* rounds to >= 65520: infinity */
        return sign | 0x7c00u;
    if (absu < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        /* value = absu as float; subnormal half unit is 2^-24 */
        const float a = bits_f32(absu);
        const float scaled = a * 16777216.0f; /* a / 2^-24, exact */
        float r = nearbyintf(scaled);         /* default rounding mode: to nearest even */
        return sign | (uint16_t)r;
    }
    /* normal: drop 13 mantissa bits with round to nearest even */
    const uint32_t rebased = absu - 0x38000000u; /* exponent bias 127 -> 15 */
    const uint32_t lsb = (rebased >> 13) & 1u;
    const uint32_t rounded = rebased + 0x0fffu + lsb;
    return sign | (uint16_t)(rounded >> 13);
}

float ref_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0)
        return (sign ? -1.0f : 1.0f) * (float)man * 5.9604644775390625e-8f; /* 2^-24 */
    if (exp == 31)
        return bits_f32(sign | 0x7f800000u | (man << 13));
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t ref_f32_to_bf16_bits(float f)
{
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    const uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

float ref_bf16_bits_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

double ref_round(double v, ft_dtype dt)
{
    switch (dt) {
    case FT_FP16: return ref_f16_bits_to_f32(ref_f32_to_f16_bits((float)v));
    case FT_BF16: return ref_bf16_bits_to_f32(ref_f32_to_bf16_bits((float)v));
    default: return (float)v;
    }
}

void ref_encode(void *dst, const float *src, size_t count, ft_dtype dt)
{
    if (dt == FT_FP32) {
        memcpy(dst, src, count * 4);
        return;
    }
    uint16_t *d = (uint16_t *)dst;
    for (size_t i = 0; i < count; i++)
        d[i] = dt == FT_FP16 ? ref_f32_to_f16_bits(src[i]) : ref_f32_to_bf16_bits(src[i]);
}

void ref_decode(float *dst, const void *src, size_t count, ft_dtype dt)
{
    if (dt == FT_FP32) {
        memcpy(dst, src, count * 4);
        return;
    }
    const uint16_t *s = (const uint16_t *)src;
    for (size_t i = 0; i < count; i++)
        dst[i] = dt == FT_FP16 ? ref_f16_bits_to_f32(s[i]) : ref_bf16_bits_to_f32(s[i]);
}

ref_tol ref_tolerance(ft_dtype dt)
{
    /* the output rounding of the dtype dominates: half an ulp is 2^-11 (fp16) and 2^-8
     * (bf16) relative; fp32 leaves the error of fp32 accumulation over long rows. */
    ref_tol t;
    switch (dt) {
    case FT_FP16: t.atol = 2e-3; t.rtol = 2e-3; break;
    case FT_BF16: t.atol = 1.6e-2; t.rtol = 1.6e-2; break;
    default: t.atol = 5e-5; t.rtol = 5e-5; break;
    }
    return t;
}
