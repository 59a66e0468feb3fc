/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-launch.c: a small supervisor for the demo and the tests.
 * It starts W copies of a worker command (appending --worker I --workers W),
 * restarts every worker that exits with the restart code, and stops when
 * every worker has exited with another code. Each worker's stdout lines are
 * passed through with the time since the launch added ("t_ms"), so that a
 * job's JSON lines make one timeline. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#define MAX_WORKERS 256
#define LINE_MAX_LEN 4096

static const char usage[] =
    "Usage: preempt-launch --workers W [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs W workers: COMMAND ARGS --worker I --workers W, for I = 0..W-1. A\n"
    "worker that exits with the restart code is started again; the launcher\n"
    "ends when every worker has exited with another code. The workers' stdout\n"
    "lines are printed with \"t_ms\" (milliseconds since the launch) added to\n"
    "each JSON object; the launcher prints its own lines:\n"
    "  {\"event\":\"launch\",\"worker\":I,\"attempt\":N,\"pid\":P,\"t_ms\":T}\n"
    "  {\"event\":\"exited\",\"worker\":I,\"code\":C,\"t_ms\":T}\n"
    "SIGTERM or SIGINT to the launcher is passed on to every worker. The\n"
    "workers get PREEMPT_LAUNCH_ID, one identity for this launch and its\n"
    "restarts (unless it is set already): a second launch of the same job name\n"
    "is refused while this one has live workers.\n"
    "\n"
    "  --workers W        number of workers (1..256)\n"
    "  --restart-code C   exit code that means \"restart me\" (default 42)\n"
    "  --max-restarts N   restarts per worker before giving up (default 10)\n"
    "  --help             this text\n"
    "  --version          the version\n"
    "\n"
    "Exit status: 0 when every worker exited 0; 1 when any exited otherwise\n"
    "(or was restarted too often); 2 on bad usage.\n";

struct worker {
    pid_t pid;
    int fd;           /* its stdout; -1 when closed */
    unsigned attempt;
    int code;         /* last exit code; -1 while running */
    char buf[LINE_MAX_LEN];
    size_t len;
};

static struct timespec t0;
static volatile sig_atomic_t got_signal;

static uint64_t t_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)(ts.tv_sec - t0.tv_sec) * 1000u + (uint64_t)((ts.tv_nsec - t0.tv_nsec) / 1000000);
}

static void on_signal(int sig)
{
    got_signal = sig;
}

/* Prints one line of a worker, with t_ms added to a JSON object. */
static void emit(const char *line)
{
    if (line[0] == '{' && line[1] != '}')
        printf("{\"t_ms\":%" PRIu64 ",%s\n", t_ms(), line + 1);
    else
        printf("%s\n", line);
    (void)fflush(stdout);
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

static int spawn(struct worker *w, unsigned i, unsigned n, char **cmd, int argc)
{
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
        (void)signal(SIGTERM, SIG_DFL);
        (void)signal(SIGINT, SIG_DFL);
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
    printf("{\"event\":\"launch\",\"worker\":%u,\"attempt\":%u,\"pid\":%ld,\"t_ms\":%" PRIu64 "}\n", i, w->attempt,
           (long)w->pid, t_ms());
    (void)fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "workers", required_argument, NULL, 'w' }, { "restart-code", required_argument, NULL, 'r' },
        { "max-restarts", required_argument, NULL, 'm' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, TOOL_OPT_VERSION }, { NULL, 0, NULL, 0 },
    };
    static struct worker ws[MAX_WORKERS];
    unsigned n = 0, restart = 42, max_restarts = 10, running = 0;
    bool failed = false;
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
        if (c != 'w' && c != 'r' && c != 'm')
            return tool_option_error("preempt-launch", c, argv);
        if (tool_parse_u64("preempt-launch", c == 'w' ? "--workers" : c == 'r' ? "--restart-code" : "--max-restarts",
                           optarg, c == 'w', c == 'w' ? MAX_WORKERS : c == 'r' ? 255 : 1000000, &v))
            return TOOL_USAGE;
        if (c == 'w')
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
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGINT, &sa, NULL);
    for (unsigned i = 0; i < n; i++) {
        ws[i].fd = -1;
        if (spawn(&ws[i], i, n, argv + optind, argc - optind) < 0) {
            fprintf(stderr, "preempt-launch: cannot start worker %u: %s\n", i, strerror(errno));
            return 1;
        }
        running++;
    }
    while (running > 0) {
        struct pollfd pfd[MAX_WORKERS];
        unsigned idx[MAX_WORKERS], np = 0;

        if (got_signal) {
            for (unsigned i = 0; i < n; i++)
                if (ws[i].code == -1)
                    (void)kill(ws[i].pid, (int)got_signal);
            max_restarts = 0; /* the launcher itself is stopping */
            got_signal = 0;
        }
        for (unsigned i = 0; i < n; i++)
            if (ws[i].fd >= 0) {
                idx[np] = i;
                pfd[np++] = (struct pollfd){ .fd = ws[i].fd, .events = POLLIN };
            }
        if (poll(pfd, np, 100) < 0 && errno != EINTR)
            break;
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
            printf("{\"event\":\"exited\",\"worker\":%u,\"code\":%d,\"t_ms\":%" PRIu64 "}\n", i, w->code, t_ms());
            (void)fflush(stdout);
            running--;
            if (w->code == (int)restart && w->attempt <= max_restarts) {
                if (spawn(w, i, n, argv + optind, argc - optind) == 0)
                    running++;
                else
                    failed = true;
            } else if (w->code != 0) {
                failed = true;
            }
        }
    }
    return failed ? 1 : 0;
}
