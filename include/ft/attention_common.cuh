/* ftkernels: what every decoder-attention variant shares — argument structs, cache
 * layouts, rotary styles, the split-KV plan and its workspace, host-side checks.
 *
 * The kernels themselves are generated per head size, dtype and copy width
 * (ft/attention_h<D>_<dtype>.cuh); ft/attention.cuh dispatches among them at run time. */
#ifndef FT_ATTENTION_COMMON_CUH
#define FT_ATTENTION_COMMON_CUH

#include <math.h>
#include <string.h>
#include <cooperative_groups.h>

#include "ft/common.cuh"
#include "ft/reduce.cuh"

/* Splits of one (sequence, head) the automatic plan may choose; forced splits may not
 * exceed it either (the combine step merges at most this many partials). */
#define FT_ATTN_MAX_SPLITS 64

/* Splits the sm_90 kernel merges inside a thread-block cluster (no workspace needed). */
#define FT_ATTN_CLUSTER_SPLITS 8

/* Which kernel streams the cache. AUTO: the sm_90 one where the device and the variant
 * have it (compute capability 9.0+, 16-byte copies: every shipped variant) and the cache
 * layout keeps a sequence's steps contiguous (FT_KV_BHLD), else the register one.
 * REGISTER: loads into registers, any device. ASYNC: bulk asynchronous copies into shared
 * memory, any layout (FT_ERR_UNSUPPORTED where unavailable). The ASYNC kernels are launched
 * as programmatic dependents: they may start while the kernel before them in the stream
 * ends (their set-up, an L2 prefetch of their first tile) and touch none of their inputs
 * or outputs before it has finished, so no ordering changes for the caller. */
typedef enum ft_attn_impl {
    FT_ATTN_IMPL_AUTO = 0,
    FT_ATTN_IMPL_REGISTER = 1,
    FT_ATTN_IMPL_ASYNC = 2
} ft_attn_impl;

/* One decoding step of masked self-attention for a batch. Pointers are device memory of
 * the launcher's dtype unless said otherwise; D is the variant's head size. */
typedef struct ft_self_attention_args {
    int batch;        /* B */
    int num_heads;    /* H, query heads */
    int num_kv_heads; /* Hkv; H % Hkv == 0 (Hkv == H: multi-head, 1: multi-query) */
    int max_len;      /* Lmax: the cache's capacity in steps */
    int max_seq_len;  /* host-side bound on lengths[b] + 1 used to plan split-KV (0: max_len);
                         a longer sequence is still handled correctly, only less evenly */
    const void *q;    /* [B, H*D]   this step's query */
    const void *k;    /* [B, Hkv*D] this step's key, appended to the cache */
    const void *v;    /* [B, Hkv*D] this step's value, appended to the cache */
    const void *q_bias, *k_bias, *v_bias; /* [H*D], [Hkv*D], [Hkv*D], or NULL */
    void *k_cache, *v_cache;              /* see layout */
    ft_kv_layout layout;                  /* FT_KV_BHLD or FT_KV_LBHD */
    const int *lengths; /* [B] int32, device: steps already cached. This step's k, v are
                           written at position lengths[b] and attention covers
                           lengths[b] + 1 steps. lengths[b] < 0 marks an empty slot (out
                           is zero, the cache untouched); lengths[b] >= max_len cannot be
                           appended (out is NaN, the cache untouched). */
    void *out;          /* [B, H*D] */
    float scale;        /* softmax scale; 0 means 1/sqrt(D) */
    ft_rope rope;
    int rotary_dim;     /* even, <= D; 0 means D (ignored without rope) */
    float rotary_base;  /* 0 means 10000 */
    int splits;         /* split-KV: 0 automatic, 1 off, n > 1 forced */
    void *workspace;    /* for splits > 1: ft_attention_workspace_bytes(B, H, D, splits) */
    size_t workspace_bytes;
    /* Optional (NULL: none), see FT_ATTN_SPLIT_COUNTERS below: device memory of at least
       ft_attention_split_counter_bytes(B, H) bytes, zeroed once by the caller. */
    unsigned int *split_counters;
    size_t split_counters_bytes;
    ft_attn_impl impl;  /* 0 (automatic) unless comparing the kernels */
    /* Beam search without moving the cache (instead of ft_kv_cache_reorder): a cache
       indirection table [B, max_len] int32 on the device, or NULL. Row b reads cached
       step t < lengths[b] from the row of beam cache_indirection[b * max_len + t] of its
       own item (rows b - b % beam_width ..), its new token from its own row, and appends
       to its own row. The beams of one item must be at the same step (rows a table
       names are not written below lengths[b] in this call); ft_cache_indirection_update
       keeps the table as beams are chosen. Entries are clamped to [0, beam_width). */
    const int *cache_indirection;
    int beam_width; /* rows per item (B % beam_width == 0) when cache_indirection is set */
} ft_self_attention_args;

/* Decoder cross-attention of one query per sequence against encoder memory K/V, whose
 * bias is added once beforehand by ft_add_memory_bias_h<D>_<dtype>. */
