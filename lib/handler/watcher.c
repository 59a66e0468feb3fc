/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/watcher.c: the preemption watcher (include/libpreempt/preempt.h). One prefix
 * watch over /preempt/<job>/ (docs/protocol.md): the incarnation counter,
 * and in the newest incarnation the joined and alive records, the operator's
 * notice and the notice records of the newest episode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config-internal.h"
#include "etcd/etcd.h"
#include "job/job.h"
#include "embed-internal.h"
#include "records/records.h"
#include "watcher-internal.h"
#include "preempt_fsm.h"
#include "preempt.h"

#define WATCHER_MAGIC 0x70726d77u /* "prmw" */

struct preempt_watcher {
    uint32_t magic;
    struct event_base *base;
    bool own_base, read, exited_posted;
    struct preempt_watcher_callbacks cb;
    void *ud;
    const struct preempt_coord_io *io; /* the port the records come through (NULL: none yet) */
    void *io_arg;
    struct preempt_etcd *e;            /* the real port's client (preempt_watcher_wait), else NULL */
    char *password;                    /* the etcd client's, borrowed: the one copy, wiped at the end */
    struct preempt_embed *embed; /* the base seen from another loop (preempt_watcher_get_fd), made on demand */
    char jobp[PREEMPT_MAX_JOB + 16];
    uint64_t inc;                     /* the newest incarnation seen */
    struct preempt_view view;         /* its notices (of its newest episode seen) and members */
    bool have_notice;
    struct preempt_notice_info notice;
    const char *source[PREEMPT_MAX_WORKERS + 1]; /* each notice's source (static); the last slot: the operator's */
};

static bool watcher_ok(const struct preempt_watcher *w)
{
    return w && w->magic == WATCHER_MAGIC;
}

static void new_incarnation(struct preempt_watcher *w, uint64_t inc)
{
    w->inc = inc;
    (void)preempt_view_workers_(&w->view, w->view.cap); /* its count unknown until its shape is read */
    preempt_view_incarnation_(&w->view, inc);
    w->have_notice = w->exited_posted = false;
}

/* Recomputes the message: the earliest notice of the incarnation. */
static void update_notice(struct preempt_watcher *w)
{
    struct preempt_view_summary sum;
    struct preempt_notice_info n = { .incarnation = w->inc };

    preempt_view_summary_(&w->view, &sum);
    if (!sum.earliest)
        return;
    n.deadline_unix_ms = sum.earliest;
    n.worker = sum.worker;
    n.withdrawn = !sum.live;
    n.source = w->source[sum.worker < 0 ? PREEMPT_MAX_WORKERS : (unsigned)sum.worker];
    if (!n.source)
        n.source = "unknown";
    if (w->have_notice && n.deadline_unix_ms == w->notice.deadline_unix_ms && n.withdrawn == w->notice.withdrawn &&
        n.worker == w->notice.worker)
        return; /* nothing new for the caller */
    w->have_notice = true;
    w->notice = n;
    if (w->cb.on_notice)
        w->cb.on_notice(w, &w->notice, w->ud);
}

/* Every worker that joined the incarnation has ended its membership (the
 * view's members: a member record gone, or lacking in a whole read). */
static bool all_gone(const struct preempt_watcher *w)
{
    struct preempt_view_members m;

    preempt_view_members_sum_(&w->view, &m);
    return w->read && m.joined > 0 && m.alive == 0 && m.ended >= m.joined;
}

/* A worker joins with one txn that writes its joined and alive keys, and
 * the watch delivers them one at a time: a worker counts as exited only
 * once its alive key has gone, never between the two. */
static void check_exited(struct preempt_watcher *w)
{
    if (!all_gone(w)) {
        w->exited_posted = false;
        return;
    }
    if (w->exited_posted)
        return;
    w->exited_posted = true;
    if (w->cb.on_exited)
        w->cb.on_exited(w, w->inc, w->ud);
}

/* A record of the job's incarnation: the view says what it means for
 * the notices (a record of a later episode moves the watcher there: the
 * job withdrew the last episode's notices and moved on). */
static void notice_record(struct preempt_watcher *w, bool put, const char *key, const char *value)
{
    struct preempt_view_ev ev = preempt_view_apply_(&w->view, put, key, value);
    unsigned slot = PREEMPT_MAX_WORKERS;

    if (ev.what == PREEMPT_VIEW_LATER) {
        preempt_view_episode_(&w->view, ev.ep);
        ev = preempt_view_apply_(&w->view, put, key, value);
    }
    if (ev.what == PREEMPT_VIEW_NOTICE)
        slot = ev.worker;
    else if (ev.what != PREEMPT_VIEW_OP_NOTICE && ev.what != PREEMPT_VIEW_OP_GONE)
        return;
    /* the source of the record that holds the earliest deadline */
    if (ev.what != PREEMPT_VIEW_OP_GONE &&
        (slot == PREEMPT_MAX_WORKERS || w->view.notice_wall[slot] == (ev.wall ? ev.wall : 1))) {
        char name[16] = "";
        int src;

        (void)sscanf(ev.text, " %15[^ ]", name);
        src = preempt_source_from_string_(name);
        /* static names only: the string handed out lives as long as the watcher */
        w->source[slot] = src < 0 ? "unknown" : preempt_source_to_string_((enum preempt_source)src);
    }
    update_notice(w);
}

