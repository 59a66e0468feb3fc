/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/coord.c: the multi-worker protocol over etcd (see coord-internal.h
 * and docs/protocol.md). The key layout under P = /preempt/<job>/ is
 * lib/keys-internal.h's one table: P/incarnation, and under incarnation N
 * the records every worker watches, [P/N/, P/N/w/), and the per-worker
 * records under P/N/w/, counted in etcd by the transaction that writes
 * them, that only the driver reads (docs/protocol.md, "Traffic").
 *
 * p counts the job's preemption episodes in N: 0 first; every worker moves on
 * to p + 1 when its machine clears the round after the notices were withdrawn
 * (clear-round), so that the records of an ended episode, however late they
 * land or are deleted, never touch the next one. Round 0 is the first save;
 * round 1 the final save of a grace period. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord-internal.h"
#include "keys-internal.h"
#include "claim-internal.h"
#include "episode-internal.h"
#include "membership-internal.h"
#include "pub-internal.h"
#include "records-internal.h"
#include "view-internal.h"
#include "platform-internal.h"

#define MAX_STEPS_OFFERED 64


bool preempt_coord_job_ok_(const char *job)
{
    size_t n = job ? strlen(job) : 0;

    if (n == 0 || n > PREEMPT_MAX_JOB || !strcmp(job, ".") || !strcmp(job, ".."))
        return false;
    return strspn(job, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool preempt_coord_launch_ok_(const char *launch)
{
    size_t n = launch ? strlen(launch) : 0;

    return n > 0 && n <= PREEMPT_MAX_LAUNCH &&
           strspn(launch, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

int preempt_coord_prefix_(const char *job, char *buf, size_t size)
{
    if (!preempt_coord_job_ok_(job))
        return -EINVAL;
    return snprintf(buf, size, "/preempt/%s/", job) < (int)size ? 0 : -ENAMETOOLONG;
}

static uint64_t wall_ms(void)
{
    return preempt_clock_ms_(CLOCK_REALTIME);
}

/* ---- start-up: join an incarnation and agree on the restore step ------------------------ */

struct join {
    const struct preempt_coord_cfg *cfg;
    const struct preempt_coord_io *io; /* etcd, the clock and one timer (the real ones, or the simulation's) */
    void *io_arg;
    /* The io's one timer serves four: the bound (deadline, below), and due
     * times in io->mono_ms (0: off) */
    uint64_t t_keep, t_wait;          /* the lease's keep-alive; the wait for a holder's lease */
    bool done_due;                    /* the phase's end, run from the loop */
    bool watching;                    /* the awaited record is watched */
    enum preempt_key_id awaited;       /* N/ready (the barrier's record), or N/restored */
    void (*apply)(struct join *j, const struct preempt_etcd_kv *kv); /* what it says */
    char jobp[PREEMPT_MAX_JOB + 16];
    char member[PREEMPT_MEMBER_MAX]; /* this worker's alive/<w> value, its offer included */
    const uint64_t *steps;
    uint64_t *steps_copy; /* owned: the join phase's copy of its offered steps */
    size_t n_steps;
    struct preempt_coord_pending *pend;
    size_t n_pend, i_pend;
    bool resolved;
    uint64_t deadline, inc;
    int64_t lease;
    int64_t holder;    /* the lease that held alive/<w> when this worker first found it taken */
    uint64_t holder_until;                  /* still alive then (monotonic ms), it is a live duplicate */
    char holder_value[PREEMPT_MEMBER_MAX]; /* its alive/<w> value, to name it */
    int64_t alive_rev; /* the revision at which this worker's alive/<w> was written */
    int64_t present;   /* the members counted when this worker joined */
    bool shaped;       /* this worker wrote (or tried to write) the incarnation's shape */
    bool ready_up;     /* the watch of the awaited record is up */
    int restore_mine;  /* the restore barrier: this worker's outcome (PREEMPT_RESTORE_*) */
    const char *restore_why; /* when not ok, why */
    int *ret_restored;       /* out: the job's outcome */
    char *verdict;           /* out: when not ok, the record's "<step> worker=<w>: <why>" */
    size_t verdict_size;
    struct preempt_coord_plan plan; /* the barrier's writer: what the members' offers say */
    bool revoke;             /* give the lease back at the end of the phase */
    bool finished;
    int status;
    char *msg;
    size_t msg_size;
    struct preempt_coord_join *out;
    bool revoking;                    /* the lease's revoke is on its way */
    preempt_coord_done done;          /* called once the phase's resources are released */
    void *done_arg;
};

static void join_tick(void *arg);

static uint64_t join_now(const struct join *j)
{
    return j->io->mono_ms(j->io_arg);
}

/* Sets the io's one timer to the earliest due time (the end: at once, from
 * the loop). */
static void join_arm(struct join *j)
{
    uint64_t due[] = { j->t_keep, j->t_wait, j->finished ? 0 : j->deadline }, at = 0, now = join_now(j);

    for (size_t i = 0; i < sizeof(due) / sizeof(due[0]); i++)
        if (due[i] && (!at || due[i] < at))
            at = due[i];
    if (j->done_due)
        at = now;
    j->io->timer(j->io_arg, at > now ? at - now : 1, join_tick, j); /* always some time: 0 cancels */
}

static void join_finish(struct join *j, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void join_finish(struct join *j, int status, const char *fmt, ...)
{
    va_list ap;

    if (j->finished)
        return;
    j->finished = true;
    j->status = status;
    va_start(ap, fmt);
    (void)vsnprintf(j->msg, j->msg_size, fmt, ap);
    va_end(ap);
    j->done_due = true;
    join_arm(j);
}

/* The time left before start-up gives up (at least 1 ms). */
static uint64_t join_left(const struct join *j)
{
    uint64_t now = join_now(j);

    return j->deadline > now ? j->deadline - now : 1;
}

static void join_call(struct join *j, const struct preempt_etcd_req *req, preempt_etcd_reply_cb cb)
{
    if (j->finished) /* an answer that came after the end: nothing more is asked */
        return;
    if (j->io->request(j->io_arg, req, join_left(j), cb, j) < 0)
        join_finish(j, -ENOMEM, "out of memory");
}

/* What read number i of r found; an empty record (value NULL) when none. */
static const struct preempt_etcd_kv *read_kv(const struct preempt_etcd_reply *r, size_t i)
{
    static const struct preempt_etcd_kv none;
    const struct preempt_etcd_kv *kv = preempt_etcd_reply_kv_(r, i);

    return kv ? kv : &none;
}

static void join_read_inc(struct join *j);

static bool join_failed(struct join *j, int status, const char *msg, const char *what)
{
    if (status == 0)
        return false;
    join_finish(j, status, "joining job %s: %s: %s", j->cfg->job, what, msg);
    return true;
}

/* The answer to a create-if-absent (what: for the message): NULL when
 * start-up ended on it; else the record that was there, or an empty one
 * (value NULL) when this worker's was created (*created) or the one there
 * went before it could be read. */
static const struct preempt_etcd_kv *join_created(struct join *j, int status, const struct preempt_etcd_reply *r,
                                                  const char *msg, const char *what, bool *created)
{
    if (join_failed(j, status, msg, what))
        return NULL;
    *created = r->succeeded;
    return read_kv(r, r->succeeded ? SIZE_MAX : 0);
}

static void on_opened(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;

    (void)r;
    if (!join_failed(j, status, msg, "opening an incarnation"))
        join_read_inc(j); /* whoever opened it first, read what it is now */
}

/* A field of a record of kind id, read with its grammar (lib/records.c),
 * copied into buf: "" when the record lacks it or does not read. A flag's
 * text is its name. */
static const char *rec_field(enum preempt_key_id id, const char *v, const char *name, char *buf, size_t size)
{
    struct preempt_record r;
    const char *why, *s;
    size_t len;

    buf[0] = '\0';
    if (v && preempt_record_parse_(id, v, PREEMPT_MAX_WORKERS, &r, &why) == 0 &&
        (s = preempt_record_text_(&r, name, &len)) != NULL)
        (void)snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), s);
    return buf;
}

/* Reads the steps a member record offers ("... steps=a,b,c"). */
static size_t parse_offer(const char *v, uint64_t *steps, size_t max)
{
    char list[MAX_STEPS_OFFERED * 21 + 1];
    const char *p = rec_field(PREEMPT_KEY_ALIVE, v, "steps", list, sizeof(list));
    size_t n = 0;

    while (*p >= '0' && *p <= '9' && n < max) {
        char *end;

        steps[n++] = strtoull(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static bool offered(const uint64_t *steps, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i++)
        if (steps[i] == s)
            return true;
    return false;
}

/* Appends "steps=a,b,c" at buf + off. */
static void put_steps(char *buf, size_t size, size_t off, const uint64_t *steps, size_t n_steps)
{
    if (off < size)
        off += (size_t)snprintf(buf + off, size - off, "steps=");
    for (size_t i = 0; i < n_steps && i < MAX_STEPS_OFFERED && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%" PRIu64, i ? "," : "", steps[i]);
}

/* Whether member record v asks to start over ("over=1"). */
static bool asks_over(const char *v)
{
    char f[8];

    return rec_field(PREEMPT_KEY_ALIVE, v, "over=1", f, sizeof(f))[0] != '\0';
}

void preempt_coord_plan_(const char *const *offers, const unsigned *idx, size_t n, struct preempt_coord_plan *ret)
{
    uint64_t m[MAX_STEPS_OFFERED], theirs[MAX_STEPS_OFFERED];
    size_t off = 0;

    *ret = (struct preempt_coord_plan){ 0 };
    ret->lacking[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

        ret->over |= asks_over(offers[k]);
        for (size_t i = 0; i < nt; i++)
            if (theirs[i] > ret->newest || !ret->held) {
                ret->newest = theirs[i];
                ret->held = true;
            }
    }
    /* the restore step: the newest step every offer holds */
    for (size_t i = 0, n0 = n ? parse_offer(offers[0], m, MAX_STEPS_OFFERED) : 0; i < n0; i++) {
        bool all = true;

        for (size_t k = 1; k < n && all; k++) {
            size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

            all = offered(theirs, nt, m[i]);
        }
        if (all && (!ret->have || m[i] > ret->step)) {
            ret->have = true;
            ret->step = m[i];
        }
    }
    ret->at_risk = ret->held && (!ret->have || ret->newest > ret->step);
    for (size_t k = 0; ret->at_risk && k < n; k++) {
        size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

        if (!offered(theirs, nt, ret->newest) && off < sizeof(ret->lacking)) {
            off += (size_t)snprintf(ret->lacking + off, sizeof(ret->lacking) - off, "%s%u", off ? "," : "", idx[k]);
            ret->n_lacking++;
        }
    }
    if (off >= sizeof(ret->lacking)) /* too many to name: the first ones, and "..." */
        (void)snprintf(ret->lacking + sizeof(ret->lacking) - 5, 5, ",...");
}

struct indexed_offer {
    unsigned idx;
    const char *offer;
};

static int by_index(const void *a, const void *b)
{
    unsigned x = ((const struct indexed_offer *)a)->idx, y = ((const struct indexed_offer *)b)->idx;

    return x < y ? -1 : x > y;
}

/* Orders offers[0..n) (and idx with them) by worker index: the range
 * comes in text order (1, 10, 11, 2), and the workers a refusal names
 * should read in order. Left as they are when out of memory. */
static void sort_by_worker(const char **offers, unsigned *idx, size_t n)
{
    struct indexed_offer *v = calloc(n ? n : 1, sizeof(*v));

    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = (struct indexed_offer){ idx[i], offers[i] };
    qsort(v, n, sizeof(*v), by_index);
    for (size_t i = 0; i < n; i++) {
        idx[i] = v[i].idx;
        offers[i] = v[i].offer;
    }
    free(v);
}

void preempt_coord_member_(char *buf, size_t size, long pid, const char *host, const char *launch, unsigned workers,
                           bool over, const uint64_t *steps, size_t n_steps)
{
    put_steps(buf, size,
              (size_t)snprintf(buf, size, "pid=%ld host=%s launch=%s workers=%u %s", pid, host && *host ? host : "-",
                               launch && *launch ? launch : "-", workers, over ? "over=1 " : ""),
              steps, n_steps);
}

/* "pid 12 on host h" of a member record, for messages. */
static const char *who(const char *v, char *buf, size_t size)
{
    char pid[24], host[PREEMPT_MAX_HOST + 1], launch[PREEMPT_MAX_LAUNCH + 1];

    (void)rec_field(PREEMPT_KEY_ALIVE, v, "pid", pid, sizeof(pid));
    (void)rec_field(PREEMPT_KEY_ALIVE, v, "host", host, sizeof(host));
    (void)rec_field(PREEMPT_KEY_ALIVE, v, "launch", launch, sizeof(launch));
    (void)snprintf(buf, size, "pid %s on host %s, launch %s", pid[0] ? pid : "?", host[0] ? host : "?",
                   launch[0] ? launch : "-");
    return buf;
}

static void join_try(struct join *j, bool rejoin);
static void join_open(struct join *j, uint64_t inc);

static void write_ready(struct join *j, bool consume);
static void on_start_over(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg);

/* A key of the schema (keys-internal.h) in the incarnation being joined. */
#define JKEY(j, buf, id, ...)                                                                                        \
    (preempt_key_(buf, sizeof(buf), (j)->jobp, PREEMPT_KEY_##id,                                                     \
                  &(struct preempt_key){ .inc = (j)->inc, __VA_ARGS__ }),                                            \
     buf)
#define JRANGE(j, buf, id, upto)                                                                                     \
    (preempt_key_range_(buf, sizeof(buf), (j)->jobp, PREEMPT_KEY_##id, upto,                                         \
                        &(struct preempt_key){ .inc = (j)->inc }),                                                   \
     buf)

/* A record (the barrier's, the shape's) whose worker count is not this
 * worker's: start-up ends with that error. Returns true then. */
static bool workers_differ(struct join *j, enum preempt_key_id id, const char *value, const char *record)
{
    char w[24];

    if (strtoul(rec_field(id, value, "workers", w, sizeof(w)), NULL, 10) == j->cfg->workers)
        return false;
    join_finish(j, -EINVAL,
                "job %s: incarnation %" PRIu64 " %s workers=%s, but this worker has workers=%u: every worker of a job "
                "needs the same worker count (nothing was changed)",
                j->cfg->job, j->inc, record, w, j->cfg->workers);
    return true;
}

/* The barrier's record (N/ready): "restore=<step>|none workers=W
 * launch=L", written once, create-if-absent, by whichever worker found
 * the W-th live member. Every worker follows it. */
static void apply_ready(struct join *j, const struct preempt_etcd_kv *kv)
{
    char launch[PREEMPT_MAX_LAUNCH + 1], mine[PREEMPT_MAX_LAUNCH + 1], restore[24], refused[24], lacking[96];
    uint64_t step;

    (void)rec_field(PREEMPT_KEY_READY, kv->value, "launch", launch, sizeof(launch));
    (void)rec_field(PREEMPT_KEY_ALIVE, j->member, "launch", mine, sizeof(mine));
    (void)rec_field(PREEMPT_KEY_READY, kv->value, "restore", restore, sizeof(restore));
    if (workers_differ(j, PREEMPT_KEY_READY, kv->value, "started with"))
        return;
    if (strcmp(launch, mine)) {
        join_finish(j, -EBUSY,
                    "job %s is in use by launch %s; this worker is of launch %s: two jobs use one job name "
                    "(give one of them another name; nothing was changed)",
                    j->cfg->job, launch, mine);
    } else if (kv->create_rev <= j->alive_rev) {
        join_finish(j, -EBUSY,
                    "job %s: incarnation %" PRIu64 " started without worker %u (its workers were all there before "
                    "this one joined): a second process with worker index %u, or a second job using this name "
                    "(nothing was changed)",
                    j->cfg->job, j->inc, j->cfg->worker, j->cfg->worker);
    } else if (rec_field(PREEMPT_KEY_READY, kv->value, "refused", refused, sizeof(refused))[0]) {
        char target[48];

        (void)rec_field(PREEMPT_KEY_READY, kv->value, "lacking", lacking, sizeof(lacking));
        if (preempt_parse_u64_(restore, &step))
            (void)snprintf(target, sizeof(target), "restore step %" PRIu64, step);
        else
            (void)snprintf(target, sizeof(target), "start at step 0");
        join_finish(j, -ENODATA,
                    "job %s: worker(s) %s lack the checkpoint at step %s that other workers hold (a volume not "
                    "mounted? a wiped, replaced or corrupt directory?); the job could only %s and lose it. Nothing "
                    "was changed: give those workers their checkpoints back and restart; or run 'preemptctl "
                    "start-over %s' (or restart once with PREEMPT_START_OVER=1) and restart to %s, setting the newer "
                    "checkpoints aside (kept in <ckpt_dir>/aside)",
                    j->cfg->job, lacking, refused, target, j->cfg->job, target);
    } else {
        j->out->have_step = preempt_parse_u64_(restore, &step);
        j->out->step = j->out->have_step ? step : 0;
        j->out->over = rec_field(PREEMPT_KEY_READY, kv->value, "over", refused, sizeof(refused))[0] != '\0';
        j->out->incarnation = j->inc;
        j->out->lease = j->lease;
        (void)snprintf(j->out->member, sizeof(j->out->member), "%s", j->member);
        join_finish(j, 0, "joined");
    }
}

static void on_ready_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct join *j = arg;

    if (type == PREEMPT_ETCD_PUT && kv->value)
        j->apply(j, kv);
}

static void on_ready_reset(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    (void)rev;
    if (n > 0)
        on_ready_event(PREEMPT_ETCD_PUT, &kvs[0], arg);
}

static void on_ready_link(bool up, const char *why, void *arg)
{
    (void)why;
    ((struct join *)arg)->ready_up = up;
}

static void on_ready_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    (void)msg;
    if (status == 0)
        on_ready_reset(r->res[0].kvs, r->res[0].n, 0, arg);
}

/* While the watch of the awaited record is not up (etcd answering
 * requests but not keeping a stream), the keep-alive tick reads the record
 * instead: a broken stream slows the barrier, it never hides it. A failed
 * read is only retried. */
static void read_ready(struct join *j)
{
    char key[PREEMPT_KEY_MAX];

    if (!j->watching || j->ready_up || j->finished)
        return;
    (void)preempt_key_(key, sizeof(key), j->jobp, j->awaited, &(struct preempt_key){ .inc = j->inc });
    (void)j->io->request(j->io_arg, PREEMPT_RQ_GET(key), join_left(j), on_ready_read, j);
}

/* Waits for the awaited record without polling: a watch of that one key. */
static void wait_ready(struct join *j)
{
    static const struct preempt_etcd_watch_ops ops = { .on_event = on_ready_event, .on_reset = on_ready_reset,
                                                       .on_link = on_ready_link };
    char key[PREEMPT_KEY_MAX];

    if (j->watching)
        return;
    (void)preempt_key_(key, sizeof(key), j->jobp, j->awaited, &(struct preempt_key){ .inc = j->inc });
    if (j->io->watch(j->io_arg, key, NULL, &ops, j) < 0)
        join_finish(j, -ENOMEM, "out of memory");
    else
        j->watching = true;
}

static void on_ready_written(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    const struct preempt_etcd_kv *kv;
    bool created;

    if (!(kv = join_created(j, status, r, msg, "writing the barrier's record", &created)))
        return;
    if (kv->value)
        j->apply(j, kv); /* another worker's record landed first: it decides */
    wait_ready(j);       /* our own record comes back through the watch */
}

/* Every live member record of the incarnation: when exactly W of them are
 * of this job (this worker count and launch), the barrier is complete and
 * this worker writes its record: the newest step every member offers. */
static void on_members(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    const struct preempt_etcd_kv *kvs;
    const char **offers;
    unsigned *idx;
    size_t n, k = 0;
    char key[PREEMPT_MAX_JOB + 48], mine[PREEMPT_MAX_LAUNCH + 1], f[PREEMPT_MAX_LAUNCH + 1];

    if (join_failed(j, status, msg, "reading the members"))
        return;
    kvs = r->res[0].kvs;
    n = r->res[0].n;
    offers = calloc(n ? n : 1, sizeof(*offers));
    idx = calloc(n ? n : 1, sizeof(*idx));
    if (!offers || !idx) {
        free(offers);
        free(idx);
        join_finish(j, -ENOMEM, "out of memory");
        return;
    }
    (void)rec_field(PREEMPT_KEY_ALIVE, j->member, "launch", mine, sizeof(mine));
    for (size_t i = 0; i < n; i++) {
        const char *slash = strrchr(kvs[i].key, '/');

        if (kvs[i].value &&
            strtoul(rec_field(PREEMPT_KEY_ALIVE, kvs[i].value, "workers", f, sizeof(f)), NULL, 10) == j->cfg->workers &&
            !strcmp(rec_field(PREEMPT_KEY_ALIVE, kvs[i].value, "launch", f, sizeof(f)), mine)) {
            idx[k] = slash ? (unsigned)strtoul(slash + 1, NULL, 10) : 0;
            offers[k++] = kvs[i].value;
        }
    }
    if (k < j->cfg->workers) { /* another launch's or worker count's records inflated the count */
        free(offers);
        free(idx);
        wait_ready(j);
        return;
    }
    sort_by_worker(offers, idx, k);
    preempt_coord_plan_(offers, idx, k, &j->plan);
    free(offers);
    free(idx);
    if (j->plan.at_risk && !j->plan.over) /* the operator may have asked for it in etcd */
        join_call(j, PREEMPT_RQ_GET(JKEY(j, key, START_OVER)), on_start_over);
    else
        write_ready(j, false);
}

/* P/start-over (preemptctl start-over JOB): the next incarnation whose
 * plan is at risk starts over, and consumes the request. */
static void on_start_over(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;

    if (join_failed(j, status, msg, "reading a start-over request"))
        return;
    j->plan.over = r->res[0].n > 0;
    write_ready(j, j->plan.over);
}

/* Writes the barrier's record from j->plan (create-if-absent), deleting
 * the start-over request it consumed in the same transaction. */
static void write_ready(struct join *j, bool consume)
{
    const struct preempt_coord_plan *plan = &j->plan;
    char key[PREEMPT_KEY_MAX], req[PREEMPT_KEY_MAX], val[256], mine[PREEMPT_MAX_LAUNCH + 1], restore[24];
    struct preempt_etcd_cmp cmp = { .key = key };
    struct preempt_etcd_op ok[] = { { PREEMPT_ETCD_OP_PUT, key, val, 0 }, { PREEMPT_ETCD_OP_DELETE, req, NULL, 0 } },
                           get = { PREEMPT_ETCD_OP_GET, key, NULL, 0 };

    (void)rec_field(PREEMPT_KEY_ALIVE, j->member, "launch", mine, sizeof(mine));
    if (plan->have)
        (void)snprintf(restore, sizeof(restore), "%" PRIu64, plan->step);
    else
        (void)snprintf(restore, sizeof(restore), "none");
    if (!plan->at_risk)
        (void)snprintf(val, sizeof(val), "restore=%s workers=%u launch=%s", restore, j->cfg->workers, mine);
    else if (plan->over)
        (void)snprintf(val, sizeof(val), "restore=%s workers=%u launch=%s over=%" PRIu64, restore, j->cfg->workers,
                       mine, plan->newest);
    else
        (void)snprintf(val, sizeof(val), "restore=%s workers=%u launch=%s refused=%" PRIu64 " lacking=%s", restore,
                       j->cfg->workers, mine, plan->newest, plan->lacking);
    (void)JKEY(j, key, READY);
    (void)JKEY(j, req, START_OVER);
    join_call(j, PREEMPT_RQ_TXN(&cmp, 1, ok, consume ? 2 : 1, &get, 1), on_ready_written);
}

/* This worker is a member of incarnation inc: the barrier's record, when
 * it exists already, decides; else the worker that counts the W-th member
 * completes the barrier, and every other one waits for its record. */
static void joined_in(struct join *j, const struct preempt_etcd_kv *ready)
{
    char pre[PREEMPT_KEY_MAX];

    if (ready->value) {
        apply_ready(j, ready);
        return;
    }
    if (j->present < (int64_t)j->cfg->workers) {
        wait_ready(j);
        return;
    }
    join_call(j, PREEMPT_RQ_UNDER(JRANGE(j, pre, ALIVE, 'w')), on_members);
}

static void recount(struct join *j);
static void on_shaped(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg);

/* The incarnation's shape (N/shape, "workers=W"): written once by its first
 * member, create-if-absent. A worker with another worker count is refused
 * at once, before it counts for the barrier. Returns true to go on. */
static bool check_shape(struct join *j, const struct preempt_etcd_kv *shape)
{
    char key[PREEMPT_KEY_MAX], val[32];

    if (!shape->value) {
        if (j->shaped) /* written and gone: the store lost it (wiped); the barrier's record decides */
            return true;
        j->shaped = true;
        (void)snprintf(val, sizeof(val), "workers=%u", j->cfg->workers);
        join_call(j, PREEMPT_RQ_CREATE(JKEY(j, key, SHAPE), val), on_shaped);
        return false;
    }
    return !workers_differ(j, PREEMPT_KEY_SHAPE, shape->value, "has");
}

/* What a member learns in the txn that joined it (or counted again): the
 * barrier's record, the live members' count and the shape, at ops number
 * i_ready, i_count and i_shape of the reply. */
static void joined_reply(struct join *j, const struct preempt_etcd_reply *r, size_t i_ready, size_t i_count,
                         size_t i_shape)
{
    j->present = preempt_etcd_reply_count_(r, i_count);
    if (r->n_res <= i_ready || r->n_res <= i_count || r->n_res <= i_shape)
        join_finish(j, -EPROTO, "joining job %s: a txn reply without the reads it was asked for", j->cfg->job);
    else if (check_shape(j, read_kv(r, i_shape)))
        joined_in(j, read_kv(r, i_ready));
}

static void on_shaped(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    const struct preempt_etcd_kv *kv;
    bool created;

    if (!(kv = join_created(j, status, r, msg, "writing the incarnation's worker count", &created)))
        return;
    if (created || check_shape(j, kv))
        recount(j); /* the count may have grown meanwhile */
}

static void on_recount(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;

    if (!join_failed(j, status, msg, "counting the members"))
        joined_reply(j, r, 0, 1, 2);
}

/* Reads the barrier's record and counts the members (one txn, no compare). */
static void recount(struct join *j)
{
    char ready[PREEMPT_KEY_MAX], alive[PREEMPT_KEY_MAX], shape[PREEMPT_KEY_MAX];
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_GET, JKEY(j, ready, READY), NULL, 0 },
                                     { PREEMPT_ETCD_OP_COUNT_PREFIX, JRANGE(j, alive, ALIVE, 'w'), NULL, 0 },
                                     { PREEMPT_ETCD_OP_GET, JKEY(j, shape, SHAPE), NULL, 0 } };

    join_call(j, PREEMPT_RQ_TXN(NULL, 0, ops, 3, NULL, 0), on_recount);
}

/* The holder's lease, as etcd tells it: a live lease (TTL > 0) that has
 * outlived its whole granted TTL since this worker first found it is kept
 * alive by a live process. An expired lease (TTL 0, which the gateway
 * omits, or -1) is on its way out: etcd revokes expired leases at a bounded
 * rate, seconds late on a busy server, so its key is waited out, not taken
 * for a duplicate. */
static void on_holder_ttl(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    int64_t ttl = status == 0 ? r->ttl : 0;
    int64_t granted = status == 0 ? r->granted_ttl : 0;
    uint64_t now = join_now(j), ms;
    char w[200];

    (void)msg;
    if (j->holder_until == 0)
        j->holder_until = now + (uint64_t)(granted > 0 ? granted : ttl > 0 ? ttl : 1) * 1000u + 1000u;
    else if (ttl > 0 && now >= j->holder_until) {
        join_finish(j, -EBUSY,
                    "job %s: worker index %u is taken by a live process (%s): two processes were started with worker "
                    "index %u, or a second job uses this job name (nothing was changed)",
                    j->cfg->job, j->cfg->worker, who(j->holder_value, w, sizeof(w)), j->cfg->worker);
        return;
    }
    ms = ttl > 0 ? (uint64_t)ttl * 1000u + 500u : 300u;
    if (ms > join_left(j))
        ms = join_left(j);
    j->t_wait = now + ms; /* then join_try() again */
    join_arm(j);
}

/* alive/<w> of this incarnation is held under another lease. Of another
 * launch: a second job with this name, an error at once. Else it is this
 * worker's previous life (its lease ends within its TTL) or a live process
 * with the same index (it keeps its lease alive): the holder's lease
 * decides (on_holder_ttl). */
static void held_by(struct join *j, const struct preempt_etcd_kv *kv)
{
    char theirs[PREEMPT_MAX_LAUNCH + 1], mine[PREEMPT_MAX_LAUNCH + 1], w[200];

    (void)rec_field(PREEMPT_KEY_ALIVE, kv->value, "launch", theirs, sizeof(theirs));
    (void)rec_field(PREEMPT_KEY_ALIVE, j->member, "launch", mine, sizeof(mine));
    if (strcmp(theirs, "-") && strcmp(mine, "-") && strcmp(theirs, mine)) {
        join_finish(j, -EBUSY,
                    "job %s is in use by another launch: its worker %u is %s; this worker is of launch %s. Two jobs "
                    "use one job name (give one of them another name; nothing was changed)",
                    j->cfg->job, j->cfg->worker, who(kv->value, w, sizeof(w)), mine);
        return;
    }
    if (j->holder != kv->lease) {
        j->holder = kv->lease;
        j->holder_until = 0;
    }
    (void)snprintf(j->holder_value, sizeof(j->holder_value), "%s", kv->value);
    join_call(j, PREEMPT_RQ_LEASE(TIMETOLIVE, kv->lease), on_holder_ttl);
}

static void on_joined(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    const struct preempt_etcd_kv *inc, *mine, *ready;
    uint64_t now_inc;

    if (join_failed(j, status, msg, "joining the incarnation"))
        return;
    inc = read_kv(r, 0);
    mine = read_kv(r, 1);
    ready = read_kv(r, 2);
    if (r->succeeded) {
        j->alive_rev = r->rev;
        joined_reply(j, r, 2, 3, 4); /* the ops after the two puts */
    } else if (!inc->value || !preempt_parse_u64_(inc->value, &now_inc) || now_inc != j->inc) {
        join_read_inc(j); /* the incarnation moved on meanwhile */
    } else if (mine->value && mine->lease == j->lease) {
        j->alive_rev = mine->create_rev; /* our own earlier attempt, applied though its reply was lost */
        j->shaped = false;
        recount(j);
    } else if (mine->value) {
        held_by(j, mine);
    } else if (!ready->value) {
        join_try(j, true); /* w joined inc before, but inc never started: join it again */
    } else {
        /* This worker lived in incarnation N and N started: that was its
         * previous life, so the job is restarting. Open N + 1 (one bump
         * wins). */
        join_open(j, j->inc + 1);
    }
}

/* Opens incarnation inc: moves the counter from inc - 1 (or creates it for
 * inc 1) and, in the same transaction, removes anything already under
 * P/inc/ (left there while the counter was lost), so that a new
 * incarnation starts from nothing. */
static void join_open(struct join *j, uint64_t inc)
{
    char key[PREEMPT_KEY_MAX], pre[PREEMPT_KEY_MAX], cur[24], next[24];
    struct preempt_etcd_cmp cmp = { key, inc > 1 ? cur : NULL };
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_PUT, key, next, 0 },
                                     { PREEMPT_ETCD_OP_DELETE_PREFIX, pre, NULL, 0 } };

    (void)JKEY(j, key, INCARNATION);
    (void)preempt_key_range_(pre, sizeof(pre), j->jobp, PREEMPT_KEY_INC, 0, &(struct preempt_key){ .inc = inc });
    (void)snprintf(cur, sizeof(cur), "%" PRIu64, inc - 1);
    (void)snprintf(next, sizeof(next), "%" PRIu64, inc);
    join_call(j, PREEMPT_RQ_TXN(&cmp, 1, ops, 2, NULL, 0), on_opened);
}