typedef struct ft_cross_attention_args {
    int batch, num_heads, num_kv_heads;
    int mem_len;                /* Lmem: capacity of the memory in steps */
    int max_mem_seq_len;        /* host-side bound on mem_lengths[b] for planning (0: mem_len) */
    const void *q;              /* [B, H*D] */
    const void *q_bias;         /* [H*D] or NULL */
    const void *k_mem, *v_mem;  /* see layout */
    ft_kv_layout layout;        /* FT_KV_BLHD ([B, Lmem, Hkv*D]) or FT_KV_BHLD */
    const int *mem_lengths;     /* [B] int32, device: valid memory steps; <= 0 gives zeros,
                                   > mem_len gives NaN */
    void *out;                  /* [B, H*D] */
    float scale;                /* 0 means 1/sqrt(D) */
    int splits;                 /* 0 automatic, 1 off, n > 1 forced */
    void *workspace;
    size_t workspace_bytes;
    unsigned int *split_counters; /* as for self-attention */
    size_t split_counters_bytes;
    ft_attn_impl impl;          /* as for self-attention */
} ft_cross_attention_args;

/* Self-attention over whole sequences packed without padding, one launch for a batch: a
 * BERT encoder layer's attention with padding removed (seed 003 section 3) or a prompt's
 * prefill (causal). Replaces the padded pipeline's bias + transpose, Q.K^T, masked softmax,
 * P.V and transpose back: it reads the fused projection's rows as they come out of the
 * GEMM and writes context rows ready for the output projection. fp16 and bf16 with head
 * sizes that are multiples of 16 up to 128 (tensor cores, compute capability 8.0+);
 * ft_has_packed_attention(dtype, D) says whether a variant has it. */
typedef struct ft_packed_attention_args {
    int batch;             /* B */
    int num_heads;         /* H */
    int num_kv_heads;      /* Hkv; H % Hkv == 0 */
    int max_seq_len;       /* host-side bound on any sequence's length, sizes the grid (0: not
                              known, the grid is sized for 4096); a longer sequence is still
                              computed in full, its blocks looping over the extra rows */
    const int *seq_offsets; /* [B + 1] int32, device, non-decreasing from 0: sequence b is rows
                               seq_offsets[b] .. seq_offsets[b+1]-1 (ft_padding_offsets) */
    const void *qkv;       /* [M, (H + 2 Hkv) * D], M = seq_offsets[B]: each row holds the
                              query heads, then the key heads, then the value heads */
    const void *qkv_bias;  /* [(H + 2 Hkv) * D] or NULL, added to every row first */
    void *out;             /* [M, H * D]: each row the heads' contexts side by side */
    float scale;           /* softmax scale; 0 means 1/sqrt(D) */
    int causal;            /* nonzero: row i of a sequence attends to its rows 0..i only */
    ft_attn_impl impl;     /* 0 (automatic) unless comparing the kernels: AUTO takes the
                              warpgroup (wgmma) kernel where it exists (head sizes 64 and 128,
                              code built for sm_90a on an sm_90 device), else the mma.sync one;
                              REGISTER forces the mma.sync kernel, ASYNC the wgmma one
                              (FT_ERR_UNSUPPORTED where it does not exist) */
    unsigned int *tile_counters; /* NULL, or 2 unsigned ints of device memory the caller zeroed
                              once (cudaMemset after allocating them): the warpgroup kernel at
                              head size 128 then runs as a persistent grid whose blocks take
                              query tiles off the first counter, and every call leaves both
                              zeroed again. Calls that may run at the same time (other streams)
                              need counters of their own. Without them that head size runs
                              the grid of one block a tile. */
} ft_packed_attention_args;

/* The packed kernels' online softmax keeps a row's reference (the max it subtracts) until a
 * key tile's max passes it by more than this, in the exp2 domain: weights stay <= 2^8 (P
 * in fp16 and the fp32 sums have room), and the output's rescale, otherwise due at every
 * tile that raises a row's max, is skipped wherever a warp's rows all keep theirs. The
 * result does not depend on the reference (the sums divide it out). */
#define FT_ATTN_PK_SLACK 8.0f

/* Device-memory bytes the split-KV partials need: per split, per (sequence, head), D
 * floats of unnormalised output plus the running max and sum. */
static inline size_t ft_attention_workspace_bytes(int batch, int num_heads, int head_size, int splits)
{
    if (batch <= 0 || num_heads <= 0 || head_size <= 0 || splits <= 1)
        return 0;
    return (size_t)splits * (size_t)batch * (size_t)num_heads * ((size_t)head_size + 2) * sizeof(float);
}

/* FT_ATTN_SPLIT_COUNTERS. Splits that do not merge inside a thread-block cluster write
 * their partials to the workspace, and a second kernel merges them, unless the call has
 * split counters: one unsigned int per (sequence, head) that the caller zeroed once
 * (cudaMemset after allocating them). Then each block of a (sequence, head group) counts
 * itself in when its partial is written, and the one that arrives last merges the
 * partials and writes the output, in the same kernel, and sets the counter back to zero:
 * every call leaves the counters zeroed, so they are zeroed only once. The sm_90 kernels
 * use them where the split grid runs in one wave (what the automatic plan chooses for small
 * batches); over several waves the combine kernel is faster and is used. They hold nothing
 * between calls (any shape may follow any other), but calls that may run at the same time
 * (other streams) need counters of their own, as they need workspaces of their own. */
