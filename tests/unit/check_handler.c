/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_handler.c: the public handler API driven from the
 * test's own event_base, as an asynchronous trainer would: real signals
 * (raised to this process and read through the signalfd), real timers,
 * real checkpoint files. Only the public header and libevent are used. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "check-main.h"
#include "preempt.h"

/* The calls' results in one int, as the assertions below compare them: an
 * action or exit code, or the call's negative errno. (1.0's calls return
 * 0 or a negative errno with the result in an out-parameter;
 * test_conventions checks that form itself.) */
static int step_end(struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_step_end(h, &a);

    return r < 0 ? r : (int)a;
}

static int action_of(const struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_handler_get_action(h, &a);

    return r < 0 ? r : (int)a;
}

static int exit_code_of(const struct preempt_handler *h)
{
    int code;
    int r = preempt_handler_get_exit_code(h, &code);

    return r < 0 ? r : code;
}

/* preempt_run(): 0 go on, 1 exited, or its negative errno */
static int run_step(struct preempt_handler *h, int (*fn)(void *), void *arg)
{
    bool exited = false;
    int r = preempt_run(h, fn, arg, &exited);

    return r < 0 ? r : exited;
}

static int if_preempted(struct preempt_handler *h)
{
    bool exited = false;
    int r = preempt_save_checkpoint_if_preempted(h, &exited);

    return r < 0 ? r : exited;
}

static int fd_of(struct preempt_handler *h)
{
    int fd = -1;
    int r = preempt_handler_get_fd(h, &fd);

    return r < 0 ? r : fd;
}

struct rec {
    enum preempt_state states[16];
    unsigned n_states, n_exits;
    enum preempt_exit reason;
    int code;
    char log[2048];
    int in_cb_step_end, in_cb_save_begin, in_cb_done, in_cb_exit_code;
    enum preempt_action in_cb_action;
    int poll_calls, poll_notice_after;
    uint64_t poll_deadline;
    char blob[32];
    int starts, start_status; /* on_start */
};

static void rec_state(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *ud)
{
    struct rec *r = ud;
    uint64_t step;

    if (r->n_states == 0)
        r->states[r->n_states++] = from;
    if (r->n_states < 16)
        r->states[r->n_states++] = to;
    /* what a callback may and may not do */
    r->in_cb_step_end = step_end(h);
    r->in_cb_save_begin = preempt_save_begin(h, &step);
    r->in_cb_done = preempt_training_done(h);
    r->in_cb_exit_code = exit_code_of(h);
    r->in_cb_action = action_of(h);
}

static void rec_exit(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct rec *r = ud;

    (void)h;
    r->n_exits++;
    r->reason = reason;
    r->code = code;
}

static void rec_log(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    struct rec *r = ud;
    size_t len = strlen(r->log);

    (void)h;
    (void)snprintf(r->log + len, sizeof(r->log) - len, "%d:%s\n", (int)level, msg);
}

static int rec_restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct rec *r = ud;
    void *data;
    size_t len;
    int e = preempt_restore_blob(h, "model", &data, &len), fd;
    char viafd[sizeof(r->blob)];
    ssize_t n;

    (void)step;
    if (e < 0)
        return e;
    ck_assert_uint_lt(len, sizeof(r->blob));
    memcpy(r->blob, data, len);
    r->blob[len] = '\0';
    free(data);
    /* the same blob through a descriptor */
    ck_assert_int_eq(preempt_restore_blob_open(h, "model", &fd), 0);
    n = read(fd, viafd, sizeof(viafd));
    ck_assert_int_eq(n, (ssize_t)len);
    ck_assert_int_eq(memcmp(viafd, r->blob, len), 0);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(preempt_restore_blob_open(h, "nothing", &fd), -ENOENT);
    return 0;
}

static int rec_poll(struct preempt_handler *h, uint64_t *deadline_in_ms, void *ud)
{
    struct rec *r = ud;

    (void)h;
    if (++r->poll_calls < r->poll_notice_after)
        return 0;
    *deadline_in_ms = r->poll_deadline;
    return 1;
}

static void rec_start(struct preempt_handler *h, int status, void *ud)
{
    struct rec *r = ud;

    (void)h;
    r->starts++;
    r->start_status = status;
}

static const struct preempt_callbacks callbacks = {
    .restore = rec_restore, .poll = rec_poll, .on_state = rec_state, .on_exit = rec_exit, .log = rec_log,
    .on_start = rec_start,
};

static char dir[256];

static void setup(void)
{
    sigset_t set;

    (void)sigemptyset(&set);
    (void)sigaddset(&set, SIGTERM);
    ck_assert_int_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
    preempt_test_mkdtemp(dir, sizeof(dir), "check_handler");
}

static void teardown(void)
{
    preempt_test_rmrf(dir);
}

static struct preempt_config config(const char *sub)
{
    static char path[512];
    struct preempt_config cfg;

    preempt_config_init(&cfg);
    if (sub) {
        (void)snprintf(path, sizeof(path), "%s/%s", dir, sub);
        cfg.ckpt_dir = path;
    }
    return cfg;
}

/* Runs the test's loop until the handler leaves state s (bounded). */
static void loop_while(struct event_base *base, struct preempt_handler *h, enum preempt_state s)
{
    struct preempt_status st;

    for (int i = 0; i < 500; i++) {
        preempt_handler_get_status(h, &st);
        if (st.state != s)
            return;
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    }
    ck_abort_msg("the handler stayed in %s", preempt_state_to_string(s));
}