/* Joins incarnation inc: writes joined/<w> (this worker lived in inc) and
 * alive/<w> (its membership and offer, bound to its lease), reads the
 * barrier's record and counts the live members, in one txn. It applies
 * only while inc is current and w has not joined inc (rejoin: w joined,
 * but inc never started and nobody holds w). */
static void join_try(struct join *j, bool rejoin)
{
    char counter[PREEMPT_KEY_MAX], joined[PREEMPT_KEY_MAX], alive[PREEMPT_KEY_MAX], cur[24];
    char ready[PREEMPT_KEY_MAX], members[PREEMPT_KEY_MAX], shape[PREEMPT_KEY_MAX];
    unsigned w = j->cfg->worker;

    (void)JKEY(j, counter, INCARNATION);
    (void)snprintf(cur, sizeof(cur), "%" PRIu64, j->inc);
    (void)JKEY(j, joined, JOINED, .worker = w);
    (void)JKEY(j, alive, ALIVE, .worker = w);
    (void)JKEY(j, ready, READY);
    (void)JRANGE(j, members, ALIVE, 'w');
    (void)JKEY(j, shape, SHAPE);
    {
        struct preempt_etcd_cmp cmp[] = { { counter, cur }, { rejoin ? alive : joined, NULL } };
        struct preempt_etcd_op ok[] = { { PREEMPT_ETCD_OP_PUT, joined, j->member, 0 },
                                        { PREEMPT_ETCD_OP_PUT, alive, j->member, j->lease },
                                        { PREEMPT_ETCD_OP_GET, ready, NULL, 0 },
                                        { PREEMPT_ETCD_OP_COUNT_PREFIX, members, NULL, 0 },
                                        { PREEMPT_ETCD_OP_GET, shape, NULL, 0 } };
        struct preempt_etcd_op fail[] = { { PREEMPT_ETCD_OP_GET, counter, NULL, 0 },
                                          { PREEMPT_ETCD_OP_GET, alive, NULL, 0 },
                                          { PREEMPT_ETCD_OP_GET, ready, NULL, 0 } };

        join_call(j, PREEMPT_RQ_TXN(cmp, 2, ok, 5, fail, 3), on_joined);
    }
}

