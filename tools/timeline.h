/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/timeline.h: a job's timeline as an SVG picture, one lane per
 * worker: preempt-launch --timeline feeds it the JSON lines the launch
 * prints (its own and its workers'), preemptctl timeline the job's
 * history records (timeline_add). Drawing is pure. */
#ifndef PREEMPT_TOOLS_TIMELINE_H
#define PREEMPT_TOOLS_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

struct timeline;

/* NULL when out of memory. */
struct timeline *timeline_new(unsigned workers);
void timeline_free(struct timeline *t);

/* One line as the launch prints it (with "t_ms"); lines that are no JSON
 * object with an event are skipped. */
void timeline_line(struct timeline *t, const char *line);

/* What timeline_add() adds to a lane (worker) at a moment: its start-up
 * begins, training begins, agreement on a save step begins, a notice
 * (what: its source), a commit (step), an exit (code); TIMELINE_MARK (any
 * worker) is a line across the lanes labelled what (a restart's new
 * incarnation, say). */
enum timeline_kind {
    TIMELINE_LAUNCH,
    TIMELINE_TRAINING,
    TIMELINE_AGREEING,
    TIMELINE_NOTICE,
    TIMELINE_SAVED,
    TIMELINE_EXITED,
    TIMELINE_MARK,
};
/* Events are added in time order per lane; t_ms counts from the
 * picture's 0. Those of a worker the timeline has no lane for are
 * skipped. */
void timeline_add(struct timeline *t, uint64_t t_ms, int worker, enum timeline_kind kind, uint64_t step, int code,
                  const char *what);
/* The picture's title (default: "preempt-launch: N workers"); copied. */
void timeline_set_title(struct timeline *t, const char *title);

/* Draws the picture: training, start-up, agreement, saves and the grace
 * period as colored spans per lane; notices, commits and exits as marks;
 * the signals to the launch as lines; a time axis and a legend. 0, or
 * -errno when writing failed. */
int timeline_svg(const struct timeline *t, FILE *out);

#endif
