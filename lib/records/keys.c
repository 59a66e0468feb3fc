/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/keys.c: the job's key layout (keys-internal.h): formatting, parsing
 * and the documentation's tables, all from the one table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys-internal.h"
#include "records-internal.h"
#include "base/base.h"
#include "preempt.h" /* PREEMPT_MAX_WORKERS */

static const struct {
    const char *pattern, *value, *writer, *meaning;
} keys[] = {
#define PREEMPT_KEY_ROW_(id, pattern, value, writer, meaning) { pattern, value, writer, meaning },
    PREEMPT_KEYS(PREEMPT_KEY_ROW_)
#undef PREEMPT_KEY_ROW_
#define PREEMPT_RANGE_ROW_(id, pattern) { pattern, NULL, NULL, NULL },
    PREEMPT_RANGES(PREEMPT_RANGE_ROW_)
#undef PREEMPT_RANGE_ROW_
};

const char *preempt_key_pattern_(enum preempt_key_id id)
{
    return (unsigned)id < sizeof(keys) / sizeof(keys[0]) ? keys[id].pattern : NULL;
}

const char *preempt_record_grammar_(enum preempt_key_id id)
{
    return (unsigned)id < PREEMPT_KEY_COUNT ? keys[id].value : NULL;
}

bool preempt_key_has_(enum preempt_key_id id, char c)
{
    const char *p = preempt_key_pattern_(id);
    char ph[4] = { '{', c, '}', '\0' };

    return p && strstr(p, ph) != NULL;
}

/* Where placeholder c's value lives in k; NULL for an unknown one. */
static uint64_t value_of(const struct preempt_key *k, char c)
{
    switch (c) {
    case 'N': return k->inc;
    case 'p': return k->ep;
    case 'S': return k->step;
    case 'k': return k->round;
    default: return k->worker;
    }
}

/* Writes jobp and pattern up to end (NULL: all of it). */
static int format(char *buf, size_t size, const char *jobp, const char *pattern, const char *end,
                  const struct preempt_key *k)
{
    size_t n;

    if (size == 0)
        return -EINVAL;
    buf[0] = '\0'; /* on failure, no key: never a cut one */
    if (!pattern)
        return -EINVAL;
    n = (size_t)snprintf(buf, size, "%s", jobp);
    for (const char *p = pattern; *p && p != end && n < size; p++) {
        if (*p == '{') {
            n += (size_t)snprintf(buf + n, size - n, "%" PRIu64, value_of(k, p[1]));
            p += 2;
        } else {
            buf[n++] = *p;
        }
    }
    if (n >= size) {
        buf[0] = '\0';
        return -ENAMETOOLONG;
    }
    buf[n] = '\0';
    return 0;
}

int preempt_key_(char *buf, size_t size, const char *jobp, enum preempt_key_id id, const struct preempt_key *k)
{
    return format(buf, size, jobp, preempt_key_pattern_(id), NULL, k);
}

int preempt_key_range_(char *buf, size_t size, const char *jobp, enum preempt_key_id id, char upto,
                       const struct preempt_key *k)
{
    const char *p = preempt_key_pattern_(id);
    char ph[4] = { '{', upto, '}', '\0' };
    const char *cut = p && upto ? strstr(p, ph) : NULL;

    if (!p || (upto && !cut) || (!upto && id < PREEMPT_KEY_COUNT)) {
        if (size)
            buf[0] = '\0';
        return -EINVAL;
    }
    return format(buf, size, jobp, p, cut, k);
}

/* Matches s against pattern, filling k. */
static bool match(const char *pattern, const char *s, struct preempt_key *k)
{
    for (const char *p = pattern; *p; p++) {
        uint64_t v = 0;
        size_t len;

        if (*p != '{') {
            if (*s++ != *p)
                return false;
            continue;
        }
        len = strspn(s, "0123456789");
        if (len == 0 || len > 20 || (len > 1 && s[0] == '0'))
            return false;
        for (size_t i = 0; i < len; i++) {
            unsigned d = (unsigned)(s[i] - '0');

            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
        }
        s += len;
        p += 2;
        switch (p[-1]) {
        case 'N': k->inc = v; break;
        case 'p': k->ep = v; break;
        case 'S': k->step = v; break;
        case 'k':
            if (v > 1)
                return false;
            k->round = (unsigned)v;
            break;
        default:
            if (v >= PREEMPT_MAX_WORKERS)
                return false;
            k->worker = (unsigned)v;
        }
    }
    return *s == '\0';
}

int preempt_key_parse_(const char *key, const char *jobp, struct preempt_key *k)
{
    size_t n = strlen(jobp);

    if (strncmp(key, jobp, n) != 0)
        return -1;
    for (int id = 0; id < PREEMPT_KEY_COUNT; id++) {
        struct preempt_key got = { 0 };

        if (match(keys[id].pattern, key + n, &got)) {
            *k = got;
            return id;
        }
    }
    return -1;
}

