/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/membership-internal.h: where this worker's membership of the job
 * stands, a declared machine of the coordinator (lib/coord.c;
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
#define PREEMPT_MSHIP_STATES(X)                                                                                     \
    X(MEMBER, "member", "alive/<me> stands under the lease, which is kept alive")                                   \
    X(DEPARTED, "departed", "alive/<me> went with the report of this worker's last save; the lease ends by itself") \
    X(LEFT, "left", "this worker left the job: nothing more is sent, no answer is acted on")

/* X(ID, "name", "what happened") */
#define PREEMPT_MSHIP_INPUTS(X)                                                                                     \
    X(LAST_REPORT, "last-report", "this worker's last save was reported (the report deletes alive/<me>)")           \
    X(GRANTED, "granted", "a new lease was granted (the old one is no longer kept alive)")                          \
    X(NEXT_EPISODE, "next-episode", "back in idle: the last save was an opportunistic one after all")               \
    X(LEAVE, "leave", "the handler leaves the job (its exit, or it is freed)")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_MSHIP_ACTIONS(X)                                                                                    \
    X(NONE, "none", "nothing")                                                                                      \
    X(PUT_ALIVE, "put-alive", "put alive/<me> under the current lease")                                             \
    X(REVOKE, "revoke", "revoke the lease (alive/<me> and a claim bound to it go at once)")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_MSHIP_TABLE(X)                                                                                      \
    X(MEMBER, LAST_REPORT, DEPARTED, NONE)                                                                          \
    X(MEMBER, GRANTED, MEMBER, PUT_ALIVE)                                                                           \
    X(DEPARTED, NEXT_EPISODE, MEMBER, PUT_ALIVE)                                                                    \
    X(MEMBER, LEAVE, LEFT, REVOKE)                                                                                  \
    X(DEPARTED, LEAVE, LEFT, NONE)

enum preempt_mship_state {
#define PREEMPT_MSHIP_ENUM_(id, ...) PREEMPT_MSHIP_##id,
    PREEMPT_MSHIP_STATES(PREEMPT_MSHIP_ENUM_) PREEMPT_MSHIP__COUNT
#undef PREEMPT_MSHIP_ENUM_
};
enum preempt_mship_input {
#define PREEMPT_MSHIP_IN_ENUM_(id, ...) PREEMPT_MSHIP_IN_##id,
    PREEMPT_MSHIP_INPUTS(PREEMPT_MSHIP_IN_ENUM_) PREEMPT_MSHIP_IN__COUNT
#undef PREEMPT_MSHIP_IN_ENUM_
};
enum preempt_mship_action {
#define PREEMPT_MSHIP_ACT_ENUM_(id, ...) PREEMPT_MSHIP_DO_##id,
    PREEMPT_MSHIP_ACTIONS(PREEMPT_MSHIP_ACT_ENUM_) PREEMPT_MSHIP_DO__COUNT
#undef PREEMPT_MSHIP_ACT_ENUM_
};

extern const struct preempt_decl preempt_mship_decl_; /* fsmdump --machine membership */

#endif
