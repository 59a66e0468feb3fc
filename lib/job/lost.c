/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/lost.c: who is lost, the driver's decision (lost-internal.h). Pure. */
#include <stdio.h>
#include <string.h>

#include "lost-internal.h"

void preempt_lost_forget_(struct preempt_lost *l)
{
    memset(l->gone_at, 0, l->n * sizeof(*l->gone_at));
}

struct preempt_lost_says preempt_lost_read_(struct preempt_lost *l, const struct preempt_lost_read *r)
{
    struct preempt_lost_says s = { .kind = PREEMPT_LOST_NOTHING };

    if (r->status < 0 || !r->complete) {
        s.kind = r->status < 0 ? PREEMPT_LOST_FAILED : PREEMPT_LOST_UNREADABLE;
        return s;
    }
    for (unsigned w = 0; w < l->n; w++) {
        if (w == l->me || !PREEMPT_LOST_BIT(r->absent, w)) {
            if (l->gone_at[w]) {
                l->gone_at[w] = 0;
                s.back++;
            }
            continue;
        }
        if (!l->gone_at[w]) {
            l->gone_at[w] = r->now_ms ? r->now_ms : 1;
            s.newly++;
        }
        if (r->known || r->now_ms < l->gone_at[w] + r->grace_ms)
            continue;
        s.kind = PREEMPT_LOST_WORKER; /* the lost record ends the round: the rest waits */
        s.worker = w;
        break;
    }
    for (unsigned w = 0; w < l->n; w++)
        s.missing += l->gone_at[w] != 0;
    return s;
}

int preempt_lost_says_format_(char *buf, size_t size, const struct preempt_lost_says *s)
{
    char w[24] = "";

    if (s->kind == PREEMPT_LOST_FAILED || s->kind == PREEMPT_LOST_UNREADABLE)
        return snprintf(buf, size, "%s", s->kind == PREEMPT_LOST_FAILED ? "failed" : "unreadable");
    if (s->kind == PREEMPT_LOST_WORKER)
        (void)snprintf(w, sizeof(w), " worker=%u", s->worker);
    return snprintf(buf, size, "%s%s missing=%u newly=%u back=%u", s->kind == PREEMPT_LOST_WORKER ? "lost" : "nothing",
                    w, s->missing, s->newly, s->back);
}

int preempt_lost_absent_format_(char *buf, size_t size, const uint8_t *absent, unsigned n)
{
    size_t len = 0;

    if (size < 2)
        return -1;
    for (unsigned w = 0; w < n; w++) {
        unsigned e = w;
        int k;

        if (!PREEMPT_LOST_BIT(absent, w))
            continue;
        while (e + 1 < n && PREEMPT_LOST_BIT(absent, e + 1))
            e++;
        k = e == w ? snprintf(buf + len, size - len, "%s%u", len ? "," : "", w)
                   : snprintf(buf + len, size - len, "%s%u-%u", len ? "," : "", w, e);
        if (k < 0 || (size_t)k >= size - len)
            return -1;
        len += (size_t)k;
        w = e;
    }
    if (len == 0)
        buf[len++] = '-';
    buf[len] = '\0';
    return (int)len;
}

/* A worker number of s[*i..len): digits, at most 5 of them. */
static bool number(const char *s, size_t len, size_t *i, unsigned *ret)
{
    size_t start = *i;
    unsigned v = 0;

    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - start < 5)
        v = v * 10 + (unsigned)(s[(*i)++] - '0');
    *ret = v;
    return *i > start && (*i == len || s[*i] < '0' || s[*i] > '9');
}

bool preempt_lost_absent_parse_(const char *s, size_t len, uint8_t *absent, unsigned n)
{
    size_t i = 0;
    unsigned last = 0;
    bool any = false;

    memset(absent, 0, (n + 7) / 8);
    if (len == 1 && s[0] == '-')
        return true;
    while (i < len) {
        unsigned a, b;

        if ((any && s[i++] != ',') || !number(s, len, &i, &a))
            return false;
        b = a;
        if (i < len && s[i] == '-' && (++i, !number(s, len, &i, &b)))
            return false;
        if (b < a || b >= n || (any && a <= last))
            return false;
        for (unsigned w = a; w <= b; w++)
            PREEMPT_LOST_SET(absent, w);
        last = b;
        any = true;
    }
    return any;
}
