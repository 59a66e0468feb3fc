/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler.c: the public handler (include/libpreempt/preempt.h), the shell around
 * the machine for one worker: signalfd, timers and the deferred drain on a
 * libevent base, the checkpoint store, the step and save measurements the
 * planner needs, the trace file and the user's callbacks. No threads.
 *
 * Everything that happens becomes an event posted to the machine
 * (lib/job/machine.c); the machine's effects come back here through hd_run_fx().
 * Times given to the machine are milliseconds since the handler was made. */
#define _GNU_SOURCE /* pipe2 */
#include "handler-internal.h"

/* ---- small helpers ----------------------------------------------------------- */

bool hd_handler_ok(const struct preempt_handler *h)
{
    return h && h->magic == HANDLER_MAGIC;
}

uint64_t hd_now_us(const struct preempt_handler *h)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)(ts.tv_sec - h->t0.tv_sec) * 1000000u + (uint64_t)((ts.tv_nsec - h->t0.tv_nsec) / 1000) + 1000u;
}

/* Milliseconds since creation, starting at 1 so that 0 keeps meaning "unknown". */
uint64_t hd_now_ms(const struct preempt_handler *h)
{
    return hd_now_us(h) / 1000u;
}

void hd_log_msg(struct preempt_handler *h, enum preempt_log_level level, const char *fmt, ...)
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
enum preempt_log_level hd_level_of(int level)
{
    static const enum preempt_log_level map[] = { PREEMPT_LOG_DEBUG, PREEMPT_LOG_INFO, PREEMPT_LOG_WARNING,
                                                  PREEMPT_LOG_ERROR };

    return map[level < 0 ? 0 : level > 3 ? 3 : level];
}

void hd_ckpt_log(int level, const char *msg, void *arg)
{
    hd_log_msg(arg, hd_level_of(level), "checkpoint: %s", msg);
}

void hd_post(struct preempt_handler *h, struct preempt_event ev)
{
    preempt_worker_post_(&h->wk, ev);
}

enum preempt_state hd_state_of(const struct preempt_handler *h)
{
    return preempt_sm_core_(h->wk.sm)->state;
}

bool hd_exited(const struct preempt_handler *h)
{
    return hd_state_of(h) == PREEMPT_STATE_EXIT;
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
    if (hd_exited(h) || !preempt_worker_may_checkpoint_(&h->wk))
        return -EALREADY;
    hd_log_msg(h, PREEMPT_LOG_INFO, "a periodic checkpoint (%s)", why);
    h->ckpt_kind = strcmp(why, "requested") ? "periodic" : "requested";
    post_notice_kind(h, PREEMPT_SOURCE_PERIODIC, 0, true);
    return 0;
}

/* save_every_ms: the period (re)starts now. */
void hd_periodic_restart(struct preempt_handler *h)
{
    struct timeval tv = preempt_tv_ms_(h->cfg.save_every_ms);

    if (h->ev_periodic && !hd_exited(h))
        (void)evtimer_add(h->ev_periodic, &tv);
}

void hd_on_periodic(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    (void)request_checkpoint(h, "save_every_ms");
    hd_periodic_restart(h); /* again after a full period, unless a commit restarts it sooner */
}

/* A step is committed (by the whole job): the periodic clock restarts. */
void hd_committed(struct preempt_handler *h, uint64_t step)
{
    if (step > h->committed_step)
        h->committed_step = step;
    hd_periodic_restart(h);
}

