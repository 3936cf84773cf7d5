/* ftkernels: CUDA helpers shared by every generated header.
 *
 * - argument checks that run before any CUDA call (so they are testable without a GPU);
 * - the launch-status helper that turns a CUDA error into FT_ERR_CUDA with a message;
 * - fp32/fp16/bf16 conversions and the vector packs behind 2-, 4-, 8- and 16-byte loads.
 *
 * Everything is `static` / `static inline`, so any number of translation units may
 * include any set of ftkernels headers. */
#ifndef FT_COMMON_CUH
#define FT_COMMON_CUH

#include <stdint.h>
#include <string.h>

#include <cuda.h> /* CUtensorMap (no driver library needed: its encoder is looked up at run time) */
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ft/types.h"

/* ---------------------------------------------------------------- host-side checks */

/* Non-zero when `p` is a multiple of `align` bytes (align is a power of two). */
static inline int ft_aligned(const void *p, size_t align)
{
    return ((uintptr_t)p & (uintptr_t)(align - 1)) == 0;
}

/* Non-zero when p and q (q may be NULL: then non-zero) lie at the same offset from a
 * boundary of `align` bytes (a power of two): vectors of that size aligned in one are
 * aligned in the other at the same element. */
static inline int ft_same_phase(const void *p, const void *q, size_t align)
{
    return q == NULL || (((uintptr_t)q - (uintptr_t)p) & (uintptr_t)(align - 1)) == 0;
}

/* Greatest common divisor of two positive integers. */
static inline int ft_gcd(int a, int b)
{
    while (b != 0) {
        const int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A required pointer: non-NULL and aligned to its element size. */
static inline ft_status ft_check_ptr(const char *fn, const char *name, const void *p, size_t elem)
{
    if (p == NULL)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name);
    if (!ft_aligned(p, elem))
        return ft_fail(FT_ERR_MISALIGNED, "%s: %s (%p) is not aligned to its %zu-byte element",
                       fn, name, p, elem);
    return FT_OK;
}

/* An optional pointer: NULL allowed, otherwise aligned to its element size. */
static inline ft_status ft_check_opt_ptr(const char *fn, const char *name, const void *p, size_t elem)
{
    return p == NULL ? FT_OK : ft_check_ptr(fn, name, p, elem);
}

/* A row-major [m, n] problem: both sizes positive, n addressable with 32-bit column
 * indices (the kernels index within a row with int and across rows with int64). */
static inline ft_status ft_check_rows(const char *fn, int64_t m, int64_t n)
{
    if (m <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: m (rows) must be positive, got %lld", fn,
                       (long long)m);
    if (n <= 0)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: n (columns) must be positive, got %lld", fn,
                       (long long)n);
    if (n > INT32_MAX)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: n = %lld exceeds the supported maximum %d", fn,
                       (long long)n, INT32_MAX);
    if (m > INT64_MAX / n)
        return ft_fail(FT_ERR_INVALID_ARGUMENT, "%s: m*n overflows (m = %lld, n = %lld)", fn,
                       (long long)m, (long long)n);
    return FT_OK;
}

/* A launch's CUDA error as a status (FT_OK for cudaSuccess). */
static inline ft_status ft_launch_error(const char *fn, cudaError_t e)
{
    if (e != cudaSuccess)
        return ft_fail(FT_ERR_CUDA, "%s: kernel launch failed: %s (%s)", fn, cudaGetErrorName(e),
                       cudaGetErrorString(e));
    return FT_OK;
}

/* Reports the launch just made (bad configuration, no device, ...). Kernel faults that
 * happen later surface at the caller's next synchronising call, as with any CUDA kernel. */
static inline ft_status ft_launch_status(const char *fn)
{
    return ft_launch_error(fn, cudaGetLastError());
}

/* A device attribute of the current device, looked up once per device and cached in
 * slot `slot` (one slot per attribute asked for). */
static inline ft_status ft_device_attr_(const char *fn, enum cudaDeviceAttr attr, int slot, int *out)
{
    static int cache[2][64];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev >= 0 && dev < 64 && cache[slot][dev] > 0) {
        *out = cache[slot][dev];
        return FT_OK;
    }
    int v = 0;
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&v, attr, dev);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* do not leave the error sticky for the caller's next check */
        return ft_fail(FT_ERR_CUDA, "%s: cannot query the device: %s", fn, cudaGetErrorString(e));
    }
    if (dev >= 0 && dev < 64)
        cache[slot][dev] = v;
    *out = v;
    return FT_OK;
}

/* Multiprocessor count of the current device (grid sizes of grid-stride kernels are a
 * multiple of it). */
static inline ft_status ft_sm_count(const char *fn, int *out)
{
    return ft_device_attr_(fn, cudaDevAttrMultiProcessorCount, 0, out);
}

/* Compute-capability major of the current device. */
static inline ft_status ft_cc_major(const char *fn, int *out)
{
    return ft_device_attr_(fn, cudaDevAttrComputeCapabilityMajor, 1, out);
}

/* Raises `kernel`'s dynamic shared-memory limit to at least `smem` bytes, once per device
 * and size (`raised`: the caller's static int[64], one per kernel, the limit set so far). */
