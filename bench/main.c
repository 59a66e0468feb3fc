/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/main.c: preempt-bench, the program behind make bench. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench.h"
#include "preempt.h"

static const char usage[] =
    "Usage: preempt-bench [options]\n"
    "\n"
    "Measures libpreempt side by side with its baselines, in one run, and prints\n"
    "a table; --json writes the same figures as JSON. make bench runs it with a\n"
    "private etcd (bench/run.sh); docs/benchmarks.md explains each figure.\n"
    "\n"
    "  --only LIST      sections to run, comma-separated (default all):\n"
    "                   step, agree, ckpt, plan, memory, scale, persist, paths,\n"
    "                   restart\n"
    "  --etcd URL       a local etcd's client URL (agree, memory, scale, paths and\n"
    "                   restart; without it only N = 1 and the local handler are\n"
    "                   measured)\n"
    "  --dir DIR        scratch directory for checkpoints and tool output\n"
    "                   (default: a new directory under $TMPDIR or /tmp)\n"
    "  --json FILE      write the figures as JSON to FILE\n"
    "  --valgrind PATH  valgrind, for instructions per step (default: none)\n"
    "  --strace PATH    strace, for system calls per step (default: none)\n"
    "  --bare PATH      the bench-bare program, for the memory baseline\n"
    "                   (default: bench-bare next to this program); the\n"
    "                   memory figures' worker is bench-worker next to it\n"
    "  --trials N       agreement trials per worker count (default 20; the\n"
    "                   in-process section runs 5 at N >= 64)\n"
    "  --ckpt-mib N     checkpoint size in MiB (default 1024; persist also\n"
    "                   measures 64 MiB)\n"
    "  --backends LIST  persist's rows to run, comma-separated (default all):\n"
    "                   io_uring, aio, aio-4k, chunked\n"
    "  --quick          a smoke run: tiny sizes, N = 1 and 2 (in process 2 and 8),\n"
    "                   3 trials (make check)\n"
    "  --help           this text\n"
    "\n"
    "Exit status: 0 when every section ran, 1 when one failed (it says why),\n"
    "2 on bad usage.\n";

enum { OPT_ONLY = 256, OPT_ETCD, OPT_DIR, OPT_JSON, OPT_VALGRIND, OPT_STRACE, OPT_BARE, OPT_TRIALS, OPT_CKPT,
       OPT_QUICK, OPT_BACKENDS, OPT_HELP };

