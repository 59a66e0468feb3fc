/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler-report.c: what operators see of a handler's run
 * (lib/handler/handler-internal.h, report-internal.h): the metrics file and the
 * termination record, from facts the handler keeps; nothing here decides
 * what the handler does next. */
#define _GNU_SOURCE /* pipe2 */
#include "handler-internal.h"
#include "records/records.h"

/* ---- what operators see: the metrics file and the termination record ---- */

/* The wall clock of a moment ms of the handler's clock, now being wall
 * (0 stays 0): one reading of each clock for every moment of a record, so
 * that their order is the handler's. */
static uint64_t wall_of(uint64_t ms, uint64_t now, uint64_t wall)
{
    return ms == 0 ? 0 : ms >= now ? wall + (ms - now) : wall - (now - ms);
}

void hd_metrics_flush(struct preempt_handler *h)
{
    char *text;
    int r;

    if (!h->metrics)
        return;
    text = preempt_metrics_text_(h->metrics);
    r = text ? preempt_metrics_write_(h->metrics_path, text) : -ENOMEM;
    free(text);
    if (r < 0) {
        hd_log_msg(h, PREEMPT_LOG_WARNING, "metrics file %s: %s; no more metrics are written", h->metrics_path,
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
        hd_log_msg(h, PREEMPT_LOG_INFO, "%s (%s in %s)", h->exit_why, preempt_event_to_string_(rec->ev.kind),
                   preempt_state_to_string(rec->from));
    }
    if (rec->to == PREEMPT_STATE_IDLE && rec->from != PREEMPT_STATE_IDLE) { /* the round is over; training goes on */
        h->notice_ms = h->agreed_ms = h->commit_ms = h->agreed_step = h->first_commit_step = 0;
        h->notice_worker = -1;
        h->ckpt_kind = NULL;
    }
    if (changed)
        hd_metrics_flush(h);
}

/* The job's history record of this run (keys-internal.h's HISTORY). */
static void report_history(struct preempt_handler *h, const struct preempt_report *r)
{
    const char *why = "";
    struct preempt_value v;
    bool notice = r->source && r->notice_at && r->notice_worker >= 0;
    struct preempt_rv_history rec = {
        .code = r->code, .reason = r->reason, .at = r->exit_at,
        .started = h->started_wall ? h->started_wall : r->exit_at,
        .restore = r->restore_ms > 0 ? (uint64_t)r->restore_ms : 0, .run = r->run, .committed = r->committed_step,
        .saves = r->saves,
        /* the notice it ended on */
        .has_notice = notice, .notice = r->notice_at, .source = notice ? r->source : NULL, .has_from = notice,
        .from = notice ? (uint64_t)r->notice_worker : 0, .has_agreed = notice, .agreed = r->agreed_step
    };

    if (!h->wk.coord)
        return;
    if (preempt_rv_history_write_(&v, &rec, h->cfg.workers, &why) < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "bug: the history record's value is not %s", why);
        return;
    }
    preempt_coord_history_(h->wk.coord, &v);
}

