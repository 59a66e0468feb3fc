/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/lease-internal.h: this worker's membership lease, a declared machine
 * of the coordinator (lib/job/coord.c; decl-internal.h).
 *
 * The lease keeps alive/<me> (and a driver's claim bound to it) standing.
 * The coordinator keeps it alive every third of its TTL; a new lease is
 * granted when a step outgrew it (a synchronous trainer keeps it alive
 * only at its step boundaries), when a keep-alive's answer says etcd knows
 * it no more (the worker was frozen or cut off for longer than its TTL),
 * or when the claim's machine needs one (its claim met an ended lease).
 * One grant is on its way at a time: what asks for another meanwhile is
 * served by it. The granted lease is told to the membership and claim
 * machines, which put alive/<me> and send a waiting claim under it. This
 * table replaced the coordinator's flag granting, and the keep-alive's
 * answer is read by one pure function, traced, and read again by a
 * replay. */
#ifndef PREEMPT_LEASE_INTERNAL_H
#define PREEMPT_LEASE_INTERNAL_H

#include <stdint.h>

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_LEASE_STATES(X, P)                                                                                   \
    X(P, KEPT, "kept", "the lease is kept alive; no grant is on its way")                                            \
    X(P, GRANTING, "granting", "a new lease is being granted (one at a time)")

/* X(ID, "name", "what happened") */
#define PREEMPT_LEASE_INPUTS(X, P)                                                                                   \
    X(P, GREW, "grew", "a step outgrew the lease (a third of its TTL) while the episode is idle")                    \
    X(P, EXPIRED, "expired", "a keep-alive's answer: etcd knows the lease no more")                                  \
    X(P, WANTED, "wanted", "the claim's machine needs a new lease (its claim met an ended one)")                      \
    X(P, GRANTED, "granted", "a new lease was granted (the old one is no longer kept alive)")                       \
    X(P, GRANT_FAILED, "grant-failed", "granting a new lease failed")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_LEASE_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, GRANT, "grant", "grant a new lease of the TTL the longest step needs")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_LEASE_TABLE(X, P)                                                                                    \
    X(P, KEPT, GREW, GRANTING, GRANT)                                                                                \
    X(P, KEPT, EXPIRED, GRANTING, GRANT)                                                                             \
    X(P, KEPT, WANTED, GRANTING, GRANT)                                                                              \
    X(P, GRANTING, GRANTED, KEPT, NONE)                                                                              \
    X(P, GRANTING, GRANT_FAILED, KEPT, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_LEASE_IGNORED(X, P)                                                                                  \
    X(P, GREW, "a grant is on its way (one at a time): its lease is granted for the longest step", GRANTING)         \
    X(P, EXPIRED, "a grant is on its way (one at a time): its new lease replaces the one etcd lost", GRANTING)       \
    X(P, WANTED, "a grant is on its way (one at a time): the claim goes under its new lease", GRANTING)              \
    X(P, GRANTED, "no grant of this machine's is on its way: the answer changes nothing", KEPT)                      \
    X(P, GRANT_FAILED, "no grant of this machine's is on its way: the lease kept alive stays", KEPT)

PREEMPT_DECL_ENUMS(lease, PREEMPT_LEASE_, PREEMPT_LEASE_STATES, PREEMPT_LEASE_INPUTS, PREEMPT_LEASE_ACTIONS);

extern const struct preempt_decl preempt_lease_decl_; /* fsmdump --machine lease */

/* What a keep-alive's answer says: status (0 or a negative errno) and the
 * TTL etcd reports (0 or less: it knows the lease no more). Pure. */
enum preempt_keep_says {
    PREEMPT_KEEP_KEPT,    /* the lease lives on */
    PREEMPT_KEEP_FAILED,  /* no answer: the next tick tries again */
    PREEMPT_KEEP_EXPIRED, /* the lease ended: the machine's expired */
};
enum preempt_keep_says preempt_keep_answer_(int status, int64_t ttl_s);
const char *preempt_keep_says_name_(enum preempt_keep_says s); /* "kept", "failed", "expired" */

#endif
