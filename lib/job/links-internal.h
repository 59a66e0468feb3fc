/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/links-internal.h: how the job's machines drive each other,
 * declared as data (fsmdump --machine job draws it).
 *
 * The running coordinator (lib/job/coord*.c) has eight declared machines
 * (decl-internal.h) beside the handler's (fsm/), and start-up's step
 * (lib/job/startup.c) five more: the offer, the join attempt, the shape,
 * the awaited record's watch and the phase's end; and start-up's driver
 * (lib/job/start.c) the restore machine. Nothing feeds one of them
 * but a link: a named happening (an answer of etcd, a record read, an
 * effect of the handler's machine, the trainer's step, the keep-alive
 * tick, or another machine's action) and the inputs it posts, machine by
 * machine, in the order the coordinator posts them. The condition under
 * which a link posts an input (the episode is active, this worker drives
 * it, ...) is the coordinator's code; its words are the link's "when".
 * Every input the coordinator posts names its link, and a post that the
 * table does not declare is a bug the coordinator counts and logs
 * (preempt_coord_link_bugs_; the simulator fails on one). `fsmdump
 * --machine job --check` checks the table the other way: every input of
 * the running machines has a link that posts it. So the drawing is the
 * wiring: a notice can be followed to a claim, a round, a decision and an
 * exit. Pure. */
#ifndef PREEMPT_LINKS_INTERNAL_H
#define PREEMPT_LINKS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "claim-internal.h"
#include "decision-internal.h"
#include "decl-internal.h"
#include "episode-internal.h"
#include "lease-internal.h"
#include "joining-internal.h"
#include "membership-internal.h"
#include "phase-internal.h"
#include "preempt_fsm.h" /* enum preempt_event_kind: the handler machine's inputs */
#include "pub-internal.h"
#include "restore-internal.h"
#include "watch-internal.h"

/* The machines a link posts to: the coordinator's running ones, and the
 * handler's (whose inputs are its events). */
enum preempt_link_m {
    PREEMPT_LINK_M_PUB,   /* notice-record */
    PREEMPT_LINK_M_CLAIM, /* claim */
    PREEMPT_LINK_M_MSHIP, /* membership */
    PREEMPT_LINK_M_LEASE, /* lease */
    PREEMPT_LINK_M_WATCH, /* watch */
    PREEMPT_LINK_M_ROLL,  /* roll-call */
    PREEMPT_LINK_M_EP,    /* episode */
    PREEMPT_LINK_M_DEC,   /* decision (one per round) */
    PREEMPT_LINK_M_OFFER,   /* start-up: offer */
    PREEMPT_LINK_M_ATTEMPT, /* start-up: attempt */
    PREEMPT_LINK_M_SHAPE,   /* start-up: shape */
    PREEMPT_LINK_M_AWAIT,   /* start-up: await (the watch's table) */
    PREEMPT_LINK_M_PEND,    /* start-up: phase-end */
    PREEMPT_LINK_M_RST,     /* start-up: restore (its driver's, lib/job/start.c) */
    PREEMPT_LINK_M_HANDLER,
    PREEMPT_LINK_M__COUNT
};

/* Where a link's happening comes from. */
enum preempt_link_from {
    PREEMPT_LINK_FROM_ETCD,    /* an answer of etcd (the coordinator's request, the watch) */
    PREEMPT_LINK_FROM_RECORDS, /* a record read, as the job's view means it (view-internal.h) */
    PREEMPT_LINK_FROM_HANDLER, /* the handler's machine: an effect it asked for, or where it went */
    PREEMPT_LINK_FROM_TRAINER, /* the trainer's step */
    PREEMPT_LINK_FROM_CLOCK,   /* the keep-alive tick */
    PREEMPT_LINK_FROM_MACHINE, /* another machine's action (PREEMPT_LINK_ACTIONS) */
    PREEMPT_LINK_FROM_OUTCOME, /* start-up's outcome: an answer, a record or its bound decided it */
    PREEMPT_LINK_FROM__COUNT
};

/* X(ID, "name", FROM, "when: what happens, and under what condition it posts") */
#define PREEMPT_LINKS(X)                                                                                             \
    X(NOTICE_WRITE, "notice-write", HANDLER,                                                                         \
      "this worker's notice must be written again: the handler withdrew it or made it live again, or exits while "   \
      "a claim was to carry it")                                                                                     \
    X(NOTICE_PUT, "notice-put-answer", ETCD, "etcd answered the put of notice/<me>")                                 \
    X(OWN_NOTICE, "own-notice", HANDLER,                                                                             \
      "the handler's machine publishes this worker's notice (publish-notice); it opens the episode when idle, and "  \
      "the claim then carries it")                                                                                   \
    X(CLAIM_DRIVER, "claim-driver", HANDLER, "the handler's machine claims the episode (claim-driver)")              \
    X(CLAIM_SEND, "claim-send", MACHINE, "the claim's machine sends the claim (send): it carries a deferred notice")  \
    X(CLAIM_ANSWER, "claim-answer", ETCD,                                                                            \
      "etcd answered this worker's claim: won, lost, no answer, an ended lease, or no claim to read")               \
    X(REGRANT, "regrant", MACHINE, "the claim's machine needs a new lease (regrant)")                                \
    X(GRANTED, "lease-granted", ETCD, "etcd granted a new lease (the old one is no longer kept alive)")              \
    X(GRANT_FAILED, "grant-failed", ETCD, "granting a new lease failed")                                             \
    X(STEP_GREW, "step-grew", TRAINER, "a step outgrew a third of the lease's TTL while the episode is idle")        \
    X(LEASE_EXPIRED, "lease-expired", ETCD, "a keep-alive's answer: etcd knows the lease no more")                   \
    X(TICK, "tick", CLOCK,                                                                                           \
      "the keep-alive tick: the watch's machine reads the records while the watch is down; the roll call is due "    \
      "while this worker holds the claim of an episode under way (active, or its notices withdrawn)")                \
    X(WATCH_LINK, "watch-link", ETCD, "the job's watch went down or came up")                                        \
    X(RECORDS_READ, "records-read", ETCD, "etcd answered the read that stands in for the watch")                     \
    X(ROLL_ANSWER, "roll-call-answer", ETCD, "etcd answered the driver's read of the memberships and reports")       \
    X(NOTICE_READ, "notice-read", RECORDS,                                                                           \
      "a worker's notice record of the episode: told to the handler unless it is this worker's own (or it undoes "  \
      "the job's withdrawal); the notices summed; the episode claimed when it is active and nobody drives it")      \
    X(CLAIM_WENT, "claim-went", RECORDS,                                                                             \
      "the episode's claim record went with its holder's lease: the episode is claimed anew when it is active")      \
    X(REREAD, "reread", RECORDS,                                                                                     \
      "a full read of the records: a later episode and nothing of this one (cleared while the watch was down), "     \
      "else the episode claimed when it is active and nobody drives it")                                           \
    X(DECISION, "decision-read", RECORDS,                                                                            \
      "a round's decision record: the first round committed and its workers train on; this worker's own notice, "    \
      "not yet in the records, stands after the job withdrew the others; the handler follows the decision")         \
    X(RECORD_EVENT, "record-event", RECORDS,                                                                         \
      "another record's meaning for every worker: a round's step, the final round, a worker lost, an error, the "    \
      "operator's notice")                                                                                           \
    X(TELL_WITHDRAWN, "tell-withdrawn", MACHINE, "the episode's machine tells the handler the notices are withdrawn") \
    X(ALL_REPORTED, "all-reported", ETCD, "a read of a round's shard reports holds every worker's")                  \
    X(GIVE_UP, "give-up", HANDLER,                                                                                   \
      "the handler's machine gives a round up (propose-abort), and a read of its reports finds a shard missing or "  \
      "fails")                                                                                                       \
    X(LAST_REPORT, "last-report", HANDLER, "the handler's machine reported this worker's last save (report-shard)")  \
    X(NEXT_EPISODE, "next-episode", HANDLER,                                                                         \
      "the handler's machine is back in idle: both rounds start over; a notice of this worker's that came after "    \
      "the job withdrew the others opens the next episode")                                                        \
    X(LEAVE, "leave", HANDLER, "the handler leaves the job (its exit, or it is freed)")                              \
    X(WRITE_FAILED, "write-failed", ETCD, "a coordination write failed past its bound")                              \
    /* start-up's */                                                                                                 \
    X(COUNTER_READ, "counter-read", ETCD,                                                                            \
      "etcd answered the read of the incarnation counter: absent (a new job, or a wiped store), or the "            \
      "incarnation it names")                                                                                        \
    X(RESOLVED, "pending-resolved", ETCD,                                                                            \
      "every pending checkpoint's decision is known: etcd answered the last read (or write) of one, or the offer's " \
      "resolve found none of this job's to read")                                                                    \
    X(JOIN_ANSWER, "join-answer", ETCD,                                                                              \
      "etcd answered a join attempt, judged in one order: applied; the counter moved on; the index held (by this "   \
      "worker's own lease, or another's); never started; still starting; started")                                 \
    X(SHAPE_READ, "shape-read", ETCD,                                                                                \
      "an answer names the shape record, absent or present: the join applied (the attempt's count), a recount, or "  \
      "the shape's create that found one there")                                                                    \
    X(REJOINED, "rejoined", MACHINE,                                                                                 \
      "the attempt's recount: this worker's earlier join was applied though its answer was lost")                    \
    X(AWAIT_LINK, "await-link", ETCD, "the awaited record's watch went down or came up")                             \
    X(AWAIT_READ, "await-read", ETCD, "etcd answered the read that stands in for the awaited record's watch")       \
    X(AWAIT_TICK, "await-tick", CLOCK, "the keep-alive tick while start-up watches the awaited record")              \
    X(PHASE_FINISH, "phase-finish", OUTCOME, "the phase's outcome is known: an answer, the awaited record, or its bound") \
    X(PHASE_END, "phase-end", MACHINE,                                                                               \
      "the phase's end runs, from the loop's timer: the lease stays (the membership goes on, or there is none) or "  \
      "goes back (the phase failed, or ends the membership)")                                                       \
    X(REVOKE_ANSWER, "revoke-answer", ETCD, "etcd answered the lease's revoke, or it could not be sent")          \
    X(JOINED, "joined", MACHINE,                                                                                     \
      "the join's phase ended (phase-end's release): a step every worker holds, none (or no checkpoint "            \
      "directory), none left after this start-up set steps aside, or its failure")                                  \
    X(RESTORE_DONE, "restore-done", MACHINE,                                                                         \
      "the restore machine's restore ran the trainer's restore callback: it took the checkpoint, found it "         \
      "unusable, or failed")                                                                                         \
    X(BARRIER_DONE, "barrier-done", MACHINE,                                                                         \
      "the restore barrier's phase ended (phase-end's release): the job's one record (ok, unusable, failed) or its " \
      "failure")

enum preempt_link_id {
#define PREEMPT_LINK_ID_(id, ...) PREEMPT_LINK_##id,
    PREEMPT_LINKS(PREEMPT_LINK_ID_)
#undef PREEMPT_LINK_ID_
    PREEMPT_LINK__COUNT
};

/* X(LINK, MACHINE, INPUT): the inputs each link may post (MACHINE:
 * PREEMPT_LINK_M_<MACHINE>; INPUT: that machine's input, or for the
 * handler its event kind); a link that always posts several lists them in
 * the order it posts them. */
#define PREEMPT_LINK_ROWS(X)                                                                                         \
    X(NOTICE_WRITE, PUB, PREEMPT_PUB_IN_WRITE)                                                                       \
    X(NOTICE_WRITE, PUB, PREEMPT_PUB_IN_NOTHING)                                                                     \
    X(NOTICE_PUT, PUB, PREEMPT_PUB_IN_PUT_OK)                                                                        \
    X(NOTICE_PUT, PUB, PREEMPT_PUB_IN_PUT_FAILED)                                                                    \
    X(OWN_NOTICE, EP, PREEMPT_EP_IN_OWN)                                                                             \
    X(OWN_NOTICE, PUB, PREEMPT_PUB_IN_DEFER)                                                                         \
    X(OWN_NOTICE, PUB, PREEMPT_PUB_IN_WRITE)                                                                         \
    X(OWN_NOTICE, PUB, PREEMPT_PUB_IN_NOTHING)                                                                       \
    X(CLAIM_DRIVER, CLAIM, PREEMPT_CLAIM_IN_SEND)                                                                    \
    X(CLAIM_SEND, PUB, PREEMPT_PUB_IN_CLAIM_SENT)                                                                    \
    X(CLAIM_ANSWER, PUB, PREEMPT_PUB_IN_CLAIM_WON)                                                                   \
    X(CLAIM_ANSWER, PUB, PREEMPT_PUB_IN_CLAIM_LOST)                                                                  \
    X(CLAIM_ANSWER, PUB, PREEMPT_PUB_IN_CLAIM_FAILED)                                                                \
    X(CLAIM_ANSWER, CLAIM, PREEMPT_CLAIM_IN_STALE_LEASE)                                                             \
    X(CLAIM_ANSWER, PUB, PREEMPT_PUB_IN_WRITE)                                                                       \
    X(CLAIM_ANSWER, PUB, PREEMPT_PUB_IN_NOTHING)                                                                     \
    X(CLAIM_ANSWER, CLAIM, PREEMPT_CLAIM_IN_FAILED)                                                                  \
    X(CLAIM_ANSWER, CLAIM, PREEMPT_CLAIM_IN_UNREADABLE)                                                              \
    X(CLAIM_ANSWER, CLAIM, PREEMPT_CLAIM_IN_WON)                                                                     \
    X(CLAIM_ANSWER, CLAIM, PREEMPT_CLAIM_IN_LOST)                                                                    \
    X(CLAIM_ANSWER, HANDLER, PREEMPT_EV_CLAIM_WON)                                                                   \
    X(CLAIM_ANSWER, HANDLER, PREEMPT_EV_CLAIM_LOST)                                                                  \
    X(CLAIM_ANSWER, HANDLER, PREEMPT_EV_STEP_AGREED)                                                                 \
    X(REGRANT, LEASE, PREEMPT_LEASE_IN_WANTED)                                                                       \
    X(GRANTED, LEASE, PREEMPT_LEASE_IN_GRANTED)                                                                      \
    X(GRANTED, MSHIP, PREEMPT_MSHIP_IN_GRANTED)                                                                      \
    X(GRANTED, CLAIM, PREEMPT_CLAIM_IN_GRANTED)                                                                      \
    X(GRANT_FAILED, LEASE, PREEMPT_LEASE_IN_GRANT_FAILED)                                                            \
    X(GRANT_FAILED, CLAIM, PREEMPT_CLAIM_IN_GRANT_FAILED)                                                            \
    X(STEP_GREW, LEASE, PREEMPT_LEASE_IN_GREW)                                                                       \
    X(LEASE_EXPIRED, LEASE, PREEMPT_LEASE_IN_EXPIRED)                                                                \
    X(TICK, WATCH, PREEMPT_WATCH_IN_TICK)                                                                            \
    X(TICK, ROLL, PREEMPT_ROLL_IN_DUE)                                                                               \
    X(WATCH_LINK, WATCH, PREEMPT_WATCH_IN_UP)                                                                        \
    X(WATCH_LINK, WATCH, PREEMPT_WATCH_IN_DOWN)                                                                      \
    X(RECORDS_READ, WATCH, PREEMPT_WATCH_IN_READ)                                                                    \
    X(RECORDS_READ, WATCH, PREEMPT_WATCH_IN_READ_FAILED)                                                             \
    X(ROLL_ANSWER, ROLL, PREEMPT_ROLL_IN_ANSWERED)                                                                   \
    X(NOTICE_READ, EP, PREEMPT_EP_IN_SEEN)                                                                           \
    X(NOTICE_READ, HANDLER, PREEMPT_EV_PEER_NOTICE)                                                                  \
    X(NOTICE_READ, HANDLER, PREEMPT_EV_STEP_AGREED)                                                                  \
    X(NOTICE_READ, EP, PREEMPT_EP_IN_NEWS)                                                                           \
    X(NOTICE_READ, EP, PREEMPT_EP_IN_LIVE)                                                                           \
    X(NOTICE_READ, EP, PREEMPT_EP_IN_ALL_WITHDRAWN)                                                                  \
    X(NOTICE_READ, PUB, PREEMPT_PUB_IN_CLAIM_GONE)                                                                   \
    X(NOTICE_READ, CLAIM, PREEMPT_CLAIM_IN_NOTICE)                                                                   \
    X(NOTICE_READ, PUB, PREEMPT_PUB_IN_WRITE)                                                                        \
    X(NOTICE_READ, PUB, PREEMPT_PUB_IN_NOTHING)                                                                      \
    X(CLAIM_WENT, CLAIM, PREEMPT_CLAIM_IN_GONE)                                                                      \
    X(CLAIM_WENT, PUB, PREEMPT_PUB_IN_CLAIM_GONE)                                                                    \
    X(CLAIM_WENT, CLAIM, PREEMPT_CLAIM_IN_SEND)                                                                      \
    X(CLAIM_WENT, PUB, PREEMPT_PUB_IN_WRITE)                                                                         \
    X(CLAIM_WENT, PUB, PREEMPT_PUB_IN_NOTHING)                                                                       \
    X(REREAD, EP, PREEMPT_EP_IN_CLEARED)                                                                             \
    X(REREAD, PUB, PREEMPT_PUB_IN_CLAIM_GONE)                                                                        \
    X(REREAD, CLAIM, PREEMPT_CLAIM_IN_SEND)                                                                          \
    X(REREAD, PUB, PREEMPT_PUB_IN_WRITE)                                                                             \
    X(REREAD, PUB, PREEMPT_PUB_IN_NOTHING)                                                                           \
    X(DECISION, ROLL, PREEMPT_ROLL_IN_TRAINS_ON)                                                                      \
    X(DECISION, HANDLER, PREEMPT_EV_ROUND_ABORTED)                                                                   \
    X(DECISION, EP, PREEMPT_EP_IN_COMMITTED_OWN)                                                                     \
    X(DECISION, HANDLER, PREEMPT_EV_CKPT_COMMITTED)                                                                  \
    X(RECORD_EVENT, HANDLER, PREEMPT_EV_STEP_AGREED)                                                                 \
    X(RECORD_EVENT, HANDLER, PREEMPT_EV_FINAL_REQUESTED)                                                             \
    X(RECORD_EVENT, HANDLER, PREEMPT_EV_PEER_LOST)                                                                   \
    X(RECORD_EVENT, HANDLER, PREEMPT_EV_PEER_ERROR)                                                                  \
    X(RECORD_EVENT, HANDLER, PREEMPT_EV_NOTICE)                                                                      \
    X(TELL_WITHDRAWN, HANDLER, PREEMPT_EV_NOTICE_WITHDRAWN)                                                          \
    X(ALL_REPORTED, DEC, PREEMPT_DEC_IN_ALL_REPORTED)                                                                \
    X(GIVE_UP, DEC, PREEMPT_DEC_IN_GIVE_UP)                                                                          \
    X(LAST_REPORT, MSHIP, PREEMPT_MSHIP_IN_LAST_REPORT)                                                              \
    X(NEXT_EPISODE, DEC, PREEMPT_DEC_IN_NEXT_EPISODE)                                                                \
    X(NEXT_EPISODE, ROLL, PREEMPT_ROLL_IN_NEXT_EPISODE)                                                              \
    X(NEXT_EPISODE, EP, PREEMPT_EP_IN_NEXT_EPISODE)                                                                  \
    X(NEXT_EPISODE, CLAIM, PREEMPT_CLAIM_IN_NEXT_EPISODE)                                                            \
    X(NEXT_EPISODE, MSHIP, PREEMPT_MSHIP_IN_NEXT_EPISODE)                                                            \
    X(NEXT_EPISODE, HANDLER, PREEMPT_EV_NOTICE)                                                                      \
    X(LEAVE, MSHIP, PREEMPT_MSHIP_IN_LEAVE)                                                                          \
    X(WRITE_FAILED, HANDLER, PREEMPT_EV_COORD_FAILED)                                                                \
    X(COUNTER_READ, OFFER, PREEMPT_OFFER_IN_NO_COUNTER)                                                              \
    X(COUNTER_READ, OFFER, PREEMPT_OFFER_IN_COUNTER)                                                                 \
    X(RESOLVED, OFFER, PREEMPT_OFFER_IN_RESOLVED)                                                                    \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_APPLIED)                                                              \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_OWN_EARLIER)                                                          \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_MOVED_ON)                                                             \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_HELD)                                                                 \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_NOT_STARTED)                                                          \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_STILL_STARTING)                                                       \
    X(JOIN_ANSWER, ATTEMPT, PREEMPT_ATTEMPT_IN_STARTED)                                                              \
    X(SHAPE_READ, SHAPE, PREEMPT_SHAPE_IN_ABSENT)                                                                    \
    X(SHAPE_READ, SHAPE, PREEMPT_SHAPE_IN_PRESENT)                                                                   \
    X(REJOINED, SHAPE, PREEMPT_SHAPE_IN_REJOINED)                                                                    \
    X(AWAIT_LINK, AWAIT, PREEMPT_WATCH_IN_UP)                                                                        \
    X(AWAIT_LINK, AWAIT, PREEMPT_WATCH_IN_DOWN)                                                                      \
    X(AWAIT_READ, AWAIT, PREEMPT_WATCH_IN_READ)                                                                      \
    X(AWAIT_READ, AWAIT, PREEMPT_WATCH_IN_READ_FAILED)                                                               \
    X(AWAIT_TICK, AWAIT, PREEMPT_WATCH_IN_TICK)                                                                      \
    X(PHASE_FINISH, PEND, PREEMPT_PEND_IN_FINISH)                                                                    \
    X(PHASE_END, PEND, PREEMPT_PEND_IN_END_KEEP)                                                                     \
    X(PHASE_END, PEND, PREEMPT_PEND_IN_END_REVOKE)                                                                   \
    X(REVOKE_ANSWER, PEND, PREEMPT_PEND_IN_REVOKED)                                                                  \
    X(REVOKE_ANSWER, PEND, PREEMPT_PEND_IN_UNSENT)                                                                   \
    X(JOINED, RST, PREEMPT_RST_IN_JOINED)                                                                            \
    X(JOINED, RST, PREEMPT_RST_IN_JOINED_NONE)                                                                       \
    X(JOINED, RST, PREEMPT_RST_IN_NONE_LEFT)                                                                         \
    X(JOINED, RST, PREEMPT_RST_IN_JOIN_FAILED)                                                                       \
    X(RESTORE_DONE, RST, PREEMPT_RST_IN_RESTORED)                                                                    \
    X(RESTORE_DONE, RST, PREEMPT_RST_IN_UNUSABLE)                                                                    \
    X(RESTORE_DONE, RST, PREEMPT_RST_IN_RESTORE_FAILED)                                                              \
    X(BARRIER_DONE, RST, PREEMPT_RST_IN_JOB_OK)                                                                      \
    X(BARRIER_DONE, RST, PREEMPT_RST_IN_JOB_UNUSABLE)                                                                \
    X(BARRIER_DONE, RST, PREEMPT_RST_IN_JOB_FAILED)                                                                  \
    X(BARRIER_DONE, RST, PREEMPT_RST_IN_BARRIER_FAILED)

