/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt.c: the checkpoint manager (see ckpt-internal.h). Every file and
 * directory operation goes through the store's directory descriptor (the
 * *at() calls), so a checkpoint directory that is moved or replaced while
 * a save runs cannot redirect a write elsewhere. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "ckpt-internal.h"
#include "fault-internal.h"
#include "manifest.pb.h"

#define STAGING_PREFIX ".staging-"
#define TRASH_PREFIX ".trash-"
#define CKPT_PREFIX "ckpt-"
#define MANIFEST "MANIFEST"
/* In a checkpoint the job has not decided yet: the key of its decision
 * record (never a blob name: those do not start with a dot). */
#define PENDING ".pending"
#define MAX_PENDING_KEY 512
/* Set-aside checkpoints live in DIR/aside/, each with the reason in its
 * ASIDE_WHY file (never a blob name either). */
#define ASIDE_DIR "aside"
#define ASIDE_WHY ".aside"
#define MANIFEST_VERSION 2

struct preempt_ckpt_store {
    char *dir;
    int dirfd;
    int lockfd;                   /* DIR/.lock, flock()ed for the store's life */
    bool check_id;                /* an identity was given: written, and checked on restore */
    char job[PREEMPT_CKPT_MAX_JOB + 1], launch[PREEMPT_CKPT_MAX_LAUNCH + 1];
    unsigned worker, workers;
    unsigned max_to_keep;
    preempt_ckpt_log_fn log;
    void *log_arg;
    bool writing;
};

struct preempt_ckpt_writer {
    struct preempt_ckpt_store *s;
    char staging[64];
    int fd;                       /* the staging directory */
    int failed;                   /* the first error, or 0 */
    struct timespec t0;           /* when the save began */
    bool pending;                 /* committed locally only: the job decides */
    lpckpt_Manifest m;
    bool streamed[PREEMPT_CKPT_MAX_BLOBS]; /* written by the caller through a descriptor:
                                             sized and checksummed at commit */
};

static void logf_(const struct preempt_ckpt_store *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const struct preempt_ckpt_store *s, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (!s->log)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s->log(level, msg, s->log_arg);
}

/* ---- CRC-32C ------------------------------------------------------------------- */

static uint32_t crc_table[256];
static bool crc_table_ready;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
    crc_table_ready = true;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64 = c;

    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
    for (; len > 0; p++, len--)
        c = __builtin_ia32_crc32qi(c, *p);
    return c;
}
#endif

uint32_t preempt_crc32c_(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t c = ~crc;

#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(c, p, len);
#endif
    if (!crc_table_ready)
        crc_init();
    for (; len > 0; p++, len--)
        c = crc_table[(c ^ *p) & 0xff] ^ (c >> 8);
    return ~c;
}

/* ---- small file helpers ----------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    int r;

    if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0)
        return r;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fsync() and renameat() as 0 or a negative errno, through their fault points. */
static int fsync_fd(int fd)
{
    int r = preempt_fault_(PREEMPT_FAULT_FSYNC);

    return r < 0 ? r : fsync(fd) < 0 ? -errno : 0;
}

static int rename_at(int dirfd, const char *from, const char *to)
{
    int r = preempt_fault_(PREEMPT_FAULT_RENAME);

    return r < 0 ? r : renameat(dirfd, from, dirfd, to) < 0 ? -errno : 0;
}

/* Writes a new file (0600) in the directory parent, fsynced. */
static int write_file_at(int parent, const char *name, const void *data, size_t len)
{
    int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int r;

    if (fd < 0)
        return -errno;
    r = write_all(fd, data, len);
    if (r == 0)
        r = fsync_fd(fd);
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}

/* Reads the regular file fd from its start in chunks, never all of it at
 * once: its size and CRC-32C. The descriptor's offset is left alone. */
static int crc_file(int fd, uint64_t *ret_size, uint32_t *ret_crc)
{
    enum { CHUNK = 256 * 1024 };
    char *buf = malloc(CHUNK);
    uint64_t off = 0;
    uint32_t crc = 0;
    int r = 0;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t n = pread(fd, buf, CHUNK, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        if (n == 0)
            break;
        crc = preempt_crc32c_(crc, buf, (size_t)n);
        off += (uint64_t)n;
    }
    free(buf);
    if (r == 0) {
        *ret_size = off;
        *ret_crc = crc;
    }
    return r;
}

/* Reads a whole file of the directory parent into a malloc'ed buffer (at most max bytes). */
static int read_file_at(int parent, const char *name, size_t max, void **ret, size_t *ret_len)
{
    int fd = openat(parent, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int r = 0;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        r = -EBADMSG;
        goto out;
    }
    buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EBADMSG; /* shrank while reading */
            goto out;
        }
        got += (size_t)n;
    }
    *ret = buf;
    *ret_len = got;
    buf = NULL;
out:
    free(buf);
    (void)close(fd);
    return r;
}

/* Opens the directory name below parent for reading; NULL with *ret_err
 * set to a negative errno on failure. */
static DIR *dir_at(int parent, const char *name, int *ret_err)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    DIR *d;

    if (fd < 0) {
        *ret_err = -errno;
        return NULL;
    }
    d = fdopendir(fd);
    if (!d) {
        *ret_err = -errno;
        (void)close(fd);
    }
    return d;
}

