/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/cloud/metadata.c: the cloud notice sources (see metadata-internal.h). */
#define _GNU_SOURCE /* timegm */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "etcd/etcd.h"
#include "metadata-internal.h"
#include "base/base.h"

#define MAX_BODY (64 * 1024)
#define GCE_WAIT_S 60              /* long-poll wait asked of the GCE server */
#define GCE_SPOT_LEAD_MS 30000     /* preempted TRUE: ACPI soft-off, hard off 30 s later */
#define GCE_MAINT_LEAD_MS 60000    /* TERMINATE_ON_HOST_MAINTENANCE: 60 s before the maintenance */
#define GCE_GPU_MAINT_LEAD_MS 3600000 /* ... on VMs with GPUs (no live migration): 60 min */
#define AWS_LEAD_MS 120000         /* a spot instance action comes two minutes ahead */
#define AWS_V1_MS 300000           /* after a token failure, IMDSv1 this long before the next token try */
#define AWS_TOKEN_TTL_S 21600
#define AWS_TOKEN_RENEW_S 60       /* renew this long before the token expires */
#define AWS_MAX_EVENTS 16
#define AWS_SCHED_LEAD_MS 300000 /* a scheduled event becomes a notice 5 min before its NotBefore */
#define AZURE_FIRST_TIMEOUT_MS 120000 /* the first call enables the service: up to 2 min */
#define AZURE_MAX_EVENTS 16
#define LATE_LEAD_MS 10000 /* an event due or past due that has not started: still time to try a save */

/* ---- the sources (shell) ----------------------------------------------------------------------------- */

enum step {
    GCE_READ,
    AWS_TOKEN, AWS_ACTION, AWS_REBALANCE, AWS_SCHEDULED, AWS_LIFECYCLE,
    AZURE_NAME, AZURE_EVENTS, AZURE_APPROVE,
};

struct chan {
    struct preempt_meta *m;
    const char *key;        /* GCE: the metadata key this channel follows */
    enum step step;
    CURL *easy;
    struct curl_slist *hdrs;
    struct preempt_http_body reply;
    char etag[128], new_etag[128];
    char errbuf[CURL_ERROR_SIZE];
    struct event *ev_next;
    int reported;           /* GCE: the kind last reported, -1 none */
    bool failing;           /* the last request failed (logged once per streak) */
    bool retried_401;
};

struct preempt_meta {
    struct preempt_meta_opts o;
    char *url;
    struct preempt_http *http;
    struct chan ch[3];
    unsigned n_ch;
    unsigned long requests;
    /* AWS */
    char token[512];
    uint64_t token_at;
    uint64_t action_deadline; /* the instance action's deadline reported (0: none) */
    bool rebalance_on;        /* a rebalance recommendation is listed (reported once while it is) */
    uint64_t v1_until;        /* the token failed: IMDSv1 (no token) until then (monotonic ms) */
    struct preempt_aws_event sched[AWS_MAX_EVENTS]; /* listed last time (.noticed: a notice was given) */
    size_t n_sched;
    bool sched_bad;           /* the last list (or an event in it) could not be read: said once per streak */
    bool lifecycle_on;        /* the Auto Scaling group is taking the instance out (reported once) */
    /* Azure */
    char vm[256];
    bool named, first_events;
    bool az_read;     /* a scheduled events document was read */
    bool az_bad;      /* the last document (or an event in it) could not be read: said once per streak */
    bool name_failed; /* the last lookup of this VM's name failed: said once per streak */
    struct preempt_azure_event az[AZURE_MAX_EVENTS];
    size_t n_az;
    bool approving;   /* the StartRequests POST is in flight */
    /* GCE */
    uint64_t upcoming_ms; /* the upcoming maintenance window reported (its start; 0: none) */
};

#define mlog(m, ...) preempt_logf_((m)->o.log, (m)->o.arg, __VA_ARGS__)

static uint64_t wall_ms(void)
{
    return preempt_clock_ms_(CLOCK_REALTIME);
}

static enum preempt_source source_of(const struct preempt_meta *m)
{
    if (m->o.platform == PREEMPT_PLATFORM_AWS)
        return PREEMPT_SOURCE_AWS;
    return m->o.platform == PREEMPT_PLATFORM_AZURE ? PREEMPT_SOURCE_AZURE : PREEMPT_SOURCE_GCE;
}