/* At exit: the preemption's counters, the metrics file and the record. */
void hd_report_exit(struct preempt_handler *h, enum preempt_exit reason)
{
    uint64_t now = hd_now_ms(h), wall = preempt_clock_ms_(CLOCK_REALTIME), run = preempt_sm_facts_(h->wk.sm)->run;
    /* Steps the restart trains again: those trained past the newest commit,
     * whatever the exit (a preemption that ends saved with an older
     * checkpoint than its stop step, one that trained on while its
     * checkpoint persisted, loses them too); none when training is done. */
    uint64_t lost = reason == PREEMPT_EXIT_DONE || run < h->committed_step ? 0 : run - h->committed_step;
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
        /* steps trained after the first commit that a later one kept */
        .grace_steps = h->first_commit_step && h->committed_step > h->first_commit_step
                           ? h->committed_step - h->first_commit_step
                           : 0,
        .steps_lost = lost,
        .notice_to_agreed_ms = h->notice_ms && agreed_at ? (int64_t)(agreed_at - h->notice_ms) : -1,
        .agreed_to_commit_ms = agreed_at && h->commit_ms >= agreed_at ? (int64_t)(h->commit_ms - agreed_at) : -1,
        .notice_to_exit_ms = h->notice_ms ? (int64_t)(now - h->notice_ms) : -1, .saves = h->saves,
        .bytes_saved = h->bytes_saved, .save_ms = h->last_save_ms, .stall_ms = h->last_stall_ms, .restored_step = h->restored_step,
        .restore_ms = h->restored_step || h->fallbacks ? (int64_t)(h->restore_us / 1000) : -1,
        .restore_fallbacks = h->fallbacks,
    };
    int n;

    if (source && reason != PREEMPT_EXIT_DONE) {
        (void)snprintf(extra, sizeof(extra), "source=\"%s\",outcome=\"%s\"", source, r.reason);
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_PREEMPTIONS, extra, 1);
    }
    preempt_metrics_add_(h->metrics, PREEMPT_METRIC_STEPS_LOST, "", (double)lost);
    hd_metrics_flush(h);
    report_history(h, &r);
    if (!h->term_path)
        return;
    n = preempt_report_json_(&r, json, sizeof(json));
    if (n < 0 || (n = preempt_report_write_(h->term_path, json, (size_t)n)) < 0)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "termination record %s: %s", h->term_path, strerror(-n));
}

void hd_on_record(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg)
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
        hd_log_msg(h, PREEMPT_LOG_ERROR, "bug: event %s is illegal in state %s", preempt_event_to_string_(rec->ev.kind),
                   preempt_state_to_string(rec->from));
    if (h->trace)
        hd_trace_write(h, rec);
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
    assert(!preempt_persist_busy_(h->persist) || saving || s == PREEMPT_STATE_PERSISTING ||
           s == PREEMPT_STATE_FINISHING);
    assert(s != PREEMPT_STATE_EXIT || (!event_pending(h->ev_sig, EV_READ, NULL) &&
                                       (!h->ev_poll || !event_pending(h->ev_poll, EV_TIMEOUT, NULL))));
#else
    (void)h;
    (void)s;
#endif
}

void hd_after_step(struct preempt_sm *sm, enum preempt_state from, enum preempt_state to, void *arg)
{
    struct preempt_handler *h = arg;

    (void)sm;
    if (to == PREEMPT_STATE_EXIT) /* a persist the exit cut short: the previous checkpoint stays */
        hd_drop_persist(h, "the run exits");
    check_invariants(h, to);
    hd_persist_pace(h); /* also where the state stays: a notice can make a persist the last save */
    if (from == to)
        return;
    hd_log_msg(h, PREEMPT_LOG_DEBUG, "state %s -> %s", preempt_state_to_string(from), preempt_state_to_string(to));
    /* The trainer resumes training when a wait or a save ends. */
    if (from == PREEMPT_STATE_OWN_SIGNAL || from == PREEMPT_STATE_FOLLOWING || from == PREEMPT_STATE_SAVING)
        h->step_t0_us = hd_now_us(h);
    if (to == PREEMPT_STATE_IDLE) /* withdrawn: no notice stands any more */
        memset(h->wk.live, 0, sizeof(h->wk.live));
    h->in_cb++;
    if (h->cb.on_state)
        h->cb.on_state(h, from, to, h->ud);
    if (to == PREEMPT_STATE_EXIT && h->cb.on_exit)
        h->cb.on_exit(h, h->wk.exit_reason, h->exit_code, h->ud);
    h->in_cb--;
}

void hd_schedule_drain(struct preempt_sm *sm, void *arg)
{
    struct preempt_handler *h = arg;

    (void)sm;
    event_active(h->ev_drain, EV_TIMEOUT, 1);
}
