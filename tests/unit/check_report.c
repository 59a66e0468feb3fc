/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_report.c: the termination record and the metrics text
 * (lib/report/report.c): the record stays under Kubernetes' 4 KiB whatever its
 * strings; the metrics text carries a former run's counters on and reads
 * nothing else of a file. */
#include "check-main.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report-internal.h"

START_TEST(test_record_fits)
{
    static char long_str[8192];
    char buf[PREEMPT_REPORT_MAX + 512];
    struct preempt_report r = { .version = "1", .job = "j", .reason = "saved", .code = 42, .notice_worker = -1,
                                .notice_to_agreed_ms = -1, .agreed_to_commit_ms = 7, .notice_to_exit_ms = -1,
                                .restore_ms = -1 };
    int n = preempt_report_json_(&r, buf, sizeof(buf));

    ck_assert_int_gt(n, 0);
    ck_assert_int_eq((int)strlen(buf), n);
    ck_assert_ptr_nonnull(strstr(buf, "\"agreed_to_commit_ms\":7"));
    ck_assert_ptr_null(strstr(buf, "notice_to_agreed_ms")); /* not measured: absent */
    ck_assert_ptr_null(strstr(buf, "notice_worker"));
    ck_assert_int_eq(buf[n - 1], '\n');
    memset(long_str, 'x', sizeof(long_str) - 1);
    r.error = long_str; /* an application's message far over the limit */
    ck_assert_int_eq(preempt_report_json_(&r, buf, sizeof(buf)), -ENOSPC);
}
END_TEST

static const char *line_of(const char *text, const char *key)
{
    const char *p = strstr(text, key);

    return p ? p + strlen(key) : "";
}

START_TEST(test_metrics_carry_on)
{
    const char *labels = "job=\"j\",worker=\"1\"";
    const char *previous = "# HELP whatever\n"
                           "preempt_preemptions_total{job=\"j\",worker=\"1\",source=\"signal\",outcome=\"saved\"} 2\n"
                           "preempt_preemptions_total{job=\"j\",worker=\"2\",source=\"signal\",outcome=\"saved\"} 9\n"
                           "preempt_save_seconds_count{job=\"j\",worker=\"1\"} 3\n"
                           "preempt_save_seconds_bucket{job=\"j\",worker=\"1\",le=\"+Inf\"} 3\n"
                           "preempt_steps_lost_total{job=\"j\",worker=\"1\"} not-a-number\n"
                           "other_metric{job=\"j\",worker=\"1\"} 5\n"
                           "preempt_saved_bytes_total{job=\"j\",worker=\"1\"} 100";
    struct preempt_metrics *m = preempt_metrics_new_(labels, previous);
    char *t;

    ck_assert_ptr_nonnull(m);
    preempt_metrics_add_(m, PREEMPT_METRIC_PREEMPTIONS, "source=\"signal\",outcome=\"saved\"", 1);
    preempt_metrics_add_(m, PREEMPT_METRIC_SAVED_BYTES, "", 50);
    preempt_metrics_observe_(m, PREEMPT_METRIC_SAVE, 0.2);
    t = preempt_metrics_text_(m);
    ck_assert_ptr_nonnull(t);
    ck_assert(!strncmp(line_of(t, "outcome=\"saved\"} "), "3\n", 2)); /* 2 carried + 1 */
    ck_assert_ptr_null(strstr(t, "worker=\"2\""));                    /* another worker's: not read */
    ck_assert_ptr_null(strstr(t, "other_metric"));                    /* not ours */
    ck_assert(!strncmp(line_of(t, "preempt_steps_lost_total{job=\"j\",worker=\"1\"} "), "0\n", 2)); /* unreadable */
    ck_assert(!strncmp(line_of(t, "preempt_saved_bytes_total{job=\"j\",worker=\"1\"} "), "150\n", 4));
    ck_assert(!strncmp(line_of(t, "preempt_save_seconds_count{job=\"j\",worker=\"1\"} "), "4\n", 2));
    ck_assert(!strncmp(line_of(t, "preempt_save_seconds_bucket{job=\"j\",worker=\"1\",le=\"0.1\"} "), "0\n", 2));
    ck_assert(!strncmp(line_of(t, "preempt_save_seconds_bucket{job=\"j\",worker=\"1\",le=\"0.25\"} "), "1\n", 2));
    ck_assert(!strncmp(line_of(t, "preempt_save_seconds_bucket{job=\"j\",worker=\"1\",le=\"+Inf\"} "), "4\n", 2));
    /* one HELP and TYPE per family, the buckets in order before _sum and _count */
    ck_assert_ptr_nonnull(strstr(t, "# TYPE preempt_save_seconds histogram\n"
                                    "preempt_save_seconds_bucket{job=\"j\",worker=\"1\",le=\"0.01\"} 0\n"));
    ck_assert(strstr(t, "le=\"+Inf\"} 4\npreempt_save_seconds_sum") != NULL);
    free(t);
    preempt_metrics_free_(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");

    tcase_add_test(tc, test_record_fits);
    tcase_add_test(tc, test_metrics_carry_on);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
