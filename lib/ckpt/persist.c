/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/persist.c: the persist phase of a two-phase save on the handler's
 * loop (lib/ckpt/persist-internal.h): io_uring or Linux AIO with their
 * completions on the loop, or bounded chunks from the loop's passes. No
 * threads. */
#define _GNU_SOURCE /* sync_file_range, fallocate, O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <liburing.h>

#include "ckpt-internal.h" /* preempt_crc32c_ */
#include "base/base.h"
#include "persist-internal.h"

#define CANCEL_WAIT_MS 5000

#define DIO_ALIGN PREEMPT_PERSIST_DIO_ALIGN

/* Bytes copied (into the page cache, or a bounce buffer) before they are
 * checksummed: the checksum then reads what the copy just brought into
 * the processor's cache, not memory (1 GiB chunked: 0.34 s added to the
 * steps, 0.47-0.50 s with the checksum after each 8 MiB write;
 * docs/benchmarks.md). */
#define CHUNK_PIECE ((uint64_t)256 << 10)

/* One request in the kernel's queue (io_uring's or AIO's): a write of a
 * blob's range from buf, or its fsync. */
struct req {
    bool used, fsync;
    size_t blob;
    uint64_t off, len;
    const unsigned char *buf;
};

struct preempt_persist {
    struct event_base *base;
    enum preempt_persist_backend backend;
    enum preempt_persist_backend run; /* the persist's under way, or the last one's (aio's may run chunked) */
    struct io_uring ring;
    bool have_ring;
    aio_context_t aio;       /* aio's context (0: none) */
    struct iocb iocb[PREEMPT_PERSIST_AIO_DEPTH];
    unsigned char *bounce;   /* aio: AIO_DEPTH aligned chunks for data not aligned for O_DIRECT */
    int efd;                 /* the ring's or AIO's completions, else -1 */
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
    bool paced;              /* the persist under way (or the last) spanned a step boundary while training went on */
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
    case PREEMPT_PERSIST_AIO:
        return "aio";
    }
    return "?";
}

int preempt_persist_backend_from_string_(const char *name, enum preempt_persist_backend *ret)
{
    static const enum preempt_persist_backend all[] = { PREEMPT_PERSIST_AUTO, PREEMPT_PERSIST_URING,
                                                        PREEMPT_PERSIST_AIO, PREEMPT_PERSIST_CHUNKED };

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
    return p->run;
}

bool preempt_persist_busy_(const struct preempt_persist *p)
{
    return p && p->blobs;
}

/* ---- the end of a persist ----------------------------------------------------------- */

static void unset_direct(struct preempt_persist_blob *b);

static void clear(struct preempt_persist *p)
{
    for (size_t i = 0; i < p->n; i++)
        unset_direct(&p->blobs[i]); /* the descriptors are the caller's again, as they were */
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
    return p->run == PREEMPT_PERSIST_CHUNKED ? PREEMPT_PERSIST_PASS_CHUNKED : PREEMPT_PERSIST_PASS_URING;
}

/* Whether the persist under way has requests in the kernel's queue (io_uring's or AIO's). */
static bool queued_in_kernel(const struct preempt_persist *p)
{
    return p->run != PREEMPT_PERSIST_CHUNKED;
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

/* A chunk's bytes are written and checksummed a piece at a time. */
static int write_chunk(struct preempt_persist_blob *b, uint64_t n)
{
    const char *src = (const char *)b->data + b->queued;
    int r;

    if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0)
        return r;
    for (uint64_t done = 0; done < n;) {
        uint64_t want = n - done < CHUNK_PIECE ? n - done : CHUNK_PIECE;
        ssize_t w = pwrite(b->fd, src + done, (size_t)want, (off_t)(b->queued + done));

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        b->crc32c = preempt_crc32c_(b->crc32c, src + done, (size_t)w);
        done += (uint64_t)w;
    }
    return 0;
}

/* Hands the pages of a blob's file before the chunk that precedes the
 * one starting at `at` back to the allocator (persist-internal.h: the
 * chunked backend), so that the next chunks are written into them.
 * Paced by steps, their writeback started a step or more ago and they are
 * clean by now; a page still under writeback (a disk slower than the
 * steps) stays in the cache, as any file's, and nothing waits for it.
 * While the trainer waits (wait: eager passes), the writeback of those
 * chunks is waited for first: passes follow each other, so they are
 * mostly still being written, and the final fdatasync() would wait for
 * them anyway. Without it, an eager persist of 1 GiB after a paced one
 * (which had recycled its pages) wrote into fresh pages at 0.4x dd's
 * rate; with it, as fast as the disk. UINT64_MAX: the whole file (it is
 * durable: every page is clean). */
