/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace-internal.h: trace files, text or binary (nanopb), for the shell
 * and the tools. The pure text codec is in fsm/preempt_trace.h. */
#ifndef PREEMPT_TRACE_INTERNAL_H
#define PREEMPT_TRACE_INTERNAL_H

#include <stdio.h>

#include "job/job.h"
#include "base/base.h"
#include "preempt_trace.h"

/* Binary trace files start with these 8 bytes. */
#define PREEMPT_TRACE_MAGIC "\x89PTRACE\n"
#define PREEMPT_TRACE_MAGIC_LEN 8

/* A whole trace in memory. */
struct preempt_trace_file {
    struct preempt_config_facts cfg;
    bool have_config;
    bool binary;
    struct preempt_trace_rec *recs;
    size_t n;
    unsigned *lines;              /* text: the line of each record; NULL for binary */
    /* text: the job's view (a "job-view" line, then "job" lines, below) */
    bool have_view;
    char view_jobp[PREEMPT_KEY_MAX];
    uint64_t view_inc;            /* the first job-view line's */
    uint64_t view_seg_inc;        /* the last one's: a survivor in place writes one per incarnation */
    unsigned view_n, view_me;
    struct preempt_trace_job *jobs;
    size_t n_jobs;
    /* text: the declared machines' transitions ("decl" lines, below) */
    struct preempt_trace_decl *decls;
    size_t n_decls, cap_decls;
    /* text: the running coordinator's lines ("coord" lines, below), as written */
    struct preempt_trace_coord *coord;
    size_t n_coord, cap_coord;
};

/* The job's view in a text trace (docs/design.md, "Traces"): a header
 *   job-view job=/preempt/J/ inc=N workers=W me=M
 * then one line per input and the meaning the view made of it:
 *   job t=MS put k=KEY v=VALUE => MEANING
 *   job t=MS del k=KEY => MEANING
 *   job t=MS episode ep=P => nothing
 *   job t=MS reread => nothing
 *   job t=MS reports round=K step=S => nothing
 *   job t=MS members => nothing
 *   job t=MS members-end => member-end worker=W[ done]|nothing
 * KEY and VALUE percent-encoded (spaces, '%', controls, non-ASCII) and cut
 * to fit a line: a VALUE at PREEMPT_TRACE_VALUE_MAX encoded bytes (only an
 * error's message is that long, and its meaning does not hold it), a KEY
 * at PREEMPT_KEY_MAX + 64 (the schema's are shorter and need no escape). One
 * header per trace: a handler's view lives as long as its coordinator. */
/* (PREEMPT_TRACE_VALUE_MAX: escape-internal.h) */

/* A transition of one of the job's declared machines (decl-internal.h:
 * start-up's and the coordinator's), in a text trace:
 *   decl t=MS m=MACHINE[#I] FROM --INPUT--> TO (ACTION)
 * #I names the instance of a machine a worker has several of (a round's
 * decision, a start-up phase's machines; decl-internal.h); traces written
 * before it do not. preempt-replay steps each again through the machine's
 * table. */
struct preempt_trace_decl {
    unsigned line;
    uint64_t t_ms;
    const struct preempt_decl *m;
    unsigned instance; /* 0: not named */
    unsigned from, input, to, action;
};

int preempt_trace_format_decl_(char *buf, size_t size, uint64_t t_ms, const struct preempt_decl *m,
                               unsigned instance, unsigned from, unsigned input, unsigned to, unsigned action);
/* Steps each decl line's (from, input) through its machine's table and
 * compares the state and the action; an input a record causes (every
 * machine's next-episode, the episode machine's seen, the decision
 * machine's all-reported) must follow the job line of such a record. 0 (*ret_n: lines replayed), or 1 at the first
 * divergence (err says where and what). */
int preempt_trace_replay_decls_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize);

/* What a job line holds: an input of the view ("job" lines) or one of the
 * answers below ("answer" lines). */
enum preempt_trace_job_kind {
    PREEMPT_TRACE_JOB_VIEW,    /* the view's input (in) */
    PREEMPT_TRACE_JOB_CLAIM,   /* an answer to the claim (ans; held owned) */
    PREEMPT_TRACE_JOB_MEMBERS, /* a read of the memberships (read) */
    PREEMPT_TRACE_JOB_WRITE,   /* a write that failed for good (ans.status) */
    PREEMPT_TRACE_JOB_GRANT,   /* a lease's grant (ans.status, ttl_s) */
    PREEMPT_TRACE_JOB_PUT,     /* the notice record's put (ans.status) */
    PREEMPT_TRACE_JOB_KEEP,    /* a keep-alive of the lease (ans.status, ttl_s) */
    PREEMPT_TRACE_JOB_RECORDS, /* a read of the records standing in for the watch (ans.status) */
};

