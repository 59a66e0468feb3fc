/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/handler-start.c: a handler's creation and start-up (lib/handler/handler-internal.h):
 * the configuration copied, the platform resolved, the restore (set
 * aside what the restore callback refuses), joining a job and its restore
 * barrier, blocking or on the loop (async_start), and the end of start-up. */
#define _GNU_SOURCE /* pipe2 */
#include "handler-internal.h"
#include "job/job.h"

/* ---- creation ---------------------------------------------------------------------- */

/* The threads of this process in which a signal of set is not blocked,
 * as "tid (name), ..." in buf (read from /proc/self/task/<tid>/status's
 * SigBlk mask). signalfd sees a signal only while every thread blocks it;
 * a thread that does not takes the default action: death. Returns how
 * many, or a negative errno when /proc cannot be read. */
static int unblocked_threads(const sigset_t *set, char *buf, size_t size)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t off = 0;
    int n = 0;

    buf[0] = '\0';
    if (!d)
        return -errno;
    while ((e = readdir(d))) {
        char path[300], line[256], comm[64] = "?";
        unsigned long long blk = 0;
        bool found = false;
        FILE *f;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        (void)snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if (!(f = fopen(path, "re")))
            continue; /* the thread ended meanwhile */
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "SigBlk: %llx", &blk) == 1) {
                found = true;
                break;
            }
        (void)fclose(f);
        if (!found)
            continue;
        (void)snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "re"))) {
            if (fgets(comm, sizeof(comm), f))
                comm[strcspn(comm, "\n")] = '\0';
            (void)fclose(f);
        }
        for (int s = 1; s <= 64; s++)
            if (sigismember(set, s) == 1 && !(blk & (1ull << (s - 1)))) {
                if (off < size)
                    off += (size_t)snprintf(buf + off, size - off, "%s%s (%s)", n ? ", " : "", e->d_name, comm);
                n++;
                break;
            }
    }
    (void)closedir(d);
    return n;
}

static int open_signals(struct preempt_handler *h)
{
    sigset_t set, blocked;
    char threads[512];
    int r;

    (void)preempt_signal_set_(&h->cfg, &set); /* validated */
    if (sigprocmask(SIG_BLOCK, NULL, &blocked) < 0)
        return -errno;
    for (int s = 1; s <= SIGRTMAX; s++)
        if (sigismember(&set, s) == 1 && sigismember(&blocked, s) != 1) {
            hd_log_msg(h, PREEMPT_LOG_ERROR, "signal %d (%s) is not blocked; call preempt_block_signals() first in main()",
                       s, strsignal(s));
            return -EBUSY;
        }
    r = unblocked_threads(&set, threads, sizeof(threads));
    if (r > 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "%d thread(s) of this process do not block the notice signals: %s. A notice "
                   "would kill the process instead of reaching the handler. Block them before any thread starts: "
                   "preempt_block_signals() first in main(), or start the program under preempt-exec (Python, and any "
                   "runtime that starts threads of its own)", r, threads);
        return -EBUSY;
    }
    if ((r = preempt_fault_(PREEMPT_FAULT_SIGNALFD)) < 0)
        return r;
    h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (h->sigfd < 0)
        return -errno;
    h->ev_sig = event_new(h->base, h->sigfd, EV_READ | EV_PERSIST, hd_on_signal, h);
    return h->ev_sig ? 0 : -ENOMEM;
}

static int open_events(struct preempt_handler *h)
{
    h->ev_timer = evtimer_new(h->base, hd_on_timer, h);
    h->timer_at_ms = UINT64_MAX;
    h->ev_drain = event_new(h->base, -1, 0, hd_on_drain, h);
    if (!h->ev_timer || !h->ev_drain)
        return -ENOMEM;
    if (h->cfg.save_every_ms && !(h->ev_periodic = evtimer_new(h->base, hd_on_periodic, h)))
        return -ENOMEM;
    if (h->cb.poll && !(h->ev_poll = event_new(h->base, -1, EV_PERSIST, hd_on_poll, h)))
        return -ENOMEM;
    return 0;
}

/* Started: the notice signals, the poll callback and the periodic clock
 * reach the machine from now on (a signal that came during start-up waits
 * in the signalfd). */
static int arm_events(struct preempt_handler *h)
{
    struct timeval tv = preempt_tv_ms_(h->cfg.poll_interval_ms);

    if (event_add(h->ev_sig, NULL) < 0 || (h->ev_poll && event_add(h->ev_poll, &tv) < 0))
        return -ENOMEM;
    hd_periodic_restart(h);
    return 0;
}


static void coord_log(int level, const char *msg, void *arg)
{
    hd_log_msg(arg, hd_level_of(level), "coordination: %s", msg);
}

static void coord_job_save(uint64_t ms, void *arg)
{
    preempt_worker_save_took_(&((struct preempt_handler *)arg)->wk, ms, PREEMPT_SAVE_JOB); /* its shards' slowest */
}

static void coord_job_pace(struct preempt_pace pace, uint64_t at_ms, void *arg)
{
    preempt_worker_job_pace_(&((struct preempt_handler *)arg)->wk, pace.step, pace.ms, at_ms);
}

static void coord_post(const struct preempt_event *ev, void *arg)
{
    struct preempt_handler *h = arg;

    if (ev->kind == PREEMPT_EV_NOTICE) /* an operator's notice */
        h->last_source = ev->u.notice.source;
    hd_post(h, *ev);
}

static uint64_t coord_now(void *arg)
{
    return hd_now_ms(arg);
}

static void coord_error_msg(const char *msg, void *arg)
{
    struct preempt_handler *h = arg;

    if (!h->err_msg[0]) /* the job's first error, unless this worker has its own */
        (void)snprintf(h->err_msg, sizeof(h->err_msg), "%s", msg);
}

/* The running protocol's ops: the handler's. */
static const struct preempt_coord_ops coord_ops = {
    .post = coord_post, .now_ms = coord_now, .log = coord_log, .on_error_msg = coord_error_msg,
    .on_view = hd_coord_view, .on_answer = hd_coord_answer, .job_save = coord_job_save,
    .job_pace = coord_job_pace,
    .on_input = hd_coord_in, .on_output = hd_coord_out,
};

