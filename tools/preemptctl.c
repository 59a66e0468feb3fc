/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preemptctl.c: look at and act on a job's records in etcd
 * (docs/protocol.md): show its state, inject a notice, clean up its keys.
 * One request at a time on a private loop, each bounded by --timeout-ms. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "etcd/etcd.h"
#include "job/coord-internal.h"
#include "records/keys-internal.h"
#include "records/records-internal.h"
#include "job/status-internal.h"
#include "job/view-internal.h"
#include "preempt.h"
#include "timeline.h"
#include "tool.h"

static const char usage[] =
    "Usage: preemptctl --etcd URL[,URL] [options] COMMAND JOB [ARGS]\n"
    "       preemptctl keys\n"
    "\n"
    "Commands:\n"
    "  status JOB            the job's incarnation, members (joined, alive, done),\n"
    "                        notices with their deadlines, driver, rounds (save\n"
    "                        step, saved shards) and error\n"
    "  notice JOB [MS]       inject a notice for every worker of the current\n"
    "                        incarnation (source \"operator\"), with a deadline MS\n"
    "                        from now (default: none given)\n"
    "  start-over JOB        the job's next start-up starts over even when some\n"
    "                        workers lack checkpoints that others hold (a lost\n"
    "                        volume): it restores the newest step every worker\n"
    "                        holds and sets the newer ones aside; used once\n"
    "  clean JOB             delete every key of the job; refused while a worker\n"
    "                        is alive unless --force\n"
    "  watch JOB             a preemption watcher: prints a JSON line for each\n"
    "                        notice seen (worker, source, deadline) and one when\n"
    "                        every worker of the current incarnation has exited,\n"
    "                        then stops (at most --wait-ms)\n"
    "  history JOB [--json]  how each kept incarnation's run ended (the last 16):\n"
    "                        when, the notice's source and worker, the agreed\n"
    "                        and committed steps, every worker's exit code, the\n"
    "                        time from the notice to the exits and from the last\n"
    "                        exit to every worker training again (start-up plus\n"
    "                        restore); then the\n"
    "                        time lost to preemption per hour of training\n"
    "  timeline JOB [-o FILE]  the last incarnations of one run of restarts (up\n"
    "                        to 8) from the history, drawn as an SVG picture\n"
    "                        (standard output, or FILE): a lane per worker with\n"
    "                        its start-up, training, the span from the notice to\n"
    "                        its exit, the notice, the commit and its exit code,\n"
    "                        a line where each incarnation began, a time axis\n"
    "  keys                  the records a job has in etcd, what each holds and\n"
    "                        who writes it (Markdown tables; no etcd needed)\n"
    "\n"
    "Options:\n"
    "  --etcd URL[,URL]      etcd endpoints (http:// or https://)\n"
    "  --etcd-user USER      authenticate; password from PREEMPT_ETCD_PASSWORD\n"
    "  --etcd-ca FILE, --etcd-cert FILE, --etcd-key FILE   TLS\n"
    "  --timeout-ms MS       bound on each request (default 5000)\n"
    "  --force               clean even while workers are alive\n"
    "  --json                history: one JSON object per incarnation, then the totals\n"
    "  -o, --output FILE     timeline: write the picture to FILE\n"
    "  --wait-ms MS          bound on watch (default 600000)\n"
    "  --help                this text\n"
    "  --version             the version\n"
    "\n"
    "Exit status: 0; 1 when etcd failed or refused, or watch timed out; 2 on\n"
    "bad usage; 3 when the job has no records (status, notice) or live workers\n"
    "(clean).\n";

struct sync {
    struct event_base *base;
    struct preempt_etcd *e;
    uint64_t timeout_ms;
    bool done;
    int status;
    struct preempt_etcd_kv *kvs; /* the answer's keys (a range's), owned */
    size_t n;
    int64_t count;               /* its count (a delete's: the keys deleted) */
    char msg[512];
};

static void on_reply(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct sync *s = arg;

    s->done = true;
    s->status = status;
    if (status == 0 && r->n_res > 0) {
        s->count = r->res[0].count;
        if (preempt_etcd_kvs_dup_(r->res[0].kvs, r->res[0].n, &s->kvs) < 0)
            s->status = -ENOMEM, msg = "out of memory";
        else
            s->n = r->res[0].n;
    }
    (void)snprintf(s->msg, sizeof(s->msg), "%s", msg ? msg : "");
}