static void on_record(struct preempt_watcher *w, bool put, const char *key, const char *value)
{
    struct preempt_key k;
    int id = preempt_key_parse_(key, w->jobp, &k);
    uint64_t inc;

    if (id == PREEMPT_KEY_INCARNATION) {
        if (!put || preempt_view_inc_(value, &inc) < 0)
            return; /* gone, or not a number: the records' own incarnations still move it */
        if (inc > w->inc)
            new_incarnation(w, inc);
        return;
    }
    if (id < 0 || !preempt_key_has_(id, 'N'))
        return;
    if (k.inc > w->inc)
        new_incarnation(w, k.inc); /* records can arrive before the counter's change */
    if (k.inc != w->inc || id == PREEMPT_KEY_DECISION)
        return;
    if (id == PREEMPT_KEY_SHAPE) { /* the job's worker count: records of others are malformed */
        unsigned n;

        if (put && preempt_view_shape_(value ? value : "", &n) == 0)
            (void)preempt_view_workers_(&w->view, n);
        return;
    }
    /* a claim carries its driver's notice */
    if (id == PREEMPT_KEY_NOTICE || id == PREEMPT_KEY_NOTICE_OP || id == PREEMPT_KEY_CLAIM)
        notice_record(w, put, key, value ? value : "");
    else if (id == PREEMPT_KEY_JOINED || id == PREEMPT_KEY_ALIVE || id == PREEMPT_KEY_DONE)
        (void)preempt_view_apply_(&w->view, put, key, value); /* the members, as every worker reads them */
}

static void on_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct preempt_watcher *w = arg;

    on_record(w, type == PREEMPT_ETCD_PUT, kv->key, kv->value);
    check_exited(w);
}

/* The newest incarnation a read names: the counter's, or a record's (the
 * records of a new incarnation can come before the counter's change). */
static uint64_t newest(const struct preempt_watcher *w, const struct preempt_etcd_kv *kvs, size_t n)
{
    uint64_t inc = w->inc, v;

    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;
        int id = preempt_key_parse_(kvs[i].key, w->jobp, &k);

        if (id == PREEMPT_KEY_INCARNATION && preempt_view_inc_(kvs[i].value, &v) == 0 && v > inc)
            inc = v;
        else if (id >= 0 && preempt_key_has_(id, 'N') && k.inc > inc)
            inc = k.inc;
    }
    return inc;
}

static void on_reset(struct preempt_etcd_kv *kvs, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
    struct preempt_watcher *w = arg;
    bool had = w->have_notice, posted = w->exited_posted;
    struct preempt_notice_info last = w->notice;
    uint64_t inc = newest(w, kvs, n);
    bool same = inc == w->inc;

    (void)rev, (void)cluster;
    /* the incarnation read anew (its view too: it reads only records of its
     * incarnation); in the same incarnation, what the caller was told
     * stays told */
    new_incarnation(w, inc);
    if (same) {
        w->have_notice = had;
        w->notice = last;
        w->exited_posted = posted;
    }
    /* in the order the records were written, as every reader takes a read
     * (an incarnation's shape, its first record, before its workers') */
    preempt_etcd_kvs_by_write_(kvs, n);
    preempt_view_members_(&w->view);
    for (size_t i = 0; i < n; i++)
        on_record(w, true, kvs[i].key, kvs[i].value);
    while (preempt_view_members_end_(&w->view).what != PREEMPT_VIEW_NOTHING)
        ; /* a whole read: a member it lacks, or one joined and never there, has ended */
    w->read = true;
    check_exited(w);
}

static void on_link(bool up, const char *why, void *arg)
{
    (void)up;
    (void)why;
    (void)arg;
}

static struct preempt_watcher *watcher_alloc(const struct preempt_watcher_callbacks *cb, size_t cb_size,
                                             void *userdata)
{
    struct preempt_watcher *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    w->magic = WATCHER_MAGIC;
    if (cb)
        memcpy(&w->cb, cb, cb_size); /* an older layout: the later callbacks stay NULL */
    w->ud = userdata;
    return w;
}

/* Reads and watches the job's records through the port (w owns io_arg). */
static int watcher_start(struct preempt_watcher *w, const struct preempt_coord_io *io, void *io_arg, const char *job)
{
    static const struct preempt_etcd_watch_ops ops = { .on_event = on_event, .on_reset = on_reset,
                                                       .on_link = on_link };
    int r;

    w->io = io;
    w->io_arg = io_arg;
    r = preempt_coord_prefix_(job, w->jobp, sizeof(w->jobp));
    if (r == 0) /* a watcher's view: every possible worker, none of them its own */
        r = preempt_view_init_(&w->view, w->jobp, 0, PREEMPT_MAX_WORKERS, PREEMPT_MAX_WORKERS);
    return r < 0 ? r : io->watch(io_arg, w->jobp, NULL, &ops, w);
}

