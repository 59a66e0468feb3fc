/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/platform-internal.h: which platform the job runs on, its defaults
 * (TensorFlow's TerminationConfig completion, tf-reference §1.3) and the
 * launcher's known kill delay. Detection reads a few DMI files and the
 * environment: no network, so it costs microseconds, never seconds. */
#ifndef PREEMPT_PLATFORM_INTERNAL_H
#define PREEMPT_PLATFORM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preempt.h"

/* The platform the DMI strings describe (NULL: not readable). */
enum preempt_platform preempt_platform_from_dmi_(const char *sys_vendor, const char *product_name,
                                                 const char *bios_vendor, const char *asset_tag, bool gpu);

/* Resolves cfg: AUTO becomes $PREEMPT_PLATFORM (env, may be NULL) or what
 * the DMI files under dmi_dir (NULL: /sys/class/dmi/id) say. Returns the
 * platform, or -EINVAL when env names no platform (or "auto"). */
int preempt_platform_resolve_(enum preempt_platform cfg, const char *env, const char *dmi_dir);

/* The defaults a platform implies (an explicit value always wins). */
uint64_t preempt_platform_grace_ms_(enum preempt_platform p);
int preempt_platform_exit_code_(enum preempt_platform p);

/* The metadata service's base URL for platform p: url when set, else the
 * platform's environment override, else http://169.254.169.254. getenv_fn
 * is getenv (tests pass their own). buf receives it. */
void preempt_platform_metadata_url_(enum preempt_platform p, const char *url, char *(*getenv_fn)(const char *),
                                    char *buf, size_t size);

/* The kill delay after SIGTERM that the launcher is known to give, from the
 * environment: torchrun 30 s, a Kubernetes pod 30 s (15 s on GKE, where
 * Spot nodes give pods 15 s), a Slurm step 30 s (KillWait's usual value).
 * Sets *ret_who to the launcher's name. Returns 0 when none is known. */
uint64_t preempt_kill_delay_(enum preempt_platform p, char *(*getenv_fn)(const char *), const char **ret_who);

#endif
