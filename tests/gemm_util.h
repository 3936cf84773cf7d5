/* The cuBLAS context of a test or benchmark program (never for library code): created on
 * first use with a 32 MiB workspace (the program exits with the reason if that fails),
 * destroyed by shared_gemm_ctx_destroy. TF32 stays off unless a caller turns it on. */
#ifndef FT_TEST_GEMM_UTIL_H
#define FT_TEST_GEMM_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "ft/gemm.cuh"

static ft_gemm_ctx g_shared_gemm_ctx;

static ft_gemm_ctx *shared_gemm_ctx(void)
{
    if (!g_shared_gemm_ctx.blas && ft_gemm_ctx_init(&g_shared_gemm_ctx, 32u << 20) != FT_OK) {
        fprintf(stderr, "ft_gemm_ctx_init: %s\n", ft_last_error());
        exit(2);
    }
    return &g_shared_gemm_ctx;
}

static void shared_gemm_ctx_destroy(void)
{
    ft_gemm_ctx_destroy(&g_shared_gemm_ctx);
}

#endif /* FT_TEST_GEMM_UTIL_H */
