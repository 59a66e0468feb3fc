/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_persist.c: two-phase saves. The persist engine
 * (lib/ckpt/persist.c) on real files, /dev/full and seccomp filters that
 * forbid io_uring (and Linux AIO) as container profiles do; then the
 * public API as an asynchronous trainer uses it: snapshots handed over,
 * training going on while they persist (no thread but io_uring's kernel
 * workers), the commit only once every blob is durable, and what an exit,
 * a notice or a freed handler does to a persist under way. Each runs with
 * every backend: io_uring, chunked and aio. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "check-main.h"
#include "ckpt/ckpt-internal.h"
#include "ckpt/persist-internal.h"
#include "preempt.h"

/* the backends of the loop tests (_i) */
static const char *const backends[] = { "io_uring", "chunked", "aio" };
static const enum preempt_persist_backend backend_of[] = { PREEMPT_PERSIST_URING, PREEMPT_PERSIST_CHUNKED,
                                                           PREEMPT_PERSIST_AIO };
static char dir[256];

static void setup(void)
{
    sigset_t set;

    (void)sigemptyset(&set);
    (void)sigaddset(&set, SIGTERM);
    ck_assert_int_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
    preempt_test_mkdtemp(dir, sizeof(dir), "check_persist");
}

static void teardown(void)
{
    preempt_test_rmrf(dir);
    (void)unsetenv("PREEMPT_PERSIST");
}

#define PF_IO_WORKER 0x10 /* the kernel's flag of an io_uring worker (include/linux/sched.h) */

/* The process's threads that run user code: /proc/self/task less the
 * kernel's io_uring workers (iou-wrk-*, which run none), known by their
 * PF_IO_WORKER flag in stat (their name is set a moment after they start). */
static int user_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        char path[300], stat[1024];
        unsigned long flags = 0;
        const char *p;
        size_t len;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        (void)snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue; /* it ended meanwhile (an idle io_uring worker does) */
        len = fread(stat, 1, sizeof(stat) - 1, f);
        (void)fclose(f);
        stat[len] = '\0';
        /* after "(comm)": state ppid pgrp session tty_nr tpgid flags */
        if (!(p = strrchr(stat, ')')) || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
            continue; /* ended while being read */
        if (!(flags & PF_IO_WORKER))
            n++;
    }
    (void)closedir(d);
    return n;
}

/* Whether this kernel lets the process set up the backend b at all. */
static bool permitted(struct event_base *base, enum preempt_persist_backend b)
{
    struct preempt_persist *p;
    int r = preempt_persist_new_(base, b, &p, NULL);

    preempt_persist_free_(p = r == 0 ? p : NULL);
    return r == 0;
}

/* The backend the engine of loop test i asks for: backends[i], or auto
 * where this kernel forbids it (the fallback is what then runs). */
static enum preempt_persist_backend engine_backend(int i, struct event_base *base)
{
    return backend_of[i] == PREEMPT_PERSIST_CHUNKED || permitted(base, backend_of[i]) ? backend_of[i]
                                                                                     : PREEMPT_PERSIST_AUTO;
}

/* The handlers made next persist with backend i of backends[] (as above). */
static void use_backend(int i, struct event_base *base)
{
    enum preempt_persist_backend b = engine_backend(i, base);

    ck_assert_int_eq(setenv("PREEMPT_PERSIST", preempt_persist_backend_name_(b), 1), 0);
}

/* The name of the backend that then runs. */
static const char *running_backend(int i, struct event_base *base)
{
    struct preempt_persist *p;
    const char *name;

    ck_assert_int_eq(preempt_persist_new_(base, engine_backend(i, base), &p, NULL), 0);
    name = preempt_persist_backend_name_(preempt_persist_backend_(p));
    preempt_persist_free_(p);
    return name;
}

/* How many of a file's pages are in the page cache (mapped PROT_NONE:
 * mincore() needs no access, and valgrind reads a readable mapping's
 * first pages to see whether it is an object file). */
static size_t cached_pages(int fd, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, cached = 0;
    unsigned char *vec = malloc(n);
    void *m = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);

    ck_assert_ptr_nonnull(vec);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mincore(m, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        cached += vec[i] & 1;
    (void)munmap(m, len);
    free(vec);
    return cached;
}

static unsigned char *pattern(size_t len, unsigned seed)
{
    unsigned char *b = malloc(len);

    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)((i * 2654435761u) >> 13 ^ seed);
    return b;
}

/* ---- the engine ---------------------------------------------------------------------- */

struct outcome {
    int calls, status;
};

static void on_done(int status, void *arg)
{
    struct outcome *o = arg;

    o->calls++;
    o->status = status;
}

/* Runs the loop, one kick per pass (as step boundaries), until done. */
static void run_until_done(struct event_base *base, struct preempt_persist *p, struct outcome *o)
{
    for (int i = 0; i < 100000 && !o->calls; i++) {
        preempt_persist_kick_(p, 0);
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    }
    ck_assert_int_eq(o->calls, 1);
}

/* Two buffers and a file written beforehand: every byte lands, each
 * checksum is the data's, one pass does at most one budget of work. */