static void report(struct preempt_meta *m, enum preempt_meta_kind kind, uint64_t deadline, const char *what)
{
    m->o.on_notice(kind, source_of(m), deadline, what, m->o.arg);
}

static void chan_stop(struct chan *c)
{
    preempt_http_drop_(c->m->http, &c->easy, &c->hdrs);
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    struct chan *c = arg;
    size_t len = size * n;

    if (len > 5 && !strncasecmp(data, "ETag:", 5)) {
        const char *v = data + 5;
        size_t vl = len - 5;

        while (vl > 0 && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(c->new_etag)) {
            memcpy(c->new_etag, v, vl);
            c->new_etag[vl] = '\0';
        }
    }
    return len;
}

static void on_done(CURL *easy, CURLcode res, void *arg);

static void chan_later(struct chan *c, uint64_t ms)
{
    struct timeval tv = preempt_tv_ms_(ms);

    (void)evtimer_add(c->ev_next, &tv);
}


/* Starts one request of channel c: METHOD (NULL: GET) of url/path with the
 * given headers (NULL-terminated) and, for a PUT or a POST, body (copied by
 * curl), bounded by timeout_ms. */
static void chan_request(struct chan *c, const char *method, const char *path, const char *body, uint64_t timeout_ms,
                         const char *const *hdrs)
{
    struct preempt_meta *m = c->m;
    char url[2048];
    CURL *e;

    chan_stop(c);
    c->reply.len = 0;
    c->reply.max = MAX_BODY;
    c->new_etag[0] = '\0';
    c->errbuf[0] = '\0';
    e = curl_easy_init();
    for (; e && hdrs && *hdrs; hdrs++) {
        struct curl_slist *l = curl_slist_append(c->hdrs, *hdrs);

        if (!l)
            break;
        c->hdrs = l;
    }
    (void)snprintf(url, sizeof(url), "%s/%s", m->url, path);
    if (e) {
        c->easy = e;
        (void)curl_easy_setopt(e, CURLOPT_URL, url);
        (void)curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
        (void)curl_easy_setopt(e, CURLOPT_NOPROXY, "*"); /* metadata never goes through a proxy */
        (void)curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        (void)curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
        (void)curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
        (void)curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, preempt_http_body_write_);
        (void)curl_easy_setopt(e, CURLOPT_WRITEDATA, &c->reply);
        (void)curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        (void)curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
        (void)curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)m->o.timeout_ms);
        (void)curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        if (method) {
            (void)curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
            (void)curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body ? body : "");
        }
        m->requests++;
        if (preempt_http_add_(m->http, e, on_done, c) == 0)
            return;
    }
    mlog(m, 2, "metadata: cannot start a request to %s: out of memory", url);
    chan_stop(c);
    chan_later(c, m->o.poll_ms);
}

/* A request that did not give a usable answer: logged once per streak. */
static void chan_failed(struct chan *c, const char *what, long http, CURLcode res)
{
    struct preempt_meta *m = c->m;

    if (!c->failing)
        mlog(m, 2, "metadata %s: %s; retrying every %llu ms", what,
             res != CURLE_OK ? (c->errbuf[0] ? c->errbuf : curl_easy_strerror(res))
             : http == 0   ? "no reply"
                           : "unexpected HTTP status",
             (unsigned long long)m->o.poll_ms);
    else
        mlog(m, 0, "metadata %s: failed again (curl %d, HTTP %ld)", what, (int)res, http);
    c->failing = true;
}

static void chan_ok(struct chan *c, const char *what)
{
    if (c->failing)
        mlog(c->m, 1, "metadata %s: answering again", what);
    c->failing = false;
}

static char *trimmed(struct chan *c)
{
    char *s = c->reply.len ? c->reply.data : (char *)"";

    while (*s && isspace((unsigned char)*s))
        s++;
    for (size_t n = strlen(s); n > 0 && isspace((unsigned char)s[n - 1]); n--)
        s[n - 1] = '\0';
    return s;
}

/* ---- GCE ---- */

