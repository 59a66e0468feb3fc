/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/view.c: the job's view (view-internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records/records.h"
#include "view-internal.h"

int preempt_view_init_(struct preempt_view *v, const char *jobp, uint64_t inc, unsigned n, unsigned me)
{
    *v = (struct preempt_view){ .inc = inc, .n = n, .me = me, .cap = n };
    (void)snprintf(v->jobp, sizeof(v->jobp), "%s", jobp);
    v->notice_wall = calloc(n ? n : 1, sizeof(*v->notice_wall));
    v->notice_withdrawn = calloc(n ? n : 1, sizeof(*v->notice_withdrawn));
    v->reported = calloc(2 * (n ? n : 1), sizeof(*v->reported));
    v->member = calloc(n ? n : 1, sizeof(*v->member));
    if (!v->notice_wall || !v->notice_withdrawn || !v->reported || !v->member) {
        preempt_view_free_(v);
        return -ENOMEM;
    }
    return 0;
}

void preempt_view_free_(struct preempt_view *v)
{
    free(v->notice_wall);
    free(v->notice_withdrawn);
    free(v->reported);
    free(v->member);
    v->notice_wall = NULL;
    v->notice_withdrawn = NULL;
    v->reported = NULL;
    v->member = NULL;
}

void preempt_view_episode_(struct preempt_view *v, uint64_t ep)
{
    v->ep = ep;
    memset(v->notice_wall, 0, v->n * sizeof(*v->notice_wall));
    memset(v->notice_withdrawn, 0, v->n * sizeof(*v->notice_withdrawn));
    v->claim = v->final = v->lost = false;
    memset(v->r, 0, sizeof(v->r));
}

/* Incarnation inc, episode 0, with nothing known of them but the members. */
static void reset(struct preempt_view *v, uint64_t inc)
{
    v->inc = inc;
    v->op_wall = 0;
    v->error = false;
    preempt_view_episode_(v, 0);
}

void preempt_view_incarnation_(struct preempt_view *v, uint64_t inc)
{
    reset(v, inc);
    memset(v->member, 0, v->cap * sizeof(*v->member));
    v->members_open = false;
}

int preempt_view_shape_(const char *value, unsigned *n)
{
    struct preempt_rv_shape r;
    const char *why;

    if (preempt_rv_shape_read_(value, 0, &r, &why) < 0 || r.workers == 0 || r.workers > PREEMPT_MAX_WORKERS)
        return -EPROTO;
    *n = (unsigned)r.workers;
    return 0;
}

int preempt_view_inc_(const char *value, uint64_t *inc)
{
    struct preempt_rv_incarnation r;
    const char *why;

    if (!value || preempt_rv_incarnation_read_(value, 0, &r, &why) < 0 || r.N == 0)
        return -EPROTO;
    *inc = r.N;
    return 0;
}

int preempt_view_workers_(struct preempt_view *v, unsigned n)
{
    bool open = v->members_open; /* a whole read of the members under way stays so */

    if (n == 0 || n > v->cap)
        return -EINVAL;
    if (n == v->n)
        return 0; /* known already (a full read brings the shape again) */
    if (v->me >= v->n) /* no worker's view: still none */
        v->me = n;
    /* the members of the first n read so far stay (one transaction writes
     * a worker's member records before the shape's, and the watch brings
     * them in that order); of the rest, and of everything else, nothing
     * stands */
    if (n < v->n)
        memset(v->member + n, 0, (v->n - n) * sizeof(*v->member));
    v->n = n;
    memset(v->reported, 0, 2 * v->cap * sizeof(*v->reported));
    reset(v, v->inc);
    v->members_open = open;
    return 0;
}

void preempt_view_reread_(struct preempt_view *v)
{
    v->claim = false;
}

void preempt_view_reports_(struct preempt_view *v, unsigned k, uint64_t step, uint64_t wall)
{
    if (k > 1)
        return;
    v->r[k].reports = (struct preempt_view_reports){ .open = true, .step = step, .wall = wall,
                                                     .pace = { UINT64_MAX, 0, 0 } };
    memset(&v->reported[k * v->n], 0, v->n * sizeof(*v->reported));
}

