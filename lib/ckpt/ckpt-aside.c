/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/ckpt-aside.c: checkpoints set aside and inspected
 * (lib/ckpt/ckpt-state.h): a checkpoint the restore callback refused moves to
 * DIR/aside/ with its reason, never deleted but by retention; and the
 * listing preempt-ckpt shows. */
#define _GNU_SOURCE
#include "ckpt-state.h"

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
    r = fd < 0 ? -errno : ck_write_file_at(fd, ASIDE_WHY, why, strlen(why));
    if (fd >= 0)
        (void)close(fd);
    if (r == 0 && renameat(s->dirfd, name, afd, target) < 0)
        r = -errno;
    if (r == 0 && (r = ck_fsync_fd(afd)) == 0)
        r = ck_fsync_fd(s->dirfd);
    (void)close(afd);
    if (r < 0)
        ck_logf_(s, 3, "%s/%s: cannot set it aside: %s", s->dir, name, strerror(-r));
    else
        ck_logf_(s, 2, "%s/%s set aside as %s/%s/%s: %s", s->dir, name, s->dir, ASIDE_DIR, target, why);
    return r;
}

int preempt_ckpt_set_aside_(struct preempt_ckpt_store *s, uint64_t step, const char *why)
{
    char name[64];

    if (!s || !why)
        return -EINVAL;
    ck_ckpt_name(name, sizeof(name), step);
    return set_aside(s, name, why);
}

int preempt_ckpt_set_aside_newer_(struct preempt_ckpt_store *s, uint64_t step, const char *why)
{
    uint64_t *steps;
    size_t n;
    int r, moved = 0;

    if (!s || !why)
        return -EINVAL;
    if ((r = ck_list_ckpts(s, &steps, &n)) < 0)
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
int ck_make_room(struct preempt_ckpt_store *s, const char *name)
{
    lpckpt_Manifest m;
    char why[256], w[PREEMPT_CKPT_MAX_JOB + PREEMPT_CKPT_MAX_LAUNCH + 320];
    uint64_t step = 0;
    int fd, r;

    (void)ck_parse_ckpt_name(name, &step);
    r = ck_open_ckpt_at(s->dirfd, name, step, &m, &fd, why, sizeof(why));
    if (r == -ENOENT)
        return 0;
    if (r == 0) {
        (void)close(fd);
        if (!ck_foreign(s, &m))
            return 0;
        ck_logf_(s, 3, "%s/%s belongs to %s: not replaced by this worker's save (two jobs or workers write to this "
                 "directory?)", s->dir, name, ck_writer_of(&m, w, sizeof(w)));
        return -EEXIST;
    }
    if (r != -EBADMSG) /* it could not be read (out of memory, I/O): the commit fails, nothing moves */
        return r;
    (void)snprintf(w, sizeof(w), "replaced by a new save of its step (%s)", why);
    return set_aside(s, name, w);
}

/* A checkpoint the job committed at step supersedes the ones set aside
 * at older steps: they go. */
void ck_prune_aside(struct preempt_ckpt_store *s, uint64_t committed)
{
    struct dirent *e;
    uint64_t step;
    int err;
    DIR *d = ck_dir_at(s->dirfd, ASIDE_DIR, &err);

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (!ck_parse_aside_name(e->d_name, &step) || step >= committed)
            continue;
        if ((err = ck_remove_dir_at(dirfd(d), e->d_name)) < 0)
            ck_logf_(s, 2, "%s/%s/%s: cannot remove: %s", s->dir, ASIDE_DIR, e->d_name, strerror(-err));
        else
            ck_logf_(s, 1, "%s/%s/%s removed: step %llu is committed", s->dir, ASIDE_DIR, e->d_name,
                     (unsigned long long)committed);
    }
    (void)closedir(d);
}

int preempt_ckpt_unset_aside_(struct preempt_ckpt_store *s, const char *aside_name)
{
    char name[64];
    uint64_t step;
    int afd, fd, r;

    if (!s || !aside_name || !ck_parse_aside_name(aside_name, &step))
        return -EINVAL;
    ck_ckpt_name(name, sizeof(name), step);
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
        r = ck_fsync_fd(s->dirfd);
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
    e->status = ck_open_ckpt_at(parent, name, step, &m, &fd, e->why, sizeof(e->why));
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
    e->status = ck_verify_blobs(fd, &m, e->why, sizeof(e->why));
    e->pending = faccessat(fd, PENDING, F_OK, 0) == 0;
    if (aside && ck_read_file_at(fd, ASIDE_WHY, sizeof(e->why) - 1, &data, &len) == 0) {
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
    DIR *d = ck_dir_at(fd, ".", &r);

    if (!d)
        return r;
    while ((de = readdir(d))) {
        if (!(aside ? ck_parse_aside_name(de->d_name, &step) : ck_parse_ckpt_name(de->d_name, &step)))
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
    ck_ckpt_name(ck, sizeof(ck), info->step);
    r = ck_open_ckpt_at(s->dirfd, ck, info->step, &m, &fd, why, sizeof(why));
    if (r < 0)
        return r;
    r = -ENOENT;
    for (pb_size_t i = 0; i < m.blobs_count; i++) {
        if (strcmp(m.blobs[i].name, name) == 0) {
            r = ret_fd ? ck_open_verified(fd, &m.blobs[i], ret_fd) : ck_read_verified(fd, &m.blobs[i], ret_data, ret_len);
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
