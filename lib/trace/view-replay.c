/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/view-replay.c: the job's lines in text traces read again (for
 * trace-load.c's loader) and replayed: the view over its records, the
 * declared machines over their inputs, and the machine's events against
 * their causes (trace-internal.h). Part of the replay library
 * (libpreempt-replay.la), not of libpreempt.so. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "job/job.h"
#include "trace-internal.h"

/* ---- reading ------------------------------------------------------------------------- */

/* The next space-separated token of *s: its start, length in *n. */
static const char *token(const char **s, size_t *n)
{
    const char *p = *s + strspn(*s, " \t");

    *n = strcspn(p, " \t");
    *s = p + *n;
    return *n ? p : NULL;
}

/* The next token of *s when it is "name=VALUE": VALUE, its length in *vn;
 * else NULL. */
static const char *named(const char **s, const char *name, size_t *vn)
{
    size_t n, len = strlen(name);
    const char *tok = token(s, &n);

    if (!tok || n < len + 1 || strncmp(tok, name, len) || tok[len] != '=')
        return NULL;
    *vn = n - len - 1;
    return tok + len + 1;
}

static bool u64_named(const char **s, const char *name, uint64_t *ret)
{
    size_t vn = 0;
    const char *v = named(s, name, &vn);

    return v && preempt_trace_u64_(v, vn, ret);
}

static int header(struct preempt_trace_file *t, const char *s, char *err, size_t errsize)
{
    const char *jobp;
    size_t n = 0, vn = 0;
    uint64_t inc, workers, me;

    jobp = named(&s, "job", &vn);
    if (!jobp || vn == 0 || vn >= sizeof(t->view_jobp) || !u64_named(&s, "inc", &inc) ||
        !u64_named(&s, "workers", &workers) || !u64_named(&s, "me", &me) || token(&s, &n) || workers == 0 ||
        workers > PREEMPT_MAX_WORKERS || me > workers) {
        (void)snprintf(err, errsize, "malformed job-view line (job=/preempt/J/ inc=N workers=W me=M)");
        return -EINVAL;
    }
    if (t->have_view) { /* a survivor in place: the same worker of the same job, a later incarnation */
        if (strlen(t->view_jobp) != vn || memcmp(t->view_jobp, jobp, vn) || workers != t->view_n ||
            me != t->view_me || inc <= t->view_seg_inc) {
            (void)snprintf(err, errsize, "a second job-view line that is not the same worker's in a later "
                           "incarnation");
            return -EINVAL;
        }
        t->view_seg_inc = inc;
        return 0;
    }
    memcpy(t->view_jobp, jobp, vn);
    t->view_jobp[vn] = '\0';
    t->view_inc = t->view_seg_inc = inc;
    t->view_n = (unsigned)workers;
    t->view_me = (unsigned)me;
    t->have_view = true;
    return 0;
}

static bool bool_named(const char **s, const char *name, bool *ret)
{
    uint64_t u;

    if (!u64_named(s, name, &u) || u > 1)
        return false;
    *ret = u == 1;
    return true;
}

/* The "=> MEANING" that ends a job or answer line, into j. */
static bool meaning_of(struct preempt_trace_job *j, const char *s)
{
    size_t n = 0;
    const char *tok = token(&s, &n);

    if (!tok || n != 2 || strncmp(tok, "=>", 2))
        return false;
    s += strspn(s, " \t");
    if (!*s || strlen(s) >= sizeof(j->meaning))
        return false;
    (void)snprintf(j->meaning, sizeof(j->meaning), "%s", s);
    return true;
}

/* "status=S" (0 or a negative errno) at *s, into *ret. */
static bool status_named(const char **s, int *ret)
{
    const char *v;
    size_t vn = 0;
    uint64_t u;

    *s += strspn(*s, " \t");
    if (strncmp(*s, "status=-", 8))
        return u64_named(s, "status", &u) && u == 0 && (*ret = 0, true);
    *s += 8;
    if (!(v = token(s, &vn)) || !preempt_trace_u64_(v, vn, &u) || u == 0 || u > 4095)
        return false;
    *ret = -(int)u;
    return true;
}

/* The fields of a read of the memberships (after "members"), into j:
 * absent is kept as ranges of the view's workers, "cut" as none read. */
static bool members_fields(struct preempt_trace_job *j, const char *s, unsigned n)
{
    const char *v;
    size_t vn = 0;
    uint8_t *absent;

    j->kind = PREEMPT_TRACE_JOB_MEMBERS;
    if (!status_named(&s, &j->read.status) || !bool_named(&s, "complete", &j->read.complete) ||
        !bool_named(&s, "known", &j->read.known) || !(v = named(&s, "absent", &vn)))
        return false;
    if (!(absent = calloc((n + 7) / 8, 1)))
        return false;
    j->read.absent = absent;
    j->cut = vn == 3 && !strncmp(v, "cut", 3);
    if (!j->cut && !preempt_lost_absent_parse_(v, vn, absent, n))
        return false;
    return u64_named(&s, "grace", &j->read.grace_ms) && meaning_of(j, s);
}

