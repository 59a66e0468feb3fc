/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/records.c: reading and writing the job's record values with their
 * grammars (records-internal.h). Pure: no allocation, no I/O. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "records-internal.h"

struct match {
    struct preempt_record *r;
    unsigned workers;
    const char *why;
};

/* The end of the group that starts at g (its '[' or '('), or NULL. */
static const char *group_end(const char *g, const char *end)
{
    int depth = 0;

    for (; g < end; g++) {
        if (*g == '[' || *g == '(')
            depth++;
        else if ((*g == ']' || *g == ')') && --depth == 0)
            return g;
        else if (*g == '<')
            while (g < end && *g != '>')
                g++;
    }
    return NULL;
}

/* Field r->n (there is room) is name with text s..len and number u, no list. */
static void fill(struct preempt_record *r, const char *name, size_t name_len, const char *s, size_t len, uint64_t u)
{
    memset(&r->f[r->n], 0, sizeof(r->f[r->n]));
    r->f[r->n].name = name;
    r->f[r->n].name_len = name_len;
    r->f[r->n].s = s;
    r->f[r->n].len = len;
    r->f[r->n].u = u;
    r->n++;
}

static bool add(struct match *m, const char *name, size_t name_len, const char *s, size_t len, uint64_t u)
{
    struct preempt_record *r = m->r;

    if (r->n == PREEMPT_RECORD_FIELDS_MAX) {
        m->why = "a grammar with fewer fields";
        return false;
    }
    fill(r, name, name_len, s, len, u);
    return true;
}

bool preempt_record_word_char_(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '/' || c == '-';
}

/* A u64 at v without sign or leading zero: its end, or NULL. */
static const char *number(const char *v, uint64_t *ret)
{
    uint64_t u = 0;
    const char *p = v;

    if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
        return NULL;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (u > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return NULL; /* does not fit */
        u = u * 10 + (uint64_t)(*p - '0');
    }
    *ret = u;
    return p;
}

/* Whether s (NUL-terminated) starts with a list's ",...": more were left out. */
static bool more_mark(const char *s)
{
    return s[0] == ',' && s[1] == '.' && s[2] == '.' && s[3] == '.';
}

