/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/pub-internal.h: where this worker's notice stands in the job's
 * records, a declared machine of the coordinator (lib/job/coord.c).
 *
 * A worker's notice goes out once: in the claim that opens the episode
 * (the claim's value carries it), or as its own record notice/<me>, one
 * put at a time so that a later value never lands before an earlier one.
 * This table is the only place that decides which, and what happens when
 * the answers come back; it replaced five flags of the coordinator
 * (notice_busy, notice_dirty, notice_deferred, claim_carries,
 * notice_in_claim) whose combinations were its states. A declared machine
 * (decl-internal.h): pure step, every transition logged, a pair the table
 * does not list is declared ignored, with its reason. */
#ifndef PREEMPT_PUB_INTERNAL_H
#define PREEMPT_PUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "claim-internal.h" /* struct preempt_claim_answer */
#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_PUB_STATES(X, P)                                                                                     \
    X(P, IDLE, "idle", "nothing to send: the records hold this worker's newest notice, or it has none")              \
    X(P, DEFERRED, "deferred", "the newest value waits: the claim sent next carries it, else a put writes it")       \
    X(P, PUTTING, "putting", "a put of notice/<me> with the newest value is on its way")                             \
    X(P, PUTTING_STALE, "putting-stale", "a put is on its way; a newer value is written when it is answered")        \
    X(P, CARRIED, "carried", "the claim on its way carries the newest value")                                        \
    X(P, CARRIED_STALE, "carried-stale", "the claim on its way carries a value; a newer one is written after it")    \
    X(P, IN_CLAIM, "in-claim", "the value stands only in this worker's claim (no notice/<me> written)")

/* X(ID, "name", "what happened") */
#define PREEMPT_PUB_INPUTS(X, P)                                                                                     \
    X(P, WRITE, "write", "a value to publish now (a new one, a withdrawal, or one that must stand again)")           \
    X(P, DEFER, "defer", "a value that opens the episode: the claim the machine sends next should carry it")         \
    X(P, NOTHING, "nothing", "a write was asked for, but this worker has no notice")                                 \
    X(P, CLAIM_SENT, "claim-sent", "a claim is being sent (it may carry the value)")                                 \
    X(P, PUT_OK, "put-ok", "etcd took the put")                                                                      \
    X(P, PUT_FAILED, "put-failed", "the put failed (its failure is the coordinator's)")                              \
    X(P, CLAIM_WON, "claim-won", "the claim landed, with the value it carried")                                      \
    X(P, CLAIM_LOST, "claim-lost", "another worker's claim stands; the transaction wrote notice/<me> instead")       \
    X(P, CLAIM_FAILED, "claim-failed", "the claim had no answer: nothing of it landed")                              \
    X(P, CLAIM_GONE, "claim-gone", "the claim that carried the value went with its lease")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_PUB_ACTIONS(X, P)                                                                                    \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, PUT, "put", "put notice/<me> with the newest value")                                                        \
    X(P, CARRY, "carry", "the claim being sent carries the newest value (and writes notice/<me> if it fails)")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_PUB_TABLE(X, P)                                                                                      \
    X(P, IDLE, WRITE, PUTTING, PUT)                                                                                  \
    X(P, DEFERRED, WRITE, PUTTING, PUT)                                                                              \
    X(P, IN_CLAIM, WRITE, PUTTING, PUT)                                                                              \
    X(P, PUTTING, WRITE, PUTTING_STALE, NONE)                                                                        \
    X(P, CARRIED, WRITE, CARRIED_STALE, NONE)                                                                        \
    X(P, IDLE, DEFER, DEFERRED, NONE)                                                                                \
    X(P, IN_CLAIM, DEFER, DEFERRED, NONE)                                                                            \
    X(P, PUTTING, DEFER, PUTTING_STALE, NONE)                                                                        \
    X(P, CARRIED, DEFER, CARRIED_STALE, NONE)                                                                        \
    X(P, DEFERRED, NOTHING, IDLE, NONE)                                                                              \
    X(P, DEFERRED, CLAIM_SENT, CARRIED, CARRY)                                                                       \
    X(P, PUTTING, PUT_OK, IDLE, NONE)                                                                                \
    X(P, PUTTING_STALE, PUT_OK, PUTTING, PUT)                                                                        \
    X(P, PUTTING, PUT_FAILED, IDLE, NONE)                                                                            \
    X(P, PUTTING_STALE, PUT_FAILED, DEFERRED, NONE)                                                                  \
    X(P, CARRIED, CLAIM_WON, IN_CLAIM, NONE)                                                                         \
    X(P, CARRIED_STALE, CLAIM_WON, PUTTING, PUT)                                                                     \
    X(P, CARRIED, CLAIM_LOST, IDLE, NONE)                                                                            \
    X(P, CARRIED_STALE, CLAIM_LOST, PUTTING, PUT)                                                                    \
    X(P, CARRIED, CLAIM_FAILED, DEFERRED, NONE)                                                                      \
    X(P, CARRIED_STALE, CLAIM_FAILED, DEFERRED, NONE)                                                                \
    X(P, IN_CLAIM, CLAIM_GONE, DEFERRED, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_PUB_IGNORED(X, P)                                                                                    \
    X(P, WRITE, "a newer value waits already: the put or claim on its way is followed by the newest one",            \
      PUTTING_STALE, CARRIED_STALE)                                                                                  \
    X(P, DEFER, "a value waits already for its way out (the next claim, or a put after the one on its way): the "    \
      "newest goes", DEFERRED, PUTTING_STALE, CARRIED_STALE)                                                         \
    X(P, NOTHING, "no value waits to be dropped: what is on its way or stands is this worker's notice",              \
      IDLE, PUTTING, PUTTING_STALE, CARRIED, CARRIED_STALE, IN_CLAIM)                                                \
    X(P, CLAIM_SENT, "no value waits for a claim: this claim goes without one",                                      \
      IDLE, PUTTING, PUTTING_STALE, CARRIED, CARRIED_STALE, IN_CLAIM)                                                \
    X(P, PUT_OK, "no put of this machine's is on its way: the answer changes nothing",                               \
      IDLE, DEFERRED, CARRIED, CARRIED_STALE, IN_CLAIM)                                                              \
    X(P, PUT_FAILED, "no put of this machine's is on its way: the failure is the coordinator's alone",               \
      IDLE, DEFERRED, CARRIED, CARRIED_STALE, IN_CLAIM)                                                              \
    X(P, CLAIM_WON, "no claim on its way carries this machine's value: the answer is the claim machine's",           \
      IDLE, DEFERRED, PUTTING, PUTTING_STALE)                                                                        \
    X(P, CLAIM_WON, "the value stands in a claim already: a later claim's answer changes nothing of it", IN_CLAIM)   \
    X(P, CLAIM_LOST, "no claim on its way carries this machine's value: the answer is the claim machine's",          \
      IDLE, DEFERRED, PUTTING, PUTTING_STALE)                                                                        \
    X(P, CLAIM_LOST, "the value stands in a claim already: a later claim's answer changes nothing of it", IN_CLAIM)  \
    X(P, CLAIM_FAILED, "no claim on its way carries this machine's value: the answer is the claim machine's",        \
      IDLE, DEFERRED, PUTTING, PUTTING_STALE)                                                                        \
    X(P, CLAIM_FAILED, "the value stands in a claim already: a later claim's failure changes nothing of it",         \
      IN_CLAIM)                                                                                                      \
    X(P, CLAIM_GONE, "the value stands in no claim (it is in notice/<me>, on its way, or waits): the claim took "    \
      "nothing of it", IDLE, DEFERRED, PUTTING, PUTTING_STALE, CARRIED, CARRIED_STALE)

PREEMPT_DECL_ENUMS(pub, PREEMPT_PUB_, PREEMPT_PUB_STATES, PREEMPT_PUB_INPUTS, PREEMPT_PUB_ACTIONS);

extern const struct preempt_decl preempt_pub_decl_; /* fsmdump --machine notice-record */

/* What an answer to the claim (claim-internal.h) tells this machine: the
 * value it carried landed with the claim (claim-won), the transaction's
 * failure branch wrote notice/<me> instead (claim-lost: another claim, or
 * none, stood), or nothing of it landed (claim-failed). Pure; the
 * coordinator steps the machine with it, and preempt-replay computes it
 * again from the traced answer. */
enum preempt_pub_input preempt_pub_of_claim_(const struct preempt_claim_answer *a);

/* What a put's answer tells this machine: put-ok or put-failed. */
static inline enum preempt_pub_input preempt_pub_of_put_(int status)
{
    return status < 0 ? PREEMPT_PUB_IN_PUT_FAILED : PREEMPT_PUB_IN_PUT_OK;
}

/* One step of the table (decl-internal.h). Pure. */
static inline enum preempt_pub_action preempt_pub_step_(enum preempt_pub_state *state, enum preempt_pub_input input,
                                                        bool *listed)
{
    unsigned s = (unsigned)*state, a = preempt_decl_step_(&preempt_pub_decl_, &s, (unsigned)input, listed);

    *state = (enum preempt_pub_state)s;
    return (enum preempt_pub_action)a;
}

#endif
