/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/abi/old-client.c: a program built against the previous minor
 * version's header (tests/abi/0.1/, frozen as released) runs unchanged
 * against the new library: its structs (config, callbacks, status) as it
 * laid them out, its enum values, its calls. A save at a notice, exit 42,
 * a restart that restores it; the synchronous calls and the queries (an
 * exit seen as 1, the descriptor, the base); the name lookups and a watcher. Usage:
 * old-client CKPT_DIR (tests/abi.sh). */
#include <libpreempt/preempt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int restored = -1;

static int restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    void *data;
    size_t len;
    int r = preempt_restore_blob(h, "model", &data, &len);

    (void)ud;
    if (r == 0) {
        restored = len == 8 && !memcmp(data, "weights!", 8) ? (int)step : -2;
        preempt_free(data);
    }
    return r;
}

static int saves_by_cb;

static int save_one(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)step, (void)ud;
    saves_by_cb++;
    return preempt_save_blob(h, "model", "weights!", 8);
}

static int step_ok(void *arg)
{
    (void)arg;
    return 0;
}

static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    (void)h, (void)reason, (void)code, (void)ud;
}

static int run(const char *dir, int *ret_step)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .restore = restore };
    struct preempt_handler *h;
    struct preempt_status st;
    uint64_t step;
    int r, a = PREEMPT_ACTION_CONTINUE;

    preempt_config_init(&cfg);
    cfg.ckpt_dir = dir;
    cfg.platform = PREEMPT_PLATFORM_NONE;
    (void)preempt_block_signals(&cfg);
    if ((r = preempt_handler_new(NULL, &cfg, &cb, NULL, &h)) < 0)
        return fprintf(stderr, "old-client: handler: %s\n", preempt_strerror(r)), 1;
    preempt_get_status(h, &st);
    *ret_step = (int)st.restored_step;
    for (int i = 0; i < 10 && a == PREEMPT_ACTION_CONTINUE; i++) {
        if (i == 5 && restored == -1)
            (void)preempt_notify(h, 60000);
        a = preempt_step_end(h);
    }
    if (a == PREEMPT_ACTION_SAVE_EXIT) {
        if ((r = preempt_save_begin(h, &step)) == 0)
            r = preempt_save_blob(h, "model", "weights!", 8);
        (void)preempt_save_done(h, r);
        a = preempt_action(h);
    }
    preempt_get_status(h, &st);
    printf("action=%d state=%s run=%llu saves=%u code=%d\n", a, preempt_state_to_string(st.state),
           (unsigned long long)st.run, st.saves, a == PREEMPT_ACTION_EXIT ? preempt_exit_code(h) : -1);
    h = preempt_handler_free(h);
    return 0;
}

int main(int argc, char **argv)
{
    int step;

    if (argc != 2)
        return 2;
    if (run(argv[1], &step))
        return 1;
    if (run(argv[1], &step)) /* the restart */
        return 1;
    printf("restored=%d\n", restored);
    { /* the synchronous calls' and the queries' 0.1 forms: 1 once exited, an fd, ... */
        struct preempt_config cfg;
        struct preempt_callbacks cb = { .save = save_one, .restore = restore, .on_exit = on_exit_cb };
        struct preempt_handler *h;
        int r, fd, ran = 0, last = 0;

        preempt_config_init(&cfg);
        cfg.ckpt_dir = argv[1];
        cfg.platform = PREEMPT_PLATFORM_NONE;
        if ((r = preempt_handler_new(NULL, &cfg, &cb, NULL, &h)) < 0)
            return fprintf(stderr, "old-client: handler: %s\n", preempt_strerror(r)), 1;
        fd = preempt_handler_get_fd(h);
        printf("fd=%s base=%s pending=%u error=%s\n", fd >= 0 ? "yes" : "no", preempt_handler_base(h) ? "yes" : "no",
               preempt_pending_writes(h), preempt_error_message(h) ? "some" : "none");
        last = preempt_save_checkpoint_if_preempted(h);
        (void)preempt_notify(h, 60000);
        while (ran < 20 && (last = preempt_run(h, step_ok, NULL)) == 0)
            ran++;
        printf("run=%d exit_code=%d saved_by_run=%d\n", last, preempt_exit_code(h), saves_by_cb);
        h = preempt_handler_free(h);
    }
    { /* the name lookups' and the watcher's 0.1 forms */
        struct preempt_config cfg;
        struct preempt_watcher *w = NULL;
        int r;

        preempt_config_init(&cfg);
        cfg.etcd_endpoints = "http://127.0.0.1:1";
        cfg.job = "old";
        r = preempt_watcher_new(NULL, &cfg, NULL, NULL, &w);
        printf("countdown=%d aws=%d mars=%d watcher=%d exited=%d\n", preempt_state_from_string("countdown"),
               preempt_platform_from_string("aws"), preempt_platform_from_string("mars"), r,
               preempt_watcher_exited(w));
        w = preempt_watcher_free(w);
    }
    return 0;
}