START_TEST(test_async_signal_save_exit_restore)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("ckpt");
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { 0 };
    uint64_t step = 0;
    char errpath[512];
    struct stat sb;
    int saved_stderr, fd, bfd;

    /* The library writes nothing to stderr on its own. */
    (void)snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
    fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_stderr = dup(2);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(dup2(fd, 2), 2);
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &(struct preempt_callbacks){ .restore = rec_restore,
                                         .on_exit = rec_exit, .on_state = rec_state }, &r, &h), 0);
    ck_assert_ptr_eq(preempt_handler_get_base(h), base);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(kill(getpid(), SIGTERM), 0); /* pending: it is blocked */
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_CONTINUE); /* not read before the loop runs */
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 0);
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.state, PREEMPT_STATE_STEP_AGREED);
    ck_assert_uint_eq(st.save_step, 6);
    ck_assert_uint_eq(st.run, 5);
    ck_assert_int_ge(st.deadline_in_ms, 0);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_SAVE_EXIT);
    ck_assert_int_eq(preempt_save_blob(h, "model", "six", 3), -EALREADY); /* before save_begin */
    ck_assert_int_eq(preempt_save_blob_open(h, "model", &bfd), -EALREADY);
    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    ck_assert_uint_eq(step, 6);
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_WAIT);
    ck_assert_int_eq(preempt_save_begin(h, &step), -EALREADY);
    ck_assert_int_eq(preempt_save_blob_open(h, "model", &bfd), 0); /* written by the caller */
    ck_assert_int_eq(write(bfd, "si", 2), 2);
    ck_assert_int_eq(write(bfd, "x", 1), 1);
    ck_assert_int_eq(close(bfd), 0);
    ck_assert_int_eq(preempt_save_blob(h, "model", "six", 3), -EINVAL); /* once, either way */
    ck_assert_int_eq(preempt_save_blob(h, "extra", "more", 4), 0);
    ck_assert_int_eq(preempt_save_blob(h, "../x", "x", 1), -EINVAL);
    ck_assert_int_eq(exit_code_of(h), -EAGAIN);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), -EALREADY);
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_EXIT);
    ck_assert_int_eq(exit_code_of(h), 42);
    ck_assert_uint_eq(r.n_exits, 1);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert_int_eq(r.code, 42);
    ck_assert_uint_eq(r.n_states, 5);
    ck_assert_int_eq(r.states[0], PREEMPT_STATE_IDLE);
    ck_assert_int_eq(r.states[1], PREEMPT_STATE_OWN_SIGNAL);
    ck_assert_int_eq(r.states[2], PREEMPT_STATE_STEP_AGREED);
    ck_assert_int_eq(r.states[3], PREEMPT_STATE_FINAL_SAVE);
    ck_assert_int_eq(r.states[4], PREEMPT_STATE_EXIT);
    /* inside callbacks: the forbidden calls say so, the allowed ones work */
    ck_assert_int_eq(r.in_cb_step_end, -EBUSY);
    ck_assert_int_eq(r.in_cb_save_begin, -EBUSY);
    ck_assert_int_eq(r.in_cb_done, -EBUSY);
    ck_assert_int_eq(r.in_cb_exit_code, 42);
    ck_assert_int_eq(r.in_cb_action, PREEMPT_ACTION_EXIT);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_EXIT);
    /* a synchronous save stopped training for all of it */
    preempt_handler_get_status(h, &st);
    ck_assert_uint_eq(st.saves, 1);
    ck_assert_uint_eq(st.stall_ms, st.save_ms);
    {
        /* a caller built against 1.0's header (the same layout as 0.1's) passes its size and gets
         * what that layout has, no byte after it */
        size_t old = offsetof(struct preempt_status, stall_ms);
        unsigned char buf[sizeof(struct preempt_status) + 8];

        memset(buf, 0xa5, sizeof(buf));
        ck_assert_int_eq(preempt_handler_get_status_size(h, (struct preempt_status *)(void *)buf, old), 0);
        ck_assert_uint_eq(((struct preempt_status *)(void *)buf)->saves, 1);
        for (size_t i = old; i < sizeof(buf); i++)
            ck_assert_uint_eq(buf[i], 0xa5);
        ck_assert_int_eq(preempt_handler_get_status_size(h, &st, old + 4), -EINVAL); /* no release's */
    }
    h = preempt_handler_free(h);
    ck_assert_ptr_null(h);

    /* a new handler restores the committed step */
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    preempt_handler_get_status(h, &st);
    ck_assert_uint_eq(st.restored_step, 6);
    ck_assert_uint_eq(st.run, 6);
    ck_assert_str_eq(r.blob, "six");
    ck_assert_int_eq(preempt_restore_blob(h, "model", &(void *){ NULL }, &(size_t){ 0 }), -EALREADY);
    ck_assert_int_eq(preempt_restore_blob_open(h, "model", &bfd), -EALREADY);
    h = preempt_handler_free(h);
    event_base_free(base);

    ck_assert_int_eq(dup2(saved_stderr, 2), 2);
    (void)close(saved_stderr);
    (void)close(fd);
    ck_assert_int_eq(stat(errpath, &sb), 0);
    ck_assert_int_eq(sb.st_size, 0);
}
END_TEST

/* A thread that a runtime started before the mask was set (torch starts
 * six): it does not block the notice signal. */
static int thr_ready[2], thr_end[2];
static volatile pid_t thr_tid;

/* Whether the kernel counts signal sig as blocked in thread tid (its
 * SigBlk, what the library reads); -1 when it cannot be read. */
static int kernel_blocks(pid_t tid, int sig)
{
    char path[64], line[128];
    unsigned long long mask;
    int r = -1;
    FILE *f;

    (void)snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (r < 0 && fgets(line, sizeof(line), f))
        if (sscanf(line, "SigBlk: %llx", &mask) == 1)
            r = (int)((mask >> (sig - 1)) & 1);
    (void)fclose(f);
    return r;
}

static void *unblocked_thread(void *arg)
{
    sigset_t set;
    char c;

    (void)arg;
    (void)pthread_setname_np(pthread_self(), "early-worker");
    (void)sigemptyset(&set);
    (void)sigaddset(&set, SIGUSR2);
    (void)pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    thr_tid = gettid();
    (void)write(thr_ready[1], "r", 1); /* ready */
    (void)read(thr_end[0], &c, 1);     /* until told to end */
    return NULL;
}

/* The calling thread blocks the signal, another thread does not: creation
 * fails and names that thread (before: it succeeded, and the next notice
 * killed the process). */
