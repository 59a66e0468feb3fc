/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_fsm.h: the pure core of libpreempt.
 *
 * Everything here is derived from the .def files in this directory and the
 * transition table in preempt_fsm.c. The step function is pure: no I/O, no
 * clock reads, no allocation, no globals other than const tables. The shell
 * (lib/) stamps time on events, runs the effects and turns their outcomes
 * back into events. This library links none of libevent, libcurl or nanopb. */
#ifndef PREEMPT_FSM_H
#define PREEMPT_FSM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preempt.h"

/* ---- enums, one per .def file ---------------------------------------- */

enum preempt_event_kind {
#define PREEMPT_EVENT(id, member, name, p1, p2, what) PREEMPT_EV_##id,
#include "preempt_events.def"
#undef PREEMPT_EVENT
    PREEMPT_EV__COUNT
};

enum preempt_fx_kind {
#define PREEMPT_EFFECT(id, name, arg, who, what) PREEMPT_FX_##id,
#include "preempt_effects.def"
#undef PREEMPT_EFFECT
    PREEMPT_FX__COUNT
};

enum preempt_source {
#define PREEMPT_SOURCE(id, name, what) PREEMPT_SOURCE_##id,
#include "preempt_sources.def"
#undef PREEMPT_SOURCE
    PREEMPT_SOURCE__COUNT
};

enum preempt_verdict {
    PREEMPT_VERDICT_TRANSITION,
    PREEMPT_VERDICT_IGNORED,
    PREEMPT_VERDICT_ILLEGAL,
    PREEMPT_VERDICT__COUNT
};

/* What an effect's argument means (column ARG of preempt_effects.def). */
enum preempt_arg_kind {
    PREEMPT_ARG_NONE,
    PREEMPT_ARG_STEP,
    PREEMPT_ARG_TIME,
    PREEMPT_ARG_CODE,
    PREEMPT_ARG_EXIT,
    PREEMPT_ARG__COUNT
};

/* Who runs an effect (column WHO of preempt_effects.def). */
enum preempt_fx_who {
    PREEMPT_WHO_JOB,   /* the job's coordinator (etcd's, or the local one) */
    PREEMPT_WHO_SHELL, /* the worker's shell */
    PREEMPT_WHO_BOTH,  /* the coordinator, then the shell */
    PREEMPT_WHO__COUNT
};

/* The type of an event parameter (PARAM(type, field) in preempt_events.def). */
enum preempt_param_type {
    PREEMPT_PT_none,
    PREEMPT_PT_u64,
    PREEMPT_PT_i64,
    PREEMPT_PT_src,
};

/* ---- events ------------------------------------------------------------ */

#define PREEMPT_PT_CTYPE_none uint8_t
#define PREEMPT_PT_CTYPE_u64 uint64_t
#define PREEMPT_PT_CTYPE_i64 int64_t
#define PREEMPT_PT_CTYPE_src enum preempt_source
#define PREEMPT_PARAM_MEMBER(type, field) PREEMPT_PT_CTYPE_##type field;

union preempt_event_payload {
#define PARAM(type, field) PREEMPT_PARAM_MEMBER(type, field)
#define PREEMPT_EVENT(id, member, name, p1, p2, what) struct { p1 p2 } member;
#include "preempt_events.def"
#undef PREEMPT_EVENT
#undef PARAM
};

/* A typed event record: kind, monotonic time stamped by the shell, payload. */
struct preempt_event {
    enum preempt_event_kind kind;
    uint64_t now_ms;
    union preempt_event_payload u;
};

/* One parameter of an event kind, for generic encoders and parsers. */
struct preempt_param_desc {
    const char *name;              /* NULL: the kind has no such parameter */
    enum preempt_param_type type;
    size_t offset;                 /* into struct preempt_event */
};

#define PREEMPT_EVENT_PARAMS 2

/* ---- facts: the shell's read-only snapshot ------------------------------ */

struct preempt_config_facts {
    uint64_t grace_ms;          /* 0: no training after the first save */
    uint64_t bound_ms;          /* deadline used when a notice gives none and grace is 0 */
    uint64_t agree_timeout_ms;  /* bound on one agreement round */
    uint64_t margin_ms;         /* exit slack kept before the deadline */
    enum preempt_plan plan;
    enum preempt_second second;
    uint64_t workers;           /* the job's workers (1: local mode) */
    bool in_place;              /* survivors stay in place (a job's stay_in_place) */
};