/* Percent-encodes every byte but RFC 3986's unreserved ones (ASCII, not
 * the locale's isalnum): an ETag is opaque (emulators put '+', '/', '='
 * and quotes in it). */
static void url_escape(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *in && n + 4 <= size; in++) {
        unsigned char ch = (unsigned char)*in;

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
}

static void gce_read(struct chan *c)
{
    static const char *const hdrs[] = { "Metadata-Flavor: Google", NULL };
    char path[1024];
    uint64_t timeout = c->m->o.timeout_ms;

    if (c->etag[0]) { /* long poll: the server answers when the value changes */
        char etag[3 * sizeof(c->etag)];

        url_escape(c->etag, etag, sizeof(etag));
        (void)snprintf(path, sizeof(path), "computeMetadata/v1/instance/%s?wait_for_change=true&last_etag=%s"
                       "&timeout_sec=%d", c->key, etag, GCE_WAIT_S);
        timeout += GCE_WAIT_S * 1000u;
    } else {
        (void)snprintf(path, sizeof(path), "computeMetadata/v1/instance/%s", c->key);
    }
    c->step = GCE_READ;
    chan_request(c, NULL, path, NULL, timeout, hdrs);
}

/* After a reply with an ETag, wait for the next change at once; else poll. */
static void gce_next(struct chan *c)
{
    if (c->new_etag[0] && strcmp(c->new_etag, c->etag) != 0) {
        (void)snprintf(c->etag, sizeof(c->etag), "%s", c->new_etag);
        gce_read(c);
    } else {
        chan_later(c, c->m->o.poll_ms); /* no ETag, or a server that does not wait */
    }
}

/* instance/upcoming-maintenance (VMs with advanced maintenance): 404 while
 * none is planned. A window announced (days ahead, as a rule) is advisory:
 * a checkpoint once per window; the notice itself comes through
 * maintenance-event when the window begins. */
static void gce_upcoming(struct chan *c, long http, CURLcode res, const char *what)
{
    struct preempt_meta *m = c->m;
    char text[200];
    uint64_t start;

    if (res != CURLE_OK || (http != 200 && http != 404))
        chan_failed(c, what, http, res);
    else
        chan_ok(c, what);
    if (res != CURLE_OK || http != 200) { /* 404: none planned */
        if (res == CURLE_OK && http == 404)
            m->upcoming_ms = 0;
        c->etag[0] = '\0';
        chan_later(c, m->o.poll_ms);
        return;
    }
    if (preempt_gce_upcoming_(trimmed(c), &start, text, sizeof(text)) < 0) {
        if (!c->failing)
            mlog(m, 2, "metadata %s: cannot read \"%.80s\"; ignored", what, c->reply.data ? c->reply.data : "");
    } else if (start != m->upcoming_ms) {
        m->upcoming_ms = start;
        report(m, PREEMPT_META_ADVISORY, 0, text);
    }
    gce_next(c);
}

static void gce_done(struct chan *c, long http, CURLcode res)
{
    struct preempt_meta *m = c->m;
    char what[160];
    const char *v;
    int kind;

    (void)snprintf(what, sizeof(what), "instance/%s", c->key);
    if (c == &m->ch[2]) {
        gce_upcoming(c, http, res, what);
        return;
    }
    if (res != CURLE_OK || http != 200) {
        chan_failed(c, what, http, res);
        c->etag[0] = '\0'; /* read afresh */
        chan_later(c, m->o.poll_ms);
        return;
    }
    chan_ok(c, what);
    v = trimmed(c);
    kind = preempt_gce_value_(c->key, v);
    if (kind == -EPROTO) {
        mlog(m, 2, "metadata %s: unknown value \"%.60s\"; taken as no notice", what, v);
        kind = -1;
    }
    (void)snprintf(what, sizeof(what), "instance/%s %.60s", c->key, v);
    if (kind == PREEMPT_META_NOTICE && c->reported != PREEMPT_META_NOTICE)
        report(m, PREEMPT_META_NOTICE,
               wall_ms() + (!strcmp(c->key, "preempted")                   ? GCE_SPOT_LEAD_MS
                            : m->o.platform == PREEMPT_PLATFORM_GCE_GPU ? GCE_GPU_MAINT_LEAD_MS
                                                                           : GCE_MAINT_LEAD_MS),
               what);
    else if (kind == PREEMPT_META_ADVISORY && c->reported != PREEMPT_META_ADVISORY)
        report(m, PREEMPT_META_ADVISORY, 0, what);
    else if (kind == -1 && c->reported == PREEMPT_META_NOTICE &&
             m->ch[c == &m->ch[0]].reported != PREEMPT_META_NOTICE) /* the other of the two notice keys */
        report(m, PREEMPT_META_WITHDRAWN, 0, what);
    c->reported = kind;
    gce_next(c);
}