static struct preempt_coord_cfg coord_cfg(struct preempt_handler *h)
{
    const struct preempt_config *c = &h->cfg;

    return (struct preempt_coord_cfg){
        .etcd = { .endpoints = c->etcd_endpoints, .user = c->etcd_user, .password = c->etcd_password,
                  .ca = c->etcd_ca, .cert = c->etcd_cert, .key = c->etcd_key, .timeout_ms = c->etcd_timeout_ms,
                  .log = coord_log, .log_arg = h },
        .job = c->job, .launch = c->launch_id, .worker = c->worker, .workers = c->workers,
        .lease_ttl_s = c->lease_ttl_s,
        .join_timeout_ms = c->join_timeout_ms,
        .give_up_ms = c->agree_timeout_ms, /* a write that cannot land within a round is a failure */
        .start_over = c->start_over,
        /* the declared machines' transitions: traced only where a trace is written */
        .decl_trace = { h->trace_path && h->trace_path[0] ? preempt_job_trace_decl_ : NULL, &h->jt },
    };
}

#define MAX_PENDING 4 /* a stop mid-round leaves one or two (round 0 and 1) */

/* Start-up in progress: the checkpoint directory's restore and, in a job,
 * joining, the restore and the restore barrier. Its phases run on base: a
 * private one for a blocking creation (nothing of the caller's loop runs
 * meanwhile), the handler's own for an asynchronous one. Each step is a
 * continuation of the last; start_done() ends it either way. */
struct start {
    struct event_base *base;
    struct preempt_coord_phase *phase;  /* the etcd phase under way, if any */
    struct preempt_coord_cfg cc;
    struct preempt_coord_pending pend[MAX_PENDING];
    char keys[MAX_PENDING][512];
    size_t n_pend;
    struct preempt_ckpt_info info;      /* the checkpoint restored */
    char *held;                         /* trace lines of start-up, until the trace opens at its end */
    size_t held_len, held_cap;
    struct preempt_start s;             /* start-up's machine and its driver (start-internal.h) */
    int outcome;                        /* the job's (PREEMPT_RESTORE_*) */
    uint64_t t0;
    char verdict[320], msg[512];
    char host[PREEMPT_MAX_HOST + 1];    /* this process's (cc.host) */
};

static int open_trace(struct preempt_handler *h)
{
    char line[256];
    int fd;

    if (!h->trace_path || !h->trace_path[0]) /* "": none, as NULL */
        return 0;
    fd = open(h->trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    h->trace = fdopen(fd, "w");
    if (!h->trace) {
        int r = -errno;

        (void)close(fd);
        return r;
    }
    if (preempt_trace_format_config_(line, sizeof(line), &preempt_sm_facts_(h->wk.sm)->cfg) < 0 ||
        fprintf(h->trace, "# libpreempt %s trace of pid %ld\n%s\n", preempt_version(), (long)getpid(), line) < 0 ||
        (h->start && h->start->held_len &&
         fwrite(h->start->held, 1, h->start->held_len, h->trace) != h->start->held_len) ||
        fflush(h->trace) != 0)
        return -EIO;
    if (h->wk.coord) /* as it stands before its first input: a replay starts from it */
        preempt_job_trace_start_(&h->jt, h->wk.coord);
    return 0;
}

#define HELD_MAX (256u << 10) /* start-up's trace lines kept at most (some thousands of transitions) */

/* A trace line of start-up, kept until the trace opens (start_finish()):
 * start-up's declared machines step before it. Lines past HELD_MAX are
 * dropped (the replay checks what the trace holds). */
void hd_start_hold(struct preempt_handler *h, const char *line)
{
    struct start *st = h->start;
    size_t n = strlen(line);

    if (!st || st->held_len + n + 1 > HELD_MAX)
        return;
    if (st->held_len + n + 1 > st->held_cap) {
        size_t cap = st->held_cap ? 2 * st->held_cap : 4096;
        char *more;

        while (cap < st->held_len + n + 1)
            cap *= 2;
        if (!(more = realloc(st->held, cap)))
            return; /* out of memory: the line is not traced */
        st->held = more;
        st->held_cap = cap;
    }
    memcpy(st->held + st->held_len, line, n);
    st->held[st->held_len + n] = '\n';
    st->held_len += n + 1;
}

static void start_done(struct preempt_handler *h, int r);
static void restore_end(struct preempt_handler *h, int r);
static void on_job_joined(int r, void *arg);
static void on_job_restored(int r, void *arg);

/* ---- start-up in a job: the driver's effects (lib/job/start-internal.h) -------------------- */

/* Joins the job and finds the step every worker holds (the result in
 * h->joined); the job's decisions on this worker's pending checkpoints
 * are applied first. */
static void join_job(void *arg)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    uint64_t *steps = NULL, *ps = NULL;
    size_t n = 0, np = 0;
    int r;

    st->n_pend = 0;
    if (h->store && ((r = preempt_ckpt_list_(h->store, false, &steps, &n)) < 0 ||
                     (r = preempt_ckpt_list_(h->store, true, &ps, &np)) < 0)) {
        free(steps);
        start_done(h, r);
        return;
    }
    for (size_t i = 0; i < np && st->n_pend < MAX_PENDING; i++) /* the newest few; older ones stay undecided */
        if (preempt_ckpt_pending_(h->store, ps[i], st->keys[st->n_pend], sizeof(st->keys[0])) == 1) {
            st->pend[st->n_pend] = (struct preempt_coord_pending){ .step = ps[i], .key = st->keys[st->n_pend] };
            st->n_pend++;
        }
    free(ps);
    st->cc.phase_no++; /* the phase's machines in the trace */
    r = preempt_coord_join_begin_(st->base, &st->cc, steps, n, st->pend, st->n_pend, &h->joined, st->msg,
                                  sizeof(st->msg), on_job_joined, h, &st->phase);
    free(steps);
    if (r < 0)
        on_job_joined(r, h);
}

