/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/view-internal.h: the job's view, the records of one incarnation
 * (keys-internal.h) reduced to what they mean. Pure: no I/O, no clock, no
 * allocation but in preempt_view_init_; a record in, at most one meaning
 * out. The coordinator turns the meanings into its machine's events, the
 * watcher into its callbacks, preemptctl status into its summary, so that
 * all three read the job the same way: a worker's notice is its earliest
 * deadline (withdrawn or live), the operator's likewise until it is
 * deleted, the first "final", "lost" and error record count, a round's
 * highest save step (a raise only goes up) and first decision are the
 * round's. */
#ifndef PREEMPT_VIEW_INTERNAL_H
#define PREEMPT_VIEW_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "records/records.h"
#include "preempt_fsm.h"   /* struct preempt_event */

struct preempt_view {
    char jobp[PREEMPT_KEY_MAX];
    uint64_t inc;              /* the incarnation viewed */
    uint64_t ep;               /* the episode viewed; records of later ones are the caller's to hold */
    unsigned n, me;            /* workers; this worker (n: none, a watcher's view) */
    unsigned cap;              /* the workers the view was made for (preempt_view_workers_ narrows n) */
    uint64_t *notice_wall;     /* per worker: its earliest deadline (unix ms; 1: none given; 0: no notice) */
    bool *notice_withdrawn;    /* per worker: its notice is withdrawn (or advisory) */
    uint64_t op_wall;          /* the operator's earliest deadline (UINT64_MAX: none given; 0: no notice) */
    bool claim, final, lost, error;
    struct {
        bool have_agreed, decided;
        bool ends; /* its decision ends the episode: an abort, a commit of the last save, round 1's */
        bool last; /* the agreed save is the preemption's last */
        uint64_t agreed;
        /* a read of the round's shard reports (preempt_view_reports_):
         * the step read, and what the reports counted so far say */
        struct preempt_view_reports {
            bool open;        /* a read is under way or done (the episode's end closes it) */
            uint64_t step;    /* the step whose reports are read */
            uint64_t wall;    /* when they are read (unix ms; 0: not known): a report that trains on
                                 from its step is counted at its step plus its steps since */
            unsigned count;   /* well-formed reports counted, one per worker */
            uint64_t slowest; /* the slowest save they name (ms) */
            uint64_t stop;    /* the highest stop step they name (0: none) */
            struct preempt_pace pace; /* the lowest step a worker is at and the slowest pace they name */
            bool unpaced;     /* one named none: the job's slowest is not known (pace not named) */
            bool last;        /* any said "last" */
        } reports;
    } r[2];
    bool *reported; /* per round and worker (k * n + w): its report counted in the read */
    /* The members (the joined, alive and done records, validated), per
     * worker: PREEMPT_VIEW_M_* bits. members_open: a whole read of the
     * member records is under way (preempt_view_members_). */
    uint8_t *member;
    bool members_open;
};

/* A worker's membership, as the view read it (struct preempt_view's member). */
enum {
    PREEMPT_VIEW_M_JOINED = 1, /* its joined record: it lived in the incarnation */
    PREEMPT_VIEW_M_ALIVE = 2,  /* its member record is there (bound to its lease) */
    PREEMPT_VIEW_M_DONE = 8,   /* its done record: it finished training */
    PREEMPT_VIEW_M_SEEN = 16,  /* its member record is in the whole read under way */
    PREEMPT_VIEW_M_ENDED = 32  /* its membership ended: its member record went, or a whole read lacked it */
};

