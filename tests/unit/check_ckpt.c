/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_ckpt.c: the checkpoint manager on real files: commit and
 * restore, modes, retention, leftovers, every kind of corruption, bad names,
 * a process SIGKILLed in the middle of a save, and a failing write. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-main.h"
#include "ckpt/ckpt-internal.h"

static char root[256];
static char logbuf[4096];

static void collect(int level, const char *msg, void *arg)
{
    size_t len = strlen(logbuf);

    (void)arg;
    (void)snprintf(logbuf + len, sizeof(logbuf) - len, "%d %s\n", level, msg);
}

static void setup(void)
{
    preempt_test_mkdtemp(root, sizeof(root), "preempt-ckpt");
    logbuf[0] = '\0';
}

static void teardown(void)
{
    preempt_test_rmrf(root);
}

static const struct preempt_ckpt_id me = { .job = "test", .launch = "L1", .worker = 0, .workers = 1 };

/* The store of root/ckpt, as writer id. */
static struct preempt_ckpt_store *open_as(unsigned keep, const struct preempt_ckpt_id *id)
{
    struct preempt_ckpt_store *s = NULL;
    char dir[300];

    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_int_eq(preempt_ckpt_open_(dir, keep, id, collect, NULL, &s), 0);
    return s;
}

static struct preempt_ckpt_store *open_store(unsigned keep)
{
    return open_as(keep, &me);
}

/* Commits a checkpoint whose blob "state" holds `fill` repeated n times. */
static void save(struct preempt_ckpt_store *s, uint64_t step, char fill, size_t n)
{
    struct preempt_ckpt_writer *w;
    char *buf = malloc(n);
    struct preempt_ckpt_info info;

    ck_assert_ptr_nonnull(buf);
    memset(buf, fill, n);
    ck_assert_int_eq(preempt_ckpt_begin_(s, step, step, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "state", buf, n), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "empty", "", 0), 0);
    ck_assert_int_eq(preempt_ckpt_commit_(w, &info), 0);
    ck_assert_uint_eq(info.step, step);
    free(buf);
}

/* The newest valid checkpoint is at step and its blob "state" holds len
 * bytes of fill. */
static void assert_latest(struct preempt_ckpt_store *s, uint64_t step, char fill, size_t len)
{
    struct preempt_ckpt_info info;
    void *data;
    size_t got;

    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    ck_assert_uint_eq(info.step, step);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "state", &data, &got), 0);
    ck_assert_uint_eq(got, len);
    ck_assert_int_eq(((char *)data)[0], fill);
    ck_assert_int_eq(((char *)data)[len - 1], fill);
    free(data);
}

static void path_of(char *buf, size_t size, uint64_t step, const char *file)
{
    (void)snprintf(buf, size, "%s/ckpt/ckpt-%020llu%s%s", root, (unsigned long long)step, file ? "/" : "",
                   file ? file : "");
}

static unsigned count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".lock"));
    closedir(d);
    return n;
}

START_TEST(test_crc32c_vectors)
{
    char big[4096];

    ck_assert_uint_eq(preempt_crc32c_(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(preempt_crc32c_(0, "", 0), 0);
    memset(big, 0, sizeof(big));
    ck_assert_uint_eq(preempt_crc32c_(0, big, 32), 0x8a9136aau); /* RFC 3720 B.4: 32 zero bytes */
    /* continuing a crc over pieces gives the crc of the whole */
    ck_assert_uint_eq(preempt_crc32c_(preempt_crc32c_(0, "12345", 5), "6789", 4), 0xe3069283u);
}
END_TEST

/* CRC-32C bit by bit, from its definition (reflected polynomial 0x82f63b78). */
static uint32_t crc32c_bitwise(uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
    }
    return ~crc;
}

/* The hardware form runs three streams over blocks of 8 KiB and joins
 * them (lib/ckpt/ckpt-file.c): every length and alignment around its blocks,
 * and pieces continued across them, give the definition's value. A wrong
 * constant of the join changes every value of 24 KiB or more. */
START_TEST(test_crc32c_long)
{
    size_t max = 3 * 3 * 8192 + 100;
    unsigned char *buf = malloc(max + 16);

    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < max + 16; i++)
        buf[i] = (unsigned char)((i * 2654435761u) >> 13);
    for (size_t len = 3 * 8192 - 9; len <= max; len += len < 3 * 8192 + 9 ? 1 : 4093)
        for (size_t off = 0; off < 16; off += 5) {
            uint32_t want = crc32c_bitwise(0, buf + off, len);

            ck_assert_uint_eq(preempt_crc32c_(0, buf + off, len), want);
            ck_assert_uint_eq(preempt_crc32c_(preempt_crc32c_(0, buf + off, len / 3), buf + off + len / 3,
                                              len - len / 3),
                              want);
        }
    memset(buf, 0, max);
    ck_assert_uint_eq(preempt_crc32c_(0xdeadbeefu, buf, max), crc32c_bitwise(0xdeadbeefu, buf, max));
    free(buf);
}
END_TEST

