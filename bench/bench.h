/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/bench.h: shared parts of preempt-bench (make bench).
 *
 * Every figure is taken side by side with its baseline in the same run:
 * these machines are shared and noisy, so a ratio or a difference measured
 * together means more than an absolute time. Each section fills a JSON
 * object (jansson) and prints its rows of the table on stdout. */
#ifndef PREEMPT_BENCH_H
#define PREEMPT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct bench_opts {
    bool quick;             /* make check's smoke run: tiny sizes, few trials */
    const char *etcd;       /* etcd's client URL (sections agree, memory) */
    const char *dir;        /* scratch directory (checkpoints, traces) */
    const char *self;       /* this program's path, to start its child modes */
    const char *valgrind;   /* NULL: instructions per step not measured */
    const char *strace;     /* NULL: system calls per step not measured */
    const char *bare;       /* the bench-bare program (memory without the library) */
    const char *worker;     /* the bench-worker program (memory with it, linked as a trainer is) */
    unsigned trials;        /* agreement trials per N (default 20) */
    uint64_t ckpt_mib;      /* checkpoint size (default 1024) */
    unsigned backends;      /* persist's rows to run, a bit each (bench_persist_rows; 0: all) */
};

/* Sections: each returns 0, or -1 after printing why on stderr; the figures
 * go into @p out (a JSON object owned by the caller). */
int bench_step(const struct bench_opts *o, json_t *out);
int bench_agree(const struct bench_opts *o, json_t *out);
int bench_ckpt(const struct bench_opts *o, json_t *out);
int bench_plan(const struct bench_opts *o, json_t *out);
int bench_memory(const struct bench_opts *o, json_t *out);
int bench_scale(const struct bench_opts *o, json_t *out);
/* dd bs=1M conv=fsync of mib MiB into dir/dd.bin: its seconds, or -1 (ckpt.c). */
double bench_dd_fsync(const char *dir, uint64_t mib);
int bench_persist(const struct bench_opts *o, json_t *out);
/* The paths a notice can meet, in real jobs of 4 (bench/paths.sh). */
int bench_paths(const struct bench_opts *o, json_t *out);
/* What a restart costs, in real jobs of 2, 8 and 32 (bench/restart.sh). */
int bench_restart(const struct bench_opts *o, json_t *out);
/* --backends: the persist rows named in list (comma-separated) as a bit
 * each in *mask; -1 after saying which name is unknown. */
int bench_persist_rows(const char *list, unsigned *mask);

/* Child modes (argv after the mode word); each returns the exit status. */
int bench_child_step(int argc, char **argv);
int bench_child_worker(int argc, char **argv);

/* ---- helpers (util.c) ---- */

struct preempt_callbacks;
/* A benchmark's local handler: restores nothing, never exits the process. */
extern const struct preempt_callbacks bench_quiet_callbacks;

uint64_t bench_now_ns(void); /* CLOCK_MONOTONIC: the same clock in every process */

/* Sorts v in place; the nearest-rank percentile p (0..100) of n values. */
double bench_pct(double *v, size_t n, double p);

/* Runs argv with stdout and stderr sent to out_path (NULL: /dev/null);
 * returns the exit status (or -1). Bounded by timeout_s (the child is
 * killed). */
int bench_run(char *const argv[], const char *out_path, unsigned timeout_s);

/* The comma-separated names of list as a bit each in *mask (cleared
 * first): entry i of the n at table, stride bytes apart, is named by its
 * first member (a const char *). -1 after saying, for option opt, which
 * name is not a `what` of the table (and which are). */
int bench_names_mask(const char *opt, const char *what, const char *list, const void *table, size_t n, size_t stride,
                     unsigned *mask);

/* The program (or path) name next to self, an absolute path, in buf. */
const char *bench_neighbour(char *buf, size_t size, const char *self, const char *name);

/* Removes a directory tree (rm -rf, bounded); returns rm's status. */
int bench_rm_rf(const char *path);

/* Reads a whole file (NUL-terminated, malloc'ed) or returns NULL. */
char *bench_slurp(const char *path);

/* The values of one Prometheus counter family in a /metrics text, summed
 * over the lines whose labels contain @p label (NULL: all). */
double bench_metric(const char *text, const char *name, const char *label);

/* GET url into a malloc'ed string (NULL on failure), bounded by 5 s. */
char *bench_http_get(const char *url);

#endif
