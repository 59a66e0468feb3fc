/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_tables.c: every enum round-trips through its name table,
 * from -1 to COUNT + 1 (R16), through the internal and the public lookups. */
#include "config.h"

#include "check-main.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preempt.h"
#include "preempt_fsm.h"

#define ROUND_TRIP(count, to_string, from_string)                                       \
    do {                                                                                \
        for (int i_ = -1; i_ <= (count) + 1; i_++) {                                     \
            const char *n_ = to_string(i_);                                             \
            if (i_ < 0 || i_ >= (count)) {                                              \
                ck_assert_msg(n_ == NULL, #to_string "(%d) should be NULL", i_);        \
                continue;                                                               \
            }                                                                           \
            ck_assert_msg(n_ && n_[0], #to_string "(%d) has no name", i_);              \
            ck_assert_int_eq(from_string(n_), i_);                                      \
        }                                                                               \
        ck_assert_int_eq(from_string("no-such-name"), -EINVAL);                        \
        ck_assert_int_eq(from_string(NULL), -EINVAL);                                  \
        ck_assert_int_eq(from_string(""), -EINVAL);                                    \
    } while (0)

/* Names are unique and kebab-case: lower-case letters, digits and '-'. */
static void assert_kebab(const char *n)
{
    for (const char *p = n; *p; p++)
        ck_assert_msg((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-', "'%s' is not kebab-case", n);
}

START_TEST(test_states)
{
    ROUND_TRIP(PREEMPT_STATE__COUNT, preempt_state_to_string, preempt_state_from_string_);
    for (int i = 0; i < PREEMPT_STATE__COUNT; i++) {
        assert_kebab(preempt_state_to_string(i));
        ck_assert_ptr_nonnull(preempt_state_truth(i));
    }
    ck_assert_ptr_null(preempt_state_truth(PREEMPT_STATE__COUNT));
}
END_TEST

START_TEST(test_required_states)
{
    /* the design (docs/design.md): these six exist with exactly these names. */
    static const char *const required[] = { "idle", "own-signal", "step-agreed", "countdown", "final-save", "exit" };
    enum preempt_state st = PREEMPT_STATE__COUNT;

    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        ck_assert_int_eq(preempt_state_from_string(required[i], &st), 0);
        ck_assert_str_eq(preempt_state_to_string(st), required[i]);
    }
    ck_assert_int_eq(preempt_state_from_string("nowhere", &st), -EINVAL);
    ck_assert_int_eq(preempt_state_from_string(NULL, &st), -EINVAL);
    ck_assert_int_eq(preempt_state_from_string("idle", NULL), -EINVAL);
}
END_TEST

START_TEST(test_events)
{
    ROUND_TRIP(PREEMPT_EV__COUNT, preempt_event_to_string_, preempt_event_from_string_);
    for (int i = 0; i < PREEMPT_EV__COUNT; i++) {
        assert_kebab(preempt_event_to_string_(i));
        ck_assert_ptr_nonnull(preempt_event_what_(i));
        ck_assert_ptr_nonnull(preempt_event_params_(i));
    }
}
END_TEST

START_TEST(test_effects)
{
    ROUND_TRIP(PREEMPT_FX__COUNT, preempt_fx_to_string_, preempt_fx_from_string_);
    for (int i = 0; i < PREEMPT_FX__COUNT; i++)
        assert_kebab(preempt_fx_to_string_(i));
}
END_TEST

START_TEST(test_small_enums)
{
    ROUND_TRIP(PREEMPT_SOURCE__COUNT, preempt_source_to_string_, preempt_source_from_string_);
    ROUND_TRIP(PREEMPT_EXIT__COUNT, preempt_exit_to_string_, preempt_exit_from_string_);
    ROUND_TRIP(PREEMPT_VERDICT__COUNT, preempt_verdict_to_string_, preempt_verdict_from_string_);
    ROUND_TRIP(PREEMPT_PLAN__COUNT, preempt_plan_to_string_, preempt_plan_from_string_);
    ROUND_TRIP(PREEMPT_SECOND__COUNT, preempt_second_to_string_, preempt_second_from_string_);
    for (int i = -1; i <= PREEMPT_GUARD__COUNT; i++)
        ck_assert((preempt_guard_to_string_(i) != NULL) == (i >= 0 && i < PREEMPT_GUARD__COUNT));
    for (int i = -1; i <= PREEMPT_HOW__COUNT; i++)
        ck_assert((preempt_how_to_string_(i) != NULL) == (i >= 0 && i < PREEMPT_HOW__COUNT));
}
END_TEST

START_TEST(test_param_names_unique)
{
    for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
        const struct preempt_param_desc *p = preempt_event_params_(e);
        if (p[0].name && p[1].name)
            ck_assert_str_ne(p[0].name, p[1].name);
    }
}
END_TEST

START_TEST(test_public_helpers)
{
    ck_assert_str_eq(preempt_version(), PACKAGE_VERSION);
    ck_assert_str_eq(preempt_strerror(0), "success");
    ck_assert_str_eq(preempt_strerror(-EINVAL), strerror(EINVAL));
    ck_assert_str_eq(preempt_strerror(7), "unknown error");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tables");
    TCase *tc = tcase_create("names");

    tcase_add_test(tc, test_states);
    tcase_add_test(tc, test_required_states);
    tcase_add_test(tc, test_events);
    tcase_add_test(tc, test_effects);
    tcase_add_test(tc, test_small_enums);
    tcase_add_test(tc, test_param_names_unique);
    tcase_add_test(tc, test_public_helpers);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