START_TEST(test_commit_and_restore)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_info info;
    void *data;
    size_t len;

    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), -ENOENT);
    save(s, 12, 'x', 65536);
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    ck_assert_uint_eq(info.step, 12);
    ck_assert_uint_eq(info.run, 12);
    ck_assert_uint_eq(info.generation, 1);
    ck_assert_uint_eq(info.n_blobs, 2);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "state", &data, &len), 0);
    ck_assert_uint_eq(len, 65536);
    ck_assert_int_eq(((char *)data)[0], 'x');
    ck_assert_int_eq(((char *)data)[65535], 'x');
    free(data);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "empty", &data, &len), 0);
    ck_assert_uint_eq(len, 0);
    free(data);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "nothing", &data, &len), -ENOENT);
    preempt_ckpt_close_(s);
}
END_TEST

/* A two-phase save's snapshot is committed only once persisted: a commit
 * before (a caller's bug) is refused and leaves the previous checkpoint. */
START_TEST(test_unpersisted_snapshot_is_refused)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w;
    struct preempt_ckpt_info info;

    save(s, 5, 'a', 100);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 9, 9, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_add_snapshot_(w, "state", "snapshot", 8), 0);
    ck_assert_int_eq(preempt_ckpt_add_snapshot_(w, "state", "again", 5), -EINVAL); /* named twice */
    ck_assert(preempt_ckpt_two_phase_(w));
    ck_assert_int_eq(preempt_ckpt_commit_(w, &info), -EINVAL);
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    ck_assert_uint_eq(info.step, 5);
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_modes)
{
    struct preempt_ckpt_store *s;
    struct stat st;
    char p[512];

    umask(0);
    s = open_store(0);
    save(s, 3, 'm', 10);
    (void)snprintf(p, sizeof(p), "%s/ckpt", root);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    path_of(p, sizeof(p), 3, NULL);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    path_of(p, sizeof(p), 3, "state");
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    path_of(p, sizeof(p), 3, "MANIFEST");
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_max_to_keep)
{
    struct preempt_ckpt_store *s = open_store(2);
    char dir[300];

    for (uint64_t step = 1; step <= 5; step++)
        save(s, step * 10, 'k', 100);
    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_uint_eq(count_entries(dir), 2);
    path_of(dir, sizeof(dir), 40, NULL);
    ck_assert_int_eq(access(dir, F_OK), 0);
    path_of(dir, sizeof(dir), 50, NULL);
    ck_assert_int_eq(access(dir, F_OK), 0);
    path_of(dir, sizeof(dir), 30, NULL);
    ck_assert_int_eq(access(dir, F_OK), -1);
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_same_step_replaced)
{
    struct preempt_ckpt_store *s = open_store(0);
    char dir[300];

    save(s, 7, 'a', 50);
    save(s, 7, 'b', 60);
    assert_latest(s, 7, 'b', 60);
    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_uint_eq(count_entries(dir), 1); /* nothing left aside */
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_leftovers_removed)
{
    struct preempt_ckpt_store *s = open_store(0);
    char p[512];
    int fd;

    save(s, 5, 'l', 10);
    preempt_ckpt_close_(s);
    (void)snprintf(p, sizeof(p), "%s/ckpt/.staging-00000000000000000009-1", root);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    (void)snprintf(p, sizeof(p), "%s/ckpt/.staging-00000000000000000009-1/state", root);
    fd = open(p, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    logbuf[0] = '\0';
    s = open_store(0);
    (void)snprintf(p, sizeof(p), "%s/ckpt/.staging-00000000000000000009-1", root);
    ck_assert_int_eq(access(p, F_OK), -1);
    ck_assert_ptr_nonnull(strstr(logbuf, "removed the leftover of an interrupted save"));
    preempt_ckpt_close_(s);
}
END_TEST

/* ---- corruption: the newest is skipped with a warning, the previous restored ---- */

static void flip_byte(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    unsigned char c;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, &c, 1, at), 1);
    c ^= 0x40;
    ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