/* ---- AWS ---- */

static void aws_get(struct chan *c, enum step step)
{
    char tok[sizeof(c->m->token) + 32];
    const char *hdrs[] = { c->m->token[0] ? tok : NULL, NULL }; /* no token: IMDSv1 */

    (void)snprintf(tok, sizeof(tok), "X-aws-ec2-metadata-token: %s", c->m->token);
    c->step = step;
    chan_request(c, NULL,
                 step == AWS_ACTION      ? "latest/meta-data/spot/instance-action"
                 : step == AWS_REBALANCE ? "latest/meta-data/events/recommendations/rebalance"
                 : step == AWS_SCHEDULED ? "latest/meta-data/events/maintenance/scheduled"
                                         : "latest/meta-data/autoscaling/target-lifecycle-state",
                 NULL, c->m->o.timeout_ms, hdrs);
}

static void aws_poll(struct chan *c)
{
    struct preempt_meta *m = c->m;
    uint64_t now = preempt_clock_ms_(CLOCK_MONOTONIC);

    if ((m->token[0] && now < m->token_at + (AWS_TOKEN_TTL_S - AWS_TOKEN_RENEW_S) * 1000ull) || now < m->v1_until) {
        aws_get(c, AWS_ACTION);
        return;
    }
    static const char *const hdrs[] = { "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL };
    c->step = AWS_TOKEN;
    chan_request(c, "PUT", "latest/api/token", NULL, m->o.timeout_ms, hdrs);
}

/* The element of an array of events (each begins with its id) with id. */
static const void *find_id(const void *ev, size_t n, size_t size, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp((const char *)ev + i * size, id))
            return (const char *)ev + i * size;
    return NULL;
}
#define FIND_EVENT(ev, n, id) ((const __typeof__(*(ev)) *)find_id((ev), (n), sizeof(*(ev)), (id)))
_Static_assert(offsetof(struct preempt_aws_event, id) == 0, "find_id: the id first");
_Static_assert(offsetof(struct preempt_azure_event, id) == 0, "find_id: the id first");

/* How a document of scheduled events read (r < 0: it is none; bad: events
 * in it skipped), said once per streak of trouble (*streak); true when it
 * is one. */
static bool events_read(struct preempt_meta *m, bool *streak, const char *what, int r, size_t bad, const char *body)
{
    if (r < 0) {
        if (!*streak)
            mlog(m, 2, "metadata %s: not a scheduled events document: \"%.80s\"; kept what was known (said once "
                 "until one reads)", what, body);
        *streak = true;
        return false;
    }
    if (bad && !*streak)
        mlog(m, 2, "metadata %s: %zu event(s) cannot be read and are skipped; the others count (said once until "
             "every event reads): \"%.80s\"", what, bad, body);
    *streak = bad > 0;
    return true;
}

/* A notice's deadline for an event due at not_before_ms: then, or, when
 * that is (nearly) past, LATE_LEAD_MS from now. */
static uint64_t due_by(uint64_t not_before_ms, uint64_t now_ms)
{
    return not_before_ms > now_ms + LATE_LEAD_MS ? not_before_ms : now_ms + LATE_LEAD_MS;
}

/* Scheduled events come days ahead: one that ends the instance is an
 * advisory checkpoint when first listed and a notice, with its NotBefore
 * as the deadline, once it is AWS_SCHED_LEAD_MS away (a notice days ahead
 * would stop training at once, and every restart on this instance again);
 * system-maintenance stays advisory. Reported once per event and kind;
 * when every event it gave notice of is gone (canceled, completed) and no
 * instance action came, withdrawn. */
