/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/ckpt.h: the ckpt module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_CKPT_H
#define PREEMPT_LIB_CKPT_H

#include "ckpt-internal.h"
#include "persist-internal.h"

#endif