enum damage { FLIP_BLOB, TRUNCATE_BLOB, DELETE_BLOB, DELETE_MANIFEST, TRUNCATE_MANIFEST, GARBAGE_MANIFEST };

static void damage_newest(enum damage d)
{
    char p[512];

    switch (d) {
    case FLIP_BLOB:
        path_of(p, sizeof(p), 20, "state");
        flip_byte(p, 500);
        break;
    case TRUNCATE_BLOB:
        path_of(p, sizeof(p), 20, "state");
        ck_assert_int_eq(truncate(p, 999), 0);
        break;
    case DELETE_BLOB:
        path_of(p, sizeof(p), 20, "state");
        ck_assert_int_eq(unlink(p), 0);
        break;
    case DELETE_MANIFEST:
        path_of(p, sizeof(p), 20, "MANIFEST");
        ck_assert_int_eq(unlink(p), 0);
        break;
    case TRUNCATE_MANIFEST:
        path_of(p, sizeof(p), 20, "MANIFEST");
        ck_assert_int_eq(truncate(p, 5), 0);
        break;
    case GARBAGE_MANIFEST: {
        FILE *f;
        path_of(p, sizeof(p), 20, "MANIFEST");
        f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fputs("\xff\xff\xff\xff garbage", f);
        fclose(f);
        break;
    }
    }
}

START_TEST(test_corrupt_newest_falls_back)
{
    struct preempt_ckpt_store *s = open_store(0);

    save(s, 10, 'o', 1000);
    save(s, 20, 'n', 1000);
    damage_newest((enum damage)_i);
    logbuf[0] = '\0';
    assert_latest(s, 10, 'o', 1000);
    ck_assert_msg(strstr(logbuf, "2 ") == logbuf, "no warning: %s", logbuf);
    ck_assert_ptr_nonnull(strstr(logbuf, "ckpt-00000000000000000020 is corrupt"));
    ck_assert_ptr_nonnull(strstr(logbuf, "falling back to an older checkpoint"));
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_blob_corrupted_after_restore_is_refused)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_info info;
    void *data = NULL;
    size_t len;
    char p[512];

    save(s, 20, 'n', 1000);
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    path_of(p, sizeof(p), 20, "state");
    flip_byte(p, 3);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "state", &data, &len), -EBADMSG);
    ck_assert_ptr_null(data);
    preempt_ckpt_close_(s);
}
END_TEST

/* A manifest on disk is input: a blob name that would reach outside its
 * checkpoint directory is refused when it is decoded (hand-encoded protobuf:
 * version 1, step 5, one blob). The same manifest with a plain name passes. */
START_TEST(test_manifest_traversal_refused)
{
    static const char *const names[] = { "state", "../../etc/passwd", "/etc/passwd", "..", ".hidden", "a/b" };
    uint64_t step;
    unsigned blobs;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        unsigned char m[64] = { 0x08, 0x01, 0x10, 0x05, 0x2a };
        size_t n = strlen(names[i]), len;

        m[5] = (unsigned char)(n + 2);
        m[6] = 0x0a;
        m[7] = (unsigned char)n;
        memcpy(m + 8, names[i], n);
        len = 8 + n;
        ck_assert_int_eq(preempt_ckpt_manifest_decode_(m, len, &step, &blobs), i == 0 ? 0 : -EBADMSG);
        if (i == 0)
            ck_assert(step == 5 && blobs == 1);
    }
}
END_TEST

/* ---- the caller's mistakes --------------------------------------------------------- */

