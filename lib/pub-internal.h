/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/pub-internal.h: where this worker's notice stands in the job's
 * records, a declared machine of the coordinator (lib/coord.c).
 *
 * A worker's notice goes out once: in the claim that opens the episode
 * (the claim's value carries it), or as its own record notice/<me>, one
 * put at a time so that a later value never lands before an earlier one.
 * This table is the only place that decides which, and what happens when
 * the answers come back; it replaced five flags of the coordinator
 * (notice_busy, notice_dirty, notice_deferred, claim_carries,
 * notice_in_claim) whose combinations were its states. A declared machine
 * (decl-internal.h): pure step, every transition logged, a pair the table
 * does not list ignored on purpose. */
#ifndef PREEMPT_PUB_INTERNAL_H
#define PREEMPT_PUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_PUB_STATES(X)                                                                                        \
    X(IDLE, "idle", "nothing to send: the records hold this worker's newest notice, or it has none")               \
    X(DEFERRED, "deferred", "the newest value waits: the claim sent next carries it, else a put writes it")        \
    X(PUTTING, "putting", "a put of notice/<me> with the newest value is on its way")                              \
    X(PUTTING_STALE, "putting-stale", "a put is on its way; a newer value is written when it is answered")         \
    X(CARRIED, "carried", "the claim on its way carries the newest value")                                         \
    X(CARRIED_STALE, "carried-stale", "the claim on its way carries a value; a newer one is written after it")      \
    X(IN_CLAIM, "in-claim", "the value stands only in this worker's claim (no notice/<me> written)")

/* X(ID, "name", "what happened") */
#define PREEMPT_PUB_INPUTS(X)                                                                                        \
    X(WRITE, "write", "a value to publish now (a new one, a withdrawal, or one that must stand again)")             \
    X(DEFER, "defer", "a value that opens the episode: the claim the machine sends next should carry it")          \
    X(NOTHING, "nothing", "a write was asked for, but this worker has no notice")                                   \
    X(CLAIM_SENT, "claim-sent", "a claim is being sent (it may carry the value)")                                   \
    X(PUT_OK, "put-ok", "etcd took the put")                                                                         \
    X(PUT_FAILED, "put-failed", "the put failed (its failure is the coordinator's)")                                \
    X(CLAIM_WON, "claim-won", "the claim landed, with the value it carried")                                        \
    X(CLAIM_LOST, "claim-lost", "another worker's claim stands; the transaction wrote notice/<me> instead")         \
    X(CLAIM_FAILED, "claim-failed", "the claim had no answer: nothing of it landed")                                \
    X(CLAIM_GONE, "claim-gone", "the claim that carried the value went with its lease")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_PUB_ACTIONS(X)                                                                                       \
    X(NONE, "none", "nothing")                                                                                      \
    X(PUT, "put", "put notice/<me> with the newest value")                                                          \
    X(CARRY, "carry", "the claim being sent carries the newest value (and writes notice/<me> if it fails)")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_PUB_TABLE(X)                                                                                         \
    X(IDLE, WRITE, PUTTING, PUT)                                                                                     \
    X(DEFERRED, WRITE, PUTTING, PUT)                                                                                 \
    X(IN_CLAIM, WRITE, PUTTING, PUT)                                                                                 \
    X(PUTTING, WRITE, PUTTING_STALE, NONE)                                                                           \
    X(CARRIED, WRITE, CARRIED_STALE, NONE)                                                                           \
    X(IDLE, DEFER, DEFERRED, NONE)                                                                                   \
    X(IN_CLAIM, DEFER, DEFERRED, NONE)                                                                               \
    X(PUTTING, DEFER, PUTTING_STALE, NONE)                                                                           \
    X(CARRIED, DEFER, CARRIED_STALE, NONE)                                                                           \
    X(DEFERRED, NOTHING, IDLE, NONE)                                                                                 \
    X(DEFERRED, CLAIM_SENT, CARRIED, CARRY)                                                                          \
    X(PUTTING, PUT_OK, IDLE, NONE)                                                                                   \
    X(PUTTING_STALE, PUT_OK, PUTTING, PUT)                                                                           \
    X(PUTTING, PUT_FAILED, IDLE, NONE)                                                                               \
    X(PUTTING_STALE, PUT_FAILED, DEFERRED, NONE)                                                                     \
    X(CARRIED, CLAIM_WON, IN_CLAIM, NONE)                                                                            \
    X(CARRIED_STALE, CLAIM_WON, PUTTING, PUT)                                                                        \
    X(CARRIED, CLAIM_LOST, IDLE, NONE)                                                                               \
    X(CARRIED_STALE, CLAIM_LOST, PUTTING, PUT)                                                                       \
    X(CARRIED, CLAIM_FAILED, DEFERRED, NONE)                                                                         \
    X(CARRIED_STALE, CLAIM_FAILED, DEFERRED, NONE)                                                                   \
    X(IN_CLAIM, CLAIM_GONE, DEFERRED, NONE)

enum preempt_pub_state {
#define PREEMPT_PUB_ENUM_(id, ...) PREEMPT_PUB_##id,
    PREEMPT_PUB_STATES(PREEMPT_PUB_ENUM_) PREEMPT_PUB__COUNT
};
#undef PREEMPT_PUB_ENUM_
enum preempt_pub_input {
#define PREEMPT_PUB_IN_ENUM_(id, ...) PREEMPT_PUB_IN_##id,
    PREEMPT_PUB_INPUTS(PREEMPT_PUB_IN_ENUM_) PREEMPT_PUB_IN__COUNT
#undef PREEMPT_PUB_IN_ENUM_
};
enum preempt_pub_action {
#define PREEMPT_PUB_ACT_ENUM_(id, ...) PREEMPT_PUB_DO_##id,
    PREEMPT_PUB_ACTIONS(PREEMPT_PUB_ACT_ENUM_) PREEMPT_PUB_DO__COUNT
#undef PREEMPT_PUB_ACT_ENUM_
};

extern const struct preempt_decl preempt_pub_decl_; /* fsmdump --machine notice-record */

/* One step of the table (decl-internal.h). Pure. */
static inline enum preempt_pub_action preempt_pub_step_(enum preempt_pub_state *state, enum preempt_pub_input input,
                                                        bool *listed)
{
    unsigned s = (unsigned)*state, a = preempt_decl_step_(&preempt_pub_decl_, &s, (unsigned)input, listed);

    *state = (enum preempt_pub_state)s;
    return (enum preempt_pub_action)a;
}

#endif
