/* ftkernels: the dtype-free part of decoding (catalog §4): decoding state, beam-search
 * bookkeeping, KV-cache reorder, finished count, prompt removal, and the ordering keys
 * and random numbers shared by the generated top-K and sampling headers.
 *
 *   ft_init_decoding        finished = false, lengths = 0, ids = start_id,
 *                           cum_log_probs = 0 for beam 0 of each item, -1e20 for the rest
 *   ft_beam_update          new beams from the best candidates of ft_beam_topk_*: parent
 *                           ids, word ids, cum_log_probs, lengths, finished (in place)
 *   ft_kv_cache_reorder     gather a KV cache by parent beam into a second buffer
 *                           ([B*beam, Hkv, Lmax, D] or [Lmax, B*beam, Hkv*D])
 *   ft_cache_indirection_update   or, without moving the cache, the table of which beam's
 *                           row holds each step of each row (the attention reads through it)
 *   ft_beam_gather_tree     backtrack per-step ids through parent ids into whole sequences
 *   ft_count_finished       how many rows are finished, one int on the device
 *   ft_remove_prompt_tokens history [steps, B] -> generated ids [B, out_ld] without prompts
 *
 * Order of candidates (top-K, beam search, top-p): by value, larger first; NaN ranks above
 * +inf, -0.0 equals +0.0, and equal values go to the lower index. Every kernel that
 * selects uses the 64-bit key of ft_select_key, so the order is the same everywhere.
 *
 * Random numbers: one Philox4x32-10 draw per (seed, step, row) through cuRAND's device
 * API (subsequence = row, offset = 4*step): the same seed gives the same tokens, and no
 * generator state is kept between steps. */
#ifndef FT_SEARCH_CUH
#define FT_SEARCH_CUH

#include <curand_kernel.h>

#include "ft/common.cuh"
#include "ft/reduce.cuh"

/* ---------------------------------------------------------------- forms (tests, benchmarks) */

/* Which form ft_topp_sampling_* (ft/decoding_<dtype>.cuh) runs. AUTO (and CLUSTER): the
 * single-pass cluster form on sm_90 where a row fits 8 blocks' registers (131072 values),
 * else one block per row; ONE_BLOCK: one block per row always. For tests and benchmarks;
 * process-wide, per translation unit, not thread-safe. */
typedef enum ft_topp_form { FT_TOPP_FORM_AUTO = 0, FT_TOPP_FORM_ONE_BLOCK = 1, FT_TOPP_FORM_CLUSTER = 2 } ft_topp_form;

/* The forms chosen by the setters here and below (one slot per translation unit). */
typedef enum ft_topk_form { FT_TOPK_FORM_AUTO = 0, FT_TOPK_FORM_SPLIT = 1, FT_TOPK_FORM_ROW = 2 } ft_topk_form;
/* Which form ft_update_logits_* runs for softmax and log-softmax. AUTO: the stream form
 * where it can run and its rule picks it (a workspace given; see the launcher), else the
 * cluster form or the others; STREAM: the stream form wherever it can run; CLUSTER: never
 * the stream form. For tests and benchmarks; process-wide, per translation unit, not
 * thread-safe. */
typedef enum ft_logits_form { FT_LOGITS_FORM_AUTO = 0, FT_LOGITS_FORM_STREAM = 1, FT_LOGITS_FORM_CLUSTER = 2 } ft_logits_form;
typedef struct ft_policy_ {
    ft_topp_form topp;
    ft_topk_form topk;
    int topk_row_blocks; /* blocks per row of the top-K row form; 0: chosen from the shape */
    ft_logits_form logits;
    int logits_stats;    /* stats warps of the update_logits stream form; 0: by the mode */
} ft_policy_;

static inline ft_policy_ *ft_policy_slot_(void)
{
    static ft_policy_ policy = {FT_TOPP_FORM_AUTO, FT_TOPK_FORM_AUTO, 0, FT_LOGITS_FORM_AUTO, 0};
    return &policy;
}

static inline void ft_logits_set_form(ft_logits_form form)
{
    ft_policy_slot_()->logits = form;
}

static inline ft_logits_form ft_logits_get_form(void)
{
    return ft_policy_slot_()->logits;
}

/* The update_logits stream form's working warps: stats warps and writer warps. */
#define FT_LOGITS_STREAM_WORKERS 14

/* Stats warps of the update_logits stream form, 1..FT_LOGITS_STREAM_WORKERS - 1 of its
 * working warps (the rest write); 0, the default, takes the measured choice for the mode
 * (FT_LOGITS_STREAM_STATS_LOG / _SOFTMAX). For tuning and benchmarks; values outside
 * that range count as 0. Same scope as ft_logits_set_form. */
static inline void ft_logits_set_stream_stats(int warps)
{
    ft_policy_slot_()->logits_stats = warps >= 0 && warps < FT_LOGITS_STREAM_WORKERS ? warps : 0;
}

static inline int ft_logits_get_stream_stats(void)
{
    return ft_policy_slot_()->logits_stats;
}

static inline void ft_topp_set_form(ft_topp_form form)
{
    ft_policy_slot_()->topp = form;
}

static inline ft_topp_form ft_topp_get_form(void)
{
    return ft_policy_slot_()->topp;
}

