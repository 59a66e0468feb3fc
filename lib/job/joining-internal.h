/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/joining-internal.h: three declared machines of joining a job
 * (lib/job/startup.c; decl-internal.h).
 *
 * offer: a worker joins with an offer, the steps of the checkpoints it
 * holds. A checkpoint left pending by an exit that could not learn the
 * job's decision is first resolved by the decision record (kept when the
 * round committed, else deleted), one record at a time, and only once the
 * incarnation counter was read: without a counter (a new job, or a wiped
 * store) no such record can be trusted, and the offer is made at once.
 * The offer is made once; a join that must start over (the incarnation
 * moved on) joins again with it. This table replaced the flag resolved.
 *
 * shape: the incarnation's shape record (N/shape, "workers=W") is written
 * once, create-if-absent, by its first member; a worker whose count
 * differs is refused before it counts for the barrier. A shape this worker
 * wrote and then finds gone was lost by the store (wiped): the barrier's
 * record decides then. When this worker's own earlier join turns out to
 * have been applied though its answer was lost, whether its shape write
 * was is unknown: it may write it again. This table replaced the flag
 * shaped.
 *
 * attempt: what the answer to a join attempt says (judged by
 * preempt_attempt_judge_(), in one order), and what joining does next. A
 * join that finds the incarnation still starting (its barrier's record
 * names a step of this worker's launch, its restore barrier is not
 * passed) and this worker's index free takes the place of an earlier
 * process of this worker, which joined and died before the restore (its
 * lease outlived it, so the barrier counted it): the barrier's record
 * then predates this worker's join and is still followed. Opening the
 * next incarnation instead split the job. This table replaced the flag
 * takeover and the branches of the join's answer. */
#ifndef PREEMPT_JOINING_INTERNAL_H
#define PREEMPT_JOINING_INTERNAL_H

#include "decl-internal.h"

/* X(P, ID, "name", "what is true") */
#define PREEMPT_OFFER_STATES(X, P)                                                                                   \
    X(P, NONE, "none", "no offer yet: the pending checkpoints are not resolved")                                     \
    X(P, RESOLVING, "resolving", "the pending checkpoints' decisions are read, one record at a time")               \
    X(P, MADE, "made", "the offer is made (the pending checkpoints resolved, or none trusted)")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_OFFER_INPUTS(X, P)                                                                                   \
    X(P, NO_COUNTER, "no-counter", "the incarnation counter is absent (a new job, or a wiped store)")                \
    X(P, COUNTER, "counter", "the incarnation counter was read")                                                      \
    X(P, RESOLVED, "resolved", "every pending checkpoint's decision is known (or unknowable)")

/* X(P, ID, "name", "what joining does") */
#define PREEMPT_OFFER_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, OFFER_OPEN, "offer-open", "make the offer, trusting no pending record, and open the first incarnation")    \
    X(P, OPEN, "open", "open the first incarnation with the offer made")                                             \
    X(P, RESOLVE, "resolve", "read the next pending checkpoint's decision record")                                   \
    X(P, OFFER_JOIN, "offer-join", "make the offer and join the incarnation")                                        \
    X(P, JOIN, "join", "join the incarnation with the offer made")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_OFFER_TABLE(X, P)                                                                                    \
    X(P, NONE, NO_COUNTER, MADE, OFFER_OPEN)                                                                         \
    X(P, NONE, COUNTER, RESOLVING, RESOLVE)                                                                          \
    X(P, RESOLVING, RESOLVED, MADE, OFFER_JOIN)                                                                      \
    X(P, MADE, NO_COUNTER, MADE, OPEN)                                                                               \
    X(P, MADE, COUNTER, MADE, JOIN)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_OFFER_IGNORED(X, P)                                                                                  \
    X(P, NO_COUNTER, "the counter was read already: the pending checkpoints are being resolved", RESOLVING)          \
    X(P, COUNTER, "the counter was read already: the pending checkpoints are being resolved", RESOLVING)             \
    X(P, RESOLVED, "nothing is being resolved: the counter is read first", NONE)

PREEMPT_DECL_ENUMS(offer, PREEMPT_OFFER_, PREEMPT_OFFER_STATES, PREEMPT_OFFER_INPUTS, PREEMPT_OFFER_ACTIONS);

extern const struct preempt_decl preempt_offer_decl_; /* fsmdump --machine offer */

/* X(P, ID, "name", "what is true") */
#define PREEMPT_SHAPE_STATES(X, P)                                                                                   \
    X(P, UNWRITTEN, "unwritten", "this worker has not written the incarnation's shape")                              \
    X(P, WRITTEN, "written", "this worker wrote (or sent) the shape, workers=W")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_SHAPE_INPUTS(X, P)                                                                                   \
    X(P, ABSENT, "absent", "the shape record is absent")                                                             \
    X(P, PRESENT, "present", "the shape record holds a worker count")                                                \
    X(P, REJOINED, "rejoined", "this worker's earlier join was applied though its answer was lost")

