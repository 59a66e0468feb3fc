/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/report/report.c: the termination record and the metrics file
 * (report-internal.h). */
#include "report-internal.h"
#include "progress-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the termination record ------------------------------------------------------------------- */

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v && *v)
        (void)json_object_set_new(o, k, json_string(v));
}

static void set_u64(json_t *o, const char *k, uint64_t v)
{
    (void)json_object_set_new(o, k, json_integer((json_int_t)v));
}

static void set_ms(json_t *o, const char *k, int64_t v) /* a duration; absent when not measured */
{
    if (v >= 0)
        (void)json_object_set_new(o, k, json_integer((json_int_t)v));
}

static void set_wall(json_t *o, const char *k, uint64_t ms) /* an instant; absent when none */
{
    if (ms)
        set_u64(o, k, ms);
}

int preempt_report_json_(const struct preempt_report *r, char *buf, size_t size)
{
    json_t *o = json_object();
    size_t n, cap = size < PREEMPT_REPORT_MAX ? size : PREEMPT_REPORT_MAX;

    if (!o)
        return -ENOMEM;
    set_str(o, "libpreempt", r->version);
    set_str(o, "reason", r->reason);
    (void)json_object_set_new(o, "code", json_integer(r->code));
    set_str(o, "why", r->why);
    set_str(o, "error", r->error);
    set_str(o, "job", r->job);
    set_u64(o, "worker", r->worker);
    set_u64(o, "workers", r->workers);
    if (r->incarnation)
        set_u64(o, "incarnation", r->incarnation);
    set_str(o, "notice_source", r->source);
    if (r->notice_worker >= 0)
        set_u64(o, "notice_worker", (uint64_t)r->notice_worker);
    set_wall(o, "notice_at_ms", r->notice_at);
    set_wall(o, "deadline_ms", r->deadline);
    set_wall(o, "exit_at_ms", r->exit_at);
    if (r->agreed_step)
        set_u64(o, "agreed_step", r->agreed_step);
    set_u64(o, "committed_step", r->committed_step);
    set_u64(o, "run", r->run);
    set_u64(o, "grace_steps", r->grace_steps);
    set_u64(o, "steps_lost", r->steps_lost);
    set_ms(o, "notice_to_agreed_ms", r->notice_to_agreed_ms);
    set_ms(o, "agreed_to_commit_ms", r->agreed_to_commit_ms);
    set_ms(o, "notice_to_exit_ms", r->notice_to_exit_ms);
    set_u64(o, "saves", r->saves);
    set_u64(o, "bytes_saved", r->bytes_saved);
    set_u64(o, "save_ms", r->save_ms);
    set_u64(o, "stall_ms", r->stall_ms);
    set_u64(o, "restored_step", r->restored_step);
    set_ms(o, "restore_ms", r->restore_ms);
    set_u64(o, "restore_fallbacks", r->restore_fallbacks);
    n = json_dumpb(o, buf, cap > 1 ? cap - 2 : 0, JSON_COMPACT);
    json_decref(o);
    if (n == 0 || n + 2 > cap)
        return -ENOSPC;
    buf[n] = '\n';
    buf[n + 1] = '\0';
    return (int)n + 1;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int preempt_report_write_(const char *path, const char *json, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    int r;

    if (fd < 0)
        return -errno;
    r = write_all(fd, json, len);
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}

/* ---- metrics ---------------------------------------------------------------------------------- */

static const struct family {
    const char *name, *type, *help;
} families[] = {
#define PREEMPT_METRIC_ROW_(id, name, type, help) { name, type, help },
    PREEMPT_METRIC_FAMILIES(PREEMPT_METRIC_ROW_)
#undef PREEMPT_METRIC_ROW_
};

/* Histogram buckets, in seconds: from a fast local save to a long restore. */
static const double buckets[] = { 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct series {
    enum preempt_metric family;
    char *key; /* name{labels} as the file writes it */
    double v;
};

struct preempt_metrics {
    char *labels;
    struct series *s;
    size_t n, cap;
};

static bool histogram(enum preempt_metric id)
{
    return !strcmp(families[id].type, "histogram");
}

static struct series *find(struct preempt_metrics *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->s[i].key, key))
            return &m->s[i];
    return NULL;
}

