/* ftkernels: the dtype-free part of the LLaMA int8 path (catalog §5, FasterLLaMA v1.0):
 * per-row int8 quantisation shared by the generated ft/llama_<dtype>.cuh headers, the
 * rotary table, and the FFN's gate, whose inputs and output carry no activation dtype.
 *
 *   ft_rope_table               table[pos, 2i], [pos, 2i + 1] = cos, sin (pos * base^(-2i/rd))
 *   ft_dequant_silu_mul_quant   the gated FFN between its int8 GEMMs: int32 w1, w3 outputs
 *                               dequantised (row scale x channel scale), silu(w1) * w3, then
 *                               quantised to int8 with a new row scale
 *
 * Quantisation, everywhere in the family: a row's scale is absmax / 127 and its elements
 * are round-to-nearest-even(v * 127 / absmax), so they lie in [-127, 127] and
 * q * scale ~ v; a row of zeros has scale 0 and zeros. Dequantisation of an int8 GEMM's
 * int32 output C = A W^T is C[r, c] * row_scale[r] * col_scale[c] (A's per-row scale, W's
 * per-output-channel scale). Launchers check every argument before touching the GPU and
 * return an ft_status; ft_last_error() says what was wrong. */
#ifndef FT_QUANT_CUH
#define FT_QUANT_CUH

#include <math.h>
#include <stdint.h>

#include "ft/common.cuh"
#include "ft/reduce.cuh"

/* Vectors of 4 elements (or single elements) a thread of ft_dequant_silu_mul_quant keeps in
 * registers between a row's reduction and its quantisation; rows of more than
 * FT_QUANT_CACHE * 1024 vectors are read twice. (Its loads issued all before the first
 * use, four vectors a thread, ran 25% slower at 4096 x 11008 on the H200: 688-thread
 * blocks of 56 registers, one an SM, left the SM idle between rows. The generated row
 * kernels keep up to 32 elements a thread.) */
#define FT_QUANT_CACHE 8

/* 127 / absmax, or 0 for a row of zeros (which then quantises to zeros) */
static __device__ __forceinline__ float ft_quant_inv(float absmax)
{
    return absmax > 0.0f ? 127.0f / absmax : 0.0f;
}

/* v * inv rounded to nearest even, clamped to [-127, 127] (only rounding of |v| = absmax can
 * reach 127.5 - never, but a NaN-free clamp costs two instructions) */
static __device__ __forceinline__ int ft_quant_i8(float v, float inv)
{
    const int q = __float2int_rn(v * inv);
    return q < -127 ? -127 : q > 127 ? 127 : q;
}

/* four quantised values as the bytes of one 32-bit word, element 0 lowest */
static __device__ __forceinline__ unsigned ft_quant_pack4(const float *v, float inv)
{
    return (unsigned)(ft_quant_i8(v[0], inv) & 255) | (unsigned)(ft_quant_i8(v[1], inv) & 255) << 8 |
           (unsigned)(ft_quant_i8(v[2], inv) & 255) << 16 | (unsigned)(ft_quant_i8(v[3], inv) & 255) << 24;
}

/* Sum of s and maximum of m over the block (blockDim.x a multiple of 32) in one barrier;
 * every thread gets both. scratch: 64 floats, used once per block. */
static __device__ __forceinline__ void ft_block_sum_max(float *s, float *m, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float a = ft_warp_sum(*s), b = ft_warp_max(*m);
    if (lane == 0) {
        scratch[warp] = a;
        scratch[32 + warp] = b;
    }
    __syncthreads();
    const int live = lane < (int)(blockDim.x >> 5);
    *s = ft_warp_sum(live ? scratch[lane] : 0.0f);
    *m = ft_warp_max(live ? scratch[32 + lane] : 0.0f);
}

/* Threads for one block a row of nv vectors: enough that `cache` vectors each cover the row
 * (at least 64, at most 1024, whole warps). */
