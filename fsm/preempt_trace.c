/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_trace.c: the text form of trace records, and replay of one
 * record through the pure core. Field names and values come from the
 * machine's name tables, so the format follows the .def files. Pure. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_trace.h"

struct preempt_config_facts preempt_config_defaults_(void)
{
    return (struct preempt_config_facts){
        .grace_ms = 0,
        .bound_ms = 30000,
        .agree_timeout_ms = 10000,
        .margin_ms = 500,
        .plan = PREEMPT_PLAN_MEASURED,
        .second = PREEMPT_SECOND_IGNORE,
        .workers = 1,
    };
}

/* dst's facts from src's (a record's or the machine's: the same names) */
#define COPY_FACT(field, key, shown) dst->field = src->field;

struct preempt_facts preempt_trace_facts_(const struct preempt_trace_rec *r, const struct preempt_config_facts *cfg)
{
    struct preempt_facts f = { .cfg = *cfg }, *dst = &f;
    const struct preempt_trace_rec *src = r;

    PREEMPT_TRACE_FACTS(COPY_FACT)
    return f;
}

void preempt_trace_from_step_(struct preempt_trace_rec *r, uint64_t seq, const struct preempt_event *ev,
                              const struct preempt_facts *f, enum preempt_state from,
                              const struct preempt_step *st)
{
    struct preempt_trace_rec *dst = r;
    const struct preempt_facts *src = f;

    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->ev = *ev;
    PREEMPT_TRACE_FACTS(COPY_FACT)
    r->from = from;
    r->to = st->verdict == PREEMPT_VERDICT_TRANSITION ? st->next.state : from;
    r->verdict = st->verdict;
    r->n_fx = st->n_fx;
    memcpy(r->fx, st->fx, sizeof(r->fx[0]) * st->n_fx);
}

/* ---- formatting ------------------------------------------------------------ */

struct out {
    char *buf;
    size_t size, len;
    bool overflow;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->len < o->size ? o->size - o->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0 || o->len + (size_t)n >= o->size) {
        o->overflow = true;
        o->len = o->size;
        return;
    }
    o->len += (size_t)n;
}

static int finish(struct out *o)
{
    if (o->overflow)
        return -ENOSPC;
    return (int)o->len;
}

int preempt_trace_format_config_(char *buf, size_t size, const struct preempt_config_facts *c)
{
    struct out o = { buf, size, 0, size == 0 };

    put(&o, "config grace=%" PRIu64 " bound=%" PRIu64 " agree-timeout=%" PRIu64 " margin=%" PRIu64 " plan=%s second=%s",
        c->grace_ms, c->bound_ms, c->agree_timeout_ms, c->margin_ms, preempt_plan_to_string_(c->plan),
        preempt_second_to_string_(c->second));
    if (c->workers != 1) /* local mode's traces keep their form */
        put(&o, " workers=%" PRIu64, c->workers);
    if (c->in_place) /* as workers: traces without it keep their form */
        put(&o, " in-place=1");
    return finish(&o);
}

static void put_param(struct out *o, const struct preempt_event *ev, const struct preempt_param_desc *p)
{
    const void *at = (const char *)ev + p->offset;

    switch (p->type) {
    case PREEMPT_PT_u64:
        put(o, " %s=%" PRIu64, p->name, *(const uint64_t *)at);
        break;
    case PREEMPT_PT_i64:
        put(o, " %s=%" PRId64, p->name, *(const int64_t *)at);
        break;
    case PREEMPT_PT_src: {
        const char *n = preempt_source_to_string_(*(const enum preempt_source *)at);
        put(o, " %s=%s", p->name, n ? n : "?");
        break;
    }
    case PREEMPT_PT_none:
        break;
    }
}

static void put_fx(struct out *o, const struct preempt_fx *fx, bool wild_arg)
{
    put(o, "%s", preempt_fx_to_string_(fx->kind));
    if (wild_arg) {
        put(o, ":*");
        return;
    }
    switch (preempt_fx_arg_kind_(fx->kind)) {
    case PREEMPT_ARG_NONE:
        break;
    case PREEMPT_ARG_STEP:
    case PREEMPT_ARG_TIME:
    case PREEMPT_ARG_CODE:
        put(o, ":%" PRId64, fx->arg);
        break;
    case PREEMPT_ARG_EXIT: {
        const char *n = preempt_exit_to_string_((enum preempt_exit)fx->arg);
        put(o, ":%s", n ? n : "?");
        break;
    }
    case PREEMPT_ARG__COUNT:
        break;
    }
}

