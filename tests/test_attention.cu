/* GPU tests of the decoder-attention family against ref/ref_attention.c.
 *
 * Built once per dtype (FT_ATTN_TEST_DT = fp32 | fp16 | bf16, so the three compile in
 * parallel); one test per generated head size of that dtype, registered from
 * ft/variants.h. Each runs fixed cases (GQA ratios 1, 4, 8 and H; both cache layouts;
 * rotary off, interleaved, half, partial; split-KV off, automatic and forced, merged in a
 * cluster, by the combine kernel or by the last block through split counters; lengths
 * 0, 1, the last slot, past one sub-chunk; empty slots and over-capacity rows; cross-
 * attention with memory bias and per-sequence lengths) and random ones, each through the
 * register kernel and (compute capability 9.0+) the shared-memory one. Outputs and the
 * whole cache are compared after every launch; outputs are poisoned before it, and the
 * inputs arrive through a kernel queued just before it (restore_inputs). Repeated launches
 * of one case must give the same output bits, whichever path merged the splits. */
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_attention.h"

/* FT_ATTN_TEST_HEADER ("ft/attention_fp16.cuh"), FT_ATTN_TEST_DT (fp16) and
 * FT_ATTN_TEST_DT_UPPER (FP16) come from tests/CMakeLists.txt */
#include FT_ATTN_TEST_HEADER

#define FT_CAT3(a, b, c) a##b##c
#define FT_CAT(a, b, c) FT_CAT3(a, b, c)

#define SELF_DECODE FT_CAT(ft_masked_self_attention_decode_, FT_ATTN_TEST_DT, )
#define CROSS_DECODE FT_CAT(ft_cross_attention_decode_, FT_ATTN_TEST_DT, )
#define MEMORY_BIAS FT_CAT(ft_add_memory_bias_, FT_ATTN_TEST_DT, )
#define PACKED FT_CAT(ft_packed_attention_, FT_ATTN_TEST_DT, )
#define HAS_PACKED FT_CAT(ft_has_packed_attention_, FT_ATTN_TEST_DT, )

typedef struct attn_case {
    int is_self;
    int B, H, Hkv, L;
    int layout;
    int rope, rotary_dim; /* rotary_dim 0: D */
    int splits;           /* 0 auto, 1 off, n forced */
    int with_bias;
    int impl;             /* ft_attn_impl */
    int no_workspace;     /* automatic splits without a workspace */
    int beam;             /* self: > 0 reads through a random cache indirection table of this beam width */
    int calls;            /* launches one after the other on the same workspace, each checked, and each
                             giving the first one's output bits (0: 1) */
    int counters;         /* split counters (zeroed once, checked zero after every call): 1 on every
                             call, 2 on every second call (the others through the combine kernel) */
    int tp_only;          /* runs only where the tensor-core kernel's tp and tq forms exist (D32, D64,
                             D128; 16-bit): its many row blocks cost the CPU reference time elsewhere */
    int ap_only;          /* runs only at D64 and D128 (every dtype): the same */
    int unsupported;      /* the call must return FT_ERR_UNSUPPORTED and write nothing (the sm_90
                             kernel forced where this program's code runs as an older architecture) */
    int shift;            /* q, k, v, their biases and out start one element past a 16-byte
                             boundary (aligned to their elements only: the kernels' element loads
                             and stores) */
    int lengths[16];
} attn_case;

/* The inputs of a launch reach their buffers through a kernel just before it: the test
 * uploads them to staging copies, poisons the buffers the launcher is given, and queues
 * restore_inputs, which lets a dependent launch be scheduled at once, waits 20 us, then
 * copies. A kernel launched as a programmatic dependent (sm_90) that touched an input before
 * its ft_pdl_wait() would read the poison (NaN, length -1); its early L2 prefetch of the
 * cache must not return stale lines either. */
typedef struct staged_inputs {
    void *dst[12];
    void *src[12];
    size_t bytes[12];
    int n;
} staged_inputs;

static __global__ void restore_inputs(staged_inputs s)
{
    ft_pdl_trigger();
    if (threadIdx.x == 0) {
        const unsigned long long t0 = ft_globaltimer();
        while (ft_globaltimer() - t0 < 20000ull)
            ;
    }
    __syncthreads();
    for (int i = 0; i < s.n; i++)
        for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < s.bytes[i]; j += (size_t)gridDim.x * blockDim.x)
            ((unsigned char *)s.dst[i])[j] = ((const unsigned char *)s.src[i])[j];
}

static void stage_input(staged_inputs *s, void *buf, size_t bytes)
{
    if (buf == NULL || bytes == 0)
        return;
    void *copy = dev_alloc(bytes);
    FT_CHECK_CUDA(cudaMemcpy(copy, buf, bytes, cudaMemcpyDeviceToDevice));
    FT_CHECK_CUDA(cudaMemset(buf, 0xff, bytes));
    s->dst[s->n] = buf;
    s->src[s->n] = copy;
    s->bytes[s->n++] = bytes;
}

static ref_tol attn_tolerance(ft_dtype dt)
{
    /* softmax-weighted sums over thousands of steps in fp32: a little above the norm
     * family's fp32 tolerance; fp16/bf16 outputs are dominated by their own rounding */
    ref_tol t = ref_tolerance(dt);
    if (dt == FT_FP32)
        t.atol = t.rtol = 2e-4;
    return t;
}

