/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/timeline.h: a job's timeline as an SVG picture, one lane per
 * worker (preempt-launch --timeline). Fed with the JSON lines the launch
 * prints (its own and its workers'); drawing is pure. */
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

/* Draws the picture: training, start-up, agreement, saves and the grace
 * period as colored spans per lane; notices, commits and exits as marks;
 * the signals to the launch as lines; a time axis and a legend. 0, or
 * -errno when writing failed. */
int timeline_svg(const struct timeline *t, FILE *out);

#endif
