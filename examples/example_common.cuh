/* Helpers shared by the composed layers in examples/: a bump allocator that carves one
 * caller-provided device workspace into 256-byte aligned pieces (the same code sizes the
 * workspace, with a NULL base, and hands out the pointers), a status-propagating call
 * macro, and a linear layer with bias and activation. */
#ifndef FT_EXAMPLE_COMMON_CUH
#define FT_EXAMPLE_COMMON_CUH

#include <stddef.h>

#include "ft/gemm.cuh"
#include "ft/norm.cuh"
#include "ft/types.h"

typedef struct ft_ex_arena {
    char *base; /* NULL: only count */
    size_t used;
} ft_ex_arena;

static inline void *ft_ex_take(ft_ex_arena *a, size_t bytes)
{
    void *p = a->base ? a->base + a->used : NULL;
    a->used += (bytes + 255) / 256 * 256;
    return p;
}

#define FT_EX_TRY(expr)                                                                          \
    do {                                                                                         \
        ft_status st_ = (expr);                                                                  \
        if (st_ != FT_OK)                                                                        \
            return st_;                                                                          \
    } while (0)

static __global__ void ft_ex_fill_int_kernel(int *p, int n, int v)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

/* p[0 .. n) = v on the device (a lengths array for a launcher that takes one). */
static inline ft_status ft_ex_fill_int(int *p, int n, int v, cudaStream_t stream)
{
    if (p == NULL || n <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "ft_ex_fill_int: p (%p) and n (%d) > 0 required", (void *)p, n);
    ft_ex_fill_int_kernel<<<(n + 255) / 256, 256, 0, stream>>>(p, n, v);
    return ft_launch_status("ft_ex_fill_int");
}

/* C[m,n] = act(A[m,k] W[k,n] + bias): one GEMM with the bias and activation in its
 * epilogue when the context has a cuBLASLt handle (and the activation an epilogue), else
 * the GEMM and ft_add_bias_act in place. */
static inline ft_status ft_ex_linear_act(const ft_gemm_ctx *g, ft_dtype dt, int m, int n, int k, const void *A,
                                         const void *W, const void *bias, ft_act act, void *C, cudaStream_t stream)
{
    if (g && g->lt && act != FT_ACT_SILU)
        return ft_gemm_bias_act(g, dt, m, n, k, A, k, W, n, bias, act, C, n, stream);
    FT_EX_TRY(ft_gemm(g, dt, 0, 0, m, n, k, 1.0f, A, k, W, n, 0.0f, C, n, stream));
    return ft_add_bias_act(dt, C, bias, C, m, n, act, stream);
}

#endif /* FT_EXAMPLE_COMMON_CUH */
