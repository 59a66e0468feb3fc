/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/step.c: the per-step cost of the step hooks in the idle state.
 *
 * The same loop runs bare and with the library: the asynchronous hook
 * preempt_step_end() and the synchronous preempt_run() (which also runs the
 * handler's loop once per step, without blocking). Nanoseconds per step are
 * the median of repeated runs, taken in turns in one process. Instructions
 * (callgrind) and system calls (strace) per step come from child runs of
 * two lengths: the difference divided by the extra steps leaves out the
 * start-up and the exit. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "preempt.h"
#include "work.h"

/* supervised: the asynchronous hook with the progress page a supervising
 * launcher maps (preempt-launch --hang-timeout: $PREEMPT_PROGRESS_FILE). */
enum step_mode { MODE_BARE, MODE_ASYNC, MODE_SUPERVISED, MODE_SYNC, MODE__COUNT };
static const char *const mode_names[] = { "bare", "async", "supervised", "sync" };


static int on_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h;
    (void)step;
    (void)ud;
    return 0;
}

static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    (void)h;
    (void)reason;
    (void)code;
    (void)ud;
}

/* A local handler with its own loop and a save function of its own: what
 * a single-process trainer has while no notice is known; progress: the
 * page's file (NULL: none). */
static struct preempt_handler *new_handler_progress(const char *etcd, const char *progress)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = on_save, .on_exit = on_exit_cb };
    struct preempt_handler *h = NULL;
    char job[64];

    preempt_config_init(&cfg);
    cfg.platform = PREEMPT_PLATFORM_NONE;
    if (etcd) { /* a one-worker job: its lease, its watch, its connections */
        (void)snprintf(job, sizeof(job), "bench-mem-%d", (int)getpid());
        cfg.etcd_endpoints = etcd;
        cfg.job = job;
    }
    if (progress && setenv("PREEMPT_PROGRESS_FILE", progress, 1) < 0)
        return NULL;
    if (preempt_block_signals(&cfg) < 0 || preempt_handler_new(NULL, &cfg, &cb, NULL, &h) < 0)
        h = NULL;
    (void)unsetenv("PREEMPT_PROGRESS_FILE");
    return h;
}

static struct preempt_handler *new_handler(const char *etcd)
{
    return new_handler_progress(etcd, NULL);
}

/* A handler of mode m (NULL for bare): the supervised one's page in dir,
 * removed once it is mapped. */
static struct preempt_handler *mode_handler(enum step_mode m, const char *etcd, const char *dir)
{
    char page[4096];
    struct preempt_handler *h;

    if (m != MODE_SUPERVISED)
        return new_handler(etcd);
    (void)snprintf(page, sizeof(page), "%s/progress-%d", dir, (int)getpid());
    h = new_handler_progress(etcd, page);
    (void)unlink(page);
    return h;
}

static int run_steps(enum step_mode m, struct preempt_handler *h, uint64_t n)
{
    enum preempt_action a;
    bool exited = false;

    for (uint64_t i = 0; i < n; i++) {
        switch (m) {
        case MODE_BARE:
            (void)bench_work(NULL);
            break;
        case MODE_ASYNC:
        case MODE_SUPERVISED:
            (void)bench_work(NULL);
            if (preempt_step_end(h, &a) < 0 || a != PREEMPT_ACTION_CONTINUE)
                return -1;
            break;
        case MODE_SYNC:
            if (preempt_run(h, bench_work, NULL, &exited) < 0 || exited)
                return -1;
            break;
        case MODE__COUNT:
            return -1;
        }
    }
    return 0;
}

/* preempt-bench child-step MODE STEPS [ETCD]: one run, for callgrind,
 * strace and the memory figures (with ETCD: a one-worker job). */