/* The cloud source reports a notice, an advisory notice or a withdrawal. */
void hd_on_meta_notice(enum preempt_meta_kind kind, enum preempt_source src, uint64_t deadline_wall_ms,
                       const char *what, void *arg)
{
    struct preempt_handler *h = arg;
    uint64_t wall = preempt_clock_ms_(CLOCK_REALTIME), in_ms = 0;

    if (deadline_wall_ms)
        in_ms = deadline_wall_ms > wall ? deadline_wall_ms - wall : 1; /* passed: due at once */
    switch (kind) {
    case PREEMPT_META_NOTICE:
        hd_log_msg(h, PREEMPT_LOG_INFO, "notice: %s metadata: %s (deadline %s%llu ms)", preempt_source_to_string_(src),
                   what, deadline_wall_ms ? "in " : "unknown, ", (unsigned long long)in_ms);
        post_notice(h, src, in_ms);
        return;
    case PREEMPT_META_ADVISORY:
        if (!h->cfg.advisory_checkpoint || !preempt_worker_may_checkpoint_(&h->wk)) {
            hd_log_msg(h, PREEMPT_LOG_INFO, "advisory notice: %s metadata: %s (no checkpoint: %s)",
                       preempt_source_to_string_(src), what,
                       !h->cfg.advisory_checkpoint ? "advisory_checkpoint is off" : "a preemption is under way");
            return;
        }
        hd_log_msg(h, PREEMPT_LOG_INFO, "advisory notice: %s metadata: %s; an opportunistic checkpoint",
                   preempt_source_to_string_(src), what);
        post_notice_kind(h, src, 0, true);
        return;
    case PREEMPT_META_WITHDRAWN: {
        bool others = preempt_worker_withdrawn_(&h->wk, src);

        hd_log_msg(h, PREEMPT_LOG_INFO, "notice withdrawn: %s metadata: %s%s", preempt_source_to_string_(src), what,
                   others ? " (other notices stand)" : "");
        return;
    }
    }
}

void hd_meta_log(int level, const char *msg, void *arg)
{
    hd_log_msg(arg, hd_level_of(level), "%s", msg);
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
    uint64_t now = hd_now_ms(h), in = at_ms > now ? at_ms - now : 0;
    struct timeval tv = preempt_tv_ms_(in);

    h->timer_gen = preempt_sm_core_(h->wk.sm)->timer_gen;
    h->timer_at_ms = at_ms;
    if (preempt_fault_(PREEMPT_FAULT_TIMER) < 0 || evtimer_add(h->ev_timer, &tv) < 0) {
        /* Every timer of the machine bounds a wait: one that cannot be
         * armed fires now, so the wait ends early rather than never. */
        hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot arm the machine's timer; it fires now");
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
void hd_settle(struct preempt_handler *h, uint64_t step, int decision)
{
    unsigned long long st = (unsigned long long)step;
    int r;

    if (decision > 0)
        hd_committed(h, step);
    if (decision < 0 && step == h->wk.save_step) /* a persist there is for nothing (a raise, an abort) */
        hd_drop_persist(h, "its round moved on without it: a raise, a supersede or an abort");
    if (!h->store)
        return;
    r = decision > 0 ? preempt_ckpt_keep_(h->store, step) : decision < 0 ? preempt_ckpt_discard_(h->store, step) : 0;
    if (r < 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "the job %s step %llu, but applying that to this worker's copy failed: %s",
                   decision > 0 ? "committed" : "did not commit", st, strerror(-r));
    else if (decision > 0)
        hd_log_msg(h, PREEMPT_LOG_DEBUG, "the job committed step %llu; this worker's copy is restorable", st);
    else if (decision < 0 && r > 0)
        hd_log_msg(h, PREEMPT_LOG_INFO, "the job did not commit step %llu; this worker's copy is removed", st);
    else if (decision == 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING,
                   "checkpoint at step %llu stays pending: its decision record is not in this etcd; not restored", st);
}

/* ---- what the worker's rules ask of the handler (worker-internal.h) ---- */

static uint64_t wk_now_ms(void *arg)
{
    return hd_now_ms(arg);
}

static void wk_arm_timer(void *arg, uint64_t at_ms)
{
    arm_timer(arg, at_ms);
}

static void wk_disarm_timer(void *arg)
{
    struct preempt_handler *h = arg;

    h->timer_at_ms = UINT64_MAX;
    (void)evtimer_del(h->ev_timer);
}

static void wk_begin_save(void *arg, uint64_t step)
{
    hd_log_msg(arg, PREEMPT_LOG_INFO, "save at step %llu", (unsigned long long)step);
}

static void wk_settle(void *arg, uint64_t step, int decision)
{
    hd_settle(arg, step, decision);
}


static void wk_exit(void *arg, enum preempt_exit reason)
{
    struct preempt_handler *h = arg;
    const struct preempt_core *core = preempt_sm_core_(h->wk.sm);

    hd_rejoin_stop(h, true); /* a rejoin cut short (a notice came meanwhile): its lease goes back */
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
        hd_log_msg(h, PREEMPT_LOG_WARNING,
                   "the job's decision on the checkpoint at step %llu did not arrive in time; this worker's copy "
                   "stays pending, and the restart follows the job's decision record",
                   (unsigned long long)core->save_step);
    hd_log_msg(h, PREEMPT_LOG_INFO, "exit: %s, code %d", preempt_exit_to_string_(reason), h->exit_code);
    hd_report_exit(h, reason);
}

static const char *wk_fx_text(void *arg, const struct preempt_fx *fx)
{
    return fx_text(arg, fx);
}

static void wk_dropped(void *arg, enum preempt_event_kind kind)
{
    hd_log_msg(arg, PREEMPT_LOG_ERROR, "event queue full: %s dropped", preempt_event_to_string_(kind));
}

static uint64_t wk_persist_left_ms(void *arg)
{
    return hd_persist_left_ms(arg);
}

static void wk_bug(void *arg, const struct preempt_fx *fx)
{
    hd_log_msg(arg, PREEMPT_LOG_ERROR, "bug: effect %s not handled", preempt_fx_to_string_(fx->kind));
}

static void wk_rejoin(void *arg, uint64_t step)
{
    hd_rejoin(arg, step);
}

static void wk_resume(void *arg, uint64_t step)
{
    hd_resume(arg, step);
}

const struct preempt_worker_ops hd_wk_ops = {
    .now_ms = wk_now_ms, .arm_timer = wk_arm_timer, .disarm_timer = wk_disarm_timer, .begin_save = wk_begin_save,
    .settle = wk_settle, .exit = wk_exit, .rejoin = wk_rejoin, .resume = wk_resume, .fx_text = wk_fx_text,
    .dropped = wk_dropped, .bug = wk_bug, .persist_left_ms = wk_persist_left_ms,
};

void hd_run_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg)
{
    preempt_worker_run_fx_(sm, fx, &((struct preempt_handler *)arg)->wk);
}

/* Writes one line of the trace (n: its formatting's result). */
static void trace_line(struct preempt_handler *h, const char *line, int n)
{
    if (n < 0 || (size_t)n >= PREEMPT_TRACE_LINE_MAX || fprintf(h->trace, "%s\n", line) < 0 || fflush(h->trace) != 0) {
        hd_log_msg(h, PREEMPT_LOG_WARNING, "trace file %s: write failed; tracing stops", h->trace_path);
        (void)fclose(h->trace);
        h->trace = NULL;
    }
}

void hd_trace_text(const char *line, int n, void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace)
        trace_line(h, line, n);
}

