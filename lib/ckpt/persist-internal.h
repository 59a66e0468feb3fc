/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/persist-internal.h: the persist phase of a two-phase save (docs/guide/two-phase.md), part of the handler's shell.
 *
 * A save's snapshot phase hands the library buffers (or files the trainer
 * wrote); this engine then writes them to their files, checksums them and
 * makes them durable on the handler's event_base, while the trainer goes
 * on training. It starts no thread. Two backends:
 *
 * - io_uring: writes of PREEMPT_PERSIST_CHUNK bytes are submitted to a
 *   ring (at most PREEMPT_PERSIST_DEPTH in flight) whose completions come
 *   through an eventfd on the loop; each file ends with a data fsync on
 *   the ring. The kernel runs buffered writes in its own io_uring workers
 *   (shown as iou-wrk-<tid> under /proc/self/task; they run no user code).
 * - aio: where io_uring is not permitted (a container's seccomp profile,
 *   kernel.io_uring_disabled) but Linux AIO is (Docker's default profile
 *   permits it): the files are opened to O_DIRECT for the persist, their
 *   space allocated (fallocate), and writes of PREEMPT_PERSIST_CHUNK bytes
 *   (at most PREEMPT_PERSIST_AIO_DEPTH in flight) go to the device past
 *   the page cache, from the buffers themselves where they are aligned for
 *   it, else from the engine's bounce buffers (PREEMPT_PERSIST_AIO_DEPTH
 *   chunks, kept for the next persist: the copy into them is the loop
 *   thread's work); completions come through an eventfd on the loop, and
 *   each file ends with a data fsync submitted the same way. A file whose
 *   filesystem refuses O_DIRECT makes the persist chunked.
 * - chunked: where neither is permitted or wanted: one chunk per loop
 *   pass is written into the page cache with pwrite(), and its writeback
 *   started at once (sync_file_range(SYNC_FILE_RANGE_WRITE)), so that the
 *   fdatasync() that ends each file finds the data mostly on disk. The
 *   chunks before the previous one are then dropped from the page cache
 *   (POSIX_FADV_DONTNEED): while training goes on they were written back
 *   a step ago (a page still under writeback stays); while the trainer
 *   waits, their writeback is waited for first. A durable file's pages go
 *   too. The next chunks are written into the pages just freed, still
 *   backed by the host, rather than fresh ones, which cost several copies
 *   on a VM that reports its free memory to the host (virtio-balloon free
 *   page reporting: the bench's VM), and a persist holds about two chunks
 *   of the page cache.
 *
 * Either way, the loop's thread does at most PREEMPT_PERSIST_PASS_* bytes
 * of work (checksums; the chunked backend's copies into the page cache),
 * or 1/PREEMPT_PERSIST_STEP_SHARE of the trainer's mean step time when
 * that is more, per kick: the handler kicks the persist at each of the
 * trainer's step boundaries, so that is what a persist adds to one step,
 * however the trainer runs the loop (a non-blocking loop run goes on while
 * events are active: the budget, not the loop, ends the work). While the trainer
 * waits (the last save of a preemption), the persist is eager: each pass
 * kicks the next. */
#ifndef PREEMPT_PERSIST_INTERNAL_H
#define PREEMPT_PERSIST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct preempt_persist;

#define PREEMPT_PERSIST_CHUNK (8u << 20) /* bytes per write */
#define PREEMPT_PERSIST_DEPTH 8          /* io_uring: writes in flight */
#define PREEMPT_PERSIST_AIO_DEPTH 4      /* aio: writes in flight (and bounce buffers) */
#define PREEMPT_PERSIST_DIO_ALIGN 4096u  /* aio: O_DIRECT's alignment of memory, offsets and lengths */
/* the loop thread's bytes of work per loop pass: checksums with io_uring;
 * checksums and copies into resident bounce buffers with aio (as uring's
 * figure); copies into the page cache and checksums in chunks */
#define PREEMPT_PERSIST_PASS_URING (32u << 20)
#define PREEMPT_PERSIST_PASS_CHUNKED (8u << 20)
/* With long steps, a boundary may do more: as much as fits in 1/SHARE of
 * the trainer's mean step time (measured at the rate of the earlier
 * passes; at most one chunk, or one write's checksum, past it). io_uring's
 * writes then grow so that a boundary's writes span its slice, up to
 * WRITE_MAX each: with minute-long steps a 1 GiB persist commits within a
 * few boundaries instead of 32 (or 128 chunked). */
#define PREEMPT_PERSIST_STEP_SHARE 20
#define PREEMPT_PERSIST_WRITE_MAX (256u << 20)

enum preempt_persist_backend {
    PREEMPT_PERSIST_AUTO,    /* io_uring when the kernel permits it, else aio, else chunked */
    PREEMPT_PERSIST_URING,
    PREEMPT_PERSIST_CHUNKED,
    PREEMPT_PERSIST_AIO,
};

/* One blob to make durable. fd is the caller's (open for writing when
 * data is set, for reading otherwise) and stays open until the persist
 * ended. data NULL: the file is written already (a blob the trainer wrote
 * through a descriptor): it is read back for its size and checksum. */
struct preempt_persist_blob {
    int fd;
    const void *data;
    uint64_t len;     /* data's length */
    /* set once the persist succeeded */
    uint64_t size;
    uint32_t crc32c;
    /* the engine's progress */
    uint64_t queued, written; /* bytes submitted (checksummed), bytes on file */
    uint64_t dropped; /* chunked: bytes from the start handed back to the page cache's allocator */
    bool syncing, durable;
    bool direct; /* aio: the engine opened fd to O_DIRECT for the persist */
};

/* Called on the loop when every blob is durable (0) or the persist failed
 * (a negative errno: -ENOSPC, -EIO ...). The blobs are the caller's again. */
typedef void (*preempt_persist_done_fn)(int status, void *arg);

/* A persist engine on base. want: the backend asked for; one that cannot
 * be set up here falls back, named or AUTO: io_uring to aio, aio to
 * chunked (always there), and *ret_why (may be NULL) then says why
 * (static text; NULL when nothing fell back). Fails only with -ENOMEM. */
int preempt_persist_new_(struct event_base *base, enum preempt_persist_backend want, struct preempt_persist **ret,
                         const char **ret_why);
/* Stops a persist under way (waiting, at most 5 s, for the writes the
 * kernel holds, which read the caller's buffers), frees everything.
 * NULL-safe. */
void preempt_persist_free_(struct preempt_persist *p);

/* Starts persisting blobs[0..n) (borrowed until done is called or the
 * persist is cancelled). The work runs on the loop's passes: nothing is
 * written inside this call. -EBUSY while another persist runs. */
int preempt_persist_start_(struct preempt_persist *p, struct preempt_persist_blob *blobs, size_t n,
                           preempt_persist_done_fn done, void *arg);
/* Stops the persist under way without calling done (waiting for the
 * kernel's writes as above); the blobs are the caller's again. */
void preempt_persist_cancel_(struct preempt_persist *p);
bool preempt_persist_busy_(const struct preempt_persist *p);
/* A step boundary: a new budget, and a pass on the loop. step_us: the
 * trainer's mean step time (0: unknown): the pass may also use
 * 1/PREEMPT_PERSIST_STEP_SHARE of it. */
void preempt_persist_kick_(struct preempt_persist *p, uint64_t step_us);
/* eager: the trainer waits for the persist, so each pass kicks the next;
 * else one budget per kick. NULL-safe. */
void preempt_persist_pace_(struct preempt_persist *p, bool eager);
/* Whether the persist under way, or the last one, was paced: a step
 * boundary kicked it while it was not eager (its time then counts the
 * steps it waited for). NULL-safe. */
bool preempt_persist_paced_(const struct preempt_persist *p);
enum preempt_persist_backend preempt_persist_backend_(const struct preempt_persist *p);
const char *preempt_persist_backend_name_(enum preempt_persist_backend b); /* "auto", "io_uring", "aio", "chunked" */
/* The backend named (as above, or NULL/"" for auto): 0, or -EINVAL. */
int preempt_persist_backend_from_string_(const char *name, enum preempt_persist_backend *ret);

#endif