/* Calls the restore callback on info; 0 or its negative errno. */
static int restore_cb(struct preempt_handler *h, const struct preempt_ckpt_info *info)
{
    int r;
    uint64_t t0 = hd_now_us(h);

    h->restoring = info;
    h->in_cb++;
    r = h->cb.restore(h, info->step, h->ud);
    h->in_cb--;
    h->restoring = NULL;
    h->restore_us += hd_now_us(h) - t0; /* every attempt: the time start-up spent restoring */
    return r < 0 ? r : 0;
}

/* A restore callback refused the checkpoint at step (why): it goes aside
 * and the next older one is tried. first: the first this start-up set
 * aside (the newest refused). Who counts them is the mode's one counter:
 * local mode's loop below, the job's start-up driver in a job. */
static void set_aside(struct preempt_handler *h, uint64_t step, const char *why, bool first)
{
    (void)preempt_ckpt_set_aside_(h->store, step, why);
    if (first)
        h->refused_step = step;
}

/* Joined (r 0): this worker's pending checkpoints settled as the job
 * decided, and those newer than the job's step set aside; the driver is
 * told. */
static void on_job_joined(int r, void *arg)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    const struct preempt_coord_join *join = &h->joined;
    char why[PREEMPT_MAX_JOB + 160];

    st->phase = NULL;
    for (size_t i = 0; r == 0 && i < st->n_pend; i++)
        hd_settle(h, st->pend[i].step, st->pend[i].decision);
    if (r < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot join job %s as worker %u of %u: %s", h->cfg.job, h->cfg.worker,
                   h->cfg.workers, st->msg);
    } else {
        hd_log_msg(h, PREEMPT_LOG_INFO, "joined job %s as worker %u of %u, incarnation %llu; %s%llu", h->cfg.job,
                   h->cfg.worker, h->cfg.workers, (unsigned long long)join->incarnation,
                   join->have_step ? "every worker restores step " : "no step every worker holds: starting fresh at ",
                   (unsigned long long)(join->have_step ? join->step : 0));
        if (join->over)
            (void)snprintf(why, sizeof(why), "job %s started over at step %llu (PREEMPT_START_OVER)", h->cfg.job,
                           (unsigned long long)(join->have_step ? join->step : 0));
        else
            (void)snprintf(why, sizeof(why), "newer than step %llu, the newest one every worker of job %s holds",
                           (unsigned long long)(join->have_step ? join->step : 0), h->cfg.job);
        if (h->store)
            r = preempt_ckpt_set_aside_newer_(h->store, join->have_step ? join->step : 0, why);
    }
    preempt_start_joined_(&st->s, r, join->have_step, join->step);
}

/* The restore of the job's step: the restore callback. */
static int restore_job_step(void *arg, uint64_t step)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    int r;

    st->t0 = preempt_clock_ms_(CLOCK_MONOTONIC);
    r = preempt_ckpt_at_(h->store, step, &st->info);
    if (r == 0 && h->rejoining && step == h->rejoin_step) { /* in place: this worker's state is the step's */
        hd_log_msg(h, PREEMPT_LOG_INFO, "in place: this worker's state is step %llu's; nothing to restore",
                   (unsigned long long)step);
        return 0;
    }
    if (r == 0)
        r = restore_cb(h, &st->info);
    if (r < 0)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s", (unsigned long long)step,
                   strerror(-r));
    return r;
}

/* This worker's outcome at the restore barrier. Every worker waits for
 * the slowest restore: bounded by start-up's bound plus twice this
 * worker's own restore time. */
static void report_restore(void *arg, int mine, int err)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;
    int r;

    st->cc.phase_no++; /* the phase's machines in the trace */
    r = preempt_coord_restored_begin_(st->base, &st->cc, &h->joined, mine, strerror(-err),
                                      h->cfg.join_timeout_ms + 2 * (preempt_clock_ms_(CLOCK_MONOTONIC) - st->t0),
                                      &st->outcome, st->verdict, sizeof(st->verdict), st->msg, sizeof(st->msg),
                                      on_job_restored, h, &st->phase);

    if (r < 0)
        on_job_restored(r, h);
}

/* The restore barrier's record (r 0), or its failure: the driver is told. */
static void on_job_restored(int r, void *arg)
{
    struct preempt_handler *h = arg;
    struct start *st = h->start;

    st->phase = NULL;
    if (r < 0 || st->outcome != PREEMPT_RESTORE_OK)
        h->joined.lease = 0; /* given back */
    if (r < 0)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "job %s: after the restore: %s", h->cfg.job, st->msg);
    else if (st->outcome == PREEMPT_RESTORE_FAILED)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "job %s: a worker could not restore (step %s); nothing was set aside: a "
                   "restart tries again", h->cfg.job, st->verdict);
    else if (st->outcome != PREEMPT_RESTORE_OK)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "job %s: a restore failed (step %s); every worker sets that step aside and "
                   "the job falls back to an older one", h->cfg.job, st->verdict);
    preempt_start_barrier_(&st->s, r, st->outcome);
}

/* Every worker sets the job's step aside: the barrier's record names it. */
static void set_aside_job_step(void *arg, uint64_t step)
{
    struct preempt_handler *h = arg;
    char why[400];

    (void)snprintf(why, sizeof(why), "a restore callback failed on it (step %.200s)", h->start->verdict);
    h->fallbacks = h->start->s.fallbacks; /* the driver's count (it counted this one before asking) */
    set_aside(h, step, why, h->fallbacks == 1);
}

/* Start-up in the job ended (lib/job/start-internal.h). */
static void rejoined(struct preempt_handler *h, int r, bool restored);

static void job_start_end(void *arg, int r, bool restored)
{
    struct preempt_handler *h = arg;

    if (h->rejoining)
        rejoined(h, r, restored);
    else if (!h->store)
        start_done(h, r);
    else
        restore_end(h, r == 0 && !restored ? -ENOENT : r);
}

static void job_start_log(void *arg, int level, const char *line)
{
    hd_log_msg(arg, hd_level_of(level), "%s", line);
}

static const struct preempt_start_ops job_start_ops = {
    .join = join_job, .restore = restore_job_step, .report = report_restore, .set_aside = set_aside_job_step,
    .end = job_start_end, .log = job_start_log,
};

