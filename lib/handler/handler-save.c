/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler-save.c: saves and restores (lib/handler/handler-internal.h): the
 * checkpoint writer behind preempt_save_begin()/_blob()/_done(), the
 * restore callback's blob readers, and the synchronous calls
 * (preempt_run(), preempt_save_checkpoint_if_preempted()). */
#define _GNU_SOURCE /* pipe2 */
#include "handler-internal.h"

/* ---- saves and restores -------------------------------------------------------------- */

int preempt_save_begin(struct preempt_handler *h, uint64_t *ret_step)
{
    int r = 0;

    if (!hd_handler_ok(h) || !ret_step)
        return -EINVAL;
    if (h->in_cb)
        return -EBUSY;
    if (!h->wk.save_asked)
        return -EALREADY;
    h->wk.save_asked = false;
    h->save_running = true;
    preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_SAVING);
    h->save_t0_us = hd_now_us(h);
    *ret_step = h->wk.save_step;
    if (h->store) {
        char key[PREEMPT_KEY_MAX];
        bool pend = h->wk.coord && preempt_coord_decision_key_(h->wk.coord, preempt_sm_core_(h->wk.sm)->round, key,
                                                            sizeof(key)) == 0;

        r = preempt_ckpt_begin_(h->store, h->wk.save_step, preempt_sm_facts_(h->wk.sm)->run, h->generation,
                                pend ? key : NULL, &h->writer);
        if (r < 0)
            hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot start the checkpoint at step %llu: %s",
                       (unsigned long long)h->wk.save_step, strerror(-r));
    }
    return r;
}

/* Whether a blob may be saved now (args_ok: the call's other arguments
 * are fine): 0, or the call's error. */
static int blob_check(const struct preempt_handler *h, bool args_ok)
{
    if (!hd_handler_ok(h) || !args_ok)
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

int preempt_save_snapshot(struct preempt_handler *h, const char *name, const void *data, size_t len,
                          preempt_release_cb release, void *userdata)
{
    int r = blob_check(h, name && (data || !len) && release);

    if (r < 0)
        return r;
    if (h->n_snaps >= PREEMPT_CKPT_MAX_BLOBS)
        return -E2BIG;
    if ((r = preempt_ckpt_add_snapshot_(h->writer, name, data, len)) == 0)
        h->snaps[h->n_snaps++] = (struct hd_snap){ .data = (void *)(uintptr_t)data, .release = release, .ud = userdata };
    return r;
}

/* The snapshots go back to the trainer (durable, or the save dropped). */
static void release_snaps(struct preempt_handler *h)
{
    unsigned n = h->n_snaps;

    h->n_snaps = 0;
    h->in_cb++;
    for (unsigned i = 0; i < n; i++)
        h->snaps[i].release(h->snaps[i].data, h->snaps[i].ud);
    h->in_cb--;
}

/* A save ended: its outcome measured, logged and fed to the machine.
 * at_boundary: it ended at the trainer's step boundary (not on the loop
 * while the trainer trains, as a persist does), so the next step starts now. */
static void save_finished(struct preempt_handler *h, int status, const struct preempt_ckpt_info *info, bool at_boundary)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_SAVE_DONE };
    uint64_t ms = (hd_now_us(h) - h->save_t0_us + 999) / 1000;
    bool paced = !at_boundary && preempt_persist_paced_(h->persist);

    h->last_save_ms = ms;
    h->last_stall_ms = paced ? h->snapshot_ms : ms; /* a persist the trainer waited for stopped training too */
    /* both phases; a persist that waited for steps counts only until an awaited save is known */
    preempt_worker_save_took_(&h->wk, ms, paced ? PREEMPT_SAVE_PACED : PREEMPT_SAVE_AWAITED);
    if (status == 0) {
        uint64_t bytes = h->store ? info->bytes : 0; /* without a directory the save is the caller's own */

        h->saves++;
        h->bytes_saved += bytes;
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_SAVED_BYTES, "", (double)bytes);
        preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_SAVE, (double)ms / 1000.0);
        preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_STALL, (double)h->last_stall_ms / 1000.0);
        if (!h->wk.coord) /* local mode: the local commit is the decision */
            hd_committed(h, h->wk.save_step);
        if (at_boundary)
            hd_log_msg(h, PREEMPT_LOG_INFO, "checkpoint at step %llu committed in %llu ms%s%s",
                       (unsigned long long)h->wk.save_step, (unsigned long long)ms, h->store ? ": " : "",
                       h->store ? info->path : "");
        else
            hd_log_msg(h, PREEMPT_LOG_INFO,
                       "checkpoint at step %llu committed in %llu ms (snapshot %llu ms, then %llu bytes persisted "
                       "with %s on the loop): %s",
                       (unsigned long long)h->wk.save_step, (unsigned long long)ms,
                       (unsigned long long)h->snapshot_ms, (unsigned long long)h->persist_bytes,
                       preempt_persist_backend_name_(preempt_persist_backend_(h->persist)), info->path);
    } else {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "save at step %llu failed: %s", (unsigned long long)h->wk.save_step,
                   strerror(-status));
    }
    if (at_boundary) {
        h->step_t0_us = hd_now_us(h);
        preempt_progress_boundary_(h->progress, preempt_sm_facts_(h->wk.sm)->run, h->step_t0_us);
        preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_TRAINING);
    }
    ev.u.save_done.status = status;
    hd_post(h, ev);
}