struct preempt_pace preempt_view_reports_pace_(const struct preempt_view_reports *t)
{
    return t->unpaced || t->count == 0 ? (struct preempt_pace){ 0, 0, 0 } : t->pace;
}

bool preempt_view_ending_(const struct preempt_view *v)
{
    return v->r[0].ends || v->r[1].ends || v->lost || v->error;
}

void preempt_view_summary_(const struct preempt_view *v, struct preempt_view_summary *s)
{
    *s = (struct preempt_view_summary){ .op = v->op_wall != 0, .worker = -1 };
    for (unsigned w = 0; w < v->n; w++) {
        if (!v->notice_wall[w])
            continue;
        s->notices++;
        s->standing += !v->notice_withdrawn[w];
        if (!s->earliest || v->notice_wall[w] < s->earliest) {
            s->earliest = v->notice_wall[w];
            s->worker = (int)w;
        }
    }
    if (s->op) { /* the operator's, without a deadline (UINT64_MAX), is due now; a worker's tie wins */
        uint64_t op = v->op_wall == UINT64_MAX ? 1 : v->op_wall;

        if (!s->earliest || op < s->earliest) {
            s->earliest = op;
            s->worker = -1;
        }
    }
    s->live = s->standing > 0 || s->op;
}

static struct preempt_view_ev malformed(const char *what)
{
    return (struct preempt_view_ev){ .what = PREEMPT_VIEW_MALFORMED, .text = what };
}

/* A text field as read: up to the value's end ("" when absent). */
static const char *text(const char *s)
{
    return s ? s : "";
}

/* A pace a record names (ms 0: none): its step (has: named), its ms and
 * when it trains on from there (at: 0 when not named). */
static struct preempt_pace pace_of(bool has, uint64_t step, bool has_ms, uint64_t ms, bool has_at, uint64_t at)
{
    if (!has || !has_ms || ms == 0)
        return (struct preempt_pace){ 0, 0, 0 };
    return (struct preempt_pace){ .step = step, .ms = ms, .at = has_at ? at : 0 };
}

/* A worker's notice: "<deadline> <source>[ withdrawn]", alone (its
 * record) or carried by the driver's claim. */
static struct preempt_view_ev notice(struct preempt_view *v, unsigned w, uint64_t deadline, const char *source,
                                     bool withdrawn)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTICE, .worker = w, .text = text(source) };
    uint64_t *wall = &v->notice_wall[w];

    ev.wall = deadline;
    ev.withdrawn = withdrawn;
    ev.news = !*wall || ev.wall < *wall || (v->notice_withdrawn[w] && !ev.withdrawn);
    if (!*wall || ev.wall < *wall)
        *wall = ev.wall ? ev.wall : 1;
    v->notice_withdrawn[w] = ev.withdrawn;
    return ev;
}

/* Where a report's worker is at least when the reports are read (wall):
 * its step, plus, when it trains on from there (at), the steps of its pace
 * since (none when the clocks disagree: at after wall). */
static uint64_t pace_at(struct preempt_pace p, uint64_t wall)
{
    uint64_t more = p.at && wall > p.at ? (wall - p.at) / p.ms : 0;

    return p.step > UINT64_MAX - more ? UINT64_MAX : p.step + more;
}

/* A round's decision: "committed <step>[ last] save=<ms>[ stop=<step>][ from=<step> pace=<ms>]" or
 * "aborted <step> <w>|restart". */
static struct preempt_view_ev decision(struct preempt_view *v, unsigned k, const struct preempt_rv_decision *r)
{
    struct preempt_view_ev ev = { .round = k };

    if (v->r[k].decided)
        return ev;
    ev.what = r->committed ? PREEMPT_VIEW_COMMITTED : PREEMPT_VIEW_ABORTED;
    ev.step = r->step;
    ev.last = r->last;
    ev.save_ms = r->save;
    ev.stop = r->stop;
    ev.pace = pace_of(r->has_from, r->from, r->has_pace, r->pace, false, 0);
    v->r[k].decided = true;
    v->r[k].ends = ev.what == PREEMPT_VIEW_ABORTED || ev.last || k == 1;
    return ev;
}

