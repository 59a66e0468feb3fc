/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/config.c: the handler's configuration (config-internal.h): the
 * defaults, the layouts read, the checks that preempt_handler_new() runs
 * before it starts anything. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-internal.h"
#include "job/job.h"
#include "base/base.h"
#include "preempt_trace.h" /* the machine's defaults */

/* The layouts of the public structures this library reads or writes:
 * each release's and its own (config-internal.h). A caller's struct of an
 * older layout is read (or written) up to its size; the newer fields keep
 * their defaults. */

bool preempt_config_size_ok_(size_t size)
{
    return size == PREEMPT_CONFIG_SIZE_0_1 || size == PREEMPT_CONFIG_SIZE_1_0 ||
           size == sizeof(struct preempt_config);
}

bool preempt_callbacks_size_ok_(size_t size)
{
    return size == PREEMPT_CALLBACKS_SIZE_0_1 || size == PREEMPT_CALLBACKS_SIZE_1_0 ||
           size == sizeof(struct preempt_callbacks);
}

bool preempt_status_size_ok_(size_t size)
{
    return size == PREEMPT_STATUS_SIZE_0_1 || size == PREEMPT_STATUS_SIZE_1_0 ||
           size == sizeof(struct preempt_status);
}

bool preempt_notice_size_ok_(size_t size)
{
    return size == PREEMPT_NOTICE_SIZE_0_1 || size == PREEMPT_NOTICE_SIZE_1_0 ||
           size == sizeof(struct preempt_notice_info);
}

bool preempt_watcher_callbacks_size_ok_(size_t size)
{
    return size == PREEMPT_WATCHER_CALLBACKS_SIZE_0_1 || size == PREEMPT_WATCHER_CALLBACKS_SIZE_1_0 ||
           size == sizeof(struct preempt_watcher_callbacks);
}

static void config_defaults(struct preempt_config *cfg);

int preempt_config_init_size(struct preempt_config *cfg, size_t size)
{
    struct preempt_config full;

    if (!cfg || !preempt_config_size_ok_(size))
        return -EINVAL;
    config_defaults(&full);
    if (size == PREEMPT_CONFIG_SIZE_0_1) /* with 0.1's spelling of "the library decides" */
        full.exit_code = 0, full.kill_delay_ms = 0;
    memcpy(cfg, &full, size);
    cfg->size = size;
    return 0;
}

/* A caller's configuration of any layout it may have, as this library's. */
struct preempt_config preempt_config_full_(const struct preempt_config *cfg)
{
    struct preempt_config full;

    config_defaults(&full);
    memcpy(&full, cfg, cfg->size);
    full.size = sizeof(full);
    if (cfg->size == PREEMPT_CONFIG_SIZE_0_1) { /* 0.1 spelled "the library decides" and "keep all" as 0 */
        if (full.exit_code == 0)
            full.exit_code = PREEMPT_AUTO;
        if (full.kill_delay_ms == 0)
            full.kill_delay_ms = (uint64_t)PREEMPT_AUTO;
        if (full.max_to_keep == 0)
            full.max_to_keep = (unsigned)PREEMPT_UNLIMITED;
    }
    return full;
}

static void config_defaults(struct preempt_config *cfg)
{
    struct preempt_config_facts f = preempt_config_defaults_();

    *cfg = (struct preempt_config){
        .size = sizeof(*cfg),
        .max_to_keep = 3,
        .bound_ms = f.bound_ms,
        .agree_timeout_ms = f.agree_timeout_ms,
        .margin_ms = f.margin_ms,
        .plan = f.plan,
        .second = f.second,
        .exit_code = PREEMPT_AUTO, /* the platform's */
        .exit_code_not_saved = 75,
        .signals = { SIGTERM },
        .poll_interval_ms = 1000,
        .workers = 1,
        .lease_ttl_s = 10,
        .join_timeout_ms = 60000,
        .etcd_timeout_ms = 2000,
        .platform = PREEMPT_PLATFORM_AUTO,
        .metadata_poll_ms = 1000,
        .metadata_timeout_ms = 2000,
        .advisory_checkpoint = true,
        .azure_approve = true,
        .grace_ms = (uint64_t)PREEMPT_AUTO,
        .kill_delay_ms = (uint64_t)PREEMPT_AUTO,
    };
}

int preempt_signal_set_(const struct preempt_config *cfg, sigset_t *ret)
{
    (void)sigemptyset(ret);
    for (unsigned i = 0; i < PREEMPT_MAX_SIGNALS && cfg->signals[i]; i++) {
        int s = cfg->signals[i];

        if (s < 1 || s > SIGRTMAX || s == SIGKILL || s == SIGSTOP)
            return -EINVAL;
        (void)sigaddset(ret, s);
    }
    return 0;
}

int preempt_block_signals(const struct preempt_config *cfg)
{
    struct preempt_config def;
    sigset_t set;

    if (!cfg) {
        preempt_config_init(&def);
        cfg = &def;
    }
    if (!preempt_config_size_ok_(cfg->size) || preempt_signal_set_(cfg, &set) < 0) /* signals are in every layout */
        return -EINVAL;
    return sigprocmask(SIG_BLOCK, &set, NULL) < 0 ? -errno : 0;
}

/* Says what is wrong with a configuration, or NULL when nothing is. */
/* The launch's identity when launch_id is NULL: the first valid one of
 * the launchers' own (preempt-launch, Slurm, torchrun); NULL: unknown. */
