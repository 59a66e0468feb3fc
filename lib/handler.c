/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler.c: the public handler (include/libpreempt/preempt.h), the shell around
 * the machine for one worker: signalfd, timers and the deferred drain on a
 * libevent base, the checkpoint store, the step and save measurements the
 * planner needs, the trace file and the user's callbacks. No threads.
 *
 * Everything that happens becomes an event posted to the machine
 * (lib/machine.c); the machine's effects come back here through run_fx().
 * Times given to the machine are milliseconds since the handler was made. */
#define _GNU_SOURCE /* pipe2 */
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

#include "ckpt-internal.h"
#include "embed-internal.h"
#include "config-internal.h"
#include "coord-internal.h"
#include "fault-internal.h"
#include "http-internal.h"
#include "keys-internal.h" /* PREEMPT_KEY_MAX */
#include "trace-internal.h" /* the job view's lines */
#include "machine-internal.h"
#include "metadata-internal.h"
#include "platform-internal.h"
#include "progress-internal.h"
#include "report-internal.h"
#include "worker-internal.h"

#define HANDLER_MAGIC 0x70726d68u /* "prmh" */
#define LAST_WRITES_MS 2000 /* bound on delivering the last coordination writes */
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
    unsigned saves;

    uint64_t step_t0_us;  /* start of the step being trained; 0: none */
    uint64_t proposed_ms; /* when this worker proposed a round's step (its agreement time runs) */
    bool proposed;

    int exit_code;

    FILE *trace;
    struct preempt_trace_rec last_rec;
    bool have_last_rec;
    bool view_traced;      /* the trace has the job view's header */

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
};

/* ---- small helpers ----------------------------------------------------------- */

static bool handler_ok(const struct preempt_handler *h)
{
    return h && h->magic == HANDLER_MAGIC;
}

static uint64_t now_us(const struct preempt_handler *h)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)(ts.tv_sec - h->t0.tv_sec) * 1000000u + (uint64_t)((ts.tv_nsec - h->t0.tv_nsec) / 1000) + 1000u;
}

/* Milliseconds since creation, starting at 1 so that 0 keeps meaning "unknown". */
static uint64_t now_ms(const struct preempt_handler *h)
{
    return now_us(h) / 1000u;
}

static void log_msg(struct preempt_handler *h, enum preempt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void log_msg(struct preempt_handler *h, enum preempt_log_level level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (!h->cb.log)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    h->in_cb++;
    h->cb.log(h, level, buf, h->ud);
    h->in_cb--;
}

/* The internal modules log with levels 0 debug .. 3 error. */
static enum preempt_log_level level_of(int level)
{
    static const enum preempt_log_level map[] = { PREEMPT_LOG_DEBUG, PREEMPT_LOG_INFO, PREEMPT_LOG_WARNING,
                                                  PREEMPT_LOG_ERROR };

    return map[level < 0 ? 0 : level > 3 ? 3 : level];
}

static void ckpt_log(int level, const char *msg, void *arg)
{
    log_msg(arg, level_of(level), "checkpoint: %s", msg);
}

static void post(struct preempt_handler *h, struct preempt_event ev)
{
    preempt_worker_post_(&h->wk, ev);
}

static enum preempt_state state_of(const struct preempt_handler *h)
{
    return preempt_sm_core_(h->wk.sm)->state;
}

static bool exited(const struct preempt_handler *h)
{
    return state_of(h) == PREEMPT_STATE_EXIT;
}

/* A notice from src (worker-internal.h), remembered for the status. */
static void post_notice_kind(struct preempt_handler *h, enum preempt_source src, uint64_t deadline_in_ms,
                             bool advisory)
{
    if (src != PREEMPT_SOURCE_PERIODIC) /* a periodic one's kind is request_checkpoint()'s */
        h->ckpt_kind = advisory ? "advisory" : "preemption";
    h->last_source = src;
    h->noticed_any = true;
    preempt_worker_notice_(&h->wk, src, deadline_in_ms, advisory);
}

static void post_notice(struct preempt_handler *h, enum preempt_source src, uint64_t deadline_in_ms)
{
    post_notice_kind(h, src, deadline_in_ms, false);
}

/* A periodic checkpoint: an advisory notice of its own source (the round
 * saves and training goes on), only while nothing else is under way. */
static int request_checkpoint(struct preempt_handler *h, const char *why)
{
    if (h->start_status < 0)
        return h->start_status;
    if (exited(h) || !preempt_worker_may_checkpoint_(&h->wk))
        return -EALREADY;
    log_msg(h, PREEMPT_LOG_INFO, "a periodic checkpoint (%s)", why);
    h->ckpt_kind = strcmp(why, "requested") ? "periodic" : "requested";
    post_notice_kind(h, PREEMPT_SOURCE_PERIODIC, 0, true);
    return 0;
}

/* save_every_ms: the period (re)starts now. */
static void periodic_restart(struct preempt_handler *h)
{
    struct timeval tv = preempt_tv_ms_(h->cfg.save_every_ms);

    if (h->ev_periodic && !exited(h))
        (void)evtimer_add(h->ev_periodic, &tv);
}

static void on_periodic(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    (void)request_checkpoint(h, "save_every_ms");
    periodic_restart(h); /* again after a full period, unless a commit restarts it sooner */
}

/* A step is committed (by the whole job): the periodic clock restarts. */
static void committed(struct preempt_handler *h, uint64_t step)
{
    if (step > h->committed_step)
        h->committed_step = step;
    periodic_restart(h);
}

/* The cloud source reports a notice, an advisory notice or a withdrawal. */
static void on_meta_notice(enum preempt_meta_kind kind, enum preempt_source src, uint64_t deadline_wall_ms,
                           const char *what, void *arg)
{
    struct preempt_handler *h = arg;
    uint64_t wall = preempt_clock_ms_(CLOCK_REALTIME), in_ms = 0;

    if (deadline_wall_ms)
        in_ms = deadline_wall_ms > wall ? deadline_wall_ms - wall : 1; /* passed: due at once */
    switch (kind) {
    case PREEMPT_META_NOTICE:
        log_msg(h, PREEMPT_LOG_INFO, "notice: %s metadata: %s (deadline %s%llu ms)", preempt_source_to_string_(src),
                what, deadline_wall_ms ? "in " : "unknown, ", (unsigned long long)in_ms);
        post_notice(h, src, in_ms);
        return;
    case PREEMPT_META_ADVISORY:
        if (!h->cfg.advisory_checkpoint || !preempt_worker_may_checkpoint_(&h->wk)) {
            log_msg(h, PREEMPT_LOG_INFO, "advisory notice: %s metadata: %s (no checkpoint: %s)",
                    preempt_source_to_string_(src), what,
                    !h->cfg.advisory_checkpoint ? "advisory_checkpoint is off" : "a preemption is under way");
            return;
        }
        log_msg(h, PREEMPT_LOG_INFO, "advisory notice: %s metadata: %s; an opportunistic checkpoint",
                preempt_source_to_string_(src), what);
        post_notice_kind(h, src, 0, true);
        return;
    case PREEMPT_META_WITHDRAWN: {
        bool others = preempt_worker_withdrawn_(&h->wk, src);

        log_msg(h, PREEMPT_LOG_INFO, "notice withdrawn: %s metadata: %s%s", preempt_source_to_string_(src), what,
                others ? " (other notices stand)" : "");
        return;
    }
    }
}

static void meta_log(int level, const char *msg, void *arg)
{
    log_msg(arg, level_of(level), "%s", msg);
}

/* ---- the machine's effects ------------------------------------------------------ */

static int exit_code_for(const struct preempt_handler *h, enum preempt_exit reason)
{
    int64_t code;

    switch (reason) {
    case PREEMPT_EXIT_DONE:
        return 0;
    case PREEMPT_EXIT_SAVED:
        return h->cfg.exit_code;
    case PREEMPT_EXIT_NOT_SAVED:
        return h->cfg.exit_code_not_saved;
    case PREEMPT_EXIT_ERROR:
        code = preempt_sm_core_(h->wk.sm)->err_code;
        return code >= 1 && code <= 255 ? (int)code : 1;
    case PREEMPT_EXIT__COUNT:
        break;
    }
    return 1;
}

static void arm_timer(struct preempt_handler *h, uint64_t at_ms)
{
    uint64_t now = now_ms(h), in = at_ms > now ? at_ms - now : 0;
    struct timeval tv = preempt_tv_ms_(in);

    h->timer_gen = preempt_sm_core_(h->wk.sm)->timer_gen;
    if (preempt_fault_(PREEMPT_FAULT_TIMER) < 0 || evtimer_add(h->ev_timer, &tv) < 0) {
        /* Every timer of the machine bounds a wait: one that cannot be
         * armed fires now, so the wait ends early rather than never. */
        log_msg(h, PREEMPT_LOG_ERROR, "cannot arm the machine's timer; it fires now");
        event_active(h->ev_timer, EV_TIMEOUT, 1);
    }
}

/* The text published with an effect: the notice's source, or the error's
 * message (set where the error arose; a protocol error is described here). */
static const char *fx_text(struct preempt_handler *h, const struct preempt_fx *fx)
{
    if (fx->kind == PREEMPT_FX_PUBLISH_NOTICE)
        return preempt_source_to_string_(h->last_source);
    if (fx->kind == PREEMPT_FX_PUBLISH_ERROR && !h->err_msg[0]) {
        unsigned long long run = preempt_sm_facts_(h->wk.sm)->run;

        if (fx->arg > 0)
            (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: application error %lld after step %llu",
                           h->cfg.worker, (long long)fx->arg, run);
        else if (fx->arg == -EPROTO)
            (void)snprintf(h->err_msg, sizeof(h->err_msg),
                           "worker %u: protocol violation after step %llu (past the agreed step)",
                           h->cfg.worker, run);
        else
            (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: save failed after step %llu: %s",
                           h->cfg.worker, run, strerror((int)-fx->arg));
    }
    return h->err_msg;
}

/* Follows the job's decision on this worker's pending checkpoint at step
 * (decision > 0: committed, < 0: not committed, 0: unknown here). Kept, it
 * becomes restorable (and only now may retention remove older ones); not
 * committed, it goes; unknown, it stays pending and is never restored.
 * Failing to record the decision is logged; the restart resolves it again.
 * The one place a decision touches the directory, during a round and at
 * start-up alike. */
static void settle(struct preempt_handler *h, uint64_t step, int decision)
{
    unsigned long long st = (unsigned long long)step;
    int r;

    if (decision > 0)
        committed(h, step);
    if (!h->store)
        return;
    r = decision > 0 ? preempt_ckpt_keep_(h->store, step) : decision < 0 ? preempt_ckpt_discard_(h->store, step) : 0;
    if (r < 0)
        log_msg(h, PREEMPT_LOG_WARNING, "the job %s step %llu, but applying that to this worker's copy failed: %s",
                decision > 0 ? "committed" : "did not commit", st, strerror(-r));
    else if (decision > 0)
        log_msg(h, PREEMPT_LOG_DEBUG, "the job committed step %llu; this worker's copy is restorable", st);
    else if (decision < 0 && r > 0)
        log_msg(h, PREEMPT_LOG_INFO, "the job did not commit step %llu; this worker's copy is removed", st);
    else if (decision == 0)
        log_msg(h, PREEMPT_LOG_WARNING,
                "checkpoint at step %llu stays pending: its decision record is not in this etcd; not restored", st);
}

/* ---- what the worker's rules ask of the handler (worker-internal.h) ---- */

static uint64_t wk_now_ms(void *arg)
{
    return now_ms(arg);
}

static void wk_arm_timer(void *arg, uint64_t at_ms)
{
    arm_timer(arg, at_ms);
}

static void wk_disarm_timer(void *arg)
{
    (void)evtimer_del(((struct preempt_handler *)arg)->ev_timer);
}

static void wk_begin_save(void *arg, uint64_t step)
{
    log_msg(arg, PREEMPT_LOG_INFO, "save at step %llu", (unsigned long long)step);
}

static void wk_settle(void *arg, uint64_t step, int decision)
{
    settle(arg, step, decision);
}

static void report_exit(struct preempt_handler *h, enum preempt_exit reason);

static void wk_exit(void *arg, enum preempt_exit reason)
{
    struct preempt_handler *h = arg;
    const struct preempt_core *core = preempt_sm_core_(h->wk.sm);

    h->exit_code = exit_code_for(h, reason);
    preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_EXITED);
    (void)event_del(h->ev_sig); /* nothing stays armed in exit */
    if (h->ev_poll)
        (void)event_del(h->ev_poll);
    if (h->ev_periodic)
        (void)event_del(h->ev_periodic);
    /* No source stays armed in exit; an Azure approval of the events
     * behind a committed save is the source's last request. */
    if (!(reason == PREEMPT_EXIT_SAVED && h->cfg.azure_approve && preempt_meta_approve_(h->meta) > 0)) {
        preempt_meta_free_(h->meta);
        h->meta = NULL;
    }
    if (core->shard_out) /* reported, and no decision came */
        log_msg(h, PREEMPT_LOG_WARNING,
                "the job's decision on the checkpoint at step %llu did not arrive in time; this worker's copy "
                "stays pending, and the restart follows the job's decision record",
                (unsigned long long)core->save_step);
    log_msg(h, PREEMPT_LOG_INFO, "exit: %s, code %d", preempt_exit_to_string_(reason), h->exit_code);
    report_exit(h, reason);
}