/* Removes a flat directory (regular files only) below parent. */
static int remove_dir_at(int parent, const char *name)
{
    struct dirent *e;
    int r = 0;
    DIR *d = dir_at(parent, name, &r);

    if (!d)
        return r;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) < 0 && r == 0)
            r = -errno;
    }
    (void)closedir(d);
    if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && r == 0)
        r = -errno;
    return r;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "ckpt-" followed by exactly 20 digits. */
static bool parse_ckpt_name(const char *name, uint64_t *ret_step)
{
    const char *d = name + strlen(CKPT_PREFIX);
    char *end;

    if (!has_prefix(name, CKPT_PREFIX) || strlen(d) != 20 || strspn(d, "0123456789") != 20)
        return false;
    errno = 0;
    *ret_step = strtoull(d, &end, 10);
    return errno == 0 && *end == '\0';
}

static void ckpt_name(char *buf, size_t size, uint64_t step)
{
    (void)snprintf(buf, size, CKPT_PREFIX "%020" PRIu64, step);
}

/* A set-aside checkpoint's name: a checkpoint's, or one followed by ".<n>"
 * (the same step set aside again). */
static bool parse_aside_name(const char *name, uint64_t *ret_step)
{
    char base[64];
    size_t len = strcspn(name, ".");

    if (len >= sizeof(base) || (name[len] && (!name[len + 1] || strspn(name + len + 1, "0123456789") !=
                                                                     strlen(name + len + 1))))
        return false;
    (void)snprintf(base, sizeof(base), "%.*s", (int)len, name);
    return parse_ckpt_name(base, ret_step);
}

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of the committed checkpoints, newest first. */
static int list_ckpts(const struct preempt_ckpt_store *s, uint64_t **ret, size_t *ret_n)
{
    struct dirent *e;
    uint64_t *steps = NULL, step;
    size_t n = 0, cap = 0;
    int r = 0;
    DIR *d = dir_at(s->dirfd, ".", &r);

    if (!d)
        return r;
    while ((e = readdir(d))) {
        if (!parse_ckpt_name(e->d_name, &step))
            continue;
        if (n == cap) {
            uint64_t *ns = realloc(steps, (cap ? cap * 2 : 16) * sizeof(*ns));
            if (!ns) {
                free(steps);
                (void)closedir(d);
                return -ENOMEM;
            }
            steps = ns;
            cap = cap ? cap * 2 : 16;
        }
        steps[n++] = step;
    }
    (void)closedir(d);
    if (n > 1)
        qsort(steps, n, sizeof(*steps), cmp_u64_desc);
    *ret = steps;
    *ret_n = n;
    return 0;
}

/* ---- the store ----------------------------------------------------------------------- */

/* Removes what interrupted saves and replacements left behind. */
static void remove_leftovers(struct preempt_ckpt_store *s)
{
    struct dirent *e;
    int err;
    DIR *d = dir_at(s->dirfd, ".", &err);

    if (!d) {
        logf_(s, 2, "%s: cannot look for leftovers of interrupted saves: %s", s->dir, strerror(-err));
        return;
    }
    while ((e = readdir(d))) {
        if (!has_prefix(e->d_name, STAGING_PREFIX) && !has_prefix(e->d_name, TRASH_PREFIX))
            continue;
        int r = remove_dir_at(s->dirfd, e->d_name);
        if (r < 0)
            logf_(s, 2, "%s/%s: cannot remove the leftover of an interrupted save: %s", s->dir, e->d_name,
                  strerror(-r));
        else
            logf_(s, 1, "%s/%s: removed the leftover of an interrupted save", s->dir, e->d_name);
    }
    (void)closedir(d);
}

#define LOCK_NAME ".lock"

/* Takes the directory's lock and records this process as its holder; a
 * held lock is -EBUSY, logged with the holder's record. flock() locks an
 * open file description: a process that forks shares it with its children
 * (they hold the lock while they live); on NFS, Linux emulates flock()
 * with a whole-file POSIX lock, which the server enforces across hosts
 * (NFSv4, or v3 with lockd); a file system without locks gives -ENOLCK. */
static int lock_dir(struct preempt_ckpt_store *s)
{
    char rec[512], host[65] = "", held[512];
    ssize_t n;

    s->lockfd = openat(s->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->lockfd < 0)
        return -errno;
    if (flock(s->lockfd, LOCK_EX | LOCK_NB) < 0) {
        int err = errno == EWOULDBLOCK ? EBUSY : errno;

        n = pread(s->lockfd, held, sizeof(held) - 1, 0);
        held[n > 0 ? n : 0] = '\0';
        held[strcspn(held, "\n")] = '\0';
        if (err == EBUSY)
            logf_(s, 3, "checkpoint directory %s is in use by %s: every worker needs a directory of its own "
                  "(two workers, or two jobs, were given one)", s->dir, held[0] ? held : "another process");
        return -err;
    }
    (void)gethostname(host, sizeof(host) - 1);
    if (s->check_id)
        n = snprintf(rec, sizeof(rec), "pid=%ld host=%s job=%s worker=%u/%u\n", (long)getpid(), host[0] ? host : "-",
                     s->job[0] ? s->job : "-", s->worker, s->workers);
    else
        n = snprintf(rec, sizeof(rec), "pid=%ld host=%s tool\n", (long)getpid(), host[0] ? host : "-");
    if (n < 0 || (size_t)n >= sizeof(rec)) /* a truncated record still names the process */
        n = (ssize_t)strlen(rec);
    if (ftruncate(s->lockfd, 0) < 0 || pwrite(s->lockfd, rec, (size_t)n, 0) != n)
        logf_(s, 2, "%s/%s: cannot record this process as the holder: %s", s->dir, LOCK_NAME, strerror(errno));
    return 0;
}

