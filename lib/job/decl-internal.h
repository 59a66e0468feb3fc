/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/decl-internal.h: the small declared machines around the handler's.
 *
 * Besides the handler's machine (fsm/), the job coordinator (lib/job/coord.c)
 * keeps a few pieces of state whose values decide what it sends next:
 * where this worker's notice record stands (pub-internal.h), its driver
 * claim (claim-internal.h), its membership (membership-internal.h) and the
 * current episode (episode-internal.h); start-up, how a phase ends
 * (phase-internal.h); preempt-launch, what its end says
 * (outcome-internal.h). Each is one table of rows (from,
 * input, to, action), declared with X-macros beside the enums it defines,
 * stepped by one pure function, and drawn and checked by `fsmdump
 * --machine NAME` (preempt_decl_check_: every state reachable from the
 * first one, and from every state the first one or a terminal one, which
 * no row leaves). Every (state, input) pair is decided: a row, or declared
 * ignored with its reason (the IGNORED list: nothing changes and nothing
 * is done), or a terminal state's (an ended machine ignores what comes). A
 * pair that is neither fails the check, so a missing row cannot pass for
 * an intended one.
 * The coordinator logs each transition of its machines (debug level) and
 * preempt-launch each change of its outcome (a JSON line); start-up's
 * phase-end is not logged (the phase's own message says how it ended).
 * The owner runs the action a step returns; the table is the only place
 * that decides it. */
#ifndef PREEMPT_DECL_INTERNAL_H
#define PREEMPT_DECL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct preempt_decl_row {
    unsigned char from, input, to, action;
};

/* Pairs declared ignored: input in each state of the bits (1u << state),
 * for the reason why. */
struct preempt_decl_ignore {
    unsigned char input;
    unsigned states;
    const char *why;
};

struct preempt_decl {
    const char *name; /* fsmdump --machine NAME */
    const char *what; /* one line: what it tracks */
    unsigned n_states, n_inputs, n_actions;
    const char *const *state_names, *const *state_whats;
    const char *const *input_names, *const *input_whats;
    const char *const *action_names;
    const struct preempt_decl_row *rows;
    size_t n_rows;
    const struct preempt_decl_ignore *ignored;
    size_t n_ignored;
    unsigned terminal; /* a bit per state that ends the machine (no row leaves it) */
};

/* One step: *state moves as the first row for (*state, input) says, and
 * its action is returned; *listed says whether a row matched (if not,
 * nothing changes and the action is 0, "none"). Pure. */
unsigned preempt_decl_step_(const struct preempt_decl *m, unsigned *state, unsigned input, bool *listed);

/* Why the machine ignores input in state: the declared reason, or a
 * terminal state's; NULL when a row decides the pair, or nothing does (a
 * gap the check reports). Pure. */
const char *preempt_decl_why_ignored_(const struct preempt_decl *m, unsigned state, unsigned input);

/* Checks a machine's table: reachability (above), no row leaving a
 * terminal state for another (one may still answer inputs where it is:
 * offer's made joins), no pair listed twice (the first row would hide the
 * second), and every pair decided: each pair that is no row and no
 * terminal state's declared ignored, once, with a reason, and no declared
 * pair a row or a terminal state's. Each problem is told to report (a
 * line of text) and counted; returns the count. Pure but for report. */
unsigned preempt_decl_check_(const struct preempt_decl *m, void (*report)(const char *problem, void *arg), void *arg);

/* A check's problem (preempt_decl_check_, preempt_link_check_): formatted
 * into the char array line, told to report (NULL: nobody) with arg, and
 * counted: the expression is 1. */
#define PREEMPT_CHECK_PROBLEM(line, report, arg, ...)                                                               \
    (snprintf(line, sizeof(line), __VA_ARGS__), (report) ? (report)(line, arg) : (void)0, 1u)

/* Who is told each transition of a declared machine: a trace writer (the
 * handler's text trace: "decl" lines, which preempt-replay steps again
 * through the table). fn NULL: nobody. instance: which of the machine's
 * instances stepped: 0 for a machine a worker has one of; a round's
 * decision machine its round + 1; a start-up phase's machines (phase-end,
 * offer, shape, await) the phase's number (struct preempt_coord_cfg's
 * phase_no), so that each instance is replayed from its first state. */
struct preempt_decl_tracer {
    void (*fn)(const struct preempt_decl *m, unsigned instance, unsigned from, unsigned input, unsigned to,
               unsigned action, void *arg);
    void *arg;
};

/* preempt_decl_step_(), and a row that matched told to tr (NULL: nobody). */
unsigned preempt_decl_step_traced_(const struct preempt_decl *m, unsigned instance, unsigned *state, unsigned input,
                                   bool *listed, const struct preempt_decl_tracer *tr);
/* The machine of preempt_decls_ named name, and the index of a state,
 * input or action by name (-1: none). */
const struct preempt_decl *preempt_decl_find_(const char *name);
int preempt_decl_state_index_(const struct preempt_decl *m, const char *name);
int preempt_decl_input_index_(const struct preempt_decl *m, const char *name);
int preempt_decl_action_index_(const struct preempt_decl *m, const char *name);

