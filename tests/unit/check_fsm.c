/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_fsm.c: the pure core. Table-driven transitions, an
 * exhaustive sweep of every (state, event) pair under many guard outcomes,
 * tie-break order, the planner, and the table checker fed broken tables.
 * Links fsm/ only. */
#include "check-main.h"
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_fsm.h"
#include "preempt_trace.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ST(s) PREEMPT_STATE_##s
#define FXA(k, a) { PREEMPT_FX_##k, (a) }

static struct preempt_facts facts(uint64_t run, uint64_t grace_ms)
{
    struct preempt_facts f = { .cfg = preempt_config_defaults_(), .run = run };
    f.cfg.grace_ms = grace_ms;
    return f;
}

/* ---- table-driven transitions (R16) ---------------------------------------------- */

struct fsm_case {
    const char *name;
    struct preempt_core cur;
    struct preempt_event ev;
    uint64_t run, grace_ms, step_ms, save_ms, persist_left_ms;
    enum preempt_second second;
    bool in_place; /* survivors stay in place (the config's fact) */
    enum preempt_verdict verdict;
    enum preempt_state next;
    uint8_t n_fx;
    struct preempt_fx fx[PREEMPT_FX_MAX];
};

#define CORE(s, ...) { .state = ST(s), __VA_ARGS__ }
#define EVT(k, t, ...) { .kind = PREEMPT_EV_##k, .now_ms = (t), __VA_ARGS__ }
#define T PREEMPT_VERDICT_TRANSITION
#define I PREEMPT_VERDICT_IGNORED
#define X PREEMPT_VERDICT_ILLEGAL
#define NOT_SAVED PREEMPT_EXIT_NOT_SAVED
#define SAVED PREEMPT_EXIT_SAVED