int preempt_ckpt_open_(const char *dir, unsigned max_to_keep, const struct preempt_ckpt_id *id,
                       preempt_ckpt_log_fn log, void *log_arg, struct preempt_ckpt_store **ret)
{
    struct preempt_ckpt_store *s;
    int r;

    if (!dir || !*dir || !ret || (id && id->job && (strlen(id->job) > PREEMPT_CKPT_MAX_JOB ||
                                                     (id->launch && strlen(id->launch) > PREEMPT_CKPT_MAX_LAUNCH))))
        return -EINVAL;
    /* Only the directory itself is created: a parent that does not exist is
     * a mistyped path or a volume that is not mounted, and checkpoints
     * written there would be lost with the container. */
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->dirfd = s->lockfd = -1;
    s->dir = strdup(dir);
    if (!s->dir) {
        r = -ENOMEM;
        goto fail;
    }
    if (id && id->job) {
        s->check_id = true;
        (void)snprintf(s->job, sizeof(s->job), "%s", id->job);
        (void)snprintf(s->launch, sizeof(s->launch), "%s", id->launch ? id->launch : "");
        s->worker = id->worker;
        s->workers = id->workers;
    }
    s->max_to_keep = max_to_keep;
    s->log = log;
    s->log_arg = log_arg;
    s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0) {
        r = -errno;
        goto fail;
    }
    r = lock_dir(s); /* before anything is removed: the leftovers may be another holder's save */
    if (r < 0)
        goto fail;
    remove_leftovers(s);
    *ret = s;
    return 0;
fail:
    preempt_ckpt_close_(s);
    return r;
}

void preempt_ckpt_close_(struct preempt_ckpt_store *s)
{
    if (!s)
        return;
    if (s->lockfd >= 0)
        (void)close(s->lockfd); /* releases the lock; the file stays (removing it would race a new holder) */
    if (s->dirfd >= 0)
        (void)close(s->dirfd);
    free(s->dir);
    free(s);
}

/* ---- saving ---------------------------------------------------------------------------- */

int preempt_ckpt_begin_(struct preempt_ckpt_store *s, uint64_t step, uint64_t run, uint64_t generation,
                        const char *pending, struct preempt_ckpt_writer **ret)
{
    struct preempt_ckpt_writer *w;
    int r;

    if (!s || !ret)
        return -EINVAL;
    if (s->writing)
        return -EBUSY;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->s = s;
    w->fd = -1;
    (void)snprintf(w->staging, sizeof(w->staging), STAGING_PREFIX "%020" PRIu64 "-%ld", step, (long)getpid());
    if (mkdirat(s->dirfd, w->staging, 0700) < 0) {
        r = -errno;
        free(w);
        return r;
    }
    w->fd = openat(s->dirfd, w->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->fd < 0) {
        r = -errno;
        (void)unlinkat(s->dirfd, w->staging, AT_REMOVEDIR);
        free(w);
        return r;
    }
    if (pending && (r = write_file_at(w->fd, PENDING, pending, strlen(pending))) < 0) {
        (void)close(w->fd);
        (void)remove_dir_at(s->dirfd, w->staging);
        free(w);
        return r;
    }
    w->pending = pending != NULL;
    w->m.version = MANIFEST_VERSION;
    (void)snprintf(w->m.job, sizeof(w->m.job), "%s", s->job);
    (void)snprintf(w->m.launch, sizeof(w->m.launch), "%s", s->launch);
    w->m.worker = s->worker;
    w->m.workers = s->workers;
    w->m.step = step;
    w->m.run = run;
    w->m.generation = generation;
    (void)clock_gettime(CLOCK_MONOTONIC, &w->t0);
    s->writing = true;
    *ret = w;
    return 0;
}