START_TEST(test_unblocked_in_another_thread_is_ebusy)
{
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    pthread_t t;
    char c;

    cfg.signals[0] = SIGUSR2;
    ck_assert_int_eq(preempt_block_signals(&cfg), 0);
    ck_assert_int_eq(pipe(thr_ready), 0);
    ck_assert_int_eq(pipe(thr_end), 0);
    ck_assert_int_eq(pthread_create(&t, NULL, unblocked_thread, NULL), 0);
    ck_assert_int_eq(read(thr_ready[0], &c, 1), 1);
    /* Under valgrind a thread's kernel mask is the program's only while it
     * is in a system call (valgrind blocks every signal otherwise): wait
     * until the kernel, which the library asks, sees it unblocked (the
     * thread is then in its read()). Bounded: 10 s. */
    for (int i = 0; i < 10000 && kernel_blocks(thr_tid, SIGUSR2) != 0; i++)
        (void)poll(NULL, 0, 1);
    ck_assert_int_eq(kernel_blocks(thr_tid, SIGUSR2), 0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -EBUSY);
    ck_assert_ptr_null(h);
    ck_assert_ptr_nonnull(strstr(r.log, "1 thread(s) of this process do not block the notice signals"));
    ck_assert_ptr_nonnull(strstr(r.log, "(early-worker)"));
    ck_assert_ptr_nonnull(strstr(r.log, "preempt-exec"));
    ck_assert_int_eq(write(thr_end[1], "x", 1), 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
    h = preempt_handler_free(h);
    for (int i = 0; i < 2; i++) {
        (void)close(thr_ready[i]);
        (void)close(thr_end[i]);
    }
}
END_TEST

/* For bindings: the enums' values are frozen (a released value never
 * changes: states were renumbered twice before 0.2, and a binding built
 * against one release misread the next), the config carries its size and
 * another layout is refused, and the layouts are described field by field. */
START_TEST(test_abi_for_bindings)
{
    static const struct { int got, want; } frozen[] = {
        { PREEMPT_STATE_IDLE, 0 }, { PREEMPT_STATE_OWN_SIGNAL, 1 }, { PREEMPT_STATE_FOLLOWING, 2 },
        { PREEMPT_STATE_STEP_AGREED, 3 }, { PREEMPT_STATE_SAVING, 4 }, { PREEMPT_STATE_COUNTDOWN, 5 },
        { PREEMPT_STATE_FINAL_SAVE, 6 }, { PREEMPT_STATE_EXIT, 7 },
        { PREEMPT_EXIT_DONE, 0 }, { PREEMPT_EXIT_SAVED, 1 }, { PREEMPT_EXIT_NOT_SAVED, 2 }, { PREEMPT_EXIT_ERROR, 3 },
        { PREEMPT_ACTION_CONTINUE, 0 }, { PREEMPT_ACTION_SAVE, 1 }, { PREEMPT_ACTION_SAVE_EXIT, 2 },
        { PREEMPT_ACTION_WAIT, 3 }, { PREEMPT_ACTION_EXIT, 4 },
        { PREEMPT_LOG_DEBUG, 0 }, { PREEMPT_LOG_INFO, 1 }, { PREEMPT_LOG_WARNING, 2 }, { PREEMPT_LOG_ERROR, 3 },
        { PREEMPT_PLATFORM_AUTO, 0 }, { PREEMPT_PLATFORM_NONE, 1 }, { PREEMPT_PLATFORM_GCE, 2 },
        { PREEMPT_PLATFORM_GCE_GPU, 3 }, { PREEMPT_PLATFORM_AWS, 4 }, { PREEMPT_PLATFORM_AZURE, 5 },
        { PREEMPT_PLAN_MEASURED, 0 }, { PREEMPT_PLAN_TF, 1 }, { PREEMPT_SECOND_IGNORE, 0 }, { PREEMPT_SECOND_EXIT, 1 },
    };
    struct preempt_config cfg;
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    char want[64];

    for (size_t i = 0; i < sizeof(frozen) / sizeof(frozen[0]); i++)
        ck_assert_msg(frozen[i].got == frozen[i].want, "enum value %zu changed: %d, frozen at %d", i, frozen[i].got,
                      frozen[i].want);
    ck_assert_int_eq(preempt_config_init_size(&cfg, sizeof(cfg) + 8), -EINVAL); /* no release's size */
    /* 1.0's layout ends before stay_in_place, which is left as it was */
    memset(&cfg, 0x5a, sizeof(cfg));
    ck_assert_int_eq(preempt_config_init_size(&cfg, offsetof(struct preempt_config, stay_in_place)), 0);
    ck_assert_uint_eq(*(unsigned char *)&cfg.stay_in_place, 0x5a);
    ck_assert_int_eq(preempt_config_init(&cfg), 0);
    ck_assert_uint_eq(cfg.size, sizeof(cfg));
    ck_assert(!cfg.stay_in_place);
    cfg.size += 8; /* a size no release had (a binding built against a later header) */
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -EINVAL);
    ck_assert_ptr_nonnull(strstr(r.log, "a struct preempt_config of"));
    ck_assert_int_eq(preempt_block_signals(&cfg), -EINVAL);
    (void)snprintf(want, sizeof(want), "size=%zu ", sizeof(struct preempt_config));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_config"), want));
    (void)snprintf(want, sizeof(want), " start_over@%zu:%zu", offsetof(struct preempt_config, start_over),
                   sizeof(bool));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_config"), want));
    (void)snprintf(want, sizeof(want), " stay_in_place@%zu:%zu", offsetof(struct preempt_config, stay_in_place),
                   sizeof(bool));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_config"), want));
    (void)snprintf(want, sizeof(want), " exit_code@%zu:%zu", offsetof(struct preempt_status, exit_code), sizeof(int));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_status"), want));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_callbacks"), " log@"));
    ck_assert_ptr_nonnull(strstr(preempt_abi_layout("preempt_notice_info"), " withdrawn@"));
    ck_assert_ptr_null(preempt_abi_layout("preempt_nothing"));
    preempt_free(NULL);
    preempt_free(malloc(8));
}
END_TEST