/* Every blob of the persisting save is durable (0), or the persist failed. */
static void on_persisted(int status, void *arg)
{
    struct preempt_handler *h = arg;
    struct preempt_ckpt_info info;

    if (status == 0) {
        uint64_t us = hd_now_us(h) - h->persist_t0_us;

        h->persist_rate = h->persist_bytes * 1000u / (us ? us : 1);
        preempt_ckpt_persisted_(h->writer, h->pblobs, h->n_pblobs, preempt_persist_paced_(h->persist));
        status = preempt_ckpt_commit_(h->writer, &info); /* consumes the writer */
    } else {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "persisting the checkpoint at step %llu failed: %s",
                   (unsigned long long)h->wk.save_step, strerror(-status));
        preempt_ckpt_persist_close_(h->pblobs, h->n_pblobs);
        preempt_ckpt_abort_(h->writer);
    }
    h->writer = NULL;
    h->n_pblobs = 0;
    release_snaps(h);
    save_finished(h, status, &info, false);
}

/* A persist's pace follows the trainer: one budget per step boundary
 * while it trains, back to back while it waits (the last save). */
void hd_persist_pace(struct preempt_handler *h)
{
    if (preempt_persist_busy_(h->persist))
        preempt_persist_pace_(h->persist, hd_action_of(h) == PREEMPT_ACTION_WAIT);
}

/* The persisting checkpoint's rest: its estimated time to be durable, at
 * the rate this persist went so far (from the snapshot's end: with the
 * steps' time between boundaries counted, it errs long while the trainer
 * trains), or, before its first chunk is on file, at the last persist's.
 * 0: none persists, or no rate is known yet. */
uint64_t hd_persist_left_ms(const struct preempt_handler *h)
{
    uint64_t done = 0, rate = h->persist_rate, us;

    if (!preempt_persist_busy_(h->persist))
        return 0;
    for (size_t i = 0; i < h->n_pblobs; i++)
        done += h->pblobs[i].written;
    us = hd_now_us(h) - h->persist_t0_us;
    if (done >= PREEMPT_PERSIST_CHUNK && us > 0)
        rate = done * 1000u / us;
    if (rate == 0)
        return 0;
    return (h->persist_bytes > done ? h->persist_bytes - done : 0) / rate + 1;
}

void hd_drop_persist(struct preempt_handler *h, const char *why)
{
    if (!preempt_persist_busy_(h->persist))
        return;
    preempt_persist_cancel_(h->persist);
    preempt_ckpt_persist_close_(h->pblobs, h->n_pblobs);
    h->n_pblobs = 0;
    preempt_ckpt_abort_(h->writer); /* the previous checkpoint stays as it was */
    h->writer = NULL;
    hd_log_msg(h, PREEMPT_LOG_WARNING, "the checkpoint at step %llu was still persisting: dropped (%s)",
               (unsigned long long)h->wk.save_step, why);
    release_snaps(h);
}

/* The snapshot phase of a two-phase save ended: the persist starts. */
static int start_persist(struct preempt_handler *h)
{
    const bool named = h->persist_want != PREEMPT_PERSIST_AUTO;
    const char *why;
    int r;

    if (!h->persist) {
        if ((r = preempt_persist_new_(h->base, h->persist_want, &h->persist, &why)) < 0) {
            hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot set up the persist of a two-phase save: %s", strerror(-r));
            return r;
        }
        if (why) /* a backend named (PREEMPT_PERSIST) gives way too: the checkpoint comes first */
            hd_log_msg(h, PREEMPT_LOG_WARNING, "%s%s%s%s: two-phase saves persist %s instead",
                       named ? "PREEMPT_PERSIST=" : "", named ? preempt_persist_backend_name_(h->persist_want) : "",
                       named ? ": " : "", why,
                       preempt_persist_backend_(h->persist) == PREEMPT_PERSIST_AIO
                           ? "through Linux AIO, past the page cache,"
                           : "in chunks from the loop");
    }
    if ((r = preempt_ckpt_persist_blobs_(h->writer, h->pblobs, &h->n_pblobs)) < 0)
        return r;
    if ((r = preempt_persist_start_(h->persist, h->pblobs, h->n_pblobs, on_persisted, h)) < 0) {
        preempt_ckpt_persist_close_(h->pblobs, h->n_pblobs);
        h->n_pblobs = 0;
        return r;
    }
    h->persist_bytes = 0;
    h->persist_t0_us = hd_now_us(h);
    for (size_t i = 0; i < h->n_pblobs; i++)
        h->persist_bytes += h->pblobs[i].len;
    return 0;
}

