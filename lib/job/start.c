/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/start.c: a worker's start-up in a job, its driver
 * (start-internal.h): the restore machine's table (restore.c) decides,
 * the shell's effects run. Pure. */
#include <errno.h>
#include <stdio.h>

#include "start-internal.h"
#include "links-internal.h" /* the links that feed the restore machine */

/* Steps the machine on input in, posted by link (r: the error the input
 * carries), and runs its actions until one waits on the shell's answer or
 * ends start-up. An input its link does not declare (links-internal.h) is
 * a bug: start-up fails with it. */
static void run(struct preempt_start *s, enum preempt_link_id link, unsigned in, int r)
{
    for (;;) {
        unsigned from = s->rst, a;
        bool listed;
        char line[160];

        if (!preempt_link_posts_(link, PREEMPT_LINK_M_RST, in)) {
            (void)snprintf(line, sizeof(line), "bug: link %s posts restore's input %s, which the links table does "
                           "not declare", preempt_links_[link].name, preempt_decl_input_(&preempt_rst_decl_, in));
            s->ops->log(s->arg, 3, line);
            s->ops->end(s->arg, -EPROTO, false);
            return;
        }
        a = preempt_decl_step_traced_(&preempt_rst_decl_, s->instance, &s->rst, in, &listed, s->trace);

        (void)snprintf(line, sizeof(line), "start-up: %s --%s--> %s (%s)", preempt_decl_state_(&preempt_rst_decl_, from),
                       preempt_decl_input_(&preempt_rst_decl_, in), preempt_decl_state_(&preempt_rst_decl_, s->rst),
                       preempt_decl_action_(&preempt_rst_decl_, a));
        s->ops->log(s->arg, 0, line);
        switch ((enum preempt_rst_action)a) {
        case PREEMPT_RST_DO_RESTORE: /* the callback answers at once: its outcome is the next input */
            s->err = s->ops->restore(s->arg, s->step);
            in = preempt_rst_restored_(s->err);
            link = PREEMPT_LINK_RESTORE_DONE;
            continue;
        case PREEMPT_RST_DO_REPORT_OK:
        case PREEMPT_RST_DO_REPORT_UNUSABLE:
        case PREEMPT_RST_DO_REPORT_FAILED:
            s->ops->report(s->arg, preempt_rst_report_((enum preempt_rst_action)a), s->err);
            return;
        case PREEMPT_RST_DO_START_FRESH:
            s->ops->end(s->arg, 0, false);
            return;
        case PREEMPT_RST_DO_TRAIN:
            s->ops->end(s->arg, 0, true);
            return;
        case PREEMPT_RST_DO_SET_ASIDE:
            s->fallbacks++;
            s->ops->set_aside(s->arg, s->step);
            s->ops->join(s->arg);
            return;
        case PREEMPT_RST_DO_FAIL:
            s->ops->end(s->arg, in == PREEMPT_RST_IN_NONE_LEFT ? -ENOTRECOVERABLE : r < 0 ? r : -EPROTO, false);
            return;
        case PREEMPT_RST_DO_NONE:
        case PREEMPT_RST_DO__COUNT:
            break;
        }
        (void)snprintf(line, sizeof(line), "bug: start-up's machine has no row for %s in %s",
                       preempt_decl_input_(&preempt_rst_decl_, in), preempt_decl_state_(&preempt_rst_decl_, from));
        s->ops->log(s->arg, 3, line);
        s->ops->end(s->arg, -EPROTO, false);
        return;
    }
}

void preempt_start_joined_(struct preempt_start *s, int r, bool have_step, uint64_t step)
{
    s->step = have_step ? step : 0;
    s->err = 0;
    if (r < 0)
        run(s, PREEMPT_LINK_JOINED, PREEMPT_RST_IN_JOIN_FAILED, r);
    else if (have_step && !s->no_store)
        run(s, PREEMPT_LINK_JOINED, PREEMPT_RST_IN_JOINED, 0);
    else /* nothing every worker holds (or nothing to restore it from) */
        run(s, PREEMPT_LINK_JOINED, s->fallbacks ? PREEMPT_RST_IN_NONE_LEFT : PREEMPT_RST_IN_JOINED_NONE, 0);
}

void preempt_start_barrier_(struct preempt_start *s, int r, int outcome)
{
    if (r < 0)
        run(s, PREEMPT_LINK_BARRIER_DONE, PREEMPT_RST_IN_BARRIER_FAILED, r);
    else /* a failure carries this worker's own error, or says another worker's restore failed */
        run(s, PREEMPT_LINK_BARRIER_DONE, preempt_rst_job_(outcome), s->err < 0 ? s->err : -EREMOTEIO);
}