START_TEST(test_unblocked_signal_is_ebusy)
{
    struct preempt_config cfg = config("ckpt");
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    sigset_t set;

    cfg.signals[0] = SIGUSR2;
    (void)sigemptyset(&set);
    (void)sigaddset(&set, SIGUSR2);
    ck_assert_int_eq(sigprocmask(SIG_UNBLOCK, &set, NULL), 0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -EBUSY);
    ck_assert_ptr_null(h);
    ck_assert_ptr_nonnull(strstr(r.log, "is not blocked; call preempt_block_signals()"));
    ck_assert_int_eq(preempt_block_signals(&cfg), 0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
    h = preempt_handler_free(h);
    cfg.signals[0] = SIGKILL;
    ck_assert_int_eq(preempt_block_signals(&cfg), -EINVAL);
}
END_TEST

/* The platform's defaults (TensorFlow's completion, tf-reference §1.3) and
 * explicit values that win over them, including an explicit grace of 0 on
 * a GCE GPU machine. The metadata source polls a closed loopback port. */
START_TEST(test_platform_defaults)
{
    static const struct {
        enum preempt_platform p;
        uint64_t grace;
        int code;
        uint64_t want_grace;
        int want_code;
    } cases[] = {
        { PREEMPT_PLATFORM_NONE, (uint64_t)PREEMPT_AUTO, PREEMPT_AUTO, 0, 42 },
        { PREEMPT_PLATFORM_GCE, (uint64_t)PREEMPT_AUTO, PREEMPT_AUTO, 0, 143 },
        { PREEMPT_PLATFORM_GCE_GPU, (uint64_t)PREEMPT_AUTO, PREEMPT_AUTO, 3600000, 143 },
        { PREEMPT_PLATFORM_GCE_GPU, 0, PREEMPT_AUTO, 0, 143 },
        { PREEMPT_PLATFORM_GCE_GPU, 5000, 42, 5000, 42 },
        { PREEMPT_PLATFORM_AWS, (uint64_t)PREEMPT_AUTO, PREEMPT_AUTO, 0, 42 },
        { PREEMPT_PLATFORM_AZURE, 1000, PREEMPT_AUTO, 1000, 42 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct preempt_config cfg = config(NULL);
        struct preempt_callbacks cb = callbacks;
        struct preempt_handler *h = NULL;
        struct preempt_status st;
        struct rec r = { 0 };

        cfg.platform = cases[i].p;
        cfg.grace_ms = cases[i].grace;
        cfg.exit_code = cases[i].code;
        cfg.metadata_url = "http://127.0.0.1:1";
        cfg.kill_delay_ms = 0;
        ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);
        preempt_handler_get_status(h, &st);
        ck_assert_int_eq(st.platform, cases[i].p);
        ck_assert_uint_eq(st.grace_ms, cases[i].want_grace);
        ck_assert_int_eq(st.exit_code, cases[i].want_code);
        h = preempt_handler_free(h);
    }
}
END_TEST

/* One invalid field at a time, each refused with its reason. */
static const struct {
    const char *field, *why;
} bad_configs[] = {
    { "exit_code=256", "exit codes must be between 1 and 255" },
    { "exit_code=0", "exit codes must be between 1 and 255" },
    { "max_to_keep=0", "max_to_keep must be at least 1" },
    { "not_saved=42", "exit_code and exit_code_not_saved must differ" },
    { "platform=9", "unknown platform" },
    { "metadata_url=ftp", "metadata_url must be an http:// URL" },
    { "metadata_poll_ms=1", "metadata_poll_ms must be between 10 ms and 1 day" },
    { "metadata_timeout_ms=0", "metadata_timeout_ms must be between 10 ms and 10 minutes" },
    { "PREEMPT_PLATFORM=mars", "PREEMPT_PLATFORM=mars is not one of" },
    { "exit_code=75", "exit_code and exit_code_not_saved must differ" },
    { "signal=SIGKILL", "signals: only 1..SIGRTMAX, not SIGKILL or SIGSTOP" },
    { "plan=7", "unknown plan" },
    { "second=9", "unknown second-notice policy" },
    { "ckpt_dir=", "ckpt_dir is empty" },
    { "poll_interval_ms=1", "poll_interval_ms must be between 10 ms and 1 day" },
    { "bound_ms=0", "bound_ms must be between 1 ms and 7 days" },
    { "agree_timeout_ms=0", "agree_timeout_ms must be between 1 ms and 1 day" },
    { "grace_ms=huge", "grace_ms is over 7 days" },
    { "no-restore", "a ckpt_dir needs a restore callback" },
};

START_TEST(test_invalid_configuration)
{
    struct preempt_config cfg = config("ckpt");
    struct preempt_callbacks cb = callbacks;
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    const char *f = bad_configs[_i].field;

    if (strcmp(f, "exit_code=256") == 0)
        cfg.exit_code = 256;
    else if (strcmp(f, "not_saved=42") == 0) /* 42 is the platform's saved code here */
        cfg.exit_code = PREEMPT_AUTO, cfg.exit_code_not_saved = 42;
    else if (strcmp(f, "exit_code=0") == 0) /* 0.1 spelled the platform's code 0; 1.0 says PREEMPT_AUTO */
        cfg.exit_code = 0;
    else if (strcmp(f, "max_to_keep=0") == 0) /* 0.1's "keep all"; 1.0's is PREEMPT_UNLIMITED */
        cfg.max_to_keep = 0;
    else if (strcmp(f, "platform=9") == 0)
        cfg.platform = (enum preempt_platform)9;
    else if (strcmp(f, "metadata_url=ftp") == 0)
        cfg.metadata_url = "ftp://169.254.169.254";
    else if (strcmp(f, "metadata_poll_ms=1") == 0)
        cfg.metadata_poll_ms = 1;
    else if (strcmp(f, "metadata_timeout_ms=0") == 0)
        cfg.metadata_timeout_ms = 0;
    else if (strcmp(f, "PREEMPT_PLATFORM=mars") == 0)
        cfg.platform = PREEMPT_PLATFORM_AUTO, setenv("PREEMPT_PLATFORM", "mars", 1);
    else if (strcmp(f, "exit_code=75") == 0)
        cfg.exit_code = 75;
    else if (strcmp(f, "signal=SIGKILL") == 0)
        cfg.signals[1] = SIGKILL;
    else if (strcmp(f, "plan=7") == 0)
        cfg.plan = (enum preempt_plan)7;
    else if (strcmp(f, "second=9") == 0)
        cfg.second = (enum preempt_second)9;
    else if (strcmp(f, "ckpt_dir=") == 0)
        cfg.ckpt_dir = "";
    else if (strcmp(f, "poll_interval_ms=1") == 0)
        cfg.poll_interval_ms = 1;
    else if (strcmp(f, "bound_ms=0") == 0)
        cfg.bound_ms = 0;
    else if (strcmp(f, "agree_timeout_ms=0") == 0)
        cfg.agree_timeout_ms = 0;
    else if (strcmp(f, "grace_ms=huge") == 0)
        cfg.grace_ms = UINT64_MAX - 1; /* UINT64_MAX is (uint64_t)PREEMPT_AUTO */
    else
        cb.restore = NULL;
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), -EINVAL);
    setenv("PREEMPT_PLATFORM", "none", 1);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(r.log, bad_configs[_i].why), "%s: log was '%s'", f, r.log);
    ck_assert_int_eq(preempt_handler_new(NULL, NULL, &cb, &r, &h), -EINVAL);
}
END_TEST

/* The conventions (docs/guide/c-api.md, "API conventions"): every call reports a bad
 * handle and a NULL out-parameter as -EINVAL and writes its result only on
 * success; the sized calls take their structure's size and refuse one
 * that is no release's; a configuration of 0.1's size keeps 0.1's
 * meanings of 0. */
static int step_ok(void *arg);

static int save_nothing(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h, (void)step, (void)ud;
    return 0;
}

