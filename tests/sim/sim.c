/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/sim/sim.c: the deterministic simulation of a job (see sim.h).
 *
 *   preempt-sim [--seeds N] [--first S] [--seed S] [--max-workers N] [--trace-dir DIR] [-v]
 *
 * Each seed draws a job (1-64 workers, sync or async trainers, step and
 * save times, grace, plan, lease TTL), a script of notices (signals, cloud
 * notices with deadlines, operator notices, advisory ones, withdrawals,
 * earlier deadlines) and faults (worker crashes, also mid-save; etcd down
 * for a while; watch streams that break and resume or re-read; delivery
 * delays that differ per worker, so that replies and watch events of
 * different workers interleave in any order; workers that stall past their
 * lease; slow and failing saves), then runs up to three incarnations of
 * the job: every worker starts up (the real join, pending shards resolved,
 * the barrier, the restore barrier), trains, exits; a restart follows.
 *
 * Checked after every incarnation (a violation prints the seed and writes
 * each worker's machine trace, which preempt-replay reproduces):
 *   - no event was illegal in its state, none was dropped;
 *   - every save of a round is at a step the round's agreed record named (its
 *     proposal or a raise), at run == step;
 *   - no worker exits "saved" unless every worker holds its shard of the
 *     committed step (decided, or pending);
 *   - no worker outlives the job's deadline by more than the bound
 *     (docs/development.md, base_bound_us below); the cloud kills it there;
 *   - every worker ends (exit, crash or kill) within the time limit.
 * And after the restart's start-up (check_restart):
 *   - every start-up succeeds, in one incarnation, told one restore step;
 *   - every "saved" exit's step is held by every worker, decided;
 *   - the restore step is the newest step every worker holds, no older than
 *     any "saved" exit, and what each worker's exit said. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/coord-internal.h"
#include "records/keys-internal.h"
#include "job/machine-internal.h"
#include "records/records-internal.h"
#include "job/start-internal.h"
#include "sim.h"
#include "trace/trace-internal.h"
#include "handler/watcher-internal.h"
#include "job/worker-internal.h"

#define SIM_JOBP "/preempt/sim/" /* the job "sim" (preempt_coord_prefix_) */

#define MAX_W 64        /* the random jobs' largest */
#define SCALE_MAX_W 10000 /* --scale's */
#define EPOCH_MS 1790000000000ull /* the wall clock at virtual time 0 */
#define LIMIT_MS (30u * 60u * 1000u) /* an incarnation must end within this */

/* ---- randomness (splitmix64) --------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The observer's own stream (the watcher's delays and stream breaks), so
 * that watching changes none of the job's draws: every seed runs the job
 * as it did before the observer came. */
static uint64_t obs_rng_state;

