/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/membership-internal.h: where this worker's membership of the job
 * stands, a declared machine of the coordinator (lib/job/coord.c;
 * decl-internal.h).
 *
 * A member's record alive/<me> stands under its lease, which the
 * coordinator keeps alive. The report of this worker's last save of a
 * preemption deletes it in the same transaction (the worker leaves with
 * its shard; the driver does not count it lost), and the lease then ends
 * by itself. When the round turns out not to be the last (the job goes
 * back to idle), the record is put again. Leaving the job revokes the
 * lease, unless the membership already went with the last report: then
 * the lease, and a driver's claim bound to it, end by themselves, so that
 * no worker still waiting for the decision takes the episode over. This
 * table replaced two flags of the coordinator (departed, left). */
#ifndef PREEMPT_MEMBERSHIP_INTERNAL_H
#define PREEMPT_MEMBERSHIP_INTERNAL_H

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_MSHIP_STATES(X, P)                                                                                   \
    X(P, MEMBER, "member", "alive/<me> stands under the lease, which is kept alive")                                 \
    X(P, DEPARTED, "departed", "alive/<me> went with the report of this worker's last save; the lease ends by itself") \
    X(P, LEFT, "left", "this worker left the job: nothing more is sent, no answer is acted on")

/* X(ID, "name", "what happened") */
#define PREEMPT_MSHIP_INPUTS(X, P)                                                                                   \
    X(P, LAST_REPORT, "last-report", "this worker's last save was reported (the report deletes alive/<me>)")         \
    X(P, GRANTED, "granted", "a new lease was granted (the old one is no longer kept alive)")                        \
    X(P, NEXT_EPISODE, "next-episode", "back in idle: the last save was an opportunistic one after all")             \
    X(P, LEAVE, "leave", "the handler leaves the job (its exit, or it is freed)")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_MSHIP_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, PUT_ALIVE, "put-alive", "put alive/<me> under the current lease")                                           \
    X(P, REVOKE, "revoke", "revoke the lease (alive/<me> and a claim bound to it go at once)")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_MSHIP_TABLE(X, P)                                                                                    \
    X(P, MEMBER, LAST_REPORT, DEPARTED, NONE)                                                                        \
    X(P, MEMBER, GRANTED, MEMBER, PUT_ALIVE)                                                                         \
    X(P, DEPARTED, NEXT_EPISODE, MEMBER, PUT_ALIVE)                                                                  \
    X(P, MEMBER, LEAVE, LEFT, REVOKE)                                                                                \
    X(P, DEPARTED, LEAVE, LEFT, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_MSHIP_IGNORED(X, P)                                                                                  \
    X(P, LAST_REPORT, "alive/<me> went already, with the first report of a last save", DEPARTED)                     \
    X(P, GRANTED, "this worker departed: there is no membership to put under the new lease", DEPARTED)               \
    X(P, NEXT_EPISODE, "a member stays one: nothing to put again", MEMBER)

PREEMPT_DECL_ENUMS(mship, PREEMPT_MSHIP_, PREEMPT_MSHIP_STATES, PREEMPT_MSHIP_INPUTS, PREEMPT_MSHIP_ACTIONS);

extern const struct preempt_decl preempt_mship_decl_; /* fsmdump --machine membership */

#endif
