/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/port/port.h: the port module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_PORT_H
#define PREEMPT_LIB_PORT_H

#include "port-internal.h"

#endif
