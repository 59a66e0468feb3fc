/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-launch.c: a small supervisor for the demo and the tests.
 * It starts W copies of a worker command (appending --worker I --workers W),
 * restarts every worker that exits with the restart code, and stops when
 * every worker has exited with another code. Each worker's stdout lines are
 * passed through with the time since the launch added ("t_ms"), so that a
 * job's JSON lines make one timeline. */
#define _GNU_SOURCE /* sigabbrev_np */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job/outcome-internal.h"
#include "report/progress-internal.h"
#include "timeline.h"
#include "tool.h"

#define MAX_WORKERS 256
#define LINE_MAX_LEN 4096

static const char usage[] =
    "Usage: preempt-launch --workers W [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs W workers: COMMAND ARGS --worker I --workers W, for I = 0..W-1. A\n"
    "worker that asks to be restarted is started again: it exited with the\n"
    "restart code or with 75 (preempted, nothing new saved, the previous\n"
    "checkpoint intact), or a notice signal (SIGTERM, SIGUSR1, SIGUSR2) killed\n"
    "it before it could handle the signal. The launcher ends when every worker\n"
    "has ended otherwise. The workers' stdout lines are printed with \"t_ms\"\n"
    "(milliseconds since the launch) added to each JSON object; the launcher\n"
    "prints its own lines:\n"
    "  {\"event\":\"launch\",\"worker\":I,\"attempt\":N,\"pid\":P,\"t_ms\":T}\n"
    "  {\"event\":\"exited\",\"worker\":I,\"code\":C,\"t_ms\":T}   (C: 128 + signal\n"
    "                                                     when a signal killed it)\n"
    "  {\"event\":\"signal\",\"signal\":\"TERM\",\"workers\":N,\"t_ms\":T}\n"
    "A notice signal (SIGTERM, SIGUSR1, SIGUSR2) or SIGINT to the launcher is\n"
    "passed on to every running worker, and the launch ends: nobody is\n"
    "restarted, and workers still running --kill-delay-ms after the first\n"
    "such signal get SIGKILL. The workers get PREEMPT_LAUNCH_ID, one identity\n"
    "for this launch and its restarts (unless it is set already): a second\n"
    "launch of the same job name is refused while this one has live workers.\n"
    "\n"
    "A worker that crashes (killed by a signal that is no notice: SIGSEGV,\n"
    "SIGABRT, SIGKILL from the OOM killer, ...) takes its group down with it:\n"
    "the others would wait for it in their collectives, so the launcher sends\n"
    "them SIGTERM (they may still commit a checkpoint) and SIGKILL after\n"
    "--kill-delay-ms (30000 when 0), then starts every worker again, which\n"
    "restores the job's last committed checkpoint. The group restarts at most\n"
    "--max-restarts times, after 1 s, 2 s, 4 s, ... (at most 30 s) without\n"
    "any worker running; a crash after that ends the group the same way and\n"
    "the launch fails. Its lines:\n"
    "  {\"event\":\"crashed\",\"worker\":I,\"signal\":\"KILL\",\"t_ms\":T}\n"
    "  {\"event\":\"regroup\",\"attempt\":N,\"why\":\"...\",\"t_ms\":T}\n"
    "  {\"event\":\"hung\",\"worker\":I,\"run\":R,\"idle_ms\":MS,\"t_ms\":T}\n"
    "What the launch's end says changes as workers exit (fsmdump --machine\n"
    "launch-outcome draws the table: an application's code while the group\n"
    "runs is taken back by the regroup a peer's crash causes):\n"
    "  {\"event\":\"outcome\",\"from\":\"clean\",\"input\":\"app-code\",\"to\":\"app-failed\",\"t_ms\":T}\n"
    "\n"
    "At its end the launcher writes the launch's termination record (one JSON\n"
    "object of at most 4096 bytes: its exit code, restarts, and each worker's\n"
    "last exit as the worker's own record says it) to $PREEMPT_TERMINATION_LOG,\n"
    "else /dev/termination-log when it exists and is writable (a pod). The\n"
    "workers write their records into a private directory of the launcher's.\n"
    "\n"
    "  --workers W        number of workers (1..256)\n"
    "  --restart-code C   exit code that means \"restart me\" (default 42)\n"
    "  --hang-timeout S   a worker whose step boundaries stop for S seconds while\n"
    "                     it trains (start-up and saves excepted) is hung: its\n"
    "                     group ends and starts again, as after a crash. Set S\n"
    "                     above the longest step (a boundary ends each one). The\n"
    "                     workers publish their progress in a page the\n"
    "                     launcher maps ($PREEMPT_PROGRESS_FILE): no system\n"
    "                     call per step. Default 0: not watched\n"
    "  --timeline FILE    at the end, draw the launch as an SVG picture: one lane\n"
    "                     per worker (start-up, training, notice and agreement,\n"
    "                     saves, grace period), the notices, commits and exits\n"
    "                     as marks, the signals to the launch, a time axis\n"
    "  --max-restarts N   restarts per worker, and of the whole group after a\n"
    "                     crash, before giving up (default 10)\n"
    "  --kill-delay-ms MS after a signal to the launcher, SIGKILL to the workers\n"
    "                     still running MS later (default 0: never); set it\n"
    "                     below the launcher's own kill delay\n"
    "  --help             this text\n"
    "  --version          the version\n"
    "\n"
    "Exit status: 0 when every worker exited 0; after a signal to the launcher,\n"
    "the restart code when every worker ended asking to be restarted (or was\n"
    "killed at the kill delay; the committed checkpoints are intact) or 0;\n"
    "otherwise 1 when any worker ended otherwise (or was restarted too often);\n"
    "2 on bad usage.\n";