static uint64_t obs_between(uint64_t lo, uint64_t hi) /* inclusive */
{
    uint64_t z = (obs_rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return lo + (z ^ (z >> 31)) % (hi - lo + 1);
}

static uint64_t between(uint64_t lo, uint64_t hi) /* inclusive */
{
    return lo + rnd() % (hi - lo + 1);
}

static bool chance(unsigned percent)
{
    return rnd() % 100 < percent;
}

/* ---- the world ------------------------------------------------------------------------- */

enum item_kind { IT_REPLY, IT_WATCH, IT_RESET, IT_KEEP, IT_MTIMER, IT_NOTICE, IT_WITHDRAW };

struct req {
    int w;
    uint32_t io_gen;            /* the worker's io (start-up phase or coordinator) that asked */
    bool slotted;               /* its turn in etcd's queue is taken (a service time) */
    struct preempt_etcd_req *q; /* a copy */
    uint64_t give_up_us;
    preempt_etcd_reply_cb cb;
    void *arg;
};

struct item {
    enum item_kind kind;
    struct req *req;     /* IT_REPLY */
    int status;
    struct preempt_etcd_reply reply;
    const char *msg;
    int64_t rev;         /* IT_WATCH: deliver up to here */
    uint32_t gen;        /* IT_KEEP, IT_MTIMER */
    uint32_t io_gen;     /* IT_WATCH, IT_RESET: the io that watches */
    struct preempt_etcd_kv *kvs; /* IT_RESET */
    size_t n_kvs;
    enum preempt_source src; /* IT_NOTICE, IT_WITHDRAW */
    uint64_t deadline_in_ms;
    bool advisory;
    uint64_t kill_us;    /* IT_NOTICE: when the cloud kills (0: never; withdrawn first) */
    struct item *next;
};

enum sev_kind { E_STEP, E_SAVE, E_APPLY, E_ARRIVE, E_CRASH, E_PAUSE_END, E_PAUSE, E_ETCD_DOWN, E_ETCD_UP,
                E_WBREAK, E_WUP, E_OPNOTICE, E_KILL, E_FLUSHED, E_SNAPSHOT };

struct sev {
    uint64_t t, seq;
    enum sev_kind kind;
    int w;
    uint32_t gen;
    void *p;
    int64_t a;
    int src;              /* E_KILL of a worker's notice: its source (else -1) */
    uint32_t src_gen;     /* and the source's withdrawal count then */
};

#define MAX_ATTEMPTS 32 /* joins of one start-up: each fall-back is one */

struct worker {
    int id;
    bool async, alive, exited, crashed, paused, stepping, saving, save_fails;
    bool persisting;      /* --two-phase: its checkpoint persists while it trains (E_SAVE ends it) */
    uint64_t persist_us;  /* how long that persist takes */
    uint64_t persist_end_us; /* when it ends (E_SAVE) */
    uint64_t exit_us;
    uint64_t countdown_us; /* when it entered the countdown (0: not in it) */
    uint32_t step_gen, save_gen, keep_gen, mtimer_gen;
    bool mtimer_armed;
    uint64_t step_base_us, save_base_us, step_t0_us, max_save_ms, total_steps;
    enum preempt_source last_src; /* of its last notice: the source its notice record names */
    /* The machine, the coordinator and the handler's rules around them
     * (lib/job/worker.c, the handler's own) */
    struct preempt_worker wk;
    /* Its io: one at a time, a start-up phase's, then the coordinator's
     * (lib/job/coord.c runs both over struct preempt_coord_io) */
    uint32_t io_gen;      /* counts the ios: an answer to an earlier one is nobody's */
    bool io_dead;
    unsigned pending;     /* the current io's requests not answered */
    char wkey[PREEMPT_KEY_MAX], wend[PREEMPT_KEY_MAX]; /* what the io watches: [wkey, wend), or under wkey */
    /* start-up, the real one (lib/job/coord.c): join, the restore, the restore barrier */
    struct preempt_coord_cfg cc;
    struct preempt_coord_phase *phase;
    struct preempt_coord_join join;
    struct preempt_coord_pending cpend[4];
    int restore_outcome;
    char verdict[256], smsg[600];
    struct preempt_start st; /* start-up's machine and its driver (lib/job/start-internal.h), the handler's */
    unsigned attempt;     /* joins of this start-up (a fall-back joins again) */
    bool started;         /* start-up ended: trains, or failed (its machine in failed) */
    bool none_left;       /* it failed as every step the workers had in common was set aside */
    void (*keep_tick)(void *arg);
    void *keep_arg;
    struct preempt_etcd_watch_ops wops;
    void *warg;
    bool watching, wup;
    int64_t wnext;        /* the next revision to deliver */
    uint64_t wlast_us;    /* deliveries to this worker stay in order */
    uint64_t delay_us;    /* this worker's one-way network delay (base) */
    struct item *inbox, *inbox_tail;
    uint32_t withdrawals[PREEMPT_SOURCE__COUNT]; /* a source's withdrawal cancels all it announced */
    uint64_t last_commit;
    bool have_commit;
    uint64_t *shards;     /* steps this worker holds a shard of, decided by the job */
    size_t n_shards, cap_shards;
    struct pend { uint64_t step; char key[96]; } pend[4]; /* saved, not decided yet */
    unsigned n_pend;
    bool undecided;       /* exited before the decision it proposed arrived */
    bool knows;           /* --scale: has learned the save step */
    bool flushing;        /* exited; its last writes' replies are still read (at most 2 s) */
    char *trace;          /* the machine's records, text form */
    size_t trace_len, trace_cap;
    struct preempt_trace_rec last_rec;
    bool have_rec;
    struct preempt_job_trace jt; /* its job lines (lib/trace/trace-job.c, the handler's) */
    bool coord_traced; /* its trace has the coordinator's start (as the handler's trace opens after it) */
    /* --in-place: a survivor that stays in place. Its process waits in the
     * next incarnation's start-up, which the simulation begins with the
     * restarted workers' (at the incarnation's end); its machine, its
     * trace and its start-up phases' numbering live on. */
    bool rejoining;
    uint64_t rejoin_step; /* the step its state holds */
    unsigned in_place;    /* times it stayed in place */
};

/* How a worker's process ended, kept for the restart's checks. */
struct ending {
    bool exited, undecided, have_commit;
    enum preempt_exit reason;
    uint64_t last_commit;
    bool in_place;        /* it stayed in place, its state at rejoin_step */
    uint64_t rejoin_step;
};

/* Why a final round aborted without a fault may have been (final_why()). */
enum final_why { FINAL_RAISED, FINAL_LATER_NOTICE, FINAL_EARLIER_DEADLINE, FINAL_OTHER, FINAL__COUNT };

struct world {
    uint64_t seed, now_us, seq;
    bool trace_job;       /* --trace-dir: the traces hold the job's lines (view inputs, claim answers) too */
    struct sev *heap;
    size_t n_heap, cap_heap;
    struct sim_etcd *etcd;
    bool etcd_down;
    unsigned n;
    bool local;           /* one worker without etcd (the local coordinator) */
    struct worker *w;     /* n of them, and in a job the observer's io at w[n] */
    /* A job's observer: the real watcher (lib/handler/watcher.c, as preemptctl
     * watch runs it) over its own io, from the first start-up to the end,
     * across etcd's faults and broken streams of its own. */
    struct preempt_watcher *watcher;
    uint64_t obs_checked; /* incarnations whose notice it was checked to report */
    struct preempt_config_facts cfg;
    unsigned ttl_s;
    uint64_t give_up_ms, incarnation, restored;
    bool have_restored;
    unsigned started;     /* workers whose start-up ended */
    struct ending *ended; /* n: the last incarnation's */
    bool have_ended;
    /* What start-up told the workers, per join of the start-up (a fall-back
     * joins again): the incarnation, the step to restore, the restore
     * record's outcome. Every worker must be told the same. */
    struct told {
        bool inc, restore, outcome, restore_have;
        uint64_t incarnation, restore_step;
        int outcome_v;
    } told[MAX_ATTEMPTS];
    bool restore_have;    /* the last join's: what the workers restore */
    uint64_t restore_step;
    bool restore_faults;  /* --restore-faults: some shards are unusable at the restore, some restores fail */
    uint64_t aside[MAX_ATTEMPTS]; /* steps this start-up set aside */
    unsigned n_aside, n_start_failed;
    uint64_t fell_back, start_fails, none_left; /* figures: steps set aside, start-ups failed everywhere (of
                                                   which with no step left) */
    uint64_t kill_us;     /* the job's deadline (0: none): the cloud kills at kill_us + bound */
    uint64_t bound_us, base_bound_us;
    char violation[512];
    bool verbose;
    bool sabotage;        /* a planted bug: worker 0 files its shards one step late (--sabotage) */
    bool two_phase;       /* saves are two-phase (--two-phase): a snapshot, then a persist while training goes on */
    bool in_place;        /* --in-place: survivors stay in place (the config's stay_in_place) */
    uint64_t in_place_n, in_place_restored; /* survivors that rejoined in place; of them, restored in place */
    bool crash_completer; /* --crash-completer: the worker whose shard report completes a round crashes then */
    bool cc_crashed;      /* that crash happened (once per seed) */
    struct preempt_key cc_round; /* the round it completed: inc, ep, round */
    unsigned cc_outcome;  /* that round's decision: 0 none, 1 committed, 2 aborted */
    uint64_t cc_crash_us, cc_decided_us; /* when it crashed; when the round's decision landed (0: not yet) */
    /* figures */
    uint64_t max_late_us;
    uint64_t finals_committed, finals_aborted; /* the grace periods' final rounds, by their decisions */
    uint64_t proto_errors;                     /* protocol errors published (-EPROTO): a worker past the step */
    uint64_t superseded, let_finish;           /* a notice while a checkpoint persisted: raised past it, or not */
    bool nar_done;                             /* the signal at a withdrawn round's moment came (once per seed) */
    uint64_t nar, countdowns0;                 /* those signals; countdowns entered without a grace period */
    uint64_t stops_at, stops_past;             /* workers that trained on past the last checkpoint to its commit:
                                                  stopped at the job's stop step, or were past it at the commit */
    uint64_t again;                            /* workers whose persisting checkpoint a notice met, committed with
                                                  room for another round: they counted down to the final round */
    uint64_t finals_aborted_clean;             /* of those aborted, planned as measured (not TF's rule), in
                                                  runs without an injected fault */
    uint64_t finals_aborted_why[FINAL__COUNT]; /* of those, by enum final_why */
    bool faulted; /* a fault was injected: a crash, etcd down, a broken watch, a stall, a failing or
                     slow save, a second notice that ends a worker */
    /* --scale: one clean preemption of a large job, measured */
    bool scale;
    uint64_t svc_us;      /* etcd's service time per request (0: none) */
    uint64_t etcd_free_us; /* etcd is busy until then */
    uint64_t t_notice_us; /* the notice reached worker 0 (0: not yet) */
    bool measuring;       /* from then until the incarnation's end (not the restart's start-up) */
    uint64_t reqs, keepalives, events, t_last_knows_us;
    unsigned knows;       /* workers that know the save step */
};

static struct world *W;

static uint64_t now_ms(void)
{
    return W->now_us / 1000u + 1u;
}

static void violate(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violate(const char *fmt, ...)
{
    va_list ap;

    if (W->violation[0])
        return;
    va_start(ap, fmt);
    (void)vsnprintf(W->violation, sizeof(W->violation), fmt, ap);
    va_end(ap);
}

/* ---- the event heap --------------------------------------------------------------------- */

static bool before(const struct sev *a, const struct sev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sev ev)
{
    size_t i;

    if (W->n_heap == W->cap_heap) {
        W->cap_heap = W->cap_heap ? W->cap_heap * 2 : 256;
        W->heap = realloc(W->heap, W->cap_heap * sizeof(*W->heap));
        if (!W->heap)
            abort();
    }
    i = W->n_heap++;
    ev.seq = W->seq++;
    W->heap[i] = ev;
    while (i > 0 && before(&W->heap[i], &W->heap[(i - 1) / 2])) {
        struct sev tmp = W->heap[i];

        W->heap[i] = W->heap[(i - 1) / 2];
        W->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static void schedule(uint64_t t, enum sev_kind kind, int w, uint32_t gen, void *p, int64_t a)
{
    push((struct sev){ .t = t, .kind = kind, .w = w, .gen = gen, .p = p, .a = a, .src = -1 });
}

static struct sev pop(void)
{
    struct sev top = W->heap[0];
    size_t i = 0;

    W->heap[0] = W->heap[--W->n_heap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < W->n_heap && before(&W->heap[l], &W->heap[m]))
            m = l;
        if (r < W->n_heap && before(&W->heap[r], &W->heap[m]))
            m = r;
        if (m == i)
            break;
        struct sev tmp = W->heap[i];
        W->heap[i] = W->heap[m];
        W->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* A one-way network delay to or from worker w: its base, sometimes much more. */
static bool is_observer(const struct worker *w)
{
    return W->watcher && w == &W->w[W->n];
}

static uint64_t net_us(const struct worker *w)
{
    uint64_t d;

    if (w == &W->w[W->n]) /* the observer (also while its watcher is made) */
        return w->delay_us + obs_between(0, w->delay_us);
    d = w->delay_us + between(0, w->delay_us);

    return chance(3) ? d + between(10000, 400000) : d;
}

/* ---- items: what reaches a worker's loop -------------------------------------------------- */

static void req_free(struct req *q)
{
    if (q)
        preempt_etcd_req_free_(q->q);
    free(q);
}

static void item_free(struct item *it)
{
    if (it->kind == IT_REPLY) {
        preempt_etcd_reply_clear_(&it->reply);
        req_free(it->req);
    }
    if (it->kind == IT_RESET)
        preempt_etcd_kvs_free_(it->kvs, it->n_kvs);
    free(it);
}

static struct item *item_new(enum item_kind kind)
{
    struct item *it = calloc(1, sizeof(*it));

    if (!it)
        abort();
    it->kind = kind;
    return it;
}

static void arrive(struct worker *w, struct item *it, uint64_t at_us)
{
    schedule(at_us, E_ARRIVE, w->id, 0, it, 0);
}

/* ---- a worker's io (lib/job/coord.c's struct preempt_coord_io) ---------------------------------- */

/* An answer or a watch message for the worker's current io; one for an
 * io that ended (a start-up phase before the coordinator's) is nobody's. */
static bool io_current(const struct worker *w, uint32_t io_gen)
{
    return io_gen == w->io_gen && !w->io_dead;
}

/* A new io for the worker: the previous one's answers still in flight are
 * dropped when they arrive. */
static void *io_open(struct worker *w)
{
    w->io_gen++;
    w->io_dead = false;
    w->pending = 0;
    w->watching = w->wup = false;
    w->keep_gen++;
    return w;
}

/* A request's answer arrived or was dropped: one less in flight. */
static void req_done(struct worker *w, const struct req *q)
{
    if (q->io_gen == w->io_gen && w->pending)
        w->pending--;
}

static int io_request(void *io, const struct preempt_etcd_req *req, uint64_t give_up_ms, preempt_etcd_reply_cb cb,
                      void *arg)
{
    struct worker *w = io;
    struct req *q;
    int r = preempt_etcd_req_keys_ok_(req); /* as the real client: a cut key is never sent */

    if (r < 0)
        return r;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->q = preempt_etcd_req_copy_(req))) {
        free(q);
        return -ENOMEM;
    }
    q->w = w->id;
    q->io_gen = w->io_gen;
    q->give_up_us = W->now_us + (give_up_ms ? give_up_ms : 2000) * 1000u;
    q->cb = cb;
    q->arg = arg;
    w->pending++;
    schedule(W->now_us + net_us(w), E_APPLY, w->id, 0, q, 0);
    return 0;
}

/* What the worker's watch covers. */
static bool in_range(const struct worker *w, const char *key)
{
    if (w->wend[0])
        return strcmp(key, w->wkey) >= 0 && strcmp(key, w->wend) < 0;
    return strncmp(key, w->wkey, strlen(w->wkey)) == 0;
}

static void watch_catch_up(struct worker *w, uint64_t at_us)
{
    struct item *it = item_new(IT_WATCH);

    it->rev = sim_etcd_rev(W->etcd);
    it->io_gen = w->io_gen;
    if (at_us < w->wlast_us)
        at_us = w->wlast_us;
    w->wlast_us = at_us;
    arrive(w, it, at_us);
}

static void watch_reset(struct worker *w, uint64_t at_us)
{
    struct item *it = item_new(IT_RESET);

    (void)sim_etcd_snapshot(W->etcd, w->wkey, w->wend[0] ? w->wend : NULL, &it->kvs, &it->n_kvs);
    it->rev = sim_etcd_rev(W->etcd);
    it->io_gen = w->io_gen;
    if (at_us < w->wlast_us)
        at_us = w->wlast_us;
    w->wlast_us = at_us;
    arrive(w, it, at_us);
}

static int io_watch(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops, void *arg)
{
    struct worker *w = io;
    int r = preempt_etcd_span_ok_(key, end); /* as the real client: never a wider watch */

    if (r < 0)
        return r;
    (void)snprintf(w->wkey, sizeof(w->wkey), "%s", key);
    (void)snprintf(w->wend, sizeof(w->wend), "%s", end ? end : "");
    w->wops = *ops;
    w->warg = arg;
    w->watching = true;
    w->wup = !W->etcd_down;
    if (w->wup)
        watch_reset(w, W->now_us + 2 * net_us(w));
    return 0;
}

static void io_timer(void *io, uint64_t ms, void (*tick)(void *arg), void *arg)
{
    struct worker *w = io;
    struct item *it;

    w->keep_gen++;
    if (!ms)
        return;
    w->keep_tick = tick;
    w->keep_arg = arg;
    it = item_new(IT_KEEP);
    it->gen = w->keep_gen;
    arrive(w, it, W->now_us + ms * 1000u);
}

static uint64_t io_wall_ms(void *io)
{
    (void)io;
    return (uint64_t)(EPOCH_MS + W->now_us / 1000u);
}

static uint64_t io_mono_ms(void *io)
{
    (void)io;
    return now_ms();
}

static unsigned io_pending(void *io)
{
    return ((struct worker *)io)->pending;
}

static unsigned io_flush(void *io, uint64_t bound_ms)
{
    (void)bound_ms;
    return ((struct worker *)io)->pending;
}

static void io_free(void *io)
{
    struct worker *w = io;

    w->io_dead = true;
    w->watching = false;
    w->keep_gen++;
}

static const struct preempt_coord_io sim_io = {
    .request = io_request, .watch = io_watch, .timer = io_timer, .wall_ms = io_wall_ms, .mono_ms = io_mono_ms,
    .pending = io_pending, .flush = io_flush, .free = io_free,
};

/* A key some worker may watch: the job's records but the per-worker ones
 * (docs/protocol.md, "Traffic") and the incarnation counter. */
static bool watchable(const char *key)
{
    return strncmp(key, SIM_JOBP, strlen(SIM_JOBP)) == 0 && !strstr(key + strlen(SIM_JOBP), "/w/") &&
           strchr(key + strlen(SIM_JOBP), '/');
}

/* After every change of the store: each worker watching a key that
 * changed hears of it, in order, after its own delay (as etcd: no message
 * for a change outside the watched range). */
static void store_changed(int64_t before_rev)
{
    size_t n, first, i;
    const struct sim_ev *h;

    if (sim_etcd_rev(W->etcd) == before_rev)
        return;
    h = sim_etcd_history(W->etcd, &n);
    for (first = n; first > 0 && h[first - 1].rev > before_rev; first--)
        ;
    for (i = first; i < n && !watchable(h[i].kv.key); i++)
        ;
    if (i == n) /* most writes (reports, members): nobody's */
        return;
    for (unsigned k = 0; k < W->n + (W->watcher != NULL); k++) {
        struct worker *w = &W->w[k];
        bool hit = false;

        if (!w->alive || !w->watching || !w->wup || w->io_dead)
            continue;
        for (size_t j = i; j < n && !hit; j++)
            hit = watchable(h[j].kv.key) && in_range(w, h[j].kv.key);
        if (hit)
            watch_catch_up(w, W->now_us + net_us(w));
    }
}

/* ---- a worker: the shell around the machine ----------------------------------------------- */

static void trace_add(struct worker *w, const char *line)
{
    size_t len = strlen(line);

    if (w->trace_len + len + 2 > w->trace_cap) {
        w->trace_cap = (w->trace_cap + len + 2) * 2;
        w->trace = realloc(w->trace, w->trace_cap);
        if (!w->trace)
            abort();
    }
    memcpy(w->trace + w->trace_len, line, len);
    w->trace_len += len;
    w->trace[w->trace_len++] = '\n';
    w->trace[w->trace_len] = '\0';
}

/* A line of the worker's job lines (lib/trace/trace-job.c, the handler's
 * code; n: its length, as snprintf's): the declared machines'
 * transitions always, the job's view, answers and the coordinator's lines
 * with --trace-dir (each worker reads every record: O(N^2) lines in all),
 * which preempt-replay reads again. */
static void job_add(const char *line, int n, void *arg)
{
    if (n > 0 && (size_t)n < PREEMPT_TRACE_LINE_MAX)
        trace_add(arg, line);
}

static uint64_t job_now(void *arg)
{
    (void)arg;
    return now_ms();
}

static void coord_view(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                       void *arg)
{
    struct worker *w = arg;

    if (W->trace_job)
        preempt_job_trace_view_(&w->jt, v, in, ev);
}

static void coord_answer(const struct preempt_view *v, const struct preempt_job_answer *a, void *arg)
{
    struct worker *w = arg;

    if (W->trace_job)
        preempt_job_trace_answer_(&w->jt, v, a);
}

static void coord_in(const struct preempt_coord_in *in, unsigned depth, void *arg)
{
    struct worker *w = arg;

    if (w->coord_traced)
        preempt_job_trace_in_(&w->jt, in, depth);
}

static void coord_out(const struct preempt_coord_out *out, unsigned depth, void *arg)
{
    struct worker *w = arg;

    if (w->coord_traced)
        preempt_job_trace_out_(&w->jt, out, depth);
}

static void post(struct worker *w, struct preempt_event ev)
{
    preempt_worker_post_(&w->wk, ev);
}

static void coord_post(const struct preempt_event *ev, void *arg)
{
    post(arg, *ev);
}

static void coord_job_save(uint64_t ms, void *arg)
{
    preempt_worker_save_took_(&((struct worker *)arg)->wk, ms, PREEMPT_SAVE_JOB);
}

static void coord_job_pace(struct preempt_pace pace, uint64_t at_ms, void *arg)
{
    preempt_worker_job_pace_(&((struct worker *)arg)->wk, pace.step, pace.ms, at_ms);
}

static uint64_t coord_now(void *arg)
{
    (void)arg;
    return now_ms();
}

static void coord_log(int level, const char *msg, void *arg)
{
    struct worker *w = arg;

    if (W->verbose)
        fprintf(stderr, "%10.3f w%d coord[%d]: %s\n", (double)W->now_us / 1e6, w->id, level, msg);
    if (w->wk.coord && preempt_coord_link_bugs_(w->wk.coord)) /* an input no link declares (links-internal.h) */
        violate("worker %d: %s", w->id, msg);
}

static void on_rec(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg)
{
    struct worker *w = arg;
    char line[1024];

    (void)sm;
    if (preempt_trace_format_(line, sizeof(line), rec, w->have_rec ? &w->last_rec : NULL) >= 0)
        trace_add(w, line);
    w->last_rec = *rec;
    w->have_rec = true;
    if (W->verbose)
        fprintf(stderr, "%10.3f w%d %s\n", (double)W->now_us / 1e6, w->id, line);
    /* Without a grace period there is nothing to count down through: a
     * countdown (a first checkpoint whose reports all came before the
     * notice) ends with the final round, which the driver opens at its
     * next step. In a run without faults, no worker waits in it longer
     * than an agreement round takes; before, it trained on towards the
     * bound (30 s), and a job whose training ended first exited "done". */
    if (rec->to == PREEMPT_STATE_COUNTDOWN && rec->from != PREEMPT_STATE_COUNTDOWN) {
        w->countdown_us = W->now_us;
        W->countdowns0 += W->cfg.grace_ms == 0;
    }
    if (rec->from == PREEMPT_STATE_COUNTDOWN && rec->to != PREEMPT_STATE_COUNTDOWN) {
        uint64_t in = W->now_us - w->countdown_us, bound = W->cfg.agree_timeout_ms * 1000u + 3 * w->step_base_us;

        if (W->cfg.grace_ms == 0 && !W->faulted && in > bound)
            violate("worker %d: %.3f s in the countdown without a grace period (more than an agreement's %.3f s)",
                    w->id, (double)in / 1e6, (double)bound / 1e6);
        w->countdown_us = 0;
    }
    if (rec->ev.kind == PREEMPT_EV_NOTICE && rec->from == PREEMPT_STATE_PERSISTING) {
        if (rec->to == PREEMPT_STATE_FOLLOWING)
            W->superseded++;
        else if (rec->to == PREEMPT_STATE_PERSISTING)
            W->let_finish++;
    }
    /* such a checkpoint committed with room for another round: it was the
     * preemption's first, and the worker counts down to the final round */
    if (rec->ev.kind == PREEMPT_EV_CKPT_COMMITTED && rec->from == PREEMPT_STATE_PERSISTING &&
        rec->to == PREEMPT_STATE_COUNTDOWN && W->cfg.grace_ms == 0)
        W->again++;
    /* the preemption's last checkpoint committed while this worker trained
     * on past it (two-phase): it stopped at the job's stop step, or it was
     * past that step when the decision reached it (the sim's workers do
     * not step in lockstep, as a collective would make them) */
    if (rec->to == PREEMPT_STATE_EXIT && rec->from == PREEMPT_STATE_STOPPING && rec->ev.kind == PREEMPT_EV_STEP_REACHED)
        W->stops_at++;
    if (rec->to == PREEMPT_STATE_EXIT && rec->from == PREEMPT_STATE_PERSISTING &&
        rec->ev.kind == PREEMPT_EV_CKPT_COMMITTED && rec->run > rec->ev.u.ckpt_committed.step)
        W->stops_past++;
    if (rec->ev.kind == PREEMPT_EV_CKPT_COMMITTED && rec->verdict != PREEMPT_VERDICT_IGNORED) {
        w->last_commit = rec->ev.u.ckpt_committed.step;
        w->have_commit = true;
    }
}

static bool holds(const struct worker *w, uint64_t step)
{
    for (size_t i = 0; i < w->n_shards; i++)
        if (w->shards[i] == step)
            return true;
    return false;
}

static void add_shard(struct worker *w, uint64_t step)
{
    if (w->n_shards == w->cap_shards) {
        w->cap_shards = w->cap_shards ? w->cap_shards * 2 : 8;
        w->shards = realloc(w->shards, w->cap_shards * sizeof(*w->shards));
        if (!w->shards)
            abort();
    }
    w->shards[w->n_shards++] = step;
}

static bool has_pending(const struct worker *w, uint64_t step)
{
    for (unsigned i = 0; i < w->n_pend; i++)
        if (w->pend[i].step == step)
            return true;
    return false;
}

/* The job decided a pending shard: kept (a decided shard) or gone. */
static void decide_pending(struct worker *w, uint64_t step, bool keep)
{
    for (unsigned i = 0; i < w->n_pend; i++)
        if (w->pend[i].step == step) {
            if (keep)
                add_shard(w, step);
            w->pend[i] = w->pend[--w->n_pend];
            return;
        }
}

/* What the handler's rules (lib/job/worker.c) ask of the simulated process. */

static uint64_t wk_now_ms(void *arg)
{
    (void)arg;
    return now_ms();
}

static void wk_arm_timer(void *arg, uint64_t at_ms)
{
    struct worker *w = arg;
    struct item *it = item_new(IT_MTIMER);
    uint64_t t = at_ms > now_ms() ? (at_ms - 1) * 1000u : W->now_us;

    w->mtimer_gen = preempt_sm_core_(w->wk.sm)->timer_gen;
    w->mtimer_armed = true;
    it->gen = w->mtimer_gen;
    arrive(w, it, t);
}

static void wk_disarm_timer(void *arg)
{
    ((struct worker *)arg)->mtimer_armed = false;
}

/* Whether step is, or was before a raise, the save step of the round whose
 * decision key is dkey: a put of its agreed record with that step is in
 * the store's history (searched from the newest: the record a save follows
 * is recent, and the history holds every start-up before it). */
static bool was_agreed(const char *dkey, uint64_t step)
{
    struct preempt_key d, a;
    size_t n;
    const struct sim_ev *h = sim_etcd_history(W->etcd, &n);

    if (preempt_key_parse_(dkey, SIM_JOBP, &d) != PREEMPT_KEY_DECISION)
        return false;
    for (size_t i = n; i-- > 0;) {
        uint64_t s;
        bool last;

        if (h[i].type == PREEMPT_ETCD_PUT && preempt_key_parse_(h[i].kv.key, SIM_JOBP, &a) == PREEMPT_KEY_AGREED &&
            a.inc == d.inc && a.ep == d.ep && a.round == d.round &&
            preempt_step_value_parse_(h[i].kv.value, &s, &last) && s == step)
            return true;
    }
    return false;
}

static void wk_begin_save(void *arg, uint64_t step)
{
    struct worker *w = arg;
    uint64_t run = preempt_sm_facts_(w->wk.sm)->run;
    unsigned k = preempt_sm_core_(w->wk.sm)->round ? 1 : 0;
    char dkey[PREEMPT_KEY_MAX];

    if (run != step)
        violate("worker %d saves step %" PRIu64 " at run %" PRIu64, w->id, step, run);
    if (w->wk.coord && preempt_coord_decision_key_(w->wk.coord, k, dkey, sizeof(dkey)) >= 0 && !was_agreed(dkey, step))
        violate("worker %d saves step %" PRIu64 ", which round %u's record never named", w->id, step, k);
}

/* As the handler's settle(): the job's decision on a pending shard. */
static void wk_settle(void *arg, uint64_t step, int decision)
{
    struct worker *w = arg;

    if (decision == 0)
        violate("worker %d: its pending step %" PRIu64 " stays undecided", w->id, step);
    if (decision < 0 && w->persisting && step == w->wk.save_step) { /* as hd_settle(): the persist stops */
        w->persisting = false;
        w->save_gen++;
    }
    decide_pending(w, step + (W->sabotage && w->id == 0), decision > 0);
}

static void wk_exit(void *arg, enum preempt_exit reason)
{
    struct worker *w = arg;

    (void)reason;
    w->undecided = preempt_sm_core_(w->wk.sm)->abort_proposed;
    w->exited = true;
    w->exit_us = W->now_us;
}

static const char *wk_fx_text(void *arg, const struct preempt_fx *fx)
{
    const struct worker *w = arg;

    return fx->kind == PREEMPT_FX_PUBLISH_NOTICE ? preempt_source_to_string_(w->last_src) : "sim";
}

static void wk_dropped(void *arg, enum preempt_event_kind kind)
{
    violate("worker %d: the machine's queue overflowed (%s)", ((struct worker *)arg)->id,
            preempt_event_to_string_(kind));
}

static void wk_bug(void *arg, const struct preempt_fx *fx)
{
    violate("worker %d: effect %s not handled", ((struct worker *)arg)->id, preempt_fx_to_string_(fx->kind));
}

static void finish_worker(struct worker *w);

/* --in-place: the machine stays in place (its coordinator left, worker.c):
 * the process waits for the next incarnation's start-up, which begins at
 * the incarnation's end with the restarted workers' (start_incarnation);
 * meanwhile nothing reaches it (its old coordinator's answers are dropped,
 * and a notice or a kill then is not modelled). */
static void wk_rejoin(void *arg, uint64_t step)
{
    struct worker *w = arg;

    if (!W->in_place)
        violate("worker %d: asked to rejoin in place at step %" PRIu64 ", not configured", w->id, step);
    w->rejoining = true;
    w->rejoin_step = step;
    w->saving = w->stepping = false;
    finish_worker(w);
}

static void wk_resume(void *arg, uint64_t step)
{
    struct worker *w = arg;

    if (preempt_sm_facts_(w->wk.sm)->run != step)
        violate("worker %d resumes in place after step %" PRIu64 ", but its state is step %" PRIu64 "'s", w->id, step,
                preempt_sm_facts_(w->wk.sm)->run);
}

/* As the handler's estimate, but exact: the simulation knows when the persist ends. */
static uint64_t wk_persist_left_ms(void *arg)
{
    const struct worker *w = arg;

    return w->persisting && w->persist_end_us > W->now_us ? (w->persist_end_us - W->now_us) / 1000 + 1 : 0;
}

static const struct preempt_worker_ops wk_ops = {
    .now_ms = wk_now_ms, .arm_timer = wk_arm_timer, .disarm_timer = wk_disarm_timer, .begin_save = wk_begin_save,
    .settle = wk_settle, .exit = wk_exit, .rejoin = wk_rejoin, .resume = wk_resume, .fx_text = wk_fx_text,
    .dropped = wk_dropped, .bug = wk_bug, .persist_left_ms = wk_persist_left_ms,
};

/* A signal to a worker at a chosen moment of a withdrawn round (an
 * advisory or withdrawn cloud notice's checkpoint), within 3 ms of the
 * effect that marks it, once per seed; which moment is drawn from the
 * seed, not the run's random stream, so that seeds where it never comes
 * run as before. Three seeds in eight:
 *   - as it reports its shard, before the round's decision can come: the
 *     report said "not the last save", so no decision names a stop step
 *     (tests/two-phase.sh, the late-* cases, open the same window with
 *     --raise-at-save-end);
 *   - as it keeps its shard at the commit, when its machine goes back to
 *     idle and it moves on to the next episode, perhaps before its peers;
 *   - as it begins the save, inside the snapshot (two-phase) or the save. */
static void notice_at_moment(struct preempt_sm *sm, const struct preempt_fx *fx, struct worker *w)
{
    static const enum preempt_fx_kind moment[] = { PREEMPT_FX_REPORT_SHARD, PREEMPT_FX_KEEP_SHARD,
                                                   PREEMPT_FX_BEGIN_SAVE };
    uint64_t h = (W->seed + 1) * 0xD6E8FEB86659FD93ull;
    struct item *it;
    uint64_t at;

    h ^= h >> 32;
    if (h % 8 >= 3 || fx->kind != moment[h % 8] || W->local || W->scale || W->nar_done ||
        !preempt_sm_core_(sm)->withdrawn)
        return;
    W->nar_done = true;
    W->nar++;
    at = W->now_us + (h >> 8) % 3000;
    it = item_new(IT_NOTICE);
    it->src = PREEMPT_SOURCE_SIGNAL;
    it->kill_us = at + (W->cfg.grace_ms ? W->cfg.grace_ms : W->cfg.bound_ms) * 1000u;
    arrive(w, it, at);
}

static void run_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg)
{
    if (fx->kind == PREEMPT_FX_PUBLISH_ERROR && fx->arg == -EPROTO)
        W->proto_errors++; /* a worker found the protocol broken (it went past the agreed step) */
    notice_at_moment(sm, fx, arg);
    preempt_worker_run_fx_(sm, fx, &((struct worker *)arg)->wk);
}

static bool in_loop(const struct worker *w)
{
    if (!w->alive || w->paused)
        return false;
    if (w->async)
        return true;
    return !w->stepping && !w->saving; /* sync: only between steps and while waiting */
}

static void process(struct worker *w, struct item *it);

static void finish_worker(struct worker *w)
{
    w->alive = false;
    for (struct item *it = w->inbox, *next; it; it = next) {
        next = it->next;
        item_free(it);
    }
    w->inbox = w->inbox_tail = NULL;
}

/* The trainer acts on the action: the next step, a save, or nothing. */
static void act(struct worker *w)
{
    enum preempt_action a;

    if (!w->alive || w->paused || !w->started) /* in start-up: no machine yet */
        return;
    a = preempt_worker_action_(&w->wk); /* the handler's rule */
    if (a == PREEMPT_ACTION_EXIT) {
        /* As the handler at its exit: the coordination writes still in
         * flight are delivered, their replies read (and what they cause
         * sent), for at most PREEMPT_LAST_WRITES_MS; then the process is
         * gone. */
        if (!w->pending)
            finish_worker(w);
        else if (!w->flushing) {
            w->flushing = true;
            schedule(W->now_us + PREEMPT_LAST_WRITES_MS * 1000u, E_FLUSHED, w->id, 0, NULL, 0);
        }
        return;
    }
    if (w->stepping || w->saving)
        return;
    if (a == PREEMPT_ACTION_SAVE || a == PREEMPT_ACTION_SAVE_EXIT) {
        uint64_t d = w->save_base_us / 2 + between(0, w->save_base_us);

        if (chance(2) && !W->scale) {
            d *= between(5, 20); /* a slow save (--scale measures a clean preemption) */
            W->faulted = true;
        }
        w->saving = true;
        if (W->two_phase) { /* the snapshot blocks; its persist, four fifths of the save, does not */
            w->persist_us = d - d / 5;
            schedule(W->now_us + d / 5 + 1, E_SNAPSHOT, w->id, ++w->save_gen, NULL, 0);
        } else {
            schedule(W->now_us + d, E_SAVE, w->id, ++w->save_gen, NULL, 0);
        }
    } else if (a == PREEMPT_ACTION_CONTINUE && preempt_sm_facts_(w->wk.sm)->run >= w->total_steps) {
        struct preempt_event ev = { .kind = PREEMPT_EV_TRAINING_DONE }; /* preempt_training_done() */

        ev.u.training_done.step = preempt_sm_facts_(w->wk.sm)->run;
        post(w, ev);
        act(w);
    } else if (a == PREEMPT_ACTION_CONTINUE) {
        uint64_t d = w->step_base_us * 9 / 10 + between(0, w->step_base_us / 5);

        w->stepping = true;
        w->step_t0_us = W->now_us;
        schedule(W->now_us + d, E_STEP, w->id, ++w->step_gen, NULL, 0);
    }
}

/* One pass of the worker's loop: everything that has arrived. */
static void pump(struct worker *w)
{
    while (w->inbox && in_loop(w)) {
        struct item *it = w->inbox;

        w->inbox = it->next;
        if (!w->inbox)
            w->inbox_tail = NULL;
        if (!w->flushing || it->kind == IT_REPLY) /* an exiting process reads only its replies */
            process(w, it);
        item_free(it);
    }
    act(w);
    if (W->measuring && w->wk.sm && !w->knows && preempt_sm_core_(w->wk.sm)->save_step) {
        w->knows = true;
        W->knows++;
        W->t_last_knows_us = W->now_us;
    }
}

/* A notice reaches the worker's process (a signal, its cloud source):
 * the handler's rules (lib/job/worker.c). Once exited, nothing listens. */
static void notice(struct worker *w, enum preempt_source src, uint64_t deadline_in_ms, bool advisory, uint64_t kill_us)
{
    if (w->exited)
        return;
    if (advisory && !preempt_worker_may_checkpoint_(&w->wk)) /* as the handler: only when nothing else is under way */
        return;
    w->last_src = src;
    preempt_worker_notice_(&w->wk, src, deadline_in_ms, advisory);
    if (kill_us) /* the job now knows this deadline */
        push((struct sev){ .t = kill_us, .kind = E_KILL, .w = w->id, .a = (int64_t)kill_us, .src = (int)src,
                           .src_gen = w->withdrawals[src] });
}

static void withdraw(struct worker *w, enum preempt_source src)
{
    w->withdrawals[src]++; /* the cloud no longer kills for what this source announced */
    if (!w->exited)
        (void)preempt_worker_withdrawn_(&w->wk, src);
}

/* The first change of the history at revision rev or later (the history is
 * in revision order). */
static size_t first_at(const struct sim_ev *h, size_t n, int64_t rev)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (h[mid].rev < rev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void process(struct worker *w, struct item *it)
{
    size_t n_hist;
    const struct sim_ev *h;

    switch (it->kind) {
    case IT_REPLY:
        req_done(w, it->req);
        if (io_current(w, it->req->io_gen) && it->req->cb)
            it->req->cb(it->status, it->status == 0 ? &it->reply : NULL, it->msg, it->req->arg);
        break;
    case IT_WATCH:
        if (!io_current(w, it->io_gen) || !w->wup)
            break;
        h = sim_etcd_history(W->etcd, &n_hist);
        for (size_t i = first_at(h, n_hist, w->wnext), last = 0;
             i < n_hist && h[i].rev <= it->rev && io_current(w, it->io_gen); i++) {
            if (in_range(w, h[i].kv.key)) {
                /* etcd sends the events of one revision (one txn) in one message */
                W->events += W->measuring && (last == 0 || h[last - 1].rev != h[i].rev);
                last = i + 1;
                w->wops.on_event(h[i].type, &h[i].kv, w->warg);
            }
        }
        if (it->rev + 1 > w->wnext)
            w->wnext = it->rev + 1;
        break;
    case IT_RESET:
        if (!io_current(w, it->io_gen) || !w->wup)
            break;
        w->wnext = it->rev + 1;
        w->wops.on_link(true, "created", w->warg);
        w->wops.on_reset(it->kvs, it->n_kvs, it->rev, 1, w->warg); /* the simulated etcd's cluster id */
        break;
    case IT_KEEP:
        if (!w->io_dead && it->gen == w->keep_gen)
            w->keep_tick(w->keep_arg);
        break;
    case IT_MTIMER:
        if (w->mtimer_armed && it->gen == w->mtimer_gen && !w->exited) {
            struct preempt_event ev = { .kind = PREEMPT_EV_TIMER };

            w->mtimer_armed = false;
            ev.u.timer.gen = it->gen;
            post(w, ev);
        }
        break;
    case IT_NOTICE:
        if (preempt_sm_core_(w->wk.sm)->noticed && W->cfg.second == PREEMPT_SECOND_EXIT)
            W->faulted = true; /* a second notice that ends the worker at once */
        if (!W->t_notice_us) {
            W->t_notice_us = W->now_us;
            W->measuring = true;
        }
        notice(w, it->src, it->deadline_in_ms, it->advisory, it->kill_us);
        break;
    case IT_WITHDRAW:
        withdraw(w, it->src);
        break;
    }
}

static void count_step(struct worker *w)
{
    preempt_worker_step_(&w->wk, W->now_us - w->step_t0_us);
    preempt_worker_reached_(&w->wk);
}

/* A two-phase save's snapshot is taken: the handler's preempt_save_done()
 * starts the persist (persist-started), and the trainer may train again. */
static void snapshot_done(struct worker *w)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_PERSIST_STARTED };

    w->saving = false;
    w->wk.save_asked = false;
    w->persisting = true;
    w->persist_end_us = W->now_us + w->persist_us;
    ev.u.persist_started.bytes = 1;
    post(w, ev);
    schedule(w->persist_end_us, E_SAVE, w->id, w->save_gen, NULL, 0);
}

static void save_done(struct worker *w)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_SAVE_DONE };

    w->saving = w->persisting = false;
    w->wk.save_asked = false;
    if (w->save_fails && chance(30)) {
        ev.u.save_done.status = -ENOSPC;
    } else {
        uint64_t step = w->wk.save_step + (W->sabotage && w->id == 0);

        if (!w->wk.coord) {
            add_shard(w, step); /* local mode: the local commit is the decision */
        } else if (w->n_pend < sizeof(w->pend) / sizeof(w->pend[0])) {
            w->pend[w->n_pend].step = step;
            (void)preempt_coord_decision_key_(w->wk.coord, preempt_sm_core_(w->wk.sm)->round, w->pend[w->n_pend].key,
                                              sizeof(w->pend[w->n_pend].key));
            w->n_pend++;
        }
    }
    preempt_worker_save_took_(&w->wk, w->max_save_ms, PREEMPT_SAVE_AWAITED);
    post(w, ev);
}

