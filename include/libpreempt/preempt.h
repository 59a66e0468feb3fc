/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* libpreempt: survive preemption of distributed training without losing a step.
 *
 * This is the library's only public header. Every exported symbol carries
 * PREEMPT_EXPORT and the preempt_ prefix; everything else is private.
 *
 * Conventions (docs/guide/c-api.md, "API conventions"), the same for every call:
 * - Results: a call returns 0 or a negative errno, and hands its result
 *   through out-parameters named ret_*, written only on success. A bad
 *   handle (NULL, freed, not a handler) is -EINVAL, never ignored. The
 *   exceptions are the ones that cannot fail: the *_free() calls return
 *   NULL; the name lookups, preempt_version(), preempt_strerror() and
 *   preempt_abi_layout() return a static string (NULL for an unknown
 *   value); preempt_handler_get_base() and
 *   preempt_handler_get_error_message() return a pointer or NULL.
 * - Names: preempt_<object>_<verb> for an object's life and loop
 *   (preempt_handler_new(), preempt_watcher_process()), and
 *   preempt_<object>_get_<what> for every query; the training calls on a
 *   handler are preempt_<verb> (preempt_step_end(), preempt_save_begin()).
 * - Structures travel with their size, so that a program built against
 *   an older header runs against a newer library: fields are only ever
 *   appended; the caller's sizeof is passed (preempt_config's size field,
 *   set by preempt_config_init(); the _size argument of the calls that
 *   take or fill the others, passed by the macros of their usual names);
 *   the library reads or writes only that much, and fields the caller's
 *   layout does not have take their defaults. A size that is no released
 *   layout's is -EINVAL.
 * - Strings: a const char * the library returns or stores in a structure
 *   it fills is owned by the library: static (names, sources), or the
 *   object's, valid until that object is freed. A string passed to a
 *   callback is valid during the call. Strings the caller passes in are
 *   copied; the caller keeps them.
 * - Special values of struct preempt_config: PREEMPT_AUTO (all bits set)
 *   lets the library decide (grace_ms, exit_code, kill_delay_ms);
 *   PREEMPT_UNLIMITED is no limit (max_to_keep); 0 is always zero or none;
 *   a NULL string is the field's default and "" is none (trace_path,
 *   termination_log, metrics_path). Enums name their automatic value
 *   (PREEMPT_PLATFORM_AUTO).
 * - Enum values are explicit and frozen: once released, a value never
 *   changes; new ones are appended (tests/abi.sh fails otherwise). */
#ifndef PREEMPT_H
#define PREEMPT_H

