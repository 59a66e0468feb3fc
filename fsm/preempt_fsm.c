/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_fsm.c: the transition table and the pure step function.
 *
 * This file is the machine. States, events, effects and guards are listed in
 * the .def files; the rows below say what each (state, event) pair does. A
 * pair with no row is looked up in the ignored table and is illegal when it
 * is not there either. preempt_fsm_check_() verifies the whole table, and
 * tools/fsmdump draws it.
 *
 * Pure: no I/O, no clock reads, no allocation, no mutable globals. */
#include <errno.h>

#include "preempt_fsm.h"

#define ST(s) PREEMPT_STATE_##s
#define FX(k) { PREEMPT_FX_##k, PREEMPT_HOW_DEFAULT }
#define FXH(k, h) { PREEMPT_FX_##k, PREEMPT_HOW_##h }
#define NFX(...) (uint8_t)(sizeof((struct preempt_fx_spec[]){ __VA_ARGS__ }) / sizeof(struct preempt_fx_spec))
#define ROW(f, e, g, t, ...) \
    { ST(f), PREEMPT_EV_##e, PREEMPT_GUARD_##g, ST(t), NFX(__VA_ARGS__), { __VA_ARGS__ } }
#define ROW0(f, e, g, t) { ST(f), PREEMPT_EV_##e, PREEMPT_GUARD_##g, ST(t), 0, { { 0, 0 } } }

/* Leaving for exit: the timer goes, then the exit reason is decided. */
#define TO_EXIT(how) FX(DISARM_TIMER), FXH(EXIT, how)

/* Rows every state between a notice and the exit shares. A lost peer, a dead
 * coordination store, a stale deadline or a peer's protocol failure all end
 * the preemption the same way: "abort" exits with the saved code when a
 * checkpoint of this preemption is committed and with the not-saved code
 * otherwise. The previous checkpoint is never touched. A worker that exits
 * on a second notice tells the job it left (the lost record names it):
 * its peers follow that as a lost peer at once, instead of waiting at
 * their bound for a save it will not make (a final round it would not
 * report). */
#define ACTIVE_ROWS(s)                                                                                   \
    ROW(s, NOTICE, SECOND_EXITS, EXIT, FX(PUBLISH_NOTICE), FX(ANNOUNCE_LEFT), TO_EXIT(ABORT)),          \
    ROW(s, NOTICE, ALWAYS, s, FX(PUBLISH_NOTICE), FX(ARM_TIMER)), /* the earliest deadline re-plans */ \
    ROW(s, PEER_NOTICE, ALWAYS, s, FX(ARM_TIMER)),                                                       \
    ROW(s, TIMER, CURRENT, EXIT, TO_EXIT(ABORT)),                                                        \
    ROW(s, PEER_LOST, ALWAYS, EXIT, TO_EXIT(ABORT)),                                                     \
    ROW(s, RESTART_REQUESTED, ALWAYS, EXIT, FXH(PUBLISH_ERROR, EVENT), TO_EXIT(ABORT)),                  \
    ROW(s, COORD_FAILED, ALWAYS, EXIT, TO_EXIT(ABORT)),                                                  \
    ROW(s, APP_ERROR, ALWAYS, EXIT, FXH(PUBLISH_ERROR, EVENT), TO_EXIT(ERROR)),                          \
    ROW(s, PEER_ERROR, APP_CODE, EXIT, TO_EXIT(ERROR)),                                                  \
    ROW(s, PEER_ERROR, ALWAYS, EXIT, TO_EXIT(ABORT))

/* The job decided to abort the round before this worker saved (the saving
 * states also discard their copy: DECIDE_ROWS). */
#define ABORTED_ROW(s) ROW(s, ROUND_ABORTED, ALWAYS, EXIT, TO_EXIT(ABORT))

/* One decision per round. Once this worker reported its shard, another
 * worker may already have seen every shard and written "committed": the
 * round's end is the job's decision record, never this worker's timer, its
 * view of a lost peer or a peer's protocol failure. It proposes the abort
 * (create-if-absent; the record that lands first decides; the coordinator
 * proposes the commit instead when it finds every shard reported) and
 * follows whichever record comes back. When none comes back in time (etcd
 * unreachable), or a second notice says exit now, it exits with the
 * not-saved code and its copy stays pending: the restart follows the record
 * (docs/protocol.md, "One decision per round"). A peer's application error
 * (code > 0) still ends every worker with that code at once (ACTIVE_ROWS);
 * the copy stays pending the same way. */
#define DECIDE_ROWS(s)                                                                                   \
    ROW(s, ROUND_ABORTED, ALWAYS, EXIT, FX(DISCARD_SHARD), TO_EXIT(ABORT)),                              \
    ROW(s, NOTICE, SECOND_EXITS_SHARD_OUT, EXIT, FX(PUBLISH_NOTICE), FX(PROPOSE_ABORT), FX(ANNOUNCE_LEFT),  \
        TO_EXIT(ABORT)),                                                                                 \
    ROW(s, TIMER, CURRENT_PROPOSED, EXIT, TO_EXIT(ABORT)),                                              \
    ROW(s, TIMER, CURRENT_SHARD_OUT, s, FX(PROPOSE_ABORT), FX(ARM_TIMER)),                              \
    ROW(s, PEER_LOST, SHARD_OUT, s, FX(PROPOSE_ABORT), FX(ARM_TIMER)),                                  \
    ROW(s, RESTART_REQUESTED, SHARD_OUT, EXIT, FX(PROPOSE_ABORT), FXH(PUBLISH_ERROR, EVENT), TO_EXIT(ABORT)), \
    ROW0(s, PEER_LOST, PROPOSED, s),                                                                     \
    ROW(s, COORD_FAILED, SHARD_OUT, s, FX(PROPOSE_ABORT), FX(ARM_TIMER)),                               \
    ROW0(s, COORD_FAILED, PROPOSED, s),                                                                  \
    ROW(s, PEER_ERROR, PEER_FAILED_SHARD_OUT, s, FX(PROPOSE_ABORT), FX(ARM_TIMER)),                     \
    ROW0(s, PEER_ERROR, PEER_FAILED_PROPOSED, s)

/* The round's save step reaches a worker while it agrees: one already past
 * it raises it (its step plus the lead, a compare-and-put on the one
 * record, so that every worker follows the highest) and trains on up to its
 * proposal; one at it saves at once; otherwise training continues to it. */
#define AGREED_ROWS(s)                                                                                   \
    ROW(s, STEP_AGREED, PAST_AGREED, s, FX(PROPOSE_STEP)),                                               \
    ROW(s, STEP_AGREED, AT_FINAL, FINAL_SAVE, FX(ARM_TIMER), FX(BEGIN_SAVE)),                           \
    ROW(s, STEP_AGREED, AT_AGREED, SAVING, FX(ARM_TIMER), FX(BEGIN_SAVE)),                              \
    ROW(s, STEP_AGREED, ALWAYS, STEP_AGREED, FX(ARM_TIMER))

/* Training may finish before the save step: that is a normal completion. */
#define DONE_ROW(s) ROW(s, TRAINING_DONE, ALWAYS, EXIT, FX(ANNOUNCE_DONE), TO_EXIT(DONE))

/* A withdrawal before the checkpoint is committed lets the save finish (an
 * opportunistic checkpoint) and then returns to idle. */
#define WITHDRAW_MARK_ROW(s) ROW0(s, NOTICE_WITHDRAWN, ALWAYS, s)

/* The notices withdrawn in the final round, before this worker saves in it:
 * back to idle, as from the countdown, and the final round is given up
 * (the first checkpoint stands). Every worker of the job comes to the same
 * end, whichever of the two records (the withdrawal, the driver's request
 * of the final round) its watch brought first: one still counting down
 * when the withdrawal came went to idle and never saves in the round, so
 * no worker may finish it alone. Before, a driver that requested the round
 * just before its watch brought the withdrawal trained on to the round's
 * step, saved alone, and exited at the round's bound while its peers
 * trained on in idle (sim seed 6548). */
#define FINAL_WITHDRAWN_ROW(s) ROW(s, NOTICE_WITHDRAWN, COMMITTED, IDLE, FX(DISARM_TIMER), FX(CLEAR_ROUND))

/* Survivors stay in place: a commit that ends the preemption, on a
 * worker that had no notice of its own and whose state is the committed
 * step, rejoins the job's next incarnation instead of exiting (rejoining).
 * Every other worker exits as before, and so does a survivor whose state
 * is not the committed step (it trained on past it). */
#define IN_PLACE_ROW(s, g) ROW(s, CKPT_COMMITTED, g, REJOINING, FX(KEEP_SHARD), FX(DISARM_TIMER), FX(REJOIN))

/* A committed checkpoint after a withdrawal: back to idle. */
#define COMMIT_WITHDRAWN_ROW(s) ROW(s, CKPT_COMMITTED, WITHDRAWN, IDLE, FX(KEEP_SHARD), FX(DISARM_TIMER), FX(CLEAR_ROUND))

/* A raise of the round's step after this worker saved at the old one (a
 * worker that was past the old step when it learned it): no commit at the
 * old step can come (that worker never saves there), so the copy goes and
 * training goes on to the new step. A raise while the save runs waits for
 * its end (save-done); one after this worker proposed the abort waits for
 * the decision. */
#define RAISED_ROWS(s)                                                                                   \
    ROW(s, STEP_AGREED, RAISED_SAVED, STEP_AGREED, FX(DISCARD_SHARD)),                                   \
    ROW0(s, STEP_AGREED, RAISED, s),                                                                     \
    ROW(s, SAVE_DONE, RAISED_OK, STEP_AGREED, FX(DISCARD_SHARD))

/* A save outcome. */
#define SAVE_ROWS(s)                                                                                     \
    ROW(s, SAVE_DONE, SAVE_OK, s, FX(REPORT_SHARD)),                                                     \
    ROW(s, SAVE_DONE, ALWAYS, EXIT, FX(PROPOSE_ABORT), FXH(PUBLISH_ERROR, EVENT), TO_EXIT(ABORT))

/* The first checkpoint of a round, written (saving) or persisting: its
 * outcome and the job's one decision (a raise: each state's own rows).
 * Not the last save by the agreed record: whether time is left for
 * another round is the decision record's word (any worker's report may
 * say no, having measured its save), never each worker's own at its
 * commit. A commit after a peer's membership ended (peer-lost while this
 * worker's shard was out: it proposed the abort, and the commit landed
 * first) ends the preemption here: no final round can complete without
 * that peer, and a countdown would only wait for its bound (sim seed
 * 4821: a worker left on a second notice just after its report). */
#define FIRST_SAVE_ROWS(s) SAVE_ROWS(s), COMMIT_WITHDRAWN_ROW(s), COMMIT_ROWS(s)
#define COMMIT_ROWS(s)                                                                                   \
    IN_PLACE_ROW(s, IN_PLACE_ENDS),                                                                      \
    ROW(s, CKPT_COMMITTED, COMMITTED_LAST, EXIT, FX(KEEP_SHARD), TO_EXIT(SAVED)),                        \
    ROW(s, CKPT_COMMITTED, PEER_GONE, EXIT, FX(KEEP_SHARD), TO_EXIT(SAVED)),                             \
    ROW(s, CKPT_COMMITTED, ALWAYS, COUNTDOWN, FX(KEEP_SHARD), FX(ARM_TIMER)),                            \
    DECIDE_ROWS(s),                                                                                      \
    ROW0(s, CLAIM_WON, ALWAYS, s)

static const struct preempt_row rows[] = {
    /* ---- idle ---- */
    ROW(IDLE, NOTICE, ALWAYS, OWN_SIGNAL, FX(PUBLISH_NOTICE), FX(CLAIM_DRIVER), FX(ARM_TIMER)),
    ROW(IDLE, PEER_NOTICE, ALWAYS, FOLLOWING, FX(ARM_TIMER)),
    ROW(IDLE, TRAINING_DONE, ALWAYS, EXIT, FX(ANNOUNCE_DONE), FXH(EXIT, DONE)),
    ROW(IDLE, APP_ERROR, ALWAYS, EXIT, FXH(PUBLISH_ERROR, EVENT), FXH(EXIT, ERROR)),
    ROW(IDLE, PEER_ERROR, APP_CODE, EXIT, FXH(EXIT, ERROR)),
    ROW(IDLE, PEER_ERROR, ALWAYS, EXIT, FXH(EXIT, ABORT)),
    /* The trainer cannot go on without a lost peer: the job restarts from
     * its last commit; the peers follow the error record (a failure, not an
     * application's code: they exit with the not-saved code too). */
    ROW(IDLE, RESTART_REQUESTED, ALWAYS, EXIT, FXH(PUBLISH_ERROR, EVENT), FXH(EXIT, ABORT)),

    /* ---- own-signal: driving; training goes on up to this worker's proposal ---- */
    /* The claim's answer: the job knows of the notice and of the proposed
     * step (one write); the round's bound starts. */
    ROW(OWN_SIGNAL, CLAIM_WON, ALWAYS, OWN_SIGNAL, FX(ARM_TIMER)),
    ROW(OWN_SIGNAL, CLAIM_LOST, ALWAYS, FOLLOWING, FX(ARM_TIMER)), /* another worker drives, and its step is S */
    AGREED_ROWS(OWN_SIGNAL),
    FINAL_WITHDRAWN_ROW(OWN_SIGNAL),
    WITHDRAW_MARK_ROW(OWN_SIGNAL),
    DONE_ROW(OWN_SIGNAL),
    ABORTED_ROW(OWN_SIGNAL),
    ACTIVE_ROWS(OWN_SIGNAL),

    /* ---- following: training goes on until the round's step comes ---- */
    /* take-over: the driver vanished; when it left no step, this worker proposes one */
    ROW(FOLLOWING, CLAIM_WON, NO_STEP, OWN_SIGNAL, FX(PROPOSE_STEP)),
    ROW0(FOLLOWING, CLAIM_WON, ALWAYS, OWN_SIGNAL),
    AGREED_ROWS(FOLLOWING),
    FINAL_WITHDRAWN_ROW(FOLLOWING),
    WITHDRAW_MARK_ROW(FOLLOWING),
    DONE_ROW(FOLLOWING),
    ABORTED_ROW(FOLLOWING),
    ACTIVE_ROWS(FOLLOWING),

    /* ---- step-agreed: training towards S ---- */
    ROW(STEP_AGREED, STEP_REACHED, PAST_SAVE_STEP, EXIT, FXH(PUBLISH_ERROR, PROTOCOL), TO_EXIT(ABORT)),
    ROW(STEP_AGREED, STEP_REACHED, FINAL_AT_SAVE, FINAL_SAVE, FX(BEGIN_SAVE)),
    ROW(STEP_AGREED, STEP_REACHED, AT_SAVE_STEP, SAVING, FX(BEGIN_SAVE)),
    ROW0(STEP_AGREED, STEP_AGREED, RAISED, STEP_AGREED), /* a worker was past S: on to the higher step */
    ROW0(STEP_AGREED, CLAIM_WON, ALWAYS, STEP_AGREED), /* take-over: this worker drives the final round */
    FINAL_WITHDRAWN_ROW(STEP_AGREED),
    WITHDRAW_MARK_ROW(STEP_AGREED),
    DONE_ROW(STEP_AGREED),
    ABORTED_ROW(STEP_AGREED),
    ACTIVE_ROWS(STEP_AGREED),

    /* ---- saving: the first checkpoint ---- */
    RAISED_ROWS(SAVING),
    FIRST_SAVE_ROWS(SAVING),
    WITHDRAW_MARK_ROW(SAVING),
    ACTIVE_ROWS(SAVING),

    /* The save handed its snapshots over (a two-phase save): training goes
     * on while they are made durable. A final save's are awaited instead
     * (ignored below): nothing trains after the last checkpoint, unless the
     * round is a periodic (or advisory) one, whose "last" save ends no
     * preemption. A raise that came while the snapshot was taken leaves
     * nothing to persist: the copy cannot commit, and goes at once
     * (raised-pending); training goes on to the raised step. */
    ROW(SAVING, PERSIST_STARTED, RAISED_PENDING, STEP_AGREED, FX(DISCARD_SHARD)),
    ROW(FINAL_SAVE, PERSIST_STARTED, GIVEN_UP, IDLE, FX(DISCARD_SHARD), FX(DISARM_TIMER), FX(CLEAR_ROUND)),
    ROW(FINAL_SAVE, PERSIST_STARTED, RAISED_PENDING, STEP_AGREED, FX(DISCARD_SHARD)),
    ROW0(SAVING, PERSIST_STARTED, ALWAYS, PERSISTING),
    ROW0(FINAL_SAVE, PERSIST_STARTED, WITHDRAWN, PERSISTING),

    /* ---- persisting: the checkpoint at S is made durable while training goes on ---- */
    /* Its save-done comes once every blob is durable, and only then is the
     * shard reported. A raise of the round's step (no abort proposed) moves
     * the round off S at once: the copy at S goes, persisting or reported
     * (discard-shard stops a persist under way, so that the new save has
     * the disk), and the persist is never awaited for a checkpoint that
     * cannot commit. A raise to a step this worker already passed (it
     * trained on) cannot be saved there either: it raises the step past its
     * own, as a worker that learned the step late does. */
    ROW(PERSISTING, STEP_AGREED, RAISED_OPEN_PAST, FOLLOWING, FX(DISCARD_SHARD), FX(PROPOSE_STEP), FX(ARM_TIMER)),
    ROW(PERSISTING, STEP_AGREED, RAISED_OPEN, STEP_AGREED, FX(DISCARD_SHARD)),
    /* after this worker proposed the abort, the decision decides */
    ROW0(PERSISTING, STEP_AGREED, RAISED, PERSISTING),
    /* A notice while a periodic round's checkpoint persists: the planner
     * lets it finish, and it becomes the preemption's checkpoint (the rows
     * below: its first, followed by a final round at the step the job stops
     * at when one fits after its commit, preempt_fsm_fx_last_; else its
     * last, with one stop step for every worker), or supersedes it
     * (preempt_plan_supersede_(): a new save fits, and this one would be
     * late, or as the last save lose more steps than the lead). Superseding is a raise: the copy goes, and the round's one
     * step record moves to this worker's step plus the lead, which every
     * worker follows (raised-open above), whatever its own notice said. */
    ROW(PERSISTING, NOTICE, SUPERSEDES, FOLLOWING, FX(PUBLISH_NOTICE), FX(DISCARD_SHARD), FX(PROPOSE_STEP),
        FX(ARM_TIMER)),
    SAVE_ROWS(PERSISTING),
    COMMIT_WITHDRAWN_ROW(PERSISTING),
    /* The commit ends the preemption while this worker trained on past S:
     * it does not exit at the boundary where the decision reached it (in a
     * job, a peer that read it one boundary later would be left inside the
     * next step's collective, waiting for this worker), but at the one stop
     * step the decision record names (the reports' highest: each reporter's
     * step plus the lead, so that the record reaches every worker before it
     * gets there), as a synchronous save's workers all exit at S. */
    ROW(PERSISTING, CKPT_COMMITTED, STOP_AHEAD, STOPPING, FX(KEEP_SHARD)),
    COMMIT_ROWS(PERSISTING),
    /* A periodic checkpoint's round has no deadline: a persist that takes
     * longer than bound_ms goes on (each write completes or fails). */
    ROW0(PERSISTING, TIMER, CURRENT_WITHDRAWN, PERSISTING),
    WITHDRAW_MARK_ROW(PERSISTING),
    /* Training is done (a periodic checkpoint at the last step is the
     * common case): the checkpoint is awaited, never dropped. */
    ROW(PERSISTING, TRAINING_DONE, ALWAYS, FINISHING, FX(ARM_TIMER)),
    ACTIVE_ROWS(PERSISTING),

    /* ---- finishing: training is done; the checkpoint persisting is awaited ---- */
    /* Its commit ends the run as done. A raise of the round's step cannot
     * be followed (nothing trains any more): the copy goes, and the run
     * ends as done, as a trainer that finished before a round's step does.
     * A save or round that fails exits with the not-saved code: the restart
     * trains the last steps again and saves them, losing nothing. A
     * preemption's deadline bounds the wait, as in persisting. A periodic
     * (withdrawn) round has none: there the decision has a bound of its
     * own, one agreement round from training's end and again from the
     * shard's report (a peer that left without its shard must not hold the
     * exit forever: the timer proposes the abort). */
    ROW(FINISHING, STEP_AGREED, RAISED_SAVED, EXIT, FX(DISCARD_SHARD), FX(ANNOUNCE_DONE), TO_EXIT(DONE)),
    ROW0(FINISHING, STEP_AGREED, RAISED, FINISHING),
    ROW(FINISHING, SAVE_DONE, RAISED_OK, EXIT, FX(DISCARD_SHARD), FX(ANNOUNCE_DONE), TO_EXIT(DONE)),
    ROW(FINISHING, SAVE_DONE, SAVE_OK, FINISHING, FX(REPORT_SHARD), FX(ARM_TIMER)),
    ROW(FINISHING, SAVE_DONE, ALWAYS, EXIT, FX(PROPOSE_ABORT), FXH(PUBLISH_ERROR, EVENT), TO_EXIT(ABORT)),
    ROW(FINISHING, CKPT_COMMITTED, ALWAYS, EXIT, FX(KEEP_SHARD), FX(ANNOUNCE_DONE), TO_EXIT(DONE)),
    DECIDE_ROWS(FINISHING),
    ROW0(FINISHING, CLAIM_WON, ALWAYS, FINISHING),
    ROW0(FINISHING, TIMER, CURRENT_WITHDRAWN, FINISHING),
    WITHDRAW_MARK_ROW(FINISHING),
    ACTIVE_ROWS(FINISHING),

    /* ---- stopping: the preemption's last checkpoint is committed; on to the job's stop step ---- */
    /* Nothing more is saved and the round is decided: the deadline (less
     * the margin) still bounds the wait, and whatever else ends the
     * preemption ends it here too, with the saved code (the checkpoint is
     * committed). */
    ROW(STOPPING, STEP_REACHED, AT_STOP, EXIT, TO_EXIT(SAVED)),
    DONE_ROW(STOPPING),
    ACTIVE_ROWS(STOPPING),

    /* ---- countdown: training through the grace period ---- */
    ROW(COUNTDOWN, STEP_REACHED, FINAL_DUE, OWN_SIGNAL, FX(REQUEST_FINAL), FX(ARM_TIMER)),
    ROW(COUNTDOWN, FINAL_REQUESTED, ALWAYS, FOLLOWING, FX(ARM_TIMER)),
    ROW0(COUNTDOWN, CLAIM_WON, ALWAYS, COUNTDOWN), /* take-over: this worker plans the final round */
    ROW(COUNTDOWN, NOTICE_WITHDRAWN, ALWAYS, IDLE, FX(DISARM_TIMER), FX(CLEAR_ROUND)),
    DONE_ROW(COUNTDOWN),
    ABORTED_ROW(COUNTDOWN),
    ACTIVE_ROWS(COUNTDOWN),

    /* ---- final-save: the last checkpoint before exit ---- */
    /* The notices withdrawn while this worker saves in the final round
     * (FINAL_WITHDRAWN_ROW: peers that had not begun to save went to idle
     * and will not report): the round is given up here too. A reported
     * shard proposes the abort at once (the round commits after all when
     * every shard was reported first, and its commit then returns to
     * idle); a save still running is discarded when it ends, unreported,
     * whatever the round's decision meanwhile (no deadline stands: the
     * timer goes); an abort returns to idle, not to the exit. */
    ROW(FINAL_SAVE, NOTICE_WITHDRAWN, COMMITTED_SHARD_OUT, FINAL_SAVE, FX(PROPOSE_ABORT), FX(ARM_TIMER)),
    ROW(FINAL_SAVE, NOTICE_WITHDRAWN, COMMITTED_SAVING, FINAL_SAVE, FX(DISARM_TIMER)),
    ROW(FINAL_SAVE, SAVE_DONE, GIVEN_UP, IDLE, FX(DISCARD_SHARD), FX(DISARM_TIMER), FX(CLEAR_ROUND)),
    ROW0(FINAL_SAVE, ROUND_ABORTED, GIVEN_UP_SAVING, FINAL_SAVE),
    /* Its peers are idle (training on): a lost peer or a coordination
     * store away is theirs to report, not a preemption's end (idle's
     * ignored pairs), so here too: the save's end still returns to idle. */
    ROW0(FINAL_SAVE, PEER_LOST, GIVEN_UP_SAVING, FINAL_SAVE),
    ROW0(FINAL_SAVE, COORD_FAILED, GIVEN_UP_SAVING, FINAL_SAVE),
    ROW(FINAL_SAVE, ROUND_ABORTED, GIVEN_UP, IDLE, FX(DISCARD_SHARD), FX(DISARM_TIMER), FX(CLEAR_ROUND)),
    RAISED_ROWS(FINAL_SAVE),
    SAVE_ROWS(FINAL_SAVE),
    COMMIT_WITHDRAWN_ROW(FINAL_SAVE),
    IN_PLACE_ROW(FINAL_SAVE, IN_PLACE),
    ROW(FINAL_SAVE, CKPT_COMMITTED, ALWAYS, EXIT, FX(KEEP_SHARD), TO_EXIT(SAVED)),
    DECIDE_ROWS(FINAL_SAVE),
    ROW0(FINAL_SAVE, CLAIM_WON, ALWAYS, FINAL_SAVE),
    WITHDRAW_MARK_ROW(FINAL_SAVE),
    ACTIVE_ROWS(FINAL_SAVE),

    /* ---- rejoining: a survivor joins the job's next incarnation in place ---- */
    /* The incarnation it left is over: its records and its coordinator's
     * answers no longer matter (ignored below). Joined, the machine starts
     * afresh in idle and the trainer rebuilds its collectives; not joined
     * in time (the replacements did not come), it exits as it would have:
     * saved. A notice of its own while it waits makes it one of the
     * terminated workers: it exits, saved (its checkpoint is committed). */
    ROW(REJOINING, REJOINED, ALWAYS, IDLE, FX(RESUME)),
    ROW(REJOINING, REJOIN_FAILED, ALWAYS, EXIT, FXH(EXIT, SAVED)),
    ROW(REJOINING, NOTICE, ALWAYS, EXIT, FXH(EXIT, SAVED)),
    ROW(REJOINING, RESTART_REQUESTED, ALWAYS, EXIT, FXH(EXIT, SAVED)),
    ROW(REJOINING, APP_ERROR, ALWAYS, EXIT, FXH(EXIT, ERROR)),
    ROW(REJOINING, TRAINING_DONE, ALWAYS, EXIT, FXH(EXIT, DONE)),
};

#define IGN(s, e, why) { ST(s), PREEMPT_EV_##e, why }
#define STALE_TIMER(s) IGN(s, TIMER, "a timer of an older generation")

/* Pairs decided as "nothing to do". Also the fallback of a pair whose rows
 * are all guarded. Every other pair without a row is illegal: reported, and
 * asserted in debug builds of the shell. */
static const struct preempt_ignore ignored[] = {
    IGN(IDLE, TIMER, "a timer of an older generation"),
    IGN(IDLE, STEP_REACHED, "training; the shell sends steps only while a notice is known"),
    IGN(IDLE, PEER_LOST, "a peer lost without notice is outside preemption handling; the shell reports it"),
    IGN(IDLE, COORD_FAILED, "no protocol is running; the shell keeps retrying"),
    IGN(IDLE, NOTICE_WITHDRAWN, "nothing to withdraw"),
    IGN(IDLE, CLAIM_WON, "a late answer of a withdrawn round"),
    IGN(IDLE, CLAIM_LOST, "a late answer of a withdrawn round"),
    IGN(IDLE, STEP_AGREED, "a late answer of a withdrawn round"),
    IGN(IDLE, FINAL_REQUESTED, "a late answer of a withdrawn round"),
    IGN(IDLE, ROUND_ABORTED, "a late decision of a withdrawn round"),

    STALE_TIMER(OWN_SIGNAL),
    IGN(OWN_SIGNAL, STEP_REACHED, "training on towards the proposed step; the round's step is not known yet"),
    IGN(OWN_SIGNAL, FINAL_REQUESTED, "the echo of this worker's own request"),

    STALE_TIMER(FOLLOWING),
    IGN(FOLLOWING, CLAIM_LOST, "already following"),
    IGN(FOLLOWING, STEP_REACHED, "training on; the round's step is not known yet"),
    IGN(FOLLOWING, FINAL_REQUESTED, "already following the final round"),

    STALE_TIMER(STEP_AGREED),
    IGN(STEP_AGREED, STEP_REACHED, "training towards the save step"),
    IGN(STEP_AGREED, STEP_AGREED, "the echo of the round's step, or a lower one"),
    IGN(STEP_AGREED, CLAIM_LOST, "the round is agreed; the claim no longer matters"),
    IGN(STEP_AGREED, FINAL_REQUESTED, "the echo of the final round's request"),

    STALE_TIMER(SAVING),
    IGN(SAVING, CLAIM_LOST, "the round is agreed; the claim no longer matters"),
    IGN(SAVING, STEP_AGREED, "the echo of the round's step, or a lower one"),
    IGN(SAVING, FINAL_REQUESTED, "the final round starts after this save"),

    STALE_TIMER(PERSISTING),
    IGN(PERSISTING, STEP_REACHED, "training on while the checkpoint persists"),
    IGN(PERSISTING, CLAIM_LOST, "the round is agreed; the claim no longer matters"),
    IGN(PERSISTING, STEP_AGREED, "the echo of the round's step, or a lower one"),
    IGN(PERSISTING, FINAL_REQUESTED, "the final round starts after this checkpoint"),
    IGN(FINAL_SAVE, PERSIST_STARTED, "the last checkpoint of a preemption: nothing trains after it, its persist is awaited"),

    STALE_TIMER(FINISHING),
    IGN(FINISHING, STEP_REACHED, "training is done: no step comes"),
    IGN(FINISHING, CLAIM_LOST, "the round is agreed; the claim no longer matters"),
    IGN(FINISHING, STEP_AGREED, "the echo of the round's step, or a lower one"),
    IGN(FINISHING, FINAL_REQUESTED, "training is done: no final round follows"),
    IGN(FINISHING, TRAINING_DONE, "told again"),

    STALE_TIMER(STOPPING),
    IGN(STOPPING, STEP_REACHED, "training on to the job's stop step"),
    IGN(STOPPING, CLAIM_WON, "the round is decided; the claim no longer matters"),
    IGN(STOPPING, CLAIM_LOST, "the round is decided; the claim no longer matters"),
    IGN(STOPPING, STEP_AGREED, "the round is decided"),
    IGN(STOPPING, FINAL_REQUESTED, "the commit ended the preemption: no final round follows"),
    IGN(STOPPING, CKPT_COMMITTED, "the decision, told again"),
    IGN(STOPPING, ROUND_ABORTED, "the round is decided: committed"),
    IGN(STOPPING, NOTICE_WITHDRAWN, "the commit ended the preemption; the members left the job with their reports"),

    STALE_TIMER(COUNTDOWN),
    IGN(COUNTDOWN, STEP_REACHED, "training through the grace period"),
    IGN(COUNTDOWN, CLAIM_LOST, "a late answer of the first round"),
    IGN(COUNTDOWN, STEP_AGREED, "the echo of the first round's step"),

    STALE_TIMER(FINAL_SAVE),
    IGN(FINAL_SAVE, CLAIM_LOST, "the round is agreed; the claim no longer matters"),
    IGN(FINAL_SAVE, STEP_AGREED, "the echo of the round's step, or a lower one"),
    IGN(FINAL_SAVE, FINAL_REQUESTED, "the echo of the final round's request"),

    IGN(REJOINING, PEER_NOTICE, "the incarnation this worker left: its records no longer matter"),
    IGN(REJOINING, NOTICE_WITHDRAWN, "the incarnation this worker left: its records no longer matter"),
    IGN(REJOINING, CLAIM_WON, "a late answer of the incarnation this worker left"),
    IGN(REJOINING, CLAIM_LOST, "a late answer of the incarnation this worker left"),
    IGN(REJOINING, FINAL_REQUESTED, "the incarnation this worker left: its records no longer matter"),
    IGN(REJOINING, STEP_AGREED, "the incarnation this worker left: its records no longer matter"),
    IGN(REJOINING, STEP_REACHED, "training waits while this worker rejoins"),
    IGN(REJOINING, SAVE_DONE, "no save runs while this worker rejoins"),
    IGN(REJOINING, CKPT_COMMITTED, "the decision, told again"),
    IGN(REJOINING, TIMER, "a timer of the incarnation this worker left (start-up's bound is its own)"),
    IGN(REJOINING, PEER_LOST, "peers leave the incarnation this worker left; joining counts the next one's members"),
    IGN(REJOINING, PEER_ERROR, "the incarnation this worker left: its records no longer matter"),
    IGN(REJOINING, COORD_FAILED, "the incarnation's coordinator is gone; joining has its own bound"),
    IGN(REJOINING, ROUND_ABORTED, "the round is decided: committed"),
    IGN(REJOINING, PERSIST_STARTED, "no save runs while this worker rejoins"),
    IGN(IDLE, REJOINED, "only a worker rejoining is told"),
    IGN(IDLE, REJOIN_FAILED, "only a worker rejoining is told"),

#define PREEMPT_EVENT(id, member, name, p1, p2, what) IGN(EXIT, id, "terminal: late deliveries during shutdown"),
#include "preempt_events.def"
#undef PREEMPT_EVENT
};

static const struct preempt_machine_def machine = {
    .rows = rows,
    .n_rows = sizeof(rows) / sizeof(rows[0]),
    .ignored = ignored,
    .n_ignored = sizeof(ignored) / sizeof(ignored[0]),
    .initial = PREEMPT_STATE_IDLE,
    .final = PREEMPT_STATE_EXIT,
};

const struct preempt_machine_def *preempt_fsm_def_(void)
{
    return &machine;
}

struct preempt_core preempt_fsm_init_(void)
{
    return (struct preempt_core){ .state = PREEMPT_STATE_IDLE };
}

/* ---- planning ------------------------------------------------------------ */

/* The final round must start at this step boundary when waiting one more
 * step would leave too little time for: the steps up to the agreed step (the
 * lead) and the one in flight, the agreement round trip, the save with half
 * again as safety, and the exit margin. Each of the two steps is budgeted at the
 * mean step time plus four mean deviations (TCP's retransmission-timeout
 * estimator, RFC 6298): with the mean alone, two slower-than-average steps
 * in a row overran the deadline (make bench, planning sweep). TensorFlow's
 * rule (PREEMPT_PLAN_TF) is deadline - 6 x mean step time and ignores the
 * save and agreement times. */
/* The measured rule's time: the lead's steps and the one in flight at
 * the mean plus four deviations (step_ms a step), more steps at the mean
 * alone (over many steps the deviations average out), the agreement, 1.5
 * saves and the margin. */
static uint64_t measured_need(const struct preempt_facts *f, uint64_t more, uint64_t step_ms)
{
    uint64_t fixed = f->agree_ms + f->save_ms + f->save_ms / 2 + f->cfg.margin_ms, per = step_ms + 4 * f->step_dev_ms;
    uint64_t lead = preempt_plan_lead_(f, 0, 0) + 1;

    if (per < step_ms || per > (UINT64_MAX - fixed) / lead / 2 || (more && step_ms > (UINT64_MAX - fixed) / more / 2))
        return UINT64_MAX; /* a job's record named an absurd pace: due at once */
    return lead * per + more * step_ms + fixed;
}

bool preempt_plan_final_due_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms)
{
    uint64_t need = 0;

    if (deadline_ms == 0)
        return false;
    switch (f->cfg.plan) {
    case PREEMPT_PLAN_MEASURED:
        need = measured_need(f, 0, f->step_ms);
        break;
    case PREEMPT_PLAN_TF:
        /* TF's rule, measured from the moment the shell's timer ends the
         * run (the deadline less the margin), so that both plans are
         * judged against the same exit time. */
        need = 6 * f->step_ms + f->cfg.margin_ms;
        break;
    case PREEMPT_PLAN__COUNT:
        break;
    }
    return now_ms + need >= deadline_ms;
}

