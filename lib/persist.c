/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/persist.c: the persist phase of a two-phase save on the handler's
 * loop (lib/persist-internal.h): io_uring with its completions on the
 * loop, or bounded chunks from the loop's passes. No threads. */
#define _GNU_SOURCE /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <liburing.h>

#include "ckpt-internal.h" /* preempt_crc32c_ */
#include "fault-internal.h"
#include "persist-internal.h"

#define CANCEL_WAIT_MS 5000

/* One request on the ring: a write of a blob's range, or its fsync. */
struct req {
    bool used, fsync;
    size_t blob;
    uint64_t off, len;
};

struct preempt_persist {
    struct event_base *base;
    enum preempt_persist_backend backend;
    struct io_uring ring;
    bool have_ring;
    int efd;                 /* the ring's completions (io_uring), else -1 */
    struct event *ev_cq;     /* efd readable */
    struct event *ev_pass;   /* the next pass (a timer due at once) */
    struct req req[PREEMPT_PERSIST_DEPTH];
    unsigned inflight;
    struct preempt_persist_blob *blobs; /* NULL: no persist under way */
    size_t n;
    int failed;              /* the first error of the persist under way */
    bool broken;             /* the ring refused a submission: given up once drained */
    uint64_t budget;         /* bytes of the loop thread's work the boundary still owes (its minimum) */
    uint64_t slice_us;       /* the boundary's time: a share of the trainer's mean step (0: none) */
    uint64_t until_us;       /* the pass under way may go on until then (0: only the budget) */
    uint64_t rate;           /* measured bytes of the loop thread's work per ms (0: not yet) */
    uint64_t write_len;      /* io_uring: bytes per write (more with long steps) */
    bool eager;              /* the trainer waits: passes follow each other */
    unsigned char *scratch;  /* read-back buffer of blobs the trainer wrote */
    preempt_persist_done_fn done;
    void *arg;
};

const char *preempt_persist_backend_name_(enum preempt_persist_backend b)
{
    switch (b) {
    case PREEMPT_PERSIST_AUTO:
        return "auto";
    case PREEMPT_PERSIST_URING:
        return "io_uring";
    case PREEMPT_PERSIST_CHUNKED:
        return "chunked";
    }
    return "?";
}

int preempt_persist_backend_from_string_(const char *name, enum preempt_persist_backend *ret)
{
    static const enum preempt_persist_backend all[] = { PREEMPT_PERSIST_AUTO, PREEMPT_PERSIST_URING,
                                                        PREEMPT_PERSIST_CHUNKED };

    if (!name || !*name) {
        *ret = PREEMPT_PERSIST_AUTO;
        return 0;
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(name, preempt_persist_backend_name_(all[i])) == 0) {
            *ret = all[i];
            return 0;
        }
    }
    return -EINVAL;
}

enum preempt_persist_backend preempt_persist_backend_(const struct preempt_persist *p)
{
    return p->backend;
}

bool preempt_persist_busy_(const struct preempt_persist *p)
{
    return p && p->blobs;
}

/* ---- the end of a persist ----------------------------------------------------------- */

static void clear(struct preempt_persist *p)
{
    p->blobs = NULL;
    p->n = 0;
    p->failed = 0;
    (void)event_del(p->ev_pass);
}

static void drop_ring(struct preempt_persist *p);

static void finish(struct preempt_persist *p, int status)
{
    preempt_persist_done_fn done = p->done;
    void *arg = p->arg;

    clear(p);
    if (p->broken) /* nothing of it in the kernel any more: the ring goes, the next persist is chunked */
        drop_ring(p);
    done(status, arg);
}

static uint64_t pass_bytes(const struct preempt_persist *p)
{
    return p->backend == PREEMPT_PERSIST_URING ? PREEMPT_PERSIST_PASS_URING : PREEMPT_PERSIST_PASS_CHUNKED;
}

