/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-trainer.c: the reference trainer (docs/guide/tools.md, "The reference trainer"), a stable
 * contract used by the demo and the tests. Its model state is updated by a
 * deterministic function of (state, step), so a preempted and resumed run
 * ends in exactly the state of an uninterrupted one: a lost or repeated step
 * changes the digest. It uses only the public API (include/libpreempt/preempt.h), in
 * the synchronous form (preempt_run) or, with --async, on its own libevent
 * loop through the step hooks. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "allreduce.h"
#include "preempt.h"
#include "tool.h"

static const char usage[] =
    "Usage: preempt-trainer --ckpt-dir DIR --steps N [options]\n"
    "\n"
    "Trains a deterministic toy model to global step N under libpreempt. It\n"
    "restores the newest checkpoint in DIR, prints one JSON object per line on\n"
    "stdout (start, notice, state, save-begin, saved, exit, done) and exits 0 when\n"
    "done,\n"
    "or with the handler's code when it is preempted (42 after a committed save).\n"
    "\n"
    "  --ckpt-dir DIR     checkpoint directory (created 0700; its parent must exist)\n"
    "  --steps N          train until global step N\n"
    "  --step-ms MS       time one step takes (default 0)\n"
    "  --state-kb KB      model state size (default 64)\n"
    "  --step-kb KB       each step updates KB of the state, a window that moves\n"
    "                     along it (default: all of it): a large checkpoint of\n"
    "                     cheap steps, as an embedding table a step touches in part\n"
    "  --grace-ms MS      keep training this long after the first save (default:\n"
    "                     the platform's, 3600000 on gce-gpu, else 0)\n"
    "  --exit-code C      exit code after a preemption save (default: the\n"
    "                     platform's, 143 on gce and gce-gpu, else 42)\n"
    "  --trace FILE       write the machine's trace (text) to FILE\n"
    "  --max-to-keep N    checkpoints kept (default 3; 0 keeps all)\n"
    "  --signal SIG       a notice signal (TERM, USR1, ...; repeatable; default TERM)\n"
    "  --second POLICY    a second notice: ignore (default) or exit\n"
    "  --plan PLAN        final-save planning: measured (default) or tf\n"
    "  --save-ms MS       extra time each save takes, between its two blobs (with\n"
    "                     --async on a timer, the loop running meanwhile, as an\n"
    "                     asynchronous checkpoint's writes)\n"
    "  --custom-save      no checkpoint files: a custom save function (TF's save_fn)\n"
    "                     that only reports the step; --ckpt-dir is not used\n"
    "  --poll-file PATH   a poll function: a notice once PATH exists; its content,\n"
    "                     if a number, is the deadline in ms (write it elsewhere and\n"
    "                     rename it to PATH: an empty PATH is a notice, no deadline)\n"
    "  --poll-ms MS       poll period (default 100)\n"
    "  --raise-at STEP    raise the first notice signal during step STEP (tests;\n"
    "                     up to 4 times for several signals)\n"
    "  --raise-after-save N:K  raise it during the K-th step after the step of\n"
    "                     this process's N-th save (tests: a notice while a\n"
    "                     two-phase checkpoint persists, whenever it was agreed)\n"
    "  --raise-at-save-end N  raise it as this process's N-th save ends: a\n"
    "                     synchronous one as its callback returns, a two-phase one\n"
    "                     when the library releases its snapshot, durable (tests:\n"
    "                     a notice just after a save, as its shard is reported)\n"
    "  --long-step STEP:MS  step STEP takes MS instead of --step-ms (tests: a worker\n"
    "                     busy in one long step at a chosen moment)\n"
    "  --fail-at STEP     fail step STEP with application code 3 (tests)\n"
    "  --save-every-steps N  a periodic checkpoint every N steps (training goes on)\n"
    "  --save-every-ms MS a periodic checkpoint MS after the last one committed\n"
    "  --two-phase        save the model as a snapshot (a copy in memory): the\n"
    "                     library writes it while training goes on, and commits\n"
    "                     once it is durable ($PREEMPT_PERSIST: auto, io_uring,\n"
    "                     aio or chunked)\n"
    "  --early-threads N  start N threads before the notice signals are blocked,\n"
    "                     as Python and its libraries do (tests: run the trainer\n"
    "                     under preempt-exec)\n"
    "  --fail-restore-at STEP  the restore callback rejects the checkpoint of STEP\n"
    "                     (tests: a model that no longer loads)\n"
    "  --platform P       none, gce, gce-gpu, aws, azure or auto (default auto:\n"
    "                     $PREEMPT_PLATFORM, else detected); a cloud platform\n"
    "                     watches its metadata service for notices\n"
    "  --metadata-url URL the metadata service (default http://169.254.169.254, or\n"
    "                     $GCE_METADATA_HOST, $GCE_METADATA_IP or\n"
    "                     $AWS_EC2_METADATA_SERVICE_ENDPOINT)\n"
    "  --metadata-poll-ms MS  metadata poll period (default 1000)\n"
    "  --no-advisory      no checkpoint on advisory notices (AWS rebalance, GCE\n"
    "                     live migration)\n"
    "  --no-azure-approve after a committed preemption save, do not approve the\n"
    "                     Azure scheduled events (StartRequests)\n"
    "  --kill-delay-ms MS time from SIGTERM to SIGKILL (default: the launcher's\n"
    "                     known delay, if any); a signal's deadline\n"
    "  --async            run on the trainer's own event loop with the step hooks\n"
    "  --watch-peers      report at once when a peer's membership ends\n"
    "                     (preempt_handler_on_peer_lost(): a \"peer-lost\" line),\n"
    "                     where a trainer would abort its collectives\n"
    "  --async-start      with --async: creation returns at once and start-up\n"
    "                     (joining, restoring) runs on the trainer's loop, which\n"
    "                     keeps ticking meanwhile (start_ticks, every 50 ms)\n"
    "  --allreduce PORT   a blocking all-reduce among the job's workers inside every\n"
    "                     step, over 127.0.0.1:PORT (worker 0 listens), as NCCL,\n"
    "                     gloo and MPI block: a step ends only when every worker\n"
    "                     has entered it (a failed one, a peer gone, asks the job\n"
    "                     for a restart: preempt_request_restart())\n"
    "  --verbose          print the library's debug and info messages on stderr\n"
    "                     too (its warnings and errors are always printed)\n"
    "  --print-steps      print a step line as each step ends, and with\n"
    "                     --async-start a tick line at each tick of start-up\n"
    "                     (tests: wait for the event instead of for a time)\n"
    "  --help             this text\n"
    "  --version          the version\n"
    "\n"
    "Multi-worker (every worker of a job agrees on its save steps through etcd):\n"
    "  --etcd URL[,URL]   etcd endpoints (http:// or https://); enables multi-worker\n"
    "  --job NAME         job name (A-Z a-z 0-9 . _ -; default \"job\")\n"
    "  --launch-id ID     this launch's identity (A-Z a-z 0-9 . _ : -): a worker of\n"
    "                     another launch than the job's live workers is refused\n"
    "                     (default: $PREEMPT_LAUNCH_ID, $SLURM_JOB_ID or\n"
    "                     $TORCHELASTIC_RUN_ID; none: unknown)\n"
    "  --worker I         this worker's index (default 0; in a Slurm job step,\n"
    "                     $SLURM_PROCID)\n"
    "  --workers W        the number of workers (default 1; in a Slurm job step,\n"
    "                     $SLURM_NTASKS)\n"
    "                     each worker keeps its shard in DIR/worker-I\n"
    "  --stay-in-place    survivors stay in place: after a preemption that did not\n"
    "                     terminate this worker, keep the process and its state and\n"
    "                     join the job's next incarnation (\"rebuild\" line); with\n"
    "                     --allreduce the collective is closed when rejoining starts\n"
    "                     and made again on the rebuild (also PREEMPT_STAY_IN_PLACE=1)\n"
    "  --start-over       start even when some workers lack checkpoints that others\n"
    "                     hold: restore the newest step every worker holds and set\n"
    "                     the newer ones aside (also PREEMPT_START_OVER=1)\n"
    "  --etcd-user USER   authenticate as USER; the password is read from the\n"
    "                     environment variable PREEMPT_ETCD_PASSWORD\n"
    "  --etcd-ca FILE     TLS CA bundle; --etcd-cert FILE, --etcd-key FILE: client\n"
    "                     certificate and key\n"
    "  --lease-ttl S      membership lease in seconds (default 10); a step longer\n"
    "                     than S/3 grows it to S + 2 x the longest step (max 3600)\n"
    "  --join-timeout-ms MS  bound on waiting for every worker at start (default 60000)\n"
    "  --agree-timeout-ms MS bound on one agreement round, plus 3 steps (default 10000)\n"
    "  --etcd-timeout-ms MS  one etcd request attempt, counting only time the\n"
    "                     handler's loop runs, never a step (default 2000)\n"
    "\n"
    "Environment: PREEMPT_TERMINATION_LOG=FILE writes the termination record\n"
    "(one JSON object) there at exit (default: /dev/termination-log when it\n"
    "exists and is writable, as in a Kubernetes pod); PREEMPT_METRICS_PATH=FILE\n"
    "keeps Prometheus metrics there for node_exporter's textfile collector.\n"
    "In either, {worker} becomes the worker index.\n"
    "\n"
    "Exit status: 0 when done; the handler's code when preempted (42, or 75 when\n"
    "nothing new could be saved); the application's code on an error (3 from\n"
    "--fail-at, on this worker or, propagated, on another); 2 on bad usage or a\n"
    "failed start (unreadable checkpoint, invalid configuration, a job that\n"
    "did not assemble, workers lacking checkpoints others hold, etcd refusing\n"
    "the credentials); 5 when no checkpoint could be restored (every one failed\n"
    "to restore and was set aside: the next start begins at step 0).\n";

