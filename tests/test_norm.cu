/* GPU tests of the norm family against the C references in ref/ref_norm.c.
 *
 * One test per (operation, generated variant), registered from ft/variants.h so a new
 * manifest line is tested without edits here. Each runs fixed edge shapes (n = 1, n not
 * a multiple of the vector width, rows exactly at and just past the register cache,
 * very long rows, misaligned pointers, in-place aliasing, a large mean offset) and
 * random shapes, with outputs poisoned to NaN before every launch. */
#include "ft/norm.cuh"
#include "ft/variants.h"

#include "cuda_util.h"
#include "harness.h"
#include "ref/ref_norm.h"

typedef enum norm_op {
    OP_LAYERNORM,
    OP_ABR_LAYERNORM, /* add_bias_residual_layernorm */
    OP_RMSNORM,
    OP_ABR_RMSNORM,
    OP_ADD_BIAS_ACT,
    OP_ADD_BIAS_RESIDUAL,
    OP_COUNT
} norm_op;

static const char *op_names[OP_COUNT] = {"layernorm", "add_bias_residual_layernorm", "rmsnorm",
                                         "add_bias_residual_rmsnorm", "add_bias_act", "add_bias_residual"};

/* Aliasing of outputs onto inputs, as FasterTransformer's in-place kernels use them. */
typedef enum alias_mode { ALIAS_NONE, ALIAS_Y_IS_X, ALIAS_Y_IS_RESIDUAL, ALIAS_SUM_IS_RESIDUAL } alias_mode;

typedef struct norm_case {
    int64_t m, n;
    int misalign;  /* 1: every pointer one element past a 16-byte boundary; 2: y and sum_out one
                    * element past, the inputs aligned (phases differ: element by element); 3: x,
                    * residual, y and sum_out three elements past, bias, gamma and beta aligned */
    int bias;      /* pass a bias (the ops where it is optional) */
    int sum;       /* ask for sum_out */
    alias_mode alias;
    ft_act act;
    double offset; /* mean of x: a large one tests the variance's numerical stability */
    int pipe;      /* > 0: layernorm / rmsnorm straight through ft_norm_pipe with this many stages */
    int pipe_sm;   /* its blocks an SM (few: many chunks a block) */
    int ring;      /* > 0: layernorm / rmsnorm straight through ft_norm_long with a ring of this many pieces */
    int ring_blocks; /* its blocks (0: one an SM; few: many rows a block) */
} norm_case;

typedef struct norm_test_arg {
    norm_op op;
    ft_dtype dt;
} norm_test_arg;

/* A device buffer of `count` elements, starting `misalign` elements past a 16-byte boundary.
 * `tight`: it ends with its allocation, so that compute-sanitizer's memcheck sees a read past
 * it (the weights); otherwise 16 elements of slack follow. */
typedef struct dbuf {
    void *base;
    void *p;
} dbuf;

static dbuf dbuf_alloc(size_t count, ft_dtype dt, int misalign, int tight)
{
    const size_t es = ft_dtype_size(dt);
    dbuf b;
    b.base = dev_alloc((count + (tight ? (size_t)misalign : 16)) * es);
    b.p = (char *)b.base + (size_t)misalign * es;
    return b;
}

static int op_has_residual(norm_op op)
{
    return op == OP_ABR_LAYERNORM || op == OP_ABR_RMSNORM || op == OP_ADD_BIAS_RESIDUAL;
}

/* layernorm (beta set) or rmsnorm through one of the shared-memory kernels itself, whatever
 * the launcher would choose: the first generated variant of dt. ring > 0: ft_norm_long with a
 * ring of that many pieces and at most ring_blocks blocks (0: one an SM); otherwise
 * ft_norm_pipe with `stages` and `per_sm`, or ft_norm_pipe_shift where rows are off the
 * 16-byte grid (fp32 too, which the launcher does not send there). FT_ERR_UNSUPPORTED where
 * the call fits none. */