struct preempt_trace_job {
    unsigned line;
    uint64_t view_inc;           /* the incarnation of the job-view line before it (its view's) */
    uint64_t t_ms;
    enum preempt_trace_job_kind kind;
    struct preempt_claim_answer ans; /* claim: the answer, held owned; write, grant, put, keep, records: the status */
    struct preempt_lost_read read; /* members: the read, absent owned (of view_n bits) */
    bool cut;                    /* members: its absent workers did not fit the line */
    uint64_t ttl_s;              /* grant, keep: the lease's TTL */
    struct preempt_view_in in; /* key and value owned */
    char meaning[PREEMPT_VIEW_MEANING_MAX];
};

/* An answer to the worker's claim, and what it says (claim-internal.h),
 * among the job lines:
 *   answer t=MS claim status=S succeeded=B read=B held=VALUE left=B => SAYS
 * VALUE percent-encoded as a record's. A replay reads each again
 * (preempt_claim_answer_()) and compares what it says; the claim machine's
 * won, lost, failed, stale-lease and unreadable inputs, and the machine's
 * claim-won and claim-lost events, must follow such a line. */
int preempt_trace_format_claim_(char *buf, size_t size, uint64_t t_ms, const struct preempt_claim_answer *a,
                                const struct preempt_claim_says *says);

/* The driver's read of the memberships, and who it says is lost
 * (lost-internal.h), among the job lines:
 *   answer t=MS members status=S complete=B known=B absent=LIST grace=MS => SAYS
 * LIST the workers nothing named, as ranges ("-": none). A replay reads
 * each again in order, with the memory of the reads before it
 * (preempt_lost_read_()), and compares what it says. The workers of a read
 * of a job of thousands may not fit a line: then "absent=cut", and that
 * read and every later one are not compared. */
int preempt_trace_format_lost_(char *buf, size_t size, uint64_t t_ms, unsigned n, const struct preempt_lost_read *r,
                               const struct preempt_lost_says *says);

/* A write of the job that failed past its retry bound, which tells the
 * machine coord-failed with its status, among the job lines:
 *   answer t=MS write status=S => failed
 * (a write that succeeds tells the machine nothing, and is not traced). The
 * machine's coord-failed must follow such a line with its status. */
int preempt_trace_format_write_(char *buf, size_t size, uint64_t t_ms, int status);

/* A new membership lease's grant, among the job lines:
 *   answer t=MS grant status=S ttl=T => granted ttl=T | failed
 * The claim and membership machines' granted and the claim machine's
 * grant-failed must follow such a line that says so. */
int preempt_trace_format_grant_(char *buf, size_t size, uint64_t t_ms, int status, int64_t ttl_s);

/* The answer to the put of the worker's notice record, among the job lines:
 *   answer t=MS put status=S => put-ok | put-failed
 * The notice record's machine's put-ok and put-failed must follow one that
 * says so, and its claim-won, claim-lost and claim-failed an answer to the
 * claim that says so (preempt_pub_of_claim_()). */
int preempt_trace_format_put_(char *buf, size_t size, uint64_t t_ms, int status);

/* A keep-alive of the membership lease, among the job lines:
 *   answer t=MS keep status=S ttl=T => kept | failed | expired
 * (preempt_keep_answer_()). The lease machine's expired must follow one
 * that says so. */
int preempt_trace_format_keep_(char *buf, size_t size, uint64_t t_ms, int status, int64_t ttl_s);

/* The answer of a read of the job's records that stands in for its watch
 * while it is down (watch-internal.h), among the job lines:
 *   answer t=MS records status=S => read | read-failed
 * (preempt_watch_of_read_()). The watch machine's read and read-failed
 * must follow one that says so. */
int preempt_trace_format_records_(char *buf, size_t size, uint64_t t_ms, int status);

/* Any of the answers above (answer-internal.h), at now_ms (a read of the
 * memberships at its own time), in a job of n workers. */
int preempt_trace_format_answer_(char *buf, size_t size, uint64_t now_ms, unsigned n,
                                 const struct preempt_job_answer *a);

/* The two kinds of line. Return the length as snprintf. */
int preempt_trace_format_view_header_(char *buf, size_t size, const struct preempt_view *v);
int preempt_trace_format_view_(char *buf, size_t size, uint64_t t_ms, const struct preempt_view_in *in,
                               const struct preempt_view_ev *ev);