struct preempt_facts {
    struct preempt_config_facts cfg; /* constant during a run */
    uint64_t run;       /* steps this worker completed (the run counter) */
    uint64_t step_ms;   /* measured mean step time */
    uint64_t step_dev_ms; /* measured mean deviation of the step time */
    uint64_t save_ms;   /* measured save time (0: none measured yet) */
    uint64_t agree_ms;  /* measured agreement round trip */
    uint64_t persist_left_ms; /* the checkpoint persisting: the time its rest takes to be durable, estimated
                                 at the rate it has persisted so far (0: none persists, or not known yet) */
    uint64_t slow_step;    /* the job's slowest worker, as the last commit named it: at slow_at_ms every */
    uint64_t slow_at_ms;   /*   worker had reached at least slow_step, and none trained slower than */
    uint64_t slow_step_ms; /*   slow_step_ms a step (0: not known) */
};

/* ---- the core's own context: the state and what the machine remembers -- */

struct preempt_core {
    enum preempt_state state;
    uint8_t round;        /* 0: first save; 1: final save of a grace period */
    bool driver;          /* this worker holds the driver claim */
    bool noticed;         /* this worker received its own notice */
    bool committed;       /* a checkpoint of this preemption is committed */
    bool withdrawn;       /* the notices were withdrawn: return to idle after the save */
    bool shard_out;       /* this worker reported its shard of the round; the decision is not known */
    bool abort_proposed;  /* this worker proposed the round's abort; the decision is not known */
    bool peer_gone;       /* a peer's membership ended (peer-lost) in this preemption: no final round can complete */
    uint32_t timer_gen;   /* generation of the last armed timer */
    uint64_t save_step;   /* S: the agreed save step of the current round */
    bool last;            /* the round's save at S ends the preemption (the agreed or the decision record's word) */
    bool have_step;       /* the round's save step is known (save_step) */
    uint64_t cap;         /* the step this worker proposed (claim, final round, raise) and does not pass
                             before the round's step reaches it; UINT64_MAX: none */
    uint64_t raised_to;   /* a raise that came while this worker's save ran: the new S (0: none) */
    bool raised_last;     /* its last flag */
    uint64_t old_step;    /* the step a raise moved this worker off (its copy there is discarded) */
    uint64_t deadline_ms; /* the earliest known deadline, 0 when idle */
    uint64_t agree_by_ms; /* the bound of the current agreement round (0: not open yet,
                             this worker's own notice awaits the claim's answer) */
    uint64_t decide_by_ms; /* with abort_proposed: how long the decision is awaited */
    int64_t err_code;     /* the error being propagated, if any */
};

/* ---- a step's result ---------------------------------------------------- */

#define PREEMPT_FX_MAX 5

struct preempt_fx {
    enum preempt_fx_kind kind;
    int64_t arg;
};

struct preempt_step {
    enum preempt_verdict verdict;
    struct preempt_core next;  /* equal to the input for ignored and illegal events */
    int row;                   /* index of the matched row, or -1 */
    uint8_t n_fx;
    struct preempt_fx fx[PREEMPT_FX_MAX]; /* executed in this order by the shell */
};

/* ---- the table ---------------------------------------------------------- */

enum preempt_guard {
#define PREEMPT_GUARD(id, name, what) PREEMPT_GUARD_##id,
#include "preempt_guards.def"
#undef PREEMPT_GUARD
    PREEMPT_GUARD__COUNT
};

/* How a row computes an effect's argument. Most kinds have one rule
 * (PREEMPT_HOW_DEFAULT); exit and publish-error say which case they are. */
enum preempt_fx_how {
    PREEMPT_HOW_DEFAULT,
    PREEMPT_HOW_DONE,      /* exit: done */
    PREEMPT_HOW_SAVED,     /* exit: saved */
    PREEMPT_HOW_ABORT,     /* exit: saved if a checkpoint of this preemption is committed, else not-saved */
    PREEMPT_HOW_ERROR,     /* exit: error (the propagated code) */
    PREEMPT_HOW_EVENT,     /* publish-error: the event's code or status */
    PREEMPT_HOW_PROTOCOL,  /* publish-error: -EPROTO, a protocol violation */
    PREEMPT_HOW__COUNT
};

struct preempt_fx_spec {
    enum preempt_fx_kind kind;
    enum preempt_fx_how how;
};

