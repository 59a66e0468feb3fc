/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/fault.c: the fault points (see fault-internal.h). The whole file is
 * empty unless the build was configured with --enable-faults. */
#include "fault-internal.h"

#ifdef PREEMPT_FAULTS
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name;
    int err;
} points[PREEMPT_FAULT__COUNT] = {
    [PREEMPT_FAULT_ALLOC] = { "alloc", ENOMEM },     [PREEMPT_FAULT_ETCD] = { "etcd", ECONNREFUSED },
    [PREEMPT_FAULT_WATCH] = { "watch", EPIPE },      [PREEMPT_FAULT_WRITE] = { "write", ENOSPC },
    [PREEMPT_FAULT_FSYNC] = { "fsync", EIO },        [PREEMPT_FAULT_RENAME] = { "rename", EIO },
    [PREEMPT_FAULT_SIGNALFD] = { "signalfd", EMFILE }, [PREEMPT_FAULT_TIMER] = { "timer", ENOMEM },
    [PREEMPT_FAULT_LIBCURL] = { "libcurl", ELIBACC }, [PREEMPT_FAULT_IO_SETUP] = { "io-setup", EPERM },
};

/* The armed point (PREEMPT_FAULT__COUNT: none), read once; one process has
 * one event loop and no other thread, so plain statics serve. */
static bool armed_read;
static enum preempt_fault_point armed = PREEMPT_FAULT__COUNT;
static unsigned long long armed_from, hits[PREEMPT_FAULT__COUNT];
static bool armed_on, armed_kill;

static void read_armed(void)
{
    const char *spec = getenv("PREEMPT_FAULT"), *colon;
    char *end;

    armed_read = true;
    if (!spec || !(colon = strchr(spec, ':')))
        return;
    for (int p = 0; p < PREEMPT_FAULT__COUNT; p++)
        if (strlen(points[p].name) == (size_t)(colon - spec) && !strncmp(spec, points[p].name, (size_t)(colon - spec))) {
            errno = 0;
            armed_from = strtoull(colon + 1, &end, 10);
            if (errno || end == colon + 1 || armed_from == 0 || (*end && strcmp(end, "+") && strcmp(end, "!")))
                return; /* malformed: nothing armed */
            armed_on = *end == '+';
            armed_kill = *end == '!';
            armed = (enum preempt_fault_point)p;
        }
}

static void report(enum preempt_fault_point p, unsigned long long n)
{
    const char *path = getenv("PREEMPT_FAULT_LOG");
    char line[64];
    int fd, len;

    if (!path)
        return;
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    len = snprintf(line, sizeof(line), "%s %llu\n", points[p].name, n);
    if (len > 0)
        (void)!write(fd, line, (size_t)len);
    (void)close(fd);
}

int preempt_fault_(enum preempt_fault_point p)
{
    unsigned long long n;

    if (!armed_read)
        read_armed();
    if (p != armed)
        return 0;
    n = ++hits[p];
    if (n < armed_from || (n > armed_from && !armed_on))
        return 0;
    report(p, n);
    if (armed_kill)
        (void)raise(SIGKILL); /* a crash at exactly this point */
    return -points[p].err;
}
#endif