/* Local mode: the newest checkpoint the callback accepts. */
static void restore_local(struct preempt_handler *h)
{
    struct preempt_ckpt_info *info = &h->start->info;
    int r;

    while ((r = preempt_ckpt_latest_(h->store, info)) == 0 && (r = restore_cb(h, info)) < 0) {
        char why[160];

        if (!preempt_rst_unusable_(r)) {
            hd_log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s (nothing set aside: a "
                       "restart tries again)", (unsigned long long)info->step, strerror(-r));
            start_done(h, r);
            return;
        }
        hd_log_msg(h, PREEMPT_LOG_ERROR, "restore callback failed at step %llu: %s; setting it aside",
                   (unsigned long long)info->step, strerror(-r));
        (void)snprintf(why, sizeof(why), "the restore callback failed on it: %s", strerror(-r));
        set_aside(h, info->step, why, h->fallbacks++ == 0);
    }
    restore_end(h, r);
}

/* The checkpoint info was restored: the run counter and what the planner
 * knows are its. */
static void took_restore(struct preempt_handler *h, const struct preempt_ckpt_info *info)
{
    h->restored_step = h->committed_step = info->step;
    h->generation = info->generation + 1;
    preempt_sm_facts_(h->wk.sm)->run = info->run;
    /* the planner knows it from the start */
    preempt_worker_save_took_(&h->wk, info->save_ms, info->save_paced ? PREEMPT_SAVE_PACED : PREEMPT_SAVE_AWAITED);
    hd_log_msg(h, PREEMPT_LOG_INFO, "restored step %llu from %s%s", (unsigned long long)info->step, info->path,
               h->fallbacks ? " (an older checkpoint: the newer ones failed to restore)" : "");
}

/* The restore's outcome: r 0 (start->info restored), -ENOENT (nothing to
 * restore) or an error. */
static void restore_end(struct preempt_handler *h, int r)
{
    const struct preempt_ckpt_info *info = &h->start->info;

    if (r == -ENOENT && h->fallbacks) /* local mode: every checkpoint refused (the driver says so itself) */
        r = -ENOTRECOVERABLE;
    if (r == -ENOTRECOVERABLE) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "no checkpoint could be restored: the restore callback failed on all %u (set "
                   "aside in %s/aside%s)", h->fallbacks, h->ckpt_dir, h->cfg.etcd_endpoints ? ", and alike on every worker" : "");
    } else if (r == -ENOENT) {
        hd_log_msg(h, PREEMPT_LOG_INFO, "no checkpoint in %s: starting at step 0", h->ckpt_dir);
        r = 0;
    } else if (r == 0) {
        took_restore(h, info);
    }
    start_done(h, r);
}

/* Start-up in the job: its driver (lib/job/start-internal.h) over the
 * effects above; the first join. */
static void job_start(struct preempt_handler *h)
{
    struct start *st = h->start;

    st->s = (struct preempt_start){ .ops = &job_start_ops, .arg = h, .trace = &st->cc.decl_trace,
                                    .no_store = !h->store };
    join_job(h);
}

/* Start-up's coordination config: the handler's, and who this process is
 * (for its member record). */
static void start_cfg(struct preempt_handler *h)
{
    h->start->cc = coord_cfg(h);
    h->start->cc.phase_no = h->phases; /* a rejoin's phases follow the ones before in the trace */
    h->start->cc.pid = (long)getpid();
    if (gethostname(h->start->host, sizeof(h->start->host) - 1) == 0)
        h->start->cc.host = h->start->host;
}

/* Start-up's first step: open the checkpoint directory, then restore
 * (local mode) or join the job. */
static void start_begin(struct preempt_handler *h)
{
    bool multi = h->cfg.etcd_endpoints != NULL;
    struct preempt_ckpt_id id = { .job = h->cfg.job ? h->cfg.job : "", .launch = h->cfg.launch_id,
                                  .worker = multi ? h->cfg.worker : 0, .workers = multi ? h->cfg.workers : 1 };
    int r;

    h->jt = (struct preempt_job_trace){ .line = hd_trace_text, .decl_line = hd_decl_line, .now_ms = coord_now,
                                        .arg = h };
    start_cfg(h);
    if (!h->ckpt_dir) {
        preempt_sm_facts_(h->wk.sm)->run = h->cfg.start_run;
        if (multi)
            job_start(h);
        else
            start_done(h, 0);
        return;
    }
    r = preempt_ckpt_open_(h->ckpt_dir, h->cfg.max_to_keep == (unsigned)PREEMPT_UNLIMITED ? 0 : h->cfg.max_to_keep, &id,
                           hd_ckpt_log, h, &h->store);
    if (r < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot open checkpoint directory %s: %s%s", h->ckpt_dir, strerror(-r),
                   r == -ENOENT ? " (its parent directory does not exist: only the last component is created)" : "");
        start_done(h, r);
    } else if (multi) {
        job_start(h);
    } else {
        restore_local(h);
    }
}

/* The platform in effect and the defaults it implies (an explicit value
 * always wins; an explicit grace of 0 too). */
static int resolve_platform(struct preempt_handler *h)
{
    const char *env = getenv("PREEMPT_PLATFORM");
    int p = preempt_platform_resolve_(h->cfg.platform, env, getenv("PREEMPT_DMI_DIR"));

    if (p < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: PREEMPT_PLATFORM=%s is not one of none, gce, gce-gpu, "
                   "aws, azure", env);
        return -EINVAL;
    }
    h->platform = (enum preempt_platform)p;
    if (h->cfg.grace_ms == (uint64_t)PREEMPT_AUTO)
        h->cfg.grace_ms = preempt_platform_grace_ms_(h->platform);
    if (h->cfg.exit_code == PREEMPT_AUTO)
        h->cfg.exit_code = preempt_platform_exit_code_(h->platform);
    h->kill_delay_ms = h->cfg.kill_delay_ms; /* 0: none known */
    if (h->kill_delay_ms == (uint64_t)PREEMPT_AUTO)
        h->kill_delay_ms = preempt_kill_delay_(h->platform, getenv, h->kill_who, sizeof(h->kill_who));
    hd_log_msg(h, PREEMPT_LOG_INFO, "platform %s (%s): grace %llu ms, exit code %d; kill delay %llu ms%s%s",
               preempt_platform_to_string(h->platform),
               h->cfg.platform != PREEMPT_PLATFORM_AUTO ? "configured" : env && *env ? "PREEMPT_PLATFORM" : "detected",
               (unsigned long long)h->cfg.grace_ms, h->cfg.exit_code, (unsigned long long)h->kill_delay_ms,
               h->kill_who[0] ? " from the launcher: " : h->kill_delay_ms ? " (configured)" : " (none known)",
               h->kill_who);
    return 0;
}