/* This worker's member record: who it is and its offer (the decided steps
 * and the pending ones the job committed). */
static void join_make_offer(struct join *j)
{
    uint64_t all[MAX_STEPS_OFFERED];
    char host[PREEMPT_MAX_HOST + 1] = "";
    size_t n = 0;

    for (size_t i = 0; i < j->n_pend && n < MAX_STEPS_OFFERED; i++)
        if (j->pend[i].decision > 0)
            all[n++] = j->pend[i].step;
    for (size_t i = 0; i < j->n_steps && n < MAX_STEPS_OFFERED; i++)
        all[n++] = j->steps[i];
    if (gethostname(host, sizeof(host) - 1) < 0 || strpbrk(host, " ="))
        (void)snprintf(host, sizeof(host), "-");
    preempt_coord_member_(j->member, sizeof(j->member), (long)getpid(), host, j->cfg->launch, j->cfg->workers,
                          j->cfg->start_over, all, n);
    j->resolved = true;
}

static void join_resolve(struct join *j);

static void on_resolved(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    struct preempt_coord_pending *p = &j->pend[j->i_pend];
    const struct preempt_etcd_kv *kv;
    uint64_t step, save_ms;
    bool created, last;

    if (!(kv = join_created(j, status, r, msg, "reading a pending checkpoint's decision", &created)))
        return;
    p->decision = preempt_committed_parse_(kv->value, &step, &last, &save_ms) && step == p->step ? 1 : -1;
    j->i_pend++;
    join_resolve(j);
}

/* Resolves the pending checkpoints one by one, then joins. A record under
 * an incarnation the store has not reached (it went back in time) or of
 * another job's prefix is not touched: unknown. */
static void join_resolve(struct join *j)
{
    while (j->i_pend < j->n_pend) {
        struct preempt_coord_pending *p = &j->pend[j->i_pend];
        struct preempt_key k;
        char val[64];

        if (preempt_key_parse_(p->key, j->jobp, &k) != PREEMPT_KEY_DECISION || k.inc == 0 || k.inc > j->inc) {
            p->decision = 0;
            j->i_pend++;
            continue;
        }
        (void)snprintf(val, sizeof(val), "aborted %" PRIu64 " restart", p->step);
        join_call(j, PREEMPT_RQ_CREATE(p->key, val), on_resolved);
        return;
    }
    join_make_offer(j);
    join_try(j, false);
}

static void on_inc(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    const struct preempt_etcd_kv *kvs;

    if (join_failed(j, status, msg, "reading the incarnation"))
        return;
    kvs = r->res[0].kvs;
    if (r->res[0].n == 0) {
        if (!j->resolved)
            join_make_offer(j); /* no counter: no record of any pending checkpoint can be trusted */
        join_open(j, 1);
    } else if (!preempt_parse_u64_(kvs[0].value, &j->inc) || j->inc == 0) {
        join_finish(j, -EPROTO, "job %s: the incarnation key holds \"%.40s\", not a number", j->cfg->job,
                    kvs[0].value);
    } else if (!j->resolved) {
        join_resolve(j);
    } else {
        join_try(j, false);
    }
}

static void join_read_inc(struct join *j)
{
    char key[PREEMPT_KEY_MAX];

    join_call(j, PREEMPT_RQ_GET(JKEY(j, key, INCARNATION)), on_inc);
}

static void on_grant(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;

    if (join_failed(j, status, msg, "granting the membership lease"))
        return;
    j->lease = r->id; /* never 0: a grant without one does not decode */
    join_read_inc(j);
}

static void join_timeout(struct join *j)
{
    if (j->ret_restored)
        join_finish(j, -ETIMEDOUT, "job %s: not every worker (%u) reported its restore of incarnation %" PRIu64
                    " in time", j->cfg->job, j->cfg->workers, j->inc);
    else
        join_finish(j, -ETIMEDOUT,
                    "job %s: not every worker (%u) joined incarnation %" PRIu64 " within %llu ms (%lld live when this "
                    "worker joined)",
                    j->cfg->job, j->cfg->workers, j->inc, (unsigned long long)j->cfg->join_timeout_ms,
                    (long long)j->present);
}

/* The membership lease lives through start-up as it does after it
 * (every TTL/3). */
static uint64_t keep_period_ms(const struct join *j)
{
    return j->cfg->lease_ttl_s < 3 ? 500u : j->cfg->lease_ttl_s / 3u * 1000u;
}

static void join_keep(struct join *j)
{
    if (j->lease)
        (void)j->io->request(j->io_arg, PREEMPT_RQ_LEASE(KEEPALIVE, j->lease), keep_period_ms(j), NULL, NULL);
    read_ready(j);
}

static void join_done(struct join *j);

static void on_join_revoked(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;

    (void)status;
    (void)r;
    (void)msg;
    j->done_due = true; /* the end, outside the client's callback */
    join_arm(j);
}

/* The phase ended (join_finish). The lease is given back when the phase
 * failed or ends the membership (j->revoke): best effort, bounded by 1 s.
 * Then everything is released and done(status) called: the last use of j. */
static void join_done(struct join *j)
{
    preempt_coord_done done = j->done;
    void *done_arg = j->done_arg;
    int status = j->status;

    if (!j->revoking && (j->status < 0 || j->revoke) && j->lease) {
        j->revoking = true;
        j->done_due = false;
        if (j->io->request(j->io_arg, PREEMPT_RQ_LEASE(REVOKE, j->lease), 1000, on_join_revoked, j) == 0)
            return;
    }
    preempt_coord_phase_free_((struct preempt_coord_phase *)j);
    done(status, done_arg);
}

/* The io's timer: whatever is due. */
static void join_tick(void *arg)
{
    struct join *j = arg;
    uint64_t now = join_now(j);

    if (j->done_due) {
        join_done(j); /* may free j */
        return;
    }
    if (j->revoking) /* only the revoke's answer (or its bound) is awaited */
        return;
    if (now >= j->deadline && !j->finished)
        join_timeout(j);
    if (j->t_wait && now >= j->t_wait && !j->finished) {
        j->t_wait = 0;
        join_try(j, false);
    }
    if (j->t_keep && now >= j->t_keep && !j->finished) {
        j->t_keep = now + keep_period_ms(j);
        join_keep(j);
    }
    join_arm(j);
}

/* Starts a start-up phase over io (which it owns from here on, also on
 * failure): start(j), then events until it finishes or bound_ms pass;
 * j->done is called from the loop at the end. */
static int join_begin(struct join *j, const struct preempt_coord_io *io, void *io_arg, uint64_t bound_ms,
                      void (*start)(struct join *j))
{
    const struct preempt_coord_cfg *cfg = j->cfg;

    j->io = io;
    j->io_arg = io_arg;
    if (preempt_coord_prefix_(cfg->job, j->jobp, sizeof(j->jobp)) < 0) {
        (void)snprintf(j->msg, j->msg_size, "invalid job name (1-%d of A-Z a-z 0-9 . _ -)", PREEMPT_MAX_JOB);
        return -EINVAL;
    }
    j->deadline = join_now(j) + bound_ms;
    j->t_keep = join_now(j) + keep_period_ms(j);
    join_arm(j);
    start(j);
    return 0;
}

void preempt_coord_phase_free_(struct preempt_coord_phase *p)
{
    struct join *j = (struct join *)p;

    if (!j)
        return;
    if (j->io)
        j->io->free(j->io_arg);
    free(j->steps_copy);
    free(j);
}

/* A phase on the heap, begun; NULL on failure (*msg says why, *ret_r the
 * error). It owns init's steps_copy either way. */
static struct preempt_coord_phase *phase_begin(struct join *init, const struct preempt_coord_io *io, void *io_arg,
                                               uint64_t bound_ms, void (*start)(struct join *j), int *ret_r)
{
    struct join *j = malloc(sizeof(*j));

    if (!j) {
        *ret_r = -ENOMEM;
        (void)snprintf(init->msg, init->msg_size, "out of memory");
        free(init->steps_copy);
        io->free(io_arg);
        return NULL;
    }
    *j = *init;
    *ret_r = join_begin(j, io, io_arg, bound_ms, start);
    if (*ret_r < 0) {
        preempt_coord_phase_free_((struct preempt_coord_phase *)j);
        return NULL;
    }
    return (struct preempt_coord_phase *)j;
}

static void join_grant(struct join *j)
{
    join_call(j, PREEMPT_RQ_GRANT(j->cfg->lease_ttl_s), on_grant);
}

int preempt_coord_join_begin_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                                 const uint64_t *steps, size_t n_steps, struct preempt_coord_pending *pend,
                                 size_t n_pend, struct preempt_coord_join *ret, char *msg, size_t msg_size,
                                 preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase)
{
    struct join j = { .cfg = cfg, .msg = msg, .msg_size = msg_size, .out = ret, .status = -ETIMEDOUT,
                      .n_steps = n_steps, .pend = pend, .n_pend = n_pend, .awaited = PREEMPT_KEY_READY,
                      .apply = apply_ready, .done = done, .done_arg = arg };
    int r;

    *ret = (struct preempt_coord_join){ 0 };
    for (size_t i = 0; i < n_pend; i++)
        pend[i].decision = 0;
    if (n_steps) { /* the phase outlives the caller's array */
        j.steps_copy = malloc(n_steps * sizeof(*steps));
        if (!j.steps_copy) {
            io->free(io_arg);
            return -ENOMEM;
        }
        memcpy(j.steps_copy, steps, n_steps * sizeof(*steps));
    }
    j.steps = j.steps_copy;
    *ret_phase = phase_begin(&j, io, io_arg, cfg->join_timeout_ms, join_grant, &r);
    return r;
}

static int real_io_new(struct event_base *base, const struct preempt_etcd_opts *opts,
                       void (*log)(int level, const char *msg, void *arg), void *log_arg, void **ret);
static const struct preempt_coord_io real_io_ops;

/* The real io for a start-up phase; its errors said in msg. */
static int phase_io(struct event_base *base, const struct preempt_coord_cfg *cfg, char *msg, size_t msg_size,
                    void **ret)
{
    int r = real_io_new(base, &cfg->etcd, NULL, NULL, ret);

    if (r < 0)
        (void)snprintf(msg, msg_size, "cannot use the etcd endpoints or options: %s%s", strerror(-r),
                       r == -EINVAL ? " (each endpoint an http:// or https:// URL, at most 8)" : "");
    return r;
}