/* A state's, input's or action's name, or "?" out of range. */
const char *preempt_decl_state_(const struct preempt_decl *m, unsigned s);
const char *preempt_decl_input_(const struct preempt_decl *m, unsigned in);
const char *preempt_decl_action_(const struct preempt_decl *m, unsigned a);

/* The declared machines, for fsmdump and the tests: NULL-terminated. */
extern const struct preempt_decl *const preempt_decls_[];

/* A machine is declared with five X-macro lists, each taking the callback
 * X and the enums' prefix P (e.g. PREEMPT_PUB_): STATES and INPUTS as
 * X(P, ID, "name", "what"), ACTIONS as X(P, ID, "name", "what") with
 * action 0 "none", TABLE as X(P, FROM, INPUT, TO, ACTION), and IGNORED as
 * X(P, INPUT, "why", STATE...) (one to eight states). */
#define PREEMPT_DECL_ID_(P, id, ...) P##id,
#define PREEMPT_DECL_IN_ID_(P, id, ...) P##IN_##id,
#define PREEMPT_DECL_DO_ID_(P, id, ...) P##DO_##id,
#define PREEMPT_DECL_NAME_(P, id, name, what) name,
#define PREEMPT_DECL_WHAT_(P, id, name, what) what,
#define PREEMPT_DECL_ROW_(P, from, in, to, act) { P##from, P##IN_##in, P##to, P##DO_##act },
#define PREEMPT_DECL_N_(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))
#define PREEMPT_DECL_B1_(P, a) (1u << P##a)
#define PREEMPT_DECL_B2_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B1_(P, __VA_ARGS__))
#define PREEMPT_DECL_B3_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B2_(P, __VA_ARGS__))
#define PREEMPT_DECL_B4_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B3_(P, __VA_ARGS__))
#define PREEMPT_DECL_B5_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B4_(P, __VA_ARGS__))
#define PREEMPT_DECL_B6_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B5_(P, __VA_ARGS__))
#define PREEMPT_DECL_B7_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B6_(P, __VA_ARGS__))
#define PREEMPT_DECL_B8_(P, a, ...) (PREEMPT_DECL_B1_(P, a) | PREEMPT_DECL_B7_(P, __VA_ARGS__))
#define PREEMPT_DECL_NB_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) PREEMPT_DECL_B##n##_
#define PREEMPT_DECL_IGN_(P, in, why, ...)                                                                             \
    { P##IN_##in, PREEMPT_DECL_NB_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)(P, __VA_ARGS__), why },

/* Its enums (in its header): enum preempt_TAG_state (P<ID>, P_COUNT),
 * enum preempt_TAG_input (P IN_<ID>), enum preempt_TAG_action (P DO_<ID>). */
#define PREEMPT_DECL_ENUMS(tag, P, STATES, INPUTS, ACTIONS)                                                          \
    enum preempt_##tag##_state { STATES(PREEMPT_DECL_ID_, P) P##_COUNT };                                            \
    enum preempt_##tag##_input { INPUTS(PREEMPT_DECL_IN_ID_, P) P##IN__COUNT };                                      \
    enum preempt_##tag##_action { ACTIONS(PREEMPT_DECL_DO_ID_, P) P##DO__COUNT }

/* Its definition (in the .c of its table): names, texts, rows and ignored
 * pairs from the lists, and TERMINAL, the bits of its terminal states
 * (1u << state; 0: none). */
#define PREEMPT_DECL_DEFINE(var, label, text, P, STATES, INPUTS, ACTIONS, TABLE, IGNORED, TERMINAL)                  \
    static const char *const var##_sn[] = { STATES(PREEMPT_DECL_NAME_, P) };                                         \
    static const char *const var##_sw[] = { STATES(PREEMPT_DECL_WHAT_, P) };                                         \
    static const char *const var##_in[] = { INPUTS(PREEMPT_DECL_NAME_, P) };                                         \
    static const char *const var##_iw[] = { INPUTS(PREEMPT_DECL_WHAT_, P) };                                         \
    static const char *const var##_an[] = { ACTIONS(PREEMPT_DECL_NAME_, P) };                                        \
    static const struct preempt_decl_row var##_rows[] = { TABLE(PREEMPT_DECL_ROW_, P) };                             \
    static const struct preempt_decl_ignore var##_ig[] = { IGNORED(PREEMPT_DECL_IGN_, P) };                          \
    const struct preempt_decl var = { label,           text,           PREEMPT_DECL_N_(var##_sn),                    \
                                      PREEMPT_DECL_N_(var##_in), PREEMPT_DECL_N_(var##_an), var##_sn, var##_sw,      \
                                      var##_in,        var##_iw,       var##_an,                                     \
                                      var##_rows,      PREEMPT_DECL_N_(var##_rows), var##_ig,                        \
                                      PREEMPT_DECL_N_(var##_ig), (TERMINAL) }

#endif
