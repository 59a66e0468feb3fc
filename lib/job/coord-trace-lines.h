/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-trace-lines.h: what the coordinator's trace lines and their
 * replay share (coord-trace.c, coord-replay.c): an input's name, and what
 * an input of each kind carries. */
#ifndef PREEMPT_COORD_TRACE_LINES_H
#define PREEMPT_COORD_TRACE_LINES_H

#include <stddef.h>

#include "coord-state.h"

/* What an input carries, by its kind. */
enum preempt_trace_shape {
    PREEMPT_TRACE_SHAPE_ANSWER,
    PREEMPT_TRACE_SHAPE_EVENT,
    PREEMPT_TRACE_SHAPE_READ,
    PREEMPT_TRACE_SHAPE_LINK,
    PREEMPT_TRACE_SHAPE_BARE,
    PREEMPT_TRACE_SHAPE_EFFECT,
    PREEMPT_TRACE_SHAPE_STEP,
    PREEMPT_TRACE_SHAPE_WITHDRAW,
    PREEMPT_TRACE_SHAPE_TEXT
};

enum preempt_trace_shape preempt_trace_coord_shape_(enum preempt_coord_in_kind k);
/* The input kind named by the n bytes at p (coord-inputs.def's names), or -1. */
int preempt_trace_coord_in_of_name_(const char *p, size_t n);

#endif