static void run_case(ft_test *t, ft_dtype dt, int D, const attn_case *c, ref_rng *rng)
{
    const int B = c->B, H = c->H, Hkv = c->Hkv, L = c->L;
    const size_t es = ft_dtype_size(dt);
    const size_t nq = (size_t)B * H * D, nkv = (size_t)B * Hkv * D, ncache = (size_t)B * Hkv * L * D;
    float *q = (float *)malloc(nq * 4), *kn = (float *)malloc(nkv * 4), *vn = (float *)malloc(nkv * 4);
    float *qb = (float *)malloc((size_t)H * D * 4), *kb = (float *)malloc((size_t)Hkv * D * 4);
    float *vb = (float *)malloc((size_t)Hkv * D * 4);
    float *kc = (float *)malloc(ncache * 4), *vc = (float *)malloc(ncache * 4);
    float *got = (float *)malloc((ncache > nq ? ncache : nq) * 4), *first = (float *)malloc(nq * 4);
    double *ref = (double *)malloc(nq * sizeof(double)), *refc = (double *)malloc(ncache * sizeof(double));
    fill_normal(q, nq, rng, 0.0, 1.0, dt);
    fill_normal(kn, nkv, rng, 0.0, 1.0, dt);
    fill_normal(vn, nkv, rng, 0.0, 1.0, dt);
    fill_normal(qb, (size_t)H * D, rng, 0.0, 0.5, dt);
    fill_normal(kb, (size_t)Hkv * D, rng, 0.0, 0.5, dt);
    fill_normal(vb, (size_t)Hkv * D, rng, 0.0, 0.5, dt);
    fill_normal(kc, ncache, rng, 0.0, 1.0, dt);
    fill_normal(vc, ncache, rng, 0.0, 1.0, dt);

    const size_t sh = c->shift ? es : 0; /* bytes past the allocations' start */
    void *aq = dev_alloc(nq * es + sh), *akn = dev_alloc(nkv * es + sh), *avn = dev_alloc(nkv * es + sh);
    void *aqb = dev_alloc((size_t)H * D * es + sh), *akb = dev_alloc((size_t)Hkv * D * es + sh);
    void *avb = dev_alloc((size_t)Hkv * D * es + sh);
    void *dq = (char *)aq + sh, *dkn = (char *)akn + sh, *dvn = (char *)avn + sh;
    void *dqb = (char *)aqb + sh, *dkb = (char *)akb + sh, *dvb = (char *)avb + sh;
    void *dkc = dev_alloc(ncache * es), *dvc = dev_alloc(ncache * es);
    void *aout = dev_alloc(nq * es + sh), *dout = (char *)aout + sh;
    int *dlen = (int *)dev_alloc(sizeof(int) * B);
    const size_t ws_bytes = ft_attention_workspace_bytes(B, H, D, FT_ATTN_MAX_SPLITS);
    void *ws = dev_alloc(ws_bytes);
    dev_poison(ws, ws_bytes); /* the workspace needs no initialisation: NaN partials until written */
    const size_t cnt_bytes = ft_attention_split_counter_bytes(B, H);
    unsigned *cnt = (unsigned *)dev_alloc(cnt_bytes);
    FT_CHECK_CUDA(cudaMemset(cnt, 0, cnt_bytes)); /* once: every call leaves them zeroed */
    unsigned *cnt_host = (unsigned *)malloc(cnt_bytes);
    dev_upload(dq, q, nq, dt);
    dev_upload(dkn, kn, nkv, dt);
    dev_upload(dvn, vn, nkv, dt);
    dev_upload(dqb, qb, (size_t)H * D, dt);
    dev_upload(dkb, kb, (size_t)Hkv * D, dt);
    dev_upload(dvb, vb, (size_t)Hkv * D, dt);
    dev_upload(dkc, kc, ncache, dt);
    dev_upload(dvc, vc, ncache, dt);
    dev_poison(dout, nq * es);
    FT_CHECK_CUDA(cudaMemcpy(dlen, c->lengths, sizeof(int) * B, cudaMemcpyHostToDevice));
    /* a cache indirection table: each row's cached steps from random beams of its item */
    int *indir = NULL, *dindir = NULL;
    if (c->beam > 0) {
        indir = (int *)malloc((size_t)B * L * sizeof(int));
        for (size_t i = 0; i < (size_t)B * L; i++)
            indir[i] = (int)ref_rng_range(rng, 0, c->beam - 1);
        dindir = dev_upload_ints(indir, B * L);
    }

    staged_inputs staged;
    memset(&staged, 0, sizeof staged);
    void *inputs[] = {dq, dkn, dvn, dqb, dkb, dvb, dkc, dvc, dlen, dindir};
    const size_t input_bytes[] = {nq * es, nkv * es, nkv * es, (size_t)H * D * es, (size_t)Hkv * D * es,
                                  (size_t)Hkv * D * es, ncache * es, ncache * es, sizeof(int) * B,
                                  (size_t)B * L * sizeof(int)};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        stage_input(&staged, inputs[i], input_bytes[i]);
    restore_inputs<<<64, 256>>>(staged);

    char what[256];
    snprintf(what, sizeof what,
             "%s h%d %s B=%d H=%d Hkv=%d L=%d layout=%d rope=%d rd=%d splits=%d bias=%d impl=%s beam=%d "
             "counters=%d shift=%d len0=%d len_last=%d",
             c->is_self ? "self" : "cross", D, ft_dtype_name(dt), B, H, Hkv, L, c->layout, c->rope, c->rotary_dim,
             c->splits, c->with_bias, c->impl == FT_ATTN_IMPL_ASYNC ? "async" : "register", c->beam, c->counters,
             c->shift, c->lengths[0], c->lengths[B - 1]);

    ref_attn r;
    memset(&r, 0, sizeof r);
    r.B = B;
    r.H = H;
    r.Hkv = Hkv;
    r.D = D;
    r.L = L;
    r.layout = c->layout;
    r.is_self = c->is_self;
    r.lengths = c->lengths;
    r.q = q;
    r.q_bias = c->with_bias ? qb : NULL;
    r.k_cache = kc;
    r.v_cache = vc;
    r.scale = 1.0 / sqrt((double)D);
    r.dt = dt;
    r.out = ref;

    ft_status st = FT_OK;
    if (c->is_self) {
        r.indir = indir;
        r.beam = c->beam;
        r.k_new = kn;
        r.v_new = vn;
        r.k_bias = c->with_bias ? kb : NULL;
        r.v_bias = c->with_bias ? vb : NULL;
        r.rope = c->rope;
        r.rotary_dim = c->rotary_dim ? c->rotary_dim : D;
        r.log2_base = log2f(10000.0f);
    } else {
        /* the memory bias is added once, in place, by its own launcher */
        st = c->with_bias ? MEMORY_BIAS(D, dkc, dkb, dvc, dvb, B, Hkv, L, (ft_kv_layout)c->layout, 0) : FT_OK;
        FT_EXPECT(t, st == FT_OK, "%s: memory bias: %s", what, ft_last_error());
        if (c->with_bias)
            for (int b = 0; b < B; b++)
                for (int h = 0; h < Hkv; h++)
                    for (int s = 0; s < L; s++)
                        for (int d = 0; d < D; d++) {
                            const int64_t i = ref_kv_index(c->layout, B, Hkv, L, D, b, h, s, d);
                            kc[i] = (float)ref_round((double)kc[i] + kb[h * D + d], dt);
                            vc[i] = (float)ref_round((double)vc[i] + vb[h * D + d], dt);
                        }
    }
    /* the output and the caches every call must give (the append writes the same values each time) */
    ref_attention_decode(&r);
    const ref_tol tol = attn_tolerance(dt);
    /* several calls on one workspace: each must leave it fit for the next (split counters) */
    for (int call = 0; call < (c->calls > 1 ? c->calls : 1) && st == FT_OK; call++) {
        unsigned *counters = c->counters == 1 || (c->counters == 2 && call % 2 == 1) ? cnt : NULL;
        if (call > 0) {
            dev_poison(dout, nq * es);
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%d", call == 1 ? " call " : ",", call + 1);
        }
        if (c->is_self) {
            ft_self_attention_args a;
            memset(&a, 0, sizeof a);
            a.batch = B;
            a.num_heads = H;
            a.num_kv_heads = Hkv;
            a.max_len = L;
            a.q = dq;
            a.k = dkn;
            a.v = dvn;
            a.q_bias = c->with_bias ? dqb : NULL;
            a.k_bias = c->with_bias ? dkb : NULL;
            a.v_bias = c->with_bias ? dvb : NULL;
            a.k_cache = dkc;
            a.v_cache = dvc;
            a.layout = (ft_kv_layout)c->layout;
            a.lengths = dlen;
            a.out = dout;
            a.rope = (ft_rope)c->rope;
            a.rotary_dim = c->rotary_dim;
            a.rotary_base = 10000.0f;
            a.splits = c->splits;
            a.workspace = c->no_workspace ? NULL : ws;
            a.workspace_bytes = c->no_workspace ? 0 : ws_bytes;
            a.split_counters = counters;
            a.split_counters_bytes = counters ? cnt_bytes : 0;
            a.impl = (ft_attn_impl)c->impl;
            a.cache_indirection = dindir;
            a.beam_width = c->beam;
            st = SELF_DECODE(D, &a, 0);
        } else {
            ft_cross_attention_args a;
            memset(&a, 0, sizeof a);
            a.batch = B;
            a.num_heads = H;
            a.num_kv_heads = Hkv;
            a.mem_len = L;
            a.q = dq;
            a.q_bias = c->with_bias ? dqb : NULL;
            a.k_mem = dkc;
            a.v_mem = dvc;
            a.layout = (ft_kv_layout)c->layout;
            a.mem_lengths = dlen;
            a.out = dout;
            a.splits = c->splits;
            a.workspace = ws;
            a.workspace_bytes = ws_bytes;
            a.split_counters = counters;
            a.split_counters_bytes = counters ? cnt_bytes : 0;
            a.impl = (ft_attn_impl)c->impl;
            st = CROSS_DECODE(D, &a, 0);
        }
        FT_CHECK_CUDA(cudaGetLastError());
        FT_CHECK_CUDA(cudaDeviceSynchronize());
        if (c->unsupported) {
            FT_EXPECT(t, st == FT_ERR_UNSUPPORTED, "%s: status %s, expected FT_ERR_UNSUPPORTED (%s)", what,
                      ft_status_string(st), ft_last_error());
            unsigned char *raw = (unsigned char *)malloc(nq * es);
            FT_CHECK_CUDA(cudaMemcpy(raw, dout, nq * es, cudaMemcpyDeviceToHost));
            size_t touched = 0;
            for (size_t i = 0; i < nq * es; i++)
                touched += raw[i] != 0xff;
            free(raw);
            FT_EXPECT(t, touched == 0, "%s: an unsupported call wrote %zu bytes of the output", what, touched);
            break;
        }
        FT_EXPECT(t, st == FT_OK, "%s: status %s (%s)", what, ft_status_string(st), ft_last_error());
        if (st == FT_OK) {
            /* the split counters are back to zero, whichever path the call took */
            FT_CHECK_CUDA(cudaMemcpy(cnt_host, cnt, cnt_bytes, cudaMemcpyDeviceToHost));
            size_t nonzero = 0;
            for (size_t i = 0; i < cnt_bytes / sizeof(unsigned); i++)
                nonzero += cnt_host[i] != 0;
            FT_EXPECT(t, nonzero == 0, "%s: %zu split counters left nonzero", what, nonzero);
            dev_download(got, dout, nq, dt);
            /* every call gives the same bits, whichever path merged the splits (the combine
             * kernel or split counters) and whichever block of a row merged them */
            if (call == 0)
                memcpy(first, got, nq * 4);
            else
                FT_EXPECT(t, memcmp(first, got, nq * 4) == 0, "%s: the output differs from the first call's", what);
            /* rows past capacity must be NaN: compare those separately */
            size_t nan_rows_ok = 1;
            for (int b = 0; b < B; b++) {
                const int len = c->lengths[b];
                const int over = c->is_self ? len >= L : len > L;
                for (int i = 0; i < H * D; i++) {
                    const size_t k = (size_t)b * H * D + i;
                    if (over) {
                        nan_rows_ok &= isnan(got[k]) != 0;
                        got[k] = 0.0f;
                        ref[k] = 0.0;
                    }
                }
            }
            FT_EXPECT(t, nan_rows_ok, "%s: a row past capacity is not NaN", what);
            ft_expect_close(t, what, got, ref, nq, tol.atol, tol.rtol);
            /* the caches: appended steps as stored, every other element untouched */
            const char *names[2] = {"k cache", "v cache"};
            void *dc[2] = {dkc, dvc};
            float *hc[2] = {kc, vc};
            for (int w = 0; w < 2; w++) {
                char w2[300];
                snprintf(w2, sizeof w2, "%s (%s)", what, names[w]);
                dev_download(got, dc[w], ncache, dt);
                for (size_t i = 0; i < ncache; i++)
                    refc[i] = hc[w][i];
                ft_expect_close(t, w2, got, refc, ncache, tol.atol, tol.rtol);
            }
        }
    }
    void *bufs[] = {aq, akn, avn, aqb, akb, avb, dkc, dvc, aout, dlen, ws, cnt, dindir};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        FT_CHECK_CUDA(cudaFree(bufs[i]));
    for (int i = 0; i < staged.n; i++)
        FT_CHECK_CUDA(cudaFree(staged.src[i]));
    free(indir);
    free(cnt_host);
    free(q);
    free(kn);
    free(vn);
    free(qb);
    free(kb);
    free(vb);
    free(kc);
    free(vc);
    free(got);
    free(first);
    free(ref);
    free(refc);
}