static inline size_t ft_attention_split_counter_bytes(int batch, int num_heads)
{
    if (batch <= 0 || num_heads <= 0)
        return 0;
    return (size_t)batch * (size_t)num_heads * sizeof(unsigned int);
}

/* ---------------------------------------------------------------- host-side plan */

/* What every launcher of the family resolves before launching. */
typedef struct ft_attn_plan {
    int B, H, Hkv, G;   /* G = H / Hkv query heads per key/value head */
    int L;              /* capacity */
    int max_seq;        /* planning bound on steps per sequence */
    int gq;             /* query heads per block (a generated kernel) */
    int passes;         /* blocks per key/value head: ceil(G / gq) */
    int splits;
    int chunk;          /* steps per split */
    int async;          /* the sm_90 shared-memory kernel */
    int cmerge;         /* its splits merge inside a cluster (2..FT_ATTN_CLUSTER_SPLITS splits) */
    int lmerge;         /* its splits merge in the block that ends last (split counters) */
    int wide;           /* the sm_90 kernel's form: 1-4 heads a block, 0 bulk copies, 1 tensor-map
                           boxes (a strided cache), 2 and 3 those for short rows (one head, three
                           blocks an SM), 4 ap (one head: 0 as a persistent grid); a tensor-core
                           head group, 0 r4, 1 r8 (larger copies), 2 tm (tensor maps), then where
                           generated ts (tm for short rows, two blocks an SM: D128), t3 (two
                           stages, three blocks an SM) and tp (t3 as a persistent grid): 3 ts,
                           4 t3, 5 tp at D128, 3 t3, 4 tp at D64 */
    int tiled;          /* that form reads the cache through tensor maps (the launcher encodes them) */
    int solo;           /* launched with FT_ATTN_SOLO_SMEM of shared memory: one block an SM */
    int grid;           /* blocks of a persistent sm_90 launch (tp, ap: fewer than the row
                           blocks, each taking every grid-th); 0: a block per row block and split */
    float qk_scale;     /* scale * log2(e): logits live in the exp2 domain */
} ft_attn_plan;

/* Shared memory a launch asks for so that no second block shares an SM with one of its
 * blocks (half of an sm_90 multiprocessor's 228 KB). A head-group kernel on CUDA cores
 * (two blocks an SM) launched in one wave asks for it: otherwise the blocks of the next
 * call, launched as programmatic dependents, take the second slot of the SMs at once and
 * wait there, holding the running call back (H100, ftbench device us, padded / not: fp16
 * B1 H32 Hkv8 D256 L4096 21.9 / 30.6, fp32 B1 H16 Hkv4 D192 L8192 26.5 / 33.5; splits
 * merged in clusters, fp16 B8 H32 Hkv8 D256 L4096, 96.8 / 125.1). */
#define FT_ATTN_SOLO_SMEM (114 * 1024)

/* Dynamic shared memory asked for by a launch of a kernel that uses `smem`: FT_ATTN_SOLO_SMEM
 * where `solo` and it is more. */
static inline int ft_attn_launch_smem(int solo, int smem)
{
    return solo && smem < FT_ATTN_SOLO_SMEM ? FT_ATTN_SOLO_SMEM : smem;
}

static inline ft_status ft_attn_check_impl(const char *fn, ft_attn_impl impl)
{
    if (impl != FT_ATTN_IMPL_AUTO && impl != FT_ATTN_IMPL_REGISTER && impl != FT_ATTN_IMPL_ASYNC)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: impl must be FT_ATTN_IMPL_AUTO, _REGISTER or _ASYNC, got %d", fn,
                       (int)impl);
    return FT_OK;
}

/* Shape checks shared by self- and cross-attention. */
static inline ft_status ft_attn_check_shape(const char *fn, int B, int H, int Hkv, int L, int D,
                                            ft_attn_plan *p)
{
    if (B <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch must be positive, got %d", fn, B);
    if (H <= 0 || Hkv <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: num_heads (%d) and num_kv_heads (%d) must be positive", fn,
                       H, Hkv);
    if (H % Hkv != 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: num_heads %d is not a multiple of num_kv_heads %d", fn, H,
                       Hkv);
    if (L <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: cache capacity must be positive, got %d", fn, L);
    if ((int64_t)B * Hkv * (int64_t)L * D > ((int64_t)1 << 46))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: cache of %d x %d x %d x %d elements is implausibly large", fn,
                       B, Hkv, L, D);
    p->B = B;
    p->H = H;
    p->Hkv = Hkv;
    p->G = H / Hkv;
    p->L = L;
    return FT_OK;
}

/* The checks of a split request, which need no device: launchers run them before they
 * query it, and ft_attn_plan_splits relies on them (and on p->max_seq set here). */
static inline ft_status ft_attn_check_splits(const char *fn, ft_attn_plan *p, int requested, int max_seq, int D,
                                             size_t ws_bytes, const void *ws)
{
    if (max_seq < 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: the sequence-length bound must not be negative, got %d", fn,
                       max_seq);
    p->max_seq = max_seq == 0 || max_seq > p->L ? p->L : max_seq;
    if (requested < 0 || requested > FT_ATTN_MAX_SPLITS)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: splits must be 0 (automatic) .. %d, got %d", fn,
                       FT_ATTN_MAX_SPLITS, requested);
    if (requested > 1) {
        const size_t need = ft_attention_workspace_bytes(p->B, p->H, D, requested);
        if (ws == NULL || ws_bytes < need)
            return ft_fail(FT_ERR_INVALID_ARGUMENT,
                           "%s: %d splits need a workspace of %zu bytes (ft_attention_workspace_bytes), got %zu%s",
                           fn, requested, need, ws_bytes, ws == NULL ? " (NULL)" : "");
    }
    /* also where the splits are automatic: the kernels write the partials as 16-byte words */
    if (ws != NULL && !ft_aligned(ws, 16))
        return ft_fail(FT_ERR_MISALIGNED, "%s: workspace must be 16-byte aligned", fn);
    return FT_OK;
}

