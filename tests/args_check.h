/* The argument-check tests' expectation (tests/test_*_args.cu over dtype variants): `call`
 * returns `want` and leaves a message containing `needle`; `dt`, an ft_dtype in scope,
 * names the variant in a failure. No CUDA call is made: no check lets the fake pointers
 * the tests pass reach a kernel. */
#ifndef FT_TEST_ARGS_CHECK_H
#define FT_TEST_ARGS_CHECK_H

#include <string.h>

#include "ft/types.h"
#include "harness.h"

#define EXPECT_STATUS(t, call, want, needle)                                                     \
    do {                                                                                         \
        ft_last_error(); /* the message buffer exists before the call */                         \
        ft_status got_ = (call);                                                                 \
        FT_EXPECT(t, got_ == (want), "%s: %s: got %s, want %s (%s)", ft_dtype_name(dt), #call,    \
                  ft_status_string(got_), ft_status_string(want), ft_last_error());              \
        FT_EXPECT(t, strstr(ft_last_error(), (needle)) != NULL, "%s: %s: message '%s' lacks '%s'", \
                  ft_dtype_name(dt), #call, ft_last_error(), (needle));                          \
    } while (0)

#endif /* FT_TEST_ARGS_CHECK_H */