static uint64_t mono_us(void)
{
    struct timespec t;

    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Whether the pass under way may do more work (one more chunk, or one
 * more write): its boundary's minimum budget is not spent, or its time
 * slice has not ended. */
static bool may_go_on(const struct preempt_persist *p)
{
    return p->budget > 0 || (p->until_us && mono_us() < p->until_us);
}

/* n bytes of work done: taken from the budget (the time slice covers the rest). */
static void spend(struct preempt_persist *p, uint64_t n)
{
    p->budget = p->budget > n ? p->budget - n : 0;
}

static void next_pass(struct preempt_persist *p)
{
    static const struct timeval now = { 0, 0 };

    (void)event_add(p->ev_pass, &now);
}

/* The next bytes of a blob the trainer wrote itself, read back into the
 * checksum: n bytes at its queued offset. */
static int read_back(struct preempt_persist *p, struct preempt_persist_blob *b, uint64_t n)
{
    for (uint64_t got = 0; got < n;) {
        ssize_t r = pread(b->fd, p->scratch, (size_t)(n - got), (off_t)(b->queued + got));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO; /* shorter than it was at the start */
        b->crc32c = preempt_crc32c_(b->crc32c, p->scratch, (size_t)r);
        got += (uint64_t)r;
    }
    return 0;
}

/* ---- chunked: one chunk per pass --------------------------------------------------- */

static int write_chunk(struct preempt_persist_blob *b, uint64_t n)
{
    const char *src = (const char *)b->data + b->queued;
    int r;

    if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0)
        return r;
    for (uint64_t done = 0; done < n;) {
        ssize_t w = pwrite(b->fd, src + done, (size_t)(n - done), (off_t)(b->queued + done));

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        done += (uint64_t)w;
    }
    b->crc32c = preempt_crc32c_(b->crc32c, src, (size_t)n);
    return 0;
}

static int chunked_pass(struct preempt_persist *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct preempt_persist_blob *b = &p->blobs[i];
        int r;

        if (b->durable)
            continue;
        while (b->queued < b->len && may_go_on(p)) {
            uint64_t n = b->len - b->queued;

            if (n > PREEMPT_PERSIST_CHUNK)
                n = PREEMPT_PERSIST_CHUNK;
            if (p->budget && n > p->budget)
                n = p->budget; /* the minimum's last bytes (the slice goes on in whole chunks) */
            r = b->data ? write_chunk(b, n) : read_back(p, b, n);
            if (r < 0)
                return r;
            /* the kernel starts writing this range back now */
            (void)sync_file_range(b->fd, (off_t)b->queued, (off_t)n, SYNC_FILE_RANGE_WRITE);
            b->queued += n;
            b->written += n;
            spend(p, n);
        }
        if (b->queued < b->len)
            return 0; /* the budget and the slice are spent */
        if ((r = preempt_fault_(PREEMPT_FAULT_FSYNC)) < 0 || fdatasync(b->fd) < 0)
            return r < 0 ? r : -errno;
        b->size = b->len;
        b->durable = true;
        p->budget = 0; /* a fdatasync ends the minimum: only the slice's time goes on */
        if (i + 1 < p->n && !may_go_on(p))
            return 0; /* the blobs are made durable in order: those after i are not yet */
    }
    return 1;
}

/* ---- io_uring ---------------------------------------------------------------------- */

static struct req *free_req(struct preempt_persist *p)
{
    for (unsigned i = 0; i < PREEMPT_PERSIST_DEPTH; i++)
        if (!p->req[i].used)
            return &p->req[i];
    return NULL;
}

static void submit_req(struct preempt_persist *p, struct req *q)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring); /* never NULL: the ring has DEPTH entries */
    struct preempt_persist_blob *b = &p->blobs[q->blob];

    if (q->fsync)
        io_uring_prep_fsync(sqe, b->fd, IORING_FSYNC_DATASYNC);
    else
        io_uring_prep_write(sqe, b->fd, (const char *)b->data + q->off, (unsigned)q->len, q->off);
    io_uring_sqe_set_data64(sqe, (uint64_t)(q - p->req));
    q->used = true;
    p->inflight++;
}