/* One request, waited for (bounded by the client's give-up time): 0, or
 * -EIO when it failed (said on stderr). What it read is in s->kvs (the
 * caller frees it) and s->count. */
static int call(struct sync *s, const struct preempt_etcd_req *req, const char *what)
{
    s->done = false;
    s->kvs = NULL;
    s->n = 0;
    s->count = 0;
    if (preempt_etcd_do_(s->e, req, s->timeout_ms, on_reply, s) < 0) {
        fprintf(stderr, "preemptctl: out of memory\n");
        return -EIO;
    }
    while (!s->done)
        if (event_base_loop(s->base, EVLOOP_ONCE) < 0)
            break;
    if (!s->done || s->status < 0) {
        fprintf(stderr, "preemptctl: %s: %s\n", what, s->msg[0] ? s->msg : strerror(s->done ? -s->status : EIO));
        preempt_etcd_kvs_free_(s->kvs, s->n);
        s->kvs = NULL;
        s->n = 0;
        return -EIO;
    }
    return 0;
}

/* The keys under prefix (or the key alone); -EIO on failure. */
static int range(struct sync *s, const char *key, bool prefix, struct preempt_etcd_kv **kvs, size_t *n)
{
    int rc = call(s, prefix ? PREEMPT_RQ_UNDER(key) : PREEMPT_RQ_GET(key), "reading the job's records");

    *kvs = s->kvs;
    *n = s->n;
    return rc;
}

static uint64_t wall_ms(void)
{
    return preempt_clock_ms_(CLOCK_REALTIME);
}

static int incarnation(struct sync *s, const char *jobp, uint64_t *ret)
{
    struct preempt_etcd_kv *kvs;
    char key[PREEMPT_KEY_MAX];
    size_t n;
    int r;

    (void)preempt_key_(key, sizeof(key), jobp, PREEMPT_KEY_INCARNATION, &(struct preempt_key){ 0 });
    if ((r = range(s, key, false, &kvs, &n)) < 0)
        return r;
    r = n == 1 ? 0 : -ENOENT;
    if (r == 0 && preempt_view_inc_(kvs[0].value, ret) < 0) {
        fprintf(stderr, "preemptctl: %s = \"%.40s\" is not an incarnation (a number from 1, without leading zeros)\n",
                key, kvs[0].value);
        r = -EBADMSG;
    }
    preempt_etcd_kvs_free_(kvs, n);
    return r;
}

/* "in 12.3 s" or "4.0 s ago" */
static void when(char *buf, size_t size, uint64_t at, uint64_t now)
{
    (void)snprintf(buf, size, "%s%.1f s%s", at >= now ? "in " : "", (double)(at >= now ? at - now : now - at) / 1000.0,
                   at >= now ? "" : " ago");
}

/* What the records mean, read as every worker reads them (the job's view,
 * lib/job/status.c): the newest episode's notices, driver, rounds and
 * decisions, the worker lost, the error. */
static void summary(const struct preempt_job_status *st, uint64_t now)
{
    char at[32];

    printf("what the records say (as the workers read them):\n");
    if (!st->notices.earliest) {
        printf("  episode %" PRIu64 ": no notice\n", st->ep);
    } else {
        if (st->notices.earliest == 1)
            (void)snprintf(at, sizeof(at), "now (none given)");
        else
            when(at, sizeof(at), st->notices.earliest, now);
        printf("  episode %" PRIu64 ": %u worker notice(s), %u standing, the earliest deadline %s", st->ep,
               st->notices.notices, st->notices.standing, at);
        if (st->notices.worker >= 0)
            printf(" (worker %d's)", st->notices.worker);
        else
            printf(" (the operator's)");
        printf("; %s\n", st->claim ? "a driver holds the claim" : "no driver");
    }
    if (st->op) {
        when(at, sizeof(at), st->op_wall, now);
        printf("  the operator's notice: %s\n", st->op_wall == UINT64_MAX ? "no deadline given" : at);
    }
    for (unsigned k = 0; k < 2; k++) {
        if (!st->round[k].agreed && !st->round[k].decided)
            continue;
        printf("  round %u%s: ", k, k ? " (the final save)" : "");
        if (st->round[k].agreed)
            printf("save step %" PRIu64 "%s%s", st->round[k].agreed_step, st->round[k].last ? " (the last save)" : "",
                   st->round[k].decided ? ", " : "");
        if (st->round[k].decided)
            printf("%s at step %" PRIu64 "\n", st->round[k].committed ? "committed" : "aborted", st->round[k].step);
        else
            printf(", no decision yet\n");
    }
    if (st->lost)
        printf(st->left ? "  worker %u left the job (a second notice) in this episode\n"
                        : "  worker %u's membership was lost in this episode\n",
               st->lost_worker);
    if (st->error)
        printf("  the job's error: code %" PRId64 " from worker %u: %.120s\n", st->code, st->error_worker,
               st->message);
}