struct worker {
    pid_t pid;
    int fd;           /* its stdout; -1 when closed */
    unsigned attempt;
    int code;         /* last exit code (128 + signal when one killed it); -1 while running */
    bool killed;      /* SIGKILLed by the launcher at the kill delay */
    json_t *record;   /* its last run's termination record; NULL: none read */
    const struct preempt_progress *pg; /* its progress page (--hang-timeout); NULL: not mapped yet */
    char buf[LINE_MAX_LEN];
    size_t len;
};

/* What the launch is doing: its one state, and the only place its
 * decisions read. */
enum phase {
    RUNNING,    /* workers run; one that asks is restarted alone */
    STOPPING,   /* a signal to the launcher: nobody is restarted */
    REGROUPING, /* a worker crashed: the group ends, then starts again */
};

#define REGROUP_KILL_MS 30000u  /* SIGKILL to a group's survivors, without --kill-delay-ms */
#define BACKOFF_MAX_MS 30000u

static struct timespec t0;
/* The signals passed on: the notice signals, then SIGINT (a Ctrl-C). */
static const int passed_on[] = { SIGTERM, SIGUSR1, SIGUSR2, SIGINT };
static const char *const passed_name[] = { "TERM", "USR1", "USR2", "INT" };
#define N_PASSED (sizeof(passed_on) / sizeof(passed_on[0]))
static volatile sig_atomic_t pending[N_PASSED];

static uint64_t t_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)(ts.tv_sec - t0.tv_sec) * 1000u + (uint64_t)((ts.tv_nsec - t0.tv_nsec) / 1000000);
}

/* The loop's wake-up: a signal's handler writes a byte, and the poll that
 * waits for the workers' output reads it, so that a worker's end (SIGCHLD)
 * or a signal to pass on is acted on at once, never at the next timeout
 * (a worker whose pipe closed before its process ended waited up to the
 * old 100 ms poll period to be reaped and restarted). Close-on-exec and
 * non-blocking. */
static int wake_fd[2] = { -1, -1 };

static void wake(void)
{
    int e = errno;
    ssize_t r = wake_fd[1] >= 0 ? write(wake_fd[1], "", 1) : 0;

    (void)r; /* full: a wake-up is pending anyway */
    errno = e;
}

static void on_signal(int sig)
{
    for (size_t i = 0; i < N_PASSED; i++)
        if (passed_on[i] == sig)
            pending[i] = 1;
    wake();
}

