/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace-write.c: writing binary trace files: a stream of
 * length-delimited nanopb messages (proto/trace.proto) after a magic.
 * Reading them (and text traces) is the replay's (trace-load.c). */
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

/* ---- records <-> messages ---------------------------------------------------- */

static void config_to_msg(const struct preempt_config_facts *c, lptrace_Config *m)
{
    m->grace_ms = c->grace_ms;
    m->bound_ms = c->bound_ms;
    m->agree_timeout_ms = c->agree_timeout_ms;
    m->margin_ms = c->margin_ms;
    m->workers = c->workers;
    m->in_place = c->in_place;
    COPY_NAME(m->plan, preempt_plan_to_string_(c->plan));
    COPY_NAME(m->second, preempt_second_to_string_(c->second));
}

static void record_to_msg(const struct preempt_trace_rec *r, lptrace_Record *m)
{
    const struct preempt_param_desc *p = preempt_event_params_(r->ev.kind);

    m->seq = r->seq;
    m->t_ms = r->ev.now_ms;
    COPY_NAME(m->event, preempt_event_to_string_(r->ev.kind));
    for (unsigned i = 0; p && i < PREEMPT_EVENT_PARAMS; i++) {
        const void *at = (const char *)&r->ev + p[i].offset;
        lptrace_Param *q;

        if (!p[i].name)
            continue;
        q = &m->params[m->params_count++];
        COPY_NAME(q->name, p[i].name);
        switch (p[i].type) {
        case PREEMPT_PT_u64:
            q->value = (int64_t) * (const uint64_t *)at;
            break;
        case PREEMPT_PT_i64:
            q->value = *(const int64_t *)at;
            break;
        case PREEMPT_PT_src:
            COPY_NAME(q->symbol, preempt_source_to_string_(*(const enum preempt_source *)at));
            break;
        case PREEMPT_PT_none:
            break;
        }
    }
#define TO_MSG(field, key, shown) m->field = r->field;
    PREEMPT_TRACE_FACTS(TO_MSG) /* the message's fields have the record's names */
#undef TO_MSG
    COPY_NAME(m->from, preempt_state_to_string(r->from));
    COPY_NAME(m->to, preempt_state_to_string(r->to));
    COPY_NAME(m->verdict, preempt_verdict_to_string_(r->verdict));
    for (unsigned k = 0; k < r->n_fx; k++) {
        lptrace_Effect *e = &m->effects[m->effects_count++];

        COPY_NAME(e->name, preempt_fx_to_string_(r->fx[k].kind));
        if (preempt_fx_arg_kind_(r->fx[k].kind) == PREEMPT_ARG_EXIT)
            COPY_NAME(e->symbol, preempt_exit_to_string_((enum preempt_exit)r->fx[k].arg));
        else
            e->arg = r->fx[k].arg;
    }
}

/* ---- writing ------------------------------------------------------------------------- */

static int write_entry(FILE *f, const lptrace_Entry *e)
{
    uint8_t buf[lptrace_Entry_size + 10];
    pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof(buf));

    if (!pb_encode_ex(&os, lptrace_Entry_fields, e, PB_ENCODE_DELIMITED))
        return -EINVAL;
    if (fwrite(buf, 1, os.bytes_written, f) != os.bytes_written)
        return -EIO;
    return 0;
}

int preempt_trace_write_magic_(FILE *f)
{
    return fwrite(PREEMPT_TRACE_MAGIC, 1, PREEMPT_TRACE_MAGIC_LEN, f) == PREEMPT_TRACE_MAGIC_LEN ? 0 : -EIO;
}

int preempt_trace_write_config_(FILE *f, const struct preempt_config_facts *cfg)
{
    lptrace_Entry e = lptrace_Entry_init_zero;

    e.which_kind = lptrace_Entry_config_tag;
    config_to_msg(cfg, &e.kind.config);
    return write_entry(f, &e);
}

int preempt_trace_write_record_(FILE *f, const struct preempt_trace_rec *r)
{
    lptrace_Entry e = lptrace_Entry_init_zero;

    e.which_kind = lptrace_Entry_record_tag;
    record_to_msg(r, &e.kind.record);
    return write_entry(f, &e);
}