static int drop_behind(struct preempt_persist_blob *b, uint64_t at, bool wait)
{
    uint64_t end = at == UINT64_MAX ? b->len : at > PREEMPT_PERSIST_CHUNK ? at - PREEMPT_PERSIST_CHUNK : 0;
    int r;

    if (at == UINT64_MAX)
        b->dropped = 0; /* the pages skipped under writeback before are clean now */
    if (end <= b->dropped)
        return 0;
    /* The wait reports a write-back error, and takes it: the file's
     * fdatasync() would not see it again, so it fails the persist here. */
    if (wait && ((r = preempt_fault_(PREEMPT_FAULT_FSYNC)) < 0 ||
                 (r = sync_file_range(b->fd, (off_t)b->dropped, (off_t)(end - b->dropped),
                                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                          SYNC_FILE_RANGE_WAIT_AFTER) < 0 ? -errno : 0) < 0))
        return r;
    (void)posix_fadvise(b->fd, (off_t)b->dropped, (off_t)(end - b->dropped), POSIX_FADV_DONTNEED);
    b->dropped = end;
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
            if ((r = drop_behind(b, b->queued, p->eager)) < 0)
                return r;
            b->queued += n;
            b->written += n;
            spend(p, n);
        }
        if (b->queued < b->len)
            return 0; /* the budget and the slice are spent */
        if ((r = preempt_fault_(PREEMPT_FAULT_FSYNC)) < 0 || fdatasync(b->fd) < 0)
            return r < 0 ? r : -errno;
        (void)drop_behind(b, UINT64_MAX, false); /* durable: its last chunks too (nothing waits) */
        b->size = b->len;
        b->durable = true;
        p->budget = 0; /* a fdatasync ends the minimum: only the slice's time goes on */
        if (i + 1 < p->n && !may_go_on(p))
            return 0; /* the blobs are made durable in order: those after i are not yet */
    }
    return 1;
}

/* ---- io_uring ---------------------------------------------------------------------- */

/* A request not in flight (of io_uring's DEPTH, or aio's AIO_DEPTH). */
static struct req *free_req(struct preempt_persist *p)
{
    unsigned depth = p->run == PREEMPT_PERSIST_AIO ? PREEMPT_PERSIST_AIO_DEPTH : PREEMPT_PERSIST_DEPTH;

    for (unsigned i = 0; i < depth; i++)
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
        io_uring_prep_write(sqe, b->fd, q->buf, (unsigned)q->len, q->off);
    io_uring_sqe_set_data64(sqe, (uint64_t)(q - p->req));
    q->used = true;
    p->inflight++;
}

/* A request came back from the kernel with res (bytes written, or a
 * negative errno). true: a short write, whose rest (q now) must be
 * submitted again. */
static bool took(struct preempt_persist *p, struct req *q, int64_t res)
{
    struct preempt_persist_blob *b;

    q->used = false;
    p->inflight--;
    if (!p->blobs)
        return false; /* cancelled: only waited for */
    b = &p->blobs[q->blob];
    if (res < 0 || (res == 0 && !q->fsync && q->len)) {
        if (!p->failed)
            p->failed = res < 0 ? (int)res : -EIO;
        return false;
    }
    if (q->fsync) {
        b->size = b->len;
        b->durable = true;
    } else if ((uint64_t)res < q->len) { /* short: the rest again */
        q->off += (uint64_t)res;
        q->len -= (uint64_t)res;
        q->buf += res;
        b->written += (uint64_t)res;
        return true;
    } else {
        b->written += q->len; /* an aio write's zeros past a file's end are not the file's */
    }
    return false;
}

