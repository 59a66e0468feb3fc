/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-replay.c: the replay of the coordinator's lines in a text
 * trace (coord-trace-internal.h): it runs the coordinator's core again
 * over the inputs the lines hold and compares what it makes with the
 * outputs they hold. Part of the replay library (libpreempt-replay.la),
 * not of libpreempt.so. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-state.h"
#include "coord-trace-internal.h"
#include "base/base.h"

#include "coord-trace-lines.h"

#define TEXT_MAX 300 /* an input's text (a message, an effect's text) as traced, encoded */

/* ---- reading ------------------------------------------------------------------------- */

/* A line's name=value fields. */
#define FIELDS_MAX 20
struct fields {
    size_t n;
    struct {
        const char *name, *v;
        size_t name_len, v_len;
    } f[FIELDS_MAX];
    const char *word; /* the first token with no '=' after the line's kind (an input's or output's kind) */
    size_t word_len;
};

static void split(const char *s, struct fields *fs)
{
    fs->n = 0;
    fs->word = NULL;
    for (;;) {
        size_t n;
        const char *eq;

        s += strspn(s, " \t");
        n = strcspn(s, " \t");
        if (n == 0)
            return;
        eq = memchr(s, '=', n);
        if (!eq && !fs->word) {
            fs->word = s;
            fs->word_len = n;
        } else if (eq && fs->n < FIELDS_MAX) {
            fs->f[fs->n].name = s;
            fs->f[fs->n].name_len = (size_t)(eq - s);
            fs->f[fs->n].v = eq + 1;
            fs->f[fs->n].v_len = n - (size_t)(eq - s) - 1;
            fs->n++;
        }
        s += n;
    }
}

static const char *get(const struct fields *fs, const char *name, size_t *len)
{
    size_t nl = strlen(name);

    for (size_t i = 0; i < fs->n; i++)
        if (fs->f[i].name_len == nl && !strncmp(fs->f[i].name, name, nl)) {
            *len = fs->f[i].v_len;
            return fs->f[i].v;
        }
    return NULL;
}

static bool get_i64(const struct fields *fs, const char *name, int64_t *ret)
{
    size_t n = 0;
    const char *v = get(fs, name, &n);
    char num[24], *end;

    if (!v || n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, v, n);
    num[n] = '\0';
    errno = 0;
    *ret = strtoll(num, &end, 10);
    return errno == 0 && *end == '\0';
}

static bool get_u64(const struct fields *fs, const char *name, uint64_t *ret)
{
    size_t n = 0;
    const char *v = get(fs, name, &n);

    return v && preempt_trace_u64_(v, n, ret);
}

/* A text field, decoded (free it); NULL when absent or malformed. */
static char *get_text(const struct fields *fs, const char *name)
{
    size_t n = 0;
    const char *v = get(fs, name, &n);

    return v ? preempt_trace_decode_(v, n) : NULL;
}

static bool cut(const struct fields *fs)
{
    size_t n = 0;

    return get(fs, "cut", &n) != NULL;
}

/* ---- replaying ----------------------------------------------------------------------- */

struct replay {
    const struct preempt_trace_coord *lines; /* the trace's coord lines */
    size_t n_lines;
    size_t i;          /* the next coord line */
    unsigned depth;    /* the input being handled: its depth (d=), which its outputs' lines repeat */
    bool compare;      /* outputs are compared (not while the coordinator is set up) */
    int status;        /* 0, 1 at a divergence, 2 when a line cannot be replayed (err says why) */
    bool ended;        /* the trace ends, or holds a cut value, from here: nothing more is compared */
    size_t n_in, n_out;
    char *err;
    size_t errsize;
    struct preempt_coord *c;
};

static const struct preempt_trace_coord *cur(const struct replay *rp)
{
    return rp->i < rp->n_lines ? &rp->lines[rp->i] : NULL;
}

static bool is(const struct preempt_trace_coord *l, const char *kind)
{
    size_t n = strlen(kind);

    return l && !strncmp(l->s, kind, n) && l->s[n] == ' ';
}

/* Nothing more can be compared from here (not a divergence): why, once. */
static void stop(struct replay *rp, const char *why)
{
    const struct preempt_trace_coord *l = cur(rp);

    if (!rp->ended && rp->status == 0) {
        if (l)
            (void)snprintf(rp->err, rp->errsize, "compared up to line %u: %s", l->line, why);
        else
            (void)snprintf(rp->err, rp->errsize, "compared to the end: %s", why);
    }
    rp->ended = true;
}