/* Which form ft_topk_* / ft_beam_topk_* / ft_topk_sampling_* (ft/topk_k<K>_<dtype>.cuh)
 * run. AUTO: for K <= 64, when a row gives each thread of a 1024-thread block two 16-byte
 * vectors at least, the row form (ROW: a floor from the threads' maxima, a few candidates
 * ranked by counting; one block per row, or a few per row when the rows leave most SMs
 * idle, a second kernel merging their lists); else the split form (SPLIT: a row's blocks
 * keep warp lists in registers, a second kernel merges them). ROW where it cannot run
 * (K > 64) runs SPLIT. For tests and benchmarks; process-wide, per translation unit, not
 * thread-safe. */
static inline void ft_topk_set_form(ft_topk_form form)
{
    ft_policy_slot_()->topk = form;
}

static inline ft_topk_form ft_topk_get_form(void)
{
    return ft_policy_slot_()->topk;
}

/* Blocks per row of the row form (each takes a share of the row; a second kernel merges
 * their lists): n >= 1 forces n, 0 (the default) chooses from the shape and the SM count.
 * The workspace ft_topk_workspace_bytes_* asks for follows it. Same scope as the form. */
static inline void ft_topk_set_row_blocks(int n)
{
    ft_policy_slot_()->topk_row_blocks = n > 0 ? n : 0;
}

static inline int ft_topk_get_row_blocks(void)
{
    return ft_policy_slot_()->topk_row_blocks;
}

/* ---------------------------------------------------------------- order and keys */

/* Order-preserving 32-bit image of a float: a > b as values <=> key(a) > key(b), with
 * every NaN mapped above +inf and -0.0 onto +0.0. */
static __device__ __forceinline__ unsigned ft_order_key(float v)
{
    unsigned u = __float_as_uint(v);
    if (v != v)
        u = 0x7fffffffu;
    else if (v == 0.0f)
        u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static __device__ __forceinline__ float ft_order_key_value(unsigned k)
{
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* max(a, b), NaN when either is NaN (one instruction from sm_80 on). */
static __device__ __forceinline__ float ft_fmax_nan(float a, float b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
#endif
}

/* A candidate as one 64-bit word: value key above, complemented index below, so a
 * larger word is a better candidate and ties go to the lower index. 0 never occurs for a
 * real candidate (the smallest value key, -inf's, is 0x007fffff) and marks "empty". */
static __device__ __forceinline__ unsigned long long ft_select_key(float v, int idx)
{
    return ((unsigned long long)ft_order_key(v) << 32) | (unsigned)~(unsigned)idx;
}

static __device__ __forceinline__ float ft_select_value(unsigned long long k)
{
    return ft_order_key_value((unsigned)(k >> 32));
}

static __device__ __forceinline__ int ft_select_index(unsigned long long k)
{
    return (int)~(unsigned)k;
}

/* Keys of top-p's sorted form (ft_topp_sampling_sorted_*): 0x7fffffff - bits(prob), so that
 * an ascending sort of the keys' low 31 bits puts probabilities in descending order.
 * Probabilities are non-negative floats, whose bits order as their values; the sign bit is
 * dropped, so -0 is 0. */
static __device__ __forceinline__ unsigned ft_topp_sort_key(float prob)
{
    return 0x7fffffffu - (__float_as_uint(prob) & 0x7fffffffu);
}
static __device__ __forceinline__ float ft_topp_sort_prob(unsigned key)
{
    return __uint_as_float(0x7fffffffu - (key & 0x7fffffffu));
}

/* How ft_topp_sampling_sorted_* lays out its work for rows of V: the bits of an
 * element's index (vbits) and of its row (rbits) in its place word, and the blocks a row
 * takes for the keys. */
typedef struct ft_topp_sorted_plan {
    int vbits, rbits, splits;
} ft_topp_sorted_plan;

static inline ft_topp_sorted_plan ft_topp_sorted_plan_make(int rows, int V, int sms)
{
    ft_topp_sorted_plan pl;
    pl.vbits = 0;
    while ((1ll << pl.vbits) < V)
        pl.vbits++;
    pl.rbits = 0;
    while ((1ll << pl.rbits) < rows)
        pl.rbits++;
    /* enough blocks for two waves of the SMs, each taking at least 8192 elements */
    const int want = (2 * sms + rows - 1) / rows, most = (V + 8191) / 8192;
    pl.splits = rows >= 2 * sms ? 1 : min(max(min(want, most), 1), 64);
    return pl;
}

/* ---------------------------------------------------------------- warp sorting networks
 *
 * A warp holds 32 keys, one per lane; "sorted" means descending from lane 0. */

/* Bitonic merge of a bitonic sequence across the warp into descending order. */
static __device__ __forceinline__ unsigned long long ft_warp_merge_desc(unsigned long long v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 16; j > 0; j >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, v, j);
        v = ((lane & j) == 0) == (v > o) ? v : o; /* the lower lane keeps the larger */
    }
    return v;
}

/* Full bitonic sort of 32 keys, descending (15 compare-exchange steps). */
static __device__ __forceinline__ unsigned long long ft_warp_sort_desc(unsigned long long v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) {
            const unsigned long long o = __shfl_xor_sync(0xffffffffu, v, j);
            /* runs of k lanes alternate direction; the last (k = 32) is descending */
            const bool keep_max = ((lane & j) == 0) == ((lane & k) == 0);
            v = keep_max == (v > o) ? v : o;
        }
    }
    return v;
}

/* Two sorted warps a, c -> a = the best 32 of both, c = the other 32 (both sorted). */
static __device__ __forceinline__ void ft_warp_merge_split(unsigned long long &a, unsigned long long &c)
{
    const unsigned long long r = __shfl_sync(0xffffffffu, c, 31 - (threadIdx.x & 31));
    const unsigned long long hi = a > r ? a : r, lo = a > r ? r : a;
    a = ft_warp_merge_desc(hi);
    c = ft_warp_merge_desc(lo);
}

