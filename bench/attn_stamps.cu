/* Per-block timelines of the sm_90 decode-attention kernels, from %globaltimer stamps that a
 * tuning build writes (FTGEN_ATTN_TUNE="STAMP=1"; bench/attn_stamps.sh builds this program
 * against such headers). Runs `reps` back-to-back calls of one self-attention shape (the
 * caches rotate over four buffer sets, larger than the L2 together), prints the device time
 * per call, then the stamps of the last call's blocks, in microseconds from the moment the
 * first block's dependent-launch wait returned:
 *   entry (before the wait; negative: the block started while the kernel before it ran),
 *   wait released; the producer's first tile requested and its length read; consumer 0's
 *   length read, q, k, v loaded (the prologue's first barrier), rotary done (its second),
 *   prologue done, first tile landed (past the first stage's barrier), last tile landed,
 *   the last tile's rows done, out of the loop, every consumer warp past it, the warps'
 *   partials in shared memory, the block's partials written, counted in (split counters),
 *   loop done (consumers merged; with split counters, the last block's merge included), end
 *   (after the cluster merge, if any). The one-to-four-head kernel stamps all of them, the
 *   tensor-core kernel all but every-consumer-past-the-loop. Then, per block, the time
 *   from each of those stamps to the next: where a block's own time goes.
 *
 *   bash bench/attn_stamps.sh 128 fp16 && build/stamps/attn_stamps 8 32 8 4096 [splits] [-p|-m] [-k] [-v]
 *   (B, H, Hkv, L; splits 0 = automatic; -p: an event recorded between the calls, as in
 *   ftbench's per-call timing, so that no call overlaps the one before it; -m: a one-thread
 *   kernel that stamps %globaltimer between the calls instead, so that the gaps before the
 *   first block and after the last one are seen; -k: split counters, so the block that
 *   ends last merges instead of the combine kernel; -v prints every block with its SM). The
 *   combine kernel (splits through the workspace) stamps its blocks' entry, wait release,
 *   partials merged, length read and end too. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define ST_CAT3(a, b, c) a##b##c
#define ST_CAT(a, b, c) ST_CAT3(a, b, c)
#define ST_STR2(x) #x
#define ST_STR(x) ST_STR2(x)
#if !defined(STAMP_D) || !defined(STAMP_DT) || !defined(STAMP_HEADER)
#error "build with bench/attn_stamps.sh: it sets STAMP_D, STAMP_DT and STAMP_HEADER"
#endif
#define ST_SUFFIX ST_CAT(h, STAMP_D, ST_CAT(_, STAMP_DT, ))
#include STAMP_HEADER /* "ft/attention_h<D>_<dtype>.cuh", from bench/attn_stamps.sh */

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                           \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static __global__ void mark_kernel(unsigned long long *marks, int i)
{
    marks[i] = ft_globaltimer();
}