void preempt_step_stats_(uint64_t *mean_us, uint64_t *dev_us, uint64_t d_us)
{
    if (*mean_us == 0) {
        *mean_us = d_us;
        *dev_us = d_us / 2;
        return;
    }
    *dev_us = (3 * *dev_us + (d_us > *mean_us ? d_us - *mean_us : *mean_us - d_us)) / 4;
    *mean_us = (3 * *mean_us + d_us) / 4;
}

void preempt_facts_measure_step_(struct preempt_facts *f, uint64_t *mean_us, uint64_t *dev_us, uint64_t d_us)
{
    preempt_step_stats_(mean_us, dev_us, d_us);
    f->step_ms = (*mean_us + 999) / 1000;
    f->step_dev_ms = (*dev_us + 999) / 1000;
}

uint64_t preempt_save_own_(const struct preempt_save_times *t)
{
    return t->awaited_ms ? t->awaited_ms : t->paced_ms;
}

void preempt_facts_measure_save_(struct preempt_facts *f, struct preempt_save_times *t, uint64_t ms,
                                 enum preempt_save_kind kind)
{
    uint64_t own;

    if (kind == PREEMPT_SAVE_JOB)
        t->job_ms = ms;
    else if (kind == PREEMPT_SAVE_PACED && ms > t->paced_ms)
        t->paced_ms = ms;
    else if (kind == PREEMPT_SAVE_AWAITED && ms > t->awaited_ms)
        t->awaited_ms = ms;
    own = preempt_save_own_(t);
    f->save_ms = own > t->job_ms ? own : t->job_ms;
}