static void aws_scheduled(struct preempt_meta *m, const char *body)
{
    struct preempt_aws_event now[AWS_MAX_EVENTS];
    size_t n = 0, bad = 0;
    bool noticed_before = false, noticed_now = false;
    uint64_t t = wall_ms();
    char text[200];
    int r = preempt_aws_scheduled_(body, now, AWS_MAX_EVENTS, &n, &bad);

    if (!events_read(m, &m->sched_bad, "events/maintenance/scheduled", r, bad, body))
        return;
    for (size_t i = 0; i < n; i++) {
        const struct preempt_aws_event *old = FIND_EVENT(m->sched, m->n_sched, now[i].id);
        bool due = now[i].ends && now[i].not_before_ms <= t + AWS_SCHED_LEAD_MS;

        now[i].noticed = old && old->noticed;
        if (due && !now[i].noticed) {
            (void)snprintf(text, sizeof(text), "scheduled event %.31s %.63s", now[i].code, now[i].id);
            report(m, PREEMPT_META_NOTICE, due_by(now[i].not_before_ms, t), text);
            now[i].noticed = true;
        } else if (!old) {
            (void)snprintf(text, sizeof(text), "scheduled event %.31s %.63s in %llu s", now[i].code, now[i].id,
                           (unsigned long long)(now[i].not_before_ms > t ? (now[i].not_before_ms - t) / 1000 : 0));
            report(m, PREEMPT_META_ADVISORY, 0, text);
        }
        noticed_now = noticed_now || now[i].noticed;
    }
    for (size_t i = 0; i < m->n_sched; i++)
        noticed_before = noticed_before || m->sched[i].noticed;
    memcpy(m->sched, now, n * sizeof(now[0]));
    m->n_sched = n;
    if (noticed_before && !noticed_now && !m->action_deadline)
        report(m, PREEMPT_META_WITHDRAWN, 0, "the scheduled events were canceled");
}

