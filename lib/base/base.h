/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/base.h: the base module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_BASE_H
#define PREEMPT_LIB_BASE_H

#include "escape-internal.h"
#include "fault-internal.h"
#include "platform-internal.h"

#endif
