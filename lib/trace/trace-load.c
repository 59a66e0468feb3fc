/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace-load.c: loading trace files, binary (nanopb messages
 * after a magic) or text (the pure codec in fsm/, and the job's lines,
 * view-replay.c and lib/job/coord-replay.c). Part of the replay library
 * (libpreempt-replay.la), not of libpreempt.so. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "trace-internal.h"
#include "trace/trace.pb.h"

#define COPY_NAME(dst, src) ((void)snprintf((dst), sizeof(dst), "%s", (src) ? (src) : ""))

struct ctx {
    char *err;
    size_t errsize;
    const char *name;
    size_t index;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(c->err, c->errsize, "%s: record %zu: ", c->name, c->index);

    va_start(ap, fmt);
    if (n > 0 && (size_t)n < c->errsize)
        (void)vsnprintf(c->err + n, c->errsize - (size_t)n, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static int config_from_msg(struct ctx *c, const lptrace_Config *m, struct preempt_config_facts *cfg)
{
    int v;

    cfg->grace_ms = m->grace_ms;
    cfg->bound_ms = m->bound_ms;
    cfg->agree_timeout_ms = m->agree_timeout_ms;
    cfg->margin_ms = m->margin_ms;
    cfg->workers = m->workers ? m->workers : 1;
    cfg->in_place = m->in_place;
    if ((v = preempt_plan_from_string_(m->plan)) < 0)
        return bad(c, "unknown plan '%s'", m->plan);
    cfg->plan = (enum preempt_plan)v;
    if ((v = preempt_second_from_string_(m->second)) < 0)
        return bad(c, "unknown second-notice policy '%s'", m->second);
    cfg->second = (enum preempt_second)v;
    return 0;
}

static int param_from_msg(struct ctx *c, const lptrace_Param *q, struct preempt_trace_rec *r)
{
    const struct preempt_param_desc *p = preempt_event_params_(r->ev.kind);

    for (unsigned i = 0; i < PREEMPT_EVENT_PARAMS; i++) {
        void *at = (char *)&r->ev + p[i].offset;
        int v;

        if (!p[i].name || strcmp(p[i].name, q->name) != 0)
            continue;
        switch (p[i].type) {
        case PREEMPT_PT_u64:
            if (q->value < 0)
                return bad(c, "%s must not be negative", q->name);
            *(uint64_t *)at = (uint64_t)q->value;
            return 0;
        case PREEMPT_PT_i64:
            *(int64_t *)at = q->value;
            return 0;
        case PREEMPT_PT_src:
            if ((v = preempt_source_from_string_(q->symbol)) < 0)
                return bad(c, "unknown notice source '%s'", q->symbol);
            *(enum preempt_source *)at = (enum preempt_source)v;
            return 0;
        case PREEMPT_PT_none:
            break;
        }
    }
    return bad(c, "unknown event field '%s'", q->name);
}

static int record_from_msg(struct ctx *c, const lptrace_Record *m, struct preempt_trace_rec *r)
{
    int v, rc;

    memset(r, 0, sizeof(*r));
    r->seq = m->seq;
    if (m->seq != c->index)
        return bad(c, "sequence number %" PRIu64 " out of order", m->seq);
    r->ev.now_ms = m->t_ms;
    if ((v = preempt_event_from_string_(m->event)) < 0)
        return bad(c, "unknown event '%s'", m->event);
    r->ev.kind = (enum preempt_event_kind)v;
    for (pb_size_t i = 0; i < m->params_count; i++)
        if ((rc = param_from_msg(c, &m->params[i], r)) < 0)
            return rc;
#define FROM_MSG(field, key, shown) r->field = m->field;
    PREEMPT_TRACE_FACTS(FROM_MSG)
#undef FROM_MSG
    if ((v = preempt_state_from_string_(m->from)) < 0)
        return bad(c, "unknown state '%s'", m->from);
    r->from = (enum preempt_state)v;
    if ((v = preempt_state_from_string_(m->to)) < 0)
        return bad(c, "unknown state '%s'", m->to);
    r->to = (enum preempt_state)v;
    if ((v = preempt_verdict_from_string_(m->verdict)) < 0)
        return bad(c, "unknown verdict '%s'", m->verdict);
    r->verdict = (enum preempt_verdict)v;
    for (pb_size_t k = 0; k < m->effects_count; k++) {
        const lptrace_Effect *e = &m->effects[k];

        if ((v = preempt_fx_from_string_(e->name)) < 0)
            return bad(c, "unknown effect '%s'", e->name);
        r->fx[k].kind = (enum preempt_fx_kind)v;
        if (preempt_fx_arg_kind_(r->fx[k].kind) == PREEMPT_ARG_EXIT) {
            if ((v = preempt_exit_from_string_(e->symbol)) < 0)
                return bad(c, "unknown exit reason '%s'", e->symbol);
            r->fx[k].arg = v;
        } else
            r->fx[k].arg = e->arg;
    }
    r->n_fx = (uint8_t)m->effects_count;
    return 0;
}

/* ---- loading ------------------------------------------------------------------------- */

static int push(struct preempt_trace_file *t, const struct preempt_trace_rec *r, unsigned line, size_t *cap)
{
    if (t->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct preempt_trace_rec *nr = realloc(t->recs, ncap * sizeof(*nr));
        unsigned *nl;

        if (!nr)
            return -ENOMEM;
        t->recs = nr;
        if (!t->binary) {
            nl = realloc(t->lines, ncap * sizeof(*nl));
            if (!nl)
                return -ENOMEM;
            t->lines = nl;
        }
        *cap = ncap;
    }
    t->recs[t->n] = *r;
    if (!t->binary)
        t->lines[t->n] = line;
    t->n++;
    return 0;
}

static int push_coord(struct preempt_trace_file *t, const char *line, unsigned lineno)
{
    char *s;

    if (t->n_coord == t->cap_coord) {
        size_t cap = t->cap_coord ? 2 * t->cap_coord : 256;
        struct preempt_trace_coord *more = realloc(t->coord, cap * sizeof(*more));

        if (!more)
            return -ENOMEM;
        t->coord = more;
        t->cap_coord = cap;
    }
    if (!(s = strdup(line)))
        return -ENOMEM;
    t->coord[t->n_coord++] = (struct preempt_trace_coord){ .line = lineno, .s = s };
    return 0;
}

static int load_binary(struct ctx *c, const unsigned char *data, size_t len, struct preempt_trace_file *t)
{
    pb_istream_t is = pb_istream_from_buffer(data, len);
    size_t cap = 0;
    int rc;

    while (is.bytes_left > 0) {
        lptrace_Entry e = lptrace_Entry_init_zero;
        struct preempt_trace_rec r;

        c->index = t->n + 1;
        if (!pb_decode_ex(&is, lptrace_Entry_fields, &e, PB_DECODE_DELIMITED)) {
            (void)snprintf(c->err, c->errsize, "%s: entry %zu: truncated or malformed (%s)", c->name,
                           t->n + (t->have_config ? 2 : 1), PB_GET_ERROR(&is));
            return -EINVAL;
        }
        if (e.which_kind == lptrace_Entry_config_tag) {
            if (t->have_config || t->n > 0) {
                (void)snprintf(c->err, c->errsize, "%s: a config entry after the start", c->name);
                return -EINVAL;
            }
            if ((rc = config_from_msg(c, &e.kind.config, &t->cfg)) < 0)
                return rc;
            t->have_config = true;
        } else if (e.which_kind == lptrace_Entry_record_tag) {
            if ((rc = record_from_msg(c, &e.kind.record, &r)) < 0 || (rc = push(t, &r, 0, &cap)) < 0)
                return rc;
        } else {
            (void)snprintf(c->err, c->errsize, "%s: entry %zu has no content", c->name, t->n + 1);
            return -EINVAL;
        }
    }
    return 0;
}

static int load_text(struct ctx *c, const unsigned char *data, size_t len, struct preempt_trace_file *t)
{
    struct preempt_text_reader rd;
    size_t cap = 0, jcap = 0, pos = 0;
    char line[PREEMPT_TRACE_LINE_MAX], vmsg[160];

    preempt_text_reader_init_(&rd);
    while (pos < len) {
        const unsigned char *nl = memchr(data + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;
        struct preempt_trace_rec r;
        int rc;

        /* Text traces are ASCII: a control or non-ASCII byte is described,
         * never echoed to the terminal in an error message. */
        for (size_t i = 0; i < n; i++) {
            unsigned char b = data[pos + i];

            if ((b < 0x20 && b != '\t' && b != '\r') || b > 0x7e) {
                (void)snprintf(c->err, c->errsize, "%s: line %u: byte %zu is 0x%02x: binary data, not a text trace",
                               c->name, rd.line + 1, i + 1, b);
                return -EINVAL;
            }
        }
        if (n >= sizeof(line)) {
            (void)snprintf(c->err, c->errsize, "%s: line %u: longer than %zu bytes", c->name, rd.line + 1,
                           sizeof(line) - 1);
            return -EINVAL;
        }
        memcpy(line, data + pos, n);
        line[n] = '\0';
        pos += n + (nl ? 1 : 0);
        if (!strncmp(line, "coord ", 6)) { /* the coordinator's: kept as written, read by its replay */
            rd.line++;
            if ((rc = push_coord(t, line, rd.line)) < 0)
                return rc;
            continue;
        }
        rc = preempt_trace_view_line_(t, line, rd.line + 1, &jcap, vmsg, sizeof(vmsg));
        if (rc < 0) {
            (void)snprintf(c->err, c->errsize, "%s: line %u: %s", c->name, rd.line + 1, vmsg);
            return rc;
        }
        if (rc > 0) { /* the job's view: the machine's reader only counts the line */
            rd.line++;
            continue;
        }
        rc = preempt_text_parse_line_(&rd, line, &r);
        if (rc < 0) {
            (void)snprintf(c->err, c->errsize, "%s: %s", c->name, rd.err);
            return rc;
        }
        if (rc == PREEMPT_TEXT_RECORD && (rc = push(t, &r, rd.line, &cap)) < 0)
            return rc;
    }
    t->cfg = rd.cfg;
    t->have_config = rd.have_config;
    return 0;
}

int preempt_trace_load_mem_(const char *name, const unsigned char *data, size_t len, struct preempt_trace_file *ret,
                            char *err, size_t errsize)
{
    struct preempt_trace_file t = { .cfg = preempt_config_defaults_() };
    struct ctx c = { err, errsize, name, 0 };
    int rc;

    t.binary = len >= PREEMPT_TRACE_MAGIC_LEN && memcmp(data, PREEMPT_TRACE_MAGIC, PREEMPT_TRACE_MAGIC_LEN) == 0;
    rc = t.binary ? load_binary(&c, data + PREEMPT_TRACE_MAGIC_LEN, len - PREEMPT_TRACE_MAGIC_LEN, &t)
                  : load_text(&c, data, len, &t);
    if (rc == -ENOMEM)
        (void)snprintf(err, errsize, "%s: out of memory", name);
    if (rc == 0 && t.n == 0 && t.n_jobs == 0 && t.n_decls == 0 && t.n_coord == 0) { /* a worker's job lines alone: one killed early */
        (void)snprintf(err, errsize, "%s: empty trace: no record", name);
        rc = -ENODATA;
    }
    if (rc < 0) {
        preempt_trace_file_free_(&t);
        return rc;
    }
    *ret = t;
    return 0;
}

int preempt_trace_load_(const char *path, struct preempt_trace_file *ret, char *err, size_t errsize)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    int rc;

    if (!f) {
        rc = -errno;
        (void)snprintf(err, errsize, "%s: %s", path, strerror(-rc));
        return rc;
    }
    for (;;) {
        if (len == cap) {
            unsigned char *nd = realloc(data, cap ? cap * 2 : 65536);
            if (!nd) {
                rc = -ENOMEM;
                (void)snprintf(err, errsize, "%s: out of memory", path);
                goto out;
            }
            data = nd;
            cap = cap ? cap * 2 : 65536;
        }
        size_t n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = -EIO;
        (void)snprintf(err, errsize, "%s: read error", path);
        goto out;
    }
    rc = preempt_trace_load_mem_(path, data, len, ret, err, errsize);
out:
    free(data);
    (void)fclose(f);
    return rc;
}

void preempt_trace_file_free_(struct preempt_trace_file *t)
{
    if (!t)
        return;
    free(t->recs);
    free(t->lines);
    preempt_trace_jobs_free_(t);
    for (size_t i = 0; i < t->n_coord; i++)
        free(t->coord[i].s);
    free(t->coord);
    t->coord = NULL;
    t->n_coord = t->cap_coord = 0;
    t->recs = NULL;
    t->lines = NULL;
    t->n = 0;
}