int preempt_watcher_new_io_(const struct preempt_coord_io *io, void *io_arg, const char *job,
                            const struct preempt_watcher_callbacks *cb, void *userdata, struct preempt_watcher **ret)
{
    struct preempt_watcher *w = watcher_alloc(cb, sizeof(*cb), userdata);
    int r = w ? watcher_start(w, io, io_arg, job) : -ENOMEM;

    if (!w)
        io->free(io_arg);
    if (r < 0) {
        preempt_watcher_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

int preempt_watcher_new_size(struct event_base *base, const struct preempt_config *cfg,
                             const struct preempt_watcher_callbacks *cb, void *userdata, struct preempt_watcher **ret,
                             size_t cb_size)
{
    struct preempt_etcd_opts eo;
    const struct preempt_coord_io *io;
    struct preempt_watcher *w;
    void *io_arg;
    int r;

    if (!cfg || !ret || !preempt_config_size_ok_(cfg->size) || (cb && !preempt_watcher_callbacks_size_ok_(cb_size)) ||
        !cfg->etcd_endpoints || !cfg->etcd_user != !cfg->etcd_password) /* the fields read are in every layout */
        return -EINVAL;
    if (!(w = watcher_alloc(cb, cb_size, userdata)))
        return -ENOMEM;
    w->base = base;
    if (!base) {
        w->base = event_base_new();
        w->own_base = true;
    }
    r = cfg->etcd_password && !(w->password = strdup(cfg->etcd_password)) ? -ENOMEM : 0;
    eo = (struct preempt_etcd_opts){ .endpoints = cfg->etcd_endpoints, .user = cfg->etcd_user,
                                     .password = w->password, .ca = cfg->etcd_ca, .cert = cfg->etcd_cert,
                                     .key = cfg->etcd_key, .timeout_ms = cfg->etcd_timeout_ms };
    if (r == 0 && !w->base)
        r = -ENOMEM;
    if (r == 0 && (r = preempt_coord_real_io_(w->base, &eo, &io, &io_arg)) == 0) {
        w->e = preempt_coord_real_etcd_(io_arg);
        r = watcher_start(w, io, io_arg, cfg->job);
    }
    if (r < 0) {
        preempt_watcher_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

struct preempt_watcher *preempt_watcher_free(struct preempt_watcher *w)
{
    if (!watcher_ok(w))
        return NULL;
    preempt_embed_free_(w->embed);
    if (w->io)
        w->io->free(w->io_arg); /* its watch and, on the real port, etcd's client */
    if (w->password)
        explicit_bzero(w->password, strlen(w->password));
    free(w->password);
    if (w->own_base && w->base)
        event_base_free(w->base);
    preempt_view_free_(&w->view);
    w->magic = 0;
    free(w);
    return NULL;
}

int preempt_watcher_get_notice_size(const struct preempt_watcher *w, struct preempt_notice_info *ret, size_t size)
{
    if (!watcher_ok(w) || !ret || !preempt_notice_size_ok_(size))
        return -EINVAL;
    if (!w->have_notice)
        return -EAGAIN;
    memcpy(ret, &w->notice, size); /* an older layout gets the fields it has */
    return 0;
}

int preempt_watcher_get_exited(const struct preempt_watcher *w, bool *ret_exited)
{
    if (!watcher_ok(w) || !ret_exited)
        return -EINVAL;
    if (!w->read)
        return -EAGAIN;
    *ret_exited = all_gone(w);
    return 0;
}

static bool exited(void *arg)
{
    bool yes = false;

    return preempt_watcher_get_exited(arg, &yes) == 0 && yes;
}

int preempt_watcher_wait(struct preempt_watcher *w, uint64_t timeout_ms)
{
    if (!watcher_ok(w) || !w->own_base || !w->e)
        return -EINVAL;
    return preempt_etcd_run_until_(w->e, timeout_ms, exited, w);
}

/* The watcher's base seen from another loop, made on the first call. */
static int embed(struct preempt_watcher *w)
{
    if (!watcher_ok(w) || !w->base)
        return -EINVAL;
    return w->embed ? 0 : preempt_embed_new_(w->base, &w->embed);
}

int preempt_watcher_get_fd(struct preempt_watcher *w, int *ret_fd)
{
    int r = ret_fd ? embed(w) : -EINVAL;

    if (r == 0)
        *ret_fd = preempt_embed_fd_(w->embed);
    return r;
}

int preempt_watcher_get_timeout(struct preempt_watcher *w, int64_t *ret_ms)
{
    int r = ret_ms ? embed(w) : -EINVAL;

    if (r == 0)
        *ret_ms = preempt_embed_timeout_(w->embed);
    return r;
}

int preempt_watcher_process(struct preempt_watcher *w)
{
    int r = embed(w);

    return r < 0 ? r : preempt_embed_process_(w->embed);
}
