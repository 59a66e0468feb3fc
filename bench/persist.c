/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/persist.c: what a periodic checkpoint costs the training loop,
 * synchronous against two-phase, with each persist backend (io_uring,
 * Linux AIO past the page cache, chunks into the page cache).
 *
 * A trainer with a state of S MiB (64 and --ckpt-mib, pseudo-random bytes)
 * and steps of 50 ms (a sleep: the processor is free, as it is while a GPU
 * computes) takes one periodic checkpoint per trial through the public API:
 *
 * - synchronous: preempt_save_blob() of the state, preempt_save_done()
 *   (write, fsync, commit). Its stall is the whole save.
 * - two-phase: the state copied into a snapshot buffer the trainer keeps
 *   for its snapshots (allocated and touched once, as a pinned staging
 *   buffer is), preempt_save_snapshot(), preempt_save_done(). Its stall is
 *   that snapshot phase; then training goes on, and every step boundary
 *   while the checkpoint persists (preempt_step_end() and a non-blocking
 *   pass of the loop) is timed: the added time per step is that minus the
 *   same boundary's time without a persist, and their sum is the
 *   persist's stall over all its steps.
 *
 * Beside them in the same run: the time to copy the state into a buffer
 * like the staging one (memcpy, just before the two-phase save: the floor
 * of any snapshot), dd conv=fsync of the same
 * bytes, and the two-phase persist with nothing training (a preemption's
 * last save: the persist runs back to back), whose throughput is compared
 * with dd's. Peak extra memory is the resident set's growth during a
 * two-phase save over the trainer's own (state and staging buffer):
 * what the library holds. Medians of the trials.
 *
 * The staging buffer comes from malloc(), whose large blocks start 16
 * bytes into their pages: aio then writes through its bounce buffers. A
 * pinned staging buffer (cudaHostAlloc, or any page-aligned allocation)
 * is aligned for O_DIRECT, and aio writes from it without a copy: the
 * row "aio-4k" is aio with such a buffer (aligned_alloc). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "preempt.h"

#define STEP_MS 50

struct trial {
    double copy_s, sync_stall_s, tp_stall_s, tp_steps_s, tp_step_added_ms, tp_persist_steps, idle_persist_s, dd_s;
    double extra_mib;
};

static void on_release(void *data, void *ud)
{
    (void)data;
    *(int *)ud += 1;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static long rss_kib(void)
{
    char *s = bench_slurp("/proc/self/status"), *p = s ? strstr(s, "VmRSS:") : NULL;
    long v = p ? strtol(p + 6, NULL, 10) : -1;

    free(s);
    return v;
}

static struct preempt_handler *open_handler(const char *dir, uint64_t grace_ms)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = bench_quiet_callbacks;
    struct preempt_handler *h = NULL;

    preempt_config_init(&cfg);
    cfg.platform = PREEMPT_PLATFORM_NONE;
    cfg.ckpt_dir = dir;
    cfg.grace_ms = grace_ms;
    cfg.max_to_keep = 1;
    if (preempt_block_signals(&cfg) < 0 || preempt_handler_new(NULL, &cfg, &cb, NULL, &h) < 0)
        return NULL;
    return h;
}

/* One boundary as the trainer runs it: the step counted, a loop pass.
 * Returns its duration in ns and the action in *a. */
static uint64_t boundary(struct preempt_handler *h, enum preempt_action *a)
{
    uint64_t t0 = bench_now_ns();

    if (preempt_step_end(h, a) < 0)
        *a = PREEMPT_ACTION_EXIT;
    (void)event_base_loop(preempt_handler_get_base(h), EVLOOP_NONBLOCK);
    return bench_now_ns() - t0;
}

/* Trains 50 ms steps until the handler asks for a save (a periodic one, or
 * a preemption's); the mean boundary time of those steps in *ret_ns. */
