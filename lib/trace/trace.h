/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace.h: the trace module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_TRACE_H
#define PREEMPT_LIB_TRACE_H

#include "trace-internal.h"

#endif