static void put_outcome(struct out *o, const struct preempt_trace_rec *r)
{
    put(o, "%s", preempt_state_to_string(r->from));
    if (r->verdict != PREEMPT_VERDICT_TRANSITION) {
        put(o, " (%s)", preempt_verdict_to_string_(r->verdict));
        return;
    }
    put(o, " -> %s", r->wild & PREEMPT_WILD_TO ? "*" : preempt_state_to_string(r->to));
    if (r->wild & PREEMPT_WILD_FX) {
        put(o, " fx=*");
        return;
    }
    for (unsigned k = 0; k < r->n_fx; k++) {
        put(o, k == 0 ? " fx=" : ",");
        put_fx(o, &r->fx[k], r->wild & PREEMPT_WILD_ARG(k));
    }
}

int preempt_trace_format_outcome_(char *buf, size_t size, const struct preempt_trace_rec *r)
{
    struct out o = { buf, size, 0, size == 0 };

    put_outcome(&o, r);
    return finish(&o);
}

int preempt_trace_format_(char *buf, size_t size, const struct preempt_trace_rec *r,
                          const struct preempt_trace_rec *prev)
{
    struct out o = { buf, size, 0, size == 0 };
    const struct preempt_param_desc *p = preempt_event_params_(r->ev.kind);
    const char *ev_name = preempt_event_to_string_(r->ev.kind);

    if (!p || !ev_name || !preempt_state_to_string(r->from) || !preempt_state_to_string(r->to))
        return -EINVAL;
    put(&o, "n=%" PRIu64 " t=%" PRIu64, r->seq, r->ev.now_ms);
#define FIRST(field) !prev
#define SET(field) (!prev && r->field != 0)
#define PUT_FACT(field, key, shown)                                                                                  \
    if (shown(field) || (prev && prev->field != r->field))                                                            \
        put(&o, " " key "=%" PRIu64, r->field);
    PREEMPT_TRACE_FACTS(PUT_FACT)
#undef PUT_FACT
#undef SET
#undef FIRST
    put(&o, " ev=%s", ev_name);
    for (unsigned i = 0; i < PREEMPT_EVENT_PARAMS; i++)
        put_param(&o, &r->ev, &p[i]);
    put(&o, " => ");
    put_outcome(&o, r);
    return finish(&o);
}

/* ---- parsing ------------------------------------------------------------------ */

void preempt_text_reader_init_(struct preempt_text_reader *rd)
{
    memset(rd, 0, sizeof(*rd));
    rd->cfg = preempt_config_defaults_();
}