static void bad(struct replay *rp, unsigned line, const char *what)
{
    if (rp->status == 0)
        (void)snprintf(rp->err, rp->errsize, "line %u: %s", line, what);
    rp->status = 2;
}

/* The line's depth (d=), or -1. */
static int depth_of(const struct preempt_trace_coord *l)
{
    struct fields fs;
    uint64_t d;

    split(l->s, &fs);
    return get_u64(&fs, "d", &d) && d < 1000 ? (int)d : -1;
}

/* The payload an input carries, read from its lines (freed with it). */
struct payload {
    struct preempt_etcd_reply reply;
    struct preempt_etcd_kv *kvs;
    size_t n_kvs;
    struct preempt_fx fx;
    bool ran;
    char *texts[2];
};

static void payload_free(struct payload *p)
{
    for (size_t i = 0; i < p->n_kvs; i++) {
        free(p->kvs[i].key);
        free(p->kvs[i].value);
    }
    free(p->kvs);
    free(p->reply.res);
    free(p->texts[0]);
    free(p->texts[1]);
}

/* Line j, which an input's payload has of kind (NULL, after stop() or
 * bad(), when the trace ends there or holds another line). */
static const struct preempt_trace_coord *payload_line(struct replay *rp, size_t j, const char *kind)
{
    const struct preempt_trace_coord *l = j < rp->n_lines ? &rp->lines[j] : NULL;
    char what[32];

    if (!l) { /* a worker killed while it wrote */
        stop(rp, "the trace ends inside an input");
        return NULL;
    }
    if (!is(l, kind)) {
        (void)snprintf(what, sizeof(what), "a %s line expected", kind);
        bad(rp, l->line, what);
        return NULL;
    }
    return l;
}

/* Reads n "coord kv" lines into kvs (allocated, n of them). */
static bool read_kvs(struct replay *rp, struct preempt_etcd_kv *kvs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const struct preempt_trace_coord *l = payload_line(rp, rp->i, "coord kv");
        struct fields fs;
        size_t vn = 0;
        const char *v;

        if (!l)
            return false;
        split(l->s, &fs);
        if (cut(&fs)) {
            stop(rp, "a record did not fit its line (cut=1)");
            return false;
        }
        if (!(v = get(&fs, "k", &vn)) || !(kvs[k].key = preempt_trace_decode_(v, vn)) ||
            !get_i64(&fs, "create", &kvs[k].create_rev) || !get_i64(&fs, "mod", &kvs[k].mod_rev) ||
            !get_i64(&fs, "lease", &kvs[k].lease)) {
            bad(rp, l->line, "a malformed coord kv line");
            return false;
        }
        if ((v = get(&fs, "v", &vn))) {
            if (!(kvs[k].value = preempt_trace_decode_(v, vn))) {
                bad(rp, l->line, "a malformed value");
                return false;
            }
            kvs[k].value_len = strlen(kvs[k].value);
        }
        rp->i++;
    }
    return true;
}

static struct preempt_etcd_kv *more_kvs(struct replay *rp, struct payload *p, size_t n, unsigned line)
{
    struct preempt_etcd_kv *kvs;

    if (n > rp->n_lines - rp->i) { /* more records than lines */
        stop(rp, "the trace ends inside an input");
        return NULL;
    }
    kvs = calloc(n ? n : 1, sizeof(*kvs));
    if (!kvs) {
        bad(rp, line, "out of memory");
        return NULL;
    }
    p->kvs = kvs; /* one array per input: a reply's results share it */
    p->n_kvs = n;
    return kvs;
}