START_TEST(test_engine_writes_and_checksums)
{
    struct event_base *base = event_base_new();
    enum preempt_persist_backend want = engine_backend(_i, base);
    size_t len[3] = { (size_t)20 << 20, 12345, (size_t)3 << 20 };
    unsigned char *data[3];
    struct preempt_persist_blob b[3];
    struct preempt_persist *p;
    struct outcome o = { 0 };
    char path[300];
    int passes = 0;

    ck_assert_int_eq(preempt_persist_new_(base, want, &p, NULL), 0);
    for (int i = 0; i < 3; i++) {
        data[i] = pattern(len[i], (unsigned)i);
        if (i == 0) { /* aligned for O_DIRECT: aio writes it from the buffer itself (the others: bounced) */
            unsigned char *a = aligned_alloc(PREEMPT_PERSIST_DIO_ALIGN, len[i]);

            ck_assert_ptr_nonnull(a);
            memcpy(a, data[i], len[i]);
            free(data[i]);
            data[i] = a;
        }
        (void)snprintf(path, sizeof(path), "%s/blob%d", dir, i);
        b[i] = (struct preempt_persist_blob){ .fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                              .data = data[i], .len = len[i] };
        ck_assert_int_ge(b[i].fd, 0);
    }
    /* the third was written by its owner: only read back and synced */
    ck_assert_int_eq(write(b[2].fd, data[2], len[2]), (ssize_t)len[2]);
    b[2].data = NULL;
    ck_assert_int_eq(preempt_persist_start_(p, b, 3, on_done, &o), 0);
    ck_assert_int_eq(preempt_persist_start_(p, b, 3, on_done, &o), -EBUSY);
    ck_assert(preempt_persist_busy_(p));
    while (!o.calls && passes < 100000) {
        uint64_t before = 0, after = 0;

        for (int i = 0; i < 3; i++)
            before += b[i].queued;
        preempt_persist_kick_(p, 0);
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0); /* runs while events are active */
        for (int i = 0; i < 3; i++)
            after += b[i].queued;
        /* the budget, not the loop, ends a boundary's work */
        ck_assert_uint_le(after - before, preempt_persist_backend_(p) == PREEMPT_PERSIST_CHUNKED
                                              ? PREEMPT_PERSIST_PASS_CHUNKED
                                              : PREEMPT_PERSIST_PASS_URING);
        if (!o.calls)
            (void)event_base_loop(base, EVLOOP_ONCE);
        passes++;
    }
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.status, 0);
    if (preempt_persist_backend_(p) == PREEMPT_PERSIST_CHUNKED)
        ck_assert_int_gt(passes, 2); /* 23 MiB in 8 MiB budgets (io_uring's and aio's 32 MiB take it in one) */
    ck_assert(preempt_persist_paced_(p)); /* kicked by boundaries: its time counts them */
    ck_assert(!preempt_persist_busy_(p));
    ck_assert_int_eq(preempt_persist_backend_(p), want == PREEMPT_PERSIST_AUTO ? preempt_persist_backend_(p) : want);
    if (want == PREEMPT_PERSIST_AIO) /* the buffers' files went past the page cache */
        for (int i = 0; i < 2; i++)
            ck_assert_uint_eq(cached_pages(b[i].fd, len[i]), 0);
    if (preempt_persist_backend_(p) == PREEMPT_PERSIST_CHUNKED) /* each file's pages were handed back, durable */
        for (int i = 0; i < 3; i++)
            ck_assert_uint_eq(cached_pages(b[i].fd, len[i]), 0);
    for (int i = 0; i < 3; i++) {
        unsigned char *back = malloc(len[i]);
        struct stat st;

        ck_assert(b[i].durable);
        ck_assert_int_eq(fstat(b[i].fd, &st), 0);
        ck_assert_int_eq(st.st_size, (off_t)len[i]); /* no zeros of an aligned write's tail left */
        ck_assert_int_eq(fcntl(b[i].fd, F_GETFL) & O_DIRECT, 0); /* the descriptor as it was */
        ck_assert_uint_eq(b[i].size, len[i]);
        ck_assert_uint_eq(b[i].crc32c, preempt_crc32c_(0, data[i], len[i]));
        ck_assert_int_eq(pread(b[i].fd, back, len[i], 0), (ssize_t)len[i]);
        ck_assert_int_eq(memcmp(back, data[i], len[i]), 0);
        free(back);
        free(data[i]);
        (void)close(b[i].fd);
    }
    preempt_persist_free_(p);
    event_base_free(base);
}
END_TEST

/* A persist the trainer waits for runs back to back and is not paced (its
 * time is what a final save takes); one that a step boundary kicked while
 * training went on is, even if it was awaited after (a save's time that
 * counts steps: the planner's figure only until an awaited one is known). */