int preempt_coord_join_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg, const uint64_t *steps,
                              size_t n_steps, struct preempt_coord_pending *pend, size_t n_pend,
                              struct preempt_coord_join *ret, char *msg, size_t msg_size, preempt_coord_done done,
                              void *arg, struct preempt_coord_phase **ret_phase)
{
    void *io;
    int r = phase_io(base, cfg, msg, msg_size, &io);

    *ret_phase = NULL;
    return r < 0 ? r
                 : preempt_coord_join_begin_io_(&real_io_ops, io, cfg, steps, n_steps, pend, n_pend, ret, msg,
                                                msg_size, done, arg, ret_phase);
}

/* ---- start-up: the restore barrier ---------------------------------------------------------- */

/* N/restored: "ok", or "unusable|failed <step> worker=<w>: <why>". */
static void apply_restored(struct join *j, const struct preempt_etcd_kv *kv)
{
    const char *v = kv->value ? kv->value : "", *why;
    struct preempt_record rec;
    int outcome = preempt_record_parse_(PREEMPT_KEY_RESTORED, v, PREEMPT_MAX_WORKERS, &rec, &why) < 0 ? -1
                  : preempt_record_has_(&rec, "ok")                                               ? PREEMPT_RESTORE_OK
                  : preempt_record_has_(&rec, "unusable") ? PREEMPT_RESTORE_UNUSABLE
                                                          : PREEMPT_RESTORE_FAILED;

    if (outcome < 0) {
        join_finish(j, -EPROTO, "job %s: the restore barrier's record holds \"%.40s\"", j->cfg->job, v);
        return;
    }
    *j->ret_restored = outcome;
    if (outcome != PREEMPT_RESTORE_OK) {
        j->revoke = true; /* the incarnation ends here: its membership too */
        (void)snprintf(j->verdict, j->verdict_size, "%s", strchr(v, ' ') + 1);
    }
    join_finish(j, 0, "restore barrier passed");
}

static void on_restored_counted(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct join *j = arg;
    char key[PREEMPT_KEY_MAX];

    if (join_failed(j, status, msg, "reporting the restore"))
        return;
    if (preempt_etcd_reply_count_(r, 1) < (int64_t)j->cfg->workers) {
        wait_ready(j);
        return;
    }
    join_call(j, PREEMPT_RQ_CREATE(JKEY(j, key, RESTORED), "ok"), on_ready_written);
}

/* Reports this worker's restore: "ok" under w/restored/ and counted (the
 * W-th writes N/restored "ok"), or N/restored "failed .." at once. */
static void report_restored(struct join *j)
{
    char key[PREEMPT_KEY_MAX], mine[PREEMPT_KEY_MAX], all[PREEMPT_KEY_MAX], val[320];

    if (j->restore_mine != PREEMPT_RESTORE_OK) {
        (void)snprintf(val, sizeof(val), "%s %" PRIu64 " worker=%u: %s",
                       j->restore_mine == PREEMPT_RESTORE_UNUSABLE ? "unusable" : "failed", j->out->step,
                       j->cfg->worker, j->restore_why ? j->restore_why : "");
        join_call(j, PREEMPT_RQ_CREATE(JKEY(j, key, RESTORED), val), on_ready_written);
        return;
    }
    (void)JKEY(j, mine, W_RESTORED, .worker = j->cfg->worker);
    (void)JRANGE(j, all, W_RESTORED, 'w');
    {
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_PUT, mine, "ok", 0 },
                                         { PREEMPT_ETCD_OP_COUNT_PREFIX, all, NULL, 0 } };

        join_call(j, PREEMPT_RQ_TXN(NULL, 0, ops, 2, NULL, 0), on_restored_counted);
    }
}

int preempt_coord_restored_begin_io_(const struct preempt_coord_io *io, void *io_arg,
                                     const struct preempt_coord_cfg *cfg, struct preempt_coord_join *join, int mine,
                                     const char *why, uint64_t bound_ms, int *ret_outcome, char *verdict,
                                     size_t verdict_size, char *msg, size_t msg_size, preempt_coord_done done,
                                     void *arg, struct preempt_coord_phase **ret_phase)
{
    struct join j = { .cfg = cfg, .msg = msg, .msg_size = msg_size, .out = join, .status = -ETIMEDOUT,
                      .awaited = PREEMPT_KEY_RESTORED, .apply = apply_restored, .inc = join->incarnation,
                      .lease = join->lease,
                      .restore_mine = mine, .restore_why = why, .ret_restored = ret_outcome, .verdict = verdict,
                      .verdict_size = verdict_size, .done = done, .done_arg = arg };
    int r;

    *ret_outcome = PREEMPT_RESTORE_FAILED;
    verdict[0] = '\0';
    *ret_phase = phase_begin(&j, io, io_arg, bound_ms, report_restored, &r);
    return r;
}

int preempt_coord_restored_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                                  struct preempt_coord_join *join, int mine, const char *why, uint64_t bound_ms,
                                  int *ret_outcome, char *verdict, size_t verdict_size, char *msg, size_t msg_size,
                                  preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase)
{
    void *io;
    int r = phase_io(base, cfg, msg, msg_size, &io);

    *ret_phase = NULL;
    *ret_outcome = PREEMPT_RESTORE_FAILED;
    verdict[0] = '\0';
    return r < 0 ? r
                 : preempt_coord_restored_begin_io_(&real_io_ops, io, cfg, join, mine, why, bound_ms, ret_outcome,
                                                    verdict, verdict_size, msg, msg_size, done, arg, ret_phase);
}

/* ---- the running protocol ----------------------------------------------------------------- */

struct round {
    uint64_t agreed;
    uint64_t shard_ep; /* the episode of this worker's shard report (answers of older ones are late) */
    bool commit_posted;
};

#define JUNK_MAX 4 /* the claim and the two rounds' steps, and one spare */

struct preempt_coord {
    const struct preempt_coord_io *io;
    void *io_arg;
    struct preempt_coord_ops ops;
    void *arg;
    char jobp[PREEMPT_MAX_JOB + 16];
    char member[PREEMPT_MEMBER_MAX]; /* alive/<me>'s value */
    char pre[PREEMPT_KEY_MAX]; /* P/N/: the watched range's start (for the logs) */
    unsigned me, n;
    unsigned ttl_s, cfg_ttl_s; /* the lease's TTL now; the configured one */
    uint64_t longest_step_ms;  /* the longest step seen (the lease must outlive one) */
    bool granting;         /* a lease grant is on its way (one at a time; the claim's machine may wait for it) */
    uint64_t give_up_ms;
    int64_t lease;
    enum preempt_ep_state episode; /* where the current episode stands (episode-internal.h: declared) */
    bool watch_up;         /* the job's watch is up (else the keep-alive tick reads the records) */
    uint64_t my_notice_wall;
    uint64_t my_deadline;  /* the machine's clock: this worker's earliest deadline (0: none) */
    char my_source[32];
    bool my_withdrawn;     /* this worker's notices are all withdrawn (or advisory) */
    enum preempt_pub_state pub; /* where this worker's notice stands (pub-internal.h: a declared machine) */
    enum preempt_claim_state claim; /* where this worker's driver claim stands (claim-internal.h: declared) */
#define LEFT(c) ((c)->mship == PREEMPT_MSHIP_LEFT)
    bool polling;          /* the driver's read of the memberships is on its way */
    enum preempt_mship_state mship; /* where this worker's membership stands (membership-internal.h: declared) */
    uint64_t prop_step;    /* the claim carries this proposal of round 0's save step (0: none) */
    bool prop_last;        /* with its opinion */
    struct preempt_view view; /* the job's records, read (view-internal.h): its incarnation and episode */
    bool *present;         /* the driver's last read: w is a member, done, or reported a shard */
    uint64_t *gone_at;     /* the driver's clock: w's membership was first found gone (0: it was not) */
    unsigned n_gone;       /* how many gone_at are set */
    struct round r[2];
    /* What the episode's create-if-absent slots (the claim, a round's step)
     * hold when it is no record: garbage an operator or a tool wrote. The
     * writes that would create such a slot compare with that value instead
     * of its absence, and so replace it (a valid record is never replaced:
     * the compare is on the garbage itself). Data, not a decision. */
    struct junk {
        char *key, *value;
    } junk[JUNK_MAX];
    /* The member records as the members watch shows them (NULL: not
     * watched): who is alive, who finished training. Observations told to
     * the owner, not decisions of the protocol. */
    bool *m_alive, *m_done;
    void (*m_gone)(unsigned worker, const char *why, void *arg);
    void *m_arg;
    struct held *held;     /* records of later episodes, by key, until this worker gets there */
    size_t n_held, cap_held;
    bool replaying;        /* held records are being applied: peer notices are merged */
    struct preempt_event merged; /* the earliest peer notice of a replay (kind 0: none) */
};

/* The coordinator's declared machines (decl-internal.h): one input each. */
static unsigned decl_in(struct preempt_coord *c, const struct preempt_decl *m, unsigned *state, unsigned in);
static void claim_in(struct preempt_coord *c, enum preempt_claim_input in);
static void mship_in(struct preempt_coord *c, enum preempt_mship_input in);
static void ep_in(struct preempt_coord *c, enum preempt_ep_input in);

struct held {
    uint64_t ep;
    char *key, *value;
};

static void flush_merged(struct preempt_coord *c)
{
    struct preempt_event ev = c->merged;

    if (ev.kind != PREEMPT_EV_PEER_NOTICE)
        return;
    c->merged.kind = 0;
    c->ops.post(&ev, c->arg);
}

/* Posts ev to the machine. While held records are replayed (inside one of
 * the machine's effects, so the machine's queue fills), their peer notices
 * become one: the earliest deadline is all the machine needs of them. */
static void cpost(struct preempt_coord *c, struct preempt_event ev)
{
    if (c->replaying && ev.kind == PREEMPT_EV_PEER_NOTICE) {
        uint64_t d = ev.u.peer_notice.deadline, m = c->merged.u.peer_notice.deadline;

        if (c->merged.kind != PREEMPT_EV_PEER_NOTICE || (d && (!m || d < m)))
            c->merged = ev;
        return;
    }
    flush_merged(c);
    c->ops.post(&ev, c->arg);
}

#define CLOG(c, level, ...) preempt_logf_((c)->ops.log, (c)->arg, level, __VA_ARGS__)

/* The garbage slot key holds, as last seen; NULL when it holds none. */
static const char *junk_of(const struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && !strcmp(c->junk[i].key, key))
            return c->junk[i].value;
    return NULL;
}

static void junk_clear(struct preempt_coord *c, const char *key) /* NULL: every slot */
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && (!key || !strcmp(c->junk[i].key, key))) {
            free(c->junk[i].key);
            free(c->junk[i].value);
            c->junk[i].key = c->junk[i].value = NULL;
        }
}

/* Slot key of this episode holds value, which is no record. */
static void junk_set(struct preempt_coord *c, const char *key, const char *value)
{
    size_t i = 0;

    junk_clear(c, key);
    while (i < JUNK_MAX - 1 && c->junk[i].key)
        i++;
    if (c->junk[i].key) /* full: the spare goes */
        junk_clear(c, c->junk[i].key);
    c->junk[i].key = strdup(key);
    c->junk[i].value = strdup(value);
    if (!c->junk[i].key || !c->junk[i].value)
        junk_clear(c, NULL); /* out of memory: such slots block, as before */
}

/* A key of the schema (keys-internal.h) in this worker's incarnation and
 * episode; CRANGE: the range of a kind's records, or a range's. */
#define CKEY(c, buf, id, ...)                                                                                        \
    (void)preempt_key_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id,                                                \
                       &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })
#define CRANGE(c, buf, id, upto, ...)                                                                                \
    (void)preempt_key_range_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id, upto,                                    \
                             &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })

static void on_write(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_COORD_FAILED };

    (void)r;
    if (status == 0)
        return;
    CLOG(c, 3, "coordination write failed: %s", msg);
    ev.u.coord_failed.err = status;
    cpost(c, ev);
}

/* How long a write retries. While this worker has a notice of its own, up
 * to its deadline: its machine's timer bounds the wait, and giving up
 * earlier (etcd down for longer than give_up_ms) would lose the notice for
 * every other worker. */
static uint64_t give_up(const struct preempt_coord *c)
{
    uint64_t now = c->ops.now_ms(c->arg);

    return c->my_deadline > now + c->give_up_ms ? c->my_deadline - now : c->give_up_ms;
}

static void write_call(struct preempt_coord *c, const struct preempt_etcd_req *req, preempt_etcd_reply_cb cb)
{
    if (c->io->request(c->io_arg, req, give_up(c), cb, c) < 0)
        on_write(-ENOMEM, NULL, "out of memory", c);
}

static void put(struct preempt_coord *c, const char *key, const char *value, int64_t lease)
{
    write_call(c, PREEMPT_RQ_PUT(key, value, lease), on_write);
}

static uint64_t mono_of_wall(const struct preempt_coord *c, uint64_t wall)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    if (wall == 0)
        return 0;
    if (wall >= w)
        return now + (wall - w);
    return now > w - wall ? now - (w - wall) : 1; /* already passed */
}

static uint64_t wall_of_mono(const struct preempt_coord *c, uint64_t mono)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    return mono >= now ? w + (mono - now) : w - (now - mono);
}


/* This worker has a notice that none of its sources withdrew. */
static bool own_live(const struct preempt_coord *c)
{
    return c->my_notice_wall != 0 && !c->my_withdrawn;
}

static void on_watch_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);

/* A proposal's answer. When another record landed first, the reply carries
 * it: it is applied as the watch would apply it (the watch may be slow or
 * down; the record is the same). */
static void on_decide(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    const struct preempt_etcd_kv *kv = status == 0 && !r->succeeded ? preempt_etcd_reply_kv_(r, 0) : NULL;

    if (status != 0)
        on_write(status, r, msg, arg);
    else if (kv)
        on_watch_event(PREEMPT_ETCD_PUT, kv, c);
}

static void decide(struct preempt_coord *c, unsigned k, const char *value)
{
    char key[PREEMPT_KEY_MAX];

    CKEY(c, key, DECISION, .round = k);
    write_call(c, PREEMPT_RQ_CREATE(key, value), on_decide); /* the watch brings the winner */
}

/* ---- per-worker records: counted in etcd, never watched by every worker ---------------------- */

static const char *ep_stale(const struct preempt_coord *c, uint64_t ep)
{
    return ep != c->view.ep ? "an ended episode's" : NULL;
}

/* What a range of round k's shard reports says, each "<save ms>[ last]":
 * how many are well-formed, the slowest save, and whether any said last. */
struct tally {
    unsigned count;
    uint64_t max;
    bool last;
};

static struct tally tally(const struct preempt_coord *c, unsigned k, const struct preempt_etcd_reply *r)
{
    const struct preempt_etcd_kv *kvs = r->res[0].kvs;
    struct tally t = { 0 };