/* The split counters of a call, if any (FT_ATTN_SPLIT_COUNTERS), checked before the device
 * is asked anything. */
static inline ft_status ft_attn_check_counters(const char *fn, const ft_attn_plan *p, const unsigned int *counters,
                                               size_t bytes)
{
    if (counters == NULL)
        return FT_OK;
    const size_t need = ft_attention_split_counter_bytes(p->B, p->H);
    if (bytes < need)
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: split_counters of %zu bytes, %zu needed (ft_attention_split_counter_bytes)", fn, bytes,
                       need);
    if (!ft_aligned(counters, 4))
        return ft_fail(FT_ERR_MISALIGNED, "%s: split_counters must be 4-byte aligned", fn);
    return FT_OK;
}

/* Chooses the number of KV splits. Automatic, register kernel (slots == 0): none once
 * the unsplit grid has a block for every multiprocessor (splitting B8 H32 L4096 into 3 was
 * 9% slower on the H100); otherwise about four blocks per multiprocessor (B1 H32 L4096: 16
 * splits 38.9 us, 9 splits 44.3 us, 32 splits 45.9 us). Shared-memory kernel (slots: the
 * blocks the whole device holds at once): as many splits as fill those slots in one wave,
 * since its blocks stream at the same rate and a second, partial wave is a tail. Either
 * way each split has at least 256 steps, and splits past `free_splits` (those merged
 * without a workspace) only as many as the workspace holds. Runs after
 * ft_attn_check_splits accepted `requested` and set p->max_seq. */
static inline ft_status ft_attn_plan_splits(const char *fn, ft_attn_plan *p, int requested, int blocks_per_split,
                                            int D, int slots, int free_splits, size_t ws_bytes, const void *ws)
{
    int splits = requested;
    if (requested == 0) {
        if (slots > 0) {
            splits = blocks_per_split >= slots ? 1 : slots / blocks_per_split;
        } else {
            int sms = 0;
            const ft_status st = ft_sm_count(fn, &sms);
            if (st != FT_OK)
                return st;
            splits = blocks_per_split >= sms ? 1 : (4 * sms + blocks_per_split - 1) / blocks_per_split;
        }
        const int by_len = (p->max_seq + 255) / 256;
        if (splits > by_len)
            splits = by_len;
        if (splits > FT_ATTN_MAX_SPLITS)
            splits = FT_ATTN_MAX_SPLITS;
        while (splits > free_splits && (ws == NULL || ft_attention_workspace_bytes(p->B, p->H, D, splits) > ws_bytes))
            splits--;
        if (splits < 1)
            splits = 1;
    }
    p->splits = splits;
    p->chunk = (p->max_seq + splits - 1) / splits;
    if (p->chunk < 1)
        p->chunk = 1;
    return FT_OK;
}

/* Bytes a multiprocessor of the H100 streams in the time that the workspace path of split-KV
 * (partials written, a second kernel launched to merge them) costs over the cluster merge:
 * about 3 us at the 1.35 us per 32 KB that one block's tiles take when the whole grid runs
 * in one wave (fp16, B1-B8 H32 Hkv1/8 D64 L4096, 8 splits against 16). */
#define FT_ATTN_COMBINE_BYTES (72 * 1024)

/* For the tensor-map head-group form, split (16-bit, D128 and less): an automatic split count
 * past FT_ATTN_CLUSTER_SPLITS needs the workspace and the combine kernel. When all blocks run
 * in one wave, a block's time is the latency of its own tiles, so those extra splits pay only
 * if they take more than FT_ATTN_COMBINE_BYTES off the busiest multiprocessor's share (the
 * blocks spread over `sms`, `step_bytes` of K and V per step); otherwise
 * FT_ATTN_CLUSTER_SPLITS, merged in clusters. H100, fp16, device us, 8 splits against the 16
 * chosen before: MQA B8 H32 D64 L4096 12.9 / 14.7, B1 9.2 / 10.4, L8192 16.5 / 17.6, B1 H32
 * Hkv8 9.7 / 10.6. The r4 form, which takes the split rows of larger heads, does not gain so
 * (D128 MQA B1: 17.6 / 13.7, when r4 took D128's), and keeps the split count of
 * ft_attn_plan_splits. */