static void on_child(int sig)
{
    (void)sig;
    wake();
}

/* How long the loop may wait: until the next thing it must do by time (a
 * kill after --kill-delay, a regroup's kill or restart), at most 100 ms
 * while --hang-timeout watches the progress pages; -1: only for an event
 * (output, a worker's end, a signal). */
static int wait_ms(uint64_t now, uint64_t due, bool hang)
{
    uint64_t ms = due == UINT64_MAX ? UINT64_MAX : due > now ? due - now : 0;

    if (hang && ms > 100)
        ms = 100;
    return ms == UINT64_MAX ? -1 : ms > 60000 ? 60000 : (int)ms;
}

/* A worker that ended asking to be restarted: the restart code, 75 (the
 * library's "not saved, previous checkpoint intact"), or death by a notice
 * signal that came before the worker could handle it (it blocks them only
 * once its main() runs). */
static bool asks_restart(int status, unsigned restart)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) == (int)restart || WEXITSTATUS(status) == 75;
    for (size_t i = 0; WIFSIGNALED(status) && i < N_PASSED; i++)
        if (passed_on[i] == WTERMSIG(status))
            return passed_on[i] != SIGINT; /* a Ctrl-C is no notice */
    return false;
}

static const char *sig_name(int sig)
{
    const char *a = sigabbrev_np(sig);

    return a ? a : "?";
}

/* A worker killed by a signal that is no notice: it crashed. */
static bool crashed(int status)
{
    if (!WIFSIGNALED(status))
        return false;
    for (size_t i = 0; i < N_PASSED; i++)
        if (passed_on[i] == WTERMSIG(status))
            return false;
    return true;
}

/* Prints one line of a worker, with t_ms added to a JSON object. */
static struct timeline *timeline; /* --timeline: every line printed is drawn; NULL: none */

/* Prints one line of the launch (a JSON object and a newline), and draws it. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[LINE_MAX_LEN + 64];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fputs(line, stdout);
    (void)fflush(stdout);
    if (timeline)
        timeline_line(timeline, line);
}

/* One input to the launch's outcome (outcome-internal.h: the only place
 * that decides the launch's exit code), logged in the JSON lines when it
 * changes. */
static void outcome(enum preempt_out_state *out, enum preempt_out_input in)
{
    unsigned st = *out;
    bool listed;

    (void)preempt_decl_step_(&preempt_out_decl_, &st, in, &listed);
    if (listed && st != *out)
        say("{\"event\":\"outcome\",\"from\":\"%s\",\"input\":\"%s\",\"to\":\"%s\",\"t_ms\":%" PRIu64 "}\n",
            preempt_decl_state_(&preempt_out_decl_, *out), preempt_decl_input_(&preempt_out_decl_, in),
            preempt_decl_state_(&preempt_out_decl_, st), t_ms());
    *out = (enum preempt_out_state)st;
}

static void emit(const char *line)
{
    if (line[0] == '{' && line[1] != '}')
        say("{\"t_ms\":%" PRIu64 ",%s\n", t_ms(), line + 1);
    else
        say("%s\n", line);
}

static void drain(struct worker *w, bool eof)
{
    char *nl;

    while ((nl = memchr(w->buf, '\n', w->len))) {
        *nl = '\0';
        emit(w->buf);
        w->len -= (size_t)(nl + 1 - w->buf);
        memmove(w->buf, nl + 1, w->len);
    }
    if (eof || w->len == sizeof(w->buf) - 1) { /* a last line, or one too long */
        w->buf[w->len] = '\0';
        if (w->len)
            emit(w->buf);
        w->len = 0;
    }
}

static void progress_forget(struct worker *w, unsigned i);

