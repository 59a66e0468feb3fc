/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/etcd.h: the etcd module's one door (docs/development.md, "Layout"):
 * what the modules above it may use. Its other headers are its own. */
#ifndef PREEMPT_LIB_ETCD_H
#define PREEMPT_LIB_ETCD_H

#include "etcd-internal.h"
#include "http-internal.h"

#endif