bool preempt_plan_periodic_due_(uint64_t run, uint64_t every, uint64_t last)
{
    return every && run / every > last / every;
}

/* Agreement without boundary waits: a worker whose peers run a collective
 * inside every step must not stop at its boundary for them (they would be
 * blocked in the next collective, waiting for it). The driver proposes S =
 * its step plus the lead with the notice, so that S reaches every worker
 * before it gets there; the driver itself waits at S only if S has not
 * come back by then (bounded by the round's timer), and a worker past S
 * raises it by the same lead. */
static uint64_t lead_with(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms, uint64_t extra)
{
    uint64_t step = f->step_ms ? f->step_ms : 1, agree = f->agree_ms ? f->agree_ms : PREEMPT_AGREE_GUESS_MS;
    uint64_t lead, room;

    if (f->cfg.workers <= 1)
        return 1; /* nobody to hear from: save at the next boundary */
    lead = PREEMPT_LEAD_MIN + (agree + step - 1) / step + extra;
    if (deadline_ms == 0)
        return lead;
    /* The save at S must still end before the deadline less the margin. */
    room = now_ms + f->save_ms + f->cfg.margin_ms < deadline_ms
               ? (deadline_ms - now_ms - f->save_ms - f->cfg.margin_ms) / step
               : 0;
    return lead < room ? lead : room > 1 ? room : 1;
}