/* An "answer" line's fields (after "answer "), into j. */
static int answer_line(struct preempt_trace_job *j, const char *s, unsigned n, char *err, size_t errsize)
{
    const char *kind, *v;
    size_t kn = 0, vn = 0;

    if (!u64_named(&s, "t", &j->t_ms) || !(kind = token(&s, &kn)))
        goto bad;
    if (kn == 7 && !strncmp(kind, "members", 7)) {
        if (!members_fields(j, s, n))
            goto bad;
        j->read.now_ms = j->t_ms;
        return 0;
    }
    if (kn == 5 && !strncmp(kind, "grant", 5)) {
        j->kind = PREEMPT_TRACE_JOB_GRANT;
        if (!status_named(&s, &j->ans.status) || !u64_named(&s, "ttl", &j->ttl_s) || !meaning_of(j, s))
            goto bad;
        return 0;
    }
    if (kn == 4 && !strncmp(kind, "keep", 4)) {
        j->kind = PREEMPT_TRACE_JOB_KEEP;
        if (!status_named(&s, &j->ans.status) || !u64_named(&s, "ttl", &j->ttl_s) || !meaning_of(j, s))
            goto bad;
        return 0;
    }
    if (kn == 7 && !strncmp(kind, "records", 7)) {
        j->kind = PREEMPT_TRACE_JOB_RECORDS;
        if (!status_named(&s, &j->ans.status) || !meaning_of(j, s))
            goto bad;
        return 0;
    }
    if (kn == 3 && !strncmp(kind, "put", 3)) {
        j->kind = PREEMPT_TRACE_JOB_PUT;
        if (!status_named(&s, &j->ans.status) || !meaning_of(j, s))
            goto bad;
        return 0;
    }
    if (kn == 5 && !strncmp(kind, "write", 5)) {
        j->kind = PREEMPT_TRACE_JOB_WRITE;
        if (!status_named(&s, &j->ans.status) || j->ans.status == 0 || !meaning_of(j, s))
            goto bad;
        return 0;
    }
    j->kind = PREEMPT_TRACE_JOB_CLAIM;
    if (kn != 5 || strncmp(kind, "claim", 5) || !status_named(&s, &j->ans.status))
        goto bad;
    if (!bool_named(&s, "succeeded", &j->ans.succeeded) || !bool_named(&s, "read", &j->ans.read) ||
        !(v = named(&s, "held", &vn)) || !(j->ans.held = preempt_trace_decode_(v, vn)) ||
        !bool_named(&s, "left", &j->ans.left) || !meaning_of(j, s))
        goto bad;
    return 0;
bad:
    (void)snprintf(err, errsize, "malformed answer line (answer t=MS claim status=S succeeded=B read=B held=VALUE "
                                 "left=B => SAYS, answer t=MS members status=S complete=B known=B absent=LIST "
                                 "grace=MS => SAYS, answer t=MS write status=S => failed, answer t=MS grant "
                                 "status=S ttl=T => SAYS, answer t=MS keep status=S ttl=T => SAYS, answer t=MS "
                                 "put status=S => SAYS, or answer t=MS records status=S => SAYS)");
    return -EINVAL;
}

static int job_line(struct preempt_trace_job *j, const char *s, char *err, size_t errsize)
{
    const char *v, *kind;
    size_t vn = 0, kn = 0;

    if (!u64_named(&s, "t", &j->t_ms) || !(kind = token(&s, &kn)))
        goto bad;
    if (kn == 3 && (!strncmp(kind, "put", 3) || !strncmp(kind, "del", 3))) {
        j->in.kind = PREEMPT_VIEW_IN_RECORD;
        j->in.put = kind[0] == 'p';
        if (!(v = named(&s, "k", &vn)) || !(j->in.key = preempt_trace_decode_(v, vn)))
            goto bad;
        if (j->in.put && (!(v = named(&s, "v", &vn)) || !(j->in.value = preempt_trace_decode_(v, vn))))
            goto bad;
    } else if (kn == 7 && !strncmp(kind, "episode", 7)) {
        j->in.kind = PREEMPT_VIEW_IN_EPISODE;
        if (!u64_named(&s, "ep", &j->in.ep))
            goto bad;
    } else if (kn == 6 && !strncmp(kind, "reread", 6)) {
        j->in.kind = PREEMPT_VIEW_IN_REREAD;
    } else if (kn == 7 && !strncmp(kind, "members", 7)) {
        j->in.kind = PREEMPT_VIEW_IN_MEMBERS;
    } else if (kn == 11 && !strncmp(kind, "members-end", 11)) {
        j->in.kind = PREEMPT_VIEW_IN_MEMBERS_END;
    } else if (kn == 7 && !strncmp(kind, "reports", 7)) {
        uint64_t round;

        j->in.kind = PREEMPT_VIEW_IN_REPORTS;
        if (!u64_named(&s, "round", &round) || round > 1 || !u64_named(&s, "step", &j->in.step))
            goto bad;
        j->in.round = (unsigned)round;
        if (strncmp(s + strspn(s, " "), "wall=", 5) == 0 && !u64_named(&s, "wall", &j->in.wall))
            goto bad; /* older traces lack it */
    } else {
        goto bad;
    }
    if (!meaning_of(j, s))
        goto bad;
    return 0;
bad:
    (void)snprintf(err, errsize,
                   "malformed job line (job t=MS put k=KEY v=VALUE|del k=KEY|episode ep=P|reread|"
                   "reports round=K step=S|members|members-end => MEANING)");
    return -EINVAL;
}