/* A shard report "<save>[ last][ stop=<step>][ run=<step> pace=<ms>[ at=<unixms>]]":
 * counted when a read of its round's reports at its step is open and its
 * worker's is not counted yet (anything else is nothing: the reports come
 * only by such a read). */
static struct preempt_view_ev shard(struct preempt_view *v, const struct preempt_key *k,
                                    const struct preempt_rv_shard *r)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING, .round = k->round };
    struct preempt_view_reports *t = &v->r[k->round].reports;
    bool *counted = &v->reported[k->round * v->n + k->worker];

    if (!t->open || k->step != t->step || *counted)
        return ev;
    *counted = true;
    ev.what = PREEMPT_VIEW_SHARD;
    ev.worker = k->worker;
    ev.step = k->step;
    ev.save_ms = r->save;
    ev.last = r->last;
    ev.stop = r->stop;
    ev.pace = pace_of(r->has_run, r->run, r->has_pace, r->pace, r->has_at, r->at);
    ev.count = ++t->count;
    if (ev.save_ms > t->slowest)
        t->slowest = ev.save_ms;
    t->unpaced = t->unpaced || !ev.pace.ms;
    if (ev.pace.ms && pace_at(ev.pace, t->wall) < t->pace.step)
        t->pace.step = pace_at(ev.pace, t->wall);
    if (ev.pace.ms > t->pace.ms)
        t->pace.ms = ev.pace.ms;
    if (ev.stop > t->stop)
        t->stop = ev.stop;
    t->last = t->last || ev.last;
    return ev;
}

/* The first record of a kind whose value names a worker ("<w>", not
 * skip): seen marks it found. */
static struct preempt_view_ev first_worker(bool *seen, uint64_t u, unsigned skip, enum preempt_view_what what)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING };

    if (*seen || u == skip)
        return ev;
    *seen = true;
    ev.what = what;
    ev.worker = (unsigned)u;
    return ev;
}

/* A record of the viewed episode (r: its value, validated, when put). */
static struct preempt_view_ev episode(struct preempt_view *v, bool put, int id, const struct preempt_key *k,
                                      const union preempt_rv *r)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING, .round = k->round };
    uint64_t u;
    bool last;

    if (!put) {
        if (id == PREEMPT_KEY_CLAIM) { /* the rest goes only when the ended episode is cleared */
            v->claim = false;
            ev.what = PREEMPT_VIEW_CLAIM_GONE;
        }
        return ev;
    }
    switch (id) {
    case PREEMPT_KEY_NOTICE:
        return notice(v, k->worker, r->notice.deadline, r->notice.source, r->notice.withdrawn);
    case PREEMPT_KEY_CLAIM:
        v->claim = true;
        ev.what = PREEMPT_VIEW_CLAIM;
        /* the driver's notice, when it opened the episode with its claim */
        if (r->claim.has_deadline)
            return notice(v, (unsigned)r->claim.w, r->claim.deadline, r->claim.source, r->claim.withdrawn);
        return ev;
    case PREEMPT_KEY_FINAL: /* the driver's; this worker's own opened nothing new to it */
        return first_worker(&v->final, r->final.w, v->me, PREEMPT_VIEW_FINAL);
    case PREEMPT_KEY_LOST:
        ev = first_worker(&v->lost, r->lost.w, v->n, PREEMPT_VIEW_LOST);
        ev.text = ev.what == PREEMPT_VIEW_LOST && r->lost.left ? "left" : NULL;
        return ev;
    case PREEMPT_KEY_AGREED:
        u = r->agreed.step;
        last = r->agreed.last;
        if (v->r[k->round].have_agreed && u <= v->r[k->round].agreed)
            return ev; /* a repeat: the step only goes up (a raise) */
        v->r[k->round].have_agreed = true;
        v->r[k->round].agreed = u;
        v->r[k->round].last = last;
        ev.what = PREEMPT_VIEW_AGREED;
        ev.step = u;
        ev.last = last;
        return ev;
    case PREEMPT_KEY_DECISION:
        return decision(v, k->round, &r->decision);
    case PREEMPT_KEY_SHARD:
        return shard(v, k, &r->shard);
    default:
        return ev;
    }
}