struct trainer {
    struct preempt_handler *h;
    struct event_base *base;     /* --async only */
    struct event *ev_step, *ev_resume;
    struct event *ev_save;       /* --async with --save-ms: the save's second half */
    struct event *ev_tick;       /* --async: a 50 ms tick on the trainer's loop */
    uint64_t ticks;              /* ticks before training began (start-up on the loop) */
    uint64_t restore_us;         /* time in the restore callback: reading the checkpoint's blobs */
    bool started;                /* --async-start: on_start came */
    bool closed;                 /* preempt_handler_close() called back: the handler is gone */
    int start_r;                 /* with its status */
    uint64_t *state;
    size_t words;
    uint64_t steps, step_ms, save_ms, fail_at, fail_restore_at, saving_step;
    uint64_t long_step, long_step_ms; /* --long-step (0: none) */
    uint64_t raise_at[4];        /* --raise-at steps (0: unused) */
    uint64_t raise_save, raise_after; /* --raise-after-save N:K (0: unused) */
    uint64_t raise_dyn;          /* the step it names, once the N-th save came (0: not yet) */
    uint64_t raise_end;          /* --raise-at-save-end N (0: unused) */
    unsigned saves_seen;         /* saves this process made */
    size_t step_words;           /* --step-kb: words a step updates (0: all) */
    unsigned n_raise;
    unsigned printed_saves;
    int raise_sig;
    const char *poll_file;
    bool custom_save, waiting, exited;
    bool two_phase;              /* --two-phase: the model is a snapshot, persisted while training goes on */
    bool verbose;                /* --verbose: debug and info messages too */
    bool print_steps;            /* --print-steps: a "step" line as each step ends */
    struct allreduce *ar;        /* --allreduce: a blocking collective in every step */
    unsigned ar_port, ar_workers; /* its port and size (0: none), made again by a rebuild in place */
    int exit_code;
    unsigned worker;
};

