/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler-internal.h: the public handler's state (struct
 * preempt_handler) and what its files share: lib/handler/handler.c (the shell
 * around the machine: helpers, the machine's effects, loop callbacks, any
 * event loop, step boundaries, queries), lib/handler/handler-start.c (creation and
 * start-up: the restore, joining a job, the restore barrier),
 * lib/handler/handler-save.c (saves and restores, the synchronous calls) and
 * lib/handler/handler-report.c (what operators see: the metrics file and the
 * termination record). Functions shared between them carry the hd_
 * prefix; everything else stays static in its file. */
#ifndef PREEMPT_HANDLER_INTERNAL_H
#define PREEMPT_HANDLER_INTERNAL_H

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ckpt/ckpt.h"
#include "embed-internal.h"
#include "config-internal.h"
#include "job/job.h"
#include "base/base.h"
#include "etcd/etcd.h"
#include "records/records.h"
#include "trace/trace.h"
#include "cloud/cloud.h"
#include "report/report.h"

#define HANDLER_MAGIC 0x70726d68u /* "prmh" */
#define SYNC_FLUSH_MS 200    /* bound on delivering a boundary's writes before a sync call returns */

struct preempt_handler {
    uint32_t magic;
    struct preempt_config cfg; /* strings point at the copies below */
    char *ckpt_dir, *trace_path;
    char *etcd_endpoints, *job, *launch_id, *etcd_user, *etcd_password, *etcd_ca, *etcd_cert, *etcd_key, *metadata_url;
    struct preempt_callbacks cb;
    void *ud;

    struct event_base *base;
    bool own_base;
    struct event *ev_sig, *ev_timer, *ev_poll, *ev_drain;
    struct event *ev_periodic;     /* save_every_ms: the next periodic checkpoint */
    uint64_t committed_step;       /* the newest step committed (job-wide), or the restored one */
    int sigfd;
    uint32_t timer_gen;   /* generation of the armed machine timer */
    uint64_t timer_at_ms; /* when it is due (hd_now_ms()); UINT64_MAX: none armed */
    uint64_t periodic_run; /* the run of the last save_every_steps request taken */
    bool poll_noticed;    /* the poll callback reported a notice already */

    struct preempt_worker wk; /* the machine, the coordinator (NULL in local mode) and the rules around them */
    struct timespec t0;
    unsigned in_cb;       /* depth of user callbacks running */
    struct event *ev_close; /* preempt_handler_close(): its check of the last writes; NULL: not closing */
    preempt_close_cb close_cb;
    void *close_ud;
    uint64_t close_by_ms; /* the bound on the last writes (the handler's clock) */

    struct preempt_ckpt_store *store;
    struct preempt_embed *embed; /* the base seen from another loop (preempt_handler_get_fd), made on demand */
    struct preempt_ckpt_writer *writer;
    const struct preempt_ckpt_info *restoring; /* set only during cb.restore */
    uint64_t restored_step, generation;
    unsigned fallbacks;        /* checkpoints the restore callback refused at start-up */
    uint64_t refused_step;     /* the newest of them */

    bool save_running;
    uint64_t save_t0_us, last_save_ms;
    uint64_t last_stall_ms; /* the training the last save stopped (a paced persist's: its snapshot phase) */
    unsigned saves;

    /* A two-phase save (docs/guide/two-phase.md): the snapshots handed over
     * (released when durable or dropped) and the persist of h->writer's
     * blobs on the loop. Resources only: the machine's state (persisting)
     * says what happens. */
    struct preempt_persist *persist;            /* made at the first two-phase save */
    enum preempt_persist_backend persist_want;  /* $PREEMPT_PERSIST */
    struct hd_snap {
        void *data;
        preempt_release_cb release;
        void *ud;
    } snaps[PREEMPT_CKPT_MAX_BLOBS];
    unsigned n_snaps;
    struct preempt_persist_blob pblobs[PREEMPT_CKPT_MAX_BLOBS];
    size_t n_pblobs;
    uint64_t snapshot_ms, persist_bytes; /* of the save persisting */
    uint64_t persist_t0_us;              /* its persist's start */
    uint64_t persist_rate;               /* bytes per ms the last persist made durable (0: none yet) */

    uint64_t step_t0_us;  /* start of the step being trained; 0: none */
    uint64_t proposed_ms; /* when this worker proposed a round's step (its agreement time runs) */
    bool proposed;

    int exit_code;

    FILE *trace;
    struct preempt_trace_rec last_rec;
    bool have_last_rec;
    struct preempt_job_trace jt; /* the job's lines in the trace (lib/trace/trace-job.c) */

    struct preempt_coord_join joined; /* what start-up agreed (zero in local mode) */
    enum preempt_source last_source; /* of the last notice posted */
    bool noticed_any;             /* a notice was posted (last_source is valid) */
    struct preempt_meta *meta;    /* the cloud notice source; NULL without one */
    enum preempt_platform platform; /* resolved: never AUTO */
    uint64_t kill_delay_ms;       /* 0: unknown */
    char kill_who[256];           /* what the kill delay was taken from ("" when configured or unknown) */
    char err_msg[256];            /* the error this worker exits with, "" when none */
    struct start *start;          /* start-up in progress; NULL once it ended */
    struct event *ev_start;       /* asynchronous creation: start-up begins on the loop */
    int start_status;             /* 0 once started, -EAGAIN while starting, or why start-up failed */

