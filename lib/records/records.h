/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/records.h: the records module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_RECORDS_H
#define PREEMPT_LIB_RECORDS_H

#include "keys-internal.h"
#include "records-internal.h"

#endif
