/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/util.c: clocks, percentiles, child processes, /metrics scraping. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench.h"
#include "preempt.h"

static void quiet_exit(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    (void)h;
    (void)reason;
    (void)code;
    (void)ud;
}

static int quiet_restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h;
    (void)step;
    (void)ud;
    return 0;
}

const struct preempt_callbacks bench_quiet_callbacks = { .restore = quiet_restore, .on_exit = quiet_exit };

uint64_t bench_now_ns(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_pct(double *v, size_t n, double p)
{
    size_t rank;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    rank = (size_t)((p / 100.0) * (double)n + 0.999999); /* nearest rank, 1-based */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

int bench_run(char *const argv[], const char *out_path, unsigned timeout_s)
{
    uint64_t until = bench_now_ns() + (uint64_t)timeout_s * 1000000000u;
    int status = 0;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd >= 0) {
            (void)dup2(fd, 1);
            (void)dup2(fd, 2);
            (void)close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        struct timespec ts = { 0, 5000000 };

        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (bench_now_ns() > until) {
            fprintf(stderr, "preempt-bench: %s ran past %u s; killed\n", argv[0], timeout_s);
            (void)kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            return -1;
        }
        (void)nanosleep(&ts, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *name_at(const void *table, size_t stride, size_t i)
{
    const char *name;

    memcpy(&name, (const char *)table + i * stride, sizeof(name));
    return name;
}

int bench_names_mask(const char *opt, const char *what, const char *list, const void *table, size_t n, size_t stride,
                     unsigned *mask)
{
    *mask = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ","), k = 0;

        while (k < n && !(strlen(name_at(table, stride, k)) == len && !strncmp(p, name_at(table, stride, k), len)))
            k++;
        if (k == n) {
            fprintf(stderr, "preempt-bench: %s: unknown %s '%.*s' (", opt, what, (int)len, p);
            for (k = 0; k < n; k++)
                fprintf(stderr, "%s%s", k ? ", " : "", name_at(table, stride, k));
            fputs(")\n", stderr);
            return -1;
        }
        *mask |= 1u << k;
        p += len + (p[len] == ',');
    }
    return 0;
}

int bench_rm_rf(const char *path)
{
    char *argv[] = { "/bin/rm", "-rf", (char *)path, NULL };

    return bench_run(argv, NULL, 120);
}

char *bench_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f)
        return NULL;
    do {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 65536);

            if (!nb) {
                free(buf);
                (void)fclose(f);
                return NULL;
            }
            buf = nb;
        }
        n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
    } while (n > 0);
    (void)fclose(f);
    buf[len] = '\0';
    return buf;
}

double bench_metric(const char *text, const char *name, const char *label)
{
    size_t nl = strlen(name);
    double sum = 0;

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *eol = strchr(p, '\n'), *sp;

        if (strncmp(p, name, nl) != 0 || (p[nl] != ' ' && p[nl] != '{'))
            continue;
        sp = memchr(p, ' ', eol ? (size_t)(eol - p) : strlen(p));
        if (!sp)
            continue;
        if (label) {
            const char *l = strstr(p, label);

            if (!l || l > sp)
                continue;
        }
        sum += strtod(sp + 1, NULL);
    }
    return sum;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    char **buf = arg;
    size_t old = *buf ? strlen(*buf) : 0;
    char *nb = realloc(*buf, old + size * n + 1);

    if (!nb)
        return 0;
    memcpy(nb + old, data, size * n);
    nb[old + size * n] = '\0';
    *buf = nb;
    return size * n;
}

char *bench_http_get(const char *url)
{
    CURL *c = curl_easy_init();
    char *buf = NULL;
    long code = 0;

    if (!c)
        return NULL;
    (void)curl_easy_setopt(c, CURLOPT_URL, url);
    (void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    (void)curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &buf);
    if (curl_easy_perform(c) != CURLE_OK || curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK ||
        code != 200) {
        free(buf);
        buf = NULL;
    }
    curl_easy_cleanup(c);
    return buf;
}

const char *bench_neighbour(char *buf, size_t size, const char *self, const char *name)
{
    const char *slash = strrchr(self, '/');

    (void)snprintf(buf, size, "%.*s%s", (int)(slash - self + 1), self, name);
    return buf;
}