static inline ft_status ft_smem_limit(const char *fn, const void *kernel, int smem, int *raised)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev >= 0 && dev < 64 && raised[dev] >= smem)
        return FT_OK;
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ft_fail(FT_ERR_CUDA, "%s: cannot allow the kernel %d bytes of shared memory: %s", fn, smem,
                       cudaGetErrorString(e));
    }
    if (dev >= 0 && dev < 64)
        raised[dev] = smem;
    return FT_OK;
}

/* One attribute of `kernel` on this device, from cudaFuncGetAttributes: `smem` 0 its
 * ptxVersion (the virtual architecture it was compiled for: 90 for sm_90 code), 1 its
 * static shared memory in bytes. Remembered per device in `cache` (the caller's static
 * int[64], one per kernel and attribute; the values asked for are positive). Launchers ask
 * through ft_code_arch and ft_code_sm90a below rather than ask the device: code built for
 * an older architecture only and run on an sm_90 device has the device's compute
 * capability but not the sm_90 instructions. */
static inline ft_status ft_kernel_attr(const char *fn, const void *kernel, int smem, int *cache, int *out)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev >= 0 && dev < 64 && cache[dev] > 0) {
        *out = cache[dev];
        return FT_OK;
    }
    struct cudaFuncAttributes fa;
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, kernel);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ft_fail(FT_ERR_CUDA, "%s: cannot query the kernel: %s", fn, cudaGetErrorString(e));
    }
    *out = smem ? (int)fa.sharedSizeBytes : fa.ptxVersion;
    if (dev >= 0 && dev < 64)
        cache[dev] = *out;
    return FT_OK;
}

/* An empty kernel of each translation unit: what ft_code_arch asks the runtime about. */
static __global__ void ft_code_arch_probe(void) {}

/* The virtual architecture that this translation unit's kernels run as on the current
 * device (ft_kernel_attr of a kernel of the same unit: every kernel of a unit is compiled
 * for the same architectures). 90 or more where the sm_90 kernels have their code. Below
 * that, for code built only for older architectures (CMAKE_CUDA_ARCHITECTURES 80, -arch
 * sm_86, ...) whose PTX the driver compiles for an sm_90 device, the sm_90 kernels are
 * empty, and launchers must take their other forms whatever the device. */
static inline ft_status ft_code_arch(const char *fn, int *out)
{
    static int cache[64];
    return ft_kernel_attr(fn, (const void *)ft_code_arch_probe, 0, cache, out);
}

/* An empty kernel whose static shared memory tells code built for sm_90a (256 bytes) from
 * other code (64 bytes): what ft_code_sm90a asks the runtime about. */
static __global__ void ft_code_sm90a_probe(int never)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ volatile int mark[64];
#else
    __shared__ volatile int mark[16];
#endif
    if (never)
        mark[threadIdx.x & 15] = never;
}

/* Whether this translation unit's kernels run as sm_90a code on the current device (built
 * with -arch=sm_90a, CMAKE_CUDA_ARCHITECTURES 90a): the form that the sm_90a-only
 * instructions (wgmma) need. Code built for sm_90 runs the sm_90 forms but not those. */
static inline ft_status ft_code_sm90a(const char *fn, int *out)
{
    static int cache[64];
    int smem = 0;
    const ft_status st = ft_kernel_attr(fn, (const void *)ft_code_sm90a_probe, 1, cache, &smem);
    if (st == FT_OK)
        *out = smem >= 256;
    return st;
}

/* How many blocks of `kernel` (`block` threads, `smem` bytes of dynamic shared memory, its
 * limit raised already) an SM holds, from the occupancy calculator; remembered in `memo`
 * (the caller's static ft_occupancy_memo[FT_OCC_MEMO], one per kernel) for the last shapes
 * asked on each device. FT_ERR_UNSUPPORTED where not one block fits. */
typedef struct ft_occupancy_memo {
    int dev, block, smem, blocks;
} ft_occupancy_memo;
#define FT_OCC_MEMO 8

static inline ft_status ft_occupancy(const char *fn, const void *kernel, int block, int smem,
                                     ft_occupancy_memo *memo, int *out)
{
    int dev = 0, n = 0;
    cudaError_t e = cudaGetDevice(&dev);
    ft_occupancy_memo *slot = &memo[(unsigned)(dev * 7 + block / 32 + smem / 1024) % FT_OCC_MEMO];
    if (e == cudaSuccess && slot->blocks > 0 && slot->dev == dev && slot->block == block && slot->smem == smem) {
        *out = slot->blocks;
        return FT_OK;
    }
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, block, (size_t)smem);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ft_fail(FT_ERR_CUDA, "%s: cannot query the occupancy: %s", fn, cudaGetErrorString(e));
    }
    if (n < 1)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: no block of %d threads and %d bytes of shared memory fits an SM", fn,
                       block, smem);
    slot->dev = dev, slot->block = block, slot->smem = smem, slot->blocks = n;
    *out = n;
    return FT_OK;
}