static const char *wk_fx_text(void *arg, const struct preempt_fx *fx)
{
    return fx_text(arg, fx);
}

static void wk_dropped(void *arg, enum preempt_event_kind kind)
{
    log_msg(arg, PREEMPT_LOG_ERROR, "event queue full: %s dropped", preempt_event_to_string_(kind));
}

static void wk_bug(void *arg, const struct preempt_fx *fx)
{
    log_msg(arg, PREEMPT_LOG_ERROR, "bug: effect %s not handled", preempt_fx_to_string_(fx->kind));
}

static const struct preempt_worker_ops wk_ops = {
    .now_ms = wk_now_ms, .arm_timer = wk_arm_timer, .disarm_timer = wk_disarm_timer, .begin_save = wk_begin_save,
    .settle = wk_settle, .exit = wk_exit, .fx_text = wk_fx_text, .dropped = wk_dropped, .bug = wk_bug,
};

static void run_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg)
{
    preempt_worker_run_fx_(sm, fx, &((struct preempt_handler *)arg)->wk);
}

/* Writes one line of the trace (n: its formatting's result). */
static void trace_line(struct preempt_handler *h, const char *line, int n)
{
    if (n < 0 || (size_t)n >= PREEMPT_TRACE_LINE_MAX || fprintf(h->trace, "%s\n", line) < 0 || fflush(h->trace) != 0) {
        log_msg(h, PREEMPT_LOG_WARNING, "trace file %s: write failed; tracing stops", h->trace_path);
        (void)fclose(h->trace);
        h->trace = NULL;
    }
}

static void trace_write(struct preempt_handler *h, const struct preempt_trace_rec *rec)
{
    char line[PREEMPT_TRACE_LINE_MAX];
    int n = preempt_trace_format_(line, sizeof(line), rec, h->have_last_rec ? &h->last_rec : NULL);

    h->last_rec = *rec;
    h->have_last_rec = true;
    trace_line(h, line, n);
}

/* The job's view took an input: traced (trace-internal.h), for a replay. */
static void coord_view(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                       void *arg)
{
    struct preempt_handler *h = arg;
    char line[PREEMPT_TRACE_LINE_MAX];

    if (h->trace && !h->view_traced) {
        h->view_traced = true;
        trace_line(h, line, preempt_trace_format_view_header_(line, sizeof(line), v));
    }
    if (h->trace)
        trace_line(h, line, preempt_trace_format_view_(line, sizeof(line), now_ms(h), in, ev));
}

/* ---- what operators see: the metrics file and the termination record ---- */

/* The wall clock of a moment ms of the handler's clock, now being wall
 * (0 stays 0): one reading of each clock for every moment of a record, so
 * that their order is the handler's. */
static uint64_t wall_of(uint64_t ms, uint64_t now, uint64_t wall)
{
    return ms == 0 ? 0 : ms >= now ? wall + (ms - now) : wall - (now - ms);
}

static void metrics_flush(struct preempt_handler *h)
{
    char *text;
    int r;

    if (!h->metrics)
        return;
    text = preempt_metrics_text_(h->metrics);
    r = text ? preempt_metrics_write_(h->metrics_path, text) : -ENOMEM;
    free(text);
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_WARNING, "metrics file %s: %s; no more metrics are written", h->metrics_path,
                strerror(-r));
        preempt_metrics_free_(h->metrics);
        h->metrics = NULL;
    }
}

/* A checkpoint round ended (outcome "committed" or "aborted"): its kind is
 * what the machine does next, as this worker sees it. The final round of a
 * grace period is "grace"; a round after which training goes on (the
 * machine back in idle) is the periodic, requested or advisory one that
 * opened it (on a worker that only followed it: "periodic"); else a
 * preemption's. */
static void count_checkpoint(struct preempt_handler *h, const struct preempt_trace_rec *rec, const char *outcome)
{
    const char *kind = "preemption";
    char extra[96];

    if (preempt_sm_core_(h->wk.sm)->round == 1 && rec->to != PREEMPT_STATE_IDLE)
        kind = "grace";
    else if (rec->to == PREEMPT_STATE_IDLE)
        kind = h->ckpt_kind && strcmp(h->ckpt_kind, "preemption") ? h->ckpt_kind : "periodic";
    (void)snprintf(extra, sizeof(extra), "kind=\"%s\",outcome=\"%s\"", kind, outcome);
    preempt_metrics_add_(h->metrics, PREEMPT_METRIC_CHECKPOINTS, extra, 1);
    if (!strcmp(kind, "preemption") && !strcmp(outcome, "committed") && h->notice_ms && !h->commit_ms)
        preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_NOTICE_TO_COMMIT,
                                 (double)(rec->ev.now_ms - h->notice_ms) / 1000.0);
}

/* The facts of one step of the machine that operators see; an exit's
 * reason is logged here too. */
static void report_record(struct preempt_handler *h, const struct preempt_trace_rec *rec)
{
    bool changed = false;
    bool periodic = rec->ev.kind == PREEMPT_EV_NOTICE && rec->ev.u.notice.source == PREEMPT_SOURCE_PERIODIC;

    if (rec->verdict != PREEMPT_VERDICT_TRANSITION)
        return;
    /* the first notice; this worker's own replaces a peer's, which may have
     * been a periodic round's (a peer's record does not say) */
    if ((rec->ev.kind == PREEMPT_EV_NOTICE || rec->ev.kind == PREEMPT_EV_PEER_NOTICE) && !periodic &&
        (!h->notice_ms || (rec->ev.kind == PREEMPT_EV_NOTICE && h->notice_worker != (int)h->cfg.worker))) {
        h->notice_ms = rec->ev.now_ms;
        h->notice_worker = rec->ev.kind == PREEMPT_EV_NOTICE ? (int)h->cfg.worker : (int)rec->ev.u.peer_notice.worker;
    } else if (rec->ev.kind == PREEMPT_EV_STEP_AGREED) { /* agreed at the first; a raise moves the step */
        h->agreed_ms = h->agreed_ms ? h->agreed_ms : rec->ev.now_ms;
        if (rec->ev.u.step_agreed.step > h->agreed_step)
            h->agreed_step = rec->ev.u.step_agreed.step;
    } else if (rec->ev.kind == PREEMPT_EV_CKPT_COMMITTED) {
        count_checkpoint(h, rec, "committed");
        if (!h->commit_ms) {
            h->commit_ms = rec->ev.now_ms;
            h->first_commit_step = rec->ev.u.ckpt_committed.step;
        }
        changed = true;
    } else if (rec->ev.kind == PREEMPT_EV_ROUND_ABORTED) {
        count_checkpoint(h, rec, "aborted");
        changed = true;
    }
    if (rec->to == PREEMPT_STATE_EXIT && rec->from != PREEMPT_STATE_EXIT) {
        h->exit_why = preempt_fsm_exit_why_(rec->from, &rec->ev, preempt_sm_core_(h->wk.sm));
        log_msg(h, PREEMPT_LOG_INFO, "%s (%s in %s)", h->exit_why, preempt_event_to_string_(rec->ev.kind),
                preempt_state_to_string(rec->from));
    }
    if (rec->to == PREEMPT_STATE_IDLE && rec->from != PREEMPT_STATE_IDLE) { /* the round is over; training goes on */
        h->notice_ms = h->agreed_ms = h->commit_ms = h->agreed_step = h->first_commit_step = 0;
        h->notice_worker = -1;
        h->ckpt_kind = NULL;
    }
    if (changed)
        metrics_flush(h);
}

/* The job's history record of this run (keys-internal.h's HISTORY). */
static void report_history(struct preempt_handler *h, const struct preempt_report *r)
{
    char v[400];
    int n;

    if (!h->wk.coord)
        return;
    n = snprintf(v, sizeof(v),
                 "exit=%d reason=%s at=%" PRIu64 " started=%" PRIu64 " restore_ms=%" PRIu64 " run=%" PRIu64
                 " committed=%" PRIu64 " saves=%u",
                 r->code, r->reason, r->exit_at, h->started_wall ? h->started_wall : r->exit_at,
                 r->restore_ms > 0 ? (uint64_t)r->restore_ms : 0, r->run, r->committed_step, r->saves);
    if (r->source && r->notice_at && n > 0 && (size_t)n < sizeof(v))
        (void)snprintf(v + n, sizeof(v) - (size_t)n, " notice=%" PRIu64 " source=%s from=%d agreed=%" PRIu64,
                       r->notice_at, r->source, r->notice_worker, r->agreed_step);
    preempt_coord_history_(h->wk.coord, v);
}