static const struct fsm_case cases[] = {
    { "signal in idle: publish, claim proposing the next step; until the claim's answer the deadline bounds it",
      CORE(IDLE), EVT(NOTICE, 1000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 5,
      .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 31000), FXA(CLAIM_DRIVER, 6), FXA(ARM_TIMER, 30500) } },
    /* A periodic checkpoint's notice ends no process: its round's deadline
     * is the round's own bound (agreement's: agree_timeout_ms plus three
     * measured steps, and a save) when longer than bound_ms. With bound_ms
     * alone, 60 s steps never reached the round's step in time: the first
     * periodic checkpoint ended the run, 75 (tests/long-steps.sh, make
     * check-long). */
    { "a periodic checkpoint with 60 s steps: its round's own bound, not bound_ms",
      CORE(IDLE), EVT(NOTICE, 60000, .u.notice = { PREEMPT_SOURCE_PERIODIC, 0 }), .run = 1, .step_ms = 60000,
      .save_ms = 2000, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 252500), FXA(CLAIM_DRIVER, 2), FXA(ARM_TIMER, 252000) } },
    { "a periodic checkpoint with short steps: bound_ms, the longer",
      CORE(IDLE), EVT(NOTICE, 1000, .u.notice = { PREEMPT_SOURCE_PERIODIC, 0 }), .run = 5, .step_ms = 100,
      .save_ms = 2000, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 31000), FXA(CLAIM_DRIVER, 6), FXA(ARM_TIMER, 30500) } },
    { "a periodic checkpoint in a grace period's configuration: not the grace's end (nothing ends then)",
      CORE(IDLE), EVT(NOTICE, 1000, .u.notice = { PREEMPT_SOURCE_PERIODIC, 0 }), .run = 5, .step_ms = 100,
      .grace_ms = 3000, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 31000), FXA(CLAIM_DRIVER, 6), FXA(ARM_TIMER, 30500) } },
    { "a notice's own deadline wins over the bound",
      CORE(IDLE), EVT(NOTICE, 1000, .u.notice = { PREEMPT_SOURCE_AWS, 8000 }), .run = 5,
      .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 8000), FXA(CLAIM_DRIVER, 6), FXA(ARM_TIMER, 7500) } },
    { "a deadline within the margin of the clock's start: the timer is due at once, not at the deadline",
      CORE(IDLE), EVT(NOTICE, 18, .u.notice = { PREEMPT_SOURCE_AZURE, 19 }), .run = 3,
      .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 19), FXA(CLAIM_DRIVER, 4), FXA(ARM_TIMER, 1) } },
    { "grace caps the deadline",
      CORE(IDLE), EVT(NOTICE, 1000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 5, .grace_ms = 5000,
      .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 3,
      .fx = { FXA(PUBLISH_NOTICE, 6000), FXA(CLAIM_DRIVER, 6), FXA(ARM_TIMER, 5500) } },
    { "a peer's notice: follow, writing nothing",
      CORE(IDLE), EVT(PEER_NOTICE, 1000, .u.peer_notice = { 2, 40000 }), .run = 9,
      .verdict = T, .next = ST(FOLLOWING), .n_fx = 1, .fx = { FXA(ARM_TIMER, 11000) } },
    { "claim lost: follow the winner's step; the agreement's bound starts",
      CORE(OWN_SIGNAL, .deadline_ms = 31000), EVT(CLAIM_LOST, 1002, .u.claim_lost = { 1 }),
      .verdict = T, .next = ST(FOLLOWING), .n_fx = 1, .fx = { FXA(ARM_TIMER, 11002) } },
    { "the driver's own step comes back: train on to it",
      CORE(OWN_SIGNAL, .deadline_ms = 31000, .driver = true), EVT(STEP_AGREED, 1005, .u.step_agreed = { 8 }),
      .run = 5, .verdict = T, .next = ST(STEP_AGREED), .n_fx = 1, .fx = { FXA(ARM_TIMER, 30500) } },
    /* The driver trained on to its proposal while it went out: it is at S
     * and saves now. */
    { "the driver's step comes back with the driver at it: save at once",
      CORE(OWN_SIGNAL, .deadline_ms = 31000, .driver = true), EVT(STEP_AGREED, 1005, .u.step_agreed = { 13 }),
      .run = 13, .grace_ms = 60000, .verdict = T, .next = ST(SAVING), .n_fx = 2,
      .fx = { FXA(ARM_TIMER, 30500), FXA(BEGIN_SAVE, 13) } },
    { "the same in the final round, the record saying last: the final save at once",
      CORE(OWN_SIGNAL, .deadline_ms = 31000, .driver = true, .round = 1),
      EVT(STEP_AGREED, 1005, .u.step_agreed = { 13, 1 }), .run = 13, .grace_ms = 60000, .verdict = T,
      .next = ST(FINAL_SAVE), .n_fx = 2, .fx = { FXA(ARM_TIMER, 30500), FXA(BEGIN_SAVE, 13) } },
    { "a follower below the agreed step trains on",
      CORE(FOLLOWING, .deadline_ms = 31000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 8 }), .run = 5,
      .verdict = T, .next = ST(STEP_AGREED), .n_fx = 1, .fx = { FXA(ARM_TIMER, 30500) } },
    { "a follower at the agreed step the record calls the last saves its last checkpoint at once",
      CORE(FOLLOWING, .deadline_ms = 31000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 5, 1 }), .run = 5,
      .verdict = T, .next = ST(FINAL_SAVE), .n_fx = 2, .fx = { FXA(ARM_TIMER, 30500), FXA(BEGIN_SAVE, 5) } },
    { "a follower at the agreed step with grace saves its first checkpoint",
      CORE(FOLLOWING, .deadline_ms = 31000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 5, 0 }), .run = 5,
      .grace_ms = 60000, .verdict = T, .next = ST(SAVING), .n_fx = 2,
      .fx = { FXA(ARM_TIMER, 30500), FXA(BEGIN_SAVE, 5) } },
    { "the record decides, not this worker's settings: grace 0 here, and the record says not last",
      CORE(FOLLOWING, .deadline_ms = 31000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 5, 0 }), .run = 5,
      .verdict = T, .next = ST(SAVING), .n_fx = 2, .fx = { FXA(ARM_TIMER, 30500), FXA(BEGIN_SAVE, 5) } },
    { "the record decides, not this worker's estimate: time enough here, and the record says last",
      CORE(FOLLOWING, .deadline_ms = 61000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 5, 1 }), .run = 5,
      .grace_ms = 60000, .verdict = T, .next = ST(FINAL_SAVE), .n_fx = 2,
      .fx = { FXA(ARM_TIMER, 60500), FXA(BEGIN_SAVE, 5) } },
    { "a worker past the proposed step raises it: its step plus the lead, and it trains no further",
      CORE(FOLLOWING, .deadline_ms = 31000), EVT(STEP_AGREED, 1006, .u.step_agreed = { 4 }), .run = 5,
      .verdict = T, .next = ST(FOLLOWING), .n_fx = 1, .fx = { FXA(PROPOSE_STEP, 6) } },
    { "a raise reaches a worker training towards the old step: on to the new one",
      CORE(STEP_AGREED, .save_step = 8, .have_step = true, .deadline_ms = 31000),
      EVT(STEP_AGREED, 1100, .u.step_agreed = { 12 }), .run = 7, .verdict = T, .next = ST(STEP_AGREED) },
    { "a lower or repeated step is an echo",
      CORE(STEP_AGREED, .save_step = 8, .have_step = true, .deadline_ms = 31000),
      EVT(STEP_AGREED, 1100, .u.step_agreed = { 8 }), .run = 7, .verdict = I, .next = ST(STEP_AGREED) },
    { "a raise after this worker saved at the old step: the copy goes, training goes on to the new step",
      CORE(SAVING, .save_step = 8, .have_step = true, .shard_out = true, .deadline_ms = 31000),
      EVT(STEP_AGREED, 1300, .u.step_agreed = { 12 }), .run = 8, .verdict = T, .next = ST(STEP_AGREED),
      .n_fx = 1, .fx = { FXA(DISCARD_SHARD, 8) } },
    { "a raise while the save at the old step runs: it waits for the save's end",
      CORE(SAVING, .save_step = 8, .have_step = true, .deadline_ms = 31000),
      EVT(STEP_AGREED, 1300, .u.step_agreed = { 12 }), .run = 8, .verdict = T, .next = ST(SAVING) },
    { "the save ends after a raise came: the copy goes, training goes on to the raised step",
      CORE(SAVING, .save_step = 8, .raised_to = 12, .have_step = true, .deadline_ms = 31000),
      EVT(SAVE_DONE, 1400, .u.save_done = { 0 }), .run = 8, .verdict = T, .next = ST(STEP_AGREED),
      .n_fx = 1, .fx = { FXA(DISCARD_SHARD, 8) } },
    { "a raise after this worker proposed the abort: the decision is awaited",
      CORE(SAVING, .save_step = 8, .have_step = true, .shard_out = true, .abort_proposed = true,
           .deadline_ms = 31000),
      EVT(STEP_AGREED, 1300, .u.step_agreed = { 12 }), .run = 8, .verdict = T, .next = ST(SAVING) },
    { "steps below S are training",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(STEP_REACHED, 1100, .u.step_reached = { 7 }),
      .run = 7, .verdict = I, .next = ST(STEP_AGREED) },
    { "step S of a last save: the final save",
      CORE(STEP_AGREED, .save_step = 8, .last = true, .deadline_ms = 31000), EVT(STEP_REACHED, 1200, .u.step_reached = { 8 }),
      .run = 8, .verdict = T, .next = ST(FINAL_SAVE), .n_fx = 1, .fx = { FXA(BEGIN_SAVE, 8) } },
    { "step S of a save that is not the last: the first save",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 61000), EVT(STEP_REACHED, 1200, .u.step_reached = { 8 }),
      .run = 8, .grace_ms = 60000, .verdict = T, .next = ST(SAVING), .n_fx = 1, .fx = { FXA(BEGIN_SAVE, 8) } },
    { "a step beyond S is a protocol error",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(STEP_REACHED, 1200, .u.step_reached = { 9 }),
      .run = 9, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(PUBLISH_ERROR, -EPROTO), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "the echo of the agreed step is ignored",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(STEP_AGREED, 1200, .u.step_agreed = { 8 }),
      .run = 7, .verdict = I, .next = ST(STEP_AGREED) },
    { "own shard saved: report it",
      CORE(FINAL_SAVE, .save_step = 8, .deadline_ms = 31000), EVT(SAVE_DONE, 1300, .u.save_done = { 0 }), .run = 8,
      .verdict = T, .next = ST(FINAL_SAVE), .n_fx = 1, .fx = { FXA(REPORT_SHARD, 8) } },
    { "committed: exit with the saved code",
      CORE(FINAL_SAVE, .save_step = 8, .deadline_ms = 31000), EVT(CKPT_COMMITTED, 1310, .u.ckpt_committed = { 8 }),
      .run = 8, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "a failed save propagates and exits not-saved",
      CORE(FINAL_SAVE, .save_step = 8, .deadline_ms = 31000), EVT(SAVE_DONE, 1300, .u.save_done = { -ENOSPC }),
      .run = 8, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PROPOSE_ABORT, 8), FXA(PUBLISH_ERROR, -ENOSPC), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "a failed final save after a committed first one still exits saved",
      CORE(FINAL_SAVE, .save_step = 20, .round = 1, .committed = true, .deadline_ms = 31000),
      EVT(SAVE_DONE, 1300, .u.save_done = { -EIO }), .run = 20, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PROPOSE_ABORT, 20), FXA(PUBLISH_ERROR, -EIO), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "the deadline in countdown: the first checkpoint stands",
      CORE(COUNTDOWN, .committed = true, .timer_gen = 3, .deadline_ms = 31000), EVT(TIMER, 30500, .u.timer = { 3 }),
      .run = 12, .verdict = T, .next = ST(EXIT), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "a stale timer is ignored",
      CORE(COUNTDOWN, .committed = true, .timer_gen = 3, .deadline_ms = 31000), EVT(TIMER, 30500, .u.timer = { 2 }),
      .run = 12, .verdict = I, .next = ST(COUNTDOWN) },
    { "agreement timeout: nothing saved",
      CORE(FOLLOWING, .timer_gen = 1, .deadline_ms = 31000), EVT(TIMER, 11000, .u.timer = { 1 }), .run = 5,
      .verdict = T, .next = ST(EXIT), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "second notice, policy exit",
      CORE(OWN_SIGNAL, .noticed = true, .deadline_ms = 31000), EVT(NOTICE, 2000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }),
      .run = 5, .second = PREEMPT_SECOND_EXIT, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PUBLISH_NOTICE, 32000), FXA(ANNOUNCE_LEFT, 5), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    /* the peers would wait for a final round it will not save in: it tells
     * the job it left (the lost record), and exits with the committed save */
    { "second notice in the countdown, policy exit: the job is told it left",
      CORE(COUNTDOWN, .noticed = true, .committed = true, .save_step = 40, .deadline_ms = 31000),
      EVT(NOTICE, 2000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 52, .second = PREEMPT_SECOND_EXIT,
      .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PUBLISH_NOTICE, 32000), FXA(ANNOUNCE_LEFT, 52), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    /* The notices withdrawn in the final round: a worker still counting
     * down goes to idle, so every worker does (the round is given up; the
     * first checkpoint stands), whichever record it saw first. Sim seed
     * 6548: the driver requested the round just before its watch brought
     * the withdrawal, saved alone and exited at the round's bound. */
    /* sim seed 4821: a peer left on a second notice just after its report;
     * the round committed first, and the countdown waited for a final
     * round that peer could not report in */
    { "a commit after a peer's membership ended: the preemption ends at it",
      CORE(SAVING, .save_step = 32, .have_step = true, .shard_out = true, .abort_proposed = true, .peer_gone = true,
           .timer_gen = 4, .deadline_ms = 27834),
      EVT(CKPT_COMMITTED, 16500, .u.ckpt_committed = { 32, 0 }), .run = 32, .verdict = T, .next = ST(EXIT),
      .n_fx = 3, .fx = { FXA(KEEP_SHARD, 32), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "a peer lost while this worker's shard is out: it proposes the abort, and remembers the peer",
      CORE(SAVING, .save_step = 32, .have_step = true, .shard_out = true, .timer_gen = 4, .deadline_ms = 27834),
      EVT(PEER_LOST, 16400, .u.peer_lost = { 1 }), .run = 32, .verdict = T, .next = ST(SAVING), .n_fx = 2,
      .fx = { FXA(PROPOSE_ABORT, 32), FXA(ARM_TIMER, 26400) } },
    { "a second notice, policy exit, with the shard out: the abort proposed, the job told it left",
      CORE(SAVING, .noticed = true, .save_step = 32, .have_step = true, .shard_out = true, .timer_gen = 4,
           .deadline_ms = 27834),
      EVT(NOTICE, 16405, .u.notice = { PREEMPT_SOURCE_OPERATOR, 33947 }), .run = 32, .second = PREEMPT_SECOND_EXIT,
      .verdict = T, .next = ST(EXIT), .n_fx = 5,
      .fx = { FXA(PUBLISH_NOTICE, 33947), FXA(PROPOSE_ABORT, 32), FXA(ANNOUNCE_LEFT, 32), FXA(DISARM_TIMER, 0),
              FXA(EXIT, NOT_SAVED) } },
    { "the notices withdrawn just after the driver requested the final round: back to idle",
      CORE(OWN_SIGNAL, .noticed = true, .committed = true, .driver = true, .round = 1, .save_step = 107,
           .have_step = true, .timer_gen = 6, .deadline_ms = 8962),
      EVT(NOTICE_WITHDRAWN, 6344, .u.notice_withdrawn = { PREEMPT_SOURCE_AZURE }), .run = 90, .verdict = T,
      .next = ST(IDLE), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "the notices withdrawn while a follower trains towards the final round's step: back to idle",
      CORE(STEP_AGREED, .committed = true, .round = 1, .save_step = 107, .have_step = true, .deadline_ms = 8962),
      EVT(NOTICE_WITHDRAWN, 6400, .u.notice_withdrawn = { PREEMPT_SOURCE_AZURE }), .run = 95, .verdict = T,
      .next = ST(IDLE), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "the notices withdrawn before the first commit: the round's save goes on (an opportunistic checkpoint)",
      CORE(STEP_AGREED, .save_step = 40, .have_step = true, .deadline_ms = 8962),
      EVT(NOTICE_WITHDRAWN, 2400, .u.notice_withdrawn = { PREEMPT_SOURCE_AZURE }), .run = 37, .verdict = T,
      .next = ST(STEP_AGREED) },
    { "the notices withdrawn after this worker reported its final shard: it proposes the abort at once",
      CORE(FINAL_SAVE, .committed = true, .round = 1, .save_step = 107, .have_step = true, .shard_out = true,
           .timer_gen = 7, .deadline_ms = 20000),
      EVT(NOTICE_WITHDRAWN, 7700, .u.notice_withdrawn = { PREEMPT_SOURCE_AZURE }), .run = 107, .verdict = T,
      .next = ST(FINAL_SAVE), .n_fx = 2, .fx = { FXA(PROPOSE_ABORT, 107), FXA(ARM_TIMER, 17700) } },
    { "the notices withdrawn while this worker's final save runs: no deadline stands, the timer goes",
      CORE(FINAL_SAVE, .committed = true, .round = 1, .save_step = 193, .have_step = true, .timer_gen = 7,
           .deadline_ms = 67401),
      EVT(NOTICE_WITHDRAWN, 62486, .u.notice_withdrawn = { PREEMPT_SOURCE_INJECT }), .run = 193, .verdict = T,
      .next = ST(FINAL_SAVE), .n_fx = 1, .fx = { FXA(DISARM_TIMER, 0) } },
    /* sim seed 41822: a peer's abort came while the save ran; taken to
     * idle then, the save's end came to a machine that had none */
    { "the given-up round aborted while this worker's save runs: its end is awaited",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .round = 1, .save_step = 193, .have_step = true,
           .timer_gen = 8, .deadline_ms = 67401),
      EVT(ROUND_ABORTED, 62490, .u.round_aborted = { 193 }), .run = 193, .verdict = T, .next = ST(FINAL_SAVE) },
    /* its peers, idle, ignore both (idle's pairs): it exited alone, and
     * the job trained on without it */
    { "a peer lost while a given-up final save runs: as in idle, the save's end is awaited",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .round = 1, .save_step = 193, .have_step = true,
           .deadline_ms = 67401),
      EVT(PEER_LOST, 62490, .u.peer_lost = { 2 }), .run = 193, .verdict = T, .next = ST(FINAL_SAVE) },
    { "the coordination store away while a given-up final save runs: as in idle, the save's end is awaited",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .round = 1, .save_step = 193, .have_step = true,
           .deadline_ms = 67401),
      EVT(COORD_FAILED, 62490, .u.coord_failed = { -ETIMEDOUT }), .run = 193, .verdict = T, .next = ST(FINAL_SAVE) },
    { "a final save that ends after the withdrawal: discarded unreported, back to idle",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .round = 1, .save_step = 107, .have_step = true,
           .timer_gen = 7, .deadline_ms = 20000),
      EVT(SAVE_DONE, 7700, .u.save_done = { 0 }), .run = 107, .verdict = T, .next = ST(IDLE), .n_fx = 3,
      .fx = { FXA(DISCARD_SHARD, 107), FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "a two-phase final save whose snapshot was taken after the withdrawal: discarded, back to idle",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .round = 1, .save_step = 107, .have_step = true,
           .timer_gen = 7, .deadline_ms = 20000),
      EVT(PERSIST_STARTED, 7700, .u.persist_started = { 1024 }), .run = 107, .verdict = T, .next = ST(IDLE),
      .n_fx = 3, .fx = { FXA(DISCARD_SHARD, 107), FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "the given-up final round aborted: back to idle, not to the exit",
      CORE(FINAL_SAVE, .committed = true, .withdrawn = true, .abort_proposed = true, .round = 1, .save_step = 107,
           .have_step = true, .timer_gen = 8, .deadline_ms = 20000),
      EVT(ROUND_ABORTED, 7720, .u.round_aborted = { 107 }), .run = 107, .verdict = T, .next = ST(IDLE), .n_fx = 3,
      .fx = { FXA(DISCARD_SHARD, 107), FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "a periodic round's last save aborted (withdrawn, nothing committed): the exit, as before",
      CORE(FINAL_SAVE, .withdrawn = true, .save_step = 60, .have_step = true, .shard_out = true, .timer_gen = 3),
      EVT(ROUND_ABORTED, 7720, .u.round_aborted = { 60 }), .run = 60, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(DISCARD_SHARD, 60), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "second notice, policy ignore: recorded; neither the deadline nor the agreement bound moves",
      CORE(OWN_SIGNAL, .noticed = true, .deadline_ms = 31000, .agree_by_ms = 11000),
      EVT(NOTICE, 2000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 5, .verdict = T, .next = ST(OWN_SIGNAL),
      .n_fx = 2, .fx = { FXA(PUBLISH_NOTICE, 32000), FXA(ARM_TIMER, 11000) } },
    { "a later notice with an earlier deadline re-plans the timer",
      CORE(STEP_AGREED, .noticed = true, .save_step = 8, .deadline_ms = 31000),
      EVT(NOTICE, 2000, .u.notice = { PREEMPT_SOURCE_GCE, 9000 }), .run = 5, .verdict = T, .next = ST(STEP_AGREED),
      .n_fx = 2, .fx = { FXA(PUBLISH_NOTICE, 9000), FXA(ARM_TIMER, 8500) } },
    { "a peer's earlier deadline re-plans the timer",
      CORE(COUNTDOWN, .committed = true, .deadline_ms = 61000), EVT(PEER_NOTICE, 2000, .u.peer_notice = { 3, 20000 }),
      .run = 5, .grace_ms = 60000, .verdict = T, .next = ST(COUNTDOWN), .n_fx = 1, .fx = { FXA(ARM_TIMER, 19500) } },
    { "training finished in idle",
      CORE(IDLE), EVT(TRAINING_DONE, 5000, .u.training_done = { 100 }), .run = 100, .verdict = T, .next = ST(EXIT),
      .n_fx = 2, .fx = { FXA(ANNOUNCE_DONE, 100), FXA(EXIT, PREEMPT_EXIT_DONE) } },
    { "training finished before the save step: a normal completion",
      CORE(STEP_AGREED, .save_step = 101, .deadline_ms = 31000), EVT(TRAINING_DONE, 5000, .u.training_done = { 100 }),
      .run = 100, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(ANNOUNCE_DONE, 100), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_DONE) } },
    { "training finished while a periodic checkpoint persists: it is awaited, not dropped, for one agreement bound",
      CORE(PERSISTING, .withdrawn = true, .save_step = 96, .deadline_ms = 3000),
      EVT(TRAINING_DONE, 5000, .u.training_done = { 100 }), .run = 100, .verdict = T, .next = ST(FINISHING),
      .n_fx = 1, .fx = { FXA(ARM_TIMER, 15000) } },
    { "training finished while a preemption's first checkpoint persists: its deadline, not a shorter bound, bounds it",
      CORE(PERSISTING, .noticed = true, .save_step = 96, .deadline_ms = 61000),
      EVT(TRAINING_DONE, 5000, .u.training_done = { 100 }), .run = 100, .verdict = T, .next = ST(FINISHING),
      .n_fx = 1, .fx = { FXA(ARM_TIMER, 60500) } },
    /* A notice while a periodic checkpoint persists (preempt_plan_supersede_):
     * one worker, so the lead is one step; a new save takes 2 s as measured. */
    { "a notice while a periodic checkpoint 40 steps behind persists, no grace: superseded by a new round's save",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 100, .step_ms = 100, .save_ms = 2000,
      .persist_left_ms = 1500, .verdict = T, .next = ST(FOLLOWING), .n_fx = 4,
      .fx = { FXA(PUBLISH_NOTICE, 40000), FXA(DISCARD_SHARD, 60), FXA(PROPOSE_STEP, 101), FXA(ARM_TIMER, 20300) } },
    { "the same notice one step after the checkpoint's step: recent enough, it finishes and is the preemption's",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 61, .step_ms = 100, .save_ms = 2000,
      .persist_left_ms = 1500, .verdict = T, .next = ST(PERSISTING), .n_fx = 2,
      .fx = { FXA(PUBLISH_NOTICE, 40000), FXA(ARM_TIMER, 39500) } },
    { "with a grace period a recent persist that would be late is superseded: a new save still fits",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_AWS, 30000 }), .run = 61, .grace_ms = 60000, .step_ms = 100,
      .save_ms = 2000, .persist_left_ms = 25000, .verdict = T, .next = ST(FOLLOWING), .n_fx = 4,
      .fx = { FXA(PUBLISH_NOTICE, 30000), FXA(DISCARD_SHARD, 60), FXA(PROPOSE_STEP, 62), FXA(ARM_TIMER, 20300) } },
    { "with a grace period a persist that ends in time finishes, however old: the grace period's save follows",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_AWS, 30000 }), .run = 100, .grace_ms = 60000, .step_ms = 100,
      .save_ms = 2000, .persist_left_ms = 1500, .verdict = T, .next = ST(PERSISTING), .n_fx = 2,
      .fx = { FXA(PUBLISH_NOTICE, 30000), FXA(ARM_TIMER, 29500) } },
    { "no new save fits before the deadline: the late persist is the one chance, it goes on",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_AWS, 13000 }), .run = 100, .step_ms = 100, .save_ms = 2000,
      .persist_left_ms = 5000, .verdict = T, .next = ST(PERSISTING), .n_fx = 2,
      .fx = { FXA(PUBLISH_NOTICE, 13000), FXA(ARM_TIMER, 12500) } },
    { "no save measured yet: a new one is not known to fit, the persist goes on",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 100, .step_ms = 100,
      .persist_left_ms = 1500, .verdict = T, .next = ST(PERSISTING), .n_fx = 2,
      .fx = { FXA(PUBLISH_NOTICE, 40000), FXA(ARM_TIMER, 39500) } },
    { "no estimate of the persist yet: it goes on",
      CORE(PERSISTING, .withdrawn = true, .save_step = 60, .timer_gen = 3),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 100, .step_ms = 100, .save_ms = 2000,
      .verdict = T, .next = ST(PERSISTING), .n_fx = 2, .fx = { FXA(PUBLISH_NOTICE, 40000), FXA(ARM_TIMER, 39500) } },
    { "a second notice, policy exit, is not a reason to supersede: it exits",
      CORE(PERSISTING, .noticed = true, .save_step = 60, .timer_gen = 3, .deadline_ms = 40000),
      EVT(NOTICE, 10000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 100, .step_ms = 100, .save_ms = 2000,
      .persist_left_ms = 1500, .second = PREEMPT_SECOND_EXIT, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PUBLISH_NOTICE, 40000), FXA(ANNOUNCE_LEFT, 100), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "a raise while the persist runs: the copy goes at once (its persist stops), training goes on to the new step",
      CORE(PERSISTING, .save_step = 60, .have_step = true, .timer_gen = 3, .deadline_ms = 40000),
      EVT(STEP_AGREED, 11000, .u.step_agreed = { 105, 1 }), .run = 101, .verdict = T, .next = ST(STEP_AGREED),
      .n_fx = 1, .fx = { FXA(DISCARD_SHARD, 60) } },
    { "a raise to a step this worker passed while persisting: the copy goes, it raises past its own",
      CORE(PERSISTING, .save_step = 60, .have_step = true, .timer_gen = 3, .deadline_ms = 40000),
      EVT(STEP_AGREED, 11000, .u.step_agreed = { 105, 1 }), .run = 106, .step_ms = 100, .verdict = T,
      .next = ST(FOLLOWING), .n_fx = 3, .fx = { FXA(DISCARD_SHARD, 60), FXA(PROPOSE_STEP, 107), FXA(ARM_TIMER, 21300) } },
    { "a raise came while the snapshot was taken: nothing persists, the copy goes, training goes on to the new step",
      CORE(SAVING, .save_step = 60, .have_step = true, .raised_to = 64, .timer_gen = 3, .deadline_ms = 40000),
      EVT(PERSIST_STARTED, 11000, .u.persist_started = { 1u << 20 }), .run = 60, .verdict = T,
      .next = ST(STEP_AGREED), .n_fx = 1, .fx = { FXA(DISCARD_SHARD, 60) } },
    { "the same in a periodic round's final save",
      CORE(FINAL_SAVE, .withdrawn = true, .save_step = 60, .have_step = true, .raised_to = 64, .timer_gen = 3),
      EVT(PERSIST_STARTED, 11000, .u.persist_started = { 1u << 20 }), .run = 60, .verdict = T,
      .next = ST(STEP_AGREED), .n_fx = 1, .fx = { FXA(DISCARD_SHARD, 60) } },
    { "a raise after this worker proposed the abort: the decision decides",
      CORE(PERSISTING, .save_step = 60, .have_step = true, .shard_out = true, .abort_proposed = true, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(STEP_AGREED, 11000, .u.step_agreed = { 105, 1 }), .run = 101, .verdict = T, .next = ST(PERSISTING) },
    { "the awaited persist ends: the shard is reported, the decision gets a bound of its own",
      CORE(FINISHING, .withdrawn = true, .save_step = 96, .deadline_ms = 3000, .agree_by_ms = 15000),
      EVT(SAVE_DONE, 20000, .u.save_done = { 0 }), .run = 100, .verdict = T, .next = ST(FINISHING), .n_fx = 2,
      .fx = { FXA(REPORT_SHARD, 96), FXA(ARM_TIMER, 30000) } },
    { "no decision within that bound (a peer left without its shard): the abort is proposed",
      CORE(FINISHING, .withdrawn = true, .save_step = 96, .shard_out = true, .timer_gen = 4, .deadline_ms = 3000,
           .agree_by_ms = 30000),
      EVT(TIMER, 30000, .u.timer = { 4 }), .run = 100, .verdict = T, .next = ST(FINISHING), .n_fx = 2,
      .fx = { FXA(PROPOSE_ABORT, 96), FXA(ARM_TIMER, 30001) } },
    { "the awaited checkpoint commits: done",
      CORE(FINISHING, .withdrawn = true, .save_step = 96, .shard_out = true, .deadline_ms = 61000),
      EVT(CKPT_COMMITTED, 6000, .u.ckpt_committed = { 96 }), .run = 100, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(KEEP_SHARD, 96), FXA(ANNOUNCE_DONE, 100), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_DONE) } },
    { "the awaited persist fails: not saved (the restart trains the last steps again and saves them)",
      CORE(FINISHING, .withdrawn = true, .save_step = 96, .deadline_ms = 61000),
      EVT(SAVE_DONE, 6000, .u.save_done = { -EIO }), .run = 100, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(PROPOSE_ABORT, 96), FXA(PUBLISH_ERROR, -EIO), FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "a raise that training, done, cannot follow: the copy goes, done",
      CORE(FINISHING, .save_step = 96, .have_step = true, .shard_out = true, .deadline_ms = 31000),
      EVT(STEP_AGREED, 6000, .u.step_agreed = { 104 }), .run = 100, .verdict = T, .next = ST(EXIT), .n_fx = 4,
      .fx = { FXA(DISCARD_SHARD, 96), FXA(ANNOUNCE_DONE, 100), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_DONE) } },
    /* A notice made a persisting checkpoint the preemption's last while the
     * job trained on: the commit names one stop step for every worker. */
    { "the last checkpoint commits while this worker trained on: on to the decision's stop step",
      CORE(PERSISTING, .noticed = true, .last = true, .save_step = 60, .shard_out = true, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(CKPT_COMMITTED, 11000, .u.ckpt_committed = { 60, 106 }), .run = 103, .verdict = T, .next = ST(STOPPING),
      .n_fx = 1, .fx = { FXA(KEEP_SHARD, 60) } },
    { "the same decision reaching a worker at its stop step: it exits there, saved",
      CORE(PERSISTING, .noticed = true, .last = true, .save_step = 60, .shard_out = true, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(CKPT_COMMITTED, 11000, .u.ckpt_committed = { 60, 106 }), .run = 106, .verdict = T, .next = ST(EXIT),
      .n_fx = 3, .fx = { FXA(KEEP_SHARD, 60), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "a decision that names no stop step past the save step (an older record): exit at the commit",
      CORE(PERSISTING, .noticed = true, .last = true, .save_step = 60, .shard_out = true, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(CKPT_COMMITTED, 11000, .u.ckpt_committed = { 60, 60 }), .run = 103, .verdict = T, .next = ST(EXIT),
      .n_fx = 3, .fx = { FXA(KEEP_SHARD, 60), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "a synchronous save's workers wait at S: a stop step past it does not hold them",
      CORE(SAVING, .noticed = true, .last = true, .save_step = 60, .shard_out = true, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(CKPT_COMMITTED, 11000, .u.ckpt_committed = { 60, 66 }), .run = 60, .verdict = T, .next = ST(EXIT),
      .n_fx = 3, .fx = { FXA(KEEP_SHARD, 60), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "stopping: a boundary before the stop step: training on",
      CORE(STOPPING, .noticed = true, .committed = true, .last = true, .save_step = 60, .cap = 106, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(STEP_REACHED, 12000, .u.step_reached = { 105 }), .run = 105, .verdict = I, .next = ST(STOPPING) },
    { "stopping: the stop step: exit, saved",
      CORE(STOPPING, .noticed = true, .committed = true, .last = true, .save_step = 60, .cap = 106, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(STEP_REACHED, 12000, .u.step_reached = { 106 }), .run = 106, .verdict = T, .next = ST(EXIT), .n_fx = 2,
      .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "stopping: the deadline less the margin before the stop step: exit, saved (the checkpoint is committed)",
      CORE(STOPPING, .noticed = true, .committed = true, .last = true, .save_step = 60, .cap = 106, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(TIMER, 39500, .u.timer = { 3 }), .run = 104, .verdict = T, .next = ST(EXIT), .n_fx = 2,
      .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "stopping: training finished before the stop step: done",
      CORE(STOPPING, .noticed = true, .committed = true, .last = true, .save_step = 60, .cap = 106, .timer_gen = 3,
           .deadline_ms = 40000),
      EVT(TRAINING_DONE, 12000, .u.training_done = { 104 }), .run = 104, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(ANNOUNCE_DONE, 104), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_DONE) } },
    { "a notice's deadline passes before the awaited checkpoint commits: not saved",
      CORE(FINISHING, .noticed = true, .save_step = 96, .timer_gen = 2, .deadline_ms = 31000),
      EVT(TIMER, 30500, .u.timer = { 2 }), .run = 100, .verdict = T, .next = ST(EXIT), .n_fx = 2,
      .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "an application error is propagated",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(APP_ERROR, 1500, .u.app_error = { 3 }), .run = 7,
      .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(PUBLISH_ERROR, 3), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_ERROR) } },
    { "a propagated application error: the same code",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(PEER_ERROR, 1500, .u.peer_error = { 3, 2 }),
      .run = 7, .verdict = T, .next = ST(EXIT), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_ERROR) } },
    { "a propagated protocol failure: not saved",
      CORE(STEP_AGREED, .save_step = 8, .deadline_ms = 31000), EVT(PEER_ERROR, 1500, .u.peer_error = { -EPROTO, 2 }),
      .run = 7, .verdict = T, .next = ST(EXIT), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "a peer lost during agreement",
      CORE(OWN_SIGNAL, .deadline_ms = 31000), EVT(PEER_LOST, 1500, .u.peer_lost = { 3 }), .run = 7, .verdict = T,
      .next = ST(EXIT), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(EXIT, NOT_SAVED) } },
    { "withdrawn in countdown: back to idle",
      CORE(COUNTDOWN, .committed = true, .deadline_ms = 61000),
      EVT(NOTICE_WITHDRAWN, 3000, .u.notice_withdrawn = { PREEMPT_SOURCE_AZURE }), .run = 9, .grace_ms = 60000,
      .verdict = T, .next = ST(IDLE), .n_fx = 2, .fx = { FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "withdrawn before the save: the save completes, then idle",
      CORE(SAVING, .withdrawn = true, .save_step = 8, .deadline_ms = 61000),
      EVT(CKPT_COMMITTED, 3000, .u.ckpt_committed = { 8 }), .run = 8, .grace_ms = 60000, .verdict = T,
      .next = ST(IDLE), .n_fx = 3, .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(CLEAR_ROUND, 0) } },
    { "first checkpoint committed with grace left: countdown",
      CORE(SAVING, .save_step = 8, .deadline_ms = 61000), EVT(CKPT_COMMITTED, 3000, .u.ckpt_committed = { 8 }),
      .run = 8, .grace_ms = 60000, .step_ms = 100, .save_ms = 200, .verdict = T, .next = ST(COUNTDOWN), .n_fx = 2,
      .fx = { FXA(KEEP_SHARD, 8), FXA(ARM_TIMER, 60500) } },
    { "first checkpoint committed, the decision record says last (a worker's measured save left no time): exit",
      CORE(SAVING, .save_step = 8, .deadline_ms = 61000), EVT(CKPT_COMMITTED, 3000, .u.ckpt_committed = { 8, 1 }),
      .run = 8, .grace_ms = 60000, .step_ms = 100, .save_ms = 200, .verdict = T, .next = ST(EXIT), .n_fx = 3,
      .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_SAVED) } },
    { "first checkpoint committed later than this worker expected: countdown all the same, as the record said",
      CORE(SAVING, .save_step = 8, .deadline_ms = 61000), EVT(CKPT_COMMITTED, 60000, .u.ckpt_committed = { 8 }),
      .run = 8, .grace_ms = 60000, .step_ms = 100, .save_ms = 200, .verdict = T, .next = ST(COUNTDOWN), .n_fx = 2,
      .fx = { FXA(KEEP_SHARD, 8), FXA(ARM_TIMER, 60500) } },
    { "countdown, driver, final due: open the final round",
      CORE(COUNTDOWN, .driver = true, .committed = true, .save_step = 8, .deadline_ms = 61000),
      EVT(STEP_REACHED, 60000, .u.step_reached = { 30 }), .run = 30, .grace_ms = 60000, .step_ms = 100,
      .save_ms = 200, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 2,
      .fx = { FXA(REQUEST_FINAL, 31), FXA(ARM_TIMER, 60500) } },
    { "countdown, driver, final not yet due: training",
      CORE(COUNTDOWN, .driver = true, .committed = true, .save_step = 8, .deadline_ms = 61000),
      EVT(STEP_REACHED, 20000, .u.step_reached = { 30 }), .run = 30, .grace_ms = 60000, .step_ms = 100,
      .save_ms = 200, .verdict = I, .next = ST(COUNTDOWN) },
    { "countdown without a grace period (a notice after a periodic checkpoint's reports): the final round at once",
      CORE(COUNTDOWN, .driver = true, .committed = true, .noticed = true, .save_step = 28, .deadline_ms = 31000),
      EVT(STEP_REACHED, 1000, .u.step_reached = { 30 }), .run = 30, .step_ms = 10, .save_ms = 200, .verdict = T,
      .next = ST(OWN_SIGNAL), .n_fx = 2, .fx = { FXA(REQUEST_FINAL, 31), FXA(ARM_TIMER, 11030) } },
    { "countdown without a grace period, not the driver: training on until the driver's request",
      CORE(COUNTDOWN, .committed = true, .noticed = true, .save_step = 28, .deadline_ms = 31000),
      EVT(STEP_REACHED, 1000, .u.step_reached = { 30 }), .run = 30, .step_ms = 10, .save_ms = 200, .verdict = I,
      .next = ST(COUNTDOWN) },
    { "countdown, follower: the final round's request",
      CORE(COUNTDOWN, .committed = true, .save_step = 8, .deadline_ms = 61000),
      EVT(FINAL_REQUESTED, 60000, .u.final_requested = { 0 }), .run = 31, .grace_ms = 60000, .verdict = T,
      .next = ST(FOLLOWING), .n_fx = 1, .fx = { FXA(ARM_TIMER, 60500) } },
    { "take-over of a round without a step: the follower drives and proposes one", CORE(FOLLOWING, .deadline_ms = 31000),
      EVT(CLAIM_WON, 1500), .run = 5, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 1, .fx = { FXA(PROPOSE_STEP, 6) } },
    { "take-over of a round with a step: the follower drives", CORE(FOLLOWING, .have_step = true, .save_step = 4,
      .deadline_ms = 31000), EVT(CLAIM_WON, 1500), .run = 5, .verdict = T, .next = ST(OWN_SIGNAL), .n_fx = 0 },
    { "a restart asked for while training: the job's error record, then not saved", CORE(IDLE),
      EVT(RESTART_REQUESTED, 1000, .u.restart_requested = { -ENOLINK }), .run = 9, .verdict = T, .next = ST(EXIT),
      .n_fx = 2, .fx = { FXA(PUBLISH_ERROR, -ENOLINK), FXA(EXIT, PREEMPT_EXIT_NOT_SAVED) } },
    { "a restart asked for after this worker reported its shard: the round's abort is proposed first",
      CORE(SAVING, .save_step = 8, .have_step = true, .shard_out = true, .timer_gen = 2, .deadline_ms = 31000),
      EVT(RESTART_REQUESTED, 1000, .u.restart_requested = { -ENOLINK }), .run = 8, .verdict = T, .next = ST(EXIT),
      .n_fx = 4, .fx = { FXA(PROPOSE_ABORT, 8), FXA(PUBLISH_ERROR, -ENOLINK), FXA(DISARM_TIMER, 0),
                         FXA(EXIT, PREEMPT_EXIT_NOT_SAVED) } },
    { "a restart asked for in the countdown: this preemption's checkpoint is committed (saved)",
      CORE(COUNTDOWN, .committed = true, .save_step = 8, .deadline_ms = 61000),
      EVT(RESTART_REQUESTED, 1000, .u.restart_requested = { -ENOLINK }), .run = 12, .verdict = T, .next = ST(EXIT),
      .n_fx = 3, .fx = { FXA(PUBLISH_ERROR, -ENOLINK), FXA(DISARM_TIMER, 0), FXA(EXIT, PREEMPT_EXIT_SAVED) } },
    { "exit is terminal", CORE(EXIT), EVT(NOTICE, 1, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .verdict = I,
      .next = ST(EXIT) },
    { "a save outcome in idle is a shell bug", CORE(IDLE), EVT(SAVE_DONE, 1), .verdict = X, .next = ST(IDLE) },
    { "a commit while following is a shell bug", CORE(FOLLOWING, .deadline_ms = 31000),
      EVT(CKPT_COMMITTED, 1, .u.ckpt_committed = { 3 }), .verdict = X, .next = ST(FOLLOWING) },

    /* Survivors in place. */
    { "in place: the last commit, no notice of its own, its state the step: keep it, rejoin",
      CORE(SAVING, .save_step = 8, .shard_out = true, .deadline_ms = 31000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 8 }), .run = 8, .in_place = true, .verdict = T,
      .next = ST(REJOINING), .n_fx = 3, .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(REJOIN, 8) } },
    { "in place, but the notice was this worker's own: it exits",
      CORE(SAVING, .save_step = 8, .shard_out = true, .noticed = true, .deadline_ms = 31000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 8 }), .run = 8, .in_place = true, .verdict = T,
      .next = ST(EXIT), .n_fx = 3, .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "not configured: the survivor exits as before",
      CORE(SAVING, .save_step = 8, .shard_out = true, .deadline_ms = 31000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 8 }), .run = 8, .verdict = T,
      .next = ST(EXIT), .n_fx = 3, .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "in place, but its state is past the committed step (it trained on): it exits",
      CORE(SAVING, .save_step = 8, .shard_out = true, .deadline_ms = 31000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 8 }), .run = 9, .in_place = true, .verdict = T,
      .next = ST(EXIT), .n_fx = 3, .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(EXIT, SAVED) } },
    { "in place, a commit that leaves time for a final round: the countdown, as before",
      CORE(SAVING, .save_step = 8, .shard_out = true, .deadline_ms = 61000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 0 }), .run = 8, .grace_ms = 60000, .in_place = true,
      .verdict = T, .next = ST(COUNTDOWN), .n_fx = 2, .fx = { FXA(KEEP_SHARD, 8), FXA(ARM_TIMER, 60500) } },
    { "in place after a peer left: the commit ends the preemption, the survivor rejoins",
      CORE(SAVING, .save_step = 8, .shard_out = true, .peer_gone = true, .deadline_ms = 61000),
      EVT(CKPT_COMMITTED, 2000, .u.ckpt_committed = { 8, 0 }), .run = 8, .grace_ms = 60000, .in_place = true,
      .verdict = T, .next = ST(REJOINING), .n_fx = 3,
      .fx = { FXA(KEEP_SHARD, 8), FXA(DISARM_TIMER, 0), FXA(REJOIN, 8) } },
    { "in place: the final round's commit",
      CORE(FINAL_SAVE, .round = 1, .committed = true, .save_step = 20, .shard_out = true, .deadline_ms = 61000),
      EVT(CKPT_COMMITTED, 50000, .u.ckpt_committed = { 20, 20 }), .run = 20, .grace_ms = 60000, .in_place = true,
      .verdict = T, .next = ST(REJOINING), .n_fx = 3,
      .fx = { FXA(KEEP_SHARD, 20), FXA(DISARM_TIMER, 0), FXA(REJOIN, 20) } },
    { "rejoined: idle again, and the trainer rebuilds its collectives",
      CORE(REJOINING, .committed = true, .save_step = 8, .deadline_ms = 31000),
      EVT(REJOINED, 5000, .u.rejoined = { 3, 8 }), .run = 8, .in_place = true, .verdict = T, .next = ST(IDLE),
      .n_fx = 1, .fx = { FXA(RESUME, 8) } },
    { "the replacements did not come in time: exit as the terminated workers did, saved",
      CORE(REJOINING, .committed = true, .save_step = 8), EVT(REJOIN_FAILED, 65000, .u.rejoin_failed = { -ETIMEDOUT }),
      .run = 8, .in_place = true, .verdict = T, .next = ST(EXIT), .n_fx = 1, .fx = { FXA(EXIT, SAVED) } },
    { "a notice to a survivor while it rejoins: it exits, saved",
      CORE(REJOINING, .committed = true, .save_step = 8),
      EVT(NOTICE, 6000, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 }), .run = 8, .in_place = true, .verdict = T,
      .next = ST(EXIT), .n_fx = 1, .fx = { FXA(EXIT, SAVED) } },
    { "a peer lost while rejoining: the incarnation left, ignored",
      CORE(REJOINING, .committed = true, .save_step = 8), EVT(PEER_LOST, 6000, .u.peer_lost = { 2 }), .run = 8,
      .in_place = true, .verdict = I, .next = ST(REJOINING) },
};

