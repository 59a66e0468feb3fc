/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/ckpt.c: the checkpoint manager (see ckpt-internal.h). Every file and
 * directory operation goes through the store's directory descriptor (the
 * *at() calls), so a checkpoint directory that is moved or replaced while
 * a save runs cannot redirect a write elsewhere. */
#define _GNU_SOURCE
#include "ckpt-state.h"

void ck_logf_(const struct preempt_ckpt_store *s, int level, const char *fmt, ...)
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

/* ---- the store ----------------------------------------------------------------------- */

/* Removes what interrupted saves and replacements left behind. */
static void remove_leftovers(struct preempt_ckpt_store *s)
{
    struct dirent *e;
    int err;
    DIR *d = ck_dir_at(s->dirfd, ".", &err);

    if (!d) {
        ck_logf_(s, 2, "%s: cannot look for leftovers of interrupted saves: %s", s->dir, strerror(-err));
        return;
    }
    while ((e = readdir(d))) {
        if (!ck_has_prefix(e->d_name, STAGING_PREFIX) && !ck_has_prefix(e->d_name, TRASH_PREFIX))
            continue;
        int r = ck_remove_dir_at(s->dirfd, e->d_name);
        if (r < 0)
            ck_logf_(s, 2, "%s/%s: cannot remove the leftover of an interrupted save: %s", s->dir, e->d_name,
                     strerror(-r));
        else
            ck_logf_(s, 1, "%s/%s: removed the leftover of an interrupted save", s->dir, e->d_name);
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
            ck_logf_(s, 3, "checkpoint directory %s is in use by %s: every worker needs a directory of its own "
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
        ck_logf_(s, 2, "%s/%s: cannot record this process as the holder: %s", s->dir, LOCK_NAME, strerror(errno));
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
    if (pending && (r = ck_write_file_at(w->fd, PENDING, pending, strlen(pending))) < 0) {
        (void)close(w->fd);
        (void)ck_remove_dir_at(s->dirfd, w->staging);
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
    r = ck_write_file_at(w->fd, name, data, len);
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

/* A blob whose bytes come later (through a descriptor, or a persist):
 * its file created empty (opened with mode, *ret_fd) and its name entered
 * as blob number *ret_i; the caller counts it in. An error fails the writer. */
static int new_blob_file(struct preempt_ckpt_writer *w, const char *name, int mode, int *ret_fd, pb_size_t *ret_i)
{
    int fd, r;

    if ((r = blob_may_start(w, name)) < 0)
        return r;
    if ((r = preempt_fault_(PREEMPT_FAULT_WRITE)) < 0 ||
        (fd = openat(w->fd, name, mode | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        w->failed = r < 0 ? r : -errno;
        return w->failed;
    }
    *ret_i = w->m.blobs_count;
    (void)snprintf(w->m.blobs[*ret_i].name, sizeof(w->m.blobs[0].name), "%s", name);
    *ret_fd = fd;
    return 0;
}

int preempt_ckpt_open_blob_(struct preempt_ckpt_writer *w, const char *name, int *ret_fd)
{
    pb_size_t i = 0;
    int r;

    if (!w || !ret_fd)
        return -EINVAL;
    if ((r = new_blob_file(w, name, O_RDWR, ret_fd, &i)) < 0)
        return r;
    w->streamed[i] = true;
    w->m.blobs_count++;
    return 0;
}

int preempt_ckpt_add_snapshot_(struct preempt_ckpt_writer *w, const char *name, const void *data, size_t len)
{
    pb_size_t i = 0;
    int fd = -1, r;

    if (!w || (!data && len > 0))
        return -EINVAL;
    if ((r = new_blob_file(w, name, O_WRONLY, &fd, &i)) < 0)
        return r;
    (void)close(fd);
    w->snap[i] = data ? data : "";
    w->n_snap++;
    w->m.blobs[i].size = len;
    w->m.blobs_count++;
    return 0;
}

bool preempt_ckpt_two_phase_(const struct preempt_ckpt_writer *w)
{
    return w && w->n_snap > 0;
}

void preempt_ckpt_persist_close_(struct preempt_persist_blob *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i].fd >= 0)
            (void)close(b[i].fd);
        b[i].fd = -1;
    }
}

int preempt_ckpt_persist_blobs_(struct preempt_ckpt_writer *w, struct preempt_persist_blob *out, size_t *ret_n)
{
    size_t n = 0;

    if (!w || w->failed)
        return w ? w->failed : -EINVAL;
    for (pb_size_t i = 0; i < w->m.blobs_count; i++) {
        bool snap = w->snap[i] != NULL;
        int fd;

        if (!snap && !w->streamed[i])
            continue; /* written (and made durable) by preempt_save_blob() */
        fd = openat(w->fd, w->m.blobs[i].name, (snap ? O_WRONLY : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            int r = -errno;
            preempt_ckpt_persist_close_(out, n);
            return r;
        }
        out[n++] = (struct preempt_persist_blob){ .fd = fd, .data = snap ? w->snap[i] : NULL,
                                                  .len = snap ? w->m.blobs[i].size : 0 };
    }
    *ret_n = n;
    return 0;
}

void preempt_ckpt_persisted_(struct preempt_ckpt_writer *w, const struct preempt_persist_blob *b, size_t n,
                             bool paced)
{
    size_t k = 0;

    w->m.save_paced = paced;
    for (pb_size_t i = 0; i < w->m.blobs_count && k < n; i++) {
        if (!w->snap[i] && !w->streamed[i])
            continue;
        w->m.blobs[i].size = b[k].size;
        w->m.blobs[i].crc32c = b[k].crc32c;
        (void)close(b[k].fd);
        w->snap[i] = NULL;
        w->streamed[i] = false; /* sized, checksummed and durable */
        k++;
    }
    w->n_snap = 0;
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
        r = ck_crc_file(fd, &b->size, &b->crc32c);
        if (r == 0)
            r = ck_fsync_fd(fd);
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
    (void)ck_remove_dir_at(w->s->dirfd, w->staging);
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

    if (s->max_to_keep == 0 || ck_list_ckpts(s, &steps, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (pending_key(s, steps[i], NULL, 0) != 0 || kept++ < s->max_to_keep)
            continue;
        ck_ckpt_name(name, sizeof(name), steps[i]);
        int r = ck_remove_dir_at(s->dirfd, name);
        if (r < 0)
            ck_logf_(s, 2, "%s/%s: cannot remove an old checkpoint: %s", s->dir, name, strerror(-r));
    }
    free(steps);
}


static void fill_info(const struct preempt_ckpt_store *s, const lpckpt_Manifest *m, struct preempt_ckpt_info *info)
{
    char name[64];

    ck_ckpt_name(name, sizeof(name), m->step);
    info->step = m->step;
    info->run = m->run;
    info->generation = m->generation;
    info->n_blobs = m->blobs_count;
    info->save_ms = m->save_ms;
    info->save_paced = m->save_paced;
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
    if (w->n_snap) { /* snapshots not persisted: their files are empty, their checksums unknown */
        r = -EINVAL;
        goto fail;
    }
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
    if ((r = ck_write_file_at(w->fd, MANIFEST, buf, os.bytes_written)) < 0)
        goto fail;
    if ((r = ck_fsync_fd(w->fd)) < 0)
        goto fail;
    ck_ckpt_name(name, sizeof(name), w->m.step);
    if ((r = ck_make_room(s, name)) < 0)
        goto fail;
    /* A checkpoint of the same step (an earlier incarnation's of this
     * worker) is moved out of the way first: a directory cannot be renamed
     * onto a non-empty one. */
    (void)snprintf(trash, sizeof(trash), TRASH_PREFIX "%s-%ld", name, (long)getpid());
    if ((r = ck_rename_at(s->dirfd, name, trash)) == 0)
        replaced = true;
    else if (r != -ENOENT)
        goto fail;
    if ((r = ck_rename_at(s->dirfd, w->staging, name)) < 0) {
        if (replaced)
            (void)renameat(s->dirfd, trash, s->dirfd, name);
        goto fail;
    }
    if ((r = ck_fsync_fd(s->dirfd)) < 0) {
        /* The rename may not last: the commit is taken back, so that a
         * failed save leaves the store as it was and a restart finds what
         * the exit reported. */
        ck_logf_(s, 2, "%s: fsync after committing %s failed: %s; taken back", s->dir, name, strerror(-r));
        (void)renameat(s->dirfd, name, s->dirfd, w->staging);
        if (replaced)
            (void)renameat(s->dirfd, trash, s->dirfd, name);
        goto fail;
    }
    if (replaced)
        (void)ck_remove_dir_at(s->dirfd, trash);
    (void)close(w->fd);
    w->fd = -1;
    if (ret_info)
        fill_info(s, &w->m, ret_info);
    s->writing = false;
    if (!w->pending) { /* a pending one waits for the job's decision (preempt_ckpt_keep_) */
        apply_retention(s);
        ck_prune_aside(s, w->m.step);
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
    int r = ck_read_file_at(ckfd, MANIFEST, lpckpt_Manifest_size, &data, &len);

    if (r < 0)
        return r == -ENOENT ? -EBADMSG : r;
    r = decode_manifest(data, len, m);
    free(data);
    return r;
}

/* Opens blob b of the checkpoint ckfd and checks its size and checksum
 * chunk by chunk (a blob is never held whole for this). *ret_fd: the
 * open blob, at offset 0, for the caller to close; NULL: closed. */
int ck_open_verified(int ckfd, const lpckpt_Blob *b, int *ret_fd)
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
    else if ((r = ck_crc_file(fd, &size, &crc)) == 0 && (size != b->size || crc != b->crc32c))
        r = -EBADMSG;
    if (r < 0 || !ret_fd)
        (void)close(fd);
    else
        *ret_fd = fd;
    return r;
}

/* Reads blob b of the checkpoint ckfd whole, verified. */
int ck_read_verified(int ckfd, const lpckpt_Blob *b, void **ret_data, size_t *ret_len)
{
    void *data;
    size_t len;
    int r;

    if (!valid_blob_name(b->name))
        return -EBADMSG;
    r = ck_read_file_at(ckfd, b->name, b->size, &data, &len);
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
const char *ck_writer_of(const lpckpt_Manifest *m, char *buf, size_t size)
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
bool ck_foreign(const struct preempt_ckpt_store *s, const lpckpt_Manifest *m)
{
    return s->check_id && m->version >= 2 &&
           (strcmp(m->job, s->job) || m->worker != s->worker || m->workers != s->workers);
}

/* Opens checkpoint directory name below parent and reads its manifest,
 * which must name step. On success *ret_fd is the checkpoint's directory
 * (the caller closes it). On failure why says what is wrong, and the
 * result is the negative errno of opening the directory, or -EBADMSG for
 * its manifest. */
int ck_open_ckpt_at(int parent, const char *name, uint64_t step, lpckpt_Manifest *m, int *ret_fd, char *why,
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
int ck_verify_blobs(int fd, const lpckpt_Manifest *m, char *why, size_t why_size)
{
    for (pb_size_t i = 0; i < m->blobs_count; i++) {
        int r = ck_open_verified(fd, &m->blobs[i], NULL);

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

    ck_ckpt_name(name, sizeof(name), step);
    if ((r = ck_open_ckpt_at(s->dirfd, name, step, m, &fd, why, why_size)) < 0)
        return r;
    if (ck_foreign(s, m)) {
        (void)snprintf(why, why_size, "it belongs to %s", ck_writer_of(m, w, sizeof(w)));
        r = -EPERM;
    } else
        r = ck_verify_blobs(fd, m, why, why_size);
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
    if ((r = ck_list_ckpts(s, &steps, &n)) < 0)
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
        ck_ckpt_name(name, sizeof(name), steps[i]);
        ck_logf_(s, 2, "%s/%s is %s (%s); falling back to an older checkpoint", s->dir, name, fault_name(v), why);
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

    ck_ckpt_name(name, sizeof(name), step);
    fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    r = ck_read_file_at(fd, PENDING, MAX_PENDING_KEY, &data, &len);
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
    if ((r = ck_list_ckpts(s, &steps, &n)) < 0)
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
            ck_logf_(s, 2, "%s: the checkpoint at step %llu is %s (%s); not offered", s->dir,
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
    ck_ckpt_name(name, sizeof(name), step);
    fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    r = unlinkat(fd, PENDING, 0) < 0 && errno != ENOENT ? -errno : 0;
    if (r == 0)
        r = ck_fsync_fd(fd); /* the decision lasts before older checkpoints go */
    (void)close(fd);
    if (r < 0)
        return r;
    apply_retention(s);
    ck_prune_aside(s, step);
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
    ck_ckpt_name(name, sizeof(name), step);
    r = ck_remove_dir_at(s->dirfd, name);
    return r < 0 ? r : 1;
}
