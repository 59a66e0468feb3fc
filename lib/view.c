/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/view.c: the job's view (view-internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys-internal.h"
#include "platform-internal.h" /* preempt_parse_u64_ */
#include "view-internal.h"

int preempt_view_init_(struct preempt_view *v, const char *jobp, uint64_t inc, unsigned n, unsigned me)
{
    *v = (struct preempt_view){ .inc = inc, .n = n, .me = me };
    (void)snprintf(v->jobp, sizeof(v->jobp), "%s", jobp);
    v->notice_wall = calloc(n ? n : 1, sizeof(*v->notice_wall));
    v->notice_withdrawn = calloc(n ? n : 1, sizeof(*v->notice_withdrawn));
    if (!v->notice_wall || !v->notice_withdrawn) {
        preempt_view_free_(v);
        return -ENOMEM;
    }
    return 0;
}

void preempt_view_free_(struct preempt_view *v)
{
    free(v->notice_wall);
    free(v->notice_withdrawn);
    v->notice_wall = NULL;
    v->notice_withdrawn = NULL;
}

void preempt_view_episode_(struct preempt_view *v, uint64_t ep)
{
    v->ep = ep;
    memset(v->notice_wall, 0, v->n * sizeof(*v->notice_wall));
    memset(v->notice_withdrawn, 0, v->n * sizeof(*v->notice_withdrawn));
    v->claim = v->final = v->lost = false;
    memset(v->r, 0, sizeof(v->r));
}

void preempt_view_incarnation_(struct preempt_view *v, uint64_t inc)
{
    v->inc = inc;
    v->op_wall = 0;
    v->error = false;
    preempt_view_episode_(v, 0);
}

void preempt_view_reread_(struct preempt_view *v)
{
    v->claim = false;
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

/* A notice's "<deadline> <source>[ ...]": from its source on ("" when none). */
static const char *source_of(const char *value)
{
    const char *sp = strchr(value, ' ');

    return sp ? sp + 1 : "";
}

/* A worker's notice record: "<deadline unix ms> <source>[ withdrawn]". */
static struct preempt_view_ev notice(struct preempt_view *v, unsigned w, const char *value)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTICE, .worker = w, .text = source_of(value) };
    uint64_t *wall = &v->notice_wall[w];

    ev.wall = strtoull(value, NULL, 10);
    ev.withdrawn = strstr(value, " withdrawn") != NULL;
    ev.news = !*wall || ev.wall < *wall || (v->notice_withdrawn[w] && !ev.withdrawn);
    if (!*wall || ev.wall < *wall)
        *wall = ev.wall ? ev.wall : 1;
    v->notice_withdrawn[w] = ev.withdrawn;
    return ev;
}

bool preempt_claim_parse_(const char *value, unsigned *worker, const char **notice)
{
    char num[24];
    size_t n = value ? strcspn(value, " ") : 0;
    uint64_t u;

    *notice = NULL;
    if (n == 0 || n >= sizeof(num) || (value[n] && !value[n + 1]))
        return false;
    memcpy(num, value, n);
    num[n] = '\0';
    if (!preempt_parse_u64_(num, &u) || u > UINT32_MAX)
        return false;
    *worker = (unsigned)u;
    *notice = value[n] ? value + n + 1 : NULL;
    return true;
}

/* A round's decision: "committed <step>[ last] save=<ms>" or "aborted <step> <w>". */
static struct preempt_view_ev decision(struct preempt_view *v, unsigned k, const char *value)
{
    struct preempt_view_ev ev = { .round = k };
    char *end;

    if (v->r[k].decided)
        return ev;
    if (!strncmp(value, "committed ", 10)) {
        if (!preempt_committed_parse_(value, &ev.step, &ev.last, &ev.save_ms))
            return malformed("a decision");
        ev.what = PREEMPT_VIEW_COMMITTED;
        v->r[k].decided = true;
        return ev;
    }
    if (strncmp(value, "aborted ", 8) != 0)
        return malformed("a decision");
    ev.what = PREEMPT_VIEW_ABORTED;
    errno = 0;
    ev.step = strtoull(value + 8, &end, 10);
    if (errno || end == value + 8 || (*end != '\0' && *end != ' '))
        return malformed("a decision");
    v->r[k].decided = true;
    return ev;
}

/* The first record of a kind whose value names a worker ("<w>", not
 * skip): seen marks it found. */