static ft_status direct_norm(ft_dtype dt, const void *x, const void *gamma, const void *beta, void *y, int64_t m,
                             int64_t n, float eps, int rms, int stages, int per_sm, int ring, int ring_blocks)
{
    int done = 0;
    ft_status st = FT_ERR_UNSUPPORTED;
#define FT_X(suffix, DT)                                                                                         \
    if (dt == DT && !done) {                                                                                     \
        ft_norm_args_##suffix a;                                                                                 \
        memset(&a, 0, sizeof a);                                                                                 \
        a.x = (decltype(a.x))x;                                                                                  \
        a.gamma = (decltype(a.gamma))gamma;                                                                      \
        a.beta = (decltype(a.beta))beta;                                                                         \
        a.y = (decltype(a.y))y;                                                                                  \
        a.m = m;                                                                                                 \
        a.n = (int)n;                                                                                            \
        a.rms = rms;                                                                                             \
        a.eps = eps;                                                                                             \
        ft_rows_launch cfg;                                                                                      \
        int fits = 0;                                                                                            \
        done = 1;                                                                                                \
        if (ring > 0) {                                                                                          \
            st = ft_norm_long_launch_##suffix("direct_norm", a, ring, ring_blocks, 0);                           \
        } else if ((st = ft_norm_pipe_config_##suffix("direct_norm", &a, &cfg, &fits)) == FT_OK && fits) {       \
            st = ft_norm_pipe_launch_##suffix("direct_norm", a, cfg.group, (int)cfg.block, stages, per_sm, 0,    \
                                              NULL, 0);                                                          \
        } else if (st == FT_OK) { /* rows off the 16-byte grid */                                                \
            st = ft_norm_pipe_shift_config_##suffix("direct_norm", &a, stages, &cfg, &fits);                     \
            if (st == FT_OK && !fits)                                                                            \
                st = ft_fail(FT_ERR_UNSUPPORTED, "direct_norm: m=%lld n=%lld fits neither pipeline",             \
                             (long long)m, (long long)n);                                                        \
            if (st == FT_OK)                                                                                     \
                st = ft_norm_pipe_shift_launch_##suffix("direct_norm", a, cfg.group, stages, per_sm, 0, NULL, 0); \
        }                                                                                                        \
    }
    FT_NORM_VARIANTS(FT_X)
#undef FT_X
    return st;
}

