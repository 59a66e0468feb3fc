/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/config-internal.h: the handler's configuration (struct
 * preempt_config): its defaults, the layouts this library reads, and its
 * checks (lib/handler/config.c), apart from the handler's start-up. */
#ifndef PREEMPT_CONFIG_INTERNAL_H
#define PREEMPT_CONFIG_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "preempt.h"

#define MAX_GRACE_MS (7ull * 24 * 3600 * 1000)
#define MAX_INTERVAL_MS (24ull * 3600 * 1000)

/* The layouts of the public structures this library reads or writes: the
 * sizes each release had (0.1's, 1.0's) and its own (fields are only
 * appended, docs/guide/install.md, "ABI and versions"). A caller's struct of an older
 * layout is read (or written) up to its size; the newer fields keep their
 * defaults. A release that appends a field adds its predecessor's size
 * here. 0.1's config also spelled the automatic exit_code
 * and kill_delay_ms, and keeping every checkpoint, as 0: its configuration
 * is read with 0.1's meanings. */
#define PREEMPT_LAYOUT_END_(T, last) \
    ((offsetof(T, last) + sizeof(((T *)0)->last) + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))
#define PREEMPT_CONFIG_SIZE_0_1 PREEMPT_LAYOUT_END_(struct preempt_config, azure_approve)
#define PREEMPT_CALLBACKS_SIZE_0_1 PREEMPT_LAYOUT_END_(struct preempt_callbacks, on_start)
#define PREEMPT_STATUS_SIZE_0_1 PREEMPT_LAYOUT_END_(struct preempt_status, exit_code)
#define PREEMPT_NOTICE_SIZE_0_1 PREEMPT_LAYOUT_END_(struct preempt_notice_info, withdrawn)
#define PREEMPT_WATCHER_CALLBACKS_SIZE_0_1 PREEMPT_LAYOUT_END_(struct preempt_watcher_callbacks, on_exited)
#define PREEMPT_CONFIG_SIZE_1_0 PREEMPT_LAYOUT_END_(struct preempt_config, metrics_path)
#define PREEMPT_CALLBACKS_SIZE_1_0 PREEMPT_CALLBACKS_SIZE_0_1
#define PREEMPT_STATUS_SIZE_1_0 PREEMPT_STATUS_SIZE_0_1 /* 1.1 appended stall_ms */
#define PREEMPT_NOTICE_SIZE_1_0 PREEMPT_NOTICE_SIZE_0_1
#define PREEMPT_WATCHER_CALLBACKS_SIZE_1_0 PREEMPT_WATCHER_CALLBACKS_SIZE_0_1
bool preempt_config_size_ok_(size_t size);
bool preempt_callbacks_size_ok_(size_t size);
bool preempt_status_size_ok_(size_t size);
bool preempt_notice_size_ok_(size_t size);
bool preempt_watcher_callbacks_size_ok_(size_t size);

/* A caller's struct of any accepted layout, read up to its size, with the
 * defaults after it. */
struct preempt_config preempt_config_full_(const struct preempt_config *cfg);

/* What is wrong with a configuration and its callbacks, as one sentence,
 * or NULL when nothing is. */
const char *preempt_config_problem_(const struct preempt_config *c, const struct preempt_callbacks *cb);

/* The notice signals of cfg in *ret; 0 or -EINVAL. */
int preempt_signal_set_(const struct preempt_config *cfg, sigset_t *ret);

/* The launch id the environment gives (a launcher's), or NULL. */
const char *preempt_launch_from_env_(void);

#endif