static attn_case self_case(int B, int H, int Hkv, int L, int layout, int rope, int rd, int splits, const int *len)
{
    attn_case c;
    memset(&c, 0, sizeof c);
    c.is_self = 1;
    c.B = B;
    c.H = H;
    c.Hkv = Hkv;
    c.L = L;
    c.layout = layout;
    c.rope = rope;
    c.rotary_dim = rd;
    c.splits = splits;
    c.with_bias = 1;
    for (int b = 0; b < B; b++)
        c.lengths[b] = len[b];
    return c;
}

static void attention_test(ft_test *t)
{
    const int D = (int)(intptr_t)t->arg;
    const ft_dtype dt = FT_CAT(FT_, FT_ATTN_TEST_DT_UPPER, );
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() * 7 + (uint64_t)D * 131 + (uint64_t)dt);
    attn_case cases[80];
    int n = 0;
    {
        const int l1[] = {0, 17, 63};
        cases[n++] = self_case(3, 4, 4, 64, FT_KV_BHLD, FT_ROPE_NONE, 0, 0, l1);
        const int l2[] = {299, 100};
        cases[n++] = self_case(2, 8, 2, 300, FT_KV_LBHD, FT_ROPE_INTERLEAVED, 0, 1, l2);
        const int l3[] = {1499, 5};
        cases[n++] = self_case(2, 8, 1, 1500, FT_KV_BHLD, FT_ROPE_HALF, D / 2 + (D / 2) % 2, 7, l3);
        const int l4[] = {-1, 3, 64, 10};
        cases[n++] = self_case(4, 4, 2, 64, FT_KV_LBHD, FT_ROPE_INTERLEAVED, 0, 0, l4);
        cases[n++] = self_case(4, 4, 2, 64, FT_KV_BHLD, FT_ROPE_HALF, 0, 3, l4);
        const int l5[] = {4500};
        cases[n++] = self_case(1, 2, 2, 5000, FT_KV_BHLD, FT_ROPE_NONE, 0, 1, l5); /* two sub-chunks, one block */
        cases[n++] = self_case(1, 8, 2, 5000, FT_KV_LBHD, FT_ROPE_HALF, 0, 0, l5);  /* automatic split */
        const int l6[] = {1, 0};
        cases[n++] = self_case(2, 3, 3, 8, FT_KV_BHLD, FT_ROPE_NONE, 0, 5, l6); /* more splits than steps */
        cases[n] = self_case(1, 4, 4, 16, FT_KV_BHLD, FT_ROPE_NONE, 0, 0, l6);
        cases[n++].with_bias = 0;
        const int l7[] = {2999, 1700};
        cases[n] = self_case(2, 8, 8, 3000, FT_KV_BHLD, FT_ROPE_NONE, 0, 0, l7); /* splits merged in a cluster */
        cases[n++].no_workspace = 1;
        /* the same with the inputs and out aligned to their elements only: the step's inputs
         * loaded element by element, the cluster merge's outputs stored so */
        cases[n] = cases[n - 1];
        cases[n++].shift = 1;
        /* beam search through a cache indirection table (the beams of an item at one step) */
        const int l8[] = {120, 120, 120, 7, 7, 7};
        cases[n] = self_case(6, 4, 2, 300, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l8);
        cases[n++].beam = 3;
        const int l9[] = {1999, 1999, 0, 0};
        cases[n] = self_case(4, 8, 8, 2000, FT_KV_LBHD, FT_ROPE_NONE, 0, 5, l9);
        cases[n++].beam = 2;
        const int l10[] = {2500, 2500, 2500, 2500};
        cases[n] = self_case(4, 2, 1, 3000, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l10);
        cases[n++].beam = 4;
        /* head groups on tensor cores (16-bit types): the new token alone in a stage (128 cached
         * steps) or last in one, and a group of 24 heads (two blocks per key/value head) */
        const int l11[] = {128, 255, 0};
        cases[n++] = self_case(3, 8, 2, 384, FT_KV_BHLD, FT_ROPE_NONE, 0, 1, l11);
        const int l12[] = {399, 37};
        cases[n++] = self_case(2, 24, 1, 400, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l12);
        /* groups of more than 8 heads past D128 (16-bit), at least 4 row blocks of 32 heads and
         * split: hw, 32 heads a block, 8 a warp, every warp over every step (here 32 heads split
         * in a cluster; 16 heads, two warps without heads, split past a cluster through the
         * workspace with split counters; 12 heads with an empty slot and a row past capacity) */
        const int l33[] = {699, 1, 300, 0};
        cases[n++] = self_case(4, 32, 1, 700, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 3, l33);
        cases[n] = cases[n - 1]; /* inputs and out aligned to their elements only */
        cases[n++].shift = 1;
        const int l34[] = {1999, 64};
        cases[n] = self_case(2, 32, 2, 2000, FT_KV_BHLD, FT_ROPE_NONE, 0, 10, l34);
        cases[n].counters = 1;
        cases[n++].calls = 2;
        const int l35[] = {-1, 0, 99, 100};
        cases[n++] = self_case(4, 12, 1, 100, FT_KV_BHLD, FT_ROPE_HALF, 0, 2, l35);
        /* unsplit (outputs written by the warps' merge), inputs and out aligned to their
         * elements only, rotary on part of D */
        cases[n] = self_case(4, 12, 1, 100, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 16, 1, l35);
        cases[n++].shift = 1;
        /* unsplit head groups (the form fed by tensor-map boxes where rows are whole 128-byte
         * pieces): the last sequence's last box runs past the cache's end */
        const int l14[] = {299, 150};
        cases[n++] = self_case(2, 8, 2, 300, FT_KV_BHLD, FT_ROPE_NONE, 0, 1, l14);
        /* a head group read through a cache indirection table (rows copied one by one) */
        const int l13[] = {700, 700, 33, 33};
        cases[n] = self_case(4, 8, 2, 800, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l13);
        cases[n++].beam = 2;
        /* splits through the workspace and the combine kernel (more than a cluster merges, or
         * clusters that do not all fit: 32 row blocks of 8 on the H100), on a poisoned workspace
         * and several calls on one workspace; strided rows through an indirection table */
        const int l15[] = {7999, 1234};
        cases[n] = self_case(2, 4, 4, 8000, FT_KV_BHLD, FT_ROPE_HALF, 0, 9, l15);
        cases[n].counters = 2;
        cases[n++].calls = 3;
        const int l16[] = {3999, 3999, 0, 0};
        cases[n] = self_case(4, 4, 2, 4000, FT_KV_LBHD, FT_ROPE_INTERLEAVED, 0, 9, l16);
        cases[n].beam = 2;
        cases[n].counters = 2;
        cases[n++].calls = 2;
        const int l17[] = {1999};
        cases[n] = self_case(1, 32, 32, 2000, FT_KV_BHLD, FT_ROPE_NONE, 0, 0, l17);
        cases[n].counters = 2;
        cases[n++].calls = 2;
        /* split counters: the block that ends last merges (an empty slot, a row past
         * capacity, an empty split), every call leaving them zeroed; a head group on tensor
         * cores in 12 splits, whose threads would merge several elements each, goes through
         * the combine kernel with the counters given */
        const int l18[] = {7999, -1, 8000};
        cases[n] = self_case(3, 4, 4, 8000, FT_KV_BHLD, FT_ROPE_NONE, 0, 9, l18);
        cases[n].counters = 1;
        cases[n++].calls = 2;
        cases[n] = self_case(2, 3, 3, 8, FT_KV_BHLD, FT_ROPE_NONE, 0, 5, l6);
        cases[n++].counters = 1;
        /* FT's [Lmax, B, Hkv*D] cache through tensor-map boxes (sm_90): one head a block
         * merged in a cluster, and with split counters (lengths off the box size) */
        cases[n] = self_case(2, 8, 8, 3000, FT_KV_LBHD, FT_ROPE_INTERLEAVED, 0, 0, l7);
        cases[n++].no_workspace = 1;
        const int l20[] = {1234, 2999, 1};
        cases[n] = self_case(3, 6, 6, 3000, FT_KV_LBHD, FT_ROPE_NONE, 0, 10, l20);
        cases[n].counters = 1;
        cases[n++].calls = 2;
        const int l19[] = {5999};
        cases[n] = self_case(1, 16, 2, 6000, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 12, l19);
        cases[n].counters = 1;
        cases[n++].calls = 2;
        /* pairs with split counters past a cluster's 8 splits: the last block merges where each
         * of its consumer threads takes at most one element of the pair (D64 on tensor cores,
         * smaller heads on CUDA cores), the combine kernel elsewhere (D128 on tensor cores: 2 x
         * 128 elements for 128 threads) */
        const int l32[] = {4999, 17, -1};
        cases[n] = self_case(3, 4, 2, 5000, FT_KV_BHLD, FT_ROPE_HALF, 0, 10, l32);
        cases[n].counters = 1;
        cases[n++].calls = 2;
        /* more row blocks than an H100 has SMs, short rows, unsplit: head groups of 4 and 2 run
         * in the ts form at D128 (16-bit), and on CUDA cores two blocks an SM where a variant has
         * no tensor-core kernel for them */
        const int l21[] = {299, 0, 150, 17, 298, 64, 1, 200, 255, 3, 100, 299};
        cases[n++] = self_case(12, 48, 12, 300, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l21);
        const int l22[] = {199, 5, 0, 120, 199, 33, 64, 198, 1, 77, 150, 10};
        cases[n++] = self_case(12, 24, 12, 200, FT_KV_LBHD, FT_ROPE_NONE, 0, 0, l22);
        /* head groups of 4 in more row blocks than two an SM fill on an H100, short rows: the
         * t3 form at D128 (16-bit; two stages, three blocks an SM) */
        const int l25[] = {199, 0, 64, 63, 17, 198, 1, 128, 127, 3, 100, 199, 150, 5, 190, 33};
        cases[n++] = self_case(16, 72, 18, 200, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l25);
        /* head groups of 4 and 8, short rows, in more than twice the row blocks that t3's three
         * an SM hold on an H100 (1024): tp, t3 as a persistent grid, a block taking rows one
         * after the other (D128, D64 and D32 for 4, D128 for 8; t3 elsewhere), with empty slots and
         * rows past capacity among the blocks' first rows and later ones */
        const int l26[] = {127, -1, 0, 64, 63, 17, 126, 128, 100, 99, 3, 1, 127, 50, -1, 33};
        cases[n] = self_case(16, 256, 64, 128, FT_KV_BHLD, FT_ROPE_HALF, 16, 0, l26); /* rotary on 16 of D */
        cases[n++].tp_only = 1;
        /* the same with q, k, v and biases aligned to their elements only (tp's producer loads
         * them element by element, not in 16-byte words) */
        cases[n] = cases[n - 1];
        cases[n++].shift = 1;
        cases[n] = self_case(16, 512, 64, 128, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l26);
        cases[n++].tp_only = 1;
        /* rows of more than one tile in as many row blocks: tq, tp in three stages two blocks an
         * SM (D128 takes it at L128 above too); rows of two tiles at D64, of four at D128, where
         * the producer hands q over before the tile that waits for the row's own consumers */
        const int l28[] = {255, 0, 129, 128, 127, -1, 254, 256, 1, 200, 64, 255, 17, 190, 3, 240};
        cases[n] = self_case(16, 256, 64, 256, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l28);
        cases[n++].tp_only = 1;
        /* rows of six tiles at D128 (three at D64), the longest tq takes: the producer runs
         * more than a row's worth of stages ahead, and hands q over mid-row */
        const int l29[] = {383, 1, 0, 257, 256, 255, -1, 382, 384, 129, 64, 383, 17, 320, 191, 300};
        cases[n] = self_case(16, 256, 64, 384, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l29);
        cases[n].with_bias = 0;
        cases[n++].tp_only = 1;
        /* rows past t3's bound (384 steps) that tq still takes (up to 512), FT's [L,B,Hkv*D]
         * cache through tensor-map boxes: eight tiles at D128, four at D64 */
        const int l30[] = {511, 0, 385, 384, 383, -1, 510, 512, 1, 448, 64, 511, 17, 257, 3, 500};
        cases[n] = self_case(16, 256, 64, 512, FT_KV_LBHD, FT_ROPE_INTERLEAVED, 0, 0, l30);
        cases[n++].tp_only = 1;
        /* groups of 8, rows past 512 steps in 640 row blocks: tq at D128 (up to 2048 steps
         * for groups of more than 4), the tm form at D64 */
        const int l31[] = {799, 0, 513, 512, 511, -1, 798, 800, 1, 700, 64, 799, 17, 640, 3, 600};
        cases[n] = self_case(16, 320, 40, 800, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l31);
        cases[n++].tp_only = 1;
        /* one head a block, more row blocks than two an SM fill on an H100, short rows,
         * unsplit: the short-row forms (three blocks an SM) where the long form's stages hold
         * the rows (rows of up to three tiles; the tensor-map form through FT's cache) */
        const int l23[] = {189, 0, 128, 127, 17, 188, 1, 64, 63, 3, 100, 189};
        cases[n++] = self_case(12, 24, 24, 190, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l23);
        const int l24[] = {59, 5, 0, 31, 58, 33, 16, 57, 1, 40, 32, 10};
        cases[n++] = self_case(12, 24, 24, 60, FT_KV_LBHD, FT_ROPE_HALF, 0, 0, l24);
        /* one head a block, unsplit, in 1280 row blocks (between four and eight waves of the
         * long form's two blocks an SM on an H100): ap, the long form as a persistent grid, each
         * block taking two rows one after the other (rows of up to ten tiles, rows of the new
         * token alone, an empty slot and a row past capacity among a block's first and second
         * rows) */
        const int l27[] = {599, 0, 440, -1, 1, 600, 127, 128, 129, 300, 598, 0, 255, 3, 577, 599};
        cases[n] = self_case(16, 80, 80, 600, FT_KV_BHLD, FT_ROPE_INTERLEAVED, 0, 0, l27);
        cases[n++].ap_only = 1;
        /* one head a block, unsplit, rows of up to 2100 steps in 1024 row blocks (more than
         * three waves of the long form on an H100): ad, the long form in four stages, one
         * block an SM (an empty slot, a row past capacity, rows of the new token alone and rows
         * ending on and beside tile bounds among them), at every head size */
        const int l36[] = {2099, 0, 2048, -1, 1, 2100, 127, 128, 129, 1500, 2098, 0, 255, 3, 2047, 2099};
        cases[n++] = self_case(16, 64, 64, 2100, FT_KV_BHLD, FT_ROPE_HALF, 0, 0, l36);
    }
    {
        attn_case c;
        memset(&c, 0, sizeof c);
        c.B = 3;
        c.H = 4;
        c.Hkv = 2;
        c.L = 200;
        c.layout = FT_KV_BLHD;
        c.splits = 3;
        c.with_bias = 1;
        c.lengths[0] = 200;
        c.lengths[1] = 1;
        c.lengths[2] = 77;
        cases[n++] = c;
        c.layout = FT_KV_BHLD;
        c.H = 8;
        c.Hkv = 1;
        c.splits = 0;
        c.lengths[1] = 0;   /* empty: zeros */
        c.lengths[2] = 201; /* past capacity: NaN */
        cases[n++] = c;
        c.B = 1;
        c.H = 2;
        c.Hkv = 2;
        c.L = 4500;
        c.layout = FT_KV_BLHD;
        c.splits = 1;
        c.with_bias = 0;
        c.lengths[0] = 4400;
        cases[n++] = c;
        c.B = 2;
        c.L = 5000;
        c.splits = 10; /* through the workspace */
        c.with_bias = 1;
        c.lengths[0] = 5000;
        c.lengths[1] = 1;
        c.calls = 2;
        c.counters = 2;
        cases[n++] = c;
        /* short memories of head groups of 4 in 1024 row blocks (tp at D32, D64 and D128, 16-bit),
         * an empty one and one past capacity among them */
        c.B = 16;
        c.H = 256;
        c.Hkv = 64;
        c.L = 100;
        c.splits = 0;
        c.calls = 1;
        c.counters = 0;
        for (int b = 0; b < 16; b++)
            c.lengths[b] = 1 + (b * 41) % 100;
        c.lengths[2] = 0;
        c.lengths[14] = 101;
        c.tp_only = 1;
        cases[n++] = c;
        c.tp_only = 0;
        /* short memories of one head a block past one wave (the short-row forms) */
        c.B = 12;
        c.H = 24;
        c.Hkv = 24;
        c.L = 60;
        c.splits = 0;
        c.calls = 1;
        c.counters = 0;
        for (int b = 0; b < 12; b++)
            c.lengths[b] = 1 + (b * 37) % 60;
        cases[n++] = c;
        /* memories of one head a block in 1280 row blocks (ap), an empty one and one past
         * capacity among them */
        c.B = 16;
        c.H = 80;
        c.Hkv = 80;
        c.L = 500;
        c.layout = FT_KV_BHLD;
        for (int b = 0; b < 16; b++)
            c.lengths[b] = 1 + (b * 233) % 500;
        c.lengths[5] = 0;
        c.lengths[9] = 501;
        c.lengths[12] = 500;
        c.ap_only = 1;
        cases[n++] = c;
        c.ap_only = 0;
        /* memories of up to 2060 steps, one head a block, in 1024 row blocks (ad), an empty
         * one and one past capacity among them */
        c.H = 64;
        c.Hkv = 64;
        c.L = 2060;
        for (int b = 0; b < 16; b++)
            c.lengths[b] = 1 + (b * 389) % 2060;
        c.lengths[3] = 0;
        c.lengths[7] = 2061;
        c.lengths[11] = 2060;
        c.lengths[13] = 2048;
        cases[n++] = c;
        /* memories of a group of 16 heads, split automatically (hw past D128) */
        c.B = 2;
        c.H = 32;
        c.Hkv = 2;
        c.L = 900;
        c.layout = FT_KV_BHLD;
        c.lengths[0] = 900;
        c.lengths[1] = 5;
        cases[n++] = c;
    }
    /* random shapes */
    const int gs[] = {1, 2, 4, 8};
    for (int i = 0; i < 8; i++) {
        attn_case c;
        memset(&c, 0, sizeof c);
        c.is_self = i % 4 != 3;
        c.B = (int)ref_rng_range(&rng, 1, 5);
        c.Hkv = (int)ref_rng_range(&rng, 1, 3);
        c.H = c.Hkv * gs[ref_rng_range(&rng, 0, 3)];
        c.L = (int)ref_rng_range(&rng, 1, i < 6 ? 700 : 3000);
        c.layout = c.is_self ? (int)ref_rng_range(&rng, 0, 1) : (i % 2 ? FT_KV_BLHD : FT_KV_BHLD);
        c.rope = c.is_self ? (int)ref_rng_range(&rng, 0, 2) : 0;
        c.splits = (int)ref_rng_range(&rng, 0, 2) == 2 ? (int)ref_rng_range(&rng, 2, 9) : (int)ref_rng_range(&rng, 0, 1);
        c.with_bias = i % 3 != 0;
        c.counters = i % 2;
        for (int b = 0; b < c.B; b++)
            c.lengths[b] = c.is_self ? (int)ref_rng_range(&rng, 0, c.L - 1) : (int)ref_rng_range(&rng, 1, c.L);
        cases[n++] = c;
    }
    /* every case through both kernels: the register one, and the sm_90 shared-memory one
     * where this program's kernels run as sm_90 code (what the automatic choice takes there).
     * Code built for an older architecture only, on an sm_90 device (its PTX compiled by the
     * driver), must refuse the forced shared-memory kernel: those kernels are empty there. */
    int major = 0, arch = 0;
    FT_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    FT_EXPECT(t, ft_code_arch("test_attention", &arch) == FT_OK, "ft_code_arch: %s", ft_last_error());
    for (int impl = FT_ATTN_IMPL_REGISTER; impl <= FT_ATTN_IMPL_ASYNC; impl++) {
        if (impl == FT_ATTN_IMPL_ASYNC && arch < 90) {
            printf("  (compute capability %d, code for compute_%d: the shared-memory kernel is not exercised)\n", major,
                   arch);
            for (int i = 0; i < n && major >= 9; i++)
                if (!cases[i].tp_only && !cases[i].ap_only) {
                    attn_case c = cases[i];
                    c.impl = impl;
                    c.unsupported = 1;
                    run_case(t, dt, D, &c, &rng);
                    break;
                }
            continue;
        }
        for (int i = 0; i < n && t->failures == 0; i++) {
            if (cases[i].tp_only && ((D != 32 && D != 64 && D != 128) || dt == FT_FP32))
                continue;
            if (cases[i].ap_only && D != 64 && D != 128)
                continue;
            cases[i].impl = impl;
            run_case(t, dt, D, &cases[i], &rng);
        }
    }
}