/* The coordinator's inputs and outputs: traced (lib/job/coord-trace.c), so
 * that a replay runs it again; the job lines as every worker's trace holds
 * them (lib/trace/trace-job.c). */
void hd_coord_in(const struct preempt_coord_in *in, unsigned depth, void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace && !h->coord_making)
        preempt_job_trace_in_(&h->jt, in, depth);
}

void hd_coord_out(const struct preempt_coord_out *out, unsigned depth, void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace && !h->coord_making)
        preempt_job_trace_out_(&h->jt, out, depth);
}

void hd_trace_write(struct preempt_handler *h, const struct preempt_trace_rec *rec)
{
    char line[PREEMPT_TRACE_LINE_MAX];
    int n = preempt_trace_format_(line, sizeof(line), rec, h->have_last_rec ? &h->last_rec : NULL);

    h->last_rec = *rec;
    h->have_last_rec = true;
    trace_line(h, line, n);
}

/* The job's view took an input: traced (trace-internal.h), for a replay. */
void hd_coord_view(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                   void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace)
        preempt_job_trace_view_(&h->jt, v, in, ev);
}

/* An answer the coordinator acts on came: traced with what it says, for a
 * replay (a read of the memberships at the read's time, the lost
 * decision's clock). */
void hd_coord_answer(const struct preempt_view *v, const struct preempt_job_answer *a, void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace)
        preempt_job_trace_answer_(&h->jt, v, a);
}

/* A transition of one of the job's declared machines (start-up's, the
 * coordinator's): its "decl" line, written, or kept while start-up runs
 * before the trace opens (start_finish() writes them first). */