static struct preempt_view_ev first_worker(struct preempt_view *v, bool *seen, const char *value, unsigned skip,
                                           enum preempt_view_what what)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING };
    uint64_t u;

    if (*seen || !preempt_parse_u64_(value, &u) || u >= v->n || u == skip)
        return ev;
    *seen = true;
    ev.what = what;
    ev.worker = (unsigned)u;
    return ev;
}

/* A record of the viewed episode. */
static struct preempt_view_ev episode(struct preempt_view *v, bool put, int id, const struct preempt_key *k,
                                      const char *value)
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
        return k->worker < v->n ? notice(v, k->worker, value) : ev;
    case PREEMPT_KEY_CLAIM: {
        const char *carried;
        unsigned w;

        v->claim = true;
        ev.what = PREEMPT_VIEW_CLAIM;
        /* the driver's notice, when it opened the episode with its claim */
        if (preempt_claim_parse_(value, &w, &carried) && carried && w < v->n)
            return notice(v, w, carried);
        return ev;
    }
    case PREEMPT_KEY_FINAL: /* the driver's; this worker's own opened nothing new to it */
        return first_worker(v, &v->final, value, v->me, PREEMPT_VIEW_FINAL);
    case PREEMPT_KEY_LOST:
        return first_worker(v, &v->lost, value, v->n, PREEMPT_VIEW_LOST);
    case PREEMPT_KEY_AGREED:
        if (!preempt_step_value_parse_(value, &u, &last))
            return malformed("a step, and \"last\" or nothing");
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
        return decision(v, k->round, value);
    default:
        return ev;
    }
}

/* A record of the incarnation outside the episodes. */
static struct preempt_view_ev job(struct preempt_view *v, bool put, int id, const char *value)
{
    struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING };
    char *end;

    if (id == PREEMPT_KEY_NOTICE_OP && !put) {
        v->op_wall = 0;
        ev.what = PREEMPT_VIEW_OP_GONE;
    } else if (id == PREEMPT_KEY_NOTICE_OP) {
        ev.wall = strtoull(value, NULL, 10);
        /* again when the operator brings the deadline earlier (found by the
         * simulation: a second injection with an earlier deadline was
         * ignored, and the job outlived it) */
        if (v->op_wall && (!ev.wall || ev.wall >= v->op_wall))
            return (struct preempt_view_ev){ .what = PREEMPT_VIEW_NOTHING };
        v->op_wall = ev.wall ? ev.wall : UINT64_MAX;
        ev.what = PREEMPT_VIEW_OP_NOTICE;
        ev.text = source_of(value);
    } else if (id == PREEMPT_KEY_ERROR && put && !v->error) {
        v->error = true;
        ev.what = PREEMPT_VIEW_ERROR;
        ev.code = strtoll(value, &end, 10);
        ev.worker = (unsigned)strtoul(end, &end, 10);
        ev.text = *end == ' ' ? end + 1 : end;
    }
    return ev;
}

struct preempt_view_ev preempt_view_apply_(struct preempt_view *v, bool put, const char *key, const char *value)
{
    struct preempt_view_ev none = { .what = PREEMPT_VIEW_NOTHING };
    struct preempt_key k;
    int id = preempt_key_parse_(key, v->jobp, &k);

    if (id < 0 || !preempt_key_has_(id, 'N') || k.inc != v->inc)
        return none;
    if (!value)
        value = "";
    if (!preempt_key_has_(id, 'p'))
        return job(v, put, id, value);
    if (k.ep > v->ep)
        return (struct preempt_view_ev){ .what = PREEMPT_VIEW_LATER, .ep = k.ep };
    if (k.ep < v->ep)
        return none; /* an ended episode's record, landing or cleared late */
    if (id == PREEMPT_KEY_DECISION && !put)
        return none; /* a decision is never deleted within its incarnation */
    return episode(v, put, id, &k, value);
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
        return snprintf(buf, size, "%s worker=%u", name, ev->worker);
    case PREEMPT_VIEW_AGREED:
    case PREEMPT_VIEW_COMMITTED: {
        char save[32] = ""; /* a commit's, when named (older records, and their traces, lack it) */

        if (ev->save_ms)
            (void)snprintf(save, sizeof(save), " save=%" PRIu64, ev->save_ms);
        return snprintf(buf, size, "%s round=%u step=%" PRIu64 "%s%s", name, ev->round, ev->step,
                        ev->last ? " last" : "", save);
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