/* ---- the store's side ------------------------------------------------------------------- */

static void crash(struct worker *w);

/* Whether the round k (inc, ep, round) has its decision record. */
static bool round_decided(const struct preempt_key *k)
{
    char key[PREEMPT_KEY_MAX];
    struct preempt_etcd_reply d = { 0 };
    const char *msg;
    bool decided;

    if (preempt_key_(key, sizeof(key), SIM_JOBP, PREEMPT_KEY_DECISION, k) < 0 ||
        sim_etcd_do(W->etcd, PREEMPT_RQ_GET(key), now_ms(), &d, &msg) < 0)
        abort();
    decided = preempt_etcd_reply_kv_(&d, 0) != NULL;
    preempt_etcd_reply_clear_(&d);
    return decided;
}

/* --crash-completer, once per seed: rq is a shard report whose count (its
 * last op) reached the job's size while the round is undecided, so its
 * worker would read the reports and propose the commit. Notes the round.
 * (A job of one worker has nobody to finish it: its restart aborts the
 * round, as its exit 75 said.) */
static bool completes_round(const struct preempt_etcd_req *rq, const struct preempt_etcd_reply *r)
{
    struct preempt_key k;

    if (!W->crash_completer || W->cc_crashed || W->n < 2 || rq->kind != PREEMPT_ETCD_RQ_TXN || r->n_res < 1 ||
        preempt_etcd_reply_count_(r, r->n_res - 1) < (int64_t)W->n)
        return false;
    for (size_t i = 0; i < rq->n_ok; i++)
        if (rq->ok[i].kind == PREEMPT_ETCD_OP_PUT &&
            preempt_key_parse_(rq->ok[i].key, SIM_JOBP, &k) == (int)PREEMPT_KEY_SHARD) {
            if (round_decided(&k))
                return false; /* an abort came first (a stalled save): nothing left to complete */
            W->cc_crashed = W->faulted = true;
            W->cc_round = k;
            W->cc_crash_us = W->now_us;
            return true;
        }
    return false;
}