/* One field "<name:type>" (g..gend its inside) at v: its end, or NULL. */
static const char *field(struct match *m, const char *g, const char *gend, const char *v)
{
    const char *colon = memchr(g, ':', (size_t)(gend - g)), *type, *p = v;
    size_t tlen;
    uint64_t u = 0;

    if (!colon)
        return (m->why = "a value (the grammar has a field without a type)"), NULL;
    type = colon + 1;
    tlen = (size_t)(gend - type);
#define IS(t) (tlen == sizeof(t) - 1 && !memcmp(type, t, tlen))
    if (IS("u64") || IS("unixms") || IS("w")) {
        if (!(p = number(v, &u)))
            return (m->why = "a number"), NULL;
        if (IS("unixms") && u > 100000000000000ULL)
            return (m->why = "a time in unix ms (at most 10^14)"), NULL;
        if (IS("w") && u >= m->workers)
            return (m->why = "a worker of the job"), NULL;
    } else if (IS("int")) {
        bool neg = *p == '-';

        if (!(p = number(v + neg, &u)) || u > 2147483647u)
            return (m->why = "an integer"), NULL;
        u = neg ? (uint64_t)-(int64_t)u : u;
    } else if (IS("word")) {
        while (preempt_record_word_char_(*p) && p - v < 255)
            p++;
        if (p == v || preempt_record_word_char_(*p))
            return (m->why = "a word (1-255 of A-Z a-z 0-9 . _ : / -)"), NULL;
    } else if (IS("list")) {
        const char *q = number(v, &u);

        while (q && *q == ',') {
            if (more_mark(q)) { /* ",..." ends it: more were left out */
                q += 4;
                break;
            }
            q = number(q + 1, &u);
        }
        if (!q || q - v > 1024)
            return (m->why = "a list of numbers (\"1,2,3\", at most 1024 bytes)"), NULL;
        p = q;
        u = 0;
    } else if (IS("text")) {
        for (; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return (m->why = "printable text"), NULL;
    } else {
        return (m->why = "a value (the grammar has an unknown type)"), NULL;
    }
#undef IS
    return add(m, g, (size_t)(colon - g), v, (size_t)(p - v), u) ? p : NULL;
}

/* The literal text of g..gend without spaces around it, as a flag's name. */
static bool flag(struct match *m, const char *g, const char *gend)
{
    while (g < gend && *g == ' ')
        g++;
    while (gend > g && gend[-1] == ' ')
        gend--;
    return add(m, g, (size_t)(gend - g), g, (size_t)(gend - g), 1);
}

/* The grammar g..gend at v: the end of what it matched, or NULL. */
static const char *seq(struct match *m, const char *g, const char *gend, const char *v)
{
    while (g < gend && v) {
        if (*g == '<') {
            const char *e = memchr(g, '>', (size_t)(gend - g));

            if (!e)
                return (m->why = "a value (the grammar has an unclosed field)"), NULL;
            v = field(m, g + 1, e, v);
            g = e + 1;
        } else if (*g == '[') {
            const char *e = group_end(g, gend), *got;
            unsigned n = m->r->n;
            bool plain;

            if (!e)
                return (m->why = "a value (the grammar has an unclosed group)"), NULL;
            plain = !memchr(g + 1, '<', (size_t)(e - g - 1));
            got = seq(m, g + 1, e, v);
            if (got && (!plain || flag(m, g + 1, e)))
                v = got;
            else
                m->r->n = n; /* absent: nothing of it counts */
            g = e + 1;
        } else if (*g == '(') {
            const char *e = group_end(g, gend), *alt = g + 1, *got = NULL;
            unsigned n = m->r->n;

            if (!e)
                return (m->why = "a value (the grammar has an unclosed group)"), NULL;
            while (alt < e && !got) {
                const char *bar = alt, *w = alt;
                int depth = 0;

                for (; bar < e && (depth || *bar != '|'); bar++)
                    depth += (*bar == '[' || *bar == '(') - (*bar == ']' || *bar == ')');
                m->r->n = n;
                got = seq(m, alt, bar, v);
                while (w < bar && ((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z')))
                    w++;
                if (got && w > alt && !flag(m, alt, w))
                    got = NULL;
                alt = bar + 1;
            }
            if (!got)
                return NULL; /* why: the last alternative's */
            v = got;
            g = e + 1;
        } else {
            if (*v != *g) {
                m->why = *g == ' ' ? "a space" : "the grammar's literal text";
                return NULL;
            }
            v++;
            g++;
        }
    }
    return v;
}

int preempt_record_parse_(enum preempt_key_id id, const char *value, unsigned workers, struct preempt_record *r,
                          const char **why)
{
    const char *g = preempt_record_grammar_(id), *end;
    struct match m = { .r = r, .workers = workers };

    r->n = 0;
    if (!g) {
        *why = "a record of a known kind";
        return -EBADMSG;
    }
    end = seq(&m, g, g + strlen(g), value ? value : "");
    if (!end || *end) {
        *why = end ? "nothing more (the value goes on)" : m.why ? m.why : "a value of its grammar";
        return -EBADMSG;
    }
    return 0;
}

bool preempt_record_valid_(enum preempt_key_id id, const char *value, unsigned workers)
{
    struct preempt_record r;
    const char *why;

    return preempt_record_parse_(id, value, workers, &r, &why) == 0;
}

static int find(const struct preempt_record *r, const char *name)
{
    size_t len = strlen(name);

    for (unsigned i = 0; i < r->n; i++)
        if (r->f[i].name_len == len && !memcmp(r->f[i].name, name, len))
            return (int)i;
    return -1;
}

bool preempt_record_u64_(const struct preempt_record *r, const char *name, uint64_t *ret)
{
    int i = find(r, name);

    if (i < 0)
        return false;
    *ret = r->f[i].u;
    return true;
}

struct preempt_pace preempt_record_pace_(const struct preempt_record *r, const char *name)
{
    struct preempt_pace p = { 0, 0, 0 };

    if (!preempt_record_u64_(r, "pace", &p.ms) || p.ms == 0 || !preempt_record_u64_(r, name, &p.step))
        return (struct preempt_pace){ 0, 0, 0 };
    if (!preempt_record_u64_(r, "at", &p.at))
        p.at = 0;
    return p;
}

bool preempt_record_has_(const struct preempt_record *r, const char *name)
{
    return find(r, name) >= 0;
}

const char *preempt_record_text_(const struct preempt_record *r, const char *name, size_t *len)
{
    int i = find(r, name);

    if (i < 0)
        return NULL;
    *len = r->f[i].len;
    return r->f[i].s;
}

/* ---- a grammar's fields -------------------------------------------------------------------------- */

/* The fields and flags of grammar g..end, as seq() reads them. */
static int walk(const char *g, const char *end, bool optional, preempt_record_field_fn fn, void *arg)
{
    while (g < end) {
        if (*g == '<') {
            const char *e = memchr(g, '>', (size_t)(end - g)), *colon;

            if (!e || !(colon = memchr(g, ':', (size_t)(e - g))))
                return -EINVAL;
            fn(arg, g + 1, (size_t)(colon - g - 1), colon + 1, (size_t)(e - colon - 1), optional);
            g = e + 1;
        } else if (*g == '[') {
            const char *e = group_end(g, end), *a = g + 1, *z;

            if (!e)
                return -EINVAL;
            z = e;
            if (!memchr(g + 1, '<', (size_t)(e - g - 1))) { /* literal text alone: a flag named by it */
                while (a < z && *a == ' ')
                    a++;
                while (z > a && z[-1] == ' ')
                    z--;
                fn(arg, a, (size_t)(z - a), NULL, 0, true);
            } else if (walk(g + 1, e, true, fn, arg) < 0) {
                return -EINVAL;
            }
            g = e + 1;
        } else if (*g == '(') {
            const char *e = group_end(g, end), *alt = g + 1;

            if (!e)
                return -EINVAL;
            while (alt < e) { /* each alternative; one that starts with a word is a flag named by it */
                const char *bar = alt, *w = alt;
                int depth = 0;

                for (; bar < e && (depth || *bar != '|'); bar++)
                    depth += (*bar == '[' || *bar == '(') - (*bar == ']' || *bar == ')');
                while (w < bar && ((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z')))
                    w++;
                if (w > alt)
                    fn(arg, alt, (size_t)(w - alt), NULL, 0, true);
                if (walk(alt, bar, true, fn, arg) < 0)
                    return -EINVAL;
                alt = bar + 1;
            }
            g = e + 1;
        } else {
            g++;
        }
    }
    return 0;
}

int preempt_record_fields_(enum preempt_key_id id, preempt_record_field_fn fn, void *arg)
{
    const char *g = preempt_record_grammar_(id);

    return g ? walk(g, g + strlen(g), false, fn, arg) : -EINVAL;
}

/* ---- writing a value --------------------------------------------------------------------------- */

static void set(struct preempt_record *r, const char *name, const char *s, size_t len, uint64_t u)
{
    if (r->n == PREEMPT_RECORD_FIELDS_MAX)
        return; /* the format finds the field missing */
    fill(r, name, strlen(name), s, len, u);
}

void preempt_record_set_u64_(struct preempt_record *r, const char *name, uint64_t u)
{
    set(r, name, NULL, 0, u);
}

void preempt_record_set_text_(struct preempt_record *r, const char *name, const char *s)
{
    if (s)
        set(r, name, s, strlen(s), 0);
}

void preempt_record_set_textn_(struct preempt_record *r, const char *name, const char *s, size_t len)
{
    if (s)
        set(r, name, s, len, 0);
}

void preempt_record_set_list_(struct preempt_record *r, const char *name, const uint64_t *v, size_t n, bool more)
{
    if (n == 0 || r->n == PREEMPT_RECORD_FIELDS_MAX)
        return;
    set(r, name, NULL, 0, 0);
    r->f[r->n - 1].list = v;
    r->f[r->n - 1].list_n = n;
    r->f[r->n - 1].list_more = more;
}

size_t preempt_record_list_(const struct preempt_record *r, const char *name, uint64_t *out, size_t max, bool *more)
{
    size_t len = 0;
    const char *s = preempt_record_text_(r, name, &len);

    return preempt_rv_list_(s, len, out, max, more);
}

size_t preempt_rv_list_(const char *s, size_t len, uint64_t *out, size_t max, bool *more)
{
    size_t n = 0;
    const char *end = s ? s + len : NULL;
    uint64_t u;

    *more = false;
    while (s && s < end && (s = number(s, &u)) != NULL) { /* the grammar read it: numbers and ',' up to end */
        if (n < max)
            out[n++] = u;
        else
            *more = true;
        if (s < end && more_mark(s)) {
            *more = true;
            break;
        }
        s++; /* the ',' */
    }
    return n;
}

void preempt_record_set_flag_(struct preempt_record *r, const char *name)
{
    set(r, name, name, strlen(name), 1);
}

struct emit {
    const struct preempt_record *r;
    char *buf;
    size_t size, n;    /* n: the length written (past size: too small) */
    uint32_t used;     /* bit i: r->f[i] has its place */
    const char *why;
};

static void put(struct emit *e, const char *s, size_t len)
{
    if (e->n + len < e->size)
        memcpy(e->buf + e->n, s, len);
    e->n += len;
}

static int find_n(const struct preempt_record *r, const char *name, size_t len)
{
    for (unsigned i = 0; i < r->n; i++)
        if (r->f[i].name_len == len && !memcmp(r->f[i].name, name, len))
            return (int)i;
    return -1;
}

/* A field "<name:type>" (g..gend its inside): r's, written by its type. */
static bool emit_field(struct emit *e, const char *g, const char *gend)
{
    const char *colon = memchr(g, ':', (size_t)(gend - g));
    int i = colon ? find_n(e->r, g, (size_t)(colon - g)) : -1;
    char num[24];

    if (i < 0)
        return (e->why = "a value with every field its grammar needs"), false;
    e->used |= 1u << i;
    if (e->r->f[i].s && (size_t)(gend - colon - 1) == 4 && !memcmp(colon + 1, "text", 4)) {
        /* a text (a message): what is not printable is written as a space */
        for (size_t k = 0; k < e->r->f[i].len; k++) {
            char ch = (unsigned char)e->r->f[i].s[k] < 0x20 || e->r->f[i].s[k] == 0x7f ? ' ' : e->r->f[i].s[k];

            put(e, &ch, 1);
        }
        return true;
    }
    if (e->r->f[i].s && (size_t)(gend - colon - 1) == 4 && !memcmp(colon + 1, "word", 4)) {
        /* a word (a host name may hold any byte): what is not of a word is written as '-' */
        for (size_t k = 0; k < e->r->f[i].len; k++) {
            char ch = preempt_record_word_char_(e->r->f[i].s[k]) ? e->r->f[i].s[k] : '-';

            put(e, &ch, 1);
        }
        return true;
    }
    if (e->r->f[i].list) { /* numbers and ',', ",..." for those left out (or not fitting in 1024 bytes) */
        size_t start = e->n;

        for (size_t k = 0; k < e->r->f[i].list_n; k++) {
            int len = snprintf(num, sizeof(num), "%s%" PRIu64, k ? "," : "", e->r->f[i].list[k]);

            if (e->n - start + (size_t)len + 4 > 1024) {
                put(e, ",...", 4);
                return true;
            }
            put(e, num, (size_t)len);
        }
        if (e->r->f[i].list_more)
            put(e, ",...", 4);
        return true;
    }
    if (e->r->f[i].s) { /* a number field set as text is read back */
        put(e, e->r->f[i].s, e->r->f[i].len);
        return true;
    }
    if ((size_t)(gend - colon - 1) == 3 && !memcmp(colon + 1, "int", 3))
        (void)snprintf(num, sizeof(num), "%" PRId64, (int64_t)e->r->f[i].u);
    else
        (void)snprintf(num, sizeof(num), "%" PRIu64, e->r->f[i].u);
    put(e, num, strlen(num));
    return true;
}

/* The grammar g..gend, with r's fields: false when r lacks one it needs. */
static bool emit_seq(struct emit *e, const char *g, const char *gend)
{
    while (g < gend) {
        if (*g == '<') {
            const char *end = memchr(g, '>', (size_t)(gend - g));

            if (!end || !emit_field(e, g + 1, end))
                return false;
            g = end + 1;
        } else if (*g == '[') { /* optional: there when r sets what it holds */
            const char *end = group_end(g, gend), *a = g + 1, *z = end;
            size_t n = e->n;
            uint32_t used = e->used;

            if (!end)
                return (e->why = "a value (the grammar has an unclosed group)"), false;
            if (!memchr(g + 1, '<', (size_t)(end - g - 1))) { /* a flag: its literal text */
                int i;

                while (a < z && *a == ' ')
                    a++;
                while (z > a && z[-1] == ' ')
                    z--;
                if ((i = find_n(e->r, a, (size_t)(z - a))) >= 0) {
                    e->used |= 1u << i;
                    put(e, g + 1, (size_t)(end - g - 1));
                }
            } else if (!emit_seq(e, g + 1, end)) {
                e->n = n; /* r does not set it: absent (a part of it set is found unused below) */
                e->used = used;
            }
            g = end + 1;
        } else if (*g == '(') { /* the first alternative r sets */
            const char *end = group_end(g, gend), *alt = g + 1;
            bool done = false;

            if (!end)
                return (e->why = "a value (the grammar has an unclosed group)"), false;
            while (alt < end && !done) {
                const char *bar = alt, *w = alt;
                size_t n = e->n;
                uint32_t used = e->used;
                int depth = 0, i = -2;

                for (; bar < end && (depth || *bar != '|'); bar++)
                    depth += (*bar == '[' || *bar == '(') - (*bar == ']' || *bar == ')');
                while (w < bar && ((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z')))
                    w++;
                if (w > alt && (i = find_n(e->r, alt, (size_t)(w - alt))) < 0) {
                    alt = bar + 1; /* an alternative named by a flag r does not set */
                    continue;
                }
                if (i >= 0)
                    e->used |= 1u << i;
                done = emit_seq(e, alt, bar);
                if (!done) {
                    e->n = n;
                    e->used = used;
                }
                alt = bar + 1;
            }
            if (!done)
                return (e->why = "a value that sets one of its grammar's alternatives"), false;
            g = end + 1;
        } else {
            put(e, g, 1);
            g++;
        }
    }
    return true;
}

int preempt_record_format_(struct preempt_value *v, enum preempt_key_id id, const struct preempt_record *r,
                           unsigned workers, const char **why)
{
    char *buf = v->text_;
    size_t size = sizeof(v->text_);
    const char *g = preempt_record_grammar_(id);
    struct emit e = { .r = r, .buf = buf, .size = size };
    struct preempt_record back;

    if (size)
        buf[0] = '\0';
    if (!g) {
        *why = "a record of a known kind";
        return -EBADMSG;
    }
    if (!emit_seq(&e, g, g + strlen(g))) {
        *why = e.why;
        return -EBADMSG;
    }
    for (unsigned i = 0; i < r->n; i++)
        if (!(e.used & (1u << i))) {
            *why = "a value whose every field has its place in the grammar";
            return -EBADMSG;
        }
    if (e.n >= size) {
        *why = "a shorter value";
        if (size)
            buf[0] = '\0';
        return -ENAMETOOLONG;
    }
    buf[e.n] = '\0';
    if (preempt_record_parse_(id, buf, workers, &back, why) < 0) { /* what every reader would refuse */
        buf[0] = '\0';
        return -EBADMSG;
    }
    return 0;
}

int preempt_record_value_of_(struct preempt_value *v, enum preempt_key_id id, const char *text, unsigned workers,
                             const char **why)
{
    struct preempt_record r;
    size_t len = text ? strlen(text) : 0;

    v->text_[0] = '\0';
    if (!text || preempt_record_parse_(id, text, workers, &r, why) < 0) {
        if (!text)
            *why = "a value";
        return -EBADMSG;
    }
    if (len >= sizeof(v->text_)) {
        *why = "a shorter value";
        return -ENAMETOOLONG;
    }
    memcpy(v->text_, text, len + 1);
    return 0;
}