#ifdef __cplusplus
extern "C" {
#endif

#define PREEMPT_VERSION_MAJOR 1
#define PREEMPT_VERSION_MINOR 1
#define PREEMPT_VERSION_PATCH 0

#if defined(__GNUC__)
#define PREEMPT_EXPORT __attribute__((visibility("default")))
#else
#define PREEMPT_EXPORT
#endif

/* ---- generated enums: begin ---- */
/* Generated from fsm/preempt_states.def and fsm/preempt_exits.def by
 * scripts/public-enums.sh (make public-enums): do not edit. */

/** The machine's states (docs/design.md). Their names are the ones used
 * in traces and diagrams; preempt_state_to_string() returns them. */
enum preempt_state {
    /** "idle": no termination known anywhere in the job; nothing armed */
    PREEMPT_STATE_IDLE = 0,
    /** "own-signal": this worker drives the round: it proposed the save step (its step plus the lead) and trains on up to it until the job's step comes back */
    PREEMPT_STATE_OWN_SIGNAL = 1,
    /** "following": a notice is known and another worker drives; this worker trains on until the round's save step reaches it (after a raise of its own, up to its proposal) */
    PREEMPT_STATE_FOLLOWING = 2,
    /** "step-agreed": the round's save step S is known; training continues until S (a raise moves S up) */
    PREEMPT_STATE_STEP_AGREED = 3,
    /** "saving": the first checkpoint, at S, is being written and committed; grace time may remain after it */
    PREEMPT_STATE_SAVING = 4,
    /** "countdown": the checkpoint at S is committed; grace time remains; training continues until the final-save step */
    PREEMPT_STATE_COUNTDOWN = 5,
    /** "final-save": the last checkpoint before exit is being written and committed */
    PREEMPT_STATE_FINAL_SAVE = 6,
    /** "exit": terminal: nothing armed, nothing pending; exit code decided */
    PREEMPT_STATE_EXIT = 7,
    /** "persisting": the checkpoint at S is snapshotted and being made durable on the loop while training goes on (a two-phase save); it is reported, and committed, only once every blob is durable */
    PREEMPT_STATE_PERSISTING = 8,
    /** "finishing": training is done while a checkpoint persists: nothing trains any more; the persist, awaited, and the checkpoint's commit come before the exit */
    PREEMPT_STATE_FINISHING = 9,
    /** "stopping": a two-phase checkpoint that ends the preemption is committed while the job trained on past it: training goes on to the job's one stop step (the decision record's), where every worker exits, so that none is left inside a collective */
    PREEMPT_STATE_STOPPING = 10,
    /** "rejoining": the preemption's last checkpoint is committed at the step this worker completed, and no notice of its own came: it keeps its process and its state (survivors stay in place) and joins the job's next incarnation; training waits (start-up's bound, join_timeout_ms) */
    PREEMPT_STATE_REJOINING = 11,
    PREEMPT_STATE__COUNT = 12
};

/** Why a handler decided to exit. */
enum preempt_exit {
    /** "done": training finished; exit 0 */
    PREEMPT_EXIT_DONE = 0,
    /** "saved": preempted and a checkpoint of this preemption is committed; restart me (42, or 143 on GCE) */
    PREEMPT_EXIT_SAVED = 1,
    /** "not-saved": preempted but no new checkpoint could be committed; the previous one is intact (75) */
    PREEMPT_EXIT_NOT_SAVED = 2,
    /** "error": an application error, here or propagated from another worker; exit with its code */
    PREEMPT_EXIT_ERROR = 3,
    PREEMPT_EXIT__COUNT = 4
};
/* ---- generated enums: end ---- */


/* ==== Handler ============================================================
 *
 * A handler watches for termination notices and, when one arrives, drives
 * the machine (docs/design.md): agree on a save step, save there, train through
 * the grace period, save again before the deadline, exit with the restart
 * code. It lives on a libevent event_base: the caller's (the library adds
 * its events and never dispatches or breaks that loop) or its own (the
 * synchronous calls drive it). It uses no threads.
 *
 * Threads: a handler is not thread-safe. Every call on a handler is made
 * from one thread at a time, the one that runs its loop (or makes the
 * synchronous calls), and its callbacks run on that thread; a trainer
 * whose other threads learn of a preemption asks that thread (e.g. through
 * its own queue), preempt_notify() included. The calls that take no
 * handler (preempt_block_signals(), the name lookups, preempt_version(),
 * preempt_strerror(), preempt_config_init()) may be called from any
 * thread. Different handlers (one
 * per loop) may live on different threads; a blocking start-up listens
 * for SIGINT in one of them at a time.
 *
 * Callbacks run inside a library call. From inside a callback these calls
 * are allowed: preempt_save_done(), preempt_notify(), the
 * preempt_handler_get_*() queries but for the descriptor's two, and the
 * name lookups, plus
 * preempt_save_blob(), preempt_save_blob_open() and preempt_save_snapshot()
 * in cb->save, and
 * preempt_restore_blob() and preempt_restore_blob_open() in cb->restore. Every other call returns -EBUSY there (preempt_handler_free()
 * must not be called there at all). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct preempt_handler; /* opaque */

/** How the final save of a grace period is planned. In a job, either plan
 * allows for the workers' drift: the driver opens the final round earlier
 * by a quarter of the steps it trained since the first save and proposes
 * as many steps further (the same step at its own pace), so that workers
 * that drifted ahead learn the step before they pass it. The measured plan
 * also plans for the job's slowest worker: the first save's commit names
 * the lowest step and the slowest step time its workers reported, and a
 * driver ahead of that worker opens the final round early enough for it to
 * reach the step and save before the deadline less margin_ms. */
enum preempt_plan {
    PREEMPT_PLAN_MEASURED = 0, /**< from measured step, save and agreement times (default) */
    PREEMPT_PLAN_TF = 1,       /**< TensorFlow's rule: 6 x mean step time before the
                                exit time (the deadline less margin_ms) */
    PREEMPT_PLAN__COUNT = 2
};

/** What a second notice on this worker does. */
enum preempt_second {
    PREEMPT_SECOND_IGNORE = 0, /**< only an earlier deadline is remembered (default) */
    PREEMPT_SECOND_EXIT = 1,   /**< exit at once: "saved" if a checkpoint of this
                                preemption is committed, else "not-saved" */
    PREEMPT_SECOND__COUNT = 2
};

/** Log levels of the log callback. */
enum preempt_log_level {
    PREEMPT_LOG_DEBUG = 0,
    PREEMPT_LOG_INFO = 1,
    PREEMPT_LOG_WARNING = 2,
    PREEMPT_LOG_ERROR = 3,
};

/** What the trainer does at a step boundary (asynchronous use). */
enum preempt_action {
    PREEMPT_ACTION_CONTINUE = 0,  /**< train the next step */
    PREEMPT_ACTION_SAVE = 1,      /**< save now (preempt_save_begin()), then go on training */
    PREEMPT_ACTION_SAVE_EXIT = 2, /**< save now; the handler exits after it is committed */
    PREEMPT_ACTION_WAIT = 3,      /**< do not train; ask again when the loop has run (every
                                   worker is at the save step, committing; or this
                                   worker reached the step it proposed before the
                                   job's save step came back) */
    PREEMPT_ACTION_EXIT = 4,      /**< stop: the exit code is preempt_handler_get_exit_code() */
};

/** Where the job runs. The platform chooses the cloud notice source and
 * the defaults of grace_ms and exit_code (TensorFlow's TerminationConfig
 * completion, docs/guide/operating.md, "Clouds and other notice sources"). */
enum preempt_platform {
    PREEMPT_PLATFORM_AUTO = 0,    /**< $PREEMPT_PLATFORM when set, else detected from the
                                   machine's DMI data (a few file reads, no network) */
    PREEMPT_PLATFORM_NONE = 1,    /**< no cloud source: signals, the poll callback and
                                   preempt_notify() only */
    PREEMPT_PLATFORM_GCE = 2,     /**< Google Compute Engine without a GPU */
    PREEMPT_PLATFORM_GCE_GPU = 3, /**< Google Compute Engine with a GPU */
    PREEMPT_PLATFORM_AWS = 4,     /**< Amazon EC2 (spot instance actions, rebalance) */
    PREEMPT_PLATFORM_AZURE = 5,   /**< Azure (Scheduled Events) */
    PREEMPT_PLATFORM__COUNT = 6
};

/** A field of struct preempt_config whose value the library decides: its
 * type's all-ones value (grace_ms, kill_delay_ms: UINT64_MAX; exit_code:
 * -1). Assign it as is; compare a uint64_t field with (uint64_t)PREEMPT_AUTO. */
#define PREEMPT_AUTO (-1)
/** max_to_keep: no limit, every committed checkpoint is kept (UINT_MAX). */
#define PREEMPT_UNLIMITED (-1)

#define PREEMPT_MAX_SIGNALS 8
/** The most workers a job may have (struct preempt_config's workers). */
#define PREEMPT_MAX_WORKERS 16384

/** Configuration, copied at creation (strings included). Fill it with
 * preempt_config_init() and change what you need. */
struct preempt_config {
    size_t size;                 /**< sizeof(struct preempt_config) as the caller
                                      was compiled: set by preempt_config_init().
                                      An older release's layout is read with the
                                      later fields at their defaults; a size that
                                      is no release's is refused (-EINVAL) */
    const char *ckpt_dir;        /**< checkpoint directory (created 0700 when missing;
                                      its parent must exist: -ENOENT); NULL: no
                                      checkpoint manager, the save callback saves
                                      its own way (TensorFlow's save_fn) */
    unsigned max_to_keep;        /**< committed checkpoints kept, at least 1;
                                      PREEMPT_UNLIMITED keeps all (default 3) */
    uint64_t start_run;          /**< run counter at start when ckpt_dir is NULL (default 0) */
    uint64_t grace_ms;           /**< training time after the first save before the
                                      deadline; 0: exit after the first save. Default
                                      PREEMPT_AUTO: the platform's, 3600000 on GCE with
                                      a GPU (TensorFlow's), else 0 */
    uint64_t bound_ms;           /**< deadline assumed when a notice gives none and
                                      grace_ms is 0 (default 30000); a periodic
                                      checkpoint's round takes the longer of it and
                                      its own bound (agree_timeout_ms plus 3
                                      measured steps and a save) */
    uint64_t agree_timeout_ms;   /**< bound on one agreement round, plus 3 measured
                                      steps (the boundaries the round needs), counted from
                                      the claim's answer when this worker's own notice
                                      opened it; also how long a coordination write retries an
                                      unreachable etcd, except that with a notice of its
                                      own a worker retries up to its deadline (default 10000) */
    uint64_t margin_ms;          /**< slack kept before the deadline (default 500) */
    enum preempt_plan plan;      /**< default PREEMPT_PLAN_MEASURED */
    enum preempt_second second;  /**< default PREEMPT_SECOND_IGNORE */
    int exit_code;               /**< code for "preempted, saved, restart me", 1..255;
                                      PREEMPT_AUTO (default): the platform's, 143 on
                                      GCE, else 42 */
    int exit_code_not_saved;     /**< code for "preempted, nothing new saved" (default 75) */
    int signals[PREEMPT_MAX_SIGNALS]; /**< notice signals, 0-terminated (default SIGTERM) */
    uint64_t poll_interval_ms;   /**< period of the poll callback (default 1000) */
    uint64_t save_every_steps;   /**< a periodic checkpoint every this many steps (the
                                      run counter a multiple of it), training going on;
                                      0 (default): none. Every worker knows the step. A
                                      multiple reached while the previous checkpoint is
                                      under way is saved right after it commits */
    uint64_t save_every_ms;      /**< a periodic checkpoint this long after the last one
                                      committed (or the start); 0 (default): none. In a
                                      job the first worker whose period ends starts the
                                      round, and every worker's period restarts with
                                      the commit */
    const char *trace_path;      /**< write the machine's trace here (text form,
                                      replayable with preempt-replay; a worker of a
                                      job adds the job's records as it read them);
                                      NULL or "": none */

    /* Platform and cloud notice sources (docs/guide/operating.md, "Clouds and other notice sources"). A cloud
     * source polls the instance metadata service on the handler's loop,
     * with a timeout on every request: a slow or dead endpoint never
     * delays a step or the handler's creation. */
    enum preempt_platform platform; /**< default PREEMPT_PLATFORM_AUTO */
    const char *metadata_url;    /**< base URL of the metadata service, http only; NULL
                                      (default): http://169.254.169.254, or on GCE
                                      $GCE_METADATA_HOST, else $GCE_METADATA_IP
                                      (addresses; host names are not resolved), and
                                      $AWS_EC2_METADATA_SERVICE_ENDPOINT on AWS */
    uint64_t metadata_poll_ms;   /**< AWS and Azure poll period; the retry delay after a
                                      failed request (GCE long-polls) (default 1000) */
    uint64_t metadata_timeout_ms; /**< one metadata request (default 2000; a GCE long
                                      poll adds its 60 s wait) */
    bool advisory_checkpoint;    /**< an advisory notice (AWS rebalance recommendation,
                                      GCE live migration) takes an opportunistic
                                      checkpoint and training goes on (default true) */
    uint64_t kill_delay_ms;      /**< time between SIGTERM and SIGKILL: a signal's
                                      deadline, and the start-up warning's measure; 0:
                                      none known. PREEMPT_AUTO (default): the launcher's
                                      known delay when one is detected (torchrun,
                                      Kubernetes, GKE; under Slurm KillWait from
                                      $SLURM_CONF: scancel and the time limit give no
                                      GraceTime), else none */

    /* Multi-worker coordination through etcd (docs/protocol.md). With
     * etcd_endpoints NULL the handler runs in local mode (one worker). */
    const char *etcd_endpoints;  /**< comma-separated http:// or https:// URLs of
                                      etcd's v3 gateway (up to 8; fail-over in order) */
    const char *job;             /**< job name, 1-128 of [A-Za-z0-9._-], not "." or ".."; the keys live
                                      under /preempt/<job>/ */
    unsigned worker;             /**< this worker's index, 0 <= worker < workers */
    unsigned workers;            /**< the number of workers in the job (1..PREEMPT_MAX_WORKERS) */
    const char *etcd_user;       /**< with etcd_password: authenticate (NULL: none) */
    const char *etcd_password;   /**< copied, and wiped from memory at free */
    const char *etcd_ca;         /**< TLS: CA bundle (PEM path); NULL: system default.
                                      These three must be readable (else -EINVAL) */
    const char *etcd_cert;       /**< TLS: client certificate (PEM path; may hold the key) */
    const char *etcd_key;        /**< TLS: client key (PEM path); needs etcd_cert */
    unsigned lease_ttl_s;        /**< membership lease (2..3600, default 10). A
                                      synchronous trainer keeps it alive only at its
                                      step boundaries: once a step takes more than a
                                      third of it, it grows to lease_ttl_s + 2 x
                                      the longest step seen (at most 3600 s; steps up to
                                      about 30 minutes). A peer whose membership goes
                                      counts as lost when it is not back within 2 x this
                                      worker's longest step (a lease that ended inside a
                                      step longer than any before comes back under a new
                                      one at the next boundary) */
    uint64_t join_timeout_ms;    /**< bound on start-up: every worker must join within
                                      it (default 60000) */
    uint64_t etcd_timeout_ms;    /**< one etcd request attempt (default 2000), counted
                                      only while the handler's loop runs: time inside a
                                      trainer's step never times a request out */
    const char *launch_id;       /**< the launch's identity, 1-64 of [A-Za-z0-9._:-]:
                                      tells two launches of one job name apart. A worker
                                      of another launch than the job's live workers gets
                                      -EBUSY at creation; a launch resumes a job none of
                                      whose workers is alive. Restarts of one launch keep
                                      it (Slurm's requeue keeps the job id, torchrun its
                                      run id). NULL (default): $PREEMPT_LAUNCH_ID (set by
                                      preempt-launch), else $SLURM_JOB_ID, else
                                      $TORCHELASTIC_RUN_ID (not "none"), else unknown */
    bool start_over;             /**< multi-worker start-up when some workers hold newer
                                      checkpoints than others (a volume not mounted, a
                                      wiped directory): false (default) refuses to start
                                      (-ENODATA, naming the workers that lack them); true
                                      restores the newest step every worker holds and
                                      sets the newer ones aside. Also set by
                                      PREEMPT_START_OVER=1; any one worker asking is
                                      enough. Meant for one launch: unset it after */
    bool async_start;            /**< false (default): preempt_handler_new() returns
                                      once the handler has started (joined, restored).
                                      true: it returns at once, and start-up (the
                                      restore, a job's joining and restore barrier)
                                      runs on the handler's loop (the borrowed base, or
                                      preempt_handler_process()); on_start reports its
                                      end, and preempt_status.start_status says where it
                                      is. For asynchronous trainers (asyncio, a GUI loop)
                                      whose loop must keep running meanwhile */
    bool azure_approve;          /**< Azure: once a preemption's checkpoint is committed,
                                      approve the scheduled events this handler gave
                                      notice of (StartRequests), so that the platform
                                      goes ahead before their NotBefore (default true).
                                      The request runs on the loop; a blocking handler
                                      waits for it (metadata_timeout_ms at most) before
                                      its process exits or when freed */
    /* Fields from here on are newer than 0.1: a caller compiled against an
     * older header passes its smaller size, and they take their defaults. */
    const char *termination_log; /**< where this worker writes its termination record at
                                      exit: one JSON object of at most 4096 bytes (why it
                                      exits, the notice, the agreed and committed steps,
                                      their times, what it saved and restored; docs/guide/operating.md,
                                      "Observing preemptions"). NULL (default):
                                      $PREEMPT_TERMINATION_LOG, else Kubernetes'
                                      /dev/termination-log when it exists and is writable,
                                      else none. "": none. "{worker}" in it becomes the
                                      worker index */
    const char *metrics_path;    /**< a Prometheus text file (node_exporter's textfile
                                      collector: name it *.prom) rewritten atomically at
                                      start, at every commit and at exit; counters carry
                                      on from the file a former run of the same worker
                                      left. "{worker}" in it becomes the worker index.
                                      NULL (default): $PREEMPT_METRICS_PATH, else none;
                                      "": none */    /* 1.1: */
    bool stay_in_place;          /**< survivors stay in place (a job only): when a
                                      preemption ends with a committed checkpoint at
                                      the step this worker stands at, and no notice of
                                      its own came, it does not exit: it keeps its
                                      process and its state, joins the job's next
                                      incarnation (restoring nothing unless the job
                                      picks another step) while the terminated
                                      workers' replacements start, and trains on;
                                      preempt_handler_on_rebuild() tells it when to
                                      rebuild its collectives. Not joined within
                                      join_timeout_ms, it exits as before ("saved").
                                      Also set by PREEMPT_STAY_IN_PLACE=1. Default
                                      false. A caller built against 1.0's header
                                      passes 1.0's size and does not get it */
};

/** Callbacks, copied at creation. userdata is passed last to every one. */
struct preempt_callbacks {
    /** Saves the trainer's state at run counter @p step: with a ckpt_dir, by
     * writing blobs with preempt_save_blob(); without one, its own way.
     * Called by the synchronous calls, outside the loop. Return 0 or a
     * negative errno (the checkpoint is then dropped). Required by
     * preempt_run() and preempt_save_checkpoint_if_preempted(). */
    int (*save)(struct preempt_handler *h, uint64_t step, void *userdata);
    /** Restores the state saved at run counter @p step by reading blobs with
     * preempt_restore_blob(). Called once, inside preempt_handler_new(),
     * when ckpt_dir holds a checkpoint. Return 0; -EBADMSG, -EINVAL,
     * -ENOENT, -EPROTO or -ERANGE when this checkpoint cannot be used (bad
     * data, another model's shape: it is set aside and the next older one
     * is tried, job-wide); or another negative errno (out of memory, I/O:
     * creation fails with it and nothing is set aside, so a restart tries
     * again). Required when ckpt_dir is set. */
    int (*restore)(struct preempt_handler *h, uint64_t step, void *userdata);
    /** Termination poll (TensorFlow's termination_watcher_fn), called on a
     * timer every poll_interval_ms. It must not block. Return 1 for a
     * notice (setting *deadline_in_ms to the time left, or leaving 0 when
     * unknown), 0 for none, or a negative errno (logged; polling goes on). */
    int (*poll)(struct preempt_handler *h, uint64_t *deadline_in_ms, void *userdata);
    /** The state changed. Called on the loop. */
    void (*on_state)(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *userdata);
    /** The handler decided to exit with @p code for @p reason. Called on the
     * loop, once. When set, the library never exits the process; when
     * NULL, preempt_run() and preempt_save_checkpoint_if_preempted() call
     * exit(code) for every reason but PREEMPT_EXIT_DONE. */
    void (*on_exit)(struct preempt_handler *h, enum preempt_exit reason, int code, void *userdata);
    /** Log messages; the library prints nothing itself. @p msg is valid
     * during the call only. */
    void (*log)(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *userdata);
    /** Start-up ended (cfg->async_start only): @p status 0, training may
     * begin; else the negative errno preempt_handler_new() would have
     * returned (preempt_handler_get_error_message() says why; free the
     * handler).
     * Called on the loop, once. */
    void (*on_start)(struct preempt_handler *h, int status, void *userdata);
};

/** A snapshot of the handler, for display and tests. */
struct preempt_status {
    enum preempt_state state;
    uint64_t run;             /**< steps completed, counting restored ones (TF's total_run_calls) */
    uint64_t restored_step;   /**< run counter of the restored checkpoint, 0 when none */
    int start_status;         /**< 0: started; -EAGAIN: starting (cfg->async_start);
                                   else why start-up failed */
    uint64_t committed_step;  /**< the newest step committed (by the whole job, with
                                   several workers) since the start, else the restored
                                   one; 0 when none */
    unsigned restore_fallbacks; /**< checkpoints the restore callback refused at start-up
                                     (set aside; the next older one was tried) */
    uint64_t refused_step;    /**< the newest of them, 0 when none */
    uint64_t save_step;       /**< the agreed save step of the current round, 0 when none */
    int64_t deadline_in_ms;   /**< time left to the effective deadline; -1 when none is known */
    uint64_t step_us;         /**< measured mean step time (moving average) */
    uint64_t save_ms;         /**< duration of the last save, 0 before any */
    unsigned saves;           /**< checkpoints committed by this handler */
    uint64_t incarnation;     /**< the job's incarnation (multi-worker), 0 in local mode */
    enum preempt_platform platform; /**< the platform in effect (never AUTO) */
    const char *notice_source; /**< source of the last notice ("signal", "poll", "gce",
                                    "aws", "azure", "inject", "operator": preemptctl
                                    notice), NULL before any; static */
    uint64_t kill_delay_ms;   /**< the kill delay in effect, 0 when unknown */
    uint64_t grace_ms;        /**< the grace period in effect (the platform's default resolved) */
    int exit_code;            /**< the "saved, restart me" code in effect */
    /* 1.1: */
    uint64_t stall_ms;        /**< the training the last save stopped: for a two-phase
                                   save whose blobs persisted while training went on,
                                   its snapshot phase; for any other, save_ms. 0 before
                                   any. A caller built against 1.0's header passes 1.0's
                                   size and does not get it */
};

/** Fills @p cfg with the defaults listed in struct preempt_config, and its
 * size field with @p size, the caller's sizeof(struct preempt_config).
 * Use the preempt_config_init() macro from C; a binding passes the size of
 * its own structure (and can compare every field with
 * preempt_abi_layout("preempt_config")).
 * @return 0, or -EINVAL when @p size is no release's layout (nothing is
 *         written). For 0.1's size, 0.1's defaults (exit_code and
 *         kill_delay_ms 0).
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_config_init_size(struct preempt_config *cfg, size_t size);
#define preempt_config_init(cfg) preempt_config_init_size((cfg), sizeof(*(cfg)))

/** This library's layout of a public structure ("preempt_config",
 * "preempt_status", "preempt_callbacks", "preempt_notice_info",
 * "preempt_watcher_callbacks"), for bindings that declare it themselves:
 * "size=<bytes> <field>@<offset>:<size> ...", every field in order. NULL
 * for another name.
 * Ownership: static. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_abi_layout(const char *type);

/** Frees memory the library handed out (preempt_restore_blob()'s data);
 * the same as free(), for callers that do not share this library's C
 * runtime (bindings). NULL-safe. Callback-safe: yes. */
PREEMPT_EXPORT void preempt_free(void *p);

/** Blocks the notice signals of @p cfg (NULL: SIGTERM) in the calling
 * thread with sigprocmask(). Call it first thing in main(), before any
 * thread exists: signalfd only sees signals blocked in every thread, and
 * new threads inherit the mask. preempt_handler_new() checks every thread
 * of the process (a thread still starting at that moment can escape the
 * check). Where a runtime starts threads before your code runs (Python),
 * start the program under preempt-exec instead.
 * @return 0, or -EINVAL for an invalid signal. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_block_signals(const struct preempt_config *cfg);

/** Creates a handler and restores the newest complete checkpoint of
 * cfg->ckpt_dir (verifying its checksums; a corrupt checkpoint, or another
 * job's or worker's, is skipped with a warning and the one before is
 * used), calling cb->restore. When the callback fails, that checkpoint is
 * set aside (moved to ckpt_dir/aside/) and the next older one is tried.
 * The directory is locked for the handler's life.
 * Multi-worker (cfg->etcd_endpoints set): before anything is added to
 * @p base, the handler joins the job on a private loop, waits until every
 * worker has joined (at most cfg->join_timeout_ms) and restores the newest
 * step that every worker holds; this worker's newer checkpoints (never
 * committed by the whole job) are set aside, never deleted. When some
 * workers hold a newer checkpoint than the one every worker holds, the
 * job does not start (-ENODATA, the workers named) unless told to start
 * over (cfg->start_over). A checkpoint left pending by an exit that could
 * not learn the job's decision is first resolved by the job's decision
 * record: kept when the round committed, else deleted. Every worker then
 * waits until every other one has restored the step (bounded by
 * join_timeout_ms plus twice its own restore's time); when a worker's
 * restore callback finds it unusable, every worker sets that step aside
 * and the job falls back to an older step together.
 * This call blocks for that start-up (each phase bounded), unless
 * cfg->async_start: then it returns at once and start-up runs on the loop,
 * reported by on_start. A blocking start-up in a process that handles
 * SIGINT (a Python interpreter) ends at a Ctrl-C with -EINTR, and the
 * program's SIGINT handler is then called as it would have been.
 * @param base  the caller's event_base (borrowed; must outlive the handler),
 *              or NULL for a base owned by the handler.
 * @return 0; -EINVAL for an invalid configuration (logged with the reason);
 *         -EBUSY when a notice signal is not blocked in some thread of
 *         the process (the log names the threads; see
 *         preempt_block_signals() and the preempt-exec tool) or the
 *         checkpoint directory is locked by another process; -ETIMEDOUT when not every worker joined in time;
 *         -EACCES when etcd refused the credentials; -ENODATA when workers
 *         lack checkpoints others hold (see start_over);
 *         -ENOTRECOVERABLE when the restore callback failed on every
 *         checkpoint (all set aside: the next start begins at step 0); or
 *         -EINTR when a SIGINT ended a blocking start-up; -ELIBACC when
 *         libcurl, which a job's etcd client and a cloud platform's
 *         metadata source load when they start, cannot be loaded (a local
 *         handler never loads it); or
 *         the negative errno of a failed open, signalfd, restore or trace
 *         file. With cfg->async_start, only the errors found before
 *         start-up (configuration, signals, memory); the others reach
 *         on_start.
 * Ownership: *ret is set only on success; free it with
 * preempt_handler_free(). The handler owns its signalfd, events, base (when
 * it made one) and files. Callback-safe: no.
 * preempt_handler_new() is a macro that passes the caller's
 * sizeof(struct preempt_callbacks) as @p cb_size (a binding passes the
 * size of its own structure; -EINVAL when it is no release's). */
PREEMPT_EXPORT int preempt_handler_new_size(struct event_base *base, const struct preempt_config *cfg,
                                            const struct preempt_callbacks *cb, void *userdata,
                                            struct preempt_handler **ret, size_t cb_size);
#define preempt_handler_new(...) preempt_handler_new_size(__VA_ARGS__, sizeof(struct preempt_callbacks))

/** Frees a handler: removes its events, closes its descriptors and files,
 * drops an unfinished save. NULL-safe. The notice signals stay blocked.
 * Multi-worker: with its own base, first delivers the worker's last
 * coordination writes (an error, a shard report, its departure), waiting at
 * most 2 s; with a borrowed base it cannot wait for them: close the
 * handler with preempt_handler_close() instead, or those writes are lost
 * (a peer never learns of this worker's error).
 * @return NULL. Callback-safe: no (never call it from a callback). */
PREEMPT_EXPORT struct preempt_handler *preempt_handler_free(struct preempt_handler *h);

/** Told when a peer's membership ends (see preempt_handler_on_peer_lost());
 * @p why is static text. Runs on the handler's loop; callback-safe calls
 * only, and it must not block. */
typedef void (*preempt_peer_lost_cb)(struct preempt_handler *h, unsigned worker, const char *why, void *userdata);

/** Registers @p cb, called on the handler's loop as soon as a peer's
 * membership in the job ends without its training being done: its lease
 * expired (it died, hung or was cut off for longer than the lease) or was
 * revoked, or it left after its last save of a preemption before this
 * worker saved. It is not called while this worker saves or after it
 * exited, when peers leave as the preemption ends. An asynchronous
 * trainer aborts its collectives there (NCCL's communicator abort,
 * torch.distributed.destroy_process_group()) instead of waiting out their
 * own timeout; the protocol itself goes on as before (the job's `lost`
 * record, an exit 75). It costs this worker one more etcd watch, of the
 * job's member records; the other workers nothing. Once per membership (a
 * peer whose lease lapsed inside a long step and came back is told
 * again). Set it once the handler has started (or in on_start); a job
 * started later (async_start) begins the watch when it has joined.
 * @return 0 (also in local mode, where there are no peers and it is
 *         never called); -EINVAL for a bad handler or a NULL @p cb;
 *         -EALREADY when one is registered; -ENOMEM.
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_handler_on_peer_lost(struct preempt_handler *h, preempt_peer_lost_cb cb, void *userdata);

/** Told that a survivor that stayed in place (cfg->stay_in_place) is a
 * member of the job's incarnation @p incarnation, whose every worker
 * stands at step @p step (this worker's state: the committed checkpoint
 * it saved, or the one its restore callback was called with when the job
 * picked another step). Training goes on after step once it returns.
 * Tear down the collectives of the previous incarnation (destroy the
 * process group) and make new ones here, with a rendezvous of this
 * incarnation's own (a key prefix or a port derived from @p incarnation:
 * the replacement workers learn it from preempt_handler_get_status()'s
 * incarnation). Runs on the handler's loop; callback-safe calls only. It
 * may block for as long as the rendezvous takes: every worker of the
 * incarnation is past both barriers. */
typedef void (*preempt_rebuild_cb)(struct preempt_handler *h, uint64_t incarnation, uint64_t step, void *userdata);

/** Registers @p cb (see preempt_rebuild_cb), called each time this worker
 * stayed in place through a preemption and joined the job's next
 * incarnation. Without one, a survivor that stays in place just trains on
 * (a trainer without collectives).
 * @return 0; -EINVAL for a bad handler or a NULL @p cb; -EALREADY when
 *         one is registered.
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_handler_on_rebuild(struct preempt_handler *h, preempt_rebuild_cb cb, void *userdata);

/** Called once by preempt_handler_close() when the handler's last writes
 * are delivered (status 0) or their 2 s bound passed (-ETIMEDOUT). The
 * handler is freed when it returns: do not use it after. Only the
 * queries may be called from it (preempt_handler_get_status(),
 * preempt_handler_get_exit_code(), preempt_handler_get_error_message(),
 * ...). */
typedef void (*preempt_close_cb)(struct preempt_handler *h, int status, void *userdata);

/** Closes a handler without blocking its loop, as libuv's uv_close(): it
 * leaves the job, delivers the worker's last coordination writes (an error
 * for its peers, a shard report, its departure) while the caller's loop
 * runs, then calls @p done (may be NULL) and frees the handler. Use it
 * with a borrowed base instead of preempt_handler_free(), which cannot
 * wait for them there; keep the loop running until done has run, and stop
 * calling into the handler from your own events first. Until done, the
 * handler's callbacks may still run (a signal, an etcd answer). With the
 * handler's own base it delivers them at once (at most 2 s), calls done
 * and frees the handler before returning.
 * @return 0; -EINVAL for a bad handler; -EBUSY inside a callback;
 *         -EALREADY when it is closing already; -ENOMEM.
 * Callback-safe: no. */
PREEMPT_EXPORT int preempt_handler_close(struct preempt_handler *h, preempt_close_cb done, void *userdata);

/** The handler's event_base (the caller's, or its own), or NULL for a bad
 * handler. Callback-safe: yes. */
PREEMPT_EXPORT struct event_base *preempt_handler_get_base(const struct preempt_handler *h);

/* ---- synchronous use (handlers with their own base) ---------------------- */

/** Runs one training step, @p step_fn(@p arg), then does what the handler
 * says at the boundary: nothing (during an agreement too: the next step
 * may hold a collective with the other workers); wait, running the loop,
 * only where every worker stands at the save step or this worker reached
 * the step it proposed (bounded by the agreement timeout and the deadline);
 * save through cb->save; or exit. Before it returns to training, the writes
 * the boundary caused are delivered to etcd (at most 200 ms). @p step_fn
 * returns 0, or an application exit code (> 0) that is propagated as an
 * error exit.
 * @return 0, with *ret_exited false to go on training, true when the
 *         handler has exited (only when cb->on_exit is set; otherwise the
 *         process has exited); -EINVAL for a NULL argument, a borrowed base
 *         or no save callback; -EBUSY inside a callback.
 * Callback-safe: no. */
PREEMPT_EXPORT int preempt_run(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg, bool *ret_exited);

/** The same boundary work for a loop that runs its own step: counts one
 * completed step and acts on it. Returns as preempt_run(). Callback-safe: no. */
PREEMPT_EXPORT int preempt_save_checkpoint_if_preempted(struct preempt_handler *h, bool *ret_exited);

/** Tells the handler that training finished (all steps done). The handler
 * exits with PREEMPT_EXIT_DONE (code 0) unless it exited already; this call
 * never exits the process. A two-phase checkpoint still persisting is not
 * dropped: the handler waits in PREEMPT_STATE_FINISHING until it is
 * committed (then "done"; "not saved" when it fails or the job's decision
 * does not come). A handler with its own base runs its loop inside this
 * call until then; with a borrowed base, run the loop until on_exit.
 * @return 0, or -EBUSY inside a callback. */
PREEMPT_EXPORT int preempt_training_done(struct preempt_handler *h);

/* ---- asynchronous use (on the caller's loop; nothing here blocks) -------- */

/** Counts one completed step and sets *ret_action to what to do next.
 * Never blocks. While no notice is known (the common path) it makes no
 * system call: it reads the monotonic clock and a counter.
 * @return 0; -EINVAL for a bad handler or a NULL ret_action; -EBUSY
 *         inside a callback; -EAGAIN while an asynchronous start-up runs,
 *         or the error it ended with. Callback-safe: no. */
PREEMPT_EXPORT int preempt_step_end(struct preempt_handler *h, enum preempt_action *ret_action);

/** Sets *ret_action to what to do now, without counting a step (e.g. again
 * after PREEMPT_ACTION_WAIT). @return 0, or -EINVAL for a bad handler or a
 * NULL ret_action. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_handler_get_action(const struct preempt_handler *h, enum preempt_action *ret_action);

/** Starts the save that PREEMPT_ACTION_SAVE or _SAVE_EXIT asked for and
 * sets *ret_step to the run counter to save (the action becomes WAIT).
 * @return 0; -EALREADY when no save was asked for; or the negative errno of
 *         opening the checkpoint (report it with preempt_save_done()).
 * Callback-safe: no. */
PREEMPT_EXPORT int preempt_save_begin(struct preempt_handler *h, uint64_t *ret_step);

/** Writes one named blob of the save in progress (names: 1-64 of
 * [A-Za-z0-9._-], not starting with '.', each once). Blocking file I/O.
 * @return 0; -ENOTSUP without a ckpt_dir; -EALREADY when no save is in
 *         progress; -EINVAL for a bad name; or the write's negative errno
 *         (e.g. -ENOSPC), after which the save can only fail.
 * Ownership: the data is copied to the file. Callback-safe: only inside
 * cb->save (its purpose) and outside callbacks. */
PREEMPT_EXPORT int preempt_save_blob(struct preempt_handler *h, const char *name, const void *data, size_t len);

/** Adds a blob that the caller writes itself through a descriptor, for
 * state too large to hold twice in memory (a serializer writing straight
 * to the checkpoint: torch.save() to a file object, a streaming encoder).
 * *ret_fd is a new, empty regular file of the save in progress, opened
 * read-write (O_CLOEXEC). Write it, then close it before
 * preempt_save_done(), which reads it back in chunks for its size and
 * checksum and makes it durable. Names and limits as preempt_save_blob().
 * @return 0; -ENOTSUP without a ckpt_dir; -EALREADY when no save is in
 *         progress; -EINVAL for a bad or repeated name; or the open's
 *         negative errno, after which the save can only fail.
 * Ownership: *ret_fd is the caller's, to close. Callback-safe: as
 * preempt_save_blob(). */
PREEMPT_EXPORT int preempt_save_blob_open(struct preempt_handler *h, const char *name, int *ret_fd);

/** Releases a snapshot handed to preempt_save_snapshot(): @p data is the
 * caller's again. Runs on the handler's loop (or inside
 * preempt_handler_free()); callback-safe calls only. */
typedef void (*preempt_release_cb)(void *data, void *userdata);

/** Hands one named blob of the save in progress over as a snapshot, for a
 * two-phase save (docs/guide/two-phase.md): nothing is written now. Once
 * the save's snapshot phase ends (preempt_save_done() with 0), the
 * library writes the snapshots, checksums them and makes them durable on
 * its loop while training goes on (io_uring; where the kernel does not
 * permit it, Linux AIO past the page cache, or bounded chunks into it; no
 * threads; PREEMPT_PERSIST chooses), and only then commits the
 * checkpoint (manifest last, fsync, rename; in a job, the shard's report
 * and the job's one decision). A save with at least one snapshot is
 * two-phase: its preempt_save_blob_open() files are read back and made
 * durable in the same persist. At most one save persists at a time, so a
 * handler holds at most one set of snapshots (one copy of the state).
 * Names and limits as preempt_save_blob().
 * @return 0; -EINVAL for a bad or repeated name or a NULL @p release;
 *         -ENOTSUP without a ckpt_dir; -EALREADY when no save is in
 *         progress; -E2BIG past 64 blobs; or the negative errno of creating
 *         its file.
 * Ownership: on 0 the library holds @p data (it neither changes nor frees
 * it) until it calls @p release(data, userdata), exactly once: when the
 * blob is durable, when the save is dropped (a failure, an exit, the
 * handler freed). On an error the caller keeps it. Callback-safe: as
 * preempt_save_blob(). */
PREEMPT_EXPORT int preempt_save_snapshot(struct preempt_handler *h, const char *name, const void *data, size_t len,
                                         preempt_release_cb release, void *userdata);

/** Finishes the save in progress: with @p status 0 and a ckpt_dir, the
 * checkpoint is committed atomically (manifest last, fsync, rename);
 * otherwise it is dropped. The outcome is fed to the machine. With several
 * workers the committed copy stays pending (never restored, never counted
 * by max_to_keep) until the job's one decision for the round: kept when
 * every worker's shard is in, deleted when the round aborts.
 * A two-phase save (preempt_save_snapshot()) ends only its snapshot phase
 * here: the machine goes to "persisting" (training goes on; the last save
 * of a preemption is awaited instead: PREEMPT_ACTION_WAIT), and the
 * commit follows on the loop once every blob is durable.
 * @return 0 or the commit's negative errno (the machine has been told);
 *         -EALREADY when no save is in progress. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_save_done(struct preempt_handler *h, int status);

/** Reads a blob of the checkpoint being restored; only inside cb->restore.
 * @return 0; -ENOENT when there is no such blob; -EBADMSG when it does not
 *         verify; -EALREADY outside cb->restore.
 * Ownership: *ret_data is malloc'ed; the caller frees it with free() or
 * preempt_free(). Callback-safe: only inside cb->restore, its one use. */
PREEMPT_EXPORT int preempt_restore_blob(struct preempt_handler *h, const char *name, void **ret_data, size_t *ret_len);

/** Opens a blob of the checkpoint being restored instead of reading it
 * into memory: *ret_fd is the blob's file, read-only at offset 0 and
 * seekable (torch.load() takes it as a file object), after its size and
 * checksum were verified chunk by chunk (nothing is held whole).
 * @return as preempt_restore_blob().
 * Ownership: *ret_fd is the caller's, to close; it stays valid after
 * cb->restore returns. Callback-safe: only inside cb->restore. */
PREEMPT_EXPORT int preempt_restore_blob_open(struct preempt_handler *h, const char *name, int *ret_fd);

/* ---- any event loop ------------------------------------------------------ */

/** A descriptor that becomes readable whenever the handler has work: a
 * notice signal, a due timer, an etcd or metadata transfer. Wait on it for
 * reading in any event loop (poll(), epoll, Python's loop.add_reader(),
 * GLib, libuv), then call preempt_handler_process(). The descriptor is an
 * epoll descriptor that mirrors the handler's event_base (its own, or the
 * borrowed one: then the whole base). Made on the first call, and set in
 * *ret_fd (owned by the handler: never close it).
 * @return 0; -EINVAL for a bad handler or a NULL ret_fd; -EBUSY inside a
 *         callback; or the negative errno of making it.
 * Threads: the loop's thread only. Callback-safe: no. */
PREEMPT_EXPORT int preempt_handler_get_fd(struct preempt_handler *h, int *ret_fd);

/** Sets *ret_ms to the milliseconds left until the handler's earliest
 * timer is due (0: due now; -1: no timer, only the descriptor can wake
 * it). The descriptor itself becomes readable at that time too, and stays
 * readable until preempt_handler_process() runs: the expiry is absolute,
 * and calling this again (after every step, say) never moves it later nor
 * clears a readiness. So a loop may process only when the descriptor is
 * readable or its own timer, re-armed from this value, fires (GLib's
 * g_unix_fd_add() and g_timeout_add(), libuv's uv_poll_t and uv_timer_t).
 * Call it before each wait: any call into the library (preempt_step_end(),
 * preempt_notify(), a save) may arm a timer or start a transfer, and this
 * call brings the descriptor up to date (as libuv's backend timeout). A
 * due timer reads 0 only once libevent's coarse clock will run it, so a
 * loop that processes at 0 does not spin.
 * @return 0, or a negative errno as preempt_handler_get_fd() (-EINVAL for a
 *         NULL ret_ms). Callback-safe: no. */
PREEMPT_EXPORT int preempt_handler_get_timeout(struct preempt_handler *h, int64_t *ret_ms);

/** Does the handler's pending work without blocking: the signals, timers
 * and transfers that are ready, every timer that is due included
 * (callbacks such as on_state and on_exit run here).
 * @return 0, or a negative errno. Callback-safe: no. */
PREEMPT_EXPORT int preempt_handler_process(struct preempt_handler *h);

/* ---- both ---------------------------------------------------------------- */

/** Asks for a checkpoint now, training going on (a periodic checkpoint:
 * in a job every worker saves at one agreed step, through the same commit
 * rule as a preemption). @return 0; -EALREADY while a preemption or a
 * checkpoint is under way, or after the exit. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_request_checkpoint(struct preempt_handler *h);

/** Delivers a termination notice from the application (source "inject"),
 * @p deadline_in_ms from now (0: unknown). It is handled on the loop like a
 * signal. @return 0, or -ENOBUFS when the event queue is full.
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_notify(struct preempt_handler *h, uint64_t deadline_in_ms);

/** Fills @p ret, of @p size bytes, with a snapshot. preempt_handler_get_status()
 * is a macro that passes the caller's sizeof(struct preempt_status).
 * @return 0, or -EINVAL for a bad handler, a NULL ret or a size that is no
 *         release's. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_handler_get_status_size(const struct preempt_handler *h, struct preempt_status *ret,
                                                   size_t size);
#define preempt_handler_get_status(...) preempt_handler_get_status_size(__VA_ARGS__, sizeof(struct preempt_status))

/** Sets *ret_code to the exit code the handler decided.
 * @return 0; -EAGAIN while it has not exited; -EINVAL for a bad handler or
 *         a NULL ret_code. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_handler_get_exit_code(const struct preempt_handler *h, int *ret_code);

/** Reports an application error (exit code @p code, 1..255) with a message
 * (NULL: none; truncated to 255 bytes). The handler exits with
 * PREEMPT_EXIT_ERROR, and in a multi-worker job every worker exits with
 * the same code and message (the first error wins). preempt_run() does the
 * same for a step function that returns a code.
 * @return 0; -EINVAL for a code out of range; -EBUSY inside a callback. */
PREEMPT_EXPORT int preempt_fail(struct preempt_handler *h, int code, const char *message);

/** This worker cannot go on, but a restart of the job can: typically called
 * from the preempt_handler_on_peer_lost() callback once the trainer aborted
 * its collectives (a peer died or hung; its process group is gone). The
 * step under way is not counted. The handler exits at once without saving
 * (PREEMPT_EXIT_NOT_SAVED: cfg->exit_code_not_saved, the "restart me"
 * code; PREEMPT_EXIT_SAVED when a checkpoint of a preemption under way was
 * already committed), and in a multi-worker job every other worker exits
 * the same way: the job's error record, carrying @p why (NULL: "a peer was
 * lost") after this worker's index and step, the whole message truncated
 * to 255 bytes, and the code -ENOLINK, is the one
 * decision they all follow. A shard this worker already reported is
 * proposed aborted first, so the round is decided once. The restart
 * resumes after the newest committed checkpoint. The termination record
 * and the job's history say why.
 * @return 0 (also once the handler has exited); -EINVAL for a bad handler;
 *         -EBUSY inside the save or restore callback.
 * Callback-safe: yes, outside save and restore (on_peer_lost, on_state, log). */
PREEMPT_EXPORT int preempt_request_restart(struct preempt_handler *h, const char *why);

/** The message of the error the handler exits with (its own or the one
 * propagated from another worker), or NULL when there is none (or for a
 * bad handler).
 * Ownership: the handler's; valid until it is freed. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_handler_get_error_message(const struct preempt_handler *h);

/** The name of an exit reason ("done", "saved", "not-saved", "error"), or
 * NULL out of range. Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_exit_to_string(enum preempt_exit x);

/* ==== Preemption watcher ==================================================
 *
 * Observes a multi-worker job's records in etcd without taking part in it
 * (TensorFlow's PreemptionWatcher, on every platform): which worker got a
 * notice, from which source, with which deadline; and when every worker of
 * the job's current incarnation has left (its membership ended: at its
 * exit, or with the report of its last checkpoint, a moment before it).
 * It follows the job into each new incarnation. No threads: it lives on an
 * event_base like a handler. */

struct preempt_watcher; /* opaque */

/** A notice seen in a job's records. */
struct preempt_notice_info {
    uint64_t incarnation;      /**< the incarnation it belongs to */
    int worker;                /**< the worker that received it; -1: an operator's
                                    notice (preemptctl notice) */
    const char *source;        /**< "signal", "gce", "aws", ... ("unknown" for a
                                    record this library cannot read); static */
    uint64_t deadline_unix_ms; /**< the earliest deadline known, Unix time in ms */
    bool withdrawn;            /**< every notice of the job is withdrawn or advisory */
};

/** The watcher's callbacks, copied at creation; userdata is passed last. */
struct preempt_watcher_callbacks {
    /** A notice, an earlier deadline or a withdrawal was seen. */
    void (*on_notice)(struct preempt_watcher *w, const struct preempt_notice_info *n, void *userdata);
    /** Every worker that joined @p incarnation has left (see above). */
    void (*on_exited)(struct preempt_watcher *w, uint64_t incarnation, void *userdata);
};

/** Creates a watcher of job cfg->job through cfg->etcd_endpoints (with the
 * same credentials and TLS options as a handler; the other fields are not
 * used). @p base: the caller's (borrowed) or NULL for its own, driven by
 * preempt_watcher_wait(). @p cb may be NULL (use the queries).
 * preempt_watcher_new() is a macro that passes the caller's
 * sizeof(struct preempt_watcher_callbacks) as @p cb_size.
 * @return 0; -EINVAL for a configuration without etcd or with a bad job
 *         name, or a size that is no release's; -ENOMEM. Ownership: free
 *         *ret with preempt_watcher_free(). Callback-safe: no. */
PREEMPT_EXPORT int preempt_watcher_new_size(struct event_base *base, const struct preempt_config *cfg,
                                            const struct preempt_watcher_callbacks *cb, void *userdata,
                                            struct preempt_watcher **ret, size_t cb_size);
#define preempt_watcher_new(...) preempt_watcher_new_size(__VA_ARGS__, sizeof(struct preempt_watcher_callbacks))

/** Frees a watcher. NULL-safe. @return NULL. Callback-safe: no. */
PREEMPT_EXPORT struct preempt_watcher *preempt_watcher_free(struct preempt_watcher *w);

/** Fills @p ret, of @p size bytes, with the preemption message of the
 * current incarnation (its earliest notice). preempt_watcher_get_notice()
 * is a macro that passes the caller's sizeof(struct preempt_notice_info).
 * Non-blocking. @return 0; -EAGAIN while none is known; -EINVAL for a bad
 * watcher, a NULL ret or a size that is no release's. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_watcher_get_notice_size(const struct preempt_watcher *w, struct preempt_notice_info *ret,
                                                   size_t size);
#define preempt_watcher_get_notice(...) preempt_watcher_get_notice_size(__VA_ARGS__, sizeof(struct preempt_notice_info))

/** Sets *ret_exited to whether every worker of the current incarnation has
 * exited (false while no worker joined yet). Non-blocking.
 * @return 0; -EAGAIN before the job's records were read; -EINVAL for a bad
 *         watcher or a NULL ret_exited. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_watcher_get_exited(const struct preempt_watcher *w, bool *ret_exited);

/** For a watcher with its own base: runs it until every worker has exited
 * or @p timeout_ms passes (TensorFlow's block_until_worker_exit, bounded).
 * @return 0 when they exited; -ETIMEDOUT; -EINVAL with a borrowed base.
 * Callback-safe: no. */
PREEMPT_EXPORT int preempt_watcher_wait(struct preempt_watcher *w, uint64_t timeout_ms);

/** The watcher in any event loop, as the handler's descriptor API (see
 * preempt_handler_get_fd() and the two after it, whose rules hold here
 * too): a descriptor that becomes readable whenever the watcher has work
 * (a transfer, a due timer, which keeps it readable until
 * preempt_watcher_process() runs), the milliseconds until its earliest
 * timer (-1: none), and a non-blocking process call that runs on_notice
 * and on_exited. With the watcher's own base (base NULL) or a borrowed
 * one (then the whole base). The descriptor (*ret_fd) is owned by the
 * watcher: never close it. @return 0, or a negative errno (-EINVAL for a
 * bad watcher or a NULL ret_fd or ret_ms). Callback-safe: no. */
PREEMPT_EXPORT int preempt_watcher_get_fd(struct preempt_watcher *w, int *ret_fd);
PREEMPT_EXPORT int preempt_watcher_get_timeout(struct preempt_watcher *w, int64_t *ret_ms);
PREEMPT_EXPORT int preempt_watcher_process(struct preempt_watcher *w);

/* ==== Names and versions ================================================= */

/** The name of a platform ("auto", "none", "gce", "gce-gpu", "aws",
 * "azure"), or NULL out of range. Ownership: static string.
 * Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_platform_to_string(enum preempt_platform p);

/** Sets *ret_platform to the platform named @p name. @return 0, or -EINVAL
 * when @p name is NULL or unknown or ret_platform is NULL.
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_platform_from_string(const char *name, enum preempt_platform *ret_platform);

/** The library's version as "MAJOR.MINOR.PATCH".
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_version(void);

/** A short description of a value returned by the library.
 * @param err  a value returned by a libpreempt function: 0 or a negative errno.
 * @return "success" for 0, libc's message for a negative errno, and
 *         "unknown error" for anything else.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_strerror(int err);

/** The name of a state ("idle", "own-signal", ...).
 * @return a static string, or NULL when @p s is out of range.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_state_to_string(enum preempt_state s);

/** Sets *ret_state to the state whose name is @p name.
 * @return 0, or -EINVAL when @p name is NULL or unknown or ret_state is
 *         NULL. Callback-safe: yes. */
PREEMPT_EXPORT int preempt_state_from_string(const char *name, enum preempt_state *ret_state);

/** What is true in state @p s: the one-line invariant from the machine's
 * definition.
 * @return a static string, or NULL when @p s is out of range.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_state_truth(enum preempt_state s);

/* ---- 0.1's names: deprecated, removed in 2.0 ----------------------------
 * A program written against 0.1's header still compiles against this one,
 * with a compiler warning at each call that names the 1.x call to use
 * (CHANGELOG.md, "Migrating from 0.1"), and runs. The calls 1.0 gave an
 * out-parameter keep their 0.1 form by their argument count (the 1.x form
 * is chosen when every argument is given); the names 1.0 retired are
 * declared as the shared library keeps them (lib/api/compat.c: 0.1's results
 * and layouts; a static link has none of them). Define
 * PREEMPT_NO_DEPRECATED to see neither. */
#ifndef PREEMPT_NO_DEPRECATED
#if defined(__GNUC__) || defined(__clang__)
#define PREEMPT_DEPRECATED_(use) __attribute__((deprecated("0.1's form; use " use)))
#else
#define PREEMPT_DEPRECATED_(use)
#endif
/* the name in the position an argument count selects */
#define PREEMPT_PICK_(a1, a2, a3, a4, name, ...) name

PREEMPT_DEPRECATED_("preempt_step_end(h, &action)")
static inline int preempt_step_end_0_(struct preempt_handler *h)
{
    enum preempt_action a;
    int r = preempt_step_end(h, &a);

    return r < 0 ? r : (int)a;
}
#define preempt_step_end(...) PREEMPT_PICK_(__VA_ARGS__, -, -, preempt_step_end, preempt_step_end_0_, -)(__VA_ARGS__)

PREEMPT_DEPRECATED_("preempt_run(h, step_fn, arg, &exited)")
static inline int preempt_run_0_(struct preempt_handler *h, int (*step_fn)(void *arg), void *arg)
{
    bool exited = false;
    int r = preempt_run(h, step_fn, arg, &exited);

    return r < 0 ? r : (int)exited;
}
#define preempt_run(...) PREEMPT_PICK_(__VA_ARGS__, preempt_run, preempt_run_0_, -, -)(__VA_ARGS__)

PREEMPT_DEPRECATED_("preempt_save_checkpoint_if_preempted(h, &exited)")
static inline int preempt_save_checkpoint_if_preempted_0_(struct preempt_handler *h)
{
    bool exited = false;
    int r = preempt_save_checkpoint_if_preempted(h, &exited);

    return r < 0 ? r : (int)exited;
}
#define preempt_save_checkpoint_if_preempted(...)                                                                   \
    PREEMPT_PICK_(__VA_ARGS__, -, -, preempt_save_checkpoint_if_preempted, preempt_save_checkpoint_if_preempted_0_, \
                  -)(__VA_ARGS__)

PREEMPT_DEPRECATED_("preempt_handler_get_fd(h, &fd)")
static inline int preempt_handler_get_fd_0_(struct preempt_handler *h)
{
    int fd = -1;
    int r = preempt_handler_get_fd(h, &fd);

    return r < 0 ? r : fd;
}
#define preempt_handler_get_fd(...)                                                                                 \
    PREEMPT_PICK_(__VA_ARGS__, -, -, preempt_handler_get_fd, preempt_handler_get_fd_0_, -)(__VA_ARGS__)

PREEMPT_DEPRECATED_("preempt_state_from_string(name, &state)")
static inline int preempt_state_from_string_0_(const char *name)
{
    enum preempt_state st;
    int r = preempt_state_from_string(name, &st);

    return r < 0 ? r : (int)st;
}
#define preempt_state_from_string(...)                                                                              \
    PREEMPT_PICK_(__VA_ARGS__, -, -, preempt_state_from_string, preempt_state_from_string_0_, -)(__VA_ARGS__)

PREEMPT_DEPRECATED_("preempt_platform_from_string(name, &platform)")
static inline int preempt_platform_from_string_0_(const char *name)
{
    enum preempt_platform pl;
    int r = preempt_platform_from_string(name, &pl);

    return r < 0 ? r : (int)pl;
}
#define preempt_platform_from_string(...)                                                                           \
    PREEMPT_PICK_(__VA_ARGS__, -, -, preempt_platform_from_string, preempt_platform_from_string_0_, -)(__VA_ARGS__)

/* retired names (the shared library's 0.1 symbols) */
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_get_status(h, &status)")
void preempt_get_status(const struct preempt_handler *h, struct preempt_status *ret);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_get_action(h, &action)")
enum preempt_action preempt_action(const struct preempt_handler *h);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_get_exit_code(h, &code)")
int preempt_exit_code(const struct preempt_handler *h);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_get_error_message(h)")
const char *preempt_error_message(const struct preempt_handler *h);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_get_base(h)")
struct event_base *preempt_handler_base(const struct preempt_handler *h);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_handler_close(h)")
unsigned preempt_pending_writes(const struct preempt_handler *h);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_watcher_get_notice(w, &notice)")
int preempt_watcher_notice(const struct preempt_watcher *w, struct preempt_notice_info *ret);
PREEMPT_EXPORT PREEMPT_DEPRECATED_("preempt_watcher_get_exited(w, &exited)")
int preempt_watcher_exited(const struct preempt_watcher *w);
#endif /* !PREEMPT_NO_DEPRECATED */

#ifdef __cplusplus
}
#endif
#endif /* PREEMPT_H */
