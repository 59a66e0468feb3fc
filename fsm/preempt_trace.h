/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_trace.h: trace records and their text form (docs/design.md, "Traces").
 *
 * One record per event the machine consumed: sequence number, relative
 * monotonic time, the event with its payload, the facts that vary during a
 * run, the state before and after, the verdict and the effects. The text
 * form, one line per record, is the shell's debug log and also the format
 * of hand-written scenario files, so a production log can be pasted into a
 * regression test:
 *
 *   config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore
 *   n=1 t=0 run=12 ev=notice source=signal deadline=0 => idle -> own-signal fx=publish-notice:30000,...
 *   n=2 t=4 ev=claim-won => own-signal -> own-signal
 *   n=3 t=9 ev=timer gen=0 => step-agreed (ignored)
 *
 * Fields: n= (optional; when given it must be the record's number), t= (ms
 * since the trace began), the varying facts (PREEMPT_TRACE_FACTS: run=,
 * step-ms=, ...; each keeps its value until a record changes it), ev= and the
 * event's parameters (missing ones are 0), then "=>" and the outcome. In an
 * expectation `*` matches anything: "-> *", "fx=*", or an effect's argument
 * ("arm-timer:*"). Names are always the machine's names, never numbers.
 * Pure: the codec reads and writes memory only. */
#ifndef PREEMPT_TRACE_H
#define PREEMPT_TRACE_H

#include "preempt_fsm.h"

/* X(field, "key", SHOWN): the facts that vary during a run, which every
 * record carries (struct preempt_facts' fields of the same names, and
 * proto/trace.proto's), in the order the text form writes them. SHOWN:
 * FIRST, written in a trace's first record and wherever it changes; SET,
 * written once it is not 0 and wherever it changes (facts added later:
 * the traces written before them stay as they were). From this one list
 * come the record's fields, the text form's writer and reader, and the
 * binary form's (lib/trace/trace-write.c, trace-load.c). */
#define PREEMPT_TRACE_FACTS(X)                                                                                        \
    X(run, "run", FIRST)                                                                                              \
    X(step_ms, "step-ms", FIRST)                                                                                      \
    X(step_dev_ms, "step-dev-ms", SET)                                                                                \
    X(save_ms, "save-ms", FIRST)                                                                                      \
    X(agree_ms, "agree-ms", FIRST)                                                                                    \
    X(persist_left_ms, "persist-left-ms", SET)                                                                        \
    X(slow_step, "slow-step", SET)                                                                                    \
    X(slow_at_ms, "slow-at-ms", SET)                                                                                  \
    X(slow_step_ms, "slow-step-ms", SET)

/* Wildcard bits of a parsed expectation. */
#define PREEMPT_WILD_TO 0x1u       /* "-> *" */
#define PREEMPT_WILD_FX 0x2u       /* "fx=*" */
#define PREEMPT_WILD_ARG(k) (0x100u << (k)) /* "name:*" for effect k */

struct preempt_trace_rec {
    uint64_t seq;                 /* 1-based */
    struct preempt_event ev;      /* ev.now_ms is the record's t */
#define PREEMPT_TRACE_FACT_FIELD_(field, key, shown) uint64_t field;
    PREEMPT_TRACE_FACTS(PREEMPT_TRACE_FACT_FIELD_)
#undef PREEMPT_TRACE_FACT_FIELD_
    enum preempt_state from;
    enum preempt_state to;        /* equal to from unless the verdict is a transition */
    enum preempt_verdict verdict;
    uint8_t n_fx;
    struct preempt_fx fx[PREEMPT_FX_MAX];
    unsigned wild;                /* PREEMPT_WILD_* bits; 0 in recorded traces */
};

/* The configuration defaults: grace 0, bound 30 s, agreement timeout 10 s,
 * exit margin 500 ms, measured planning, second notice ignored. */
struct preempt_config_facts preempt_config_defaults_(void);

/* The facts a record carries, with the run's configuration. */
struct preempt_facts preempt_trace_facts_(const struct preempt_trace_rec *r, const struct preempt_config_facts *cfg);

/* Fills a record from a step of the machine. */
void preempt_trace_from_step_(struct preempt_trace_rec *r, uint64_t seq, const struct preempt_event *ev,
                              const struct preempt_facts *f, enum preempt_state from,
                              const struct preempt_step *st);

/* Formats the config line / a record line (without a newline). A record
 * prints only the facts that differ from *prev (all of them when prev is
 * NULL). Returns the length, or -ENOSPC when buf is too small. */
int preempt_trace_format_config_(char *buf, size_t size, const struct preempt_config_facts *cfg);
int preempt_trace_format_(char *buf, size_t size, const struct preempt_trace_rec *r,
                          const struct preempt_trace_rec *prev);

/* A reader of the text form, line by line. */
struct preempt_text_reader {
    unsigned line;                /* number of the last line read */
    uint64_t seq;                 /* records read */
    bool have_config;
    struct preempt_config_facts cfg;
    struct preempt_trace_rec last; /* sticky facts */
    char err[160];                /* why the last call failed */
};

enum preempt_text_line {
    PREEMPT_TEXT_BLANK,   /* empty or a comment */
    PREEMPT_TEXT_CONFIG,  /* rd->cfg was set */
    PREEMPT_TEXT_RECORD,  /* *ret_rec was filled */
};

void preempt_text_reader_init_(struct preempt_text_reader *rd);

/* Parses one line (NUL-terminated, without its newline). Returns a
 * preempt_text_line, or -EINVAL with a message in rd->err naming the line. */
int preempt_text_parse_line_(struct preempt_text_reader *rd, const char *line, struct preempt_trace_rec *ret_rec);

/* Does `actual` satisfy the expectation `expect` (honouring its wildcards)?
 * The event and facts are inputs and are not compared. */
bool preempt_trace_outcome_matches_(const struct preempt_trace_rec *expect, const struct preempt_trace_rec *actual);

/* Formats just the outcome ("idle -> own-signal fx=..."), for messages. */
int preempt_trace_format_outcome_(char *buf, size_t size, const struct preempt_trace_rec *r);

/* Replays one record through the pure core: steps *core with the record's
 * event and facts, fills *ret_actual with what the core did, and returns
 * whether it matches the record (state before included). */
bool preempt_replay_record_(struct preempt_core *core, const struct preempt_config_facts *cfg,
                            const struct preempt_trace_rec *expect, struct preempt_trace_rec *ret_actual);

#endif /* PREEMPT_TRACE_H */