/* ---- the declared machines' lines ---------------------------------------------------- */

/* Copies the n bytes at p into buf (of size) as a string; false when they do not fit or n is 0. */
static bool field(char *buf, size_t size, const char *p, size_t n)
{
    if (n == 0 || n >= size)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return true;
}

/* A "decl" line's fields (after "decl "), into d: t=MS m=MACHINE[#I] FROM
 * --INPUT--> TO (ACTION) (names may hold '-'; none holds a space or '#'). */
static int decl_line(struct preempt_trace_decl *d, const char *s, char *err, size_t errsize)
{
    char t[32], m[64], from[64], in[64], to[64], act[64], *hash;
    const char *p, *q, *r, *e;
    int idx[4];
    uint64_t inst = 0;

    if (sscanf(s, "t=%31s m=%63s", t, m) != 2 || !preempt_parse_u64_(t, &d->t_ms) ||
        !(p = strstr(s, " m=")) || !(p = strchr(p + 3, ' ')) || !(q = strstr(p + 1, " --")) ||
        !(r = strstr(q + 3, "--> ")) || !(e = strstr(r + 4, " (")) || e[strlen(e) - 1] != ')' ||
        !field(from, sizeof(from), p + 1, (size_t)(q - p - 1)) || !field(in, sizeof(in), q + 3, (size_t)(r - q - 3)) ||
        !field(to, sizeof(to), r + 4, (size_t)(e - r - 4)) || !field(act, sizeof(act), e + 2, strlen(e + 2) - 1)) {
        (void)snprintf(err, errsize, "a decl line is not \"decl t=MS m=MACHINE[#I] FROM --INPUT--> TO (ACTION)\"");
        return -EINVAL;
    }
    if ((hash = strchr(m, '#')) != NULL) { /* an instance of a machine a worker has several of */
        *hash = '\0';
        if (!preempt_parse_u64_(hash + 1, &inst) || inst == 0 || inst > 1000000) {
            (void)snprintf(err, errsize, "a decl line of %s names instance '%.20s', not 1-1000000", m, hash + 1);
            return -EINVAL;
        }
    }
    d->instance = (unsigned)inst;
    if (!(d->m = preempt_decl_find_(m))) {
        (void)snprintf(err, errsize, "a decl line names machine '%.60s', which this build does not have", m);
        return -EINVAL;
    }
    idx[0] = preempt_decl_state_index_(d->m, from);
    idx[1] = preempt_decl_input_index_(d->m, in);
    idx[2] = preempt_decl_state_index_(d->m, to);
    idx[3] = preempt_decl_action_index_(d->m, act);
    if (idx[0] < 0 || idx[1] < 0 || idx[2] < 0 || idx[3] < 0) {
        (void)snprintf(err, errsize, "a decl line of %s names %s this build's machine does not have", d->m->name,
                       idx[0] < 0 || idx[2] < 0 ? "a state" : idx[1] < 0 ? "an input" : "an action");
        return -EINVAL;
    }
    d->from = (unsigned)idx[0];
    d->input = (unsigned)idx[1];
    d->to = (unsigned)idx[2];
    d->action = (unsigned)idx[3];
    return 0;
}

static int push_decl(struct preempt_trace_file *t, const struct preempt_trace_decl *d, char *err, size_t errsize)
{
    if (t->n_decls == t->cap_decls) {
        size_t c = t->cap_decls ? 2 * t->cap_decls : 64;
        struct preempt_trace_decl *more = realloc(t->decls, c * sizeof(*more));

        if (!more) {
            (void)snprintf(err, errsize, "out of memory");
            return -ENOMEM;
        }
        t->decls = more;
        t->cap_decls = c;
    }
    t->decls[t->n_decls++] = *d;
    return 1;
}

/* The count of reports a "shard" meaning says ("... reports=C"), or 0. */
static unsigned reports_of(const char *meaning)
{
    const char *p = strstr(meaning, " reports=");
    uint64_t u = 0;

    return !strncmp(meaning, "shard ", 6) && p && preempt_trace_u64_(p + 9, strlen(p + 9), &u) ? (unsigned)u : 0;
}

