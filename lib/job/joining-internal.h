/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/joining-internal.h: two declared machines of joining a job
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
 * shaped. */
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

#endif