    for (size_t i = 0; i < r->res[0].n; i++) {
        struct preempt_key kk;
        uint64_t n;
        bool its_last;

        if (preempt_key_parse_(kvs[i].key, c->jobp, &kk) != (int)PREEMPT_KEY_SHARD || kk.inc != c->view.inc ||
            kk.ep != c->view.ep || kk.round != k || kk.worker >= c->n ||
            !preempt_step_value_parse_(kvs[i].value, &n, &its_last)) {
            CLOG(c, 2, "ignoring %s = \"%.40s\": not a shard report", kvs[i].key, kvs[i].value);
            continue;
        }
        t.count++;
        if (n > t.max)
            t.max = n;
        t.last = t.last || its_last;
    }
    return t;
}

/* Makes cap round k's save step (docs/protocol.md, "Agreement without
 * waits"): creates the record when the round has none (a driver that took
 * the episode over from one that left no step), and raises it when this
 * worker is past the step it knows (its machine asks only then): a
 * compare-and-put on the value seen, so that of two raises the second
 * fails and every worker follows the one record. A raise keeps a "last"
 * the record said. When the view already holds a step at least as high,
 * it is on its way to the machine: nothing to write. */
static void propose_step(struct preempt_coord *c, unsigned k, uint64_t cap, bool last)
{
    char key[PREEMPT_KEY_MAX], val[PREEMPT_STEP_VALUE_MAX], seen[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_cmp cmp = { .key = key };
    struct preempt_etcd_op ok[] = { { PREEMPT_ETCD_OP_PUT, key, val, 0 } };

    CKEY(c, key, AGREED, .round = k);
    cmp.value = junk_of(c, key);
    if (c->view.r[k].have_agreed) {
        if (c->view.r[k].agreed >= cap)
            return;
        (void)preempt_step_value_(seen, sizeof(seen), c->view.r[k].agreed, c->view.r[k].last);
        cmp.value = seen;
        last = last || c->view.r[k].last;
        CLOG(c, 1, "round %u: this worker is past the save step %" PRIu64 "; raising it to %" PRIu64, k,
             c->view.r[k].agreed, cap);
    }
    (void)preempt_step_value_(val, sizeof(val), cap, last);
    write_call(c, PREEMPT_RQ_TXN(&cmp, 1, ok, 1, NULL, 0), on_write); /* the watch brings the round's step */
}

/* Proposes that round k, at step, is aborted (by this worker). */
static void decide_abort(struct preempt_coord *c, unsigned k, uint64_t step)
{
    char val[PREEMPT_COMMITTED_VALUE_MAX];

    (void)snprintf(val, sizeof(val), "aborted %" PRIu64 " %u", step, c->me);
    decide(c, k, val);
}

/* What the shard reports of round k at its step (r: their range) decide:
 * the commit when every shard is there, with "last" when any report said
 * so and the slowest save they name (every worker plans the final round
 * with it); otherwise, when this worker asked to abort (or_abort), the
 * abort. An earlier decision still wins. As the caps, they come from the
 * records alone. */
static void propose(struct preempt_coord *c, unsigned k, const struct preempt_etcd_reply *r, bool or_abort)
{
    struct round *rd = &c->r[k];
    struct tally t = { 0 };
    char val[PREEMPT_COMMITTED_VALUE_MAX];

    if (rd->commit_posted || c->view.r[k].decided)
        return;
    if (!r || (t = tally(c, k, r)).count < c->n) {
        if (or_abort)
            decide_abort(c, k, rd->agreed);
        return;
    }
    rd->commit_posted = true;
    CLOG(c, 1, "round %u: every shard of step %" PRIu64 " is reported (the slowest save %" PRIu64
         " ms); proposing the commit%s", k, rd->agreed, t.max, t.last ? ", the last save" : "");
    (void)preempt_committed_value_(val, sizeof(val), rd->agreed, t.last, t.max);
    decide(c, k, val);
}

/* The shard reports of round k at its step, read by the worker whose
 * report completed them (or by the driver, complete_round). */
static void on_shards(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                      const char *msg)
{
    if (status != 0) {
        on_write(status, r, msg, c);
        return;
    }
    if (!ep_stale(c, c->r[k].shard_ep))
        propose(c, k, r, false);
}

static void on_shards0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_shards(arg, 0, status, r, msg);
}

static void on_shards1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_shards(arg, 1, status, r, msg);
}

/* The reports read before an abort this worker proposes (abort_round):
 * the commit when every shard is there after all, else the abort; when
 * the read failed, the abort. */
static void on_abort_shards(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                            const char *msg)
{
    if (ep_stale(c, c->r[k].shard_ep))
        return;
    if (status != 0)
        CLOG(c, 1, "round %u: the shard reports could not be read (%s); proposing the abort", k, msg ? msg : "");
    propose(c, k, status == 0 ? r : NULL, true);
}

static void on_abort_shards0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_abort_shards(arg, 0, status, r, msg);
}

static void on_abort_shards1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_abort_shards(arg, 1, status, r, msg);
}

/* This worker's machine gives round k up (its bound ran out, a peer was
 * lost, etcd failed, a peer failed, a second notice says exit, its save
 * failed). When it reported its shard at step, every other shard may be
 * there too, and the worker whose report completed them may have died or
 * been cut off before it proposed the commit: so it reads the reports
 * first and proposes the commit when they are all there, the abort when
 * not. An abort of a round whose every shard was written would discard a
 * whole checkpoint for want of one proposal. */
static void abort_round(struct preempt_coord *c, unsigned k, uint64_t step)
{
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (!ep_stale(c, rd->shard_ep) && rd->agreed == step) {
        CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
        write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_abort_shards1 : on_abort_shards0);
        return;
    }
    decide_abort(c, k, step);
}

/* A shard report's answer: its transaction counted the round's shards at
 * this step (the last op). The worker whose count reached the job's size
 * reads the reports. */
static void on_reported(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                        const char *msg)
{
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (status != 0) {
        on_write(status, r, msg, c);
        return;
    }
    if (ep_stale(c, rd->shard_ep) || rd->commit_posted || c->view.r[k].decided || r->n_res < 1 ||
        preempt_etcd_reply_count_(r, r->n_res - 1) < (int64_t)c->n)
        return;
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = rd->agreed);
    write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_shards1 : on_shards0);
}

static void on_reported0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_reported(arg, 0, status, r, msg);
}

static void on_reported1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_reported(arg, 1, status, r, msg);
}

/* Reports this worker's shard of round k at step, with the slowest save
 * it knows of (save_ms), and counts the round's shards at that step, in
 * one transaction. A save that ends this worker's preemption (last: the
 * agreed record said so, or the worker judges no time left for another
 * round) says so, and the worker's membership ends in the same
 * transaction: it has nothing more to give the job, and its exit then
 * costs etcd nothing (no revoke; the lease ends by itself, holding
 * nothing). */
static void report(struct preempt_coord *c, unsigned k, uint64_t step, bool last, uint64_t save_ms)
{
    char alive[PREEMPT_KEY_MAX], key[PREEMPT_KEY_MAX], pre[PREEMPT_KEY_MAX], val[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_DELETE, alive, NULL, 0 },
                                     { PREEMPT_ETCD_OP_PUT, key, val, 0 },
                                     { PREEMPT_ETCD_OP_COUNT_PREFIX, pre, NULL, 0 } };

    CKEY(c, alive, ALIVE, .worker = c->me);
    CKEY(c, key, SHARD, .round = k, .step = step, .worker = c->me);
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
    (void)preempt_step_value_(val, sizeof(val), save_ms, last);
    c->r[k].shard_ep = c->view.ep;
    c->r[k].agreed = step;
    write_call(c, last ? PREEMPT_RQ_TXN(NULL, 0, ops, 3, NULL, 0) : PREEMPT_RQ_TXN(NULL, 0, ops + 1, 2, NULL, 0),
               k ? on_reported1 : on_reported0);
    if (last)
        mship_in(c, PREEMPT_MSHIP_IN_LAST_REPORT);
}

/* The round's decision record: the one truth every worker follows. */
static void on_decision(struct preempt_coord *c, const struct preempt_view_ev *d, const char *value)
{
    struct preempt_event ev = { 0 };

    CLOG(c, 1, "round %u: the job's decision is \"%s\"", d->round, value);
    if (d->what == PREEMPT_VIEW_ABORTED) {
        ev.kind = PREEMPT_EV_ROUND_ABORTED;
        ev.u.round_aborted.step = d->step;
        cpost(c, ev);
        return;
    }
    ev.kind = PREEMPT_EV_CKPT_COMMITTED;
    ev.u.ckpt_committed.step = d->step;
    ev.u.ckpt_committed.last = d->last;
    if (d->save_ms && c->ops.job_save) /* before the commit: the countdown plans with it */
        c->ops.job_save(d->save_ms, c->arg);
    if (own_live(c)) {
        /* The job withdrew the notices, then this worker got one whose
         * record has not landed: the job returns to idle at this commit
         * without it, so this worker does too, and brings its notice into
         * the next episode (advance). Its machine took the notice as a
         * reason to stay; the withdrawal is told again. */
        ep_in(c, PREEMPT_EP_IN_COMMITTED_OWN);
    }
    cpost(c, ev);
}

static void reset_round(struct preempt_coord *c, unsigned k)
{
    c->r[k] = (struct round){ 0 };
}

/* Posts notice-withdrawn once when every notice record of the job is
 * withdrawn (or advisory) and no operator's notice stands. The records
 * arrive in revision order on every worker, so every worker decides the
 * same way relative to the round's commit. */
static void check_withdrawn(struct preempt_coord *c)
{
    struct preempt_view_summary sum;

    preempt_view_summary_(&c->view, &sum);
    if (sum.live || !sum.notices) {
        ep_in(c, PREEMPT_EP_IN_LIVE);
        return;
    }
    if (c->episode == PREEMPT_EP_ACTIVE)
        CLOG(c, 1, "every notice of the job is withdrawn or advisory");
    ep_in(c, PREEMPT_EP_IN_ALL_WITHDRAWN);
}

static void maybe_claim(struct preempt_coord *c, enum preempt_claim_input in);
static void notice_put(struct preempt_coord *c);
static enum preempt_pub_action pub(struct preempt_coord *c, enum preempt_pub_input in);


/* The current round's step may reach this worker before anything that
 * brings its machine into the round: a claim that did not carry its
 * driver's notice can land before the notice's own record, and the
 * machine, idle then, ignores the step (a late answer of a withdrawn round,
 * as far as it can tell). The view keeps it, and once a notice or the
 * claim's answer has brought the machine into the round it is told again; in any
 * other state the step is an echo (the table ignores it). The current
 * round is the first without a decision. */
static void retell_agreed(struct preempt_coord *c)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_STEP_AGREED };
    unsigned k = c->view.r[0].decided ? 1 : 0;

    if (!c->view.r[k].have_agreed)
        return;
    ev.u.step_agreed.step = c->view.r[k].agreed;
    ev.u.step_agreed.last = c->view.r[k].last;
    cpost(c, ev);
}

/* A worker's notice record (the view has merged it; foreign: a record in
 * this worker's slot that it did not write). */
static void on_notice(struct preempt_coord *c, const struct preempt_view_ev *n, const char *value, bool foreign)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_PEER_NOTICE };
    /* This worker's own record tells its machine only when it undoes the
     * job's withdrawal: its machine then follows the job's view exactly as
     * every other worker's does. */
    bool tell = n->worker != c->me || foreign || (c->episode == PREEMPT_EP_WITHDRAWN && !n->withdrawn);

    ep_in(c, PREEMPT_EP_IN_SEEN);
    if (n->news && tell) {
        ev.u.peer_notice.worker = n->worker;
        ev.u.peer_notice.deadline = mono_of_wall(c, n->wall);
        CLOG(c, 1, "worker %u has a notice (%s)", n->worker, value);
        cpost(c, ev);
        retell_agreed(c);
        /* a notice undoes the machine's withdrawal: when this one is
         * withdrawn too (an advisory or periodic one), say so again */
        ep_in(c, PREEMPT_EP_IN_NEWS);
    }
    check_withdrawn(c);
    maybe_claim(c, PREEMPT_CLAIM_IN_NOTICE); /* unless its own claim is on its way */
}

/* How long a peer's membership may be gone before the peer counts as
 * lost: twice this worker's longest step. A synchronous trainer keeps its
 * lease alive only at its boundaries, so a lease can end inside a step
 * longer than any before (the first one, typically) and come back at the
 * next boundary under a new lease. With steps of milliseconds that is at
 * the first read that misses it. */
static uint64_t lost_grace_ms(const struct preempt_coord *c)
{
    return 2 * c->longest_step_ms;
}

static void forget_gone(struct preempt_coord *c)
{
    memset(c->gone_at, 0, c->n * sizeof(*c->gone_at));
    c->n_gone = 0;
}

/* The driver's read found every shard of round k reported at the step
 * this worker reported (res: that round's shard keys) and no decision.
 * The worker whose report completed them reads them and proposes the
 * commit; when it died or was cut off between its report and its
 * proposal, the round waited for its bound and was aborted, although every
 * shard was written. So the driver proposes it too: the same range, the
 * same value from the same records, create-if-absent. (When the
 * completer's proposal was merely on its way, that costs two requests:
 * only when a keep-alive tick falls between the last report and the
 * decision.) */
static void complete_round(struct preempt_coord *c, unsigned k, const struct preempt_etcd_res *res)
{
    struct round *rd = &c->r[k];
    unsigned count = 0;
    char pre[PREEMPT_KEY_MAX];

    if (ep_stale(c, rd->shard_ep) || rd->commit_posted || c->view.r[k].decided)
        return;
    for (size_t j = 0; j < res->n; j++) {
        struct preempt_key kk;

        if (preempt_key_parse_(res->kvs[j].key, c->jobp, &kk) == (int)PREEMPT_KEY_SHARD && kk.inc == c->view.inc &&
            kk.ep == c->view.ep && kk.round == k && kk.step == rd->agreed && kk.worker < c->n)
            count++;
    }
    if (count < c->n)
        return;
    CLOG(c, 1, "round %u: every shard of step %" PRIu64 " is reported and no decision has come; proposing it in "
         "place of the worker whose report completed them", k, rd->agreed);
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = rd->agreed);
    write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_shards1 : on_shards0);
}

/* The driver's read of the memberships: a worker counts when it is a
 * member, finished training, or reported a shard of the episode (the
 * report of its last save ends its membership). One that stayed missing
 * for the grace is lost: the driver publishes it, and every worker
 * (itself included) follows that record. */
