/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/man-examples.c: the EXAMPLE of every man page in section 3. Each
 * "man: NAME..." comment names the pages whose example is the function
 * after it (scripts/man3.py copies it verbatim). tests/man3.sh compiles and
 * links this file against the header and the library with -Wall -Wextra
 * -Werror, so an example cannot call what the header does not declare. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <libpreempt/preempt.h>

int example_main(int argc, char **argv);
int example_async(struct preempt_handler *h, void *staging, size_t len);
int example_any_loop(struct preempt_handler *h);

static unsigned char model[4096];
static uint64_t done_steps;

static int train_one_step(void *arg)
{
    (void)arg;
    done_steps++;
    return 0;
}

/* man: preempt_save_blob */
static int save(struct preempt_handler *h, uint64_t step, void *userdata)
{
    (void)userdata;
    printf("saving step %llu\n", (unsigned long long)step);
    return preempt_save_blob(h, "model", model, sizeof(model)); /* a negative errno drops the save */
}

/* man: preempt_restore_blob preempt_free */
static int restore(struct preempt_handler *h, uint64_t step, void *userdata)
{
    void *data;
    size_t len;
    int r = preempt_restore_blob(h, "model", &data, &len);

    (void)userdata;
    if (r < 0)
        return r;
    if (len != sizeof(model)) {
        preempt_free(data);
        return -EBADMSG; /* another model's checkpoint: set aside, the next older one is tried */
    }
    memcpy(model, data, len);
    preempt_free(data);
    printf("resuming after step %llu\n", (unsigned long long)step);
    return 0;
}

/* man: preempt_config_init preempt_handler_new preempt_block_signals preempt_run preempt_training_done preempt_handler_free preempt_config preempt_callbacks */
int example_main(int argc, char **argv)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = save, .restore = restore };
    struct preempt_handler *h = NULL;
    bool exited = false;
    int r;

    (void)argc;
    (void)argv;
    preempt_config_init(&cfg); /* SIGTERM, exit 42 after the save, keep 3 */
    cfg.ckpt_dir = "ckpt";
    if ((r = preempt_block_signals(&cfg)) < 0) /* first, before any thread starts */
        return 1;
    if ((r = preempt_handler_new(NULL, &cfg, &cb, NULL, &h)) < 0) {
        fprintf(stderr, "preempt_handler_new: %s\n", preempt_strerror(r));
        return 1;
    }
    while (done_steps < 1000 && !exited)
        if (preempt_run(h, train_one_step, NULL, &exited) < 0)
            break;
    /* preempted: the process exited 42 inside preempt_run() (no on_exit) */
    if (!exited)
        preempt_training_done(h);
    preempt_handler_free(h);
    return 0;
}

/* man: preempt_save_checkpoint_if_preempted */
int example_own_step(struct preempt_handler *h);
int example_own_step(struct preempt_handler *h)
{
    bool exited = false;

    while (!exited) {
        train_one_step(NULL); /* the caller's own step */
        if (preempt_save_checkpoint_if_preempted(h, &exited) < 0)
            return -1;
    }
    return 0;
}

/* man: preempt_step_end preempt_handler_get_action preempt_save_begin preempt_save_snapshot preempt_save_done preempt_action preempt_state preempt_release_cb */
static void release(void *data, void *userdata)
{
    (void)data;
    (void)userdata; /* the staging buffer is the caller's again */
}

int example_async(struct preempt_handler *h, void *staging, size_t len)
{
    enum preempt_action a;
    uint64_t step;
    int r;

    if ((r = preempt_step_end(h, &a)) < 0) /* after each step; no system call while idle */
        return r;
    switch (a) {
    case PREEMPT_ACTION_CONTINUE:
        return 0; /* train the next step */
    case PREEMPT_ACTION_SAVE:
    case PREEMPT_ACTION_SAVE_EXIT:
        if ((r = preempt_save_begin(h, &step)) < 0)
            return preempt_save_done(h, r);
        memcpy(staging, model, len < sizeof(model) ? len : sizeof(model)); /* the snapshot */
        r = preempt_save_snapshot(h, "model", staging, len, release, NULL);
        return preempt_save_done(h, r); /* returns at once: the library persists it */
    case PREEMPT_ACTION_WAIT:
        /* train nothing; ask again when on_state fires */
        return preempt_handler_get_action(h, &a);
    case PREEMPT_ACTION_EXIT:
        break;
    }
    return 1; /* on_exit has the code */
}