/* Reads an input's line and its payload's lines into in and p. */
static bool read_input(struct replay *rp, struct preempt_coord_in *in, struct payload *p)
{
    const struct preempt_trace_coord *l = cur(rp);
    unsigned line = l->line;
    struct fields fs;
    int64_t v;
    uint64_t u;
    int kind;

    split(l->s + strlen("coord in "), &fs);
    kind = fs.word ? preempt_trace_coord_in_of_name_(fs.word, fs.word_len) : -1;
    if (kind < 0 || !get_u64(&fs, "t", &in->now_ms) || !get_u64(&fs, "wall", &in->wall_ms)) {
        bad(rp, line, "a malformed coord in line (its kind, t= or wall=)");
        return false;
    }
    if (cut(&fs)) {
        stop(rp, "an input's text did not fit its line (cut=1)");
        return false;
    }
    in->kind = (enum preempt_coord_in_kind)kind;
    rp->i++;
    switch (preempt_trace_coord_shape_(in->kind)) {
    case PREEMPT_TRACE_SHAPE_EVENT: {
        size_t n = 0;
        const char *ev = get(&fs, "ev", &n);

        in->ev = ev && n == 3 && !strncmp(ev, "del", 3) ? PREEMPT_ETCD_DELETE : PREEMPT_ETCD_PUT;
        in->kv = more_kvs(rp, p, 1, line);
        return in->kv && read_kvs(rp, p->kvs, 1);
    }
    case PREEMPT_TRACE_SHAPE_READ:
        if (!get_i64(&fs, "rev", &in->rev) || !get_u64(&fs, "kvs", &u)) {
            bad(rp, line, "a read without rev= or kvs=");
            return false;
        }
        in->n = (size_t)u;
        if (!get_u64(&fs, "cluster", &in->cluster)) /* traces before 2026-11-29 */
            in->cluster = 0;
        in->kvs = more_kvs(rp, p, in->n, line);
        return in->kvs && read_kvs(rp, p->kvs, in->n);
    case PREEMPT_TRACE_SHAPE_LINK:
        in->up = get_i64(&fs, "up", &v) && v;
        in->why = p->texts[0] = get_text(&fs, "why");
        return true;
    case PREEMPT_TRACE_SHAPE_BARE:
        return true;
    case PREEMPT_TRACE_SHAPE_EFFECT: {
        size_t n = 0;
        const char *fx = get(&fs, "fx", &n);
        char name[32];
        int k = -1;

        if (fx && n < sizeof(name)) {
            memcpy(name, fx, n);
            name[n] = '\0';
            k = preempt_fx_from_string_(name);
        }
        if (k < 0 || !get_i64(&fs, "arg", &p->fx.arg) || !get_u64(&fs, "round", &u) ||
            !get_u64(&fs, "stop", &in->stop) || !get_u64(&fs, "save", &in->save_ms) || !get_i64(&fs, "last", &v)) {
            bad(rp, line, "a malformed effect");
            return false;
        }
        p->fx.kind = (enum preempt_fx_kind)k;
        in->fx = &p->fx;
        in->ran = &p->ran;
        in->round = u ? 1 : 0;
        in->last = v != 0;
        if (!get_u64(&fs, "pace", &in->pace.ms) || !get_u64(&fs, "run", &in->pace.step))
            in->pace = (struct preempt_pace){ 0, 0, 0 };
        in->trains_on = get_i64(&fs, "trains-on", &v) && v;
        in->text = p->texts[0] = get_text(&fs, "text");
        return true;
    }
    case PREEMPT_TRACE_SHAPE_STEP:
        if (get_u64(&fs, "step", &in->step_ms))
            return true;
        bad(rp, line, "a step without step=");
        return false;
    case PREEMPT_TRACE_SHAPE_WITHDRAW:
        in->withdrawn = get_i64(&fs, "withdrawn", &v) && v;
        return true;
    case PREEMPT_TRACE_SHAPE_TEXT:
        if ((in->text = p->texts[0] = get_text(&fs, "text")))
            return true;
        bad(rp, line, "no text=");
        return false;
    case PREEMPT_TRACE_SHAPE_ANSWER:
        break;
    }
    /* an answer */
    if (!get_u64(&fs, "round", &u) || !get_i64(&fs, "status", &v)) {
        bad(rp, line, "an answer without round= or status=");
        return false;
    }
    in->round = u ? 1 : 0;
    in->status = (int)v;
    if (in->status != 0) {
        in->msg = p->texts[0] = get_text(&fs, "msg");
        return true;
    }
    {
        struct preempt_etcd_reply *r = &p->reply;
        uint64_t n_res, cluster;
        int64_t ok;
        size_t total = 0, at;

        if (!get_i64(&fs, "rev", &r->rev) || !get_u64(&fs, "cluster", &cluster) || !get_i64(&fs, "ok", &ok) ||
            !get_i64(&fs, "id", &r->id) || !get_i64(&fs, "ttl", &r->ttl) || !get_i64(&fs, "gttl", &r->granted_ttl) ||
            !get_u64(&fs, "res", &n_res) || n_res > 64) {
            bad(rp, line, "a malformed reply");
            return false;
        }
        r->cluster = cluster;
        r->succeeded = ok != 0;
        r->n_res = (size_t)n_res;
        r->res = calloc(n_res ? n_res : 1, sizeof(*r->res));
        if (!r->res) {
            bad(rp, line, "out of memory");
            return false;
        }
        /* the results' kv lines follow each result's line: counted first */
        for (size_t k = 0, j = rp->i; k < n_res; k++) {
            const struct preempt_trace_coord *rl = payload_line(rp, j, "coord res");
            struct fields rf;

            if (!rl)
                return false;
            split(rl->s, &rf);
            if (!get_i64(&rf, "count", &r->res[k].count) || !get_u64(&rf, "kvs", &u) || u > 10000000) {
                bad(rp, rl->line, "a malformed coord res line");
                return false;
            }
            r->res[k].n = (size_t)u;
            total += r->res[k].n;
            j += 1 + r->res[k].n;
        }
        if (!more_kvs(rp, p, total, line))
            return false;
        at = 0;
        for (size_t k = 0; k < n_res; k++) {
            rp->i++; /* its res line */
            r->res[k].kvs = p->kvs + at;
            if (!read_kvs(rp, r->res[k].kvs, r->res[k].n))
                return false;
            at += r->res[k].n;
        }
        in->reply = r;
    }
    return true;
}