/* A record of the incarnation outside the episodes (r: its value,
 * validated, when put). */
static struct preempt_view_ev job(struct preempt_view *v, bool put, int id, const union preempt_rv *r)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING };

    if (id == PREEMPT_KEY_NOTICE_OP && !put) {
        v->op_wall = 0;
        ev.what = PREEMPT_VIEW_OP_GONE;
    } else if (id == PREEMPT_KEY_NOTICE_OP) {
        ev.wall = r->notice_op.deadline;
        /* again when the operator brings the deadline earlier (found by the
         * simulation: a second injection with an earlier deadline was
         * ignored, and the job outlived it) */
        if (v->op_wall && (!ev.wall || ev.wall >= v->op_wall))
            return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
        v->op_wall = ev.wall ? ev.wall : UINT64_MAX;
        ev.what = PREEMPT_VIEW_OP_NOTICE;
        ev.text = text(r->notice_op.source);
    } else if (id == PREEMPT_KEY_ERROR && put && !v->error) {
        v->error = true;
        ev.what = PREEMPT_VIEW_ERROR;
        ev.code = r->error.code;
        ev.worker = (unsigned)r->error.w;
        ev.text = text(r->error.message);
    }
    return ev;
}

/* ---- the members ------------------------------------------------------------------------------ */

/* Worker w's membership ends (its member record went, or a whole read
 * lacked it). */
static struct preempt_view_ev member_end(struct preempt_view *v, unsigned w)
{
    uint8_t *m = &v->member[w];

    if (!(*m & PREEMPT_VIEW_M_ALIVE))
        return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
    *m = (uint8_t)((*m & ~PREEMPT_VIEW_M_ALIVE) | PREEMPT_VIEW_M_ENDED);
    return (struct preempt_view_ev){ .what = PREEMPT_VIEW_MEMBER_END, .worker = w,
                                     .last = (*m & PREEMPT_VIEW_M_DONE) != 0 };
}

/* A member record of the viewed incarnation (validated when put). */
static struct preempt_view_ev member(struct preempt_view *v, bool put, int id, unsigned w)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING, .worker = w };
    uint8_t *m = &v->member[w];

    switch (id) {
    case PREEMPT_KEY_JOINED: /* for the incarnation's life */
    case PREEMPT_KEY_DONE: {
        uint8_t bit = id == PREEMPT_KEY_JOINED ? PREEMPT_VIEW_M_JOINED : PREEMPT_VIEW_M_DONE;

        if (!put || (*m & bit))
            return ev;
        *m |= bit;
        ev.what = id == PREEMPT_KEY_JOINED ? PREEMPT_VIEW_JOINED : PREEMPT_VIEW_DONE;
        return ev;
    }
    default: /* PREEMPT_KEY_ALIVE */
        if (!put)
            return member_end(v, w);
        *m |= PREEMPT_VIEW_M_SEEN;
        if (*m & PREEMPT_VIEW_M_ALIVE)
            return ev;
        ev.what = PREEMPT_VIEW_MEMBER;
        ev.news = (*m & PREEMPT_VIEW_M_ENDED) != 0; /* back: a new lease */
        *m = (uint8_t)((*m | PREEMPT_VIEW_M_ALIVE) & ~PREEMPT_VIEW_M_ENDED);
        return ev;
    }
}

void preempt_view_members_(struct preempt_view *v)
{
    for (unsigned w = 0; w < v->n; w++)
        v->member[w] &= (uint8_t)~PREEMPT_VIEW_M_SEEN;
    v->members_open = true;
}