static int cmd_status(struct sync *s, const char *jobp, const char *job)
{
    struct preempt_etcd_kv *kvs;
    struct preempt_job_status st;
    char pre[PREEMPT_KEY_MAX];
    struct preempt_status_rec *recs;
    uint64_t inc, now = wall_ms();
    size_t n;
    int r = incarnation(s, jobp, &inc);

    if (r == -ENOENT)
        printf("job %s: no records in etcd\n", job);
    if (r < 0)
        return r == -ENOENT ? 3 : 1;
    (void)preempt_key_range_(pre, sizeof(pre), jobp, PREEMPT_KEY_INC, 0, &(struct preempt_key){ .inc = inc });
    if (range(s, pre, true, &kvs, &n) < 0)
        return 1;
    if (!(recs = calloc(n ? n : 1, sizeof(*recs))) || preempt_job_status_read_(jobp, inc, kvs, n, recs, &st) < 0) {
        fprintf(stderr, "preemptctl: out of memory\n");
        free(recs);
        preempt_etcd_kvs_free_(kvs, n);
        return 1;
    }
    printf("job %s, incarnation %" PRIu64 " (%s)\n", job, inc, pre);
    for (size_t i = 0; i < n; i++) { /* each record as status read it: nothing here reads a value again */
        const char *rest = kvs[i].key + strlen(pre);
        const struct preempt_status_rec *sr = &recs[i];

        if (sr->why) {
            printf("  %-22s %s  (malformed: not %s; the workers ignore it)\n", rest, kvs[i].value, sr->why);
        } else if (sr->notice) {
            uint64_t dl = sr->deadline;

            printf("  %-22s deadline %s%.1f s%s, source %.*s%s\n", rest, dl >= now ? "in " : "",
                   (double)(dl >= now ? dl - now : now - dl) / 1000.0, dl >= now ? "" : " ago", (int)sr->source_len,
                   sr->source ? sr->source : "", sr->withdrawn ? " (withdrawn)" : "");
        } else {
            printf("  %-22s %s%s\n", rest, kvs[i].value, kvs[i].lease ? "  (lease-bound)" : "");
        }
    }
    if (n == 0)
        printf("  (no records in this incarnation)\n");
    else
        summary(&st, now);
    free(recs);
    preempt_etcd_kvs_free_(kvs, n);
    return 0;
}

/* One worker's history record of one incarnation (HISTORY). */
struct hrec {
    uint64_t inc, started, at, restore_ms, notice, agreed, committed, saves;
    unsigned worker, from;
    int code;
    char source[16], reason[16]; /* "": none */
};

/* One incarnation's history: its workers' records summed up. */
struct hist {
    uint64_t inc, started, ended, notice, agreed, committed, restore_ms, saves;
    uint64_t all_started; /* when the last of its workers began training: every worker trains from then */
    unsigned n, from;
    int exits[PREEMPT_MAX_WORKERS];
    char source[64], reasons[64];
};

/* A text field as read (s, len; NULL: absent), copied into buf ("" when
 * absent or longer than buf). */
static void text(const char *s, size_t len, char *buf, size_t size)
{
    (void)snprintf(buf, size, "%.*s", s && len < size ? (int)len : 0, s ? s : "");
}

static void at_least(uint64_t *v, uint64_t x)
{
    if (x > *v)
        *v = x;
}

static int hrec_order(const void *a, const void *b)
{
    const struct hrec *x = a, *y = b;

    if (x->inc != y->inc)
        return x->inc < y->inc ? -1 : 1;
    return x->worker < y->worker ? -1 : x->worker > y->worker;
}

/* The job's history records (the records module validates each; others
 * are reported and skipped), in incarnation order, then worker order:
 * *ret (free() it) and *ret_n. 0, or 1 when etcd failed or memory ran
 * out. */