START_TEST(test_row)
{
    const struct fsm_case *c = &cases[_i];
    struct preempt_facts f = facts(c->run, c->grace_ms);
    struct preempt_step st;

    f.cfg.second = c->second;
    f.cfg.in_place = c->in_place;
    f.step_ms = c->step_ms;
    f.save_ms = c->save_ms;
    f.persist_left_ms = c->persist_left_ms;
    st = preempt_fsm_step_(&c->cur, &c->ev, &f);
    ck_assert_msg(st.verdict == c->verdict, "%s: verdict %s, expected %s", c->name,
                  preempt_verdict_to_string_(st.verdict), preempt_verdict_to_string_(c->verdict));
    ck_assert_msg(st.next.state == c->next, "%s: next %s, expected %s", c->name, preempt_state_to_string(st.next.state),
                  preempt_state_to_string(c->next));
    ck_assert_msg(st.n_fx == c->n_fx, "%s: %u effects, expected %u", c->name, st.n_fx, c->n_fx);
    for (unsigned k = 0; k < c->n_fx; k++) {
        ck_assert_msg(st.fx[k].kind == c->fx[k].kind, "%s: effect %u is %s, expected %s", c->name, k,
                      preempt_fx_to_string_(st.fx[k].kind), preempt_fx_to_string_(c->fx[k].kind));
        ck_assert_msg(st.fx[k].arg == c->fx[k].arg, "%s: %s:%lld, expected %lld", c->name,
                      preempt_fx_to_string_(st.fx[k].kind), (long long)st.fx[k].arg, (long long)c->fx[k].arg);
    }
}
END_TEST

