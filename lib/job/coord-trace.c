/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-trace.c: the running coordinator in text traces
 * (coord-trace-internal.h): its start, each of its inputs with everything it
 * carries, and each output that acts, as "coord" lines. The replay that
 * runs the coordinator's core again over them is coord-replay.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-state.h"
#include "coord-trace-internal.h"
#include "coord-trace-lines.h"
#include "base/base.h"

#define TEXT_MAX 300 /* an input's text (a message, an effect's text) as traced, encoded */

static const char *const in_names[PREEMPT_COORD_IN__COUNT] = {
#define PREEMPT_COORD_INPUT(id, name, fn, what) [PREEMPT_COORD_IN_##id] = name,
#include "coord-inputs.def"
#undef PREEMPT_COORD_INPUT
};

static const char *const rq_names[] = {
    [PREEMPT_ETCD_RQ_RANGE] = "range",     [PREEMPT_ETCD_RQ_PUT] = "put",         [PREEMPT_ETCD_RQ_CREATE] = "create",
    [PREEMPT_ETCD_RQ_DELETE] = "delete",   [PREEMPT_ETCD_RQ_TXN] = "txn",         [PREEMPT_ETCD_RQ_GRANT] = "grant",
    [PREEMPT_ETCD_RQ_KEEPALIVE] = "keepalive", [PREEMPT_ETCD_RQ_REVOKE] = "revoke",
    [PREEMPT_ETCD_RQ_TIMETOLIVE] = "timetolive",
};

enum preempt_trace_shape preempt_trace_coord_shape_(enum preempt_coord_in_kind k)
{
    switch (k) {
    case PREEMPT_COORD_IN_WRITTEN:
    case PREEMPT_COORD_IN_DECIDED:
    case PREEMPT_COORD_IN_NOTICE_PUT:
    case PREEMPT_COORD_IN_CLAIMED:
    case PREEMPT_COORD_IN_GRANTED:
    case PREEMPT_COORD_IN_KEPT:
    case PREEMPT_COORD_IN_READ:
    case PREEMPT_COORD_IN_MEMBERS:
    case PREEMPT_COORD_IN_SHARDS:
    case PREEMPT_COORD_IN_ABORT_SHARDS:
    case PREEMPT_COORD_IN_REPORTED:
        return PREEMPT_TRACE_SHAPE_ANSWER;
    case PREEMPT_COORD_IN_RECORD:
    case PREEMPT_COORD_IN_MEMBER:
        return PREEMPT_TRACE_SHAPE_EVENT;
    case PREEMPT_COORD_IN_RECORDS:
    case PREEMPT_COORD_IN_MEMBERS_READ:
        return PREEMPT_TRACE_SHAPE_READ;
    case PREEMPT_COORD_IN_LINK:
    case PREEMPT_COORD_IN_MEMBERS_LINK:
        return PREEMPT_TRACE_SHAPE_LINK;
    case PREEMPT_COORD_IN_EFFECT:
        return PREEMPT_TRACE_SHAPE_EFFECT;
    case PREEMPT_COORD_IN_STEP:
        return PREEMPT_TRACE_SHAPE_STEP;
    case PREEMPT_COORD_IN_WITHDRAW:
        return PREEMPT_TRACE_SHAPE_WITHDRAW;
    case PREEMPT_COORD_IN_LIVE:
    case PREEMPT_COORD_IN_HISTORY:
        return PREEMPT_TRACE_SHAPE_TEXT;
    case PREEMPT_COORD_IN_TICK:
    case PREEMPT_COORD_IN_LEAVE:
    case PREEMPT_COORD_IN__COUNT:
        break;
    }
    return PREEMPT_TRACE_SHAPE_BARE;
}

int preempt_trace_coord_in_of_name_(const char *p, size_t n)
{
    for (int i = 0; i < PREEMPT_COORD_IN__COUNT; i++)
        if (strlen(in_names[i]) == n && !strncmp(in_names[i], p, n))
            return i;
    return -1;
}

/* ---- writing ------------------------------------------------------------------------- */

#define MEMBER_PIECE 200 /* bytes of the member record per coord member line */