static void apply(struct req *q)
{
    struct worker *w = &W->w[q->w];
    struct item *it;
    int64_t rev0 = sim_etcd_rev(W->etcd);
    struct preempt_etcd_reply reply = { 0 };
    const char *msg = "ok";
    int status;

    if (W->svc_us && !q->slotted) { /* one request at a time, in arrival order: its turn */
        uint64_t turn = W->now_us > W->etcd_free_us ? W->now_us : W->etcd_free_us;

        W->etcd_free_us = turn + W->svc_us;
        q->slotted = true;
        if (turn > W->now_us) {
            schedule(turn, E_APPLY, q->w, 0, q, 0);
            return;
        }
    }
    q->slotted = false;
    if (W->measuring) { /* the lease's keep-alives run whether or not there is a preemption */
        if (q->q->kind == PREEMPT_ETCD_RQ_KEEPALIVE)
            W->keepalives++;
        else
            W->reqs++;
    }
    if (W->etcd_down) {
        if (W->now_us + 250000 < q->give_up_us) { /* the client retries */
            schedule(W->now_us + 250000, E_APPLY, q->w, 0, q, 0);
            return;
        }
        status = -ETIMEDOUT;
        msg = "etcd unreachable (simulated outage)";
    } else {
        status = sim_etcd_do(W->etcd, q->q, W->now_us / 1000u, &reply, &msg);
        store_changed(rev0);
    }
    if (status == 0 && w->alive && completes_round(q->q, &reply))
        crash(w); /* --crash-completer: it dies before it reads the answer */
    else if (status == 0 && W->cc_crashed && !W->cc_decided_us && round_decided(&W->cc_round))
        W->cc_decided_us = W->now_us;
    if (!w->alive || !io_current(w, q->io_gen)) { /* nobody reads the answer */
        req_done(w, q);
        preempt_etcd_reply_clear_(&reply);
        req_free(q);
        return;
    }
    it = item_new(IT_REPLY);
    it->req = q;
    it->status = status;
    it->reply = reply;
    it->msg = msg;
    arrive(w, it, W->now_us + net_us(w));
}

/* ---- start-up: the real one (lib/job/coord.c), over the worker's io ------------------------------ */

static void machine_up(struct worker *w, uint64_t run)
{
    struct preempt_sm_ops ops = { .run_fx = run_fx, .on_record = on_rec };
    char line[512];

    w->wk.ops = &wk_ops;
    w->wk.arg = w;
    if (preempt_sm_new_(&W->cfg, &ops, w, &w->wk.sm) < 0)
        abort();
    preempt_sm_facts_(w->wk.sm)->run = run;
    if (run > 0) /* as the handler: the restored checkpoint's manifest says how long its save took */
        preempt_worker_save_took_(&w->wk, w->max_save_ms, PREEMPT_SAVE_AWAITED);
    if (preempt_trace_format_config_(line, sizeof(line), &W->cfg) >= 0)
        trace_add(w, line);
}

/* The worker's start-up ended: it trains from step run. */
static void begin_training(struct worker *w, uint64_t run)
{
    w->started = true;
    W->started++;
    if (!w->wk.sm)
        machine_up(w, run);
    act(w);
}

/* The step the job restores, as start-up told one worker in its join
 * attempt: every worker must be told the same. */
static void restores(struct worker *w, bool have, uint64_t step)
{
    struct told *t = &W->told[w->attempt];

    if (!t->restore) {
        t->restore = true;
        t->restore_have = have;
        t->restore_step = step;
    } else if (have != t->restore_have || step != t->restore_step) {
        violate("worker %d restores %s%" PRIu64 ", another worker %s%" PRIu64, w->id, have ? "step " : "nothing, ",
                step, t->restore_have ? "step " : "nothing, ", t->restore_step);
    }
    W->restore_have = have;
    W->restore_step = step;
    if (have && !holds(w, step))
        violate("worker %d is told to restore step %" PRIu64 ", which it does not hold", w->id, step);
}

/* --restore-faults: whether this worker's shard of step is unusable (bad
 * data: its restore callback refuses it), the same at every look. */
static bool unusable_shard(const struct worker *w, uint64_t step)
{
    uint64_t x = (W->seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)w->id << 40) ^ step;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return W->restore_faults && x % (100u * W->n) < 12; /* about one step in eight: some worker cannot use it */
}

static bool set_aside(uint64_t step)
{
    for (unsigned i = 0; i < W->n_aside; i++)
        if (W->aside[i] == step)
            return true;
    return false;
}

static void on_joined(int status, void *arg);
static void on_restored(int status, void *arg);

/* ---- start-up's effects, for its driver (lib/job/start-internal.h), as the handler's ------- */

/* Joins the job (again, after a fall-back: the pending shards were
 * settled at the first join). */
static void join(void *arg)
{
    struct worker *w = arg;
    unsigned n_pend = w->attempt ? 0 : w->n_pend;

    for (unsigned k = 0; k < n_pend; k++)
        w->cpend[k] = (struct preempt_coord_pending){ .step = w->pend[k].step, .key = w->pend[k].key };
    w->cc.phase_no++; /* the phase's machines in the trace, as the handler counts them */
    if (preempt_coord_join_begin_io_(&sim_io, io_open(w), &w->cc, w->shards, w->n_shards, w->cpend, n_pend,
                                     &w->join, w->smsg, sizeof(w->smsg), on_joined, w, &w->phase) < 0)
        violate("worker %d: start-up: %s", w->id, w->smsg);
}

/* The coordinator's ops: the simulation's shell. */
static const struct preempt_coord_ops sim_cops = {
    .post = coord_post, .now_ms = coord_now, .log = coord_log, .job_save = coord_job_save,
    .job_pace = coord_job_pace, .on_view = coord_view, .on_answer = coord_answer, .on_input = coord_in,
    .on_output = coord_out,
};

/* Training begins: the machine and the coordinator, as the handler's
 * start_finish() makes them. */
static void train(struct worker *w)
{
    machine_up(w, w->join.have_step ? w->join.step : 0); /* the coordinator posts to it */
    if (preempt_coord_new_io_(&sim_io, io_open(w), &w->cc, &w->join, &sim_cops, w, &w->wk.coord) < 0)
        abort();
    if (W->trace_job) { /* as the handler's trace opens: before the coordinator's first input */
        preempt_job_trace_start_(&w->jt, w->wk.coord);
        w->coord_traced = true;
    }
    begin_training(w, 0);
}

/* The simulated trainer's restore callback: an unusable shard refuses
 * the step, and about one restore in fifty fails as a retry may cure. */