/* ---------------------------------------------------------------- packed self-attention */

typedef struct packed_case {
    int B, H, Hkv, causal, with_bias, max_seq; /* max_seq: the launcher's bound (0: unknown) */
    float scale;                               /* 0: 1/sqrt(D) */
    int impl;                                  /* ft_attn_impl */
    int unsupported;                           /* the call must return FT_ERR_UNSUPPORTED, write nothing */
    int counters;                              /* pass tile counters (twice the call, the same counters) */
    int lengths[16];
} packed_case;

static void run_packed_case(ft_test *t, ft_dtype dt, int D, const packed_case *c, ref_rng *rng)
{
    const int B = c->B, H = c->H, Hkv = c->Hkv, ld = (H + 2 * Hkv) * D;
    const size_t es = ft_dtype_size(dt);
    int offsets[17];
    offsets[0] = 0;
    for (int b = 0; b < B; b++)
        offsets[b + 1] = offsets[b] + c->lengths[b];
    const int M = offsets[B];
    const size_t nin = (size_t)M * ld, nout = (size_t)M * H * D;
    float *qkv = (float *)malloc((nin + 1) * 4), *bias = (float *)malloc((size_t)ld * 4);
    float *got = (float *)malloc((nout + 1) * 4);
    double *ref = (double *)malloc((nout + 1) * sizeof(double));
    fill_normal(qkv, nin, rng, 0.0, 1.0, dt);
    fill_normal(bias, (size_t)ld, rng, 0.0, 0.5, dt);
    void *dqkv = dev_alloc(nin * es + 16), *dbias = dev_alloc((size_t)ld * es), *dout = dev_alloc(nout * es + 16);
    int *doff = dev_upload_ints(offsets, B + 1);
    dev_upload(dqkv, qkv, nin, dt);
    dev_upload(dbias, bias, (size_t)ld, dt);
    dev_poison(dout, nout * es + 16);

    ft_packed_attention_args a;
    memset(&a, 0, sizeof a);
    a.batch = B;
    a.num_heads = H;
    a.num_kv_heads = Hkv;
    a.max_seq_len = c->max_seq;
    a.seq_offsets = doff;
    a.qkv = dqkv;
    a.qkv_bias = c->with_bias ? dbias : NULL;
    a.out = dout;
    a.scale = c->scale;
    a.causal = c->causal;
    a.impl = (ft_attn_impl)c->impl;
    unsigned *dctr = NULL;
    if (c->counters) {
        dctr = (unsigned *)dev_alloc(2 * sizeof(unsigned));
        FT_CHECK_CUDA(cudaMemset(dctr, 0, 2 * sizeof(unsigned)));
        a.tile_counters = dctr;
    }
    ft_status st = PACKED(D, &a, 0);
    /* with counters, a second call must find them zeroed again and write the same output */
    for (int call = 0; call < 2 && c->counters && st == FT_OK; call++) {
        unsigned hc[2] = {1u, 1u};
        FT_CHECK_CUDA(cudaDeviceSynchronize());
        FT_CHECK_CUDA(cudaMemcpy(hc, dctr, sizeof hc, cudaMemcpyDeviceToHost));
        FT_EXPECT(t, hc[0] == 0 && hc[1] == 0, "packed h%d call %d left the tile counters at %u, %u", D, call, hc[0],
                  hc[1]);
        if (call == 0)
            st = PACKED(D, &a, 0);
    }
    FT_CHECK_CUDA(cudaDeviceSynchronize());

    char what[256];
    snprintf(what, sizeof what,
             "packed h%d %s impl=%d counters=%d B=%d H=%d Hkv=%d causal=%d bias=%d max_seq=%d scale=%g len0=%d "
             "len_last=%d",
             D, ft_dtype_name(dt), c->impl, c->counters, B, H, Hkv, c->causal, c->with_bias, c->max_seq, (double)c->scale,
             c->lengths[0], c->lengths[B - 1]);
    if (c->unsupported) {
        FT_EXPECT(t, st == FT_ERR_UNSUPPORTED && strstr(ft_last_error(), "wgmma") != NULL,
                  "%s: status %s (%s), want FT_ERR_UNSUPPORTED", what, ft_status_string(st), ft_last_error());
        unsigned char head[16], want[16];
        FT_CHECK_CUDA(cudaMemcpy(head, dout, 16, cudaMemcpyDeviceToHost));
        memset(want, 0xff, sizeof want);
        FT_EXPECT(t, memcmp(head, want, 16) == 0, "%s: wrote output though unsupported", what);
    } else
        FT_EXPECT(t, st == FT_OK, "%s: status %s (%s)", what, ft_status_string(st), ft_last_error());
    if (st == FT_OK && !c->unsupported) {
        /* the poison past the last row must survive: nothing is written outside [M, H*D] */
        unsigned char tail[16], want[16];
        FT_CHECK_CUDA(cudaMemcpy(tail, (char *)dout + nout * es, 16, cudaMemcpyDeviceToHost));
        memset(want, 0xff, sizeof want);
        FT_EXPECT(t, memcmp(tail, want, 16) == 0, "%s: wrote past the last row", what);
        if (M > 0) {
            dev_download(got, dout, nout, dt);
            ref_packed_attn r;
            memset(&r, 0, sizeof r);
            r.B = B;
            r.H = H;
            r.Hkv = Hkv;
            r.D = D;
            r.offsets = offsets;
            r.qkv = qkv;
            r.bias = c->with_bias ? bias : NULL;
            r.scale = c->scale == 0.0f ? 1.0 / sqrt((double)D) : (double)c->scale;
            r.causal = c->causal;
            r.dt = dt;
            r.out = ref;
            ref_packed_attention(&r);
            const ref_tol tol = attn_tolerance(dt);
            ft_expect_close(t, what, got, ref, nout, tol.atol, tol.rtol);
        }
    }
    FT_CHECK_CUDA(cudaFree(dqkv));
    FT_CHECK_CUDA(cudaFree(dbias));
    FT_CHECK_CUDA(cudaFree(dout));
    FT_CHECK_CUDA(cudaFree(doff));
    if (dctr != NULL)
        FT_CHECK_CUDA(cudaFree(dctr));
    free(qkv);
    free(bias);
    free(got);
    free(ref);
}