void preempt_trace_coord_start_(const struct preempt_coord *c, preempt_trace_line_fn line, void *arg)
{
    char buf[PREEMPT_TRACE_LINE_MAX], piece[MEMBER_PIECE + 1], enc[3 * MEMBER_PIECE + 1];
    const char *member = preempt_value_str_(&c->member);
    size_t len = strlen(member), k = (len + MEMBER_PIECE - 1) / MEMBER_PIECE;
    int n = snprintf(buf, sizeof(buf),
                     "coord start job=%s inc=%" PRIu64 " workers=%u me=%u lease=%" PRId64 " ttl=%u give-up=%" PRIu64
                     " members=%zu",
                     c->jobp, c->view.inc, c->n, c->me, c->lease, c->cfg_ttl_s, c->give_up_ms, k);

    line(buf, n, arg);
    for (size_t i = 0; i < k; i++) {
        size_t m = len - i * MEMBER_PIECE < MEMBER_PIECE ? len - i * MEMBER_PIECE : MEMBER_PIECE;

        memcpy(piece, member + i * MEMBER_PIECE, m);
        piece[m] = '\0';
        (void)preempt_trace_encode_(enc, sizeof(enc), piece, sizeof(enc) - 1);
        n = snprintf(buf, sizeof(buf), "coord member v=%s", enc);
        line(buf, n, arg);
    }
}

/* A text field: " name=ENC", and whether it was cut. */
static bool text_field(char *buf, size_t size, const char *name, const char *s)
{
    char enc[TEXT_MAX + 1];
    bool whole = preempt_trace_encode_(enc, sizeof(enc), s, TEXT_MAX);

    (void)snprintf(buf, size, " %s=%s", name, enc);
    return whole;
}

static void kv_line(const struct preempt_etcd_kv *kv, preempt_trace_line_fn line, void *arg)
{
    char buf[PREEMPT_TRACE_LINE_MAX], key[PREEMPT_KEY_MAX + 65], value[PREEMPT_TRACE_VALUE_MAX + 1];
    bool whole = preempt_trace_encode_(key, sizeof(key), kv->key ? kv->key : "", PREEMPT_KEY_MAX + 64);
    int n;

    if (kv->value)
        whole = preempt_trace_encode_(value, sizeof(value), kv->value, PREEMPT_TRACE_VALUE_MAX) && whole;
    n = snprintf(buf, sizeof(buf), "coord kv k=%s%s%s create=%" PRId64 " mod=%" PRId64 " lease=%" PRId64 "%s", key,
                 kv->value ? " v=" : " nv=1", kv->value ? value : "", kv->create_rev, kv->mod_rev, kv->lease,
                 whole ? "" : " cut=1");
    line(buf, n, arg);
}