static inline void ft_attn_prefer_cluster_splits(ft_attn_plan *p, int64_t blocks_per_split, int sms, int step_bytes)
{
    const int few = FT_ATTN_CLUSTER_SPLITS;
    if (p->splits <= few || sms <= 0)
        return;
    const int few_chunk = (p->max_seq + few - 1) / few;
    const int64_t few_steps = (blocks_per_split * few + sms - 1) / sms * few_chunk;
    const int64_t many_steps = (blocks_per_split * p->splits + sms - 1) / sms * p->chunk;
    if ((few_steps - many_steps) * step_bytes <= FT_ATTN_COMBINE_BYTES) {
        p->splits = few;
        p->chunk = few_chunk;
    }
}

static inline ft_status ft_attn_check_scale(const char *fn, float scale, int D, ft_attn_plan *p)
{
    if (!(scale >= 0.0f && scale <= 3.0e38f))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: scale must be finite and >= 0 (0: 1/sqrt(D)), got %g", fn,
                       (double)scale);
    const float s = scale == 0.0f ? 1.0f / sqrtf((float)D) : scale;
    p->qk_scale = s * 1.4426950408889634f; /* log2(e) */
    return FT_OK;
}

/* ---------------------------------------------------------------- device helpers */

/* First element of (sequence b, kv head h) and the distance between its steps. */
static __host__ __device__ __forceinline__ void ft_kv_base(int layout, int b, int h, int B, int Hkv, int L, int D,
                                                           int64_t *base, int64_t *stride)
{
    if (layout == FT_KV_BHLD) {
        *base = ((int64_t)b * Hkv + h) * L * D;
        *stride = D;
    } else if (layout == FT_KV_LBHD) {
        *base = ((int64_t)b * Hkv + h) * D;
        *stride = (int64_t)B * Hkv * D;
    } else { /* FT_KV_BLHD */
        *base = (int64_t)b * L * Hkv * D + (int64_t)h * D;
        *stride = (int64_t)Hkv * D;
    }
}

/* The sm_90 kernels' tensor-map view of a cache: `rows` rows of `cols` elements, one step
 * of every sequence and head a row or part of one: [B * Hkv * L, D] for FT_KV_BHLD, [L,
 * B * Hkv * D] for FT_KV_LBHD, [B * L, Hkv * D] for FT_KV_BLHD. */
static inline void ft_attn_tensor_view(int layout, int B, int Hkv, int L, int D, int64_t *rows, int64_t *cols)
{
    int64_t base, stride;
    ft_kv_base(layout, 0, 0, B, Hkv, L, D, &base, &stride);
    *cols = stride;
    *rows = (int64_t)B * Hkv * L * D / stride;
}

/* Where step 0 of (sequence b, head h) lies in that view: row *y, from column *x (the
 * launcher checked both fit an int). */
static __host__ __device__ __forceinline__ void ft_attn_tensor_origin(int layout, int b, int h, int Hkv, int L, int D,
                                                                      int *x, int *y)
{
    if (layout == FT_KV_BHLD) {
        *x = 0;
        *y = (b * Hkv + h) * L;
    } else if (layout == FT_KV_LBHD) {
        *x = (b * Hkv + h) * D;
        *y = 0;
    } else { /* FT_KV_BLHD */
        *x = h * D;
        *y = b * L;
    }
}

/* Elements between the same step of consecutive sequences (cache indirection): where
 * sequence 1 starts. */
static inline int64_t ft_kv_seq_stride(int layout, int Hkv, int L, int D)
{
    int64_t base, stride;
    ft_kv_base(layout, 1, 0, 2, Hkv, L, D, &base, &stride);
    return base;
}

/* Rotates element d of a head vector in smem `x` (float[D], already biased) at position
 * pos; returns the new value of x[d]. Reads only x, so all d can be computed before any
 * is written back. */
static __device__ __forceinline__ float ft_rope_elem(const float *x, int d, int pos, int style, int rd,
                                                     float log2_base)
{
    if (style == FT_ROPE_NONE || d >= rd)
        return x[d];
    int i, partner;
    float sign;
    if (style == FT_ROPE_INTERLEAVED) {
        i = d >> 1;
        partner = d ^ 1;
        sign = (d & 1) ? 1.0f : -1.0f;
    } else {
        const int half = rd >> 1;
        i = d < half ? d : d - half;
        partner = d < half ? d + half : d - half;
        sign = d < half ? -1.0f : 1.0f;
    }
    float s, c;
    ft_rope_sincos(i, pos, rd, log2_base, &s, &c);
    return x[d] * c + sign * x[partner] * s;
}

/* Rotates pair j (j < rd / 2) of a head vector in smem `x` in place, as ft_rope_elem rotates
 * each of its two elements, and scales both by `scale`: one thread a pair, so no other
 * thread may read those two elements meanwhile; one sincos for the two. */
