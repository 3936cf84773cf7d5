/* Entry point of test_headers_standalone: that it compiled and linked is the test. */
#include <stdio.h>

int main(void)
{
    printf("PASS headers_standalone: %d headers, one translation unit each, linked together\n", FT_N_HEADERS);
    printf("1 passed, 0 failed, 0 skipped\n");
    return 0;
}