static int restore(void *arg, uint64_t step)
{
    struct worker *w = arg;

    if (w->rejoining && step == w->rejoin_step) /* in place: its memory holds the step (the handler's rule) */
        return 0;
    if (unusable_shard(w, step))
        return -EBADMSG;
    if (W->restore_faults && between(1, 50u * W->n) == 1)
        return -EIO;
    return 0;
}

static void report(void *arg, int mine, int err)
{
    struct worker *w = arg;

    w->cc.phase_no++;
    if (preempt_coord_restored_begin_io_(&sim_io, io_open(w), &w->cc, &w->join, mine, err ? strerror(-err) : NULL,
                                         w->cc.join_timeout_ms, &w->restore_outcome, w->verdict, sizeof(w->verdict),
                                         w->smsg, sizeof(w->smsg), on_restored, w, &w->phase) < 0)
        violate("worker %d: the restore barrier: %s", w->id, w->smsg);
}

/* Every worker sets the step aside, and joins again. */
static void set_aside_step(void *arg, uint64_t step)
{
    struct worker *w = arg;

    for (size_t i = 0; i < w->n_shards; i++)
        if (w->shards[i] == step) {
            w->shards[i] = w->shards[--w->n_shards];
            break;
        }
    if (!set_aside(step) && W->n_aside < MAX_ATTEMPTS) {
        W->aside[W->n_aside++] = step;
        W->fell_back++;
    }
    if (++w->attempt >= MAX_ATTEMPTS)
        violate("worker %d fell back %u times in one start-up", w->id, w->attempt);
}

static void rejoined(struct worker *w, int r, bool restored);

static void start_end(void *arg, int r, bool restored)
{
    struct worker *w = arg;

    if (w->rejoining) {
        rejoined(w, r, restored);
        return;
    }
    if (r < 0) { /* the handler's creation fails: the process exits */
        w->none_left = r == -ENOTRECOVERABLE;
        w->started = true;
        W->started++;
        W->n_start_failed++;
        finish_worker(w);
        return;
    }
    if (restored && unusable_shard(w, w->join.step))
        violate("worker %d trains from step %" PRIu64 ", whose shard it cannot use", w->id, w->join.step);
    train(w);
}

/* A survivor's start-up ended (the handler's rejoined()): a new coordinator
 * for its machine, which is told rejoined, or rejoin-failed (it exits). */
static void rejoined(struct worker *w, int r, bool restored)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_REJOIN_FAILED };

    if (r == 0 && !restored)
        r = -ESTALE; /* the job starts from nothing; this state is not that */
    if (r == 0 && w->join.step != w->rejoin_step) { /* the job picked another step: restored in place */
        preempt_sm_facts_(w->wk.sm)->run = w->join.step;
        W->in_place_restored++;
    }
    if (r == 0 && preempt_coord_new_io_(&sim_io, io_open(w), &w->cc, &w->join, &sim_cops, w, &w->wk.coord) < 0)
        abort();
    w->rejoining = false;
    w->alive = true;
    w->started = true;
    W->started++;
    if (r < 0) { /* as the handler: it exits, saved */
        ev.u.rejoin_failed.err = r;
        post(w, ev);
        W->n_start_failed++;
        finish_worker(w);
        return;
    }
    if (W->trace_job) {
        preempt_job_trace_start_(&w->jt, w->wk.coord);
        w->coord_traced = true;
    }
    w->in_place++;
    W->in_place_n++;
    ev.kind = PREEMPT_EV_REJOINED;
    ev.u.rejoined.inc = w->join.incarnation;
    ev.u.rejoined.step = w->join.step;
    post(w, ev);
    act(w);
}

static void start_log(void *arg, int level, const char *line)
{
    struct worker *w = arg;

    if (W->verbose)
        printf("%10.3f w%d %s\n", (double)W->now_us / 1e6, w->id, line);
    if (level >= 3)
        violate("worker %d: %s", w->id, line);
}

static const struct preempt_start_ops start_ops = {
    .join = join, .restore = restore, .report = report, .set_aside = set_aside_step, .end = start_end,
    .log = start_log,
};

static void on_restored(int status, void *arg)
{
    struct worker *w = arg;
    struct told *t = &W->told[w->attempt];

    w->phase = NULL;
    if (status < 0) {
        violate("worker %d: the restore barrier of incarnation %" PRIu64 " failed: %s", w->id, w->join.incarnation,
                w->smsg);
        return;
    }
    if (!t->outcome) {
        t->outcome = true;
        t->outcome_v = w->restore_outcome;
    } else if (t->outcome_v != w->restore_outcome) {
        violate("worker %d's restore record says %d, another worker's %d", w->id, w->restore_outcome, t->outcome_v);
        return;
    }
    preempt_start_barrier_(&w->st, 0, w->restore_outcome);
}

static void on_joined(int status, void *arg)
{
    struct worker *w = arg;
    struct told *t = &W->told[w->attempt];
    unsigned n_pend = w->attempt ? 0 : w->n_pend; /* settling removes them from w->pend (w->cpend stays) */

    w->phase = NULL;
    if (status < 0) {
        violate("worker %d: start-up failed: %s", w->id, w->smsg);
        return;
    }
    for (unsigned i = 0; i < n_pend; i++) /* as the handler: settle() each */
        wk_settle(w, w->cpend[i].step - (W->sabotage && w->id == 0), w->cpend[i].decision);
    if (!t->inc) {
        t->inc = true;
        t->incarnation = w->join.incarnation;
    } else if (t->incarnation != w->join.incarnation)
        violate("worker %d joined incarnation %" PRIu64 ", another worker %" PRIu64, w->id, w->join.incarnation,
                t->incarnation);
    W->incarnation = w->join.incarnation;
    restores(w, w->join.have_step, w->join.step);
    preempt_start_joined_(&w->st, 0, w->join.have_step, w->join.step);
}

/* Every worker's process starts: start-up runs (join, resolve its pending
 * shards, the barrier, the restore barrier), then training. */
static void start_incarnation(void)
{
    W->kill_us = 0;
    W->started = 0;
    memset(W->told, 0, sizeof(W->told));
    W->n_start_failed = 0;
    for (unsigned i = 0; i < W->n; i++) {
        struct worker *w = &W->w[i];
        struct worker keep = *w;

        *w = (struct worker){ .id = (int)i, .alive = true, .async = keep.async, .step_base_us = keep.step_base_us,
                              .save_base_us = keep.save_base_us, .delay_us = keep.delay_us,
                              .save_fails = keep.save_fails, .total_steps = keep.total_steps,
                              .shards = keep.shards, .n_shards = keep.n_shards, .cap_shards = keep.cap_shards,
                              .max_save_ms = keep.max_save_ms, .n_pend = keep.n_pend, .io_gen = keep.io_gen,
                              .in_place = keep.in_place };
        memcpy(w->pend, keep.pend, sizeof(w->pend));
        if (keep.rejoining) { /* in place: its machine and its trace live on */
            w->rejoining = true;
            w->rejoin_step = keep.rejoin_step;
            w->wk = keep.wk;
            w->last_src = keep.last_src;
            w->trace = keep.trace;
            w->trace_len = keep.trace_len;
            w->trace_cap = keep.trace_cap;
            w->last_rec = keep.last_rec;
            w->have_rec = keep.have_rec; /* what it knew of the last incarnation's commits stays there */
        } else {
            free(keep.trace); /* a violation dumps the incarnation it happened in */
        }
        if (W->local) { /* the newest checkpoint it holds (the local restore) */
            uint64_t newest = 0;

            for (size_t k = 0; k < w->n_shards; k++)
                if (w->shards[k] > newest)
                    newest = w->shards[k];
            restores(w, w->n_shards > 0, newest);
            begin_training(w, newest);
            continue;
        }
        w->cc = (struct preempt_coord_cfg){ .job = "sim", .worker = i, .workers = W->n, .lease_ttl_s = W->ttl_s,
                                            .join_timeout_ms = 60000, .give_up_ms = W->give_up_ms,
                                            .decl_trace = { preempt_job_trace_decl_, &w->jt },
                                            .pid = 1000 + (long)i,
                                            .host = "sim" };
        w->jt = (struct preempt_job_trace){ .line = job_add, .now_ms = job_now, .arg = w };
        w->st = (struct preempt_start){ .ops = &start_ops, .arg = w, .trace = &w->cc.decl_trace,
                                        .instance = w->rejoining ? w->in_place + 1 : 0 };
        if (w->rejoining) /* its phases' machines numbered on, as the handler's */
            w->cc.phase_no = keep.cc.phase_no;
        join(w);
    }
}

static void arm_faults_and_notices(uint64_t span_us)
{
    unsigned n_notices = (unsigned)between(0, 3);
    uint64_t t0 = W->now_us;

    if (W->scale) { /* SIGTERM to worker 0 a third into training; nothing else goes wrong */
        struct item *it = item_new(IT_NOTICE);

        it->src = PREEMPT_SOURCE_SIGNAL;
        it->kill_us = t0 + span_us / 3 + W->cfg.bound_ms * 1000u;
        arrive(&W->w[0], it, t0 + span_us / 3);
        return;
    }

    for (unsigned k = 0; k < n_notices; k++) {
        struct worker *w = &W->w[between(0, W->n - 1)];
        uint64_t at = t0 + between(span_us / 10, span_us * 6 / 10);
        unsigned pick = (unsigned)between(0, 9);
        struct item *it = item_new(IT_NOTICE);

        it->src = pick < 4 ? PREEMPT_SOURCE_SIGNAL : pick < 6 ? PREEMPT_SOURCE_GCE
                  : pick < 8                     ? PREEMPT_SOURCE_AWS : PREEMPT_SOURCE_AZURE;
        it->deadline_in_ms = it->src == PREEMPT_SOURCE_SIGNAL ? 0 : between(2000, 90000);
        it->advisory = it->src == PREEMPT_SOURCE_AWS && chance(30);
        if (!W->local && chance(10)) { /* an operator's notice (preemptctl) instead */
            schedule(at, E_OPNOTICE, 0, 0, NULL, (int64_t)between(2000, 60000));
            free(it);
            continue;
        }
        if (!it->advisory) {
            uint64_t kill = at + (it->deadline_in_ms ? it->deadline_in_ms
                                  : W->cfg.grace_ms ? W->cfg.grace_ms : W->cfg.bound_ms) * 1000u;
            bool withdrawn = it->src != PREEMPT_SOURCE_SIGNAL && chance(25);

            it->kill_us = kill;
            if (withdrawn) {
                struct item *wd = item_new(IT_WITHDRAW);
                uint64_t wat = at + between(100000, 3000000);

                wd->src = it->src;
                arrive(w, wd, wat);
                if (wat < kill)
                    it->kill_us = 0;
            }
        }
        arrive(w, it, at);
    }
    if (chance(10)) {
        schedule(t0 + between(0, span_us), E_CRASH, (int)between(0, W->n - 1), 0, NULL, 0);
        W->faulted = true;
    }
    if (!W->local && chance(10)) {
        uint64_t at = t0 + between(0, span_us);

        W->faulted = true;
        schedule(at, E_ETCD_DOWN, 0, 0, NULL, 0);
        schedule(at + between(200000, 8000000), E_ETCD_UP, 0, 0, NULL, 0);
    }
    if (!W->local && chance(15)) {
        schedule(t0 + between(0, span_us), E_WBREAK, (int)between(0, W->n - 1), 0, NULL,
                 (int64_t)between(50000, 5000000));
        W->faulted = true;
    }
    if (W->watcher && obs_between(0, 2) == 0) /* the observer's stream breaks (a re-read, or a catch-up) */
        schedule(t0 + obs_between(0, span_us), E_WBREAK, (int)W->n, 0, NULL, (int64_t)obs_between(50000, 5000000));
    if (chance(5)) { /* a stall (swapping, a stuck file system): past the lease */
        uint64_t d = between(500000, 3000000ull * W->ttl_s);

        W->faulted = true;

        schedule(t0 + between(0, span_us), E_PAUSE, (int)between(0, W->n - 1), 0, NULL, (int64_t)d);
        W->bound_us += d; /* a frozen process cannot exit: the bound grows by the stall */
    }
}

static bool all_gone(void)
{
    for (unsigned i = 0; i < W->n; i++)
        if (W->w[i].alive)
            return false;
    return true;
}

static void crash(struct worker *w)
{
    if (!w->alive)
        return;
    w->crashed = true;
    w->exit_us = W->now_us;
    w->saving = w->stepping = false;
    finish_worker(w);
    w->io_dead = true; /* no keep-alive, no reply read: its lease runs out */
}