/* What a keep-alive's answer line says, read again (lease-internal.h). */
static enum preempt_keep_says keep_says(const struct preempt_trace_job *j)
{
    return preempt_keep_answer_(j->ans.status, j->ttl_s > INT64_MAX ? INT64_MAX : (int64_t)j->ttl_s);
}

/* What the job line just before a declared machine's input must be, when
 * a record read causes that input (the coordinator steps the machine right
 * after the view reads it): an episode's end (every machine's
 * next-episode: the view moved to the next episode), a notice record (the
 * episode machine's seen), or the last of every worker's shard report in a
 * read of the round's reports (the decision machine's all-reported), an
 * answer that says so (the claim machine's answers; the notice record
 * machine's, of its put or of the claim; the claim and membership
 * machines' of a lease's grant). NULL: no record causes it. */
static const char *decl_cause(const struct preempt_trace_file *t, const struct preempt_trace_decl *d,
                              const struct preempt_trace_job *before)
{
    const char *in = preempt_decl_input_(d->m, d->input);

    if (!t->have_view)
        return NULL; /* a trace without the job's lines (the simulator's, an older library's) */
    if (!strcmp(in, "next-episode"))
        return before && before->in.kind == PREEMPT_VIEW_IN_EPISODE ? NULL : "the view's next episode";
    if (!strcmp(d->m->name, "episode") && !strcmp(in, "seen"))
        return before && !strncmp(before->meaning, "notice ", 7) ? NULL : "a notice record";
    if (!strcmp(d->m->name, "decision") && !strcmp(in, "all-reported"))
        return before && reports_of(before->meaning) == t->view_n ? NULL : "every worker's shard report";
    if (d->m == &preempt_pub_decl_ && (!strcmp(in, "put-ok") || !strcmp(in, "put-failed")))
        return before && before->kind == PREEMPT_TRACE_JOB_PUT &&
                       preempt_pub_of_put_(before->ans.status) == (enum preempt_pub_input)d->input
                   ? NULL
                   : "an answer to the notice's put that says so";
    if (d->m == &preempt_pub_decl_ && (!strcmp(in, "claim-won") || !strcmp(in, "claim-lost") ||
                                       !strcmp(in, "claim-failed")))
        return before && before->kind == PREEMPT_TRACE_JOB_CLAIM &&
                       preempt_pub_of_claim_(&before->ans) == (enum preempt_pub_input)d->input
                   ? NULL
                   : "an answer to the claim that says so";
    if ((!strcmp(d->m->name, "claim") || !strcmp(d->m->name, "membership") || d->m == &preempt_lease_decl_) &&
        (!strcmp(in, "granted") || !strcmp(in, "grant-failed")))
        return before && before->kind == PREEMPT_TRACE_JOB_GRANT &&
                       !strncmp(before->meaning, strcmp(in, "granted") ? "failed" : "granted", 6)
                   ? NULL
                   : "a lease's grant that says so";
    if (d->m == &preempt_watch_decl_ && (!strcmp(in, "read") || !strcmp(in, "read-failed")))
        return before && before->kind == PREEMPT_TRACE_JOB_RECORDS &&
                       preempt_watch_of_read_(before->ans.status) == (enum preempt_watch_input)d->input
                   ? NULL
                   : "an answer of a read of the records that says so";
    if (d->m == &preempt_lease_decl_ && !strcmp(in, "expired"))
        return before && before->kind == PREEMPT_TRACE_JOB_KEEP && keep_says(before) == PREEMPT_KEEP_EXPIRED
                   ? NULL
                   : "a keep-alive's answer that says the lease expired";
    if (!strcmp(d->m->name, "claim") && (!strcmp(in, "won") || !strcmp(in, "lost") || !strcmp(in, "failed") ||
                                         !strcmp(in, "stale-lease") || !strcmp(in, "unreadable")))
        return before && before->kind == PREEMPT_TRACE_JOB_CLAIM && !strncmp(before->meaning, in, strlen(in)) &&
                       (before->meaning[strlen(in)] == '\0' || before->meaning[strlen(in)] == ' ')
                   ? NULL
                   : "an answer to the claim that says so";
    return NULL;
}

/* Every machine's instance starts in its first state (0), and each of its
 * lines must start where its last one ended: the machines a worker has
 * one of (its start-up's, its coordinator's: unnamed lines), and the named
 * instances of those it has several of (decl-internal.h: a round's
 * decision, a start-up phase's machines). Traces written before instances
 * were named: their two rounds' decision machines are held as a pair (a
 * line must start where one of them is), their joins' machines (a phase's
 * end, an offer, a shape, an await) are stepped line by line only. */
static const struct preempt_decl *const continuous[] = {
    &preempt_pub_decl_, &preempt_claim_decl_, &preempt_mship_decl_, &preempt_lease_decl_,
    &preempt_ep_decl_,  &preempt_watch_decl_, &preempt_roll_decl_, &preempt_rst_decl_,
};
#define N_CONTINUOUS (sizeof(continuous) / sizeof(continuous[0]))
#define MAX_INSTANCES 64 /* machine instances held (a start-up names up to six per attempt; more: line by line) */