static void aws_done(struct chan *c, long http, CURLcode res)
{
    struct preempt_meta *m = c->m;
    const char *what = c->step == AWS_TOKEN       ? "IMDSv2 token"
                       : c->step == AWS_ACTION    ? "spot/instance-action"
                       : c->step == AWS_REBALANCE ? "rebalance recommendation"
                       : c->step == AWS_SCHEDULED ? "events/maintenance/scheduled"
                                                  : "autoscaling/target-lifecycle-state";
    char action[32], text[200];
    uint64_t t;

    if (res == CURLE_OK && http == 401 && c->step != AWS_TOKEN && !c->retried_401) {
        mlog(m, 1, "metadata: the IMDSv2 token was refused (expired?); getting a new one");
        m->token[0] = '\0';
        m->v1_until = 0; /* IMDSv1 refused: a token it is */
        c->retried_401 = true;
        aws_poll(c);
        return;
    }
    c->retried_401 = false;
    if (c->step == AWS_TOKEN && (res != CURLE_OK || http != 200) && http != 401) {
        /* No token (a container behind hop limit 1 never gets the PUT's
         * answer; an old instance has no IMDSv2): read with IMDSv1 for a
         * while, as AWS's own node termination handler does. */
        chan_failed(c, what, http, res);
        m->token[0] = '\0';
        m->v1_until = preempt_clock_ms_(CLOCK_MONOTONIC) + AWS_V1_MS;
        aws_get(c, AWS_ACTION);
        return;
    }
    if (res != CURLE_OK || (http != 200 && !(http == 404 && c->step != AWS_TOKEN))) {
        chan_failed(c, what, http, res);
        if (http == 401)
            m->token[0] = '\0';
        chan_later(c, m->o.poll_ms);
        return;
    }
    chan_ok(c, what);
    if (c->step == AWS_TOKEN) {
        const char *tok = trimmed(c);

        if (!*tok || strlen(tok) >= sizeof(m->token) || strpbrk(tok, "\r\n")) {
            chan_failed(c, "IMDSv2 token (unusable reply)", http, res);
            chan_later(c, m->o.poll_ms);
            return;
        }
        (void)snprintf(m->token, sizeof(m->token), "%s", tok);
        m->token_at = preempt_clock_ms_(CLOCK_MONOTONIC);
        aws_get(c, AWS_ACTION);
    } else if (c->step == AWS_ACTION) {
        if (http == 200) {
            const char *body = trimmed(c);

            if (preempt_aws_action_(body, action, sizeof(action), &t) < 0) {
                mlog(m, 2, "metadata spot/instance-action: cannot read \"%.80s\"; a notice all the same, "
                     "deadline in %d s", body, AWS_LEAD_MS / 1000);
                (void)snprintf(action, sizeof(action), "unreadable");
                t = 0;
            }
            (void)snprintf(text, sizeof(text), "spot/instance-action %s at %llu", action, (unsigned long long)t);
            if (!t)
                t = m->action_deadline ? m->action_deadline : wall_ms() + AWS_LEAD_MS;
            if (!m->action_deadline || t < m->action_deadline) { /* new, or earlier: a later time changes nothing */
                m->action_deadline = t;
                report(m, PREEMPT_META_NOTICE, t, text);
            }
        }
        aws_get(c, AWS_REBALANCE);
    } else if (c->step == AWS_REBALANCE) {
        /* Once while it is listed: its noticeTime may move between
         * requests, and every change took another checkpoint. */
        if (http == 200 && !m->rebalance_on)
            report(m, PREEMPT_META_ADVISORY, 0, "rebalance recommendation");
        m->rebalance_on = http == 200;
        aws_get(c, AWS_SCHEDULED);
    } else if (c->step == AWS_SCHEDULED) {
        aws_scheduled(m, http == 200 ? trimmed(c) : "[]");
        aws_get(c, AWS_LIFECYCLE);
    } else {
        const char *v = http == 200 ? trimmed(c) : "";
        bool leaving = preempt_aws_lifecycle_(v) == PREEMPT_META_NOTICE;

        if (leaving && !m->lifecycle_on) { /* once while it holds; the hook's timeout is not known here */
            (void)snprintf(text, sizeof(text), "autoscaling/target-lifecycle-state %.40s", v);
            report(m, PREEMPT_META_NOTICE, 0, text);
        }
        m->lifecycle_on = leaving;
        chan_later(c, m->o.poll_ms);
    }
}

/* ---- Azure ---- */

static void azure_request(struct chan *c, enum step step)
{
    static const char *const hdrs[] = { "Metadata: true", NULL };
    uint64_t timeout = c->m->o.timeout_ms;

    c->step = step;
    if (step == AZURE_EVENTS && c->m->first_events && timeout < AZURE_FIRST_TIMEOUT_MS)
        timeout = AZURE_FIRST_TIMEOUT_MS;
    chan_request(c, NULL,
                 step == AZURE_NAME ? "metadata/instance/compute/name?api-version=2021-02-01&format=text"
                                    : "metadata/scheduledevents?api-version=2020-07-01",
                 NULL, timeout, hdrs);
}

static void azure_events(struct preempt_meta *m, const char *body)
{
    struct preempt_azure_event now[AZURE_MAX_EVENTS];
    size_t n = 0, bad = 0;
    int64_t inc = 0;
    bool gone = false, first = !m->az_read;
    char text[200];
    int r = preempt_azure_events_(body, m->vm, now, AZURE_MAX_EVENTS, &n, &bad, &inc);

    if (!events_read(m, &m->az_bad, "scheduledevents", r, bad, body))
        return;
    m->az_read = true;
    for (size_t i = 0; i < n; i++) {
        const struct preempt_azure_event *old = FIND_EVENT(m->az, m->n_az, now[i].id);
        uint64_t t = wall_ms(), d = now[i].not_before_ms ? now[i].not_before_ms : t;

        if (!now[i].started && now[i].not_before_ms)
            d = due_by(now[i].not_before_ms, t); /* past its NotBefore but not started: a save may still make it */
        now[i].reported = old && old->reported;
        if (old && (old->not_before_ms == 0 || (now[i].not_before_ms && now[i].not_before_ms >= old->not_before_ms)))
            continue;
        if (!old && first && now[i].started && strcmp(now[i].type, "Preempt") && strcmp(now[i].type, "Terminate")) {
            /* The service lists a Reboot or Redeploy as Started for minutes
             * after the VM came back: this process started after it. */
            mlog(m, 1, "metadata: scheduled event %.15s %.63s had started before this process first read the "
                 "events: it already happened to this VM; not a notice", now[i].type, now[i].id);
            continue;
        }
        (void)snprintf(text, sizeof(text), "scheduled event %.15s %.63s (incarnation %lld)", now[i].type, now[i].id,
                       (long long)inc);
        report(m, PREEMPT_META_NOTICE, d, text);
        now[i].reported = true;
    }
    for (size_t i = 0; i < m->n_az; i++)
        gone = gone || !FIND_EVENT(now, n, m->az[i].id);
    memcpy(m->az, now, n * sizeof(now[0]));
    m->n_az = n;
    if (gone && n == 0)
        report(m, PREEMPT_META_WITHDRAWN, 0, "the scheduled events were cancelled");
}