/* At exit: the preemption's counters, the metrics file and the record. */
static void report_exit(struct preempt_handler *h, enum preempt_exit reason)
{
    uint64_t now = now_ms(h), wall = preempt_clock_ms_(CLOCK_REALTIME), run = preempt_sm_facts_(h->wk.sm)->run;
    uint64_t lost = reason == PREEMPT_EXIT_SAVED || reason == PREEMPT_EXIT_DONE || run < h->committed_step
                        ? 0
                        : run - h->committed_step;
    /* a notice that came into a periodic round already agreed: its step is
     * the notice's, agreed from the notice on */
    uint64_t agreed_at = h->agreed_ms && h->agreed_ms < h->notice_ms ? h->notice_ms : h->agreed_ms;
    bool own = h->notice_worker == (int)h->cfg.worker;
    const char *source = !h->notice_ms ? NULL : own ? preempt_source_to_string_(h->last_source) : "peer";
    char json[PREEMPT_REPORT_MAX], extra[96];
    struct preempt_report r = {
        .version = preempt_version(), .job = h->cfg.job, .reason = preempt_exit_to_string_(reason),
        .why = h->exit_why, .source = source, .error = h->err_msg, .code = h->exit_code,
        .worker = h->cfg.worker, .workers = h->wk.coord ? h->cfg.workers : 1, .notice_worker = h->notice_worker,
        .incarnation = h->joined.incarnation, .notice_at = wall_of(h->notice_ms, now, wall),
        .deadline = wall_of(preempt_sm_core_(h->wk.sm)->deadline_ms, now, wall), .exit_at = wall,
        .agreed_step = h->agreed_step, .committed_step = h->committed_step, .run = run,
        .grace_steps = h->first_commit_step && run > h->first_commit_step ? run - h->first_commit_step : 0,
        .steps_lost = lost,
        .notice_to_agreed_ms = h->notice_ms && agreed_at ? (int64_t)(agreed_at - h->notice_ms) : -1,
        .agreed_to_commit_ms = agreed_at && h->commit_ms >= agreed_at ? (int64_t)(h->commit_ms - agreed_at) : -1,
        .notice_to_exit_ms = h->notice_ms ? (int64_t)(now - h->notice_ms) : -1, .saves = h->saves,
        .bytes_saved = h->bytes_saved, .save_ms = h->last_save_ms, .restored_step = h->restored_step,
        .restore_ms = h->restored_step || h->fallbacks ? (int64_t)(h->restore_us / 1000) : -1,
        .restore_fallbacks = h->fallbacks,
    };
    int n;

    if (source && reason != PREEMPT_EXIT_DONE) {
        (void)snprintf(extra, sizeof(extra), "source=\"%s\",outcome=\"%s\"", source, r.reason);
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_PREEMPTIONS, extra, 1);
    }
    preempt_metrics_add_(h->metrics, PREEMPT_METRIC_STEPS_LOST, "", (double)lost);
    metrics_flush(h);
    report_history(h, &r);
    if (!h->term_path)
        return;
    n = preempt_report_json_(&r, json, sizeof(json));
    if (n < 0 || (n = preempt_report_write_(h->term_path, json, (size_t)n)) < 0)
        log_msg(h, PREEMPT_LOG_WARNING, "termination record %s: %s", h->term_path, strerror(-n));
}

static void on_record(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg)
{
    struct preempt_handler *h = arg;

    (void)sm;
    for (unsigned k = 0; k < rec->n_fx; k++)
        if (preempt_fsm_fx_proposes_(rec->fx[k].kind)) {
            h->proposed_ms = rec->ev.now_ms;
            h->proposed = true;
        }
    if (rec->ev.kind == PREEMPT_EV_STEP_AGREED && h->proposed) {
        preempt_sm_facts_(h->wk.sm)->agree_ms = rec->ev.now_ms - h->proposed_ms;
        if (h->wk.coord) /* a job's agreement; alone, a worker agrees with itself at once */
            preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_AGREEMENT, (double)(rec->ev.now_ms - h->proposed_ms) / 1000.0);
        h->proposed = false;
    }
    report_record(h, rec);
    if (rec->verdict == PREEMPT_VERDICT_ILLEGAL)
        log_msg(h, PREEMPT_LOG_ERROR, "bug: event %s is illegal in state %s", preempt_event_to_string_(rec->ev.kind),
                preempt_state_to_string(rec->from));
    if (h->trace)
        trace_write(h, rec);
}

/* What each state owns (style R14), checked after every step in debug
 * builds: the machine's timer is pending exactly in the states it bounds;
 * a save is asked for or running only while saving; in exit nothing of
 * the machine's stays armed. */
static void check_invariants(const struct preempt_handler *h, enum preempt_state s)
{
#ifndef NDEBUG
    bool saving = s == PREEMPT_STATE_SAVING || s == PREEMPT_STATE_FINAL_SAVE;

    assert(!!evtimer_pending(h->ev_timer, NULL) == (preempt_state_timer_(s) != PREEMPT_TIMER_NONE));
    assert(!(h->wk.save_asked || h->save_running) || saving || s == PREEMPT_STATE_EXIT);
    assert(s != PREEMPT_STATE_EXIT || (!event_pending(h->ev_sig, EV_READ, NULL) &&
                                       (!h->ev_poll || !event_pending(h->ev_poll, EV_TIMEOUT, NULL))));
#else
    (void)h;
    (void)s;
#endif
}

static void after_step(struct preempt_sm *sm, enum preempt_state from, enum preempt_state to, void *arg)
{
    struct preempt_handler *h = arg;

    (void)sm;
    check_invariants(h, to);
    if (from == to)
        return;
    log_msg(h, PREEMPT_LOG_DEBUG, "state %s -> %s", preempt_state_to_string(from), preempt_state_to_string(to));
    /* The trainer resumes training when a wait or a save ends. */
    if (from == PREEMPT_STATE_OWN_SIGNAL || from == PREEMPT_STATE_FOLLOWING || from == PREEMPT_STATE_SAVING)
        h->step_t0_us = now_us(h);
    if (to == PREEMPT_STATE_IDLE) /* withdrawn: no notice stands any more */
        memset(h->wk.live, 0, sizeof(h->wk.live));
    h->in_cb++;
    if (h->cb.on_state)
        h->cb.on_state(h, from, to, h->ud);
    if (to == PREEMPT_STATE_EXIT && h->cb.on_exit)
        h->cb.on_exit(h, h->wk.exit_reason, h->exit_code, h->ud);
    h->in_cb--;
}

static void schedule_drain(struct preempt_sm *sm, void *arg)
{
    struct preempt_handler *h = arg;

    (void)sm;
    event_active(h->ev_drain, EV_TIMEOUT, 1);
}

/* ---- loop callbacks --------------------------------------------------------------- */

static void on_drain(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    preempt_sm_drain_(h->wk.sm);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_TIMER };

    (void)fd;
    (void)what;
    ev.u.timer.gen = h->timer_gen;
    post(h, ev);
}

static ssize_t read_signal(int fd, struct signalfd_siginfo *si)
{
    int r = preempt_fault_(PREEMPT_FAULT_SIGNALFD);

    if (r < 0) {
        errno = -r;
        return -1;
    }
    return read(fd, si, sizeof(*si));
}

/* A signal's deadline: SIGKILL follows after the launcher's kill delay, or
 * the platform's own shutdown (GCE: hard off 30 s after the ACPI soft-off;
 * on gce-gpu it cuts an hour's maintenance notice short). 0: unknown. */
static uint64_t signal_lead(const struct preempt_handler *h)
{
    return h->kill_delay_ms ? h->kill_delay_ms : preempt_platform_signal_ms_(h->platform);
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    struct signalfd_siginfo si;
    ssize_t n;

    (void)what;
    while ((n = read_signal(fd, &si)) == (ssize_t)sizeof(si)) {
        log_msg(h, PREEMPT_LOG_INFO, "notice: signal %u (%s) from pid %u", si.ssi_signo, strsignal((int)si.ssi_signo),
                si.ssi_pid);
        post_notice(h, PREEMPT_SOURCE_SIGNAL, signal_lead(h));
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        /* The descriptor is readable, so one of the watched signals is
         * pending: it is a notice all the same. The watch stops, as a
         * descriptor that keeps failing would make the loop spin. */
        log_msg(h, PREEMPT_LOG_ERROR, "signalfd read: %s; taken as a notice, signals are no longer watched",
                strerror(errno));
        (void)event_del(h->ev_sig);
        post_notice(h, PREEMPT_SOURCE_SIGNAL, signal_lead(h));
    }
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    uint64_t in_ms = 0;
    int r;

    (void)fd;
    (void)what;
    h->in_cb++;
    r = h->cb.poll(h, &in_ms, h->ud);
    h->in_cb--;
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_WARNING, "poll function failed: %s", strerror(-r));
    } else if (r > 0 && !h->poll_noticed) { /* a notice is an edge, not a level */
        h->poll_noticed = true;
        log_msg(h, PREEMPT_LOG_INFO, "notice: poll function (deadline in %llu ms)", (unsigned long long)in_ms);
        post_notice(h, PREEMPT_SOURCE_POLL, in_ms);
    }
}

/* ---- creation ---------------------------------------------------------------------- */

/* The threads of this process in which a signal of set is not blocked,
 * as "tid (name), ..." in buf (read from /proc/self/task/<tid>/status's
 * SigBlk mask). signalfd sees a signal only while every thread blocks it;
 * a thread that does not takes the default action: death. Returns how
 * many, or a negative errno when /proc cannot be read. */
static int unblocked_threads(const sigset_t *set, char *buf, size_t size)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t off = 0;
    int n = 0;

    buf[0] = '\0';
    if (!d)
        return -errno;
    while ((e = readdir(d))) {
        char path[300], line[256], comm[64] = "?";
        unsigned long long blk = 0;
        bool found = false;
        FILE *f;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        (void)snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if (!(f = fopen(path, "re")))
            continue; /* the thread ended meanwhile */
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "SigBlk: %llx", &blk) == 1) {
                found = true;
                break;
            }
        (void)fclose(f);
        if (!found)
            continue;
        (void)snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "re"))) {
            if (fgets(comm, sizeof(comm), f))
                comm[strcspn(comm, "\n")] = '\0';
            (void)fclose(f);
        }
        for (int s = 1; s <= 64; s++)
            if (sigismember(set, s) == 1 && !(blk & (1ull << (s - 1)))) {
                if (off < size)
                    off += (size_t)snprintf(buf + off, size - off, "%s%s (%s)", n ? ", " : "", e->d_name, comm);
                n++;
                break;
            }
    }
    (void)closedir(d);
    return n;
}

static int open_signals(struct preempt_handler *h)
{
    sigset_t set, blocked;
    char threads[512];
    int r;

    (void)preempt_signal_set_(&h->cfg, &set); /* validated */
    if (sigprocmask(SIG_BLOCK, NULL, &blocked) < 0)
        return -errno;
    for (int s = 1; s <= SIGRTMAX; s++)
        if (sigismember(&set, s) == 1 && sigismember(&blocked, s) != 1) {
            log_msg(h, PREEMPT_LOG_ERROR, "signal %d (%s) is not blocked; call preempt_block_signals() first in main()",
                    s, strsignal(s));
            return -EBUSY;
        }
    r = unblocked_threads(&set, threads, sizeof(threads));
    if (r > 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "%d thread(s) of this process do not block the notice signals: %s. A notice "
                "would kill the process instead of reaching the handler. Block them before any thread starts: "
                "preempt_block_signals() first in main(), or start the program under preempt-exec (Python, and any "
                "runtime that starts threads of its own)", r, threads);
        return -EBUSY;
    }
    if ((r = preempt_fault_(PREEMPT_FAULT_SIGNALFD)) < 0)
        return r;
    h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (h->sigfd < 0)
        return -errno;
    h->ev_sig = event_new(h->base, h->sigfd, EV_READ | EV_PERSIST, on_signal, h);
    return h->ev_sig ? 0 : -ENOMEM;
}