int preempt_save_done(struct preempt_handler *h, int status)
{
    struct preempt_ckpt_info info;
    int r = 0;

    if (!hd_handler_ok(h) || status > 0)
        return -EINVAL;
    if (!h->save_running)
        return -EALREADY;
    h->save_running = false;
    if (h->writer && status == 0 && preempt_ckpt_two_phase_(h->writer)) {
        if ((r = start_persist(h)) == 0) {
            struct preempt_event ev = { .kind = PREEMPT_EV_PERSIST_STARTED };

            h->snapshot_ms = (hd_now_us(h) - h->save_t0_us + 999) / 1000;
            h->step_t0_us = hd_now_us(h);
            preempt_progress_boundary_(h->progress, preempt_sm_facts_(h->wk.sm)->run, h->step_t0_us);
            preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_TRAINING);
            ev.u.persist_started.bytes = h->persist_bytes;
            hd_post(h, ev);
            hd_persist_pace(h);
            return 0;
        }
        status = r;
    }
    if (h->writer && status == 0) {
        r = preempt_ckpt_commit_(h->writer, &info); /* consumes the writer */
        status = r;
    } else {
        preempt_ckpt_abort_(h->writer);
        if (status == 0 && h->store)
            status = -EIO; /* the writer could not be opened */
    }
    h->writer = NULL;
    release_snaps(h);
    save_finished(h, status, &info, true);
    return r;
}

int preempt_restore_blob(struct preempt_handler *h, const char *name, void **ret_data, size_t *ret_len)
{
    if (!hd_handler_ok(h) || !name || !ret_data || !ret_len)
        return -EINVAL;
    if (!h->restoring)
        return -EALREADY;
    return preempt_ckpt_read_blob_(h->store, h->restoring, name, ret_data, ret_len);
}

int preempt_restore_blob_open(struct preempt_handler *h, const char *name, int *ret_fd)
{
    if (!hd_handler_ok(h) || !name || !ret_fd)
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

/* One turn of the loop while the action is to wait: bounded, because the
 * states that wait arm the machine's timer (or a persist runs). -EIO when
 * nothing is armed, a bug. */
static int wait_once(struct preempt_handler *h)
{
    if (event_base_loop(h->base, EVLOOP_ONCE) == 0)
        return 0;
    hd_log_msg(h, PREEMPT_LOG_ERROR, "bug: waiting in %s with nothing armed", preempt_state_to_string(hd_state_of(h)));
    return -EIO;
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
        enum preempt_action a = hd_action_of(h);

        /* Before the trainer's step or a save, both of which block outside the loop,
         * every write this boundary caused goes on the wire: a peer may be waiting
         * for it (the proposed step, a raise, a shard) while this worker is busy. */
        if ((a == PREEMPT_ACTION_CONTINUE || a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT) &&
            preempt_coord_pending_(h->wk.coord) > 0) {
            t = hd_now_us(h) / 1000;
            if (!flush_end)
                flush_end = t + SYNC_FLUSH_MS;
            if (t < flush_end) {
                (void)preempt_coord_flush_(h->wk.coord, flush_end - t);
                continue; /* what the flush delivered may change the action */
            }
        }
        switch (a) {
        case PREEMPT_ACTION_CONTINUE:
            h->step_t0_us = hd_now_us(h);
            return 0;
        case PREEMPT_ACTION_WAIT:
            if (wait_once(h) < 0)
                return -EIO;
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
                hd_flush_last(h); /* peers must learn of an error */
                exit(h->exit_code); /* the documented default: TF's behaviour */
            }
            return 1;
        }
    }
}

/* Training is done while a checkpoint persists (finishing): a handler on
 * its own base runs its loop here until that checkpoint is committed and
 * the handler exits, so that the trainer's next call (free) drops nothing.
 * The persist bounds the wait, as a save's own writes do. Never exits the
 * process: the exit is on_exit's and preempt_handler_get_exit_code()'s. */
void hd_sync_finish(struct preempt_handler *h)
{
    while (h->own_base && hd_action_of(h) == PREEMPT_ACTION_WAIT && wait_once(h) == 0)
        ;
}

static int sync_check(const struct preempt_handler *h)
{
    if (!hd_handler_ok(h) || !h->own_base || !h->cb.save)
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
    if (!hd_exited(h))
        (void)hd_count_step(h);
    return boundary_out(sync_boundary(h), ret_exited);
}

int preempt_run(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg, bool *ret_exited)
{
    int r = ret_exited ? sync_check(h) : -EINVAL;

    if (r < 0 || !step_fn)
        return r < 0 ? r : -EINVAL;
    if (hd_exited(h))
        return boundary_out(sync_boundary(h), ret_exited);
    r = step_fn(arg);
    if (r != 0) {
        (void)preempt_fail(h, r > 0 && r <= 255 ? r : 1, NULL);
        return boundary_out(sync_boundary(h), ret_exited);
    }
    (void)hd_count_step(h);
    return boundary_out(sync_boundary(h), ret_exited);
}