/* Division by a divisor fixed for a launch, for dividends in [0, 2^31): the quotient as
 * (umulhi(n, m) + n) >> s, two instructions where `/` by a value the compiler cannot see
 * takes about twenty (the round-up method of Granlund and Montgomery, 1994: s =
 * ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1; umulhi(n, m) <= n, so the sum fits 32
 * bits). ft_fastdiv_make on the host, ft_fastdiv_q on either side. */
typedef struct ft_fastdiv {
    unsigned m, s;
} ft_fastdiv;

/* d >= 1 (launchers check their sizes first). */
static inline ft_fastdiv ft_fastdiv_make(int d)
{
    ft_fastdiv f;
    unsigned s = 0;
    while ((1ull << s) < (unsigned long long)d)
        s++;
    f.s = s;
    f.m = (unsigned)((((1ull << s) - (unsigned long long)d) << 32) / (unsigned long long)d + 1);
    return f;
}

static __host__ __device__ __forceinline__ int ft_fastdiv_q(ft_fastdiv f, int n)
{
    const unsigned hi = (unsigned)(((unsigned long long)(unsigned)n * f.m) >> 32);
    return (int)((hi + (unsigned)n) >> f.s);
}

/* The device's nanosecond clock (%globaltimer, shared by all SMs): for waits and time
 * stamps in tests, benchmarks and tuning builds. */
static __device__ __forceinline__ unsigned long long ft_globaltimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Programmatic dependent launch (sm_90): a kernel launched by ft_launch_ex as dependent may
 * start while the kernel before it in the stream is still running; it must call
 * ft_pdl_wait() before it touches anything that kernel writes (the wait returns once that
 * kernel has finished and its writes are visible). ft_pdl_trigger() in the earlier kernel
 * lets the dependent's blocks be scheduled before it ends. Both are no-ops before sm_90
 * and when the launch was a plain one. */
static __device__ __forceinline__ void ft_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Bulk asynchronous copies into shared memory with transaction barriers (sm_90). A
 * kernel that uses them runs only on devices of compute capability 9.0 and later (its
 * launcher checks); on older targets these compile to nothing.
 *   ft_mbar_init(bar, n)          barrier whose phase completes after n arrivals and all
 *                                 expected bytes; ft_mbar_init_fence() after the inits,
 *                                 then a block barrier, before any use
 *   ft_mbar_expect_tx(bar, bytes) one arrival that also expects `bytes` more to land
 *   ft_mbar_arrive(bar)           one arrival
 *   ft_mbar_wait(bar, parity)     until the phase of that parity has completed (phases
 *                                 alternate 0, 1, 0, ...; their writes are visible after)
 *   ft_bulk_load(dst, src, n, bar) n bytes (a multiple of 16, both addresses 16-aligned)
 *                                 from global to this block's shared memory, counted on bar
 *   ft_bulk_load_stream(...)      the same for data read once (leaves the L2 first) */
static __device__ __forceinline__ unsigned ft_smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void ft_mbar_init(unsigned long long *bar, unsigned count)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(ft_smem_addr(bar)), "r"(count) : "memory");
#endif
}

static __device__ __forceinline__ void ft_mbar_init_fence(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

static __device__ __forceinline__ void ft_mbar_expect_tx(unsigned long long *bar, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(ft_smem_addr(bar)), "r"(bytes)
                 : "memory");
#endif
}

static __device__ __forceinline__ void ft_mbar_arrive(unsigned long long *bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(ft_smem_addr(bar)) : "memory");
#endif
}

static __device__ __forceinline__ void ft_mbar_wait(unsigned long long *bar, unsigned parity)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(ft_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}

static __device__ __forceinline__ void ft_bulk_load(void *dst, const void *src, unsigned bytes,
                                                    unsigned long long *bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     ft_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(ft_smem_addr(bar))
                 : "memory");
#endif
}

/* Bulk stores (sm_90): `bytes` (a multiple of 16) from this block's shared memory at src
 * to global dst (both 16-byte aligned), as one asynchronous-proxy copy in this thread's
 * current bulk group; ft_bulk_commit closes the group, and ft_bulk_wait_read(N) waits
 * until at most N of this thread's groups still read their shared memory (the buffer may
 * be written again). The writer's generic stores to src come before an
 * ft_fence_proxy_async() and a barrier ahead of the copy. */
static __device__ __forceinline__ void ft_bulk_store(void *dst, const void *src, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(ft_smem_addr(src)),
                 "r"(bytes)
                 : "memory");
#endif
}

static __device__ __forceinline__ void ft_bulk_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define ft_bulk_wait_read(n) asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(n) : "memory")
#define ft_bulk_wait(n) asm volatile("cp.async.bulk.wait_group %0;" ::"n"(n) : "memory")
#else
#define ft_bulk_wait_read(n) ((void)0)
#define ft_bulk_wait(n) ((void)0)
#endif