void hd_decl_line(const char *line, int n, void *arg)
{
    struct preempt_handler *h = arg;

    if (h->trace)
        trace_line(h, line, n);
    else if (n > 0 && (size_t)n < PREEMPT_TRACE_LINE_MAX)
        hd_start_hold(h, line);
}

/* ---- loop callbacks --------------------------------------------------------------- */

void hd_on_drain(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    preempt_sm_drain_(h->wk.sm);
}

void hd_on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_TIMER };

    (void)fd;
    (void)what;
    h->timer_at_ms = UINT64_MAX; /* fired: none armed (what the event re-arms sets it again) */
    ev.u.timer.gen = h->timer_gen;
    hd_post(h, ev);
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

void hd_on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;
    struct signalfd_siginfo si;
    ssize_t n;

    (void)what;
    while ((n = read_signal(fd, &si)) == (ssize_t)sizeof(si)) {
        hd_log_msg(h, PREEMPT_LOG_INFO, "notice: signal %u (%s) from pid %u", si.ssi_signo, strsignal((int)si.ssi_signo),
                   si.ssi_pid);
        post_notice(h, PREEMPT_SOURCE_SIGNAL, signal_lead(h));
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        /* The descriptor is readable, so one of the watched signals is
         * pending: it is a notice all the same. The watch stops, as a
         * descriptor that keeps failing would make the loop spin. */
        hd_log_msg(h, PREEMPT_LOG_ERROR, "signalfd read: %s; taken as a notice, signals are no longer watched",
                   strerror(errno));
        (void)event_del(h->ev_sig);
        post_notice(h, PREEMPT_SOURCE_SIGNAL, signal_lead(h));
    }
}

void hd_on_poll(evutil_socket_t fd, short what, void *arg)
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
        hd_log_msg(h, PREEMPT_LOG_WARNING, "poll function failed: %s", strerror(-r));
    } else if (r > 0 && !h->poll_noticed) { /* a notice is an edge, not a level */
        h->poll_noticed = true;
        hd_log_msg(h, PREEMPT_LOG_INFO, "notice: poll function (deadline in %llu ms)", (unsigned long long)in_ms);
        post_notice(h, PREEMPT_SOURCE_POLL, in_ms);
    }
}

/* ---- any event loop ------------------------------------------------------------------------ */