static int open_events(struct preempt_handler *h)
{
    h->ev_timer = evtimer_new(h->base, on_timer, h);
    h->ev_drain = event_new(h->base, -1, 0, on_drain, h);
    if (!h->ev_timer || !h->ev_drain)
        return -ENOMEM;
    if (h->cfg.save_every_ms && !(h->ev_periodic = evtimer_new(h->base, on_periodic, h)))
        return -ENOMEM;
    if (h->cb.poll && !(h->ev_poll = event_new(h->base, -1, EV_PERSIST, on_poll, h)))
        return -ENOMEM;
    return 0;
}

/* Started: the notice signals, the poll callback and the periodic clock
 * reach the machine from now on (a signal that came during start-up waits
 * in the signalfd). */
static int arm_events(struct preempt_handler *h)
{
    struct timeval tv = preempt_tv_ms_(h->cfg.poll_interval_ms);

    if (event_add(h->ev_sig, NULL) < 0 || (h->ev_poll && event_add(h->ev_poll, &tv) < 0))
        return -ENOMEM;
    periodic_restart(h);
    return 0;
}

static int open_trace(struct preempt_handler *h)
{
    char line[256];
    int fd;

    if (!h->trace_path)
        return 0;
    fd = open(h->trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    h->trace = fdopen(fd, "w");
    if (!h->trace) {
        int r = -errno;

        (void)close(fd);
        return r;
    }
    if (preempt_trace_format_config_(line, sizeof(line), &preempt_sm_facts_(h->wk.sm)->cfg) < 0 ||
        fprintf(h->trace, "# libpreempt %s trace of pid %ld\n%s\n", preempt_version(), (long)getpid(), line) < 0 ||
        fflush(h->trace) != 0)
        return -EIO;
    return 0;
}

static void coord_log(int level, const char *msg, void *arg)
{
    log_msg(arg, level_of(level), "coordination: %s", msg);
}

static void coord_job_save(uint64_t ms, void *arg)
{
    preempt_worker_save_took_(&((struct preempt_handler *)arg)->wk, ms);
}

static void coord_post(const struct preempt_event *ev, void *arg)
{
    struct preempt_handler *h = arg;

    if (ev->kind == PREEMPT_EV_NOTICE) /* an operator's notice */
        h->last_source = ev->u.notice.source;
    post(h, *ev);
}

static uint64_t coord_now(void *arg)
{
    return now_ms(arg);
}

static void coord_error_msg(const char *msg, void *arg)
{
    struct preempt_handler *h = arg;

    if (!h->err_msg[0]) /* the job's first error, unless this worker has its own */
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "%s", msg);
}

static struct preempt_coord_cfg coord_cfg(struct preempt_handler *h)
{
    const struct preempt_config *c = &h->cfg;

    return (struct preempt_coord_cfg){
        .etcd = { .endpoints = c->etcd_endpoints, .user = c->etcd_user, .password = c->etcd_password,
                  .ca = c->etcd_ca, .cert = c->etcd_cert, .key = c->etcd_key, .timeout_ms = c->etcd_timeout_ms,
                  .log = coord_log, .log_arg = h },
        .job = c->job, .launch = c->launch_id, .worker = c->worker, .workers = c->workers,
        .lease_ttl_s = c->lease_ttl_s,
        .join_timeout_ms = c->join_timeout_ms,
        .give_up_ms = c->agree_timeout_ms, /* a write that cannot land within a round is a failure */
        .start_over = c->start_over,
    };
}

#define MAX_PENDING 4 /* a stop mid-round leaves one or two (round 0 and 1) */

/* Start-up in progress: the checkpoint directory's restore and, in a job,
 * joining, the restore and the restore barrier. Its phases run on base: a
 * private one for a blocking creation (nothing of the caller's loop runs
 * meanwhile), the handler's own for an asynchronous one. Each step is a
 * continuation of the last; start_done() ends it either way. */
struct start {
    struct event_base *base;
    struct preempt_coord_phase *phase;  /* the etcd phase under way, if any */
    struct preempt_coord_cfg cc;
    struct preempt_coord_pending pend[MAX_PENDING];
    char keys[MAX_PENDING][512];
    size_t n_pend;
    struct preempt_ckpt_info info;      /* the checkpoint restored */
    int cb_r;                           /* this worker's restore callback's outcome */
    int outcome;                        /* the job's (PREEMPT_RESTORE_*) */
    uint64_t t0;
    char verdict[320], msg[512];
};

static void start_done(struct preempt_handler *h, int r);
static void on_job_joined(int r, void *arg);
static void on_job_restored(int r, void *arg);

/* Multi-worker start-up: join the job and find the step every worker holds
 * (the result in h->joined); the job's decisions on this worker's pending
 * checkpoints are applied first. */
static void join_job(struct preempt_handler *h)
{
    struct start *st = h->start;
    uint64_t *steps = NULL, *ps = NULL;
    size_t n = 0, np = 0;
    int r;

    st->n_pend = 0;
    if (h->store && ((r = preempt_ckpt_list_(h->store, false, &steps, &n)) < 0 ||
                     (r = preempt_ckpt_list_(h->store, true, &ps, &np)) < 0)) {
        free(steps);
        start_done(h, r);
        return;
    }
    for (size_t i = 0; i < np && st->n_pend < MAX_PENDING; i++) /* the newest few; older ones stay undecided */
        if (preempt_ckpt_pending_(h->store, ps[i], st->keys[st->n_pend], sizeof(st->keys[0])) == 1) {
            st->pend[st->n_pend] = (struct preempt_coord_pending){ .step = ps[i], .key = st->keys[st->n_pend] };
            st->n_pend++;
        }
    free(ps);
    r = preempt_coord_join_begin_(st->base, &st->cc, steps, n, st->pend, st->n_pend, &h->joined, st->msg,
                                  sizeof(st->msg), on_job_joined, h, &st->phase);
    free(steps);
    if (r < 0)
        on_job_joined(r, h);
}

/* Calls the restore callback on info; 0 or its negative errno. */
static int restore_cb(struct preempt_handler *h, const struct preempt_ckpt_info *info)
{
    int r;
    uint64_t t0 = now_us(h);

    h->restoring = info;
    h->in_cb++;
    r = h->cb.restore(h, info->step, h->ud);
    h->in_cb--;
    h->restoring = NULL;
    h->restore_us += now_us(h) - t0; /* every attempt: the time start-up spent restoring */
    return r < 0 ? r : 0;
}

/* Whether a restore's error says the checkpoint itself is unusable (bad
 * data, another model's shape, a blob missing or failing its checksum):
 * then it is set aside and an older one tried. Any other error (out of
 * memory, I/O, an interrupted call) may pass on a retry: nothing is set
 * aside and start-up fails with it. */
static bool unusable(int err)
{
    return err == -EBADMSG || err == -EINVAL || err == -ENOENT || err == -EPROTO || err == -ERANGE;
}

/* A restore callback refused the checkpoint at step (why): it goes aside
 * and the next older one is tried. */
static void refuse(struct preempt_handler *h, uint64_t step, const char *why)
{
    (void)preempt_ckpt_set_aside_(h->store, step, why);
    if (!h->fallbacks++)
        h->refused_step = step;
}

/* Joined (r 0): set aside what is newer than the job's step, restore it,
 * and report the restore at the restore barrier. */
static void restore_end(struct preempt_handler *h, int r);

static void on_job_joined(int r, void *arg)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    const struct preempt_coord_join *join = &h->joined;
    char why[PREEMPT_MAX_JOB + 160];
    int mine;

    st->phase = NULL;
    for (size_t i = 0; r == 0 && i < st->n_pend; i++)
        settle(h, st->pend[i].step, st->pend[i].decision);
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "cannot join job %s as worker %u of %u: %s", h->cfg.job, h->cfg.worker,
                h->cfg.workers, st->msg);
        start_done(h, r);
        return;
    }
    log_msg(h, PREEMPT_LOG_INFO, "joined job %s as worker %u of %u, incarnation %llu; %s%llu", h->cfg.job,
            h->cfg.worker, h->cfg.workers, (unsigned long long)join->incarnation,
            join->have_step ? "every worker restores step " : "no step every worker holds: starting fresh at ",
            (unsigned long long)(join->have_step ? join->step : 0));
    if (!h->store) { /* no checkpoint directory: nothing to restore */
        start_done(h, 0);
        return;
    }
    if (join->over)
        (void)snprintf(why, sizeof(why), "job %s started over at step %llu (PREEMPT_START_OVER)", h->cfg.job,
                       (unsigned long long)(join->have_step ? join->step : 0));
    else
        (void)snprintf(why, sizeof(why), "newer than step %llu, the newest one every worker of job %s holds",
                       (unsigned long long)(join->have_step ? join->step : 0), h->cfg.job);
    r = preempt_ckpt_set_aside_newer_(h->store, join->have_step ? join->step : 0, why);
    if (r < 0 || !join->have_step) {
        restore_end(h, r < 0 ? r : -ENOENT);
        return;
    }
    st->t0 = preempt_clock_ms_(CLOCK_MONOTONIC);
    st->cb_r = preempt_ckpt_at_(h->store, join->step, &st->info);
    if (st->cb_r == 0)
        st->cb_r = restore_cb(h, &st->info);
    if (st->cb_r < 0)
        log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s", (unsigned long long)join->step,
                strerror(-st->cb_r));
    mine = st->cb_r == 0 ? PREEMPT_RESTORE_OK : unusable(st->cb_r) ? PREEMPT_RESTORE_UNUSABLE : PREEMPT_RESTORE_FAILED;
    /* Every worker waits for the slowest restore: bounded by start-up's
     * bound plus twice this worker's own restore time. */
    r = preempt_coord_restored_begin_(st->base, &st->cc, &h->joined, mine, strerror(-st->cb_r),
                                      h->cfg.join_timeout_ms + 2 * (preempt_clock_ms_(CLOCK_MONOTONIC) - st->t0),
                                      &st->outcome, st->verdict, sizeof(st->verdict), st->msg, sizeof(st->msg),
                                      on_job_restored, h, &st->phase);
    if (r < 0)
        on_job_restored(r, h);
}

/* The restore barrier's record: ok, the job starts; failed, start-up fails
 * everywhere with nothing set aside; unusable, every worker sets the step
 * aside and the job joins again without it. */