    /* What operators see of this run (report-internal.h): the termination
     * record at exit and the metrics file. Facts only: nothing here decides
     * what the handler does next. */
    char *term_path, *metrics_path; /* NULL: none */
    struct preempt_progress *progress; /* $PREEMPT_PROGRESS_FILE mapped; NULL: none */
    struct preempt_metrics *metrics;
    const char *ckpt_kind;        /* of the round under way: "preemption", "periodic", "requested", ... */
    const char *exit_why;
    uint64_t notice_ms, agreed_ms, commit_ms, agreed_step, first_commit_step; /* this preemption's; 0: none */
    int notice_worker;            /* whose notice it was; -1: none */
    uint64_t bytes_saved, restore_us;
    uint64_t started_wall;        /* when training began (start-up's end), wall clock ms */
    preempt_peer_lost_cb peer_lost; /* preempt_handler_on_peer_lost(); NULL: none */
    void *peer_lost_ud;

    /* Survivors in place (cfg.stay_in_place): the machine in rejoining
     * while start-up's phases join the job's next incarnation. */
    struct preempt_coord *left_coord; /* the incarnation's coordinator this worker left, until the rejoin ends */
    struct event *ev_rejoin;          /* the rejoin begins on the loop, after the machine's step */
    uint64_t rejoin_step;             /* the step this worker's state holds */
    bool rejoining;                   /* start-up (h->start) joins again, in place */
    bool coord_making;                /* preempt_coord_new_() runs: what it does is its start line's state, not traced */
    bool rejoin_given_up;             /* the machine exited while it did: its phase ends, giving the lease back */
    unsigned in_place;                /* preemptions this worker stayed in place through */
    unsigned phases;                  /* start-up phases run (their machines' instances in the trace) */
    preempt_rebuild_cb rebuild;       /* preempt_handler_on_rebuild(); NULL: none */
    void *rebuild_ud;
};

/* ---- shared between the handler's files ---- */

bool hd_handler_ok(const struct preempt_handler *h);
uint64_t hd_now_us(const struct preempt_handler *h);
uint64_t hd_now_ms(const struct preempt_handler *h);
void hd_log_msg(struct preempt_handler *h, enum preempt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum preempt_log_level hd_level_of(int level);
void hd_ckpt_log(int level, const char *msg, void *arg);
void hd_post(struct preempt_handler *h, struct preempt_event ev);
/* The planner's persist_left_ms (handler-save.c). */
uint64_t hd_persist_left_ms(const struct preempt_handler *h);
enum preempt_state hd_state_of(const struct preempt_handler *h);
bool hd_exited(const struct preempt_handler *h);
void hd_periodic_restart(struct preempt_handler *h);
void hd_on_periodic(evutil_socket_t fd, short what, void *arg);
void hd_committed(struct preempt_handler *h, uint64_t step);
void hd_on_meta_notice(enum preempt_meta_kind kind, enum preempt_source src, uint64_t deadline_wall_ms,
                       const char *what, void *arg);
void hd_meta_log(int level, const char *msg, void *arg);
void hd_settle(struct preempt_handler *h, uint64_t step, int decision);
extern const struct preempt_worker_ops hd_wk_ops;
void hd_run_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg);
void hd_trace_write(struct preempt_handler *h, const struct preempt_trace_rec *rec);
/* A text line for the trace (n: its formatting's result); nothing when none is open. */
void hd_trace_text(const char *line, int n, void *arg);
void hd_coord_in(const struct preempt_coord_in *in, unsigned depth, void *arg);
void hd_coord_out(const struct preempt_coord_out *out, unsigned depth, void *arg);
void hd_coord_view(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                   void *arg);
void hd_coord_answer(const struct preempt_view *v, const struct preempt_job_answer *a, void *arg);
void hd_metrics_flush(struct preempt_handler *h);
void hd_report_exit(struct preempt_handler *h, enum preempt_exit reason);
void hd_on_record(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg);
void hd_after_step(struct preempt_sm *sm, enum preempt_state from, enum preempt_state to, void *arg);
void hd_schedule_drain(struct preempt_sm *sm, void *arg);
void hd_on_drain(evutil_socket_t fd, short what, void *arg);
void hd_on_timer(evutil_socket_t fd, short what, void *arg);
void hd_on_signal(evutil_socket_t fd, short what, void *arg);
void hd_on_poll(evutil_socket_t fd, short what, void *arg);
void hd_start_free(struct preempt_handler *h);
/* Survivors in place (handler-start.c): the machine's rejoin (join the
 * job's next incarnation, this worker's state at step; the answer is
 * posted as rejoined or rejoin-failed), its resume (the rebuild callback),
 * and the end of a rejoin that the exit or the handler's free cuts short. */
void hd_rejoin(struct preempt_handler *h, uint64_t step);
void hd_resume(struct preempt_handler *h, uint64_t step);
/* give_up: a phase under way is given up (its end gives the lease back:
 * run the loop until hd_rejoin_over()); else everything goes now. */
void hd_rejoin_stop(struct preempt_handler *h, bool give_up);
bool hd_rejoin_over(void *arg);
void hd_flush_last(struct preempt_handler *h);
enum preempt_action hd_action_of(const struct preempt_handler *h);
uint64_t hd_count_step(struct preempt_handler *h);
/* Stops a persist under way, if any: the snapshots go back, the staging
 * directory goes, the previous checkpoint stays; why is logged. */
void hd_drop_persist(struct preempt_handler *h, const char *why);
void hd_persist_pace(struct preempt_handler *h);
void hd_sync_finish(struct preempt_handler *h);
void hd_start_hold(struct preempt_handler *h, const char *line);
void hd_decl_line(const char *line, int n, void *arg);

#endif