/* The core's sink in a replay: each output that acts must be the trace's
 * next line, at its input's depth. The inputs their running caused follow
 * the input's last output in the trace (the core runs to completion), and
 * the main loop feeds them as it does every input. */
static void replay_sink(void *arg, const struct preempt_coord_out *o)
{
    struct replay *rp = arg;
    const struct preempt_trace_coord *l;
    char want[PREEMPT_TRACE_LINE_MAX];

    if (!rp->compare || rp->status || rp->ended || o->kind >= PREEMPT_COORD_OUT_LOG)
        return;
    if (preempt_trace_format_coord_out_(want, sizeof(want), o, rp->depth) <= 0) {
        bad(rp, 0, "an output that cannot be formatted");
        return;
    }
    l = cur(rp);
    if (!l) {
        stop(rp, "the trace ends before an output the coordinator made");
        return;
    }
    if (strcmp(l->s, want)) {
        (void)snprintf(rp->err, rp->errsize,
                       "line %u: the coordinator diverges: it made\n  %s\nwhere the trace says\n  %s", l->line, want,
                       l->s);
        rp->status = 1;
        return;
    }
    rp->i++;
    rp->n_out++;
}

/* Feeds the input at the current line (with its payload) to the core. */
static void feed_line(struct replay *rp)
{
    struct preempt_coord_in in = { 0 };
    struct payload p = { 0 };
    int d = depth_of(cur(rp));

    if (d < 0) {
        bad(rp, cur(rp)->line, "a coord in line without its depth");
        return;
    }
    rp->depth = (unsigned)d;
    if (read_input(rp, &in, &p)) {
        struct preempt_co_answer answer;

        rp->n_in++;
        preempt_co_answer_(&in, &answer); /* as the shell reads it (coord-wire.c) */
        preempt_coord_input_(rp->c, &in);
    }
    payload_free(&p);
}

