/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/ckpt/ckpt-internal.h: the checkpoint manager (docs/guide/c-api.md), part of the shell.
 *
 * A checkpoint directory DIR holds committed checkpoints DIR/ckpt-<step>
 * (20 digits, so names sort by step), each with its blobs and a MANIFEST
 * (proto/manifest.proto) listing every blob's size and CRC-32C. A save
 * writes into DIR/.staging-<step>-<pid>; commit writes the manifest last,
 * fsyncs every file and the staging directory, renames it into place and
 * fsyncs DIR. So a checkpoint is complete or absent; leftovers of an
 * interrupted save are removed when the store is opened. Directories are
 * created 0700 and files 0600. Blocking file I/O: the trainer's save runs
 * at a step boundary, outside the event loop's callbacks.
 *
 * Identity: a manifest (version 2) names its writer: job, launch, worker
 * index and count. A store opened with an identity restores and offers
 * only its own checkpoints (another's is skipped with a warning naming
 * it), and a commit never replaces another writer's checkpoint.
 *
 * Nothing a restart might need is deleted: a checkpoint that must not be
 * restored (newer than the job's restore step, refused by the trainer's
 * restore callback, corrupt and in a new save's way) is set aside into
 * DIR/aside/ with the reason in its .aside file, and removed only once
 * the job commits a newer step. */
#ifndef PREEMPT_CKPT_INTERNAL_H
#define PREEMPT_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define PREEMPT_CKPT_MAX_BLOBS 64
#define PREEMPT_CKPT_MAX_NAME 64
#define PREEMPT_CKPT_MAX_JOB 128
#define PREEMPT_CKPT_MAX_LAUNCH 64

#include "persist-internal.h"

struct preempt_ckpt_store;
struct preempt_ckpt_writer;

/* Where the manager reports what the caller should know (a corrupt
 * checkpoint skipped, a leftover removed). level: 0 debug, 1 info, 2 warning. */
typedef void (*preempt_ckpt_log_fn)(int level, const char *msg, void *arg);

struct preempt_ckpt_info {
    uint64_t step, run, generation;
    uint64_t save_ms;             /* how long its save took (0: unknown, older manifests) */
    bool save_paced;              /* save_ms counts steps its persist waited for (preempt_ckpt_persisted_()) */
    uint64_t bytes;               /* its blobs' total size */
    unsigned n_blobs;
    char path[4096];              /* the checkpoint's directory */
};

/* Who writes a store's checkpoints. job NULL: none (a tool's store: no
 * identity is checked, and nothing may be saved). */
struct preempt_ckpt_id {
    const char *job;    /* "" in local mode without a job name; at most 128 */
    const char *launch; /* NULL or "": unknown; at most 64 */
    unsigned worker, workers;
};

/* Opens (creating it 0700 when absent) a checkpoint directory and locks
 * it for the store's life (flock on DIR/.lock, which records the holder:
 * "pid=.. host=.. job=.. worker=w/W"); then removes leftovers of
 * interrupted saves. -EBUSY (logged with the holder) when another open
 * store holds it. max_to_keep: committed checkpoints kept (0 keeps all).
 * id: see above (NULL: none). Ownership: *ret is freed with
 * preempt_ckpt_close_(), which releases the lock. */
int preempt_ckpt_open_(const char *dir, unsigned max_to_keep, const struct preempt_ckpt_id *id,
                       preempt_ckpt_log_fn log, void *log_arg, struct preempt_ckpt_store **ret);
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

/* Adds a blob (the same names and limits) that the caller writes through
 * *ret_fd, a new empty file opened read-write; the caller closes it, done
 * writing, before the commit, which reads the file back for its size and
 * checksum and fsyncs it. Nothing is held in memory. */
int preempt_ckpt_open_blob_(struct preempt_ckpt_writer *w, const char *name, int *ret_fd);

/* Two-phase saves (lib/ckpt/persist-internal.h). A snapshot blob (the same
 * names and limits) is created empty now and written later, from data,
 * by the persist phase; data stays the caller's and must live until the
 * writer is committed or aborted. */
int preempt_ckpt_add_snapshot_(struct preempt_ckpt_writer *w, const char *name, const void *data, size_t len);
/* Whether the save has snapshot blobs, so that it persists in two phases. */
bool preempt_ckpt_two_phase_(const struct preempt_ckpt_writer *w);
/* The blobs the persist phase makes durable: the snapshot ones and the
 * ones the caller wrote through a descriptor, each opened (out[i].fd).
 * *ret_n <= PREEMPT_CKPT_MAX_BLOBS. */
int preempt_ckpt_persist_blobs_(struct preempt_ckpt_writer *w, struct preempt_persist_blob *out, size_t *ret_n);
/* They are durable: their sizes and checksums go into the manifest and
 * their descriptors are closed; preempt_ckpt_commit_() follows (before
 * this it refuses a writer with snapshots: -EINVAL). paced: the persist
 * waited for steps while training went on (the manifest's save_paced). */
void preempt_ckpt_persisted_(struct preempt_ckpt_writer *w, const struct preempt_persist_blob *b, size_t n,
                             bool paced);
/* Closes the descriptors of preempt_ckpt_persist_blobs_() after a persist
 * that did not end (the writer is aborted next). */
void preempt_ckpt_persist_close_(struct preempt_persist_blob *b, size_t n);

/* Writes the manifest and commits atomically, then applies max_to_keep
 * and removes the set-aside checkpoints older than this one (not when
 * pending: then preempt_ckpt_keep_ does). A checkpoint of another writer
 * at the same step is -EEXIST (logged, untouched); a corrupt one is set
 * aside. Consumes w (also on error, after removing the staging directory). */
int preempt_ckpt_commit_(struct preempt_ckpt_writer *w, struct preempt_ckpt_info *ret_info);

/* Decodes a manifest file's bytes (pure; fuzzed by tests/fuzz/fuzz-manifest.c):
 * version 1 or 2 with every blob name valid and named once. Returns 0 with its
 * step and blob count, or -EBADMSG. */
int preempt_ckpt_manifest_decode_(const void *data, size_t len, uint64_t *ret_step, unsigned *ret_blobs);

/* Drops an uncommitted checkpoint. Consumes w; NULL-safe. */
void preempt_ckpt_abort_(struct preempt_ckpt_writer *w);

/* Finds the newest complete checkpoint of this store's writer whose
 * manifest and blobs verify; a corrupt or foreign one is skipped with a
 * warning. -ENOENT when there is none. */
int preempt_ckpt_latest_(struct preempt_ckpt_store *s, struct preempt_ckpt_info *ret_info);

/* The steps of this writer's complete checkpoints that verify, newest first: the
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
 * then retention runs and older set-aside ones go. 0 or a negative errno.
 * preempt_ckpt_discard_: the job aborted it: removed if pending (1);
 * a decided checkpoint is never removed here (0). */
int preempt_ckpt_pending_(struct preempt_ckpt_store *s, uint64_t step, char *key, size_t size);
int preempt_ckpt_keep_(struct preempt_ckpt_store *s, uint64_t step);
int preempt_ckpt_discard_(struct preempt_ckpt_store *s, uint64_t step);

/* The checkpoint at exactly step, verified. -ENOENT when absent or corrupt. */
int preempt_ckpt_at_(struct preempt_ckpt_store *s, uint64_t step, struct preempt_ckpt_info *ret_info);

/* Sets the checkpoint at step aside (DIR/aside/ckpt-<step>[.n], why in
 * its .aside file; logged). 0 or a negative errno. */
int preempt_ckpt_set_aside_(struct preempt_ckpt_store *s, uint64_t step, const char *why);

/* Sets aside every checkpoint newer than step, pending ones included (the
 * job restores step: the newer ones were never committed by all of it, or
 * the job starts over). Returns how many, or a negative errno. */
int preempt_ckpt_set_aside_newer_(struct preempt_ckpt_store *s, uint64_t step, const char *why);

/* Moves set-aside checkpoint aside_name (as in DIR/aside/) back into
 * place. -EEXIST when a checkpoint of its step is in place, -EINVAL for a
 * name that is not a set-aside checkpoint's. */
int preempt_ckpt_unset_aside_(struct preempt_ckpt_store *s, const char *aside_name);

/* One checkpoint directory as found on disk, for tools. */
struct preempt_ckpt_entry {
    char name[80];             /* "ckpt-<step>" or "aside/ckpt-<step>[.n]" */
    uint64_t step;
    bool aside, pending;
    int status;                /* 0 verified; -EBADMSG corrupt; or the errno of opening it */
    char why[256];             /* status != 0: what is wrong; aside: why it was set aside */
    unsigned version;          /* the manifest's (0: unreadable) */
    char job[PREEMPT_CKPT_MAX_JOB + 1], launch[PREEMPT_CKPT_MAX_LAUNCH + 1];
    unsigned worker, workers;
    uint64_t bytes, save_ms;   /* the blobs' total size; the save's duration (0: unknown) */
};

/* Every checkpoint of dir, in place (newest first) then set aside, read
 * without taking the lock (nothing is changed). Ownership: *ret is
 * malloc'ed (NULL when n is 0); the caller frees it. */
int preempt_ckpt_entries_(const char *dir, struct preempt_ckpt_entry **ret, size_t *ret_n);

/* Reads a blob of a checkpoint found by preempt_ckpt_latest_(), verifying
 * its size and checksum against the manifest again. Ownership: *ret_data is
 * malloc'ed and the caller frees it. -ENOENT when there is no such blob,
 * -EBADMSG when it does not verify. */
int preempt_ckpt_read_blob_(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info, const char *name,
                            void **ret_data, size_t *ret_len);

/* The same blob opened instead of read: it is verified chunk by chunk and
 * *ret_fd is it, read-only at offset 0; the caller closes it. */
int preempt_ckpt_open_read_blob_(struct preempt_ckpt_store *s, const struct preempt_ckpt_info *info,
                                 const char *name, int *ret_fd);

/* CRC-32C (Castagnoli) of a buffer, continuing from crc (start with 0). */
uint32_t preempt_crc32c_(uint32_t crc, const void *data, size_t len);

#endif