static int embed(struct preempt_handler *h)
{
    if (!hd_handler_ok(h))
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
void hd_flush_last(struct preempt_handler *h)
{
    if (h->rejoining && preempt_run_until_(h->base, 1500, hd_rejoin_over, h) < 0) /* the revoke: bounded by 1 s */
        hd_log_msg(h, PREEMPT_LOG_WARNING, "in place: the rejoin given up did not end within 1500 ms");
    if (preempt_coord_flush_(h->wk.coord, PREEMPT_LAST_WRITES_MS) > 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "coordination: etcd did not take the last writes within %d ms",
                   PREEMPT_LAST_WRITES_MS);
    if (h->meta && preempt_run_until_(h->base, h->cfg.metadata_timeout_ms + 100, preempt_meta_idle_, h->meta) < 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "metadata: the approval of the scheduled events did not finish within "
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
    unsigned left = preempt_coord_pending_(h->wk.coord) + (h->rejoining ? 1 : 0); /* a rejoin given up ends too */

    (void)fd, (void)what;
    if (left > 0 && hd_now_ms(h) < h->close_by_ms) {
        (void)event_add(h->ev_close, &tick);
        return;
    }
    if (left > 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "coordination: etcd did not take the last writes within %d ms",
                   PREEMPT_LAST_WRITES_MS);
    closed(h, h->close_cb, h->close_ud, left ? -ETIMEDOUT : 0);
}

int preempt_handler_close(struct preempt_handler *h, preempt_close_cb done, void *userdata)
{
    if (!hd_handler_ok(h))
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->ev_close)
        return -EALREADY;
    preempt_coord_leave_(h->wk.coord);
    hd_rejoin_stop(h, true); /* a rejoin under way is given up: its lease goes back before done */
    if (h->own_base) { /* the library's loop: delivered here, as preempt_handler_free() does */
        closed(h, done, userdata, preempt_coord_flush_(h->wk.coord, PREEMPT_LAST_WRITES_MS) > 0 ? -ETIMEDOUT : 0);
        return 0;
    }
    h->ev_close = evtimer_new(h->base, on_close_tick, h);
    if (!h->ev_close)
        return -ENOMEM;
    h->close_cb = done;
    h->close_ud = userdata;
    h->close_by_ms = hd_now_ms(h) + PREEMPT_LAST_WRITES_MS;
    return event_add(h->ev_close, &(struct timeval){ 0, 0 }) < 0 ? -EIO : 0;
}

struct preempt_handler *preempt_handler_free(struct preempt_handler *h)
{
    if (!hd_handler_ok(h))
        return NULL;
    preempt_coord_leave_(h->wk.coord); /* also when freed before an exit */
    hd_rejoin_stop(h, true);           /* and a rejoin under way: its lease goes back (own base: below) */
    if (h->own_base)
        hd_flush_last(h);
    if (h->ev_close)
        event_free(h->ev_close);
    preempt_coord_free_(h->wk.coord);
    hd_rejoin_stop(h, false); /* freed while rejoining in place */
    if (h->ev_rejoin)
        event_free(h->ev_rejoin);
    hd_start_free(h); /* freed during an asynchronous start-up */
    if (h->ev_start)
        event_free(h->ev_start);
    preempt_meta_free_(h->meta);
    hd_drop_persist(h, "the handler is freed");
    preempt_persist_free_(h->persist);
    preempt_ckpt_abort_(h->writer);
    for (unsigned i = 0; i < h->n_snaps; i++) /* a save dropped unfinished: its snapshots go back */
        h->snaps[i].release(h->snaps[i].data, h->snaps[i].ud);
    h->n_snaps = 0;
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
    return hd_handler_ok(h) ? h->base : NULL;
}

/* ---- step boundaries ------------------------------------------------------------------ */

int preempt_handler_get_action(const struct preempt_handler *h, enum preempt_action *ret_action)
{
    if (!hd_handler_ok(h) || !ret_action)
        return -EINVAL;
    *ret_action = preempt_worker_action_(&h->wk);
    return 0;
}

enum preempt_action hd_action_of(const struct preempt_handler *h)
{
    return preempt_worker_action_(&h->wk);
}

/* Counts one completed step: measures it, and tells the machine while a
 * notice is known (in idle the machine has nothing to do with steps, so
 * the common path posts nothing and makes no system call). */
uint64_t hd_count_step(struct preempt_handler *h)
{
    uint64_t t = hd_now_us(h), run;

    preempt_worker_step_(&h->wk, h->step_t0_us ? (t > h->step_t0_us ? t - h->step_t0_us : 1) : 0);
    h->step_t0_us = 0;
    run = preempt_sm_facts_(h->wk.sm)->run;
    preempt_progress_boundary_(h->progress, run, t); /* plain stores: no system call */
    /* The machine hears its events in time order: a timer already due when
     * the boundary comes (the step ran outside the loop, or the loop would
     * dispatch the boundary first) fires before it, or a save would begin
     * after the time the machine gave it had run out. */
    if (h->timer_at_ms <= t / 1000u && evtimer_pending(h->ev_timer, NULL)) { /* none armed: UINT64_MAX */
        (void)evtimer_del(h->ev_timer);
        hd_on_timer(-1, EV_TIMEOUT, h);
    }
    if (h->cfg.save_every_steps &&
        preempt_plan_periodic_due_(run, h->cfg.save_every_steps,
                                   h->committed_step > h->periodic_run ? h->committed_step : h->periodic_run) &&
        request_checkpoint(h, "save_every_steps") == 0)
        h->periodic_run = run;
    preempt_worker_reached_(&h->wk);
    if (h->persist) /* made at the first two-phase save: without one, not even a call */
        preempt_persist_kick_(h->persist, h->wk.step_ewma_us); /* a checkpoint persisting: this boundary's work */
    return t;
}

int preempt_step_end(struct preempt_handler *h, enum preempt_action *ret_action)
{
    enum preempt_action a;
    uint64_t t;

    if (!hd_handler_ok(h) || !ret_action)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->start_status < 0)
        return h->start_status;
    if (hd_exited(h)) {
        *ret_action = PREEMPT_ACTION_EXIT;
        return 0;
    }
    t = hd_count_step(h);
    a = hd_action_of(h);
    if (a == PREEMPT_ACTION_CONTINUE)
        h->step_t0_us = t; /* the next step starts now: one clock read per step */
    *ret_action = a;
    return 0;
}