static void handle(const struct sev *e)
{
    struct worker *w = &W->w[e->w];
    int64_t rev0;

    switch (e->kind) {
    case E_STEP:
        if (!w->alive || e->gen != w->step_gen || !w->stepping)
            break;
        if (w->paused) { /* the step ends when the stall does */
            schedule(W->now_us + 1000, E_STEP, w->id, e->gen, NULL, 0);
            break;
        }
        w->stepping = false;
        count_step(w);
        pump(w);
        break;
    case E_SNAPSHOT:
        if (!w->alive || e->gen != w->save_gen || !w->saving)
            break;
        if (w->paused) {
            schedule(W->now_us + 1000, E_SNAPSHOT, w->id, e->gen, NULL, 0);
            break;
        }
        snapshot_done(w);
        pump(w);
        break;
    case E_SAVE:
        if (!w->alive || e->gen != w->save_gen || !(w->saving || w->persisting))
            break;
        if (w->paused) {
            schedule(W->now_us + 1000, E_SAVE, w->id, e->gen, NULL, 0);
            break;
        }
        save_done(w);
        pump(w);
        break;
    case E_APPLY:
        apply(e->p);
        break;
    case E_ARRIVE: {
        struct item *it = e->p;

        if (!w->alive) {
            if (it->kind == IT_REPLY)
                req_done(w, it->req);
            item_free(it);
            break;
        }
        if (is_observer(w)) { /* a watcher's loop: nothing but its watch */
            process(w, it);
            item_free(it);
            break;
        }
        it->next = NULL;
        if (w->inbox_tail)
            w->inbox_tail->next = it;
        else
            w->inbox = it;
        w->inbox_tail = it;
        if (in_loop(w))
            pump(w);
        break;
    }
    case E_FLUSHED:
        if (w->alive && w->flushing)
            finish_worker(w);
        break;
    case E_CRASH:
        crash(w);
        break;
    case E_PAUSE:
        if (w->alive && !w->paused) {
            w->paused = true;
            schedule(W->now_us + (uint64_t)e->a, E_PAUSE_END, w->id, 0, NULL, 0);
        }
        break;
    case E_PAUSE_END:
        w->paused = false;
        if (w->alive && in_loop(w))
            pump(w);
        break;
    case E_ETCD_DOWN:
        W->etcd_down = true;
        for (unsigned i = 0; i < W->n + (W->watcher != NULL); i++)
            if (W->w[i].watching && W->w[i].wup && W->w[i].alive) {
                W->w[i].wup = false;
                if (!W->w[i].io_dead)
                    W->w[i].wops.on_link(false, "etcd down", W->w[i].warg);
            }
        break;
    case E_ETCD_UP:
        W->etcd_down = false;
        sim_etcd_refresh(W->etcd, W->now_us / 1000u); /* a new leader renews every lease */
        for (unsigned i = 0; i < W->n + (W->watcher != NULL); i++) {
            struct worker *x = &W->w[i];

            if (x->watching && x->alive && !x->wup) {
                x->wup = true;
                if (is_observer(x) ? obs_between(0, 1) == 0 : chance(50))
                    watch_reset(x, W->now_us + net_us(x));
                else
                    watch_catch_up(x, W->now_us + net_us(x));
            }
        }
        break;
    case E_WBREAK:
        if (w->watching && w->wup && w->alive && !w->io_dead) {
            w->wup = false;
            w->wops.on_link(false, "stream broke", w->warg);
            schedule(W->now_us + (uint64_t)e->a, E_WUP, w->id, 0, NULL, 0);
        }
        break;
    case E_WUP:
        if (w->watching && w->alive && !w->wup && !W->etcd_down) {
            w->wup = true;
            if (is_observer(w) ? obs_between(0, 1) == 0 : chance(50))
                watch_reset(w, W->now_us + net_us(w)); /* compacted: re-read */
            else
                watch_catch_up(w, W->now_us + net_us(w));
        }
        break;
    case E_OPNOTICE: {
        char key[PREEMPT_KEY_MAX];
        struct preempt_value val;
        const char *why;

        rev0 = sim_etcd_rev(W->etcd);
        (void)preempt_key_(key, sizeof(key), SIM_JOBP, PREEMPT_KEY_NOTICE_OP,
                           &(struct preempt_key){ .inc = W->incarnation });
        if (preempt_rv_notice_op_write_(&val,
                                        &(struct preempt_rv_notice_op){
                                            .deadline = EPOCH_MS + W->now_us / 1000u + (uint64_t)e->a,
                                            .source = "operator" },
                                        PREEMPT_MAX_WORKERS, &why) < 0)
            violate("the operator's notice is not %s", why);
        if (!W->etcd_down) {
            sim_etcd_put(W->etcd, key, preempt_value_str_(&val), 0, now_ms());
            store_changed(rev0);
            schedule(W->now_us + (uint64_t)e->a * 1000u, E_KILL, 0, 0, NULL,
                     (int64_t)(W->now_us + (uint64_t)e->a * 1000u));
        }
        break;
    }
    case E_KILL:
        /* gen 0: a live notice's deadline reached the job (the earliest
         * counts); gen 1, bound_us later: whoever still runs is killed. */
        if (e->gen == 0) {
            if (e->src >= 0 && W->w[e->w].withdrawals[e->src] != e->src_gen)
                break; /* its source withdrew it before the deadline */
            if (!W->kill_us || (uint64_t)e->a < W->kill_us) {
                W->kill_us = (uint64_t)e->a;
                schedule(W->kill_us + W->bound_us, E_KILL, 0, 1, NULL, e->a);
            }
            break;
        }
        if ((uint64_t)e->a != W->kill_us)
            break; /* an earlier deadline took its place */
        for (unsigned i = 0; i < W->n; i++)
            if (W->w[i].alive) {
                violate("worker %u still runs %.3f s after the job's deadline (bound %.3f s)", i,
                        (double)(W->now_us - W->kill_us) / 1e6, (double)W->bound_us / 1e6);
                crash(&W->w[i]);
            }
        break;
    }
}

/* Runs events until done() holds or a violation. */
static void run_until(bool (*done)(void), const char *what)
{
    uint64_t start = W->now_us;

    while (!done() && !W->violation[0]) {
        uint64_t exp = W->local || W->etcd_down ? 0 : sim_etcd_next_expiry(W->etcd) * 1000u;
        struct sev e;

        if (W->n_heap == 0) {
            violate("nothing left to happen, but %s", what);
            break;
        }
        if (exp && exp <= W->heap[0].t) { /* a lease runs out first */
            int64_t rev0 = sim_etcd_rev(W->etcd);

            if (exp > W->now_us)
                W->now_us = exp;
            sim_etcd_expire(W->etcd, W->now_us / 1000u);
            store_changed(rev0);
            continue;
        }
        e = pop();
        if (e.t > W->now_us)
            W->now_us = e.t;
        if (W->now_us - start > (uint64_t)LIMIT_MS * 1000u) {
            violate("%s within %u s", what, LIMIT_MS / 1000u);
            break;
        }
        handle(&e);
    }
}

static bool all_started(void)
{
    return W->started == W->n;
}

/* A new process for every worker: start-up, until every worker trains. */
static void teardown_incarnation(void);

/* A new process for every worker: start-up, until every worker trains.
 * A start-up that failed everywhere (a restore that failed, or no step
 * left after the fall-backs) is started again, as a scheduler restarts a
 * job whose processes exited (at most 4 times); false when it never
 * trained. Failing on some workers only is a violation: the restore
 * record is one. */
static bool start_job(void)
{
    W->n_aside = 0;
    for (unsigned k = 0; k < 5; k++) {
        start_incarnation();
        run_until(all_started, "not every worker's start-up ended");
        if (W->violation[0])
            return false;
        if (!W->n_start_failed)
            return true;
        if (W->n_start_failed != W->n) {
            violate("%u of %u workers' start-up failed; the others train", W->n_start_failed, W->n);
            return false;
        }
        W->start_fails++;
        W->none_left += W->w[0].none_left;
        teardown_incarnation();
        W->now_us += 1000000; /* the restart */
    }
    return false;
}

/* Training, the preemptions, every worker's end. */
static void run_incarnation(void)
{
    uint64_t span = 0;

    for (unsigned i = 0; i < W->n; i++) {
        uint64_t s = W->w[i].step_base_us * (W->w[i].total_steps - preempt_sm_facts_(W->w[i].wk.sm)->run);

        if (s > span)
            span = s;
    }
    W->bound_us = W->base_bound_us;
    arm_faults_and_notices(span);
    run_until(all_gone, "the incarnation did not end");
    W->measuring = false;
    /* Deadlines: how late the last exit came. */
    if (W->kill_us)
        for (unsigned i = 0; i < W->n; i++)
            if (W->w[i].exited && W->w[i].exit_us > W->kill_us && W->w[i].exit_us - W->kill_us > W->max_late_us)
                W->max_late_us = W->w[i].exit_us - W->kill_us;
}

/* ---- the observer: the real watcher, as preemptctl watch runs it ----------------------------- */

/* What the observer reports, shown with -v (the check reads its state). */
static void obs_notice(struct preempt_watcher *wt, const struct preempt_notice_info *n, void *ud)
{
    (void)wt;
    (void)ud;
    if (W->verbose)
        fprintf(stderr, "%10.3f watcher: notice of incarnation %" PRIu64 ": deadline %" PRIu64 " worker %d %s%s\n",
                (double)W->now_us / 1e6, n->incarnation, n->deadline_unix_ms, n->worker, n->source,
                n->withdrawn ? " withdrawn" : "");
}

/* The observer has every change of the store (or cannot now: etcd down). */
static bool obs_caught_up(void)
{
    const struct worker *o = &W->w[W->n];
    size_t n;
    const struct sim_ev *h = sim_etcd_history(W->etcd, &n);
    int64_t last = 0; /* the newest change its watch covers (other writes send it nothing) */

    while (n > 0 && !last) {
        n--;
        if (watchable(h[n].kv.key) && in_range(o, h[n].kv.key))
            last = h[n].rev;
    }
    return W->etcd_down || (o->watching && o->wup && o->wnext > last);
}

/* A fresh reader: a second watcher whose io hands it one read of the
 * store (the watch's first message), as a watcher started now would get. */
static struct preempt_etcd_watch_ops fresh_ops;
static void *fresh_arg;

static int fresh_watch(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                       void *arg)
{
    (void)io;
    (void)key;
    (void)end;
    fresh_ops = *ops;
    fresh_arg = arg;
    return 0;
}

static void fresh_free(void *io)
{
    (void)io;
}

static const struct preempt_coord_io fresh_io = { .watch = fresh_watch, .free = fresh_free };

/* After an incarnation, once the observer has caught up: whatever it went
 * through (re-reads of a compacted store, etcd's restarts, its stream's
 * breaks), it knows what a watcher started now reads. When a fresh read
 * finds a notice of the incarnation (a worker's, the operator's, a
 * claim's), the observer reported one of that incarnation, as early or
 * earlier: it may have seen records that are gone since (a driver's claim,
 * which carries its notice, goes with the driver's lease). */
static void check_observer(void)
{
    struct preempt_etcd_kv *kvs = NULL;
    struct preempt_watcher *fresh = NULL;
    struct preempt_notice_info want, got;
    size_t n = 0;

    if (!W->watcher)
        return;
    run_until(obs_caught_up, "the watcher did not catch up");
    if (W->violation[0] || W->etcd_down)
        return;
    if (preempt_watcher_new_io_(&fresh_io, NULL, "sim", NULL, NULL, &fresh) < 0)
        abort();
    (void)sim_etcd_snapshot(W->etcd, SIM_JOBP, NULL, &kvs, &n);
    fresh_ops.on_reset(kvs, n, sim_etcd_rev(W->etcd), 1, fresh_arg);
    preempt_etcd_kvs_free_(kvs, n);
    if (preempt_watcher_get_notice(fresh, &want) == 0 && want.incarnation == W->incarnation) {
        W->obs_checked++;
        if (preempt_watcher_get_notice(W->watcher, &got) < 0)
            violate("the watcher reported no notice; a fresh read finds one of incarnation %" PRIu64, want.incarnation);
        else if (got.incarnation != want.incarnation || got.deadline_unix_ms > want.deadline_unix_ms)
            violate("the watcher reports incarnation %" PRIu64 " deadline %" PRIu64 " worker %d %s%s; a fresh read: "
                    "incarnation %" PRIu64 " deadline %" PRIu64 " worker %d %s%s",
                    got.incarnation, got.deadline_unix_ms, got.worker, got.source, got.withdrawn ? " withdrawn" : "",
                    want.incarnation, want.deadline_unix_ms, want.worker, want.source,
                    want.withdrawn ? " withdrawn" : "");
    }
    preempt_watcher_free(fresh);
}

/* After an incarnation: its machines and its rounds. */
static void check_incarnation(void)
{
    for (unsigned i = 0; i < W->n && !W->violation[0]; i++) {
        struct worker *w = &W->w[i];

        if (preempt_sm_illegal_(w->wk.sm) || preempt_sm_dropped_(w->wk.sm))
            violate("worker %u: %u illegal and %u dropped events", i, preempt_sm_illegal_(w->wk.sm),
                    preempt_sm_dropped_(w->wk.sm));
        if (w->exited && w->wk.exit_reason == PREEMPT_EXIT_SAVED && !w->have_commit)
            violate("worker %u exits saved without a committed checkpoint", i);
        if (w->rejoining && (!w->have_commit || w->last_commit != w->rejoin_step ||
                             preempt_sm_facts_(w->wk.sm)->run != w->rejoin_step))
            violate("worker %u stays in place at step %" PRIu64 " (run %" PRIu64 "), which is not the commit it saw "
                    "(%s%" PRIu64 ")", i, w->rejoin_step, preempt_sm_facts_(w->wk.sm)->run,
                    w->have_commit ? "step " : "none, ", w->last_commit);
        for (unsigned k = 0; k < W->n && !W->violation[0] && w->rejoining; k++)
            if (!holds(&W->w[k], w->rejoin_step) && !has_pending(&W->w[k], w->rejoin_step))
                violate("worker %u stays in place at step %" PRIu64 ", but worker %u holds no shard of it", i,
                        w->rejoin_step, k);
        /* "saved": every worker holds that step, decided or still pending
         * (the restart resolves it: check_restart) */
        for (unsigned k = 0; k < W->n && !W->violation[0] && w->exited && w->wk.exit_reason == PREEMPT_EXIT_SAVED; k++)
            if (!holds(&W->w[k], w->last_commit) && !has_pending(&W->w[k], w->last_commit))
                violate("worker %u exits saved at step %" PRIu64 ", but worker %u holds no shard of it", i,
                        w->last_commit, k);
    }
    for (unsigned i = 0; i < W->n; i++)
        W->ended[i] = (struct ending){ .exited = W->w[i].exited, .undecided = W->w[i].undecided,
                                       .have_commit = W->w[i].have_commit, .reason = W->w[i].wk.exit_reason,
                                       .last_commit = W->w[i].last_commit, .in_place = W->w[i].rejoining,
                                       .rejoin_step = W->w[i].rejoin_step };
    W->have_ended = true;
}