START_TEST(test_engine_paced_or_awaited)
{
    struct event_base *base = event_base_new();
    enum preempt_persist_backend want = engine_backend(_i, base);
    size_t len = (size_t)48 << 20; /* more than a pass: chunked's and io_uring's */
    unsigned char *data = pattern(len, 7);
    struct preempt_persist *p;
    char path[300];

    ck_assert_int_eq(preempt_persist_new_(base, want, &p, NULL), 0);
    ck_assert(!preempt_persist_paced_(p));
    for (int kicked = 0; kicked < 2; kicked++) {
        struct preempt_persist_blob b;
        struct outcome o = { 0 };

        (void)snprintf(path, sizeof(path), "%s/paced%d", dir, kicked);
        b = (struct preempt_persist_blob){ .fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                           .data = data, .len = len };
        ck_assert_int_ge(b.fd, 0);
        ck_assert_int_eq(preempt_persist_start_(p, &b, 1, on_done, &o), 0);
        if (kicked) /* a boundary while training goes on, then the trainer waits */
            preempt_persist_kick_(p, 0);
        preempt_persist_pace_(p, true);
        for (int i = 0; i < 100000 && !o.calls; i++)
            ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
        ck_assert_int_eq(o.calls, 1);
        ck_assert_int_eq(o.status, 0);
        ck_assert(preempt_persist_paced_(p) == (kicked == 1));
        (void)close(b.fd);
    }
    free(data);
    preempt_persist_free_(p);
    event_base_free(base);
}
END_TEST

/* The chunked backend holds about two chunks of the page cache: at each
 * boundary the chunks before the previous one, written back by then, are
 * handed back, and the next chunks reuse their pages (persist-internal.h).
 * Here the test waits for the writeback the engine started before each
 * boundary, as a step's time lets the disk do. Before, the whole file
 * stayed cached (48 MiB here; 1 GiB of fresh pages cost 5x a copy on the
 * bench's VM). */
START_TEST(test_chunked_recycles_pages)
{
    struct event_base *base = event_base_new();
    size_t len = (size_t)48 << 20, page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *data = pattern(len, 11);
    struct preempt_persist_blob b;
    struct preempt_persist *p;
    struct outcome o = { 0 };
    char path[300];
    size_t most = 0;

    ck_assert_int_eq(preempt_persist_new_(base, PREEMPT_PERSIST_CHUNKED, &p, NULL), 0);
    (void)snprintf(path, sizeof(path), "%s/recycled", dir);
    b = (struct preempt_persist_blob){ .fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                       .data = data, .len = len };
    ck_assert_int_ge(b.fd, 0);
    ck_assert_int_eq(preempt_persist_start_(p, &b, 1, on_done, &o), 0);
    for (int i = 0; i < 1000 && !o.calls; i++) {
        size_t cached;

        /* the disk's time between boundaries: what was started is written */
        ck_assert_int_eq(sync_file_range(b.fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER), 0);
        preempt_persist_kick_(p, 0);
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        cached = cached_pages(b.fd, len) * page;
        most = cached > most ? cached : most;
    }
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.status, 0);
    ck_assert_uint_le(most, 2 * (size_t)PREEMPT_PERSIST_CHUNK); /* the previous chunk and this one */
    ck_assert_uint_gt(most, 0);
    ck_assert_uint_eq(cached_pages(b.fd, len), 0); /* durable: all handed back */
    ck_assert_uint_eq(b.crc32c, preempt_crc32c_(0, data, len));
    (void)close(b.fd);
    free(data);
    preempt_persist_free_(p);
    event_base_free(base);
}
END_TEST

/* Long steps: a boundary may also use a share of the trainer's mean step
 * time, so that a large persist commits within a few boundaries of
 * minute-long steps. With the byte budget alone, a boundary took 8 MiB of
 * these 192 MiB chunked and 32 MiB with io_uring; with 10-minute steps
 * (a 30 s slice) the start's pass measures the rate, the next boundary
 * does the rest. */
START_TEST(test_engine_long_steps)
{
    struct event_base *base = event_base_new();
    enum preempt_persist_backend want = engine_backend(_i, base);
    size_t len[2] = { (size_t)160 << 20, (size_t)32 << 20 };
    unsigned char *data[2];
    struct preempt_persist_blob b[2];
    struct preempt_persist *p;
    struct outcome o = { 0 };
    char path[300];

    ck_assert_int_eq(preempt_persist_new_(base, want, &p, NULL), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_nonnull(data[i] = malloc(len[i]));
        for (size_t k = 0; k < len[i]; k += 4096)
            memset(data[i] + k, (int)(k >> 12) + i, 4096);
        (void)snprintf(path, sizeof(path), "%s/long%d", dir, i);
        b[i] = (struct preempt_persist_blob){ .fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                              .data = data[i], .len = len[i] };
        ck_assert_int_ge(b[i].fd, 0);
    }
    ck_assert_int_eq(preempt_persist_start_(p, b, 2, on_done, &o), 0);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0); /* the start's pass: the rate is measured */
    ck_assert_uint_lt(b[0].queued, len[0]);
    /* a boundary of 10-hour steps: a 30-minute slice, which covers the
     * rest at any speed (the slice is the time the pass may take, not
     * bytes: a 3 s slice of 60 s steps did not, under valgrind, nor a 30
     * s one of 10-minute steps under valgrind beside four tests) */
    preempt_persist_kick_(p, (uint64_t)36000 * 1000000u);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
    /* the whole persist went in that one boundary: chunked wrote and synced
     * it; io_uring handed every write to the kernel, whose completions then
     * bring the fsyncs (no further boundary needed) */
    ck_assert_uint_eq(b[0].queued, len[0]);
    ck_assert_uint_eq(b[1].queued, len[1]);
    if (preempt_persist_backend_(p) == PREEMPT_PERSIST_CHUNKED)
        ck_assert_int_eq(o.calls, 1);
    for (int i = 0; i < 1000 && !o.calls; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0); /* the step: the kernel's completions only */
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.status, 0);
    for (int i = 0; i < 2; i++) {
        ck_assert(b[i].durable);
        ck_assert_uint_eq(b[i].crc32c, preempt_crc32c_(0, data[i], len[i]));
        free(data[i]);
        (void)close(b[i].fd);
    }
    preempt_persist_free_(p);
    event_base_free(base);
}
END_TEST

