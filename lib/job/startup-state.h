/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/startup-state.h: start-up's core and its shell, as the running
 * coordinator's (coord-state.h). The core (lib/job/startup.c) is one step:
 * a typed input in (startup-inputs.def: an answer, an event of the awaited
 * record's watch, the tick, the phase's begin), typed outputs out
 * (startup-outputs.def: a request, the watch, the timer, the release). It
 * calls no port and reads no clock: the input carries the time. The shell
 * (lib/job/startup-shell.c) makes each input of what the port delivers,
 * and runs the outputs after the step returns, in the order made. */
#ifndef PREEMPT_STARTUP_STATE_H
#define PREEMPT_STARTUP_STATE_H

#include "coord-internal.h"
#include "joining-internal.h"
#include "phase-internal.h"
#include "watch-internal.h"

enum preempt_startup_in_kind {
#define PREEMPT_STARTUP_INPUT(ID, name, handler, text) PREEMPT_STARTUP_IN_##ID,
#include "startup-inputs.def"
#undef PREEMPT_STARTUP_INPUT
    PREEMPT_STARTUP_IN__COUNT,
    PREEMPT_STARTUP_NO_ANSWER = PREEMPT_STARTUP_IN__COUNT /* a request whose answer nobody reads */
};

/* ---- what start-up asks, and what it is told, in the protocol's words ----
 *
 * The core asks for records to be written and read (struct preempt_su_ask)
 * and takes what came back as typed records (struct preempt_su_answer); it
 * builds no etcd request and reads no reply by position. The wire
 * (lib/job/startup-wire.c, pure) turns an ask into its etcd request (a
 * transaction where the protocol needs one) and a reply into its answer,
 * for the shell. */
enum preempt_su_ask_kind {
    PREEMPT_SU_GRANT,      /* a membership lease of ttl_s */
    PREEMPT_SU_COUNTER,    /* read the incarnation counter */
    PREEMPT_SU_OPEN,       /* open inc: the counter from counter (NULL: absent) to value, and nothing under P/inc/ */
    PREEMPT_SU_RESOLVE,    /* a pending checkpoint's decision at key: value, if absent; else read it */
    PREEMPT_SU_JOIN,       /* join inc: joined/<w> and alive/<w> (value, the latter under lease) if the counter
                              is counter and w never joined inc (rejoin: alive/<w> is free); then read the
                              barrier's record, count the members, read the shape; else read the counter,
                              alive/<w>, the barrier's record and the restore's */
    PREEMPT_SU_SHAPE,      /* inc's shape: value, if absent; else read it */
    PREEMPT_SU_RECOUNT,    /* read the barrier's record, count the members, read the shape */
    PREEMPT_SU_HOLDER,     /* the time lease has to live */
    PREEMPT_SU_MEMBERS,    /* read inc's member records */
    PREEMPT_SU_START_OVER, /* read the operator's start-over request */
    PREEMPT_SU_READY,      /* inc's barrier record: value, if absent (consume: the start-over request goes in the
                              same write); else read it */
    PREEMPT_SU_REPORT,     /* this worker's restore report (value), and count the reports */
    PREEMPT_SU_RESTORED,   /* inc's restore record: value, if absent; else read it */
    PREEMPT_SU_AWAITED,    /* read the awaited record (awaited) */
    PREEMPT_SU_KEEP,       /* keep lease alive */
    PREEMPT_SU_REVOKE,     /* give lease back */
};

struct preempt_su_ask {
    enum preempt_su_ask_kind kind;
    uint64_t inc;
    unsigned worker;                      /* JOIN, REPORT: this worker */
    bool rejoin, consume;                 /* JOIN; READY */
    int64_t lease;                        /* JOIN, HOLDER, KEEP, REVOKE */
    unsigned ttl_s;                       /* GRANT */
    enum preempt_key_id awaited;          /* AWAITED */
    const char *key;                      /* RESOLVE */
    const struct preempt_value *value;    /* the record written */
    const struct preempt_value *counter;  /* OPEN, JOIN: the counter's value compared */
};

/* An answer, as typed records: a record absent is one whose value is NULL
 * (never a NULL pointer). */
struct preempt_su_answer {
    bool done;                                  /* a write if absent, or a join: it was applied */
    const struct preempt_etcd_kv *found;        /* a write if absent that was not: the record there (it may
                                                   have gone since); a read of one key: it */
    const struct preempt_etcd_kv *ready, *shape; /* a join applied, a recount */
    int64_t count;                              /* a join applied, a recount: the members; a report: the
                                                   reports */
    const struct preempt_etcd_kv *counter, *mine, *restored; /* a join not applied (and ready): what stood in its way */
    int64_t rev;                                /* a join: the store's revision when it answered */
    const struct preempt_etcd_kv *kvs;          /* a read: every record it found */
    size_t n;
    int64_t lease;                              /* a grant */
    int64_t ttl, granted_ttl;                   /* a lease's time to live */
};

/* One input: its kind and what it carries. */
struct preempt_startup_in {
    enum preempt_startup_in_kind kind;
    uint64_t now_ms; /* the port's monotonic clock (the shell stamps it) */
    /* an answer */
    int status;
    bool unsent; /* the port refused the request at once: status says why */
    const struct preempt_su_answer *answer; /* status 0 */
    const char *msg;
    /* the awaited record's watch: an event; every record again; up or down */
    enum preempt_etcd_ev ev;
    const struct preempt_etcd_kv *kv;
    const struct preempt_etcd_kv *kvs;
    size_t n;
    bool up;
};