static int history_read(struct sync *s, const char *jobp, struct hrec **ret, size_t *ret_n)
{
    struct preempt_etcd_kv *kvs;
    char pre[PREEMPT_KEY_MAX];
    struct hrec *hr;
    size_t n, m = 0;

    (void)preempt_key_range_(pre, sizeof(pre), jobp, PREEMPT_KEY_HISTORY_ALL, 0, &(struct preempt_key){ 0 });
    if (range(s, pre, true, &kvs, &n) < 0)
        return 1;
    if (!(hr = calloc(n ? n : 1, sizeof(*hr)))) {
        preempt_etcd_kvs_free_(kvs, n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;
        union preempt_rv rec;
        const struct preempt_rv_history *r = &rec.history;
        struct hrec h;
        const char *why;

        if (preempt_key_parse_(kvs[i].key, jobp, &k) != (int)PREEMPT_KEY_HISTORY ||
            preempt_rv_read_(PREEMPT_KEY_HISTORY, &k, kvs[i].value, PREEMPT_MAX_WORKERS, &rec, &why) < 0) {
            fprintf(stderr, "preemptctl: ignoring %s = \"%.60s\": not %s\n", kvs[i].key, kvs[i].value,
                    "a history record");
            continue;
        }
        h = (struct hrec){ .inc = k.inc, .worker = k.worker, .code = (int)r->code, .started = r->started,
                           .at = r->at, .restore_ms = r->restore, .notice = r->notice, .agreed = r->agreed,
                           .committed = r->committed, .saves = r->saves, .from = (unsigned)r->from };
        text(r->source, r->source_len, h.source, sizeof(h.source));
        text(r->reason, r->reason_len, h.reason, sizeof(h.reason));
        hr[m++] = h;
    }
    preempt_etcd_kvs_free_(kvs, n);
    qsort(hr, m, sizeof(*hr), hrec_order); /* the keys sort 10 before 9, and worker 10 before 9 */
    *ret = hr;
    *ret_n = m;
    return 0;
}

/* Adds worker record r to its incarnation's h. */
static void hist_add(struct hist *h, const struct hrec *r)
{
    h->inc = r->inc;
    h->exits[h->n++] = r->code;
    h->started = !h->started || r->started < h->started ? r->started : h->started;
    at_least(&h->all_started, r->started);
    at_least(&h->ended, r->at);
    at_least(&h->agreed, r->agreed);
    at_least(&h->committed, r->committed);
    at_least(&h->restore_ms, r->restore_ms);
    at_least(&h->saves, r->saves);
    if (r->reason[0] && strcmp(h->reasons, "saved")) /* "saved" once any worker saved */
        (void)snprintf(h->reasons, sizeof(h->reasons), "%s", r->reason);
    if (r->source[0] && (!h->source[0] || !strcmp(h->source, "peer"))) { /* the notice's own worker says its source */
        (void)snprintf(h->source, sizeof(h->source), "%s", r->source);
        h->from = r->from;
        h->notice = r->notice;
    }
}

static void utc(char *buf, size_t size, uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
        (void)snprintf(buf, size, "?");
}

static int cmd_history(struct sync *s, const char *jobp, const char *job, bool json)
{
    struct hrec *hr;
    char at[40];
    struct hist *hs = NULL;
    size_t n, nh = 0;
    uint64_t trained = 0, lost = 0;

    if (history_read(s, jobp, &hr, &n))
        return 1;
    for (size_t i = 0; i < n; i++) /* how many incarnations (a hist holds a count of exits per worker) */
        nh += !i || hr[i - 1].inc != hr[i].inc;
    if (!(hs = calloc(nh ? nh : 1, sizeof(*hs)))) {
        free(hr);
        return 1;
    }
    nh = 0;
    for (size_t i = 0; i < n; i++) { /* one entry per incarnation, in incarnation order */
        if (!nh || hs[nh - 1].inc != hr[i].inc)
            hs[nh++] = (struct hist){ .inc = hr[i].inc };
        if (hs[nh - 1].n < PREEMPT_MAX_WORKERS)
            hist_add(&hs[nh - 1], &hr[i]);
    }
    free(hr);
    if (!json)
        printf("job %s: %zu incarnation(s) in the history (the last %d are kept)\n", job, nh, PREEMPT_HISTORY_KEPT);
    for (size_t j = 0; j < nh; j++) {
        const struct hist *h = &hs[j];
        /* the restart: from the last exit of the incarnation before to every
         * worker of this one training again (make bench's restart section
         * measures the same span from the launcher's lines) */
        int64_t restart = j > 0 && hs[j - 1].inc + 1 == h->inc ? (int64_t)(h->all_started - hs[j - 1].ended) : -1;
        char exits[4 * PREEMPT_MAX_WORKERS + 8] = "";
        size_t o = 0;

        for (unsigned w = 0; w < h->n && o < sizeof(exits) - 8; w++)
            o += (size_t)snprintf(exits + o, sizeof(exits) - o, "%s%d", w ? (json ? "," : " ") : "", h->exits[w]);
        trained += h->ended > h->started ? h->ended - h->started : 0;
        lost += restart > 0 ? (uint64_t)restart : 0;
        if (json) {
            printf("{\"incarnation\":%" PRIu64 ",\"started_ms\":%" PRIu64 ",\"ended_ms\":%" PRIu64 ",\"outcome\":\"%s\","
                   "\"exits\":[%s],\"committed_step\":%" PRIu64 ",\"saves\":%" PRIu64 ",\"restore_ms\":%" PRIu64,
                   h->inc, h->started, h->ended, h->reasons, exits, h->committed, h->saves, h->restore_ms);
            if (h->source[0])
                printf(",\"source\":\"%s\",\"worker\":%u,\"notice_ms\":%" PRIu64 ",\"agreed_step\":%" PRIu64
                       ",\"notice_to_exit_ms\":%" PRIu64,
                       h->source, h->from, h->notice, h->agreed, h->ended - h->notice);
            if (restart >= 0)
                printf(",\"restart_ms\":%" PRId64, restart);
            printf("}\n");
            continue;
        }
        utc(at, sizeof(at), h->ended);
        printf("incarnation %" PRIu64 "  ended %s  %s", h->inc, at, h->reasons);
        if (h->source[0])
            printf("  notice: %s at worker %u, agreed step %" PRIu64 ", %.2f s to the exits", h->source, h->from,
                   h->agreed, (double)(h->ended - h->notice) / 1000.0);
        printf("  committed step %" PRIu64 "  exits %s  trained %.1f s", h->committed, exits,
               (double)(h->ended - h->started) / 1000.0);
        if (restart >= 0)
            printf("  restart %.2f s (restore %.2f s)", (double)restart / 1000.0, (double)h->restore_ms / 1000.0);
        printf("\n");
    }
    if (json)
        printf("{\"trained_ms\":%" PRIu64 ",\"lost_ms\":%" PRIu64 "}\n", trained, lost);
    else if (trained)
        printf("goodput: %.1f s trained; %.1f s from exits to training again: %.1f s lost per hour of training\n",
               (double)trained / 1000.0, (double)lost / 1000.0, (double)lost / (double)trained * 3600.0);
    free(hs);
    return nh ? 0 : 3;
}

/* At most this many incarnations in a timeline: the newest ones whose
 * numbers follow each other (one run of restarts; an older run, before a
 * gap, is another picture's). */
#define TIMELINE_RUNS 8

/* The picture of the job's last incarnations from its history: one lane
 * per worker; each incarnation's start-up, training, agreement (from the
 * notice) and exit, its notice (where it came), its commit and each
 * worker's exit code; a line where each incarnation began. */
static int cmd_timeline(struct sync *s, const char *jobp, const char *job, const char *path)
{
    struct hrec *hr;
    struct timeline *t;
    size_t n, first;
    unsigned workers = 0;
    uint64_t t0 = UINT64_MAX, runs = 1;
    char title[128];
    FILE *out;
    int r;

    if (history_read(s, jobp, &hr, &n))
        return 1;
    /* the selection: back from the newest while the numbers follow each other */
    for (first = n; first > 0; first--) {
        if (first < n && hr[first - 1].inc != hr[first].inc) {
            if (hr[first - 1].inc + 1 != hr[first].inc || runs == TIMELINE_RUNS)
                break;
            runs++;
        }
    }
    for (size_t i = first; i < n; i++) {
        if (hr[i].worker + 1 > workers)
            workers = hr[i].worker + 1;
        if (hr[i].started && hr[i].started < t0)
            t0 = hr[i].started;
    }
    if (first == n || t0 == UINT64_MAX) {
        fprintf(stderr, "preemptctl: job %s has no history in etcd: no incarnation has ended\n", job);
        free(hr);
        return 3;
    }
    if (!(t = timeline_new(workers))) {
        free(hr);
        return 1;
    }
    if (runs > 1)
        (void)snprintf(title, sizeof(title), "job %s, incarnations %" PRIu64 "-%" PRIu64, job, hr[first].inc,
                       hr[n - 1].inc);
    else
        (void)snprintf(title, sizeof(title), "job %s, incarnation %" PRIu64, job, hr[first].inc);
    timeline_set_title(t, title);
    for (size_t i = first; i < n; i++) {
        const struct hrec *h = &hr[i];
        int w = (int)h->worker;

        if (!h->started || h->at < h->started) /* a record with no span cannot be drawn */
            continue;
        if (i == first || hr[i - 1].inc != h->inc) {
            char what[32];
            uint64_t begin = h->started;

            for (size_t j = i; j < n && hr[j].inc == h->inc; j++) /* its earliest start */
                if (hr[j].started && hr[j].started < begin)
                    begin = hr[j].started;
            (void)snprintf(what, sizeof(what), "incarnation %" PRIu64, h->inc);
            timeline_add(t, begin - t0, -1, TIMELINE_MARK, 0, 0, what);
        }
        timeline_add(t, h->started - t0, w, TIMELINE_LAUNCH, 0, 0, NULL);
        timeline_add(t, h->started + h->restore_ms - t0, w, TIMELINE_TRAINING, 0, 0, NULL);
        if (h->notice >= h->started && h->notice <= h->at && h->source[0]) {
            if (strcmp(h->source, "peer"))
                timeline_add(t, h->notice - t0, w, TIMELINE_NOTICE, 0, 0, h->source);
            timeline_add(t, h->notice - t0, w, TIMELINE_AGREEING, 0, 0, NULL);
        }
        if (!strcmp(h->reason, "saved") && h->committed)
            timeline_add(t, h->at - t0, w, TIMELINE_SAVED, h->committed, 0, NULL);
        timeline_add(t, h->at - t0, w, TIMELINE_EXITED, 0, h->code, NULL);
    }
    free(hr);
    out = path ? fopen(path, "we") : stdout;
    r = out ? timeline_svg(t, out) : -errno;
    if (out && out != stdout && fclose(out) != 0 && r == 0)
        r = -errno;
    timeline_free(t);
    if (r < 0) {
        fprintf(stderr, "preemptctl: timeline: %s: %s\n", path ? path : "standard output", strerror(-r));
        return 1;
    }
    return 0;
}

/* A typed record's writer's answer (rc, why: records-internal.h): 0, or
 * the refusal (a bug), said. */
static int written(const char *kind, int rc, const char *why)
{
    if (rc < 0)
        fprintf(stderr, "preemptctl: bug: a %s record's value is not %s\n", kind, why);
    return rc;
}

static int cmd_notice(struct sync *s, const char *jobp, const char *job, const char *ms)
{
    char key[PREEMPT_KEY_MAX];
    struct preempt_value val;
    const char *why = "";
    uint64_t inc, in = 0, dl;

    if (ms && tool_parse_u64("preemptctl", "notice: the deadline in ms", ms, 0, 7ull * 24 * 3600 * 1000, &in))
        return TOOL_USAGE;
    int rc = incarnation(s, jobp, &inc);

    if (rc == -ENOENT)
        fprintf(stderr, "preemptctl: job %s has no incarnation in etcd: no worker ever joined\n", job);
    if (rc < 0)
        return rc == -ENOENT ? 3 : 1;
    dl = in ? wall_ms() + in : 0;
    (void)preempt_key_(key, sizeof(key), jobp, PREEMPT_KEY_NOTICE_OP, &(struct preempt_key){ .inc = inc });
    rc = preempt_rv_notice_op_write_(&val, &(struct preempt_rv_notice_op){ .deadline = dl, .source = "operator" },
                                     PREEMPT_MAX_WORKERS, &why);
    if (written("notice_op", rc, why) < 0 ||
        call(s, PREEMPT_RQ_PUT(key, &val, 0), "writing the notice") < 0)
        return 1;
    printf("notice injected for job %s, incarnation %" PRIu64 ": %s\n", job, inc, key);
    return 0;
}

static int cmd_start_over(struct sync *s, const char *jobp, const char *job)
{
    char key[PREEMPT_KEY_MAX];
    struct preempt_value val;
    const char *why = "";
    int rc;

    (void)preempt_key_(key, sizeof(key), jobp, PREEMPT_KEY_START_OVER, &(struct preempt_key){ 0 });
    rc = preempt_rv_start_over_write_(&val, &(struct preempt_rv_start_over){ .at = wall_ms() }, PREEMPT_MAX_WORKERS,
                                      &why);
    if (written("start_over", rc, why) < 0 ||
        call(s, PREEMPT_RQ_PUT(key, &val, 0), "writing the start-over request") < 0)
        return 1;
    printf("job %s starts over at its next start-up that needs it (%s)\n", job, key);
    return 0;
}

static int cmd_clean(struct sync *s, const char *jobp, const char *job, bool force)
{
    struct preempt_etcd_kv *kvs;
    size_t n, alive = 0;

    if (range(s, jobp, true, &kvs, &n) < 0)
        return 1;
    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;

        alive += preempt_key_parse_(kvs[i].key, jobp, &k) == PREEMPT_KEY_ALIVE;
    }
    preempt_etcd_kvs_free_(kvs, n);
    if (alive && !force) {
        fprintf(stderr, "preemptctl: job %s has %zu live worker(s); stop them first or use --force\n", job, alive);
        return 3;
    }
    if (call(s, PREEMPT_RQ_DELETE_UNDER(jobp), "deleting the job's records") < 0)
        return 1;
    printf("job %s: %" PRId64 " key(s) deleted\n", job, s->count);
    return 0;
}