/* CLOCK_MONOTONIC in microseconds: the start-up's parts in the start line. */
static uint64_t mono_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void print_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void print_json(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vprintf(fmt, ap);
    va_end(ap);
    (void)putchar('\n');
    (void)fflush(stdout);
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

#define ALLREDUCE_TIMEOUT_MS 60000 /* bound on a collective's wait, as gloo's timeout */

/* ---- the model: deterministic in (state, step) -------------------------------- */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void model_step(struct trainer *t, uint64_t step)
{
    uint64_t carry = step * 0x9e3779b97f4a7c15ull;
    size_t n = t->step_words && t->step_words < t->words ? t->step_words : t->words;
    size_t i = n < t->words ? (size_t)(step * n % t->words) : 0; /* --step-kb: the window of this step */

    for (size_t k = 0; k < n; k++, i = i + 1 < t->words ? i + 1 : 0) {
        t->state[i] = mix(t->state[i] + carry + i);
        carry = t->state[i];
    }
}

static uint64_t model_digest(const struct trainer *t)
{
    const unsigned char *p = (const unsigned char *)t->state;
    uint64_t d = 0xcbf29ce484222325ull; /* FNV-1a over every byte */

    for (size_t i = 0; i < t->words * sizeof(uint64_t); i++)
        d = (d ^ p[i]) * 0x100000001b3ull;
    return d;
}

static uint64_t run_of(const struct trainer *t)
{
    struct preempt_status st;

    preempt_handler_get_status(t->h, &st);
    return st.run;
}

/* ---- callbacks ------------------------------------------------------------------- */

/* A save's first half: the meta blob. */
static int save_meta(struct trainer *t, uint64_t step)
{
    char meta[96];

    print_json("{\"event\":\"save-begin\",\"worker\":%u,\"step\":%" PRIu64 "}", t->worker, step);
    t->saving_step = step;
    if (t->custom_save)
        return 0; /* a save function of its own: nothing written here */
    (void)snprintf(meta, sizeof(meta), "{\"step\":%" PRIu64 ",\"words\":%zu}", step, t->words);
    return preempt_save_blob(t->h, "meta", meta, strlen(meta));
}

/* --raise-at-save-end: the N-th save ended (its shard's report went out). */
static void save_ended(struct trainer *t)
{
    if (t->raise_end && t->saves_seen == t->raise_end)
        (void)kill(getpid(), t->raise_sig); /* read through the signalfd once the loop runs again */
}

static void free_snapshot(void *data, void *ud)
{
    free(data);
    save_ended(ud); /* the persist is over */
}

/* Its second half: the model blob. With --two-phase, a copy of the state
 * handed over as a snapshot: the library persists it on its loop while
 * training changes the state. */
static int save_model(struct trainer *t)
{
    size_t len = t->words * sizeof(uint64_t);
    void *copy;
    int r;

    if (t->custom_save)
        return 0;
    if (!t->two_phase)
        return preempt_save_blob(t->h, "model", t->state, len);
    if (!(copy = malloc(len ? len : 1)))
        return -ENOMEM;
    memcpy(copy, t->state, len);
    if ((r = preempt_save_snapshot(t->h, "model", copy, len, free_snapshot, t)) < 0)
        free(copy); /* still the caller's on an error */
    return r;
}

static int on_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct trainer *t = ud;
    int r;

    (void)h;
    if (++t->saves_seen == t->raise_save && t->raise_save)
        t->raise_dyn = step + t->raise_after;
    r = save_meta(t, step);
    if (r < 0)
        return r;
    if (t->save_ms && !t->custom_save)
        sleep_ms(t->save_ms); /* slow storage: the checkpoint is half written here */
    r = save_model(t);
    if (r == 0 && !t->two_phase)
        save_ended(t); /* a two-phase save ends when its snapshot is released */
    return r;
}

static int on_restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct trainer *t = ud;
    void *data;
    size_t len;
    int r;

    if (t->fail_restore_at && step == t->fail_restore_at) {
        fprintf(stderr, "preempt-trainer: the checkpoint at step %" PRIu64 " is rejected (--fail-restore-at)\n", step);
        return -EBADMSG;
    }
    uint64_t t0 = mono_us();

    r = preempt_restore_blob(h, "model", &data, &len);
    t->restore_us += mono_us() - t0;
    if (r < 0)
        return r;
    if (len != t->words * sizeof(uint64_t)) {
        fprintf(stderr, "preempt-trainer: checkpoint at step %" PRIu64 " holds %zu bytes of state, not %zu "
                        "(another --state-kb?)\n", step, len, t->words * sizeof(uint64_t));
        free(data);
        return -EBADMSG;
    }
    memcpy(t->state, data, len);
    free(data);
    return 0;
}

static int on_poll(struct preempt_handler *h, uint64_t *deadline_in_ms, void *ud)
{
    struct trainer *t = ud;
    unsigned long long ms = 0;
    FILE *f;

    (void)h;
    f = fopen(t->poll_file, "r");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    if (fscanf(f, "%llu", &ms) == 1)
        *deadline_in_ms = ms;
    (void)fclose(f);
    return 1;
}

static void on_state(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *ud)
{
    struct trainer *t = ud;
    struct preempt_status st;

    preempt_handler_get_status(h, &st);
    if (from == PREEMPT_STATE_IDLE && to != PREEMPT_STATE_EXIT && st.notice_source)
        print_json("{\"event\":\"notice\",\"worker\":%u,\"source\":\"%s\",\"deadline_in_ms\":%" PRId64
                   ",\"run\":%" PRIu64 "}", t->worker, st.notice_source, st.deadline_in_ms, st.run);
    print_json("{\"event\":\"state\",\"worker\":%u,\"from\":\"%s\",\"to\":\"%s\",\"run\":%" PRIu64 "}",
               t->worker, preempt_state_to_string(from), preempt_state_to_string(to), st.run);
    if (st.saves > t->printed_saves) {
        t->printed_saves = st.saves;
        print_json("{\"event\":\"saved\",\"worker\":%u,\"step\":%" PRIu64 ",\"save_ms\":%" PRIu64
                   ",\"deadline_in_ms\":%" PRId64 "}", t->worker, t->saving_step, st.save_ms, st.deadline_in_ms);
    }
    if (to == PREEMPT_STATE_REJOINING && t->ar) { /* in place: the old incarnation's collective goes now, */
        allreduce_close(t->ar);                     /* before any replacement can reach its port */
        t->ar = NULL;
    }
    if (t->waiting && t->ev_resume) /* async: a wait may be over */
        event_active(t->ev_resume, EV_TIMEOUT, 1);
}

/* In place: a member of incarnation inc at step (preempt_handler_on_rebuild()):
 * the collective is made again (every worker of inc is past both barriers). */
static void on_rebuild(struct preempt_handler *h, uint64_t inc, uint64_t step, void *ud)
{
    struct trainer *t = ud;
    int r = 0;

    (void)h;
    if (t->ar_port && !t->ar)
        r = allreduce_open(t->worker, t->ar_workers, t->ar_port, ALLREDUCE_TIMEOUT_MS, &t->ar);
    print_json("{\"event\":\"rebuild\",\"worker\":%u,\"incarnation\":%" PRIu64 ",\"step\":%" PRIu64
               ",\"pid\":%ld,\"state_digest\":\"%016" PRIx64 "\",\"allreduce\":%d}", t->worker, inc, step, (long)getpid(),
               model_digest(t), r);
}

/* Writes s as a JSON string body (quotes and control characters escaped). */
static void json_escape(char *out, size_t size, const char *s)
{
    size_t o = 0;

    for (; s && *s && o + 7 < size; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\%c", ch);
        else if (ch < 0x20)
            o += (size_t)snprintf(out + o, size - o, "\\u%04x", ch);
        else
            out[o++] = (char)ch;
    }
    out[o] = '\0';
}