/* Launcher awareness: the kill delay after SIGTERM must leave room for a
 * save (the restored checkpoint's save took save_ms) and for the grace
 * period. Only a warning: the handler works with whatever time it gets. */
static void warn_kill_delay(struct preempt_handler *h)
{
    uint64_t save_ms = preempt_sm_facts_(h->wk.sm)->save_ms, kd = h->kill_delay_ms;

    if (kd == 0)
        return;
    if (save_ms + h->cfg.margin_ms >= kd)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "the last save took %llu ms but the process is killed %llu ms after SIGTERM "
                   "(%s; margin %llu ms): a preemption save may not finish; raise the kill delay "
                   "(terminationGracePeriodSeconds, torchrun --shutdown-timeout, Slurm GraceTime/KillWait) or save less",
                   (unsigned long long)save_ms, (unsigned long long)kd, h->kill_who[0] ? h->kill_who : "configured",
                   (unsigned long long)h->cfg.margin_ms);
    if (h->cfg.grace_ms > kd)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "grace_ms %llu is longer than the %llu ms kill delay after SIGTERM: a signal's "
                   "deadline is the kill delay", (unsigned long long)h->cfg.grace_ms, (unsigned long long)kd);
}

static int open_metadata(struct preempt_handler *h)
{
    char url[512];
    struct preempt_meta_opts o = {
        .platform = h->platform, .url = url, .poll_ms = h->cfg.metadata_poll_ms,
        .timeout_ms = h->cfg.metadata_timeout_ms, .on_notice = hd_on_meta_notice, .log = hd_meta_log, .arg = h,
    };
    int r;

    if (h->platform == PREEMPT_PLATFORM_NONE)
        return 0;
    if (preempt_platform_metadata_url_(h->platform, h->cfg.metadata_url, getenv, url, sizeof(url)) == 1)
        hd_log_msg(h, PREEMPT_LOG_WARNING, "GCE_METADATA_HOST=%s is a host name, not an address: not used (the "
                   "metadata source never resolves names); set it to an address, or GCE_METADATA_IP", getenv("GCE_METADATA_HOST"));
    r = preempt_meta_new_(h->base, &o, &h->meta);
    if (r < 0)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot watch the %s metadata service at %s: %s",
                   preempt_platform_to_string(h->platform), url, strerror(-r));
    else
        hd_log_msg(h, PREEMPT_LOG_INFO, "watching the %s metadata service at %s", preempt_platform_to_string(h->platform),
                   url);
    return r;
}

/* ---- the end of start-up ------------------------------------------------------------------- */

/* Started: the cloud source, the running protocol and the trace open, and
 * the handler's events are armed. */
static int watch_peers(struct preempt_handler *h);

static int start_finish(struct preempt_handler *h)
{
    int r;

    warn_kill_delay(h);
    r = open_metadata(h);
    if (r < 0)
        return r;
    if (h->cfg.etcd_endpoints) {
        r = preempt_coord_new_(h->base, &h->start->cc, &h->joined, &coord_ops, h, &h->wk.coord);
        if (r < 0)
            return r;
        (void)watch_peers(h); /* registered before an asynchronous start-up ended */
    }
    r = open_trace(h);
    if (r < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "cannot write trace file %s: %s", h->trace_path, strerror(-r));
        return r;
    }
    r = arm_events(h);
    h->step_t0_us = hd_now_us(h);
    return r;
}

/* Releases start-up's state, cancelling a phase under way. */
void hd_start_free(struct preempt_handler *h)
{
    if (!h->start)
        return;
    h->phases = h->start->cc.phase_no;
    preempt_coord_phase_free_(h->start->phase);
    free(h->start->held);
    free(h->start);
    h->start = NULL;
}

/* The end of start-up, either way (r 0: started). An asynchronous
 * creation reports it through on_start. */
static void start_done(struct preempt_handler *h, int r)
{
    if (r == 0)
        r = start_finish(h);
    if (r == 0) { /* the metrics file is there from the start; training begins */
        h->started_wall = preempt_clock_ms_(CLOCK_REALTIME);
        preempt_progress_boundary_(h->progress, preempt_sm_facts_(h->wk.sm)->run, hd_now_us(h));
        preempt_progress_phase_(h->progress, PREEMPT_PROGRESS_TRAINING);
        if (h->restored_step)
            preempt_metrics_observe_(h->metrics, PREEMPT_METRIC_RESTORE, (double)h->restore_us / 1e6);
        preempt_metrics_add_(h->metrics, PREEMPT_METRIC_FALLBACKS, "", h->fallbacks);
        hd_metrics_flush(h);
    }
    hd_start_free(h);
    h->start_status = r;
    if (h->cfg.async_start && h->cb.on_start) {
        h->in_cb++;
        h->cb.on_start(h, r, h->ud);
        h->in_cb--;
    }
}

/* ---- survivors in place: joining the job's next incarnation ---------------------------------- */

/* A rejoin's resources go: start-up's state (a phase under way with it)
 * and the incarnation left. */
static void rejoin_free(struct preempt_handler *h)
{
    if (h->ev_rejoin)
        (void)event_del(h->ev_rejoin);
    if (h->rejoining)
        hd_start_free(h);
    h->rejoining = false;
    preempt_coord_free_(h->left_coord);
    h->left_coord = NULL;
}

void hd_rejoin_stop(struct preempt_handler *h, bool give_up)
{
    if (give_up && h->rejoining && h->start && h->start->phase) {
        /* its end gives the lease back, then comes back through rejoined() */
        h->rejoin_given_up = true;
        preempt_coord_phase_cancel_(h->start->phase);
        return;
    }
    rejoin_free(h);
}