/* A pattern as the documentation writes it: "N/e<p>/r<k>/agreed". */
static int doc_pattern(char *buf, size_t size, const char *pattern)
{
    size_t n = 0;

    for (const char *p = pattern; *p && n + 4 < size; p++) {
        if (*p == '{' && p[1] == 'N') {
            buf[n++] = 'N';
            p += 2;
        } else if (*p == '{') {
            n += (size_t)snprintf(buf + n, size - n, "<%c>", p[1]);
            p += 2;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = '\0';
    return (int)n;
}

/* A value of kind id written from r by its grammar (records.c): its
 * length, or a negative errno (buf ""). */
static int formatted(struct preempt_value *v, enum preempt_key_id id, const struct preempt_record *r)
{
    const char *why;
    int rc = preempt_record_format_(v, id, r, PREEMPT_MAX_WORKERS, &why);

    return rc < 0 ? rc : (int)strlen(preempt_value_str_(v));
}

/* A step's " last", a report's or a decision's " stop=" and pace, when named. */
static void set_last(struct preempt_record *r, bool last)
{
    if (last)
        preempt_record_set_flag_(r, "last");
}

static void set_stop_pace(struct preempt_record *r, uint64_t stop, const char *name, struct preempt_pace pace)
{
    if (stop)
        preempt_record_set_u64_(r, "stop", stop);
    if (!pace.ms)
        return;
    preempt_record_set_u64_(r, name, pace.step);
    preempt_record_set_u64_(r, "pace", pace.ms);
    if (pace.at)
        preempt_record_set_u64_(r, "at", pace.at);
}

int preempt_step_value_(struct preempt_value *v, uint64_t step, bool last)
{
    struct preempt_record r = { 0 };

    preempt_record_set_u64_(&r, "step", step);
    set_last(&r, last);
    return formatted(v, PREEMPT_KEY_AGREED, &r);
}

bool preempt_step_value_parse_(const char *value, uint64_t *step, bool *last)
{
    struct preempt_record r;
    const char *why;

    if (!value || preempt_record_parse_(PREEMPT_KEY_AGREED, value, 0, &r, &why) < 0)
        return false;
    *last = preempt_record_has_(&r, "last");
    return preempt_record_u64_(&r, "step", step);
}

int preempt_shard_value_(struct preempt_value *v, uint64_t save_ms, bool last, uint64_t stop, struct preempt_pace pace)
{
    struct preempt_record r = { 0 };

    preempt_record_set_u64_(&r, "save", save_ms);
    set_last(&r, last);
    set_stop_pace(&r, stop, "run", pace);
    return formatted(v, PREEMPT_KEY_SHARD, &r);
}

bool preempt_shard_value_parse_(const char *value, uint64_t *save_ms, bool *last, uint64_t *stop,
                                struct preempt_pace *pace)
{
    struct preempt_record r;
    const char *why;

    if (!value || preempt_record_parse_(PREEMPT_KEY_SHARD, value, 0, &r, &why) < 0)
        return false;
    *last = preempt_record_has_(&r, "last");
    if (!preempt_record_u64_(&r, "stop", stop))
        *stop = 0;
    *pace = preempt_record_pace_(&r, "run");
    return preempt_record_u64_(&r, "save", save_ms);
}

int preempt_committed_value_(struct preempt_value *v, uint64_t step, bool last, uint64_t save_ms, uint64_t stop,
                             struct preempt_pace pace)
{
    struct preempt_record r = { 0 };

    preempt_record_set_flag_(&r, "committed");
    preempt_record_set_u64_(&r, "step", step);
    set_last(&r, last);
    preempt_record_set_u64_(&r, "save", save_ms);
    pace.at = 0; /* a decision names no time */
    set_stop_pace(&r, stop, "from", pace);
    return formatted(v, PREEMPT_KEY_DECISION, &r);
}

bool preempt_committed_parse_(const char *value, uint64_t *step, bool *last, uint64_t *save_ms)
{
    struct preempt_record r;
    const char *why;

    if (!value || preempt_record_parse_(PREEMPT_KEY_DECISION, value, 0, &r, &why) < 0 ||
        !preempt_record_has_(&r, "committed"))
        return false;
    *last = preempt_record_has_(&r, "last");
    if (!preempt_record_u64_(&r, "save", save_ms))
        *save_ms = 0; /* older records lack it */
    return preempt_record_u64_(&r, "step", step);
}

int preempt_key_table_(char *buf, size_t size, bool per_worker)
{
    size_t n = 0;

#define ADD(...)                                                                                                    \
    do {                                                                                                            \
        int r_ = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, __VA_ARGS__);                      \
        n += r_ > 0 ? (size_t)r_ : 0;                                                                               \
    } while (0)
    ADD("| key | value | written by | meaning |\n|---|---|---|---|\n");
    for (int id = 0; id < PREEMPT_KEY_COUNT; id++) {
        char pat[96];

        if (per_worker != !strncmp(keys[id].pattern, "{N}/w/", 6))
            continue;
        (void)doc_pattern(pat, sizeof(pat), keys[id].pattern);
        ADD("| `%s` | `", pat);
        for (const char *g = keys[id].value; *g; g++) /* the grammar; '|' would end the cell */
            ADD("%s%c", *g == '|' ? "\\" : "", *g);
        ADD("` | %s | %s |\n", keys[id].writer, keys[id].meaning);
    }
#undef ADD
    return (int)n;
}

int preempt_record_check_put_(const char *key, const char *value, const char **why)
{
    char jobp[PREEMPT_KEY_MAX];
    const char *end = key && !strncmp(key, "/preempt/", 9) ? strchr(key + 9, '/') : NULL;
    struct preempt_record r;
    struct preempt_key k;
    int id;

    *why = NULL;
    if (!end || (size_t)(end - key) + 2 > sizeof(jobp))
        return 0;
    memcpy(jobp, key, (size_t)(end - key) + 1);
    jobp[end - key + 1] = '\0';
    id = preempt_key_parse_(key, jobp, &k);
    if (id < 0)
        return 0;
    return preempt_record_parse_((enum preempt_key_id)id, value ? value : "", PREEMPT_MAX_WORKERS, &r, why);
}