/* ---------------------------------------------------------------- random numbers */

/* Four uniforms in (0, 1] of (seed, step, row) from stream `stream`: a Philox
 * subsequence of its own (stream 0 is the row's; the others lie apart from every row's),
 * starting on a block boundary, so curand_uniform would return u.x. */
static __device__ __forceinline__ float4 ft_uniform4_stream(unsigned long long seed, int step, int row, int stream)
{
    curandStatePhilox4_32_10_t st;
    curand_init(seed, ((unsigned long long)(unsigned)stream << 32) | (unsigned)row,
                4ull * (unsigned long long)(unsigned)step, &st);
    return curand_uniform4(&st);
}

/* The four uniforms of (seed, step, row) (stream 0); ft_uniform_n: the n-th (0..3). */
static __device__ __forceinline__ float4 ft_uniform4(unsigned long long seed, int step, int row)
{
    return ft_uniform4_stream(seed, step, row, 0);
}

static __device__ __forceinline__ float ft_uniform_n(unsigned long long seed, int step, int row, int n)
{
    const float4 u = ft_uniform4(seed, step, row);
    return n == 0 ? u.x : n == 1 ? u.y : n == 2 ? u.z : u.w;
}

/* Uniform in (0, 1] for (seed, step, row): the first of the four. */
static __device__ __forceinline__ float ft_uniform(unsigned long long seed, int step, int row)
{
    return ft_uniform_n(seed, step, row, 0);
}

/* ---------------------------------------------------------------- logits */

/* What ft_update_logits_* leaves in its fp32 output. */
typedef enum ft_logits_mode {
    FT_LOGITS_RAW = 0,        /* (logit + bias) / temperature (top-k sampling reads these) */
    FT_LOGITS_SOFTMAX = 1,    /* probabilities (sorted top-p) */
    FT_LOGITS_LOG_SOFTMAX = 2 /* log-probabilities (beam search) */
} ft_logits_mode;

/* Element j of a finished row: all its mass on end_id (1 there and 0 elsewhere for
 * softmax; 0 and -inf for raw and log-softmax). */
static __device__ __forceinline__ float ft_logits_finished(int mode, int j, int end_id)
{
    const int soft = mode == FT_LOGITS_SOFTMAX;
    return j == end_id ? (soft ? 1.0f : 0.0f) : (soft ? 0.0f : -INFINITY);
}

/* The stream form of update_logits (sm_90) exchanges each row's (max, sum) between the
 * blocks through its workspace as pairs of 64-bit words, each word a tag (high half) and a
 * float (low half). The tag of a launch is FT_LOGITS_TAG_BIT | (epoch + 1), the epoch the
 * workspace's first word, which every launch advances by one: a word is current exactly
 * when its tag is the launch's, so nothing is cleared between launches (a zeroed workspace
 * is the starting state). The tag bit keeps any (max, sum) float pair that other forms
 * leave in the workspace (sums are never negative) from ever reading as current. */
#define FT_LOGITS_TAG_BIT 0x80000000u
#define FT_LOGITS_EPOCH_WRAP 0x7ffffff0u /* the launch at epoch WRAP - 1 zeroes the workspace */
#define FT_LOGITS_WS_HEADER 8            /* words: [0] epoch, [1] blocks done (wrap launch) */
/* Bytes the split form's (max, sum) pairs start at in the workspace: after the header,
 * which they never overwrite. */
#define FT_LOGITS_SPLIT_OFFSET (FT_LOGITS_WS_HEADER * 8)
/* The stream form's block: 14 working warps, stats warps and writer warps, chosen per
 * mode (ft_logits_set_stream_stats overrides), then a combiner and a fetcher. More stats
 * warps keep more rows' loads in flight; three writers keep up in both modes, since the
 * stats warps leave softmax's exp(z - m) in the ring and its writers only scale it (they
 * took the exponent again before and needed five). fp32 V128256 on the H100, device us,
 * 9 / 10 / 11 / 12 stats warps: log-softmax B64 27.9 / 26.6 / 25.9 / 29.1 (a copy of the
 * same bytes 25.0), B256 95.0 / 94.0 / 92.6 / 96.0 (copy 96.0), B24 15.2 / 15.2 / 15.2 /
 * 15.9. Softmax, V128256 on the H200, device us at 9 / 10 / 11 / 12: fp16 B64 24.1 / 22.5 /
 * 22.5 / 27.7, fp32 B64 24.2 / 23.1 / 22.4 / 26.7; 9 / 11: fp16 B256 73.2 / 66.0, fp32
 * B256 74.5 / 71.5. */
#define FT_LOGITS_STREAM_NT 512 /* FT_LOGITS_STREAM_WORKERS warps, a combiner and a fetcher */
#ifndef FT_LOGITS_STREAM_STATS_LOG
#define FT_LOGITS_STREAM_STATS_LOG 11
#endif
#ifndef FT_LOGITS_STREAM_STATS_SOFTMAX
#define FT_LOGITS_STREAM_STATS_SOFTMAX 11
#endif
#define FT_LOGITS_STREAM_GPL 8            /* 16-byte vectors a lane per row, at most */
#define FT_LOGITS_STREAM_SLOTS 48         /* rows the shared-memory ring holds, at most */
#define FT_LOGITS_STREAM_QPL 8            /* pairs a combiner lane merges: 256 blocks at most */
#define FT_LOGITS_STREAM_SMEM (192 * 1024) /* the ring's shared memory, at most */