struct preempt_row {
    enum preempt_state from;
    enum preempt_event_kind on;
    enum preempt_guard guard;     /* PREEMPT_GUARD_ALWAYS: no guard */
    enum preempt_state to;
    uint8_t n_fx;
    struct preempt_fx_spec fx[PREEMPT_FX_MAX];
};

struct preempt_ignore {
    enum preempt_state state;
    enum preempt_event_kind on;
    const char *why;
};

struct preempt_machine_def {
    const struct preempt_row *rows;
    size_t n_rows;
    const struct preempt_ignore *ignored;
    size_t n_ignored;
    enum preempt_state initial;
    enum preempt_state final;
};

/* The machine (the one definition). */
const struct preempt_machine_def *preempt_fsm_def_(void);

/* The initial context of a machine (state idle, nothing known). */
struct preempt_core preempt_fsm_init_(void);

/* The pure step: state + event + facts -> verdict, next context, effects. */
struct preempt_step preempt_fsm_step_(const struct preempt_core *cur, const struct preempt_event *ev,
                                      const struct preempt_facts *facts);

/* The verdict a pair gets when no row's guard holds: IGNORED when listed in
 * the ignored table, else ILLEGAL. Sets *ret_why to the ignored reason. */
enum preempt_verdict preempt_fsm_fallback_(enum preempt_state s, enum preempt_event_kind e, const char **ret_why);

/* Why a step that ends in exit ends there, in words for an operator's log
 * ("no step was agreed within the round's bound", ...): from the state it
 * left, the event and the context it reached. Pure; never NULL. */
const char *preempt_fsm_exit_why_(enum preempt_state from, const struct preempt_event *ev,
                                  const struct preempt_core *next);

/* Planning: true when the final round has to start now so that the final
 * save is committed before the deadline (see preempt_fsm.c for the rule). */
bool preempt_plan_final_due_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms);

/* This worker's judgement that a save at @p step ends its preemption: the
 * final round's, any round's without a grace period, or a first save after
 * whose estimated commit (the steps up to it, the save, a round trip) the
 * final round would be due. It is an opinion: a proposal of the save step
 * carries it (the driver's, or a raise's, which keeps a "last" it raises),
 * and the agreed record says "last" when it did (docs/protocol.md, "The last
 * save"); STEP_AGREED then carries the record's word, which every machine
 * follows. In local mode the worker's proposal is the record. */
bool preempt_plan_last_(const struct preempt_core *c, const struct preempt_facts *f, uint64_t now_ms, uint64_t step);

/* A notice came while this worker's checkpoint at save_step persists (a
 * periodic one, typically, training on to f->run): true when a new round
 * should supersede it (the copy goes; the round's step is raised to this
 * worker's step plus the lead), false when it should be let finish and
 * become the preemption's checkpoint. It supersedes only when a new save
 * fits before the deadline (as preempt_plan_final_due_ judges), and then
 * when the persist's rest (f->persist_left_ms) and the commit's round trip
 * would not end before the deadline less the margin, or when, as the
 * preemption's last save (no grace period), it would lose more steps than
 * the lead a new round needs anyway. Without a deadline, a measured save
 * or an estimate of the persist, it lets it finish. */
bool preempt_plan_supersede_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms,
                             uint64_t save_step);

/* Whether the round's save ends this worker's preemption: the agreed record
 * said "last", and the notices stand (a withdrawn round's save returns to
 * idle). The coordinator ends the worker's membership with the report of
 * such a save (docs/protocol.md, "Traffic"). */
bool preempt_fsm_save_is_last_(const struct preempt_core *c);

/* Whether an effect proposes the round's save step (claim-driver,
 * propose-step, request-final): its argument is the step, the worker does
 * not pass it before the round's step comes back (preempt_core.cap), and
 * the agreement time runs from it. */
bool preempt_fsm_fx_proposes_(enum preempt_fx_kind kind);

/* The "last" flag a coordination effect carries (false for the others): for
 * claim-driver, propose-step and request-final this worker's opinion
 * (preempt_plan_last_ at the step proposed), for report-shard whether the save
 * ends this worker's preemption: its opinion, its save done and measured,
 * that no time is left for another round once the commit is decided (any
 * such opinion makes the decision record say "last" for every worker), or
 * else preempt_fsm_save_is_last_, except for a checkpoint that persisted
 * while this worker trained on past its step (a periodic one a notice met):
 * with a deadline and room for another round, its commit is followed by
 * the final round at the step the job stops at, and no step is lost. Every
 * shell calls this one function. */
