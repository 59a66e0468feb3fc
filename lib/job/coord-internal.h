/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-internal.h: the multi-worker protocol (docs/protocol.md) over etcd.
 * docs/protocol.md describes the key layout and the rounds; this is its
 * implementation. It turns the machine's coordination effects into etcd
 * requests and the job's records (read through one prefix watch) into the
 * machine's events. It reads the records through the job's view
 * (view-internal.h), so that a re-read after a compaction or a reconnect
 * posts only what is new.
 *
 * Start-up (preempt_coord_join_begin_) takes a lease, joins the job's
 * current incarnation (or opens the next one), waits for every worker to
 * join and agrees on the newest checkpoint step every worker holds; the
 * restore barrier follows the restore. Each phase is bounded
 * (join_timeout_ms) and runs on a base of the handler's choosing. */
#ifndef PREEMPT_COORD_INTERNAL_H
#define PREEMPT_COORD_INTERNAL_H

#include "claim-internal.h" /* struct preempt_claim_answer */
#include "lost-internal.h"  /* struct preempt_lost_read */
#include "answer-internal.h"
#include "decl-internal.h"
#include "port/port.h"
#include "records/records.h"
#include "preempt.h" /* PREEMPT_MAX_WORKERS */
#include "preempt_fsm.h"

#define PREEMPT_MAX_JOB 128

struct preempt_coord;
struct preempt_coord_in;
struct preempt_coord_out;
struct preempt_view;
struct preempt_view_in;
struct preempt_view_ev;

struct preempt_coord_cfg {
    struct preempt_etcd_opts etcd;
    const char *job;           /* [A-Za-z0-9._-]{1,128} */
    const char *launch;        /* the launch's identity, [A-Za-z0-9._:-]{1,64}; NULL or "": unknown */
    unsigned worker, workers;  /* 0 <= worker < workers */
    unsigned lease_ttl_s;      /* membership lease; 2..3600 */
    uint64_t join_timeout_ms;  /* bound on start-up */
    uint64_t give_up_ms;       /* a write retried this long, then coord-failed */
    bool start_over;           /* start-up: restore the step every worker holds even when some hold newer
                                  ones (preempt_coord_plan_); theirs are set aside */
    struct preempt_decl_tracer decl_trace; /* told every transition of start-up's and the coordinator's declared
                                              machines (decl-internal.h); fn NULL: nobody */
    unsigned phase_no;         /* start-up: the number a phase begun now gives its machines in the trace (the
                                  caller counts its phases from 1; decl-internal.h's instance) */
    long pid;                  /* this worker's identity, as its member record names it: the shell's */
    const char *host;          /* getpid() and gethostname() (NULL, or a name with ' ' or '=': "-") */
};

/* What start-up agreed. */
#define PREEMPT_MAX_LAUNCH 64
#define PREEMPT_MAX_HOST 64
#define PREEMPT_MEMBER_MAX PREEMPT_VALUE_MAX /* a member record: identity and up to 64 offered steps */

/* A launch identity: 1-64 of [A-Za-z0-9._:-]. */
bool preempt_coord_launch_ok_(const char *launch);

struct preempt_coord_join {
    struct preempt_value member; /* this worker's member record (alive/<w>) */
    uint64_t incarnation;
    int64_t lease;
    bool have_step;            /* false: no step every worker holds: start fresh */
    uint64_t step;             /* the checkpoint step every worker restores */
    bool over;                 /* the job started over: newer checkpoints go aside */
};

/* A checkpoint this worker committed locally without learning the job's
 * decision on it (it stopped first, or etcd was unreachable). Start-up
 * reads the round's decision record, or writes "aborted" when there is
 * none (create-if-absent), so that every worker follows the same record. */
struct preempt_coord_pending {
    uint64_t step;
    const char *key; /* the decision record's key, as the checkpoint names it */
    int decision;    /* out: 1 committed, -1 aborted, 0 unknown (not this job's store, or
                        a store that went back in time: the record cannot be trusted) */
};

/* A start-up phase in progress (joining, the restore barrier). It runs on
 * the base it was begun on (a private one for a blocking start-up, the
 * handler's own for an asynchronous one) and reports once through done,
 * from that base's loop and never inside the call that began it, after
 * releasing everything it held (its lease given back when it failed or
 * ended the membership). */
struct preempt_coord_phase;
typedef void (*preempt_coord_done)(int status, void *arg);

/* Cancels a phase that has not reported (done is not called); NULL: nothing. */
void preempt_coord_phase_free_(struct preempt_coord_phase *p);
/* Gives a phase up (its worker leaves): it fails with -ECANCELED, its end
 * gives the lease back (bounded by 1 s), and its done callback says so;
 * run the loop until then. */
void preempt_coord_phase_cancel_(struct preempt_coord_phase *p);