static int train_to_save(struct preempt_handler *h, bool periodic, double *ret_ns)
{
    enum preempt_action a = PREEMPT_ACTION_CONTINUE;
    uint64_t sum = 0;
    unsigned n = 0;

    if (periodic ? preempt_request_checkpoint(h) < 0 : preempt_notify(h, 0) < 0)
        return -1;
    while (n < 200 && a != PREEMPT_ACTION_SAVE && a != PREEMPT_ACTION_SAVE_EXIT) {
        sleep_ms(STEP_MS);
        sum += boundary(h, &a);
        n++;
    }
    if (ret_ns)
        *ret_ns = n ? (double)sum / n : 0;
    return a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT ? 0 : -1;
}

static double sync_save(const char *dir, const void *state, size_t len)
{
    struct preempt_handler *h = open_handler(dir, 0);
    uint64_t step, t0, t1;
    int r;

    if (!h || train_to_save(h, true, NULL) < 0)
        return preempt_handler_free(h), -1;
    t0 = bench_now_ns();
    r = preempt_save_begin(h, &step);
    if (r == 0)
        r = preempt_save_blob(h, "model", state, len);
    r = preempt_save_done(h, r) < 0 ? -1 : r;
    t1 = bench_now_ns();
    preempt_handler_free(h);
    return r < 0 ? -1 : (double)(t1 - t0) / 1e9;
}

/* A periodic two-phase checkpoint while 50 ms steps go on. */
static int two_phase_save(const char *dir, const void *state, void *staging, void *scratch, size_t len,
                          struct trial *t)
{
    struct preempt_handler *h = open_handler(dir, 0);
    struct preempt_status st;
    enum preempt_action a = PREEMPT_ACTION_CONTINUE;
    uint64_t step, t0, t1, sum = 0;
    double base_ns;
    long rss0, peak;
    int released = 0, steps = 0;

    if (!h || train_to_save(h, true, &base_ns) < 0)
        return preempt_handler_free(h), -1;
    /* the floor, beside it: the same copy alone, into a buffer as long
     * untouched as the staging buffer (on this VM, writing memory not
     * written for a while is about 3x slower than writing it again at once:
     * a copy into the staging buffer first would make the snapshot's warm) */
    t0 = bench_now_ns();
    memcpy(scratch, state, len);
    t->copy_s = (double)(bench_now_ns() - t0) / 1e9;
    rss0 = peak = rss_kib();
    t0 = bench_now_ns();
    if (preempt_save_begin(h, &step) < 0)
        return preempt_handler_free(h), -1;
    memcpy(staging, state, len); /* the snapshot: the state at this step */
    if (preempt_save_snapshot(h, "model", staging, len, on_release, &released) < 0 || preempt_save_done(h, 0) < 0)
        return preempt_handler_free(h), -1;
    t1 = bench_now_ns();
    t->tp_stall_s = (double)(t1 - t0) / 1e9;

    for (;;) {
        long r;

        (void)preempt_handler_get_status(h, &st);
        if (st.state != PREEMPT_STATE_PERSISTING || steps > 100000)
            break;
        sleep_ms(STEP_MS); /* training goes on */
        sum += boundary(h, &a);
        steps++;
        if ((r = rss_kib()) > peak)
            peak = r;
    }
    preempt_handler_free(h);
    if (st.saves != 1 || released != 1)
        return fprintf(stderr, "preempt-bench: the two-phase checkpoint did not commit\n"), -1;
    t->tp_persist_steps = steps;
    t->tp_steps_s = ((double)sum - steps * base_ns) / 1e9;
    t->tp_step_added_ms = steps ? t->tp_steps_s * 1000 / steps : 0;
    t->extra_mib = (double)(peak - rss0) / 1024;
    return 0;
}

/* A preemption's last save, two-phase: nothing trains, the persist runs
 * back to back on the loop. Seconds from the snapshot's end to the commit. */