bool preempt_fsm_fx_last_(const struct preempt_core *c, const struct preempt_facts *f, const struct preempt_fx *fx,
                          uint64_t now_ms);

/* The stop step a report-shard effect carries (0 for the others, and for a
 * save that does not end this worker's preemption): where this worker
 * would have every worker stop training once the commit is decided. A
 * worker waiting at S (a synchronous save) or done training stops where it
 * is; one training on while its checkpoint persists names its step plus the
 * lead for three agreement times (the decision comes three round trips
 * after the last report), at least PREEMPT_STOP_LEAD_MIN_MS: a worker that
 * learns the decision only after the stop step exits at once, and with a
 * collective in every step a peer that stopped leaves it inside the next
 * one, so the lead covers a slow round trip, not the mean one. The
 * deadline still caps it. The decision record names the reports' highest
 * (stopping). */
#define PREEMPT_STOP_LEAD_MIN_MS 500
uint64_t preempt_fsm_fx_stop_(const struct preempt_core *c, const struct preempt_facts *f, const struct preempt_fx *fx,
                              uint64_t now_ms);

/* save_every_steps: a periodic checkpoint is due at the boundary of @p run
 * when the run has reached a multiple of @p every past @p last, the newer
 * of the last committed step and the run of the last periodic request.
 * A multiple reached while a round was still under way is not lost: the
 * checkpoint is due at the first boundary after the round ends. 0 every:
 * never. */
bool preempt_plan_periodic_due_(uint64_t run, uint64_t every, uint64_t last);

/* The lead: how many steps past its current one a worker proposes the save
 * step, so that the proposal reaches every worker before it gets there
 * (docs/protocol.md, "Agreement without waits").
 * 1 in local mode; else PREEMPT_LEAD_MIN plus the agreement time in steps
 * (PREEMPT_AGREE_GUESS_MS before one is measured), and no further than the
 * deadline allows after a save (at least 1). */
#define PREEMPT_LEAD_MIN 3
#define PREEMPT_AGREE_GUESS_MS 50
uint64_t preempt_plan_lead_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms);

/* The final round's allowance, in steps, for the workers' drift through a
 * grace period: a PREEMPT_DRIFT_SHARE-th of the steps this worker trained
 * since the first save's step (c->save_step), 0 without a grace period or
 * in local mode. The driver opens the final round that many steps earlier
 * (the final-due guard) and proposes its step plus the lead plus the drift
 * (request-final), so that the step is the same at its own pace and peers
 * ahead of it learn it before they get there (docs/protocol.md, "The last
 * save"). */
#define PREEMPT_DRIFT_SHARE 4
uint64_t preempt_plan_drift_(const struct preempt_core *c, const struct preempt_facts *f);

/* How many steps the job's slowest worker may be behind this one at
 * now_ms: f->run against the least step every worker has reached, the
 * facts' slow_step plus the steps at slow_step_ms since slow_at_ms (the
 * last commit's, whose reports named each worker's step and pace). 0 when
 * not known, in local mode, without a grace period, or when none is
 * behind. */
uint64_t preempt_plan_behind_(const struct preempt_facts *f, uint64_t now_ms);

/* The final-due guard's planner: the final round must start now so that
 * this worker (the driver) and the job's slowest worker both reach its step
 * (this worker's step plus the lead plus the drift allowance) and save
 * before the deadline less the margin. Without a slower worker behind, the
 * plain rule (preempt_plan_final_due_) the drift allowance's steps later. */
bool preempt_plan_final_due_job_(const struct preempt_core *c, const struct preempt_facts *f, uint64_t now_ms,
                                 uint64_t deadline_ms);

/* Folds one measured step time @p d_us into the moving mean and mean
 * deviation the planner uses (both 1/4 gain; the first step sets the mean
 * and half of it as the deviation, as RFC 6298 does for round trips). */
void preempt_step_stats_(uint64_t *mean_us, uint64_t *dev_us, uint64_t d_us);

/* The same, and the facts' step_ms and step_dev_ms (rounded up to whole
 * ms) from them: what every shell does with a measured step. */
void preempt_facts_measure_step_(struct preempt_facts *f, uint64_t *mean_us, uint64_t *dev_us, uint64_t d_us);