/* Joins the job. steps: this worker's decided checkpoint steps (any
 * order, copied); pend: its pending ones, resolved first (the committed
 * ones are offered too; pend, ret and msg must outlive the phase). done's
 * status: 0, -ETIMEDOUT (not every worker joined in time), -EACCES
 * (authentication), or another negative errno; *msg says why. Returns 0
 * with *ret_phase, or a negative errno (*msg says why; done is not called). */
int preempt_coord_join_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg, const uint64_t *steps,
                              size_t n_steps, struct preempt_coord_pending *pend, size_t n_pend,
                              struct preempt_coord_join *ret, char *msg, size_t msg_size, preempt_coord_done done,
                              void *arg, struct preempt_coord_phase **ret_phase);
/* The same over io (struct preempt_coord_io below; the phase owns it from
 * the call on, also when the call fails, and frees it when it ends). */
struct preempt_coord_io;
int preempt_coord_join_begin_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                                 const uint64_t *steps, size_t n_steps, struct preempt_coord_pending *pend,
                                 size_t n_pend, struct preempt_coord_join *ret, char *msg, size_t msg_size,
                                 preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase);

/* A worker's restore of the job's step, and the job's: PREEMPT_RESTORE_OK,
 * _UNUSABLE, _FAILED (restore-internal.h). */
#include "restore-internal.h"

/* The restore barrier, after the restore of join's step: mine is this
 * worker's outcome: OK, UNUSABLE (the trainer cannot use that
 * checkpoint: bad data, another shape) or FAILED (anything else: out of
 * memory, I/O; a retry may succeed), with why. Every worker reports; the
 * incarnation's one record N/restored says "ok" (the worker whose report
 * completed the count of W writes it) or the first other outcome,
 * "unusable|failed <step> worker=<w>: <why>" (create-if-absent), and every
 * worker follows it: *ret_outcome, and verdict ("<step>, worker <w>:
 * <why>", for messages). UNUSABLE: the job falls back, setting that step aside
 * and joining again without it; FAILED: start-up fails everywhere,
 * nothing set aside. Either ends the incarnation: the lease is given back
 * (the caller forgets join->lease). Bounded by bound_ms. done's status: 0,
 * -ETIMEDOUT or another negative errno; the outputs must outlive the
 * phase. Returns as preempt_coord_join_begin_. */
int preempt_coord_restored_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                                  struct preempt_coord_join *join, int mine, const char *why, uint64_t bound_ms,
                                  int *ret_outcome, char *verdict, size_t verdict_size, char *msg, size_t msg_size,
                                  preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase);
int preempt_coord_restored_begin_io_(const struct preempt_coord_io *io, void *io_arg,
                                     const struct preempt_coord_cfg *cfg, struct preempt_coord_join *join, int mine,
                                     const char *why, uint64_t bound_ms, int *ret_outcome, char *verdict,
                                     size_t verdict_size, char *msg, size_t msg_size, preempt_coord_done done,
                                     void *arg, struct preempt_coord_phase **ret_phase);

/* A step of the trainer took step_ms: the membership lease grows to
 * outlive twice the longest step (a synchronous trainer keeps it alive
 * only at its boundaries). NULL: nothing. */
void preempt_coord_step_(struct preempt_coord *c, uint64_t step_ms);

/* The key of round's decision record in the running protocol (for a
 * pending checkpoint). 0 or -ENAMETOOLONG. */
int preempt_coord_decision_key_(const struct preempt_coord *c, unsigned round, char *buf, size_t size);

struct preempt_coord_ops {
    void (*post)(const struct preempt_event *ev, void *arg); /* now_ms is stamped by the owner */
    uint64_t (*now_ms)(void *arg);                            /* the owner's machine clock */
    void (*log)(int level, const char *msg, void *arg);      /* 0 debug .. 3 error */
    void (*on_error_msg)(const char *msg, void *arg);        /* the job's propagated error text */
    /* A commit named the round's slowest save (ms): the owner plans with it
     * (preempt_worker_job_save_), so that the final round is opened in
     * time for the slowest worker. NULL: not told. */
    void (*job_save)(uint64_t ms, void *arg);
    /* A commit named its reports' lowest step and slowest pace, and came at
     * at_ms (the machine's clock): at at_ms every worker had reached at
     * least pace.step, and none trains slower than pace.ms a step. The
     * owner's planner opens the final round in time for the job's slowest
     * worker with it (preempt_worker_job_pace_). NULL: not told. */
    void (*job_pace)(struct preempt_pace pace, uint64_t at_ms, void *arg);
    /* The job's view took input in and made ev of it (NULL: nothing is
     * told): what a trace records, so that a replay can check it. */
    void (*on_view)(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                    void *arg);
    /* An answer the coordinator acts on came (below), with what it says
     * (NULL: nobody is told): traced, so that a replay reads it again and
     * finds the cause of what the declared machines and the handler's
     * machine were told of it. */
    void (*on_answer)(const struct preempt_view *v, const struct preempt_job_answer *a, void *arg);
    /* Each input of the coordinator (coord-state.h), before it is handled,
     * and each output but the log's and the trace's own (a request, the
     * timer, a post, a commit's slowest save, the job's error, a peer
     * gone), as the core makes it (the outputs of one input run after its
     * step, in that order); depth: 0 for an input from the loop or the
     * owner, 1 + the depth of the input whose output (a post, a refused
     * request) caused it while it ran; an output has its input's. What a
     * trace records (lib/job/coord-trace.c), so that a replay runs the
     * coordinator again. NULL: nobody is told. */
    void (*on_input)(const struct preempt_coord_in *in, unsigned depth, void *arg);
    void (*on_output)(const struct preempt_coord_out *out, unsigned depth, void *arg);
};