static void on_job_restored(int r, void *arg)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    char why[400];

    st->phase = NULL;
    if (r < 0 || st->outcome != PREEMPT_RESTORE_OK)
        h->joined.lease = 0; /* given back */
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "job %s: after the restore: %s", h->cfg.job, st->msg);
        restore_end(h, r);
    } else if (st->outcome == PREEMPT_RESTORE_OK) {
        restore_end(h, 0);
    } else if (st->outcome == PREEMPT_RESTORE_FAILED) {
        log_msg(h, PREEMPT_LOG_ERROR, "job %s: a worker could not restore (step %s); nothing was set aside: a "
                "restart tries again", h->cfg.job, st->verdict);
        restore_end(h, st->cb_r < 0 ? st->cb_r : -EREMOTEIO);
    } else {
        log_msg(h, PREEMPT_LOG_WARNING, "job %s: a restore failed (step %s); every worker sets that step aside and "
                "the job falls back to an older one", h->cfg.job, st->verdict);
        (void)snprintf(why, sizeof(why), "a restore callback failed on it (step %.200s)", st->verdict);
        refuse(h, h->joined.step, why);
        join_job(h);
    }
}

/* Local mode: the newest checkpoint the callback accepts. */
static void restore_local(struct preempt_handler *h)
{
    struct preempt_ckpt_info *info = &h->start->info;
    int r;

    while ((r = preempt_ckpt_latest_(h->store, info)) == 0 && (r = restore_cb(h, info)) < 0) {
        char why[160];

        if (!unusable(r)) {
            log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s (nothing set aside: a "
                    "restart tries again)", (unsigned long long)info->step, strerror(-r));
            start_done(h, r);
            return;
        }
        log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s; setting it aside",
                (unsigned long long)info->step, strerror(-r));
        (void)snprintf(why, sizeof(why), "the restore callback failed on it: %s", strerror(-r));
        refuse(h, info->step, why);
    }
    restore_end(h, r);
}

/* The restore's outcome: r 0 (start->info restored), -ENOENT (nothing to
 * restore) or an error. */
static void restore_end(struct preempt_handler *h, int r)
{
    const struct preempt_ckpt_info *info = &h->start->info;

    if (r == -ENOENT && h->fallbacks) {
        log_msg(h, PREEMPT_LOG_ERROR, "no checkpoint could be restored: the restore callback failed on all %u (set "
                "aside in %s/aside%s)", h->fallbacks, h->ckpt_dir, h->cfg.etcd_endpoints ? ", and alike on every worker" : "");
        r = -ENOTRECOVERABLE;
    } else if (r == -ENOENT) {
        log_msg(h, PREEMPT_LOG_INFO, "no checkpoint in %s: starting at step 0", h->ckpt_dir);
        r = 0;
    } else if (r == 0) {
        h->restored_step = h->committed_step = info->step;
        h->generation = info->generation + 1;
        preempt_sm_facts_(h->wk.sm)->run = info->run;
        preempt_sm_facts_(h->wk.sm)->save_ms = info->save_ms; /* the planner knows the save time from the start */
        log_msg(h, PREEMPT_LOG_INFO, "restored step %llu from %s%s", (unsigned long long)info->step, info->path,
                h->fallbacks ? " (an older checkpoint: the newer ones failed to restore)" : "");
    }
    start_done(h, r);
}

/* Start-up's first step: open the checkpoint directory, then restore
 * (local mode) or join the job. */
static void start_begin(struct preempt_handler *h)
{
    bool multi = h->cfg.etcd_endpoints != NULL;
    struct preempt_ckpt_id id = { .job = h->cfg.job ? h->cfg.job : "", .launch = h->cfg.launch_id,
                                  .worker = multi ? h->cfg.worker : 0, .workers = multi ? h->cfg.workers : 1 };
    int r;

    h->start->cc = coord_cfg(h);
    if (!h->ckpt_dir) {
        preempt_sm_facts_(h->wk.sm)->run = h->cfg.start_run;
        if (multi)
            join_job(h);
        else
            start_done(h, 0);
        return;
    }
    r = preempt_ckpt_open_(h->ckpt_dir, h->cfg.max_to_keep == (unsigned)PREEMPT_UNLIMITED ? 0 : h->cfg.max_to_keep, &id,
                           ckpt_log, h, &h->store);
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "cannot open checkpoint directory %s: %s%s", h->ckpt_dir, strerror(-r),
                r == -ENOENT ? " (its parent directory does not exist: only the last component is created)" : "");
        start_done(h, r);
    } else if (multi) {
        join_job(h);
    } else {
        restore_local(h);
    }
}

/* The platform in effect and the defaults it implies (an explicit value
 * always wins; an explicit grace of 0 too). */
static int resolve_platform(struct preempt_handler *h)
{
    const char *env = getenv("PREEMPT_PLATFORM");
    int p = preempt_platform_resolve_(h->cfg.platform, env, getenv("PREEMPT_DMI_DIR"));

    if (p < 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: PREEMPT_PLATFORM=%s is not one of none, gce, gce-gpu, "
                "aws, azure", env);
        return -EINVAL;
    }
    h->platform = (enum preempt_platform)p;
    if (h->cfg.grace_ms == (uint64_t)PREEMPT_AUTO)
        h->cfg.grace_ms = preempt_platform_grace_ms_(h->platform);
    if (h->cfg.exit_code == PREEMPT_AUTO)
        h->cfg.exit_code = preempt_platform_exit_code_(h->platform);
    h->kill_delay_ms = h->cfg.kill_delay_ms; /* 0: none known */
    if (h->kill_delay_ms == (uint64_t)PREEMPT_AUTO)
        h->kill_delay_ms = preempt_kill_delay_(h->platform, getenv, h->kill_who, sizeof(h->kill_who));
    log_msg(h, PREEMPT_LOG_INFO, "platform %s (%s): grace %llu ms, exit code %d; kill delay %llu ms%s%s",
            preempt_platform_to_string(h->platform),
            h->cfg.platform != PREEMPT_PLATFORM_AUTO ? "configured" : env && *env ? "PREEMPT_PLATFORM" : "detected",
            (unsigned long long)h->cfg.grace_ms, h->cfg.exit_code, (unsigned long long)h->kill_delay_ms,
            h->kill_who[0] ? " from the launcher: " : h->kill_delay_ms ? " (configured)" : " (none known)",
            h->kill_who);
    return 0;
}

/* Launcher awareness: the kill delay after SIGTERM must leave room for a
 * save (the restored checkpoint's save took save_ms) and for the grace
 * period. Only a warning: the handler works with whatever time it gets. */
static void warn_kill_delay(struct preempt_handler *h)
{
    uint64_t save_ms = preempt_sm_facts_(h->wk.sm)->save_ms, kd = h->kill_delay_ms;

    if (kd == 0)
        return;
    if (save_ms + h->cfg.margin_ms >= kd)
        log_msg(h, PREEMPT_LOG_WARNING, "the last save took %llu ms but the process is killed %llu ms after SIGTERM "
                "(%s; margin %llu ms): a preemption save may not finish; raise the kill delay "
                "(terminationGracePeriodSeconds, torchrun --shutdown-timeout, Slurm GraceTime/KillWait) or save less",
                (unsigned long long)save_ms, (unsigned long long)kd, h->kill_who[0] ? h->kill_who : "configured",
                (unsigned long long)h->cfg.margin_ms);
    if (h->cfg.grace_ms > kd)
        log_msg(h, PREEMPT_LOG_WARNING, "grace_ms %llu is longer than the %llu ms kill delay after SIGTERM: a signal's "
                "deadline is the kill delay", (unsigned long long)h->cfg.grace_ms, (unsigned long long)kd);
}

static int open_metadata(struct preempt_handler *h)
{
    char url[512];
    struct preempt_meta_opts o = {
        .platform = h->platform, .url = url, .poll_ms = h->cfg.metadata_poll_ms,
        .timeout_ms = h->cfg.metadata_timeout_ms, .on_notice = on_meta_notice, .log = meta_log, .arg = h,
    };
    int r;

    if (h->platform == PREEMPT_PLATFORM_NONE)
        return 0;
    if (preempt_platform_metadata_url_(h->platform, h->cfg.metadata_url, getenv, url, sizeof(url)) == 1)
        log_msg(h, PREEMPT_LOG_WARNING, "GCE_METADATA_HOST=%s is a host name, not an address: not used (the "
                "metadata source never resolves names); set it to an address, or GCE_METADATA_IP", getenv("GCE_METADATA_HOST"));
    r = preempt_meta_new_(h->base, &o, &h->meta);
    if (r < 0)
        log_msg(h, PREEMPT_LOG_ERROR, "cannot watch the %s metadata service at %s: %s",
                preempt_platform_to_string(h->platform), url, strerror(-r));
    else
        log_msg(h, PREEMPT_LOG_INFO, "watching the %s metadata service at %s", preempt_platform_to_string(h->platform),
                url);
    return r;
}

/* ---- the end of start-up ------------------------------------------------------------------- */

/* Started: the cloud source, the running protocol and the trace open, and
 * the handler's events are armed. */
static int watch_peers(struct preempt_handler *h);

static int start_finish(struct preempt_handler *h)
{
    int r;

    warn_kill_delay(h);
    r = open_metadata(h);
    if (r < 0)
        return r;
    if (h->cfg.etcd_endpoints) {
        static const struct preempt_coord_ops cops = {
            .post = coord_post, .now_ms = coord_now, .log = coord_log, .on_error_msg = coord_error_msg,
            .on_view = coord_view, .job_save = coord_job_save,
        };

        r = preempt_coord_new_(h->base, &h->start->cc, &h->joined, &cops, h, &h->wk.coord);
        if (r < 0)
            return r;
        (void)watch_peers(h); /* registered before an asynchronous start-up ended */
    }
    r = open_trace(h);
    if (r < 0) {
        log_msg(h, PREEMPT_LOG_ERROR, "cannot write trace file %s: %s", h->trace_path, strerror(-r));
        return r;
    }
    r = arm_events(h);
    h->step_t0_us = now_us(h);
    return r;
}

/* Releases start-up's state, cancelling a phase under way. */
static void start_free(struct preempt_handler *h)
{
    if (!h->start)
        return;
    preempt_coord_phase_free_(h->start->phase);
    free(h->start);
    h->start = NULL;
}

/* The end of start-up, either way (r 0: started). An asynchronous
 * creation reports it through on_start. */
static void start_done(struct preempt_handler *h, int r)
{
    if (r == 0)
        r = start_finish(h);
    if (r == 0) { /* the metrics file is there from the start; training begins */
        h->started_wall = preempt_clock_ms_(CLOCK_REALTIME);
        preempt_progress_boundary_(h->progress, preempt_sm_facts_(h->wk.sm)->run, now_us(h));
        preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_TRAINING);
        if (h->restored_step)
            preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_RESTORE, (double)h->restore_us / 1e6);
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_FALLBACKS, "", h->fallbacks);
        metrics_flush(h);
    }
    start_free(h);
    h->start_status = r;
    if (h->cfg.async_start && h->cb.on_start) {
        h->in_cb++;
        h->cb.on_start(h, r, h->ud);
        h->in_cb--;
    }
}

static void on_start_begin(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_begin(arg);
}

/* SIGINT during a blocking start-up: its handler (installed only while
 * the process has one of its own) wakes the loop through a pipe. One
 * blocking start-up at a time listens; others are not interruptible. */
static volatile sig_atomic_t sigint_fd = -1; /* the pipe the handler writes to, or -1 */
static atomic_flag sigint_taken = ATOMIC_FLAG_INIT;