static int fail(struct preempt_text_reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct preempt_text_reader *rd, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(rd->err, sizeof(rd->err), "line %u: ", rd->line);

    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(rd->err))
        (void)vsnprintf(rd->err + n, sizeof(rd->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* A token: a view into the line. */
struct tok {
    const char *p;
    size_t n;
};

static bool next_tok(const char **s, struct tok *t)
{
    const char *p = *s;

    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    if (*p == '\0')
        return false;
    t->p = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r')
        p++;
    t->n = (size_t)(p - t->p);
    *s = p;
    return true;
}

static bool tok_is(const struct tok *t, const char *lit)
{
    return t->n == strlen(lit) && memcmp(t->p, lit, t->n) == 0;
}

/* Copies a token (or part of one) into a bounded NUL-terminated buffer. */
static bool tok_copy(char *dst, size_t size, const char *p, size_t n)
{
    if (n >= size)
        return false;
    memcpy(dst, p, n);
    dst[n] = '\0';
    return true;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    /* Above INT64_MAX: beyond what effects and the binary form carry
     * (found by fuzz-scenario: a run of 1e19 acknowledged a negative step). */
    if (errno || *end || v > INT64_MAX)
        return false;
    *ret = v;
    return true;
}

static bool parse_i64(const char *s, int64_t *ret)
{
    char *end;
    long long v;

    if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *ret = v;
    return true;
}

/* Splits "key=value" into bounded buffers. */
static bool split_kv(const struct tok *t, char *key, size_t ksize, char *val, size_t vsize)
{
    const char *eq = memchr(t->p, '=', t->n);

    if (!eq)
        return false;
    return tok_copy(key, ksize, t->p, (size_t)(eq - t->p)) &&
           tok_copy(val, vsize, eq + 1, t->n - (size_t)(eq - t->p) - 1);
}

static int parse_config(struct preempt_text_reader *rd, const char *s)
{
    struct preempt_config_facts c = preempt_config_defaults_();
    struct tok t;
    char key[32], val[64];

    while (next_tok(&s, &t)) {
        uint64_t *num = NULL;
        int v;

        if (!split_kv(&t, key, sizeof(key), val, sizeof(val)))
            return fail(rd, "malformed config field '%.*s'", (int)t.n, t.p);
        if (strcmp(key, "grace") == 0)
            num = &c.grace_ms;
        else if (strcmp(key, "bound") == 0)
            num = &c.bound_ms;
        else if (strcmp(key, "agree-timeout") == 0)
            num = &c.agree_timeout_ms;
        else if (strcmp(key, "margin") == 0)
            num = &c.margin_ms;
        else if (strcmp(key, "workers") == 0)
            num = &c.workers;
        else if (strcmp(key, "plan") == 0) {
            if ((v = preempt_plan_from_string_(val)) < 0)
                return fail(rd, "unknown plan '%s' (measured or tf)", val);
            c.plan = (enum preempt_plan)v;
        } else if (strcmp(key, "second") == 0) {
            if ((v = preempt_second_from_string_(val)) < 0)
                return fail(rd, "unknown second-notice policy '%s' (ignore or exit)", val);
            c.second = (enum preempt_second)v;
        } else if (strcmp(key, "in-place") == 0) {
            if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
                return fail(rd, "config field 'in-place' is 0 or 1, not '%s'", val);
            c.in_place = val[0] == '1';
        } else
            return fail(rd, "unknown config field '%s'", key);
        if (num && !parse_u64(val, num))
            return fail(rd, "config field '%s' needs a non-negative integer, not '%s'", key, val);
    }
    if (rd->seq > 0)
        return fail(rd, "config after the first record");
    rd->cfg = c;
    rd->have_config = true;
    return PREEMPT_TEXT_CONFIG;
}

static int parse_param(struct preempt_text_reader *rd, struct preempt_trace_rec *r, const char *key, const char *val)
{
    const struct preempt_param_desc *p = preempt_event_params_(r->ev.kind);
    void *at;

    for (unsigned i = 0; i < PREEMPT_EVENT_PARAMS; i++) {
        if (!p[i].name || strcmp(p[i].name, key) != 0)
            continue;
        at = (char *)&r->ev + p[i].offset;
        switch (p[i].type) {
        case PREEMPT_PT_u64:
            if (!parse_u64(val, (uint64_t *)at))
                return fail(rd, "%s needs a non-negative integer, not '%s'", key, val);
            return 0;
        case PREEMPT_PT_i64:
            if (!parse_i64(val, (int64_t *)at))
                return fail(rd, "%s needs an integer, not '%s'", key, val);
            return 0;
        case PREEMPT_PT_src: {
            int v = preempt_source_from_string_(val);
            if (v < 0)
                return fail(rd, "unknown notice source '%s'", val);
            *(enum preempt_source *)at = (enum preempt_source)v;
            return 0;
        }
        case PREEMPT_PT_none:
            break;
        }
    }
    return fail(rd, "event %s has no field '%s'", preempt_event_to_string_(r->ev.kind), key);
}

static int parse_state(struct preempt_text_reader *rd, const struct tok *t, enum preempt_state *ret)
{
    char name[32];
    int v;

    if (!tok_copy(name, sizeof(name), t->p, t->n) || (v = preempt_state_from_string_(name)) < 0)
        return fail(rd, "unknown state '%.*s'", (int)t->n, t->p);
    *ret = (enum preempt_state)v;
    return 0;
}

static int parse_one_fx(struct preempt_text_reader *rd, struct preempt_trace_rec *r, const char *p, size_t n)
{
    const char *colon = memchr(p, ':', n);
    size_t name_len = colon ? (size_t)(colon - p) : n;
    char name[32], arg[32];
    struct preempt_fx *fx;
    int v;

    if (r->n_fx >= PREEMPT_FX_MAX)
        return fail(rd, "more than %d effects", PREEMPT_FX_MAX);
    fx = &r->fx[r->n_fx];
    if (!tok_copy(name, sizeof(name), p, name_len) || (v = preempt_fx_from_string_(name)) < 0)
        return fail(rd, "unknown effect '%.*s'", (int)name_len, p);
    fx->kind = (enum preempt_fx_kind)v;
    fx->arg = 0;
    if (!colon) {
        if (preempt_fx_arg_kind_(fx->kind) != PREEMPT_ARG_NONE)
            return fail(rd, "effect %s needs an argument (%s:VALUE or %s:*)", name, name, name);
        r->n_fx++;
        return 0;
    }
    if (!tok_copy(arg, sizeof(arg), colon + 1, n - name_len - 1))
        return fail(rd, "argument of %s is too long", name);
    if (strcmp(arg, "*") == 0) {
        r->wild |= PREEMPT_WILD_ARG(r->n_fx);
        r->n_fx++;
        return 0;
    }
    switch (preempt_fx_arg_kind_(fx->kind)) {
    case PREEMPT_ARG_NONE:
        return fail(rd, "effect %s takes no argument", name);
    case PREEMPT_ARG_STEP:
    case PREEMPT_ARG_TIME: {
        uint64_t u;
        if (!parse_u64(arg, &u) || u > INT64_MAX)
            return fail(rd, "effect %s needs a non-negative integer, not '%s'", name, arg);
        fx->arg = (int64_t)u;
        break;
    }
    case PREEMPT_ARG_CODE:
        if (!parse_i64(arg, &fx->arg))
            return fail(rd, "effect %s needs an integer, not '%s'", name, arg);
        break;
    case PREEMPT_ARG_EXIT:
        if ((v = preempt_exit_from_string_(arg)) < 0)
            return fail(rd, "unknown exit reason '%s'", arg);
        fx->arg = v;
        break;
    case PREEMPT_ARG__COUNT:
        break;
    }
    r->n_fx++;
    return 0;
}

static int parse_fx_list(struct preempt_text_reader *rd, struct preempt_trace_rec *r, const struct tok *t)
{
    const char *p = t->p + 3, *end = t->p + t->n; /* after "fx=" */

    if (end - p == 1 && *p == '*') {
        r->wild |= PREEMPT_WILD_FX;
        return 0;
    }
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        int rc;

        if (stop == p)
            return fail(rd, "empty effect in '%.*s'", (int)t->n, t->p);
        if ((rc = parse_one_fx(rd, r, p, (size_t)(stop - p))) < 0)
            return rc;
        p = comma ? comma + 1 : end;
        if (comma && p == end)
            return fail(rd, "trailing comma in '%.*s'", (int)t->n, t->p);
    }
    return 0;
}

static int parse_outcome(struct preempt_text_reader *rd, struct preempt_trace_rec *r, const char *s)
{
    struct tok t;
    int rc;

    if (!next_tok(&s, &t))
        return fail(rd, "missing state after '=>'");
    if ((rc = parse_state(rd, &t, &r->from)) < 0)
        return rc;
    r->to = r->from;
    if (!next_tok(&s, &t))
        return fail(rd, "missing '-> STATE', '(ignored)' or '(illegal)' after the state");
    if (tok_is(&t, "(ignored)") || tok_is(&t, "(illegal)")) {
        r->verdict = tok_is(&t, "(ignored)") ? PREEMPT_VERDICT_IGNORED : PREEMPT_VERDICT_ILLEGAL;
        if (next_tok(&s, &t))
            return fail(rd, "unexpected '%.*s' after the verdict", (int)t.n, t.p);
        return 0;
    }
    if (!tok_is(&t, "->"))
        return fail(rd, "expected '->', '(ignored)' or '(illegal)', not '%.*s'", (int)t.n, t.p);
    r->verdict = PREEMPT_VERDICT_TRANSITION;
    if (!next_tok(&s, &t))
        return fail(rd, "missing state after '->'");
    if (tok_is(&t, "*"))
        r->wild |= PREEMPT_WILD_TO;
    else if ((rc = parse_state(rd, &t, &r->to)) < 0)
        return rc;
    if (!next_tok(&s, &t))
        return 0;
    if (t.n < 3 || memcmp(t.p, "fx=", 3) != 0)
        return fail(rd, "expected 'fx=...', not '%.*s'", (int)t.n, t.p);
    if ((rc = parse_fx_list(rd, r, &t)) < 0)
        return rc;
    if (next_tok(&s, &t))
        return fail(rd, "unexpected '%.*s' after the effects", (int)t.n, t.p);
    return 0;
}

static int parse_record(struct preempt_text_reader *rd, const char *s, struct preempt_trace_rec *r)
{
    struct tok t;
    char key[32], val[64];
    bool have_t = false, have_ev = false, have_arrow = false;
    int rc;

    struct preempt_trace_rec *dst = r;
    const struct preempt_trace_rec *src = &rd->last;

    memset(r, 0, sizeof(*r));
    r->seq = rd->seq + 1;
    PREEMPT_TRACE_FACTS(COPY_FACT) /* each keeps its value until a record changes it */
    while (next_tok(&s, &t)) {
        if (tok_is(&t, "=>")) {
            have_arrow = true;
            break;
        }
        if (!split_kv(&t, key, sizeof(key), val, sizeof(val)) || key[0] == '\0')
            return fail(rd, "malformed field '%.*s' (expected key=value)", (int)t.n, t.p);
        if (strcmp(key, "ev") == 0) {
            int v = preempt_event_from_string_(val);
            if (have_ev)
                return fail(rd, "two events on one line");
            if (v < 0)
                return fail(rd, "unknown event '%s'", val);
            r->ev.kind = (enum preempt_event_kind)v;
            have_ev = true;
            continue;
        }
        if (have_ev) {
            if ((rc = parse_param(rd, r, key, val)) < 0)
                return rc;
            continue;
        }
        uint64_t *num = NULL, seq = 0;
        if (strcmp(key, "n") == 0)
            num = &seq;
        else if (strcmp(key, "t") == 0) {
            num = &r->ev.now_ms;
            have_t = true;
        }
#define FIND_FACT(field, name, shown)                                                                                \
        else if (strcmp(key, name) == 0)                                                                              \
            num = &r->field;
        PREEMPT_TRACE_FACTS(FIND_FACT)
#undef FIND_FACT
        else
            return fail(rd, "unknown field '%s' (before ev=)", key);
        if (!parse_u64(val, num))
            return fail(rd, "%s needs a non-negative integer, not '%s'", key, val);
        if (num == &seq && seq != r->seq)
            return fail(rd, "record number n=%s, expected %" PRIu64, val, r->seq);
    }
    if (!have_t)
        return fail(rd, "missing t=");
    if (!have_ev)
        return fail(rd, "missing ev=");
    if (!have_arrow)
        return fail(rd, "missing '=>' and the expected outcome");
    if ((rc = parse_outcome(rd, r, s)) < 0)
        return rc;
    rd->seq = r->seq;
    rd->last = *r;
    return PREEMPT_TEXT_RECORD;
}

int preempt_text_parse_line_(struct preempt_text_reader *rd, const char *line, struct preempt_trace_rec *ret_rec)
{
    const char *s = line;
    struct tok t;

    rd->line++;
    rd->err[0] = '\0';
    if (!next_tok(&s, &t) || t.p[0] == '#')
        return PREEMPT_TEXT_BLANK;
    if (tok_is(&t, "config"))
        return parse_config(rd, s);
    return parse_record(rd, line, ret_rec);
}

/* ---- comparing and replaying ---------------------------------------------------- */

bool preempt_trace_outcome_matches_(const struct preempt_trace_rec *e, const struct preempt_trace_rec *a)
{
    if (e->from != a->from || e->verdict != a->verdict)
        return false;
    if (!(e->wild & PREEMPT_WILD_TO) && e->to != a->to)
        return false;
    if (e->wild & PREEMPT_WILD_FX)
        return true;
    if (e->n_fx != a->n_fx)
        return false;
    for (unsigned k = 0; k < e->n_fx; k++) {
        if (e->fx[k].kind != a->fx[k].kind)
            return false;
        if (!(e->wild & PREEMPT_WILD_ARG(k)) && e->fx[k].arg != a->fx[k].arg)
            return false;
    }
    return true;
}

bool preempt_replay_record_(struct preempt_core *core, const struct preempt_config_facts *cfg,
                            const struct preempt_trace_rec *expect, struct preempt_trace_rec *ret_actual)
{
    struct preempt_facts f = preempt_trace_facts_(expect, cfg);
    enum preempt_state from = core->state;
    struct preempt_step st = preempt_fsm_step_(core, &expect->ev, &f);

    preempt_trace_from_step_(ret_actual, expect->seq, &expect->ev, &f, from, &st);
    *core = st.next;
    return preempt_trace_outcome_matches_(expect, ret_actual);
}
