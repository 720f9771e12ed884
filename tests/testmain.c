/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one main of the test programs that register their tests with
 * TL_PROGRAM (testlib.h): set-up, each test in order (selected by the
 * arguments), tear-down, and the closing "N passed, N failed" line.
 */
#define TESTLIB_MAIN
#include "testlib.h"

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    if (tl_program.setup) {
        int r = tl_program.setup(argc, argv);
        if (r != TL_RUN_TESTS) return r;
    }
    for (size_t i = 0; i < tl_program.ntests; i++)
        tl_run(tl_program.tests[i].name, tl_program.tests[i].fn);
    if (tl_program.teardown) tl_program.teardown();
    return tl_finish();
}