enum preempt_view_what {
    PREEMPT_VIEW_NOTHING,   /* nothing new: a repeat, an ended episode's record, a record the view does not follow */
    PREEMPT_VIEW_LATER,     /* a record of a later episode (ep): the caller holds it until it gets there */
    PREEMPT_VIEW_MALFORMED, /* a record whose value its kind cannot hold (text: what it should be) */
    PREEMPT_VIEW_NOTICE,    /* worker's notice: wall, withdrawn, text (its source, and what follows); news: its
                               first, an earlier deadline, or live again. From a notice record, or from the claim
                               that carried its driver's notice (the view has the claim then too) */
    PREEMPT_VIEW_OP_NOTICE, /* the operator's notice, or an earlier deadline of it: wall (0: none given), text */
    PREEMPT_VIEW_OP_GONE,   /* the operator took the notice back */
    PREEMPT_VIEW_CLAIM,     /* the episode has a driver */
    PREEMPT_VIEW_CLAIM_GONE, /* the driver's claim went (its lease ended) */
    PREEMPT_VIEW_FINAL,     /* worker (not this one) opened the final round */
    PREEMPT_VIEW_LOST,      /* the driver found worker's membership gone; or (text "left") worker left the job
                               before the preemption's end */
    PREEMPT_VIEW_AGREED,    /* round's save step: step; last: that save ends the preemption */
    PREEMPT_VIEW_COMMITTED, /* round's decision: committed at step; last: the commit ends the preemption; save_ms:
                               the round's slowest save (0: not named); stop: where training stops (0: not
                               named); pace: the reports' lowest step and slowest pace (ms 0: not named) */
    PREEMPT_VIEW_ABORTED,   /* round's decision: aborted at step */
    PREEMPT_VIEW_ERROR,     /* the job's first error: code, worker, text (the message) */
    PREEMPT_VIEW_SHARD,     /* worker's shard report, counted in a read of round's reports at step: save_ms, last,
                               stop (0: not named), pace (its worker's step and pace; ms 0: not named); count:
                               the reports counted so far in that read */
    PREEMPT_VIEW_JOINED,    /* worker's joined record, the first time: it lived in the incarnation */
    PREEMPT_VIEW_MEMBER,    /* worker's member record: it is a member (news: back, after its membership ended) */
    PREEMPT_VIEW_MEMBER_END, /* worker's membership ended: its member record went (or a whole read of the members
                                lacked it, or its value became one a member record cannot hold: text says what it
                                should be, as a malformed record's); last: its done record was read, it finished
                                training */
    PREEMPT_VIEW_DONE,      /* worker's done record: it finished training */
};

struct preempt_view_ev {
    enum preempt_view_what what;
    unsigned worker, round, count;
    uint64_t wall, step, ep, save_ms, stop;
    struct preempt_pace pace;
    int64_t code;
    bool withdrawn, news, last;
    const char *text; /* into the record's value, or static; valid until the next call */
};

/* A view of incarnation inc of the job with prefix jobp (copied), n
 * workers, seen by worker me (n: by no worker), at episode 0. 0 or
 * -ENOMEM; free with preempt_view_free_. */
int preempt_view_init_(struct preempt_view *v, const char *jobp, uint64_t inc, unsigned n, unsigned me);
void preempt_view_free_(struct preempt_view *v);

/* What a round's commit names of its reports' pace (t: a read of them):
 * the lowest step and the slowest pace, or ms 0 when one named none. */
struct preempt_pace preempt_view_reports_pace_(const struct preempt_view_reports *t);

/* Applies one record (put, or deleted: value ignored). */
struct preempt_view_ev preempt_view_apply_(struct preempt_view *v, bool put, const char *key, const char *value);

/* Moves to incarnation inc, episode 0, with nothing known of it. */
void preempt_view_incarnation_(struct preempt_view *v, uint64_t inc);

/* A reader that is no worker of the job (the watcher, preemptctl) makes
 * its view for PREEMPT_MAX_WORKERS and learns the job's count from the
 * incarnation's shape record: its value (well formed: 0 and the count in
 * *n; else -EPROTO). preempt_view_workers_ then narrows the view to the
 * first n workers, as every worker's own view is, starting the
 * incarnation again: a record of a worker past them is malformed, as a
 * worker judges it (-EINVAL: n is 0 or past what the view was made for). */
int preempt_view_shape_(const char *value, unsigned *n);
/* The members in sum (PREEMPT_VIEW_M_* counted over the job's workers). */
struct preempt_view_members {
    unsigned joined, alive, ended, done;
};
void preempt_view_members_sum_(const struct preempt_view *v, struct preempt_view_members *s);

/* A whole read of the member records (joined, alive, done) follows: a
 * member it lacks has ended. After its records, preempt_view_members_end_
 * ends them one by one (PREEMPT_VIEW_MEMBER_END of each member the read
 * lacked; a joined worker without a member record counts as ended too),
 * and says PREEMPT_VIEW_NOTHING once none is left. */
void preempt_view_members_(struct preempt_view *v);
struct preempt_view_ev preempt_view_members_end_(struct preempt_view *v);

/* The worker a record of the viewed incarnation names (its key's w), when
 * the record is well formed and the worker one of the job's; else -1.
 * value NULL: a read of keys only (the driver's roll call), whose values
 * are not read: the key alone is judged. What a read of the member
 * records and the reports counts as there. Pure. */
int preempt_view_worker_of_(const struct preempt_view *v, const char *key, const char *value);

/* The incarnation counter's value, as every reader reads it: 0 and the
 * incarnation (1 or more) in *inc, or -EPROTO ("007", "", "x": not one). */
int preempt_view_inc_(const char *value, uint64_t *inc);
int preempt_view_workers_(struct preempt_view *v, unsigned n);

/* Moves to episode ep with nothing known of it. */
void preempt_view_episode_(struct preempt_view *v, uint64_t ep);

/* A full read of the records follows: the claim is unknown until it shows
 * (one that went meanwhile is not in the read). */
void preempt_view_reread_(struct preempt_view *v);