/* X(P, ID, "name", "what joining does") */
#define PREEMPT_SHAPE_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, WRITE, "write", "create N/shape with this worker's count; the answer is checked as the record")            \
    X(P, CHECK, "check", "compare the record's count with this worker's: another one refuses it")                   \
    X(P, TRUST, "trust", "go on: the store lost the shape, and the barrier's record decides")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_SHAPE_TABLE(X, P)                                                                                    \
    X(P, UNWRITTEN, ABSENT, WRITTEN, WRITE)                                                                          \
    X(P, WRITTEN, ABSENT, WRITTEN, TRUST)                                                                            \
    X(P, UNWRITTEN, PRESENT, UNWRITTEN, CHECK)                                                                       \
    X(P, WRITTEN, PRESENT, WRITTEN, CHECK)                                                                           \
    X(P, WRITTEN, REJOINED, UNWRITTEN, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_SHAPE_IGNORED(X, P)                                                                                  \
    X(P, REJOINED, "this worker wrote no shape: there is nothing to write again", UNWRITTEN)

PREEMPT_DECL_ENUMS(shape, PREEMPT_SHAPE_, PREEMPT_SHAPE_STATES, PREEMPT_SHAPE_INPUTS, PREEMPT_SHAPE_ACTIONS);

extern const struct preempt_decl preempt_shape_decl_; /* fsmdump --machine shape */

/* ---- attempt ---- */

/* X(P, ID, "name", "what is true") */
#define PREEMPT_ATTEMPT_STATES(X, P)                                                                                 \
    X(P, TRYING, "trying", "a join attempt is on its way (the first, or again)")                                    \
    X(P, TAKING_OVER, "taking-over", "an attempt is on its way that takes an earlier process's place in an "         \
      "incarnation still starting")                                                                                  \
    X(P, JOINED, "joined", "this worker is a member of the incarnation")                                            \
    X(P, TOOK_OVER, "took-over", "this worker is a member in its earlier process's place: the barrier's record may " \
      "predate its join")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_ATTEMPT_INPUTS(X, P)                                                                                 \
    X(P, APPLIED, "applied", "the join was applied: this worker is a member")                                       \
    X(P, OWN_EARLIER, "own-earlier", "not applied: this worker's own earlier attempt was (its lease holds its index)") \
    X(P, MOVED_ON, "moved-on", "not applied: the incarnation counter moved on meanwhile")                           \
    X(P, HELD, "held", "not applied: another lease holds this worker's index")                                      \
    X(P, NOT_STARTED, "not-started", "not applied: this worker joined the incarnation before, which never started") \
    X(P, STILL_STARTING, "still-starting", "not applied: the incarnation passed its barrier (a step of this launch) " \
      "and not its restore barrier, and this worker's index is free")                                                \
    X(P, STARTED, "started", "not applied: this worker lived in the incarnation, which started: the job restarts")

/* X(P, ID, "name", "what joining does") */
#define PREEMPT_ATTEMPT_ACTIONS(X, P)                                                                                \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, COUNT, "count", "count the members and check the shape, as the join's reads say")                          \
    X(P, RECOUNT, "recount", "count the members again (the shape written is unknown)")                              \
    X(P, READ_INC, "read-inc", "read the incarnation counter, and join the one it names")                           \
    X(P, WAIT_HOLDER, "wait-holder", "ask the holder's lease: a live duplicate fails, a dying one is waited out")     \
    X(P, REJOIN, "rejoin", "join the incarnation again, where this worker's index is free")                         \
    X(P, OPEN_NEXT, "open-next", "open the next incarnation (one worker's move of the counter wins)")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_ATTEMPT_TABLE(X, P)                                                                                  \
    X(P, TRYING, APPLIED, JOINED, COUNT)                                                                             \
    X(P, TRYING, OWN_EARLIER, JOINED, RECOUNT)                                                                       \
    X(P, TRYING, MOVED_ON, TRYING, READ_INC)                                                                         \
    X(P, TRYING, HELD, TRYING, WAIT_HOLDER)                                                                          \
    X(P, TRYING, NOT_STARTED, TRYING, REJOIN)                                                                        \
    X(P, TRYING, STILL_STARTING, TAKING_OVER, REJOIN)                                                                \
    X(P, TRYING, STARTED, TRYING, OPEN_NEXT)                                                                         \
    X(P, TAKING_OVER, APPLIED, TOOK_OVER, COUNT)                                                                     \
    X(P, TAKING_OVER, OWN_EARLIER, TOOK_OVER, RECOUNT)                                                               \
    X(P, TAKING_OVER, MOVED_ON, TRYING, READ_INC)                                                                    \
    X(P, TAKING_OVER, HELD, TAKING_OVER, WAIT_HOLDER)                                                                \
    X(P, TAKING_OVER, NOT_STARTED, TRYING, REJOIN)                                                                   \
    X(P, TAKING_OVER, STILL_STARTING, TAKING_OVER, REJOIN)                                                           \
    X(P, TAKING_OVER, STARTED, TRYING, OPEN_NEXT)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose (none: a
 * member's phase sends no more attempts, and its states are terminal). */
#define PREEMPT_ATTEMPT_IGNORED(X, P)

PREEMPT_DECL_ENUMS(attempt, PREEMPT_ATTEMPT_, PREEMPT_ATTEMPT_STATES, PREEMPT_ATTEMPT_INPUTS,
                   PREEMPT_ATTEMPT_ACTIONS);

extern const struct preempt_decl preempt_attempt_decl_; /* fsmdump --machine attempt */

/* What the answer to a join attempt (a transaction: the join's writes if
 * the counter is the incarnation's and this worker's key is free) holds,
 * as start-up read and validated it. */
struct preempt_attempt_answer {
    bool applied;        /* the transaction's writes were applied */
    bool counter_is_inc; /* not applied: the counter reads as the incarnation joined */
    bool mine;           /* not applied: alive/<w> is there, */
    bool mine_ours;      /* under this worker's lease */
    bool ready;          /* not applied: the barrier's record is there, */
    bool restoring;      /* naming a step of this worker's launch, and the restore's record is absent */
};

/* The input an answer is, judged in this order: applied; the counter
 * moved on; this worker's index held (by its own lease, or another);
 * the incarnation never started; still starting; started. Pure. */
enum preempt_attempt_input preempt_attempt_judge_(const struct preempt_attempt_answer *a);

#endif