static void on_members_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    uint64_t now = c->ops.now_ms(c->arg);
    char key[PREEMPT_KEY_MAX], val[16];

    c->polling = false;
    if (status < 0 || LEFT(c) || c->claim != PREEMPT_CLAIM_HELD) {
        if (status < 0)
            CLOG(c, 1, "reading the memberships failed: %s", msg);
        return;
    }
    memset(c->present, 0, c->n * sizeof(*c->present));
    if (r->n_res < 4) {
        CLOG(c, 2, "reading the memberships: a txn reply without the reads it was asked for");
        return;
    }
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < r->res[i].n; j++) {
            struct preempt_key k;

            if (preempt_key_parse_(r->res[i].kvs[j].key, c->jobp, &k) >= 0 && k.worker < c->n)
                c->present[k.worker] = true;
        }
    }
    complete_round(c, 0, &r->res[2]);
    complete_round(c, 1, &r->res[3]);
    for (unsigned w = 0; w < c->n; w++) {
        if (w == c->me || c->present[w]) {
            if (c->gone_at[w]) {
                CLOG(c, 1, "worker %u is back (a new lease)", w);
                c->gone_at[w] = 0;
                c->n_gone--;
            }
            continue;
        }
        if (!c->gone_at[w]) {
            c->gone_at[w] = now ? now : 1;
            c->n_gone++;
            if (lost_grace_ms(c))
                CLOG(c, 1, "worker %u's membership is gone; it counts as lost unless it is back within %" PRIu64
                     " ms", w, lost_grace_ms(c));
        }
        if (now - c->gone_at[w] < lost_grace_ms(c) || c->view.lost)
            continue;
        CKEY(c, key, LOST);
        (void)snprintf(val, sizeof(val), "%u", w);
        write_call(c, PREEMPT_RQ_CREATE(key, val), on_write); /* the watch brings it */
        return;
    }
}

/* The driver reads who is still there: one transaction, once a keep-alive
 * period, only while it drives an episode (O(1) requests; every other
 * worker reads nothing). */
static void read_members(struct preempt_coord *c)
{
    char alive[PREEMPT_KEY_MAX], done[PREEMPT_KEY_MAX], s0[PREEMPT_KEY_MAX], s1[PREEMPT_KEY_MAX];
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_KEYS_PREFIX, alive, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, done, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, s0, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, s1, NULL, 0 } };

    if (c->polling || c->claim != PREEMPT_CLAIM_HELD || c->episode == PREEMPT_EP_IDLE || LEFT(c))
        return;
    CRANGE(c, alive, ALIVE, 'w');
    CRANGE(c, done, DONE, 'w');
    CRANGE(c, s0, SHARD, 'S', .round = 0);
    CRANGE(c, s1, SHARD, 'S', .round = 1);
    c->polling = true;
    if (c->io->request(c->io_arg, PREEMPT_RQ_TXN(NULL, 0, ops, 4, NULL, 0), (c->ttl_s / 3 ? c->ttl_s / 3 : 1) * 1000u,
                       on_members_read, c) < 0)
        c->polling = false;
}


/* Claims the episode when it has a live notice and nobody drives it: its
 * driver's lease ended (the claim went), or the claim went while the job's
 * notices were all withdrawn and one of them came back (sim seed 12558: the
 * driver exited on a second notice, its claim went with its lease before its
 * notice's return landed, and nobody drove the round to its end). */
static void maybe_claim(struct preempt_coord *c, enum preempt_claim_input in)
{
    /* The claim that carried this worker's notice went with its lease (ended
     * inside a long step): the notice must stand again, in the next claim
     * or in its own record, for a worker that reads the records afresh. */
    if (!c->view.claim)
        (void)pub(c, PREEMPT_PUB_IN_CLAIM_GONE);
    if (c->episode == PREEMPT_EP_ACTIVE && !LEFT(c) && !c->view.claim)
        claim_in(c, in);
    if (c->pub == PREEMPT_PUB_DEFERRED && c->claim != PREEMPT_CLAIM_SENT)
        notice_put(c);
}



static struct held *held_find(struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < c->n_held; i++)
        if (!strcmp(c->held[i].key, key))
            return &c->held[i];
    return NULL;
}

/* Keeps the others in the order they came: an episode's records are
 * applied as they landed (a notice before the step its claim proposed). */
static void held_drop(struct preempt_coord *c, struct held *h)
{
    free(h->key);
    free(h->value);
    memmove(h, h + 1, (size_t)(&c->held[--c->n_held] - h) * sizeof(*h));
}

/* A record of an episode this worker has not reached yet: kept (one per
 * key, the latest value) until it gets there. A delete just forgets. */
static void hold(struct preempt_coord *c, enum preempt_etcd_ev type, uint64_t ep, const struct preempt_etcd_kv *kv)
{
    struct held *h = held_find(c, kv->key);
    char *value;

    if (type != PREEMPT_ETCD_PUT) {
        if (h)
            held_drop(c, h);
        return;
    }
    value = strdup(kv->value ? kv->value : "");
    if (value && h) {
        free(h->value);
        h->value = value;
        return;
    }
    if (value && c->n_held == c->cap_held) {
        size_t cap = c->cap_held ? 2 * c->cap_held : 16;
        struct held *more = realloc(c->held, cap * sizeof(*more));

        if (more) {
            c->held = more;
            c->cap_held = cap;
        }
    }
    h = c->n_held < c->cap_held ? &c->held[c->n_held] : NULL;
    if (!value || !h || !(h->key = strdup(kv->key))) {
        free(value);
        CLOG(c, 3, "out of memory: %s of a later episode is lost to this worker", kv->key);
        return;
    }
    h->ep = ep;
    h->value = value;
    c->n_held++;
}

/* Which record of this worker's incarnation key is (-1: none); episode:
 * whether it belongs to an episode (k->ep), a round's decision included
 * (it outlives the episode's other records). */
static int record_of(const struct preempt_coord *c, const char *key, struct preempt_key *k, bool *episode)
{
    int id = preempt_key_parse_(key, c->jobp, k);

    if (id < 0 || k->inc != c->view.inc)
        return -1;
    *episode = preempt_key_has_(id, 'p');
    return id;
}


/* Whether a notice in this worker's own slot (key: the notice record, or
 * the claim that carries it) can be its own: a record there with an
 * earlier deadline than any it published, or while it published none, was
 * written by someone else (an operator's mistake, a foreign tool) and is
 * reported instead of obeyed. A stale echo of its own earlier value only
 * has a later deadline: the deadline it publishes only moves earlier. */
static bool mine(const struct preempt_coord *c, const char *key, uint64_t wall)
{
    struct preempt_key k;

    if (preempt_key_parse_(key, c->jobp, &k) != PREEMPT_KEY_NOTICE)
        return true; /* the claim's: it is this worker's only if it claimed */
    return c->my_notice_wall && wall >= c->my_notice_wall;
}

/* One input of the job's view, traced through ops.on_view. */
static struct preempt_view_ev view_step(struct preempt_coord *c, struct preempt_view_in in)
{
    struct preempt_view_ev ev = preempt_view_step_(&c->view, &in);

    if (c->ops.on_view)
        c->ops.on_view(&c->view, &in, &ev, c->arg);
    return ev;
}

/* A record, read or watched: what the view makes of it goes to the machine. */
static void on_watch_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct preempt_coord *c = arg;
    const char *value = kv->value ? kv->value : "";
    struct preempt_view_ev v = view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_RECORD,
                                                                       .put = type == PREEMPT_ETCD_PUT,
                                                                       .key = kv->key, .value = value });
    struct preempt_event ev = { 0 };

    if (v.what != PREEMPT_VIEW_MALFORMED)
        junk_clear(c, kv->key); /* a record, or nothing: no garbage there any more */
    switch (v.what) {
    case PREEMPT_VIEW_NOTHING:
    case PREEMPT_VIEW_CLAIM:
        return;
    case PREEMPT_VIEW_LATER:
        hold(c, type, v.ep, kv);
        return;
    case PREEMPT_VIEW_MALFORMED: {
        struct preempt_key k;
        int id = preempt_key_parse_(kv->key, c->jobp, &k);

        CLOG(c, 2, "ignoring %s = \"%.40s\": not %s", kv->key, value, v.text);
        if ((id == (int)PREEMPT_KEY_CLAIM || id == (int)PREEMPT_KEY_AGREED) && k.inc == c->view.inc &&
            k.ep == c->view.ep)
            junk_set(c, kv->key, value); /* a create-if-absent slot: the next write of it replaces it */
        return;
    }
    case PREEMPT_VIEW_NOTICE:
        if (v.worker == c->me && !mine(c, kv->key, v.wall)) {
            char val[PREEMPT_KEY_MAX + 64]; /* a notice value (at most ~280) and " withdrawn" */

            /* every other worker takes it for this worker's notice, and
             * only this worker can tell: it follows it as the others do
             * (a peer's notice to its machine), and withdraws it for the
             * whole job (one record that every worker follows): the round
             * it opened saves, and the job goes back to idle */
            if (!v.withdrawn) {
                CLOG(c, 2, "%s = \"%.40s\" is in this worker's slot, but not its notice (it has %s): "
                     "withdrawing it", kv->key, value, c->my_notice_wall ? "a later deadline" : "none");
                (void)snprintf(val, sizeof(val), "%s withdrawn", value);
                put(c, kv->key, val, 0);
            }
            on_notice(c, &v, value, true);
            return;
        }
        on_notice(c, &v, value, false);
        return;
    case PREEMPT_VIEW_OP_NOTICE:
        ev.kind = PREEMPT_EV_NOTICE;
        ev.u.notice.source = PREEMPT_SOURCE_INJECT;
        ev.u.notice.deadline = mono_of_wall(c, v.wall);
        CLOG(c, 1, "an operator's notice (%s)", value);
        break;
    case PREEMPT_VIEW_OP_GONE:
        return; /* the operator took it back */
    case PREEMPT_VIEW_CLAIM_GONE: /* the driver's lease ended: take the episode over */
        claim_in(c, PREEMPT_CLAIM_IN_GONE);
        forget_gone(c);
        maybe_claim(c, PREEMPT_CLAIM_IN_SEND);
        return;
    case PREEMPT_VIEW_FINAL:
        ev.kind = PREEMPT_EV_FINAL_REQUESTED;
        ev.u.final_requested.worker = v.worker;
        break;
    case PREEMPT_VIEW_LOST:
        CLOG(c, 2, "worker %u lost its membership (lease expired or revoked; found by the driver)", v.worker);
        ev.kind = PREEMPT_EV_PEER_LOST;
        ev.u.peer_lost.worker = v.worker;
        break;
    case PREEMPT_VIEW_AGREED:
        c->r[v.round].agreed = v.step;
        ev.kind = PREEMPT_EV_STEP_AGREED;
        ev.u.step_agreed.step = v.step;
        ev.u.step_agreed.last = v.last;
        break;
    case PREEMPT_VIEW_COMMITTED:
    case PREEMPT_VIEW_ABORTED:
        on_decision(c, &v, value);
        return;
    case PREEMPT_VIEW_ERROR:
        if (c->ops.on_error_msg)
            c->ops.on_error_msg(v.text, c->arg);
        if (v.worker == c->me)
            return;
        ev.kind = PREEMPT_EV_PEER_ERROR;
        ev.u.peer_error.code = v.code;
        ev.u.peer_error.worker = v.worker;
        break;
    }
    cpost(c, ev);
}

/* A full read of the watched records: every record is applied (the view
 * makes that idempotent). */
static void on_watch_reset(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    struct preempt_coord *c = arg;

    bool current = false, later = false;

    CLOG(c, 0, "read %zu records of %s at revision %lld", n, c->pre, (long long)rev);
    /* a claim that went while the watch was down is not in the read */
    (void)view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_REREAD });
    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;
        bool episode;
        int id = record_of(c, kvs[i].key, &k, &episode);

        if (id >= 0 && episode) {
            /* a decision stays after the clear */
            current = current || (k.ep == c->view.ep && id != PREEMPT_KEY_DECISION);
            later = later || k.ep > c->view.ep;
        }
        on_watch_event(PREEMPT_ETCD_PUT, &kvs[i], c);
    }
    /* A later episode and nothing left of this worker's: the job withdrew
     * its notices and cleared the episode while this worker could not see
     * it. Its machine is told so; back in idle it moves on (clear-round). */
    if (later && !current && c->episode == PREEMPT_EP_ACTIVE) {
        CLOG(c, 1, "episode %" PRIu64 " was cleared while the watch was down", c->view.ep);
        ep_in(c, PREEMPT_EP_IN_CLEARED);
    }
    if (!later)
        maybe_claim(c, PREEMPT_CLAIM_IN_SEND);
}

static void on_watch_link(bool up, const char *why, void *arg)
{
    struct preempt_coord *c = arg;

    CLOG(c, up ? 0 : 1, "watch of %s %s (%s)", c->pre, up ? "up" : "down", why);
    c->watch_up = up;
}

/* While the job's watch is down (etcd answering requests but not keeping a
 * stream, or between re-opens) the worker would see no peer's notice, round
 * or error. So each keep-alive tick reads the job's records instead and
 * applies them as the watch's own re-read does: a broken stream slows what
 * the worker learns to the tick's period, it never hides it. */
static void on_poll_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    (void)msg;
    if (status < 0 || c->watch_up)
        return; /* the next tick tries again, or the watch is back (it re-reads itself) */
    CLOG(c, 0, "the watch is down: read the records of %s instead", c->pre);
    on_watch_reset(r->res[0].kvs, r->res[0].n, r->rev, c);
}

/* ---- membership -------------------------------------------------------------------------------- */

static void on_keep_timer(void *arg);

static void arm_keepalive(struct preempt_coord *c)
{
    unsigned s = c->ttl_s / 3 ? c->ttl_s / 3 : 1;

    c->io->timer(c->io_arg, s * 1000u, on_keep_timer, c);
}

/* The TTL the membership lease needs: a synchronous trainer keeps it
 * alive only at its step boundaries. Steps up to a third of the configured
 * TTL (the keep-alive period) need nothing more; longer ones, twice the
 * longest step seen on top of it (at most MAX_TTL_S). */
#define MAX_TTL_S 3600u
static unsigned ttl_needed(const struct preempt_coord *c)
{
    uint64_t s = c->cfg_ttl_s + (2 * c->longest_step_ms + 999) / 1000;

    if (3 * c->longest_step_ms <= 1000u * c->cfg_ttl_s)
        return c->cfg_ttl_s;

    return s < MAX_TTL_S ? (unsigned)s : MAX_TTL_S;
}

static void on_regrant(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    c->granting = false;
    if (LEFT(c))
        return;
    if (status < 0) {
        CLOG(c, 2, "renewing the membership lease failed: %s", msg);
        claim_in(c, PREEMPT_CLAIM_IN_GRANT_FAILED);
        return;
    }
    /* The old lease, if it still lives, is no longer kept alive: it ends by
     * itself, and nothing is bound to it once alive/<me> moved over. */
    c->lease = r->id;
    if (r->ttl > 0)
        c->ttl_s = (unsigned)r->ttl;
    mship_in(c, PREEMPT_MSHIP_IN_GRANTED); /* alive/<me> moves over, unless it went with the last report */
    claim_in(c, PREEMPT_CLAIM_IN_GRANTED); /* a claim sent under the lease that had ended goes again */
}

/* Grants a new membership lease of the TTL needed now. */
static void regrant(struct preempt_coord *c)
{
    unsigned ttl = ttl_needed(c);

    if (c->granting || LEFT(c))
        return;
    c->granting = true;
    if (c->io->request(c->io_arg, PREEMPT_RQ_GRANT(ttl), c->give_up_ms, on_regrant, c) < 0)
        c->granting = false;
}