/* Takes in the completed requests. */
static void reap(struct preempt_persist *p)
{
    struct io_uring_cqe *cqe;

    while (io_uring_peek_cqe(&p->ring, &cqe) == 0) {
        struct req *q = &p->req[io_uring_cqe_get_data64(cqe) % PREEMPT_PERSIST_DEPTH];
        int res = cqe->res;

        io_uring_cqe_seen(&p->ring, cqe);
        q->used = false;
        p->inflight--;
        if (!p->blobs)
            continue; /* cancelled: only waited for */
        if (res < 0) {
            if (!p->failed)
                p->failed = res;
            continue;
        }
        if (q->fsync) {
            p->blobs[q->blob].size = p->blobs[q->blob].len;
            p->blobs[q->blob].durable = true;
        } else if ((uint64_t)res < q->len) { /* short: the rest again */
            if (res == 0) {
                if (!p->failed)
                    p->failed = -EIO;
                continue;
            }
            q->off += (uint64_t)res;
            q->len -= (uint64_t)res;
            p->blobs[q->blob].written += (uint64_t)res;
            submit_req(p, q);
        } else {
            p->blobs[q->blob].written += q->len;
        }
    }
}

/* Queues the next writes and fsyncs within the budget (submitted by
 * uring_pass). 1: every blob is durable; 0: more to come; or a negative errno. */
static int uring_queue(struct preempt_persist *p)
{
    bool all = true;
    struct req *q = NULL;
    int r;

    for (size_t i = 0; i < p->n; i++) {
        struct preempt_persist_blob *b = &p->blobs[i];

        if (b->durable)
            continue;
        all = false;
        while (b->queued < b->len && may_go_on(p) && (!b->data || (q = free_req(p)))) {
            uint64_t n = b->len - b->queued;

            if (n > p->write_len)
                n = p->write_len;
            if (!b->data) { /* read back on the loop: the page cache has it */
                if (n > PREEMPT_PERSIST_CHUNK)
                    n = PREEMPT_PERSIST_CHUNK; /* the read-back buffer's size */
                if (p->budget && n > p->budget)
                    n = p->budget;
                if ((r = read_back(p, b, n)) < 0)
                    return r;
                b->written += n;
            } else {
                if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0)
                    return r;
                b->crc32c = preempt_crc32c_(b->crc32c, (const char *)b->data + b->queued, (size_t)n);
                *q = (struct req){ .blob = i, .off = b->queued, .len = n };
                submit_req(p, q);
            }
            b->queued += n;
            spend(p, n);
        }
        if (b->queued == b->len && b->written == b->len && !b->syncing && (q = free_req(p))) {
            if ((r = preempt_fault_(PREEMPT_FAULT_FSYNC)) < 0)
                return r;
            *q = (struct req){ .blob = i, .fsync = true };
            submit_req(p, q);
            b->syncing = true;
        }
    }
    return all ? 1 : 0;
}

/* Hands what is queued to the kernel. A ring that cannot take it is given
 * up (what it holds is waited for, what it did not take is dropped with
 * it; later persists are chunked): its queue must never reach the kernel
 * once the buffers it points at are the caller's again. */
static int submit(struct preempt_persist *p)
{
    int r;

    do
        r = io_uring_submit(&p->ring);
    while (r == -EINTR);
    if (r >= 0)
        return 0;
    p->inflight -= io_uring_sq_ready(&p->ring);
    p->broken = true;
    return r;
}

/* One pass: the completions in, more writes out. 1: every blob is
 * durable; 0: more to come; or a negative errno. */
static int uring_pass(struct preempt_persist *p)
{
    int r, s;

    reap(p);
    r = p->failed ? (p->inflight ? 0 : p->failed) /* the writes the kernel holds first */
                  : uring_queue(p);
    s = submit(p); /* always: a resubmitted short write, or what was queued before an error */
    return r == 0 && s < 0 ? s : r;
}

/* ---- the loop's callbacks ------------------------------------------------------------ */

