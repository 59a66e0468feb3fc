/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler.h: the handler module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_HANDLER_H
#define PREEMPT_LIB_HANDLER_H

#include "config-internal.h"

#endif
