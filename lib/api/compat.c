/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/api/compat.c: the 0.1 interface, for programs built against 0.1's header.
 *
 * 1.0 made the conventions one (docs/guide/c-api.md, "API conventions"): every call
 * returns 0 or a negative errno with its result in an out-parameter, the
 * structures travel with their size, and getters are named
 * preempt_<object>_get_<what>. A program built against 0.1 keeps running
 * unchanged: its calls bind to the symbols below. Those whose name 1.0
 * kept with a new signature are older versions of the symbol
 * (name@LIBPREEMPT_0, lib/api/libpreempt.map; the default, name@@LIBPREEMPT_1.0,
 * is the new one); the others are the old names, no longer in the header.
 * Each is the 1.0 call with 0.1's result convention and layout sizes.
 * Only the shared library has them: nothing else links this file. */
#include <errno.h>
#include <stdbool.h>

#include "handler/handler.h"
#include "preempt.h"

/* The header's sized forms are macros over the old names: the names here
 * are the functions themselves. */
#undef preempt_handler_new
#undef preempt_watcher_new

#define COMPAT PREEMPT_EXPORT
/* fn, defined here as compat_fn, is version LIBPREEMPT_0 of symbol sym */
#define OLD_VERSION(fn, sym) __asm__(".symver " #fn ", " #sym "@LIBPREEMPT_0")

/* ---- symbols whose 1.0 form has a new signature ---- */

COMPAT int compat_step_end_0(struct preempt_handler *h);
OLD_VERSION(compat_step_end_0, preempt_step_end);
int compat_step_end_0(struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_step_end(h, &a);

    return r < 0 ? r : (int)a;
}

COMPAT int compat_run_0(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg);
OLD_VERSION(compat_run_0, preempt_run);
int compat_run_0(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg)
{
    bool exited = false;
    int r = preempt_run(h, step_fn, arg, &exited);

    return r < 0 ? r : exited;
}

COMPAT int compat_save_checkpoint_if_preempted_0(struct preempt_handler *h);
OLD_VERSION(compat_save_checkpoint_if_preempted_0, preempt_save_checkpoint_if_preempted);
int compat_save_checkpoint_if_preempted_0(struct preempt_handler *h)
{
    bool exited = false;
    int r = preempt_save_checkpoint_if_preempted(h, &exited);

    return r < 0 ? r : exited;
}

COMPAT int compat_handler_get_fd_0(struct preempt_handler *h);
OLD_VERSION(compat_handler_get_fd_0, preempt_handler_get_fd);
int compat_handler_get_fd_0(struct preempt_handler *h)
{
    int fd = -1;
    int r = preempt_handler_get_fd(h, &fd);

    return r < 0 ? r : fd;
}

COMPAT int compat_state_from_string_0(const char *name);
OLD_VERSION(compat_state_from_string_0, preempt_state_from_string);
int compat_state_from_string_0(const char *name)
{
    enum preempt_state s;
    int r = preempt_state_from_string(name, &s);

    return r < 0 ? r : (int)s;
}

COMPAT int compat_platform_from_string_0(const char *name);
OLD_VERSION(compat_platform_from_string_0, preempt_platform_from_string);
int compat_platform_from_string_0(const char *name)
{
    enum preempt_platform p;
    int r = preempt_platform_from_string(name, &p);

    return r < 0 ? r : (int)p;
}

/* ---- names 1.0 replaced ---- */

COMPAT int preempt_handler_new(struct event_base *base, const struct preempt_config *cfg,
                               const struct preempt_callbacks *cb, void *userdata, struct preempt_handler **ret);
int preempt_handler_new(struct event_base *base, const struct preempt_config *cfg, const struct preempt_callbacks *cb,
                        void *userdata, struct preempt_handler **ret)
{
    return preempt_handler_new_size(base, cfg, cb, userdata, ret, PREEMPT_CALLBACKS_SIZE_0_1);
}

COMPAT enum preempt_action preempt_action(const struct preempt_handler *h);
enum preempt_action preempt_action(const struct preempt_handler *h)
{
    enum preempt_action a;

    return preempt_handler_get_action(h, &a) < 0 ? PREEMPT_ACTION_EXIT : a;
}

COMPAT void preempt_get_status(const struct preempt_handler *h, struct preempt_status *ret);
void preempt_get_status(const struct preempt_handler *h, struct preempt_status *ret)
{
    (void)preempt_handler_get_status_size(h, ret, PREEMPT_STATUS_SIZE_0_1);
}

COMPAT int preempt_exit_code(const struct preempt_handler *h);
int preempt_exit_code(const struct preempt_handler *h)
{
    int code = 0;
    int r = preempt_handler_get_exit_code(h, &code);

    return r < 0 ? r : code;
}

COMPAT const char *preempt_error_message(const struct preempt_handler *h);
const char *preempt_error_message(const struct preempt_handler *h)
{
    return preempt_handler_get_error_message(h);
}

COMPAT struct event_base *preempt_handler_base(const struct preempt_handler *h);
struct event_base *preempt_handler_base(const struct preempt_handler *h)
{
    return preempt_handler_get_base(h);
}

COMPAT int preempt_watcher_new(struct event_base *base, const struct preempt_config *cfg,
                               const struct preempt_watcher_callbacks *cb, void *userdata,
                               struct preempt_watcher **ret);
int preempt_watcher_new(struct event_base *base, const struct preempt_config *cfg,
                        const struct preempt_watcher_callbacks *cb, void *userdata, struct preempt_watcher **ret)
{
    return preempt_watcher_new_size(base, cfg, cb, userdata, ret, PREEMPT_WATCHER_CALLBACKS_SIZE_0_1);
}

COMPAT int preempt_watcher_notice(const struct preempt_watcher *w, struct preempt_notice_info *ret);
int preempt_watcher_notice(const struct preempt_watcher *w, struct preempt_notice_info *ret)
{
    return preempt_watcher_get_notice_size(w, ret, PREEMPT_NOTICE_SIZE_0_1);
}

COMPAT int preempt_watcher_exited(const struct preempt_watcher *w);
int preempt_watcher_exited(const struct preempt_watcher *w)
{
    bool exited = false;
    int r = preempt_watcher_get_exited(w, &exited);

    return r < 0 ? r : exited;
}