static void on_sigint_signal(int sig)
{
    int e = errno;
    char c = (char)sig;

    if (sigint_fd >= 0)
        (void)!write(sigint_fd, &c, 1);
    errno = e;
}

static void on_sigint(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    if (!h->start)
        return;
    log_msg(h, PREEMPT_LOG_ERROR, "start-up interrupted (SIGINT)");
    start_done(h, -EINTR);
}

/* Start-up, blocking: its phases on a private base, so that nothing of the
 * caller's loop runs meanwhile. Each phase is bounded; a SIGINT ends it
 * with -EINTR when the process handles SIGINT (a Python interpreter, a
 * program that catches Ctrl-C): its handler is called again afterwards,
 * so the program learns of it as it would have. With SIGINT's default
 * action the process dies as it always did; ignored, it stays ignored. */
static int start_blocking(struct preempt_handler *h)
{
    struct sigaction old, ours = { .sa_handler = on_sigint_signal };
    struct event *ev_int = NULL;
    int p[2] = { -1, -1 };
    bool listen = false;

    if (h->cfg.etcd_endpoints) { /* only a job's start-up waits on anything */
        h->start->base = event_base_new();
        if (!h->start->base)
            return -ENOMEM;
        if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN &&
            !atomic_flag_test_and_set(&sigint_taken)) {
            listen = pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0 &&
                     (ev_int = event_new(h->start->base, p[0], EV_READ, on_sigint, h)) != NULL &&
                     event_add(ev_int, NULL) == 0;
            if (listen) {
                sigint_fd = p[1];
                (void)sigemptyset(&ours.sa_mask);
                listen = sigaction(SIGINT, &ours, NULL) == 0;
            }
            if (!listen)
                atomic_flag_clear(&sigint_taken);
        }
    }
    {
        struct event_base *b = h->start->base;

        start_begin(h);
        while (b && h->start_status == -EAGAIN && event_base_loop(b, EVLOOP_ONCE) >= 0)
            ;
        if (h->start_status == -EAGAIN) {
            log_msg(h, PREEMPT_LOG_ERROR, "the start-up loop failed");
            start_done(h, -EIO);
        }
        if (listen) {
            char c;

            (void)sigaction(SIGINT, &old, NULL);
            sigint_fd = -1;
            atomic_flag_clear(&sigint_taken);
            if (read(p[0], &c, 1) == 1)
                (void)raise(SIGINT); /* the program's own handler learns of it now */
        }
        if (ev_int)
            event_free(ev_int);
        if (p[0] >= 0) {
            (void)close(p[0]);
            (void)close(p[1]);
        }
        if (b)
            event_base_free(b);
    }
    return h->start_status;
}

static int copy_str(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return 0;
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

/* A former run's metrics file (NULL when there is none or it is too
 * large to be one). Ownership: malloc'ed, the caller frees it. */
static char *read_small(const char *path)
{
    FILE *f = fopen(path, "re");
    char *buf = f ? malloc(1u << 20) : NULL;
    size_t n = buf ? fread(buf, 1, (1u << 20) - 1, f) : 0;

    if (f)
        (void)fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    return buf;
}

/* A report path with "{worker}" made the worker index, malloc'ed (NULL:
 * out of memory, or too long). */
static char *worker_path(const char *p, unsigned worker)
{
    const char *at = strstr(p, "{worker}");
    char buf[4096];
    int n = at ? snprintf(buf, sizeof(buf), "%.*s%u%s", (int)(at - p), p, worker, at + 8)
               : snprintf(buf, sizeof(buf), "%s", p);

    return n >= 0 && (size_t)n < sizeof(buf) ? strdup(buf) : NULL;
}

/* $PREEMPT_PROGRESS_FILE, set by a supervising launcher: the progress
 * page (progress-internal.h). A launcher that asks for it watches it, so
 * failing to map it fails creation. */
static int progress_open(struct preempt_handler *h)
{
    const char *p = getenv("PREEMPT_PROGRESS_FILE");
    char *path;
    int r;

    if (!p || !*p)
        return 0;
    path = worker_path(p, h->cfg.worker);
    if (!path)
        return -ENAMETOOLONG;
    h->progress = preempt_progress_open_(path, (uint64_t)h->t0.tv_sec * 1000000000u + (uint64_t)h->t0.tv_nsec - 1000000u,
                                         &r); /* now_us() counts from t0 plus 1 ms */
    if (!h->progress)
        log_msg(h, PREEMPT_LOG_ERROR, "progress file %s (PREEMPT_PROGRESS_FILE): %s", path, strerror(-r));
    free(path);
    return h->progress ? 0 : r;
}

/* Where the termination record and the metrics go (README "Observing
 * preemptions"): the configuration's, else the environment's, else for the
 * record Kubernetes' /dev/termination-log when it is there to write. "":
 * none. "{worker}" in either becomes the worker index. */
static int report_paths(struct preempt_handler *h)
{
    const char *t = h->cfg.termination_log, *m = h->cfg.metrics_path;
    char labels[256], *prev;
    int r;

    h->cfg.termination_log = h->cfg.metrics_path = NULL; /* the copies below, or none */
    h->notice_worker = -1;
    if (!t)
        t = getenv("PREEMPT_TERMINATION_LOG");
    if (!t && access("/dev/termination-log", W_OK) == 0)
        t = "/dev/termination-log";
    if (t && *t && !(h->term_path = worker_path(t, h->cfg.worker)))
        return -ENAMETOOLONG;
    h->cfg.termination_log = h->term_path;
    r = progress_open(h);
    if (r < 0)
        return r;
    if (!m)
        m = getenv("PREEMPT_METRICS_PATH");
    if (!m || !*m)
        return 0;
    if (!(h->metrics_path = worker_path(m, h->cfg.worker)))
        return -ENAMETOOLONG;
    (void)snprintf(labels, sizeof(labels), "job=\"%s\",worker=\"%u\"", h->cfg.job ? h->cfg.job : "", h->cfg.worker);
    prev = read_small(h->metrics_path);
    h->metrics = preempt_metrics_new_(labels, prev);
    free(prev);
    if (!h->metrics)
        return -ENOMEM;
    h->cfg.metrics_path = h->metrics_path;
    return 0;
}

static void on_peer_gone(unsigned worker, const char *why, void *arg)
{
    struct preempt_handler *h = arg;
    enum preempt_state s = preempt_sm_core_(h->wk.sm)->state;

    /* while this worker saves or has exited, peers leave as the preemption
     * ends (each after its last save), and no collective runs: not told */
    if (s == PREEMPT_STATE_SAVING || s == PREEMPT_STATE_FINAL_SAVE || s == PREEMPT_STATE_EXIT) {
        log_msg(h, PREEMPT_LOG_DEBUG, "worker %u: %s (this worker is saving: not told)", worker, why);
        return;
    }
    log_msg(h, PREEMPT_LOG_WARNING, "worker %u: %s", worker, why);
    h->in_cb++;
    h->peer_lost(h, worker, why, h->peer_lost_ud);
    h->in_cb--;
}

/* The members watch, once a job's coordinator runs and a callback is set. */
static int watch_peers(struct preempt_handler *h)
{
    int r;

    if (!h->peer_lost || !h->wk.coord)
        return 0;
    r = preempt_coord_watch_members_(h->wk.coord, on_peer_gone, h);
    if (r < 0)
        log_msg(h, PREEMPT_LOG_ERROR, "watching the job's member records failed: %s", strerror(-r));
    return r;
}

int preempt_handler_on_peer_lost(struct preempt_handler *h, preempt_peer_lost_cb cb, void *userdata)
{
    if (!handler_ok(h) || !cb)
        return -EINVAL;
    if (h->peer_lost)
        return -EALREADY;
    h->peer_lost = cb;
    h->peer_lost_ud = userdata;
    return watch_peers(h);
}

int preempt_handler_new_size(struct event_base *base, const struct preempt_config *cfg,
                             const struct preempt_callbacks *cb, void *userdata, struct preempt_handler **ret,
                             size_t cb_size)
{
    static const struct preempt_sm_ops ops = {
        .run_fx = run_fx, .on_record = on_record, .after_step = after_step, .schedule_drain = schedule_drain,
    };
    struct preempt_config_facts facts;
    struct preempt_handler *h;
    const char *problem;
    int r;

    if (!cfg || !cb || !ret || !preempt_callbacks_size_ok_(cb_size))
        return -EINVAL;
    h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->magic = HANDLER_MAGIC;
    h->sigfd = -1; /* so that freeing a half-built handler is safe */
    memcpy(&h->cb, cb, cb_size); /* a smaller (older) layout: the later callbacks stay NULL */
    h->ud = userdata;
    if (!preempt_config_size_ok_(cfg->size)) { /* read nothing more of it: its fields are elsewhere */
        log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: a struct preempt_config of %zu bytes; this library "
                "reads %zu (0.1's) or %zu (built against another version of preempt.h? fill it with "
                "preempt_config_init())", cfg->size, (size_t)PREEMPT_CONFIG_SIZE_0_1, sizeof(*cfg));
        r = -EINVAL;
        goto fail;
    }
    h->cfg = preempt_config_full_(cfg);
    cfg = &h->cfg; /* the strings are copied from it below */
    (void)clock_gettime(CLOCK_MONOTONIC, &h->t0);
    problem = preempt_config_problem_(cfg, cb);
    if (problem) {
        log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: %s", problem);
        r = -EINVAL;
        goto fail;
    }
    {
        struct { const char *from; char **to; const char **field; } strs[] = {
            { cfg->ckpt_dir, &h->ckpt_dir, &h->cfg.ckpt_dir },
            { cfg->trace_path, &h->trace_path, &h->cfg.trace_path },
            { cfg->etcd_endpoints, &h->etcd_endpoints, &h->cfg.etcd_endpoints },
            { cfg->job, &h->job, &h->cfg.job },
            { cfg->launch_id ? cfg->launch_id : preempt_launch_from_env_(), &h->launch_id, &h->cfg.launch_id },
            { cfg->etcd_user, &h->etcd_user, &h->cfg.etcd_user },
            { cfg->etcd_password, &h->etcd_password, &h->cfg.etcd_password },
            { cfg->etcd_ca, &h->etcd_ca, &h->cfg.etcd_ca },
            { cfg->etcd_cert, &h->etcd_cert, &h->cfg.etcd_cert },
            { cfg->etcd_key, &h->etcd_key, &h->cfg.etcd_key },
            { cfg->metadata_url, &h->metadata_url, &h->cfg.metadata_url },
        };

        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
            r = copy_str(strs[i].from, strs[i].to);
            if (r < 0)
                goto fail;
            *strs[i].field = *strs[i].to;
        }
    }
    if (!h->cfg.start_over && getenv("PREEMPT_START_OVER") && !strcmp(getenv("PREEMPT_START_OVER"), "1"))
        h->cfg.start_over = true;
    r = report_paths(h);
    if (r < 0)
        goto fail;
    h->base = base;
    if (!base) {
        h->base = event_base_new();
        h->own_base = true;
        if (!h->base) {
            r = -ENOMEM;
            goto fail;
        }
    }
    r = resolve_platform(h);
    if (r < 0)
        goto fail;
    facts = (struct preempt_config_facts){
        .grace_ms = h->cfg.grace_ms, .bound_ms = cfg->bound_ms, .agree_timeout_ms = cfg->agree_timeout_ms,
        .margin_ms = cfg->margin_ms, .plan = cfg->plan, .second = cfg->second,
        .workers = cfg->etcd_endpoints ? cfg->workers : 1,
    };
    h->wk.ops = &wk_ops;
    h->wk.arg = h;
    r = preempt_sm_new_(&facts, &ops, h, &h->wk.sm);
    if (r < 0)
        goto fail;
    r = open_signals(h);
    if (r < 0)
        goto fail;
    r = open_events(h);
    if (r < 0)
        goto fail;
    h->start = calloc(1, sizeof(*h->start));
    if (!h->start) {
        r = -ENOMEM;
        goto fail;
    }
    h->start_status = -EAGAIN;
    if (cfg->async_start) { /* start-up begins on the loop */
        h->ev_start = event_new(h->base, -1, 0, on_start_begin, h);
        if (!h->ev_start) {
            r = -ENOMEM;
            goto fail;
        }
        h->start->base = h->base;
        event_active(h->ev_start, EV_TIMEOUT, 1);
        *ret = h;
        return 0;
    }
    r = start_blocking(h);
    if (r < 0)
        goto fail;
    *ret = h;
    return 0;
