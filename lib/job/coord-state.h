/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-state.h: the coordinator's state (struct preempt_coord), its
 * typed inputs and outputs, and what its files share. The core, its step:
 * lib/job/coord.c (writes, the membership lease, the inputs' dispatch),
 * lib/job/coord-rounds.c (per-worker records: the rounds' proposals, shard
 * reports, the driver's tally and the one decision; the records applied)
 * and lib/job/coord-effects.c (the machine's coordination effects turned into
 * etcd requests; the declared machines' inputs; the members watch). Around
 * it: lib/job/coord-mem.c (its memory) and lib/job/coord-shell.c (the port, the
 * owner's callbacks, the clocks). Functions shared between them carry the
 * coord_ prefix; everything else stays static in its file. Only these
 * files, lib/job/coord-trace.c (which traces the inputs and outputs),
 * lib/job/coord-replay.c (which runs the core again over a trace's) and a
 * unit test of the garbage slots include it. */
#ifndef PREEMPT_COORD_STATE_H
#define PREEMPT_COORD_STATE_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coord-internal.h"
#include "records/records.h"
#include "claim-internal.h"
#include "lost-internal.h"
#include "decision-internal.h"
#include "episode-internal.h"
#include "membership-internal.h"
#include "lease-internal.h"
#include "links-internal.h"
#include "pub-internal.h"
#include "view-internal.h"
#include "watch-internal.h"
#include "base/base.h"

/* ---- what the coordinator asks, and what it is told, in the protocol's words ----
 *
 * The core asks for records to be written and read (struct preempt_co_ask)
 * and takes what came back as typed records (struct preempt_co_answer); it
 * never builds an etcd request or reads a reply by position. The wire
 * (lib/job/coord-wire.c, pure) turns an ask into its etcd request (a
 * transaction where the protocol needs one) and a reply into its answer;
 * the shell and the replay run it, the core never does. */
enum preempt_co_ask_kind {
    PREEMPT_CO_PUT,    /* rec.key = rec.value, bound to lease (0: none) */
    PREEMPT_CO_CREATE, /* rec where its slot is free (absent, or the garbage seen there: rec.slot); else the
                          record there is read */
    PREEMPT_CO_RAISE,  /* rec where its slot is free or holds seen (a compare-and-put of the value seen) */
    PREEMPT_CO_CLAIM,  /* the claim (rec, bound to lease) where its slot is free; with step (key not NULL) the
                          round's step too, where its slot is free; else the claim is read and notice (key not
                          NULL) put: the notice the claim carried */
    PREEMPT_CO_FINAL,  /* the final request (rec) and the round's step (step) where its slot is free; else the
                          request alone */
    PREEMPT_CO_REPORT, /* a shard report (rec), and the reports under range[0] counted; ends (not NULL): that
                          member record goes with it */
    PREEMPT_CO_READ,   /* the records of [range[0], range[1]) (range[1] NULL: every record under range[0]) */
    PREEMPT_CO_ROLL,   /* the keys under each of range[0..3] (the roll call: alive, done, round 0's and round
                          1's shards) */
    PREEMPT_CO_FORGET, /* every record under range[0], and under range[1] (not NULL) */
    PREEMPT_CO_GRANT,  /* a new lease of ttl_s */
    PREEMPT_CO_KEEP,   /* keeps lease alive */
    PREEMPT_CO_REVOKE, /* ends lease (its records go) */
};

/* A record the coordinator writes; slot: the revision of the garbage seen
 * where it creates one (0: the key is absent). */
struct preempt_co_rec {
    const char *key;
    const struct preempt_value *value;
    int64_t slot;
};

struct preempt_co_ask {
    enum preempt_co_ask_kind kind;
    struct preempt_co_rec rec;        /* what is written */
    struct preempt_co_rec step;       /* claim, final: the round's step, written with it when absent */
    struct preempt_co_rec notice;     /* claim: the notice it carries, put when the claim is lost */
    const struct preempt_value *seen; /* raise: the value seen in the slot (NULL: none) */
    int64_t lease;                    /* put, claim: rec's lease; keep, revoke: the lease */
    const char *range[4];             /* read, report, roll, forget: the ranges */
    const char *ends;                 /* report: the member record that goes with it (NULL: none) */
    unsigned ttl_s;                   /* grant */
};

/* A range's records (a read of keys only: values NULL). */
struct preempt_co_records {
    const struct preempt_etcd_kv *kvs;
    size_t n;
};

/* An answer, as typed records (the fields its input's kind has). */
struct preempt_co_answer {
    bool done;                          /* create, raise, claim, final: it was written */
    const struct preempt_etcd_kv *found; /* create, claim not written: the record in the slot (NULL: none) */
    int64_t count;                      /* report: the reports its range holds (-1: not said) */
    struct preempt_co_records read;     /* read (the job's records, or a round's reports): what it found, */
    int64_t rev;                        /*   at the store's revision, */
    uint64_t cluster;                   /*   of the store (its cluster id; 0: not said) */
    bool complete;                      /* roll: every range was read; */
    struct preempt_co_records roll[4];  /*   the keys under each */
    int64_t lease;                      /* grant: the new lease */
    int64_t ttl_s;                      /* grant: its TTL; keep: what is left (0 or less: it ended) */
};

/* The etcd request of an ask, built in w (its operations and compares
 * live in w; keys and values are the ask's). 0, or -EINVAL for no ask. */
struct preempt_co_wire {
    struct preempt_etcd_req req;
    struct preempt_etcd_cmp cmp[2];
    struct preempt_etcd_op ok[4], fail[2];
};
int preempt_co_request_(const struct preempt_co_ask *a, struct preempt_co_wire *w);

/* The running coordinator's inputs (coord-inputs.def: the port's and the
 * shell's), each one typed value; the fields its kind has are set. */
enum preempt_coord_in_kind {
#define PREEMPT_COORD_INPUT(id, name, fn, what) PREEMPT_COORD_IN_##id,
#include "coord-inputs.def"
#undef PREEMPT_COORD_INPUT
    PREEMPT_COORD_IN__COUNT
};

struct preempt_coord_in {
    enum preempt_coord_in_kind kind;
    unsigned round;                        /* the answer to a round's request: its round */
    int status;                            /* an answer: 0 or a negative errno; */
    const struct preempt_co_answer *answer; /*   what it says (status 0: preempt_co_answer_()), */
    const char *msg;                       /*   why it failed; */
    const struct preempt_etcd_reply *reply; /*   the reply it came in, for the trace alone (the core reads
                                              answer: tests/fsm-purity.sh) */
    enum preempt_etcd_ev ev;               /* a watch event: put or delete, */
    const struct preempt_etcd_kv *kv;      /*   of this record */
    const struct preempt_etcd_kv *kvs;     /* a watch's read: its records, */
    size_t n;
    int64_t rev;                           /*   at this revision, */
    uint64_t cluster;                      /*   of this store (its cluster id; 0: not said) */
    bool up;                               /* a watch's link: up or down, */
    const char *why;                       /*   and why */
    const struct preempt_fx *fx;           /* an effect (its arguments: preempt_coord_fx_()), */
    bool last;
    uint64_t stop, save_ms;
    struct preempt_pace pace;              /*   a report's: this worker's step and pace (at: 0), */
    bool trains_on;                        /*   and whether it trains on from there (else it waits) */
    const char *text;                      /*   an effect's text; a source's name; a history value */
    bool *ran;                             /*   out: whether the effect was the coordinator's */
    uint64_t step_ms;                      /* a step's time */
    bool withdrawn;                        /* withdrawn, or live again */
    uint64_t now_ms, wall_ms;              /* every input: when it came, by the machine's clock and the wall
                                              clock (the shell's, which stamps it: the core reads no clock) */
};

/* Hands one input to its handler (coord-inputs.def), with the input's
 * time as the clock of everything it does. The only way the port's
 * answers, watch events and ticks, and the shell's calls, enter the
 * coordinator (lib/job/coord-shell.c makes them). */
void preempt_coord_input_(struct preempt_coord *c, const struct preempt_coord_in *in);
#define PREEMPT_COORD_INPUT(id, name, fn, what) void fn(struct preempt_coord *c, const struct preempt_coord_in *in);
#include "coord-inputs.def"
#undef PREEMPT_COORD_INPUT
#define COORD_NO_ANSWER PREEMPT_COORD_IN__COUNT /* a request whose answer nobody wants */

/* Makes an answer's input ready for the core: its reply (status 0) read
 * into a (in->answer), or, when the reply lacks what was asked, the
 * input's status -EPROTO with why. Inputs that are no answer pass. What
 * the shell and a replay do with each input before the core takes it. */
void preempt_co_answer_(struct preempt_coord_in *in, struct preempt_co_answer *a);

/* The running coordinator's outputs (coord-outputs.def), each one typed
 * value: the core makes them, the shell (lib/job/coord-shell.c) runs them once
 * the step has returned, in the order they were made (the core runs to
 * completion). The fields its kind has are set; its pointers live until
 * the sink returns (the shell keeps copies). */
enum preempt_coord_out_kind {
#define PREEMPT_COORD_OUTPUT(id, name, what) PREEMPT_COORD_OUT_##id,
#include "coord-outputs.def"
#undef PREEMPT_COORD_OUTPUT
    PREEMPT_COORD_OUT__COUNT
};

struct preempt_coord_out {
    enum preempt_coord_out_kind kind;
    const struct preempt_co_ask *ask;       /* a request: what, */
    uint64_t give_up_ms;                    /*   retried for this long; */
    enum preempt_coord_in_kind answer;      /*   its answer's input (COORD_NO_ANSWER: none), */
    unsigned round;                         /*   of this round */
    uint64_t ms;                            /* the timer: after ms (0: none); job-save: the save's ms; job-pace:
                                               the time the commit came (the machine's clock) */
    struct preempt_pace pace;               /* job-pace: the lowest step and the slowest pace the commit named */
    struct preempt_event ev;                /* post: the machine's event */
    int level;                              /* log: 0 debug .. 3 error */
    const char *text;                       /* log: the line; error-msg: the job's error; gone: why */
    unsigned worker;                        /* gone: who */
    const struct preempt_view_in *view_in;  /* view: what the view took */
    const struct preempt_view_ev *view_ev;  /*   and made of it */
    const struct preempt_job_answer *said;  /* answer: an answer and what it says */
};


struct round {
    uint64_t agreed;
    uint64_t shard_ep; /* the episode of this worker's shard report (answers of older ones are late) */
    enum preempt_dec_state dec; /* what this worker proposed of its decision (decision-internal.h: declared) */
    uint64_t save_ms; /* the slowest save its commit names, one after which the workers train on (the
                         roll call's grace: coord-rounds.c, lost_grace_ms) */
};

#define JUNK_MAX 8 /* the claim, the two rounds' steps and decisions, the lost record, the error, one spare */

struct preempt_coord {
    void (*sink)(void *arg, const struct preempt_coord_out *out); /* runs the outputs (the shell's, a replay's) */
    void *sink_arg;
    bool logs;                 /* the shell takes log lines (else they are not formatted) */
    uint64_t now_ms, wall_ms;  /* the clocks, as of the input being handled */
    struct preempt_decl_tracer decl_trace; /* the configuration's: told each transition of its machines */
    char jobp[PREEMPT_MAX_JOB + 16];
    struct preempt_value member; /* alive/<me>'s value */
    char pre[PREEMPT_KEY_MAX]; /* P/N/: the watched range's start (for the logs) */
    unsigned me, n;
    unsigned ttl_s, cfg_ttl_s; /* the lease's TTL now; the configured one */
    uint64_t longest_step_ms;  /* the longest step seen (the lease must outlive one) */
    enum preempt_lease_state lease_st; /* where the membership lease stands (lease-internal.h: declared) */
    uint64_t give_up_ms;
    int64_t lease;
    enum preempt_ep_state episode; /* where the current episode stands (episode-internal.h: declared) */
    enum preempt_watch_state watch; /* the job's watch, or the reads standing in for it (watch-internal.h: declared) */
    int64_t seen_rev;      /* the store's revision up to which the watched records have been read in order (the
                              watch's events, the full reads): a full read of the same store applies what changed
                              since */
    uint64_t cluster;      /* that store's cluster id (0: not said) */
    uint64_t my_notice_wall;
    uint64_t my_deadline;  /* the machine's clock: this worker's earliest deadline (0: none) */
    char my_source[32];
    bool my_withdrawn;     /* this worker's notices are all withdrawn (or advisory) */
    enum preempt_pub_state pub; /* where this worker's notice stands (pub-internal.h: a declared machine) */
    enum preempt_claim_state claim; /* where this worker's driver claim stands (claim-internal.h: declared) */
#define LEFT(c) ((c)->mship == PREEMPT_MSHIP_LEFT)
    enum preempt_roll_state roll; /* the driver's read of the memberships (watch-internal.h: declared) */
    enum preempt_mship_state mship; /* where this worker's membership stands (membership-internal.h: declared) */
    uint64_t prop_step;    /* the claim carries this proposal of round 0's save step (0: none) */
    bool prop_last;        /* with its opinion */
    struct preempt_view view; /* the job's records, read (view-internal.h): its incarnation and episode */
    uint8_t *absent;       /* the driver's last read of the memberships: a bit per worker nothing named */
    struct preempt_lost lost; /* who has been missing since when (lost-internal.h: the lost decision's memory) */
    struct round r[2];
    /* What the create-if-absent slots (the episode's claim, a round's step
     * and decision, the lost record; the incarnation's error) hold when it
     * is no record: garbage an operator or a tool wrote. The
     * writes that would create such a slot compare with that garbage's
     * revision instead of its absence, and so replace it (a valid record is
     * never replaced: the compare is on the garbage itself, as last seen).
     * Data, not a decision; fixed slots, nothing allocated in a step. */
    struct junk {
        char key[PREEMPT_KEY_MAX]; /* "": none */
        int64_t rev;               /* the garbage's revision: the write compares with it */
    } junk[JUNK_MAX];
    struct held *held;     /* records of later episodes, by key, until this worker gets there */
    size_t n_held, cap_held;
    bool replaying;        /* held records are being applied: peer notices are merged */
    struct preempt_event merged; /* the earliest peer notice of a replay (kind 0: none) */
    unsigned link_bugs;          /* inputs posted by a link that does not declare them (coord_link) */
};


struct held {
    uint64_t ep;
    char *key, *value;
};

/* A log line: the output log. */
void coord_log(struct preempt_coord *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define CLOG(c, level, ...) coord_log(c, level, __VA_ARGS__)
/* Hands one output to the sink: the shell keeps it until the step
 * returns (the log and trace outputs it tells at once). */
void coord_out(struct preempt_coord *c, const struct preempt_coord_out *out);
/* Sets up the core's state (the shell's sink runs its outputs); 0 or a
 * negative errno (then coord_fini frees what it has). */
int coord_init(struct preempt_coord *c, const struct preempt_coord_cfg *cfg, const struct preempt_coord_join *join);
void coord_fini(struct preempt_coord *c);
/* The keep-alive tick, after its period (the timer output). */
void coord_arm_keepalive(struct preempt_coord *c);

/* A key of the schema (keys-internal.h) in this worker's incarnation and
 * episode; CRANGE: the range of a kind's records, or a range's. Under a
 * prefix preempt_coord_prefix_() made (a job name of PREEMPT_MAX_JOB at
 * most) every key and range with the largest values fits in
 * PREEMPT_KEY_MAX (check_etcd's test_keys_round_trip). Should one not fit
 * (-ENAMETOOLONG), buf holds no key, and the port refuses the request
 * that names it: its answer is that failure (preempt_coord_refused_()),
 * never a request with a cut key. */
#define CKEY(c, buf, id, ...)                                                                                        \
    (void)preempt_key_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id,                                                \
                       &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })
#define CRANGE(c, buf, id, upto, ...)                                                                                \
    (void)preempt_key_range_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id, upto,                                    \
                             &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })

/* ---- shared between the coordinator's files ---- */

/* The value *v of a record of kind (lower case: notice, lost, ...) from its
 * typed fields (records-internal.h's typed records, written from the
 * grammar), for this job's workers; "" when the grammar refuses it (a bug:
 * logged), which the port's write check refuses too. */
#define COORD_VALUE(c, v, kind, ...)                                                                               \
    do {                                                                                                           \
        const char *why_ = "";                                                                                     \
        if (preempt_rv_##kind##_write_((v), &(struct preempt_rv_##kind){ __VA_ARGS__ }, (c)->n, &why_) < 0)        \
            CLOG((c), 3, "bug: a %s record's value is not %s", #kind, why_);                                       \
    } while (0)

void coord_flush_merged(struct preempt_coord *c);
/* Posts ev to the handler's machine by link (links-internal.h). */
void coord_cpost(struct preempt_coord *c, enum preempt_link_id link, struct preempt_event ev);
/* Whether link declares input of machine m; an undeclared one is a bug:
 * logged and counted (preempt_coord_link_bugs_), the input still goes. */
void coord_link(struct preempt_coord *c, enum preempt_link_id link, enum preempt_link_m m, unsigned input);
/* Where a write that creates key may write: the revision of the garbage
 * seen there, or 0 (the key is absent). */
int64_t coord_slot(const struct preempt_coord *c, const char *key);
void coord_junk_clear(struct preempt_coord *c, const char *key) /* NULL: every slot */;
void coord_junk_clear_episode(struct preempt_coord *c); /* every slot but the incarnation's error */
void coord_junk_set(struct preempt_coord *c, const char *key, int64_t rev);
/* Creates key = value where nothing stands, or where the garbage the
 * coordinator saw stands (replacing exactly it); when another record
 * stands, the reply's failure branch reads it (a create's). */
void coord_create(struct preempt_coord *c, const char *key, const struct preempt_value *value,
                  enum preempt_coord_in_kind answer);
/* A write failed for good (status < 0; msg: why): the machine's coord-failed. */
void coord_failed(struct preempt_coord *c, int status, const char *msg);
/* Sends a write; its answer comes back as the input answer (of round 0). */
void coord_write_call(struct preempt_coord *c, const struct preempt_co_ask *ask, enum preempt_coord_in_kind answer);
/* The same for a request of round k. */
void coord_round_call(struct preempt_coord *c, unsigned k, const struct preempt_co_ask *ask,
                      enum preempt_coord_in_kind answer);
/* Sends a request that is retried for give_up_ms (the output request);
 * its answer, or its failure when the port refuses it, comes back as the
 * input answer. */
void coord_send(struct preempt_coord *c, const struct preempt_co_ask *ask, uint64_t give_up_ms,
                enum preempt_coord_in_kind answer);
void coord_put(struct preempt_coord *c, const char *key, const struct preempt_value *value, int64_t lease);
uint64_t coord_mono_of_wall(const struct preempt_coord *c, uint64_t wall);
uint64_t coord_wall_of_mono(const struct preempt_coord *c, uint64_t mono);
bool coord_own_live(const struct preempt_coord *c);
void coord_decide(struct preempt_coord *c, unsigned k, const struct preempt_value *value);
void coord_propose_step(struct preempt_coord *c, unsigned k, uint64_t cap, bool last);
void coord_propose(struct preempt_coord *c, unsigned k, const struct preempt_co_records *reports, bool or_abort);
void coord_abort_round(struct preempt_coord *c, unsigned k, uint64_t step);
void coord_report(struct preempt_coord *c, unsigned k, uint64_t step, bool last, uint64_t stop, uint64_t save_ms,
                  struct preempt_pace pace, bool trains_on);
void coord_reset_round(struct preempt_coord *c, unsigned k);
void coord_retell_agreed(struct preempt_coord *c, enum preempt_link_id link);
void coord_read_members(struct preempt_coord *c);
void coord_roll_read(struct preempt_coord *c); /* the roll call's read: sends it */
struct preempt_view_ev coord_view_step(struct preempt_coord *c, struct preempt_view_in in);
/* A record, read or watched (also one a write's answer carries), and a
 * full read of the watched records, applied to the view. */
void coord_apply_record(struct preempt_coord *c, enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv);
void coord_apply_records(struct preempt_coord *c, const struct preempt_etcd_kv *kvs, size_t n, int64_t rev,
                         uint64_t cluster);
/* The records of later episodes (lib/job/coord-mem.c): holds a put (a
 * delete forgets), applies the current episode's, frees them all. */
void coord_hold(struct preempt_coord *c, enum preempt_etcd_ev type, uint64_t ep, const struct preempt_etcd_kv *kv);
void coord_held_replay(struct preempt_coord *c);
void coord_held_free(struct preempt_coord *c);
unsigned coord_tick_ms(const struct preempt_coord *c);
/* Tells the owner of an answer the coordinator acts on (ops.on_answer). */
void coord_answer(struct preempt_coord *c, struct preempt_job_answer a);
void coord_lease_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_lease_input in);
/* The watch's machine and the roll call's (watch-internal.h): one input
 * each; they run their actions (a read of the records, applying one; the
 * read of the memberships). */
void coord_watch_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_watch_input in,
                    const struct preempt_co_answer *a);
void coord_roll_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_roll_input in);
void coord_grant(struct preempt_coord *c); /* the lease machine's grant: sends it */
/* Each of the declared machines takes an input by a link (links-internal.h). */
enum preempt_pub_action coord_pub(struct preempt_coord *c, enum preempt_link_id link, enum preempt_pub_input in);
void coord_notice_put(struct preempt_coord *c, enum preempt_link_id link);
void coord_claim_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_claim_input in);
void coord_ep_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_ep_input in);
void coord_mship_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_mship_input in);
/* Round k's decision machine: returns the action, which the caller runs. */
enum preempt_dec_action coord_dec_in(struct preempt_coord *c, enum preempt_link_id link, unsigned k,
                                     enum preempt_dec_input in);

#endif
