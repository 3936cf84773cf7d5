/* ftkernels test harness: plain C, one header, no dependencies.
 *
 *   FT_TEST(name) { ... }       a test that runs everywhere
 *   FT_GPU_TEST(name) { ... }   a test that needs a CUDA device; reported SKIP without one
 *   ft_test_register(...)       register tests at run time (e.g. one per generated variant)
 *   FT_EXPECT(t, cond, fmt...)  record a failure with file:line and keep going
 *   ft_expect_close(...)        compare an array against a double reference
 *
 * Each test prints one line, PASS / FAIL / SKIP; the last line of the program is
 * "N passed, N failed, N skipped". Exit status: 1 on any failure; 77 when every test
 * was skipped (CTest's SKIP_RETURN_CODE, so a GPU program without a GPU shows as
 * skipped, never passed); 0 otherwise. Arguments: substrings; only tests whose name
 * contains one of them run. */
#ifndef FT_TEST_HARNESS_H
#define FT_TEST_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_TEST_MAX 4096
#define FT_TEST_MSG 1024

typedef struct ft_test {
    const char *name;
    void *arg;        /* what the registration passed */
    int failures;     /* expectations that failed */
    int skipped;      /* set by FT_SKIP */
    char msg[FT_TEST_MSG];
} ft_test;

typedef void (*ft_test_fn)(ft_test *t);

typedef struct ft_test_entry {
    char name[128];
    ft_test_fn fn;
    void *arg;
    int gpu;
} ft_test_entry;

static ft_test_entry ft_tests_[FT_TEST_MAX];
static int ft_ntests_;

static void ft_test_register(const char *name, ft_test_fn fn, void *arg, int gpu)
{
    if (ft_ntests_ >= FT_TEST_MAX) {
        fprintf(stderr, "harness: more than %d tests\n", FT_TEST_MAX);
        exit(2);
    }
    ft_test_entry *e = &ft_tests_[ft_ntests_++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->fn = fn;
    e->arg = arg;
    e->gpu = gpu;
}

#define FT_TEST_DEFINE_(name, gpu)                                                               \
    static void name(ft_test *t);                                                                \
    __attribute__((constructor)) static void name##_register_(void)                              \
    {                                                                                            \
        ft_test_register(#name, name, NULL, gpu);                                                \
    }                                                                                            \
    static void name(ft_test *t)

#define FT_TEST(name) FT_TEST_DEFINE_(name, 0)
#define FT_GPU_TEST(name) FT_TEST_DEFINE_(name, 1)

/* Appends to the test's message (the first few failures are kept, the rest counted). */
static void ft_test_failf(ft_test *t, const char *file, int line, const char *fmt, ...)
{
    t->failures++;
    size_t used = strlen(t->msg);
    if (t->failures > 4 || used + 8 >= sizeof t->msg)
        return;
    used += (size_t)snprintf(t->msg + used, sizeof t->msg - used, "%s%s:%d: ", used ? "\n    " : "", file, line);
    if (used >= sizeof t->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg + used, sizeof t->msg - used, fmt, ap);
    va_end(ap);
}

#define FT_EXPECT(t, cond, ...)                                                                  \
    do {                                                                                         \
        if (!(cond))                                                                             \
            ft_test_failf((t), __FILE__, __LINE__, __VA_ARGS__);                                 \
    } while (0)

#define FT_SKIP(t, ...)                                                                          \
    do {                                                                                         \
        (t)->skipped = 1;                                                                        \
        snprintf((t)->msg, sizeof (t)->msg, __VA_ARGS__);                                        \
        return;                                                                                  \
    } while (0)

/* |got - ref| <= atol + rtol*|ref| for every element; NaN or Inf in got where ref is
 * finite always fails. Reports the count, the worst element and its index. Returns 1
 * when all elements pass. */
#define ft_expect_close(t, what, got, ref, count, atol, rtol)                                    \
    ft_expect_close_at_((t), __FILE__, __LINE__, (what), (got), (ref), (count), (atol), (rtol))

static int ft_expect_close_at_(ft_test *t, const char *file, int line, const char *what, const float *got,
                               const double *ref, size_t count, double atol, double rtol)
{
    size_t bad = 0, worst = 0;
    double worst_excess = -1.0;
    for (size_t i = 0; i < count; i++) {
        const double g = got[i], r = ref[i];
        const double lim = atol + rtol * fabs(r);
        const double err = fabs(g - r);
        const int fail = isnan(g) || isinf(g) || !(err <= lim);
        if (fail) {
            bad++;
            const double excess = isfinite(g) ? err / lim : INFINITY;
            if (excess > worst_excess) {
                worst_excess = excess;
                worst = i;
            }
        }
    }
    if (bad) {
        ft_test_failf(t, file, line, "%s: %zu of %zu elements off (atol %g, rtol %g); worst [%zu] got %.8g want %.8g",
                      what, bad, count, atol, rtol, worst, (double)got[worst], ref[worst]);
        return 0;
    }
    return 1;
}

/* probe: returns 1 when a GPU can run the GPU tests, else 0 with a reason in buf. */
typedef int (*ft_gpu_probe_fn)(char *buf, size_t len);

static int ft_test_main(int argc, char **argv, ft_gpu_probe_fn probe)
{
    char reason[256] = "no GPU probe in this program";
    int gpu_checked = 0, have_gpu = 0;
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ft_ntests_; i++) {
        ft_test_entry *e = &ft_tests_[i];
        int selected = argc <= 1;
        for (int a = 1; a < argc; a++)
            selected |= strstr(e->name, argv[a]) != NULL;
        if (!selected)
            continue;
        ft_test t;
        memset(&t, 0, sizeof t);
        t.name = e->name;
        t.arg = e->arg;
        if (e->gpu) {
            if (!gpu_checked) {
                have_gpu = probe ? probe(reason, sizeof reason) : 0;
                gpu_checked = 1;
            }
            if (!have_gpu) {
                printf("SKIP %s: %s\n", e->name, reason);
                skipped++;
                continue;
            }
        }
        e->fn(&t);
        if (t.skipped) {
            printf("SKIP %s: %s\n", e->name, t.msg);
            skipped++;
        } else if (t.failures) {
            printf("FAIL %s (%d failed expectation%s)\n    %s\n", e->name, t.failures, t.failures == 1 ? "" : "s",
                   t.msg);
            failed++;
        } else {
            printf("PASS %s\n", e->name);
            passed++;
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed)
        return 1;
    return (passed == 0 && skipped > 0) ? 77 : 0;
}

#endif /* FT_TEST_HARNESS_H */