/* Runs the protocol on base after a successful join. Copies cfg. */
int preempt_coord_new_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                       const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                       struct preempt_coord **ret);

/* What the protocol (start-up's phases and the running protocol) needs of
 * etcd and of time. preempt_coord_new_ and the start-up phases' base
 * variants use the real client on a libevent base; the simulation
 * (tests/sim/) supplies an in-memory etcd on a virtual clock. Callbacks
 * never run inside a call into these functions. One io serves one phase
 * or one coordinator. */
struct preempt_coord_io {
    /* As preempt_etcd_do_: one typed request, its answer decoded. */
    int (*request)(void *io, const struct preempt_etcd_req *req, uint64_t give_up_ms, preempt_etcd_reply_cb cb,
                   void *arg);
    /* As preempt_etcd_watch_ of [key, end) (end NULL: every key under key) from revision 0 (a read, then the
     * stream); one per io. */
    int (*watch)(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops, void *arg);
    /* A second watch, as watch, of the member records (preempt_coord_watch_members_); NULL: none. */
    int (*watch_members)(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                         void *arg);
    /* Calls tick(arg) once after ms (0: cancels); one timer per io (a new call replaces it). */
    void (*timer)(void *io, uint64_t ms, void (*tick)(void *arg), void *arg);
    uint64_t (*wall_ms)(void *io);       /* the clock deadlines are shared in (unix ms) */
    uint64_t (*mono_ms)(void *io);       /* the clock start-up's bounds are kept in */
    unsigned (*pending)(void *io);       /* requests not yet answered */
    unsigned (*flush)(void *io, uint64_t bound_ms);
    void (*free)(void *io);              /* cancels everything; no callback runs after */
};

/* Why the port refused a request at once (its negative return): a value
 * it would write is not its record's grammar (-EBADMSG: a bug, which the
 * etcd client logged), or out of memory. */
const char *preempt_coord_refused_(int r);

/* The real io on base (etcd's client of opts, borrowed as
 * preempt_etcd_new_ says), for a reader of the job's records such as the
 * watcher; free it with (*ret_ops)->free. 0 or a negative errno. */
int preempt_coord_real_io_(struct event_base *base, const struct preempt_etcd_opts *opts,
                           const struct preempt_coord_io **ret_ops, void **ret_io);
/* The real io's etcd client (to run its base until a condition). */
struct preempt_etcd *preempt_coord_real_etcd_(void *io);

/* Runs the protocol over io (freed with the coordinator, also on error). */
int preempt_coord_new_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                          const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                          struct preempt_coord **ret);

/* A member record, alive/<w>'s value: "pid=<pid> host=<host> launch=<id>
 * workers=<W> [over=1 ]steps=a,b,c" ("-" for an unknown host or launch; a
 * host's bytes outside a word are written as '-'; over: this worker was
 * told to start over), by its grammar: 0, or a negative errno (*v ""). */
int preempt_coord_member_(struct preempt_value *v, long pid, const char *host, const char *launch, unsigned workers,
                          bool over, const uint64_t *steps, size_t n_steps);

/* What a job restores, from its members' offers (pure). */
#define PREEMPT_PLAN_LACKING_MAX 16 /* the lacking workers a plan names (its record says ",..." for more) */
struct preempt_coord_plan {
    bool have;          /* a step every worker holds: */
    uint64_t step;      /*   the newest such, the restore step */
    bool held;          /* some worker holds a checkpoint: */
    uint64_t newest;    /*   the newest step any worker holds */
    bool at_risk;       /* newest is newer than the restore step (or there is none): */
    unsigned n_lacking; /*   the workers whose offers lack newest, */
    uint64_t lacking[PREEMPT_PLAN_LACKING_MAX]; /* the indexes of the first ones */
    bool over;          /* a worker was told to start over */
};