static __device__ __forceinline__ void ft_tagged_store2(unsigned long long *p, unsigned tag, float a, float b)
{
    const unsigned long long t = (unsigned long long)tag << 32;
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(t | __float_as_uint(a)),
                 "l"(t | __float_as_uint(b))
                 : "memory");
}

/* Reads the pair at p; true when both words carry `tag` (each word is read atomically). */
static __device__ __forceinline__ bool ft_tagged_load2(const unsigned long long *p, unsigned tag, float *a, float *b)
{
    unsigned long long x, y;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(p) : "memory");
    *a = __uint_as_float((unsigned)x), *b = __uint_as_float((unsigned)y);
    return (unsigned)(x >> 32) == tag && (unsigned)(y >> 32) == tag;
}

/* What `mode` writes for the scaled logit z of a row with max m, 1 / sum rs and
 * log-sum-exp lse. */
static __device__ __forceinline__ float ft_logits_out(int mode, float z, float m, float rs, float lse)
{
    return mode == FT_LOGITS_RAW ? z : mode == FT_LOGITS_SOFTMAX ? __expf(z - m) * rs : z - lse;
}

/* ---------------------------------------------------------------- sampling settings */

/* How a sampling launcher draws one token per row. Per-row arrays, when given, override
 * the scalar for their row. */
typedef struct ft_sampling {
    int k;                            /* top-k: keep the k best; the largest k when per row */
    const int *k_per_row;             /* [rows] or NULL; values clamped to [1, k] */
    float p;                          /* top-p in (0, 1]; 1 keeps everything top-k kept */
    const float *p_per_row;           /* [rows] or NULL; values clamped to (0, 1] */
    float temperature;                /* > 0; logits are divided by it */
    const float *temperature_per_row; /* [rows] or NULL; a value <= 0 picks the best token */
    unsigned long long seed;          /* with step and row, keys the Philox draw */
    int step;                         /* position of the token being produced */
    int end_id;                       /* token that finishes a row */
} ft_sampling;

/* The decoding state a sampling step reads and updates. Rows whose step is still inside
 * their prompt (step < prompt_lengths[row]) emit prompt[row*prompt_ld + step] and change
 * nothing else (FasterLLaMA's prompt-aware decoding). Finished rows emit end_id. Other
 * rows emit the sampled token; lengths[row] grows by one and finished[row] becomes
 * (token == end_id). */
typedef struct ft_decode_io {
    int *ids;                  /* [rows] out: this step's token (e.g. history + step*rows) */
    int *lengths;              /* [rows] in/out, or NULL */
    bool *finished;            /* [rows] in/out, or NULL */
    const int *prompt;         /* [rows, prompt_ld] or NULL */
    const int *prompt_lengths; /* [rows]; required with prompt */
    int prompt_ld;
} ft_decode_io;

/* The token a row must emit without sampling (prompt or finished), or -1. */
static __device__ __forceinline__ int ft_decode_forced(const ft_decode_io &io, int row, int step, int end_id)
{
    if (io.prompt && step < io.prompt_lengths[row])
        return io.prompt[(int64_t)row * io.prompt_ld + step];
    if (io.finished && io.finished[row])
        return end_id;
    return -1;
}

/* Writes the step's outcome for one row (one thread). */
static __device__ __forceinline__ void ft_decode_commit(const ft_decode_io &io, int row, int step, int end_id,
                                                        int token, int forced)
{
    io.ids[row] = token;
    if (forced)
        return;
    if (io.lengths)
        io.lengths[row] += 1;
    if (io.finished)
        io.finished[row] = token == end_id;
}

/* Host-side checks of the settings and state shared by every sampling launcher. */
static inline ft_status ft_check_sampling(const char *fn, const ft_sampling *s, const ft_decode_io *io, int rows,
                                          int vocab)
{
    ft_status st;
    if (!s || !io)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: sampling settings and decode state are required", fn);
    if ((st = ft_check_ptr(fn, "io.ids", io->ids, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "io.lengths", io->lengths, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "io.finished", io->finished, 1)) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "io.prompt", io->prompt, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "k_per_row", s->k_per_row, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "p_per_row", s->p_per_row, sizeof(float))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "temperature_per_row", s->temperature_per_row, sizeof(float))) != FT_OK)
        return st;
    if (io->prompt && (!io->prompt_lengths || io->prompt_ld <= 0))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: a prompt needs prompt_lengths and prompt_ld > 0 (got %d)", fn,
                       io->prompt_ld);
    if (rows <= 0 || vocab <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: rows (%d) and vocab (%d) must be positive", fn, rows, vocab);
    if (!(s->p > 0.0f && s->p <= 1.0f))
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: p = %g is outside (0, 1]", fn, (double)s->p);
    if (!(s->temperature > 0.0f) || s->temperature == INFINITY)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: temperature = %g must be positive and finite", fn,
                       (double)s->temperature);
    if (s->step < 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: step = %d is negative", fn, s->step);
    return FT_OK;
}

/* ---------------------------------------------------------------- init_decoding */

static __global__ void ft_init_decoding_kernel(bool *finished, int *lengths, int *ids, float *cum_log_probs, int rows,
                                               int beam, int start_id)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        if (finished)
            finished[r] = false;
        if (lengths)
            lengths[r] = 0;
        if (ids)
            ids[r] = start_id;
        if (cum_log_probs)
            cum_log_probs[r] = r % beam == 0 ? 0.0f : -1e20f;
    }
}

/* rows = B*beam. Any pointer may be NULL (that array is left alone). The -1e20 start of
 * beams 1.. makes the first step pick all candidates from beam 0 (its copies are equal). */