void preempt_trace_coord_in_(const struct preempt_coord_in *in, unsigned depth, preempt_trace_line_fn line,
                             void *arg)
{
    char buf[PREEMPT_TRACE_LINE_MAX], more[TEXT_MAX + 64] = "";
    const struct preempt_etcd_reply *r = in->reply;
    size_t len;
    bool whole = true;
    int n;

    if ((unsigned)in->kind >= PREEMPT_COORD_IN__COUNT)
        return;
    n = snprintf(buf, sizeof(buf), "coord in d=%u t=%" PRIu64 " wall=%" PRIu64 " %s", depth, in->now_ms, in->wall_ms,
                 in_names[in->kind]);
    len = n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0;
#define ADD(...)                                                                                             \
    (len += (size_t)snprintf(buf + (len < sizeof(buf) ? len : 0), len < sizeof(buf) ? sizeof(buf) - len : 0,      \
                             __VA_ARGS__))
    switch (preempt_trace_coord_shape_(in->kind)) {
    case PREEMPT_TRACE_SHAPE_EVENT:
        ADD(" ev=%s", in->ev == PREEMPT_ETCD_PUT ? "put" : "del");
        break;
    case PREEMPT_TRACE_SHAPE_READ:
        ADD(" rev=%" PRId64 " cluster=%" PRIu64 " kvs=%zu", in->rev, in->cluster, in->n);
        break;
    case PREEMPT_TRACE_SHAPE_LINK:
        whole = text_field(more, sizeof(more), "why", in->why ? in->why : "");
        ADD(" up=%d%s", in->up, more);
        break;
    case PREEMPT_TRACE_SHAPE_BARE:
        break;
    case PREEMPT_TRACE_SHAPE_EFFECT:
        if (in->text)
            whole = text_field(more, sizeof(more), "text", in->text);
        ADD(" round=%u fx=%s arg=%" PRId64 " last=%d stop=%" PRIu64 " save=%" PRIu64, in->round,
            preempt_fx_to_string_(in->fx->kind), in->fx->arg, in->last, in->stop, in->save_ms);
        if (in->pace.ms) /* older traces lack it */
            ADD(" run=%" PRIu64 " pace=%" PRIu64 " trains-on=%d", in->pace.step, in->pace.ms, in->trains_on);
        ADD("%s", more);
        break;
    case PREEMPT_TRACE_SHAPE_STEP:
        ADD(" step=%" PRIu64, in->step_ms);
        break;
    case PREEMPT_TRACE_SHAPE_WITHDRAW:
        ADD(" withdrawn=%d", in->withdrawn);
        break;
    case PREEMPT_TRACE_SHAPE_TEXT:
        whole = text_field(more, sizeof(more), "text", in->text ? in->text : "");
        ADD("%s", more);
        break;
    case PREEMPT_TRACE_SHAPE_ANSWER:
        if (in->status != 0) {
            whole = text_field(more, sizeof(more), "msg", in->msg ? in->msg : "");
            ADD(" round=%u status=%d%s", in->round, in->status, more);
        } else {
            ADD(" round=%u status=0 rev=%" PRId64 " cluster=%" PRIu64 " ok=%d id=%" PRId64 " ttl=%" PRId64
                " gttl=%" PRId64 " res=%zu",
                in->round, r->rev, r->cluster, r->succeeded, r->id, r->ttl, r->granted_ttl, r->n_res);
        }
        break;
    }
    if (!whole)
        ADD(" cut=1");
#undef ADD
    line(buf, len < sizeof(buf) ? (int)len : -1, arg);
    if (preempt_trace_coord_shape_(in->kind) == PREEMPT_TRACE_SHAPE_EVENT)
        kv_line(in->kv, line, arg);
    if (preempt_trace_coord_shape_(in->kind) == PREEMPT_TRACE_SHAPE_READ)
        for (size_t i = 0; i < in->n; i++)
            kv_line(&in->kvs[i], line, arg);
    if (preempt_trace_coord_shape_(in->kind) != PREEMPT_TRACE_SHAPE_ANSWER || in->status != 0)
        return;
    for (size_t i = 0; i < r->n_res; i++) {
        n = snprintf(buf, sizeof(buf), "coord res count=%" PRId64 " kvs=%zu", r->res[i].count, r->res[i].n);
        line(buf, n, arg);
        for (size_t j = 0; j < r->res[i].n; j++)
            kv_line(&r->res[i].kvs[j], line, arg);
    }
}

/* FNV-1a over a request's every field, in order. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u;
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    return s ? mix(h, s, strlen(s) + 1) : mix(h, "\xff", 1);
}

/* A value hashes as its text (NULL: none). */
static uint64_t mix_val(uint64_t h, const struct preempt_value *v)
{
    return mix_str(h, v ? preempt_value_str_(v) : NULL);
}

static uint64_t mix_i64(uint64_t h, int64_t v)
{
    return mix(h, &v, sizeof(v));
}

static uint64_t mix_ops(uint64_t h, const struct preempt_etcd_op *ops, size_t n)
{
    h = mix_i64(h, (int64_t)n);
    for (size_t i = 0; i < n; i++)
        h = mix_i64(mix_val(mix_str(mix_i64(h, ops[i].kind), ops[i].key), ops[i].value), ops[i].lease);
    return h;
}

static uint64_t req_hash(const struct preempt_etcd_req *q)
{
    uint64_t h = 14695981039346656037u;

    h = mix_str(mix_val(mix_str(mix_i64(h, q->kind), q->key), q->value), q->end);
    h = mix_i64(mix_i64(mix_i64(h, q->prefix), q->lease), q->ttl_s);
    h = mix_i64(h, (int64_t)q->n_cmp);
    for (size_t i = 0; i < q->n_cmp; i++)
        h = mix_i64(mix_val(mix_str(h, q->cmp[i].key), q->cmp[i].value), q->cmp[i].mod_rev);
    return mix_ops(mix_ops(h, q->ok, q->n_ok), q->fail, q->n_fail);
}