enum preempt_startup_out_kind {
#define PREEMPT_STARTUP_OUTPUT(ID, name, text) PREEMPT_STARTUP_OUT_##ID,
#include "startup-outputs.def"
#undef PREEMPT_STARTUP_OUTPUT
    PREEMPT_STARTUP_OUT__COUNT
};

/* One output. Its ask and key live during the step only (the shell
 * copies what it keeps). */
struct preempt_startup_out {
    enum preempt_startup_out_kind kind;
    const struct preempt_su_ask *ask;     /* request */
    uint64_t ms;                          /* request: its bound; timer: after ms */
    enum preempt_startup_in_kind answer;  /* request: the input its answer is */
    const char *key;                      /* watch */
    int status;                           /* release: the phase's outcome */
};

const char *preempt_startup_in_name_(enum preempt_startup_in_kind k);
const char *preempt_startup_out_name_(enum preempt_startup_out_kind k);

/* The phase's first request: joining's lease grant, or the restore
 * barrier's report. */
enum preempt_startup_begin { PREEMPT_STARTUP_JOIN, PREEMPT_STARTUP_RESTORED };

/* A start-up phase's state: the core's alone. */
struct join {
    const struct preempt_coord_cfg *cfg;
    void (*sink)(void *arg, const struct preempt_startup_out *o); /* the shell's: each output, as made */
    void *sink_arg;
    uint64_t now;                 /* the input's time (monotonic ms) */
    enum preempt_startup_begin begin;
    uint64_t bound_ms;            /* from the begin */
    /* The one timer serves four: the bound (deadline, below), and due
     * times (0: off) */
    uint64_t t_keep, t_wait;          /* the lease's keep-alive; the wait for a holder's lease */
    enum preempt_pend_state end;      /* how the phase ends (phase-internal.h: declared) */
    unsigned instance;                /* the phase's number: its machines' instance in the trace */
    bool watching;                    /* the awaited record is watched */
    enum preempt_attempt_state attempt; /* what the last join attempt's answer said (joining-internal.h) */
    enum preempt_key_id awaited;       /* N/ready (the barrier's record), or N/restored */
    char jobp[PREEMPT_MAX_JOB + 16];
    struct preempt_value member; /* this worker's alive/<w> value, its offer included */
    const uint64_t *steps;           /* the shell's copy */
    size_t n_steps;
    struct preempt_coord_pending *pend;
    size_t n_pend, i_pend;
    enum preempt_offer_state offer; /* how this worker's offer is made (joining-internal.h: declared) */
    uint64_t deadline, inc;
    int64_t lease;
    int64_t holder;    /* the lease that held alive/<w> when this worker first found it taken */
    uint64_t holder_until;                  /* still alive then (monotonic ms), it is a live duplicate */
    char holder_value[PREEMPT_MEMBER_MAX]; /* its alive/<w> value, to name it */
    int64_t alive_rev; /* the revision at which this worker's alive/<w> was written */
    int64_t present;   /* the members counted when this worker joined */
    enum preempt_shape_state shape; /* who writes the incarnation's shape (joining-internal.h: declared) */
    enum preempt_watch_state await; /* the awaited record's watch, or the reads standing in (watch-internal.h) */
    int restore_mine;  /* the restore barrier: this worker's outcome (PREEMPT_RESTORE_*) */
    const char *restore_why; /* when not ok, why */
    int *ret_restored;       /* out: the job's outcome */
    char *verdict;           /* out: when not ok, the record's "<step> worker=<w>: <why>" */
    size_t verdict_size;
    struct preempt_coord_plan plan; /* the barrier's writer: what the members' offers say */
    bool revoke;             /* give the lease back at the end of the phase */
    int status;
    char *msg;
    size_t msg_size;
    struct preempt_coord_join *out;
};

/* Sets up a phase's state (the shell's sink, then the begin's input runs
 * it): returns 0, or -EINVAL for an invalid job name (*j->msg says so). */
int preempt_startup_init_(struct join *j);

/* The step: one input, run to completion; its outputs go to j->sink as
 * they are made. After the release output, j is not used again. */
void preempt_startup_input_(struct join *j, const struct preempt_startup_in *in);

/* ---- the wire (lib/job/startup-wire.c): pure ---- */

/* An ask's etcd request, built in w (its keys, values and operations are
 * w's): 0, or -ENAMETOOLONG / -EINVAL (no request). */
struct preempt_su_wire {
    struct preempt_etcd_req req;
    struct preempt_etcd_cmp cmp[2];
    struct preempt_etcd_op ok[5], fail[4];
    char keys[8][PREEMPT_KEY_MAX];
};
int preempt_su_request_(const char *jobp, const struct preempt_su_ask *a, struct preempt_su_wire *w);

/* The answer in reply r to the request whose answer is input k: 0, or
 * -EPROTO when r lacks what was asked (*why says so). Its records point
 * into r. */
int preempt_su_answer_(enum preempt_startup_in_kind k, const struct preempt_etcd_reply *r,
                       struct preempt_su_answer *a, const char **why);

#endif