static void on_start_cb(struct preempt_handler *h, int status, void *ud)
{
    struct trainer *t = ud;

    (void)h;
    t->started = true;
    t->start_r = status;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;

    (void)fd;
    (void)what;
    t->ticks++;
    if (t->print_steps && !t->started)
        print_json("{\"event\":\"tick\",\"worker\":%u,\"ticks\":%" PRIu64 "}", t->worker, t->ticks);
}

static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct trainer *t = ud;
    static const char *const why[] = { "done", "preempted", "not-saved", "error" };
    char msg[600];
    struct preempt_status st;

    /* saved_step: the step the job committed, what a restart restores (not
     * this worker's last save: a final round the job aborted saved one) */
    preempt_handler_get_status(h, &st);
    t->exited = true;
    t->exit_code = code;
    json_escape(msg, sizeof(msg), preempt_handler_get_error_message(h));
    if (reason == PREEMPT_EXIT_ERROR)
        print_json("{\"event\":\"exit\",\"worker\":%u,\"reason\":\"error\",\"saved_step\":%" PRIu64
                   ",\"code\":%d,\"message\":\"%s\"}", t->worker, st.committed_step, code, msg);
    else if (reason != PREEMPT_EXIT_DONE)
        print_json("{\"event\":\"exit\",\"worker\":%u,\"reason\":\"%s\",\"saved_step\":%" PRIu64 ",\"code\":%d}",
                   t->worker, why[reason], st.committed_step, code);
    if (t->base)
        (void)event_base_loopbreak(t->base);
}

static void on_log(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    static const char *const names[] = { "debug", "info", "warning", "error" };
    const struct trainer *t = ud;

    (void)h;
    if (level < PREEMPT_LOG_WARNING && !t->verbose)
        return;
    fprintf(stderr, "preempt-trainer: %s: %s\n", names[level], msg);
}

/* ---- one step ------------------------------------------------------------------------ */

/* The time step takes (--step-ms, or --long-step's for that one step). */
static uint64_t step_time(const struct trainer *t, uint64_t step)
{
    return t->long_step && step == t->long_step ? t->long_step_ms : t->step_ms;
}

static int train_one(void *arg)
{
    struct trainer *t = arg;
    uint64_t step = run_of(t) + 1, ms = step_time(t, step);

    if (ms && !t->base)
        sleep_ms(ms); /* the step's work; --async waits on its loop instead */
    if (step == t->fail_at)
        return 3;
    if (t->ar_port) {
        uint64_t sum = 0, seed;
        int r = t->ar ? allreduce_sum(t->ar, mix(step * 0x10001u + t->worker + 1), &sum) : -ENOTCONN;

        if (r < 0) { /* a peer is gone (its sockets closed): the job can go on from its last commit */
            char why[96];

            (void)snprintf(why, sizeof(why), "the all-reduce of step %" PRIu64 " failed: %s", step, strerror(-r));
            fprintf(stderr, "preempt-trainer: %s\n", why);
            return preempt_request_restart(t->h, why) == 0 ? 0 : 4;
        }
        seed = step ^ (sum << 32); /* every worker's state depends on every worker's step */
        model_step(t, seed);
    } else {
        model_step(t, step);
    }
    for (unsigned i = 0; i < t->n_raise; i++)
        if (step == t->raise_at[i])
            (void)kill(getpid(), t->raise_sig); /* a real signal, read through the signalfd */
    if (t->print_steps)
        print_json("{\"event\":\"step\",\"worker\":%u,\"step\":%" PRIu64 "}", t->worker, step);
    if (t->raise_dyn && step == t->raise_dyn)
        (void)kill(getpid(), t->raise_sig);
    return 0;
}

/* ---- --async: the trainer's own loop drives the step hooks ----------------------------- */

static void async_schedule_step(struct trainer *t)
{
    uint64_t ms = step_time(t, run_of(t) + 1);
    struct timeval tv = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

    (void)evtimer_add(t->ev_step, &tv);
}

/* Saves. With --save-ms the save spans loop passes, as an asynchronous
 * checkpoint's writes do: the second half comes save_ms later from a timer
 * (async_save_rest), the loop and the handler's coordination running
 * meanwhile; true then. */
static bool async_save(struct trainer *t)
{
    uint64_t step;
    int r = preempt_save_begin(t->h, &step);

    if (r == 0)
        r = save_meta(t, step);
    if (r == 0 && t->save_ms && !t->custom_save) {
        struct timeval tv = { .tv_sec = (time_t)(t->save_ms / 1000),
                              .tv_usec = (suseconds_t)(t->save_ms % 1000) * 1000 };

        if (evtimer_add(t->ev_save, &tv) == 0)
            return true;
        r = -ENOMEM;
    }
    if (r == 0)
        r = save_model(t);
    (void)preempt_save_done(t->h, r);
    return false;
}

/* What the handler says to do now. */
static int action_now(const struct trainer *t)
{
    enum preempt_action a;
    int r = preempt_handler_get_action(t->h, &a);

    return r < 0 ? r : (int)a;
}

/* Acts on what the handler says until training goes on, waits or stops. */
static void async_act(struct trainer *t, int action)
{
    for (;;) {
        t->waiting = false;
        switch (action) {
        case PREEMPT_ACTION_CONTINUE:
            if (run_of(t) >= t->steps)
                (void)preempt_training_done(t->h); /* on_exit breaks the loop */
            else
                async_schedule_step(t);
            return;
        case PREEMPT_ACTION_SAVE:
        case PREEMPT_ACTION_SAVE_EXIT:
            if (async_save(t))
                return; /* async_save_rest goes on */
            break;
        case PREEMPT_ACTION_WAIT:
            t->waiting = true; /* on_state resumes */
            return;
        case PREEMPT_ACTION_EXIT:
        default:
            (void)event_base_loopbreak(t->base);
            return;
        }
        action = action_now(t);
    }
}

static void async_on_step(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;
    int r;

    (void)fd;
    (void)what;
    r = train_one(t);
    if (r != 0) { /* the handler propagates it and exits through on_exit */
        (void)preempt_fail(t->h, r, NULL);
        async_act(t, action_now(t));
        return;
    }
    {
        enum preempt_action a;

        r = preempt_step_end(t->h, &a);
        async_act(t, r < 0 ? r : (int)a);
    }
}

static void async_save_rest(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;

    (void)fd;
    (void)what;
    (void)preempt_save_done(t->h, save_model(t));
    async_act(t, action_now(t));
}