uint64_t preempt_plan_lead_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms)
{
    return lead_with(f, now_ms, deadline_ms, 0);
}

/* The final round's allowance for drift. Workers that train through a
 * grace period without a collective drift apart, by a share of the steps
 * they train; one that is past the final round's step when it learns it
 * raises the step by its own lead, and the driver, if it is the slowest,
 * may then not reach the raised step before the deadline (the round ends
 * aborted: the countdown's training is lost). Opening the final round
 * earlier by the drift, with a lead longer by as many steps, proposes the
 * same step at a driver's steady pace (it trains no step less), and tells
 * workers up to that many steps ahead before they get there: they wait at
 * it instead of raising it. */
uint64_t preempt_plan_drift_(const struct preempt_core *c, const struct preempt_facts *f)
{
    if (f->cfg.grace_ms == 0 || f->cfg.workers <= 1 || f->run <= c->save_step)
        return 0;
    return (f->run - c->save_step + PREEMPT_DRIFT_SHARE - 1) / PREEMPT_DRIFT_SHARE;
}

uint64_t preempt_plan_behind_(const struct preempt_facts *f, uint64_t now_ms)
{
    uint64_t slow;

    if (f->cfg.grace_ms == 0 || f->cfg.workers <= 1 || f->slow_step_ms == 0 || now_ms < f->slow_at_ms)
        return 0;
    slow = f->slow_step + (now_ms - f->slow_at_ms) / f->slow_step_ms;
    return f->run > slow ? f->run - slow : 0;
}