START_TEST(test_bad_names)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w, *w2;
    char long_name[PREEMPT_CKPT_MAX_NAME + 2];
    static const char *const bad[] = { "", ".hidden", "a/b", "..", "MANIFEST", "sp ace", "tab\t" };

    ck_assert_int_eq(preempt_ckpt_begin_(s, 1, 1, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 2, 2, 1, NULL, &w2), -EBUSY);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(preempt_ckpt_write_blob_(w, bad[i], "x", 1) == -EINVAL, "'%s' accepted", bad[i]);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, NULL, "x", 1), -EINVAL);
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, long_name, "x", 1), -EINVAL);
    long_name[PREEMPT_CKPT_MAX_NAME] = '\0';
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, long_name, "x", 1), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, long_name, "x", 1), -EINVAL); /* twice */
    for (int i = 1; i < PREEMPT_CKPT_MAX_BLOBS; i++) {
        char name[16];
        (void)snprintf(name, sizeof(name), "b%d", i);
        ck_assert_int_eq(preempt_ckpt_write_blob_(w, name, "x", 1), 0);
    }
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "one-too-many", "x", 1), -E2BIG);
    ck_assert_int_eq(preempt_ckpt_commit_(w, NULL), 0);
    preempt_ckpt_close_(s);
    ck_assert_int_eq(preempt_ckpt_open_("", 0, NULL, NULL, NULL, &s), -EINVAL);
}
END_TEST

START_TEST(test_abort_leaves_nothing)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w;
    struct preempt_ckpt_info info;
    char dir[300];

    ck_assert_int_eq(preempt_ckpt_begin_(s, 4, 4, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "state", "abc", 3), 0);
    preempt_ckpt_abort_(w);
    preempt_ckpt_abort_(NULL);
    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_uint_eq(count_entries(dir), 0);
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), -ENOENT);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 4, 4, 1, NULL, &w), 0); /* not busy any more */
    preempt_ckpt_abort_(w);
    preempt_ckpt_close_(s);
}
END_TEST

/* Two workers given one directory (a symlink, one volume mounted twice):
 * the second is refused, naming the holder, and removes nothing (the
 * holder's save in progress looks like a leftover); a child process holds
 * the lock the same way; once the holder is gone, the directory opens. */
