/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/watcher-internal.h: the watcher (include/libpreempt/preempt.h's
 * preempt_watcher_*) over any coordination port, so that the simulation
 * (tests/sim/) runs the real one against its in-memory etcd. */
#ifndef PREEMPT_WATCHER_INTERNAL_H
#define PREEMPT_WATCHER_INTERNAL_H

#include "job/job.h"
#include "preempt.h"

/* A watcher of job's records through io (it owns io_arg from here on,
 * also on error: freed with io->free). The callbacks are of this build's
 * layout; preempt_watcher_wait() and the descriptor functions need the
 * public constructor's base and are -EINVAL here. 0 or a negative errno. */
int preempt_watcher_new_io_(const struct preempt_coord_io *io, void *io_arg, const char *job,
                            const struct preempt_watcher_callbacks *cb, void *userdata, struct preempt_watcher **ret);

#endif