/* A driver faster than a peer trains ahead of it through the countdown:
 * planned for its own pace alone, the final round's step was one the
 * peer could not reach before the deadline less the margin, and the round
 * was aborted (tests/multi.sh, "grace-pace"). The peer must cover the
 * lead, the drift allowance and the steps it is behind, at its own pace:
 * the lead budgeted as the plain rule does, the others at the mean (with
 * four deviations each, a worker a step behind in a lockstep job opened
 * the final round 20 steps early in the sanitized build). */
bool preempt_plan_final_due_job_(const struct preempt_core *c, const struct preempt_facts *f, uint64_t now_ms,
                                 uint64_t deadline_ms)
{
    uint64_t drift = preempt_plan_drift_(c, f), behind;

    if (preempt_plan_final_due_(f, now_ms + drift * f->step_ms, deadline_ms))
        return true;
    behind = preempt_plan_behind_(f, now_ms);
    if (behind == 0 || deadline_ms == 0 || f->cfg.plan != PREEMPT_PLAN_MEASURED)
        return false;
    return measured_need(f, drift + behind, f->slow_step_ms > f->step_ms ? f->slow_step_ms : f->step_ms) >=
           (deadline_ms > now_ms ? deadline_ms - now_ms : 0);
}

enum preempt_action preempt_action_of_(const struct preempt_core *c, uint64_t run, bool save_asked, bool alone)
{
    enum preempt_state s = c->state;

    if (s == PREEMPT_STATE_EXIT)
        return PREEMPT_ACTION_EXIT;
    if (save_asked) /* a withdrawn (or advisory, or periodic) round's save ends nothing */
        return s == PREEMPT_STATE_FINAL_SAVE && !c->withdrawn ? PREEMPT_ACTION_SAVE_EXIT : PREEMPT_ACTION_SAVE;
    switch (s) {
    case PREEMPT_STATE_IDLE:
    case PREEMPT_STATE_STEP_AGREED:
    case PREEMPT_STATE_COUNTDOWN:
        return PREEMPT_ACTION_CONTINUE;
    case PREEMPT_STATE_PERSISTING:
        /* training goes on while the checkpoint persists. A worker alone
         * stops once a notice made it the preemption's last save (steps
         * after it are lost anyway, and the persist, awaited, runs back to
         * back). In a job it trains on until the commit: a peer that has
         * not read the notice yet may be inside a collective that waits for
         * this worker's next step, and its loop runs only after it; a
         * worker that stopped there held it until its lease ended
         * (tests/torchrun.sh, 1 run in about 25). */
        return preempt_fsm_save_is_last_(c) && alone ? PREEMPT_ACTION_WAIT : PREEMPT_ACTION_CONTINUE;
    case PREEMPT_STATE_OWN_SIGNAL:    /* the round's step is not known yet: on up to this worker's proposal */
    case PREEMPT_STATE_FOLLOWING:
    case PREEMPT_STATE_STOPPING:      /* on up to the job's stop step, where step-reached exits */
        return run < c->cap ? PREEMPT_ACTION_CONTINUE : PREEMPT_ACTION_WAIT;
    case PREEMPT_STATE_SAVING:        /* this worker's save is done; committing */
    case PREEMPT_STATE_FINAL_SAVE:
    case PREEMPT_STATE_FINISHING:     /* training is done; the persist and the commit are awaited */
    case PREEMPT_STATE_REJOINING:     /* the next incarnation's barriers are awaited */
        return PREEMPT_ACTION_WAIT;
    case PREEMPT_STATE_EXIT:
    case PREEMPT_STATE__COUNT:
        break;
    }
    return PREEMPT_ACTION_EXIT;
}

/* ---- the last save ---------------------------------------------------------- */

/* This worker's judgement that a save at @p step ends the preemption: the
 * final round's, any round's without a grace period, or a first save after
 * whose commit the final round would already be due (the steps up to step,
 * the save and the commit's round trip, each as measured here). */
bool preempt_plan_last_(const struct preempt_core *c, const struct preempt_facts *f, uint64_t now_ms, uint64_t step)
{
    uint64_t ahead = step > f->run ? step - f->run : 0;

    if (c->round == 1 || f->cfg.grace_ms == 0)
        return true;
    return preempt_plan_final_due_(f, now_ms + ahead * (f->step_ms + 4 * f->step_dev_ms) + f->save_ms + f->agree_ms,
                                   c->deadline_ms);
}

bool preempt_plan_supersede_(const struct preempt_facts *f, uint64_t now_ms, uint64_t deadline_ms,
                             uint64_t save_step)
{
    uint64_t lost = f->run > save_step ? f->run - save_step : 0;

    if (deadline_ms == 0 || f->save_ms == 0 || f->persist_left_ms == 0 ||
        preempt_plan_final_due_(f, now_ms, deadline_ms))
        return false; /* no new save is known to fit: the persist is the one chance */
    if (now_ms + f->persist_left_ms + f->agree_ms + f->cfg.margin_ms > deadline_ms)
        return true; /* it would be late; a new save is not */
    return f->cfg.grace_ms == 0 && lost > preempt_plan_lead_(f, now_ms, deadline_ms);
}

