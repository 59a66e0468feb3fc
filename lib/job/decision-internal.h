/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/decision-internal.h: what this worker proposed of a round's one
 * decision, a declared machine of the coordinator (lib/job/coord-rounds.c;
 * decl-internal.h), one per round.
 *
 * A round ends with one record, committed or aborted, created if absent:
 * the first that lands decides, and every worker follows it. A worker
 * proposes the commit when a read of the round's shard reports holds every
 * worker's (the worker whose report completed them, or the driver in its
 * place), and from then on neither reads the reports again nor proposes
 * the abort: its proposal is on its way or already decided. A worker that
 * gives the round up while a shard is missing (or the reports cannot be
 * read) proposes the abort, which may be repeated: the record's creation
 * makes it one. Whether a decision already stands is the job view's
 * (view-internal.h), never this machine's. The episode's end starts both
 * rounds over. This table replaced the coordinator's last deciding flag
 * (commit_posted). */
#ifndef PREEMPT_DECISION_INTERNAL_H
#define PREEMPT_DECISION_INTERNAL_H

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_DEC_STATES(X, P)                                                                                     \
    X(P, OPEN, "open", "this worker proposed no commit of the round (it may propose the abort)")                       \
    X(P, COMMIT_PROPOSED, "commit-proposed",                                                                         \
      "this worker found every shard reported and proposed the commit: it reads the reports no more")

/* X(ID, "name", "what happened") */
#define PREEMPT_DEC_INPUTS(X, P)                                                                                     \
    X(P, ALL_REPORTED, "all-reported", "a read of the round's shard reports at its step holds every worker's")       \
    X(P, GIVE_UP, "give-up", "this worker gives the round up, and a shard is missing or the reports cannot be read") \
    X(P, NEXT_EPISODE, "next-episode", "the episode ended: both rounds start over")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_DEC_ACTIONS(X, P)                                                                                    \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, PROPOSE_COMMIT, "propose-commit",                                                                           \
      "create the decision record if absent: committed, with the reports' last, slowest save and stop step")        \
    X(P, PROPOSE_ABORT, "propose-abort", "create the decision record if absent: aborted")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_DEC_TABLE(X, P)                                                                                      \
    X(P, OPEN, ALL_REPORTED, COMMIT_PROPOSED, PROPOSE_COMMIT)                                                        \
    X(P, OPEN, GIVE_UP, OPEN, PROPOSE_ABORT)                                                                         \
    X(P, COMMIT_PROPOSED, NEXT_EPISODE, OPEN, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_DEC_IGNORED(X, P)                                                                                    \
    X(P, ALL_REPORTED, "the commit is proposed: the reports are read no more", COMMIT_PROPOSED)                      \
    X(P, GIVE_UP, "the commit is proposed: its record decides, and no abort follows it", COMMIT_PROPOSED)            \
    X(P, NEXT_EPISODE, "nothing proposed: the round is open already", OPEN)

PREEMPT_DECL_ENUMS(dec, PREEMPT_DEC_, PREEMPT_DEC_STATES, PREEMPT_DEC_INPUTS, PREEMPT_DEC_ACTIONS);

extern const struct preempt_decl preempt_dec_decl_; /* fsmdump --machine decision */

#endif