bool hd_rejoin_over(void *arg)
{
    return !((const struct preempt_handler *)arg)->rejoining;
}

/* The rejoin's start-up ended (job_start_end()): r 0 and restored, the
 * job's incarnation runs at h->joined.step, which this worker's state
 * holds (in place) or its restore callback restored (the job picked
 * another step). The machine is told either way, start-up's state gone
 * first: what the answer makes it do (an exit) finds nothing under way. */
static void rejoined(struct preempt_handler *h, int r, bool restored)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_REJOIN_FAILED };
    uint64_t step = h->joined.step;

    if (r == 0 && !restored) /* nothing every worker holds: the job starts from nothing, and this state is not that */
        r = -ESTALE;
    if (r == 0 && step != h->rejoin_step)
        took_restore(h, &h->start->info);
    if (r == 0) {
        h->coord_making = true;
        r = preempt_coord_new_(h->base, &h->start->cc, &h->joined, &coord_ops, h, &h->wk.coord);
        h->coord_making = false;
    }
    rejoin_free(h);
    if (h->rejoin_given_up) { /* the machine exited meanwhile: nothing to tell it */
        hd_log_msg(h, PREEMPT_LOG_DEBUG, "in place: the rejoin was given up (%s)", strerror(-r));
        return;
    }
    if (r < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "in place: job %s's next incarnation could not be joined (%s): exiting as "
                   "the terminated workers did", h->cfg.job, strerror(-r));
        ev.u.rejoin_failed.err = r;
    } else {
        (void)watch_peers(h);
        if (h->trace) /* the new coordinator, as it stands before its first input */
            preempt_job_trace_start_(&h->jt, h->wk.coord);
        ev.kind = PREEMPT_EV_REJOINED;
        ev.u.rejoined.inc = h->joined.incarnation;
        ev.u.rejoined.step = step;
    }
    hd_post(h, ev);
}

/* The rejoin's start-up, on the loop (outside the machine's step): the
 * job's start-up, as a new process runs it, with this worker's state. */
static void on_rejoin(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    if (!h->rejoining || h->start) /* cut short meanwhile, or under way */
        return;
    h->start = calloc(1, sizeof(*h->start));
    if (!h->start) {
        rejoined(h, -ENOMEM, false);
        return;
    }
    h->start->base = h->base;
    start_cfg(h);
    h->start->s = (struct preempt_start){ .ops = &job_start_ops, .arg = h, .trace = &h->start->cc.decl_trace,
                                          .no_store = !h->store, .instance = h->in_place + 1 };
    join_job(h);
}

void hd_rejoin(struct preempt_handler *h, uint64_t step)
{
    h->left_coord = h->wk.coord; /* it left (worker.c); freed when the rejoin ends */
    h->wk.coord = NULL;
    h->joined = (struct preempt_coord_join){ 0 };
    h->rejoin_step = step;
    h->rejoining = true;
    hd_log_msg(h, PREEMPT_LOG_INFO, "in place: the preemption's checkpoint at step %llu is committed and no notice "
               "came to this worker: it keeps its process and joins job %s's next incarnation (bound %llu ms)",
               (unsigned long long)step, h->cfg.job, (unsigned long long)h->cfg.join_timeout_ms);
    if (!h->ev_rejoin)
        h->ev_rejoin = event_new(h->base, -1, 0, on_rejoin, h);
    if (!h->ev_rejoin) {
        rejoined(h, -ENOMEM, false);
        return;
    }
    event_active(h->ev_rejoin, EV_TIMEOUT, 1);
}

void hd_resume(struct preempt_handler *h, uint64_t step)
{
    h->in_place++;
    hd_log_msg(h, PREEMPT_LOG_INFO, "in place: a member of job %s's incarnation %llu; training goes on after step "
               "%llu", h->cfg.job, (unsigned long long)h->joined.incarnation, (unsigned long long)step);
    if (h->rebuild) {
        h->in_cb++;
        h->rebuild(h, h->joined.incarnation, step, h->rebuild_ud);
        h->in_cb--;
    }
    h->step_t0_us = hd_now_us(h);
}

int preempt_handler_on_rebuild(struct preempt_handler *h, preempt_rebuild_cb cb, void *userdata)
{
    if (!hd_handler_ok(h) || !cb)
        return -EINVAL;
    if (h->rebuild)
        return -EALREADY;
    h->rebuild = cb;
    h->rebuild_ud = userdata;
    return 0;
}

static void on_start_begin(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_begin(arg);
}

/* SIGINT during a blocking start-up: its handler (installed only while
 * the process has one of its own) wakes the loop through a pipe. One
 * blocking start-up at a time listens; others are not interruptible. */
static volatile sig_atomic_t sigint_fd = -1; /* the pipe the handler writes to, or -1 */
static atomic_flag sigint_taken = ATOMIC_FLAG_INIT;

static void on_sigint_signal(int sig)
{
    int e = errno;
    char c = (char)sig;

    if (sigint_fd >= 0)
        (void)!write(sigint_fd, &c, 1);
    errno = e;
}

static void on_sigint(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_handler *h = arg;

    (void)fd;
    (void)what;
    if (!h->start)
        return;
    hd_log_msg(h, PREEMPT_LOG_ERROR, "start-up interrupted (SIGINT)");
    start_done(h, -EINTR);
}

/* Start-up, blocking: its phases on a private base, so that nothing of the
 * caller's loop runs meanwhile. Each phase is bounded; a SIGINT ends it
 * with -EINTR when the process handles SIGINT (a Python interpreter, a
 * program that catches Ctrl-C): its handler is called again afterwards,
 * so the program learns of it as it would have. With SIGINT's default
 * action the process dies as it always did; ignored, it stays ignored. */