/* A full disk (/dev/full): the persist fails with -ENOSPC, once. */
START_TEST(test_engine_full_disk)
{
    struct event_base *base = event_base_new();
    enum preempt_persist_backend want = engine_backend(_i, base);
    size_t len = (size_t)9 << 20;
    unsigned char *data = pattern(len, 7);
    struct preempt_persist_blob b = { .fd = open("/dev/full", O_WRONLY | O_CLOEXEC), .data = data, .len = len };
    struct preempt_persist *p;
    struct outcome o = { 0 };

    ck_assert_int_ge(b.fd, 0);
    ck_assert_int_eq(preempt_persist_new_(base, want, &p, NULL), 0);
    ck_assert_int_eq(preempt_persist_start_(p, &b, 1, on_done, &o), 0);
    if (want == PREEMPT_PERSIST_AIO) /* a device that refuses O_DIRECT: this persist is chunked */
        ck_assert_int_eq(preempt_persist_backend_(p), PREEMPT_PERSIST_CHUNKED);
    run_until_done(base, p, &o);
    ck_assert_int_eq(o.status, -ENOSPC);
    ck_assert(!b.durable);
    ck_assert(!preempt_persist_busy_(p));
    preempt_persist_free_(p);
    (void)close(b.fd);
    free(data);
    event_base_free(base);
}
END_TEST

/* The child's seccomp filter: io_uring_setup(), and also io_setup() when
 * aio_too, fail with EPERM, as container profiles make them. */
static int forbid(bool aio_too)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, aio_too ? __NR_io_setup : __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
        return -1;
    return 0;
}

/* Where a seccomp profile forbids io_uring (Docker's default does), AUTO
 * falls back to Linux AIO (which that profile permits), and where it
 * forbids both, to chunks, and says why; a backend named but forbidden
 * gives way the same (it failed: every two-phase save was lost). A persist
 * in the child then runs with what was chosen. */
START_TEST(test_engine_seccomp_fallback)
{
    pid_t pid = fork();
    int status;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        bool aio_too = _i == 1;
        struct event_base *base;
        struct preempt_persist *p;
        const char *why = NULL;
        static unsigned char data[3 << 20];
        struct preempt_persist_blob b;
        struct outcome o = { 0 };
        char path[300];

        if (forbid(aio_too) < 0)
            _exit(90);
        base = event_base_new();
        if (preempt_persist_new_(base, PREEMPT_PERSIST_URING, &p, &why) != 0 ||
            preempt_persist_backend_(p) != (aio_too ? PREEMPT_PERSIST_CHUNKED : PREEMPT_PERSIST_AIO) || !why ||
            !strstr(why, aio_too ? "neither io_uring nor Linux AIO is permitted" : "io_uring is not permitted"))
            _exit(91);
        preempt_persist_free_(p);
        if (aio_too && (preempt_persist_new_(base, PREEMPT_PERSIST_AIO, &p, &why) != 0 ||
                        preempt_persist_backend_(p) != PREEMPT_PERSIST_CHUNKED || !why ||
                        strcmp(why, "Linux AIO is not permitted here (a seccomp profile)") != 0))
            _exit(92);
        if (aio_too)
            preempt_persist_free_(p);
        if (preempt_persist_new_(base, PREEMPT_PERSIST_AUTO, &p, &why) != 0)
            _exit(93);
        if (preempt_persist_backend_(p) != (aio_too ? PREEMPT_PERSIST_CHUNKED : PREEMPT_PERSIST_AIO))
            _exit(94);
        if (!why || !strstr(why, aio_too ? "neither io_uring nor Linux AIO is permitted" : "io_uring is not permitted"))
            _exit(95);
        memset(data, 7, sizeof(data));
        (void)snprintf(path, sizeof(path), "%s/seccomp%d", dir, _i);
        b = (struct preempt_persist_blob){ .fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                           .data = data, .len = sizeof(data) - 1 };
        if (b.fd < 0 || preempt_persist_start_(p, &b, 1, on_done, &o) < 0)
            _exit(96);
        for (int i = 0; i < 100000 && !o.calls; i++) {
            preempt_persist_kick_(p, 0);
            (void)event_base_loop(base, EVLOOP_ONCE);
        }
        if (o.calls != 1 || o.status != 0 || b.crc32c != preempt_crc32c_(0, data, sizeof(data) - 1))
            _exit(97);
        preempt_persist_free_(p);
        event_base_free(base);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with %d", status);
}
END_TEST