static int spawn(struct worker *w, unsigned i, unsigned n, char **cmd, int argc)
{
    progress_forget(w, i);
    char **argv = calloc((size_t)argc + 5, sizeof(char *));
    char wi[16], wn[16];
    int p[2];

    if (!argv || pipe(p) < 0) {
        free(argv);
        return -errno;
    }
    (void)snprintf(wi, sizeof(wi), "%u", i);
    (void)snprintf(wn, sizeof(wn), "%u", n);
    memcpy(argv, cmd, (size_t)argc * sizeof(char *));
    argv[argc] = "--worker";
    argv[argc + 1] = wi;
    argv[argc + 2] = "--workers";
    argv[argc + 3] = wn;
    w->pid = fork();
    if (w->pid < 0) {
        free(argv);
        (void)close(p[0]);
        (void)close(p[1]);
        return -errno;
    }
    if (w->pid == 0) {
        sigset_t none;

        (void)sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        for (size_t k = 0; k < N_PASSED; k++)
            (void)signal(passed_on[k], SIG_DFL);
        (void)dup2(p[1], STDOUT_FILENO);
        (void)close(p[0]);
        (void)close(p[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "preempt-launch: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(argv);
    (void)close(p[1]);
    w->fd = p[0];
    w->code = -1;
    w->len = 0;
    w->attempt++;
    say("{\"event\":\"launch\",\"worker\":%u,\"attempt\":%u,\"pid\":%ld,\"t_ms\":%" PRIu64 "}\n", i, w->attempt,
           (long)w->pid, t_ms());
    return 0;
}

/* ---- progress (--hang-timeout) ------------------------------------------------------ */

static char records_dir[256]; /* the workers' records and progress pages; "" when none */

static void progress_path(char *buf, size_t size, unsigned i)
{
    (void)snprintf(buf, size, "%s/progress-%u", records_dir, i);
}

/* Before a worker starts: the page of its previous run goes. */
static void progress_forget(struct worker *w, unsigned i)
{
    char path[300];

    if (w->pg)
        (void)munmap((void *)w->pg, PREEMPT_PROGRESS_SIZE);
    w->pg = NULL;
    if (!records_dir[0])
        return;
    progress_path(path, sizeof(path), i);
    (void)unlink(path);
}

/* How long a training worker's boundaries have stood still, in ms; 0 while
 * it is not training (or has not published yet). */
static uint64_t idle_ms(struct worker *w, unsigned i)
{
    struct timespec ts;
    uint64_t now_ns, last_ns;

    if (!w->pg) {
        char path[300];
        struct stat st;
        int fd;

        progress_path(path, sizeof(path), i);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return 0;
        if (fstat(fd, &st) == 0 && st.st_size >= (off_t)PREEMPT_PROGRESS_SIZE) {
            void *m = mmap(NULL, PREEMPT_PROGRESS_SIZE, PROT_READ, MAP_SHARED, fd, 0);

            w->pg = m == MAP_FAILED ? NULL : m;
        }
        (void)close(fd);
        if (!w->pg)
            return 0;
    }
    if (__atomic_load_n(&w->pg->magic, __ATOMIC_ACQUIRE) != PREEMPT_PROGRESS_MAGIC ||
        w->pg->version != PREEMPT_PROGRESS_VERSION || w->pg->pid != (int32_t)w->pid ||
        __atomic_load_n(&w->pg->phase, __ATOMIC_ACQUIRE) != PREEMPT_PROGRESS_TRAINING)
        return 0;
    last_ns = w->pg->t0_ns + __atomic_load_n(&w->pg->boundary_us, __ATOMIC_ACQUIRE) * 1000u;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return now_ns > last_ns ? (now_ns - last_ns) / 1000000u : 0;
}

/* ---- the launch's termination record ---------------------------------------------- */

/* Where the workers write their records: a private directory, so that
 * their paths (and a pod's /dev/termination-log) stay the launcher's. */
static void records_begin(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[300];

    (void)snprintf(records_dir, sizeof(records_dir), "%s/preempt-launch-XXXXXX", tmp);
    if (!mkdtemp(records_dir)) {
        fprintf(stderr, "preempt-launch: %s: %s; the workers write no termination records\n", records_dir,
                strerror(errno));
        records_dir[0] = '\0';
        (void)setenv("PREEMPT_TERMINATION_LOG", "", 1);
        return;
    }
    (void)snprintf(path, sizeof(path), "%s/worker-{worker}.json", records_dir);
    (void)setenv("PREEMPT_TERMINATION_LOG", path, 1);
}

/* A worker ended: its record of this run (it may have written none). */
static void record_read(struct worker *w, unsigned i)
{
    char path[300];

    if (!records_dir[0])
        return;
    (void)snprintf(path, sizeof(path), "%s/worker-%u.json", records_dir, i);
    json_decref(w->record);
    w->record = json_load_file(path, 0, NULL);
    (void)unlink(path); /* a next run writes its own */
}

/* The launch's record: its own facts, the fields every worker's record
 * agrees on, and per worker the essentials, as many as fit in 4096 bytes. */
static void record_write(const char *path, struct worker *ws, unsigned n, int code)
{
    static const char *const shared[] = { "libpreempt", "job", "incarnation", "notice_source", "notice_worker",
                                          "agreed_step", "committed_step" };
    static const char *const each[] = { "reason", "code", "why", "committed_step", "steps_lost" };
    json_t *o = json_object(), *list = json_array();
    unsigned restarts = 0, omitted = 0;
    char buf[4096];
    size_t len;
    FILE *f;

    for (unsigned i = 0; i < n; i++)
        restarts += ws[i].attempt - 1;
    (void)json_object_set_new(o, "launch", json_string(getenv("PREEMPT_LAUNCH_ID")));
    (void)json_object_set_new(o, "code", json_integer(code));
    (void)json_object_set_new(o, "workers", json_integer(n));
    (void)json_object_set_new(o, "restarts", json_integer(restarts));
    (void)json_object_set_new(o, "duration_ms", json_integer((json_int_t)t_ms()));
    for (size_t k = 0; k < sizeof(shared) / sizeof(shared[0]); k++) {
        json_t *v = NULL;
        bool same = true;

        for (unsigned i = 0; i < n && same; i++) {
            json_t *x = ws[i].record ? json_object_get(ws[i].record, shared[k]) : NULL;

            if (!v)
                v = x;
            same = x && json_equal(v, x);
        }
        if (same && v) /* notice_source differs between the signalled worker and its peers: left to each */
            (void)json_object_set(o, shared[k], v);
    }
    (void)json_object_set_new(o, "each", list);
    for (unsigned i = 0; i < n; i++) {
        json_t *e = json_pack("{s:I,s:I,s:I}", "worker", (json_int_t)i, "exit", (json_int_t)ws[i].code, "attempts",
                              (json_int_t)ws[i].attempt);

        for (size_t k = 0; ws[i].record && k < sizeof(each) / sizeof(each[0]); k++)
            if (json_object_get(ws[i].record, each[k]))
                (void)json_object_set(e, each[k], json_object_get(ws[i].record, each[k]));
        (void)json_array_append_new(list, e);
        if (json_dumpb(o, NULL, 0, JSON_COMPACT) + 64 > sizeof(buf)) { /* room for the count below */
            (void)json_array_remove(list, json_array_size(list) - 1);
            omitted = n - i;
            break;
        }
    }
    if (omitted)
        (void)json_object_set_new(o, "each_omitted", json_integer(omitted));
    len = json_dumpb(o, buf, sizeof(buf) - 1, JSON_COMPACT);
    json_decref(o);
    if (len == 0 || len >= sizeof(buf) - 1)
        return;
    buf[len++] = '\n';
    f = fopen(path, "we");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
        fprintf(stderr, "preempt-launch: termination record %s: %s\n", path, strerror(errno));
}

/* The launcher's own record path: as the library chooses a worker's. */
static const char *record_path(void)
{
    const char *p = getenv("PREEMPT_TERMINATION_LOG");

    if (p)
        return *p ? p : NULL;
    return access("/dev/termination-log", W_OK) == 0 ? "/dev/termination-log" : NULL;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "workers", required_argument, NULL, 'w' }, { "restart-code", required_argument, NULL, 'r' },
        { "max-restarts", required_argument, NULL, 'm' }, { "kill-delay-ms", required_argument, NULL, 'k' },
        { "hang-timeout", required_argument, NULL, 'H' }, { "timeline", required_argument, NULL, 'T' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, TOOL_OPT_VERSION }, { NULL, 0, NULL, 0 },
    };
    static struct worker ws[MAX_WORKERS];
    unsigned n = 0, restart = 42, max_restarts = 10, running = 0;
    uint64_t kill_delay = 0, stop_at = 0, regroup_kill_at = 0, regroup_at = 0;
    unsigned regroups = 0, hang_s = 0;
    enum phase phase = RUNNING;
    bool killed = false;
    enum preempt_out_state out = PREEMPT_OUT_CLEAN; /* what the launch's end says (outcome-internal.h) */
    const char *own_record, *timeline_path = NULL;
    int code;
    struct sigaction sa = { .sa_handler = on_signal };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:", opts, NULL)) != -1) {
        uint64_t v;

        if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        }
        if (c == TOOL_OPT_VERSION)
            return tool_version("preempt-launch");
        if (c == 'T') {
            timeline_path = optarg;
            continue;
        }
        if (c != 'w' && c != 'r' && c != 'm' && c != 'k' && c != 'H')
            return tool_option_error("preempt-launch", c, argv);
        if (tool_parse_u64("preempt-launch",
                           c == 'w'   ? "--workers"
                           : c == 'r' ? "--restart-code"
                           : c == 'k' ? "--kill-delay-ms"
                           : c == 'H' ? "--hang-timeout"
                                      : "--max-restarts",
                           optarg, c == 'w',
                           c == 'w'   ? MAX_WORKERS
                           : c == 'r' ? 255
                           : c == 'k' ? 86400000
                           : c == 'H' ? 86400
                                      : 1000000,
                           &v))
            return TOOL_USAGE;
        if (c == 'H')
            hang_s = (unsigned)v;
        else if (c == 'k')
            kill_delay = v;
        else if (c == 'w')
            n = (unsigned)v;
        else if (c == 'r')
            restart = (unsigned)v;
        else
            max_restarts = (unsigned)v;
    }
    if (n == 0 || optind >= argc)
        return tool_usage_error("preempt-launch", "%s", n == 0 ? "--workers is required" : "no command after --");
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!getenv("PREEMPT_LAUNCH_ID")) { /* one identity for this launch, its restarts included */
        char id[64];

        (void)snprintf(id, sizeof(id), "pl-%ld-%lld", (long)getpid(), (long long)time(NULL));
        (void)setenv("PREEMPT_LAUNCH_ID", id, 1);
    }
    if (pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "preempt-launch: cannot make a pipe: %s\n", strerror(errno));
        return 1;
    }
    for (size_t k = 0; k < N_PASSED; k++)
        (void)sigaction(passed_on[k], &sa, NULL);
    (void)sigaction(SIGCHLD, &(struct sigaction){ .sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP },
                    NULL);
    own_record = record_path();
    if (timeline_path && !(timeline = timeline_new(n))) {
        fprintf(stderr, "preempt-launch: out of memory\n");
        return 1;
    }
    records_begin();
    if (hang_s && records_dir[0]) {
        char path[300];

        (void)snprintf(path, sizeof(path), "%s/progress-{worker}", records_dir);
        (void)setenv("PREEMPT_PROGRESS_FILE", path, 1);
    } else if (hang_s) {
        fprintf(stderr, "preempt-launch: --hang-timeout needs a directory for the progress pages\n");
        return 1;
    }
    for (unsigned i = 0; i < n; i++) {
        ws[i].fd = -1;
        if (spawn(&ws[i], i, n, argv + optind, argc - optind) < 0) {
            fprintf(stderr, "preempt-launch: cannot start worker %u: %s\n", i, strerror(errno));
            return 1;
        }
        running++;
    }
    while (running > 0 || phase == REGROUPING) {
        char trouble[160] = ""; /* a worker crashed or hung: its group ends */
        struct pollfd pfd[MAX_WORKERS + 1];
        unsigned idx[MAX_WORKERS], np = 0;
        uint64_t due = UINT64_MAX;

        for (size_t k = 0; k < N_PASSED; k++) {
            unsigned sent = 0;

            if (!pending[k])
                continue;
            pending[k] = 0;
            for (unsigned i = 0; i < n; i++)
                if (ws[i].code == -1 && kill(ws[i].pid, passed_on[k]) == 0)
                    sent++;
            say("{\"event\":\"signal\",\"signal\":\"%s\",\"workers\":%u,\"t_ms\":%" PRIu64 "}\n",
                   passed_name[k], sent, t_ms());
            if (phase == REGROUPING) /* the group was ending for a restart: the next launch does it */
                outcome(&out, PREEMPT_OUT_IN_RESUMABLE);
            if (phase != STOPPING) { /* the launch itself is ending: nobody is restarted */
                phase = STOPPING;
                stop_at = t_ms() + kill_delay;
            }
        }
        if (phase == REGROUPING && running > 0 && t_ms() >= regroup_kill_at) {
            for (unsigned i = 0; i < n; i++)
                if (ws[i].code == -1)
                    (void)kill(ws[i].pid, SIGKILL);
            regroup_kill_at = UINT64_MAX;
        }
        if (phase == REGROUPING && running == 0 && t_ms() >= regroup_at) { /* the group starts again */
            phase = RUNNING;
            for (unsigned i = 0; i < n; i++) {
                if (spawn(&ws[i], i, n, argv + optind, argc - optind) < 0) {
                    outcome(&out, PREEMPT_OUT_IN_FAIL);
                    break;
                }
                running++;
            }
            if (out == PREEMPT_OUT_FAILED)
                break;
        }
        if (phase == STOPPING && kill_delay && !killed && t_ms() >= stop_at) {
            for (unsigned i = 0; i < n; i++)
                if (ws[i].code == -1 && kill(ws[i].pid, SIGKILL) == 0)
                    ws[i].killed = true;
            killed = true;
        }
        for (unsigned i = 0; i < n; i++)
            if (ws[i].fd >= 0) {
                idx[np] = i;
                pfd[np++] = (struct pollfd){ .fd = ws[i].fd, .events = POLLIN };
            }
        pfd[np] = (struct pollfd){ .fd = wake_fd[0], .events = POLLIN };
        if (phase == STOPPING && kill_delay && !killed)
            due = stop_at;
        if (phase == REGROUPING)
            due = running > 0 ? regroup_kill_at : regroup_at;
        if (poll(pfd, np + 1, wait_ms(t_ms(), due, hang_s && phase == RUNNING)) < 0 && errno != EINTR)
            break;
        if (pfd[np].revents & POLLIN) { /* woken: what woke it is read below (pending, waitpid) */
            char drain_buf[64];
            ssize_t r;

            do
                r = read(wake_fd[0], drain_buf, sizeof(drain_buf));
            while (r > 0);
        }
        for (unsigned k = 0; k < np; k++) { /* output first: a worker's exit after its EOF */
            struct worker *w = &ws[idx[k]];
            ssize_t r;

            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = read(w->fd, w->buf + w->len, sizeof(w->buf) - 1 - w->len);
            if (r > 0) {
                w->len += (size_t)r;
                drain(w, false);
            } else if (r == 0 || errno != EINTR) {
                drain(w, true);
                (void)close(w->fd);
                w->fd = -1;
            }
        }
        for (unsigned i = 0; i < n; i++) {
            struct worker *w = &ws[i];
            int status;

            if (w->fd >= 0 || w->code != -1 || waitpid(w->pid, &status, WNOHANG) != w->pid)
                continue;
            w->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            say("{\"event\":\"exited\",\"worker\":%u,\"code\":%d,\"t_ms\":%" PRIu64 "}\n", i, w->code, t_ms());
            record_read(w, i);
            running--;
            if (phase == REGROUPING) { /* the group is ending: how each one ends does not matter */
                if (running == 0) {
                    uint64_t backoff = 1000u << (regroups - 1 < 5 ? regroups - 1 : 5);

                    regroup_at = t_ms() + (backoff < BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS);
                }
                continue;
            }
            if (w->code == 0)
                continue;
            if (phase == RUNNING && crashed(status)) {
                say("{\"event\":\"crashed\",\"worker\":%u,\"signal\":\"%s\",\"t_ms\":%" PRIu64 "}\n", i,
                       sig_name(WTERMSIG(status)), t_ms());
                (void)snprintf(trouble, sizeof(trouble), "worker %u crashed (SIG%s)", i, sig_name(WTERMSIG(status)));
                continue;
            }
            if (phase == STOPPING && (w->killed || asks_restart(status, restart))) {
                outcome(&out, PREEMPT_OUT_IN_RESUMABLE); /* the committed checkpoints are intact */
            } else if (phase == RUNNING && asks_restart(status, restart) && w->attempt <= max_restarts) {
                if (spawn(w, i, n, argv + optind, argc - optind) == 0)
                    running++;
                else
                    outcome(&out, PREEMPT_OUT_IN_FAIL);
            } else {
                /* while running, judged when the group has ended (the
                 * table): a peer's crash fails the others' collectives
                 * (an application code), and its exit may be read after
                 * theirs */
                outcome(&out, phase == RUNNING ? PREEMPT_OUT_IN_APP_CODE : PREEMPT_OUT_IN_FAIL);
            }
        }
        for (unsigned i = 0; hang_s && phase == RUNNING && !trouble[0] && i < n; i++) {
            uint64_t idle = ws[i].code == -1 ? idle_ms(&ws[i], i) : 0;

            if (idle > 1000u * hang_s) {
                say("{\"event\":\"hung\",\"worker\":%u,\"run\":%" PRIu64 ",\"idle_ms\":%" PRIu64
                       ",\"t_ms\":%" PRIu64 "}\n",
                       i, ws[i].pg->run, idle, t_ms());
                (void)snprintf(trouble, sizeof(trouble), "worker %u made no step for %" PRIu64 " ms", i, idle);
            }
        }
        if (trouble[0]) { /* the group ends: the others would wait for the one in trouble */
            for (unsigned k = 0; k < n; k++) /* a notice: who can may still save */
                if (ws[k].code == -1)
                    (void)kill(ws[k].pid, SIGTERM);
            if (regroups == max_restarts) { /* the launch ends, failed */
                outcome(&out, PREEMPT_OUT_IN_FAIL);
                phase = STOPPING;
                kill_delay = kill_delay ? kill_delay : REGROUP_KILL_MS;
                stop_at = t_ms() + kill_delay;
            } else {
                phase = REGROUPING;
                regroups++;
                outcome(&out, PREEMPT_OUT_IN_REGROUP); /* the others' failures were the crash's */
                say("{\"event\":\"regroup\",\"attempt\":%u,\"why\":\"%s: the others would wait for it\","
                       "\"t_ms\":%" PRIu64 "}\n",
                       regroups, trouble, t_ms());
                regroup_kill_at = t_ms() + (kill_delay ? kill_delay : REGROUP_KILL_MS);
                if (running == 0)
                    regroup_at = t_ms() + 1000u;
            }
            trouble[0] = '\0';
        }
    }
    code = preempt_out_code_(out, restart);
    if (timeline) { /* the picture of the whole launch */
        FILE *f = fopen(timeline_path, "we");
        int r = f ? timeline_svg(timeline, f) : -errno;

        if (f && fclose(f) != 0 && r == 0)
            r = -errno;
        if (r < 0)
            fprintf(stderr, "preempt-launch: --timeline %s: %s\n", timeline_path, strerror(-r));
        timeline_free(timeline);
    }
    if (own_record)
        record_write(own_record, ws, n, code);
    for (unsigned i = 0; i < n; i++) {
        json_decref(ws[i].record);
        if (records_dir[0])
            progress_forget(&ws[i], i);
    }
    if (records_dir[0])
        (void)rmdir(records_dir);
    return code;
}