static const struct {
    const char *name; /* first: bench_names_mask() reads it */
    int (*run)(const struct bench_opts *o, json_t *out);
} sections[] = {
    { "step", bench_step }, { "agree", bench_agree }, { "ckpt", bench_ckpt }, { "plan", bench_plan },
    { "memory", bench_memory }, { "scale", bench_scale }, { "persist", bench_persist },
    { "paths", bench_paths }, { "restart", bench_restart },
};

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "only", required_argument, NULL, OPT_ONLY }, { "etcd", required_argument, NULL, OPT_ETCD },
        { "dir", required_argument, NULL, OPT_DIR }, { "json", required_argument, NULL, OPT_JSON },
        { "valgrind", required_argument, NULL, OPT_VALGRIND }, { "strace", required_argument, NULL, OPT_STRACE },
        { "bare", required_argument, NULL, OPT_BARE }, { "trials", required_argument, NULL, OPT_TRIALS },
        { "ckpt-mib", required_argument, NULL, OPT_CKPT }, { "quick", no_argument, NULL, OPT_QUICK },
        { "backends", required_argument, NULL, OPT_BACKENDS }, { "help", no_argument, NULL, OPT_HELP }, { NULL, 0, NULL, 0 },
    };
    struct bench_opts o = { .trials = 20, .ckpt_mib = 1024 };
    static char self[PATH_MAX], bare[PATH_MAX + 16], worker[PATH_MAX + 16], tmpdir[PATH_MAX];
    const char *only = NULL, *json_path = NULL;
    unsigned wanted = 0; /* sections named by --only, one bit each */
    struct utsname un;
    json_t *root;
    ssize_t n;
    int c, failed = 0;

    if (argc > 1 && strcmp(argv[1], "child-step") == 0)
        return bench_child_step(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "child-worker") == 0)
        return bench_child_worker(argc - 2, argv + 2);
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;

        switch (c) {
        case OPT_ONLY: only = optarg; break;
        case OPT_ETCD: o.etcd = optarg; break;
        case OPT_DIR: o.dir = optarg; break;
        case OPT_JSON: json_path = optarg; break;
        case OPT_VALGRIND: o.valgrind = optarg; break;
        case OPT_STRACE: o.strace = optarg; break;
        case OPT_BARE: o.bare = optarg; break;
        case OPT_TRIALS:
        case OPT_CKPT: {
            unsigned long long v = strtoull(optarg, &end, 10);

            if (*end || v == 0 || v > (c == OPT_TRIALS ? 1000 : 65536)) {
                fprintf(stderr, "preempt-bench: %s: '%s' is out of range\n", c == OPT_TRIALS ? "--trials" : "--ckpt-mib",
                        optarg);
                return 2;
            }
            if (c == OPT_TRIALS)
                o.trials = (unsigned)v;
            else
                o.ckpt_mib = v;
            break;
        }
        case OPT_QUICK: o.quick = true; break;
        case OPT_BACKENDS:
            if (bench_persist_rows(optarg, &o.backends) < 0)
                return 2;
            break;
        case OPT_HELP: fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "preempt-bench: unexpected argument '%s'\n\n%s", argv[optind], usage);
        return 2;
    }
    if (only && bench_names_mask("--only", "section", only, sections, sizeof(sections) / sizeof(sections[0]),
                                 sizeof(sections[0]), &wanted) < 0)
        return 2;
    if (!only)
        wanted = ~0u;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "preempt-bench: cannot find my own program: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    o.self = self;
    if (!o.bare)
        o.bare = bench_neighbour(bare, sizeof(bare), self, "bench-bare");
    o.worker = bench_neighbour(worker, sizeof(worker), self, "bench-worker");
    if (!o.dir) {
        const char *t = getenv("TMPDIR");

        (void)snprintf(tmpdir, sizeof(tmpdir), "%s/preempt-bench.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "preempt-bench: cannot create a scratch directory: %s\n", strerror(errno));
            return 1;
        }
        o.dir = tmpdir;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return 1;
    root = json_object();
    (void)uname(&un);
    (void)json_object_set_new(root, "version", json_string(preempt_version()));
    (void)json_object_set_new(root, "quick", json_boolean(o.quick));
    (void)json_object_set_new(root, "machine", json_pack("{ss ss sI}", "kernel", un.release, "arch", un.machine,
                                                         "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN)));
    (void)json_object_set_new(root, "unix_time", json_integer((json_int_t)time(NULL)));
    printf("libpreempt %s benchmarks on %s %s, %ld CPUs%s\n", preempt_version(), un.machine, un.release,
           sysconf(_SC_NPROCESSORS_ONLN), o.quick ? " (quick smoke run: the figures mean little)" : "");
    for (size_t k = 0; k < sizeof(sections) / sizeof(sections[0]); k++) {
        json_t *sec;

        if (!(wanted & (1u << k)))
            continue;
        sec = json_object();
        (void)fflush(stdout);
        if (sections[k].run(&o, sec) < 0) {
            fprintf(stderr, "preempt-bench: section %s failed\n", sections[k].name);
            (void)json_object_set_new(sec, "failed", json_true());
            failed = 1;
        }
        (void)json_object_set_new(root, sections[k].name, sec);
        (void)fflush(stdout);
    }
    if (json_path && json_dump_file(root, json_path, JSON_INDENT(2) | JSON_SORT_KEYS) < 0) {
        fprintf(stderr, "preempt-bench: cannot write %s\n", json_path);
        failed = 1;
    }
    json_decref(root);
    curl_global_cleanup();
    if (o.dir == tmpdir)
        (void)rmdir(tmpdir);
    return failed;
}