struct preempt_view_ev preempt_view_members_end_(struct preempt_view *v)
{
    if (!v->members_open)
        return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
    for (unsigned w = 0; w < v->n; w++)
        if ((v->member[w] & (PREEMPT_VIEW_M_ALIVE | PREEMPT_VIEW_M_SEEN)) == PREEMPT_VIEW_M_ALIVE)
            return member_end(v, w);
    for (unsigned w = 0; w < v->n; w++) /* joined, and no member record: gone too */
        if ((v->member[w] & (PREEMPT_VIEW_M_JOINED | PREEMPT_VIEW_M_ALIVE)) == PREEMPT_VIEW_M_JOINED)
            v->member[w] |= PREEMPT_VIEW_M_ENDED;
    v->members_open = false;
    return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
}

void preempt_view_members_sum_(const struct preempt_view *v, struct preempt_view_members *s)
{
    *s = (struct preempt_view_members){ 0 };
    for (unsigned w = 0; w < v->n; w++) {
        s->joined += (v->member[w] & PREEMPT_VIEW_M_JOINED) != 0;
        s->alive += (v->member[w] & PREEMPT_VIEW_M_ALIVE) != 0;
        s->ended += (v->member[w] & PREEMPT_VIEW_M_ENDED) != 0;
        s->done += (v->member[w] & PREEMPT_VIEW_M_DONE) != 0;
    }
}

int preempt_view_worker_of_(const struct preempt_view *v, const char *key, const char *value)
{
    union preempt_rv rec;
    const char *why;
    struct preempt_key k;
    int id = preempt_key_parse_(key, v->jobp, &k);

    if (id < 0 || !preempt_key_has_(id, 'N') || !preempt_key_has_(id, 'w') || k.inc != v->inc ||
        preempt_rv_read_((enum preempt_key_id)id, &k, value, v->n, &rec, &why) < 0)
        return -1;
    return (int)k.worker;
}

/* ---- a record ------------------------------------------------------------------------------------ */

struct preempt_view_ev preempt_view_apply_(struct preempt_view *v, bool put, const char *key, const char *value)
{
    struct preempt_view_ev none = { .what = PREEMPT_VIEW_NOTHING };
    union preempt_rv rec;
    const char *why;
    struct preempt_key k;
    int id = preempt_key_parse_(key, v->jobp, &k);

    if (id < 0 || !preempt_key_has_(id, 'N') || k.inc != v->inc)
        return none;
    if (preempt_key_has_(id, 'p') && k.ep > v->ep)
        return (struct preempt_view_ev){ .what = PREEMPT_VIEW_LATER, .ep = k.ep };
    if (preempt_key_has_(id, 'p') && k.ep < v->ep)
        return none; /* an ended episode's record, landing or cleared late */
    if (id == PREEMPT_KEY_DECISION && !put)
        return none; /* a decision is never deleted within its incarnation */
    /* one schema: a value that does not read as its grammar says is
     * never acted on (nor a record of a worker the job does not have) */
    if (preempt_rv_read_((enum preempt_key_id)id, &k, put ? (value ? value : "") : NULL, v->n, &rec, &why) < 0) {
        struct preempt_view_ev ev = malformed(why);

        if (put && id == PREEMPT_KEY_CLAIM)
            v->claim = true; /* it holds the episode all the same: etcd has it */
        if (put && id == PREEMPT_KEY_ALIVE && k.worker < v->n && (v->member[k.worker] & PREEMPT_VIEW_M_ALIVE)) {
            ev = member_end(v, k.worker); /* a member is one whose member record says so */
            ev.text = why;
        }
        return ev;
    }
    if (id == PREEMPT_KEY_JOINED || id == PREEMPT_KEY_ALIVE || id == PREEMPT_KEY_DONE)
        return member(v, put, id, k.worker);
    if (!preempt_key_has_(id, 'p'))
        return job(v, put, id, &rec);
    return episode(v, put, id, &k, &rec);
}