/* An L2 cache policy (sm_90) marking every line a copy brings in to leave the L2 first. */
static __device__ __forceinline__ unsigned long long ft_l2_evict_first_policy(void)
{
    unsigned long long policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

/* ft_bulk_load for data read once: the lines are marked to leave the L2 first, so that a
 * stream of them does not push out what is read again (code, lengths, small operands). */
static __device__ __forceinline__ void ft_bulk_load_stream(void *dst, const void *src, unsigned bytes,
                                                           unsigned long long *bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned long long policy = ft_l2_evict_first_policy();
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
                 "%4;" ::"r"(ft_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(ft_smem_addr(bar)), "l"(policy)
                 : "memory");
#endif
}

/* A hint: `bytes` (a multiple of 16, from a 16-aligned address) fetched into the L2 without
 * waiting for them. Safe before ft_pdl_wait(): every SM's writes land in the L2, so a line
 * fetched early is updated by a later write and never read stale. */
static __device__ __forceinline__ void ft_bulk_prefetch_l2(const void *src, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

/* The same hint for the 128-byte line holding `p` (any alignment; every architecture). */
static __device__ __forceinline__ void ft_prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p) : "memory");
}

/* The same hint for the box of a two-dimensional tensor map at (x, y) (ft_tensor_load_2d):
 * one request however far apart the box's rows lie. */
static __device__ __forceinline__ void ft_tensor_prefetch_l2_2d(const CUtensorMap *map, int x, int y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(map), "r"(x), "r"(y)
                 : "memory");
#endif
}

/* Fetches a tensor map (a `__grid_constant__` kernel parameter) into the descriptor cache
 * ahead of its first copy (sm_90): a block's first copy then skips that round trip. */
static __device__ __forceinline__ void ft_tensor_map_prefetch(const CUtensorMap *map)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
#endif
}

/* Tensor-map copies (sm_90): the box of a two-dimensional tensor map (a kernel parameter
 * declared `const __grid_constant__ CUtensorMap`) whose first element is at (x, y) (x the
 * inner coordinate, in elements) into shared memory at dst, counted on bar with the box's
 * full size (rows past the tensor's end arrive as zeros). `stream`: the lines leave the
 * L2 first, as with ft_bulk_load_stream. */
static __device__ __forceinline__ void ft_tensor_load_2d(void *dst, const CUtensorMap *map, int x, int y,
                                                         unsigned long long *bar, int stream)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (stream) {
        const unsigned long long policy = ft_l2_evict_first_policy();
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint "
                     "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(ft_smem_addr(dst)),
                     "l"(map), "r"(x), "r"(y), "r"(ft_smem_addr(bar)), "l"(policy)
                     : "memory");
    } else {
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                     "[%0], [%1, {%2, %3}], [%4];" ::"r"(ft_smem_addr(dst)),
                     "l"(map), "r"(x), "r"(y), "r"(ft_smem_addr(bar))
                     : "memory");
    }
#endif
}

/* atomicAdd with acquire-release semantics at device scope: the caller's writes, and those
 * of the threads that reached a block barrier before it, are visible to whichever thread
 * reads the value it leaves, and the writes of the threads that added before it are
 * visible to the caller (and, after a block barrier, to its block). Lighter than a
 * __threadfence() (a sequentially consistent fence) on each side of a plain atomicAdd. */
static __device__ __forceinline__ unsigned ft_atomic_add_acq_rel(unsigned *p, unsigned v)
{
    unsigned old;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
#else
    __threadfence();
    old = atomicAdd(p, v);
    __threadfence();
#endif
    return old;
}

/* Orders this thread's earlier generic-proxy accesses to shared memory before later
 * asynchronous-proxy operations on it: each thread that read a buffer calls it before the
 * barrier or mbarrier arrival after which a bulk copy refills the buffer. */
static __device__ __forceinline__ void ft_fence_proxy_async(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* Barrier `id` (1..15; 0 is __syncthreads') over the first `count` threads of the block
 * (a multiple of 32): lets some warps synchronise while others run on. */
static __device__ __forceinline__ void ft_named_sync(unsigned id, unsigned count)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/* Launches `kernel` (args: pointers to its arguments, as for cudaLaunchKernel) with the
 * launch attributes of sm_90: `cluster` > 1 groups that many consecutive blocks into a
 * thread-block cluster (the caller checks the device has clusters); `dependent` lets the
 * kernel overlap the tail of the previous kernel in the stream where the kernel runs as
 * sm_90 code (ft_code_arch; the kernel calls ft_pdl_wait first; a plain launch elsewhere,
 * and everywhere when FT_NO_PDL is defined before the headers). `kernel` is one of the
 * calling unit's own. */
static inline ft_status ft_launch_ex(const char *fn, const void *kernel, dim3 grid, dim3 block, size_t smem,
                                     cudaStream_t stream, void **args, unsigned cluster, int dependent)
{
    int arch = 0;
    ft_status st = ft_code_arch(fn, &arch);
    if (st != FT_OK)
        return st;
    cudaLaunchConfig_t cfg = {}; /* value-initialised (memset warns: not a trivial type in C++) */
    cudaLaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    if (cluster > 1) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg.numAttrs].val.clusterDim.x = cluster;
        attr[cfg.numAttrs].val.clusterDim.y = 1;
        attr[cfg.numAttrs].val.clusterDim.z = 1;
        cfg.numAttrs++;
    }
#ifndef FT_NO_PDL
    if (dependent && arch >= 90) { /* older code has no ft_pdl_wait to wait with */
        attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs++;
    }
#else
    (void)dependent;
#endif
    return ft_launch_error(fn, cudaLaunchKernelExC(&cfg, kernel, args));
}

