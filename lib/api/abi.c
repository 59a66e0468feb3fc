/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/api/abi.c: the public structures' layouts as this library was built
 * (preempt_abi_layout()), for bindings that declare them on their own.
 * tests/exports.sh checks that every field of the header's structures is
 * listed here. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "preempt.h"

#define CONFIG_FIELDS(X)                                                                                              \
    X(size) X(ckpt_dir) X(max_to_keep) X(start_run) X(grace_ms) X(bound_ms) X(agree_timeout_ms) X(margin_ms) X(plan)   \
    X(second) X(exit_code) X(exit_code_not_saved) X(signals) X(poll_interval_ms) X(save_every_steps)   \
    X(save_every_ms) X(trace_path) X(platform)             \
    X(metadata_url) X(metadata_poll_ms) X(metadata_timeout_ms) X(advisory_checkpoint) X(kill_delay_ms)                 \
    X(etcd_endpoints) X(job) X(worker) X(workers) X(etcd_user) X(etcd_password) X(etcd_ca) X(etcd_cert) X(etcd_key)     \
    X(lease_ttl_s) X(join_timeout_ms) X(etcd_timeout_ms) X(launch_id) X(start_over) X(async_start) X(azure_approve)    \
    X(termination_log) X(metrics_path) X(stay_in_place)
#define STATUS_FIELDS(X)                                                                                              \
    X(state) X(run) X(restored_step) X(start_status) X(committed_step) X(restore_fallbacks) X(refused_step) X(save_step) X(deadline_in_ms) X(step_us)    \
    X(save_ms) X(saves) X(incarnation) X(platform) X(notice_source) X(kill_delay_ms) X(grace_ms) X(exit_code) X(stall_ms)
#define CALLBACK_FIELDS(X) X(save) X(restore) X(poll) X(on_state) X(on_exit) X(log) X(on_start)
#define NOTICE_FIELDS(X) X(incarnation) X(worker) X(source) X(deadline_unix_ms) X(withdrawn)
#define WATCHER_CALLBACK_FIELDS(X) X(on_notice) X(on_exited)

/* Appends " name@offset:size" of a field of type T. */
#define FIELD(T, f)                                                                                                   \
    if (off < sizeof(buf))                                                                                            \
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %s@%zu:%zu", #f, offsetof(T, f),                      \
                                sizeof(((T *)0)->f));
#define CONFIG(f) FIELD(struct preempt_config, f)
#define STATUS(f) FIELD(struct preempt_status, f)
#define CALLBACK(f) FIELD(struct preempt_callbacks, f)
#define NOTICE(f) FIELD(struct preempt_notice_info, f)
#define WATCHER_CALLBACK(f) FIELD(struct preempt_watcher_callbacks, f)

#define LAYOUT(T, LIST, X)                                                                                            \
    do {                                                                                                              \
        static char buf[1536];                                                                                        \
        size_t off;                                                                                                   \
                                                                                                                      \
        if (!buf[0]) {                                                                                                \
            off = (size_t)snprintf(buf, sizeof(buf), "size=%zu", sizeof(T));                                          \
            LIST(X)                                                                                                   \
        }                                                                                                             \
        return buf;                                                                                                   \
    } while (0)

const char *preempt_abi_layout(const char *type)
{
    if (!type)
        return NULL;
    if (!strcmp(type, "preempt_config"))
        LAYOUT(struct preempt_config, CONFIG_FIELDS, CONFIG);
    if (!strcmp(type, "preempt_status"))
        LAYOUT(struct preempt_status, STATUS_FIELDS, STATUS);
    if (!strcmp(type, "preempt_callbacks"))
        LAYOUT(struct preempt_callbacks, CALLBACK_FIELDS, CALLBACK);
    if (!strcmp(type, "preempt_notice_info"))
        LAYOUT(struct preempt_notice_info, NOTICE_FIELDS, NOTICE);
    if (!strcmp(type, "preempt_watcher_callbacks"))
        LAYOUT(struct preempt_watcher_callbacks, WATCHER_CALLBACK_FIELDS, WATCHER_CALLBACK);
    return NULL;
}