/* ---- what transitions record ------------------------------------------------------- */

START_TEST(test_ignored_changes_nothing)
{
    struct preempt_core cur = { .state = ST(STEP_AGREED), .save_step = 8, .deadline_ms = 31000, .timer_gen = 4 };
    struct preempt_event ev = { .kind = PREEMPT_EV_TIMER, .now_ms = 9, .u.timer = { 1 } };
    struct preempt_facts f = facts(3, 0);
    struct preempt_step st = preempt_fsm_step_(&cur, &ev, &f);

    ck_assert_int_eq(st.verdict, PREEMPT_VERDICT_IGNORED);
    ck_assert_int_eq(st.n_fx, 0);
    ck_assert_int_eq(st.row, -1);
    ck_assert_mem_eq(&st.next, &cur, sizeof(cur));
}
END_TEST

/* A deadline past 2^63 ms published a negative deadline (fuzz-scenario):
 * it is held at INT64_MAX, which every effect can carry. */
START_TEST(test_huge_deadline_is_capped)
{
    struct preempt_core cur = { .state = ST(IDLE) };
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE, .now_ms = 9,
                                .u.notice = { PREEMPT_SOURCE_AWS, UINT64_MAX - 5 } };
    struct preempt_facts f = facts(3, 0);
    struct preempt_step st = preempt_fsm_step_(&cur, &ev, &f);
    bool published = false;

    ck_assert_int_eq(st.verdict, PREEMPT_VERDICT_TRANSITION);
    for (unsigned i = 0; i < st.n_fx; i++)
        if (st.fx[i].kind == PREEMPT_FX_PUBLISH_NOTICE) {
            ck_assert_int_eq(st.fx[i].arg, INT64_MAX);
            published = true;
        }
    ck_assert(published);
    ck_assert_uint_eq(st.next.deadline_ms, INT64_MAX);
}
END_TEST

START_TEST(test_earliest_deadline_wins)
{
    struct preempt_core c = preempt_fsm_init_();
    struct preempt_facts f = facts(1, 0);
    struct preempt_event a = { .kind = PREEMPT_EV_NOTICE, .now_ms = 100, .u.notice = { PREEMPT_SOURCE_GCE, 50000 } };
    struct preempt_event b = { .kind = PREEMPT_EV_PEER_NOTICE, .now_ms = 200, .u.peer_notice = { 2, 20000 } };
    struct preempt_event later = { .kind = PREEMPT_EV_PEER_NOTICE, .now_ms = 300, .u.peer_notice = { 3, 90000 } };

    c = preempt_fsm_step_(&c, &a, &f).next;
    ck_assert_uint_eq(c.deadline_ms, 50000);
    c = preempt_fsm_step_(&c, &b, &f).next;
    ck_assert_uint_eq(c.deadline_ms, 20000);
    c = preempt_fsm_step_(&c, &later, &f).next;
    ck_assert_uint_eq(c.deadline_ms, 20000);
}
END_TEST

START_TEST(test_timer_generations)
{
    struct preempt_core c = preempt_fsm_init_();
    struct preempt_facts f = facts(1, 0);
    struct preempt_event n = { .kind = PREEMPT_EV_NOTICE, .now_ms = 100, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } };
    struct preempt_event agreed = { .kind = PREEMPT_EV_STEP_AGREED, .now_ms = 110, .u.step_agreed = { 2, 1 } };
    struct preempt_event old = { .kind = PREEMPT_EV_TIMER, .now_ms = 120, .u.timer = { 1 } };
    struct preempt_event cur = { .kind = PREEMPT_EV_TIMER, .now_ms = 130, .u.timer = { 2 } };

    c = preempt_fsm_step_(&c, &n, &f).next; /* arms generation 1 */
    ck_assert_uint_eq(c.timer_gen, 1);
    c = preempt_fsm_step_(&c, &agreed, &f).next; /* re-arms: generation 2 */
    ck_assert_uint_eq(c.timer_gen, 2);
    ck_assert_int_eq(preempt_fsm_step_(&c, &old, &f).verdict, PREEMPT_VERDICT_IGNORED);
    ck_assert_int_eq(preempt_fsm_step_(&c, &cur, &f).next.state, ST(EXIT));
}
END_TEST

START_TEST(test_agreement_bound_does_not_slide)
{
    struct preempt_core c = preempt_fsm_init_();
    struct preempt_facts f = facts(4, 0);
    struct preempt_event n = { .kind = PREEMPT_EV_NOTICE, .now_ms = 100, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } };
    struct preempt_event won = { .kind = PREEMPT_EV_CLAIM_WON, .now_ms = 200 };
    struct preempt_event p = { .kind = PREEMPT_EV_PEER_NOTICE, .now_ms = 8000, .u.peer_notice = { 1, 0 } };
    struct preempt_step st;

    c = preempt_fsm_step_(&c, &n, &f).next;
    c = preempt_fsm_step_(&c, &won, &f).next;
    ck_assert_uint_eq(c.agree_by_ms, 10200);
    st = preempt_fsm_step_(&c, &p, &f); /* a notice 8 s later re-arms, but for the same bound */
    ck_assert_int_eq(st.fx[0].kind, PREEMPT_FX_ARM_TIMER);
    ck_assert_int_eq(st.fx[0].arg, 10200);
}
END_TEST

