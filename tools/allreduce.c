/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/allreduce.c: see allreduce.h. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "allreduce.h"

struct allreduce {
    unsigned worker, workers;
    int *fds; /* the hub: one per other worker, by index; a worker: fds[0], the hub */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void set_timeouts(int fd, unsigned timeout_ms)
{
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000 };
    int one = 1;

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int io_all(int fd, void *buf, size_t n, bool out)
{
    char *p = buf;

    while (n > 0) {
        ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

        if (r == 0)
            return -ECONNRESET; /* the peer is gone */
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static struct sockaddr_in hub_addr(unsigned port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sa;
}

static int open_hub(struct allreduce *a, unsigned port, unsigned timeout_ms)
{
    struct sockaddr_in sa = hub_addr(port);
    uint64_t end = mono_ms() + timeout_ms;
    int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r = 0;
    unsigned joined = 0;

    if (lfd < 0)
        return -errno;
    (void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, (int)a->workers) < 0) {
        r = -errno;
        goto out;
    }
    set_timeouts(lfd, timeout_ms); /* accept() waits at most that long */
    while (joined + 1 < a->workers) {
        uint32_t who;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0) {
            r = errno == EAGAIN || errno == EWOULDBLOCK || mono_ms() >= end ? -ETIMEDOUT : -errno;
            if (errno == EINTR && mono_ms() < end)
                continue;
            goto out;
        }
        set_timeouts(fd, timeout_ms);
        if (io_all(fd, &who, sizeof(who), false) < 0 || who == 0 || who >= a->workers || a->fds[who] >= 0) {
            (void)close(fd); /* not one of this job's workers */
            continue;
        }
        a->fds[who] = fd;
        joined++;
    }
out:
    (void)close(lfd);
    return r;
}

static int open_worker(struct allreduce *a, unsigned port, unsigned timeout_ms)
{
    struct sockaddr_in sa = hub_addr(port);
    uint64_t end = mono_ms() + timeout_ms;
    uint32_t who = a->worker;

    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
            return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            set_timeouts(fd, timeout_ms);
            a->fds[0] = fd;
            return io_all(fd, &who, sizeof(who), true);
        }
        (void)close(fd);
        if (mono_ms() >= end)
            return -ETIMEDOUT;
        (void)usleep(20000); /* the hub is not listening yet */
    }
}

int allreduce_open(unsigned worker, unsigned workers, unsigned port, unsigned timeout_ms, struct allreduce **ret)
{
    struct allreduce *a;
    int r;

    if (workers == 0 || worker >= workers || port == 0 || port > 65535 || !ret)
        return -EINVAL;
    a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->worker = worker;
    a->workers = workers;
    a->fds = malloc(workers * sizeof(*a->fds));
    if (!a->fds) {
        free(a);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < workers; i++)
        a->fds[i] = -1;
    r = workers == 1 ? 0 : worker == 0 ? open_hub(a, port, timeout_ms) : open_worker(a, port, timeout_ms);
    if (r < 0) {
        allreduce_close(a);
        return r;
    }
    *ret = a;
    return 0;
}

int allreduce_sum(struct allreduce *a, uint64_t in, uint64_t *ret_sum)
{
    uint64_t sum = in, v;
    int r;

    if (a->workers == 1) {
        *ret_sum = in;
        return 0;
    }
    if (a->worker != 0) {
        if ((r = io_all(a->fds[0], &in, sizeof(in), true)) < 0)
            return r;
        return io_all(a->fds[0], ret_sum, sizeof(*ret_sum), false);
    }
    for (unsigned i = 1; i < a->workers; i++) {
        if ((r = io_all(a->fds[i], &v, sizeof(v), false)) < 0)
            return r;
        sum += v;
    }
    for (unsigned i = 1; i < a->workers; i++)
        if ((r = io_all(a->fds[i], &sum, sizeof(sum), true)) < 0)
            return r;
    *ret_sum = sum;
    return 0;
}

void allreduce_close(struct allreduce *a)
{
    if (!a)
        return;
    for (unsigned i = 0; i < a->workers; i++)
        if (a->fds[i] >= 0)
            (void)close(a->fds[i]);
    free(a->fds);
    free(a);
}
