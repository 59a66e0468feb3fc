/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt-internal.h: the checkpoint manager (README "Checkpoints"), part of the shell.
 *
 * A checkpoint directory DIR holds committed checkpoints DIR/ckpt-<step>
 * (20 digits, so names sort by step), each with its blobs and a MANIFEST
 * (proto/manifest.proto) listing every blob's size and CRC-32C. A save
 * writes into DIR/.staging-<step>-<pid>; commit writes the manifest last,
 * fsyncs every file and the staging directory, renames it into place and
 * fsyncs DIR. So a checkpoint is complete or absent; leftovers of an
 * interrupted save are removed when the store is opened. Directories are
 * created 0700 and files 0600. Blocking file I/O: the trainer's save runs
 * at a step boundary, outside the event loop's callbacks. */
#ifndef PREEMPT_CKPT_INTERNAL_H
#define PREEMPT_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define PREEMPT_CKPT_MAX_BLOBS 64
#define PREEMPT_CKPT_MAX_NAME 64

struct preempt_ckpt_store;
struct preempt_ckpt_writer;

/* Where the manager reports what the caller should know (a corrupt
 * checkpoint skipped, a leftover removed). level: 0 debug, 1 info, 2 warning. */
typedef void (*preempt_ckpt_log_fn)(int level, const char *msg, void *arg);

struct preempt_ckpt_info {
    uint64_t step, run, generation;
    uint64_t save_ms;             /* how long its save took (0: unknown, older manifests) */
    unsigned n_blobs;
    char path[4096];              /* the checkpoint's directory */
};

/* Opens (creating it 0700 when absent) a checkpoint directory and locks
 * it for the store's life (flock on DIR/.lock, which records the holder:
 * "pid=.. host=.. owner"); then removes leftovers of interrupted saves.
 * -EBUSY (logged with the holder) when another open store holds it.
 * max_to_keep: committed checkpoints kept (0 keeps all). owner: who opens
 * it, for the holder's record (NULL: ""). Ownership: *ret is freed with
 * preempt_ckpt_close_(), which releases the lock. */
int preempt_ckpt_open_(const char *dir, unsigned max_to_keep, const char *owner, preempt_ckpt_log_fn log, void *log_arg,
                       struct preempt_ckpt_store **ret);
void preempt_ckpt_close_(struct preempt_ckpt_store *s);

/* Starts a checkpoint at step (pending: see below; NULL in local mode,
 * where the local commit is the decision). Ownership: the writer is consumed by
 * preempt_ckpt_commit_() or preempt_ckpt_abort_(). -EBUSY while another
 * writer of the store is open. */
int preempt_ckpt_begin_(struct preempt_ckpt_store *s, uint64_t step, uint64_t run, uint64_t generation,
                        const char *pending, struct preempt_ckpt_writer **ret);

/* Writes one named blob (names: 1-64 of [A-Za-z0-9._-], not starting with
 * '.', not MANIFEST, each once). -EINVAL for a bad or repeated name, -E2BIG
 * past PREEMPT_CKPT_MAX_BLOBS, or the write's negative errno (e.g. -ENOSPC);
 * after an error the writer can only be aborted. */
int preempt_ckpt_write_blob_(struct preempt_ckpt_writer *w, const char *name, const void *data, size_t len);

/* Writes the manifest and commits atomically, then applies max_to_keep.
 * Consumes w (also on error, after removing the staging directory). */
int preempt_ckpt_commit_(struct preempt_ckpt_writer *w, struct preempt_ckpt_info *ret_info);

/* Decodes a manifest file's bytes (pure; fuzzed by tests/fuzz/fuzz-manifest.c):
 * version 1 with every blob name valid and named once. Returns 0 with its
 * step and blob count, or -EBADMSG. */
int preempt_ckpt_manifest_decode_(const void *data, size_t len, uint64_t *ret_step, unsigned *ret_blobs);

/* Drops an uncommitted checkpoint. Consumes w; NULL-safe. */
void preempt_ckpt_abort_(struct preempt_ckpt_writer *w);

/* Finds the newest complete checkpoint whose manifest and blobs verify;
 * a corrupt one is skipped with a warning. -ENOENT when there is none. */
int preempt_ckpt_latest_(struct preempt_ckpt_store *s, struct preempt_ckpt_info *ret_info);

/* The steps of the complete checkpoints that verify, newest first: the
 * decided ones, or (pending) those whose job-wide decision is not known.
 * Ownership: *ret is malloc'ed (NULL when n is 0); the caller frees it. */
int preempt_ckpt_list_(struct preempt_ckpt_store *s, bool pending, uint64_t **ret, size_t *ret_n);

/* Pending checkpoints: a multi-worker commit is local until the job's
 * decision record says "committed". preempt_ckpt_begin_() with a pending
 * key (the record's etcd key) writes it into the checkpoint; retention
 * neither counts nor removes pending ones.
 *
 * preempt_ckpt_pending_: 1 and the key (size > 0) when the checkpoint at
 * step is pending, 0 when it is decided, or a negative errno.
 * preempt_ckpt_keep_: the job committed it: no longer pending (durably),
 * then retention runs. 0 or a negative errno.
 * preempt_ckpt_discard_: the job aborted it: removed if pending (1);
 * a decided checkpoint is never removed here (0). */
int preempt_ckpt_pending_(struct preempt_ckpt_store *s, uint64_t step, char *key, size_t size);
int preempt_ckpt_keep_(struct preempt_ckpt_store *s, uint64_t step);
int preempt_ckpt_discard_(struct preempt_ckpt_store *s, uint64_t step);

/* The checkpoint at exactly step, verified. -ENOENT when absent or corrupt. */
int preempt_ckpt_at_(struct preempt_ckpt_store *s, uint64_t step, struct preempt_ckpt_info *ret_info);

/* Removes the checkpoints newer than step (a multi-worker job restored an
 * older step because not every worker had these). Returns how many. */
int preempt_ckpt_drop_newer_(struct preempt_ckpt_store *s, uint64_t step);

/* Reads a blob of a checkpoint found by preempt_ckpt_latest_(), verifying
 * its size and checksum against the manifest again. Ownership: *ret_data is
 * malloc'ed and the caller frees it. -ENOENT when there is no such blob,
 * -EBADMSG when it does not verify. */
int preempt_ckpt_read_blob_(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info, const char *name,
                            void **ret_data, size_t *ret_len);

/* CRC-32C (Castagnoli) of a buffer, continuing from crc (start with 0). */
uint32_t preempt_crc32c_(uint32_t crc, const void *data, size_t len);

#endif