/* ---- A worker's job lines (lib/trace/trace-job.c) --------------------------------------------- */

/* What a worker's trace holds of its job, whoever writes the trace (the
 * handler's file, the simulator's memory): each declared machine's
 * transitions ("decl"), the job-view header once ahead of the job's
 * view lines and answers ("job"), and the coordinator's start, inputs and
 * outputs ("coord"). Each line goes to line (n: its formatting's result,
 * as snprintf's: the sink judges it); decl_line, when set, takes the
 * "decl" lines instead (the handler keeps start-up's until its trace
 * opens). */
struct preempt_job_trace {
    preempt_trace_line_fn line;
    preempt_trace_line_fn decl_line;
    uint64_t (*now_ms)(void *arg);
    void *arg;
    bool view_header; /* written */
};

/* A declared machine's transition: a preempt_decl_tracer's fn, its arg a
 * struct preempt_job_trace. */
void preempt_job_trace_decl_(const struct preempt_decl *m, unsigned instance, unsigned from, unsigned input,
                             unsigned to, unsigned action, void *arg);
/* The coordinator's ops (coord-internal.h's on_view, on_answer, on_input,
 * on_output) and its state before its first input. */
void preempt_job_trace_view_(struct preempt_job_trace *jt, const struct preempt_view *v,
                             const struct preempt_view_in *in, const struct preempt_view_ev *ev);
void preempt_job_trace_answer_(struct preempt_job_trace *jt, const struct preempt_view *v,
                               const struct preempt_job_answer *a);
void preempt_job_trace_start_(struct preempt_job_trace *jt, const struct preempt_coord *c);
void preempt_job_trace_in_(struct preempt_job_trace *jt, const struct preempt_coord_in *in, unsigned depth);
void preempt_job_trace_out_(struct preempt_job_trace *jt, const struct preempt_coord_out *out, unsigned depth);

/* Replays t's job lines through a view made from its header and compares
 * each meaning; a round's commit must also say what the round's reports
 * say, when the trace read every one of them at its step. 0 (*ret_n: lines replayed), -ENOMEM, or 1 at the first
 * divergence (err names the line, the expected and the actual meaning). */
int preempt_trace_replay_view_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize);

/* The causes of what the job told the machine: every step-agreed,
 * ckpt-committed, round-aborted, final-requested, peer-lost, peer-error and
 * peer-notice record of the machine must be an event that a job line read
 * before it tells (preempt_view_event_() and preempt_view_notice_event_(),
 * the coordinator's mappings, with the same parameters; a peer-notice's by
 * its worker: its deadline is the machine's clock): the machine followed
 * the job's records and nothing else. 0 (*ret_n: such records checked;
 * none without a job-view line), -ENOMEM, or 1 at the first record without
 * its cause (err says which). */
int preempt_trace_replay_causes_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize);

/* For the loader: a "job-view" or "job" line read into t (1), not one (0),
 * or a negative errno with err saying why. cap: t->jobs' capacity. */
int preempt_trace_view_line_(struct preempt_trace_file *t, const char *line, unsigned lineno, size_t *cap, char *err,
                             size_t errsize);
void preempt_trace_jobs_free_(struct preempt_trace_file *t);

/* What an answer's line says after "=>", the meaning its replay computes
 * again (trace-lines.c): a grant's (into buf), the notice's put's, a read
 * of the records'. */
int preempt_trace_grant_says_(char *buf, size_t size, int status, uint64_t ttl_s);
const char *preempt_trace_put_says_(int status);
const char *preempt_trace_records_says_(int status);

/* Loads a trace file, text or binary (told apart by the magic). On error
 * returns a negative errno and writes a message naming the file and the
 * line or record into err. An empty trace (no record) is an error.
 * Ownership: *ret owns its arrays; free them with preempt_trace_file_free_(). */
int preempt_trace_load_(const char *path, struct preempt_trace_file *ret, char *err, size_t errsize);
/* The same from memory; `name` is used in messages. */
int preempt_trace_load_mem_(const char *name, const unsigned char *data, size_t len, struct preempt_trace_file *ret,
                            char *err, size_t errsize);
void preempt_trace_file_free_(struct preempt_trace_file *t);

/* Binary writing: the magic, then the config entry, then one entry per
 * record. Returns 0 or a negative errno. */
int preempt_trace_write_magic_(FILE *f);
int preempt_trace_write_config_(FILE *f, const struct preempt_config_facts *cfg);
int preempt_trace_write_record_(FILE *f, const struct preempt_trace_rec *r);

#endif