void preempt_coord_step_(struct preempt_coord *c, uint64_t step_ms)
{
    if (!c || step_ms <= c->longest_step_ms)
        return;
    c->longest_step_ms = step_ms;
    /* A longer lease while nothing is going on (during a preemption the
     * driver's claim is bound to the current lease). */
    if (ttl_needed(c) > c->ttl_s && c->episode == PREEMPT_EP_IDLE) {
        CLOG(c, 1, "a step took %" PRIu64 " ms: the membership lease grows to %u s", step_ms, ttl_needed(c));
        regrant(c);
    }
}

static void on_keepalive(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    if (LEFT(c))
        return;
    if (status < 0) {
        CLOG(c, 2, "lease keep-alive failed: %s", msg);
    } else if (r->ttl <= 0) {
        CLOG(c, 2, "the membership lease expired; joining again with a new one");
        regrant(c);
    }
    arm_keepalive(c);
}

static void on_keep_timer(void *arg)
{
    struct preempt_coord *c = arg;
    uint64_t bound = (c->ttl_s / 3 ? c->ttl_s / 3 : 1) * 1000u;
    char wpre[PREEMPT_KEY_MAX];

    CRANGE(c, wpre, WORKERS, 0);
    if (!c->watch_up) /* the watched range, [P/N/, P/N/w/) */
        (void)c->io->request(c->io_arg, PREEMPT_RQ_SPAN(c->pre, wpre), bound, on_poll_read, c);
    read_members(c);
    if (c->io->request(c->io_arg, PREEMPT_RQ_LEASE(KEEPALIVE, c->lease), bound, on_keepalive, c) < 0)
        arm_keepalive(c);
}

/* ---- effects ------------------------------------------------------------------------------------ */

static void on_notice_put(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    (void)pub(c, status < 0 ? PREEMPT_PUB_IN_PUT_FAILED : PREEMPT_PUB_IN_PUT_OK);
    if (status < 0)
        on_write(status, r, msg, c);
}

/* notice/<me>'s key and value as they should be now. */
static void notice_record(const struct preempt_coord *c, char key[PREEMPT_KEY_MAX], char *val, size_t val_size)
{
    (void)preempt_key_(key, PREEMPT_KEY_MAX, c->jobp, PREEMPT_KEY_NOTICE,
                       &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .worker = c->me });
    (void)snprintf(val, val_size, "%" PRIu64 " %s%s", c->my_notice_wall, c->my_source,
                   c->my_withdrawn ? " withdrawn" : "");
}

/* Feeds the notice record's machine (pub-internal.h), logs the
 * transition and runs a put it asks for; returns its action. */
static enum preempt_pub_action pub(struct preempt_coord *c, enum preempt_pub_input in)
{
    unsigned st = c->pub;
    enum preempt_pub_action a = (enum preempt_pub_action)decl_in(c, &preempt_pub_decl_, &st, in);

    c->pub = (enum preempt_pub_state)st;
    if (a == PREEMPT_PUB_DO_PUT) { /* one put at a time: a later value never lands before an earlier one */
        char key[PREEMPT_KEY_MAX], val[96];

        notice_record(c, key, val, sizeof(val));
        write_call(c, PREEMPT_RQ_PUT(key, val, 0), on_notice_put);
    }
    return a;
}

/* Writes notice/<me> as it should be now (when a put is on its way, after
 * it). */
static void notice_put(struct preempt_coord *c)
{
    (void)pub(c, c->my_notice_wall ? PREEMPT_PUB_IN_WRITE : PREEMPT_PUB_IN_NOTHING);
}

void preempt_coord_withdraw_(struct preempt_coord *c, bool withdrawn)
{
    if (!c || c->my_withdrawn == withdrawn)
        return;
    c->my_withdrawn = withdrawn;
    notice_put(c);
}

static void on_claim(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_CLAIM_WON };
    const struct preempt_etcd_kv *kv;
    uint64_t holder = c->me;

    /* a notice the claim carried: in the claim's value, or (the claim
     * lost) written by the transaction's failure branch, or (no answer)
     * to go with the next claim or the put below */
    (void)pub(c, status < 0 ? PREEMPT_PUB_IN_CLAIM_FAILED
                 : r->succeeded ? PREEMPT_PUB_IN_CLAIM_WON : PREEMPT_PUB_IN_CLAIM_LOST);
    if (status == -ENOENT && !LEFT(c)) { /* "requested lease not found": it ended inside a long step */
        CLOG(c, 2, "the claim was sent under an ended lease; claiming again under a new one");
        claim_in(c, PREEMPT_CLAIM_IN_STALE_LEASE);
        return;
    }
    if (c->pub == PREEMPT_PUB_DEFERRED)
        notice_put(c);
    if (status < 0) {
        claim_in(c, PREEMPT_CLAIM_IN_FAILED);
        on_write(status, NULL, msg, c);
        return;
    }
    kv = r->succeeded ? NULL : preempt_etcd_reply_kv_(r, 0);
    if (kv && kv->value) {
        const char *carried;
        unsigned w;

        if (!preempt_claim_parse_(kv->value, &w, &carried)) { /* garbage: replaced by this claim */
            CLOG(c, 2, "%s = \"%.40s\" is no claim: claiming over it", kv->key, kv->value);
            junk_set(c, kv->key, kv->value);
            claim_in(c, PREEMPT_CLAIM_IN_UNREADABLE);
            return;
        }
        holder = w;
    }
    if (!r->succeeded && !kv) {
        /* released between the compare and the read, or the round has a
         * step already (the claim's driver left): try again, proposing
         * nothing */
        char key[PREEMPT_KEY_MAX];

        CKEY(c, key, CLAIM);
        junk_clear(c, key); /* the read found it empty */
        c->prop_step = 0;
        claim_in(c, PREEMPT_CLAIM_IN_UNREADABLE);
        return;
    }
    if (holder != c->me) {
        /* Another worker drives the episode, also a final round this one
         * asked for (its lease, and the claim with it, ended inside a
         * step): its machine follows (claim-lost), so must its view, or it
         * would act as the driver of a round it follows (sim seed 3606). */
        claim_in(c, PREEMPT_CLAIM_IN_LOST);
        c->prop_step = 0;
        ev.kind = PREEMPT_EV_CLAIM_LOST;
        ev.u.claim_lost.worker = holder;
        cpost(c, ev);
        retell_agreed(c);
        return;
    }
    claim_in(c, PREEMPT_CLAIM_IN_WON);
    c->prop_step = 0; /* it landed with the claim */
    cpost(c, ev);
    retell_agreed(c);
}

/* Claims the episode (create-if-absent, bound to the lease). A notice of
 * this worker's that opens the episode goes in the claim's value ("<w>
 * <notice record's value>"; when the claim fails, as notice/<me> in the
 * same transaction), and its proposal of the save step goes in the same
 * transaction (create-if-absent too: the claim is taken only when the
 * round has no step), so that every worker learns of all three from one
 * watch message of two events, the notice before the step. Each event a
 * message holds is work for etcd at every watcher: in make bench, 32
 * watchers on one loop, a three-event message took 15-30% longer to reach
 * them all than a two-event one. A take-over proposes nothing (its machine
 * does, when the round has no step). */
static void claim_send(struct preempt_coord *c)
{
    char key[PREEMPT_KEY_MAX], me[128], nkey[PREEMPT_KEY_MAX], nval[96], akey[PREEMPT_KEY_MAX];
    char aval[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_cmp cmp[] = { { .key = key }, { .key = akey } };
    struct preempt_etcd_op ok[3] = { { PREEMPT_ETCD_OP_PUT, key, me, c->lease } };
    struct preempt_etcd_op fail[2] = { { PREEMPT_ETCD_OP_GET, key, NULL, 0 } };
    bool carry = c->my_notice_wall && pub(c, PREEMPT_PUB_IN_CLAIM_SENT) == PREEMPT_PUB_DO_CARRY;
    bool propose = c->prop_step && !c->view.r[0].have_agreed;
    size_t n_ok = 1, n_fail = 1;

    CKEY(c, key, CLAIM);
    CKEY(c, akey, AGREED, .round = 0);
    cmp[0].value = junk_of(c, key);
    cmp[1].value = junk_of(c, akey);
    (void)snprintf(me, sizeof(me), "%u", c->me);
    if (carry) {
        notice_record(c, nkey, nval, sizeof(nval));
        (void)snprintf(me, sizeof(me), "%u %s", c->me, nval);
        fail[n_fail++] = (struct preempt_etcd_op){ PREEMPT_ETCD_OP_PUT, nkey, nval, 0 };
    }
    if (propose) {
        (void)preempt_step_value_(aval, sizeof(aval), c->prop_step, c->prop_last);
        ok[n_ok++] = (struct preempt_etcd_op){ PREEMPT_ETCD_OP_PUT, akey, aval, 0 };
    }
    write_call(c, PREEMPT_RQ_TXN(cmp, propose ? 2 : 1, ok, n_ok, fail, n_fail), on_claim);
}

/* One step of a declared machine (decl-internal.h), logged; its action. */
static unsigned decl_in(struct preempt_coord *c, const struct preempt_decl *m, unsigned *state, unsigned in)
{
    unsigned from = *state, a;
    bool listed;

    a = preempt_decl_step_(m, state, in, &listed);
    if (listed)
        CLOG(c, 0, "%s: %s --%s--> %s (%s)", m->name, preempt_decl_state_(m, from), preempt_decl_input_(m, in),
             preempt_decl_state_(m, *state), preempt_decl_action_(m, a));
    return a;
}

/* One input to the claim's machine (claim-internal.h: the only place that
 * decides whether a claim goes and who holds it); runs its action. */
static void claim_in(struct preempt_coord *c, enum preempt_claim_input in)
{
    unsigned st = c->claim, a = decl_in(c, &preempt_claim_decl_, &st, in);

    c->claim = (enum preempt_claim_state)st;
    if (a == PREEMPT_CLAIM_DO_SEND)
        claim_send(c);
    else if (a == PREEMPT_CLAIM_DO_REGRANT)
        regrant(c);
}

/* One input to the episode's machine (episode-internal.h); runs its
 * action: the job's notices are withdrawn (the job's decision, read from
 * its records; the source says so). */
static void ep_in(struct preempt_coord *c, enum preempt_ep_input in)
{
    unsigned st = c->episode, a = decl_in(c, &preempt_ep_decl_, &st, in);
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE_WITHDRAWN };

    c->episode = (enum preempt_ep_state)st;
    if (a == PREEMPT_EP_DO_TELL_WITHDRAWN) {
        ev.u.notice_withdrawn.source = PREEMPT_SOURCE_INJECT;
        cpost(c, ev);
    }
}

/* One input to the membership's machine (membership-internal.h); runs its
 * action. */
static void mship_in(struct preempt_coord *c, enum preempt_mship_input in)
{
    unsigned st = c->mship, a = decl_in(c, &preempt_mship_decl_, &st, in);
    char key[PREEMPT_KEY_MAX];

    c->mship = (enum preempt_mship_state)st;
    if (a == PREEMPT_MSHIP_DO_PUT_ALIVE) {
        CKEY(c, key, ALIVE, .worker = c->me);
        put(c, key, c->member, c->lease);
    } else if (a == PREEMPT_MSHIP_DO_REVOKE) {
        (void)c->io->request(c->io_arg, PREEMPT_RQ_LEASE(REVOKE, c->lease), c->give_up_ms, NULL, NULL);
    }
}

/* The machine is back in idle: this worker moves on to the next episode
 * with an empty view of it, applies what it already holds of it, and
 * brings along a notice of its own that no source withdrew (it came after
 * the job decided to withdraw). */
static void advance(struct preempt_coord *c)
{
    uint64_t live = own_live(c) ? c->my_notice_wall : 0;
    size_t keep = 0;

    (void)view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_EPISODE, .ep = c->view.ep + 1 });
    junk_clear(c, NULL);
    reset_round(c, 0);
    reset_round(c, 1);
    forget_gone(c);
    c->my_withdrawn = false;
    ep_in(c, PREEMPT_EP_IN_NEXT_EPISODE);
    claim_in(c, PREEMPT_CLAIM_IN_NEXT_EPISODE);
    c->prop_step = 0;
    mship_in(c, PREEMPT_MSHIP_IN_NEXT_EPISODE); /* a last save that was an opportunistic one after all */
    c->my_notice_wall = c->my_deadline = 0;
    if (live) {
        struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE };
        int src = preempt_source_from_string_(c->my_source);

        CLOG(c, 1, "this worker's notice came after the job withdrew the others: it opens episode %" PRIu64,
             c->view.ep);
        ev.u.notice.source = src < 0 ? PREEMPT_SOURCE_INJECT : (enum preempt_source)src;
        ev.u.notice.deadline = mono_of_wall(c, live);
        cpost(c, ev);
    }
    /* In the order they came, in one pass: the ones of this episode are
     * applied (the machine is draining: what this posts waits in its
     * queue, and nothing here holds a record again), later ones kept. */
    c->replaying = true;
    for (size_t i = 0, n = c->n_held; i < n; i++) {
        struct held h = c->held[i];

        if (h.ep > c->view.ep) {
            c->held[keep++] = h;
            continue;
        }
        if (h.ep == c->view.ep)
            on_watch_event(PREEMPT_ETCD_PUT, &(struct preempt_etcd_kv){ .key = h.key, .value = h.value }, c);
        free(h.key);
        free(h.value);
    }
    c->n_held = keep;
    c->replaying = false;
    flush_merged(c);
}