bool preempt_fsm_save_is_last_(const struct preempt_core *c)
{
    return c->last && !c->withdrawn;
}

uint64_t preempt_fsm_fx_stop_(const struct preempt_core *c, const struct preempt_facts *f, const struct preempt_fx *fx,
                              uint64_t now_ms)
{
    struct preempt_facts later = *f;

    if (fx->kind != PREEMPT_FX_REPORT_SHARD || !preempt_fsm_fx_last_(c, f, fx, now_ms))
        return 0;
    if (c->state != PREEMPT_STATE_PERSISTING)
        return f->run; /* waiting at S (or done training): it stops where it is */
    /* The decision comes three round trips after the last report (its
     * transaction, the reports' read, the decision's create) and is then
     * watched: the lead of three agreements, and never less than
     * PREEMPT_STOP_LEAD_MIN_MS (the mean agreement is no bound on one). */
    later.agree_ms = 3 * (f->agree_ms ? f->agree_ms : PREEMPT_AGREE_GUESS_MS);
    if (later.agree_ms < PREEMPT_STOP_LEAD_MIN_MS)
        later.agree_ms = PREEMPT_STOP_LEAD_MIN_MS;
    return f->run + preempt_plan_lead_(&later, now_ms, c->deadline_ms);
}

bool preempt_fsm_fx_proposes_(enum preempt_fx_kind kind)
{
    return kind == PREEMPT_FX_CLAIM_DRIVER || kind == PREEMPT_FX_PROPOSE_STEP || kind == PREEMPT_FX_REQUEST_FINAL;
}

bool preempt_fsm_fx_last_(const struct preempt_core *c, const struct preempt_facts *f, const struct preempt_fx *fx,
                          uint64_t now_ms)
{
    if (preempt_fsm_fx_proposes_(fx->kind))
        return preempt_plan_last_(c, f, now_ms, (uint64_t)fx->arg);
    if (fx->kind != PREEMPT_FX_REPORT_SHARD || c->withdrawn)
        return false;
    /* The save is done and measured: no time left for another round once
     * the commit is decided (a round trip from now) makes it the last. */
    if (preempt_plan_final_due_(f, now_ms + f->agree_ms, c->deadline_ms))
        return true;
    /* A checkpoint that persisted while training went on past its step (a
     * periodic one that a notice met) is not the last while another round
     * fits: the decision then names no stop step, the job counts down from
     * the commit and its final round saves the step it stops at, so that
     * the restart trains nothing again. As the last, every step trained
     * past it would be lost (13 to 21 in a DDP job with 50 ms steps). */
    return c->last && (c->state != PREEMPT_STATE_PERSISTING || c->deadline_ms == 0);
}

static uint64_t min_known(uint64_t a, uint64_t b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    return a < b ? a : b;
}

/* One agreement round's bound: the configured timeout, plus the step
 * boundaries the round needs (a trainer that reads records only at its
 * boundaries sends the proposal at one, a raise at another, and learns the
 * raised step at a third), so that steps longer than the timeout still
 * agree. */
static uint64_t agree_bound(const struct preempt_facts *f)
{
    return f->cfg.agree_timeout_ms + PREEMPT_LEAD_MIN * (f->step_ms + 4 * f->step_dev_ms);
}

/* The deadline a notice implies: the one it carries, capped by the grace
 * period when one is configured; without either, the configured bound.
 * A periodic checkpoint's notice (periodic: its source) ends no process:
 * without a deadline of its own, its round's is the round's own bound,
 * agreement's (agree_timeout_ms plus three measured steps) and a save,
 * when that is longer than the configured bound, and no grace period
 * caps it. With bound_ms alone, steps longer than it never reached the
 * round's step in time: the first periodic checkpoint ended the run
 * (75), locally and in a job. */
static uint64_t notice_deadline(uint64_t given, bool periodic, uint64_t now, const struct preempt_facts *f)
{
    uint64_t d = given, own;

    if (periodic && d == 0) {
        own = agree_bound(f) + f->save_ms + f->cfg.margin_ms;
        d = now + (own > f->cfg.bound_ms ? own : f->cfg.bound_ms);
    }
    if (f->cfg.grace_ms > 0 && !periodic)
        d = min_known(d, now + f->cfg.grace_ms);
    if (d == 0)
        d = now + f->cfg.bound_ms;
    /* Effects carry deadlines as int64: one past 2^63 ms (a garbled
     * notice) is as good as never; found by fuzz-scenario. */
    return d > INT64_MAX ? INT64_MAX : d;
}

/* The deadline this worker's own notice (ev) implies. */
static uint64_t own_deadline(const struct preempt_event *ev, const struct preempt_facts *f)
{
    return notice_deadline(ev->u.notice.deadline, ev->u.notice.source == PREEMPT_SOURCE_PERIODIC, ev->now_ms, f);
}

/* ---- guards ---------------------------------------------------------------- */

/* Whether this worker stands at its boundary: it reached the step it
 * proposed and waits there (preempt_action_of_). Only then is "run == S"
 * a boundary at S; otherwise an asynchronous trainer may already be inside
 * step S + 1, and the worker is past S. */
static bool held(const struct preempt_core *c, const struct preempt_facts *f)
{
    return f->run >= c->cap;
}

/* Whether this worker stays in place at the commit ev: configured, no
 * notice of its own, and its state is the committed step. */
static bool in_place(const struct preempt_core *c, const struct preempt_event *ev, const struct preempt_facts *f)
{
    return f->cfg.in_place && !c->noticed && ev->u.ckpt_committed.step == f->run;
}

static bool guard_holds(enum preempt_guard g, const struct preempt_core *c, const struct preempt_event *ev,
                        const struct preempt_facts *f)
{
    switch (g) {
    case PREEMPT_GUARD_ALWAYS:
        return true;
    case PREEMPT_GUARD_SECOND_EXITS:
        return c->noticed && f->cfg.second == PREEMPT_SECOND_EXIT;
    case PREEMPT_GUARD_CURRENT:
        return ev->u.timer.gen == c->timer_gen;
    case PREEMPT_GUARD_APP_CODE:
        return ev->u.peer_error.code > 0;
    case PREEMPT_GUARD_PAST_AGREED:
        return f->run > ev->u.step_agreed.step || (f->run == ev->u.step_agreed.step && !held(c, f));
    case PREEMPT_GUARD_AT_FINAL:
        return f->run == ev->u.step_agreed.step && held(c, f) && ev->u.step_agreed.last;
    case PREEMPT_GUARD_AT_AGREED:
        return f->run == ev->u.step_agreed.step && held(c, f);
    case PREEMPT_GUARD_RAISED:
        return ev->u.step_agreed.step > c->save_step;
    case PREEMPT_GUARD_RAISED_SAVED:
        return ev->u.step_agreed.step > c->save_step && c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_RAISED_OK:
        return ev->u.save_done.status == 0 && c->raised_to > c->save_step;
    case PREEMPT_GUARD_RAISED_PENDING:
        return c->raised_to > c->save_step;
    case PREEMPT_GUARD_RAISED_OPEN_PAST:
        return ev->u.step_agreed.step > c->save_step && !c->abort_proposed && f->run >= ev->u.step_agreed.step;
    case PREEMPT_GUARD_RAISED_OPEN:
        return ev->u.step_agreed.step > c->save_step && !c->abort_proposed;
    case PREEMPT_GUARD_SUPERSEDES:
        return !c->shard_out && !c->abort_proposed &&
               !(c->noticed && f->cfg.second == PREEMPT_SECOND_EXIT) &&
               preempt_plan_supersede_(f, ev->now_ms,
                                       min_known(c->deadline_ms, own_deadline(ev, f)),
                                       c->save_step);
    case PREEMPT_GUARD_CURRENT_WITHDRAWN:
        return ev->u.timer.gen == c->timer_gen && c->withdrawn;
    case PREEMPT_GUARD_NO_STEP:
        return !c->have_step;
    case PREEMPT_GUARD_PAST_SAVE_STEP:
        return ev->u.step_reached.step > c->save_step;
    case PREEMPT_GUARD_COMMITTED_LAST:
        return ev->u.ckpt_committed.stop != 0;
    case PREEMPT_GUARD_STOP_AHEAD:
        return ev->u.ckpt_committed.stop > f->run;
    case PREEMPT_GUARD_AT_STOP:
        return ev->u.step_reached.step >= c->cap;
    case PREEMPT_GUARD_FINAL_AT_SAVE:
        return ev->u.step_reached.step == c->save_step && c->last;
    case PREEMPT_GUARD_AT_SAVE_STEP:
        return ev->u.step_reached.step == c->save_step;
    case PREEMPT_GUARD_SAVE_OK:
        return ev->u.save_done.status == 0;
    case PREEMPT_GUARD_WITHDRAWN:
        return c->withdrawn;
    case PREEMPT_GUARD_COMMITTED:
        return c->committed;
    case PREEMPT_GUARD_COMMITTED_SHARD_OUT:
        return c->committed && c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_GIVEN_UP:
        return c->committed && c->withdrawn;
    case PREEMPT_GUARD_PEER_GONE:
        return c->peer_gone;
    case PREEMPT_GUARD_COMMITTED_SAVING:
        return c->committed && !c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_GIVEN_UP_SAVING:
        return c->committed && c->withdrawn && !c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_FINAL_DUE:
        /* Without a grace period there is nothing to train through: a
         * countdown then comes only from a first checkpoint whose decision
         * names no stop step (a periodic one's: reported before the notice,
         * withdrawn then, or persisting at the notice with room for another
         * round, preempt_fsm_fx_last_), and its final round is due at once.
         * Before, the job trained on towards the bound and exited "done" if
         * training ended first (tests/two-phase.sh, "late-*"). */
        return c->driver && (f->cfg.grace_ms == 0 || preempt_plan_final_due_job_(c, f, ev->now_ms, c->deadline_ms));
    case PREEMPT_GUARD_IS_DRIVER:
        return c->driver;
    case PREEMPT_GUARD_SHARD_OUT:
        return c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_CURRENT_SHARD_OUT:
        return ev->u.timer.gen == c->timer_gen && c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_SECOND_EXITS_SHARD_OUT:
        return c->noticed && f->cfg.second == PREEMPT_SECOND_EXIT && c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_PROPOSED:
        return c->abort_proposed;
    case PREEMPT_GUARD_PEER_FAILED_SHARD_OUT:
        return ev->u.peer_error.code <= 0 && c->shard_out && !c->abort_proposed;
    case PREEMPT_GUARD_PEER_FAILED_PROPOSED:
        return ev->u.peer_error.code <= 0 && c->abort_proposed;
    case PREEMPT_GUARD_CURRENT_PROPOSED:
        return ev->u.timer.gen == c->timer_gen && c->abort_proposed;
    case PREEMPT_GUARD_IN_PLACE:
        return in_place(c, ev, f);
    case PREEMPT_GUARD_IN_PLACE_ENDS:
        return (ev->u.ckpt_committed.stop != 0 || c->peer_gone) && in_place(c, ev, f);
    case PREEMPT_GUARD__COUNT:
        break;
    }
    return false;
}