static void run_case(ft_test *t, norm_op op, ft_dtype dt, norm_case c, ref_rng *rng)
{
    const int64_t m = c.m, n = c.n;
    const size_t mn = (size_t)(m * n);
    const int is_norm = op <= OP_ABR_RMSNORM;
    const int rms = op == OP_RMSNORM || op == OP_ABR_RMSNORM;
    const int has_res = op_has_residual(op);
    const int has_sum = c.sum && (op == OP_ABR_LAYERNORM || op == OP_ABR_RMSNORM);
    const int use_bias = c.bias && (has_res || op == OP_ADD_BIAS_ACT); /* the ops that take a bias */
    const int has_beta = op == OP_LAYERNORM || op == OP_ABR_LAYERNORM;
    const float eps = 1e-5f;

    float *hx = (float *)malloc(mn * sizeof(float)), *hr = (float *)malloc(mn * sizeof(float));
    float *hb = (float *)malloc(n * sizeof(float)), *hg = (float *)malloc(n * sizeof(float));
    float *hbeta = (float *)malloc(n * sizeof(float));
    float *got = (float *)malloc(mn * sizeof(float));
    double *ref = (double *)malloc(mn * sizeof(double)), *ref_sum = (double *)malloc(mn * sizeof(double));
    fill_normal(hx, mn, rng, c.offset, 1.0, dt);
    fill_normal(hr, mn, rng, 0.0, 1.0, dt);
    fill_normal(hb, n, rng, 0.0, 0.5, dt);
    fill_normal(hg, n, rng, 1.0, 0.25, dt);
    fill_normal(hbeta, n, rng, 0.0, 0.5, dt);

    const int in_off = c.misalign == 1 ? 1 : c.misalign == 3 ? 3 : 0;   /* x, residual */
    const int out_off = c.misalign == 2 ? 1 : in_off;                     /* y, sum_out */
    const int vec_off = c.misalign == 1 ? 1 : 0;                          /* bias, gamma, beta */
    dbuf x = dbuf_alloc(mn, dt, in_off, 0), r = dbuf_alloc(mn, dt, in_off, 0);
    dbuf b = dbuf_alloc(n, dt, vec_off, 1), g = dbuf_alloc(n, dt, vec_off, 1);
    dbuf beta = dbuf_alloc(n, dt, vec_off, 1), yb = dbuf_alloc(mn, dt, out_off, 0);
    dbuf sb = dbuf_alloc(mn, dt, out_off, 0);
    dev_upload(x.p, hx, mn, dt);
    dev_upload(r.p, hr, mn, dt);
    dev_upload(b.p, hb, n, dt);
    dev_upload(g.p, hg, n, dt);
    dev_upload(beta.p, hbeta, n, dt);
    const size_t es = ft_dtype_size(dt);
    dev_poison(yb.p, mn * es);
    dev_poison(sb.p, mn * es);

    void *y = c.alias == ALIAS_Y_IS_X ? x.p : c.alias == ALIAS_Y_IS_RESIDUAL ? r.p : yb.p;
    void *sum = !has_sum ? NULL : c.alias == ALIAS_SUM_IS_RESIDUAL ? r.p : sb.p;
    const void *bias = use_bias ? b.p : NULL;
    const void *betap = has_beta ? beta.p : NULL;

    ft_status st = FT_ERR_CUDA;
    if (c.pipe > 0 || c.ring > 0) /* layernorm and rmsnorm cases only */
        st = direct_norm(dt, x.p, g.p, betap, y, m, n, eps, rms, c.pipe, c.pipe_sm, c.ring, c.ring_blocks);
    switch (c.pipe > 0 || c.ring > 0 ? OP_COUNT : op) {
    case OP_LAYERNORM: st = ft_layernorm(dt, x.p, g.p, betap, y, m, n, eps, 0); break;
    case OP_ABR_LAYERNORM:
        st = ft_add_bias_residual_layernorm(dt, x.p, r.p, bias, g.p, betap, y, sum, m, n, eps, 0);
        break;
    case OP_RMSNORM: st = ft_rmsnorm(dt, x.p, g.p, y, m, n, eps, 0); break;
    case OP_ABR_RMSNORM: st = ft_add_bias_residual_rmsnorm(dt, x.p, r.p, bias, g.p, y, sum, m, n, eps, 0); break;
    case OP_ADD_BIAS_ACT: st = ft_add_bias_act(dt, x.p, bias, y, m, n, c.act, 0); break;
    case OP_ADD_BIAS_RESIDUAL: st = ft_add_bias_residual(dt, x.p, r.p, bias, y, m, n, 0); break;
    default: break;
    }
    FT_CHECK_CUDA(cudaGetLastError());
    FT_CHECK_CUDA(cudaDeviceSynchronize());

    char what[200];
    snprintf(what, sizeof what,
             "%s %s m=%lld n=%lld misalign=%d bias=%d sum=%d alias=%d act=%s offset=%g pipe=%d/%d ring=%d/%d",
             op_names[op], ft_dtype_name(dt), (long long)m, (long long)n, c.misalign, use_bias, has_sum, (int)c.alias,
             ft_act_name(c.act), c.offset, c.pipe, c.pipe_sm, c.ring, c.ring_blocks);
    FT_EXPECT(t, st == FT_OK, "%s: status %s (%s)", what, ft_status_string(st), ft_last_error());
    if (st == FT_OK) {
        if (is_norm)
            ref_norm_rows(hx, has_res ? hr : NULL, bias ? hb : NULL, hg, betap ? hbeta : NULL, ref,
                          has_sum ? ref_sum : NULL, m, n, eps, rms, dt);
        else
            ref_pointwise(hx, bias ? hb : NULL, has_res ? hr : NULL, ref, m, n,
                          op == OP_ADD_BIAS_ACT ? c.act : FT_ACT_IDENTITY);
        ref_tol tol = ref_tolerance(dt);
        dev_download(got, y, mn, dt);
        ft_expect_close(t, what, got, ref, mn, tol.atol, tol.rtol);
        if (has_sum) {
            char w2[240];
            snprintf(w2, sizeof w2, "%s (sum_out)", what);
            dev_download(got, sum, mn, dt);
            ft_expect_close(t, w2, got, ref_sum, mn, tol.atol, tol.rtol);
        }
    }

    dbuf all[] = {x, r, b, g, beta, yb, sb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        FT_CHECK_CUDA(cudaFree(all[i].base));
    free(hx);
    free(hr);
    free(hb);
    free(hg);
    free(hbeta);
    free(got);
    free(ref);
    free(ref_sum);
}

/* Shapes every op runs: the edges of each code path of the kernels. */
static const int64_t edge_shapes[][2] = {
    {1, 1},   {1, 2},   {3, 7},    {2, 8},     {5, 33},    {4, 64},    {7, 127},   {3, 128},
    {2, 129}, {9, 256}, {3, 257},  {64, 768},  {17, 1000}, {8, 1024},  {300, 24},  {5, 4096},
    {3, 4104}, {2, 8192}, {2, 32768}, {1, 32776}, {2, 65536}, {1, 100003}, {4, 4095}, {33, 1003},
    {2, 32767}, {3, 32769}, {9, 1001}, {6, 250},
};

static void norm_test(ft_test *t)
{
    const norm_test_arg *a = (const norm_test_arg *)t->arg;
    ref_rng rng;
    ref_rng_seed(&rng, ref_test_seed() + (uint64_t)a->op * 131 + (uint64_t)a->dt);
    const int is_norm = a->op <= OP_ABR_RMSNORM;
    const int nedge = (int)(sizeof edge_shapes / sizeof edge_shapes[0]);
    const int nrandom = 12;
    for (int i = 0; i < nedge + nrandom && t->failures == 0; i++) {
        norm_case c;
        memset(&c, 0, sizeof c);
        if (i < nedge) {
            c.m = edge_shapes[i][0];
            c.n = edge_shapes[i][1];
        } else {
            c.m = ref_rng_range(&rng, 1, 200);
            c.n = ref_rng_range(&rng, 1, 6000);
            if (i % 2)
                c.n = (c.n + 7) / 8 * 8; /* half of them take the vector path */
        }
        c.misalign = i % 5 == 3 ? 1 : i % 5 == 1 ? 2 + (i / 5) % 2 : 0;
        c.bias = i % 3 != 1;
        c.sum = i % 2 == 0 || i % 4 == 3; /* the odd ones: sum_out over the residual */
        c.act = (ft_act)(i % 4);
        c.offset = (is_norm && i % 4 == 2) ? 30.0 : 0.0;
        switch (i % 4) { /* in-place forms that the op admits */
        case 1: c.alias = ALIAS_Y_IS_X; break;
        case 2: c.alias = op_has_residual(a->op) ? ALIAS_Y_IS_RESIDUAL : ALIAS_NONE; break;
        case 3: c.alias = (a->op == OP_ABR_LAYERNORM || a->op == OP_ABR_RMSNORM) ? ALIAS_SUM_IS_RESIDUAL : ALIAS_NONE; break;
        default: c.alias = ALIAS_NONE; break;
        }
        run_case(t, a->op, a->dt, c, &rng);
    }
    /* many rows: every op through its launcher (the first two: the plain norms' shared-memory
     * pipeline on sm_90, the pointwise ops' many rows a thread), then the pipeline itself at
     * its edges: fewer chunks than blocks, a block's many chunks (few blocks an SM), a
     * partial last chunk of rows, one thread a row, rows past 16 KB, in place; last, rows
     * off the 16-byte grid through the launcher (ft_norm_rows_staged's blocks walking many
     * rows, 4 and 16 rows a block; on sm_90 ft_norm_pipe_shift for the plain fp16 and bf16
     * norms at 4095, 8999 and 2049, elsewhere ft_norm_rows_shift) and ft_norm_pipe_shift
     * itself: few blocks an SM (many rows a block), in place, fewer rows than blocks; the
     * pointwise ops take a bias in two cases of three and GELU or SiLU (rows off the grid:
     * ft_pointwise_staged, in place at 20000 x 127, 5 x 3001 with classes of no row); last,
     * the stage plan's shapes through the launcher (2-byte types on sm_90: 8192 and 2048 at
     * two stages, 16384 at four, rows of 640 threads) and the pipeline's rows of 513 to 1024
     * threads at two to four stages (2-byte types) */
    static const struct {
        int64_t m, n;
        int stages, per_sm, alias_x;
        double offset;
    } many[] = {
        {4000, 4096, 0, 0, 1, 0.0}, {3000, 2048, 0, 0, 0, 30.0}, {3, 4096, 2, 0, 0, 0.0},     {777, 4096, 2, 1, 0, 30.0},
        {5001, 256, 3, 1, 1, 0.0},  {2000, 1000, 3, 2, 0, 30.0}, {1500, 24, 4, 1, 0, 0.0},    {333, 16384, 3, 1, 1, 0.0},
        {600, 8192, 2, 1, 0, 0.0},  {129, 12288, 3, 1, 0, 0.0},  {2000, 4095, 0, 0, 1, 0.0},  {3000, 1001, 0, 0, 0, 30.0},
        {20000, 127, 0, 0, 1, 0.0}, {9000, 1001, 0, 0, 0, 0.0},  {1000, 8999, 0, 0, 0, 30.0},
        {777, 4095, 2, 1, 0, 30.0}, {1500, 1100, 4, 2, 1, 0.0},  {5, 3001, 3, 0, 0, 0.0},     {4000, 2049, 0, 0, 0, 0.0},
        {1500, 8192, 0, 0, 0, 30.0}, {300, 16384, 0, 0, 1, 0.0}, {5000, 2048, 0, 0, 0, 0.0},  {300, 20480, 0, 0, 1, 30.0},
        {600, 18432, 4, 1, 1, 0.0},  {100, 32768, 2, 0, 0, 30.0}, {400, 32768, 3, 1, 0, 0.0},
    };
    int arch = 0; /* what this program's kernels run as here: the pipeline is empty below sm_90 code */
    FT_EXPECT(t, ft_code_arch("test_norm", &arch) == FT_OK, "ft_code_arch: %s", ft_last_error());
    for (size_t i = 0; i < sizeof many / sizeof many[0] && t->failures == 0; i++) {
        if (many[i].stages > 0 && (arch < 90 || (a->op != OP_LAYERNORM && a->op != OP_RMSNORM)))
            continue; /* the pipeline is sm_90 code, for the two plain norms */
        if (many[i].stages > 0 && ft_dtype_size(a->dt) == 4 && many[i].n > 16384)
            continue; /* fp32's takes rows of up to 512 threads (16384 elements) */
        norm_case c;
        memset(&c, 0, sizeof c);
        c.m = many[i].m;
        c.n = many[i].n;
        c.alias = many[i].alias_x ? ALIAS_Y_IS_X : ALIAS_NONE;
        c.offset = many[i].offset;
        c.pipe = many[i].stages;
        c.pipe_sm = many[i].per_sm;
        c.bias = !is_norm && i % 3 != 1; /* add_bias_act off the grid with a bias and GELU or SiLU: */
        c.act = is_norm ? FT_ACT_IDENTITY : i % 2 ? FT_ACT_GELU : FT_ACT_SILU; /* ft_pointwise_staged */
        run_case(t, a->op, a->dt, c, &rng);
    }
    /* rows past the pipeline's registers through ft_norm_long itself (sm_90, the plain norms):
     * rows of 5, 8, 6, 5 and 3 pieces of 16 KB for 2-byte types (fp32 10, 16, 12, 9, 5) with
     * a last piece of 16 bytes (32776, 16392) or a partial one, a ring of exactly a row (8 for
     * 65536: each piece of the next row loads once this row's piece in its place is stored),
     * rows wrapping round the ring, few blocks (many rows a block), fewer rows than blocks, in
     * place, a large mean (the sums' shift); cases whose rows the ring cannot hold are skipped.
     * Rows off the 16-byte grid (misalign 3: x and y three elements past it, gamma and beta
     * on it; n odd, so each row starts at another offset): 40001 in place, and rows whose
     * whole blocks are one more than a number of pieces (n = -5: (5 * 16384 + 16) / size + 1,
     * 40969 for 2-byte types, 20485 for fp32), so that some rows' last piece holds one block
     * and starts early, in a ring of exactly a row. Last, through the launcher (ft_norm_long
     * on sm_90, ft_norm_rows elsewhere): 2-byte rows of 128 KB (37 of them), of 72 KB and 16
     * bytes with a large mean (300) and off the grid (300 x 40001); fp32 rows of 80 KB in
     * place and off the grid (36001, in place) at the rule's six rows an SM and 5 more (m 0
     * below). `only`: the element size a case is for (0: all). */
    static const struct {
        int64_t m, n;
        int ring, blocks, alias_x;
        double offset;
        int misalign, only;
    } longs[] = {
        {300, 40000, 14, 8, 1, 30.0, 0, 0}, {20, 65536, 8, 3, 0, 0.0, 0, 0},  {133, 49152, 14, 0, 0, 0.0, 0, 0},
        {3, 32776, 14, 0, 0, 30.0, 0, 0},   {41, 16392, 3, 5, 1, 0.0, 0, 0},  {300, 40001, 14, 8, 1, 30.0, 3, 0},
        {50, -5, 6, 3, 0, 0.0, 3, 0},       {37, 65536, 0, 0, 0, 0.0, 0, 2},  {300, 36872, 0, 0, 0, 30.0, 0, 2},
        {300, 40001, 0, 0, 0, 30.0, 3, 2},  {0, 20480, 0, 0, 1, 30.0, 0, 4},  {0, 36001, 0, 0, 1, 0.0, 0, 4},
    };
    const int es = (int)ft_dtype_size(a->dt);
    for (size_t i = 0; i < sizeof longs / sizeof longs[0] && t->failures == 0; i++) {
        if (a->op != OP_LAYERNORM && a->op != OP_RMSNORM)
            break;
        const int64_t n = longs[i].n > 0 ? longs[i].n : (-longs[i].n * 16384 + 16) / es + 1;
        if (longs[i].ring > 0 && (arch < 90 || (n * es / 16 * 16 + 16383) / 16384 > longs[i].ring))
            continue; /* sm_90 code; the ring holds a row */
        if (longs[i].only != 0 && longs[i].only != es)
            continue;
        int sms = 0;
        FT_EXPECT(t, ft_sm_count("test_norm", &sms) == FT_OK, "ft_sm_count: %s", ft_last_error());
        norm_case c;
        memset(&c, 0, sizeof c);
        c.m = longs[i].m > 0 ? longs[i].m : 6 * (int64_t)sms + 5;
        c.n = n;
        c.alias = longs[i].alias_x ? ALIAS_Y_IS_X : ALIAS_NONE;
        c.offset = longs[i].offset;
        c.misalign = longs[i].misalign;
        c.ring = longs[i].ring;
        c.ring_blocks = longs[i].blocks;
        run_case(t, a->op, a->dt, c, &rng);
    }
    /* every activation on a vector-path shape, a shape off the 16-byte grid and the same
     * with y at another offset from it (element by element) */
    if (a->op == OP_ADD_BIAS_ACT)
        for (int act = 0; act < 4; act++)
            for (int s = 0; s < 3; s++) {
                norm_case c;
                memset(&c, 0, sizeof c);
                c.m = 37;
                c.n = s ? 777 : 3072;
                c.misalign = s == 2 ? 2 : 0;
                c.bias = 1;
                c.act = (ft_act)act;
                run_case(t, a->op, a->dt, c, &rng);
            }
}

static const ft_dtype variant_dtypes[] = {
#define FT_X(suffix, dt) dt,
    FT_NORM_VARIANTS(FT_X)
#undef FT_X
};
#define NVARIANTS (sizeof variant_dtypes / sizeof variant_dtypes[0])

static norm_test_arg test_args[OP_COUNT * NVARIANTS];

__attribute__((constructor)) static void register_norm_tests(void)
{
    int k = 0;
    for (int v = 0; v < (int)NVARIANTS; v++)
        for (int op = 0; op < OP_COUNT; op++, k++) {
            test_args[k].op = (norm_op)op;
            test_args[k].dt = variant_dtypes[v];
            char name[128];
            snprintf(name, sizeof name, "%s_%s", op_names[op], ft_dtype_name(variant_dtypes[v]));
            ft_test_register(name, norm_test, &test_args[k], 1);
        }
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, ft_cuda_probe);
}