const char *preempt_launch_from_env_(void)
{
    static const char *const vars[] = { "PREEMPT_LAUNCH_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if (v && strcmp(v, "none") && preempt_coord_launch_ok_(v))
            return v;
    }
    return NULL;
}

#define WORKERS_MAX_TEXT PREEMPT_STR_(PREEMPT_MAX_WORKERS)

const char *preempt_config_problem_(const struct preempt_config *c, const struct preempt_callbacks *cb)
{
    sigset_t set;

    if (c->ckpt_dir && !c->ckpt_dir[0])
        return "ckpt_dir is empty (use NULL for no checkpoint manager)";
    if (c->ckpt_dir && !cb->restore)
        return "a ckpt_dir needs a restore callback";
    if (c->max_to_keep == 0)
        return "max_to_keep must be at least 1 (PREEMPT_UNLIMITED keeps every checkpoint)";
    if (c->grace_ms > MAX_GRACE_MS && c->grace_ms != (uint64_t)PREEMPT_AUTO)
        return "grace_ms is over 7 days";
    if (c->bound_ms == 0 || c->bound_ms > MAX_GRACE_MS)
        return "bound_ms must be between 1 ms and 7 days";
    if (c->agree_timeout_ms == 0 || c->agree_timeout_ms > MAX_INTERVAL_MS)
        return "agree_timeout_ms must be between 1 ms and 1 day";
    if (c->margin_ms > MAX_INTERVAL_MS)
        return "margin_ms is over 1 day";
    if ((unsigned)c->plan >= PREEMPT_PLAN__COUNT)
        return "unknown plan";
    if ((unsigned)c->second >= PREEMPT_SECOND__COUNT)
        return "unknown second-notice policy";
    if ((c->exit_code != PREEMPT_AUTO && (c->exit_code < 1 || c->exit_code > 255)) || c->exit_code_not_saved < 1 ||
        c->exit_code_not_saved > 255)
        return "exit codes must be between 1 and 255 (exit_code PREEMPT_AUTO: the platform's)";
    if (c->exit_code == c->exit_code_not_saved ||
        (c->exit_code == PREEMPT_AUTO && (c->exit_code_not_saved == 42 || c->exit_code_not_saved == 143)))
        return "exit_code and exit_code_not_saved must differ";
    if ((unsigned)c->platform >= PREEMPT_PLATFORM__COUNT)
        return "unknown platform";
    if (c->metadata_url && strncmp(c->metadata_url, "http://", 7) != 0)
        return "metadata_url must be an http:// URL";
    if (c->metadata_poll_ms < 10 || c->metadata_poll_ms > MAX_INTERVAL_MS)
        return "metadata_poll_ms must be between 10 ms and 1 day";
    if (c->metadata_timeout_ms < 10 || c->metadata_timeout_ms > 600000)
        return "metadata_timeout_ms must be between 10 ms and 10 minutes";
    if (c->kill_delay_ms > MAX_INTERVAL_MS && c->kill_delay_ms != (uint64_t)PREEMPT_AUTO)
        return "kill_delay_ms is over 1 day";
    if (preempt_signal_set_(c, &set) < 0)
        return "signals: only 1..SIGRTMAX, not SIGKILL or SIGSTOP";
    if (cb->poll && (c->poll_interval_ms < 10 || c->poll_interval_ms > MAX_INTERVAL_MS))
        return "poll_interval_ms must be between 10 ms and 1 day";
    if (!c->etcd_endpoints)
        return NULL;
    if (!c->etcd_endpoints[0])
        return "etcd_endpoints is empty (use NULL for local mode)";
    if (!preempt_coord_job_ok_(c->job))
        return "job must be 1-128 of A-Z a-z 0-9 . _ - (and not . or ..)";
    if (c->workers < 1 || c->workers > PREEMPT_MAX_WORKERS)
        return "workers must be between 1 and " WORKERS_MAX_TEXT;
    if (c->worker >= c->workers)
        return "worker must be between 0 and workers - 1";
    if (!c->etcd_user != !c->etcd_password)
        return "etcd_user and etcd_password go together";
    if (c->lease_ttl_s < 2 || c->lease_ttl_s > 3600)
        return "lease_ttl_s must be between 2 and 3600";
    if (c->join_timeout_ms < 100 || c->join_timeout_ms > MAX_INTERVAL_MS)
        return "join_timeout_ms must be between 100 ms and 1 day";
    if (c->etcd_timeout_ms < 10 || c->etcd_timeout_ms > 60000)
        return "etcd_timeout_ms must be between 10 and 60000";
    if (c->launch_id && !preempt_coord_launch_ok_(c->launch_id))
        return "launch_id must be 1-64 of A-Z a-z 0-9 . _ : -";
    /* TLS files that cannot be read would fail every request until the
     * join's bound: a configuration error, said at once */
    if ((c->etcd_ca && access(c->etcd_ca, R_OK) < 0) || (c->etcd_cert && access(c->etcd_cert, R_OK) < 0) ||
        (c->etcd_key && access(c->etcd_key, R_OK) < 0))
        return "etcd_ca, etcd_cert or etcd_key cannot be read";
    if (c->etcd_key && !c->etcd_cert)
        return "etcd_key needs etcd_cert";
    return NULL;
}