/* The series of key (added at 0 when new); NULL when out of memory. */
static struct series *series(struct preempt_metrics *m, enum preempt_metric id, const char *key)
{
    struct series *s = find(m, key);

    if (s)
        return s;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        struct series *ns = realloc(m->s, cap * sizeof(*ns));

        if (!ns)
            return NULL;
        m->s = ns;
        m->cap = cap;
    }
    s = &m->s[m->n];
    *s = (struct series){ .family = id, .key = strdup(key) };
    if (!s->key)
        return NULL;
    m->n++;
    return s;
}

/* name[suffix]{labels[,extra]} into buf; false when it does not fit. */
static bool key_of(const struct preempt_metrics *m, enum preempt_metric id, const char *suffix, const char *extra,
                   char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s%s{%s%s%s}", families[id].name, suffix, m->labels, *extra ? "," : "", extra);

    return n > 0 && (size_t)n < size;
}

static void le_label(char *buf, size_t size, size_t i)
{
    if (i < N_BUCKETS)
        (void)snprintf(buf, size, "le=\"%g\"", buckets[i]);
    else
        (void)snprintf(buf, size, "le=\"+Inf\"");
}

/* The family a line's series belongs to (its name, a histogram's with
 * _bucket, _sum or _count), when it is this worker's; -1 otherwise. */
static int family_of(const struct preempt_metrics *m, const char *key)
{
    const char *brace = strchr(key, '{');
    size_t nl = strlen(m->labels);

    if (!brace || strncmp(brace + 1, m->labels, nl) || (brace[1 + nl] != ',' && brace[1 + nl] != '}'))
        return -1;
    for (int id = 0; id < PREEMPT_METRIC__COUNT; id++) {
        size_t fl = strlen(families[id].name);
        const char *rest = key + fl;

        if (strncmp(key, families[id].name, fl))
            continue;
        if (rest == brace)
            return id;
        if (histogram((enum preempt_metric)id) && (!strncmp(rest, "_bucket{", 8) || !strncmp(rest, "_sum{", 5) ||
                                                   !strncmp(rest, "_count{", 7)))
            return id;
    }
    return -1;
}

/* Carries the values of a former run's file on (its own lines only). */
static void carry(struct preempt_metrics *m, const char *previous)
{
    const char *p = previous;

    while (p && *p) {
        const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p);
        size_t len = (size_t)(end - p);
        char line[1024], *sp, *num_end;
        int id;
        double v;

        if (len > 0 && len < sizeof(line) && *p != '#') {
            memcpy(line, p, len);
            line[len] = '\0';
            sp = strrchr(line, ' ');
            if (sp) {
                *sp = '\0';
                v = strtod(sp + 1, &num_end);
                id = family_of(m, line);
                if (id >= 0 && num_end != sp + 1 && *num_end == '\0' && v >= 0) {
                    struct series *s = series(m, (enum preempt_metric)id, line);

                    if (s)
                        s->v = v;
                }
            }
        }
        p = eol ? eol + 1 : end;
    }
}

struct preempt_metrics *preempt_metrics_new_(const char *labels, const char *previous)
{
    struct preempt_metrics *m = calloc(1, sizeof(*m));
    char key[512], le[32];

    if (!m || !(m->labels = strdup(labels))) {
        free(m);
        return NULL;
    }
    /* every histogram and unlabelled counter is there from the start (at 0),
     * in the order the file lists them */
    for (int id = 0; id < PREEMPT_METRIC__COUNT; id++) {
        enum preempt_metric f = (enum preempt_metric)id;

        if (histogram(f)) {
            for (size_t i = 0; i <= N_BUCKETS; i++) {
                le_label(le, sizeof(le), i);
                if (key_of(m, f, "_bucket", le, key, sizeof(key)))
                    (void)series(m, f, key);
            }
            if (key_of(m, f, "_sum", "", key, sizeof(key)))
                (void)series(m, f, key);
            if (key_of(m, f, "_count", "", key, sizeof(key)))
                (void)series(m, f, key);
        } else if (f == PREEMPT_METRIC_SAVED_BYTES || f == PREEMPT_METRIC_STEPS_LOST || f == PREEMPT_METRIC_FALLBACKS) {
            if (key_of(m, f, "", "", key, sizeof(key)))
                (void)series(m, f, key);
        }
    }
    carry(m, previous);
    return m;
}

