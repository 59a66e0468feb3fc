/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/restore-internal.h: a worker's start-up in a job, from the join to
 * training, a declared machine (decl-internal.h); its driver
 * (start-internal.h) is what the handler (lib/handler/handler-start.c) and
 * the simulator both run.
 *
 * The worker joins the job, which finds the newest step every worker
 * holds; it restores that step (its restore callback) and reports how at
 * the restore barrier, whose one record every worker follows: ok, and
 * training begins; unusable (a worker's trainer cannot use that
 * checkpoint: bad data, another shape), and every worker sets that step
 * aside and joins again, so the job falls back to an older one; failed
 * (anything a retry may cure: out of memory, I/O), and start-up fails
 * everywhere with nothing set aside. A job with no step in common starts
 * fresh, unless this start-up set some aside: then no checkpoint could be
 * restored, and start-up fails rather than silently train from step 0.
 * This table replaced the branches of two reply callbacks (the handler's
 * on_job_joined and on_job_restored); its driver replaced the two copies
 * of the code that chose its inputs and ran its actions (the handler's
 * and the simulator's). */
#ifndef PREEMPT_RESTORE_INTERNAL_H
#define PREEMPT_RESTORE_INTERNAL_H

#include "decl-internal.h"

/* X(P, ID, "name", "what is true") */
#define PREEMPT_RST_STATES(X, P)                                                                                     \
    X(P, JOINING, "joining", "the job is being joined: the newest step every worker holds is being found")          \
    X(P, RESTORING, "restoring", "joined with a step every worker holds: this worker restores it")                  \
    X(P, BARRIER, "barrier", "this worker's restore is reported; the job's one record is awaited")                  \
    X(P, TRAINING, "training", "start-up ended: training begins (at the restored step, or at step 0)")              \
    X(P, FAILED, "failed", "start-up failed (the handler is not created); the failure itself sets nothing aside")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_RST_INPUTS(X, P)                                                                                     \
    X(P, JOINED, "joined", "joined; every worker holds a step")                                                     \
    X(P, JOINED_NONE, "joined-none", "joined; no step every worker holds (or no checkpoint directory)")             \
    X(P, NONE_LEFT, "none-left", "joined; no step every worker holds, after this start-up set some aside")          \
    X(P, JOIN_FAILED, "join-failed", "the join failed (its bound, authentication, etcd)")                           \
    X(P, RESTORED, "restored", "this worker's restore callback took the checkpoint")                                \
    X(P, UNUSABLE, "unusable", "this worker's restore refused it as unusable (bad data, another shape, a blob gone)") \
    X(P, RESTORE_FAILED, "restore-failed", "this worker's restore failed otherwise (out of memory, I/O)")           \
    X(P, JOB_OK, "job-ok", "the job's restore record: every worker restored the step")                              \
    X(P, JOB_UNUSABLE, "job-unusable", "the job's restore record: a worker found the step unusable")                \
    X(P, JOB_FAILED, "job-failed", "the job's restore record: a worker's restore failed")                           \
    X(P, BARRIER_FAILED, "barrier-failed", "the restore barrier did not complete (its bound, etcd)")

/* X(P, ID, "name", "what start-up does") */
#define PREEMPT_RST_ACTIONS(X, P)                                                                                    \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, RESTORE, "restore", "restore the job's step (the restore callback)")                                       \
    X(P, START_FRESH, "start-fresh", "nothing to restore: training begins at step 0")                               \
    X(P, REPORT_OK, "report-ok", "report \"ok\" at the restore barrier")                                           \
    X(P, REPORT_UNUSABLE, "report-unusable", "report \"unusable\" at the restore barrier")                         \
    X(P, REPORT_FAILED, "report-failed", "report \"failed\" at the restore barrier")                               \
    X(P, TRAIN, "train", "training begins at the restored step")                                                    \
    X(P, SET_ASIDE, "set-aside", "set the job's step aside (every worker alike) and join again")                    \
    X(P, FAIL, "fail", "start-up fails (the lease given back)")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_RST_TABLE(X, P)                                                                                      \
    X(P, JOINING, JOINED, RESTORING, RESTORE)                                                                        \
    X(P, JOINING, JOINED_NONE, TRAINING, START_FRESH)                                                                \
    X(P, JOINING, NONE_LEFT, FAILED, FAIL)                                                                           \
    X(P, JOINING, JOIN_FAILED, FAILED, FAIL)                                                                         \
    X(P, RESTORING, RESTORED, BARRIER, REPORT_OK)                                                                    \
    X(P, RESTORING, UNUSABLE, BARRIER, REPORT_UNUSABLE)                                                              \
    X(P, RESTORING, RESTORE_FAILED, BARRIER, REPORT_FAILED)                                                          \
    X(P, BARRIER, JOB_OK, TRAINING, TRAIN)                                                                           \
    X(P, BARRIER, JOB_UNUSABLE, JOINING, SET_ASIDE)                                                                  \
    X(P, BARRIER, JOB_FAILED, FAILED, FAIL)                                                                          \
    X(P, BARRIER, BARRIER_FAILED, FAILED, FAIL)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_RST_IGNORED(X, P)                                                                                    \
    X(P, JOINED, "a join's answer comes only while joining (start-up awaits one answer at a time)",                  \
      RESTORING, BARRIER)                                                                                            \
    X(P, JOINED_NONE, "a join's answer comes only while joining (start-up awaits one answer at a time)",             \
      RESTORING, BARRIER)                                                                                            \
    X(P, NONE_LEFT, "a join's answer comes only while joining (start-up awaits one answer at a time)",               \
      RESTORING, BARRIER)                                                                                            \
    X(P, JOIN_FAILED, "a join's answer comes only while joining (start-up awaits one answer at a time)",             \
      RESTORING, BARRIER)                                                                                            \
    X(P, RESTORED, "a restore's outcome comes only while restoring", JOINING, BARRIER)                               \
    X(P, UNUSABLE, "a restore's outcome comes only while restoring", JOINING, BARRIER)                               \
    X(P, RESTORE_FAILED, "a restore's outcome comes only while restoring", JOINING, BARRIER)                         \
    X(P, JOB_OK, "the barrier's record is awaited only once this worker's restore is reported", JOINING, RESTORING)  \
    X(P, JOB_UNUSABLE, "the barrier's record is awaited only once this worker's restore is reported",                \
      JOINING, RESTORING)                                                                                            \
    X(P, JOB_FAILED, "the barrier's record is awaited only once this worker's restore is reported",                  \
      JOINING, RESTORING)                                                                                            \
    X(P, BARRIER_FAILED, "the barrier is awaited only once this worker's restore is reported", JOINING, RESTORING)

PREEMPT_DECL_ENUMS(rst, PREEMPT_RST_, PREEMPT_RST_STATES, PREEMPT_RST_INPUTS, PREEMPT_RST_ACTIONS);

extern const struct preempt_decl preempt_rst_decl_; /* fsmdump --machine restore */

/* A worker's restore of the job's step, and the job's (the restore
 * barrier's record; lib/job/startup.c). */
enum { PREEMPT_RESTORE_OK, PREEMPT_RESTORE_UNUSABLE, PREEMPT_RESTORE_FAILED };

/* The input the restore barrier's record is (JOB_OK, JOB_UNUSABLE or
 * JOB_FAILED). Pure. */
enum preempt_rst_input preempt_rst_job_(int outcome);
/* What a report action reports (PREEMPT_RESTORE_*), -1 for any other
 * action. Pure. */
int preempt_rst_report_(enum preempt_rst_action a);

/* The input a restore callback's result is (RESTORED, UNUSABLE or
 * RESTORE_FAILED): an error that says the checkpoint itself is unusable
 * (-EBADMSG, -EINVAL, -ENOENT, -EPROTO, -ERANGE) sets it aside; any other
 * may pass on a retry, and sets nothing aside. Pure. */
enum preempt_rst_input preempt_rst_restored_(int cb_r);
/* Whether a restore callback's error says its checkpoint is unusable (as
 * above; also the local restore's rule). Pure. */
bool preempt_rst_unusable_(int err);

#endif