/* After the restart's start-up (which resolved every pending shard by its
 * decision record and agreed on the restore step): what the last
 * incarnation's workers said at their exit holds. */
static void check_restart(void)
{
    uint64_t truth = 0, restore = W->restore_step, before = W->restored;
    bool have_truth = false, have_restore = W->restore_have, had_before = W->have_restored;

    if (!W->have_ended || W->violation[0])
        return;
    /* "saved": every worker holds that step, decided. */
    for (unsigned i = 0; i < W->n && !W->violation[0]; i++) {
        const struct ending *x = &W->ended[i];

        if (x->exited && x->reason == PREEMPT_EXIT_SAVED && !set_aside(x->last_commit))
            for (unsigned k = 0; k < W->n && !W->violation[0]; k++)
                if (!holds(&W->w[k], x->last_commit))
                    violate("worker %u exited saved at step %" PRIu64 ", but worker %u holds no shard of it", i,
                            x->last_commit, k);
    }
    /* The restart restores the newest step every worker holds. */
    for (unsigned k = 0; k < W->w[0].n_shards; k++) {
        uint64_t s = W->w[0].shards[k];
        bool all = true;

        for (unsigned i = 1; i < W->n && all; i++)
            all = holds(&W->w[i], s);
        if (all && (!have_truth || s > truth)) {
            truth = s;
            have_truth = true;
        }
    }
    if (!W->violation[0] && (have_restore != have_truth || (have_truth && restore != truth)))
        violate("the restart restores %s%" PRIu64 ", but the newest step every worker holds is %s%" PRIu64,
                have_restore ? "step " : "nothing, ", restore, have_truth ? "step " : "none, ", truth);
    for (unsigned i = 0; i < W->n && !W->violation[0]; i++)
        if (W->ended[i].exited && W->ended[i].reason == PREEMPT_EXIT_SAVED && W->ended[i].last_commit > restore &&
            !set_aside(W->ended[i].last_commit))
            violate("worker %u exited saved at step %" PRIu64 ", newer than the restore step %" PRIu64, i,
                    W->ended[i].last_commit, restore);
    /* One decision per round: "saved" means the restart restores the step
     * the worker saw committed; "not saved" (its decision known) means it
     * restores what was committed before this preemption. */
    for (unsigned i = 0; i < W->n && !W->violation[0]; i++) {
        const struct ending *x = &W->ended[i];
        bool have_want = x->have_commit || had_before;
        uint64_t want = x->have_commit ? x->last_commit : before;

        if (!x->exited || x->undecided || (x->reason != PREEMPT_EXIT_SAVED && x->reason != PREEMPT_EXIT_NOT_SAVED))
            continue;
        if (have_want && set_aside(want))
            continue; /* unusable at the restore: the job fell back past it, as it must */
        if (have_want != have_restore || (have_want && want != restore))
            violate("worker %u exited %s, but the restart restores %s%" PRIu64 " (it knew of %s%" PRIu64 ")", i,
                    preempt_exit_to_string_(x->reason), have_restore ? "step " : "nothing, ", restore,
                    have_want ? "step " : "nothing, ", want);
    }
    /* In place: the job goes on from the survivor's step (its state), or
     * from an older one when that one was set aside (restored in place). */
    for (unsigned i = 0; i < W->n && !W->violation[0]; i++)
        if (W->ended[i].in_place && !set_aside(W->ended[i].rejoin_step) &&
            (!have_restore || restore != W->ended[i].rejoin_step))
            violate("worker %u stayed in place at step %" PRIu64 ", but the job goes on from %s%" PRIu64, i,
                    W->ended[i].rejoin_step, have_restore ? "step " : "nothing, ", restore);
    W->restored = restore;
    W->have_restored = have_restore;
}

static void dump_traces(const char *dir)
{
    for (unsigned i = 0; i < W->n; i++) {
        char path[4096];
        FILE *f;

        (void)snprintf(path, sizeof(path), "%s/sim-%" PRIu64 "-w%u.trace", dir, W->seed, i);
        f = fopen(path, "w");
        if (!f)
            continue;
        fprintf(f, "# preempt-sim seed %" PRIu64 ", worker %u of %u, incarnation %" PRIu64 ": %s\n", W->seed, i, W->n,
                W->incarnation, W->violation);
        fputs(W->w[i].trace ? W->w[i].trace : "", f);
        (void)fclose(f);
        fprintf(stderr, "  trace: %s (preempt-replay %s)\n", path, path);
    }
}

static void teardown_incarnation(void)
{
    W->etcd_down = false; /* its end was among the events dropped below */
    while (W->n_heap) {
        struct sev e = pop();

        if (e.kind == E_ARRIVE)
            item_free(e.p);
        else if (e.kind == E_APPLY) {
            req_free(e.p);
        }
    }
    for (unsigned i = 0; i < W->n; i++) {
        struct worker *w = &W->w[i];

        finish_worker(w);
        preempt_coord_phase_free_(w->phase);
        w->phase = NULL;
        preempt_coord_free_(w->wk.coord);
        w->wk.coord = NULL;
        if (w->rejoining) /* in place: its machine waits for the next incarnation */
            continue;
        preempt_sm_free_(w->wk.sm);
        w->wk.sm = NULL;
    }
    if (W->watcher && W->w[W->n].watching) { /* the observer outlives the job's processes: what was */
        struct worker *ob = &W->w[W->n];  /* on its way to it (dropped above) comes on */

        ob->wup = true;
        watch_catch_up(ob, W->now_us + net_us(ob));
    }
}

/* Why round 1 of the decision's episode may have been aborted: its step
 * was raised (its agreed record put more than once: created, then
 * raised), else a notice came after the round was requested (a worker's
 * or an operator's, perhaps with an earlier deadline than the round was
 * planned for), else a notice with an earlier deadline than any before
 * came after the preemption's first step was agreed and before the round
 * was requested (the round was planned for it, with less time than the
 * preemption began with), else neither (a worker behind the driver's
 * step, or a plan that left too little). The enum is declared with the
 * world (its counts). */
static enum final_why final_why(const struct sim_ev *h, size_t n, const struct preempt_key *d)
{
    unsigned puts = 0;
    bool agreed = false, requested = false, later = false, earlier = false;
    uint64_t earliest = UINT64_MAX;

    for (size_t i = 0; i < n; i++) {
        struct preempt_key k = { 0 };
        union preempt_rv rec;
        const char *why;
        uint64_t deadline;
        int id;

        if (h[i].type != PREEMPT_ETCD_PUT)
            continue;
        id = preempt_key_parse_(h[i].kv.key, SIM_JOBP, &k);
        if (id < 0 || k.inc != d->inc)
            continue;
        if (id == (int)PREEMPT_KEY_AGREED && k.ep == d->ep && k.round == 1)
            puts++;
        if (id == (int)PREEMPT_KEY_AGREED && k.ep == d->ep && k.round == 0)
            agreed = true;
        if (id == (int)PREEMPT_KEY_FINAL && k.ep == d->ep)
            requested = true;
        if (id != (int)PREEMPT_KEY_NOTICE_OP && (id != (int)PREEMPT_KEY_NOTICE || k.ep != d->ep))
            continue;
        if (requested)
            later = true;
        if (preempt_rv_read_((enum preempt_key_id)id, NULL, h[i].kv.value, PREEMPT_MAX_WORKERS, &rec, &why) < 0)
            continue; /* read as every reader reads it */
        deadline = id == (int)PREEMPT_KEY_NOTICE ? rec.notice.deadline : rec.notice_op.deadline;
        if ((id == (int)PREEMPT_KEY_NOTICE && rec.notice.withdrawn) || deadline == 0)
            continue;
        if (agreed && !requested && deadline < earliest)
            earlier = true;
        if (deadline < earliest)
            earliest = deadline;
    }
    return puts > 1 ? FINAL_RAISED : later ? FINAL_LATER_NOTICE : earlier ? FINAL_EARLIER_DEADLINE : FINAL_OTHER;
}

/* One seed: returns true when every check held. */
/* The grace periods' final rounds of the run, by their decision records
 * (each written once: create-if-absent). One aborted without a fault is
 * grace training lost; not a violation (a fault may be the cause), a
 * figure, sorted by why (final_why: a raise is the drift allowance's case). */
static void count_finals(void)
{
    size_t n;
    const struct sim_ev *h = sim_etcd_history(W->etcd, &n);

    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;

        if (h[i].type == PREEMPT_ETCD_PUT &&
            preempt_key_parse_(h[i].kv.key, SIM_JOBP, &k) == (int)PREEMPT_KEY_DECISION && W->cc_crashed &&
            !W->cc_outcome && k.inc == W->cc_round.inc && k.ep == W->cc_round.ep && k.round == W->cc_round.round)
            W->cc_outcome = strncmp(h[i].kv.value, "committed ", 10) == 0 ? 1 : 2;
        if (h[i].type == PREEMPT_ETCD_PUT &&
            preempt_key_parse_(h[i].kv.key, SIM_JOBP, &k) == (int)PREEMPT_KEY_DECISION && k.round == 1) {
            if (strncmp(h[i].kv.value, "committed ", 10) == 0)
                W->finals_committed++;
            else {
                W->finals_aborted++;
                if (!W->faulted && W->cfg.plan == PREEMPT_PLAN_MEASURED) {
                    W->finals_aborted_clean++;
                    W->finals_aborted_why[final_why(h, n, &k)]++;
                }
            }
        }
    }
}

/* The command line's choices that shape every seed's run. */
struct sim_opts {
    unsigned max_workers, scale;
    uint64_t rps;
    const char *trace_dir;
    bool verbose, sabotage, crash_completer, two_phase, restore_faults, trace_all, in_place;
};

static bool run_seed(uint64_t seed, const struct sim_opts *o, struct world *wd)
{
    unsigned max_workers = o->max_workers, scale = o->scale;
    bool sabotage = o->sabotage;
    unsigned incarnations;
    uint64_t step_us, save_us, delay_us;
    bool ok;

    memset(wd, 0, sizeof(*wd));
    W = wd;
    W->seed = seed;
    W->verbose = o->verbose;
    W->sabotage = sabotage;
    W->crash_completer = o->crash_completer;
    W->two_phase = o->two_phase;
    W->restore_faults = o->restore_faults;
    W->in_place = o->in_place;
    W->trace_job = o->trace_dir != NULL;
    rng_state = seed * 0x2545F4914F6CDD1Dull + 1;
    W->n = chance(40) ? (unsigned)between(1, 4) : chance(70) ? (unsigned)between(5, 16) : (unsigned)between(17, 64);
    if (W->n > max_workers)
        W->n = max_workers;
    if (scale) {
        W->n = scale;
        W->scale = true;
        W->svc_us = o->rps ? (1000000 + o->rps - 1) / o->rps : 0;
    }
    W->w = calloc(W->n + 1, sizeof(*W->w)); /* and the observer's io */
    W->ended = calloc(W->n, sizeof(*W->ended));
    if (!W->w || !W->ended)
        abort();
    W->local = W->n == 1 && chance(50) && !scale;
    W->etcd = sim_etcd_new();
    W->ttl_s = (unsigned)between(2, 10);
    W->give_up_ms = between(3000, 15000);
    W->cfg = (struct preempt_config_facts){
        .grace_ms = chance(40) ? 0 : between(2000, 60000), .bound_ms = 30000,
        .agree_timeout_ms = between(2000, 10000), .margin_ms = 500,
        .plan = chance(80) ? PREEMPT_PLAN_MEASURED : PREEMPT_PLAN_TF,
        .second = chance(70) ? PREEMPT_SECOND_IGNORE : PREEMPT_SECOND_EXIT,
        .workers = W->local ? 1 : W->n,
        .in_place = o->in_place && !W->local, /* as the handler: a job's only (no draw: the seeds stay as they were) */
    };
    step_us = between(5, 800) * 1000u;
    save_us = between(20, 4000) * 1000u;
    delay_us = between(100, 5000);
    for (unsigned i = 0; i < W->n; i++) {
        struct worker *w = &W->w[i];

        w->async = chance(50);
        w->step_base_us = step_us * between(98, 102) / 100;
        w->save_base_us = save_us * between(90, 110) / 100;
        w->max_save_ms = (w->save_base_us * 3 / 2 + 999) / 1000;
        w->delay_us = delay_us * between(1, 4);
        w->save_fails = chance(3);
        W->faulted = W->faulted || w->save_fails;
        w->total_steps = between(20, 400);
    }
    for (unsigned i = 1; i < W->n; i++)
        W->w[i].total_steps = W->w[0].total_steps;
    if (!scale && W->n > 1 && chance(15)) { /* one slow disk: the final round must be planned for it */
        struct worker *w = &W->w[between(0, W->n - 1)];

        w->save_base_us *= 3;
        w->max_save_ms = (w->save_base_us * 3 / 2 + 999) / 1000;
    }
    for (unsigned i = 0; i < W->n; i++) /* the bound's (below): the slowest worker's */
        if (W->w[i].save_base_us > save_us)
            save_us = W->w[i].save_base_us;
    incarnations = (unsigned)between(1, 3);
    if (scale) { /* one clean preemption: a signal to worker 0, no faults; 100 ms steps, grace 0 */
        W->cfg.grace_ms = 0;
        W->cfg.agree_timeout_ms = 10000;
        W->cfg.plan = PREEMPT_PLAN_MEASURED;
        W->ttl_s = 10;
        W->give_up_ms = 15000;
        for (unsigned i = 0; i < W->n; i++) {
            W->w[i].step_base_us = 100000u * between(98, 102) / 100;
            W->w[i].save_fails = false;
            W->w[i].total_steps = 100;
        }
        step_us = 102000u; /* the slowest worker's */
        incarnations = 1;
    }
    if (!W->local && !scale) { /* the observer: its own stream, so the job's draws stay as they were */
        static const struct preempt_watcher_callbacks obs_cb = { .on_notice = obs_notice };
        struct worker *ob = &W->w[W->n];

        obs_rng_state = seed * 0x9E3779B97F4A7C15ull + 7;
        ob->id = (int)W->n;
        ob->alive = true;
        ob->delay_us = obs_between(100, 5000);
        if (preempt_watcher_new_io_(&sim_io, io_open(ob), "sim", &obs_cb, NULL, &W->watcher) < 0)
            abort();
    }
    /* The documented bound (docs/development.md, "Simulation"): two steps (one in
     * flight, one to the save step), the slowest save (slow saves take up
     * to 20x), the agreement's bound and the coordination writes' retry
     * bound; a stall injected into a worker adds its length. */
    W->base_bound_us = 2 * step_us + 20 * save_us * 3 / 2 + (W->cfg.agree_timeout_ms + W->give_up_ms) * 1000u;
    /* Each incarnation: start-up (the restart's, after the first: then
     * its checks), training and the preemptions, the exits. After the
     * last one that was preempted, one more start-up checks its restart. */
    if (!start_job() && !W->violation[0])
        incarnations = 0; /* never trained: nothing more to run */
    for (unsigned k = 0; incarnations && !W->violation[0]; k++) {
        bool preempted = false;

        run_incarnation();
        if (!W->violation[0])
            check_incarnation();
        if (!W->violation[0])
            check_observer();
        for (unsigned i = 0; i < W->n; i++)
            preempted = preempted || !W->w[i].exited || W->w[i].wk.exit_reason != PREEMPT_EXIT_DONE;
        if (W->violation[0] || !preempted) /* training finished: nothing to restart */
            break;
        teardown_incarnation();
        W->now_us += 1000000; /* the restart */
        if (!start_job()) /* a violation, or a start-up that failed every time */
            break;
        check_restart();
        if (k + 1 == incarnations)
            break;
    }
    if (W->violation[0]) {
        fprintf(stderr, "preempt-sim: seed %" PRIu64 ": VIOLATION (%u workers, incarnation %" PRIu64 "): %s\n", seed,
                W->n, W->incarnation, W->violation);
        fprintf(stderr, "  rerun: preempt-sim --seed %" PRIu64 "%s%s%s%s%s -v\n", seed, sabotage ? " --sabotage" : "",
                o->crash_completer ? " --crash-completer" : "", o->two_phase ? " --two-phase" : "",
                o->restore_faults ? " --restore-faults" : "", o->in_place ? " --in-place" : "");
        if (o->trace_dir)
            dump_traces(o->trace_dir);
    } else if (o->trace_all && o->trace_dir) {
        dump_traces(o->trace_dir); /* the last incarnation's, for preempt-replay */
    }
    W->watcher = preempt_watcher_free(W->watcher); /* first: the teardown then frees what was on its way to it */
    teardown_incarnation();
    count_finals();
    ok = !W->violation[0];
    for (unsigned i = 0; i < W->n; i++) {
        free(W->w[i].shards);
        free(W->w[i].trace);
    }
    free(W->w);
    free(W->ended);
    free(W->heap);
    sim_etcd_free(W->etcd);
    return ok;
}

