/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/claim-internal.h: where this worker's driver claim stands, a
 * declared machine of the coordinator (lib/coord.c; decl-internal.h).
 *
 * The worker that claims an episode (e<p>/claim, create-if-absent, bound to
 * its lease) drives it: it reads the memberships and writes what the job
 * decides about lost peers. The claim is sent when the machine drives
 * (claim-driver) or when nobody drives an episode with a live notice; its
 * answer says who holds it; a claim sent under a lease that ended inside a
 * long step goes again under a new lease. This table replaced three flags
 * of the coordinator (claim_sent, claim_again, holds_claim) whose
 * combinations were its states; the coordinator feeds it the answers and
 * runs its actions, and asks it only whether this worker holds the claim
 * (it reads the memberships) and whether a claim is on its way (a notice
 * waits for it). The answers are taken in any state, as they come: a
 * claim may go twice (a take-over while the first is on its way), and
 * every answer tells who holds the claim now. */
#ifndef PREEMPT_CLAIM_INTERNAL_H
#define PREEMPT_CLAIM_INTERNAL_H

#include <stdbool.h>

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_CLAIM_STATES(X)                                                                                     \
    X(NONE, "none", "no claim of this worker's stands or is on its way")                                            \
    X(SENT, "sent", "this worker's claim is on its way (no answer yet)")                                            \
    X(AWAIT_LEASE, "await-lease", "the claim was sent under an ended lease: it goes again under the new one")       \
    X(HELD, "held", "this worker's claim stands: it drives the episode and reads the memberships")

/* X(ID, "name", "what happened") */
#define PREEMPT_CLAIM_INPUTS(X)                                                                                     \
    X(SEND, "send", "a claim must go: the machine drives (claim-driver), or nobody drives an episode with a notice")\
    X(NOTICE, "notice", "a notice came and no claim stands: one must go, unless this worker's is on its way")       \
    X(WON, "won", "an answer: this worker's claim stands")                                                          \
    X(LOST, "lost", "an answer: another worker's claim stands")                                                     \
    X(FAILED, "failed", "a claim had no answer (the failure is the coordinator's)")                                 \
    X(STALE_LEASE, "stale-lease", "an answer: etcd knew the claim's lease no more (it ended inside a long step)")    \
    X(UNREADABLE, "unreadable", "an answer: the claim did not land, and what stands is no claim (garbage, or none)")\
    X(GRANTED, "granted", "a new lease was granted")                                                                \
    X(GRANT_FAILED, "grant-failed", "granting a new lease failed")                                                  \
    X(GONE, "gone", "the episode's claim record went (its holder's lease ended)")                                   \
    X(NEXT_EPISODE, "next-episode", "the machine is back in idle: the coordinator moves on to the next episode")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_CLAIM_ACTIONS(X)                                                                                    \
    X(NONE, "none", "nothing")                                                                                      \
    X(SEND, "send", "send the claim: create-if-absent under the lease, with the notice and the proposal it carries")\
    X(REGRANT, "regrant", "grant a new lease; the claim goes when it is granted")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_CLAIM_TABLE(X)                                                                                      \
    X(NONE, SEND, SENT, SEND)                                                                                       \
    X(SENT, SEND, SENT, SEND)                                                                                       \
    X(AWAIT_LEASE, SEND, SENT, SEND)                                                                                \
    X(HELD, SEND, SENT, SEND)                                                                                       \
    X(NONE, NOTICE, SENT, SEND)                                                                                     \
    X(AWAIT_LEASE, NOTICE, SENT, SEND)                                                                              \
    X(HELD, NOTICE, SENT, SEND)                                                                                     \
    X(NONE, WON, HELD, NONE)                                                                                        \
    X(SENT, WON, HELD, NONE)                                                                                        \
    X(AWAIT_LEASE, WON, HELD, NONE)                                                                                 \
    X(HELD, WON, HELD, NONE)                                                                                        \
    X(SENT, LOST, NONE, NONE)                                                                                       \
    X(AWAIT_LEASE, LOST, NONE, NONE)                                                                                \
    X(HELD, LOST, NONE, NONE)                                                                                       \
    X(SENT, FAILED, NONE, NONE)                                                                                     \
    X(NONE, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                      \
    X(SENT, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                      \
    X(AWAIT_LEASE, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                               \
    X(HELD, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                      \
    X(NONE, UNREADABLE, SENT, SEND)                                                                                 \
    X(SENT, UNREADABLE, SENT, SEND)                                                                                 \
    X(AWAIT_LEASE, UNREADABLE, SENT, SEND)                                                                          \
    X(HELD, UNREADABLE, SENT, SEND)                                                                                 \
    X(AWAIT_LEASE, GRANTED, SENT, SEND)                                                                             \
    X(AWAIT_LEASE, GRANT_FAILED, NONE, NONE)                                                                        \
    X(HELD, GONE, NONE, NONE)                                                                                       \
    X(HELD, NEXT_EPISODE, NONE, NONE)

enum preempt_claim_state {
#define PREEMPT_CLAIM_ENUM_(id, ...) PREEMPT_CLAIM_##id,
    PREEMPT_CLAIM_STATES(PREEMPT_CLAIM_ENUM_) PREEMPT_CLAIM__COUNT
#undef PREEMPT_CLAIM_ENUM_
};
enum preempt_claim_input {
#define PREEMPT_CLAIM_IN_ENUM_(id, ...) PREEMPT_CLAIM_IN_##id,
    PREEMPT_CLAIM_INPUTS(PREEMPT_CLAIM_IN_ENUM_) PREEMPT_CLAIM_IN__COUNT
#undef PREEMPT_CLAIM_IN_ENUM_
};
enum preempt_claim_action {
#define PREEMPT_CLAIM_ACT_ENUM_(id, ...) PREEMPT_CLAIM_DO_##id,
    PREEMPT_CLAIM_ACTIONS(PREEMPT_CLAIM_ACT_ENUM_) PREEMPT_CLAIM_DO__COUNT
#undef PREEMPT_CLAIM_ACT_ENUM_
};

extern const struct preempt_decl preempt_claim_decl_; /* fsmdump --machine claim */

#endif
