/* ft/types.h from plain C, and the reference helpers' fp16/bf16 rounding and norm
 * reference on hand-checked values. Runs everywhere. */
#include <math.h>
#include <string.h>

#include "ft/types.h"
#include "harness.h"
#include "ref/ref_norm.h"

FT_TEST(status_strings_and_messages)
{
    FT_EXPECT(t, strcmp(ft_status_string(FT_OK), "ok") == 0, "FT_OK string");
    const ft_status all[] = {FT_ERR_INVALID_ARGUMENT, FT_ERR_UNSUPPORTED, FT_ERR_MISALIGNED, FT_ERR_CUDA};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        FT_EXPECT(t, strcmp(ft_status_string(all[i]), "unknown status") != 0, "status %d has no string", (int)all[i]);
    FT_EXPECT(t, strcmp(ft_status_string((ft_status)42), "unknown status") == 0, "out-of-range status");
    FT_EXPECT(t, ft_fail(FT_ERR_UNSUPPORTED, "f: head size %d", 72) == FT_ERR_UNSUPPORTED, "ft_fail returns");
    FT_EXPECT(t, strcmp(ft_last_error(), "f: head size 72") == 0, "message is '%s'", ft_last_error());
}

FT_TEST(dtype_names_and_sizes)
{
    FT_EXPECT(t, ft_dtype_size(FT_FP32) == 4 && ft_dtype_size(FT_FP16) == 2 && ft_dtype_size(FT_BF16) == 2 &&
                     ft_dtype_size(FT_INT8) == 1 && ft_dtype_size(FT_INT32) == 4,
              "dtype sizes");
    FT_EXPECT(t, ft_dtype_size((ft_dtype)17) == 0, "unknown dtype size");
    FT_EXPECT(t, strcmp(ft_dtype_name(FT_BF16), "bf16") == 0, "bf16 name");
    FT_EXPECT(t, strcmp(ft_act_name(FT_ACT_GELU), "gelu") == 0, "gelu name");
}

FT_TEST(fp16_rounding_matches_ieee)
{
    const struct { float f; uint16_t h; } cases[] = {
        {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00},
        {5.9604644775390625e-8f, 0x0001}, {2.98e-8f, 0x0000}, {0.1f, 0x2e66}, {1.00048828125f, 0x3c00},
        {1.00146484375f, 0x3c02}, {6.103515625e-5f, 0x0400}, {0.0f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint16_t h = ref_f32_to_f16_bits(cases[i].f);
        FT_EXPECT(t, h == cases[i].h, "fp16(%g) = 0x%04x, want 0x%04x", (double)cases[i].f, h, cases[i].h);
        if (cases[i].h != 0x7c00)
            FT_EXPECT(t, ref_f16_bits_to_f32(cases[i].h) == (float)ref_round(cases[i].f, FT_FP16),
                      "round trip of %g", (double)cases[i].f);
    }
    FT_EXPECT(t, isnan(ref_f16_bits_to_f32(ref_f32_to_f16_bits(NAN))), "NaN stays NaN");
}

FT_TEST(bf16_rounding_matches_ieee)
{
    FT_EXPECT(t, ref_f32_to_bf16_bits(1.0f) == 0x3f80, "bf16(1)");
    FT_EXPECT(t, ref_f32_to_bf16_bits(1.00390625f) == 0x3f80, "tie rounds to even (down)");
    FT_EXPECT(t, ref_f32_to_bf16_bits(1.01171875f) == 0x3f82, "tie rounds to even (up)");
    FT_EXPECT(t, ref_bf16_bits_to_f32(0xc040) == -3.0f, "bf16 -3");
    FT_EXPECT(t, isnan(ref_bf16_bits_to_f32(ref_f32_to_bf16_bits(NAN))), "NaN stays NaN");
}

FT_TEST(norm_reference_by_hand)
{
    /* [1,2,3,4]: mean 2.5, var 1.25 */
    const float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 2, 1}, b[4] = {0, 0, 0, 1};
    double y[4];
    ref_norm_rows(x, NULL, NULL, g, b, y, NULL, 1, 4, 0.0, 0, FT_FP32);
    const double s = 1.0 / sqrt(1.25);
    const double want[4] = {-1.5 * s, -0.5 * s, 2 * 0.5 * s, 1.5 * s + 1};
    for (int i = 0; i < 4; i++)
        FT_EXPECT(t, fabs(y[i] - want[i]) < 1e-12, "layernorm[%d] = %g, want %g", i, y[i], want[i]);
    ref_norm_rows(x, NULL, NULL, g, NULL, y, NULL, 1, 4, 0.0, 1, FT_FP32);
    const double r = 1.0 / sqrt(30.0 / 4.0);
    FT_EXPECT(t, fabs(y[2] - 6.0 * r) < 1e-12, "rmsnorm[2] = %g, want %g", y[2], 6.0 * r);
    FT_EXPECT(t, fabs(ref_act(1.0, FT_ACT_GELU) - 0.8411919906082768) < 1e-12, "gelu(1)");
    FT_EXPECT(t, fabs(ref_act(-1.0, FT_ACT_SILU) + 0.2689414213699951) < 1e-12, "silu(-1)");
}

int main(int argc, char **argv)
{
    return ft_test_main(argc, argv, NULL);
}
