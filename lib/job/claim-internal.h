/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/claim-internal.h: where this worker's driver claim stands, a
 * declared machine of the coordinator (lib/job/coord.c; decl-internal.h).
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
#define PREEMPT_CLAIM_STATES(X, P)                                                                                   \
    X(P, NONE, "none", "no claim of this worker's stands or is on its way")                                          \
    X(P, SENT, "sent", "this worker's claim is on its way (no answer yet)")                                          \
    X(P, AWAIT_LEASE, "await-lease", "the claim was sent under an ended lease: it goes again under the new one")     \
    X(P, HELD, "held", "this worker's claim stands: it drives the episode and reads the memberships")

/* X(ID, "name", "what happened") */
#define PREEMPT_CLAIM_INPUTS(X, P)                                                                                   \
    X(P, SEND, "send", "a claim must go: the machine drives (claim-driver), or nobody drives an episode with a notice") \
    X(P, NOTICE, "notice", "a notice came and no claim stands: one must go, unless this worker's is on its way")     \
    X(P, WON, "won", "an answer: this worker's claim stands")                                                        \
    X(P, LOST, "lost", "an answer: another worker's claim stands")                                                   \
    X(P, FAILED, "failed", "a claim had no answer (the failure is the coordinator's)")                               \
    X(P, STALE_LEASE, "stale-lease", "an answer: etcd knew the claim's lease no more (it ended inside a long step)") \
    X(P, UNREADABLE, "unreadable", "an answer: the claim did not land, and what stands is no claim (garbage, or none)") \
    X(P, GRANTED, "granted", "a new lease was granted")                                                              \
    X(P, GRANT_FAILED, "grant-failed", "granting a new lease failed")                                                \
    X(P, GONE, "gone", "the episode's claim record went (its holder's lease ended)")                                 \
    X(P, NEXT_EPISODE, "next-episode", "the machine is back in idle: the coordinator moves on to the next episode")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_CLAIM_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, SEND, "send", "send the claim: create-if-absent under the lease, with the notice and the proposal it carries") \
    X(P, REGRANT, "regrant", "grant a new lease; the claim goes when it is granted")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_CLAIM_TABLE(X, P)                                                                                    \
    X(P, NONE, SEND, SENT, SEND)                                                                                     \
    X(P, SENT, SEND, SENT, SEND)                                                                                     \
    X(P, AWAIT_LEASE, SEND, SENT, SEND)                                                                              \
    X(P, HELD, SEND, SENT, SEND)                                                                                     \
    X(P, NONE, NOTICE, SENT, SEND)                                                                                   \
    X(P, AWAIT_LEASE, NOTICE, SENT, SEND)                                                                            \
    X(P, HELD, NOTICE, SENT, SEND)                                                                                   \
    X(P, NONE, WON, HELD, NONE)                                                                                      \
    X(P, SENT, WON, HELD, NONE)                                                                                      \
    X(P, AWAIT_LEASE, WON, HELD, NONE)                                                                               \
    X(P, HELD, WON, HELD, NONE)                                                                                      \
    X(P, SENT, LOST, NONE, NONE)                                                                                     \
    X(P, AWAIT_LEASE, LOST, NONE, NONE)                                                                              \
    X(P, HELD, LOST, NONE, NONE)                                                                                     \
    X(P, SENT, FAILED, NONE, NONE)                                                                                   \
    X(P, NONE, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                    \
    X(P, SENT, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                    \
    X(P, AWAIT_LEASE, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                             \
    X(P, HELD, STALE_LEASE, AWAIT_LEASE, REGRANT)                                                                    \
    X(P, NONE, UNREADABLE, SENT, SEND)                                                                               \
    X(P, SENT, UNREADABLE, SENT, SEND)                                                                               \
    X(P, AWAIT_LEASE, UNREADABLE, SENT, SEND)                                                                        \
    X(P, HELD, UNREADABLE, SENT, SEND)                                                                               \
    X(P, AWAIT_LEASE, GRANTED, SENT, SEND)                                                                           \
    X(P, AWAIT_LEASE, GRANT_FAILED, NONE, NONE)                                                                      \
    X(P, HELD, GONE, NONE, NONE)                                                                                     \
    X(P, HELD, NEXT_EPISODE, NONE, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_CLAIM_IGNORED(X, P)                                                                                  \
    X(P, NOTICE, "this worker's claim is on its way: its answer says who drives", SENT)                              \
    X(P, LOST, "no claim of this worker's stands or goes: another's changes nothing here", NONE)                     \
    X(P, FAILED, "no claim of this worker's is on its way (none was sent, it goes again under the new lease, or it " \
      "stands)", NONE, AWAIT_LEASE, HELD)                                                                            \
    X(P, GRANTED, "no claim waits for a lease: a grant for the lease's own reasons sends nothing", NONE, SENT, HELD) \
    X(P, GRANT_FAILED, "no claim waits for a lease: the failure is the lease machine's", NONE, SENT, HELD)           \
    X(P, GONE, "this worker holds no claim: the one that went is another's, or its own answer is still to come",     \
      NONE, SENT, AWAIT_LEASE)                                                                                       \
    X(P, NEXT_EPISODE, "this worker holds no claim of the ended episode to let go", NONE, SENT, AWAIT_LEASE)

PREEMPT_DECL_ENUMS(claim, PREEMPT_CLAIM_, PREEMPT_CLAIM_STATES, PREEMPT_CLAIM_INPUTS, PREEMPT_CLAIM_ACTIONS);

extern const struct preempt_decl preempt_claim_decl_; /* fsmdump --machine claim */

/* An answer to this worker's claim, as the coordinator got it: the
 * transaction's status (0, or a negative errno: -ENOENT is etcd's
 * "requested lease not found"), whether the create landed, and, when it
 * did not, the claim record its failure branch read (read: one was there;
 * held: its value, NULL for none). left: this worker left the job. */
struct preempt_claim_answer {
    int status;
    bool succeeded, read, left;
    const char *held;
};

/* What the answer says: the claim machine's input (won, lost, failed,
 * stale-lease or unreadable), who holds the claim (holder: this worker,
 * me, when won), and, for unreadable, whether a record was there that is
 * no claim (garbage: the next claim replaces it) or none was (released
 * between the compare and the read). Pure; the coordinator steps the
 * machine with it, and preempt-replay computes it again from the traced
 * answer. */
struct preempt_claim_says {
    enum preempt_claim_input input;
    unsigned holder;
    bool garbage;
};
struct preempt_claim_says preempt_claim_answer_(const struct preempt_claim_answer *a, unsigned me);

/* The answer and what it says, as a trace line's fields and meaning:
 * "status=S succeeded=B read=B held=V left=B" (V percent-encoded by the
 * caller) and "won", "lost worker=W", "failed", "stale-lease",
 * "unreadable[ garbage]". Return the length as snprintf. */
int preempt_claim_says_format_(char *buf, size_t size, const struct preempt_claim_says *s);

#endif