/* The key layout, as docs/protocol.md shows it. */
static int cmd_keys(void)
{
    static char buf[16384];

    (void)preempt_key_table_(buf, sizeof(buf), false);
    printf("Under `/preempt/<job>/`: the job's records and its incarnation N's that\n"
           "every worker watches (all of `N/` but `N/w/`):\n\n%s\n", buf);
    (void)preempt_key_table_(buf, sizeof(buf), true);
    printf("Per-worker records, under `N/w/`: outside the watch, counted in etcd by\n"
           "the transaction that writes them, read by the driver:\n\n%s", buf);
    return 0;
}

static void on_log(int level, const char *msg, void *arg)
{
    (void)arg;
    if (level >= 2)
        fprintf(stderr, "preemptctl: %s\n", msg);
}

static void on_watch_notice(struct preempt_watcher *w, const struct preempt_notice_info *n, void *ud)
{
    (void)w;
    (void)ud;
    printf("{\"event\":\"notice\",\"incarnation\":%" PRIu64 ",\"worker\":%d,\"source\":\"%s\",\"deadline_unix_ms\":%"
           PRIu64 ",\"withdrawn\":%s}\n", n->incarnation, n->worker, n->source, n->deadline_unix_ms,
           n->withdrawn ? "true" : "false");
    (void)fflush(stdout);
}