bool preempt_coord_fx_(struct preempt_coord *c, const struct preempt_fx *fx, unsigned round, bool last,
                       uint64_t save_ms, const char *text)
{
    char key[PREEMPT_KEY_MAX], val[400];
    unsigned k = round ? 1 : 0;

    switch (fx->kind) {
    case PREEMPT_FX_PUBLISH_NOTICE: {
        uint64_t wall = wall_of_mono(c, (uint64_t)fx->arg);
        bool opens = c->episode == PREEMPT_EP_IDLE; /* the transition claims next, and the claim carries it */

        ep_in(c, PREEMPT_EP_IN_OWN);
        if (!c->my_deadline || (uint64_t)fx->arg < c->my_deadline)
            c->my_deadline = (uint64_t)fx->arg;
        if (c->my_notice_wall && c->my_notice_wall <= wall)
            return true; /* the earliest deadline is already published */
        c->my_notice_wall = wall;
        (void)snprintf(c->my_source, sizeof(c->my_source), "%s", text ? text : "");
        if (opens)
            (void)pub(c, PREEMPT_PUB_IN_DEFER);
        else
            notice_put(c);
        return true;
    }
    case PREEMPT_FX_CLAIM_DRIVER:
        c->prop_step = (uint64_t)fx->arg;
        c->prop_last = last;
        claim_in(c, PREEMPT_CLAIM_IN_SEND);
        return true;
    case PREEMPT_FX_PROPOSE_STEP:
        propose_step(c, k, (uint64_t)fx->arg, last);
        return true;
    case PREEMPT_FX_REQUEST_FINAL: { /* final, and round 1's step unless it has one (a take-over's request) */
        char akey[PREEMPT_KEY_MAX], aval[PREEMPT_STEP_VALUE_MAX];
        struct preempt_etcd_cmp cmp = { .key = akey };
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_PUT, key, val, 0 }, { PREEMPT_ETCD_OP_PUT, akey, aval, 0 } };

        CKEY(c, key, FINAL);
        (void)snprintf(val, sizeof(val), "%u", c->me);
        CKEY(c, akey, AGREED, .round = 1);
        cmp.value = junk_of(c, akey);
        (void)preempt_step_value_(aval, sizeof(aval), (uint64_t)fx->arg, last);
        write_call(c, PREEMPT_RQ_TXN(&cmp, 1, ops, 2, ops, 1), on_write);
        return true;
    }
    case PREEMPT_FX_REPORT_SHARD:
        report(c, k, (uint64_t)fx->arg, last, save_ms);
        return true;
    case PREEMPT_FX_PUBLISH_ERROR: {
        CKEY(c, key, ERROR);
        (void)snprintf(val, sizeof(val), "%" PRId64 " %u %s", fx->arg, c->me, text ? text : "");
        for (size_t i = 0; val[i]; i++) /* <message:text>: printable (a trainer's message may not be) */
            if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
                val[i] = ' ';
        write_call(c, PREEMPT_RQ_CREATE(key, val), on_write); /* the first error wins */
        return true;
    }
    case PREEMPT_FX_ANNOUNCE_DONE:
        CKEY(c, key, DONE, .worker = c->me);
        (void)snprintf(val, sizeof(val), "%" PRId64, fx->arg);
        put(c, key, val, 0);
        return true;
    case PREEMPT_FX_CLEAR_ROUND: {
        char wkey[PREEMPT_KEY_MAX];
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_DELETE_PREFIX, key, NULL, 0 },
                                         { PREEMPT_ETCD_OP_DELETE_PREFIX, wkey, NULL, 0 } };

        CRANGE(c, key, EPISODE, 0);
        CRANGE(c, wkey, W_EPISODE, 0);
        write_call(c, PREEMPT_RQ_TXN(NULL, 0, ops, 2, NULL, 0), on_write);
        advance(c);
        return true;
    }
    case PREEMPT_FX_PROPOSE_ABORT:
        abort_round(c, k, (uint64_t)fx->arg);
        return true;
    case PREEMPT_FX_EXIT:
        /* A notice that made this worker exit (a second one, with second =
         * exit) had no claim to carry it, and a notice its claim carries
         * would go with the lease the exit revokes: it goes now (delivered
         * by the exit's flush), so that its peers plan with the job's
         * earliest deadline. A worker that departed with its last report
         * leaves its lease, and its claim, to end by themselves. */
        if (c->pub == PREEMPT_PUB_DEFERRED || (c->pub == PREEMPT_PUB_IN_CLAIM && c->mship != PREEMPT_MSHIP_DEPARTED))
            notice_put(c);
        break; /* the rest is the shell's */
    case PREEMPT_FX_KEEP_SHARD: /* the shell's (preempt_effects.def's WHO): never asked here */
    case PREEMPT_FX_DISCARD_SHARD:
    case PREEMPT_FX_BEGIN_SAVE:
    case PREEMPT_FX_ARM_TIMER:
    case PREEMPT_FX_DISARM_TIMER:
    case PREEMPT_FX__COUNT:
        break;
    }
    return false;
}

void preempt_coord_leave_(struct preempt_coord *c)
{
    if (!c || LEFT(c))
        return;
    c->io->timer(c->io_arg, 0, NULL, NULL);
    if (c->mship == PREEMPT_MSHIP_DEPARTED)
        CLOG(c, 0, "leaving: the membership ended with the last report; the lease ends by itself");
    mship_in(c, PREEMPT_MSHIP_IN_LEAVE);
}

/* ---- the members watch (preempt_coord_watch_members_) ----------------------------------------- */

/* A member record put or deleted: a peer's membership that ends without its
 * done record is told to the owner. */
static void member_record(struct preempt_coord *c, bool put, const char *key)
{
    struct preempt_key k;
    int id = preempt_key_parse_(key, c->jobp, &k);

    if ((id != (int)PREEMPT_KEY_ALIVE && id != (int)PREEMPT_KEY_DONE) || k.inc != c->view.inc || k.worker >= c->n)
        return;
    if (id == (int)PREEMPT_KEY_DONE) {
        c->m_done[k.worker] = c->m_done[k.worker] || put;
        return;
    }
    if (!put && c->m_alive[k.worker] && !c->m_done[k.worker] && k.worker != c->me && !LEFT(c)) {
        CLOG(c, 1, "worker %u's membership ended", k.worker);
        c->m_gone(k.worker, "its membership ended: its lease expired or was revoked, or it left after its last save",
                  c->m_arg);
    }
    c->m_alive[k.worker] = put;
}

static void on_member_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    member_record(arg, type == PREEMPT_ETCD_PUT, kv->key);
}

/* A full read (the watch's start, or its re-read): a member that was
 * alive and is not in it has ended too. */
static void on_member_reset(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    struct preempt_coord *c = arg;
    char key[PREEMPT_KEY_MAX];

    (void)rev;
    for (size_t i = 0; i < n; i++)
        member_record(c, true, kvs[i].key);
    for (unsigned w = 0; w < c->n; w++) {
        bool there = false;

        CKEY(c, key, ALIVE, .worker = w);
        for (size_t i = 0; i < n && !there; i++)
            there = !strcmp(kvs[i].key, key);
        if (!there)
            member_record(c, false, key);
    }
}

static void on_member_link(bool up, const char *why, void *arg)
{
    struct preempt_coord *c = arg;

    CLOG(c, up ? 0 : 1, "watch of the member records %s (%s)", up ? "up" : "down", why);
}

int preempt_coord_watch_members_(struct preempt_coord *c, void (*gone)(unsigned worker, const char *why, void *arg),
                                 void *arg)
{
    static const struct preempt_etcd_watch_ops ops = {
        .on_event = on_member_event, .on_reset = on_member_reset, .on_link = on_member_link,
    };
    char from[PREEMPT_KEY_MAX], to[PREEMPT_KEY_MAX];

    if (!c || !c->io->watch_members)
        return -ENOTSUP;
    if (c->m_alive)
        return 0; /* watched already: the owner's callback is the one it gave first */
    c->m_alive = calloc(c->n, sizeof(*c->m_alive));
    c->m_done = calloc(c->n, sizeof(*c->m_done));
    if (!c->m_alive || !c->m_done) {
        free(c->m_alive);
        free(c->m_done);
        c->m_alive = c->m_done = NULL;
        return -ENOMEM;
    }
    c->m_gone = gone;
    c->m_arg = arg;
    /* [N/w/alive/, N/w/done0): the member records and the done records
     * (nothing sorts between them) */
    CRANGE(c, from, ALIVE, 'w');
    CRANGE(c, to, DONE, 'w');
    to[strlen(to) - 1] = '0';
    return c->io->watch_members(c->io_arg, from, to, &ops, c);
}

void preempt_coord_history_(struct preempt_coord *c, const char *value)
{
    char key[PREEMPT_KEY_MAX], old[PREEMPT_KEY_MAX];

    if (!c)
        return;
    CKEY(c, key, HISTORY, .worker = c->me);
    (void)c->io->request(c->io_arg, PREEMPT_RQ_PUT(key, value, 0), c->give_up_ms, NULL, NULL);
    if (c->view.inc > PREEMPT_HISTORY_KEPT) { /* bounded: the oldest kept incarnation's goes */
        (void)preempt_key_range_(old, sizeof(old), c->jobp, PREEMPT_KEY_HISTORY_INC, 0,
                                 &(struct preempt_key){ .inc = c->view.inc - PREEMPT_HISTORY_KEPT });
        (void)c->io->request(c->io_arg, PREEMPT_RQ_DELETE_UNDER(old), c->give_up_ms, NULL, NULL);
    }
}

int preempt_coord_decision_key_(const struct preempt_coord *c, unsigned round, char *buf, size_t size)
{
    return preempt_key_(buf, size, c->jobp, PREEMPT_KEY_DECISION,
                        &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .round = round ? 1 : 0 });
}

unsigned preempt_coord_pending_(const struct preempt_coord *c)
{
    return c ? c->io->pending(c->io_arg) : 0;
}

unsigned preempt_coord_flush_(struct preempt_coord *c, uint64_t bound_ms)
{
    return c ? c->io->flush(c->io_arg, bound_ms) : 0;
}

/* ---- life cycle ---------------------------------------------------------------------------------- */

/* The real io: the etcd client and one timer on the caller's base. */
struct real_io {
    struct preempt_etcd *e;
    struct preempt_etcd_watch *watch, *members;
    struct event *ev;
    void (*tick)(void *arg);
    void *tick_arg;
    void (*log)(int level, const char *msg, void *arg);
    void *log_arg;
};

static int real_request(void *io, const struct preempt_etcd_req *req, uint64_t give_up_ms, preempt_etcd_reply_cb cb,
                        void *arg)
{
    return preempt_etcd_do_(((struct real_io *)io)->e, req, give_up_ms, cb, arg);
}

static int real_watch(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops, void *arg)
{
    struct real_io *r = io;

    return preempt_etcd_watch_(r->e, key, end, 0, ops, arg, &r->watch);
}

static int real_watch_members(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                              void *arg)
{
    struct real_io *r = io;

    return preempt_etcd_watch_(r->e, key, end, 0, ops, arg, &r->members);
}

static void on_real_timer(evutil_socket_t fd, short what, void *arg)
{
    struct real_io *r = arg;

    (void)fd;
    (void)what;
    r->tick(r->tick_arg);
}

static void real_timer(void *io, uint64_t ms, void (*tick)(void *arg), void *arg)
{
    struct real_io *r = io;
    struct timeval tv = preempt_tv_ms_(ms);

    (void)evtimer_del(r->ev);
    r->tick = tick;
    r->tick_arg = arg;
    if (ms)
        (void)evtimer_add(r->ev, &tv);
}

static uint64_t real_wall_ms(void *io)
{
    (void)io;
    return wall_ms();
}

static uint64_t real_mono_ms(void *io)
{
    (void)io;
    return preempt_clock_ms_(CLOCK_MONOTONIC);
}

static unsigned real_pending(void *io)
{
    return preempt_etcd_pending_(((struct real_io *)io)->e);
}

static unsigned real_flush(void *io, uint64_t bound_ms)
{
    return preempt_etcd_flush_(((struct real_io *)io)->e, bound_ms);
}

static void real_free(void *io)
{
    struct real_io *r = io;

    preempt_etcd_watch_free_(r->watch);
    preempt_etcd_watch_free_(r->members);
    preempt_etcd_free_(r->e);
    if (r->ev)
        event_free(r->ev);
    free(r);
}

static const struct preempt_coord_io real_io_ops = {
    .request = real_request, .watch = real_watch, .watch_members = real_watch_members, .timer = real_timer,
    .wall_ms = real_wall_ms,
    .mono_ms = real_mono_ms, .pending = real_pending, .flush = real_flush, .free = real_free,
};

static void real_log(int level, const char *msg, void *arg)
{
    struct real_io *r = arg;

    if (r->log)
        r->log(level, msg, r->log_arg);
}

/* A real io on base (the etcd client of opts, its log to log, and one
 * timer); 0 or a negative errno. */
static int real_io_new(struct event_base *base, const struct preempt_etcd_opts *opts,
                       void (*log)(int level, const char *msg, void *arg), void *log_arg, void **ret)
{
    struct preempt_etcd_opts eo = *opts;
    struct real_io *r = calloc(1, sizeof(*r));
    int rc;

    if (!r)
        return -ENOMEM;
    r->log = log;
    r->log_arg = log_arg;
    if (log) {
        eo.log = real_log;
        eo.log_arg = r;
    }
    rc = preempt_etcd_new_(base, &eo, &r->e);
    if (rc == 0) {
        r->ev = evtimer_new(base, on_real_timer, r);
        rc = r->ev ? 0 : -ENOMEM;
    }
    if (rc < 0) {
        real_free(r);
        return rc;
    }
    *ret = r;
    return 0;
}

int preempt_coord_new_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                       const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                       struct preempt_coord **ret)
{
    void *io;
    int rc;

    if (!ops)
        return -EINVAL;
    rc = real_io_new(base, &cfg->etcd, ops->log, arg, &io);
    return rc < 0 ? rc : preempt_coord_new_io_(&real_io_ops, io, cfg, join, ops, arg, ret);
}

int preempt_coord_new_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                          const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                          struct preempt_coord **ret)
{
    static const struct preempt_etcd_watch_ops wops = {
        .on_event = on_watch_event, .on_reset = on_watch_reset, .on_link = on_watch_link,
    };
    struct preempt_coord *c;
    unsigned n = cfg->workers;
    char wpre[PREEMPT_KEY_MAX];
    int r;

    if (!ops || !ops->post || !ops->now_ms || n == 0 || n > PREEMPT_MAX_WORKERS || cfg->worker >= n) {
        io->free(io_arg);
        return -EINVAL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        io->free(io_arg);
        return -ENOMEM;
    }
    c->io = io;
    c->io_arg = io_arg;
    c->ops = *ops;
    c->arg = arg;
    c->me = cfg->worker;
    c->n = n;
    c->ttl_s = c->cfg_ttl_s = cfg->lease_ttl_s;
    c->give_up_ms = cfg->give_up_ms;
    c->lease = join->lease;
    (void)snprintf(c->member, sizeof(c->member), "%s", join->member[0] ? join->member : "pid=0");
    r = preempt_coord_prefix_(cfg->job, c->jobp, sizeof(c->jobp));
    if (r == 0)
        r = preempt_view_init_(&c->view, c->jobp, join->incarnation, n, c->me);
    CRANGE(c, c->pre, INC, 0);
    CRANGE(c, wpre, WORKERS, 0);
    c->present = calloc(n, sizeof(*c->present));
    c->gone_at = calloc(n, sizeof(*c->gone_at));
    if (r == 0 && (!c->present || !c->gone_at))
        r = -ENOMEM;
    if (r == 0)
        r = io->watch(io_arg, c->pre, wpre, &wops, c); /* [P/N/, P/N/w/) */
    if (r < 0) {
        preempt_coord_free_(c);
        return r;
    }
    arm_keepalive(c);
    *ret = c;
    return 0;
}

void preempt_coord_free_(struct preempt_coord *c)
{
    if (!c)
        return;
    c->io->free(c->io_arg);
    for (size_t i = 0; i < c->n_held; i++) {
        free(c->held[i].key);
        free(c->held[i].value);
    }
    free(c->held);
    free(c->m_alive);
    free(c->m_done);
    junk_clear(c, NULL);
    preempt_view_free_(&c->view);
    free(c->present);
    free(c->gone_at);
    free(c);
}
