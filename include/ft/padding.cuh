/* ftkernels: padding offsets for variable-length batches (FasterTransformer v2.1's
 * "remove padding", seed 003 §3.1), independent of dtype.
 *
 * A padded batch holds B sequences of S_max rows each; sequence b has lengths[b] valid
 * rows (clamped to [0, S_max]). ft_padding_offsets writes
 *   seq_offsets[B + 1]   exclusive prefix sum of the lengths: the valid rows of sequence
 *                        b are rows seq_offsets[b] .. seq_offsets[b+1]-1 of the packed
 *                        [valid, N] tensor, and seq_offsets[B] is the valid row count
 *   token_offsets[valid] (optional) FasterTransformer's padding_offset: packed row i is
 *                        padded row i + token_offsets[i]
 * Every remove/rebuild-padding kernel of the encoder family takes seq_offsets. The valid
 * count stays on the device (graph-capture friendly); a caller that needs it on the host
 * for a GEMM's row count copies seq_offsets[B] back, or sums its host-side lengths.
 *
 * One block per sequence reduces the lengths before it (a parallel reduction over B,
 * not one thread walking the batch), then writes its own offsets. */
#ifndef FT_PADDING_CUH
#define FT_PADDING_CUH

#include "ft/common.cuh"
#include "ft/reduce.cuh"

static __global__ void __launch_bounds__(256)
    ft_padding_offsets_kernel(const int *lengths, int batch, int max_seq, int *seq_offsets, int *token_offsets)
{
    __shared__ long long scratch[32];
    const int b = blockIdx.x;
    long long before = 0;
    for (int i = threadIdx.x; i < b; i += blockDim.x)
        before += min(max(lengths[i], 0), max_seq);
    before = ft_block_sum_i64(before, scratch);
    const int len = min(max(lengths[b], 0), max_seq);
    if (threadIdx.x == 0) {
        seq_offsets[b] = (int)before;
        if (b == batch - 1)
            seq_offsets[batch] = (int)(before + len);
    }
    if (token_offsets) {
        const int pad = (int)((long long)b * max_seq - before);
        for (int s = threadIdx.x; s < len; s += blockDim.x)
            token_offsets[before + s] = pad;
    }
}

/* lengths: [B] int32 device; seq_offsets: [B+1] int32 device; token_offsets: NULL or
 * [B*S_max] int32 device (only the first `valid` entries are written). */
static inline ft_status ft_padding_offsets(const int *lengths, int batch, int max_seq, int *seq_offsets,
                                           int *token_offsets, cudaStream_t stream)
{
    static const char fn[] = "ft_padding_offsets";
    ft_status st;
    if ((st = ft_check_ptr(fn, "lengths", lengths, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "seq_offsets", seq_offsets, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "token_offsets", token_offsets, sizeof(int))) != FT_OK)
        return st;
    if (batch <= 0 || max_seq <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch (%d) and max_seq (%d) must be positive", fn, batch,
                       max_seq);
    if ((long long)batch * max_seq > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: batch*max_seq = %lld rows exceed the int32 offsets", fn,
                       (long long)batch * max_seq);
    ft_padding_offsets_kernel<<<batch, 256, 0, stream>>>(lengths, batch, max_seq, seq_offsets, token_offsets);
    return ft_launch_status(fn);
}

#endif /* FT_PADDING_CUH */