int preempt_training_done(struct preempt_handler *h)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_TRAINING_DONE };

    if (!hd_handler_ok(h))
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (h->start_status < 0)
        return h->start_status;
    if (hd_exited(h))
        return 0;
    ev.u.training_done.step = preempt_sm_facts_(h->wk.sm)->run;
    hd_post(h, ev);
    hd_sync_finish(h);
    return 0;
}

int preempt_request_checkpoint(struct preempt_handler *h)
{
    if (!hd_handler_ok(h))
        return -EINVAL;
    return request_checkpoint(h, "requested");
}

int preempt_notify(struct preempt_handler *h, uint64_t deadline_in_ms)
{
    if (!hd_handler_ok(h))
        return -EINVAL;
    if (deadline_in_ms > MAX_GRACE_MS)
        return -EINVAL;
    if (h->start_status < 0)
        return h->start_status;
    hd_log_msg(h, PREEMPT_LOG_INFO, "notice: from the application (deadline in %llu ms)",
               (unsigned long long)deadline_in_ms);
    post_notice(h, PREEMPT_SOURCE_INJECT, deadline_in_ms);
    return 0;
}

/* ---- queries ------------------------------------------------------------------------------- */

int preempt_handler_get_status_size(const struct preempt_handler *h, struct preempt_status *ret, size_t size)
{
    const struct preempt_core *c;
    struct preempt_status st;

    if (!hd_handler_ok(h) || !ret || !preempt_status_size_ok_(size))
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
        .stall_ms = h->last_stall_ms,
    };
    if (c->deadline_ms) {
        uint64_t now = hd_now_ms(h);

        st.deadline_in_ms = c->deadline_ms > now ? (int64_t)(c->deadline_ms - now) : 0;
    }
    memcpy(ret, &st, size); /* an older, smaller layout gets the fields it has */
    return 0;
}

int preempt_handler_get_exit_code(const struct preempt_handler *h, int *ret_code)
{
    if (!hd_handler_ok(h) || !ret_code)
        return -EINVAL;
    if (!hd_exited(h))
        return -EAGAIN;
    *ret_code = h->exit_code;
    return 0;
}

int preempt_fail(struct preempt_handler *h, int code, const char *message)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_APP_ERROR };
    unsigned long long step;

    if (!hd_handler_ok(h) || code < 1 || code > 255)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (hd_exited(h))
        return 0;
    step = (unsigned long long)preempt_sm_facts_(h->wk.sm)->run + 1;
    if (message)
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: %s", h->cfg.worker, message);
    else
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u: step %llu failed with code %d", h->cfg.worker,
                       step, code);
    hd_log_msg(h, PREEMPT_LOG_ERROR, "application error: %s", h->err_msg);
    ev.u.app_error.code = code;
    hd_post(h, ev);
    return 0;
}

int preempt_request_restart(struct preempt_handler *h, const char *why)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_RESTART_REQUESTED };

    if (!hd_handler_ok(h))
        return -EINVAL;
    if (h->restoring || (h->in_cb && h->save_running)) /* inside the save or restore callback */
        return -EBUSY;
    if (hd_exited(h))
        return 0;
    (void)snprintf(h->err_msg, sizeof(h->err_msg), "worker %u asked for a restart after step %llu: %s",
                   h->cfg.worker, (unsigned long long)preempt_sm_facts_(h->wk.sm)->run, why ? why : "a peer was lost");
    hd_log_msg(h, PREEMPT_LOG_WARNING, "%s", h->err_msg);
    ev.u.restart_requested.code = -ENOLINK;
    hd_post(h, ev);
    return 0;
}

const char *preempt_handler_get_error_message(const struct preempt_handler *h)
{
    return hd_handler_ok(h) && h->err_msg[0] ? h->err_msg : NULL;
}

/* 0.1's way to learn when a borrowed base's last writes were delivered
 * (preempt_handler_close() replaced it): kept for programs written against
 * 0.1, declared deprecated in the header. */
unsigned preempt_pending_writes(const struct preempt_handler *h)
{
    return hd_handler_ok(h) ? preempt_coord_pending_(h->wk.coord) : 0;
}