/* A notice of this worker's own while etcd is unreachable: until the claim
 * is answered the job may not know of it, so only the deadline bounds the
 * wait; the round's bound starts with the answer (won or lost). Before,
 * the round ended after agree_timeout_ms and the notice was lost for every
 * other worker (the simulation: a 29-worker job outlived its deadline). */
START_TEST(test_agreement_bound_starts_at_the_claims_answer)
{
    struct preempt_facts f = facts(4, 0);
    struct preempt_event n = { .kind = PREEMPT_EV_NOTICE, .now_ms = 100,
                               .u.notice = { PREEMPT_SOURCE_GCE, 30100 } };
    struct preempt_event tm = { .kind = PREEMPT_EV_TIMER, .now_ms = 29600 };

    for (int lost = 0; lost < 2; lost++) {
        struct preempt_core c = preempt_fsm_init_();
        struct preempt_event answer = { .kind = lost ? PREEMPT_EV_CLAIM_LOST : PREEMPT_EV_CLAIM_WON, .now_ms = 12000 };
        struct preempt_step st = preempt_fsm_step_(&c, &n, &f);

        ck_assert_int_eq(st.next.agree_by_ms, 0);
        ck_assert_int_eq(st.fx[st.n_fx - 1].kind, PREEMPT_FX_ARM_TIMER);
        ck_assert_int_eq(st.fx[st.n_fx - 1].arg, 29600); /* the deadline less the margin */
        c = st.next;
        st = preempt_fsm_step_(&c, &answer, &f); /* 11.9 s later: etcd is back */
        ck_assert_int_eq(st.verdict, PREEMPT_VERDICT_TRANSITION);
        ck_assert_uint_eq(st.next.agree_by_ms, 22000);
        ck_assert_int_eq(st.n_fx, 1);
        ck_assert_int_eq(st.fx[0].kind, PREEMPT_FX_ARM_TIMER);
        ck_assert_int_eq(st.fx[0].arg, 22000);
        c = st.next;
        tm.u.timer.gen = c.timer_gen;
        tm.now_ms = 22000;
        ck_assert_int_eq(preempt_fsm_step_(&c, &tm, &f).next.state, ST(EXIT)); /* then it bounds the round */
    }
}
END_TEST

/* A withdrawal followed by a new notice (own or a peer's) before the
 * commit: the new notice stands, so the commit leads to the exit, not back
 * to idle. */
START_TEST(test_new_notice_after_withdrawal_stands)
{
    static const enum preempt_event_kind again[] = { PREEMPT_EV_NOTICE, PREEMPT_EV_PEER_NOTICE };

    for (unsigned i = 0; i < 2; i++) {
        struct preempt_core c = { .state = ST(FINAL_SAVE), .withdrawn = true, .save_step = 8, .deadline_ms = 31000 };
        struct preempt_event n = { .kind = again[i], .now_ms = 2000 };
        struct preempt_event done = { .kind = PREEMPT_EV_CKPT_COMMITTED, .now_ms = 2100, .u.ckpt_committed = { 8 } };
        struct preempt_facts f = facts(8, 0);
        struct preempt_step st;

        if (again[i] == PREEMPT_EV_NOTICE)
            n.u.notice.source = PREEMPT_SOURCE_AZURE;
        else
            n.u.peer_notice.worker = 2;
        c = preempt_fsm_step_(&c, &n, &f).next;
        ck_assert(!c.withdrawn);
        st = preempt_fsm_step_(&c, &done, &f);
        ck_assert_int_eq(st.next.state, ST(EXIT));
        ck_assert_int_eq(st.fx[st.n_fx - 1].kind, PREEMPT_FX_EXIT);
        ck_assert_int_eq(st.fx[st.n_fx - 1].arg, PREEMPT_EXIT_SAVED);
    }
}
END_TEST

START_TEST(test_idle_again_forgets_but_keeps_generation)
{
    struct preempt_core c = { .state = ST(COUNTDOWN), .committed = true, .driver = true, .noticed = true,
                              .save_step = 8, .deadline_ms = 61000, .timer_gen = 5 };
    struct preempt_event w = { .kind = PREEMPT_EV_NOTICE_WITHDRAWN, .now_ms = 9, .u.notice_withdrawn = { 0 } };
    struct preempt_facts f = facts(9, 60000);
    struct preempt_core n = preempt_fsm_step_(&c, &w, &f).next;

    ck_assert_int_eq(n.state, ST(IDLE));
    ck_assert(!n.committed && !n.driver && !n.noticed && !n.withdrawn);
    ck_assert_uint_eq(n.save_step, 0);
    ck_assert_uint_eq(n.deadline_ms, 0);
    ck_assert_uint_eq(n.timer_gen, 5);
}
END_TEST

START_TEST(test_final_round_sets_round)
{
    struct preempt_core c = { .state = ST(COUNTDOWN), .committed = true, .save_step = 8, .deadline_ms = 61000 };
    struct preempt_event r = { .kind = PREEMPT_EV_FINAL_REQUESTED, .now_ms = 60000, .u.final_requested = { 0 } };
    struct preempt_event agreed = { .kind = PREEMPT_EV_STEP_AGREED, .now_ms = 60010, .u.step_agreed = { 32, 1 } };
    struct preempt_event reached = { .kind = PREEMPT_EV_STEP_REACHED, .now_ms = 60100, .u.step_reached = { 32 } };
    struct preempt_facts f = facts(31, 60000);

    c = preempt_fsm_step_(&c, &r, &f).next;
    ck_assert_uint_eq(c.round, 1);
    c = preempt_fsm_step_(&c, &agreed, &f).next;
    ck_assert_int_eq(c.state, ST(STEP_AGREED));
    f.run = 32;
    c = preempt_fsm_step_(&c, &reached, &f).next;
    ck_assert_int_eq(c.state, ST(FINAL_SAVE)); /* round 1: the record says last */
}
END_TEST

/* ---- the last save: the agreed record's word ------------------------------------------ */

/* A follower's whole round, from the agreed record to the commit: the state
 * it ends in. */
static enum preempt_state round_end(bool last, uint64_t step_ms, uint64_t save_ms, uint64_t commit_at)
{
    struct preempt_core c = { .state = ST(FOLLOWING), .deadline_ms = 61000 };
    struct preempt_facts f = facts(8, 60000);
    struct preempt_event ev[] = {
        { .kind = PREEMPT_EV_STEP_AGREED, .now_ms = 1000, .u.step_agreed = { 8, last } },
        { .kind = PREEMPT_EV_SAVE_DONE, .now_ms = 1000 + save_ms, .u.save_done = { 0 } },
        { .kind = PREEMPT_EV_CKPT_COMMITTED, .now_ms = commit_at, .u.ckpt_committed = { 8 } },
    };

    f.step_ms = step_ms;
    f.save_ms = save_ms;
    for (size_t i = 0; i < ARRAY_SIZE(ev); i++)
        c = preempt_fsm_step_(&c, &ev[i], &f).next;
    return c.state;
}

/* Workers of one job measure different step and save times (a slow disk on
 * one of them) and see the commit at different times. Whether the first
 * save of a grace period is the last one is the agreed record's word: every
 * worker ends the round the same way, whatever it measured (each deciding
 * by its own clock once sent one worker to exit and its peers on into the
 * countdown, where their next all-reduce failed). */
START_TEST(test_last_save_is_the_records)
{
    static const uint64_t step_ms[] = { 1, 100, 2000 }, save_ms[] = { 5, 1400, 30000 };
    static const uint64_t commit_at[] = { 2000, 40000, 60400 };

    for (int last = 0; last <= 1; last++)
        for (size_t a = 0; a < ARRAY_SIZE(step_ms); a++)
            for (size_t b = 0; b < ARRAY_SIZE(save_ms); b++)
                for (size_t t = 0; t < ARRAY_SIZE(commit_at); t++)
                    ck_assert_msg(round_end(last, step_ms[a], save_ms[b], commit_at[t]) ==
                                      (last ? ST(EXIT) : ST(COUNTDOWN)),
                                  "last=%d step %llu ms, save %llu ms, commit at %llu: %s", last,
                                  (unsigned long long)step_ms[a], (unsigned long long)save_ms[b],
                                  (unsigned long long)commit_at[t],
                                  preempt_state_to_string(round_end(last, step_ms[a], save_ms[b], commit_at[t])));
}
END_TEST

/* A worker's opinion, which its proposal of the save step carries. */
START_TEST(test_plan_last_judges_the_commit)
{
    struct preempt_core c = { .state = ST(OWN_SIGNAL), .deadline_ms = 61000 };
    struct preempt_facts f = facts(10, 60000);
    struct preempt_fx prop = { PREEMPT_FX_CLAIM_DRIVER, 14 };

    f.step_ms = 100;
    f.save_ms = 200;
    ck_assert(!preempt_plan_last_(&c, &f, 1000, 14)); /* a minute left */
    ck_assert(preempt_plan_last_(&c, &f, 60000, 14)); /* a second left */
    f.save_ms = 30000; /* a slow disk: its commit and the final round's save would not both fit */
    ck_assert(preempt_plan_last_(&c, &f, 1000, 14));
    f.save_ms = 200;
    ck_assert(preempt_plan_last_(&c, &f, 1000, 10 + 600)); /* 600 steps to the cap: no time after it */
    ck_assert(!preempt_plan_last_(&c, &f, 1000, 10 + 50));
    c.round = 1; /* the final round's save is always the last */
    ck_assert(preempt_plan_last_(&c, &f, 1000, 14));
    c.round = 0;
    f.cfg.grace_ms = 0; /* no grace period: every save is the last */
    ck_assert(preempt_plan_last_(&c, &f, 1000, 14));
    /* The flag each coordination effect carries. */
    ck_assert(preempt_fsm_fx_last_(&c, &f, &prop, 1000));
    f.cfg.grace_ms = 60000;
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &prop, 1000));
    ck_assert(preempt_fsm_fx_last_(&c, &f, &prop, 59900)); /* near the deadline: the proposal says last */
    ck_assert(preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_PROPOSE_STEP, 14 }, 59900));
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_PROPOSE_STEP, 14 }, 1000));
    c.last = true;
    ck_assert(preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000));
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_BEGIN_SAVE, 8 }, 1000));
    c.withdrawn = true; /* a withdrawn round's save returns to idle: the worker stays a member */
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000));
    /* Not the last by the agreed record: the report says "last" when the
     * save, done and measured, left no time for another round (its
     * estimate before the first save was nothing). */
    c.withdrawn = c.last = false;
    f.save_ms = 200;
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000));
    f.save_ms = 40000;
    ck_assert(preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 30000));
    f.save_ms = 200;
    ck_assert(preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 60500));
    c.withdrawn = true;
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 60500));
    /* The stop step a report carries: none unless the save is the last; a
     * worker waiting at S stops there; one training on while its
     * checkpoint persisted names its step plus the lead. */
    c.withdrawn = false;
    c.last = true;
    f.run = 8;
    f.cfg.workers = 4;
    f.step_ms = 100;
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000), 8);
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_PROPOSE_STEP, 8 }, 1000), 0);
    c.state = PREEMPT_STATE_PERSISTING;
    f.run = 13;
    /* Trained on past it while it persisted (a periodic checkpoint a
     * notice met): while another round fits after its commit it is not the
     * last, and names no stop step; the job's final round saves the step it
     * stops at. As the last, the restart would train steps 9-13 again. */
    ck_assert(!preempt_fsm_fx_last_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000));
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000), 0);
    /* With no deadline known, the record's word; the stop step is this
     * worker's step plus the lead. */
    c.deadline_ms = 0;
    f.agree_ms = 250; /* three agreements, 750 ms: 8 steps, and the least lead's 3 */
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000),
                      13 + 3 + 8);
    f.agree_ms = 2; /* three fast agreements: still PREEMPT_STOP_LEAD_MIN_MS, 5 steps */
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000),
                      13 + 3 + 5);
    c.deadline_ms = 2200; /* no room for another round: the last; the deadline caps the stop step: after
                           * the save (200) and the margin (500), 5 steps */
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000),
                      13 + 5);
    c.deadline_ms = 0;
    c.withdrawn = true; /* a periodic round's commit ends nothing: no stop */
    ck_assert_uint_eq(preempt_fsm_fx_stop_(&c, &f, &(struct preempt_fx){ PREEMPT_FX_REPORT_SHARD, 8 }, 1000), 0);
}
END_TEST

/* ---- tie-breaks: rows of a pair are tried in table order ------------------------------ */

START_TEST(test_tie_break_table_order)
{
    const struct preempt_machine_def *m = preempt_fsm_def_();
    int at_final = -1, at_agreed = -1;

    /* Both guards hold for a worker at a last save's step; the earlier
     * row (at-final) must win, and it must come first in the table. */
    for (size_t i = 0; i < m->n_rows; i++) {
        if (m->rows[i].from != ST(FOLLOWING) || m->rows[i].on != PREEMPT_EV_STEP_AGREED)
            continue;
        if (m->rows[i].guard == PREEMPT_GUARD_AT_FINAL)
            at_final = (int)i;
        if (m->rows[i].guard == PREEMPT_GUARD_AT_AGREED)
            at_agreed = (int)i;
    }
    ck_assert_int_ge(at_final, 0);
    ck_assert_int_lt(at_final, at_agreed);
    {
        struct preempt_core c = { .state = ST(FOLLOWING), .deadline_ms = 31000 };
        struct preempt_event ev = { .kind = PREEMPT_EV_STEP_AGREED, .now_ms = 1, .u.step_agreed = { 5, 1 } };
        struct preempt_facts f = facts(5, 0);
        struct preempt_step st = preempt_fsm_step_(&c, &ev, &f);
        ck_assert_int_eq(st.row, at_final);
    }
}
END_TEST