static void on_watch_exited(struct preempt_watcher *w, uint64_t incarnation, void *ud)
{
    (void)w;
    (void)ud;
    printf("{\"event\":\"exited\",\"incarnation\":%" PRIu64 "}\n", incarnation);
    (void)fflush(stdout);
}

/* The preemption watcher of the public API, on its own base. */
static int cmd_watch(const struct preempt_etcd_opts *eo, const char *job, uint64_t wait_ms)
{
    static const struct preempt_watcher_callbacks cb = { .on_notice = on_watch_notice, .on_exited = on_watch_exited };
    struct preempt_config cfg;
    struct preempt_watcher *w;
    int r;

    preempt_config_init(&cfg);
    cfg.etcd_endpoints = eo->endpoints;
    cfg.etcd_user = eo->user;
    cfg.etcd_password = eo->password;
    cfg.etcd_ca = eo->ca;
    cfg.etcd_cert = eo->cert;
    cfg.etcd_key = eo->key;
    cfg.etcd_timeout_ms = eo->timeout_ms;
    cfg.job = job;
    r = preempt_watcher_new(NULL, &cfg, &cb, NULL, &w);
    if (r < 0) {
        fprintf(stderr, "preemptctl: cannot watch job %s: %s\n", job, preempt_strerror(r));
        return 2;
    }
    r = preempt_watcher_wait(w, wait_ms);
    preempt_watcher_free(w);
    if (r < 0) {
        fprintf(stderr, "preemptctl: the workers of job %s did not all exit within %" PRIu64 " ms\n", job, wait_ms);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "etcd", required_argument, NULL, 'e' }, { "etcd-user", required_argument, NULL, 'u' },
        { "etcd-ca", required_argument, NULL, 'a' }, { "etcd-cert", required_argument, NULL, 'c' },
        { "etcd-key", required_argument, NULL, 'k' }, { "timeout-ms", required_argument, NULL, 't' },
        { "force", no_argument, NULL, 'f' }, { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
        { "wait-ms", required_argument, NULL, 'w' }, { "version", no_argument, NULL, TOOL_OPT_VERSION },
        { "output", required_argument, NULL, 'o' },
        { NULL, 0, NULL, 0 },
    };
    struct preempt_etcd_opts eo = { .log = on_log };
    struct sync s = { .timeout_ms = 5000 };
    const char *cmd, *job, *output = NULL;
    char jobp[PREEMPT_MAX_JOB + 16];
    bool force = false, json = false;
    uint64_t wait_ms = 600000;
    int c, rc;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        switch (c) {
        case 'e': eo.endpoints = optarg; break;
        case 'u':
            eo.user = optarg;
            eo.password = getenv("PREEMPT_ETCD_PASSWORD");
            if (!eo.password)
                return tool_usage_error("preemptctl", "--etcd-user needs PREEMPT_ETCD_PASSWORD in the environment");
            break;
        case 'a': eo.ca = optarg; break;
        case 'c': eo.cert = optarg; break;
        case 'k': eo.key = optarg; break;
        case 't':
            if (tool_parse_u64("preemptctl", "--timeout-ms", optarg, 1, 86400000, &s.timeout_ms))
                return TOOL_USAGE;
            break;
        case 'f': force = true; break;
        case 'j': json = true; break;
        case 'o': output = optarg; break;
        case 'w':
            if (tool_parse_u64("preemptctl", "--wait-ms", optarg, 0, 86400000, &wait_ms))
                return TOOL_USAGE;
            break;
        case 'h': fputs(usage, stdout); return 0;
        case TOOL_OPT_VERSION: return tool_version("preemptctl");
        default: return tool_option_error("preemptctl", c, argv);
        }
    }
    if (optind + 1 == argc && !strcmp(argv[optind], "keys"))
        return cmd_keys();
    if (!eo.endpoints || optind + 2 > argc)
        return tool_usage_error("preemptctl", "%s",
                                !eo.endpoints ? "--etcd is required" : "a command and a job are required");
    cmd = argv[optind];
    job = argv[optind + 1];
    if (preempt_coord_prefix_(job, jobp, sizeof(jobp)) < 0) {
        return tool_usage_error("preemptctl", "'%s' is not a job name (1-%d of A-Z a-z 0-9 . _ -)", job,
                                PREEMPT_MAX_JOB);
    }
    if (strcmp(cmd, "status") && strcmp(cmd, "notice") && strcmp(cmd, "clean") && strcmp(cmd, "watch") &&
        strcmp(cmd, "start-over") && strcmp(cmd, "history") && strcmp(cmd, "timeline"))
        return tool_usage_error("preemptctl",
                                "unknown command '%s' (status, notice, start-over, clean, watch, history or timeline)", cmd);

    eo.timeout_ms = s.timeout_ms;
    if (!strcmp(cmd, "watch"))
        return cmd_watch(&eo, job, wait_ms);
    s.base = event_base_new();
    if (!s.base || (rc = preempt_etcd_new_(s.base, &eo, &s.e)) < 0) {
        /* the client has logged the reason (on_log) */
        fprintf(stderr, "preemptctl: cannot use --etcd %s: %s\n", eo.endpoints, s.base ? strerror(-rc) : "out of memory");
        if (s.base)
            event_base_free(s.base);
        return 2;
    }
    if (!strcmp(cmd, "status"))
        rc = cmd_status(&s, jobp, job);
    else if (!strcmp(cmd, "notice"))
        rc = cmd_notice(&s, jobp, job, optind + 2 < argc ? argv[optind + 2] : NULL);
    else if (!strcmp(cmd, "start-over"))
        rc = cmd_start_over(&s, jobp, job);
    else if (!strcmp(cmd, "history"))
        rc = cmd_history(&s, jobp, job, json);
    else if (!strcmp(cmd, "timeline"))
        rc = cmd_timeline(&s, jobp, job, output);
    else
        rc = cmd_clean(&s, jobp, job, force);
    preempt_etcd_free_(s.e);
    event_base_free(s.base);
    return rc;
}