START_TEST(test_conventions)
{
    static _Alignas(64) unsigned char not_a_handler[4096]; /* zeroed: no handler's magic */
    struct preempt_handler *const bads[] = { NULL, (struct preempt_handler *)not_a_handler };
    struct preempt_watcher *const badw[] = { NULL, (struct preempt_watcher *)not_a_handler };
    struct preempt_config cfg = config(NULL);
    struct preempt_callbacks cb = callbacks;
    struct preempt_handler *h = NULL;
    struct preempt_watcher *w = NULL;
    struct preempt_status st;
    struct preempt_notice_info n;
    enum preempt_action a = PREEMPT_ACTION_WAIT;
    struct rec r = { 0 };
    bool exited = true, gone = true;
    uint64_t step = 7;
    int64_t ms = 9;
    int code = 99, fd = 99;

    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        struct preempt_handler *b = bads[i];

        ck_assert_int_eq(preempt_step_end(b, &a), -EINVAL);
        ck_assert_int_eq(preempt_handler_get_action(b, &a), -EINVAL);
        ck_assert_int_eq(preempt_run(b, step_ok, NULL, &exited), -EINVAL);
        ck_assert_int_eq(preempt_save_checkpoint_if_preempted(b, &exited), -EINVAL);
        ck_assert_int_eq(preempt_handler_get_status(b, &st), -EINVAL);
        ck_assert_int_eq(preempt_handler_get_exit_code(b, &code), -EINVAL);
        ck_assert_int_eq(preempt_handler_get_fd(b, &fd), -EINVAL);
        ck_assert_int_eq(preempt_handler_get_timeout(b, &ms), -EINVAL);
        ck_assert_int_eq(preempt_handler_process(b), -EINVAL);
        ck_assert_int_eq(preempt_training_done(b), -EINVAL);
        ck_assert_int_eq(preempt_request_checkpoint(b), -EINVAL);
        ck_assert_int_eq(preempt_notify(b, 0), -EINVAL);
        ck_assert_int_eq(preempt_fail(b, 3, NULL), -EINVAL);
        ck_assert_int_eq(preempt_request_restart(b, NULL), -EINVAL);
        ck_assert_int_eq(preempt_save_begin(b, &step), -EINVAL);
        ck_assert_int_eq(preempt_save_done(b, 0), -EINVAL);
        ck_assert_int_eq(preempt_handler_close(b, NULL, NULL), -EINVAL);
        ck_assert_ptr_null(preempt_handler_get_base(b));
        ck_assert_ptr_null(preempt_handler_get_error_message(b));
        ck_assert_ptr_null(preempt_handler_free(b));
    }
    for (size_t i = 0; i < sizeof(badw) / sizeof(badw[0]); i++) {
        ck_assert_int_eq(preempt_watcher_get_notice(badw[i], &n), -EINVAL);
        ck_assert_int_eq(preempt_watcher_get_exited(badw[i], &gone), -EINVAL);
        ck_assert_int_eq(preempt_watcher_get_fd(badw[i], &fd), -EINVAL);
        ck_assert_int_eq(preempt_watcher_get_timeout(badw[i], &ms), -EINVAL);
        ck_assert_int_eq(preempt_watcher_process(badw[i]), -EINVAL);
        ck_assert_int_eq(preempt_watcher_wait(badw[i], 1), -EINVAL);
    }
    /* nothing was written by a failed call */
    ck_assert_int_eq(a, PREEMPT_ACTION_WAIT);
    ck_assert(exited && gone);
    ck_assert_int_eq(code, 99);
    ck_assert_int_eq(fd, 99);
    ck_assert_uint_eq(step, 7);
    ck_assert_int_eq(ms, 9);

    /* the callbacks' size: a size that is no release's is refused */
    ck_assert_int_eq(preempt_handler_new_size(NULL, &cfg, &cb, &r, &h, 3), -EINVAL);
    ck_assert_int_eq(preempt_handler_new_size(NULL, &cfg, &cb, &r, &h, sizeof(cb) + 8), -EINVAL);
    ck_assert_ptr_null(h);
    cfg.etcd_endpoints = "http://127.0.0.1:1";
    cfg.job = "conventions";
    ck_assert_int_eq(preempt_watcher_new_size(NULL, &cfg, &(struct preempt_watcher_callbacks){ 0 }, NULL, &w, 3),
                     -EINVAL);
    ck_assert_ptr_null(w);
    cfg = config(NULL);
    cb.save = save_nothing;
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);

    /* NULL out-parameters */
    ck_assert_int_eq(preempt_step_end(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_action(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_run(h, step_ok, NULL, NULL), -EINVAL);
    ck_assert_int_eq(preempt_save_checkpoint_if_preempted(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_status(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_exit_code(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_fd(h, NULL), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_timeout(h, NULL), -EINVAL);

    /* results: the status's size, the exit code only once exited */
    ck_assert_int_eq(preempt_handler_get_status_size(h, &st, 5), -EINVAL);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_int_eq(st.state, PREEMPT_STATE_IDLE);
    ck_assert_int_eq(preempt_handler_get_exit_code(h, &code), -EAGAIN);
    ck_assert_int_eq(code, 99);
    ck_assert_int_eq(preempt_run(h, step_ok, NULL, &exited), 0);
    ck_assert(!exited);
    ck_assert_int_eq(preempt_training_done(h), 0);
    ck_assert_int_eq(preempt_run(h, step_ok, NULL, &exited), 0);
    ck_assert(exited);
    ck_assert_int_eq(preempt_handler_get_exit_code(h, &code), 0);
    ck_assert_int_eq(code, 0);
    ck_assert_ptr_nonnull(preempt_handler_get_base(h));
    h = preempt_handler_free(h);

    /* "" is none for a file, as NULL: no trace */
    cfg = config(NULL);
    cfg.trace_path = "";
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);
    h = preempt_handler_free(h);

    /* A configuration of 0.1's size: the fields after it take their
     * defaults, and 0 keeps 0.1's meanings (the platform's exit code, the
     * launcher's kill delay, every checkpoint kept). */
    cfg = config(NULL);
    cfg.size = offsetof(struct preempt_config, termination_log);
    cfg.exit_code = 0;
    cfg.kill_delay_ms = 0;
    cfg.max_to_keep = 0;
    cfg.termination_log = "/nonexistent/never-read";
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_int_eq(st.exit_code, 42);
    h = preempt_handler_free(h);
    /* and preempt_config_init() of that size writes 0.1's defaults */
    memset(&cfg, 0xff, sizeof(cfg));
    ck_assert_int_eq(preempt_config_init_size(&cfg, offsetof(struct preempt_config, termination_log)), 0);
    ck_assert_int_eq(cfg.exit_code, 0);
    ck_assert_uint_eq(cfg.kill_delay_ms, 0);
    ck_assert_ptr_eq(cfg.termination_log, (const char *)(uintptr_t)UINTPTR_MAX); /* not written */
    ck_assert_int_eq(preempt_config_init_size(&cfg, 12), -EINVAL);
    preempt_config_init(&cfg);
    ck_assert_int_eq(cfg.exit_code, PREEMPT_AUTO);
    ck_assert_uint_eq(cfg.kill_delay_ms, (uint64_t)PREEMPT_AUTO);
    ck_assert_uint_eq(cfg.grace_ms, (uint64_t)PREEMPT_AUTO);
}
END_TEST

START_TEST(test_poll_notice_and_deadline_timer)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { .poll_notice_after = 3, .poll_deadline = 700 };
    char path[512], cmd[700];
    int calls;

    (void)snprintf(path, sizeof(path), "%s/poll.trace", dir);
    cfg.trace_path = path;
    cfg.poll_interval_ms = 10;
    cfg.margin_ms = 200;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    loop_while(base, h, PREEMPT_STATE_IDLE);
    ck_assert_int_eq(r.poll_calls, 3);
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.state, PREEMPT_STATE_STEP_AGREED);
    ck_assert_int_le(st.deadline_in_ms, 700);    /* the poll function's deadline, */
    ck_assert_int_gt(st.deadline_in_ms, 0);      /* not the 30 s default bound */
    /* The trainer never reaches the save step: the deadline timer ends the
     * run, before the deadline by the margin, with nothing saved. */
    loop_while(base, h, PREEMPT_STATE_STEP_AGREED);
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_EXIT);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_NOT_SAVED);
    ck_assert_int_eq(exit_code_of(h), 75);
    calls = r.poll_calls; /* polling stops at exit */
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1); /* 1: no events left, no poll timer */
    ck_assert_int_eq(r.poll_calls, calls);
    h = preempt_handler_free(h);
    event_base_free(base);
    /* the poll function said "notice" every time; the machine heard it once */
    (void)snprintf(cmd, sizeof(cmd), "test \"$(grep -c 'ev=notice source=poll' '%s')\" = 1", path);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* One wait for the handler's descriptor, as a foreign loop would: bounded
 * by the handler's timeout (or, with ignore_timeout, by the descriptor
 * alone, up to cap_ms); then the handler's work. Returns poll()'s result. */