static void async_on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;

    (void)fd;
    (void)what;
    if (t->waiting)
        async_act(t, action_now(t));
}

static void on_closed(struct preempt_handler *h, int status, void *arg)
{
    struct trainer *t = arg;

    (void)h;
    if (status < 0)
        fprintf(stderr, "preempt-trainer: the last coordination writes: %s\n", preempt_strerror(status));
    t->closed = true;
}

/* --watch-peers: a peer's membership ended (a trainer would abort its
 * collectives here). */
static void on_peer_lost(struct preempt_handler *h, unsigned worker, const char *why, void *ud)
{
    struct trainer *t = ud;
    struct preempt_status st;

    preempt_handler_get_status(h, &st);
    print_json("{\"event\":\"peer-lost\",\"worker\":%u,\"peer\":%u,\"run\":%" PRIu64 ",\"why\":\"%s\"}",
               t->worker, worker, st.run, why);
}

static int run_async(struct trainer *t)
{
    t->ev_step = evtimer_new(t->base, async_on_step, t);
    t->ev_resume = event_new(t->base, -1, 0, async_on_resume, t);
    t->ev_save = evtimer_new(t->base, async_save_rest, t);
    if (!t->ev_step || !t->ev_resume || !t->ev_save)
        return -ENOMEM;
    async_act(t, action_now(t));
    (void)event_base_dispatch(t->base);
    return 0;
}

static int run_sync(struct trainer *t)
{
    while (run_of(t) < t->steps) {
        bool exited = false;
        int r = preempt_run(t->h, train_one, t, &exited);

        if (r < 0)
            return r;
        if (exited)
            return 0;
    }
    return preempt_training_done(t->h);
}

/* ---- options ----------------------------------------------------------------------------- */

#define NAME "preempt-trainer"

static int parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *ret)
{
    return tool_parse_u64(NAME, opt, s, 0, max, ret) ? -EINVAL : 0;
}

/* --long-step STEP:MS */
/* OPT A:B (what: "A:B", as the usage names them), each at most its max. */
static int parse_pair(const char *opt, const char *what, const char *arg, uint64_t *a, uint64_t max_a, uint64_t *b,
                      uint64_t max_b)
{
    char first[32];
    const char *colon = strchr(arg, ':');

    if (!colon || (size_t)(colon - arg) >= sizeof(first)) {
        (void)tool_usage_error(NAME, "%s: want %s, got '%s'", opt, what, arg);
        return -EINVAL;
    }
    memcpy(first, arg, (size_t)(colon - arg));
    first[colon - arg] = '\0';
    if (parse_u64(opt, first, max_a, a) < 0 || parse_u64(opt, colon + 1, max_b, b) < 0)
        return -EINVAL;
    return 0;
}

/* A thread of a runtime that starts before main() can block the signals
 * (running by the time the next one starts, as torch's are at import). */
static pthread_barrier_t early_started;

static void *idle_thread(void *arg)
{
    char name[16];

    (void)snprintf(name, sizeof(name), "early-%u", (unsigned)(uintptr_t)arg);
    (void)pthread_setname_np(pthread_self(), name);
    (void)pthread_barrier_wait(&early_started);
    for (;;)
        (void)pause();
    return NULL;
}

enum { OPT_CKPT = 256, OPT_STEPS, OPT_STEP_MS, OPT_STATE_KB, OPT_GRACE, OPT_EXIT_CODE, OPT_TRACE, OPT_KEEP,
       OPT_SIGNAL, OPT_SECOND, OPT_PLAN, OPT_SAVE_MS, OPT_CUSTOM, OPT_POLL_FILE, OPT_POLL_MS, OPT_RAISE, OPT_FAIL,
       OPT_ASYNC, OPT_VERBOSE, OPT_HELP, OPT_ETCD, OPT_JOB, OPT_LAUNCH, OPT_WORKER, OPT_WORKERS, OPT_USER, OPT_CA, OPT_CERT,
       OPT_KEY, OPT_TTL, OPT_JOIN, OPT_AGREE, OPT_ETCD_TIMEOUT, OPT_PLATFORM, OPT_META_URL, OPT_META_POLL, OPT_NO_ADVISORY, OPT_NO_APPROVE,
       OPT_KILL_DELAY, OPT_ALLREDUCE, OPT_START_OVER, OPT_FAIL_RESTORE, OPT_EARLY_THREADS,
       OPT_EVERY_STEPS, OPT_EVERY_MS, OPT_ASYNC_START, OPT_LONG_STEP, OPT_WATCH_PEERS, OPT_TWO_PHASE,
       OPT_RAISE_AFTER_SAVE, OPT_RAISE_END, OPT_STEP_KB, OPT_PRINT_STEPS, OPT_IN_PLACE };

/* A task of a Slurm job step: the worker is its SLURM_PROCID of
 * SLURM_NTASKS, unless --worker or --workers was given. */