START_TEST(test_directory_locked)
{
    static const struct preempt_ckpt_id other = { .job = "x", .worker = 1, .workers = 2 };
    struct preempt_ckpt_store *s = open_store(0), *t = NULL;
    struct preempt_ckpt_writer *w;
    char dir[300], link[300];
    pid_t pid;
    int status;

    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    (void)snprintf(link, sizeof(link), "%s/other-name", root);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 7, 7, 1, NULL, &w), 0); /* a save in progress */
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "state", "abc", 3), 0);
    logbuf[0] = '\0';
    ck_assert_int_eq(preempt_ckpt_open_(link, 0, &other, collect, NULL, &t), -EBUSY);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(logbuf, "is in use by pid="));
    ck_assert_ptr_nonnull(strstr(logbuf, " job=test worker=0/1")); /* the holder's own description */
    ck_assert_uint_eq(count_entries(dir), 1);       /* the holder's staging directory is untouched */
    ck_assert_int_eq(preempt_ckpt_commit_(w, NULL), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* another process: refused the same way */
        struct preempt_ckpt_store *cs = NULL;

        _exit(preempt_ckpt_open_(dir, 0, &other, NULL, NULL, &cs) == -EBUSY ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    preempt_ckpt_close_(s);
    ck_assert_int_eq(preempt_ckpt_open_(link, 0, &other, collect, NULL, &t), 0);
    preempt_ckpt_close_(t);
}
END_TEST

/* ---- identity and setting aside ------------------------------------------------------ */

static uint64_t latest_step(struct preempt_ckpt_store *s)
{
    struct preempt_ckpt_info info;

    return preempt_ckpt_latest_(s, &info) == 0 ? info.step : UINT64_MAX;
}

/* Another worker's checkpoint in this directory (a swapped volume): never
 * restored nor offered, and a save of its step does not replace it. */
START_TEST(test_foreign_skipped_and_kept)
{
    static const struct preempt_ckpt_id w0 = { .job = "j", .launch = "A", .worker = 0, .workers = 2 },
                                        w1 = { .job = "j", .launch = "A", .worker = 1, .workers = 2 },
                                        other_job = { .job = "k", .launch = "B", .worker = 0, .workers = 2 };
    struct preempt_ckpt_store *s = open_as(0, &w0);
    struct preempt_ckpt_writer *w;
    uint64_t *steps;
    size_t n;

    save(s, 10, 'a', 100);
    preempt_ckpt_close_(s);
    s = open_as(0, &w1);
    logbuf[0] = '\0';
    ck_assert_uint_eq(latest_step(s), UINT64_MAX);
    ck_assert_ptr_nonnull(strstr(logbuf, "not this worker's (it belongs to job j, worker 0 of 2, launch A)"));
    ck_assert_int_eq(preempt_ckpt_list_(s, false, &steps, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 10, 10, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "state", "bbb", 3), 0);
    ck_assert_int_eq(preempt_ckpt_commit_(w, NULL), -EEXIST);
    ck_assert_ptr_nonnull(strstr(logbuf, "belongs to job j, worker 0 of 2, launch A: not replaced"));
    save(s, 5, 'b', 10);
    ck_assert_uint_eq(latest_step(s), 5);
    preempt_ckpt_close_(s);
    s = open_as(0, &other_job); /* another job, same worker index */
    ck_assert_uint_eq(latest_step(s), UINT64_MAX);
    preempt_ckpt_close_(s);
    s = open_as(0, &w0); /* its owner still restores it, unchanged */
    assert_latest(s, 10, 'a', 100);
    preempt_ckpt_close_(s);
}
END_TEST

/* A manifest of version 1 (no identity) is read as this worker's. */
START_TEST(test_manifest_v1_read)
{
    struct preempt_ckpt_store *s = open_store(0);
    static const unsigned char v1[] = { 0x08, 0x01, 0x10, 0x07, 0x18, 0x07 }; /* version 1, step 7, run 7 */
    char path[400];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/ckpt/ckpt-00000000000000000007", root);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    (void)snprintf(path, sizeof(path), "%s/ckpt/ckpt-00000000000000000007/MANIFEST", root);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(v1, 1, sizeof(v1), f), sizeof(v1));
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_uint_eq(latest_step(s), 7);
    preempt_ckpt_close_(s);
}
END_TEST

static int entry_index(const struct preempt_ckpt_entry *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return (int)i;
    return -1;
}

/* Set aside, listed with the reason, restorable, and removed only once a
 * newer step is committed. */
START_TEST(test_set_aside)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_entry *v;
    size_t n;
    char dir[300];
    int i;

    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    save(s, 10, 'a', 10);
    save(s, 20, 'b', 20);
    save(s, 30, 'c', 30);
    ck_assert_int_eq(preempt_ckpt_set_aside_newer_(s, 10, "newer than the job's step"), 2);
    ck_assert_uint_eq(latest_step(s), 10);
    ck_assert_int_eq(preempt_ckpt_set_aside_(s, 10, "again"), 0);
    save(s, 10, 'd', 10); /* the same step set aside twice: both kept */
    ck_assert_int_eq(preempt_ckpt_set_aside_(s, 10, "twice"), 0);
    ck_assert_int_eq(preempt_ckpt_entries_(dir, &v, &n), 0);
    ck_assert_uint_eq(n, 4);
    i = entry_index(v, n, "aside/ckpt-00000000000000000030");
    ck_assert_int_ge(i, 0);
    ck_assert(v[i].aside && v[i].status == 0 && v[i].step == 30 && v[i].bytes == 30 && v[i].version == 2);
    ck_assert_str_eq(v[i].why, "newer than the job's step");
    ck_assert_str_eq(v[i].job, "test");
    ck_assert_int_ge(entry_index(v, n, "aside/ckpt-00000000000000000010"), 0);
    ck_assert_int_ge(entry_index(v, n, "aside/ckpt-00000000000000000010.1"), 0);
    free(v);
    ck_assert_int_eq(preempt_ckpt_unset_aside_(s, "ckpt-00000000000000000030"), 0);
    assert_latest(s, 30, 'c', 30);
    ck_assert_int_eq(preempt_ckpt_unset_aside_(s, "ckpt-00000000000000000010"), 0);
    ck_assert_int_eq(preempt_ckpt_unset_aside_(s, "ckpt-00000000000000000010.1"), -EEXIST);
    ck_assert_int_eq(preempt_ckpt_unset_aside_(s, "../x"), -EINVAL);
    save(s, 15, 'e', 15); /* older set-aside ones go: 10.1 (and nothing else) */
    ck_assert_int_eq(preempt_ckpt_entries_(dir, &v, &n), 0);
    ck_assert_int_eq(entry_index(v, n, "aside/ckpt-00000000000000000010.1"), -1);
    ck_assert_int_ge(entry_index(v, n, "aside/ckpt-00000000000000000020"), 0);
    free(v);
    save(s, 40, 'f', 40);
    ck_assert_int_eq(preempt_ckpt_entries_(dir, &v, &n), 0);
    ck_assert_int_eq(entry_index(v, n, "aside/ckpt-00000000000000000020"), -1);
    free(v);
    preempt_ckpt_close_(s);
}
END_TEST