static inline int ft_quant_row_threads(int64_t nv, int cache)
{
    int64_t t = (nv + cache - 1) / cache;
    t = (t + 31) / 32 * 32;
    return (int)(t < 64 ? 64 : t > 1024 ? 1024 : t);
}

/* Checks shared by the family's row launchers: m rows of n columns. */
static inline ft_status ft_quant_check_rows(const char *fn, int64_t m, int64_t n)
{
    ft_status st = ft_check_rows(fn, m, n);
    if (st != FT_OK)
        return st;
    if (m > INT32_MAX)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: m = %lld rows exceeds the supported maximum %d", fn, (long long)m,
                       INT32_MAX);
    return FT_OK;
}

/* ---------------------------------------------------------------- rotary table */

/* (cos, sin) of every rotary frequency i < rd / 2 at position pos into cs[rd / 2] (shared
 * memory), by the whole block, then a block barrier: from table (ft_rope_table, max_pos
 * rows) where pos has a row, else computed (the same bits); nothing without rotary. One
 * sincosf a frequency a block, where every head of a token row would repeat them. */
static __device__ __forceinline__ void ft_rope_block_angles(int rope, int rd, float log2_base, int pos,
                                                            const float *table, int max_pos, float2 *cs)
{
    if (rope == FT_ROPE_NONE)
        return;
    for (int i = threadIdx.x; i < rd / 2; i += blockDim.x) {
        if (table != NULL && pos >= 0 && pos < max_pos) {
            cs[i] = __ldg((const float2 *)(table + (int64_t)pos * rd) + i);
        } else {
            float sn, cn;
            ft_rope_sincos(i, pos, rd, log2_base, &sn, &cn);
            cs[i] = make_float2(cn, sn);
        }
    }
    __syncthreads();
}

static __global__ void ft_rope_table_kernel(float *table, int max_pos, int rd, float log2_base)
{
    const int half = rd / 2;
    const int64_t total = (int64_t)max_pos * half;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int pos = (int)(t / half), i = (int)(t - (int64_t)pos * half);
        float s, c;
        ft_rope_sincos(i, pos, rd, log2_base, &s, &c);
        *(float2 *)(table + (int64_t)pos * rd + 2 * i) = make_float2(c, s);
    }
}

/* table: [max_pos, rd] fp32, row pos holding (cos, sin) of pos * base^(-2i/rd) for i = 0 ..
 * rd/2 - 1 (FasterLLaMA's freqs_cis, precomputed once per model). The angle is the one the
 * attention family's rotary embedding computes on the fly (inv_freq in double, rounded once,
 * then sincosf), so either source gives the same bits. rd even; base > 1 (LLaMA: 10000). */
