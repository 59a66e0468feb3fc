/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/http.c: libcurl multi on libevent (see http-internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "base/base.h"

struct xfer {
    CURL *easy;
    preempt_http_done done;
    void *arg;
    bool queued; /* waiting for the next loop pass to be added */
    struct xfer *next;
};

struct preempt_http {
    struct event_base *base;
    CURLM *multi;
    struct event *ev_timeout, *ev_defer;
    unsigned in_multi; /* depth inside curl_multi_socket_action (curl's callbacks) */
    struct xfer *xfers;
};

static struct xfer **find(struct preempt_http *h, CURL *easy)
{
    struct xfer **p = &h->xfers;

    while (*p && (*p)->easy != easy)
        p = &(*p)->next;
    return p;
}

/* Hands finished transfers to their owners. done() usually removes its own
 * transfer (and may remove others), so the list is searched afresh for each
 * message; curl drops the messages of removed handles. */
static void check_done(struct preempt_http *h)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(h->multi, &left))) {
        struct xfer *x;

        if (m->msg != CURLMSG_DONE)
            continue;
        x = *find(h, m->easy_handle);
        if (x)
            x->done(x->easy, m->data.result, x->arg);
    }
}

static void act(struct preempt_http *h, curl_socket_t fd, int action)
{
    int running;

    h->in_multi++;
    (void)curl_multi_socket_action(h->multi, fd, action, &running);
    h->in_multi--;
    check_done(h);
}

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
    act(arg, fd, (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0));
}

static void on_multi_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    act(arg, CURL_SOCKET_TIMEOUT, 0);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct preempt_http *h = userp;
    struct event *ev = socketp;
    short kind = (short)((what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0) | EV_PERSIST);

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (ev)
            event_free(ev);
        (void)curl_multi_assign(h->multi, s, NULL);
        return 0;
    }
    if (ev) {
        (void)event_del(ev);
        (void)event_assign(ev, h->base, s, kind, on_socket_event, h);
    } else {
        ev = event_new(h->base, s, kind, on_socket_event, h);
        if (!ev)
            return -1;
        (void)curl_multi_assign(h->multi, s, ev);
    }
    return event_add(ev, NULL);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct preempt_http *h = userp;
    struct timeval tv;

    (void)multi;
    if (timeout_ms < 0)
        return evtimer_del(h->ev_timeout);
    tv = preempt_tv_ms_((uint64_t)timeout_ms);
    return evtimer_add(h->ev_timeout, &tv); /* 0 fires on the next loop iteration */
}

/* Adds the queued transfers; one that cannot be added ends at once. */
static void on_defer(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_http *h = arg;
    struct xfer *x, *next;

    (void)fd;
    (void)what;
    for (x = h->xfers; x; x = next) {
        next = x->next;
        if (!x->queued)
            continue;
        x->queued = false;
        if (curl_multi_add_handle(h->multi, x->easy) != CURLM_OK) {
            *find(h, x->easy) = x->next;
            x->done(x->easy, CURLE_OUT_OF_MEMORY, x->arg);
            free(x);
            next = h->xfers; /* done() may have changed the list */
        }
    }
}

int preempt_http_add_(struct preempt_http *h, CURL *easy, preempt_http_done done, void *arg)
{
    struct xfer *x = calloc(1, sizeof(*x));

    if (!x)
        return -ENOMEM;
    *x = (struct xfer){ .easy = easy, .done = done, .arg = arg, .queued = h->in_multi > 0, .next = h->xfers };
    if (x->queued) { /* curl refuses calls from its own callbacks */
        event_active(h->ev_defer, EV_TIMEOUT, 1);
    } else if (curl_multi_add_handle(h->multi, easy) != CURLM_OK) {
        free(x);
        return -ENOMEM;
    }
    h->xfers = x;
    return 0;
}

void preempt_http_remove_(struct preempt_http *h, CURL *easy)
{
    struct xfer **p, *x;

    if (!h || !easy)
        return;
    p = find(h, easy);
    x = *p;
    if (!x)
        return;
    *p = x->next;
    if (!x->queued)
        (void)curl_multi_remove_handle(h->multi, easy);
    free(x);
}

void preempt_http_drop_(struct preempt_http *h, CURL **easy, struct curl_slist **hdrs)
{
    if (*easy) {
        preempt_http_remove_(h, *easy);
        curl_easy_cleanup(*easy);
        *easy = NULL;
    }
    curl_slist_free_all(*hdrs);
    *hdrs = NULL;
}

size_t preempt_http_body_write_(char *data, size_t size, size_t n, void *arg)
{
    struct preempt_http_body *b = arg;
    size_t len = size * n;

    if (b->len + len > b->max)
        return 0; /* refuse: the transfer ends with a write error */
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *p;

        while (cap < b->len + len + 1)
            cap *= 2;
        p = realloc(b->data, cap);
        if (!p)
            return 0; /* out of memory: the transfer ends with a write error */
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

bool preempt_http_in_callback_(const struct preempt_http *h)
{
    return h->in_multi > 0;
}

int preempt_http_new_(struct event_base *base, struct preempt_http **ret)
{
    struct preempt_http *h;
    int r = preempt_curl_load_();

    if (r < 0)
        return r;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -ENOMEM;
    h = calloc(1, sizeof(*h));
    if (!h) {
        curl_global_cleanup();
        return -ENOMEM;
    }
    h->base = base;
    h->multi = curl_multi_init();
    h->ev_timeout = evtimer_new(base, on_multi_timeout, h);
    h->ev_defer = event_new(base, -1, 0, on_defer, h);
    if (!h->multi || !h->ev_timeout || !h->ev_defer) {
        preempt_http_free_(h);
        return -ENOMEM;
    }
    (void)curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    (void)curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    (void)curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    (void)curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    *ret = h;
    return 0;
}

void preempt_http_free_(struct preempt_http *h)
{
    if (!h)
        return;
    while (h->xfers)
        preempt_http_remove_(h, h->xfers->easy);
    if (h->multi)
        (void)curl_multi_cleanup(h->multi);
    if (h->ev_timeout)
        event_free(h->ev_timeout);
    if (h->ev_defer)
        event_free(h->ev_defer);
    free(h);
    curl_global_cleanup();
}

static void on_bound(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(bool *)arg = true;
}

int preempt_run_until_(struct event_base *base, uint64_t bound_ms, bool (*done)(void *arg), void *arg)
{
    bool over = false;
    struct timeval tv = preempt_tv_ms_(bound_ms);
    struct event *bound;

    if (done(arg))
        return 0;
    bound = evtimer_new(base, on_bound, &over);
    if (!bound || evtimer_add(bound, &tv) < 0) {
        if (bound)
            event_free(bound);
        return -ENOMEM;
    }
    while (!done(arg) && !over)
        if (event_base_loop(base, EVLOOP_ONCE) < 0)
            break;
    event_free(bound);
    return done(arg) ? 0 : -ETIMEDOUT;
}