/* A two-dimensional tensor map for ft_tensor_load_2d over `rows` rows of `inner` elements
 * of `type` (CU_TENSOR_MAP_DATA_TYPE_FLOAT16, _BFLOAT16 or _FLOAT32) that start `row_bytes`
 * apart at `base` (16-byte aligned, row_bytes a multiple of 16), read in boxes of box_inner
 * x box_rows elements (each at most 256; box_inner elements a multiple of 16 bytes).
 * `swizzle`: 128, the 128-byte swizzle (box_inner elements == 128 bytes: the 16-byte piece p
 * of box row r lands at piece p ^ (r % 8) of its 128-byte row; the box in shared memory is
 * 1024-byte aligned; L2 fetches of 256 bytes), or 64, the 64-byte swizzle (box_inner
 * elements == 64 bytes: piece p of row r at p ^ (r / 2 % 4), the box 512-byte aligned); 0:
 * the box lands as dense rows of box_inner elements (128-byte aligned). Other than the
 * 128-byte swizzle the L2 fetches 128 bytes, as the rows may lie far apart (H100, D32 fp16
 * `[L,B,Hkv*D]` B256 H32 Hkv8 L512, ftbench device us: 57.6 so, 60.5 with 256-byte fetches,
 * 58.9 with none; per call 54.6, 56.9 and 61.9).
 * The driver's encoder is looked up once, through the runtime (no link to the
 * driver library). */
static inline ft_status ft_tensor_map_2d(const char *fn, CUtensorMap *map, const void *base, CUtensorMapDataType type,
                                         uint64_t inner, uint64_t rows, uint64_t row_bytes, unsigned box_inner,
                                         unsigned box_rows, int swizzle)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode;
    if (encode == NULL) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        const cudaError_t e =
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found);
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || f == NULL) {
            cudaGetLastError();
            return ft_fail(FT_ERR_CUDA, "%s: the driver has no cuTensorMapEncodeTiled (%s)", fn, cudaGetErrorString(e));
        }
        encode = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    cuuint64_t dims[2] = {inner, rows}, strides[1] = {row_bytes};
    cuuint32_t box[2] = {box_inner, box_rows}, step[2] = {1, 1};
    const CUresult r = encode(map, type, 2, (void *)base, dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                              : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                              : CU_TENSOR_MAP_SWIZZLE_NONE,
                              swizzle == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return ft_fail(FT_ERR_CUDA, "%s: cuTensorMapEncodeTiled failed (error %d) for %llu rows of %llu elements", fn,
                       (int)r, (unsigned long long)rows, (unsigned long long)inner);
    return FT_OK;
}

/* Thread-block clusters of `size` blocks of `kernel` (`threads` per block, `smem` bytes of
 * dynamic shared memory, to which its limit is raised first if lower) that the current device runs
 * at once. Looked up once per device: `cache` is the caller's static int[64], one per
 * kernel, block shape and cluster size. FT_ERR_UNSUPPORTED when not one cluster fits. */
static inline ft_status ft_cluster_capacity(const char *fn, const void *kernel, int threads, int smem, int size,
                                            int *cache, int *out)
{
    int dev = 0, n = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev >= 0 && dev < 64 && cache[dev] > 0) {
        *out = cache[dev];
        return FT_OK;
    }
    cudaLaunchConfig_t cfg = {}; /* value-initialised (memset warns: not a trivial type in C++) */
    cudaLaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = (unsigned)size;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3((unsigned)size);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    /* raised, never lowered: a launch may use more than this query's smem */
    cudaFuncAttributes fa;
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, kernel);
    if (e == cudaSuccess && fa.maxDynamicSharedSizeBytes < smem)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveClusters(&n, kernel, &cfg);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ft_fail(FT_ERR_CUDA, "%s: cannot size the kernel's clusters: %s", fn, cudaGetErrorString(e));
    }
    if (n < 1)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: a cluster of %d blocks (%d bytes of shared memory each) does not fit "
                       "this device", fn, size, smem);
    if (dev >= 0 && dev < 64)
        cache[dev] = n;
    *out = n;
    return FT_OK;
}

/* The launch of a cluster form with `nvar` kernel variants (variant i needs at least
 * cs_min[i] blocks per row, 0: it cannot hold the row; at most 8; smem[i] bytes of dynamic
 * shared memory a block): the variant and cluster size whose clusters
 * cover `rows` rows in the fewest waves; among those, the larger cluster while rows * cs
 * stays within two blocks per SM (short batches spread over more SMs), else the smaller.
 * cache: the caller's static int[nvar][9][64] (ft_cluster_capacity). Writes the cluster
 * size and how many such clusters the device runs at once; returns the variant, or -1
 * when none fits this device. */