static int wait_and_process(struct preempt_handler *h, bool ignore_timeout, int cap_ms)
{
    struct pollfd p = { .fd = fd_of(h), .events = POLLIN };
    int64_t t;
    int n;

    ck_assert_int_eq(preempt_handler_get_timeout(h, &t), 0);
    ck_assert_int_ge(p.fd, 0);
    ck_assert_int_ge(t, -1);
    n = poll(&p, 1, ignore_timeout || t < 0 || t > cap_ms ? cap_ms : (int)t);
    ck_assert_int_ge(n, 0);
    ck_assert_int_eq(preempt_handler_process(h), 0);
    return n;
}

/* Any event loop: a handler with its own base driven only through
 * preempt_handler_get_fd/_get_timeout/_process from poll(). Its poll
 * callback's timer runs; the deadline timer wakes the descriptor by
 * itself; a signal makes it readable; the save and exit follow. */
START_TEST(test_foreign_poll_loop)
{
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { .poll_notice_after = 3, .poll_deadline = 700 };
    uint64_t step;
    int64_t t;
    int woke = 0, waits = 0;

    cfg.poll_interval_ms = 10;
    cfg.margin_ms = 200;
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
    for (int i = 0; i < 200 && (preempt_handler_get_status(h, &st), st.state == PREEMPT_STATE_IDLE); i++)
        (void)wait_and_process(h, false, 1000);
    /* the third call said "notice"; a slow wait may run the 10 ms timer
     * twice before the machine's state is read (4 seen in a busy CI) */
    ck_assert_int_ge(r.poll_calls, 3);
    ck_assert_int_eq(st.state, PREEMPT_STATE_STEP_AGREED);
    /* the timers (the poll callback's every 10 ms, the deadline's about
     * 500 ms away) wake a loop that waits on the descriptor alone: no wait
     * runs into its 3 s cap */
    for (; waits < 1000 && (preempt_handler_get_status(h, &st), st.state == PREEMPT_STATE_STEP_AGREED); waits++)
        woke += wait_and_process(h, true, 3000);
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_EXIT);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_NOT_SAVED);
    ck_assert_int_ge(waits, 1);
    ck_assert_int_eq(woke, waits);
    h = preempt_handler_free(h);

    /* a signal: readable at once, then the save and the exit */
    memset(&r, 0, sizeof(r));
    cfg = config("fd");
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_handler_get_timeout(h, &t), 0); /* the poll callback's next turn, 1 s away */
    ck_assert(t > 900 && t <= 1100);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(kill(getpid(), SIGTERM), 0);
    ck_assert_int_eq(wait_and_process(h, true, 3000), 1);
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.state, PREEMPT_STATE_STEP_AGREED);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_SAVE_EXIT);
    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    ck_assert_int_eq(preempt_save_blob(h, "model", "two", 3), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    (void)wait_and_process(h, false, 100);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert_int_eq(exit_code_of(h), 42);
    h = preempt_handler_free(h);
}
END_TEST