static double idle_persist(const char *dir, const void *staging, size_t len)
{
    struct preempt_handler *h = open_handler(dir, 0);
    struct preempt_status st;
    uint64_t step, t0;
    int released = 0;

    if (!h || train_to_save(h, false, NULL) < 0 || preempt_save_begin(h, &step) < 0 ||
        preempt_save_snapshot(h, "model", staging, len, on_release, &released) < 0 || preempt_save_done(h, 0) < 0)
        return preempt_handler_free(h), -1;
    t0 = bench_now_ns();
    do
        (void)event_base_loop(preempt_handler_get_base(h), EVLOOP_ONCE);
    while (preempt_handler_get_status(h, &st) == 0 && st.state != PREEMPT_STATE_EXIT);
    t0 = bench_now_ns() - t0;
    preempt_handler_free(h);
    return st.saves == 1 ? (double)t0 / 1e9 : -1;
}

static double median_of(const struct trial *t, unsigned n, size_t off)
{
    double v[16];

    for (unsigned i = 0; i < n; i++)
        v[i] = *(const double *)(const void *)((const char *)&t[i] + off);
    return bench_pct(v, n, 50);
}
#define MED(field) median_of(trials, n, offsetof(struct trial, field))

/* A row of the table: its name, the backend (PREEMPT_PERSIST) and whether
 * the staging buffer is page-aligned. */
struct row {
    const char *label, *backend; /* label first: bench_names_mask() reads it */
    bool aligned;
};

static int run_size(const struct bench_opts *o, const struct row *row, uint64_t mib, json_t *out)
{
    size_t len = (size_t)mib << 20;
    unsigned ntrials = o->quick ? 1 : 3, n = 0;
    struct trial trials[16];
    char dir[4096], sub[4200];
    const char *label = row->label;
    unsigned char *state = malloc(len), *staging = row->aligned ? aligned_alloc(4096, len) : malloc(len),
                  *scratch = malloc(len);
    uint64_t z = 7;
    json_t *j;

    if (!state || !staging || !scratch)
        return free(state), free(staging), free(scratch),
               fprintf(stderr, "preempt-bench: no memory for 3 x %llu MiB\n", (unsigned long long)mib), -1;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        z += 0x9e3779b97f4a7c15ull;
        uint64_t v = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
        memcpy(state + i, &v, 8);
    }
    memset(staging, 1, len); /* touched once (not 0: malloc and a zeroing memset become calloc): a
                              * staging buffer the trainer keeps */
    memset(scratch, 1, len);
    (void)snprintf(dir, sizeof(dir), "%s/persist", o->dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return free(state), free(staging), free(scratch), -1;
    (void)setenv("PREEMPT_PERSIST", row->backend, 1);
    for (unsigned k = 0; k < ntrials; k++) {
        struct trial *t = &trials[n];

        (void)snprintf(sub, sizeof(sub), "%s/sync", dir);
        t->sync_stall_s = sync_save(sub, state, len);
        (void)bench_rm_rf(sub);
        (void)snprintf(sub, sizeof(sub), "%s/tp", dir);
        if (t->sync_stall_s < 0 || two_phase_save(sub, state, staging, scratch, len, t) < 0)
            goto fail;
        (void)bench_rm_rf(sub);
        (void)snprintf(sub, sizeof(sub), "%s/idle", dir);
        t->idle_persist_s = idle_persist(sub, staging, len);
        (void)bench_rm_rf(sub);
        t->dd_s = bench_dd_fsync(dir, mib);
        if (t->idle_persist_s < 0 || t->dd_s < 0)
            goto fail;
        n++;
    }
    (void)unsetenv("PREEMPT_PERSIST");
    free(state);
    free(staging);
    free(scratch);
    (void)rmdir(dir);
    {
        double copy = MED(copy_s), sync = MED(sync_stall_s), stall = MED(tp_stall_s), steps_s = MED(tp_steps_s);
        double idle = MED(idle_persist_s), dd = MED(dd_s);

        printf("   %-8s %6llu %9.3f %9.3f %9.3f %8.2f %8.3f %6.0f %8.2f %8.1f %8.1f %6.2f %7.0f\n", label,
               (unsigned long long)mib, copy, sync, stall, stall / copy, steps_s, MED(tp_persist_steps),
               MED(tp_step_added_ms), (double)mib / idle, (double)mib / dd, dd / idle, MED(extra_mib));
        j = json_pack("{sI sI sf sf sf sf sf sf sf sf sf sf sf sf sf sf}", "mib", (json_int_t)mib, "trials",
                      (json_int_t)n, "copy_s", copy, "stall_sync_s", sync, "stall_two_phase_s", stall,
                      "stall_two_phase_over_copy", stall / copy, "stall_sync_over_two_phase", sync / stall,
                      "stall_two_phase_persist_steps_s", steps_s, "stall_two_phase_persist_steps_over_copy",
                      steps_s / copy, "persist_steps", MED(tp_persist_steps), "added_ms_per_step",
                      MED(tp_step_added_ms), "persist_mib_s", (double)mib / idle, "dd_mib_s", (double)mib / dd,
                      "persist_over_dd", dd / idle, "peak_extra_mib", MED(extra_mib), "peak_extra_over_state",
                      MED(extra_mib) / (double)mib);
        (void)json_object_set_new(out, label, j);
    }
    return 0;
fail:
    (void)unsetenv("PREEMPT_PERSIST");
    fprintf(stderr, "preempt-bench: a %s trial of %llu MiB failed\n", label, (unsigned long long)mib);
    free(state);
    free(staging);
    free(scratch);
    return -1;
}