struct held_machine {
    const struct preempt_decl *m;
    unsigned instance, now, last_line;
};

/* The state a line's machine instance is held in (NULL: not held). */
static struct held_machine *held_machine(struct held_machine *h, size_t *n, const struct preempt_trace_decl *d)
{
    bool one = false;

    for (size_t m = 0; m < N_CONTINUOUS && !d->instance; m++)
        one = one || continuous[m] == d->m;
    if (!one && !d->instance)
        return NULL;
    for (size_t k = 0; k < *n; k++)
        if (h[k].m == d->m && h[k].instance == d->instance)
            return &h[k];
    if (*n == MAX_INSTANCES)
        return NULL;
    h[*n] = (struct held_machine){ .m = d->m, .instance = d->instance };
    return &h[(*n)++];
}

/* The running coordinator's machines: a later coordinator of the same
 * worker (a survivor in place, from its "coord start" line) starts them
 * afresh. Start-up's are numbered on across start-ups. */
static bool coordinators(const struct preempt_decl *m)
{
    static const struct preempt_decl *const ms[] = {
        &preempt_pub_decl_, &preempt_claim_decl_, &preempt_mship_decl_, &preempt_lease_decl_,
        &preempt_ep_decl_,  &preempt_watch_decl_, &preempt_roll_decl_, &preempt_dec_decl_,
    };

    for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++)
        if (ms[k] == m)
            return true;
    return false;
}

/* The line of the next coordinator's start after line (0: none). */
static unsigned next_coord_start(const struct preempt_trace_file *t, unsigned line)
{
    for (size_t k = 0; k < t->n_coord; k++)
        if (t->coord[k].line > line && !strncmp(t->coord[k].s, "coord start", 11))
            return t->coord[k].line;
    return 0;
}

int preempt_trace_replay_decls_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize)
{
    size_t j = 0, n_held = 0;
    struct held_machine held[MAX_INSTANCES];
    unsigned rounds_in[PREEMPT_DEC__COUNT] = { 2 }; /* how many of the two decision machines are in each state */
    unsigned first = next_coord_start(t, 0), next = first ? next_coord_start(t, first) : 0;

    *ret_n = 0;
    for (size_t i = 0; i < t->n_decls; i++) {
        const struct preempt_trace_decl *d = &t->decls[i];
        struct held_machine *h;

        for (; next && d->line > next; next = next_coord_start(t, next)) { /* a later coordinator's start */
            size_t kept = 0;

            for (size_t k = 0; k < n_held; k++)
                if (!coordinators(held[k].m))
                    held[kept++] = held[k];
            n_held = kept;
            memset(rounds_in, 0, sizeof(rounds_in));
            rounds_in[0] = 2;
        }
        h = held_machine(held, &n_held, d);
        const struct preempt_trace_job *before;
        const char *want;
        unsigned st = d->from, a;
        bool listed;

        if (h) {
            if (d->from != h->now) { /* a transition left out, or a state changed untraced */
                char inst[16] = "";

                if (d->instance)
                    (void)snprintf(inst, sizeof(inst), "#%u", d->instance);
                (void)snprintf(err, errsize,
                               "decl line %u (line %u) diverges: %s%s starts from %s, but its machine is in %s (%s)",
                               (unsigned)i + 1, d->line, d->m->name, inst, preempt_decl_state_(d->m, d->from),
                               preempt_decl_state_(d->m, h->now),
                               h->last_line ? "after its transition before" : "its first state");
                return 1;
            }
            h->now = d->to;
            h->last_line = d->line;
        }
        if (d->m == &preempt_dec_decl_ && !d->instance) {
            if (d->from >= PREEMPT_DEC__COUNT || d->to >= PREEMPT_DEC__COUNT || !rounds_in[d->from]) {
                (void)snprintf(err, errsize,
                               "decl line %u (line %u) diverges: decision starts from %s, but neither round's machine "
                               "is there",
                               (unsigned)i + 1, d->line, preempt_decl_state_(d->m, d->from));
                return 1;
            }
            rounds_in[d->from]--;
            rounds_in[d->to]++;
        }

        a = preempt_decl_step_(d->m, &st, d->input, &listed);
        if (!listed || st != d->to || a != d->action) {
            (void)snprintf(err, errsize,
                           "decl line %u (line %u) diverges: %s in %s\n  expected: %s (%s)\n  actual:   %s (%s)",
                           (unsigned)i + 1, d->line, d->m->name, preempt_decl_state_(d->m, d->from),
                           preempt_decl_state_(d->m, d->to), preempt_decl_action_(d->m, d->action),
                           listed ? preempt_decl_state_(d->m, st) : "no row: ignored",
                           preempt_decl_action_(d->m, a));
            return 1;
        }
        while (j < t->n_jobs && t->jobs[j].line < d->line)
            j++;
        before = NULL;
        for (size_t b = j; b > 0 && !before; b--) /* a failed write tells a declared machine nothing */
            before = t->jobs[b - 1].kind == PREEMPT_TRACE_JOB_WRITE ? NULL : &t->jobs[b - 1];
        if ((want = decl_cause(t, d, before)) != NULL) {
            (void)snprintf(err, errsize,
                           "decl line %u (line %u) has no cause: %s %s --%s--> needs %s read just before it, "
                           "and the job line before it %s%s",
                           (unsigned)i + 1, d->line, d->m->name, preempt_decl_state_(d->m, d->from),
                           preempt_decl_input_(d->m, d->input), want, before ? "says " : "is none",
                           before ? before->meaning : "");
            return 1;
        }
        (*ret_n)++;
    }
    return 0;
}