/* Runs the loop until the action is not act (bounded); returns the new one. */
static int loop_until_not(struct event_base *base, struct preempt_handler *h, int act)
{
    for (int i = 0; i < 200 && (int)action_of(h) == act; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    return (int)action_of(h);
}

/* Saves the checkpoint asked for; returns its step. */
static uint64_t save_now(struct preempt_handler *h)
{
    uint64_t step;

    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    ck_assert_int_eq(preempt_save_blob(h, "model", "p", 1), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    return step;
}

/* Periodic checkpoints: every 10 steps, on request, and every 50 ms; each
 * saves and training goes on (SAVE, not SAVE_EXIT); a request during a
 * checkpoint is refused. */
START_TEST(test_periodic_checkpoints)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("periodic");
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { 0 };
    int a = PREEMPT_ACTION_CONTINUE;

    cfg.save_every_steps = 10;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    for (int i = 1; i <= 9; i++)
        ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(loop_until_not(base, h, PREEMPT_ACTION_CONTINUE), PREEMPT_ACTION_CONTINUE);
    (void)step_end(h); /* step 10 */
    for (int i = 0; i < 20 && a != PREEMPT_ACTION_SAVE; i++) {
        a = loop_until_not(base, h, PREEMPT_ACTION_CONTINUE);
        if (a == PREEMPT_ACTION_CONTINUE)
            a = step_end(h); /* the agreed step may be a step or two later */
    }
    ck_assert_int_eq(a, PREEMPT_ACTION_SAVE);
    ck_assert_int_eq(preempt_request_checkpoint(h), -EALREADY); /* one under way */
    ck_assert_uint_ge(save_now(h), 10);
    ck_assert_int_eq(loop_until_not(base, h, PREEMPT_ACTION_WAIT), PREEMPT_ACTION_CONTINUE);
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.state, PREEMPT_STATE_IDLE);
    ck_assert_uint_ge(st.committed_step, 10);
    ck_assert_uint_eq(st.saves, 1);
    ck_assert_uint_eq(r.n_exits, 0);
    /* on request */
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    a = PREEMPT_ACTION_CONTINUE;
    for (int i = 0; i < 20 && a != PREEMPT_ACTION_SAVE; i++) {
        a = loop_until_not(base, h, PREEMPT_ACTION_CONTINUE);
        if (a == PREEMPT_ACTION_CONTINUE)
            a = step_end(h);
    }
    ck_assert_int_eq(a, PREEMPT_ACTION_SAVE);
    (void)save_now(h);
    ck_assert_int_eq(loop_until_not(base, h, PREEMPT_ACTION_WAIT), PREEMPT_ACTION_CONTINUE);
    preempt_handler_get_status(h, &st);
    ck_assert_uint_eq(st.saves, 2);
    h = preempt_handler_free(h);

    /* every 50 ms */
    cfg = config("periodic-ms");
    cfg.save_every_ms = 50;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    a = PREEMPT_ACTION_CONTINUE;
    for (int i = 0; i < 400 && a != PREEMPT_ACTION_SAVE; i++) {
        ck_assert_int_eq(usleep(2000), 0); /* the step */
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        a = step_end(h);
    }
    ck_assert_int_eq(a, PREEMPT_ACTION_SAVE);
    (void)save_now(h);
    preempt_handler_get_status(h, &st);
    ck_assert_uint_eq(st.saves, 1);
    h = preempt_handler_free(h);
    event_base_free(base);
}
END_TEST

START_TEST(test_notify_custom_save_and_trace)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    uint64_t step;
    char path[512], buf[4096];
    FILE *f;
    size_t n;
    int bfd;

    (void)snprintf(path, sizeof(path), "%s/run.trace", dir);
    cfg.trace_path = path;
    cfg.start_run = 40;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_notify(h, 0), 0);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_SAVE_EXIT);
    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    ck_assert_uint_eq(step, 41);
    ck_assert_int_eq(preempt_save_blob(h, "model", "x", 1), -ENOTSUP);
    ck_assert_int_eq(preempt_save_blob_open(h, "model", &bfd), -ENOTSUP);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(exit_code_of(h), 42);
    h = preempt_handler_free(h);
    event_base_free(base);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    (void)fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "config grace=0 bound=30000"));
    ck_assert_ptr_nonnull(strstr(buf, "run=40 "));
    ck_assert_ptr_nonnull(strstr(buf, "ev=notice source=inject deadline=0 => idle -> own-signal"));
    ck_assert_ptr_nonnull(strstr(buf, "ev=ckpt-committed step=41 stop=41 => final-save -> exit fx=keep-shard:41,disarm-timer,exit:saved"));
}
END_TEST

/* A notice whose deadline, less the exit margin, has passed by the next
 * step boundary: the machine's timer is due before the boundary, so the
 * machine hears the timer first and exits not-saved, whichever of the two
 * the loop would dispatch first (the trainer's boundary came first under
 * load: a save began although its time had run out). Early in the
 * handler's life (the clock starts at 0) the timer is due at once, not at
 * the deadline. */
START_TEST(test_overdue_timer_before_boundary)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("ckpt");
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { 0 };

    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_notify(h, 2), 0);
    ck_assert_int_eq(action_of(h), PREEMPT_ACTION_CONTINUE);
    (void)usleep(5000); /* the step: the loop does not run */
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_EXIT);
    ck_assert_int_eq(exit_code_of(h), 75);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_NOT_SAVED);
    preempt_handler_get_status(h, &st);
    ck_assert_uint_eq(st.saves, 0);
    h = preempt_handler_free(h);
    event_base_free(base);
}
END_TEST

START_TEST(test_failed_save_is_not_saved)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("ckpt");
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    uint64_t step;
    char cmd[700];

    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_notify(h, 0), 0);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_SAVE_EXIT);
    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    ck_assert_int_eq(preempt_save_blob(h, "model", "x", 1), 0);
    ck_assert_int_eq(preempt_save_done(h, -ENOSPC), 0); /* the trainer's save failed */
    ck_assert_int_eq(exit_code_of(h), 75);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_NOT_SAVED);
    ck_assert_ptr_nonnull(strstr(r.log, "save at step 1 failed: No space left on device"));
    h = preempt_handler_free(h);
    event_base_free(base);
    (void)snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/ckpt' | grep -v '^\\.lock$')\"", dir);
    ck_assert_int_eq(system(cmd), 0); /* nothing committed, nothing left */
}
END_TEST

static int step_ok(void *arg)
{
    (void)arg;
    return 0;
}

static int nested_run;

static int save_and_recurse(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)step;
    (void)ud;
    nested_run = run_step(h, step_ok, NULL); /* forbidden inside a callback */
    return preempt_save_blob(h, "model", "m", 1);
}

START_TEST(test_sync_save_callback_rules)
{
    struct preempt_config cfg = config("ckpt");
    struct preempt_callbacks cb = callbacks;
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };

    cb.save = save_and_recurse;
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);
    ck_assert_int_eq(run_step(h, step_ok, NULL), 0);
    ck_assert_int_eq(preempt_notify(h, 0), 0);
    ck_assert_int_eq(run_step(h, step_ok, NULL), 1); /* saved at 2 and exited (on_exit is set) */
    ck_assert_int_eq(nested_run, -EBUSY);
    ck_assert_int_eq(exit_code_of(h), 42);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert_int_eq(run_step(h, step_ok, NULL), 1); /* stays exited */
    h = preempt_handler_free(h);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &r, &h), 0);
    ck_assert_str_eq(r.blob, "m");
    h = preempt_handler_free(h);
}
END_TEST