const char *preempt_view_what_name_(enum preempt_view_what what)
{
    static const char *const names[] = {
        [PREEMPT_VIEW_NOTHING] = "nothing",     [PREEMPT_VIEW_LATER] = "later",
        [PREEMPT_VIEW_MALFORMED] = "malformed", [PREEMPT_VIEW_NOTICE] = "notice",
        [PREEMPT_VIEW_OP_NOTICE] = "op-notice", [PREEMPT_VIEW_OP_GONE] = "op-gone",
        [PREEMPT_VIEW_CLAIM] = "claim",         [PREEMPT_VIEW_CLAIM_GONE] = "claim-gone",
        [PREEMPT_VIEW_FINAL] = "final",         [PREEMPT_VIEW_LOST] = "lost",
        [PREEMPT_VIEW_AGREED] = "agreed",       [PREEMPT_VIEW_COMMITTED] = "committed",
        [PREEMPT_VIEW_ABORTED] = "aborted",     [PREEMPT_VIEW_ERROR] = "error",
        [PREEMPT_VIEW_SHARD] = "shard",         [PREEMPT_VIEW_JOINED] = "joined",
        [PREEMPT_VIEW_MEMBER] = "member",       [PREEMPT_VIEW_MEMBER_END] = "member-end",
        [PREEMPT_VIEW_DONE] = "done",
    };

    return (unsigned)what < sizeof(names) / sizeof(names[0]) && names[what] ? names[what] : "?";
}

struct preempt_view_ev preempt_view_step_(struct preempt_view *v, const struct preempt_view_in *in)
{
    switch (in->kind) {
    case PREEMPT_VIEW_IN_RECORD:
        return preempt_view_apply_(v, in->put, in->key, in->value);
    case PREEMPT_VIEW_IN_EPISODE:
        preempt_view_episode_(v, in->ep);
        break;
    case PREEMPT_VIEW_IN_REREAD:
        preempt_view_reread_(v);
        break;
    case PREEMPT_VIEW_IN_REPORTS:
        preempt_view_reports_(v, in->round, in->step, in->wall);
        break;
    case PREEMPT_VIEW_IN_MEMBERS:
        preempt_view_members_(v);
        break;
    case PREEMPT_VIEW_IN_MEMBERS_END:
        return preempt_view_members_end_(v);
    }
    return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
}

int preempt_view_format_(char *buf, size_t size, const struct preempt_view_ev *ev)
{
    const char *name = preempt_view_what_name_(ev->what);

    switch (ev->what) {
    case PREEMPT_VIEW_LATER:
        return snprintf(buf, size, "%s ep=%" PRIu64, name, ev->ep);
    case PREEMPT_VIEW_NOTICE:
        return snprintf(buf, size, "%s worker=%u wall=%" PRIu64 " news=%d withdrawn=%d", name, ev->worker, ev->wall,
                        ev->news, ev->withdrawn);
    case PREEMPT_VIEW_OP_NOTICE:
        return snprintf(buf, size, "%s wall=%" PRIu64, name, ev->wall);
    case PREEMPT_VIEW_FINAL:
    case PREEMPT_VIEW_LOST:
    case PREEMPT_VIEW_JOINED:
    case PREEMPT_VIEW_DONE:
        return snprintf(buf, size, "%s worker=%u", name, ev->worker);
    case PREEMPT_VIEW_MEMBER:
        return snprintf(buf, size, "%s worker=%u%s", name, ev->worker, ev->news ? " back" : "");
    case PREEMPT_VIEW_MEMBER_END:
        return snprintf(buf, size, "%s worker=%u%s", name, ev->worker, ev->last ? " done" : "");
    case PREEMPT_VIEW_AGREED:
    case PREEMPT_VIEW_COMMITTED:
    case PREEMPT_VIEW_SHARD: {
        char save[32] = "", stop[32] = "", who[48] = "", pace[64] = ""; /* a commit's, when named (older
                                                                            records, and their traces, lack them) */

        if (ev->save_ms || ev->what == PREEMPT_VIEW_SHARD)
            (void)snprintf(save, sizeof(save), " save=%" PRIu64, ev->save_ms);
        if (ev->stop)
            (void)snprintf(stop, sizeof(stop), " stop=%" PRIu64, ev->stop);
        if (ev->pace.ms)
            (void)snprintf(pace, sizeof(pace), " %s=%" PRIu64 " pace=%" PRIu64, /* a report's at is its record's */
                           ev->what == PREEMPT_VIEW_SHARD ? "run" : "from", ev->pace.step, ev->pace.ms);
        if (ev->what == PREEMPT_VIEW_SHARD)
            (void)snprintf(who, sizeof(who), " worker=%u reports=%u", ev->worker, ev->count);
        return snprintf(buf, size, "%s round=%u step=%" PRIu64 "%s%s%s%s%s", name, ev->round, ev->step,
                        ev->last ? " last" : "", save, stop, pace, who);
    }
    case PREEMPT_VIEW_ABORTED:
        return snprintf(buf, size, "%s round=%u step=%" PRIu64, name, ev->round, ev->step);
    case PREEMPT_VIEW_ERROR:
        return snprintf(buf, size, "%s code=%" PRId64 " worker=%u", name, ev->code, ev->worker);
    case PREEMPT_VIEW_NOTHING:
    case PREEMPT_VIEW_MALFORMED:
    case PREEMPT_VIEW_OP_GONE:
    case PREEMPT_VIEW_CLAIM:
    case PREEMPT_VIEW_CLAIM_GONE:
        break;
    }
    return snprintf(buf, size, "%s", name);
}

