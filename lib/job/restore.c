/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/restore.c: a worker's start-up in a job (restore-internal.h). Pure. */
#include <errno.h>

#include "restore-internal.h"

PREEMPT_DECL_DEFINE(preempt_rst_decl_, "restore", "a worker's start-up in a job: join, restore, the restore barrier",
                    PREEMPT_RST_, PREEMPT_RST_STATES, PREEMPT_RST_INPUTS, PREEMPT_RST_ACTIONS, PREEMPT_RST_TABLE,
                    PREEMPT_RST_IGNORED, (1u << PREEMPT_RST_TRAINING) | (1u << PREEMPT_RST_FAILED));

bool preempt_rst_unusable_(int err)
{
    return err == -EBADMSG || err == -EINVAL || err == -ENOENT || err == -EPROTO || err == -ERANGE;
}

enum preempt_rst_input preempt_rst_job_(int outcome)
{
    return outcome == PREEMPT_RESTORE_OK         ? PREEMPT_RST_IN_JOB_OK
           : outcome == PREEMPT_RESTORE_UNUSABLE ? PREEMPT_RST_IN_JOB_UNUSABLE
                                                 : PREEMPT_RST_IN_JOB_FAILED;
}

int preempt_rst_report_(enum preempt_rst_action a)
{
    return a == PREEMPT_RST_DO_REPORT_OK         ? PREEMPT_RESTORE_OK
           : a == PREEMPT_RST_DO_REPORT_UNUSABLE ? PREEMPT_RESTORE_UNUSABLE
           : a == PREEMPT_RST_DO_REPORT_FAILED   ? PREEMPT_RESTORE_FAILED
                                                 : -1;
}

enum preempt_rst_input preempt_rst_restored_(int cb_r)
{
    return cb_r == 0 ? PREEMPT_RST_IN_RESTORED : preempt_rst_unusable_(cb_r) ? PREEMPT_RST_IN_UNUSABLE
                                                                             : PREEMPT_RST_IN_RESTORE_FAILED;
}
