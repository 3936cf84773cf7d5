/* ftkernels: status codes, dtypes and activation kinds shared by every family.
 *
 * Plain C (also valid C++ and CUDA), so a host-only C program can name dtypes and
 * read status strings without a CUDA compiler. Every launcher returns an ft_status;
 * on failure ft_last_error() holds a one-line message naming the launcher and the
 * argument that was rejected. */
#ifndef FT_TYPES_H
#define FT_TYPES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef enum ft_status {
    FT_OK = 0,
    FT_ERR_INVALID_ARGUMENT = 1, /* null pointer, zero or negative size, bad enum, bad value */
    FT_ERR_UNSUPPORTED = 2,      /* shape or dtype for which no variant was generated */
    FT_ERR_MISALIGNED = 3,       /* a pointer is not aligned to what the kernel must load */
    FT_ERR_CUDA = 4              /* a CUDA runtime call or the launch itself failed */
} ft_status;

typedef enum ft_dtype {
    FT_FP32 = 0,
    FT_FP16 = 1,
    FT_BF16 = 2,
    FT_INT8 = 3,
    FT_INT32 = 4
} ft_dtype;

/* Activation applied by add_bias_act (and later FFN kernels). GELU is the tanh form
 * used by BERT/FasterTransformer: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))). */
typedef enum ft_act {
    FT_ACT_IDENTITY = 0,
    FT_ACT_GELU = 1,
    FT_ACT_RELU = 2,
    FT_ACT_SILU = 3
} ft_act;

/* Where position t of sequence b, key/value head h lives in a cache of capacity Lmax. */
typedef enum ft_kv_layout {
    FT_KV_BHLD = 0, /* [B, Hkv, Lmax, D]  (LLaMA-style; each head's steps contiguous) */
    FT_KV_LBHD = 1, /* [Lmax, B, Hkv*D]   (FasterTransformer's self-attention cache) */
    FT_KV_BLHD = 2  /* [B, Lmax, Hkv*D]   (FasterTransformer's encoder memory) */
} ft_kv_layout;

/* Rotary embedding of q and the new k at position lengths[b], angle pos * base^(-2i/rd). */
typedef enum ft_rope {
    FT_ROPE_NONE = 0,
    FT_ROPE_INTERLEAVED = 1, /* pairs (2i, 2i+1): GPT-J, Meta's LLaMA (FasterLLaMA seed) */
    FT_ROPE_HALF = 2         /* pairs (i, i + rd/2): GPT-NeoX, Hugging Face LLaMA */
} ft_rope;

#define FT_ERROR_MESSAGE_LEN 512

static inline const char *ft_status_string(ft_status s)
{
    switch (s) {
    case FT_OK: return "ok";
    case FT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FT_ERR_UNSUPPORTED: return "unsupported shape or dtype";
    case FT_ERR_MISALIGNED: return "misaligned pointer";
    case FT_ERR_CUDA: return "CUDA error";
    }
    return "unknown status";
}

static inline const char *ft_dtype_name(ft_dtype d)
{
    switch (d) {
    case FT_FP32: return "fp32";
    case FT_FP16: return "fp16";
    case FT_BF16: return "bf16";
    case FT_INT8: return "int8";
    case FT_INT32: return "int32";
    }
    return "unknown dtype";
}

/* Bytes per element; 0 for a value outside the enum. */
static inline size_t ft_dtype_size(ft_dtype d)
{
    switch (d) {
    case FT_FP32: return 4;
    case FT_FP16: return 2;
    case FT_BF16: return 2;
    case FT_INT8: return 1;
    case FT_INT32: return 4;
    }
    return 0;
}

static inline const char *ft_act_name(ft_act a)
{
    switch (a) {
    case FT_ACT_IDENTITY: return "identity";
    case FT_ACT_GELU: return "gelu";
    case FT_ACT_RELU: return "relu";
    case FT_ACT_SILU: return "silu";
    }
    return "unknown activation";
}

/* The message buffer is thread-local. In C++ (every .cu file) the function is a plain
 * `inline`, so all translation units share one buffer; in C it is per translation unit,
 * which is still the one the C caller's own launcher calls wrote to. */
#ifdef __cplusplus
inline char *ft_error_buffer_(void)
{
    static thread_local char buf[FT_ERROR_MESSAGE_LEN];
    return buf;
}
#else
static inline char *ft_error_buffer_(void)
{
    static _Thread_local char buf[FT_ERROR_MESSAGE_LEN];
    return buf;
}
#endif

/* Detail of the most recent failure in this thread ("" if none has happened yet). */
static inline const char *ft_last_error(void)
{
    return ft_error_buffer_();
}

/* Records a formatted message and returns `s`, so a check reads
 *     if (!x) return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: x is NULL", fn); */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static inline ft_status ft_fail(ft_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ft_error_buffer_(), FT_ERROR_MESSAGE_LEN, fmt, ap);
    va_end(ap);
    return s;
}

#endif /* FT_TYPES_H */
