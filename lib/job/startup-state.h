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

/* One input: its kind and what it carries. */
struct preempt_startup_in {
    enum preempt_startup_in_kind kind;
    uint64_t now_ms; /* the port's monotonic clock (the shell stamps it) */
    /* an answer */
    int status;
    bool unsent; /* the port refused the request at once: status says why */
    const struct preempt_etcd_reply *reply;
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

/* One output. Its request and key live during the step only (the shell
 * copies what it keeps). */
struct preempt_startup_out {
    enum preempt_startup_out_kind kind;
    const struct preempt_etcd_req *req;   /* request */
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

#endif