/* ---- what a transition records ------------------------------------------- */

/* The states in which this worker's checkpoint at S is being written. */
static bool saving_state(enum preempt_state s)
{
    return s == PREEMPT_STATE_SAVING || s == PREEMPT_STATE_FINAL_SAVE || s == PREEMPT_STATE_PERSISTING ||
           s == PREEMPT_STATE_FINISHING;
}

/* Records the event's payload in the context; runs for transitions only. */
static void record(struct preempt_core *n, enum preempt_state from, const struct preempt_event *ev,
                   const struct preempt_facts *f)
{
    switch (ev->kind) {
    case PREEMPT_EV_NOTICE:
        n->noticed = true;
        n->withdrawn = false; /* a new notice stands, whatever was withdrawn before */
        n->deadline_ms = min_known(n->deadline_ms, own_deadline(ev, f));
        break;
    case PREEMPT_EV_PEER_NOTICE:
        n->withdrawn = false;
        n->deadline_ms = min_known(n->deadline_ms, notice_deadline(ev->u.peer_notice.deadline, false, ev->now_ms, f));
        break;
    case PREEMPT_EV_NOTICE_WITHDRAWN:
        n->withdrawn = true;
        break;
    case PREEMPT_EV_CLAIM_WON:
        n->driver = true;
        break;
    case PREEMPT_EV_CLAIM_LOST:
        n->driver = false;
        break;
    case PREEMPT_EV_STEP_AGREED:
        if (saving_state(from)) {
            /* a raise: taken up when the save at the old step is done */
            n->raised_to = ev->u.step_agreed.step;
            n->raised_last = ev->u.step_agreed.last != 0;
            break;
        }
        n->have_step = true;
        n->save_step = ev->u.step_agreed.step;
        n->last = ev->u.step_agreed.last != 0; /* the job's record decides, whatever this worker judged */
        break;
    case PREEMPT_EV_CKPT_COMMITTED:
        n->committed = true;
        n->last = n->last || ev->u.ckpt_committed.stop != 0; /* the decision record's word */
        if (from == PREEMPT_STATE_PERSISTING && n->state == PREEMPT_STATE_STOPPING)
            n->cap = ev->u.ckpt_committed.stop; /* not passed: step-reached there exits */
        n->shard_out = n->abort_proposed = false; /* decided */
        break;
    case PREEMPT_EV_SAVE_DONE:
        n->shard_out = ev->u.save_done.status == 0;
        break;
    case PREEMPT_EV_APP_ERROR:
        n->err_code = ev->u.app_error.code;
        break;
    case PREEMPT_EV_PEER_ERROR:
        n->err_code = ev->u.peer_error.code;
        break;
    case PREEMPT_EV_ROUND_ABORTED:
        n->shard_out = n->abort_proposed = false; /* decided */
        break;
    case PREEMPT_EV_PEER_LOST:
        n->peer_gone = true;
        break;
    case PREEMPT_EV_FINAL_REQUESTED:
    case PREEMPT_EV_STEP_REACHED:
    case PREEMPT_EV_PERSIST_STARTED:
    case PREEMPT_EV_REJOINED: /* to idle: forget() starts afresh */
    case PREEMPT_EV_REJOIN_FAILED:
    case PREEMPT_EV_TIMER:
    case PREEMPT_EV_RESTART_REQUESTED:
    case PREEMPT_EV_COORD_FAILED:
    case PREEMPT_EV_TRAINING_DONE:
    case PREEMPT_EV__COUNT:
        break;
    }
    /* Moved off a step by a raise: the copy there goes (discard-shard), and
     * the round is the raised step's. */
    /* Raised to a step this worker passed while its checkpoint persisted:
     * the copy goes, and the round is agreed anew from its own raise. */
    if (from == PREEMPT_STATE_PERSISTING && n->state == PREEMPT_STATE_FOLLOWING) {
        n->old_step = n->save_step;
        n->raised_to = 0;
        n->shard_out = false;
    }
    if (saving_state(from) && n->state == PREEMPT_STATE_STEP_AGREED && n->raised_to > n->save_step) {
        n->old_step = n->save_step;
        n->save_step = n->raised_to;
        n->last = n->raised_last;
        n->raised_to = 0;
        n->shard_out = false;
    }
    /* Entering agreement from idle or the countdown: no step of the round
     * is known, and nothing is proposed yet. */
    if (preempt_state_timer_(n->state) == PREEMPT_TIMER_AGREE && preempt_state_timer_(from) != PREEMPT_TIMER_AGREE) {
        n->have_step = false;
        n->cap = UINT64_MAX;
    }
    /* Entering agreement opens a round with a fixed bound: later notices
     * re-arm the timer for an earlier deadline but never extend the round.
     * Leaving the countdown for agreement opens the final round. A notice
     * of this worker's own opens it only when the claim is answered: until
     * then the job may not know of the notice (etcd unreachable), and only
     * the deadline bounds the wait (a round ended earlier loses the notice
     * for every other worker; found by the simulation). */
    if (preempt_state_timer_(n->state) == PREEMPT_TIMER_AGREE && preempt_state_timer_(from) != PREEMPT_TIMER_AGREE) {
        n->agree_by_ms = from == PREEMPT_STATE_IDLE && ev->kind == PREEMPT_EV_NOTICE ? 0
                                                                                      : ev->now_ms + agree_bound(f);
        if (from == PREEMPT_STATE_COUNTDOWN)
            n->round = 1;
    }
    if ((ev->kind == PREEMPT_EV_CLAIM_WON || ev->kind == PREEMPT_EV_CLAIM_LOST) && n->agree_by_ms == 0 &&
        preempt_state_timer_(n->state) == PREEMPT_TIMER_AGREE)
        n->agree_by_ms = ev->now_ms + agree_bound(f);
    /* Finishing: the job's decision on this worker's checkpoint is awaited
     * with nothing to train; a fresh bound from training's end and from the
     * shard's report (timer_at). */
    if (n->state == PREEMPT_STATE_FINISHING && (from != PREEMPT_STATE_FINISHING || ev->kind == PREEMPT_EV_SAVE_DONE))
        n->agree_by_ms = ev->now_ms + agree_bound(f);
}

/* Back to idle: nothing is known any more (after the effects' arguments
 * are made: a copy discarded on the way names its step). The timer
 * generation goes on, so that a timer of the old round stays stale. */
static void forget(struct preempt_core *n)
{
    uint32_t gen = n->timer_gen;

    *n = preempt_fsm_init_();
    n->timer_gen = gen;
}

/* ---- effect arguments ---------------------------------------------------- */

/* How long a proposed abort awaits the job's decision: one agreement
 * round's bound, but at most until half the exit margin is left (the timer
 * that proposes it typically fires with the whole margin left). */
static uint64_t decide_by(const struct preempt_core *n, const struct preempt_event *ev, const struct preempt_facts *f)
{
    uint64_t at = ev->now_ms + f->cfg.agree_timeout_ms, half = f->cfg.margin_ms / 2;

    if (n->deadline_ms > half && n->deadline_ms - half < at)
        at = n->deadline_ms - half;
    return at > ev->now_ms ? at : ev->now_ms + 1;
}