START_TEST(test_guard_before_fallback)
{
    /* A guarded row wins over the pair's ignored entry; the entry applies
     * only when no guard holds. */
    struct preempt_core c = { .state = ST(STEP_AGREED), .save_step = 8, .deadline_ms = 31000 };
    struct preempt_event ev = { .kind = PREEMPT_EV_STEP_REACHED, .now_ms = 1, .u.step_reached = { 8 } };
    struct preempt_facts f = facts(8, 0);
    const char *why = NULL;

    ck_assert_int_eq(preempt_fsm_fallback_(ST(STEP_AGREED), PREEMPT_EV_STEP_REACHED, &why), PREEMPT_VERDICT_IGNORED);
    ck_assert_ptr_nonnull(why);
    ck_assert_int_eq(preempt_fsm_step_(&c, &ev, &f).verdict, PREEMPT_VERDICT_TRANSITION);
}
END_TEST

/* ---- the exhaustive sweep (R2) ---------------------------------------------------------- */

/* Builds a core, an event and facts for `state` and `kind` from the bits of
 * `v`, so that every guard is seen both holding and failing. */
static void variant(unsigned v, enum preempt_state state, enum preempt_event_kind kind, struct preempt_core *c,
                    struct preempt_event *ev, struct preempt_facts *f)
{
    uint64_t rel[] = { 7, 8, 9 }; /* below, at and past S = 8 */

    *f = facts(rel[v % 3], (v & 0x4) ? 60000 : 0);
    f->cfg.second = (v & 0x8) ? PREEMPT_SECOND_EXIT : PREEMPT_SECOND_IGNORE;
    f->step_ms = 100;
    f->save_ms = 300;
    f->persist_left_ms = (v & 0x20) ? 40000 : 0; /* a persist that would be late, or none */
    f->cfg.in_place = v & 0x2;                    /* survivors stay in place */
    memset(c, 0, sizeof(*c));
    c->state = state;
    c->save_step = 8;
    c->deadline_ms = 61000;
    c->timer_gen = 2;
    c->agree_by_ms = 11000;
    c->committed = v & 0x10;
    c->driver = v & 0x20;
    c->noticed = v & 0x40;
    c->withdrawn = v & 0x80;
    c->round = (v & 0x100) ? 1 : 0;
    c->last = c->round == 1 || f->cfg.grace_ms == 0; /* the record's word, as the job would write it */
    c->shard_out = v & 0x800;
    c->abort_proposed = v & 0x1000;
    c->decide_by_ms = c->abort_proposed ? 12000 : 0;
    /* on abort_proposed's bit, not a bit of their own (that would double
     * the sweep): a follower that knows the round's step; a save that a
     * raise overtook; with noticed's, a peer gone. The sweep checks the
     * table, every row fires, whether or not the job can produce each
     * combination. */
    c->have_step = v & 0x1000;
    c->peer_gone = (v & 0x1000) && (v & 0x40);
    c->raised_to = (v & 0x1000) && !c->shard_out ? 9 : 0;
    c->cap = 9;
    memset(ev, 0, sizeof(*ev));
    ev->kind = kind;
    ev->now_ms = (v & 0x200) ? 60900 : 1000; /* near or far from the deadline */
    switch (kind) {
    case PREEMPT_EV_STEP_AGREED:
        ev->u.step_agreed.step = (v & 0x400) ? 8 : rel[(v / 3) % 3];
        ev->u.step_agreed.last = c->last;
        break;
    case PREEMPT_EV_STEP_REACHED:
        ev->u.step_reached.step = rel[(v / 3) % 3];
        break;
    case PREEMPT_EV_CKPT_COMMITTED: /* a report said no time is left for another round (its stop step: below,
                                       at or past this worker's), or none did */
        ev->u.ckpt_committed.step = 8;
        ev->u.ckpt_committed.stop = (v & 0x400) ? rel[(v / 3) % 3] + 1 : 0;
        break;
    case PREEMPT_EV_TIMER:
        ev->u.timer.gen = (v & 0x400) ? 2 : 1;
        break;
    case PREEMPT_EV_SAVE_DONE:
        ev->u.save_done.status = (v & 0x400) ? 0 : -EIO;
        break;
    case PREEMPT_EV_PEER_ERROR:
        ev->u.peer_error.code = (v & 0x400) ? 3 : -EPROTO;
        break;
    case PREEMPT_EV_APP_ERROR:
        ev->u.app_error.code = 3;
        break;
    case PREEMPT_EV_RESTART_REQUESTED:
        ev->u.restart_requested.code = -ENOLINK;
        break;
    case PREEMPT_EV_NOTICE:
        ev->u.notice.deadline = (v & 0x400) ? 20000 : 0;
        break;
    case PREEMPT_EV_PEER_NOTICE:
        ev->u.peer_notice.deadline = (v & 0x400) ? 20000 : 0;
        break;
    case PREEMPT_EV_ROUND_ABORTED:
        ev->u.round_aborted.step = rel[(v / 3) % 3];
        break;
    case PREEMPT_EV_PERSIST_STARTED:
        ev->u.persist_started.bytes = 1u << 20;
        break;
    case PREEMPT_EV_REJOINED:
        ev->u.rejoined.inc = 3;
        ev->u.rejoined.step = 8;
        break;
    case PREEMPT_EV_REJOIN_FAILED:
        ev->u.rejoin_failed.err = -ETIMEDOUT;
        break;
    case PREEMPT_EV_NOTICE_WITHDRAWN:
    case PREEMPT_EV_CLAIM_WON:
    case PREEMPT_EV_CLAIM_LOST:
    case PREEMPT_EV_FINAL_REQUESTED:
    case PREEMPT_EV_PEER_LOST:
    case PREEMPT_EV_COORD_FAILED:
    case PREEMPT_EV_TRAINING_DONE:
    case PREEMPT_EV__COUNT:
        break;
    }
}

#define VARIANTS 0x2000u

START_TEST(test_sweep_all_pairs)
{
    const struct preempt_machine_def *m = preempt_fsm_def_();
    bool *row_taken = calloc(m->n_rows, sizeof(bool));
    unsigned steps = 0;
    /* make check-valgrind samples every 61st variant (it checks memory, and
     * the whole sweep takes minutes under memcheck: every row still fires
     * at that stride); make check takes all */
    const char *env = getenv("PREEMPT_SWEEP_STRIDE");
    unsigned stride = env && atoi(env) > 0 ? (unsigned)atoi(env) : 1;

    ck_assert_ptr_nonnull(row_taken);
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
            for (unsigned v = 0; v < VARIANTS; v += stride) {
                struct preempt_core c;
                struct preempt_event ev;
                struct preempt_facts f;
                struct preempt_step st, again;

                variant(v, (enum preempt_state)s, (enum preempt_event_kind)e, &c, &ev, &f);
                st = preempt_fsm_step_(&c, &ev, &f);
                again = preempt_fsm_step_(&c, &ev, &f);
                steps++;
                /* deterministic: the same inputs give the same outputs */
                ck_assert_mem_eq(&st, &again, sizeof(st));
                ck_assert_int_lt(st.verdict, PREEMPT_VERDICT__COUNT);
                if (st.verdict != PREEMPT_VERDICT_TRANSITION) {
                    ck_assert_int_eq(st.verdict, preempt_fsm_fallback_(s, e, NULL));
                    ck_assert_int_eq(st.n_fx, 0);
                    ck_assert_mem_eq(&st.next, &c, sizeof(c));
                    continue;
                }
                ck_assert_msg(s != (int)m->final, "left the final state");
                ck_assert_int_ge(st.row, 0);
                {
                    const struct preempt_row *r = &m->rows[st.row];
                    ck_assert_int_eq(r->from, s);
                    ck_assert_int_eq(r->on, e);
                    ck_assert_int_eq(st.next.state, r->to);
                    ck_assert_int_eq(st.n_fx, r->n_fx);
                    for (unsigned k = 0; k < r->n_fx; k++)
                        ck_assert_int_eq(st.fx[k].kind, r->fx[k].kind);
                    row_taken[st.row] = true;
                }
                for (unsigned k = 0; k < st.n_fx; k++) {
                    if (st.fx[k].kind == PREEMPT_FX_ARM_TIMER) {
                        ck_assert_int_gt(st.fx[k].arg, 0);
                        /* never past the deadline, but where a withdrawn round has none:
                         * finishing's own bound on the decision */
                        ck_assert(st.fx[k].arg <= (int64_t)st.next.deadline_ms ||
                                  (st.next.state == ST(FINISHING) && st.next.withdrawn));
                    }
                    if (st.fx[k].kind == PREEMPT_FX_EXIT)
                        ck_assert_int_lt(st.fx[k].arg, PREEMPT_EXIT__COUNT);
                }
                if (st.next.state == m->final)
                    ck_assert_int_eq(st.fx[st.n_fx - 1].kind, PREEMPT_FX_EXIT);
            }
        }
    }
    /* every row of the table can fire */
    for (size_t i = 0; i < m->n_rows; i++)
        ck_assert_msg(row_taken[i], "row %zu (%s, %s -> %s) never fired in %u steps", i,
                      preempt_state_to_string(m->rows[i].from), preempt_event_to_string_(m->rows[i].on),
                      preempt_state_to_string(m->rows[i].to), steps);
    free(row_taken);
}
END_TEST

START_TEST(test_out_of_range_is_illegal)
{
    struct preempt_core c = preempt_fsm_init_();
    struct preempt_event ev = { .kind = (enum preempt_event_kind)PREEMPT_EV__COUNT };
    struct preempt_facts f = facts(0, 0);

    ck_assert_int_eq(preempt_fsm_step_(&c, &ev, &f).verdict, PREEMPT_VERDICT_ILLEGAL);
    c.state = (enum preempt_state)PREEMPT_STATE__COUNT;
    ev.kind = PREEMPT_EV_NOTICE;
    ck_assert_int_eq(preempt_fsm_step_(&c, &ev, &f).verdict, PREEMPT_VERDICT_ILLEGAL);
}
END_TEST

/* ---- the planner -------------------------------------------------------------------- */

START_TEST(test_plan_measured_counts_save_and_agreement)
{
    struct preempt_facts f = facts(0, 60000);

    f.step_ms = 100;
    f.save_ms = 4000;
    f.agree_ms = 20;
    /* need = 2*100 + 20 + 4000*1.5 + 500 = 6720 */
    ck_assert(!preempt_plan_final_due_(&f, 100000 - 6721, 100000));
    ck_assert(preempt_plan_final_due_(&f, 100000 - 6720, 100000));
    ck_assert(!preempt_plan_final_due_(&f, 5, 0)); /* no deadline known */
}
END_TEST

/* Steps of 10 s +-10%: two slow steps after the decision overran the
 * deadline when only the mean was budgeted (make bench's planning sweep).
 * Each step is budgeted at the mean plus four mean deviations. */
START_TEST(test_plan_measured_budgets_step_deviation)
{
    struct preempt_facts f = facts(0, 600000);

    f.step_ms = 10000;
    f.step_dev_ms = 500;
    f.save_ms = 100;
    /* need = 2*(10000 + 4*500) + 0 + 150 + 500 = 24650 */
    ck_assert(!preempt_plan_final_due_(&f, 100000 - 24651, 100000));
    ck_assert(preempt_plan_final_due_(&f, 100000 - 24650, 100000));
    /* the worst case the old rule allowed: decided at 20651 before the
     * deadline, then two steps of 11 s and the save end past it */
    ck_assert(preempt_plan_final_due_(&f, 100000 - 20651, 100000));
}
END_TEST

START_TEST(test_step_stats_follow_mean_and_deviation)
{
    uint64_t mean = 0, dev = 0;

    preempt_step_stats_(&mean, &dev, 1000);
    ck_assert_uint_eq(mean, 1000);
    ck_assert_uint_eq(dev, 500); /* RFC 6298: the first sample's half */
    for (int i = 0; i < 100; i++)
        preempt_step_stats_(&mean, &dev, 1000);
    ck_assert_uint_eq(mean, 1000);
    ck_assert_uint_le(dev, 1); /* steady steps: the deviation fades */
    for (int i = 0; i < 100; i++)
        preempt_step_stats_(&mean, &dev, i % 2 ? 900 : 1100);
    ck_assert_uint_ge(mean, 950);
    ck_assert_uint_le(mean, 1050);
    ck_assert_uint_ge(dev, 80); /* +-100 around the mean */
    ck_assert_uint_le(dev, 160);
}
END_TEST

/* A paced save (a two-phase save whose persist waited for steps) is the
 * planner's figure only until an awaited one is known; then the longest
 * awaited save is, however long the paced ones take. */
START_TEST(test_paced_saves_count_until_an_awaited_one)
{
    struct preempt_facts f = { 0 };
    struct preempt_save_times t = { 0 };

    preempt_facts_measure_save_(&f, &t, 3000, PREEMPT_SAVE_PACED);
    ck_assert_uint_eq(f.save_ms, 3000); /* nothing better known: it errs long */
    preempt_facts_measure_save_(&f, &t, 2000, PREEMPT_SAVE_PACED);
    ck_assert_uint_eq(f.save_ms, 3000); /* the longest */
    preempt_facts_measure_save_(&f, &t, 400, PREEMPT_SAVE_AWAITED);
    ck_assert_uint_eq(f.save_ms, 400); /* an awaited save: what a final save takes */
    preempt_facts_measure_save_(&f, &t, 5000, PREEMPT_SAVE_PACED);
    ck_assert_uint_eq(f.save_ms, 400);
    preempt_facts_measure_save_(&f, &t, 300, PREEMPT_SAVE_AWAITED);
    ck_assert_uint_eq(f.save_ms, 400); /* the longest awaited */
    preempt_facts_measure_save_(&f, &t, 900, PREEMPT_SAVE_AWAITED);
    ck_assert_uint_eq(f.save_ms, 900);
    ck_assert_uint_eq(t.paced_ms, 5000);
}
END_TEST