fail:
    preempt_handler_free(h);
    return r;
}

/* ---- any event loop ------------------------------------------------------------------------ */

static int embed(struct preempt_handler *h)
{
    if (!handler_ok(h))
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    return h->embed ? 0 : preempt_embed_new_(h->base, &h->embed);
}

int preempt_handler_get_fd(struct preempt_handler *h, int *ret_fd)
{
    int r = ret_fd ? embed(h) : -EINVAL;

    if (r == 0)
        *ret_fd = preempt_embed_fd_(h->embed);
    return r;
}

int preempt_handler_get_timeout(struct preempt_handler *h, int64_t *ret_ms)
{
    int r = ret_ms ? embed(h) : -EINVAL;

    if (r == 0)
        *ret_ms = preempt_embed_timeout_(h->embed);
    return r;
}

/* Before the process goes, each bounded: the job's last writes, and the
 * cloud's approval of the events behind a committed save. */
static void flush_last(struct preempt_handler *h)
{
    if (preempt_coord_flush_(h->wk.coord, LAST_WRITES_MS) > 0)
        log_msg(h, PREEMPT_LOG_WARNING, "coordination: etcd did not take the last writes within %d ms",
                LAST_WRITES_MS);
    if (h->meta && preempt_run_until_(h->base, h->cfg.metadata_timeout_ms + 100, preempt_meta_idle_, h->meta) < 0)
        log_msg(h, PREEMPT_LOG_WARNING, "metadata: the approval of the scheduled events did not finish within "
                "%llu ms", (unsigned long long)h->cfg.metadata_timeout_ms);
}

int preempt_handler_process(struct preempt_handler *h)
{
    int r = embed(h);

    return r < 0 ? r : preempt_embed_process_(h->embed);
}

/* The end of preempt_handler_close(): done (a callback: only the queries
 * may be called from it), then the handler goes. */
static void closed(struct preempt_handler *h, preempt_close_cb done, void *userdata, int status)
{
    h->in_cb++;
    if (done)
        done(h, status, userdata);
    h->in_cb--;
    (void)preempt_handler_free(h);
}

/* preempt_handler_close(): runs done once the last writes are delivered or
 * their bound passed, then frees the handler (from this event's callback:
 * libevent allows freeing the running event; the base is the caller's). */
static void on_close_tick(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    static const struct timeval tick = { 0, 10000 };
    unsigned left = preempt_coord_pending_(h->wk.coord);

    (void)fd, (void)what;
    if (left > 0 && now_ms(h) < h->close_by_ms) {
        (void)event_add(h->ev_close, &tick);
        return;
    }
    if (left > 0)
        log_msg(h, PREEMPT_LOG_WARNING, "coordination: etcd did not take the last writes within %d ms",
                LAST_WRITES_MS);
    closed(h, h->close_cb, h->close_ud, left ? -ETIMEDOUT : 0);
}

int preempt_handler_close(struct preempt_handler *h, preempt_close_cb done, void *userdata)
{
    if (!handler_ok(h))
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->ev_close)
        return -EALREADY;
    preempt_coord_leave_(h->wk.coord);
    if (h->own_base) { /* the library's loop: delivered here, as preempt_handler_free() does */
        closed(h, done, userdata, preempt_coord_flush_(h->wk.coord, LAST_WRITES_MS) > 0 ? -ETIMEDOUT : 0);
        return 0;
    }
    h->ev_close = evtimer_new(h->base, on_close_tick, h);
    if (!h->ev_close)
        return -ENOMEM;
    h->close_cb = done;
    h->close_ud = userdata;
    h->close_by_ms = now_ms(h) + LAST_WRITES_MS;
    return event_add(h->ev_close, &(struct timeval){ 0, 0 }) < 0 ? -EIO : 0;
}

struct preempt_handler *preempt_handler_free(struct preempt_handler *h)
{
    if (!handler_ok(h))
        return NULL;
    preempt_coord_leave_(h->wk.coord); /* also when freed before an exit */
    if (h->own_base)
        flush_last(h);
    if (h->ev_close)
        event_free(h->ev_close);
    preempt_coord_free_(h->wk.coord);
    start_free(h); /* freed during an asynchronous start-up */
    if (h->ev_start)
        event_free(h->ev_start);
    preempt_meta_free_(h->meta);
    preempt_ckpt_abort_(h->writer);
    if (h->ev_sig)
        event_free(h->ev_sig);
    if (h->ev_timer)
        event_free(h->ev_timer);
    if (h->ev_poll)
        event_free(h->ev_poll);
    if (h->ev_periodic)
        event_free(h->ev_periodic);
    if (h->ev_drain)
        event_free(h->ev_drain);
    if (h->sigfd >= 0)
        (void)close(h->sigfd);
    preempt_embed_free_(h->embed);
    if (h->own_base && h->base)
        event_base_free(h->base);
    if (h->trace)
        (void)fclose(h->trace);
    preempt_ckpt_close_(h->store);
    preempt_sm_free_(h->wk.sm);
    free(h->ckpt_dir);
    free(h->trace_path);
    free(h->term_path);
    preempt_progress_close_(h->progress);
    free(h->metrics_path);
    preempt_metrics_free_(h->metrics);
    free(h->etcd_endpoints);
    free(h->job);
    free(h->launch_id);
    free(h->etcd_user);
    if (h->etcd_password)
        explicit_bzero(h->etcd_password, strlen(h->etcd_password));
    free(h->etcd_password);
    free(h->etcd_ca);
    free(h->etcd_cert);
    free(h->etcd_key);
    free(h->metadata_url);
    h->magic = 0;
    free(h);
    return NULL;
}

struct event_base *preempt_handler_get_base(const struct preempt_handler *h)
{
    return handler_ok(h) ? h->base : NULL;
}

/* ---- step boundaries ------------------------------------------------------------------ */

int preempt_handler_get_action(const struct preempt_handler *h, enum preempt_action *ret_action)
{
    if (!handler_ok(h) || !ret_action)
        return -EINVAL;
    *ret_action = preempt_worker_action_(&h->wk);
    return 0;
}

static enum preempt_action action_of(const struct preempt_handler *h)
{
    return preempt_worker_action_(&h->wk);
}

/* Counts one completed step: measures it, and tells the machine while a
 * notice is known (in idle the machine has nothing to do with steps, so
 * the common path posts nothing and makes no system call). */
static uint64_t count_step(struct preempt_handler *h)
{
    uint64_t t = now_us(h), run;

    preempt_worker_step_(&h->wk, h->step_t0_us ? (t > h->step_t0_us ? t - h->step_t0_us : 1) : 0);
    h->step_t0_us = 0;
    run = preempt_sm_facts_(h->wk.sm)->run;
    preempt_progress_boundary_(h->progress, run, t); /* plain stores: no system call */
    if (h->cfg.save_every_steps && run % h->cfg.save_every_steps == 0)
        (void)request_checkpoint(h, "save_every_steps");
    preempt_worker_reached_(&h->wk);
    return t;
}

int preempt_step_end(struct preempt_handler *h, enum preempt_action *ret_action)
{
    enum preempt_action a;
    uint64_t t;

    if (!handler_ok(h) || !ret_action)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->start_status < 0)
        return h->start_status;
    if (exited(h)) {
        *ret_action = PREEMPT_ACTION_EXIT;
        return 0;
    }
    t = count_step(h);
    a = action_of(h);
    if (a == PREEMPT_ACTION_CONTINUE)
        h->step_t0_us = t; /* the next step starts now: one clock read per step */
    *ret_action = a;
    return 0;
}

int preempt_training_done(struct preempt_handler *h)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_TRAINING_DONE };

    if (!handler_ok(h))
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->start_status < 0)
        return h->start_status;
    if (exited(h))
        return 0;
    ev.u.training_done.step = preempt_sm_facts_(h->wk.sm)->run;
    post(h, ev);
    return 0;
}

int preempt_request_checkpoint(struct preempt_handler *h)
{
    if (!handler_ok(h))
        return -EINVAL;
    return request_checkpoint(h, "requested");
}

int preempt_notify(struct preempt_handler *h, uint64_t deadline_in_ms)
{
    if (!handler_ok(h))
        return -EINVAL;
    if (deadline_in_ms > MAX_GRACE_MS)
        return -EINVAL;
    if (h->start_status < 0)
        return h->start_status;
    log_msg(h, PREEMPT_LOG_INFO, "notice: from the application (deadline in %llu ms)",
            (unsigned long long)deadline_in_ms);
    post_notice(h, PREEMPT_SOURCE_INJECT, deadline_in_ms);
    return 0;
}

/* ---- saves and restores -------------------------------------------------------------- */

int preempt_save_begin(struct preempt_handler *h, uint64_t *ret_step)
{
    int r = 0;

    if (!handler_ok(h) || !ret_step)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (!h->wk.save_asked)
        return -EALREADY;
    h->wk.save_asked = false;
    h->save_running = true;
    preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_SAVING);
    h->save_t0_us = now_us(h);
    *ret_step = h->wk.save_step;
    if (h->store) {
        char key[PREEMPT_KEY_MAX];
        bool pend = h->wk.coord && preempt_coord_decision_key_(h->wk.coord, preempt_sm_core_(h->wk.sm)->round, key,
                                                            sizeof(key)) == 0;

        r = preempt_ckpt_begin_(h->store, h->wk.save_step, preempt_sm_facts_(h->wk.sm)->run, h->generation,
                                pend ? key : NULL, &h->writer);
        if (r < 0)
            log_msg(h, PREEMPT_LOG_ERROR, "cannot start the checkpoint at step %llu: %s",
                    (unsigned long long)h->wk.save_step, strerror(-r));
    }
    return r;
}

/* Whether a blob may be saved now (args_ok: the call's other arguments
 * are fine): 0, or the call's error. */
static int blob_check(const struct preempt_handler *h, bool args_ok)
{
    if (!handler_ok(h) || !args_ok)
        return -EINVAL;
    if (!h->store)
        return -ENOTSUP;
    return h->save_running && h->writer ? 0 : -EALREADY;
}