static inline ft_status ft_rope_table(float *table, int max_pos, int rd, float base, cudaStream_t stream)
{
    static const char fn[] = "ft_rope_table";
    ft_status st;
    if ((st = ft_check_ptr(fn, "table", table, 8)) != FT_OK)
        return st;
    if (max_pos <= 0 || rd <= 0 || rd % 2)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: max_pos (%d) must be positive and rd (%d) positive and even", fn,
                       max_pos, rd);
    if (!(base > 1.0f) || !isfinite(base))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: base must be finite and > 1, got %g", fn, (double)base);
    const int64_t total = (int64_t)max_pos * (rd / 2);
    const unsigned grid = (unsigned)((total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536);
    ft_rope_table_kernel<<<grid, 256, 0, stream>>>(table, max_pos, rd, (float)log2((double)base));
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- silu gate */

typedef struct ft_silu_quant_args {
    const int32_t *w1, *w3;              /* [m, n] */
    const float *row_scale;              /* [m] */
    const float *w1_scale, *w3_scale;    /* [n] */
    int8_t *q;                           /* [m, n] */
    float *q_scale;                      /* [m] */
    int n;
} ft_silu_quant_args;

/* silu(w1 * rs * s1) * (w3 * rs * s3) of element c: the row's product before quantisation */
static __device__ __forceinline__ float ft_silu_gate(int32_t a, int32_t b, float rs, float s1, float s3)
{
    const float x = (float)a * rs * s1;
    return __fdividef(x, 1.0f + __expf(-x)) * ((float)b * rs * s3);
}

/* One block a row. V = 4: 16-byte loads of w1, w3 and the scales, 4-byte stores of q (n % 4
 * == 0, aligned pointers); V = 1: element by element. A row of up to FT_QUANT_CACHE vectors
 * a thread stays in registers; a longer one is computed again for the stores. */
#define FT_SILU_QUANT_KERNEL(V)                                                                             \
    static __global__ void __launch_bounds__(1024) ft_dequant_silu_mul_quant_v##V(ft_silu_quant_args a)    \
    {                                                                                                       \
        __shared__ float scratch[64];                                                                       \
        const int64_t r = blockIdx.x;                                                                       \
        const int nv = a.n / V, nt = blockDim.x, tid = threadIdx.x;                                         \
        const int32_t *w1 = a.w1 + r * a.n, *w3 = a.w3 + r * a.n;                                           \
        const float rs = a.row_scale[r];                                                                    \
        const bool fits = nv <= FT_QUANT_CACHE * nt;                                                        \
        float y[FT_QUANT_CACHE][V], am = 0.0f;                                                              \
        _Pragma("unroll") for (int k = 0; k < FT_QUANT_CACHE; k++) if (fits && tid + k * nt < nv)           \
            ft_silu_quant_vec_v##V(a, w1, w3, rs, tid + k * nt, y[k], &am);                                 \
        if (!fits)                                                                                          \
            for (int i = tid; i < nv; i += nt) {                                                            \
                float t[V];                                                                                 \
                ft_silu_quant_vec_v##V(a, w1, w3, rs, i, t, &am);                                           \
            }                                                                                               \
        am = ft_block_max(am, scratch);                                                                     \
        const float inv = ft_quant_inv(am);                                                                 \
        if (tid == 0)                                                                                       \
            a.q_scale[r] = am * (1.0f / 127.0f);                                                            \
        int8_t *q = a.q + r * a.n;                                                                          \
        if (fits) {                                                                                         \
            _Pragma("unroll") for (int k = 0; k < FT_QUANT_CACHE; k++) if (tid + k * nt < nv)               \
                ft_quant_store_v##V(q, tid + k * nt, y[k], inv);                                            \
        } else {                                                                                            \
            for (int i = tid; i < nv; i += nt) {                                                            \
                float t[V];                                                                                 \
                ft_silu_quant_vec_v##V(a, w1, w3, rs, i, t, &am);                                           \
                ft_quant_store_v##V(q, i, t, inv);                                                          \
            }                                                                                               \
        }                                                                                                   \
    }

/* vector i of w1 and w3 (read once: evict first) gated: y, and its magnitude into *am */
static __device__ __forceinline__ void ft_silu_quant_vec_v4(const ft_silu_quant_args &a, const int32_t *w1,
                                                            const int32_t *w3, float rs, int i, float *y, float *am)
{
    const int4 x = __ldcs((const int4 *)w1 + i), z = __ldcs((const int4 *)w3 + i);
    const float4 s1 = __ldg((const float4 *)a.w1_scale + i), s3 = __ldg((const float4 *)a.w3_scale + i);
    y[0] = ft_silu_gate(x.x, z.x, rs, s1.x, s3.x);
    y[1] = ft_silu_gate(x.y, z.y, rs, s1.y, s3.y);
    y[2] = ft_silu_gate(x.z, z.z, rs, s1.z, s3.z);
    y[3] = ft_silu_gate(x.w, z.w, rs, s1.w, s3.w);
    *am = fmaxf(*am, fmaxf(fmaxf(fabsf(y[0]), fabsf(y[1])), fmaxf(fabsf(y[2]), fabsf(y[3]))));
}

static __device__ __forceinline__ void ft_silu_quant_vec_v1(const ft_silu_quant_args &a, const int32_t *w1,
                                                            const int32_t *w3, float rs, int i, float *y, float *am)
{
    y[0] = ft_silu_gate(__ldcs(w1 + i), __ldcs(w3 + i), rs, a.w1_scale[i], a.w3_scale[i]);
    *am = fmaxf(*am, fabsf(y[0]));
}

static __device__ __forceinline__ void ft_quant_store_v4(int8_t *q, int i, const float *y, float inv)
{
    ((unsigned *)q)[i] = ft_quant_pack4(y, inv);
}

static __device__ __forceinline__ void ft_quant_store_v8(int8_t *q, int i, const float *y, float inv)
{
    ((uint2 *)q)[i] = make_uint2(ft_quant_pack4(y, inv), ft_quant_pack4(y + 4, inv));
}

static __device__ __forceinline__ void ft_quant_store_v1(int8_t *q, int i, const float *y, float inv)
{
    q[i] = (int8_t)ft_quant_i8(y[0], inv);
}

FT_SILU_QUANT_KERNEL(4)
FT_SILU_QUANT_KERNEL(1)
#undef FT_SILU_QUANT_KERNEL

/* q[r, :] = int8 of silu(w1[r, :] * row_scale[r] * w1_scale) * (w3[r, :] * row_scale[r] *
 * w3_scale), q_scale[r] its absmax / 127 (FasterLLaMA's DequantizedSiluMultifyQuantized: the
 * outputs of the W1 and W3 int8 GEMMs of one quantised input, whose row scale both share;
 * q and q_scale are the W2 GEMM's input). Any n; 16-byte accesses where n % 4 == 0 and
 * the pointers allow. */
static inline ft_status ft_dequant_silu_mul_quant(const int32_t *w1, const int32_t *w3, const float *row_scale,
                                                  const float *w1_scale, const float *w3_scale, int8_t *q,
                                                  float *q_scale, int64_t m, int64_t n, cudaStream_t stream)
{
    static const char fn[] = "ft_dequant_silu_mul_quant";
    ft_status st;
    if ((st = ft_check_ptr(fn, "w1", w1, 4)) != FT_OK || (st = ft_check_ptr(fn, "w3", w3, 4)) != FT_OK ||
        (st = ft_check_ptr(fn, "row_scale", row_scale, 4)) != FT_OK ||
        (st = ft_check_ptr(fn, "w1_scale", w1_scale, 4)) != FT_OK ||
        (st = ft_check_ptr(fn, "w3_scale", w3_scale, 4)) != FT_OK || (st = ft_check_ptr(fn, "q", q, 1)) != FT_OK ||
        (st = ft_check_ptr(fn, "q_scale", q_scale, 4)) != FT_OK || (st = ft_quant_check_rows(fn, m, n)) != FT_OK)
        return st;
    ft_silu_quant_args a;
    a.w1 = w1, a.w3 = w3, a.row_scale = row_scale, a.w1_scale = w1_scale, a.w3_scale = w3_scale;
    a.q = q, a.q_scale = q_scale, a.n = (int)n;
    if (n % 4 == 0 && ft_aligned(w1, 16) && ft_aligned(w3, 16) && ft_aligned(w1_scale, 16) &&
        ft_aligned(w3_scale, 16) && ft_aligned(q, 4)) {
        ft_dequant_silu_mul_quant_v4<<<(unsigned)m, ft_quant_row_threads(n / 4, FT_QUANT_CACHE), 0, stream>>>(a);
    } else {
        ft_dequant_silu_mul_quant_v1<<<(unsigned)m, ft_quant_row_threads(n, FT_QUANT_CACHE), 0, stream>>>(a);
    }
    return ft_launch_status(fn);
}

#endif /* FT_QUANT_CUH */