/* Takes in the completed requests. */
static void reap(struct preempt_persist *p)
{
    struct io_uring_cqe *cqe;

    while (io_uring_peek_cqe(&p->ring, &cqe) == 0) {
        struct req *q = &p->req[io_uring_cqe_get_data64(cqe) % PREEMPT_PERSIST_DEPTH];
        int res = cqe->res;

        io_uring_cqe_seen(&p->ring, cqe);
        if (took(p, q, res))
            submit_req(p, q);
    }
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

/* ---- Linux AIO, past the page cache --------------------------------------------------- */

static uint64_t dio_round(uint64_t n)
{
    return (n + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
}

/* Opens a blob's file to O_DIRECT for the persist and allocates its space,
 * so that the writes neither extend the file nor allocate in io_submit()
 * (ext4 and XFS then write asynchronously). false: the filesystem refuses
 * O_DIRECT. */
static bool set_direct(struct preempt_persist_blob *b)
{
    int fl = fcntl(b->fd, F_GETFL);

    if (fl < 0 || fcntl(b->fd, F_SETFL, fl | O_DIRECT) < 0)
        return false;
    b->direct = true;
    if (b->len)
        (void)fallocate(b->fd, 0, 0, (off_t)dio_round(b->len)); /* where it cannot, the writes allocate */
    return true;
}

static void unset_direct(struct preempt_persist_blob *b)
{
    int fl;

    if (!b->direct)
        return;
    b->direct = false;
    if ((fl = fcntl(b->fd, F_GETFL)) >= 0)
        (void)fcntl(b->fd, F_SETFL, fl & ~O_DIRECT);
}

/* Hands one request to the kernel; a write's length is rounded up to the
 * alignment (the zeros past a file's end are cut off before its fsync). */
static int aio_submit(struct preempt_persist *p, struct req *q)
{
    unsigned k = (unsigned)(q - p->req);
    struct iocb *cb = &p->iocb[k], *cbs[1] = { cb };
    const struct preempt_persist_blob *b = &p->blobs[q->blob];

    *cb = (struct iocb){ .aio_data = k, .aio_fildes = (uint32_t)b->fd, .aio_flags = IOCB_FLAG_RESFD,
                         .aio_resfd = (uint32_t)p->efd };
    if (q->fsync) {
        cb->aio_lio_opcode = IOCB_CMD_FDSYNC;
    } else {
        cb->aio_lio_opcode = IOCB_CMD_PWRITE;
        cb->aio_buf = (uint64_t)(uintptr_t)q->buf;
        cb->aio_nbytes = dio_round(q->len);
        cb->aio_offset = (int64_t)q->off;
    }
    while (syscall(SYS_io_submit, p->aio, 1L, cbs) < 0)
        if (errno != EINTR)
            return -errno;
    q->used = true;
    p->inflight++;
    return 0;
}

/* Takes in the completed requests, waiting up to wait_us for one when
 * wait_us is not 0. */
static void aio_reap(struct preempt_persist *p, uint64_t wait_us)
{
    struct io_event ev[PREEMPT_PERSIST_AIO_DEPTH];
    struct timespec ts = { .tv_sec = (time_t)(wait_us / 1000000u), .tv_nsec = (long)(wait_us % 1000000u) * 1000 };
    long n;
    int r;

    do
        n = syscall(SYS_io_getevents, p->aio, wait_us ? 1L : 0L, (long)PREEMPT_PERSIST_AIO_DEPTH, ev, &ts);
    while (n < 0 && errno == EINTR);
    for (long i = 0; i < n; i++) {
        struct req *q = &p->req[ev[i].data % PREEMPT_PERSIST_AIO_DEPTH];

        if (took(p, q, ev[i].res) && (r = aio_submit(p, q)) < 0 && !p->failed)
            p->failed = r;
    }
}

/* A free request: one now, or, while a boundary's time slice lasts (long
 * steps), one that the kernel gives back within it. NULL: every request
 * is in flight; their completions bring the next pass. */
static struct req *aio_next_req(struct preempt_persist *p)
{
    struct req *q;
    uint64_t now;

    while (!(q = free_req(p)) && !p->failed && p->until_us && (now = mono_us()) < p->until_us)
        aio_reap(p, p->until_us - now);
    return p->failed ? NULL : q;
}

/* ---- either kernel queue: writes and fsyncs within the budget ------------------------- */

/* Hands a request to the kernel: AIO's at once, io_uring's with the
 * pass's submission. */
static int submit_one(struct preempt_persist *p, struct req *q)
{
    if (p->run == PREEMPT_PERSIST_AIO)
        return aio_submit(p, q);
    submit_req(p, q);
    return 0;
}

/* Checksums a write's bytes into *crc. With aio, a write of data not
 * aligned for O_DIRECT (or of a file's last bytes, with zeros past them)
 * goes through a bounce buffer, copied a piece at a time, and the
 * checksum reads each piece just copied, from the processor's cache. */
static void checksum_req(struct preempt_persist *p, struct req *q, bool aio, uint32_t *crc)
{
    unsigned char *bb = p->bounce + (size_t)(q - p->req) * PREEMPT_PERSIST_CHUNK;

    if (!aio || ((uintptr_t)q->buf % DIO_ALIGN == 0 && q->len % DIO_ALIGN == 0)) {
        *crc = preempt_crc32c_(*crc, q->buf, (size_t)q->len);
        return;
    }
    for (uint64_t o = 0; o < q->len; o += CHUNK_PIECE) {
        size_t n = (size_t)(q->len - o < CHUNK_PIECE ? q->len - o : CHUNK_PIECE);

        memcpy(bb + o, q->buf + o, n);
        *crc = preempt_crc32c_(*crc, bb + o, n);
    }
    memset(bb + q->len, 0, (size_t)(dio_round(q->len) - q->len));
    q->buf = bb;
}

/* Queues the next writes and fsyncs within the budget: io_uring's (which
 * uring_pass then submits) or AIO's (submitted one by one). 1: every blob
 * is durable; 0: more to come; or a negative errno. */
static int kernel_queue(struct preempt_persist *p)
{
    bool aio = p->run == PREEMPT_PERSIST_AIO;
    bool all = true;
    struct req *q;
    int r;

    for (size_t i = 0; i < p->n; i++) {
        struct preempt_persist_blob *b = &p->blobs[i];

        if (b->durable)
            continue;
        all = false;
        while (b->queued < b->len && may_go_on(p)) {
            const unsigned char *src = (const unsigned char *)b->data + b->queued;
            uint64_t n = b->len - b->queued, most = aio ? PREEMPT_PERSIST_CHUNK : p->write_len;

            if (n > most)
                n = most;
            if (!b->data) { /* read back on the loop: the page cache has it */
                if (n > PREEMPT_PERSIST_CHUNK)
                    n = PREEMPT_PERSIST_CHUNK; /* the read-back buffer's size */
                if (p->budget && n > p->budget)
                    n = p->budget;
                if ((r = read_back(p, b, n)) < 0)
                    return r;
                b->written += n;
            } else {
                if (!(q = aio ? aio_next_req(p) : free_req(p)))
                    break; /* every request in flight: their completions bring the next pass */
                if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0)
                    return r;
                *q = (struct req){ .blob = i, .off = b->queued, .len = n, .buf = src };
                checksum_req(p, q, aio, &b->crc32c);
                if ((r = submit_one(p, q)) < 0)
                    return r;
            }
            b->queued += n;
            spend(p, n);
        }
        if (b->queued == b->len && b->written == b->len && !b->syncing && (q = free_req(p))) {
            if ((r = preempt_fault_(PREEMPT_FAULT_FSYNC)) < 0)
                return r;
            if (b->direct && b->len % DIO_ALIGN && ftruncate(b->fd, (off_t)b->len) < 0)
                return -errno; /* the last aio write's zeros go */
            *q = (struct req){ .blob = i, .fsync = true };
            if ((r = submit_one(p, q)) < 0)
                return r;
            b->syncing = true;
        }
    }
    return all ? 1 : 0;
}

/* One pass: the completions in, more writes out. 1: every blob is
 * durable; 0: more to come; or a negative errno. */
static int uring_pass(struct preempt_persist *p)
{
    int r, s;

    reap(p);
    r = p->failed ? (p->inflight ? 0 : p->failed) /* the writes the kernel holds first */
                  : kernel_queue(p);
    s = submit(p); /* always: a resubmitted short write, or what was queued before an error */
    return r == 0 && s < 0 ? s : r;
}

/* The same with AIO. */
static int aio_pass(struct preempt_persist *p)
{
    int r;

    aio_reap(p, 0);
    r = p->failed ? 0 : kernel_queue(p);
    if (r >= 0 && p->failed) /* a completion said so, before the pass or while it waited for one */
        r = p->inflight ? 0 : p->failed; /* the writes the kernel holds first */
    return r;
}

/* The persist's files to O_DIRECT, and the bounce buffers it needs: the
 * persist runs with aio; or, when a file refuses O_DIRECT, chunked. */
static int aio_prepare(struct preempt_persist *p, struct preempt_persist_blob *blobs, size_t n)
{
    bool bounce = false;

    p->run = PREEMPT_PERSIST_AIO;
    for (size_t i = 0; i < n && p->run == PREEMPT_PERSIST_AIO; i++) {
        if (!blobs[i].data)
            continue;
        if (!set_direct(&blobs[i]))
            p->run = PREEMPT_PERSIST_CHUNKED;
        bounce = bounce || (uintptr_t)blobs[i].data % DIO_ALIGN || blobs[i].len % DIO_ALIGN;
    }
    if (p->run == PREEMPT_PERSIST_AIO && bounce && !p->bounce) {
        size_t len = (size_t)PREEMPT_PERSIST_AIO_DEPTH * PREEMPT_PERSIST_CHUNK;

        if (!(p->bounce = aligned_alloc(DIO_ALIGN, len))) /* kept: resident from its first persist on */
            return -ENOMEM;
    }
    if (p->run == PREEMPT_PERSIST_CHUNKED)
        for (size_t i = 0; i < n; i++)
            unset_direct(&blobs[i]);
    return 0;
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
    r = p->run == PREEMPT_PERSIST_URING ? uring_pass(p) : p->run == PREEMPT_PERSIST_AIO ? aio_pass(p) : chunked_pass(p);
    if (p->blobs)
        measure(p, queued(p) - q0, mono_us() - t0);
    if (r < 0 && queued_in_kernel(p) && p->inflight) {
        if (!p->failed)
            p->failed = r; /* ended once the kernel gave the buffers back */
        return;
    }
    if (r != 0)
        finish(p, r < 0 ? r : 0);
    else if (p->eager && (!queued_in_kernel(p) || p->budget == 0))
        next_pass(p); /* work is left that this thread can do now (else the kernel's completions wake it) */
}

static void kick(struct preempt_persist *p, uint64_t step_us)
{
    uint64_t w = PREEMPT_PERSIST_CHUNK;

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

void preempt_persist_kick_(struct preempt_persist *p, uint64_t step_us)
{
    if (!p || !p->blobs)
        return;
    if (!p->eager)
        p->paced = true; /* a step ended while the persist waited for the next boundary */
    kick(p, step_us);
}

bool preempt_persist_paced_(const struct preempt_persist *p)
{
    return p && p->paced;
}

void preempt_persist_pace_(struct preempt_persist *p, bool eager)
{
    if (!p || !p->blobs)
        return;
    p->eager = eager;
    if (eager)
        kick(p, 0);
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

/* The completions' eventfd on the loop (the ring or the AIO context then
 * signals it). */
static int setup_cq(struct preempt_persist *p)
{
    if ((p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return -errno;
    if (!(p->ev_cq = event_new(p->base, p->efd, EV_READ | EV_PERSIST, on_cq, p)) || event_add(p->ev_cq, NULL) < 0)
        return -ENOMEM;
    return 0;
}

static int setup_ring(struct preempt_persist *p)
{
    int r = preempt_fault_(PREEMPT_FAULT_IO_SETUP);

    if (r == 0)
        r = io_uring_queue_init(PREEMPT_PERSIST_DEPTH, &p->ring, 0);
    if (r < 0)
        return r;
    p->have_ring = true;
    if ((r = setup_cq(p)) < 0)
        return r;
    return io_uring_register_eventfd(&p->ring, p->efd);
}

static int setup_aio(struct preempt_persist *p)
{
    int r = preempt_fault_(PREEMPT_FAULT_IO_SETUP);

    if (r < 0)
        return r;
    if (syscall(SYS_io_setup, (long)PREEMPT_PERSIST_AIO_DEPTH, &p->aio) < 0) {
        p->aio = 0;
        return -errno;
    }
    return setup_cq(p);
}

/* The ring or the AIO context goes (nothing of a persist may be in it any
 * more, or what is stays with the kernel's exit of it, which waits for
 * AIO's writes): whatever persists later is chunked. */
static void drop_ring(struct preempt_persist *p)
{
    if (p->ev_cq)
        event_free(p->ev_cq);
    p->ev_cq = NULL;
    if (p->have_ring)
        io_uring_queue_exit(&p->ring);
    p->have_ring = false;
    if (p->aio)
        (void)syscall(SYS_io_destroy, p->aio);
    p->aio = 0;
    if (p->efd >= 0)
        (void)close(p->efd);
    p->efd = -1;
    p->backend = p->run = PREEMPT_PERSIST_CHUNKED;
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

/* ring: io_uring was tried first, and could not be set up either. */
static const char *why_not_aio(int err, bool ring)
{
    switch (err) {
    case -EPERM:
    case -EACCES:
    case -ENOSYS:
        return ring ? "neither io_uring nor Linux AIO is permitted here (a seccomp profile)"
                    : "Linux AIO is not permitted here (a seccomp profile)";
    case -EAGAIN:
        return ring ? "io_uring is not permitted here and Linux AIO's requests are used up (fs.aio-max-nr)"
                    : "Linux AIO's requests are used up (fs.aio-max-nr)";
    default:
        return ring ? "neither io_uring nor Linux AIO could be set up" : "Linux AIO could not be set up";
    }
}

int preempt_persist_new_(struct event_base *base, enum preempt_persist_backend want, struct preempt_persist **ret,
                         const char **ret_why)
{
    struct preempt_persist *p = calloc(1, sizeof(*p));
    const char *why = NULL;
    int r = 0;

    if (ret_why)
        *ret_why = NULL;
    if (!p)
        return -ENOMEM;
    p->base = base;
    p->efd = -1;
    p->backend = want == PREEMPT_PERSIST_AUTO ? PREEMPT_PERSIST_URING : want;
    if (!(p->ev_pass = evtimer_new(base, on_pass, p))) {
        free(p);
        return -ENOMEM;
    }
    /* A backend that cannot be set up here gives way to the next, named
     * or not: io_uring to Linux AIO, Linux AIO to chunks (always there).
     * The checkpoint matters more than the way it is written. */
    if (p->backend == PREEMPT_PERSIST_URING && (r = setup_ring(p)) < 0) {
        drop_ring(p);
        why = why_not(r);
        p->backend = PREEMPT_PERSIST_AIO;
    }
    if (p->backend == PREEMPT_PERSIST_AIO && (r = setup_aio(p)) < 0) {
        drop_ring(p);
        why = why_not_aio(r, why != NULL);
    }
    p->run = p->backend;
    if (ret_why)
        *ret_why = why;
    *ret = p;
    return 0;
}

int preempt_persist_start_(struct preempt_persist *p, struct preempt_persist_blob *blobs, size_t n,
                           preempt_persist_done_fn done, void *arg)
{
    int r;

    if (!p || (!blobs && n) || !done)
        return -EINVAL;
    if (p->blobs)
        return -EBUSY;
    for (size_t i = 0; i < n; i++) {
        struct preempt_persist_blob *b = &blobs[i];

        b->queued = b->written = b->size = b->dropped = 0;
        b->crc32c = 0;
        b->syncing = b->durable = b->direct = false;
        if (!b->data) {
            struct stat st;

            if (fstat(b->fd, &st) < 0)
                return -errno;
            b->len = (uint64_t)st.st_size;
            if (!p->scratch && !(p->scratch = malloc(PREEMPT_PERSIST_CHUNK)))
                return -ENOMEM;
        }
    }
    p->run = p->backend;
    if (p->backend == PREEMPT_PERSIST_AIO && (r = aio_prepare(p, blobs, n)) < 0) {
        for (size_t i = 0; i < n; i++)
            unset_direct(&blobs[i]);
        return r;
    }
    p->blobs = blobs;
    p->n = n;
    p->failed = 0;
    p->done = done;
    p->arg = arg;
    p->eager = p->paced = false;
    kick(p, 0);
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
    while (p->aio && p->inflight > 0 && (left = until - mono_ms()) > 0)
        aio_reap(p, (uint64_t)left * 1000u); /* past the bound: io_destroy() waits for them */
}

void preempt_persist_cancel_(struct preempt_persist *p)
{
    if (!p || !p->blobs)
        return;
    clear(p);
    drain(p);
    if (p->broken || p->inflight) /* not all came back within the bound: this queue is not used again */
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
    free(p->bounce);
    free(p);
}