static bool valid_blob_name(const char *name)
{
    size_t len = name ? strlen(name) : 0;

    return len > 0 && len <= PREEMPT_CKPT_MAX_NAME && name[0] != '.' && strcmp(name, MANIFEST) != 0 &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

/* Whether a blob called name may be added: the writer has not failed, the
 * name is valid and new, and there is room. */
static int blob_may_start(const struct preempt_ckpt_writer *w, const char *name)
{
    if (w->failed)
        return w->failed;
    if (!valid_blob_name(name))
        return -EINVAL;
    for (pb_size_t i = 0; i < w->m.blobs_count; i++)
        if (strcmp(w->m.blobs[i].name, name) == 0)
            return -EINVAL;
    return w->m.blobs_count >= PREEMPT_CKPT_MAX_BLOBS ? -E2BIG : 0;
}

int preempt_ckpt_write_blob_(struct preempt_ckpt_writer *w, const char *name, const void *data, size_t len)
{
    lpckpt_Blob *b;
    int r;

    if (!w || (!data && len > 0))
        return -EINVAL;
    if ((r = blob_may_start(w, name)) < 0)
        return r;
    r = write_file_at(w->fd, name, data, len);
    if (r < 0) {
        w->failed = r;
        return r;
    }
    b = &w->m.blobs[w->m.blobs_count++];
    (void)snprintf(b->name, sizeof(b->name), "%s", name);
    b->size = len;
    b->crc32c = preempt_crc32c_(0, data, len);
    return 0;
}

int preempt_ckpt_open_blob_(struct preempt_ckpt_writer *w, const char *name, int *ret_fd)
{
    int fd, r;

    if (!w || !ret_fd)
        return -EINVAL;
    if ((r = blob_may_start(w, name)) < 0)
        return r;
    if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0 ||
        (fd = openat(w->fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        w->failed = r < 0 ? r : -errno;
        return w->failed;
    }
    w->streamed[w->m.blobs_count] = true;
    (void)snprintf(w->m.blobs[w->m.blobs_count++].name, sizeof(w->m.blobs[0].name), "%s", name);
    *ret_fd = fd;
    return 0;
}

/* The blobs the caller wrote through descriptors: their sizes and
 * checksums, read back from the files, which are then made durable. */
static int seal_streamed(struct preempt_ckpt_writer *w)
{
    for (pb_size_t i = 0; i < w->m.blobs_count; i++) {
        lpckpt_Blob *b = &w->m.blobs[i];
        int fd, r;

        if (!w->streamed[i])
            continue;
        fd = openat(w->fd, b->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return -errno;
        r = crc_file(fd, &b->size, &b->crc32c);
        if (r == 0)
            r = fsync_fd(fd);
        (void)close(fd);
        if (r < 0)
            return r;
    }
    return 0;
}

void preempt_ckpt_abort_(struct preempt_ckpt_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        (void)close(w->fd);
    (void)remove_dir_at(w->s->dirfd, w->staging);
    w->s->writing = false;
    free(w);
}

static int pending_key(const struct preempt_ckpt_store *s, uint64_t step, char *key, size_t size);

/* Keeps the max_to_keep newest checkpoints the job committed; older ones
 * go. Pending ones neither count nor go: the job has not decided them. */
static void apply_retention(struct preempt_ckpt_store *s)
{
    uint64_t *steps;
    size_t n, kept = 0;
    char name[64];

    if (s->max_to_keep == 0 || list_ckpts(s, &steps, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (pending_key(s, steps[i], NULL, 0) != 0 || kept++ < s->max_to_keep)
            continue;
        ckpt_name(name, sizeof(name), steps[i]);
        int r = remove_dir_at(s->dirfd, name);
        if (r < 0)
            logf_(s, 2, "%s/%s: cannot remove an old checkpoint: %s", s->dir, name, strerror(-r));
    }
    free(steps);
}

static int make_room(struct preempt_ckpt_store *s, const char *name);
static void prune_aside(struct preempt_ckpt_store *s, uint64_t committed);

static void fill_info(const struct preempt_ckpt_store *s, const lpckpt_Manifest *m, struct preempt_ckpt_info *info)
{
    char name[64];

    ckpt_name(name, sizeof(name), m->step);
    info->step = m->step;
    info->run = m->run;
    info->generation = m->generation;
    info->n_blobs = m->blobs_count;
    info->save_ms = m->save_ms;
    info->bytes = 0;
    for (pb_size_t i = 0; i < m->blobs_count; i++)
        info->bytes += m->blobs[i].size;
    (void)snprintf(info->path, sizeof(info->path), "%s/%s", s->dir, name);
}

int preempt_ckpt_commit_(struct preempt_ckpt_writer *w, struct preempt_ckpt_info *ret_info)
{
    struct preempt_ckpt_store *s;
    uint8_t buf[lpckpt_Manifest_size];
    pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof(buf));
    char name[64], trash[96];
    bool replaced = false;
    int r;

    if (!w)
        return -EINVAL;
    s = w->s;
    if ((r = w->failed) < 0 || (r = seal_streamed(w)) < 0)
        goto fail;
    {
        struct timespec t1;

        (void)clock_gettime(CLOCK_MONOTONIC, &t1);
        w->m.save_ms = (uint64_t)((t1.tv_sec - w->t0.tv_sec) * 1000 + (t1.tv_nsec - w->t0.tv_nsec) / 1000000);
    }
    if (!pb_encode(&os, lpckpt_Manifest_fields, &w->m)) {
        r = -EINVAL;
        goto fail;
    }
    /* the manifest last, then everything on disk before the rename */
    if ((r = write_file_at(w->fd, MANIFEST, buf, os.bytes_written)) < 0)
        goto fail;
    if ((r = fsync_fd(w->fd)) < 0)
        goto fail;
    ckpt_name(name, sizeof(name), w->m.step);
    if ((r = make_room(s, name)) < 0)
        goto fail;
    /* A checkpoint of the same step (an earlier incarnation's of this
     * worker) is moved out of the way first: a directory cannot be renamed
     * onto a non-empty one. */
    (void)snprintf(trash, sizeof(trash), TRASH_PREFIX "%s-%ld", name, (long)getpid());
    if ((r = rename_at(s->dirfd, name, trash)) == 0)
        replaced = true;
    else if (r != -ENOENT)
        goto fail;
    if ((r = rename_at(s->dirfd, w->staging, name)) < 0) {
        if (replaced)
            (void)renameat(s->dirfd, trash, s->dirfd, name);
        goto fail;
    }
    if ((r = fsync_fd(s->dirfd)) < 0) {
        /* The rename may not last: the commit is taken back, so that a
         * failed save leaves the store as it was and a restart finds what
         * the exit reported. */
        logf_(s, 2, "%s: fsync after committing %s failed: %s; taken back", s->dir, name, strerror(-r));
        (void)renameat(s->dirfd, name, s->dirfd, w->staging);
        if (replaced)
            (void)renameat(s->dirfd, trash, s->dirfd, name);
        goto fail;
    }
    if (replaced)
        (void)remove_dir_at(s->dirfd, trash);
    (void)close(w->fd);
    w->fd = -1;
    if (ret_info)
        fill_info(s, &w->m, ret_info);
    s->writing = false;
    if (!w->pending) { /* a pending one waits for the job's decision (preempt_ckpt_keep_) */
        apply_retention(s);
        prune_aside(s, w->m.step);
    }
    free(w);
    return r;
fail:
    preempt_ckpt_abort_(w);
    return r;
}

/* ---- restoring ---------------------------------------------------------------------------- */

/* Decodes a manifest: version 1 or 2, every blob name valid and named once. */
static int decode_manifest(const void *data, size_t len, lpckpt_Manifest *m)
{
    pb_istream_t is = pb_istream_from_buffer(data, len);

    *m = (lpckpt_Manifest)lpckpt_Manifest_init_zero;
    if (!pb_decode(&is, lpckpt_Manifest_fields, m) || m->version < 1 || m->version > MANIFEST_VERSION)
        return -EBADMSG;
    for (pb_size_t i = 0; i < m->blobs_count; i++) {
        if (!valid_blob_name(m->blobs[i].name))
            return -EBADMSG;
        for (pb_size_t k = 0; k < i; k++)
            if (!strcmp(m->blobs[k].name, m->blobs[i].name))
                return -EBADMSG;
    }
    return 0;
}

int preempt_ckpt_manifest_decode_(const void *data, size_t len, uint64_t *ret_step, unsigned *ret_blobs)
{
    lpckpt_Manifest m;
    int r = decode_manifest(data, len, &m);

    if (r == 0) {
        *ret_step = m.step;
        *ret_blobs = m.blobs_count;
    }
    return r;
}

static int read_manifest(int ckfd, lpckpt_Manifest *m)
{
    void *data;
    size_t len;
    int r = read_file_at(ckfd, MANIFEST, lpckpt_Manifest_size, &data, &len);

    if (r < 0)
        return r == -ENOENT ? -EBADMSG : r;
    r = decode_manifest(data, len, m);
    free(data);
    return r;
}

/* Opens blob b of the checkpoint ckfd and checks its size and checksum
 * chunk by chunk (a blob is never held whole for this). *ret_fd: the
 * open blob, at offset 0, for the caller to close; NULL: closed. */
static int open_verified(int ckfd, const lpckpt_Blob *b, int *ret_fd)
{
    uint64_t size;
    uint32_t crc;
    struct stat st;
    int fd, r;

    if (!valid_blob_name(b->name))
        return -EBADMSG;
    fd = openat(ckfd, b->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? -EBADMSG : -errno;
    if (fstat(fd, &st) < 0)
        r = -errno;
    else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != b->size)
        r = -EBADMSG;
    else if ((r = crc_file(fd, &size, &crc)) == 0 && (size != b->size || crc != b->crc32c))
        r = -EBADMSG;
    if (r < 0 || !ret_fd)
        (void)close(fd);
    else
        *ret_fd = fd;
    return r;
}

/* Reads blob b of the checkpoint ckfd whole, verified. */
static int read_verified(int ckfd, const lpckpt_Blob *b, void **ret_data, size_t *ret_len)
{
    void *data;
    size_t len;
    int r;

    if (!valid_blob_name(b->name))
        return -EBADMSG;
    r = read_file_at(ckfd, b->name, b->size, &data, &len);
    if (r < 0)
        return r == -ENOENT ? -EBADMSG : r;
    if (len != b->size || preempt_crc32c_(0, data, len) != b->crc32c) {
        free(data);
        return -EBADMSG;
    }
    *ret_data = data;
    *ret_len = len;
    return 0;
}

/* Whose checkpoint m is, for messages: "job J, worker W of N, launch L". */
static const char *writer_of(const lpckpt_Manifest *m, char *buf, size_t size)
{
    if (m->version < 2)
        (void)snprintf(buf, size, "an unknown writer (manifest version 1)");
    else
        (void)snprintf(buf, size, "job %s, worker %u of %u, launch %s", m->job[0] ? m->job : "(none)",
                       (unsigned)m->worker, (unsigned)m->workers, m->launch[0] ? m->launch : "unknown");
    return buf;
}

/* Whether m is another job's or worker's checkpoint. A version 1 manifest
 * names no writer: it is taken as this worker's (it was written before
 * the identity existed, and only the lock kept directories apart). */
static bool foreign(const struct preempt_ckpt_store *s, const lpckpt_Manifest *m)
{
    return s->check_id && m->version >= 2 &&
           (strcmp(m->job, s->job) || m->worker != s->worker || m->workers != s->workers);
}

/* Opens checkpoint directory name below parent and reads its manifest,
 * which must name step. On success *ret_fd is the checkpoint's directory
 * (the caller closes it). On failure why says what is wrong, and the
 * result is the negative errno of opening the directory, or -EBADMSG for
 * its manifest. */
static int open_ckpt_at(int parent, const char *name, uint64_t step, lpckpt_Manifest *m, int *ret_fd, char *why,
                        size_t why_size)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW), r;

    if (fd < 0) {
        r = -errno;
        (void)snprintf(why, why_size, "cannot be opened: %s", strerror(-r));
        return r;
    }
    r = read_manifest(fd, m);

    if (r == -EBADMSG)
        (void)snprintf(why, why_size, "its manifest is missing or unreadable");
    else if (r < 0) /* out of memory, I/O: not the checkpoint's fault */
        (void)snprintf(why, why_size, "its manifest cannot be read: %s", strerror(-r));
    else if (m->step != step)
        (void)snprintf(why, why_size, "its manifest names another step");
    else {
        *ret_fd = fd;
        return 0;
    }
    (void)close(fd);
    return r < 0 ? r : -EBADMSG;
}

/* Verifies every blob of an open checkpoint. */
static int verify_blobs(int fd, const lpckpt_Manifest *m, char *why, size_t why_size)
{
    for (pb_size_t i = 0; i < m->blobs_count; i++) {
        int r = open_verified(fd, &m->blobs[i], NULL);

        if (r < 0) {
            (void)snprintf(why, why_size, "blob %s is missing, truncated or fails its checksum", m->blobs[i].name);
            return r;
        }
    }
    return 0;
}

/* Opens and verifies the checkpoint of a step: 0, -EBADMSG (corrupt),
 * -EPERM (another job's or worker's), or the errno of opening it; why
 * says what is wrong. */
static int verify_ckpt(const struct preempt_ckpt_store *s, uint64_t step, lpckpt_Manifest *m, char *why,
                       size_t why_size)
{
    char name[64], w[PREEMPT_CKPT_MAX_JOB + PREEMPT_CKPT_MAX_LAUNCH + 64];
    int fd, r;

    ckpt_name(name, sizeof(name), step);
    if ((r = open_ckpt_at(s->dirfd, name, step, m, &fd, why, why_size)) < 0)
        return r;
    if (foreign(s, m)) {
        (void)snprintf(why, why_size, "it belongs to %s", writer_of(m, w, sizeof(w)));
        r = -EPERM;
    } else
        r = verify_blobs(fd, m, why, why_size);
    (void)close(fd);
    return r;
}

/* What verify_ckpt's result says of a checkpoint, for messages. */
static const char *fault_name(int v)
{
    return v == -EPERM ? "not this worker's" : v == -EBADMSG ? "corrupt" : "not readable";
}

int preempt_ckpt_latest_(struct preempt_ckpt_store *s, struct preempt_ckpt_info *ret_info)
{
    uint64_t *steps;
    size_t n;
    int r;

    if (!s || !ret_info)
        return -EINVAL;
    if ((r = list_ckpts(s, &steps, &n)) < 0)
        return r;
    r = -ENOENT;
    for (size_t i = 0; i < n; i++) {
        lpckpt_Manifest m;
        char why[256], name[64];
        int v;

        if (pending_key(s, steps[i], NULL, 0) != 0)
            continue; /* not committed by the job (yet) */
        if ((v = verify_ckpt(s, steps[i], &m, why, sizeof(why))) == 0) {
            fill_info(s, &m, ret_info);
            r = 0;
            break;
        }
        ckpt_name(name, sizeof(name), steps[i]);
        logf_(s, 2, "%s/%s is %s (%s); falling back to an older checkpoint", s->dir, name, fault_name(v), why);
    }
    free(steps);
    return r;
}

/* 1 with the decision key in key (when size > 0) if the checkpoint at step
 * is pending; 0 if it is not; a negative errno when it cannot be told. */
static int pending_key(const struct preempt_ckpt_store *s, uint64_t step, char *key, size_t size)
{
    char name[64];
    void *data;
    size_t len;
    int fd, r;

    ckpt_name(name, sizeof(name), step);
    fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    r = read_file_at(fd, PENDING, MAX_PENDING_KEY, &data, &len);
    (void)close(fd);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (size > 0)
        (void)snprintf(key, size, "%.*s", (int)len, (const char *)data);
    free(data);
    return 1;
}

int preempt_ckpt_list_(struct preempt_ckpt_store *s, bool pending, uint64_t **ret, size_t *ret_n)
{
    uint64_t *steps;
    size_t n, k = 0;
    int r;

    if (!s || !ret || !ret_n)
        return -EINVAL;
    if ((r = list_ckpts(s, &steps, &n)) < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        lpckpt_Manifest m;
        char why[256];
        int v;

        if ((pending_key(s, steps[i], NULL, 0) == 1) != pending)
            continue;
        if ((v = verify_ckpt(s, steps[i], &m, why, sizeof(why))) == 0)
            steps[k++] = steps[i];
        else
            logf_(s, 2, "%s: the checkpoint at step %llu is %s (%s); not offered", s->dir,
                  (unsigned long long)steps[i], fault_name(v), why);
    }
    if (k == 0) {
        free(steps);
        steps = NULL;
    }
    *ret = steps;
    *ret_n = k;
    return 0;
}

int preempt_ckpt_at_(struct preempt_ckpt_store *s, uint64_t step, struct preempt_ckpt_info *ret_info)
{
    lpckpt_Manifest m;
    char why[256];

    if (!s || !ret_info)
        return -EINVAL;
    if (verify_ckpt(s, step, &m, why, sizeof(why)) < 0)
        return -ENOENT;
    fill_info(s, &m, ret_info);
    return 0;
}

int preempt_ckpt_pending_(struct preempt_ckpt_store *s, uint64_t step, char *key, size_t size)
{
    if (!s || (size > 0 && !key))
        return -EINVAL;
    return pending_key(s, step, key, size);
}

int preempt_ckpt_keep_(struct preempt_ckpt_store *s, uint64_t step)
{
    char name[64];
    int fd, r;

    if (!s)
        return -EINVAL;
    if ((r = pending_key(s, step, NULL, 0)) <= 0)
        return r; /* committed already (local mode), or gone */
    ckpt_name(name, sizeof(name), step);
    fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    r = unlinkat(fd, PENDING, 0) < 0 && errno != ENOENT ? -errno : 0;
    if (r == 0)
        r = fsync_fd(fd); /* the decision lasts before older checkpoints go */
    (void)close(fd);
    if (r < 0)
        return r;
    apply_retention(s);
    prune_aside(s, step);
    return 0;
}

int preempt_ckpt_discard_(struct preempt_ckpt_store *s, uint64_t step)
{
    char name[64];
    int r;

    if (!s)
        return -EINVAL;
    if ((r = pending_key(s, step, NULL, 0)) <= 0)
        return r == -ENOENT ? 0 : r; /* a decided checkpoint is never discarded here */
    ckpt_name(name, sizeof(name), step);
    r = remove_dir_at(s->dirfd, name);
    return r < 0 ? r : 1;
}

/* ---- setting aside ------------------------------------------------------------------------ */

/* Moves checkpoint directory name (of DIR) to DIR/aside/, recording why in
 * it; a step set aside before keeps its copy (the new one gets ".<n>"). */
static int set_aside(struct preempt_ckpt_store *s, const char *name, const char *why)
{
    char target[80];
    int afd, fd, r;

    if (mkdirat(s->dirfd, ASIDE_DIR, 0700) < 0 && errno != EEXIST)
        return -errno;
    afd = openat(s->dirfd, ASIDE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (afd < 0)
        return -errno;
    (void)snprintf(target, sizeof(target), "%s", name);
    for (unsigned n = 1; faccessat(afd, target, F_OK, AT_SYMLINK_NOFOLLOW) == 0; n++)
        (void)snprintf(target, sizeof(target), "%s.%u", name, n);
    fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    r = fd < 0 ? -errno : write_file_at(fd, ASIDE_WHY, why, strlen(why));
    if (fd >= 0)
        (void)close(fd);
    if (r == 0 && renameat(s->dirfd, name, afd, target) < 0)
        r = -errno;
    if (r == 0 && (r = fsync_fd(afd)) == 0)
        r = fsync_fd(s->dirfd);
    (void)close(afd);
    if (r < 0)
        logf_(s, 3, "%s/%s: cannot set it aside: %s", s->dir, name, strerror(-r));
    else
        logf_(s, 2, "%s/%s set aside as %s/%s/%s: %s", s->dir, name, s->dir, ASIDE_DIR, target, why);
    return r;
}

int preempt_ckpt_set_aside_(struct preempt_ckpt_store *s, uint64_t step, const char *why)
{
    char name[64];

    if (!s || !why)
        return -EINVAL;
    ckpt_name(name, sizeof(name), step);
    return set_aside(s, name, why);
}

int preempt_ckpt_set_aside_newer_(struct preempt_ckpt_store *s, uint64_t step, const char *why)
{
    uint64_t *steps;
    size_t n;
    int r, moved = 0;

    if (!s || !why)
        return -EINVAL;
    if ((r = list_ckpts(s, &steps, &n)) < 0)
        return r;
    for (size_t i = 0; i < n && steps[i] > step && r >= 0; i++)
        if ((r = preempt_ckpt_set_aside_(s, steps[i], why)) == 0)
            moved++;
    free(steps);
    return r < 0 ? r : moved;
}

/* A commit's target name is free, or holds this worker's own earlier
 * checkpoint of that step (replaced). Another job's or worker's is an
 * error (two writers share the directory); a corrupt one is set aside. */
static int make_room(struct preempt_ckpt_store *s, const char *name)
{
    lpckpt_Manifest m;
    char why[256], w[PREEMPT_CKPT_MAX_JOB + PREEMPT_CKPT_MAX_LAUNCH + 320];
    uint64_t step = 0;
    int fd, r;

    (void)parse_ckpt_name(name, &step);
    r = open_ckpt_at(s->dirfd, name, step, &m, &fd, why, sizeof(why));
    if (r == -ENOENT)
        return 0;
    if (r == 0) {
        (void)close(fd);
        if (!foreign(s, &m))
            return 0;
        logf_(s, 3, "%s/%s belongs to %s: not replaced by this worker's save (two jobs or workers write to this "
              "directory?)", s->dir, name, writer_of(&m, w, sizeof(w)));
        return -EEXIST;
    }
    if (r != -EBADMSG) /* it could not be read (out of memory, I/O): the commit fails, nothing moves */
        return r;
    (void)snprintf(w, sizeof(w), "replaced by a new save of its step (%s)", why);
    return set_aside(s, name, w);
}

/* A checkpoint the job committed at step supersedes the ones set aside
 * at older steps: they go. */
static void prune_aside(struct preempt_ckpt_store *s, uint64_t committed)
{
    struct dirent *e;
    uint64_t step;
    int err;
    DIR *d = dir_at(s->dirfd, ASIDE_DIR, &err);

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (!parse_aside_name(e->d_name, &step) || step >= committed)
            continue;
        if ((err = remove_dir_at(dirfd(d), e->d_name)) < 0)
            logf_(s, 2, "%s/%s/%s: cannot remove: %s", s->dir, ASIDE_DIR, e->d_name, strerror(-err));
        else
            logf_(s, 1, "%s/%s/%s removed: step %llu is committed", s->dir, ASIDE_DIR, e->d_name,
                  (unsigned long long)committed);
    }
    (void)closedir(d);
}

int preempt_ckpt_unset_aside_(struct preempt_ckpt_store *s, const char *aside_name)
{
    char name[64];
    uint64_t step;
    int afd, fd, r;

    if (!s || !aside_name || !parse_aside_name(aside_name, &step))
        return -EINVAL;
    ckpt_name(name, sizeof(name), step);
    if (faccessat(s->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return -EEXIST;
    afd = openat(s->dirfd, ASIDE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (afd < 0)
        return -errno;
    fd = openat(afd, aside_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    r = fd < 0 ? -errno : 0;
    if (r == 0 && unlinkat(fd, ASIDE_WHY, 0) < 0 && errno != ENOENT)
        r = -errno;
    if (fd >= 0)
        (void)close(fd);
    if (r == 0 && renameat(afd, aside_name, s->dirfd, name) < 0)
        r = -errno;
    if (r == 0)
        r = fsync_fd(s->dirfd);
    (void)close(afd);
    return r;
}

/* ---- inspection ---------------------------------------------------------------------------- */

/* Describes checkpoint directory name of parent (aside: a set-aside one). */
static void describe(int parent, const char *name, bool aside, uint64_t step, struct preempt_ckpt_entry *e)
{
    lpckpt_Manifest m;
    void *data;
    size_t len;
    int fd;

    memset(e, 0, sizeof(*e));
    (void)snprintf(e->name, sizeof(e->name), "%s%s", aside ? ASIDE_DIR "/" : "", name);
    e->step = step;
    e->aside = aside;
    e->status = open_ckpt_at(parent, name, step, &m, &fd, e->why, sizeof(e->why));
    if (e->status < 0)
        return;
    e->version = m.version;
    (void)snprintf(e->job, sizeof(e->job), "%s", m.job);
    (void)snprintf(e->launch, sizeof(e->launch), "%s", m.launch);
    e->worker = m.worker;
    e->workers = m.workers;
    e->save_ms = m.save_ms;
    for (pb_size_t i = 0; i < m.blobs_count; i++)
        e->bytes += m.blobs[i].size;
    e->status = verify_blobs(fd, &m, e->why, sizeof(e->why));
    e->pending = faccessat(fd, PENDING, F_OK, 0) == 0;
    if (aside && read_file_at(fd, ASIDE_WHY, sizeof(e->why) - 1, &data, &len) == 0) {
        if (e->status == 0)
            (void)snprintf(e->why, sizeof(e->why), "%.*s", (int)len, (const char *)data);
        free(data);
    }
    (void)close(fd);
}

static int cmp_entry(const void *a, const void *b)
{
    const struct preempt_ckpt_entry *x = a, *y = b;

    if (x->aside != y->aside)
        return x->aside ? 1 : -1;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* Appends the checkpoints of directory fd (aside: DIR/aside) to *v. */
static int scan(int fd, bool aside, struct preempt_ckpt_entry **v, size_t *n, size_t *cap)
{
    struct dirent *de;
    uint64_t step;
    int r = 0;
    DIR *d = dir_at(fd, ".", &r);

    if (!d)
        return r;
    while ((de = readdir(d))) {
        if (!(aside ? parse_aside_name(de->d_name, &step) : parse_ckpt_name(de->d_name, &step)))
            continue;
        if (*n == *cap) {
            struct preempt_ckpt_entry *nv = realloc(*v, (*cap ? *cap * 2 : 8) * sizeof(*nv));

            if (!nv) {
                r = -ENOMEM;
                break;
            }
            *v = nv;
            *cap = *cap ? *cap * 2 : 8;
        }
        describe(dirfd(d), de->d_name, aside, step, &(*v)[(*n)++]);
    }
    (void)closedir(d);
    return r;
}

int preempt_ckpt_entries_(const char *dir, struct preempt_ckpt_entry **ret, size_t *ret_n)
{
    struct preempt_ckpt_entry *v = NULL;
    size_t n = 0, cap = 0;
    int fd, afd, r;

    if (!dir || !ret || !ret_n)
        return -EINVAL;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    r = scan(fd, false, &v, &n, &cap);
    afd = r == 0 ? openat(fd, ASIDE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
    if (afd >= 0) {
        r = scan(afd, true, &v, &n, &cap);
        (void)close(afd);
    }
    (void)close(fd);
    if (r < 0) {
        free(v);
        return r;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_entry);
    *ret = v;
    *ret_n = n;
    return 0;
}

/* Finds blob name in the checkpoint of info and reads it whole (ret_data)
 * or opens it (ret_fd), verified either way. */
static int get_blob(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info, const char *name,
                    void **ret_data, size_t *ret_len, int *ret_fd)
{
    lpckpt_Manifest m;
    char why[256], ck[64];
    int fd, r;

    if (!s || !info || !name)
        return -EINVAL;
    ckpt_name(ck, sizeof(ck), info->step);
    r = open_ckpt_at(s->dirfd, ck, info->step, &m, &fd, why, sizeof(why));
    if (r < 0)
        return r;
    r = -ENOENT;
    for (pb_size_t i = 0; i < m.blobs_count; i++) {
        if (strcmp(m.blobs[i].name, name) == 0) {
            r = ret_fd ? open_verified(fd, &m.blobs[i], ret_fd) : read_verified(fd, &m.blobs[i], ret_data, ret_len);
            break;
        }
    }
    (void)close(fd);
    return r;
}

int preempt_ckpt_read_blob_(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info, const char *name,
                            void **ret_data, size_t *ret_len)
{
    return ret_data && ret_len ? get_blob(s, info, name, ret_data, ret_len, NULL) : -EINVAL;
}

int preempt_ckpt_open_read_blob_(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info,
                                 const char *name, int *ret_fd)
{
    return ret_fd ? get_blob(s, info, name, NULL, NULL, ret_fd) : -EINVAL;
}
