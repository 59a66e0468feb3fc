/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/ckpt.c: checkpoint commit throughput against dd conv=fsync.
 *
 * One local handler per trial saves a state of ckpt_mib MiB (pseudo-random
 * bytes, so that nothing compresses) as one blob, through the public API:
 * a notice, the save the handler asks for, preempt_save_blob() and
 * preempt_save_done(), which commits (fsync of the data and the manifest,
 * rename, fsync of the directory). The time is from preempt_save_begin() to
 * the return of preempt_save_done(). In turns with it, dd writes the same
 * size with conv=fsync into the same directory. Medians of the trials. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "preempt.h"

/* One commit of @p len bytes into @p dir; returns seconds or -1. */
static double our_commit(const char *dir, const void *data, size_t len)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = bench_quiet_callbacks;
    struct preempt_handler *h = NULL;
    uint64_t step, t0, t1;
    enum preempt_action a = PREEMPT_ACTION_CONTINUE;
    int r;

    preempt_config_init(&cfg);
    cfg.platform = PREEMPT_PLATFORM_NONE;
    cfg.ckpt_dir = dir;
    cfg.grace_ms = 0;
    if (preempt_block_signals(&cfg) < 0 || preempt_handler_new(NULL, &cfg, &cb, NULL, &h) < 0)
        return -1;
    (void)preempt_notify(h, 0);
    for (int i = 0; i < 100; i++) { /* local agreement: a few loop passes */
        if (preempt_step_end(h, &a) < 0)
            break;
        if (a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT)
            break;
        (void)event_base_loop(preempt_handler_get_base(h), EVLOOP_NONBLOCK);
    }
    if (a != PREEMPT_ACTION_SAVE && a != PREEMPT_ACTION_SAVE_EXIT) {
        preempt_handler_free(h);
        return -1;
    }
    t0 = bench_now_ns();
    r = preempt_save_begin(h, &step);
    if (r == 0)
        r = preempt_save_blob(h, "model", data, len);
    {
        int d = preempt_save_done(h, r); /* commits, or drops a failed save */

        if (r == 0)
            r = d;
    }
    t1 = bench_now_ns();
    preempt_handler_free(h);
    if (r < 0) {
        fprintf(stderr, "preempt-bench: the checkpoint in %s failed: %s\n", dir, preempt_strerror(r));
        return -1;
    }
    return (double)(t1 - t0) / 1e9;
}

double bench_dd_fsync(const char *dir, uint64_t mib)
{
    char of[4200], count[64];
    char *argv[] = { "/bin/dd", "if=/dev/zero", of, "bs=1M", count, "conv=fsync", "status=none", NULL };
    uint64_t t0 = bench_now_ns();
    int r;

    (void)snprintf(of, sizeof(of), "of=%s/dd.bin", dir);
    (void)snprintf(count, sizeof(count), "count=%llu", (unsigned long long)mib);
    r = bench_run(argv, NULL, 600);
    if (r != 0)
        return -1;
    return (double)(bench_now_ns() - t0) / 1e9;
}

int bench_ckpt(const struct bench_opts *o, json_t *out)
{
    uint64_t mib = o->quick ? 8 : o->ckpt_mib;
    size_t len = (size_t)mib << 20;
    unsigned trials = o->quick ? 2 : 3, n = 0;
    double ours[8], dd[8], mo, md;
    struct statvfs vfs;
    char dir[4096], sub[4200];
    uint64_t *data, z = 42;

    (void)snprintf(dir, sizeof(dir), "%s/ckpt", o->dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return fprintf(stderr, "preempt-bench: cannot create %s: %s\n", dir, strerror(errno)), -1;
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < 3 * (uint64_t)len) {
        fprintf(stderr, "preempt-bench: %s has less than 3 x %llu MiB free; --ckpt-mib sets a smaller size\n", dir,
                (unsigned long long)mib);
        return -1;
    }
    if (!(data = malloc(len)))
        return fprintf(stderr, "preempt-bench: no memory for %llu MiB\n", (unsigned long long)mib), -1;
    for (size_t i = 0; i < len / sizeof(*data); i++) {
        z += 0x9e3779b97f4a7c15ull;
        data[i] = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
    }
    for (unsigned t = 0; t < trials; t++) {
        (void)snprintf(sub, sizeof(sub), "%s/trial-%u", dir, t);
        ours[n] = our_commit(sub, data, len);
        (void)bench_rm_rf(sub);
        dd[n] = bench_dd_fsync(dir, mib);
        (void)bench_rm_rf(sub);
        (void)snprintf(sub, sizeof(sub), "%s/dd.bin", dir);
        (void)unlink(sub);
        if (ours[n] < 0 || dd[n] < 0) {
            fprintf(stderr, "preempt-bench: a checkpoint or dd trial failed\n");
            free(data);
            return -1;
        }
        n++;
    }
    free(data);
    (void)rmdir(dir);
    mo = bench_pct(ours, n, 50);
    md = bench_pct(dd, n, 50);
    printf("\n5. Checkpoint commit of %llu MiB (median of %u, in turns, same directory)\n", (unsigned long long)mib,
           n);
    printf("   %-34s %10s %10s\n", "", "seconds", "MiB/s");
    printf("   %-34s %10.3f %10.1f\n", "libpreempt save + commit", mo, (double)mib / mo);
    printf("   %-34s %10.3f %10.1f\n", "dd bs=1M conv=fsync", md, (double)mib / md);
    printf("   %-34s %10.2f\n", "throughput ratio (libpreempt / dd)", md / mo);
    (void)json_object_set_new(out, "mib", json_integer((json_int_t)mib));
    (void)json_object_set_new(out, "trials", json_integer(n));
    (void)json_object_set_new(out, "libpreempt_s", json_real(mo));
    (void)json_object_set_new(out, "dd_s", json_real(md));
    (void)json_object_set_new(out, "libpreempt_mib_s", json_real((double)mib / mo));
    (void)json_object_set_new(out, "dd_mib_s", json_real((double)mib / md));
    (void)json_object_set_new(out, "ratio", json_real(md / mo));
    return 0;
}
