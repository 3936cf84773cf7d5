/* Helpers shared by the composed layers in examples/: a bump allocator that carves one
 * caller-provided device workspace into 256-byte aligned pieces (the same code sizes the
 * workspace, with a NULL base, and hands out the pointers), and a status-propagating
 * call macro. */
#ifndef FT_EXAMPLE_COMMON_CUH
#define FT_EXAMPLE_COMMON_CUH

#include <stddef.h>

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

#endif /* FT_EXAMPLE_COMMON_CUH */