/* ---- the public API ---------------------------------------------------------------------- */

struct rec {
    int releases;
    const void *released;
    int exits;
    enum preempt_exit reason;
    char log[8192];
    size_t restored_len;
    unsigned char *restored;
};

static void rec_release(void *data, void *ud)
{
    struct rec *r = ud;

    r->releases++;
    r->released = data;
}

static void rec_exit(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct rec *r = ud;

    (void)h;
    (void)code;
    r->exits++;
    r->reason = reason;
}

static void rec_log(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    struct rec *r = ud;
    size_t len = strlen(r->log);

    (void)h;
    (void)snprintf(r->log + len, sizeof(r->log) - len, "%d:%s\n", (int)level, msg);
}

static int rec_restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct rec *r = ud;
    void *data;
    size_t len;
    int e = preempt_restore_blob(h, "model", &data, &len);

    (void)step;
    if (e < 0)
        return e;
    free(r->restored);
    r->restored = data;
    r->restored_len = len;
    return 0;
}

static const struct preempt_callbacks callbacks = { .restore = rec_restore, .on_exit = rec_exit, .log = rec_log };

static struct preempt_config config(const char *sub)
{
    static char path[512];
    struct preempt_config cfg;

    preempt_config_init(&cfg);
    (void)snprintf(path, sizeof(path), "%s/%s", dir, sub);
    cfg.ckpt_dir = path;
    cfg.platform = PREEMPT_PLATFORM_NONE;
    return cfg;
}

static int action(struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_handler_get_action(h, &a);

    return r < 0 ? r : (int)a;
}

static int step_end(struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_step_end(h, &a);

    return r < 0 ? r : (int)a;
}

static enum preempt_state state_of(struct preempt_handler *h)
{
    struct preempt_status st;

    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    return st.state;
}

/* Trains (step_end and a loop pass per step) until the action is a save. */
static uint64_t mono_ms(void);
static uint64_t save_begun_ms; /* just before train_to_save()'s preempt_save_begin() */

static uint64_t train_to_save(struct event_base *base, struct preempt_handler *h)
{
    uint64_t step;
    int a = PREEMPT_ACTION_CONTINUE;

    for (int i = 0; i < 1000 && a != PREEMPT_ACTION_SAVE && a != PREEMPT_ACTION_SAVE_EXIT; i++) {
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        a = action(h);
        if (a == PREEMPT_ACTION_CONTINUE)
            a = step_end(h);
    }
    ck_assert_msg(a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT, "no save asked for (%d)", a);
    save_begun_ms = mono_ms();
    ck_assert_int_eq(preempt_save_begin(h, &step), 0);
    return step;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;

    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static bool exists(const char *sub, uint64_t step)
{
    char path[700];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%s/ckpt-%020llu", dir, sub, (unsigned long long)step);
    return stat(path, &st) == 0;
}

static int staging_dirs(const char *sub)
{
    char path[600];
    DIR *d;
    struct dirent *e;
    int n = 0;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, sub);
    ck_assert_ptr_nonnull(d = opendir(path));
    while ((e = readdir(d)))
        n += strncmp(e->d_name, ".staging-", 9) == 0;
    (void)closedir(d);
    return n;
}

/* A periodic two-phase checkpoint: training goes on while it persists,
 * with no thread of user code; the commit comes only once every blob is
 * durable; the snapshot is released once; a new handler restores it. */
