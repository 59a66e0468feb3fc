/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/report/report.h: the report module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_REPORT_H
#define PREEMPT_LIB_REPORT_H

#include "progress-internal.h"
#include "report-internal.h"

#endif