/* A read of round k's shard reports at step follows (the worker whose
 * report completed them, or one giving the round up): the records read
 * are counted afresh in r[k].reports, each worker's once. What the round's
 * decision proposes comes from that count alone; wall is when the reports
 * are read (unix ms, 0: not known), the time at which the lowest step a
 * worker is at is counted (preempt_view_reports_pace_). */
void preempt_view_reports_(struct preempt_view *v, unsigned k, uint64_t step, uint64_t wall);

/* The episode's notices in sum: what the coordinator (has every notice
 * been withdrawn?), the watcher (the job's earliest deadline) and
 * preemptctl status (how many, how many stand) each read of them. */
struct preempt_view_summary {
    unsigned notices;  /* workers with a notice record */
    unsigned standing; /* of them, not withdrawn (nor advisory) */
    bool op;           /* the operator's notice stands (it is never withdrawn) */
    bool live;         /* a notice stands: standing > 0 or op */
    uint64_t earliest; /* the earliest deadline of them all, the operator's included (unix ms; 1: one
                          gave none, due now; 0: no notice) */
    int worker;        /* whose record holds it: the lowest such worker index, or -1 for the operator's */
};
void preempt_view_summary_(const struct preempt_view *v, struct preempt_view_summary *s);

/* Whether the records read say that the episode's workers stop: a
 * decision that ends it (an abort, the last save committed, the final
 * round's), a worker lost, the job's error. Pure. */
bool preempt_view_ending_(const struct preempt_view *v);

/* What a meaning is called (traces, logs, tests). */
const char *preempt_view_what_name_(enum preempt_view_what what);

/* One input of the view, as traced and replayed: a record, the move to an
 * episode, a full read's start, a read of a round's reports, a whole read
 * of the member records, or the end of a member that read lacked. */
enum preempt_view_in_kind {
    PREEMPT_VIEW_IN_RECORD,
    PREEMPT_VIEW_IN_EPISODE,
    PREEMPT_VIEW_IN_REREAD,
    PREEMPT_VIEW_IN_REPORTS,
    PREEMPT_VIEW_IN_MEMBERS,    /* a whole read of the member records follows */
    PREEMPT_VIEW_IN_MEMBERS_END /* after it: one member it lacked ends (preempt_view_members_end_) */
};

struct preempt_view_in {
    enum preempt_view_in_kind kind;
    bool put;                /* RECORD: put (else deleted) */
    const char *key, *value; /* RECORD */
    uint64_t ep;             /* EPISODE */
    unsigned round;          /* REPORTS */
    uint64_t step;           /* REPORTS */
    uint64_t wall;           /* REPORTS: when they are read (unix ms; 0: not known, older traces) */
};

/* Applies one input (preempt_view_apply_, _episode_, _reread_, _reports_, _members_ or _members_end_). */
struct preempt_view_ev preempt_view_step_(struct preempt_view *v, const struct preempt_view_in *in);

/* A meaning as text: "notice worker=2 wall=5000 news=1 withdrawn=0"
 * (only the fields its kind has). Returns the length as snprintf; the
 * longest (a shard report's, every number at its largest) fits in
 * PREEMPT_VIEW_MEANING_MAX. */
#define PREEMPT_VIEW_MEANING_MAX 208
int preempt_view_format_(char *buf, size_t size, const struct preempt_view_ev *ev);

/* The machine event a record's meaning tells worker me's machine whatever
 * the coordinator's state: a round's step (step-agreed), its decision
 * (ckpt-committed, whose stop is the decision's stop step when it ends the
 * preemption, never before its step, and 0 when it does not;
 * round-aborted), the final round (final-requested), a lost peer
 * (peer-lost), another worker's error (peer-error). Fills *ev but its
 * now_ms and returns true; false for every other meaning (a notice, whose
 * telling depends on the episode; an operator's, whose deadline needs the
 * clock's offset). The coordinator posts these, and preempt-replay checks
 * every such event a machine was told against the records read before it
 * (preempt_trace_replay_causes_). Pure. */
bool preempt_view_event_(const struct preempt_view_ev *v, unsigned me, struct preempt_event *ev);

/* The notice a notice record tells a machine, with deadline 0 (the
 * deadline is the machine's clock: the coordinator converts the record's
 * wall time): a worker's record that is news (its first, an earlier
 * deadline, or live again; whether it is told is the episode's,
 * lib/job/coord-rounds.c) tells a peer-notice of that worker; the operator's
 * record (preemptctl notice) a notice of source "operator" to every
 * worker. False for every other meaning. preempt-replay checks each
 * peer-notice a machine was told against these by worker, and each
 * operator notice by its source. Pure. */
bool preempt_view_notice_event_(const struct preempt_view_ev *v, struct preempt_event *ev);

#endif
