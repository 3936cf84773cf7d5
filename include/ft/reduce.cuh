/* ftkernels: sums over a warp, a group of lanes, or a whole block.
 *
 * The kernels pick their block size and the number of lanes that share a row at run
 * time (from n), so these take the sizes as arguments. CUB's WarpReduce/BlockReduce fix
 * them at compile time, which would force one kernel instantiation per configuration. */
#ifndef FT_REDUCE_CUH
#define FT_REDUCE_CUH

#include <math.h>

#include "ft/common.cuh"

/* Sum over an aligned group of `group` lanes (a power of two, 1..32) within one warp.
 * Every lane of the group gets the total; `mask` names the group's lanes. */
static __device__ __forceinline__ float ft_group_sum(float v, int group, unsigned mask)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) /* unrolled; the steps of `group` or more skipped */
        if (off < group)
            v += __shfl_xor_sync(mask, v, off);
    return v;
}

/* The maximum of v + t over an aligned group of `group` lanes, kept as a pair: on return
 * t is the group's largest t and m the largest v + (t_lane - t) — exact for the lanes
 * whose t is the largest (their v is taken as it is); only values already below them
 * by about their difference in t lose precision. A lane with nothing to offer passes
 * t = m = -inf. Every lane of the group gets the same pair. */
static __device__ __forceinline__ void ft_group_max_shifted(float &t, float &m, int group, unsigned mask)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        if (off < group) {
            const float t2 = __shfl_xor_sync(mask, t, off), m2 = __shfl_xor_sync(mask, m, off);
            const float top = fmaxf(t, t2);
            if (top != -INFINITY)
                m = fmaxf(m + (t - top), m2 + (t2 - top));
            t = top;
        }
}

/* Maximum over an aligned group of `group` lanes, as ft_group_sum. */
static __device__ __forceinline__ float ft_group_max(float v, int group, unsigned mask)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        if (off < group)
            v = fmaxf(v, __shfl_xor_sync(mask, v, off));
    return v;
}

static __device__ __forceinline__ float ft_warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* Inclusive prefix sum over the lanes of a warp (lane order). */
static __device__ __forceinline__ float ft_warp_incl_scan(float v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float o = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off)
            v += o;
    }
    return v;
}

static __device__ __forceinline__ int ft_warp_max_int(int v)
{
    return __reduce_max_sync(0xffffffffu, v);
}

static __device__ __forceinline__ float ft_warp_max(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

/* Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread
 * gets the total. One barrier: each warp writes its partial to `scratch[32]`, then every
 * warp re-reduces all partials itself instead of waiting for warp 0 to broadcast.
 * A second call must use a different scratch array (or follow a barrier). */
static __device__ __forceinline__ float ft_block_sum(float v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = ft_warp_sum(v);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.0f;
    return ft_warp_sum(v);
}

/* Maximum over the whole block, as ft_block_sum. */
static __device__ __forceinline__ float ft_block_max(float v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = ft_warp_max(v);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : -INFINITY;
    return ft_warp_max(v);
}

/* ft_group_max_shifted over the whole block (blockDim.x a multiple of 32, at most 1024):
 * every thread gets the block's (largest t, maximum relative to it). One barrier;
 * scratch holds 64 floats. */
static __device__ __forceinline__ void ft_block_max_shifted(float &t, float &m, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    ft_group_max_shifted(t, m, 32, 0xffffffffu);
    if (lane == 0) {
        scratch[warp] = t;
        scratch[32 + warp] = m;
    }
    __syncthreads();
    const int live = lane < (int)(blockDim.x >> 5);
    t = live ? scratch[lane] : -INFINITY;
    m = live ? scratch[32 + lane] : -INFINITY;
    ft_group_max_shifted(t, m, 32, 0xffffffffu);
}

/* Largest 64-bit key over the whole block (0 when none; ft_select_key's candidates), as
 * ft_block_max: every thread gets it. */
static __device__ __forceinline__ unsigned long long ft_block_max_u64(unsigned long long v,
                                                                      unsigned long long *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0ull;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    return v;
}

/* Two sums at once over the first `nwarps` warps of the block (the threads below
 * nwarps * 32, each of which calls it; the others run on), through named barrier `bar`
 * (1..15) rather than the block's: every caller gets the totals. scratch holds 64 floats;
 * one barrier, so a second call must use a different scratch array (or follow another
 * barrier among the same warps). */
static __device__ __forceinline__ float2 ft_warps_sum2(float2 v, int nwarps, float *scratch, unsigned bar)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v.x = ft_warp_sum(v.x);
    v.y = ft_warp_sum(v.y);
    if (lane == 0) {
        scratch[warp] = v.x;
        scratch[32 + warp] = v.y;
    }
    ft_named_sync(bar, (unsigned)nwarps * 32u);
    v.x = ft_warp_sum(lane < nwarps ? scratch[lane] : 0.0f);
    v.y = ft_warp_sum(lane < nwarps ? scratch[32 + lane] : 0.0f);
    return v;
}

