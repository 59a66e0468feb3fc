/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/cloud/cloud.h: the cloud module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_CLOUD_H
#define PREEMPT_LIB_CLOUD_H

#include "metadata-internal.h"

#endif
