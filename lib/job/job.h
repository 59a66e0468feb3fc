/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/job.h: the job module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_JOB_H
#define PREEMPT_LIB_JOB_H

#include "answer-internal.h"
#include "claim-internal.h"
#include "coord-internal.h"
#include "coord-trace-internal.h"
#include "decision-internal.h"
#include "decl-internal.h"
#include "episode-internal.h"
#include "lease-internal.h"
#include "lost-internal.h"
#include "machine-internal.h"
#include "membership-internal.h"
#include "pub-internal.h"
#include "restore-internal.h"
#include "start-internal.h"
#include "view-internal.h"
#include "watch-internal.h"
#include "worker-internal.h"

#endif