static packed_case packed_fixed(int B, int H, int Hkv, int causal, int with_bias, int max_seq, const int *len)
{
    packed_case c;
    memset(&c, 0, sizeof c);
    c.B = B;
    c.H = H;
    c.Hkv = Hkv;
    c.causal = causal;
    c.with_bias = with_bias;
    c.max_seq = max_seq;
    for (int b = 0; b < B; b++)
        c.lengths[b] = len[b];
    return c;
}

/* Tile edges (1, 63-65, 127-129 rows), empty sequences, GQA ratios 1, 4 and H, causal and
 * not, a grid smaller than the longest sequence (blocks loop over query tiles), a custom
 * scale, sequences of many key tiles (the stages' reuse), and random shapes; each through
 * the automatic choice and the mma.sync kernel forced, the wgmma kernel forced where
 * this program has it (head sizes 64 and 128 built for sm_90a on an sm_90 device), or
 * refused where it has not, and with tile counters (the persistent kernel at head size
 * 128). */
static void packed_attention_test(ft_test *t)
{
    const int D = (int)(intptr_t)t->arg;
    const ft_dtype dt = FT_CAT(FT_, FT_ATTN_TEST_DT_UPPER, );
    FT_EXPECT(t, HAS_PACKED(D), "ft_has_packed_attention says no for h%d", D);
    int sm90a = 0;
    FT_EXPECT(t, ft_code_sm90a("test", &sm90a) == FT_OK, "ft_code_sm90a: %s", ft_last_error());
    const int has_wg = sm90a && (D == 64 || D == 128);
    printf("  packed h%d: the wgmma kernel %s\n", D, has_wg ? "exists here" : "does not exist here");
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() * 11 + (uint64_t)D * 17 + (uint64_t)dt);
    packed_case cases[64];
    int n = 0;
    const int l1[] = {1, 64, 65};
    cases[n++] = packed_fixed(3, 4, 4, 0, 1, 65, l1);
    const int l2[] = {0, 17, 128, 129};
    cases[n++] = packed_fixed(4, 8, 2, 1, 1, 129, l2);
    const int l3[] = {700};
    cases[n++] = packed_fixed(1, 2, 1, 1, 0, 64, l3); /* one tile of grid: blocks loop */
    cases[n++] = packed_fixed(1, 2, 2, 0, 1, 0, l3);
    const int l4[] = {5, 200, 0};
    cases[n] = packed_fixed(3, 6, 1, 0, 0, 200, l4);
    cases[n++].scale = 0.05f;
    const int l5[] = {127, 63};
    cases[n++] = packed_fixed(2, 3, 3, 1, 1, 127, l5);
    const int gs[] = {1, 2, 4};
    for (int i = 0; i < 5; i++) {
        packed_case c;
        memset(&c, 0, sizeof c);
        c.B = (int)ref_rng_range(&rng, 1, 6);
        c.Hkv = (int)ref_rng_range(&rng, 1, 3);
        c.H = c.Hkv * gs[ref_rng_range(&rng, 0, 2)];
        c.causal = (int)ref_rng_range(&rng, 0, 1);
        c.with_bias = i % 2 == 0;
        int mx = 0;
        for (int b = 0; b < c.B; b++) {
            c.lengths[b] = (int)ref_rng_range(&rng, 0, 300);
            mx = c.lengths[b] > mx ? c.lengths[b] : mx;
        }
        c.max_seq = i % 3 == 2 ? 0 : mx;
        cases[n++] = c;
    }
    const int l6[] = {1100, 193};
    cases[n++] = packed_fixed(2, 2, 1, 1, 1, 1100, l6);
    cases[n++] = packed_fixed(2, 2, 2, 0, 0, 0, l6);
    /* a large scale spreads the scores (sd about 16 in the exp2 domain at D = 128), so rows'
     * maxima keep rising past the kernels' lazy reference (FT_ATTN_PK_SLACK) and the output
     * is rescaled mid-row, in some rows of a warp and not in others */
    cases[n] = packed_fixed(2, 2, 1, 1, 1, 1100, l6);
    cases[n++].scale = 2.0f;
    cases[n] = packed_fixed(1, 2, 2, 0, 0, 0, l3);
    cases[n++].scale = 2.0f;
    /* every case again through the mma.sync kernel, then the wgmma one forced */
    const int base = n;
    for (int i = 0; i < base; i++) {
        cases[n] = cases[i];
        cases[n++].impl = FT_ATTN_IMPL_REGISTER;
    }
    for (int i = 0; i < base; i += has_wg ? 1 : 4) {
        cases[n] = cases[i];
        cases[n].impl = FT_ATTN_IMPL_ASYNC;
        cases[n++].unsupported = !has_wg;
    }
    /* and with tile counters: at head size 128 the persistent wgmma kernel (the automatic
     * choice), elsewhere the same kernels as without; either way the counters end zeroed */
    for (int i = 0; i < base; i += has_wg && D == 128 ? 1 : 4) {
        cases[n] = cases[i];
        cases[n++].counters = 1;
    }
    /* more units (query tiles x heads) than an H100's or H200's SMs: blocks take several, the
     * stages' phases run on across units */
    const int l7[] = {1100, 600, 900};
    cases[n] = packed_fixed(3, 16, 4, 1, 1, 1100, l7);
    cases[n++].counters = 1;
    for (int i = 0; i < n && t->failures == 0; i++)
        run_packed_case(t, dt, D, &cases[i], &rng);
}

__attribute__((constructor)) static void register_attention_tests(void)
{
    const ft_dtype want = FT_CAT(FT_, FT_ATTN_TEST_DT_UPPER, );
#define FT_X(suffix, dt, head_size)                                                              \
    if (dt == want)                                                                              \
        ft_test_register("attention_" #suffix, attention_test, (void *)(intptr_t)(head_size), 1);  \
    if (dt == want && HAS_PACKED(head_size))                                                     \
        ft_test_register("packed_attention_" #suffix, packed_attention_test, (void *)(intptr_t)(head_size), 1);
    FT_ATTENTION_VARIANTS(FT_X)
#undef FT_X
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