static void azure_done(struct chan *c, long http, CURLcode res)
{
    struct preempt_meta *m = c->m;

    if (c->step == AZURE_APPROVE) { /* the last request: nothing follows */
        if (res == CURLE_OK && http == 200)
            mlog(m, 1, "metadata: scheduled events approved (StartRequests): they may start now");
        else
            mlog(m, 2, "metadata: the approval of the scheduled events failed (curl %d, HTTP %ld); they start at "
                 "their NotBefore", (int)res, http);
        m->approving = false;
        return;
    }

    if (c->step == AZURE_NAME) {
        const char *name = trimmed(c);

        if (res == CURLE_OK && http == 200 && *name && strlen(name) < sizeof(m->vm)) {
            (void)snprintf(m->vm, sizeof(m->vm), "%s", name);
            m->named = true;
            m->name_failed = false;
            mlog(m, 0, "metadata: this VM is %s", m->vm);
        } else if (!m->name_failed) {
            /* Asked again before every read of the events, until it answers:
             * one failure must not make other VMs' events this VM's for good. */
            m->name_failed = true;
            mlog(m, 2, "metadata: cannot read this VM's name (curl %d, HTTP %ld); every scheduled event counts "
                 "until it can be read (asked again at every poll)", (int)res, http);
        }
        azure_request(c, AZURE_EVENTS);
        return;
    }
    if (res != CURLE_OK || http != 200) {
        chan_failed(c, "scheduledevents", http, res);
        chan_later(c, m->o.poll_ms);
        return;
    }
    m->first_events = false;
    chan_ok(c, "scheduledevents");
    azure_events(m, trimmed(c));
    chan_later(c, m->o.poll_ms);
}

/* ---- dispatch and life cycle ---- */