static int start_blocking(struct preempt_handler *h)
{
    struct sigaction old, ours = { .sa_handler = on_sigint_signal };
    struct event *ev_int = NULL;
    int p[2] = { -1, -1 };
    bool listen = false;

    if (h->cfg.etcd_endpoints) { /* only a job's start-up waits on anything */
        h->start->base = event_base_new();
        if (!h->start->base)
            return -ENOMEM;
        if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN &&
            !atomic_flag_test_and_set(&sigint_taken)) {
            listen = pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0 &&
                     (ev_int = event_new(h->start->base, p[0], EV_READ, on_sigint, h)) != NULL &&
                     event_add(ev_int, NULL) == 0;
            if (listen) {
                sigint_fd = p[1];
                (void)sigemptyset(&ours.sa_mask);
                listen = sigaction(SIGINT, &ours, NULL) == 0;
            }
            if (!listen)
                atomic_flag_clear(&sigint_taken);
        }
    }
    {
        struct event_base *b = h->start->base;

        start_begin(h);
        while (b && h->start_status == -EAGAIN && event_base_loop(b, EVLOOP_ONCE) >= 0)
            ;
        if (h->start_status == -EAGAIN) {
            hd_log_msg(h, PREEMPT_LOG_ERROR, "the start-up loop failed");
            start_done(h, -EIO);
        }
        if (listen) {
            char c;

            (void)sigaction(SIGINT, &old, NULL);
            sigint_fd = -1;
            atomic_flag_clear(&sigint_taken);
            if (read(p[0], &c, 1) == 1)
                (void)raise(SIGINT); /* the program's own handler learns of it now */
        }
        if (ev_int)
            event_free(ev_int);
        if (p[0] >= 0) {
            (void)close(p[0]);
            (void)close(p[1]);
        }
        if (b)
            event_base_free(b);
    }
    return h->start_status;
}

static int copy_str(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return 0;
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

/* A former run's metrics file (NULL when there is none or it is too
 * large to be one). Ownership: malloc'ed, the caller frees it. */
static char *read_small(const char *path)
{
    FILE *f = fopen(path, "re");
    char *buf = f ? malloc(1u << 20) : NULL;
    size_t n = buf ? fread(buf, 1, (1u << 20) - 1, f) : 0;

    if (f)
        (void)fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    return buf;
}

/* A report path with "{worker}" made the worker index, malloc'ed (NULL:
 * out of memory, or too long). */
static char *worker_path(const char *p, unsigned worker)
{
    const char *at = strstr(p, "{worker}");
    char buf[4096];
    int n = at ? snprintf(buf, sizeof(buf), "%.*s%u%s", (int)(at - p), p, worker, at + 8)
               : snprintf(buf, sizeof(buf), "%s", p);

    return n >= 0 && (size_t)n < sizeof(buf) ? strdup(buf) : NULL;
}

/* $PREEMPT_PROGRESS_FILE, set by a supervising launcher: the progress
 * page (progress-internal.h). A launcher that asks for it watches it, so
 * failing to map it fails creation. */
static int progress_open(struct preempt_handler *h)
{
    const char *p = getenv("PREEMPT_PROGRESS_FILE");
    char *path;
    int r;

    if (!p || !*p)
        return 0;
    path = worker_path(p, h->cfg.worker);
    if (!path)
        return -ENAMETOOLONG;
    h->progress = preempt_progress_open_(path, (uint64_t)h->t0.tv_sec * 1000000000u + (uint64_t)h->t0.tv_nsec - 1000000u,
                                         &r); /* hd_now_us() counts from t0 plus 1 ms */
    if (!h->progress)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "progress file %s (PREEMPT_PROGRESS_FILE): %s", path, strerror(-r));
    free(path);
    return h->progress ? 0 : r;
}

/* Where the termination record and the metrics go (docs/guide/operating.md,
 * "Observing preemptions"): the configuration's, else the environment's, else for the
 * record Kubernetes' /dev/termination-log when it is there to write. "":
 * none. "{worker}" in either becomes the worker index. */
static int report_paths(struct preempt_handler *h)
{
    const char *t = h->cfg.termination_log, *m = h->cfg.metrics_path;
    char labels[256], *prev;
    int r;

    h->cfg.termination_log = h->cfg.metrics_path = NULL; /* the copies below, or none */
    h->notice_worker = -1;
    if (!t)
        t = getenv("PREEMPT_TERMINATION_LOG");
    if (!t && access("/dev/termination-log", W_OK) == 0)
        t = "/dev/termination-log";
    if (t && *t && !(h->term_path = worker_path(t, h->cfg.worker)))
        return -ENAMETOOLONG;
    h->cfg.termination_log = h->term_path;
    r = progress_open(h);
    if (r < 0)
        return r;
    if (!m)
        m = getenv("PREEMPT_METRICS_PATH");
    if (!m || !*m)
        return 0;
    if (!(h->metrics_path = worker_path(m, h->cfg.worker)))
        return -ENAMETOOLONG;
    (void)snprintf(labels, sizeof(labels), "job=\"%s\",worker=\"%u\"", h->cfg.job ? h->cfg.job : "", h->cfg.worker);
    prev = read_small(h->metrics_path);
    h->metrics = preempt_metrics_new_(labels, prev);
    free(prev);
    if (!h->metrics)
        return -ENOMEM;
    h->cfg.metrics_path = h->metrics_path;
    return 0;
}

static void on_peer_gone(unsigned worker, const char *why, void *arg)
{
    struct preempt_handler *h = arg;
    enum preempt_state s = preempt_sm_core_(h->wk.sm)->state;

    /* while this worker saves or has exited, peers leave as the preemption
     * ends (each after its last save), and no collective runs: not told */
    if (s == PREEMPT_STATE_SAVING || s == PREEMPT_STATE_FINAL_SAVE || s == PREEMPT_STATE_EXIT ||
        s == PREEMPT_STATE_REJOINING) {
        hd_log_msg(h, PREEMPT_LOG_DEBUG, "worker %u: %s (this worker is saving: not told)", worker, why);
        return;
    }
    hd_log_msg(h, PREEMPT_LOG_WARNING, "worker %u: %s", worker, why);
    h->in_cb++;
    h->peer_lost(h, worker, why, h->peer_lost_ud);
    h->in_cb--;
}

/* The members watch, once a job's coordinator runs and a callback is set. */
static int watch_peers(struct preempt_handler *h)
{
    int r;

    if (!h->peer_lost || !h->wk.coord)
        return 0;
    r = preempt_coord_watch_members_(h->wk.coord, on_peer_gone, h);
    if (r < 0)
        hd_log_msg(h, PREEMPT_LOG_ERROR, "watching the job's member records failed: %s", strerror(-r));
    return r;
}