int bench_child_step(int argc, char **argv)
{
    struct preempt_handler *h = NULL;
    int m, r;

    if (argc != 2 && argc != 3)
        return 2;
    for (m = 0; m < MODE__COUNT && strcmp(argv[0], mode_names[m]) != 0; m++)
        ;
    if (m == MODE__COUNT)
        return 2;
    if (m != MODE_BARE &&
        !(h = mode_handler((enum step_mode)m, argc == 3 ? argv[2] : NULL, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp")))
        return 1;
    r = run_steps((enum step_mode)m, h, strtoull(argv[1], NULL, 10));
    preempt_handler_free(h);
    return r < 0 ? 1 : 0;
}

/* Runs the child under a tool and returns what count() makes of its output. */
static int tool_run(const struct bench_opts *o, char **tool_argv, size_t n_tool, const char *out, const char *mode,
                    uint64_t steps)
{
    char *argv[24], num[32];
    size_t k = 0;

    (void)snprintf(num, sizeof(num), "%llu", (unsigned long long)steps);
    for (size_t i = 0; i < n_tool; i++)
        argv[k++] = tool_argv[i];
    argv[k++] = (char *)o->self;
    argv[k++] = "child-step";
    argv[k++] = (char *)mode;
    argv[k++] = num;
    argv[k] = NULL;
    return bench_run(argv, out, 600);
}

/* callgrind's instruction total of one child run, or -1. */
static double instructions(const struct bench_opts *o, const char *mode, uint64_t steps)
{
    char file[4096], opt[4200];
    char *tool[] = { (char *)o->valgrind, "--tool=callgrind", opt };
    char *text, *p;
    double ir = -1;

    (void)snprintf(file, sizeof(file), "%s/callgrind.%s.%llu", o->dir, mode, (unsigned long long)steps);
    (void)snprintf(opt, sizeof(opt), "--callgrind-out-file=%s", file);
    if (tool_run(o, tool, 3, NULL, mode, steps) != 0)
        return -1;
    text = bench_slurp(file);
    p = text ? strstr(text, "\ntotals: ") : NULL;
    if (!p && text)
        p = strstr(text, "\nsummary: ");
    if (p)
        ir = strtod(strchr(p, ':') + 1, NULL);
    free(text);
    (void)unlink(file);
    return ir;
}

/* strace's record of one child run: the number of calls of each name,
 * in a JSON object, or NULL. Signals and exits are not system calls. */
static json_t *syscalls(const struct bench_opts *o, const char *mode, uint64_t steps)
{
    char file[4096];
    char *tool[] = { (char *)o->strace, "-f", "-qq", "-o", file };
    char *text, *line;
    json_t *calls;

    (void)snprintf(file, sizeof(file), "%s/strace.%s.%llu", o->dir, mode, (unsigned long long)steps);
    if (tool_run(o, tool, 5, NULL, mode, steps) != 0)
        return NULL;
    if (!(text = bench_slurp(file)))
        return NULL;
    calls = json_object();
    for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        const char *p = line;
        size_t n = 0;

        while (*p >= '0' && *p <= '9') /* the pid strace -f writes first */
            p++;
        while (*p == ' ')
            p++;
        if (*p == '+' || *p == '-' || strncmp(p, "<...", 4) == 0)
            continue; /* exits, signals, resumed calls */
        while (n < sizeof(name) - 1 && (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9')))
            n++;
        if (n == 0 || p[n] != '(')
            continue;
        memcpy(name, p, n);
        name[n] = '\0';
        (void)json_object_set_new(calls, name, json_integer(json_integer_value(json_object_get(calls, name)) + 1));
    }
    free(text);
    (void)unlink(file);
    return calls;
}

int bench_step(const struct bench_opts *o, json_t *out)
{
    uint64_t n = o->quick ? 20000 : 1000000, n_tool = o->quick ? 2000 : 20000;
    unsigned runs = o->quick ? 3 : 15;
    double ns[MODE__COUNT][15], med[MODE__COUNT], ir[MODE__COUNT][2];
    struct preempt_handler *h = new_handler(NULL), *hs = mode_handler(MODE_SUPERVISED, NULL, o->dir);
    json_t *sys[MODE__COUNT][2];

    if (!h || !hs) {
        preempt_handler_free(h);
        preempt_handler_free(hs);
        fprintf(stderr, "preempt-bench: cannot create a handler\n");
        return -1;
    }
    for (unsigned r = 0; r < runs; r++) { /* in turns: drift hits every mode alike */
        for (int m = 0; m < MODE__COUNT; m++) {
            uint64_t t0 = bench_now_ns();

            if (run_steps((enum step_mode)m, m == MODE_SUPERVISED ? hs : h, n) < 0) {
                fprintf(stderr, "preempt-bench: the handler left the idle state\n");
                preempt_handler_free(h);
                preempt_handler_free(hs);
                return -1;
            }
            ns[m][r] = (double)(bench_now_ns() - t0) / (double)n;
        }
    }
    preempt_handler_free(h);
    preempt_handler_free(hs);
    for (int m = 0; m < MODE__COUNT; m++) {
        med[m] = bench_pct(ns[m], runs, 50);
        ir[m][0] = ir[m][1] = -1;
        sys[m][0] = sys[m][1] = NULL;
        if (o->valgrind) {
            ir[m][0] = instructions(o, mode_names[m], n_tool);
            ir[m][1] = instructions(o, mode_names[m], 2 * n_tool);
        }
        if (o->strace) {
            sys[m][0] = syscalls(o, mode_names[m], n_tool);
            sys[m][1] = syscalls(o, mode_names[m], 2 * n_tool);
        }
    }
    printf("\n1. Per-step cost in the idle state (median of %u runs of %llu steps; callgrind and strace:\n"
           "   the difference between runs of %llu and %llu steps)\n",
           runs, (unsigned long long)n, (unsigned long long)n_tool, (unsigned long long)(2 * n_tool));
    printf("   %-28s %10s %12s %16s %14s\n", "loop", "ns/step", "+ns/step", "instructions/step", "syscalls/step");
    for (int m = 0; m < MODE__COUNT; m++) {
        static const char *const label[] = { "bare (no library)", "preempt_step_end (async)",
                                             "  with a progress page", "preempt_run (sync)" };
        json_t *row = json_object(), *per = json_object();
        double ips = ir[m][0] >= 0 && ir[m][1] >= 0 ? (ir[m][1] - ir[m][0]) / (double)n_tool : -1;
        double total = 0;
        const char *name;
        json_t *v;
        char which[256] = "";

        if (sys[m][0] && sys[m][1]) {
            json_object_foreach(sys[m][1], name, v) {
                double d = (double)(json_integer_value(v) - json_integer_value(json_object_get(sys[m][0], name))) /
                           (double)n_tool;

                if (d > 0.001) {
                    (void)json_object_set_new(per, name, json_real(d));
                    total += d;
                    (void)snprintf(which + strlen(which), sizeof(which) - strlen(which), " %s %.2f", name, d);
                }
            }
        }
        (void)json_object_set_new(row, "ns_per_step", json_real(med[m]));
        (void)json_object_set_new(row, "ns_samples", json_integer(runs));
        (void)json_object_set_new(row, "overhead_ns_per_step", json_real(med[m] - med[MODE_BARE]));
        (void)json_object_set_new(row, "instructions_per_step", ips >= 0 ? json_real(ips) : json_null());
        (void)json_object_set_new(row, "overhead_instructions_per_step",
                                  ips >= 0 && ir[MODE_BARE][0] >= 0
                                      ? json_real(ips - (ir[MODE_BARE][1] - ir[MODE_BARE][0]) / (double)n_tool)
                                      : json_null());
        (void)json_object_set_new(row, "syscalls_per_step", sys[m][0] && sys[m][1] ? json_real(total) : json_null());
        (void)json_object_set_new(row, "syscalls", per);
        (void)json_object_set_new(out, mode_names[m], row);
        printf("   %-28s %10.1f %12.1f %16.1f %14.3f%s%s\n", label[m], med[m], med[m] - med[MODE_BARE], ips, total,
               which[0] ? "  " : "", which);
        for (int k = 0; k < 2; k++)
            json_decref(sys[m][k]);
    }
    (void)json_object_set_new(out, "steps", json_integer((json_int_t)n));
    (void)json_object_set_new(out, "tool_steps", json_integer((json_int_t)n_tool));
    return 0;
}

/* A worker's peak RSS: the same loop in a program without the library
 * (bench-bare), with a local handler, and with a handler in a one-worker
 * etcd job (bench-worker, linked with libpreempt only, as a trainer is).
 * Each child reports its own peak (VmHWM, work.h); the median of 5 runs
 * taken in turns. */
int bench_memory(const struct bench_opts *o, json_t *out)
{
    static const char *const label[] = { "without the library (bench-bare)", "with a local handler (bench-worker)",
                                         "with a handler in an etcd job" };
    static const char *const key[] = { "bare_kib", "local_kib", "etcd_kib" };
    char *argv[3][6] = {
        { (char *)o->bare, "100000", NULL },
        { (char *)o->worker, "100000", NULL },
        { (char *)o->worker, "100000", (char *)o->etcd, NULL },
    };
    char path[4096];
    double samples[3][5];
    long rss[3] = { 0, 0, 0 };
    int rows = o->etcd ? 3 : 2;

    (void)snprintf(path, sizeof(path), "%s/memory.out", o->dir);
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < rows; i++) {
            long kib = 0;
            FILE *f;

            if (bench_run(argv[i], path, 120) != 0 || !(f = fopen(path, "r"))) {
                fprintf(stderr, "preempt-bench: %s failed\n", label[i]);
                return -1;
            }
            if (fscanf(f, "hwm_kib %ld", &kib) != 1)
                kib = 0;
            (void)fclose(f);
            if (kib <= 0) {
                fprintf(stderr, "preempt-bench: %s did not say its peak resident set\n", label[i]);
                return -1;
            }
            samples[i][k] = (double)kib;
        }
    }
    for (int i = 0; i < rows; i++) {
        rss[i] = (long)bench_pct(samples[i], 5, 50);
        (void)json_object_set_new(out, key[i], json_integer(rss[i]));
    }
    printf("\n7. Memory: a worker's peak RSS (100000 steps; median of 5)\n");
    printf("   %-34s %10s %12s\n", "", "KiB", "+KiB");
    for (int i = 0; i < rows; i++)
        printf("   %-34s %10ld %12ld\n", label[i], rss[i], rss[i] - rss[0]);
    return 0;
}