static __device__ __forceinline__ void ft_rope_pair(float *x, int j, int pos, int style, int rd, float log2_base,
                                                    float scale)
{
    const int d0 = style == FT_ROPE_INTERLEAVED ? 2 * j : j, d1 = style == FT_ROPE_INTERLEAVED ? 2 * j + 1 : j + (rd >> 1);
    float s, c;
    ft_rope_sincos(j, pos, rd, log2_base, &s, &c);
    const float x0 = x[d0], x1 = x[d1];
    x[d0] = (x0 * c + -1.0f * x1 * s) * scale;
    x[d1] = (x1 * c + 1.0f * x0 * s) * scale;
}

/* ---------------------------------------------------------------- tensor-core pieces */

/* Four 8x8 matrices of 16-bit elements from shared memory: lane l gives the address of
 * row l % 8 of matrix l / 8 (16 contiguous bytes); r[i] receives the fragment of matrix
 * i (lane l holds row l / 4, columns 2 (l % 4) and +1). The .trans form hands out the
 * transpose (lane l: rows 2 (l % 4) and +1 of column l / 4). sm_80+ only (the packed
 * attention launcher checks). */
static __device__ __forceinline__ void ft_ldsm_x4(unsigned *r, const void *row)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ft_smem_addr(row)));
#endif
}

static __device__ __forceinline__ void ft_ldsm_x4_trans(unsigned *r, const void *row)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ft_smem_addr(row)));
#endif
}