/* What an output that acts says, without the "coord out d=D " prefix. */
static int out_text(char *buf, size_t size, const struct preempt_coord_out *o)
{
    const struct preempt_param_desc *pd;
    char key[PREEMPT_KEY_MAX + 65];
    const char *k;
    int n;

    switch (o->kind) {
    case PREEMPT_COORD_OUT_REQUEST: { /* the request the wire makes of the ask (coord-wire.c) */
        struct preempt_co_wire w;
        const struct preempt_etcd_req *q = &w.req;

        if (preempt_co_request_(o->ask, &w) < 0)
            return snprintf(buf, size, "request ? key=- hash=0 answer=none round=0 give-up=0");
        k = q->key ? q->key : q->n_ok ? q->ok[0].key : "-";
        (void)preempt_trace_encode_(key, sizeof(key), k ? k : "-", PREEMPT_KEY_MAX + 64);
        return snprintf(buf, size, "request %s key=%s hash=%016" PRIx64 " answer=%s round=%u give-up=%" PRIu64,
                        (unsigned)q->kind < sizeof(rq_names) / sizeof(rq_names[0]) ? rq_names[q->kind] : "?", key,
                        req_hash(q), o->answer == COORD_NO_ANSWER ? "none" : in_names[o->answer],
                        o->answer == COORD_NO_ANSWER ? 0 : o->round, o->give_up_ms);
    }
    case PREEMPT_COORD_OUT_TIMER:
        return snprintf(buf, size, "timer ms=%" PRIu64, o->ms);
    case PREEMPT_COORD_OUT_JOB_SAVE:
        return snprintf(buf, size, "job-save ms=%" PRIu64, o->ms);
    case PREEMPT_COORD_OUT_JOB_PACE:
        return snprintf(buf, size, "job-pace from=%" PRIu64 " pace=%" PRIu64 " at=%" PRIu64, o->pace.step,
                        o->pace.ms, o->ms);
    case PREEMPT_COORD_OUT_ERROR_MSG:
        (void)preempt_trace_encode_(key, sizeof(key), o->text ? o->text : "", TEXT_MAX);
        return snprintf(buf, size, "error-msg text=%s", key);
    case PREEMPT_COORD_OUT_GONE:
        return snprintf(buf, size, "gone worker=%u", o->worker);
    case PREEMPT_COORD_OUT_POST:
        n = snprintf(buf, size, "post %s", preempt_event_to_string_(o->ev.kind));
        pd = preempt_event_params_(o->ev.kind);
        for (unsigned i = 0; n > 0 && (size_t)n < size && pd && i < PREEMPT_EVENT_PARAMS && pd[i].name; i++) {
            const unsigned char *f = (const unsigned char *)&o->ev + pd[i].offset;
            uint64_t u = 0;
            int64_t s = 0;

            switch (pd[i].type) {
            case PREEMPT_PT_u64:
                memcpy(&u, f, sizeof(u));
                n += snprintf(buf + n, size - (size_t)n, " %s=%" PRIu64, pd[i].name, u);
                break;
            case PREEMPT_PT_i64:
                memcpy(&s, f, sizeof(s));
                n += snprintf(buf + n, size - (size_t)n, " %s=%" PRId64, pd[i].name, s);
                break;
            case PREEMPT_PT_src: {
                enum preempt_source src;

                memcpy(&src, f, sizeof(src));
                n += snprintf(buf + n, size - (size_t)n, " %s=%s", pd[i].name, preempt_source_to_string_(src));
                break;
            }
            case PREEMPT_PT_none:
                break;
            }
        }
        return n;
    case PREEMPT_COORD_OUT_LOG: /* the owner's log and the trace's own lines */
    case PREEMPT_COORD_OUT_VIEW:
    case PREEMPT_COORD_OUT_ANSWER:
    case PREEMPT_COORD_OUT__COUNT:
        break;
    }
    return 0;
}

int preempt_trace_format_coord_out_(char *buf, size_t size, const struct preempt_coord_out *out, unsigned depth)
{
    char what[PREEMPT_TRACE_LINE_MAX];
    int n = out_text(what, sizeof(what), out);

    if (n <= 0)
        return n;
    return snprintf(buf, size, "coord out d=%u %s", depth, what);
}