START_TEST(test_two_phase_checkpoint)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("tp");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)40 << 20;
    unsigned char *model = pattern(len, 3), *own = pattern((size_t)5 << 20, 4);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t step, steps = 0, t0, snapshot_ms, whole_ms;
    int fd, most = 0;

    use_backend(_i, base);
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    step = train_to_save(base, h);
    t0 = save_begun_ms; /* the library's stall begins inside preempt_save_begin() (the checkpoint's set-up) */
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, NULL, &r), -EINVAL); /* release required */
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), -EINVAL); /* named twice */
    ck_assert_int_eq(preempt_save_blob(h, "meta", "m", 1), 0);
    ck_assert_int_eq(preempt_save_blob_open(h, "own", &fd), 0);
    ck_assert_int_eq(write(fd, own, (size_t)5 << 20), (ssize_t)5 << 20);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    snapshot_ms = mono_ms() - t0;
    /* the snapshot phase is over: training goes on, nothing is committed yet */
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    ck_assert_int_eq(action(h), PREEMPT_ACTION_CONTINUE);
    ck_assert(!exists("tp", step));
    ck_assert_int_eq(staging_dirs("tp"), 1);
    ck_assert_int_eq(r.releases, 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), -EALREADY); /* one set of snapshots at a time */
    while (state_of(h) == PREEMPT_STATE_PERSISTING && steps < 100000) {
        int n = user_threads();

        most = n > most ? n : most;
        ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
        steps++;
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        if (state_of(h) == PREEMPT_STATE_PERSISTING)
            ck_assert(!exists("tp", step)); /* committed only once durable */
        (void)usleep(200); /* the step */
    }
    ck_assert_int_eq(most, 1); /* no thread but the trainer's (io_uring's kernel workers aside) */
    /* the persist spread over steps: training went on (2 under valgrind
     * beside the suite's other runs, where a step is slow and a boundary's
     * budget large: 3 was asked for once, and failed there) */
    ck_assert_uint_ge(steps, 2);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_IDLE);
    whole_ms = mono_ms() - t0;
    ck_assert(exists("tp", step));
    ck_assert_int_eq(staging_dirs("tp"), 0);
    ck_assert_int_eq(r.releases, 1);
    ck_assert_ptr_eq(r.released, model);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.saves, 1);
    ck_assert_uint_eq(st.committed_step, step);
    /* training stopped for the snapshot phase only; the save counts the
     * persist too. The library's interval lies inside the test's, and each
     * side's milliseconds are rounded (the library's up): 2 ms of slack. A
     * t0 taken after preempt_save_begin() left its set-up out of the
     * test's interval: "stall 11 ms, snapshot phase 7 ms" in CI, under load. */
    ck_assert_msg(st.stall_ms <= snapshot_ms + 2 && st.stall_ms <= st.save_ms,
                  "stall %llu ms, snapshot phase %llu ms, save %llu ms", (unsigned long long)st.stall_ms,
                  (unsigned long long)snapshot_ms, (unsigned long long)st.save_ms);
    ck_assert_msg(whole_ms > snapshot_ms + 1, "the persist took %llu ms: the stall cannot be told from the save",
                  (unsigned long long)(whole_ms - snapshot_ms));
    {
        char said[64];

        (void)snprintf(said, sizeof(said), "persisted with %s on the loop", running_backend(_i, base));
        ck_assert_msg(strstr(r.log, said), "the log lacks \"%s\": %s", said, r.log);
    }
    h = preempt_handler_free(h);
    /* a restart restores every byte */
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.restored_step, step);
    ck_assert_uint_eq(r.restored_len, len);
    ck_assert_int_eq(memcmp(r.restored, model, len), 0);
    h = preempt_handler_free(h);
    free(r.restored);
    free(model);
    free(own);
    event_base_free(base);
}
END_TEST

/* save_every_steps while a checkpoint persists: a multiple of the period
 * reached then is not lost. The next periodic checkpoint begins at the
 * first boundary after the commit; it used to wait for the next multiple
 * (under load a job's round outlasted a multiple and the job saved a whole
 * period less often than configured: tests/periodic.sh, 6 checkpoints for
 * 7 multiples). */
START_TEST(test_periodic_multiple_during_persist)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("pp");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)40 << 20;
    unsigned char *model = pattern(len, 5);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t step, run;

    cfg.save_every_steps = 4;
    use_backend(1, base); /* chunked: the persist spreads over boundaries */
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    step = train_to_save(base, h); /* the first multiple, 4; saved at the next boundary */
    ck_assert_uint_eq(step, 5);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    while (state_of(h) == PREEMPT_STATE_PERSISTING) {
        ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        (void)usleep(200); /* the step */
    }
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.committed_step, step);
    run = st.run;
    ck_assert_msg(run / 4 > step / 4, "the persist ended at run %llu, before the next multiple",
                  (unsigned long long)run); /* the case's premise */
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_STEP_AGREED); /* the next round, at once */
    ck_assert_int_eq(count_of(r.log, "a periodic checkpoint (save_every_steps)"), 2);
    h = preempt_handler_free(h);
    free(model);
    event_base_free(base);
}
END_TEST

/* The handler freed while a checkpoint persists: the snapshot is released,
 * the unfinished checkpoint leaves nothing behind, and the previous one is
 * what a restart restores. */
START_TEST(test_free_during_persist)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("fr");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)64 << 20;
    unsigned char *model = pattern(len, 5);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t first, second;

    use_backend(_i, base);
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    first = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_blob(h, "model", "old", 3), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    for (int i = 0; i < 100 && state_of(h) != PREEMPT_STATE_IDLE; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    second = train_to_save(base, h);
    ck_assert_uint_gt(second, first);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0); /* the persist has begun */
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    h = preempt_handler_free(h);
    ck_assert_int_eq(r.releases, 1);
    ck_assert(exists("fr", first));
    ck_assert(!exists("fr", second));
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.restored_step, first);
    ck_assert_uint_eq(r.restored_len, 3);
    ck_assert_int_eq(staging_dirs("fr"), 0);
    h = preempt_handler_free(h);
    free(r.restored);
    free(model);
    event_base_free(base);
}
END_TEST

/* Training done while a checkpoint persists (a periodic checkpoint at the
 * last step): it is awaited (finishing, action WAIT), committed, and the
 * handler exits "done"; before, the exit dropped it. _i: the backend; the
 * trainer runs its own loop (borrowed base) as asynchronous trainers do. */
