/* tests/unit/check-main.h: the one way a unit test program runs its suite:
 * Check's default fork mode (CK_FORK=no for valgrind), verbosity from
 * CK_VERBOSITY, exit status 1 when any check failed. */
#ifndef PREEMPT_CHECK_MAIN_H
#define PREEMPT_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int preempt_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