static inline ft_status ft_init_decoding(bool *finished, int *lengths, int *ids, float *cum_log_probs, int batch,
                                         int beam, int start_id, cudaStream_t stream)
{
    static const char fn[] = "ft_init_decoding";
    ft_status st;
    if ((st = ft_check_opt_ptr(fn, "lengths", lengths, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "ids", ids, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "cum_log_probs", cum_log_probs, sizeof(float))) != FT_OK)
        return st;
    if (batch <= 0 || beam <= 0 || (long long)batch * beam > INT32_MAX)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch (%d) and beam (%d) must be positive with batch*beam < 2^31",
                       fn, batch, beam);
    const int rows = batch * beam;
    const int grid = (int)((rows + 255) / 256 < 4096 ? (rows + 255) / 256 : 4096);
    ft_init_decoding_kernel<<<grid, 256, 0, stream>>>(finished, lengths, ids, cum_log_probs, rows, beam, start_id);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- beam update */

/* One block per batch item; thread i builds new beam i. Everything of the old beams is
 * read before the barrier, so the state is updated in place without a race. */
static __global__ void ft_beam_update_kernel(const float *cand_values, const int *cand_ids, int cand_ld, int beam,
                                             int vocab, int end_id, float *cum_log_probs, int *parent_ids,
                                             int *word_ids, int *output_ids, int *lengths, bool *finished)
{
    const int b = blockIdx.x, i = threadIdx.x;
    const int64_t row0 = (int64_t)b * beam;
    int parent = 0, word = 0, len = 0;
    bool fin = false;
    float v = 0.0f;
    if (i < beam) {
        const int c = cand_ids[(int64_t)b * cand_ld + i];
        parent = ft_beam_clamp(c / vocab, beam);
        word = c - (c / vocab) * vocab;
        v = cand_values[(int64_t)b * cand_ld + i];
        len = lengths ? lengths[row0 + parent] : 0;
        fin = finished ? finished[row0 + parent] : false;
    }
    __syncthreads();
    if (i < beam) {
        if (cum_log_probs)
            cum_log_probs[row0 + i] = v;
        if (parent_ids)
            parent_ids[row0 + i] = parent;
        if (word_ids)
            word_ids[row0 + i] = word;
        if (output_ids)
            output_ids[row0 + i] = word;
        if (lengths)
            lengths[row0 + i] = len + (fin ? 0 : 1);
        if (finished)
            finished[row0 + i] = fin || word == end_id;
    }
}

/* cand_values/cand_ids: [B, cand_ld] from ft_beam_topk_* (the first `beam` entries of each
 * row are used; ids are beam*V + word, values are cum_log_probs + log_probs). State arrays
 * are [B*beam] and updated in place: new beam i of item b continues old beam parent_ids[i]
 * (a beam index within the item) with word_ids[i]; its length grows by one unless that
 * parent had finished, and it is finished when the parent was or its word is end_id.
 * output_ids may be NULL or the step's slice of a [steps, B*beam] history. */