/* X(LINK, MACHINE, ACTION): the links a machine's action starts. */
#define PREEMPT_LINK_ACTIONS(X)                                                                                      \
    X(CLAIM_SEND, CLAIM, PREEMPT_CLAIM_DO_SEND)                                                                      \
    X(REGRANT, CLAIM, PREEMPT_CLAIM_DO_REGRANT)                                                                      \
    X(TELL_WITHDRAWN, EP, PREEMPT_EP_DO_TELL_WITHDRAWN)                                                              \
    X(REJOINED, ATTEMPT, PREEMPT_ATTEMPT_DO_RECOUNT)                                                                 \
    X(PHASE_END, PEND, PREEMPT_PEND_DO_RUN_END)                                                                      \
    X(JOINED, PEND, PREEMPT_PEND_DO_RELEASE)                                                                         \
    X(RESTORE_DONE, RST, PREEMPT_RST_DO_RESTORE)                                                                     \
    X(BARRIER_DONE, PEND, PREEMPT_PEND_DO_RELEASE)

struct preempt_link {
    const char *name, *when;
    enum preempt_link_from from;
};

struct preempt_link_row {
    unsigned char link, m;
    unsigned char input; /* the machine's input, or the handler's event kind */
};

extern const struct preempt_link preempt_links_[PREEMPT_LINK__COUNT];
extern const struct preempt_link_row preempt_link_rows_[];
extern const size_t preempt_n_link_rows_;
extern const struct preempt_link_row preempt_link_actions_[]; /* input: the machine's action */
extern const size_t preempt_n_link_actions_;

/* Whether link posts input to machine m (a row says so). Pure. */
bool preempt_link_posts_(enum preempt_link_id link, enum preempt_link_m m, unsigned input);

/* Machine m's declaration (NULL for the handler's, which is fsm/'s), its
 * name ("notice-record", ..., "handler") and an input's name. */
const struct preempt_decl *preempt_link_machine_(enum preempt_link_m m);
const char *preempt_link_machine_name_(enum preempt_link_m m);
const char *preempt_link_input_name_(enum preempt_link_m m, unsigned input);
/* What a source is called in the drawing ("etcd", "the records", ...). */
const char *preempt_link_from_name_(enum preempt_link_from from);

/* Checks the table: every row's input is one its machine has, and every
 * input of the coordinator's and start-up's machines is posted by some link.
 * Each problem told to report, counted; returns the count. */
unsigned preempt_link_check_(void (*report)(const char *problem, void *arg), void *arg);

#endif