/* A corrupt checkpoint in a new save's way is set aside, not deleted. */
START_TEST(test_corrupt_in_the_way_set_aside)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_entry *v;
    size_t n;
    char path[400], dir[300];

    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    save(s, 10, 'a', 10);
    (void)snprintf(path, sizeof(path), "%s/ckpt/ckpt-00000000000000000010/MANIFEST", root);
    ck_assert_int_eq(truncate(path, 3), 0);
    save(s, 10, 'b', 10);
    assert_latest(s, 10, 'b', 10);
    ck_assert_int_eq(preempt_ckpt_entries_(dir, &v, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(v[1].aside && v[1].status == -EBADMSG);
    free(v);
    preempt_ckpt_close_(s);
}
END_TEST

/* ---- real failures ------------------------------------------------------------------- */

START_TEST(test_sigkill_during_save)
{
    struct preempt_ckpt_store *s = open_store(0);
    pid_t pid;
    int status;
    char dir[300];

    save(s, 20, 'p', 4096);
    preempt_ckpt_close_(s);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct preempt_ckpt_store *cs = open_store(0);
        struct preempt_ckpt_writer *w;
        char big[8192];

        memset(big, 'q', sizeof(big));
        if (preempt_ckpt_begin_(cs, 30, 30, 2, NULL, &w) == 0 && preempt_ckpt_write_blob_(w, "state", big, sizeof(big)) == 0)
            (void)kill(getpid(), SIGKILL); /* killed between the blob and the manifest */
        _exit(3);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_uint_eq(count_entries(dir), 2); /* ckpt-20 and the staging leftover */
    s = open_store(0);
    ck_assert_uint_eq(count_entries(dir), 1);
    assert_latest(s, 20, 'p', 4096);
    preempt_ckpt_close_(s);
}
END_TEST

START_TEST(test_write_failure_keeps_previous)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w;
    struct preempt_ckpt_info info;
    struct rlimit lim, old;
    static char big[200000];
    char dir[300];

    save(s, 20, 'p', 1000);
    /* A file-size limit makes the write fail like a full disk would. */
    ck_assert(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 100000; /* the soft limit only: it can be raised back */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 30, 30, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "state", big, sizeof(big)), -EFBIG);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "more", "x", 1), -EFBIG); /* sticky */
    ck_assert_int_eq(preempt_ckpt_commit_(w, &info), -EFBIG);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0); /* CK_FORK=no runs later tests in this process */
    (void)snprintf(dir, sizeof(dir), "%s/ckpt", root);
    ck_assert_uint_eq(count_entries(dir), 1); /* the staging directory is gone */
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    ck_assert_uint_eq(info.step, 20);
    preempt_ckpt_close_(s);
}
END_TEST

/* A blob written through a descriptor, larger than the commit's and the
 * verification's read chunk and written in uneven pieces, commits with its
 * size and checksum, verifies, and reads back the same whether read whole
 * or opened; the restore's descriptor is seekable and owned by the caller. */