int preempt_handler_on_peer_lost(struct preempt_handler *h, preempt_peer_lost_cb cb, void *userdata)
{
    if (!hd_handler_ok(h) || !cb)
        return -EINVAL;
    if (h->peer_lost)
        return -EALREADY;
    h->peer_lost = cb;
    h->peer_lost_ud = userdata;
    return watch_peers(h);
}

int preempt_handler_new_size(struct event_base *base, const struct preempt_config *cfg,
                             const struct preempt_callbacks *cb, void *userdata, struct preempt_handler **ret,
                             size_t cb_size)
{
    static const struct preempt_sm_ops ops = {
        .run_fx = hd_run_fx, .on_record = hd_on_record, .after_step = hd_after_step, .schedule_drain = hd_schedule_drain,
    };
    struct preempt_config_facts facts;
    struct preempt_handler *h;
    const char *problem;
    int r;

    if (!cfg || !cb || !ret || !preempt_callbacks_size_ok_(cb_size))
        return -EINVAL;
    h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->magic = HANDLER_MAGIC;
    h->sigfd = -1; /* so that freeing a half-built handler is safe */
    memcpy(&h->cb, cb, cb_size); /* a smaller (older) layout: the later callbacks stay NULL */
    h->ud = userdata;
    if (!preempt_config_size_ok_(cfg->size)) { /* read nothing more of it: its fields are elsewhere */
        hd_log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: a struct preempt_config of %zu bytes; this library "
                   "reads %zu (0.1's) or %zu (built against another version of preempt.h? fill it with "
                   "preempt_config_init())", cfg->size, (size_t)PREEMPT_CONFIG_SIZE_0_1, sizeof(*cfg));
        r = -EINVAL;
        goto fail;
    }
    h->cfg = preempt_config_full_(cfg);
    cfg = &h->cfg; /* the strings are copied from it below */
    (void)clock_gettime(CLOCK_MONOTONIC, &h->t0);
    problem = preempt_config_problem_(cfg, cb);
    if (problem) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: %s", problem);
        r = -EINVAL;
        goto fail;
    }
    {
        struct { const char *from; char **to; const char **field; } strs[] = {
            { cfg->ckpt_dir, &h->ckpt_dir, &h->cfg.ckpt_dir },
            { cfg->trace_path, &h->trace_path, &h->cfg.trace_path },
            { cfg->etcd_endpoints, &h->etcd_endpoints, &h->cfg.etcd_endpoints },
            { cfg->job, &h->job, &h->cfg.job },
            { cfg->launch_id ? cfg->launch_id : preempt_launch_from_env_(), &h->launch_id, &h->cfg.launch_id },
            { cfg->etcd_user, &h->etcd_user, &h->cfg.etcd_user },
            { cfg->etcd_password, &h->etcd_password, &h->cfg.etcd_password },
            { cfg->etcd_ca, &h->etcd_ca, &h->cfg.etcd_ca },
            { cfg->etcd_cert, &h->etcd_cert, &h->cfg.etcd_cert },
            { cfg->etcd_key, &h->etcd_key, &h->cfg.etcd_key },
            { cfg->metadata_url, &h->metadata_url, &h->cfg.metadata_url },
        };

        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
            r = copy_str(strs[i].from, strs[i].to);
            if (r < 0)
                goto fail;
            *strs[i].field = *strs[i].to;
        }
    }
    if (!h->cfg.start_over && getenv("PREEMPT_START_OVER") && !strcmp(getenv("PREEMPT_START_OVER"), "1"))
        h->cfg.start_over = true;
    if (!h->cfg.stay_in_place && getenv("PREEMPT_STAY_IN_PLACE") && !strcmp(getenv("PREEMPT_STAY_IN_PLACE"), "1"))
        h->cfg.stay_in_place = true;
    r = report_paths(h);
    if (r < 0)
        goto fail;
    h->base = base;
    if (!base) {
        h->base = event_base_new();
        h->own_base = true;
        if (!h->base) {
            r = -ENOMEM;
            goto fail;
        }
    }
    r = resolve_platform(h);
    if (r < 0)
        goto fail;
    if (preempt_persist_backend_from_string_(getenv("PREEMPT_PERSIST"), &h->persist_want) < 0) {
        hd_log_msg(h, PREEMPT_LOG_ERROR, "invalid configuration: PREEMPT_PERSIST=%s is not one of auto, io_uring, "
                   "aio, chunked", getenv("PREEMPT_PERSIST"));
        r = -EINVAL;
        goto fail;
    }
    facts = (struct preempt_config_facts){
        .grace_ms = h->cfg.grace_ms, .bound_ms = cfg->bound_ms, .agree_timeout_ms = cfg->agree_timeout_ms,
        .margin_ms = cfg->margin_ms, .plan = cfg->plan, .second = cfg->second,
        .workers = cfg->etcd_endpoints ? cfg->workers : 1,
        /* a job's worker with a checkpoint directory: its offer of the step it holds is its checkpoint */
        .in_place = cfg->stay_in_place && cfg->etcd_endpoints && cfg->ckpt_dir,
    };
    h->wk.ops = &hd_wk_ops;
    h->wk.arg = h;
    r = preempt_sm_new_(&facts, &ops, h, &h->wk.sm);
    if (r < 0)
        goto fail;
    r = open_signals(h);
    if (r < 0)
        goto fail;
    r = open_events(h);
    if (r < 0)
        goto fail;
    h->start = calloc(1, sizeof(*h->start));
    if (!h->start) {
        r = -ENOMEM;
        goto fail;
    }
    h->start_status = -EAGAIN;
    if (cfg->async_start) { /* start-up begins on the loop */
        h->ev_start = event_new(h->base, -1, 0, on_start_begin, h);
        if (!h->ev_start) {
            r = -ENOMEM;
            goto fail;
        }
        h->start->base = h->base;
        event_active(h->ev_start, EV_TIMEOUT, 1);
        *ret = h;
        return 0;
    }
    r = start_blocking(h);
    if (r < 0)
        goto fail;
    *ret = h;
    return 0;
fail:
    preempt_handler_free(h);
    return r;
}