/* What a save's figure is, as the planner needs to know it:
 * - AWAITED: this worker's save that the trainer waited for (a
 *   synchronous save; a two-phase save whose persist ran back to back, as
 *   a final save's does; a restored manifest's such save): what a final
 *   save takes here;
 * - PACED: this worker's two-phase save whose persist went one budget per
 *   step boundary while training went on (its time from the snapshot's
 *   start to the commit counts the steps between, so it is longer than
 *   the same save awaited);
 * - JOB: the job's figure, the slowest save the last decision record
 *   names (the slowest of every worker's own figure, below): it replaces
 *   the job's previous one, so a job whose workers measured an awaited
 *   save after a paced one plans with the awaited. */
enum preempt_save_kind { PREEMPT_SAVE_AWAITED, PREEMPT_SAVE_PACED, PREEMPT_SAVE_JOB };

/* The saves a shell measured: the longest awaited and paced saves of its
 * own, and the job's last figure. */
struct preempt_save_times {
    uint64_t awaited_ms, paced_ms, job_ms;
};

/* This worker's own figure, the one its shard reports carry: its longest
 * awaited save, or, before one was measured, its longest paced one (an
 * estimate that errs long: training time given up, never a deadline
 * missed). 0: none measured. Never the job's figure: a report of it would
 * feed every decision's figure back into the next. */
uint64_t preempt_save_own_(const struct preempt_save_times *t);

/* A save of kind took ms: the facts' save_ms, what the planner expects a
 * final save to take, becomes the longer of this worker's own figure and
 * the job's. */
void preempt_facts_measure_save_(struct preempt_facts *f, struct preempt_save_times *t, uint64_t ms,
                                 enum preempt_save_kind kind);

/* What the trainer does in context c after @p run steps: train, save
 * (save_asked: a begin-save is pending), wait for the loop, or exit
 * (preempt_action()'s rule). While the job agrees, training goes on; a
 * worker that proposed a step (c->cap) waits there, and only there, until
 * the round's step reaches it. alone: the job has one worker (no peer can
 * be waiting in a collective for this worker's next step). */
enum preempt_action preempt_action_of_(const struct preempt_core *c, uint64_t run, bool save_asked, bool alone);

/* ---- names (preempt_names.c) ------------------------------------------- */

const char *preempt_event_to_string_(enum preempt_event_kind e);
int preempt_event_from_string_(const char *name);
/* The state named name (>= 0), or -EINVAL. */
int preempt_state_from_string_(const char *name);
const char *preempt_event_what_(enum preempt_event_kind e);
const struct preempt_param_desc *preempt_event_params_(enum preempt_event_kind e); /* [PREEMPT_EVENT_PARAMS] */
const char *preempt_fx_to_string_(enum preempt_fx_kind f);
int preempt_fx_from_string_(const char *name);
enum preempt_arg_kind preempt_fx_arg_kind_(enum preempt_fx_kind f);
enum preempt_fx_who preempt_fx_who_(enum preempt_fx_kind f); /* SHELL out of range */
const char *preempt_source_to_string_(enum preempt_source s);
int preempt_source_from_string_(const char *name);
const char *preempt_exit_to_string_(enum preempt_exit x);
int preempt_exit_from_string_(const char *name);
const char *preempt_verdict_to_string_(enum preempt_verdict v);
int preempt_verdict_from_string_(const char *name);
const char *preempt_guard_to_string_(enum preempt_guard g);
const char *preempt_how_to_string_(enum preempt_fx_how h); /* "" for the default */
const char *preempt_plan_to_string_(enum preempt_plan p);
int preempt_plan_from_string_(const char *name);
const char *preempt_second_to_string_(enum preempt_second s);
int preempt_second_from_string_(const char *name);
enum preempt_timer_kind { PREEMPT_TIMER_NONE, PREEMPT_TIMER_AGREE, PREEMPT_TIMER_DEADLINE };
enum preempt_timer_kind preempt_state_timer_(enum preempt_state s);

/* ---- table checks (preempt_fsm_check.c) ---------------------------------- */

/* Checks the table: every pair decided for all guard outcomes, no dead rows,
 * every state reachable from the initial one, the final state reachable from
 * every state, the timer armed on entry to timed states and disarmed on
 * leaving them, exactly one exit effect on rows into the final state.
 * Calls report(msg, arg) for each problem; returns the number of problems. */
unsigned preempt_fsm_check_(void (*report)(const char *msg, void *arg), void *arg);
/* The same checks on any table (the tests feed it broken ones). */
unsigned preempt_fsm_check_def_(const struct preempt_machine_def *m, void (*report)(const char *msg, void *arg),
                                void *arg);

#endif /* PREEMPT_FSM_H */