static inline int ft_cluster_plan(const char *fn, const void *const *kernels, const int *cs_min, const int *smem,
                                  int nvar, int threads, int rows, int sms, int (*cache)[9][64], int *cs_out,
                                  int *fit_out)
{
    int best = -1, best_cs = 0, best_fit = 0;
    int64_t best_waves = 0;
    for (int i = 0; i < nvar; i++) {
        if (cs_min[i] < 1 || cs_min[i] > 8)
            continue;
        for (int cs = cs_min[i]; cs <= 8; cs++) {
            int fit = 0;
            if (ft_cluster_capacity(fn, kernels[i], threads, smem[i], cs, cache[i][cs], &fit) != FT_OK)
                continue;
            const int64_t waves = ((int64_t)rows + fit - 1) / fit;
            const int spread = (int64_t)rows * cs <= 2ll * sms;
            if (best < 0 || waves < best_waves ||
                (waves == best_waves && (spread ? cs > best_cs : cs < best_cs))) {
                best = i, best_cs = cs, best_waves = waves, best_fit = fit;
            }
        }
    }
    *cs_out = best_cs;
    *fit_out = best_fit;
    return best;
}

/* Launch shape of a row kernel over [m rows, nvec vectors per row] where each thread can
 * hold `cache` vectors in registers. Rows that fit in one warp's registers get the
 * smallest power-of-two group of lanes that holds them, and a 128-thread block serves
 * 128/group rows with shuffle-only reductions. Longer rows get one block of the fewest
 * warps that hold the row; rows past 1024*cache vectors stream through 512 threads.
 * Returns the threads per row; FT_ERR_UNSUPPORTED if the grid would exceed 2^31-1.
 * ft_rows_spread then gives few rows (a decode step's batch) one thread a vector. */
typedef struct ft_rows_launch {
    int group;      /* threads per row: 1, 2, 4, ..., 32, or == block */
    unsigned block; /* threads per block */
    unsigned grid;  /* blocks */
} ft_rows_launch;

/* The launch shape of rows of `need` threads each (see ft_rows_config); the blocks. */
static inline int64_t ft_rows_shape(int64_t m, int64_t need, ft_rows_launch *out)
{
    if (need <= 32) {
        int g = 1;
        while (g < need)
            g <<= 1;
        out->group = g;
        out->block = 128;
        return (m + (128 / g) - 1) / (128 / g);
    }
    const int t = need <= 1024 ? (int)((need + 31) / 32) * 32 : 512;
    out->group = t;
    out->block = (unsigned)t;
    return m;
}

static inline ft_status ft_rows_config(const char *fn, int64_t m, int64_t nvec, int cache, ft_rows_launch *out)
{
    const int64_t blocks = ft_rows_shape(m, (nvec + cache - 1) / cache, out);
    if (blocks > INT32_MAX)
        return ft_fail(FT_ERR_UNSUPPORTED, "%s: %lld rows need more than 2^31-1 blocks; split the call",
                       fn, (long long)m);
    out->grid = (unsigned)blocks;
    return FT_OK;
}

/* After ft_rows_config, whose checks come before any CUDA call: few rows take one thread a
 * vector, so that a row's loads spread over as many warps as it has vectors, where those
 * blocks fit one wave of 1024 threads an SM (about what the row kernels' registers allow).
 * H200, per call us, against the cache's vectors a thread: rmsnorm fp16 m=64 n=4096 5.60
 * against 7.47, m=8 5.09 against 6.76, layernorm fp16 m=512 n=2048 6.14 against 8.12, fp32
 * m=64 n=4096 7.15 against 10.43; past that wave it lost (m=4096 n=1024: 12.93 against
 * 10.51), so more rows keep ft_rows_config's shape. */
static inline ft_status ft_rows_spread(const char *fn, int64_t m, int64_t nvec, ft_rows_launch *out)
{
    if (nvec > 1024)
        return FT_OK;
    int sms;
    ft_status st;
    if ((st = ft_sm_count(fn, &sms)) != FT_OK)
        return st;
    ft_rows_launch one;
    const int64_t blocks = ft_rows_shape(m, nvec, &one);
    if (blocks <= (int64_t)sms * (1024 / one.block)) {
        one.grid = (unsigned)blocks;
        *out = one;
    }
    return FT_OK;
}

/* ---------------------------------------------------------------- conversions */

static __device__ __forceinline__ float ft_to_float_fp32(float v) { return v; }
static __device__ __forceinline__ float ft_to_float_fp16(__half v) { return __half2float(v); }
static __device__ __forceinline__ float ft_to_float_bf16(__nv_bfloat16 v) { return __bfloat162float(v); }
static __device__ __forceinline__ float ft_from_float_fp32(float v) { return v; }
static __device__ __forceinline__ __half ft_from_float_fp16(float v) { return __float2half_rn(v); }
static __device__ __forceinline__ __nv_bfloat16 ft_from_float_bf16(float v) { return __float2bfloat16_rn(v); }

/* Elements of esize bytes before the first boundary of `bytes` (a power of two) at or after
 * p (p aligned to its element): a row read with vectors of that size reads these one by
 * one first (at most as many as it has). */