/* man: preempt_save_blob_open */
static int save_through_fd(struct preempt_handler *h, uint64_t step, void *userdata)
{
    int fd, r;

    (void)step;
    (void)userdata;
    if ((r = preempt_save_blob_open(h, "weights", &fd)) < 0)
        return r;
    r = write(fd, model, sizeof(model)) == (ssize_t)sizeof(model) ? 0 : -EIO; /* a serializer's writes */
    close(fd); /* before preempt_save_done(), which reads it back for its checksum */
    return r;
}

/* man: preempt_restore_blob_open */
static int restore_through_fd(struct preempt_handler *h, uint64_t step, void *userdata)
{
    int fd, r;

    (void)step;
    (void)userdata;
    if ((r = preempt_restore_blob_open(h, "weights", &fd)) < 0)
        return r;
    r = read(fd, model, sizeof(model)) == (ssize_t)sizeof(model) ? 0 : -EBADMSG;
    close(fd);
    return r;
}

const struct preempt_callbacks example_fd_callbacks = { .save = save_through_fd, .restore = restore_through_fd };

/* man: preempt_handler_get_fd preempt_handler_get_timeout preempt_handler_process */
int example_any_loop(struct preempt_handler *h)
{
    int fd, r;
    int64_t ms;
    fd_set in;
    struct timeval tv, *tvp = NULL;

    if ((r = preempt_handler_get_fd(h, &fd)) < 0 || (r = preempt_handler_get_timeout(h, &ms)) < 0)
        return r;
    FD_ZERO(&in);
    FD_SET(fd, &in);
    if (ms >= 0) { /* -1: no timer */
        tv.tv_sec = ms / 1000;
        tv.tv_usec = (ms % 1000) * 1000;
        tvp = &tv;
    }
    if (select(fd + 1, &in, NULL, NULL, tvp) < 0 && errno != EINTR)
        return -errno;
    return preempt_handler_process(h); /* the signals, timers and etcd replies that are due */
}

/* man: preempt_handler_get_base preempt_handler_close preempt_close_cb */
static void closed(struct preempt_handler *h, int status, void *userdata)
{
    (void)h;
    (void)status;
    event_base_loopexit(userdata, NULL); /* the handler is freed when this returns */
}

int example_close(struct preempt_handler *h);
int example_close(struct preempt_handler *h)
{
    struct event_base *base = preempt_handler_get_base(h); /* the caller's, borrowed */
    int r = preempt_handler_close(h, closed, base);

    if (r == 0)
        event_base_dispatch(base); /* the last writes go out, then closed() runs */
    return r;
}

/* man: preempt_handler_on_peer_lost preempt_peer_lost_cb */
static void peer_lost(struct preempt_handler *h, unsigned worker, const char *why, void *userdata)
{
    (void)h;
    (void)userdata;
    fprintf(stderr, "worker %u is gone (%s): aborting my collectives\n", worker, why);
}

int example_peer_lost(struct preempt_handler *h);
int example_peer_lost(struct preempt_handler *h)
{
    return preempt_handler_on_peer_lost(h, peer_lost, NULL);
}

/* man: preempt_handler_on_rebuild preempt_rebuild_cb */
static void rebuild(struct preempt_handler *h, uint64_t incarnation, uint64_t step, void *userdata)
{
    (void)h;
    (void)userdata;
    /* destroy the old process group; make a new one whose rendezvous is this incarnation's own */
    fprintf(stderr, "in place at step %llu: new rendezvous \"inc-%llu\"\n", (unsigned long long)step,
            (unsigned long long)incarnation);
}

/* cfg->stay_in_place was set before preempt_handler_new() */
int example_rebuild(struct preempt_handler *h);
int example_rebuild(struct preempt_handler *h)
{
    return preempt_handler_on_rebuild(h, rebuild, NULL);
}

/* man: preempt_request_checkpoint preempt_notify */
int example_requests(struct preempt_handler *h, bool epoch_ended, bool operator_said_stop);
int example_requests(struct preempt_handler *h, bool epoch_ended, bool operator_said_stop)
{
    int r = 0;

    if (epoch_ended)
        r = preempt_request_checkpoint(h); /* -EALREADY while one is under way */
    if (r == 0 && operator_said_stop)
        r = preempt_notify(h, 30000); /* a notice with 30 s to the deadline */
    return r == -EALREADY ? 0 : r;
}

