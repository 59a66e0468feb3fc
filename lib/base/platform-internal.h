/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/platform-internal.h: which platform the job runs on, its defaults
 * (TensorFlow's TerminationConfig completion, tf-reference §1.3) and the
 * launcher's known kill delay. Detection reads a few DMI files and the
 * environment: no network, so it costs microseconds, never seconds. */
#ifndef PREEMPT_PLATFORM_INTERNAL_H
#define PREEMPT_PLATFORM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "preempt.h"

/* A macro's value as a string literal: PREEMPT_STR_(PREEMPT_MAX_WORKERS). */
#define PREEMPT_STR2_(x) #x
#define PREEMPT_STR_(x) PREEMPT_STR2_(x)

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
 * platform's environment override (GCE: $GCE_METADATA_HOST, then
 * $GCE_METADATA_IP, each an address with an optional port, localhost and
 * metadata.google.internal mapped to theirs; AWS:
 * $AWS_EC2_METADATA_SERVICE_ENDPOINT), else http://169.254.169.254.
 * getenv_fn is getenv (tests pass their own). buf receives it. Returns 1
 * when $GCE_METADATA_HOST names a host that is not an address (not used:
 * the sources never resolve names, which would start a resolver thread),
 * else 0. */
int preempt_platform_metadata_url_(enum preempt_platform p, const char *url, char *(*getenv_fn)(const char *),
                                   char *buf, size_t size);

/* How long after a SIGTERM the platform itself kills the machine, when no
 * launcher's kill delay is known: GCE's ACPI soft-off gives 30 s (Spot and
 * preemptible VMs; more on standard ones). 0: unknown. */
uint64_t preempt_platform_signal_ms_(enum preempt_platform p);

/* What slurm.conf says about the time between a job's first SIGTERM and
 * its SIGKILL: KillWait (default 30 s) and the GraceTime of partition
 * (PartitionName=DEFAULT lines set it for the partitions after them;
 * default 0). text is the file's content; Include lines are not followed.
 * Returns 0, or -ENOENT when partition is not defined (the times are then
 * the defaults and KillWait). Pure. */
int preempt_slurm_conf_(const char *text, const char *partition, uint64_t *ret_kill_wait_ms, uint64_t *ret_grace_ms);

/* The kill delay after SIGTERM that the launcher is known to give, from the
 * environment: torchrun 30 s, a Kubernetes pod 30 s (15 s on GKE, where
 * Spot nodes give pods 15 s); a Slurm job KillWait, read from $SLURM_CONF
 * (else /etc/slurm/slurm.conf; 30 s when it cannot be read): a
 * preemption's GraceTime comes on top, scancel and the time limit give
 * KillWait alone, and a SIGTERM does not say which (who names both). who receives what the delay was taken from (empty
 * when none is known). Returns 0 when none is known. */
uint64_t preempt_kill_delay_(enum preempt_platform p, char *(*getenv_fn)(const char *), char *who, size_t size);

/* ms as a struct timeval (libevent's timeouts). */
static inline struct timeval preempt_tv_ms_(uint64_t ms)
{
    return (struct timeval){ .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

#endif