/* The job's figure (the slowest save a decision names) counts beside this
 * worker's own, and the next decision's replaces it: a job that committed
 * a paced periodic checkpoint (every worker's figure paced, so the
 * decision's) plans with the awaited saves the next decision names. The
 * reports carry the own figure, never the job's: before, the decision's
 * figure went in as an awaited save of this worker's, the longest forever
 * after, and every report carried it on. */
START_TEST(test_job_figure_replaced_by_the_next_decision)
{
    struct preempt_facts f = { 0 };
    struct preempt_save_times t = { 0 };

    preempt_facts_measure_save_(&f, &t, 1200, PREEMPT_SAVE_PACED); /* a periodic checkpoint, paced */
    preempt_facts_measure_save_(&f, &t, 1300, PREEMPT_SAVE_JOB);   /* the job's decision: a peer's was slower */
    ck_assert_uint_eq(f.save_ms, 1300);
    ck_assert_uint_eq(preempt_save_own_(&t), 1200); /* what this worker's next report says */
    preempt_facts_measure_save_(&f, &t, 150, PREEMPT_SAVE_AWAITED); /* the preemption's save, awaited */
    ck_assert_uint_eq(preempt_save_own_(&t), 150);
    ck_assert_uint_eq(f.save_ms, 1300); /* until the job says otherwise */
    preempt_facts_measure_save_(&f, &t, 180, PREEMPT_SAVE_JOB); /* that round's decision: every worker's own */
    ck_assert_uint_eq(f.save_ms, 180);
    preempt_facts_measure_save_(&f, &t, 90, PREEMPT_SAVE_JOB);
    ck_assert_uint_eq(f.save_ms, 150); /* never below this worker's own */
    ck_assert_uint_eq(t.awaited_ms, 150);
    ck_assert_uint_eq(t.paced_ms, 1200);
}
END_TEST

START_TEST(test_plan_tf_ignores_save_time)
{
    struct preempt_facts f = facts(0, 60000);

    f.cfg.plan = PREEMPT_PLAN_TF;
    f.step_ms = 100;
    f.save_ms = 4000;
    /* TF's 6 x step, before the exit margin both plans keep: 600 + 500 */
    ck_assert(!preempt_plan_final_due_(&f, 100000 - 1101, 100000));
    ck_assert(preempt_plan_final_due_(&f, 100000 - 1100, 100000));
}
END_TEST

/* save_every_steps: due at a multiple past the newer of the last commit and
 * the last request, and at the first boundary after a round that outlasted
 * a multiple. */
START_TEST(test_periodic_due)
{
    ck_assert(!preempt_plan_periodic_due_(40, 0, 0)); /* none configured */
    ck_assert(!preempt_plan_periodic_due_(39, 40, 0));
    ck_assert(preempt_plan_periodic_due_(40, 40, 0));
    ck_assert(!preempt_plan_periodic_due_(41, 40, 40)); /* requested at 40: once */
    ck_assert(!preempt_plan_periodic_due_(79, 40, 52)); /* committed at 52 */
    ck_assert(preempt_plan_periodic_due_(80, 40, 52));
    ck_assert(preempt_plan_periodic_due_(93, 40, 52)); /* the round of 40 committed at 52 only after 80 */
    ck_assert(!preempt_plan_periodic_due_(130, 40, 124)); /* restored at 124 */
    ck_assert(preempt_plan_periodic_due_(160, 40, 124));
}
END_TEST

/* Agreement without boundary waits: a worker acknowledges a cap (its step
 * plus the lead), S is the highest cap, and training goes on up to the cap. */
START_TEST(test_lead_covers_the_agreement_in_steps)
{
    struct preempt_facts f = facts(40, 0);

    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 31000), 1); /* local mode: the next boundary */
    f.cfg.workers = 4;
    /* nothing measured: the minimum plus the guessed agreement in 1 ms steps */
    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 0), PREEMPT_LEAD_MIN + PREEMPT_AGREE_GUESS_MS);
    f.step_ms = 100;
    f.agree_ms = 250;
    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 0), PREEMPT_LEAD_MIN + 3); /* 250 ms is 3 steps of 100 */
    f.step_ms = 5000;
    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 0), PREEMPT_LEAD_MIN + 1);
    /* the deadline leaves room for 2 steps of 5 s after a 1 s save and the margin */
    f.save_ms = 1000;
    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 1000 + 1000 + 500 + 10000), 2);
    ck_assert_uint_eq(preempt_plan_lead_(&f, 1000, 2000), 1); /* no room at all: the next boundary */
}
END_TEST

/* The final round allows for the workers' drift through the grace period
 * (a PREEMPT_DRIFT_SHARE-th of the steps since the first save): the driver
 * opens it that many steps earlier and proposes as many steps further, so
 * that at its own pace the step is the one it proposed without the
 * allowance, and a peer up to that many steps ahead learns it before it
 * gets there (instead of raising it past what the driver reaches in time:
 * tests/multi.sh's grace case). */
START_TEST(test_final_round_allows_for_drift)
{
    struct preempt_core c = { .state = PREEMPT_STATE_COUNTDOWN, .driver = true, .committed = true, .save_step = 8,
                              .cap = UINT64_MAX, .deadline_ms = 61000 };
    struct preempt_facts f = facts(48, 60000);
    struct preempt_event ev = { .kind = PREEMPT_EV_STEP_REACHED, .u.step_reached = { 48 } };
    uint64_t lead, need, drift, due;
    struct preempt_step st;

    f.cfg.workers = 4;
    f.step_ms = 100;
    f.agree_ms = 250;
    f.save_ms = 200;
    lead = preempt_plan_lead_(&f, 0, 0);
    ck_assert_uint_eq(lead, PREEMPT_LEAD_MIN + 3);
    need = (lead + 1) * 100 + 250 + 200 + 100 + f.cfg.margin_ms;
    drift = (48 - 8 + PREEMPT_DRIFT_SHARE - 1) / PREEMPT_DRIFT_SHARE;
    ck_assert_uint_eq(preempt_plan_drift_(&c, &f), drift);
    ck_assert_uint_gt(drift, 0);
    due = 61000 - need - drift * 100;
    ev.now_ms = due - 1;
    ck_assert_int_eq(preempt_fsm_step_(&c, &ev, &f).verdict, PREEMPT_VERDICT_IGNORED);
    ev.now_ms = due;
    st = preempt_fsm_step_(&c, &ev, &f);
    ck_assert_int_eq(st.next.state, PREEMPT_STATE_OWN_SIGNAL);
    ck_assert_int_eq(st.fx[0].kind, PREEMPT_FX_REQUEST_FINAL);
    /* the step it would have proposed drift steps later without the allowance */
    ck_assert_int_eq(st.fx[0].arg, (int64_t)(48 + drift + lead));
    ck_assert_uint_eq(st.next.cap, 48 + drift + lead);
    /* a follower past that step raises it by its step plus the lead alone */
    c = (struct preempt_core){ .state = PREEMPT_STATE_FOLLOWING, .committed = true, .round = 1, .save_step = 8,
                               .cap = UINT64_MAX, .deadline_ms = 61000 };
    f.run = 70;
    ev = (struct preempt_event){ .kind = PREEMPT_EV_STEP_AGREED, .now_ms = due, .u.step_agreed = { 66, 1 } };
    st = preempt_fsm_step_(&c, &ev, &f);
    ck_assert_int_eq(st.fx[0].kind, PREEMPT_FX_PROPOSE_STEP);
    ck_assert_int_eq(st.fx[0].arg, (int64_t)(70 + lead));
    c = (struct preempt_core){ .state = PREEMPT_STATE_COUNTDOWN, .save_step = 8 };
    /* without a grace period, or alone, no allowance */
    f.cfg.grace_ms = 0;
    ck_assert_uint_eq(preempt_plan_drift_(&c, &f), 0);
    f.cfg.grace_ms = 60000;
    f.cfg.workers = 1;
    ck_assert_uint_eq(preempt_plan_drift_(&c, &f), 0);
}
END_TEST

/* A driver faster than the job's slowest worker opens the final round in
 * time for that worker: it must cover the lead, the drift allowance and
 * the steps it is behind, at its own pace, and still save before the
 * deadline less the margin (the last commit named its step and pace). */
static struct preempt_step probe_slow(struct preempt_facts *f, uint64_t now, uint64_t slow_step)
{
    struct preempt_core c = { .state = PREEMPT_STATE_COUNTDOWN, .driver = true, .committed = true, .save_step = 8,
                              .cap = UINT64_MAX, .deadline_ms = 61000 };
    struct preempt_event ev = { .kind = PREEMPT_EV_STEP_REACHED, .now_ms = now, .u.step_reached = { 48 } };

    f->slow_step = slow_step;
    f->slow_at_ms = now - 4000; /* the commit came 4 s ago: 32 steps of 125 ms since */
    return preempt_fsm_step_(&c, &ev, f);
}

START_TEST(test_final_round_plans_for_the_slowest)
{
    struct preempt_facts f = facts(48, 60000);
    uint64_t lead, drift = (48 - 8 + PREEMPT_DRIFT_SHARE - 1) / PREEMPT_DRIFT_SHARE, fixed, due, plain;
    struct preempt_step st;

    f.cfg.workers = 4;
    f.step_ms = 100;
    f.agree_ms = 250;
    f.save_ms = 200;
    f.slow_step_ms = 125;
    lead = preempt_plan_lead_(&f, 0, 0);
    fixed = 250 + 200 + 100 + f.cfg.margin_ms;
    plain = 61000 - ((lead + 1) * 100 + fixed) - drift * 100;
    /* the slowest was at step 8 at the commit and is at 40 now: 8 behind */
    f.slow_step = 8;
    f.slow_at_ms = 50000;
    ck_assert_uint_eq(preempt_plan_behind_(&f, 54000), 8);
    ck_assert_uint_eq(preempt_plan_behind_(&f, 49999), 0); /* before the commit's time: nothing known */
    due = 61000 - ((lead + drift + 8 + 1) * 125 + fixed); /* no deviation: each step at the mean */
    ck_assert_uint_lt(due, plain);
    ck_assert_int_eq(probe_slow(&f, due - 1, 8).verdict, PREEMPT_VERDICT_IGNORED);
    st = probe_slow(&f, due, 8);
    ck_assert_int_eq(st.next.state, PREEMPT_STATE_OWN_SIGNAL);
    ck_assert_int_eq(st.fx[0].kind, PREEMPT_FX_REQUEST_FINAL);
    ck_assert_int_eq(st.fx[0].arg, (int64_t)(48 + lead + drift)); /* the same step: it opens earlier */
    /* with a deviation, the lead's steps and the one in flight carry four
     * each, as the plain rule's do; the drift's and the behind's the mean */
    f.step_dev_ms = 10;
    lead = preempt_plan_lead_(&f, 0, 0);
    due = 61000 - ((lead + 1) * (125 + 40) + (drift + 8) * 125 + fixed);
    ck_assert_int_eq(probe_slow(&f, due - 1, 8).verdict, PREEMPT_VERDICT_IGNORED);
    ck_assert_int_eq(probe_slow(&f, due, 8).next.state, PREEMPT_STATE_OWN_SIGNAL);
    f.step_dev_ms = 0;
    /* none behind (the slowest was at 48 at the commit), or not known: the
     * rule of the driver's own pace and the drift allowance */
    ck_assert_int_eq(probe_slow(&f, due, 48).verdict, PREEMPT_VERDICT_IGNORED);
    f.slow_step_ms = 0;
    ck_assert_int_eq(probe_slow(&f, plain - 1, 8).verdict, PREEMPT_VERDICT_IGNORED);
    ck_assert_int_eq(probe_slow(&f, plain, 8).next.state, PREEMPT_STATE_OWN_SIGNAL);
    /* without a grace period, or alone, nobody is behind */
    f.slow_step_ms = 125;
    f.slow_at_ms = 50000;
    f.cfg.grace_ms = 0;
    ck_assert_uint_eq(preempt_plan_behind_(&f, 54000), 0);
    f.cfg.grace_ms = 60000;
    f.cfg.workers = 1;
    ck_assert_uint_eq(preempt_plan_behind_(&f, 54000), 0);
    /* an absurd pace (a record's, valid by its grammar) does not wrap the
     * plan around: the round is due at once */
    f.cfg.workers = 4;
    f.slow_step_ms = UINT64_MAX / 3;
    ck_assert_int_eq(probe_slow(&f, 30000, 8).next.state, PREEMPT_STATE_OWN_SIGNAL);
}
END_TEST

/* The driver proposes its step plus the lead and trains no further before
 * the round's step comes back; a follower proposes nothing and trains on. */
START_TEST(test_claim_proposes_the_step)
{
    struct preempt_core c = preempt_fsm_init_();
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE, .now_ms = 1000 };
    struct preempt_event peer = { .kind = PREEMPT_EV_PEER_NOTICE, .now_ms = 1000 };
    struct preempt_facts f = facts(40, 0);
    struct preempt_step st;

    f.cfg.workers = 2;
    f.step_ms = 10;
    f.agree_ms = 30;
    st = preempt_fsm_step_(&c, &ev, &f);
    ck_assert_int_eq(st.next.state, PREEMPT_STATE_OWN_SIGNAL);
    ck_assert_int_eq(st.fx[1].kind, PREEMPT_FX_CLAIM_DRIVER);
    ck_assert_int_eq(st.fx[1].arg, 40 + PREEMPT_LEAD_MIN + 3);
    ck_assert_uint_eq(st.next.cap, 40 + PREEMPT_LEAD_MIN + 3);
    st = preempt_fsm_step_(&c, &peer, &f);
    ck_assert_int_eq(st.next.state, PREEMPT_STATE_FOLLOWING);
    ck_assert_uint_eq(st.n_fx, 1); /* the timer: no write */
    ck_assert_int_eq(preempt_action_of_(&st.next, 1000000, false, false), PREEMPT_ACTION_CONTINUE);
}
END_TEST