static __host__ __device__ __forceinline__ int ft_head_to(const void *p, unsigned bytes, unsigned esize)
{
    return (int)(((bytes - ((unsigned)(uintptr_t)p & (bytes - 1u))) & (bytes - 1u)) / esize);
}

/* ft_head_to for 16-byte vectors, at most n. */
static __device__ __forceinline__ int ft_head_to_16(const void *p, unsigned esize, int n)
{
    return min(ft_head_to(p, 16u, esize), n);
}

/* A beam index read from device data (parent ids, a cache indirection table), clamped to
 * [0, beam): a bad entry reads a wrong beam of the same item, never another item's row. */
static __device__ __forceinline__ int ft_beam_clamp(int v, int beam)
{
    return min(max(v, 0), beam - 1);
}

/* ---------------------------------------------------------------- vector packs
 *
 * A pack is N elements in one machine word of N*sizeof(T) bytes (WORD: 2 to 16 bytes):
 *   ft_unpack_<dtype>x<N>(w, f)   widen the N elements of w to float
 *   ft_pack_<dtype>x<N>(f)        narrow N floats (round to nearest even) into a word
 *   ft_load_<dtype>x<N>(p, f)     one N*sizeof(T)-byte load, widened
 *   ft_store_<dtype>x<N>(p, f)    narrowed, one N*sizeof(T)-byte store
 *   ft_load_cs_<dtype>x<N>, ft_store_cs_<dtype>x<N>   the same, marked streaming
 *                                 (evict first: data read or written once)
 *   ft_load_nc_<dtype>x<N>        the load through the read-only path (ld.global.nc): for
 *                                 data no thread writes while the kernel runs (weights),
 *                                 which the compiler may then load ahead of stores
 * p must be aligned to N*sizeof(T). Kernels that keep data in registers keep the packed
 * word: half the registers of floats for 2-byte types. */
/* Two elements at a time (one paired conversion instruction for the 16-bit types). */
static __device__ __forceinline__ void ft_unpack2_fp32(const float *e, float *f) { f[0] = e[0], f[1] = e[1]; }
static __device__ __forceinline__ void ft_pack2_fp32(const float *f, float *e) { e[0] = f[0], e[1] = f[1]; }
static __device__ __forceinline__ void ft_unpack2_fp16(const __half *e, float *f)
{
    const float2 v = __half22float2(__halves2half2(e[0], e[1]));
    f[0] = v.x, f[1] = v.y;
}
static __device__ __forceinline__ void ft_pack2_fp16(const float *f, __half *e)
{
    const __half2 v = __floats2half2_rn(f[0], f[1]);
    e[0] = __low2half(v), e[1] = __high2half(v);
}
static __device__ __forceinline__ void ft_unpack2_bf16(const __nv_bfloat16 *e, float *f)
{
    const float2 v = __bfloat1622float2(__halves2bfloat162(e[0], e[1]));
    f[0] = v.x, f[1] = v.y;
}
static __device__ __forceinline__ void ft_pack2_bf16(const float *f, __nv_bfloat16 *e)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(f[0], f[1]);
    e[0] = __low2bfloat16(v), e[1] = __high2bfloat16(v);
}

#define FT_DEFINE_PACK(DT, T, N, WORD)                                                          \
    typedef union {                                                                             \
        WORD w;                                                                                 \
        T e[N];                                                                                 \
    } ft_pack_##DT##x##N##_u;                                                                   \
    typedef WORD ft_word_##DT##x##N;                                                            \
    static __device__ __forceinline__ void ft_unpack_##DT##x##N(WORD w, float *f)               \
    {                                                                                           \
        ft_pack_##DT##x##N##_u u;                                                               \
        u.w = w;                                                                                \
        if (N == 1)                                                                             \
            f[0] = ft_to_float_##DT(u.e[0]);                                                    \
        else                                                                                    \
            _Pragma("unroll") for (int i = 0; i < N; i += 2) ft_unpack2_##DT(u.e + i, f + i);   \
    }                                                                                           \
    static __device__ __forceinline__ WORD ft_pack_##DT##x##N(const float *f)                   \
    {                                                                                           \
        ft_pack_##DT##x##N##_u u;                                                               \
        if (N == 1)                                                                             \
            u.e[0] = ft_from_float_##DT(f[0]);                                                  \
        else                                                                                    \
            _Pragma("unroll") for (int i = 0; i < N; i += 2) ft_pack2_##DT(f + i, u.e + i);     \
        return u.w;                                                                             \
    }                                                                                           \
    static __device__ __forceinline__ void ft_load_##DT##x##N(const void *p, float *f)          \
    {                                                                                           \
        ft_unpack_##DT##x##N(*(const WORD *)p, f);                                              \
    }                                                                                           \
    static __device__ __forceinline__ void ft_store_##DT##x##N(void *p, const float *f)         \
    {                                                                                           \
        *(WORD *)p = ft_pack_##DT##x##N(f);                                                     \
    }                                                                                           \
    static __device__ __forceinline__ void ft_load_nc_##DT##x##N(const void *p, float *f)       \
    {                                                                                           \
        ft_unpack_##DT##x##N(__ldg((const WORD *)p), f);                                        \
    }                                                                                           \
    static __device__ __forceinline__ void ft_load_cs_##DT##x##N(const void *p, float *f)       \
    {                                                                                           \
        ft_unpack_##DT##x##N(__ldcs((const WORD *)p), f);                                       \
    }                                                                                           \
    static __device__ __forceinline__ void ft_store_cs_##DT##x##N(void *p, const float *f)      \
    {                                                                                           \
        __stcs((WORD *)p, ft_pack_##DT##x##N(f));                                               \
    }

/* w stored at p (16-byte aligned, global memory) as one 16-byte store. Through a plain
 * `*(uint4 *)p = w`, where w is a pack's union, NVVM may split the copy into the pieces the
 * pack wrote: ft_pointwise_staged's stores went out as four st.global.v2.u16 each (four
 * times the store instructions, each a partial sector). */
static __device__ __forceinline__ void ft_store_u4(void *p, uint4 w)
{
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p)), "r"(w.x), "r"(w.y),
                 "r"(w.z), "r"(w.w)
                 : "memory");
}