static int64_t timer_at(const struct preempt_core *n, const struct preempt_facts *f)
{
    /* A deadline within the margin of the clock's start is due at once (1:
     * 0 means none); it is never the deadline itself, which would give the
     * save the margin's time. */
    uint64_t at = !n->deadline_ms ? 0 : n->deadline_ms > f->cfg.margin_ms ? n->deadline_ms - f->cfg.margin_ms : 1;

    if (preempt_state_timer_(n->state) == PREEMPT_TIMER_AGREE)
        at = min_known(at, n->agree_by_ms);
    if (n->state == PREEMPT_STATE_FINISHING && n->withdrawn) /* no deadline stands: the decision's own bound */
        at = n->agree_by_ms;
    if (n->abort_proposed)
        at = n->decide_by_ms;
    return (int64_t)at;
}

const char *preempt_fsm_exit_why_(enum preempt_state from, const struct preempt_event *ev,
                                  const struct preempt_core *next)
{
    switch (ev->kind) {
    case PREEMPT_EV_TIMER:
        if (next->abort_proposed)
            return "the job's decision on the proposed abort did not come in time";
        if (preempt_state_timer_(from) == PREEMPT_TIMER_AGREE && next->agree_by_ms &&
            (!next->deadline_ms || next->agree_by_ms <= next->deadline_ms))
            return "no step was agreed within the round's bound (agree_timeout_ms plus 3 measured steps)";
        return "the deadline, less the exit margin, came before a checkpoint was committed";
    case PREEMPT_EV_PEER_LOST:
        return "a worker of the job lost its membership";
    case PREEMPT_EV_COORD_FAILED:
        return "the coordination store stayed unreachable past its retry bound";
    case PREEMPT_EV_ROUND_ABORTED:
        return "the job aborted the round";
    case PREEMPT_EV_PEER_ERROR:
        return "another worker failed";
    case PREEMPT_EV_APP_ERROR:
        return "the application failed";
    case PREEMPT_EV_RESTART_REQUESTED:
        return "the trainer asked for a restart (it cannot go on without a lost peer)";
    case PREEMPT_EV_STEP_REACHED:
        return "the trainer went past the agreed step";
    case PREEMPT_EV_NOTICE:
        return from == PREEMPT_STATE_REJOINING ? "a notice came while this worker rejoined the job in place"
                                               : "a second notice, configured to exit at once";
    case PREEMPT_EV_REJOIN_FAILED:
        return "this worker stayed in place, but the job's next incarnation could not be joined in time";
    case PREEMPT_EV_SAVE_DONE:
        return ev->u.save_done.status != 0 ? "the save failed" : "the save is done";
    case PREEMPT_EV_CKPT_COMMITTED:
        return "the job committed the checkpoint";
    case PREEMPT_EV_TRAINING_DONE:
        return "training is done";
    case PREEMPT_EV_PEER_NOTICE:
    case PREEMPT_EV_NOTICE_WITHDRAWN:
    case PREEMPT_EV_PERSIST_STARTED:
    case PREEMPT_EV_CLAIM_WON:
    case PREEMPT_EV_CLAIM_LOST:
    case PREEMPT_EV_FINAL_REQUESTED:
    case PREEMPT_EV_STEP_AGREED:
    case PREEMPT_EV_REJOINED:
    case PREEMPT_EV__COUNT:
        break;
    }
    return "the job's protocol ended the run";
}

static int64_t event_code(const struct preempt_event *ev)
{
    const struct preempt_param_desc *p = preempt_event_params_(ev->kind);

    for (unsigned i = 0; p && i < PREEMPT_EVENT_PARAMS; i++)
        if (p[i].type == PREEMPT_PT_i64)
            return *(const int64_t *)(const void *)((const char *)ev + p[i].offset);
    return -EPROTO;
}

static int64_t fx_arg(const struct preempt_fx_spec *s, const struct preempt_core *n, const struct preempt_event *ev,
                      const struct preempt_facts *f)
{
    switch (s->kind) {
    case PREEMPT_FX_PUBLISH_NOTICE:
        return (int64_t)own_deadline(ev, f);
    case PREEMPT_FX_CLAIM_DRIVER: /* a proposal: this worker's step plus the lead */
    case PREEMPT_FX_PROPOSE_STEP:
        return (int64_t)(f->run + preempt_plan_lead_(f, ev->now_ms, n->deadline_ms));
    case PREEMPT_FX_REQUEST_FINAL: /* the lead and the drift (the countdown's first step is still save_step) */
        return (int64_t)(f->run + lead_with(f, ev->now_ms, n->deadline_ms, preempt_plan_drift_(n, f)));
    case PREEMPT_FX_ANNOUNCE_DONE:
    case PREEMPT_FX_ANNOUNCE_LEFT:
    case PREEMPT_FX_REJOIN: /* the step this worker's state holds */
        return (int64_t)f->run;
    case PREEMPT_FX_RESUME:
        return (int64_t)ev->u.rejoined.step;
    case PREEMPT_FX_BEGIN_SAVE:
    case PREEMPT_FX_REPORT_SHARD:
    case PREEMPT_FX_PROPOSE_ABORT:
        return (int64_t)n->save_step;
    case PREEMPT_FX_DISCARD_SHARD: /* the aborted round's step, or the one a raise moved this worker off
                                    * (or, leaving for exit or idle, the step of the copy left behind) */
        return (int64_t)(ev->kind == PREEMPT_EV_ROUND_ABORTED || n->state == PREEMPT_STATE_EXIT ||
                                 n->state == PREEMPT_STATE_IDLE
                             ? n->save_step
                             : n->old_step);
    case PREEMPT_FX_KEEP_SHARD:
        return (int64_t)ev->u.ckpt_committed.step;
    case PREEMPT_FX_ARM_TIMER:
        return timer_at(n, f);
    case PREEMPT_FX_PUBLISH_ERROR:
        return s->how == PREEMPT_HOW_PROTOCOL ? -EPROTO : event_code(ev);
    case PREEMPT_FX_EXIT:
        switch (s->how) {
        case PREEMPT_HOW_DONE:
            return PREEMPT_EXIT_DONE;
        case PREEMPT_HOW_SAVED:
            return PREEMPT_EXIT_SAVED;
        case PREEMPT_HOW_ERROR:
            return PREEMPT_EXIT_ERROR;
        case PREEMPT_HOW_ABORT:
            return n->committed ? PREEMPT_EXIT_SAVED : PREEMPT_EXIT_NOT_SAVED;
        case PREEMPT_HOW_DEFAULT:
        case PREEMPT_HOW_EVENT:
        case PREEMPT_HOW_PROTOCOL:
        case PREEMPT_HOW__COUNT:
            break;
        }
        return PREEMPT_EXIT_NOT_SAVED;
    case PREEMPT_FX_DISARM_TIMER:
    case PREEMPT_FX_CLEAR_ROUND:
    case PREEMPT_FX__COUNT:
        break;
    }
    return 0;
}

/* ---- the step ------------------------------------------------------------- */

enum preempt_verdict preempt_fsm_fallback_(enum preempt_state s, enum preempt_event_kind e, const char **ret_why)
{
    for (size_t i = 0; i < machine.n_ignored; i++) {
        if (ignored[i].state == s && ignored[i].on == e) {
            if (ret_why)
                *ret_why = ignored[i].why;
            return PREEMPT_VERDICT_IGNORED;
        }
    }
    if (ret_why)
        *ret_why = NULL;
    return PREEMPT_VERDICT_ILLEGAL;
}

struct preempt_step preempt_fsm_step_(const struct preempt_core *cur, const struct preempt_event *ev,
                                      const struct preempt_facts *facts)
{
    struct preempt_step st = { .next = *cur, .row = -1 };

    if ((unsigned)cur->state >= PREEMPT_STATE__COUNT || (unsigned)ev->kind >= PREEMPT_EV__COUNT) {
        st.verdict = PREEMPT_VERDICT_ILLEGAL;
        return st;
    }
    for (size_t i = 0; i < machine.n_rows; i++) {
        const struct preempt_row *r = &rows[i];

        if (r->from != cur->state || r->on != ev->kind || !guard_holds(r->guard, cur, ev, facts))
            continue;
        st.verdict = PREEMPT_VERDICT_TRANSITION;
        st.row = (int)i;
        st.next.state = r->to;
        record(&st.next, cur->state, ev, facts);
        for (unsigned k = 0; k < r->n_fx; k++) {
            if (r->fx[k].kind == PREEMPT_FX_ARM_TIMER)
                st.next.timer_gen++;
            if (r->fx[k].kind == PREEMPT_FX_PROPOSE_ABORT) {
                st.next.abort_proposed = true;
                st.next.decide_by_ms = decide_by(&st.next, ev, facts);
            }
            st.fx[k].kind = r->fx[k].kind;
            st.fx[k].arg = fx_arg(&r->fx[k], &st.next, ev, facts);
            if (preempt_fsm_fx_proposes_(r->fx[k].kind))
                st.next.cap = (uint64_t)st.fx[k].arg;
        }
        st.n_fx = r->n_fx;
        if (st.next.state == PREEMPT_STATE_IDLE)
            forget(&st.next);
        return st;
    }
    st.verdict = preempt_fsm_fallback_(cur->state, ev->kind, NULL);
    return st;
}