static int slurm_task(struct preempt_config *cfg)
{
    const char *id = getenv("SLURM_PROCID"), *n = getenv("SLURM_NTASKS");
    uint64_t i, w;

    if (!id || !n)
        return 0;
    if (parse_u64("$SLURM_PROCID", id, PREEMPT_MAX_WORKERS - 1, &i) < 0 ||
        parse_u64("$SLURM_NTASKS", n, PREEMPT_MAX_WORKERS, &w) < 0 || w == 0)
        return -EINVAL;
    cfg->worker = (unsigned)i;
    cfg->workers = (unsigned)w;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "ckpt-dir", required_argument, NULL, OPT_CKPT }, { "steps", required_argument, NULL, OPT_STEPS },
        { "step-ms", required_argument, NULL, OPT_STEP_MS }, { "state-kb", required_argument, NULL, OPT_STATE_KB },
        { "grace-ms", required_argument, NULL, OPT_GRACE }, { "exit-code", required_argument, NULL, OPT_EXIT_CODE },
        { "trace", required_argument, NULL, OPT_TRACE }, { "max-to-keep", required_argument, NULL, OPT_KEEP },
        { "signal", required_argument, NULL, OPT_SIGNAL }, { "second", required_argument, NULL, OPT_SECOND },
        { "plan", required_argument, NULL, OPT_PLAN }, { "save-ms", required_argument, NULL, OPT_SAVE_MS },
        { "custom-save", no_argument, NULL, OPT_CUSTOM }, { "poll-file", required_argument, NULL, OPT_POLL_FILE },
        { "poll-ms", required_argument, NULL, OPT_POLL_MS }, { "raise-at", required_argument, NULL, OPT_RAISE },
        { "long-step", required_argument, NULL, OPT_LONG_STEP },
        { "raise-after-save", required_argument, NULL, OPT_RAISE_AFTER_SAVE },
        { "raise-at-save-end", required_argument, NULL, OPT_RAISE_END },
        { "step-kb", required_argument, NULL, OPT_STEP_KB }, { "fail-at", required_argument, NULL, OPT_FAIL }, { "async", no_argument, NULL, OPT_ASYNC },
        { "async-start", no_argument, NULL, OPT_ASYNC_START }, { "watch-peers", no_argument, NULL, OPT_WATCH_PEERS },
        { "verbose", no_argument, NULL, OPT_VERBOSE }, { "help", no_argument, NULL, OPT_HELP },
        { "print-steps", no_argument, NULL, OPT_PRINT_STEPS },
        { "version", no_argument, NULL, TOOL_OPT_VERSION },
        { "etcd", required_argument, NULL, OPT_ETCD }, { "job", required_argument, NULL, OPT_JOB },
        { "launch-id", required_argument, NULL, OPT_LAUNCH },
        { "worker", required_argument, NULL, OPT_WORKER }, { "workers", required_argument, NULL, OPT_WORKERS },
        { "etcd-user", required_argument, NULL, OPT_USER }, { "etcd-ca", required_argument, NULL, OPT_CA },
        { "etcd-cert", required_argument, NULL, OPT_CERT }, { "etcd-key", required_argument, NULL, OPT_KEY },
        { "lease-ttl", required_argument, NULL, OPT_TTL }, { "join-timeout-ms", required_argument, NULL, OPT_JOIN },
        { "agree-timeout-ms", required_argument, NULL, OPT_AGREE },
        { "etcd-timeout-ms", required_argument, NULL, OPT_ETCD_TIMEOUT },
        { "platform", required_argument, NULL, OPT_PLATFORM }, { "metadata-url", required_argument, NULL, OPT_META_URL },
        { "metadata-poll-ms", required_argument, NULL, OPT_META_POLL },
        { "no-advisory", no_argument, NULL, OPT_NO_ADVISORY }, { "no-azure-approve", no_argument, NULL, OPT_NO_APPROVE },
        { "kill-delay-ms", required_argument, NULL, OPT_KILL_DELAY },
        { "allreduce", required_argument, NULL, OPT_ALLREDUCE },
        { "start-over", no_argument, NULL, OPT_START_OVER },
        { "stay-in-place", no_argument, NULL, OPT_IN_PLACE },
        { "fail-restore-at", required_argument, NULL, OPT_FAIL_RESTORE },
        { "early-threads", required_argument, NULL, OPT_EARLY_THREADS },
        { "save-every-steps", required_argument, NULL, OPT_EVERY_STEPS },
        { "save-every-ms", required_argument, NULL, OPT_EVERY_MS },
        { "two-phase", no_argument, NULL, OPT_TWO_PHASE },
        { NULL, 0, NULL, 0 },
    };
    struct trainer t = { .raise_sig = 0 };
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = on_save, .restore = on_restore, .on_state = on_state,
                                    .on_exit = on_exit_cb, .log = on_log, .on_start = on_start_cb };
    uint64_t v, state_kb = 64, step_kb = 0, n_signals = 0, allreduce_port = 0, early_threads = 0;
    char shard_dir[4096];
    bool have_steps = false, async = false, have_worker = false, watch_peers = false;
    uint64_t t_main = mono_us(), t_new;
    int c, r, code;

    /* As applications do (Python's runtime, many C programs): the library
     * must not depend on the C locale (tests/metadata.sh runs this under
     * de_DE). */
    (void)setlocale(LC_ALL, "");
    preempt_config_init(&cfg);
    cfg.poll_interval_ms = 100;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        r = 0;
        switch (c) {
        case OPT_CKPT: cfg.ckpt_dir = optarg; break;
        case OPT_STEPS: r = parse_u64("--steps", optarg, UINT32_MAX, &t.steps); have_steps = true; break;
        case OPT_STEP_MS: r = parse_u64("--step-ms", optarg, 3600000, &t.step_ms); break;
        case OPT_STATE_KB: r = parse_u64("--state-kb", optarg, 1048576, &state_kb); break;
        case OPT_GRACE: r = parse_u64("--grace-ms", optarg, UINT32_MAX, &cfg.grace_ms); break;
        case OPT_EXIT_CODE:
            r = parse_u64("--exit-code", optarg, 255, &v);
            cfg.exit_code = (int)v;
            break;
        case OPT_TRACE: cfg.trace_path = optarg; break;
        case OPT_KEEP:
            r = parse_u64("--max-to-keep", optarg, UINT_MAX, &v);
            cfg.max_to_keep = v ? (unsigned)v : (unsigned)PREEMPT_UNLIMITED;
            break;
        case OPT_SIGNAL:
            if (n_signals == PREEMPT_MAX_SIGNALS - 1 || (r = tool_signal(optarg)) < 0) {
                r = -EINVAL;
                (void)tool_usage_error(NAME, "--signal: '%s' is not a known signal or one too many", optarg);
                break;
            }
            cfg.signals[n_signals++] = r;
            cfg.signals[n_signals] = 0;
            r = 0;
            break;
        case OPT_SECOND:
            if (strcmp(optarg, "ignore") == 0)
                cfg.second = PREEMPT_SECOND_IGNORE;
            else if (strcmp(optarg, "exit") == 0)
                cfg.second = PREEMPT_SECOND_EXIT;
            else
                r = -EINVAL, tool_usage_error(NAME, "--second: ignore or exit, not '%s'", optarg);
            break;
        case OPT_PLAN:
            if (strcmp(optarg, "measured") == 0)
                cfg.plan = PREEMPT_PLAN_MEASURED;
            else if (strcmp(optarg, "tf") == 0)
                cfg.plan = PREEMPT_PLAN_TF;
            else
                r = -EINVAL, tool_usage_error(NAME, "--plan: measured or tf, not '%s'", optarg);
            break;
        case OPT_SAVE_MS: r = parse_u64("--save-ms", optarg, 3600000, &t.save_ms); break;
        case OPT_CUSTOM: t.custom_save = true; break;
        case OPT_POLL_FILE: t.poll_file = optarg; cb.poll = on_poll; break;
        case OPT_POLL_MS: r = parse_u64("--poll-ms", optarg, 86400000, &cfg.poll_interval_ms); break;
        case OPT_RAISE:
            if (t.n_raise == sizeof(t.raise_at) / sizeof(t.raise_at[0])) {
                r = -EINVAL;
                (void)tool_usage_error(NAME, "--raise-at: at most 4 times");
                break;
            }
            r = parse_u64("--raise-at", optarg, UINT32_MAX, &t.raise_at[t.n_raise++]);
            break;
        case OPT_LONG_STEP:
            r = parse_pair("--long-step", "STEP:MS", optarg, &t.long_step, UINT32_MAX, &t.long_step_ms, 3600000);
            break;
        case OPT_RAISE_AFTER_SAVE:
            r = parse_pair("--raise-after-save", "N:K", optarg, &t.raise_save, UINT32_MAX, &t.raise_after, UINT32_MAX);
            break;
        case OPT_RAISE_END:
            r = parse_u64("--raise-at-save-end", optarg, UINT32_MAX, &t.raise_end);
            break;
        case OPT_STEP_KB: r = parse_u64("--step-kb", optarg, 1048576, &step_kb); break;
        case OPT_FAIL: r = parse_u64("--fail-at", optarg, UINT32_MAX, &t.fail_at); break;
        case OPT_FAIL_RESTORE: r = parse_u64("--fail-restore-at", optarg, UINT32_MAX, &t.fail_restore_at); break;
        case OPT_ASYNC: async = true; break;
        case OPT_ASYNC_START: cfg.async_start = true; break;
        case OPT_WATCH_PEERS: watch_peers = true; break;
        case OPT_VERBOSE: t.verbose = true; break;
        case OPT_PRINT_STEPS: t.print_steps = true; break;
        case OPT_HELP: fputs(usage, stdout); return 0;
        case TOOL_OPT_VERSION: return tool_version(NAME);
        case OPT_ETCD: cfg.etcd_endpoints = optarg; break;
        case OPT_JOB: cfg.job = optarg; break;
        case OPT_LAUNCH: cfg.launch_id = optarg; break;
        case OPT_WORKER:
            r = parse_u64("--worker", optarg, PREEMPT_MAX_WORKERS - 1, &v);
            cfg.worker = (unsigned)v;
            have_worker = true;
            break;
        case OPT_WORKERS:
            r = parse_u64("--workers", optarg, PREEMPT_MAX_WORKERS, &v);
            cfg.workers = (unsigned)v;
            have_worker = true;
            break;
        case OPT_USER:
            cfg.etcd_user = optarg;
            cfg.etcd_password = getenv("PREEMPT_ETCD_PASSWORD");
            if (!cfg.etcd_password) {
                r = -EINVAL;
                (void)tool_usage_error(NAME, "--etcd-user needs PREEMPT_ETCD_PASSWORD in the environment");
            }
            break;
        case OPT_CA: cfg.etcd_ca = optarg; break;
        case OPT_CERT: cfg.etcd_cert = optarg; break;
        case OPT_KEY: cfg.etcd_key = optarg; break;
        case OPT_TTL:
            r = parse_u64("--lease-ttl", optarg, 3600, &v);
            cfg.lease_ttl_s = (unsigned)v;
            break;
        case OPT_JOIN: r = parse_u64("--join-timeout-ms", optarg, 86400000, &cfg.join_timeout_ms); break;
        case OPT_AGREE: r = parse_u64("--agree-timeout-ms", optarg, 86400000, &cfg.agree_timeout_ms); break;
        case OPT_ETCD_TIMEOUT: r = parse_u64("--etcd-timeout-ms", optarg, 86400000, &cfg.etcd_timeout_ms); break;
        case OPT_PLATFORM:
            if ((r = preempt_platform_from_string(optarg, &cfg.platform)) < 0)
                (void)tool_usage_error(NAME, "--platform: none, gce, gce-gpu, aws, azure or auto, not '%s'", optarg);
            break;
        case OPT_META_URL: cfg.metadata_url = optarg; break;
        case OPT_META_POLL: r = parse_u64("--metadata-poll-ms", optarg, 86400000, &cfg.metadata_poll_ms); break;
        case OPT_NO_ADVISORY: cfg.advisory_checkpoint = false; break;
        case OPT_NO_APPROVE: cfg.azure_approve = false; break;
        case OPT_KILL_DELAY: r = parse_u64("--kill-delay-ms", optarg, 86400000, &cfg.kill_delay_ms); break;
        case OPT_ALLREDUCE: r = parse_u64("--allreduce", optarg, 65535, &allreduce_port); break;
        case OPT_START_OVER: cfg.start_over = true; break;
        case OPT_IN_PLACE: cfg.stay_in_place = true; break;
        case OPT_EARLY_THREADS: r = parse_u64("--early-threads", optarg, 16, &early_threads); break;
        case OPT_EVERY_STEPS: r = parse_u64("--save-every-steps", optarg, UINT32_MAX, &cfg.save_every_steps); break;
        case OPT_EVERY_MS: r = parse_u64("--save-every-ms", optarg, 86400000, &cfg.save_every_ms); break;
        case OPT_TWO_PHASE: t.two_phase = true; break;
        default:
            return tool_option_error(NAME, c, argv);
        }
        if (r < 0)
            return TOOL_USAGE;
    }
    if (optind < argc)
        return tool_usage_error(NAME, "unexpected argument '%s'", argv[optind]);
    if (cfg.async_start && !async)
        return tool_usage_error(NAME, "--async-start needs --async");
    if (!have_steps || (!cfg.ckpt_dir && !t.custom_save))
        return tool_usage_error(NAME, "%s is required", !have_steps ? "--steps" : "--ckpt-dir");
    if (t.custom_save) {
        cfg.ckpt_dir = NULL; /* TF's save_fn: the handler keeps no files */
        cb.restore = NULL;
    }
    if (cfg.etcd_endpoints && !have_worker && (r = slurm_task(&cfg)) < 0)
        return TOOL_USAGE;
    if (cfg.etcd_endpoints) {
        if (!cfg.job)
            cfg.job = "job";
        t.worker = cfg.worker;
        if (cfg.ckpt_dir) { /* each worker's shard in a directory of its own */
            if (mkdir(cfg.ckpt_dir, 0700) < 0 && errno != EEXIST) {
                fprintf(stderr, "preempt-trainer: cannot create %s: %s\n", cfg.ckpt_dir, strerror(errno));
                return 2;
            }
            (void)snprintf(shard_dir, sizeof(shard_dir), "%s/worker-%u", cfg.ckpt_dir, cfg.worker);
            cfg.ckpt_dir = shard_dir;
        }
    } else if (cfg.job || cfg.launch_id || cfg.worker || cfg.workers != 1 || cfg.etcd_user) {
        return tool_usage_error(NAME, "--job, --launch-id, --worker, --workers and --etcd-user need --etcd");
    }
    for (uint64_t i = 0; i < early_threads; i++) {
        pthread_t th;

        if ((i == 0 && pthread_barrier_init(&early_started, NULL, 2) != 0) ||
            pthread_create(&th, NULL, idle_thread, (void *)(uintptr_t)i) != 0 || pthread_detach(th) != 0) {
            fprintf(stderr, "preempt-trainer: cannot start a thread\n");
            return 2;
        }
        (void)pthread_barrier_wait(&early_started);
    }
    t.raise_sig = cfg.signals[0] ? cfg.signals[0] : SIGTERM;
    r = preempt_block_signals(&cfg);
    if (r < 0) {
        fprintf(stderr, "preempt-trainer: cannot block the notice signals: %s\n", preempt_strerror(r));
        return 2;
    }
    t.words = (size_t)state_kb * 1024 / sizeof(uint64_t);
    t.step_words = (size_t)step_kb * 1024 / sizeof(uint64_t);
    t.state = calloc(t.words ? t.words : 1, sizeof(uint64_t));
    if (!t.state) {
        fprintf(stderr, "preempt-trainer: out of memory for %" PRIu64 " KiB of state\n", state_kb);
        return 2;
    }
    if (async) { /* the loop ticks while the handler starts: it runs only when start-up is on it */
        struct timeval tick = { .tv_sec = 0, .tv_usec = 50000 };

        t.base = event_base_new();
        t.ev_tick = t.base ? event_new(t.base, -1, EV_PERSIST, on_tick, &t) : NULL;
        if (!t.ev_tick || event_add(t.ev_tick, &tick) < 0) {
            fprintf(stderr, "preempt-trainer: cannot create an event base\n");
            r = -ENOMEM;
            goto cannot_start;
        }
    }
    t_new = mono_us();
    r = preempt_handler_new(t.base, &cfg, &cb, &t, &t.h);
    if (r == 0 && cfg.async_start) { /* start-up runs on this loop; on_start ends it */
        while (!t.started && event_base_loop(t.base, EVLOOP_ONCE) >= 0)
            ;
        r = t.started ? t.start_r : -EIO;
        if (r < 0)
            t.h = preempt_handler_free(t.h);
    }
    if (t.ev_tick)
        event_free(t.ev_tick);
    t.ev_tick = NULL;
    if (r < 0) {
cannot_start:
        fprintf(stderr, "preempt-trainer: cannot start the handler: %s\n", preempt_strerror(r));
        if (t.base)
            event_base_free(t.base);
        free(t.state);
        return r == -ENOTRECOVERABLE ? 5 : 2;
    }
    {
        struct preempt_status st;
        uint64_t now = mono_us();

        preempt_handler_get_status(t.h, &st);
        /* and the start-up's parts (ms, from main()): before the handler's
         * creation (the arguments, the model's memory), the creation (a
         * job's joining and barriers, the restore), the restore callback */
        print_json("{\"event\":\"start\",\"worker\":%u,\"restored_step\":%" PRIu64 ",\"restore_fallbacks\":%u"
                   ",\"steps\":%" PRIu64
                   ",\"mode\":\"%s\",\"incarnation\":%" PRIu64 ",\"platform\":\"%s\",\"grace_ms\":%" PRIu64
                   ",\"exit_code\":%d,\"kill_delay_ms\":%" PRIu64 ",\"start_ticks\":%" PRIu64
                   ",\"main_ms\":%.1f,\"handler_ms\":%.1f,\"restore_ms\":%.1f}", t.worker,
                   st.restored_step, st.restore_fallbacks, t.steps,
                   async ? "async" : "sync", st.incarnation, preempt_platform_to_string(st.platform), st.grace_ms,
                   st.exit_code, st.kill_delay_ms, t.ticks, (double)(t_new - t_main) / 1e3,
                   (double)(now - t_new) / 1e3, (double)t.restore_us / 1e3);
    }
    if (watch_peers && (r = preempt_handler_on_peer_lost(t.h, on_peer_lost, &t)) < 0)
        fprintf(stderr, "preempt-trainer: --watch-peers: %s\n", preempt_strerror(r));
    if ((r = preempt_handler_on_rebuild(t.h, on_rebuild, &t)) < 0)
        fprintf(stderr, "preempt-trainer: on_rebuild: %s\n", preempt_strerror(r));
    if (allreduce_port) {
        t.ar_port = (unsigned)allreduce_port;
        t.ar_workers = cfg.etcd_endpoints ? cfg.workers : 1;
        r = allreduce_open(t.worker, t.ar_workers, t.ar_port, ALLREDUCE_TIMEOUT_MS, &t.ar);
        if (r < 0) {
            fprintf(stderr, "preempt-trainer: --allreduce: cannot connect the workers through port %" PRIu64 ": %s\n",
                    allreduce_port, strerror(-r));
            t.h = preempt_handler_free(t.h);
            if (t.base)
                event_base_free(t.base);
            free(t.state);
            return 2;
        }
    }
    r = async ? run_async(&t) : run_sync(&t);
    if (r < 0) {
        fprintf(stderr, "preempt-trainer: %s\n", preempt_strerror(r));
        t.exit_code = 2;
    }
    code = t.exited ? t.exit_code : r < 0 ? 2 : 0;
    if (t.exited && code == 0)
        print_json("{\"event\":\"done\",\"worker\":%u,\"step\":%" PRIu64 ",\"state_digest\":\"%016" PRIx64 "\"}",
                   t.worker, run_of(&t), model_digest(&t));
    if (async && t.h) {
        /* the handler's last writes (an error for the peers, a report, the
         * departure) go out on this loop, which keeps running until they
         * did; the trainer's own events run no more (they use the handler) */
        if (t.ev_step)
            (void)event_del(t.ev_step);
        if (t.ev_resume)
            (void)event_del(t.ev_resume);
        if (t.ev_save)
            (void)event_del(t.ev_save);
        if (preempt_handler_close(t.h, on_closed, &t) == 0) {
            while (!t.closed && event_base_loop(t.base, EVLOOP_ONCE) == 0)
                ;
        } else {
            (void)preempt_handler_free(t.h);
        }
        t.h = NULL;
    }
    t.h = preempt_handler_free(t.h);
    allreduce_close(t.ar);
    if (t.ev_step)
        event_free(t.ev_step);
    if (t.ev_resume)
        event_free(t.ev_resume);
    if (t.ev_save)
        event_free(t.ev_save);
    if (t.base)
        event_base_free(t.base);
    free(t.state);
    return code;
}