static uint64_t queued(const struct preempt_persist *p)
{
    uint64_t n = 0;

    for (size_t i = 0; i < p->n; i++)
        n += p->blobs[i].queued;
    return n;
}

/* Folds a pass's work (bytes in us microseconds) into the measured rate;
 * passes of less than a chunk say little and are left out. */
static void measure(struct preempt_persist *p, uint64_t bytes, uint64_t us)
{
    uint64_t r;

    if (bytes < PREEMPT_PERSIST_CHUNK)
        return;
    r = bytes * 1000u / (us ? us : 1);
    p->rate = p->rate ? (3 * p->rate + r) / 4 : r;
}

static void on_pass(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_persist *p = arg;
    uint64_t t0, q0;
    int r;

    (void)fd;
    (void)what;
    if (!p->blobs)
        return;
    if (p->eager)
        p->budget = pass_bytes(p);
    t0 = mono_us();
    q0 = queued(p);
    p->until_us = p->slice_us ? t0 + p->slice_us : 0; /* a boundary's first pass has its slice */
    p->slice_us = 0;
    r = p->backend == PREEMPT_PERSIST_URING ? uring_pass(p) : chunked_pass(p);
    if (p->blobs)
        measure(p, queued(p) - q0, mono_us() - t0);
    if (r < 0 && p->backend == PREEMPT_PERSIST_URING && p->inflight) {
        if (!p->failed)
            p->failed = r; /* ended once the kernel gave the buffers back */
        return;
    }
    if (r != 0)
        finish(p, r < 0 ? r : 0);
    else if (p->eager && (p->backend == PREEMPT_PERSIST_CHUNKED || p->budget == 0))
        next_pass(p); /* work is left that this thread can do now (else the ring's completions wake it) */
}

void preempt_persist_kick_(struct preempt_persist *p, uint64_t step_us)
{
    uint64_t w = PREEMPT_PERSIST_CHUNK;

    if (!p || !p->blobs)
        return;
    p->budget = pass_bytes(p);
    p->slice_us = step_us / PREEMPT_PERSIST_STEP_SHARE;
    if (p->rate && p->slice_us) { /* long steps: larger writes, so that a boundary's writes span its slice */
        uint64_t bytes = p->rate * (p->slice_us / 1000u);

        if (bytes / PREEMPT_PERSIST_DEPTH > w)
            w = bytes / PREEMPT_PERSIST_DEPTH;
        if (w > PREEMPT_PERSIST_WRITE_MAX)
            w = PREEMPT_PERSIST_WRITE_MAX;
        w &= ~(uint64_t)((1u << 20) - 1); /* whole MiB */
    }
    p->write_len = w;
    next_pass(p);
}

void preempt_persist_pace_(struct preempt_persist *p, bool eager)
{
    if (!p)
        return;
    p->eager = eager;
    if (eager)
        preempt_persist_kick_(p, 0);
}

static void on_cq(evutil_socket_t fd, short what, void *arg)
{
    uint64_t v;

    (void)what;
    while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
        ;
    on_pass(fd, what, arg);
}

/* ---- life ------------------------------------------------------------------------------ */

