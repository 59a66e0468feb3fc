/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/report/report-internal.h: what a run tells operators, in the forms they
 * already read. The termination record (one JSON object at exit, at most
 * PREEMPT_REPORT_MAX bytes: Kubernetes' termination message limit) and
 * Prometheus metrics in the text exposition format, written for
 * node_exporter's textfile collector. Building the text is pure; writing a
 * file is preempt_report_write_() and preempt_metrics_write_(). */
#ifndef PREEMPT_REPORT_INTERNAL_H
#define PREEMPT_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PREEMPT_REPORT_MAX 4096 /* Kubernetes reads at most 4096 bytes of /dev/termination-log */

/* What one run of one worker did, as the termination record says it.
 * Times are wall clock, milliseconds since the epoch (0: none); durations
 * in milliseconds (-1: not measured in this run). */
struct preempt_report {
    const char *version, *job, *reason, *why, *source, *error;
    int code;
    unsigned worker, workers;
    int notice_worker;            /* the worker whose notice it was; -1: none */
    uint64_t incarnation;
    uint64_t notice_at, deadline, exit_at;
    uint64_t agreed_step, committed_step, run, grace_steps, steps_lost;
    int64_t notice_to_agreed_ms, agreed_to_commit_ms, notice_to_exit_ms;
    unsigned saves;
    uint64_t bytes_saved, save_ms, stall_ms;
    uint64_t restored_step;
    int64_t restore_ms;
    unsigned restore_fallbacks;
};

/* The record as one JSON object and a newline, in buf (NUL-terminated).
 * Returns its length, or -ENOSPC when it would not fit in size (or in
 * PREEMPT_REPORT_MAX); strings too long are cut so that it fits. Pure. */
int preempt_report_json_(const struct preempt_report *r, char *buf, size_t size);

/* Writes it to path (truncated first; not renamed into place, as
 * /dev/termination-log is a file Kubernetes mounts). 0 or -errno. */
int preempt_report_write_(const char *path, const char *json, size_t len);

/* ---- metrics --------------------------------------------------------------------------------- */

/* The metric families (HELP and TYPE), in the order the file lists them:
 * X(ID, "name", "type", "help"). Counters end in _total, durations are
 * seconds, sizes bytes (Prometheus' naming rules). */
#define PREEMPT_METRIC_FAMILIES(X)                                                                                 \
    X(PREEMPTIONS, "preempt_preemptions_total", "counter",                                                          \
      "Preemptions this worker ended in, by the notice's source and the outcome")                                   \
    X(CHECKPOINTS, "preempt_checkpoints_total", "counter",                                                          \
      "Checkpoints by kind (preemption, grace, periodic, requested, advisory) and outcome (committed, aborted)")     \
    X(NOTICE_TO_COMMIT, "preempt_notice_to_commit_seconds", "histogram",                                            \
      "From a preemption's notice to the job's commit of its checkpoint")                                           \
    X(AGREEMENT, "preempt_agreement_seconds", "histogram", "From a proposed save step to the job's agreement on it")  \
    X(SAVE, "preempt_save_seconds", "histogram", "This worker's save of one checkpoint, to its local commit")        \
    X(STALL, "preempt_save_stall_seconds", "histogram",                                                            \
      "The training one save stopped: a two-phase save's snapshot phase, any other save whole")                    \
    X(RESTORE, "preempt_restore_seconds", "histogram", "Start-up's restore of a checkpoint")                        \
    X(SAVED_BYTES, "preempt_saved_bytes_total", "counter", "Bytes of checkpoints this worker committed")            \
    X(STEPS_LOST, "preempt_steps_lost_total", "counter",                                                            \
      "Steps trained after the newest committed checkpoint when a run ended without saving them")                 \
    X(FALLBACKS, "preempt_restore_fallbacks_total", "counter",                                                      \
      "Checkpoints the restore refused at start-up (set aside; an older one was restored)")

enum preempt_metric {
#define PREEMPT_METRIC_ENUM_(id, ...) PREEMPT_METRIC_##id,
    PREEMPT_METRIC_FAMILIES(PREEMPT_METRIC_ENUM_) PREEMPT_METRIC__COUNT
#undef PREEMPT_METRIC_ENUM_
};

struct preempt_metrics;

/* A set of series for one worker. labels: the labels every series
 * carries, as the exposition format writes them (job="x",worker="0").
 * previous: the text of the file a former run of the same worker left (NULL
 * when none): its values of this worker's series are carried on, so that a
 * counter counts over restarts (lines that do not read are skipped). NULL
 * when out of memory. */
struct preempt_metrics *preempt_metrics_new_(const char *labels, const char *previous);
void preempt_metrics_free_(struct preempt_metrics *m);

/* A counter goes up by v; extra: the series' own labels (source="signal",
 * outcome="saved") or "". */
void preempt_metrics_add_(struct preempt_metrics *m, enum preempt_metric id, const char *extra, double v);
/* A histogram observes seconds. */
void preempt_metrics_observe_(struct preempt_metrics *m, enum preempt_metric id, double seconds);

/* The text exposition of every series: malloc'ed, the caller frees it;
 * NULL when out of memory. Pure. */
char *preempt_metrics_text_(const struct preempt_metrics *m);

/* Writes text to path atomically (a temporary file in the same directory,
 * fsync'ed, then renamed over it): a scrape never reads half a file.
 * 0 or -errno. */
int preempt_metrics_write_(const char *path, const char *text);

#endif