START_TEST(test_done_during_persist)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("dn");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)48 << 20;
    unsigned char *model = pattern(len, 8);
    struct rec r = { 0 };
    uint64_t step;

    use_backend(_i, base);
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    step = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    ck_assert_int_eq(preempt_training_done(h), 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_FINISHING);
    ck_assert_int_eq(action(h), PREEMPT_ACTION_WAIT);
    ck_assert_int_eq(r.exits, 0);
    for (int i = 0; i < 100000 && !r.exits; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    ck_assert_int_eq(r.exits, 1);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_DONE);
    ck_assert_int_eq(r.releases, 1);
    ck_assert(exists("dn", step));
    ck_assert_int_eq(staging_dirs("dn"), 0);
    h = preempt_handler_free(h);
    free(model);
    event_base_free(base);
}
END_TEST

/* The same with the synchronous API (the handler's own base): the save
 * callback hands a snapshot over, and preempt_training_done() runs the
 * loop until that checkpoint is committed, so the free that follows drops
 * nothing. */
static unsigned char *sync_model;
static size_t sync_len;
static struct rec sync_rec;

static int sync_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)step;
    (void)ud;
    return preempt_save_snapshot(h, "model", sync_model, sync_len, rec_release, &sync_rec);
}

static int no_step(void *arg)
{
    (void)arg;
    return 0;
}

START_TEST(test_done_during_persist_sync)
{
    struct preempt_config cfg = config("ds");
    struct preempt_callbacks cb = { .save = sync_save, .restore = rec_restore, .on_exit = rec_exit };
    struct preempt_handler *h = NULL;
    struct preempt_status st;
    bool exited = false;

    struct event_base *probe = event_base_new();

    use_backend(_i, probe);
    event_base_free(probe);
    sync_len = (size_t)48 << 20;
    sync_model = pattern(sync_len, 9);
    memset(&sync_rec, 0, sizeof(sync_rec));
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &cb, &sync_rec, &h), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(preempt_run(h, no_step, NULL, &exited), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    ck_assert_int_eq(preempt_run(h, no_step, NULL, &exited), 0); /* saves; the persist begins */
    ck_assert(!exited);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    ck_assert_int_eq(preempt_training_done(h), 0);
    ck_assert_int_eq(sync_rec.exits, 1);
    ck_assert_int_eq(sync_rec.reason, PREEMPT_EXIT_DONE);
    ck_assert_int_eq(sync_rec.releases, 1);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.state, PREEMPT_STATE_EXIT);
    ck_assert(exists("ds", 4));
    h = preempt_handler_free(h);
    free(sync_model);
    free(sync_rec.restored);
}
END_TEST

/* A notice while a periodic checkpoint persists, without a grace period,
 * 20 s of deadline. A worker alone stops training while it persists (the
 * action turns to WAIT: the persist runs back to back on the loop). It
 * commits, and, another round fitting after it, it is the preemption's
 * first checkpoint, not its last: the handler counts down, the final round
 * saves the step the worker stopped at, and the exit saves that step, so
 * the restart trains nothing again. (Before, it was the last: the exit
 * saved it, and the steps trained past it were lost.) */
START_TEST(test_notice_during_persist)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("nt");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)32 << 20;
    unsigned char *model = pattern(len, 6);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t step, last;

    use_backend(_i, base);
    cfg.grace_ms = 0;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    step = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE); /* a periodic one: training goes on */
    ck_assert_int_eq(preempt_notify(h, 20000), 0);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0); /* the notice, read */
    if (state_of(h) == PREEMPT_STATE_PERSISTING)
        ck_assert_int_eq(action(h), PREEMPT_ACTION_WAIT); /* alone: no step past it while it persists */
    for (int i = 0; i < 100000 && state_of(h) == PREEMPT_STATE_PERSISTING; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0); /* no step: the loop alone persists */
    ck_assert_int_eq(r.exits, 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_COUNTDOWN); /* committed, and room for another round */
    ck_assert(exists("nt", step));
    ck_assert_int_eq(r.releases, 1);
    /* the final round: the next step's save, synchronous here */
    last = train_to_save(base, h);
    ck_assert_uint_gt(last, step);
    ck_assert_int_eq(preempt_save_blob(h, "model", model, 4096), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    for (int i = 0; i < 100000 && !r.exits; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    ck_assert_int_eq(r.exits, 1);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.committed_step, last);
    ck_assert_uint_eq(st.run, last); /* it saved the step it stopped at */
    ck_assert(exists("nt", last));
    h = preempt_handler_free(h);
    free(model);
    event_base_free(base);
}
END_TEST

/* A notice while a periodic checkpoint persists, steps after it, with no
 * grace period: as the preemption's last save it would lose those steps,
 * and a new save fits (the first checkpoint measured one), so the planner
 * supersedes it: the persist stops (its snapshot goes back, its staging
 * directory goes), a new round saves at the next step, and that
 * checkpoint is the one committed. _i: the backend. No loop pass runs
 * between the boundaries, so the persist cannot have ended by the notice
 * (one budget of a 64 MiB persist at most). */