/* The plan for offers (member records; idx[k]: the worker index of
 * offers[k]). A job whose plan is at risk starts only when told to start
 * over: restoring the step every worker holds would lose the newer ones
 * for good, while they are most likely only missing (a volume not
 * mounted) on the lacking workers. */
void preempt_coord_plan_(const char *const *offers, const unsigned *idx, size_t n, struct preempt_coord_plan *ret);

/* Frees the coordinator, cancelling its requests (see preempt_coord_flush_). */
void preempt_coord_free_(struct preempt_coord *c);

/* Carries out a coordination effect (the rest are the handler's). round is
 * the machine's current round; last is preempt_fsm_fx_last_(): for
 * claim-driver, propose-step and request-final this worker's opinion that
 * a save at the step it proposes is the last (the proposal carries it),
 * for report-shard that the save ends this worker's preemption (its
 * membership ends with the report); stop is preempt_fsm_fx_stop_() (a
 * report carries it: the step this worker would have the job stop at);
 * save_ms is the slowest save this worker knows of, pace its step and
 * mean step time and trains_on whether it trains on from that step now (a
 * report carries them); errmsg is the text of a publish-error. Returns true
 * when fx was a coordination effect. */
bool preempt_coord_fx_(struct preempt_coord *c, const struct preempt_fx *fx, unsigned round, bool last,
                       uint64_t stop, uint64_t save_ms, struct preempt_pace pace, bool trains_on,
                       const char *errmsg);

/* Marks this worker's notice record withdrawn (its sources cancelled every
 * notice, or the notice was advisory) or live again. Call it before the
 * notice is posted for an advisory one: the record is then written once,
 * already withdrawn. When every record of the job is withdrawn, every
 * worker gets notice-withdrawn. */
void preempt_coord_withdraw_(struct preempt_coord *c, bool withdrawn);
/* A live notice of source (its name) came: the record is written live
 * again (preempt_coord_withdraw_(c, false)), and, when the one published
 * was withdrawn (an advisory or periodic notice, or one its source took
 * back), it names this source: a SIGTERM during a periodic checkpoint's
 * episode is the signal's, not the period's. The published deadline
 * stays the earliest. NULL-safe. */
void preempt_coord_live_(struct preempt_coord *c, const char *source);

/* Watches the job's member records ([N/w/alive/, N/w/done/] only: O(W) for
 * this worker, nothing for the others) and calls gone(worker, why, arg) on
 * the loop when a peer's membership ends without its training being done
 * (its lease expired or was revoked, or it left after its last save): an
 * asynchronous trainer aborts its collectives then. Once per membership.
 * 0, -ENOTSUP when the io has no second watch, -ENOMEM. */
int preempt_coord_watch_members_(struct preempt_coord *c, void (*gone)(unsigned worker, const char *why, void *arg),
                                 void *arg);

/* The worker is leaving: release its membership (revoke the lease). */
void preempt_coord_leave_(struct preempt_coord *c);

/* How this worker's run of the incarnation ended (the HISTORY record's
 * value, keys-internal.h), written at its exit for `preemptctl history`;
 * the history of the incarnation PREEMPT_HISTORY_KEPT before goes. Works
 * after preempt_coord_leave_ (the writes flush as the others). */
#define PREEMPT_HISTORY_KEPT 16
void preempt_coord_history_(struct preempt_coord *c, const struct preempt_value *value);

/* Writes not yet answered by etcd (0 for NULL). */
unsigned preempt_coord_pending_(const struct preempt_coord *c);

/* How many inputs the coordinator posted by a link that does not declare
 * them (lib/job/links-internal.h): each one a bug, logged when it happened.
 * The simulator fails a run with one. */
unsigned preempt_coord_link_bugs_(const struct preempt_coord *c);

/* Delivers the pending writes on an owned base; see preempt_etcd_flush_. */
unsigned preempt_coord_flush_(struct preempt_coord *c, uint64_t bound_ms);

/* Validates a job name (no '/', no traversal, printable): true when fine. */
bool preempt_coord_job_ok_(const char *job);

/* The key prefix of a job ("/preempt/<job>/"). */
int preempt_coord_prefix_(const char *job, char *buf, size_t size);

/* What the members' records say at start-up (lib/job/offers.c), beside
 * preempt_coord_plan_() and preempt_coord_member_(): the most steps a
 * member offers; a member record's launch, copied into buf ("" when it is
 * no member record); offers ordered by their worker index; and "pid P on
 * host H, launch L" of a member's value. */
#define MAX_STEPS_OFFERED 64
const char *preempt_member_launch_(const char *v, char *buf, size_t size);
void preempt_offers_sort_(const char **offers, unsigned *idx, size_t n);
const char *preempt_member_who_(const char *v, char *buf, size_t size);

#endif
