/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/paths.c: section 10, the paths a notice can meet. The jobs are real
 * processes (tools/preempt-trainer, four workers on the bench's etcd), run
 * by bench/paths.sh; this section starts it, prints its table and keeps its
 * rows: per path, the exit codes and, the highest over the workers, the
 * step saved, the step stopped at, the steps lost and the notice-to-exit
 * time, from each worker's termination record. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The file next to dir_of's directory: "<dir of dir_of>/<rel>". */
static void beside(char *buf, size_t size, const char *dir_of, const char *rel)
{
    const char *slash = strrchr(dir_of, '/');

    (void)snprintf(buf, size, "%.*s/%s", slash ? (int)(slash - dir_of) : 1, slash ? dir_of : ".", rel);
}

int bench_paths(const struct bench_opts *o, json_t *out)
{
    char script[PATH_MAX], trainer[PATH_MAX], dir[PATH_MAX], json_path[PATH_MAX], log_path[PATH_MAX];
    const char *src = getenv("top_srcdir");
    json_error_t err;
    json_t *rows;
    char *text;
    int rc;

    if (!o->etcd) {
        printf("\n10. Paths: not measured (they need a real etcd: make bench starts one)\n");
        return 0;
    }
    if (src && *src)
        (void)snprintf(script, sizeof(script), "%s/bench/paths.sh", src);
    else
        beside(script, sizeof(script), o->self, "paths.sh"); /* the build is the source tree */
    beside(trainer, sizeof(trainer), o->self, "../tools/preempt-trainer");
    (void)snprintf(dir, sizeof(dir), "%s/paths", o->dir);
    (void)snprintf(json_path, sizeof(json_path), "%s/paths.json", o->dir);
    (void)snprintf(log_path, sizeof(log_path), "%s/paths.log", o->dir);
    {
        char *argv[] = { "/bin/sh", script, trainer, (char *)o->etcd, dir, json_path, NULL };

        rc = bench_run(argv, log_path, 900);
    }
    printf("\n");
    text = bench_slurp(log_path);
    if (text)
        fputs(text, stdout);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "preempt-bench: bench/paths.sh failed (status %d)\n", rc);
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