void preempt_metrics_free_(struct preempt_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->s[i].key);
    free(m->s);
    free(m->labels);
    free(m);
}

void preempt_metrics_add_(struct preempt_metrics *m, enum preempt_metric id, const char *extra, double v)
{
    char key[512];
    struct series *s;

    if (m && key_of(m, id, "", extra ? extra : "", key, sizeof(key)) && (s = series(m, id, key)))
        s->v += v;
}

void preempt_metrics_observe_(struct preempt_metrics *m, enum preempt_metric id, double seconds)
{
    char key[512], le[32];
    struct series *s;

    if (!m || !histogram(id))
        return;
    for (size_t i = 0; i <= N_BUCKETS; i++) {
        le_label(le, sizeof(le), i);
        if ((i == N_BUCKETS || seconds <= buckets[i]) && key_of(m, id, "_bucket", le, key, sizeof(key)) &&
            (s = series(m, id, key)))
            s->v += 1;
    }
    if (key_of(m, id, "_sum", "", key, sizeof(key)) && (s = series(m, id, key)))
        s->v += seconds;
    if (key_of(m, id, "_count", "", key, sizeof(key)) && (s = series(m, id, key)))
        s->v += 1;
}

char *preempt_metrics_text_(const struct preempt_metrics *m)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    if (!f)
        return NULL;
    for (int id = 0; id < PREEMPT_METRIC__COUNT; id++) {
        bool any = false;

        for (size_t i = 0; i < m->n; i++) {
            double v = m->s[i].v;

            if ((int)m->s[i].family != id)
                continue;
            if (!any)
                (void)fprintf(f, "# HELP %s %s.\n# TYPE %s %s\n", families[id].name, families[id].help,
                              families[id].name, families[id].type);
            any = true;
            if (v == (double)(int64_t)v && v < 1e15)
                (void)fprintf(f, "%s %lld\n", m->s[i].key, (long long)v);
            else
                (void)fprintf(f, "%s %.9g\n", m->s[i].key, v);
        }
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int preempt_metrics_write_(const char *path, const char *text)
{
    char tmp[4096];
    int fd, r;

    /* node_exporter reads only *.prom: the temporary name is not one */
    if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    r = write_all(fd, text, strlen(text));
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        (void)unlink(tmp);
    return r;
}

/* ---- progress (progress-internal.h) ----------------------------------------------------------- */

struct preempt_progress *preempt_progress_open_(const char *path, uint64_t t0_ns, int *ret_err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct preempt_progress *p;

    if (fd < 0 || ftruncate(fd, PREEMPT_PROGRESS_SIZE) < 0) {
        *ret_err = -errno;
        if (fd >= 0)
            (void)close(fd);
        return NULL;
    }
    p = mmap(NULL, PREEMPT_PROGRESS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *ret_err = p == MAP_FAILED ? -errno : 0;
    (void)close(fd);
    if (p == MAP_FAILED)
        return NULL;
    p->version = PREEMPT_PROGRESS_VERSION;
    p->pid = (int32_t)getpid();
    p->t0_ns = t0_ns;
    p->run = p->boundary_us = 0;
    __atomic_store_n(&p->phase, (uint32_t)PREEMPT_PROGRESS_STARTING, __ATOMIC_RELAXED);
    __atomic_store_n(&p->magic, PREEMPT_PROGRESS_MAGIC, __ATOMIC_RELEASE); /* the header is complete */
    return p;
}

void preempt_progress_close_(struct preempt_progress *p)
{
    if (p)
        (void)munmap(p, PREEMPT_PROGRESS_SIZE);
}
