/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check-main.h: the one way a unit test program runs its suite:
 * Check's default fork mode (CK_FORK=no for valgrind), verbosity from
 * CK_VERBOSITY, exit status 1 when any check failed; with
 * PREEMPT_TEST_TALLY set, one line "NAME - CHECKS FAILURES" appended to
 * that file (scripts/test.sh counts a build whose logs go with it). */
#ifndef PREEMPT_CHECK_MAIN_H
#define PREEMPT_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A raw value for a test's request, from a literal: what an operator or a
 * drifted writer would put. Tests only: lib/, tools/ and the simulator make
 * values with the records' writer alone (tests/records-grammar.sh). */
#define TV(s) (&(struct preempt_value){ .text_ = s })

static inline int preempt_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    if (getenv("PREEMPT_TEST_TALLY")) {
        FILE *comm = fopen("/proc/self/comm", "r"), *f = fopen(getenv("PREEMPT_TEST_TALLY"), "a");
        char name[32] = "unit";

        if (comm && fgets(name, sizeof(name), comm))
            name[strcspn(name, "\n")] = '\0';
        if (f)
            (void)fprintf(f, "%s - %d %d\n", strncmp(name, "lt-", 3) ? name : name + 3, srunner_ntests_run(sr),
                          failed);
        if (comm)
            (void)fclose(comm);
        if (f)
            (void)fclose(f);
    }
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A private directory for one test, under $TMPDIR (default /tmp); buf
 * receives its path. */
static inline void preempt_test_mkdtemp(char *buf, size_t size, const char *name)
{
    (void)snprintf(buf, size, "%s/%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Removes a test's directory and everything in it. */
static inline void preempt_test_rmrf(const char *dir)
{
    char cmd[4200];

    (void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

#endif