static void on_done(CURL *easy, CURLcode res, void *arg)
{
    struct chan *c = arg;
    long http = 0;

    (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
    chan_stop(c);
    switch (c->step) {
    case GCE_READ:
        gce_done(c, http, res);
        break;
    case AWS_TOKEN:
    case AWS_ACTION:
    case AWS_REBALANCE:
    case AWS_SCHEDULED:
    case AWS_LIFECYCLE:
        aws_done(c, http, res);
        break;
    case AZURE_NAME:
    case AZURE_EVENTS:
    case AZURE_APPROVE:
        azure_done(c, http, res);
        break;
    }
}

static void on_next(evutil_socket_t fd, short what, void *arg)
{
    struct chan *c = arg;

    (void)fd;
    (void)what;
    if (c->m->approving)
        return; /* the approval was the last request */
    if (c->m->o.platform == PREEMPT_PLATFORM_AWS)
        aws_poll(c);
    else if (c->m->o.platform == PREEMPT_PLATFORM_AZURE)
        azure_request(c, c->m->named ? AZURE_EVENTS : AZURE_NAME);
    else
        gce_read(c);
}

int preempt_meta_new_(struct event_base *base, const struct preempt_meta_opts *o, struct preempt_meta **ret)
{
    struct preempt_meta *m;
    size_t n;
    int r;

    if (!base || !o || !o->url || !o->on_notice || o->poll_ms == 0 || o->timeout_ms == 0 ||
        strncmp(o->url, "http://", 7) != 0)
        return -EINVAL;
    if (o->platform != PREEMPT_PLATFORM_GCE && o->platform != PREEMPT_PLATFORM_GCE_GPU &&
        o->platform != PREEMPT_PLATFORM_AWS && o->platform != PREEMPT_PLATFORM_AZURE)
        return -EINVAL;
    m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->o = *o;
    m->url = strdup(o->url);
    m->first_events = true;
    r = m->url ? preempt_http_new_(base, &m->http) : -ENOMEM;
    if (r == -ELIBACC)
        mlog(m, 3, "metadata: cannot load libcurl, which a cloud metadata source needs: %s (Debian: apt-get install "
             "libcurl4)", preempt_curl_error_());
    if (m->url)
        for (n = strlen(m->url); n > 0 && m->url[n - 1] == '/'; n--)
            m->url[n - 1] = '\0';
    m->n_ch = o->platform == PREEMPT_PLATFORM_GCE || o->platform == PREEMPT_PLATFORM_GCE_GPU ? 3 : 1;
    for (unsigned i = 0; i < m->n_ch; i++) { /* every channel names m: preempt_meta_free_() stops each */
        m->ch[i].m = m;
        m->ch[i].reported = -1;
        m->ch[i].key = i == 0 ? "maintenance-event" : i == 1 ? "preempted" : "upcoming-maintenance";
        if (r == 0 && !(m->ch[i].ev_next = evtimer_new(base, on_next, &m->ch[i])))
            r = -ENOMEM;
    }
    if (r < 0) {
        preempt_meta_free_(m);
        return r;
    }
    /* The first requests start on the loop's next pass, never inside this call. */
    for (unsigned i = 0; i < m->n_ch; i++)
        chan_later(&m->ch[i], 0);
    *ret = m;
    return 0;
}

int preempt_meta_approve_(struct preempt_meta *m)
{
    static const char *const hdrs[] = { "Metadata: true", "Content-Type: application/json", NULL };
    json_t *body, *reqs;
    char *text;
    size_t n = 0;

    if (!m || m->o.platform != PREEMPT_PLATFORM_AZURE)
        return 0;
    body = json_object();
    reqs = json_array();
    if (!body || !reqs) {
        json_decref(reqs);
        json_decref(body);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->n_az; i++) {
        if (m->az[i].started || !m->az[i].reported)
            continue; /* only the events this process gave notice of and that wait for their NotBefore */
        if (json_array_append_new(reqs, json_pack("{s:s}", "EventId", m->az[i].id)) == 0)
            n++;
    }
    if (n == 0) {
        json_decref(reqs);
        json_decref(body);
        return 0;
    }
    if (json_object_set_new(body, "StartRequests", reqs) < 0) { /* reqs is released either way */
        json_decref(body);
        return -ENOMEM;
    }
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return -ENOMEM;
    for (unsigned i = 0; i < m->n_ch; i++) { /* the polls end: this is the last request */
        chan_stop(&m->ch[i]);
        (void)evtimer_del(m->ch[i].ev_next);
    }
    m->ch[0].step = AZURE_APPROVE;
    m->approving = true;
    mlog(m, 1, "metadata: approving %zu scheduled event(s) now that the checkpoint is committed: %s", n, text);
    chan_request(&m->ch[0], "POST", "metadata/scheduledevents?api-version=2020-07-01", text, m->o.timeout_ms, hdrs);
    free(text);
    if (!m->ch[0].easy) { /* could not start */
        (void)evtimer_del(m->ch[0].ev_next);
        m->approving = false;
        return -ENOMEM;
    }
    return 1;
}

bool preempt_meta_idle_(void *m)
{
    return !m || !((struct preempt_meta *)m)->approving;
}

unsigned long preempt_meta_requests_(const struct preempt_meta *m)
{
    return m ? m->requests : 0;
}

void preempt_meta_free_(struct preempt_meta *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i < m->n_ch; i++) {
        chan_stop(&m->ch[i]);
        free(m->ch[i].reply.data);
        if (m->ch[i].ev_next)
            event_free(m->ch[i].ev_next);
    }
    preempt_http_free_(m->http);
    explicit_bzero(m->token, sizeof(m->token));
    free(m->url);
    free(m);
}