START_TEST(test_training_goes_on_to_the_cap)
{
    struct preempt_core c = { .state = PREEMPT_STATE_FOLLOWING, .cap = 46 };

    /* Peers may be blocked in a collective with this worker: it trains on. */
    ck_assert_int_eq(preempt_action_of_(&c, 40, false, false), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_action_of_(&c, 45, false, false), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, false), PREEMPT_ACTION_WAIT); /* its raise is on its way */
    c.state = PREEMPT_STATE_OWN_SIGNAL;
    ck_assert_int_eq(preempt_action_of_(&c, 45, false, false), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, false), PREEMPT_ACTION_WAIT);
    c.state = PREEMPT_STATE_STEP_AGREED;
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, false), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_action_of_(&c, 46, true, false), PREEMPT_ACTION_SAVE);
    c.state = PREEMPT_STATE_SAVING;
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, false), PREEMPT_ACTION_WAIT); /* every worker stands at S */
    /* A notice made the checkpoint persisting the last save: a worker
     * alone waits for it; in a job it trains on, since a peer may be in a
     * collective that needs its next step before it can read the notice. */
    c = (struct preempt_core){ .state = PREEMPT_STATE_PERSISTING, .save_step = 40, .last = true };
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, true), PREEMPT_ACTION_WAIT);
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, false), PREEMPT_ACTION_CONTINUE);
    c.withdrawn = true; /* a periodic round's: training goes on either way */
    ck_assert_int_eq(preempt_action_of_(&c, 46, false, true), PREEMPT_ACTION_CONTINUE);
    /* Its commit came: on to the job's stop step, where step-reached exits. */
    c = (struct preempt_core){ .state = PREEMPT_STATE_STOPPING, .save_step = 40, .last = true, .cap = 50 };
    ck_assert_int_eq(preempt_action_of_(&c, 49, false, false), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_action_of_(&c, 50, false, false), PREEMPT_ACTION_WAIT);
}
END_TEST

/* ---- the table checker: the real table passes, broken ones fail --------------------------- */

static unsigned n_reports;
static char reports[4096]; /* every report of the last check, one per line */

static void collect(const char *msg, void *arg)
{
    size_t len = strlen(reports);

    (void)arg;
    n_reports++;
    (void)snprintf(reports + len, sizeof(reports) - len, "%s\n", msg);
}

START_TEST(test_check_real_table)
{
    n_reports = 0;
    ck_assert_uint_eq(preempt_fsm_check_(collect, NULL), 0);
    ck_assert_uint_eq(n_reports, 0);
}
END_TEST

/* A copy of the real table with one change, checked; returns the problems. */
static unsigned check_modified(void (*modify)(struct preempt_row *rows, size_t n, struct preempt_machine_def *m))
{
    const struct preempt_machine_def *real = preempt_fsm_def_();
    struct preempt_machine_def m = *real;
    struct preempt_row *rows = malloc(real->n_rows * sizeof(*rows));
    unsigned problems;

    ck_assert_ptr_nonnull(rows);
    memcpy(rows, real->rows, real->n_rows * sizeof(*rows));
    m.rows = rows;
    modify(rows, m.n_rows, &m);
    n_reports = 0;
    reports[0] = '\0';
    problems = preempt_fsm_check_def_(&m, collect, NULL);
    free(rows);
    return problems;
}

static size_t find_row(const struct preempt_row *rows, size_t n, enum preempt_state s, enum preempt_event_kind e,
                       enum preempt_guard g)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].from == s && rows[i].on == e && rows[i].guard == g)
            return i;
    ck_abort_msg("row not found");
    return 0;
}

static void guard_the_last_row(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    (void)m; /* (idle, notice) has one unguarded row and no ignored entry */
    rows[find_row(rows, n, ST(IDLE), PREEMPT_EV_NOTICE, PREEMPT_GUARD_ALWAYS)].guard = PREEMPT_GUARD_IS_DRIVER;
}

static void drop_disarm(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    size_t i = find_row(rows, n, ST(FINAL_SAVE), PREEMPT_EV_CKPT_COMMITTED, PREEMPT_GUARD_ALWAYS);
    (void)m;
    rows[i].fx[1] = rows[i].fx[2]; /* keep-shard, exit:saved */
    rows[i].n_fx = 2;
}

static void drop_exit(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    size_t i = find_row(rows, n, ST(IDLE), PREEMPT_EV_TRAINING_DONE, PREEMPT_GUARD_ALWAYS);
    (void)m;
    rows[i].n_fx = 1; /* announce-done only */
}

static void cut_countdown(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    (void)m; /* nothing enters countdown any more */
    rows[find_row(rows, n, ST(SAVING), PREEMPT_EV_CKPT_COMMITTED, PREEMPT_GUARD_ALWAYS)].to = ST(SAVING);
    rows[find_row(rows, n, ST(PERSISTING), PREEMPT_EV_CKPT_COMMITTED, PREEMPT_GUARD_ALWAYS)].to = ST(PERSISTING);
}

static void dead_row(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    (void)m; /* an unguarded row before a guarded one of the same pair */
    size_t a = find_row(rows, n, ST(OWN_SIGNAL), PREEMPT_EV_PEER_ERROR, PREEMPT_GUARD_APP_CODE);
    rows[a].guard = PREEMPT_GUARD_ALWAYS;
}

static void same_guard_twice(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    (void)m; /* the second save-done row of saving gets the first one's guard */
    size_t i = find_row(rows, n, ST(SAVING), PREEMPT_EV_SAVE_DONE, PREEMPT_GUARD_ALWAYS);
    rows[i].guard = PREEMPT_GUARD_SAVE_OK;
}

static void arm_in_idle(struct preempt_row *rows, size_t n, struct preempt_machine_def *m)
{
    (void)m;
    size_t i = find_row(rows, n, ST(COUNTDOWN), PREEMPT_EV_NOTICE_WITHDRAWN, PREEMPT_GUARD_ALWAYS);
    rows[i].fx[1].kind = PREEMPT_FX_ARM_TIMER;
}

START_TEST(test_check_finds_undecided_pair)
{
    ck_assert_uint_gt(check_modified(guard_the_last_row), 0);
    ck_assert_ptr_nonnull(strstr(reports, "undecided"));
}
END_TEST

START_TEST(test_check_finds_missing_disarm)
{
    ck_assert_uint_gt(check_modified(drop_disarm), 0);
    ck_assert_ptr_nonnull(strstr(reports, "disarm"));
}
END_TEST

/* The step of ev from cur ends in exit; why, in words. */
static const char *exit_why(const struct preempt_core *cur, struct preempt_event ev, const struct preempt_facts *f)
{
    struct preempt_step st;

    if (ev.kind == PREEMPT_EV_TIMER) /* the round's own timer, not a stale one */
        ev.u.timer.gen = cur->timer_gen;
    st = preempt_fsm_step_(cur, &ev, f);
    ck_assert_int_eq(st.next.state, ST(EXIT));
    return preempt_fsm_exit_why_(cur->state, &ev, &st.next);
}

/* An exit says why in the operator's log: the timer that ends a round says
 * which bound it was (the round's, or the deadline's), and a lost peer or
 * an unreachable store says so. */
START_TEST(test_exit_why)
{
    struct preempt_facts f = facts(9, 0);
    struct preempt_core idle = preempt_fsm_init_();
    struct preempt_event pn = { .kind = PREEMPT_EV_PEER_NOTICE, .now_ms = 1000, .u.peer_notice = { 2, 40000 } };
    struct preempt_event agreed = { .kind = PREEMPT_EV_STEP_AGREED, .now_ms = 1500, .u.step_agreed = { 12 } };
    struct preempt_event tm = { .kind = PREEMPT_EV_TIMER, .now_ms = 11000 };
    struct preempt_event lost = { .kind = PREEMPT_EV_PEER_LOST, .now_ms = 2000, .u.peer_lost = { 1 } };
    struct preempt_event failed = { .kind = PREEMPT_EV_COORD_FAILED, .now_ms = 2000, .u.coord_failed = { -5 } };
    struct preempt_event restart = { .kind = PREEMPT_EV_RESTART_REQUESTED, .now_ms = 2000,
                                     .u.restart_requested = { -ENOLINK } };
    struct preempt_core following = preempt_fsm_step_(&idle, &pn, &f).next, agreed_core;

    ck_assert_int_eq(following.state, ST(FOLLOWING));
    ck_assert_str_eq(exit_why(&following, tm, &f),
                     "no step was agreed within the round's bound (agree_timeout_ms plus 3 measured steps)");
    agreed_core = preempt_fsm_step_(&following, &agreed, &f).next;
    ck_assert_int_eq(agreed_core.state, ST(STEP_AGREED));
    tm.now_ms = 39500;
    ck_assert_str_eq(exit_why(&agreed_core, tm, &f),
                     "the deadline, less the exit margin, came before a checkpoint was committed");
    ck_assert_str_eq(exit_why(&agreed_core, lost, &f), "a worker of the job lost its membership");
    ck_assert_str_eq(exit_why(&agreed_core, failed, &f), "the coordination store stayed unreachable past its retry bound");
    ck_assert_str_eq(exit_why(&idle, restart, &f),
                     "the trainer asked for a restart (it cannot go on without a lost peer)");
}
END_TEST

START_TEST(test_check_finds_missing_exit)
{
    ck_assert_uint_gt(check_modified(drop_exit), 0);
    ck_assert_ptr_nonnull(strstr(reports, "exit effect"));
}
END_TEST

START_TEST(test_check_finds_unreachable_state)
{
    ck_assert_uint_gt(check_modified(cut_countdown), 0);
    ck_assert_ptr_nonnull(strstr(reports, "countdown is unreachable"));
}
END_TEST

START_TEST(test_check_finds_dead_row)
{
    ck_assert_uint_gt(check_modified(dead_row), 0);
    ck_assert_ptr_nonnull(strstr(reports, "can never match"));
}
END_TEST

START_TEST(test_check_finds_repeated_guard)
{
    ck_assert_uint_gt(check_modified(same_guard_twice), 0);
    ck_assert_ptr_nonnull(strstr(reports, "same guard"));
}
END_TEST

START_TEST(test_check_finds_timer_in_untimed_state)
{
    ck_assert_uint_gt(check_modified(arm_in_idle), 0);
}
END_TEST

static Suite *fsm_suite(void)
{
    Suite *s = suite_create("fsm");
    TCase *tc = tcase_create("rows");

    tcase_add_loop_test(tc, test_row, 0, (int)ARRAY_SIZE(cases));
    tcase_add_test(tc, test_ignored_changes_nothing);
    tcase_add_test(tc, test_huge_deadline_is_capped);
    tcase_add_test(tc, test_earliest_deadline_wins);
    tcase_add_test(tc, test_timer_generations);
    tcase_add_test(tc, test_agreement_bound_does_not_slide);
    tcase_add_test(tc, test_agreement_bound_starts_at_the_claims_answer);
    tcase_add_test(tc, test_idle_again_forgets_but_keeps_generation);
    tcase_add_test(tc, test_new_notice_after_withdrawal_stands);
    tcase_add_test(tc, test_final_round_sets_round);
    tcase_add_test(tc, test_last_save_is_the_records);
    tcase_add_test(tc, test_plan_last_judges_the_commit);
    tcase_add_test(tc, test_tie_break_table_order);
    tcase_add_test(tc, test_guard_before_fallback);
    tcase_add_test(tc, test_out_of_range_is_illegal);
    suite_add_tcase(s, tc);

    tc = tcase_create("sweep");
    /* 3.4 million steps (11 states x 19 events x 8192 variants, twice), in
     * the sanitized build beside another test of its make -j2 check: 60 s
     * expired once in a fresh-clone CI */
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_sweep_all_pairs);
    suite_add_tcase(s, tc);

    tc = tcase_create("plan");
    tcase_add_test(tc, test_plan_measured_counts_save_and_agreement);
    tcase_add_test(tc, test_plan_tf_ignores_save_time);
    tcase_add_test(tc, test_lead_covers_the_agreement_in_steps);
    tcase_add_test(tc, test_final_round_allows_for_drift);
    tcase_add_test(tc, test_final_round_plans_for_the_slowest);
    tcase_add_test(tc, test_periodic_due);
    tcase_add_test(tc, test_claim_proposes_the_step);
    tcase_add_test(tc, test_training_goes_on_to_the_cap);
    tcase_add_test(tc, test_plan_measured_budgets_step_deviation);
    tcase_add_test(tc, test_step_stats_follow_mean_and_deviation);
    tcase_add_test(tc, test_paced_saves_count_until_an_awaited_one);
    tcase_add_test(tc, test_job_figure_replaced_by_the_next_decision);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_add_test(tc, test_check_real_table);
    tcase_add_test(tc, test_check_finds_undecided_pair);
    tcase_add_test(tc, test_check_finds_missing_disarm);
    tcase_add_test(tc, test_exit_why);
    tcase_add_test(tc, test_check_finds_missing_exit);
    tcase_add_test(tc, test_check_finds_unreachable_state);
    tcase_add_test(tc, test_check_finds_dead_row);
    tcase_add_test(tc, test_check_finds_repeated_guard);
    tcase_add_test(tc, test_check_finds_timer_in_untimed_state);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return preempt_run_suite(fsm_suite());
}
