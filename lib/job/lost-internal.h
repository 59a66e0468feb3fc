/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/lost-internal.h: who is lost, the driver's decision (lib/job/lost.c,
 * pure).
 *
 * While it drives an episode, the driver reads the memberships once a
 * keep-alive period (one transaction: the members' records, the workers
 * done training, and the shard reports of both rounds; a worker counts as
 * there when any of them names it: the report of its last save ends its
 * membership, and a worker whose report is in waits at its step for the
 * decision; the first round's reports no longer count once a commit of it
 * after which its workers train on is read). A worker found missing is remembered from that read on; one
 * still missing a grace later (twice the longest step: a synchronous
 * trainer keeps its lease alive only at its boundaries; after that
 * commit, also two keep-alive periods and the slowest save, for
 * a lease that lapsed in a save) is lost, and the
 * driver writes the job's one lost record, which every worker follows. One
 * that is back before is forgotten.
 *
 * The coordinator traces every read and what it says as an answer line
 * (trace-internal.h); preempt-replay reads them again in order, with the
 * same memory, so an edited read diverges where it was edited. */
#ifndef PREEMPT_LOST_INTERNAL_H
#define PREEMPT_LOST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the driver remembers between reads: when each worker was first
 * found missing, on the driver's clock (0: it was not). Data the decision
 * reads, not a state of the protocol: the decision is the lost record. */
struct preempt_lost {
    unsigned n, me;
    uint64_t *gone_at; /* n of them, the caller's (the step allocates nothing) */
};

/* A new episode (or driver): nobody is missing yet. */
void preempt_lost_forget_(struct preempt_lost *l);

/* One read of the memberships, as the coordinator got it. status: the
 * transaction's (a negative errno: it failed); complete: its reply held
 * the reads asked for; absent: a bitmap of n bits, a worker set when no
 * record names it (this worker's own bit is not read); now_ms: the
 * driver's clock; grace_ms: how long a worker may be missing; known: a
 * lost record stands already (the view's), so none is written again. */
struct preempt_lost_read {
    int status;
    bool complete, known;
    const uint8_t *absent;
    uint64_t now_ms, grace_ms;
};

enum preempt_lost_says_kind {
    PREEMPT_LOST_FAILED,     /* the read failed: nothing is learned */
    PREEMPT_LOST_UNREADABLE, /* a reply without the reads asked for: nothing is learned */
    PREEMPT_LOST_NOTHING,    /* nobody is lost (missing: how many are missing within their grace) */
    PREEMPT_LOST_WORKER,     /* worker is lost: the driver writes the lost record */
};

/* What a read says. newly/back: how many were found missing, or back,
 * by this read (for the log). */
struct preempt_lost_says {
    enum preempt_lost_says_kind kind;
    unsigned worker, missing, newly, back;
};

/* Steps l with read r. A failed or unreadable read changes nothing. The
 * lowest worker missing for the grace is lost; the read's later workers
 * are not looked at (the lost record ends the round anyway). Pure. */
struct preempt_lost_says preempt_lost_read_(struct preempt_lost *l, const struct preempt_lost_read *r);

/* What a read says, as a trace line's meaning: "failed", "unreadable",
 * "nothing missing=M[ newly=K][ back=B]", "lost worker=W missing=M...".
 * Returns the length as snprintf. */
int preempt_lost_says_format_(char *buf, size_t size, const struct preempt_lost_says *s);

/* The absent bitmap of n bits as ranges ("-" for none, else "1,4-7"),
 * at most size-1 bytes; -1 when they do not fit. */
int preempt_lost_absent_format_(char *buf, size_t size, const uint8_t *absent, unsigned n);
/* Reads that text back into absent (n bits, cleared first); false when
 * it is malformed or names a worker >= n. */
bool preempt_lost_absent_parse_(const char *s, size_t len, uint8_t *absent, unsigned n);

#define PREEMPT_LOST_BIT(map, w) (((map)[(w) / 8] >> ((w) % 8)) & 1u)
#define PREEMPT_LOST_SET(map, w) ((map)[(w) / 8] |= (uint8_t)(1u << ((w) % 8)))

#endif
