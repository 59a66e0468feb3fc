/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/paths.c: sections 10 and 11, whose jobs are real processes
 * (tools/preempt-trainer, preempt-launch, on the bench's etcd), run by a
 * script each: bench/paths.sh, the paths a notice can meet (per path, the
 * exit codes and, the highest over the workers, the step saved, the step
 * stopped at, the steps lost and the notice-to-exit time), and
 * bench/restart.sh, what a restart costs (the last exit to every worker
 * training again, and its parts). A section starts its script, prints its
 * table and keeps its rows. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Runs bench/NAME.sh with ARGS after it (its own on the command line:
 * the tools, the etcd, the scratch directory, the JSON file), prints what
 * it printed and keeps the JSON array it wrote as out's "rows". */
static int run_script(const struct bench_opts *o, json_t *out, const char *name, const char *extra)
{
    char script[PATH_MAX], tools[PATH_MAX], dir[PATH_MAX], json_path[PATH_MAX], log_path[PATH_MAX], rel[64];
    const char *src = getenv("top_srcdir");
    json_error_t err;
    json_t *rows;
    char *text;
    int rc;

    (void)snprintf(rel, sizeof(rel), "%s.sh", name);
    if (src && *src)
        (void)snprintf(script, sizeof(script), "%s/bench/%s", src, rel);
    else
        bench_neighbour(script, sizeof(script), o->self, rel); /* the build is the source tree */
    bench_neighbour(tools, sizeof(tools), o->self, "../tools");
    (void)snprintf(dir, sizeof(dir), "%s/%s", o->dir, name);
    (void)snprintf(json_path, sizeof(json_path), "%s/%s.json", o->dir, name);
    (void)snprintf(log_path, sizeof(log_path), "%s/%s.log", o->dir, name);
    {
        char *argv[] = { "/bin/sh", script, tools, (char *)o->etcd, dir, json_path, (char *)extra, NULL };

        rc = bench_run(argv, log_path, 1800);
    }
    printf("\n");
    text = bench_slurp(log_path);
    if (text)
        fputs(text, stdout);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "preempt-bench: bench/%s failed (status %d)\n", rel, rc);
        return -1;
    }
    rows = json_load_file(json_path, 0, &err);
    if (!json_is_array(rows)) {
        fprintf(stderr, "preempt-bench: %s: %s\n", json_path, rows ? "not an array" : err.text);
        json_decref(rows);
        return -1;
    }
    (void)json_object_set_new(out, "rows", rows);
    return 0;
}

int bench_paths(const struct bench_opts *o, json_t *out)
{
    if (!o->etcd) {
        printf("\n10. Paths: not measured (they need a real etcd: make bench starts one)\n");
        return 0;
    }
    return run_script(o, out, "paths", NULL);
}

int bench_restart(const struct bench_opts *o, json_t *out)
{
    if (!o->etcd) {
        printf("\n11. Restart: not measured (it needs a real etcd: make bench starts one)\n");
        return 0;
    }
    return run_script(o, out, "restart", o->quick ? "quick" : NULL);
}
