/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/ckpt-state.h: the checkpoint manager's state (the store and the
 * writer) and what its files share: lib/ckpt/ckpt.c (the store, saving,
 * restoring), lib/ckpt/ckpt-file.c (CRC-32C and the file helpers every step of
 * a save or restore is made of) and lib/ckpt/ckpt-aside.c (setting aside, and
 * the inspection preempt-ckpt shows). Functions shared between them carry
 * the ck_ prefix; everything else stays static in its file. Only these
 * three files include it (after defining _GNU_SOURCE). */
#ifndef PREEMPT_CKPT_STATE_H
#define PREEMPT_CKPT_STATE_H

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
#include "base/base.h"
#include "ckpt/manifest.pb.h"

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
    const void *snap[PREEMPT_CKPT_MAX_BLOBS]; /* a two-phase save's snapshot: written by the
                                               persist phase (NULL: written already) */
    unsigned n_snap;
};

/* ---- shared between the checkpoint manager's files ---- */

void ck_logf_(const struct preempt_ckpt_store *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ck_fsync_fd(int fd);
int ck_rename_at(int dirfd, const char *from, const char *to);
int ck_write_file_at(int parent, const char *name, const void *data, size_t len);
int ck_crc_file(int fd, uint64_t *ret_size, uint32_t *ret_crc);
int ck_read_file_at(int parent, const char *name, size_t max, void **ret, size_t *ret_len);
DIR *ck_dir_at(int parent, const char *name, int *ret_err);
int ck_remove_dir_at(int parent, const char *name);
bool ck_has_prefix(const char *s, const char *prefix);
bool ck_parse_ckpt_name(const char *name, uint64_t *ret_step);
void ck_ckpt_name(char *buf, size_t size, uint64_t step);
bool ck_parse_aside_name(const char *name, uint64_t *ret_step);
int ck_list_ckpts(const struct preempt_ckpt_store *s, uint64_t **ret, size_t *ret_n);
int ck_open_verified(int ckfd, const lpckpt_Blob *b, int *ret_fd);
int ck_read_verified(int ckfd, const lpckpt_Blob *b, void **ret_data, size_t *ret_len);
const char *ck_writer_of(const lpckpt_Manifest *m, char *buf, size_t size);
bool ck_foreign(const struct preempt_ckpt_store *s, const lpckpt_Manifest *m);
int ck_open_ckpt_at(int parent, const char *name, uint64_t step, lpckpt_Manifest *m, int *ret_fd, char *why,
                    size_t why_size);
int ck_verify_blobs(int fd, const lpckpt_Manifest *m, char *why, size_t why_size);
int ck_make_room(struct preempt_ckpt_store *s, const char *name);
void ck_prune_aside(struct preempt_ckpt_store *s, uint64_t committed);

#endif