static void job_free(struct preempt_trace_job *j)
{
    free((char *)j->in.key);
    free((char *)j->in.value);
    free((char *)j->ans.held);
    free((uint8_t *)j->read.absent);
}

int preempt_trace_view_line_(struct preempt_trace_file *t, const char *line, unsigned lineno, size_t *cap, char *err,
                             size_t errsize)
{
    const char *s = line + strspn(line, " \t");
    struct preempt_trace_job j = { .line = lineno, .view_inc = t->view_seg_inc };
    int r;

    if (!strncmp(s, "decl ", 5)) {
        struct preempt_trace_decl d = { .line = lineno };

        return (r = decl_line(&d, s + 5, err, errsize)) < 0 ? r : push_decl(t, &d, err, errsize);
    }
    if (!strncmp(s, "job-view ", 9))
        return header(t, s + 9, err, errsize) < 0 ? -EINVAL : 1;
    if (strncmp(s, "job ", 4) && strncmp(s, "answer ", 7))
        return 0;
    if (!t->have_view) {
        (void)snprintf(err, errsize, "a %s line before the job-view line", s[0] == 'j' ? "job" : "answer");
        return -EINVAL;
    }
    if ((r = s[0] == 'j' ? job_line(&j, s + 4, err, errsize) : answer_line(&j, s + 7, t->view_n, err, errsize)) < 0) {
        job_free(&j);
        return r;
    }
    if (t->n_jobs == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        struct preempt_trace_job *more = realloc(t->jobs, c * sizeof(*more));

        if (!more) {
            job_free(&j);
            (void)snprintf(err, errsize, "out of memory");
            return -ENOMEM;
        }
        t->jobs = more;
        *cap = c;
    }
    t->jobs[t->n_jobs++] = j;
    return 1;
}

void preempt_trace_jobs_free_(struct preempt_trace_file *t)
{
    for (size_t i = 0; i < t->n_jobs; i++)
        job_free(&t->jobs[i]);
    free(t->jobs);
    t->jobs = NULL;
    t->n_jobs = 0;
    t->have_view = false;
    free(t->decls);
    t->decls = NULL;
    t->n_decls = t->cap_decls = 0;
}

/* ---- replaying ----------------------------------------------------------------------- */

/* One truth per decision: a commit of a round at a step whose every
 * report the view counted must say what they say (the slowest save, "last"
 * when any said it, the highest stop step they name past the step, the
 * slowest pace; not the lowest step a worker is at, which counts the steps
 * since the reports up to the time each reader read them), since
 * every worker that proposes it proposes exactly that. NULL: it does, or
 * the reports of its step were not all read here; else what differs. */
static const char *commit_differs(const struct preempt_view *v, const struct preempt_view_ev *ev)
{
    const struct preempt_view_reports *t;

    if (ev->what != PREEMPT_VIEW_COMMITTED || ev->round > 1)
        return NULL;
    t = &v->r[ev->round].reports;
    if (!t->open || t->step != ev->step || t->count < v->n)
        return NULL;
    if (ev->save_ms != t->slowest)
        return "the slowest save";
    if (ev->last != t->last)
        return "last";
    if (ev->pace.ms != preempt_view_reports_pace_(t).ms)
        return "the slowest pace";
    return ev->stop != (t->last && t->stop > ev->step ? t->stop : 0) ? "the stop step" : NULL;
}