static int setup_ring(struct preempt_persist *p)
{
    int r = io_uring_queue_init(PREEMPT_PERSIST_DEPTH, &p->ring, 0);

    if (r < 0)
        return r;
    p->have_ring = true;
    if ((p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return -errno;
    if ((r = io_uring_register_eventfd(&p->ring, p->efd)) < 0)
        return r;
    if (!(p->ev_cq = event_new(p->base, p->efd, EV_READ | EV_PERSIST, on_cq, p)) || event_add(p->ev_cq, NULL) < 0)
        return -ENOMEM;
    return 0;
}

/* The ring goes (nothing of a persist may be in it any more, or what is
 * stays with the kernel's exit of it): whatever persists later is chunked. */
static void drop_ring(struct preempt_persist *p)
{
    if (p->ev_cq)
        event_free(p->ev_cq);
    p->ev_cq = NULL;
    if (p->have_ring)
        io_uring_queue_exit(&p->ring);
    p->have_ring = false;
    if (p->efd >= 0)
        (void)close(p->efd);
    p->efd = -1;
    p->backend = PREEMPT_PERSIST_CHUNKED;
    p->broken = false;
    p->inflight = 0;
}

static const char *why_not(int err)
{
    switch (err) {
    case -EPERM:
    case -EACCES:
        return "io_uring is not permitted here (a seccomp profile or kernel.io_uring_disabled)";
    case -ENOSYS:
        return "this kernel has no io_uring";
    case -ENOMEM:
        return "io_uring could not lock its ring's memory (RLIMIT_MEMLOCK)";
    default:
        return "io_uring could not be set up";
    }
}

int preempt_persist_new_(struct event_base *base, enum preempt_persist_backend want, struct preempt_persist **ret,
                         const char **ret_why)
{
    struct preempt_persist *p = calloc(1, sizeof(*p));
    int r = 0;

    if (ret_why)
        *ret_why = NULL;
    if (!p)
        return -ENOMEM;
    p->base = base;
    p->efd = -1;
    p->backend = want == PREEMPT_PERSIST_CHUNKED ? PREEMPT_PERSIST_CHUNKED : PREEMPT_PERSIST_URING;
    if (!(p->ev_pass = evtimer_new(base, on_pass, p))) {
        free(p);
        return -ENOMEM;
    }
    if (p->backend == PREEMPT_PERSIST_URING && (r = setup_ring(p)) < 0) {
        drop_ring(p);
        if (want == PREEMPT_PERSIST_URING) {
            preempt_persist_free_(p);
            return r;
        }
        if (ret_why)
            *ret_why = why_not(r);
    }
    *ret = p;
    return 0;
}

int preempt_persist_start_(struct preempt_persist *p, struct preempt_persist_blob *blobs, size_t n,
                           preempt_persist_done_fn done, void *arg)
{
    if (!p || (!blobs && n) || !done)
        return -EINVAL;
    if (p->blobs)
        return -EBUSY;
    for (size_t i = 0; i < n; i++) {
        struct preempt_persist_blob *b = &blobs[i];

        b->queued = b->written = b->size = 0;
        b->crc32c = 0;
        b->syncing = b->durable = false;
        if (!b->data) {
            struct stat st;

            if (fstat(b->fd, &st) < 0)
                return -errno;
            b->len = (uint64_t)st.st_size;
            if (!p->scratch && !(p->scratch = malloc(PREEMPT_PERSIST_CHUNK)))
                return -ENOMEM;
        }
    }
    p->blobs = blobs;
    p->n = n;
    p->failed = 0;
    p->done = done;
    p->arg = arg;
    p->eager = false;
    preempt_persist_kick_(p, 0);
    return 0;
}

static int64_t mono_ms(void)
{
    return (int64_t)(mono_us() / 1000u);
}

/* Waits for the writes the kernel holds, CANCEL_WAIT_MS in all: they read
 * the caller's buffers. */
static void drain(struct preempt_persist *p)
{
    int64_t until = mono_ms() + CANCEL_WAIT_MS, left;
    struct io_uring_cqe *cqe;

    while (p->have_ring && p->inflight > 0 && (left = until - mono_ms()) > 0) {
        struct __kernel_timespec ts = { .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000 };

        if (io_uring_wait_cqe_timeout(&p->ring, &cqe, &ts) < 0)
            break; /* past the bound: the ring's exit waits for them in the kernel */
        reap(p);
    }
}

void preempt_persist_cancel_(struct preempt_persist *p)
{
    if (!p || !p->blobs)
        return;
    clear(p);
    drain(p);
    if (p->broken || p->inflight) /* not all came back within the bound: this ring is not used again */
        drop_ring(p);
}

void preempt_persist_free_(struct preempt_persist *p)
{
    if (!p)
        return;
    preempt_persist_cancel_(p);
    drop_ring(p);
    if (p->ev_pass)
        event_free(p->ev_pass);
    free(p->scratch);
    free(p);
}