/* c[16x8] += a[16x16] b[16x8], fp32 accumulators (row-major A fragments, column-major B). */
static __device__ __forceinline__ void ft_mma_fp16(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

static __device__ __forceinline__ void ft_mma_bf16(float *c, const unsigned *a, unsigned b0, unsigned b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* The 8x8 matrix of 16-bit elements whose fragment (row lane / 4, columns 2 (lane % 4) and
 * + 1) the warp holds in x, transposed: the same fragment of its transpose. */
static __device__ __forceinline__ unsigned ft_movmatrix_trans(unsigned x)
{
    unsigned y = x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
#endif
    return y;
}

/* 16 bytes from global to shared memory without passing through registers (sm_80
 * cp.async, cached in L2 only); `bytes` 0 writes 16 zero bytes and reads nothing (src must
 * still be a valid address). Completion: ft_cp_async_commit() closes a group,
 * ft_cp_async_wait1() waits until at most the newest group is pending; the data is then
 * visible to the issuing thread (a barrier for the others). */
static __device__ __forceinline__ void ft_cp_async16(void *dst, const void *src, int bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(ft_smem_addr(dst)), "l"(src), "r"(bytes)
                 : "memory");
#endif
}

static __device__ __forceinline__ void ft_cp_async_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_cp_async_wait1(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;" ::: "memory");
#endif
}

/* ---------------------------------------------------------------- sm_90a warpgroup mma */

/* wgmma, in code built for sm_90a only (FT_WGMMA; launchers ask ft_code_sm90a): one
 * warpgroup (4 warps, 128 threads) multiplies a 64-row A by a B from shared memory into fp32
 * accumulators held across its threads as the m16n8 fragments of mma.sync, repeated: thread
 * t (warp w, lane l) holds rows 16 w + l / 4 and + 8, and in d[4 j .. 4 j + 3] columns
 * 8 j + 2 (l % 4) and + 1 of them (d[4 j], d[4 j + 1] the first row, d[4 j + 2],
 * d[4 j + 3] the second). An A from registers (the _rs forms) is that fragment of 16
 * columns packed two elements a word: {d[0], d[1]}, {d[2], d[3]}, {d[4], d[5]},
 * {d[6], d[7]} of an m64n16 accumulator. Shared-memory operands are described by
 * ft_wg_desc. `acc` 0 overwrites d instead of adding to it. The calls are asynchronous:
 * ft_wg_fence() before the first of a batch (and after any other write to their
 * registers), ft_wg_commit() closes a group, ft_wg_wait0/1() wait until at most 0/1 groups
 * are pending; only then may d (or an A's registers) be touched, after ft_wg_keep() tells
 * the compiler so. Shared memory written by ordinary stores or cp.async reaches them after
 * ft_fence_async_smem() by the writers and a barrier. */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FT_WGMMA 1
#else
#define FT_WGMMA 0
#endif

static __device__ __forceinline__ unsigned long long ft_wg_desc(const void *smem, unsigned lbo, unsigned sbo)
{
    /* 128-byte swizzle (rows of 128 bytes in atoms of 8 rows, 16-byte chunk c of row r at
     * chunk c ^ (r % 8), atoms 1024-byte aligned); addresses and offsets in 16-byte units */
    return (unsigned long long)((ft_smem_addr(smem) & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
           ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}

static __device__ __forceinline__ void ft_wg_fence(void)
{
#if FT_WGMMA
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_wg_commit(void)
{
#if FT_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_wg_wait0(void)
{
#if FT_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_wg_wait1(void)
{
#if FT_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
#endif
}

/* n accumulators the compiler must not read or write across this point (after a wait) */
static __device__ __forceinline__ void ft_wg_keep(float *d, int n)
{
#pragma unroll
    for (int i = 0; i < n; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* ft_wg_after(x): a branch on x (>= 0 or NaN: never taken) that ends the basic block, so
 * that an ft_wg_wait* after it stays after the code computing x. ptxas places a wgmma
 * wait first in its basic block, wherever the source has it: the softmax that should run
 * while a P V product is in flight would otherwise run after that product's wait. */
static __device__ __forceinline__ void ft_wg_after(float x)
{
#if FT_WGMMA
    if (x < 0.0f)
        asm volatile("nanosleep.u32 1;");
#endif
}

/* setmaxnreg (sm_90a): a warpgroup gives back registers to the block's pool (DEC) or takes
 * them (INC) up to N a thread, N a multiple of 8 in [24, 256]; every thread of the
 * warpgroup executes it. Warp-specialised kernels launch at the count their launch bounds
 * allow, then let the producer's warpgroup drop to few and the consumers' rise. */
#if FT_WGMMA
#define ft_wg_regs_dec(N) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N))
#define ft_wg_regs_inc(N) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N))
#else
#define ft_wg_regs_dec(N) ((void)0)
#define ft_wg_regs_inc(N) ((void)0)
#endif

/* generic-proxy writes to shared memory (st.shared, cp.async) made visible to the async
 * proxy that wgmma reads through */
static __device__ __forceinline__ void ft_fence_async_smem(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

#define FT_WG_D8(d, i)                                                                                   \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define FT_WG_D32(d) FT_WG_D8(d, 0), FT_WG_D8(d, 8), FT_WG_D8(d, 16), FT_WG_D8(d, 24)
#define FT_WG_D64(d) FT_WG_D32(d), FT_WG_D8(d, 32), FT_WG_D8(d, 40), FT_WG_D8(d, 48), FT_WG_D8(d, 56)

/* The wgmma forms the kernels use, for each 16-bit type (DT fp16 or bf16, PTX its type in
 * PTX), fp32 accumulators:
 *   ft_wg_rs_m64n64k16_DT(d, a, db, acc)     d[64x64] (+)= A[64x16] B[16x64], A in
 *                                             registers a[4], B MN-major in shared memory
 *   ft_wg_rs_m64n128k16_DT(d, a, db, acc)    the same for d[64x128]
 *   ft_wg_rsk_m64n64k16_DT(d, a, db, acc)    d[64x64] (+)= A[64x16] B[64x16]^T, A in
 *                                             registers a[4], B K-major in shared memory */
#define FT_WG_REGS32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FT_WG_REGS64 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#if FT_WGMMA
#define FT_WG_ASM(...) asm volatile(__VA_ARGS__)
#else
#define FT_WG_ASM(...) ((void)0)
#endif
/* one register-A form: NAME_DT, SHAPE m64nNk16 with REGS / DOUT its N/2 accumulators, A the
 * operand list of a and db after them, P the number of acc's operand, TB 1 for an MN-major B */
#define FT_WG_RS_FORM(NAME, DT, PTX, SHAPE, REGS, DOUT, A, P, TB)                                      \
    static __device__ __forceinline__ void NAME##_##DT(float *d, const unsigned *a, unsigned long long db, \
                                                       int acc)                                          \
    {                                                                                                    \
        FT_WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %" P ", 0;\n"                                       \
                  "wgmma.mma_async.sync.aligned." SHAPE ".f32." PTX "." PTX " " REGS ", " A ", p, 1, 1, " TB \
                  ";\n}\n"                                                                               \
                  : DOUT(d)                                                                              \
                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));                      \
    }
#define FT_WG_DEFINE(DT, PTX)                                                                                 \
    FT_WG_RS_FORM(ft_wg_rs_m64n64k16, DT, PTX, "m64n64k16", FT_WG_REGS32, FT_WG_D32, "{%32, %33, %34, %35}, %36", \
                  "37", "1")                                                                                  \
    FT_WG_RS_FORM(ft_wg_rsk_m64n64k16, DT, PTX, "m64n64k16", FT_WG_REGS32, FT_WG_D32,                        \
                  "{%32, %33, %34, %35}, %36", "37", "0")                                                     \
    FT_WG_RS_FORM(ft_wg_rs_m64n128k16, DT, PTX, "m64n128k16", FT_WG_REGS64, FT_WG_D64,                       \
                  "{%64, %65, %66, %67}, %68", "69", "1")

FT_WG_DEFINE(fp16, "f16")
FT_WG_DEFINE(bf16, "bf16")

/* Packed attention's wgmma kernels (ft_attn_pw_*), every variant alike.
 * ft_attn_pw_kb: the first row of tile j (64 rows) of a sequence of len rows, as the tile
 * is copied: 64 j, or for a tile that would reach past the sequence's end (its last),
 * len - 64, so that its rows end with the sequence's (negative when len < 64: rows before
 * the tensor's first arrive as zeros). A key tile moved back has its keys before 64 j
 * counted with the tile before, and masks them. A copy thus never names a row past the
 * sequence's end, whatever the tensor holds there. */
static __device__ __forceinline__ int ft_attn_pw_kb(int j, int len)
{
    return min(j * 64, len - 64);
}

/* ft_attn_pw_landed: waits for the copy into stage j % 3 (of three), on that stage's
 * mbarrier at the phase in bit j % 3 of *ph, and flips the bit. */
static __device__ __forceinline__ void ft_attn_pw_landed(unsigned long long *bar, unsigned *ph, int j)
{
    const int st = j % 3;
    ft_mbar_wait(bar + st, (*ph >> st) & 1u);
    *ph ^= 1u << st;
}

/* ft_attn_pf_advance: the next of n stages in a ring, and the phase bit that flips when the
 * ring wraps (the persistent kernels ft_attn_pf_*). */
static __device__ __forceinline__ void ft_attn_pf_advance(unsigned *st, unsigned *ph, unsigned n)
{
    if (++*st == n) {
        *st = 0;
        *ph ^= 1u;
    }
}

/* A unit of the persistent kernels: query tile t (128 rows) of head h of sequence b, which
 * is rows row0 .. row0 + len - 1. */
typedef struct ft_attn_pf_unit {
    int b, t, h, row0, len;
} ft_attn_pf_unit;

/* Draws the next unit off the counter into x (0: none left). Units run through the
 * sequences in turn, each sequence's longest query tiles first, heads fastest; *b and
 * *base (sequence *b's first unit) carry the scan from one draw to the next of a thread,
 * whose draws only grow. */
static __device__ __forceinline__ int ft_attn_pf_draw(unsigned *ctr, const int *offsets, int B, int H, int *b,
                                                      int *base, ft_attn_pf_unit *x)
{
    const int u = (int)atomicAdd(ctr, 1u);
    while (*b < B) {
        const int row0 = offsets[*b], len = offsets[*b + 1] - row0, nq = (len + 127) >> 7;
        if (u < *base + H * nq) {
            const int r = u - *base;
            x->b = *b;
            x->t = nq - 1 - r / H;
            x->h = r % H;
            x->row0 = row0;
            x->len = len;
            return 1;
        }
        *base += H * nq;
        ++*b;
    }
    return 0;
}

/* Host-side checks of ft_packed_attention_args shared by every variant; fills the grid's
 * query-tile count and the exp2-domain scale. */
static inline ft_status ft_attn_check_packed(const char *fn, const ft_packed_attention_args *a, int D, int qtile,
                                             int *tiles, float *qk_scale)
{
    if (a == NULL)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (a->batch <= 0 || a->batch > 65535)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch must be in [1, 65535], got %d", fn, a->batch);
    if (a->num_heads <= 0 || a->num_kv_heads <= 0 || a->num_heads > 65535)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: num_heads (%d, at most 65535) and num_kv_heads (%d) must be positive",
                       fn, a->num_heads, a->num_kv_heads);
    if (a->num_heads % a->num_kv_heads != 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: num_heads %d is not a multiple of num_kv_heads %d", fn,
                       a->num_heads, a->num_kv_heads);
    if ((int64_t)(a->num_heads + 2 * a->num_kv_heads) * D > (int64_t)1 << 30)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: rows of (%d + 2 x %d) heads of %d are too wide", fn, a->num_heads,
                       a->num_kv_heads, D);
    if (a->max_seq_len < 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: max_seq_len must be >= 0 (0: no bound known), got %d", fn,
                       a->max_seq_len);
    ft_status st;
    if ((st = ft_attn_check_impl(fn, a->impl)) != FT_OK)
        return st;
    if ((st = ft_check_ptr(fn, "seq_offsets", a->seq_offsets, 4)) != FT_OK ||
        (st = ft_check_ptr(fn, "qkv", a->qkv, 16)) != FT_OK || (st = ft_check_ptr(fn, "out", a->out, 16)) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "qkv_bias", a->qkv_bias, 16)) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "tile_counters", a->tile_counters, 4)) != FT_OK)
        return st;
    ft_attn_plan p;
    if ((st = ft_attn_check_scale(fn, a->scale, D, &p)) != FT_OK)
        return st;
    *qk_scale = p.qk_scale;
    int major = 0;
    if ((st = ft_cc_major(fn, &major)) != FT_OK)
        return st;
    if (major < 8)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: needs compute capability 8.0 or newer (tensor-core mma), device has %d.x",
                       fn, major);
    int arch = 0;
    if ((st = ft_code_arch(fn, &arch)) != FT_OK)
        return st;
    if (arch < 80)
        return ft_fail(FT_ERR_UNSUPPORTED,
                       "%s: needs code built for sm_80 or newer (tensor-core mma); this code runs as compute_%d", fn,
                       arch);
    /* no bound known (0): plan for 4096 rows; blocks loop (grid-stride) over any rows past
     * the grid, which is capped at 1024 query tiles */
    const int bound = a->max_seq_len > 0 ? a->max_seq_len : 4096;
    int t = (bound + qtile - 1) / qtile;
    *tiles = t < 1 ? 1 : t > 1024 ? 1024 : t;
    return FT_OK;
}

#endif /* FT_ATTENTION_COMMON_CUH */