/* The view of a later incarnation (a survivor in place), from its start. */
static int next_view(const struct preempt_trace_file *t, struct preempt_view *v, uint64_t inc, char *err,
                     size_t errsize)
{
    preempt_view_free_(v);
    if (preempt_view_init_(v, t->view_jobp, inc, t->view_n, t->view_me) < 0) {
        (void)snprintf(err, errsize, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

int preempt_trace_replay_view_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize)
{
    struct preempt_view v;
    struct preempt_lost lost = { .n = t->view_n, .me = t->view_me };
    bool cut = false; /* a read of the memberships did not fit its line: the later ones are not compared */
    int rc = 0;

    *ret_n = 0;
    if (!t->have_view)
        return 0;
    lost.gone_at = calloc(t->view_n, sizeof(*lost.gone_at));
    if (!lost.gone_at || preempt_view_init_(&v, t->view_jobp, t->view_inc, t->view_n, t->view_me) < 0) {
        free(lost.gone_at);
        (void)snprintf(err, errsize, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n_jobs; i++) {
        const struct preempt_trace_job *j = &t->jobs[i];
        struct preempt_view_ev ev = { .what = PREEMPT_VIEW_NOTHING };
        char got[PREEMPT_VIEW_MEANING_MAX];
        const char *why;

        if (j->view_inc != v.inc) {
            if ((rc = next_view(t, &v, j->view_inc, err, errsize)) != 0)
                break;
            preempt_lost_forget_(&lost); /* the new incarnation's coordinator misses nobody yet */
        }

        switch (j->kind) {
        case PREEMPT_TRACE_JOB_MEMBERS: { /* a read of the memberships: what it says, with the reads before it */
            struct preempt_lost_says says;

            if ((cut = cut || j->cut))
                continue;
            if (j->read.known != v.lost) { /* what the view read says of the lost record */
                (void)snprintf(err, errsize,
                               "job line %u (line %u) diverges: the read says known=%d, and the records read "
                               "before it hold %s lost record",
                               (unsigned)i + 1, j->line, j->read.known, v.lost ? "a" : "no");
                rc = 1;
                break;
            }
            says = preempt_lost_read_(&lost, &j->read);
            (void)preempt_lost_says_format_(got, sizeof(got), &says);
            break;
        }
        case PREEMPT_TRACE_JOB_PUT: /* a notice put's answer: what it tells the notice record's machine */
            (void)snprintf(got, sizeof(got), "%s", preempt_trace_put_says_(j->ans.status));
            break;
        case PREEMPT_TRACE_JOB_GRANT: /* a lease's grant: what it says */
            (void)preempt_trace_grant_says_(got, sizeof(got), j->ans.status, j->ttl_s);
            break;
        case PREEMPT_TRACE_JOB_KEEP: /* a keep-alive: what it says */
            (void)snprintf(got, sizeof(got), "%s", preempt_keep_says_name_(keep_says(j)));
            break;
        case PREEMPT_TRACE_JOB_RECORDS: /* a read of the records: what it tells the watch's machine */
            (void)snprintf(got, sizeof(got), "%s", preempt_trace_records_says_(j->ans.status));
            break;
        case PREEMPT_TRACE_JOB_WRITE: /* a failed write: what it tells the machine */
            (void)snprintf(got, sizeof(got), "failed");
            break;
        case PREEMPT_TRACE_JOB_CLAIM: { /* an answer: what it says, read again */
            struct preempt_claim_says says = preempt_claim_answer_(&j->ans, t->view_me);

            (void)preempt_claim_says_format_(got, sizeof(got), &says);
            break;
        }
        case PREEMPT_TRACE_JOB_VIEW:
            ev = preempt_view_step_(&v, &j->in);
            (void)preempt_view_format_(got, sizeof(got), &ev);
            break;
        }
        if (rc)
            break;
        if (strcmp(got, j->meaning)) {
            (void)snprintf(err, errsize, "job line %u (line %u) diverges\n  expected: %s\n  actual:   %s",
                           (unsigned)i + 1,
                           j->line, j->meaning, got);
            rc = 1;
            break;
        }
        if ((why = commit_differs(&v, &ev)) != NULL) {
            (void)snprintf(err, errsize,
                           "job line %u (line %u): the round's decision is not what every worker's reports, "
                           "read before it, make of it (%s)\n  %s",
                           (unsigned)i + 1, j->line, why, j->meaning);
            rc = 1;
            break;
        }
        (*ret_n)++;
    }
    preempt_view_free_(&v);
    free(lost.gone_at);
    return rc;
}

/* The event an answer to the claim tells the machine (the coordinator's
 * mapping): claim-won, or claim-lost to its holder; false for the rest. */
static bool claim_event(const struct preempt_trace_job *j, unsigned me, struct preempt_event *ev)
{
    struct preempt_claim_says says = preempt_claim_answer_(&j->ans, me);

    *ev = (struct preempt_event){ .kind = PREEMPT_EV_CLAIM_WON };
    if (says.input == PREEMPT_CLAIM_IN_LOST) {
        ev->kind = PREEMPT_EV_CLAIM_LOST;
        ev->u.claim_lost.worker = says.holder;
    }
    return says.input == PREEMPT_CLAIM_IN_WON || says.input == PREEMPT_CLAIM_IN_LOST;
}

/* The events only the job's records, the answers to the claim and failed
 * writes tell a machine in a job (an operator's notice among the notices). */
static bool caused_by_records(const struct preempt_event *e)
{
    enum preempt_event_kind k = e->kind;

    return k == PREEMPT_EV_CLAIM_WON || k == PREEMPT_EV_CLAIM_LOST || k == PREEMPT_EV_STEP_AGREED ||
           k == PREEMPT_EV_CKPT_COMMITTED || k == PREEMPT_EV_ROUND_ABORTED ||
           k == PREEMPT_EV_FINAL_REQUESTED || k == PREEMPT_EV_PEER_LOST || k == PREEMPT_EV_PEER_ERROR ||
           k == PREEMPT_EV_PEER_NOTICE || k == PREEMPT_EV_COORD_FAILED ||
           (k == PREEMPT_EV_NOTICE && e->u.notice.source == PREEMPT_SOURCE_OPERATOR);
}

static bool same_event(const struct preempt_event *a, const struct preempt_event *b)
{
    const union preempt_event_payload *x = &a->u, *y = &b->u;

    if (a->kind != b->kind)
        return false;
    if (a->kind == PREEMPT_EV_STEP_AGREED)
        return x->step_agreed.step == y->step_agreed.step && x->step_agreed.last == y->step_agreed.last;
    if (a->kind == PREEMPT_EV_CKPT_COMMITTED)
        return x->ckpt_committed.step == y->ckpt_committed.step && x->ckpt_committed.stop == y->ckpt_committed.stop;
    if (a->kind == PREEMPT_EV_ROUND_ABORTED)
        return x->round_aborted.step == y->round_aborted.step;
    if (a->kind == PREEMPT_EV_FINAL_REQUESTED)
        return x->final_requested.worker == y->final_requested.worker;
    if (a->kind == PREEMPT_EV_PEER_LOST)
        return x->peer_lost.worker == y->peer_lost.worker;
    if (a->kind == PREEMPT_EV_CLAIM_LOST)
        return x->claim_lost.worker == y->claim_lost.worker;
    if (a->kind == PREEMPT_EV_CLAIM_WON)
        return true;
    if (a->kind == PREEMPT_EV_COORD_FAILED)
        return x->coord_failed.err == y->coord_failed.err;
    if (a->kind == PREEMPT_EV_PEER_NOTICE) /* the deadline is the machine's clock: not in the records */
        return x->peer_notice.worker == y->peer_notice.worker;
    if (a->kind == PREEMPT_EV_NOTICE) /* the operator's: its deadline is the machine's clock too */
        return x->notice.source == y->notice.source;
    return a->kind == PREEMPT_EV_PEER_ERROR && x->peer_error.code == y->peer_error.code &&
           x->peer_error.worker == y->peer_error.worker;
}

int preempt_trace_replay_causes_(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize)
{
    struct preempt_view v;
    struct preempt_event *told;
    size_t n_told = 0, j = 0;
    int rc = 0;

    *ret_n = 0;
    if (!t->have_view || !t->lines)
        return 0;
    told = malloc((t->n_jobs ? t->n_jobs : 1) * sizeof(*told));
    if (!told || preempt_view_init_(&v, t->view_jobp, t->view_inc, t->view_n, t->view_me) < 0) {
        free(told);
        (void)snprintf(err, errsize, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const struct preempt_event *e = &t->recs[i].ev;
        bool found = false;

        for (; j < t->n_jobs && t->jobs[j].line < t->lines[i] && rc == 0; j++) {
            struct preempt_view_ev ev;

            if (t->jobs[j].view_inc != v.inc && (rc = next_view(t, &v, t->jobs[j].view_inc, err, errsize)) != 0)
                break;
            switch (t->jobs[j].kind) {
            case PREEMPT_TRACE_JOB_CLAIM:
                n_told += claim_event(&t->jobs[j], t->view_me, &told[n_told]);
                break;
            case PREEMPT_TRACE_JOB_MEMBERS: /* they tell the machine nothing */
            case PREEMPT_TRACE_JOB_GRANT:
            case PREEMPT_TRACE_JOB_KEEP:
            case PREEMPT_TRACE_JOB_PUT:
            case PREEMPT_TRACE_JOB_RECORDS:
                break;
            case PREEMPT_TRACE_JOB_WRITE:
                told[n_told++] = (struct preempt_event){ .kind = PREEMPT_EV_COORD_FAILED,
                                                         .u.coord_failed.err = t->jobs[j].ans.status };
                break;
            case PREEMPT_TRACE_JOB_VIEW:
                ev = preempt_view_step_(&v, &t->jobs[j].in);
                n_told += preempt_view_event_(&ev, t->view_me, &told[n_told]) ||
                          preempt_view_notice_event_(&ev, &told[n_told]);
                break;
            }
        }
        if (!caused_by_records(e))
            continue;
        for (size_t k = n_told; k-- > 0 && !found;)
            found = same_event(&told[k], e);
        if (!found) {
            char line[512];

            (void)preempt_trace_format_(line, sizeof(line), &t->recs[i], NULL);
            (void)snprintf(err, errsize,
                           "record %zu (line %u) has no cause: no record the job's view read, nor answer, before it "
                           "tells %s "
                           "with these parameters\n  %s",
                           i + 1, t->lines[i], preempt_event_to_string_(e->kind), line);
            rc = 1;
            break;
        }
        (*ret_n)++;
    }
    preempt_view_free_(&v);
    free(told);
    return rc;
}