static void summary(const char *name, std::vector<double> v)
{
    if (v.empty())
        return;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    printf("  %-24s min %8.2f  p10 %8.2f  median %8.2f  p90 %8.2f  max %8.2f\n", name, v[0], v[n / 10], v[n / 2],
           v[n * 9 / 10], v[n - 1]);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s B H Hkv L [splits] [-p|-m] [-k] [-v]\n", argv[0]);
        return 2;
    }
    const int B = atoi(argv[1]), H = atoi(argv[2]), Hkv = atoi(argv[3]), L = atoi(argv[4]);
    int splits = 0, verbose = 0, per_call = 0, marker = 0, counters = 0;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "-p"))
            per_call = 1;
        else if (!strcmp(argv[i], "-m"))
            marker = 1;
        else if (!strcmp(argv[i], "-k"))
            counters = 1;
        else
            splits = atoi(argv[i]);
    }
    const int D = STAMP_D, reps = 40, sets = 4;
    const size_t esize = !strcmp(ST_STR(STAMP_DT), "fp32") ? 4 : 2;
    const size_t cache = (size_t)B * Hkv * L * D * esize;
    std::vector<void *> kc(sets), vc(sets);
    for (int i = 0; i < sets; i++) {
        CK(cudaMalloc(&kc[i], cache));
        CK(cudaMalloc(&vc[i], cache));
        CK(cudaMemset(kc[i], 0x11, cache)); /* small finite values in every dtype */
        CK(cudaMemset(vc[i], 0x11, cache));
    }
    void *q, *k, *v, *out, *ws;
    int *len;
    CK(cudaMalloc(&q, (size_t)B * H * D * esize));
    CK(cudaMemset(q, 0x11, (size_t)B * H * D * esize));
    CK(cudaMalloc(&k, (size_t)B * Hkv * D * esize));
    CK(cudaMemset(k, 0x11, (size_t)B * Hkv * D * esize));
    CK(cudaMalloc(&v, (size_t)B * Hkv * D * esize));
    CK(cudaMemset(v, 0x11, (size_t)B * Hkv * D * esize));
    CK(cudaMalloc(&out, (size_t)B * H * D * esize));
    const size_t wsb = ft_attention_workspace_bytes(B, H, D, FT_ATTN_MAX_SPLITS);
    CK(cudaMalloc(&ws, wsb + 16));
    CK(cudaMalloc(&len, B * sizeof(int)));
    std::vector<int> hl(B, L - 1);
    CK(cudaMemcpy(len, hl.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    unsigned long long *marks;
    CK(cudaMalloc(&marks, 64 * sizeof(unsigned long long)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1, sep;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&sep));
    ft_self_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = B;
    a.num_heads = H;
    a.num_kv_heads = Hkv;
    a.max_len = L;
    a.max_seq_len = L;
    a.q = q;
    a.k = k;
    a.v = v;
    a.out = out;
    a.lengths = len;
    a.workspace = ws;
    a.workspace_bytes = wsb;
    if (counters) { /* split counters: the block that ends last merges, no combine kernel */
        a.split_counters_bytes = ft_attention_split_counter_bytes(B, H);
        CK(cudaMalloc((void **)&a.split_counters, a.split_counters_bytes));
        CK(cudaMemset(a.split_counters, 0, a.split_counters_bytes));
    }
    a.layout = FT_KV_BHLD;
    a.splits = splits;
    int per_sm = 0; /* the one-head kernel's blocks an SM, and its clusters the device holds at once */
    if (Hkv == H && ST_CAT(ft_attn_async_occupancy_, ST_SUFFIX, )("attn_stamps", 1, 0, &per_sm) == FT_OK) {
        printf("one-head sm_90 kernel: %d blocks a multiprocessor; clusters of 2..%d that fit:", per_sm,
               FT_ATTN_CLUSTER_SPLITS);
        for (int size = 2; size <= FT_ATTN_CLUSTER_SPLITS; size++) {
            int fit = 0;
            ST_CAT(ft_attn_async_clusters_, ST_SUFFIX, )("attn_stamps", 1, 0, size, 0, &fit);
            printf(" %d", fit);
        }
        printf("\n");
    }
    for (int r = 0; r < reps + 5; r++) {
        if (r == 5)
            CK(cudaEventRecord(e0, s));
        if (per_call && r > 0)
            CK(cudaEventRecord(sep, s)); /* ends the dependent launch's overlap with the call before */
        if (marker) {
            mark_kernel<<<1, 1, 0, s>>>(marks, r);
            CK(cudaGetLastError());
        }
        a.k_cache = kc[r % sets];
        a.v_cache = vc[r % sets];
        if (ST_CAT(ft_masked_self_attention_decode_, ST_SUFFIX, )(&a, s) != FT_OK) {
            fprintf(stderr, "launch failed: %s\n", ft_last_error());
            return 1;
        }
    }
    if (marker)
        mark_kernel<<<1, 1, 0, s>>>(marks, reps + 5);
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    unsigned long long hm[2] = {0, 0};
    if (marker)
        CK(cudaMemcpy(hm, marks + reps + 4, sizeof hm, cudaMemcpyDeviceToHost));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("B%d H%d Hkv%d D%d L%d %s splits %d: %.2f us a call (%d %s)\n", B, H, Hkv, D, L, ST_STR(STAMP_DT),
           splits, ms * 1000 / reps, reps,
           per_call ? "calls, an event between" : marker ? "calls, a stamping kernel between" : "back to back");

    const int slots = 32; /* a block's stamps (the template's ft_attn_stamps_*, 1 << 18 of them) */
    std::vector<unsigned long long> st(1 << 18);
    CK(cudaMemcpyFromSymbol(st.data(), ST_CAT(ft_attn_stamps_, ST_SUFFIX, ), st.size() * sizeof(st[0])));
    int nb = 0;
    while (nb < (1 << 13) && st[nb * slots + 1] != 0)
        nb++;
    if (nb == 0) {
        printf("  no stamps: not a STAMP=1 build, or not the sm_90 kernel\n");
        return 0;
    }
    unsigned long long t1 = ~0ull;
    for (int i = 0; i < nb; i++)
        t1 = std::min(t1, st[i * slots + 1]);
    auto rel = [&](unsigned long long t) { return (double)(long long)(t - t1) / 1000.0; }; /* us after t1 */
    auto us = [&](int i, int slot) { return rel(st[i * slots + slot]); };
    auto has = [&](int i, int slot) { return st[i * slots + slot] != 0; };
    /* slot: 0 entry, 1 wait released, 2 first tile landed, 3 loop done, 4 end (cluster merge),
     * 5 prologue done, 6 SM, 7 tiles, 8 consumer 0 has the length, 9 q, k, v loaded, 10 rotary
     * done, 11 producer's first tile requested, 12 producer has the length, 13 last tile landed,
     * 14 the block's partials written (before the split counters' merge), 15 the last tile's
     * rows done, 16 out of the loop, 17 every consumer past it, 18 the warps' partials in
     * shared memory, 19 counted in (split counters) */
    static const struct { int slot; const char *name; } rows[] = {
        {0, "entry"}, {1, "wait released"}, {11, "producer: tile 0 asked"}, {12, "producer: length"},
        {8, "consumer: length"}, {9, "q, k, v loaded"}, {10, "rotary done"}, {5, "prologue done"},
        {2, "first tile landed"}, {13, "last tile landed"}, {15, "last tile's rows done"}, {16, "out of the loop"},
        {17, "warps past the loop"}, {18, "warp partials shared"}, {14, "partials written"}, {19, "split counted"},
        {3, "loop done"}, {4, "end"}};
    printf("  %d blocks (us from the first release; block 0 had %llu tiles)\n", nb, st[7]);
    for (const auto &r : rows) {
        std::vector<double> v;
        for (int i = 0; i < nb; i++)
            if (has(i, r.slot))
                v.push_back(us(i, r.slot));
        summary(r.name, v);
    }
    /* where a block's own time goes: per block, the us from each of its consumers' stamps to
     * the next one the kernel has (in the order above, from the wait's release; the producer's
     * two left out), then their spread over the blocks */
    const size_t nrows = sizeof rows / sizeof rows[0];
    auto chained = [&](size_t j) { return rows[j].slot != 11 && rows[j].slot != 12 && has(0, rows[j].slot); };
    printf("  per block, from one stamp to the next (us):\n");
    for (size_t k = 1; k + 1 < nrows; k++) {
        std::vector<double> v;
        char name[64];
        int next = -1;
        for (size_t j = k + 1; j < nrows && next < 0; j++)
            if (chained(j))
                next = (int)j;
        if (!chained(k) || next < 0)
            continue;
        for (int i = 0; i < nb; i++)
            if (has(i, rows[k].slot) && has(i, rows[next].slot))
                v.push_back(us(i, rows[next].slot) - us(i, rows[k].slot));
        snprintf(name, sizeof name, "-> %s", rows[next].name);
        summary(name, v);
    }
    /* the combine kernel's blocks (the workspace path), if this call ran one */
    std::vector<unsigned long long> cs(5 << 13);
    CK(cudaMemcpyFromSymbol(cs.data(), ST_CAT(ft_attn_cstamps_, ST_SUFFIX, ), cs.size() * sizeof(cs[0])));
    double span_end = -1e30, first_entry = 1e30;
    for (int i = 0; i < nb; i++) {
        if (has(i, 0))
            first_entry = std::min(first_entry, us(i, 0));
        span_end = std::max(span_end, has(i, 4) ? us(i, 4) : has(i, 3) ? us(i, 3) : -1e30);
    }
    int ncb = 0;
    while (ncb < (1 << 13) && cs[5 * ncb + 4] > t1 && cs[5 * ncb + 4] - t1 < 1000000000ull)
        ncb++;
    if (ncb > 0) {
        const char *cn[5] = {"combine: entry", "combine: wait released", "combine: partials merged",
                             "combine: length read", "combine: end"};
        for (int k = 0; k < 5; k++) {
            std::vector<double> v;
            for (int i = 0; i < ncb; i++)
                v.push_back(rel(cs[5 * i + k]));
            summary(cn[k], v);
            if (k == 4)
                span_end = std::max(span_end, *std::max_element(v.begin(), v.end()));
        }
        for (int k = 1; k < 4; k++) { /* per block, from one stamp to the next */
            std::vector<double> v;
            for (int i = 0; i < ncb; i++)
                v.push_back(rel(cs[5 * i + k + 1]) - rel(cs[5 * i + k]));
            char name[64];
            snprintf(name, sizeof name, "-> %s", cn[k + 1] + 9);
            summary(name, v);
        }
    }
    printf("  span: first entry %.2f, last end %.2f (%.2f us)\n", first_entry, span_end, span_end - first_entry);
    if (marker)
        printf("  stamping kernels: before the call %.2f, after it %.2f: %.2f us before the first entry, %.2f after "
               "the last end (%.2f us marker to marker)\n",
               rel(hm[0]), rel(hm[1]), first_entry - rel(hm[0]), rel(hm[1]) - span_end, rel(hm[1]) - rel(hm[0]));
    /* blocks running (wait released, not ended) at each whole microsecond: the ramp and the tail */
    const int fin = has(0, 4) ? 4 : 3; /* the end, or the loop's end where no cluster merge stamps one */
    double last = 0;
    for (int i = 0; i < nb; i++)
        if (has(i, fin))
            last = std::max(last, us(i, fin));
    printf("  blocks running (to the %s) at 0, 1, 2, ... us:", fin == 4 ? "end" : "loop's end");
    for (int t = 0; t <= (int)last; t++) {
        int n = 0;
        for (int i = 0; i < nb; i++)
            n += has(i, fin) && us(i, 1) <= t && us(i, fin) > t;
        printf(" %d", n);
    }
    printf("\n");
    if (verbose)
        for (int i = 0; i < nb; i++) {
            printf("    block %4d  SM %3llu", i, st[i * slots + 6]);
            for (const auto &r : rows)
                if (r.slot != 0)
                    printf(" %8.2f", has(i, r.slot) ? us(i, r.slot) : 0.0);
            printf("\n");
        }
    return 0;
}