static const char usage[] =
    "usage: preempt-sim [--seeds N] [--first S] [--seed S] [--max-workers N] [--sabotage] [--crash-completer]\n"
    "                   [--two-phase] [--restore-faults] [--in-place] [--trace-dir DIR [--trace-all]] [-v]\n"
    "       preempt-sim --scale N [--etcd-rps R] [--seeds N] [--first S] [--seed S]\n"
    "Runs the deterministic simulation of a job for seeds S .. S+N-1 (default 1 .. 1000)\n"
    "and checks its invariants after every incarnation. Exits 1 when any seed\n"
    "violates one; each violation prints its seed, and with --trace-dir writes\n"
    "every worker's trace there (preempt-replay reproduces it: the machine's records,\n"
    "the job's records and the claim's answers as it read them, its declared machines'\n"
    "transitions).\n"
    "  --trace-all       with --trace-dir: every seed's traces (its last incarnation's)\n"
    "  --seed S          one seed (with -v: the whole run, event by event)\n"
    "  --max-workers N   at most N workers per job (1-64; default 64)\n"
    "  --sabotage        plant a bug in the simulated trainer (worker 0 files each shard\n"
    "                    one step late) to show that the checks catch it\n"
    "  --two-phase       every save is two-phase: a snapshot (a fifth of the save's time)\n"
    "                    blocks the trainer, then the checkpoint persists while it trains\n"
    "                    on (persisting); its shard is reported once the persist ends\n"
    "  --restore-faults  start-up meets unusable checkpoints: about one step in eight\n"
    "                    has a shard its worker's restore refuses (bad data), and one restore\n"
    "                    in fifty fails (I/O); start-up runs the handler's table\n"
    "                    (fsmdump --machine restore): the job falls back to an older\n"
    "                    step together, or fails everywhere and is started again\n"
    "  --in-place        survivors stay in place (stay_in_place): a worker without a notice of\n"
    "                    its own that stands at the last commit keeps its machine and joins the\n"
    "                    next incarnation with the restarted workers, restoring nothing (the\n"
    "                    simulation begins its join at the incarnation's end; a notice or a kill\n"
    "                    while it waits is not modelled)\n"
    "  --crash-completer in jobs of 2 or more workers, the worker whose shard report\n"
    "                    completes a round crashes as etcd applies it (once per seed),\n"
    "                    before it can propose the commit; prints how those rounds\n"
    "                    were decided\n"
    "  --scale N         instead: a job of N workers (2-10000), 100 ms steps, one SIGTERM to\n"
    "                    worker 0 and no faults, checked the same way; prints the etcd\n"
    "                    messages of the preemption and the time until every worker knows\n"
    "                    the save step\n"
    "  --etcd-rps R      with --scale: etcd serves R requests/s, one at a time (default\n"
    "                    20000; 0: no service time)\n";

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "seeds", required_argument, NULL, 'n' }, { "first", required_argument, NULL, 'f' },
        { "seed", required_argument, NULL, 's' }, { "max-workers", required_argument, NULL, 'm' },
        { "trace-dir", required_argument, NULL, 't' }, { "verbose", no_argument, NULL, 'v' },
        { "sabotage", no_argument, NULL, 'b' }, { "help", no_argument, NULL, 'h' },
        { "scale", required_argument, NULL, 'S' }, { "etcd-rps", required_argument, NULL, 'r' },
        { "crash-completer", no_argument, NULL, 'c' }, { "two-phase", no_argument, NULL, 'T' },
        { "restore-faults", no_argument, NULL, 'R' }, { "trace-all", no_argument, NULL, 'A' },
        { "in-place", no_argument, NULL, 'I' },
        { NULL, 0, NULL, 0 },
    };
    struct sim_opts o = { .max_workers = MAX_W, .rps = 20000 };
    uint64_t first = 1, seeds = 1000, failed = 0, late = 0, proto = 0, finals[7] = { 0, 0, 0, 0, 0, 0, 0 }, sup[5] = { 0, 0, 0, 0, 0 }, nar[2] = { 0, 0 }, watched = 0, cc[3] = { 0, 0, 0 };
    uint64_t rf[3] = { 0, 0, 0 }; /* --restore-faults: set aside, failed start-ups, of which none left */
    uint64_t ip[2] = { 0, 0 };    /* --in-place: survivors rejoined in place; of them, restored in place */
    uint64_t *cc_wait = NULL, n_wait = 0; /* --crash-completer: from the crash to the decision, us */
    static struct world wd;
    int c;

    while ((c = getopt_long(argc, argv, "n:f:s:m:t:vbchTRAIS:r:", opts, NULL)) != -1) {
        char *end = NULL;
        unsigned long long v = optarg ? strtoull(optarg, &end, 10) : 0;

        if (optarg && c != 't' && (*optarg == '\0' || *end != '\0')) {
            fprintf(stderr, "preempt-sim: '%s' is not a number\n%s", optarg, usage);
            return 2;
        }
        switch (c) {
        case 'n': seeds = v; break;
        case 'f': first = v; break;
        case 's': first = v; seeds = 1; break;
        case 'm':
            if (v < 1 || v > MAX_W) {
                fprintf(stderr, "preempt-sim: --max-workers must be 1-%d\n", MAX_W);
                return 2;
            }
            o.max_workers = (unsigned)v;
            break;
        case 'S':
            if (v < 2 || v > SCALE_MAX_W) {
                fprintf(stderr, "preempt-sim: --scale must be 2-%d\n", SCALE_MAX_W);
                return 2;
            }
            o.scale = (unsigned)v;
            break;
        case 'r': o.rps = v; break;
        case 't': o.trace_dir = optarg; break;
        case 'v': o.verbose = true; break;
        case 'b': o.sabotage = true; break;
        case 'c': o.crash_completer = true; break;
        case 'A': o.trace_all = true; break;
        case 'T': o.two_phase = true; break;
        case 'R': o.restore_faults = true; break;
        case 'I': o.in_place = true; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc || seeds == 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (o.crash_completer && !(cc_wait = calloc(seeds, sizeof(*cc_wait)))) {
        fputs("preempt-sim: out of memory\n", stderr);
        return 1;
    }
    for (uint64_t s = first; s < first + seeds; s++) {
        if (!run_seed(s, &o, &wd))
            failed++;
        if (wd.cc_crashed)
            cc[wd.cc_outcome]++;
        if (wd.cc_crashed && wd.cc_decided_us)
            cc_wait[n_wait++] = wd.cc_decided_us - wd.cc_crash_us;
        if (o.scale)
            printf("preempt-sim: seed %" PRIu64 ", %u workers, etcd serving %" PRIu64 " requests/s: per preemption "
                   "%" PRIu64 " requests, %" PRIu64 " messages out (%" PRIu64 " replies + %" PRIu64
                   " watch events; budget 5N + 10 = %u), besides %" PRIu64 " lease keep-alives; every worker "
                   "knew the save step %.1f ms after the notice (%u of %u)\n",
                   s, o.scale, o.rps, wd.reqs, wd.reqs + wd.events, wd.reqs, wd.events, 5 * o.scale + 10, wd.keepalives,
                   (double)(wd.t_last_knows_us - wd.t_notice_us) / 1e3, wd.knows, o.scale);
        if (wd.max_late_us > late)
            late = wd.max_late_us;
        finals[0] += wd.finals_committed;
        finals[1] += wd.finals_aborted;
        finals[2] += wd.finals_aborted_clean;
        for (int i = 0; i < FINAL__COUNT; i++)
            finals[3 + i] += wd.finals_aborted_why[i];
        proto += wd.proto_errors;
        watched += wd.obs_checked;
        sup[0] += wd.superseded;
        sup[1] += wd.let_finish;
        sup[2] += wd.stops_at;
        sup[3] += wd.stops_past;
        sup[4] += wd.again;
        nar[0] += wd.nar;
        nar[1] += wd.countdowns0;
        rf[0] += wd.fell_back;
        rf[1] += wd.start_fails;
        rf[2] += wd.none_left;
        ip[0] += wd.in_place_n;
        ip[1] += wd.in_place_restored;
    }
    printf("preempt-sim: %" PRIu64 " seeds (%" PRIu64 "..%" PRIu64 "), %" PRIu64 " violations; latest exit %.3f s past a "
           "deadline; final rounds: %" PRIu64 " committed, %" PRIu64 " aborted (%" PRIu64 " without a fault: %" PRIu64
           " raised, %" PRIu64 " after a later notice, %" PRIu64 " planned for an earlier deadline that came in the "
           "preemption, %" PRIu64 " with none of these); %" PRIu64 " protocol errors\n",
           seeds, first, first + seeds - 1, failed, (double)late / 1e6, finals[0], finals[1], finals[2], finals[3],
           finals[4], finals[5], finals[6], proto);
    if (!o.scale) {
        printf("preempt-sim: the watcher (lib/handler/watcher.c, on its own io) checked against a fresh read in %" PRIu64
               " incarnations with a notice\n", watched);
        printf("preempt-sim: signals at a withdrawn round's report, commit or save: %" PRIu64 "; countdowns without a grace "
               "period (their final round opened at once): %" PRIu64 "\n", nar[0], nar[1]);
    }
    if (o.two_phase)
        printf("preempt-sim: notices while a checkpoint persisted: %" PRIu64 " superseded it (a new round), %" PRIu64
               " let it finish; workers that trained on to such a last commit: %" PRIu64 " stopped at the job's stop "
               "step, %" PRIu64 " were past it at the commit; to such a commit with room for another round (no grace "
               "period): %" PRIu64 " counted down to the final round\n",
               sup[0], sup[1], sup[2], sup[3], sup[4]);
    if (o.in_place)
        printf("preempt-sim: survivors in place: %" PRIu64 " rejoined the next incarnation in their process (%" PRIu64
               " of them restored an older step in place)\n", ip[0], ip[1]);
    if (o.restore_faults)
        printf("preempt-sim: restores: %" PRIu64 " steps set aside (the job fell back), %" PRIu64
               " start-ups failed everywhere and started again (%" PRIu64 " with no step left)\n",
               rf[0], rf[1], rf[2]);
    if (o.crash_completer) {
        qsort(cc_wait, n_wait, sizeof(*cc_wait), cmp_u64);
        printf("preempt-sim: completers crashed: %" PRIu64 "; their rounds committed %" PRIu64 ", aborted %" PRIu64
               ", undecided %" PRIu64 "; decided %.3f s after the crash (median), at most %.3f s\n",
               cc[0] + cc[1] + cc[2], cc[1], cc[2], cc[0], n_wait ? (double)cc_wait[n_wait / 2] / 1e6 : 0.0,
               n_wait ? (double)cc_wait[n_wait - 1] / 1e6 : 0.0);
        free(cc_wait);
    }
    return failed ? 1 : 0;
}