START_TEST(test_sync_calls_need_own_base_and_save)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };

    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(run_step(h, step_ok, NULL), -EINVAL); /* borrowed base: the caller runs it */
    ck_assert_int_eq(if_preempted(h), -EINVAL);
    h = preempt_handler_free(h);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(run_step(h, step_ok, NULL), -EINVAL); /* no save callback */
    ck_assert_int_eq(preempt_training_done(h), 0);
    ck_assert_int_eq(exit_code_of(h), 0);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_DONE);
    h = preempt_handler_free(h);
    ck_assert_ptr_null(preempt_handler_free(NULL));
    event_base_free(base);
}
END_TEST

/* async_start: creation returns before the restore; the training calls
 * say -EAGAIN until start-up, on the loop, has restored and reported
 * through on_start. */
START_TEST(test_async_start)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("astart");
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    struct rec r = { 0 };
    int a = PREEMPT_ACTION_CONTINUE;
    uint64_t saved;

    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0); /* a checkpoint to restore */
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    for (int i = 0; i < 10 && a != PREEMPT_ACTION_SAVE; i++)
        a = step_end(h);
    ck_assert_int_eq(a, PREEMPT_ACTION_SAVE);
    saved = save_now(h);
    h = preempt_handler_free(h);

    cfg.async_start = true;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.start_status, -EAGAIN);
    ck_assert_str_eq(r.blob, "");               /* not restored yet */
    ck_assert_int_eq(step_end(h), -EAGAIN);
    ck_assert_int_eq(preempt_notify(h, 0), -EAGAIN);
    ck_assert_int_eq(r.starts, 0);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    ck_assert_int_eq(r.starts, 1);
    ck_assert_int_eq(r.start_status, 0);
    ck_assert_str_eq(r.blob, "p");
    preempt_handler_get_status(h, &st);
    ck_assert_int_eq(st.start_status, 0);
    ck_assert_uint_eq(st.restored_step, saved);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    h = preempt_handler_free(h);

    /* freed before start-up ran: nothing is called */
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    h = preempt_handler_free(h);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    ck_assert_int_eq(r.starts, 1);
    event_base_free(base);
}
END_TEST

static volatile sig_atomic_t sigints;

static void count_sigint(int sig)
{
    (void)sig;
    sigints++;
}

/* A SIGINT from another process (as a terminal's Ctrl-C) once the
 * blocking start-up waits: the child accepts the start-up's connection to
 * the etcd on lfd (which never answers), signals, and holds the
 * connection until the start-up has closed it (each wait bounded). */
static pid_t sigint_when_joining(int lfd)
{
    pid_t parent = getpid(), pid = fork();

    if (pid == 0) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        int c;
        char buf[4096];

        /* gone with the test, and never Check's inherited timeout handler
         * (it kills the process group: make's, without CK_FORK) */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void)signal(SIGALRM, SIG_DFL);
        c = poll(&p, 1, 30000) == 1 ? accept(lfd, NULL, NULL) : -1;
        if (getppid() == parent)
            (void)kill(parent, SIGINT);
        p.fd = c;
        while (c >= 0 && poll(&p, 1, 30000) == 1 && read(c, buf, sizeof(buf)) > 0)
            ;
        _exit(0);
    }
    ck_assert_int_gt(pid, 0);
    return pid;
}

/* A blocking start-up in a process that handles SIGINT ends at a SIGINT
 * with -EINTR, at once, and the program's handler is called; ignored, it
 * stays ignored. The etcd here accepts connections and never answers, so
 * that only the SIGINT (or the bound) can end the join. */
START_TEST(test_sigint_interrupts_start)
{
    struct sigaction sa = { .sa_handler = count_sigint }, now;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(addr);
    struct preempt_config cfg = config(NULL);
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };
    struct timespec t0, t1;
    char url[64];
    int lfd = socket(AF_INET, SOCK_STREAM, 0), status;
    pid_t pid;

    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    ck_assert_int_eq(listen(lfd, 16), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&addr, &len), 0);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    cfg.etcd_endpoints = url;
    cfg.job = "sigint";
    cfg.workers = 2;
    cfg.join_timeout_ms = 20000;
    (void)sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGINT, &sa, NULL), 0);

    pid = sigint_when_joining(lfd);
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -EINTR);
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5); /* not the 20 s bound */
    ck_assert_int_eq(sigints, 1);                /* the program's handler learnt of it */
    ck_assert_ptr_nonnull(strstr(r.log, "interrupted (SIGINT)"));
    ck_assert_int_eq(sigaction(SIGINT, NULL, &now), 0);
    ck_assert_ptr_eq((void *)now.sa_handler, (void *)count_sigint); /* given back */
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);

    /* ignored: the start-up runs to its bound */
    cfg.join_timeout_ms = 1500;
    sa.sa_handler = SIG_IGN;
    ck_assert_int_eq(sigaction(SIGINT, &sa, NULL), 0);
    pid = sigint_when_joining(lfd);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -ETIMEDOUT);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(sigints, 1);
    sa.sa_handler = SIG_DFL;
    ck_assert_int_eq(sigaction(SIGINT, &sa, NULL), 0);
    (void)close(lfd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("handler");
    TCase *tc = tcase_create("async");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_async_signal_save_exit_restore);
    tcase_add_test(tc, test_unblocked_signal_is_ebusy);
    tcase_add_test(tc, test_abi_for_bindings);
    tcase_add_test(tc, test_conventions);
    tcase_add_loop_test(tc, test_invalid_configuration, 0, (int)(sizeof(bad_configs) / sizeof(bad_configs[0])));
    tcase_add_test(tc, test_platform_defaults);
    tcase_add_test(tc, test_poll_notice_and_deadline_timer);
    tcase_add_test(tc, test_foreign_poll_loop);
    tcase_add_test(tc, test_periodic_checkpoints);
    tcase_add_test(tc, test_notify_custom_save_and_trace);
    tcase_add_test(tc, test_failed_save_is_not_saved);
    tcase_add_test(tc, test_overdue_timer_before_boundary);
    tcase_add_test(tc, test_sync_calls_need_own_base_and_save);
    tcase_add_test(tc, test_sync_save_callback_rules);
    tcase_add_test(tc, test_async_start);
    tcase_add_test(tc, test_sigint_interrupts_start);
    suite_add_tcase(s, tc);
    /* Another thread's signal mask, as the kernel reports it: make
     * check-valgrind leaves this case out (its tag: CK_EXCLUDE_TAGS=threads):
     * valgrind blocks every signal of a thread outside its system calls,
     * so the mask the library reads flips with valgrind's scheduling (a
     * run beside make check saw it blocked just after the test had seen it
     * unblocked). The other cases run handler_new's scan under memcheck. */
    tc = tcase_create("threads");
    tcase_set_tags(tc, "threads");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_unblocked_in_another_thread_is_ebusy);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