bool preempt_view_notice_event_(const struct preempt_view_ev *v, struct preempt_event *ev)
{
    if (v->what == PREEMPT_VIEW_OP_NOTICE) {
        *ev = (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice.source = PREEMPT_SOURCE_OPERATOR };
        return true;
    }
    if (v->what != PREEMPT_VIEW_NOTICE || !v->news)
        return false;
    *ev = (struct preempt_event){ .kind = PREEMPT_EV_PEER_NOTICE, .u.peer_notice.worker = v->worker };
    return true;
}

bool preempt_view_event_(const struct preempt_view_ev *v, unsigned me, struct preempt_event *ev)
{
    *ev = (struct preempt_event){ 0 };
    switch (v->what) {
    case PREEMPT_VIEW_AGREED:
        ev->kind = PREEMPT_EV_STEP_AGREED;
        ev->u.step_agreed.step = v->step;
        ev->u.step_agreed.last = v->last;
        return true;
    case PREEMPT_VIEW_COMMITTED:
        ev->kind = PREEMPT_EV_CKPT_COMMITTED;
        ev->u.ckpt_committed.step = v->step;
        ev->u.ckpt_committed.stop = !v->last ? 0 : v->stop > v->step ? v->stop : v->step ? v->step : 1;
        return true;
    case PREEMPT_VIEW_ABORTED:
        ev->kind = PREEMPT_EV_ROUND_ABORTED;
        ev->u.round_aborted.step = v->step;
        return true;
    case PREEMPT_VIEW_FINAL:
        ev->kind = PREEMPT_EV_FINAL_REQUESTED;
        ev->u.final_requested.worker = v->worker;
        return true;
    case PREEMPT_VIEW_LOST:
        ev->kind = PREEMPT_EV_PEER_LOST;
        ev->u.peer_lost.worker = v->worker;
        return true;
    case PREEMPT_VIEW_ERROR:
        if (v->worker == me) /* its own: its machine knows */
            return false;
        ev->kind = PREEMPT_EV_PEER_ERROR;
        ev->u.peer_error.code = v->code;
        ev->u.peer_error.worker = v->worker;
        return true;
    case PREEMPT_VIEW_NOTHING:
    case PREEMPT_VIEW_LATER:
    case PREEMPT_VIEW_MALFORMED:
    case PREEMPT_VIEW_NOTICE:
    case PREEMPT_VIEW_OP_NOTICE:
    case PREEMPT_VIEW_OP_GONE:
    case PREEMPT_VIEW_CLAIM:
    case PREEMPT_VIEW_CLAIM_GONE:
    case PREEMPT_VIEW_SHARD:
    case PREEMPT_VIEW_JOINED:
    case PREEMPT_VIEW_MEMBER:
    case PREEMPT_VIEW_MEMBER_END: /* the coordinator tells its owner (a peer's membership that ended) */
    case PREEMPT_VIEW_DONE:
        break;
    }
    return false;
}