/* man: preempt_handler_get_status preempt_status preempt_state_to_string preempt_state_truth */
int example_status(const struct preempt_handler *h);
int example_status(const struct preempt_handler *h)
{
    struct preempt_status st;
    int r = preempt_handler_get_status(h, &st);

    if (r < 0)
        return r;
    printf("%s (%s): run %llu, committed %llu, last save %llu ms\n", preempt_state_to_string(st.state),
           preempt_state_truth(st.state), (unsigned long long)st.run, (unsigned long long)st.committed_step,
           (unsigned long long)st.save_ms);
    return 0;
}

/* man: preempt_handler_get_exit_code preempt_handler_get_error_message preempt_exit_to_string preempt_exit */
static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *userdata)
{
    int decided = 0;
    const char *msg = preempt_handler_get_error_message(h);

    (void)userdata;
    (void)preempt_handler_get_exit_code(h, &decided); /* the same as code */
    fprintf(stderr, "exiting %d (%s)%s%s\n", code, preempt_exit_to_string(reason), msg ? ": " : "", msg ? msg : "");
    exit(decided);
}

const struct preempt_callbacks example_exit_callbacks = { .save = save, .restore = restore, .on_exit = on_exit_cb };

/* man: preempt_fail preempt_request_restart */
int example_errors(struct preempt_handler *h, int loss_is_nan, int peer_unreachable);
int example_errors(struct preempt_handler *h, int loss_is_nan, int peer_unreachable)
{
    if (loss_is_nan)
        return preempt_fail(h, 3, "the loss is NaN"); /* every worker exits 3; nothing is saved */
    if (peer_unreachable)
        return preempt_request_restart(h, "the all-reduce timed out"); /* the job restarts from its last commit */
    return 0;
}

/* man: preempt_watcher_new preempt_watcher_get_notice preempt_watcher_get_exited preempt_watcher_wait preempt_watcher_free preempt_watcher_callbacks preempt_notice_info preempt_watcher_get_fd preempt_watcher_get_timeout preempt_watcher_process */
static void on_notice(struct preempt_watcher *w, const struct preempt_notice_info *n, void *userdata)
{
    (void)w;
    (void)userdata;
    printf("worker %d: %s notice, deadline %llu%s\n", n->worker, n->source, (unsigned long long)n->deadline_unix_ms,
           n->withdrawn ? " (withdrawn)" : "");
}

int example_watch(const char *etcd, const char *job);
int example_watch(const char *etcd, const char *job)
{
    struct preempt_config cfg;
    struct preempt_watcher_callbacks cb = { .on_notice = on_notice };
    struct preempt_watcher *w = NULL;
    struct preempt_notice_info n;
    bool exited = false;
    int r;

    preempt_config_init(&cfg);
    cfg.etcd_endpoints = etcd;
    cfg.job = job;
    if ((r = preempt_watcher_new(NULL, &cfg, &cb, NULL, &w)) < 0)
        return r;
    r = preempt_watcher_wait(w, 600000); /* until every worker has exited, at most 10 minutes */
    if (r == 0 && preempt_watcher_get_exited(w, &exited) == 0 && exited && preempt_watcher_get_notice(w, &n) == 0)
        printf("the job exited after a %s notice\n", n.source);
    preempt_watcher_free(w);
    return r;
}

/* man: preempt_platform_to_string preempt_platform_from_string preempt_platform */
int example_platform(const char *name);
int example_platform(const char *name)
{
    enum preempt_platform p;

    if (preempt_platform_from_string(name, &p) < 0) {
        fprintf(stderr, "unknown platform '%s'\n", name);
        return -EINVAL;
    }
    printf("platform %s\n", preempt_platform_to_string(p));
    return 0;
}

/* man: preempt_state_from_string */
int example_state(const char *name);
int example_state(const char *name)
{
    enum preempt_state s;

    return preempt_state_from_string(name, &s) == 0 ? (int)s : -1;
}

/* man: preempt_version preempt_strerror preempt_abi_layout */
void example_version(void);
void example_version(void)
{
    printf("libpreempt %s (header %d.%d)\n", preempt_version(), PREEMPT_VERSION_MAJOR, PREEMPT_VERSION_MINOR);
    printf("-EBUSY: %s\n", preempt_strerror(-EBUSY));
    printf("struct preempt_config: %s\n", preempt_abi_layout("preempt_config"));
}