START_TEST(test_streamed_blob)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w;
    struct preempt_ckpt_info info;
    size_t n = 600 * 1024 + 7, len;
    unsigned char *buf = malloc(n), *back = malloc(n);
    void *data;
    struct stat st;
    int fd, fd2;

    ck_assert_ptr_nonnull(buf);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 131 + i / 4099);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 40, 40, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_open_blob_(w, "big", &fd), 0);
    ck_assert_int_eq(preempt_ckpt_open_blob_(w, "big", &fd2), -EINVAL);   /* once */
    ck_assert_int_eq(preempt_ckpt_open_blob_(w, "../x", &fd2), -EINVAL);  /* names as ever */
    for (size_t off = 0; off < n;) {
        size_t k = off + 70001 < n ? 70001 : n - off;
        ck_assert_int_eq(write(fd, buf + off, k), (ssize_t)k);
        off += k;
    }
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "small", "abc", 3), 0);
    ck_assert_int_eq(preempt_ckpt_write_blob_(w, "big", "abc", 3), -EINVAL); /* one name space */
    ck_assert_int_eq(preempt_ckpt_commit_(w, &info), 0);

    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0); /* verified, chunk by chunk */
    ck_assert_uint_eq(info.step, 40);
    ck_assert_uint_eq(info.n_blobs, 2);
    ck_assert_int_eq(preempt_ckpt_read_blob_(s, &info, "big", &data, &len), 0); /* the manifest's crc agrees */
    ck_assert_uint_eq(len, n);
    ck_assert_int_eq(memcmp(data, buf, n), 0);
    free(data);
    ck_assert_int_eq(preempt_ckpt_open_read_blob_(s, &info, "big", &fd), 0);
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(st.st_size, (off_t)n);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
    ck_assert_int_eq(read(fd, back, n), (ssize_t)n);
    ck_assert_int_eq(memcmp(back, buf, n), 0);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(preempt_ckpt_open_read_blob_(s, &info, "none", &fd), -ENOENT);
    preempt_ckpt_close_(s);
    free(buf);
    free(back);
}
END_TEST

/* A streamed blob changed after the commit (one byte, or cut short) fails
 * its verification: the checkpoint is not restored, and opening the blob
 * of a checkpoint already chosen is refused. */
START_TEST(test_streamed_blob_damaged)
{
    struct preempt_ckpt_store *s = open_store(0);
    struct preempt_ckpt_writer *w;
    struct preempt_ckpt_info info;
    char p[512];
    int fd;

    save(s, 10, 'o', 1000);
    ck_assert_int_eq(preempt_ckpt_begin_(s, 20, 20, 1, NULL, &w), 0);
    ck_assert_int_eq(preempt_ckpt_open_blob_(w, "state", &fd), 0);
    ck_assert_int_eq(write(fd, "0123456789", 10), 10);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(preempt_ckpt_commit_(w, &info), 0);
    ck_assert_int_eq(preempt_ckpt_latest_(s, &info), 0);
    ck_assert_uint_eq(info.step, 20);
    path_of(p, sizeof(p), 20, "state");
    if (_i == 0)
        flip_byte(p, 3);
    else
        ck_assert_int_eq(truncate(p, 9), 0);
    ck_assert_int_eq(preempt_ckpt_open_read_blob_(s, &info, "state", &fd), -EBADMSG);
    assert_latest(s, 10, 'o', 1000);
    preempt_ckpt_close_(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("store");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_crc32c_vectors);
    tcase_add_test(tc, test_crc32c_long);
    tcase_add_test(tc, test_commit_and_restore);
    tcase_add_test(tc, test_modes);
    tcase_add_test(tc, test_max_to_keep);
    tcase_add_test(tc, test_same_step_replaced);
    tcase_add_test(tc, test_leftovers_removed);
    tcase_add_loop_test(tc, test_corrupt_newest_falls_back, FLIP_BLOB, GARBAGE_MANIFEST + 1);
    tcase_add_test(tc, test_blob_corrupted_after_restore_is_refused);
    tcase_add_test(tc, test_manifest_traversal_refused);
    tcase_add_test(tc, test_bad_names);
    tcase_add_test(tc, test_abort_leaves_nothing);
    tcase_add_test(tc, test_directory_locked);
    tcase_add_test(tc, test_foreign_skipped_and_kept);
    tcase_add_test(tc, test_manifest_v1_read);
    tcase_add_test(tc, test_set_aside);
    tcase_add_test(tc, test_corrupt_in_the_way_set_aside);
    tcase_add_test(tc, test_sigkill_during_save);
    tcase_add_test(tc, test_write_failure_keeps_previous);
    tcase_add_test(tc, test_streamed_blob);
    tcase_add_test(tc, test_unpersisted_snapshot_is_refused);
    tcase_add_loop_test(tc, test_streamed_blob_damaged, 0, 2);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