int preempt_save_blob(struct preempt_handler *h, const char *name, const void *data, size_t len)
{
    int r = blob_check(h, name && (data || !len));

    return r < 0 ? r : preempt_ckpt_write_blob_(h->writer, name, data, len);
}

int preempt_save_blob_open(struct preempt_handler *h, const char *name, int *ret_fd)
{
    int r = blob_check(h, name && ret_fd);

    return r < 0 ? r : preempt_ckpt_open_blob_(h->writer, name, ret_fd);
}

int preempt_save_done(struct preempt_handler *h, int status)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_SAVE_DONE };
    struct preempt_ckpt_info info;
    uint64_t ms;
    int r = 0;

    if (!handler_ok(h) || status > 0)
        return -EINVAL;
    if (!h->save_running)
        return -EALREADY;
    h->save_running = false;
    if (h->writer && status == 0) {
        r = preempt_ckpt_commit_(h->writer, &info); /* consumes the writer */
        status = r;
    } else {
        preempt_ckpt_abort_(h->writer);
        if (status == 0 && h->store)
            status = -EIO; /* the writer could not be opened */
    }
    h->writer = NULL;
    ms = (now_us(h) - h->save_t0_us + 999) / 1000;
    h->last_save_ms = ms;
    preempt_worker_save_took_(&h->wk, ms);
    if (status == 0) {
        uint64_t bytes = h->store ? info.bytes : 0; /* without a directory the save is the caller's own */

        h->saves++;
        h->bytes_saved += bytes;
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_SAVED_BYTES, "", (double)bytes);
        preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_SAVE, (double)ms / 1000.0);
        if (!h->wk.coord) /* local mode: the local commit is the decision */
            committed(h, h->wk.save_step);
        log_msg(h, PREEMPT_LOG_INFO, "checkpoint at step %llu committed in %llu ms%s%s",
                (unsigned long long)h->wk.save_step, (unsigned long long)ms, h->store ? ": " : "",
                h->store ? info.path : "");
    } else {
        log_msg(h, PREEMPT_LOG_ERROR, "save at step %llu failed: %s", (unsigned long long)h->wk.save_step,
                strerror(-status));
    }
    h->step_t0_us = now_us(h);
    preempt_progress_boundary_(h->progress, preempt_sm_facts_(h->wk.sm)->run, h->step_t0_us);
    preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_TRAINING);
    ev.u.save_done.status = status;
    post(h, ev);
    return r;
}

int preempt_restore_blob(struct preempt_handler *h, const char *name, void **ret_data, size_t *ret_len)
{
    if (!handler_ok(h) || !name || !ret_data || !ret_len)
        return -EINVAL;
    if (!h->restoring)
        return -EALREADY;
    return preempt_ckpt_read_blob_(h->store, h->restoring, name, ret_data, ret_len);
}

int preempt_restore_blob_open(struct preempt_handler *h, const char *name, int *ret_fd)
{
    if (!handler_ok(h) || !name || !ret_fd)
        return -EINVAL;
    if (!h->restoring)
        return -EALREADY;
    return preempt_ckpt_open_read_blob_(h->store, h->restoring, name, ret_fd);
}

/* ---- synchronous use ---------------------------------------------------------------------- */

static int sync_save(struct preempt_handler *h)
{
    uint64_t step;
    int r = preempt_save_begin(h, &step);

    if (r == 0) {
        h->in_cb++; /* only preempt_save_blob() and the queries from here */
        r = h->cb.save(h, step, h->ud);
        h->in_cb--;
        if (r > 0)
            r = -EINVAL; /* documented as 0 or a negative errno */
    }
    return preempt_save_done(h, r);
}

/* Runs the loop and acts until training may go on (0) or the handler exited
 * (1). Before training goes on and before a save, the writes this boundary
 * caused (a claim with its proposed step, a raise, a shard) are delivered: the
 * trainer may block next in a collective, or the save may outlast a lease,
 * while a peer needs them (at most SYNC_FLUSH_MS before each, so that an
 * unreachable etcd costs a step no more). */
static int sync_boundary(struct preempt_handler *h)
{
    uint64_t flush_end = 0, t;

    (void)event_base_loop(h->base, EVLOOP_NONBLOCK); /* notices that came during the step */
    for (;;) {
        enum preempt_action a = action_of(h);

        /* Before the trainer's step or a save, both of which block outside the loop,
         * every write this boundary caused goes on the wire: a peer may be waiting
         * for it (the proposed step, a raise, a shard) while this worker is busy. */
        if ((a == PREEMPT_ACTION_CONTINUE || a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT) &&
            preempt_coord_pending_(h->wk.coord) > 0) {
            t = now_us(h) / 1000;
            if (!flush_end)
                flush_end = t + SYNC_FLUSH_MS;
            if (t < flush_end) {
                (void)preempt_coord_flush_(h->wk.coord, flush_end - t);
                continue; /* what the flush delivered may change the action */
            }
        }
        switch (a) {
        case PREEMPT_ACTION_CONTINUE:
            h->step_t0_us = now_us(h);
            return 0;
        case PREEMPT_ACTION_WAIT: /* bounded: these states arm the machine's timer */
            if (event_base_loop(h->base, EVLOOP_ONCE) != 0) { /* 1: nothing armed, a bug */
                log_msg(h, PREEMPT_LOG_ERROR, "bug: waiting in %s with nothing armed",
                        preempt_state_to_string(state_of(h)));
                return -EIO;
            }
            break;
        case PREEMPT_ACTION_SAVE:
        case PREEMPT_ACTION_SAVE_EXIT:
            (void)sync_save(h); /* a failure is the machine's to judge */
            flush_end = 0;      /* the shard's report gets its own bound */
            break;
        case PREEMPT_ACTION_EXIT:
            if (!h->cb.on_exit && h->wk.exit_reason != PREEMPT_EXIT_DONE) {
                if (h->trace)
                    (void)fflush(h->trace);
                flush_last(h); /* peers must learn of an error */
                exit(h->exit_code); /* the documented default: TF's behaviour */
            }
            return 1;
        }
    }
}

static int sync_check(const struct preempt_handler *h)
{
    if (!handler_ok(h) || !h->own_base || !h->cb.save)
        return -EINVAL;
    return h->in_cb ? -EBUSY : h->start_status;
}

/* sync_boundary()'s 0 (go on) or 1 (exited) as *ret_exited. */
static int boundary_out(int r, bool *ret_exited)
{
    if (r < 0)
        return r;
    *ret_exited = r == 1;
    return 0;
}

int preempt_save_checkpoint_if_preempted(struct preempt_handler *h, bool *ret_exited)
{
    int r = ret_exited ? sync_check(h) : -EINVAL;

    if (r < 0)
        return r;
    if (!exited(h))
        (void)count_step(h);
    return boundary_out(sync_boundary(h), ret_exited);
}

int preempt_run(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg, bool *ret_exited)
{
    int r = ret_exited ? sync_check(h) : -EINVAL;

    if (r < 0 || !step_fn)
        return r < 0 ? r : -EINVAL;
    if (exited(h))
        return boundary_out(sync_boundary(h), ret_exited);
    r = step_fn(arg);
    if (r != 0) {
        (void)preempt_fail(h, r > 0 && r <= 255 ? r : 1, NULL);
        return boundary_out(sync_boundary(h), ret_exited);
    }
    (void)count_step(h);
    return boundary_out(sync_boundary(h), ret_exited);
}

/* ---- queries ------------------------------------------------------------------------------- */

int preempt_handler_get_status_size(const struct preempt_handler *h, struct preempt_status *ret, size_t size)
{
    const struct preempt_core *c;
    struct preempt_status st;

    if (!handler_ok(h) || !ret || !preempt_status_size_ok_(size))
        return -EINVAL;
    c = preempt_sm_core_(h->wk.sm);
    st = (struct preempt_status){
        .state = c->state,
        .run = preempt_sm_facts_(h->wk.sm)->run,
        .restored_step = h->restored_step,
        .start_status = h->start_status,
        .committed_step = h->committed_step,
        .restore_fallbacks = h->fallbacks,
        .refused_step = h->refused_step,
        .save_step = c->save_step,
        .deadline_in_ms = -1,
        .step_us = h->wk.step_ewma_us,
        .save_ms = h->last_save_ms,
        .saves = h->saves,
        .incarnation = h->joined.incarnation,
        .platform = h->platform,
        .notice_source = h->noticed_any ? preempt_source_to_string_(h->last_source) : NULL,
        .kill_delay_ms = h->kill_delay_ms,
        .grace_ms = h->cfg.grace_ms,
        .exit_code = h->cfg.exit_code,
    };
    if (c->deadline_ms) {
        uint64_t now = now_ms(h);

        st.deadline_in_ms = c->deadline_ms > now ? (int64_t)(c->deadline_ms - now) : 0;
    }
    memcpy(ret, &st, size); /* an older, smaller layout gets the fields it has */
    return 0;
}

int preempt_handler_get_exit_code(const struct preempt_handler *h, int *ret_code)
{
    if (!handler_ok(h) || !ret_code)
        return -EINVAL;
    if (!exited(h))
        return -EAGAIN;
    *ret_code = h->exit_code;
    return 0;
}

int preempt_fail(struct preempt_handler *h, int code, const char *message)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_APP_ERROR };
    unsigned long long step;

    if (!handler_ok(h) || code < 1 || code > 255)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (exited(h))
        return 0;
    step = (unsigned long long)preempt_sm_facts_(h->wk.sm)->run + 1;
    if (message)
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: %s", h->cfg.worker, message);
    else
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: step %llu failed with code %d", h->cfg.worker,
                       step, code);
    log_msg(h, PREEMPT_LOG_ERROR, "application error: %s", h->err_msg);
    ev.u.app_error.code = code;
    post(h, ev);
    return 0;
}

int preempt_request_restart(struct preempt_handler *h, const char *why)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_RESTART_REQUESTED };

    if (!handler_ok(h))
        return -EINVAL;
    if (h->restoring || (h->in_cb && h->save_running)) /* inside the save or restore callback */
        return -EBUSY;
    if (exited(h))
        return 0;
    (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u asked for a restart after step %llu: %s",
                   h->cfg.worker, (unsigned long long)preempt_sm_facts_(h->wk.sm)->run, why ? why : "a peer was lost");
    log_msg(h, PREEMPT_LOG_WARNING, "%s", h->err_msg);
    ev.u.restart_requested.code = -ENOLINK;
    post(h, ev);
    return 0;
}

const char *preempt_handler_get_error_message(const struct preempt_handler *h)
{
    return handler_ok(h) && h->err_msg[0] ? h->err_msg : NULL;
}

/* 0.1's way to learn when a borrowed base's last writes were delivered
 * (preempt_handler_close() replaced it): kept for programs built against
 * 0.1, no longer in the header. */
PREEMPT_EXPORT unsigned preempt_pending_writes(const struct preempt_handler *h);
unsigned preempt_pending_writes(const struct preempt_handler *h)
{
    return handler_ok(h) ? preempt_coord_pending_(h->wk.coord) : 0;
}