/* Integer sum over the whole block (exact, unlike the float sums), as ft_block_sum. */
static __device__ __forceinline__ long long ft_block_sum_i64(long long v, long long *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* Two sums at once (one barrier); scratch holds 64 floats. */
static __device__ __forceinline__ float2 ft_block_sum2(float2 v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v.x = ft_warp_sum(v.x);
    v.y = ft_warp_sum(v.y);
    if (lane == 0) {
        scratch[warp] = v.x;
        scratch[32 + warp] = v.y;
    }
    __syncthreads();
    const int live = lane < (int)(blockDim.x >> 5);
    v.x = ft_warp_sum(live ? scratch[lane] : 0.0f);
    v.y = ft_warp_sum(live ? scratch[32 + lane] : 0.0f);
    return v;
}

#define FT_LOG2E 1.4426950408889634f /* log2(e): e^x = 2^(x log2(e)) */

/* 2^x on the approximate unit (softmax weights, x <= 0; subnormal results flush to 0). */
static __device__ __forceinline__ float ft_exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Online softmax state (m, s): s = sum of exp(x - m) over the values seen, m their max.
 * Merges (m2, s2) into (m, s); an empty state is (-inf, 0). */
static __device__ __forceinline__ void ft_max_sum_merge(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    if (mm == -INFINITY)
        return; /* both empty (or all -inf): nothing to rescale */
    s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
    m = mm;
}

/* (max, sum of exp(x - max)) over the whole block; every thread gets the result. One
 * barrier; scratch holds 64 floats (block size a multiple of 32, at most 1024). */
static __device__ __forceinline__ void ft_block_max_sum(float &m, float &s, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        ft_max_sum_merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if (lane == 0) {
        scratch[warp] = m;
        scratch[32 + warp] = s;
    }
    __syncthreads();
    const int live = lane < (int)(blockDim.x >> 5);
    m = live ? scratch[lane] : -INFINITY;
    s = live ? scratch[32 + lane] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        ft_max_sum_merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
}

/* Sum over the threads that share one row: a shuffle group when group <= 32, otherwise
 * the whole block (group == blockDim.x; uniform branch, so the barrier is safe). */
static __device__ __forceinline__ float ft_row_sum(float v, int group, unsigned mask, float *scratch)
{
    return group <= 32 ? ft_group_sum(v, group, mask) : ft_block_sum(v, scratch);
}

static __device__ __forceinline__ float2 ft_row_sum2(float2 v, int group, unsigned mask, float *scratch)
{
    if (group <= 32) {
        v.x = ft_group_sum(v.x, group, mask);
        v.y = ft_group_sum(v.y, group, mask);
        return v;
    }
    return ft_block_sum2(v, scratch);
}

/* Shuffle mask of the aligned group of `group` lanes (power of two) holding this lane. */
static __device__ __forceinline__ unsigned ft_group_mask(int group)
{
    if (group >= 32)
        return 0xffffffffu;
    const unsigned first = (threadIdx.x & 31u) & ~(unsigned)(group - 1);
    return ((1u << group) - 1u) << first;
}

#endif /* FT_REDUCE_CUH */