static const struct row rows[] = {
    { "io_uring", "io_uring", false },
    { "aio", "aio", false },
    { "aio-4k", "aio", true }, /* a pinned buffer's case: aio writes from it, no bounce copy */
    { "chunked", "chunked", false },
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

int bench_persist_rows(const char *list, unsigned *mask)
{
    if (bench_names_mask("--backends", "backend", list, rows, N_ROWS, sizeof(rows[0]), mask) < 0)
        return -1;
    return *mask ? 0 : (fprintf(stderr, "preempt-bench: --backends: no backend named\n"), -1);
}

int bench_persist(const struct bench_opts *o, json_t *out)
{
    uint64_t sizes[2] = { o->quick ? 4 : 64, o->quick ? 8 : o->ckpt_mib };
    struct statvfs vfs;
    unsigned wanted = o->backends ? o->backends : ~0u;

    if (statvfs(o->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < 3 * (sizes[1] << 20))
        return fprintf(stderr, "preempt-bench: %s has less than 3 x %llu MiB free; --ckpt-mib sets a smaller size\n",
                       o->dir, (unsigned long long)sizes[1]), -1;
    printf("\n9. A periodic checkpoint's stall on %d ms steps, synchronous and two-phase (median of %u; seconds;\n"
           "   snapshot = the two-phase save's stall at its step; persist steps = the added time of every step\n"
           "   boundary while it persists, summed; idle persist = with nothing training, against dd conv=fsync)\n",
           STEP_MS, o->quick ? 1 : 3);
    printf("   %-8s %6s %9s %9s %9s %8s %8s %6s %8s %8s %8s %6s %7s\n", "backend", "MiB", "copy", "sync", "snapshot",
           "/copy", "p.steps", "steps", "ms/step", "MiB/s", "dd MiB/s", "/dd", "+MiB");
    for (unsigned b = 0; b < N_ROWS; b++) {
        json_t *sec;

        if (!(wanted & (1u << b)))
            continue;
        sec = json_object();

        for (unsigned s = 0; s < 2; s++) {
            char key[32];
            json_t *one = json_object();

            if (run_size(o, &rows[b], sizes[s], one) < 0)
                return json_decref(one), json_decref(sec), -1;
            (void)snprintf(key, sizeof(key), "%llu_mib", (unsigned long long)sizes[s]);
            (void)json_object_set(sec, key, json_object_get(one, rows[b].label));
            json_decref(one);
        }
        (void)json_object_set_new(out, rows[b].label, sec);
    }
    return 0;
}