START_TEST(test_supersede_during_persist)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("ss");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)64 << 20;
    unsigned char *model = pattern(len, 7);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t first, second, third;

    use_backend(_i, base);
    cfg.grace_ms = 0;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    /* a first periodic checkpoint: the save time and the persist's rate are measured */
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    first = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, (size_t)16 << 20, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    for (int i = 0; i < 100000 && state_of(h) != PREEMPT_STATE_IDLE; i++) {
        ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    }
    ck_assert(exists("ss", first));
    /* the second, persisting, and two boundaries past its step */
    ck_assert_int_eq(preempt_request_checkpoint(h), 0);
    second = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_PERSISTING);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(step_end(h), PREEMPT_ACTION_CONTINUE);
    ck_assert_int_eq(preempt_notify(h, 20000), 0);
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0); /* the notice, read */
    ck_assert_int_eq(r.exits, 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_STEP_AGREED); /* superseded: a new round, agreed at once */
    ck_assert_int_eq(r.releases, 2);                          /* the dropped persist's snapshot went back */
    ck_assert_int_eq(staging_dirs("ss"), 0);
    third = train_to_save(base, h);
    ck_assert_uint_eq(third, second + 3); /* the step after the notice's boundary: nothing lost */
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    for (int i = 0; i < 100000 && !r.exits; i++)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
    ck_assert_int_eq(r.exits, 1);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.committed_step, third);
    ck_assert(exists("ss", third));
    ck_assert(!exists("ss", second));
    ck_assert_int_eq(staging_dirs("ss"), 0);
    ck_assert_int_eq(r.releases, 3);
    h = preempt_handler_free(h);
    free(model);
    event_base_free(base);
}
END_TEST

/* The last save of a preemption is two-phase too, but nothing trains after
 * it: the action is WAIT, and the persist runs back to back on the loop. */
START_TEST(test_final_save_waits)
{
    struct event_base *base = event_base_new();
    struct preempt_config cfg = config("fs");
    struct preempt_handler *h = NULL;
    size_t len = (size_t)24 << 20;
    unsigned char *model = pattern(len, 8);
    struct rec r = { 0 };
    struct preempt_status st;
    uint64_t step;
    int loops = 0;

    use_backend(_i, base);
    cfg.grace_ms = 0;
    ck_assert_int_eq(preempt_handler_new(base, &cfg, &callbacks, &r, &h), 0);
    ck_assert_int_eq(preempt_notify(h, 20000), 0);
    step = train_to_save(base, h);
    ck_assert_int_eq(preempt_save_snapshot(h, "model", model, len, rec_release, &r), 0);
    ck_assert_int_eq(preempt_save_done(h, 0), 0);
    ck_assert_int_eq(state_of(h), PREEMPT_STATE_FINAL_SAVE);
    ck_assert_int_eq(action(h), PREEMPT_ACTION_WAIT);
    while (!r.exits && loops++ < 100000)
        ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0); /* no step: the loop alone persists */
    ck_assert_int_eq(r.exits, 1);
    ck_assert_int_eq(r.reason, PREEMPT_EXIT_SAVED);
    ck_assert(exists("fs", step));
    ck_assert_int_eq(r.releases, 1);
    /* nothing trained while it persisted: the whole save stopped training */
    ck_assert_int_eq(preempt_handler_get_status(h, &st), 0);
    ck_assert_uint_eq(st.saves, 1);
    ck_assert_uint_eq(st.stall_ms, st.save_ms);
    h = preempt_handler_free(h);
    free(model);
    event_base_free(base);
}
END_TEST

/* PREEMPT_PERSIST names a backend; anything else is a configuration error. */
START_TEST(test_backend_setting)
{
    struct preempt_config cfg = config("cfg");
    struct preempt_handler *h = NULL;
    struct rec r = { 0 };

    ck_assert_int_eq(setenv("PREEMPT_PERSIST", "threads", 1), 0);
    ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), -EINVAL);
    ck_assert_ptr_nonnull(strstr(r.log, "PREEMPT_PERSIST=threads"));
    ck_assert_ptr_nonnull(strstr(r.log, "not one of auto, io_uring, aio, chunked"));
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
        ck_assert_int_eq(setenv("PREEMPT_PERSIST", backends[i], 1), 0);
        ck_assert_int_eq(preempt_handler_new(NULL, &cfg, &callbacks, &r, &h), 0);
        h = preempt_handler_free(h);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("persist");
    TCase *tc = tcase_create("persist");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_engine_writes_and_checksums, 0, 3);
    tcase_add_loop_test(tc, test_engine_long_steps, 0, 3);
    tcase_add_test(tc, test_chunked_recycles_pages);
    tcase_add_loop_test(tc, test_engine_paced_or_awaited, 0, 3);
    tcase_add_loop_test(tc, test_engine_full_disk, 0, 3);
    tcase_add_loop_test(tc, test_engine_seccomp_fallback, 0, 2);
    tcase_add_test(tc, test_periodic_multiple_during_persist);
    tcase_add_loop_test(tc, test_two_phase_checkpoint, 0, 3);
    tcase_add_loop_test(tc, test_free_during_persist, 0, 3);
    tcase_add_loop_test(tc, test_notice_during_persist, 0, 3);
    tcase_add_loop_test(tc, test_supersede_during_persist, 0, 3);
    tcase_add_loop_test(tc, test_final_save_waits, 0, 3);
    tcase_add_loop_test(tc, test_done_during_persist, 0, 3);
    tcase_add_loop_test(tc, test_done_during_persist_sync, 0, 3);
    tcase_add_test(tc, test_backend_setting);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