/* r[0 .. nu) = the 4 * nu bytes at byte s of the 8 * nu bytes c[0 .. 2 * nu) (32-bit pieces,
 * little-endian; 0 <= s < 4 * nu, s even; nu a power of two known at compile time): whole
 * pieces picked by selects on the bits of s / 4 (c is overwritten), then a funnel shift for
 * a 2-byte remainder. For words whose shift is the same across a warp but known only at run
 * time (no dynamic register indexing, so no local memory). */
static __device__ __forceinline__ void ft_shift_u32(unsigned *c, int nu, unsigned s, unsigned *r)
{
    const unsigned whole = s >> 2;
#pragma unroll
    for (int bit = nu / 2; bit >= 1; bit >>= 1)
#pragma unroll
        for (int i = 0; i + bit < 2 * nu; i++)
            c[i] = (whole & (unsigned)bit) ? c[i + bit] : c[i];
#pragma unroll
    for (int i = 0; i < nu; i++)
        r[i] = __funnelshift_r(c[i], c[i + 1], (s & 2u) * 8u);
}

FT_DEFINE_PACK(fp32, float, 1, float)
FT_DEFINE_PACK(fp32, float, 2, uint2)
FT_DEFINE_PACK(fp32, float, 4, uint4)
FT_DEFINE_PACK(fp16, __half, 1, unsigned short)
FT_DEFINE_PACK(fp16, __half, 2, unsigned int)
FT_DEFINE_PACK(fp16, __half, 4, uint2)
FT_DEFINE_PACK(fp16, __half, 8, uint4)
FT_DEFINE_PACK(bf16, __nv_bfloat16, 1, unsigned short)
FT_DEFINE_PACK(bf16, __nv_bfloat16, 2, unsigned int)
FT_DEFINE_PACK(bf16, __nv_bfloat16, 4, uint2)
FT_DEFINE_PACK(bf16, __nv_bfloat16, 8, uint4)

/* The rotary inverse frequency i (i < rd / 2), base^(-2i/rd) (log2_base = log2(base)),
 * taken in double and rounded once, so the C reference reproduces it bit for bit (the
 * attention family, ft/quant.cuh and the LLaMA family). */
static __device__ __forceinline__ float ft_rope_inv_freq(int i, int rd, float log2_base)
{
    return (float)exp2(-(2.0 * i / rd) * (double)log2_base);
}

/* sin and cos of the rotary angle of frequency i at position pos, from ft_rope_inv_freq */
static __device__ __forceinline__ void ft_rope_sincos(int i, int pos, int rd, float log2_base, float *s, float *c)
{
    sincosf((float)pos * ft_rope_inv_freq(i, rd, log2_base), s, c);
}

/* ---------------------------------------------------------------- activations */

static __device__ __forceinline__ float ft_act_apply(float x, int act)
{
    switch (act) {
    case FT_ACT_GELU: {
        /* tanh form of GELU (BERT, FasterTransformer), 0.5 x (1 + tanh(u)), written as
         * x / (1 + exp(-2u)): one MUFU.EX2 and one MUFU.RCP where tanhf is a polynomial with
         * branches. Its error is __expf's (2 + floor(1.173 |2u|) ulp, CUDA's table) and
         * __fdividef's (2 ulp), far inside the fp32 tests' 5e-5; past exp's range the result
         * is -0. tanhf made the 2-byte pointwise kernels issue-bound. H200, device us against
         * tanhf: gelu fp16 16384 x 4095 through ft_pointwise_shift 82.5 against 108.2,
         * 16384 x 4096 71.1 against 74.9; silu bf16 (x / (1 + exp(-x)) by __fdividef, not IEEE
         * division) 16384 x 4096 70.7 against 77.9. */
        const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x); /* sqrt(2/pi) */
        return __fdividef(x, 1.0f + __expf(-2.0f * u));
    }
    case FT_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case FT_ACT_SILU: return __fdividef(x, 1.0f + __expf(-x)); /* -0 past exp's range */
    default: return x;
    }
}

#endif /* FT_COMMON_CUH */