static int start(struct replay *rp, const struct preempt_trace_coord *l)
{
    struct fields fs;
    struct preempt_coord_cfg cfg = { 0 };
    struct preempt_coord_join join = { 0 };
    char job[PREEMPT_MAX_JOB + 1], member[PREEMPT_VALUE_MAX] = "";
    const char *why;
    uint64_t inc, workers, me, ttl, give_up, pieces;
    size_t n = 0, len = 0;
    const char *jobp;
    int r;

    split(l->s + strlen("coord start "), &fs);
    jobp = get(&fs, "job", &n);
    if (!jobp || n < strlen("/preempt//") || strncmp(jobp, "/preempt/", 9) || jobp[n - 1] != '/' ||
        n - 10 > PREEMPT_MAX_JOB || !get_u64(&fs, "inc", &inc) || !get_u64(&fs, "workers", &workers) ||
        !get_u64(&fs, "me", &me) || !get_i64(&fs, "lease", &join.lease) || !get_u64(&fs, "ttl", &ttl) ||
        !get_u64(&fs, "give-up", &give_up) || workers == 0 || workers > PREEMPT_MAX_WORKERS || me >= workers ||
        ttl > 3600 || !get_u64(&fs, "members", &pieces)) {
        bad(rp, l->line, "a malformed coord start line");
        return -EINVAL;
    }
    for (uint64_t i = 0; i < pieces; i++) {
        const struct preempt_trace_coord *m = (rp->i + 1 + i < rp->n_lines) ? &rp->lines[rp->i + 1 + i] : NULL;
        struct fields mf;
        size_t vn = 0;
        const char *v;
        char *piece;

        if (!is(m, "coord member")) {
            bad(rp, m ? m->line : l->line, "a coord member line expected");
            return -EINVAL;
        }
        split(m->s, &mf);
        piece = (v = get(&mf, "v", &vn)) ? preempt_trace_decode_(v, vn) : NULL;
        if (!piece || len + strlen(piece) >= sizeof(member)) {
            free(piece);
            bad(rp, m->line, "a malformed coord member line");
            return -EINVAL;
        }
        memcpy(member + len, piece, strlen(piece) + 1);
        len += strlen(piece);
        free(piece);
    }
    /* the member record as the worker wrote it: read with its grammar */
    if (len > 0 && preempt_record_value_of_(&join.member, PREEMPT_KEY_ALIVE, member, (unsigned)workers, &why) < 0) {
        bad(rp, l->line, "a coord member record that is not one");
        return -EINVAL;
    }
    rp->i += (size_t)pieces;
    memcpy(job, jobp + 9, n - 10);
    job[n - 10] = '\0';
    cfg.job = job;
    cfg.workers = (unsigned)workers;
    cfg.worker = (unsigned)me;
    cfg.lease_ttl_s = (unsigned)ttl;
    cfg.give_up_ms = give_up;
    join.incarnation = inc;
    rp->c->sink = replay_sink;
    rp->c->sink_arg = rp;
    r = coord_init(rp->c, &cfg, &join);
    if (r < 0) {
        bad(rp, l->line, r == -ENOMEM ? "out of memory" : "a coord start line the coordinator refuses");
        return r;
    }
    coord_arm_keepalive(rp->c); /* as preempt_coord_new_io_(), before the trace opened: not compared */
    rp->compare = true;
    return 0;
}

int preempt_trace_replay_coord_(const struct preempt_trace_coord *lines, size_t n, size_t *ret_in, size_t *ret_out,
                                char *err, size_t errsize)
{
    struct replay rp = { .lines = lines, .n_lines = n, .err = err, .errsize = errsize };
    struct preempt_coord c = { 0 };

    *ret_in = *ret_out = 0;
    if (n == 0)
        return 0;
    rp.c = &c;
    if (!is(cur(&rp), "coord start")) {
        bad(&rp, lines[0].line, "the coordinator's lines do not begin with coord start");
        return 2;
    }
    if (start(&rp, cur(&rp)) < 0) {
        coord_fini(&c);
        return 2;
    }
    rp.i++;
    while (!rp.status && !rp.ended && cur(&rp)) {
        const struct preempt_trace_coord *l = cur(&rp);

        if (is(l, "coord in")) {
            feed_line(&rp);
            continue;
        }
        if (is(l, "coord start")) { /* another coordinator of the same worker: from its start again */
            coord_fini(&c);
            c = (struct preempt_coord){ 0 };
            rp.compare = false;
            if (start(&rp, l) < 0)
                break;
            rp.i++;
            continue;
        }
        if (is(l, "coord out"))
            (void)snprintf(err, errsize,
                           "line %u: the coordinator diverges: the trace says\n  %s\nwhich the coordinator did not make",
                           l->line, l->s);
        else
            bad(&rp, l->line, "a coord line out of its place");
        rp.status = rp.status ? rp.status : 1;
    }
    coord_fini(&c);
    *ret_in = rp.n_in;
    *ret_out = rp.n_out;
    return rp.status;
}