static inline ft_status ft_beam_update(const float *cand_values, const int *cand_ids, int cand_ld, int batch, int beam,
                                       int vocab, int end_id, float *cum_log_probs, int *parent_ids, int *word_ids,
                                       int *output_ids, int *lengths, bool *finished, cudaStream_t stream)
{
    static const char fn[] = "ft_beam_update";
    ft_status st;
    if ((st = ft_check_ptr(fn, "cand_values", cand_values, sizeof(float))) != FT_OK ||
        (st = ft_check_ptr(fn, "cand_ids", cand_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "cum_log_probs", cum_log_probs, sizeof(float))) != FT_OK ||
        (st = ft_check_ptr(fn, "parent_ids", parent_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "word_ids", word_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "output_ids", output_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "lengths", lengths, sizeof(int))) != FT_OK)
        return st;
    if (batch <= 0 || vocab <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch (%d) and vocab (%d) must be positive", fn, batch, vocab);
    if (beam <= 0 || beam > 1024)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: beam = %d is outside [1, 1024]", fn, beam);
    if (cand_ld < beam)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: cand_ld (%d) is smaller than beam (%d)", fn, cand_ld, beam);
    if ((long long)beam * vocab > INT32_MAX || (long long)batch * beam > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: beam*vocab or batch*beam exceeds 2^31-1", fn);
    if (end_id < 0 || end_id >= vocab)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: end_id %d is outside [0, vocab = %d)", fn, end_id, vocab);
    const int threads = (beam + 31) / 32 * 32;
    ft_beam_update_kernel<<<batch, threads, 0, stream>>>(cand_values, cand_ids, cand_ld, beam, vocab, end_id,
                                                         cum_log_probs, parent_ids, word_ids, output_ids, lengths,
                                                         finished);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- KV-cache reorder */

/* Copies segments from the parent's row: a segment is one head's first `len` steps
 * ([R, Hkv, Lmax, D]: len*D contiguous elements) or one step of one row ([Lmax, R,
 * Hkv*D]), seg_words words, in chunks of `chunk` words. A warp takes whole chunks, as many
 * warps apart as the grid has (blocks of 256); blockIdx.y is the layer. Where a parent
 * has several children (beam <= 32), the warp on its first child's chunk reads the parent
 * once and writes every child, and the other children's chunks are skipped: the source
 * is read once per distinct parent, not once per row. Each lane keeps four loads in
 * flight. */
#define FT_DEFINE_KV_REORDER(NAME, WORD)                                                                 \
    static __global__ void __launch_bounds__(256)                                                        \
        NAME(const WORD *src, WORD *dst, const int *parent_ids, int beam, int rows, int heads, int len,  \
             int64_t seg_words, int64_t chunk, int64_t head_stride, int64_t row_stride,                  \
             int64_t step_stride, int64_t layer_stride, int lbhd)                                        \
    {                                                                                                    \
        enum { UNROLL = 4 };                                                                             \
        const int lane = threadIdx.x & 31;                                                               \
        const int64_t chunks = (seg_words + chunk - 1) / chunk;                                          \
        const int64_t items = (lbhd ? (int64_t)len * rows : (int64_t)rows * heads) * chunks;             \
        const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);                                    \
        const WORD *s0 = src + blockIdx.y * layer_stride;                                                \
        WORD *d0 = dst + blockIdx.y * layer_stride;                                                      \
        for (int64_t it = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); it < items;      \
             it += warps) {                                                                              \
            const int64_t seg = it / chunks, o0 = (it - seg * chunks) * chunk;                           \
            const int64_t o1 = min(o0 + chunk, seg_words);                                               \
            int r, t = 0, h = 0;                                                                         \
            if (lbhd) {                                                                                  \
                t = (int)(seg / rows);                                                                   \
                r = (int)(seg - (int64_t)t * rows);                                                      \
            } else {                                                                                     \
                r = (int)(seg / heads);                                                                  \
                h = (int)(seg - (int64_t)r * heads);                                                     \
            }                                                                                            \
            const int first = r - r % beam, p = ft_beam_clamp(parent_ids[r], beam);                       \
            unsigned kids = 1u; /* bit j: row r + j is a child of p */                                   \
            if (beam <= 32) {                                                                            \
                const unsigned same = __ballot_sync(                                                     \
                    0xffffffffu, lane < beam && ft_beam_clamp(parent_ids[first + min(lane, beam - 1)], beam) == p); \
                if (same & ((1u << (r - first)) - 1u))                                                   \
                    continue; /* an earlier child of p writes this chunk */                              \
                kids = same >> (r - first);                                                              \
            }                                                                                            \
            const int64_t base = (int64_t)t * step_stride + (int64_t)h * head_stride;                    \
            const WORD *from = s0 + base + (int64_t)(first + p) * row_stride;                            \
            WORD *to = d0 + base + (int64_t)r * row_stride;                                              \
            for (int64_t o = o0 + lane; o < o1; o += UNROLL * 32) {                                      \
                WORD v[UNROLL];                                                                          \
                _Pragma("unroll") for (int u = 0; u < UNROLL; u++) if (o + u * 32 < o1)                  \
                    v[u] = from[o + u * 32];                                                             \
                _Pragma("unroll") for (int u = 0; u < UNROLL; u++) if (o + u * 32 < o1)                  \
                    for (unsigned k = kids; k != 0u; k &= k - 1u)                                        \
                        to[(int64_t)(__ffs((int)k) - 1) * row_stride + o + u * 32] = v[u];               \
            }                                                                                            \
        }                                                                                                \
    }

FT_DEFINE_KV_REORDER(ft_kv_reorder_w16, uint4)
FT_DEFINE_KV_REORDER(ft_kv_reorder_w4, unsigned)
FT_DEFINE_KV_REORDER(ft_kv_reorder_w1, unsigned char)
#undef FT_DEFINE_KV_REORDER

/* dst[row r] = src[row of r's parent] for the first `len` steps of every head, for
 * `layers` caches laid out one after another (layer stride = one whole cache). Rows are
 * R = B*beam, parent_ids [R] are beam indices within each item (ft_beam_update's output).
 * layout FT_KV_BHLD: [R, Hkv, Lmax, D]; FT_KV_LBHD: [Lmax, R, Hkv*D]. elem_bytes is the
 * element size (2 or 4). src and dst must not overlap: use two caches and swap them each
 * step (FasterTransformer v2.0's double buffer). */
static inline ft_status ft_kv_cache_reorder(const void *src, void *dst, const int *parent_ids, int layers,
                                            ft_kv_layout layout, int batch, int beam, int hkv, int lmax, int d,
                                            int elem_bytes, int len, cudaStream_t stream)
{
    static const char fn[] = "ft_kv_cache_reorder";
    ft_status st;
    if ((st = ft_check_ptr(fn, "src", src, 1)) != FT_OK || (st = ft_check_ptr(fn, "dst", dst, 1)) != FT_OK ||
        (st = ft_check_ptr(fn, "parent_ids", parent_ids, sizeof(int))) != FT_OK)
        return st;
    if (layout != FT_KV_BHLD && layout != FT_KV_LBHD)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: layout must be FT_KV_BHLD or FT_KV_LBHD", fn);
    if (layers <= 0 || layers > 65535 || batch <= 0 || beam <= 0 || hkv <= 0 || lmax <= 0 || d <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: layers (1..65535), batch, beam, hkv, lmax and d must be positive (got %d %d %d %d %d %d)",
                       fn, layers, batch, beam, hkv, lmax, d);
    if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: elem_bytes must be 1, 2 or 4 (got %d)", fn, elem_bytes);
    if (len < 0 || len > lmax)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: len = %d is outside [0, lmax = %d]", fn, len, lmax);
    if ((long long)batch * beam > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: batch*beam exceeds 2^31-1", fn);
    const int64_t rows = (int64_t)batch * beam;
    const int64_t cache_bytes = rows * hkv * (int64_t)lmax * d * elem_bytes;
    const char *s = (const char *)src;
    char *t = (char *)dst;
    if (s < t + cache_bytes * layers && t < s + cache_bytes * layers)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: src and dst overlap; reorder into a second cache", fn);
    if (len == 0)
        return FT_OK;
    const int lbhd = layout == FT_KV_LBHD;
    /* in bytes: one segment, and the strides of head, row, step */
    const int64_t seg = lbhd ? (int64_t)hkv * d * elem_bytes : (int64_t)len * d * elem_bytes;
    const int64_t hs = lbhd ? 0 : (int64_t)lmax * d * elem_bytes;
    const int64_t rs = lbhd ? (int64_t)hkv * d * elem_bytes : (int64_t)hkv * lmax * d * elem_bytes;
    const int64_t ts = lbhd ? rows * hkv * d * elem_bytes : 0;
    const int64_t segs = lbhd ? (int64_t)len * rows : rows * hkv;
    int w = 1;
    if (seg % 16 == 0 && hs % 16 == 0 && rs % 16 == 0 && ts % 16 == 0 && cache_bytes % 16 == 0 &&
        ft_aligned(src, 16) && ft_aligned(dst, 16))
        w = 16;
    else if (seg % 4 == 0 && hs % 4 == 0 && rs % 4 == 0 && ts % 4 == 0 && cache_bytes % 4 == 0 &&
             ft_aligned(src, 4) && ft_aligned(dst, 4))
        w = 4;
    int sms = 0;
    if ((st = ft_sm_count(fn, &sms)) != FT_OK)
        return st;
    /* a warp a chunk of 512 words (8 KB at 16 bytes), up to 16 blocks of 256 an SM. H200,
     * fp16, us, B8 beam4 Hkv32 D128 L1024 (random parents, 20 distinct of 32 rows): 225.3
     * against 254.4 for a grid-stride loop over every word; all parents the same (B32):
     * 723.2 against 892.0; every row its own parent: 1061.4 against 1119.7; chunks of
     * 128 or 2048 words, or 8 blocks an SM, were level or slower */
    const int64_t words = seg / w, chunk = 512;
    int64_t blocks = (segs * ((words + chunk - 1) / chunk) + 7) / 8;
    if (blocks > (int64_t)sms * 16)
        blocks = (int64_t)sms * 16;
    const dim3 grid((unsigned)blocks, (unsigned)layers);
    if (w == 16)
        ft_kv_reorder_w16<<<grid, 256, 0, stream>>>((const uint4 *)src, (uint4 *)dst, parent_ids, beam, (int)rows, hkv,
                                                    len, seg / 16, chunk, hs / 16, rs / 16, ts / 16, cache_bytes / 16, lbhd);
    else if (w == 4)
        ft_kv_reorder_w4<<<grid, 256, 0, stream>>>((const unsigned *)src, (unsigned *)dst, parent_ids, beam, (int)rows,
                                                   hkv, len, seg / 4, chunk, hs / 4, rs / 4, ts / 4, cache_bytes / 4, lbhd);
    else
        ft_kv_reorder_w1<<<grid, 256, 0, stream>>>((const unsigned char *)src, (unsigned char *)dst, parent_ids, beam,
                                                   (int)rows, hkv, len, seg, chunk, hs, rs, ts, cache_bytes, lbhd);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- cache indirection */

static __global__ void __launch_bounds__(256) ft_cache_indirection_kernel(const int *src, int *dst, const int *parent_ids,
                                                                         int beam, int rows, int lmax, int step)
{
    const int64_t n = (int64_t)rows * (step + 1);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int r = (int)(i / (step + 1)), t = (int)(i - (int64_t)r * (step + 1));
        const int p = ft_beam_clamp(parent_ids[r], beam);
        /* the parent's row read step t where src says; its own token (step) from its own row */
        dst[(int64_t)r * lmax + t] = t < step && src ? src[(int64_t)(r - r % beam + p) * lmax + t] : p;
    }
}

/* The cache indirection table (ft_self_attention_args::cache_indirection) after a beam
 * search step: new beam r of each item continues old beam parent_ids[r] (beam indices
 * within the item, ft_beam_update's output), so it reads the steps before `step` where
 * its parent read them and step `step` (the token the attention just appended) from its
 * parent's own row:
 *   dst[r, t] = src[parent row of r, t] for t < step,   dst[r, step] = parent_ids[r].
 * src NULL stands for the identity table (every row reads its own cache: the first step,
 * or a prompt written to every beam). Tables are [batch*beam, lmax] int32; src and dst
 * must not overlap (keep two and swap them each step); entries past `step` are left as
 * they are. */
static inline ft_status ft_cache_indirection_update(const int *src, int *dst, const int *parent_ids, int batch,
                                                    int beam, int lmax, int step, cudaStream_t stream)
{
    static const char fn[] = "ft_cache_indirection_update";
    ft_status st;
    if ((st = ft_check_opt_ptr(fn, "src", src, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "dst", dst, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "parent_ids", parent_ids, sizeof(int))) != FT_OK)
        return st;
    if (batch <= 0 || beam <= 0 || lmax <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: batch (%d), beam (%d) and lmax (%d) must be positive", fn, batch,
                       beam, lmax);
    if (step < 0 || step >= lmax)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: step = %d is outside [0, lmax = %d)", fn, step, lmax);
    if ((long long)batch * beam > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: batch*beam exceeds 2^31-1", fn);
    const int rows = batch * beam;
    const int64_t bytes = (int64_t)rows * lmax * (int64_t)sizeof(int);
    if (src && (const char *)src < (const char *)dst + bytes && (const char *)dst < (const char *)src + bytes)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: src and dst overlap; keep two tables and swap them", fn);
    int sms = 0;
    if ((st = ft_sm_count(fn, &sms)) != FT_OK)
        return st;
    int64_t blocks = ((int64_t)rows * (step + 1) + 255) / 256;
    if (blocks > (int64_t)sms * 8)
        blocks = (int64_t)sms * 8;
    ft_cache_indirection_kernel<<<(unsigned)blocks, 256, 0, stream>>>(src, dst, parent_ids, beam, rows, lmax, step);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- gather tree */

static __global__ void ft_beam_gather_tree_kernel(const int *step_ids, const int *parent_ids, int steps, int rows,
                                                  int beam, int *out)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int first = r - r % beam;
    int cur = r;
    for (int t = steps - 1; t >= 0; t--) {
        out[(int64_t)r * steps + t] = step_ids[(int64_t)t * rows + cur];
        cur = first + ft_beam_clamp(parent_ids[(int64_t)t * rows + cur], beam);
    }
}

/* step_ids, parent_ids: [steps, B*beam] as written by ft_beam_update step after step
 * (output_ids and parent_ids slices). out: [B*beam, steps], the whole sequence that ends
 * in each final beam. */
static inline ft_status ft_beam_gather_tree(const int *step_ids, const int *parent_ids, int steps, int batch, int beam,
                                            int *out, cudaStream_t stream)
{
    static const char fn[] = "ft_beam_gather_tree";
    ft_status st;
    if ((st = ft_check_ptr(fn, "step_ids", step_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "parent_ids", parent_ids, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "out", out, sizeof(int))) != FT_OK)
        return st;
    if (steps <= 0 || batch <= 0 || beam <= 0 || (long long)batch * beam > INT32_MAX)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: steps (%d), batch (%d), beam (%d) must be positive", fn, steps,
                       batch, beam);
    const int rows = batch * beam;
    ft_beam_gather_tree_kernel<<<(rows + 127) / 128, 128, 0, stream>>>(step_ids, parent_ids, steps, rows, beam, out);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- finished count */

static __global__ void __launch_bounds__(1024) ft_count_finished_kernel(const bool *finished, int n, int *count)
{
    __shared__ long long scratch[32];
    long long c = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        c += finished[i] ? 1 : 0;
    c = ft_block_sum_i64(c, scratch);
    if (threadIdx.x == 0)
        *count = (int)c;
}

/* *count (device) = number of true entries of finished[n]. Decoding stops when it equals
 * n: copy the one int back, or read it on the device (graph conditionals). */
static inline ft_status ft_count_finished(const bool *finished, int n, int *count, cudaStream_t stream)
{
    static const char fn[] = "ft_count_finished";
    ft_status st;
    if ((st = ft_check_ptr(fn, "finished", finished, 1)) != FT_OK ||
        (st = ft_check_ptr(fn, "count", count, sizeof(int))) != FT_OK)
        return st;
    if (n <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: n = %d must be positive", fn, n);
    ft_count_finished_kernel<<<1, n < 1024 ? (n + 31) / 32 * 32 : 1024, 0, stream>>>(finished, n, count);
    return ft_launch_status(fn);
}

/* ---------------------------------------------------------------- prompt removal */

static __global__ void ft_remove_prompt_tokens_kernel(const int *history, int steps, int batch,
                                                      const int *prompt_lengths, int start_pos,
                                                      const int *gen_lengths, int pad_id, int *out, int out_ld)
{
    const int b = blockIdx.x;
    const int first = max(prompt_lengths[b] - start_pos, 0);
    int n = max(steps - first, 0);
    if (gen_lengths)
        n = min(n, max(gen_lengths[b], 0));
    for (int j = threadIdx.x; j < out_ld; j += blockDim.x)
        out[(int64_t)b * out_ld + j] = j < n ? history[(int64_t)(first + j) * batch + b] : pad_id;
}

/* history: [steps, B], the token emitted at each step, where step s produced position
 * start_pos + s (prompt-aware decoding starts at the shortest prompt's length, so rows
 * with longer prompts emit prompt tokens first). out: [B, out_ld]; row b gets its tokens
 * from position prompt_lengths[b] on, at most gen_lengths[b] of them (NULL: all that
 * remain), and pad_id after them. */
static inline ft_status ft_remove_prompt_tokens(const int *history, int steps, int batch, const int *prompt_lengths,
                                                int start_pos, const int *gen_lengths, int pad_id, int *out,
                                                int out_ld, cudaStream_t stream)
{
    static const char fn[] = "ft_remove_prompt_tokens";
    ft_status st;
    if ((st = ft_check_ptr(fn, "history", history, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "prompt_lengths", prompt_lengths, sizeof(int))) != FT_OK ||
        (st = ft_check_opt_ptr(fn, "gen_lengths", gen_lengths, sizeof(int))) != FT_OK ||
        (st = ft_check_ptr(fn, "out", out, sizeof(int))) != FT_OK)
        return st;
    if (steps <= 0 || batch <= 0 || out_ld <= 0 || start_pos < 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT,
                       "%s: steps (%d), batch (%d) and out_ld (%d) must be positive, start_pos (%d) not negative", fn,
                       steps, batch, out_ld, start_pos);
    ft_remove_prompt_tokens_kernel<<<batch, 128, 0, stream>>>(history, steps, batch, prompt_lengths, start_pos,
                                                              gen_lengths, pad_id, out, out_ld);
    return ft_launch_status(fn);
}

#endif /* FT_SEARCH_CUH */
