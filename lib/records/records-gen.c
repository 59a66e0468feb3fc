/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/records-gen.c: writes the typed records (records-kinds.h and
 * records-kinds.c, at build time) from the one table of the job's records:
 * the value column of keys-internal.h's PREEMPT_KEYS, each a grammar
 * (records-internal.h). For each kind it writes a struct of the grammar's
 * fields and flags, a reader that fills it from a value and a writer that
 * formats a value from it, both through the grammar's one engine
 * (records.c): a field's name is the grammar's, so a reader or writer that
 * names one the grammar lacks does not compile.
 *
 *   records-gen HEADER SOURCE
 *
 * A field inside a group ([...] or (...|...)) is optional: its number has
 * has_<name> beside it. A text, word or list field is a pointer (NULL:
 * absent); read, it points into the value with <name>_len beside it; a
 * list is written from <name>_v (<name>_n numbers, <name>_more: more were
 * left out). A flag (a group of literal text alone, an alternative's first
 * word) is a bool, its C name the flag's up to its first character that is
 * not a letter, digit or '_'. A build tool: it exits 1 on a grammar it
 * cannot read, and the build stops. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records-internal.h"

struct kind {
    const char *id, *grammar;
};

static const struct kind kinds[] = {
#define GEN_KIND_(id, pattern, value, ...) { #id, value },
    PREEMPT_KEYS(GEN_KIND_)
#undef GEN_KIND_
};

_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == PREEMPT_KEY_COUNT, "a kind for each record");

#define MAX_FIELDS 24
struct field {
    char name[64];  /* as the grammar names it */
    char cname[64]; /* as C does */
    char type[16];  /* u64 unixms w int word list text; "flag" */
    bool optional;
};

struct fields {
    struct field f[MAX_FIELDS];
    unsigned n;
};

static void die(const char *kind, const char *what)
{
    fprintf(stderr, "records-gen: %s: %s\n", kind, what);
    exit(1);
}

static void cname_of(const char *kind, const char *name, char *out, size_t size)
{
    size_t i = 0;

    for (; name[i] && i + 1 < size; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            break;
        out[i] = c;
    }
    out[i] = '\0';
    if (i == 0 || (out[0] >= '0' && out[0] <= '9'))
        die(kind, "a name that makes no C name");
}

static void add(struct fields *fs, const char *kind, const char *name, size_t len, const char *type, bool optional)
{
    struct field f = { .optional = optional };

    if (len == 0 || len >= sizeof(f.name))
        die(kind, "an empty or too long name");
    memcpy(f.name, name, len);
    f.name[len] = '\0';
    snprintf(f.type, sizeof(f.type), "%s", type);
    cname_of(kind, f.name, f.cname, sizeof(f.cname));
    for (unsigned i = 0; i < fs->n; i++) {
        if (strcmp(fs->f[i].cname, f.cname))
            continue;
        if (strcmp(fs->f[i].name, f.name) || strcmp(fs->f[i].type, f.type))
            die(kind, "one C name for two fields");
        fs->f[i].optional = fs->f[i].optional || optional; /* in two alternatives: one field */
        return;
    }
    if (fs->n == MAX_FIELDS)
        die(kind, "too many fields");
    fs->f[fs->n++] = f;
}

/* One field or flag of a kind's grammar (preempt_record_fields_). */
struct walk {
    struct fields *fs;
    const char *kind;
};

static void on_field(void *arg, const char *name, size_t name_len, const char *type, size_t type_len, bool optional)
{
    struct walk *w = arg;
    char t[16];

    if (!type) {
        add(w->fs, w->kind, name, name_len, "flag", true);
        return;
    }
    if (type_len >= sizeof(t))
        die(w->kind, "a long type");
    memcpy(t, type, type_len);
    t[type_len] = '\0';
    if (strcmp(t, "u64") && strcmp(t, "unixms") && strcmp(t, "w") && strcmp(t, "int") && strcmp(t, "word") &&
        strcmp(t, "list") && strcmp(t, "text"))
        die(w->kind, "an unknown type");
    add(w->fs, w->kind, name, name_len, t, optional);
}

static bool is_num(const struct field *f)
{
    return !strcmp(f->type, "u64") || !strcmp(f->type, "unixms") || !strcmp(f->type, "w") || !strcmp(f->type, "int");
}

static void lower(const char *id, char *out, size_t size)
{
    size_t i = 0;

    for (; id[i] && i + 1 < size; i++)
        out[i] = (char)(id[i] >= 'A' && id[i] <= 'Z' ? id[i] - 'A' + 'a' : id[i]);
    out[i] = '\0';
}

static void header(FILE *h, const struct kind *k, const struct fields *fs)
{
    char lo[64];

    lower(k->id, lo, sizeof(lo));
    fprintf(h, "\n/* %s: \"", k->id);
    for (const char *p = k->grammar; *p; p++) /* the grammar, as a comment */
        fputs(*p == '*' && p[1] == '/' ? "*\\" : (char[2]){ *p, 0 }, h);
    fprintf(h, "\" */\nstruct preempt_rv_%s {\n", lo);
    if (fs->n == 0)
        fprintf(h, "    bool none_; /* no field */\n");
    for (unsigned i = 0; i < fs->n; i++) {
        const struct field *f = &fs->f[i];

        if (!strcmp(f->type, "flag"))
            fprintf(h, "    bool %s; /* \"%s\" */\n", f->cname, f->name);
        else if (!strcmp(f->type, "int"))
            fprintf(h, "    int64_t %s;\n", f->cname);
        else if (is_num(f))
            fprintf(h, "    uint64_t %s; /* %s */\n", f->cname, f->type);
        else if (!strcmp(f->type, "list"))
            fprintf(h, "    const char *%s; size_t %s_len; /* read: the list's text */\n"
                       "    const uint64_t *%s_v; size_t %s_n; bool %s_more; /* written */\n",
                    f->cname, f->cname, f->cname, f->cname, f->cname);
        else
            fprintf(h, "    const char *%s; size_t %s_len; /* %s */\n", f->cname, f->cname, f->type);
        if (f->optional && is_num(f))
            fprintf(h, "    bool has_%s;\n", f->cname);
    }
    fprintf(h, "};\n"
               "int preempt_rv_%s_read_(const char *value, unsigned workers, struct preempt_rv_%s *r, const char **why);\n"
               "int preempt_rv_%s_write_(struct preempt_value *v, const struct preempt_rv_%s *r, unsigned workers,\n"
               "                         const char **why);\n",
            lo, lo, lo, lo);
}

static void source(FILE *c, const struct kind *k, const struct fields *fs)
{
    char lo[64];

    lower(k->id, lo, sizeof(lo));
    fprintf(c, "\nint preempt_rv_%s_read_(const char *value, unsigned workers, struct preempt_rv_%s *out, "
               "const char **why)\n{\n    struct preempt_record r;\n    int e = preempt_record_parse_(PREEMPT_KEY_%s, "
               "value, workers, &r, why);\n\n    memset(out, 0, sizeof(*out));\n    if (e < 0)\n        return e;\n",
            lo, lo, k->id);
    for (unsigned i = 0; i < fs->n; i++) {
        const struct field *f = &fs->f[i];

        if (!strcmp(f->type, "flag"))
            fprintf(c, "    out->%s = preempt_record_has_(&r, \"%s\");\n", f->cname, f->name);
        else if (is_num(f) && f->optional)
            fprintf(c, "    out->has_%s = get_num(&r, \"%s\", &out->%s);\n", f->cname, f->name, f->cname);
        else if (is_num(f))
            fprintf(c, "    (void)get_num(&r, \"%s\", &out->%s);\n", f->name, f->cname);
        else
            fprintf(c, "    out->%s = preempt_record_text_(&r, \"%s\", &out->%s_len);\n", f->cname, f->name, f->cname);
    }
    fprintf(c, "    return 0;\n}\n");
    fprintf(c, "\nint preempt_rv_%s_write_(struct preempt_value *v, const struct preempt_rv_%s *in, unsigned workers,\n"
               "                         const char **why)\n{\n    struct preempt_record r = { 0 };\n\n",
            lo, lo);
    if (fs->n == 0)
        fprintf(c, "    (void)in;\n");
    for (unsigned i = 0; i < fs->n; i++) {
        const struct field *f = &fs->f[i];

        if (!strcmp(f->type, "flag"))
            fprintf(c, "    if (in->%s)\n        preempt_record_set_flag_(&r, \"%s\");\n", f->cname, f->name);
        else if (is_num(f) && f->optional)
            fprintf(c, "    if (in->has_%s)\n        preempt_record_set_u64_(&r, \"%s\", (uint64_t)in->%s);\n",
                    f->cname, f->name, f->cname);
        else if (is_num(f))
            fprintf(c, "    preempt_record_set_u64_(&r, \"%s\", (uint64_t)in->%s);\n", f->name, f->cname);
        else if (!strcmp(f->type, "list")) /* its numbers, or its text as read */
            fprintf(c, "    if (in->%s_v || in->%s_n)\n"
                       "        preempt_record_set_list_(&r, \"%s\", in->%s_v, in->%s_n, in->%s_more);\n"
                       "    else if (in->%s)\n"
                       "        preempt_record_set_textn_(&r, \"%s\", in->%s, in->%s_len);\n",
                    f->cname, f->cname, f->name, f->cname, f->cname, f->cname, f->cname, f->name, f->cname,
                    f->cname);
        else /* as read (its length), or NUL-terminated */
            fprintf(c, "    if (in->%s)\n        preempt_record_set_textn_(&r, \"%s\", in->%s, in->%s_len ? in->%s_len : "
                       "strlen(in->%s));\n", f->cname, f->name, f->cname, f->cname, f->cname, f->cname);
    }
    fprintf(c, "    return preempt_record_format_(v, PREEMPT_KEY_%s, &r, workers, why);\n}\n", k->id);
}

int main(int argc, char **argv)
{
    FILE *h, *c;

    if (argc != 3) {
        fprintf(stderr, "usage: records-gen HEADER SOURCE\n");
        return 2;
    }
    if (!(h = fopen(argv[1], "w")) || !(c = fopen(argv[2], "w"))) {
        perror("records-gen");
        return 1;
    }
    fprintf(h, "/* Generated by lib/records/records-gen.c from the value column of keys-internal.h's\n"
               " * PREEMPT_KEYS (each a grammar, records-internal.h): do not edit. A struct per\n"
               " * record kind, its reader and its writer (records-internal.h, \"Typed records\"). */\n"
               "#ifndef PREEMPT_RECORDS_KINDS_H\n#define PREEMPT_RECORDS_KINDS_H\n\n"
               "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
               "/* Included by records-internal.h, after keys-internal.h (enum preempt_key_id). */\n"
               "struct preempt_value;\nstruct preempt_key;\n");
    fprintf(c, "/* Generated by lib/records/records-gen.c: do not edit. */\n#include <errno.h>\n#include <string.h>\n\n"
               "#include \"records/records-internal.h\" /* by path: this file is in the build tree */\n\n"
               "/* A number field's value: whether the record has it (int: its two's complement). */\n"
               "static bool get_num(const struct preempt_record *r, const char *name, void *out)\n{\n"
               "    uint64_t u;\n\n    if (!preempt_record_u64_(r, name, &u))\n        return false;\n"
               "    memcpy(out, &u, sizeof(u));\n    return true;\n}\n");
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        struct fields fs = { .n = 0 };
        struct walk w = { &fs, kinds[i].id };

        if (preempt_record_fields_((enum preempt_key_id)i, on_field, &w) < 0)
            die(kinds[i].id, "a grammar that does not read");
        header(h, &kinds[i], &fs);
        source(c, &kinds[i], &fs);
    }
    /* any kind: a union of them, and one reader that takes the kind */
    fprintf(h, "\n/* A record of any kind, read by preempt_rv_read_: its kind's member. */\nunion preempt_rv {\n");
    fprintf(c, "\nint preempt_rv_read_(enum preempt_key_id id, const struct preempt_key *k, const char *value, "
               "unsigned workers,\n                     union preempt_rv *out, const char **why)\n{\n"
               "    memset(out, 0, sizeof(*out));\n"
               "    if (k && preempt_key_has_(id, 'w') && k->worker >= workers) {\n"
               "        *why = \"a record of a worker of the job\";\n        return -EBADMSG;\n    }\n"
               "    if (!value) /* a delete: nothing to read */\n        return 0;\n    switch ((int)id) { /* the ranges are no record */\n");
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        char lo[64];

        lower(kinds[i].id, lo, sizeof(lo));
        fprintf(h, "    struct preempt_rv_%s %s;\n", lo, lo);
        fprintf(c, "    case PREEMPT_KEY_%s:\n        return preempt_rv_%s_read_(value, workers, &out->%s, why);\n",
                kinds[i].id, lo, lo);
    }
    fprintf(h, "};\n/* Reads value (NULL: a delete, nothing to read) as a record of kind id for a\n"
               " * job of workers workers, whose key k names a worker of the job (NULL: no key):\n"
               " * 0 with *out filled (its member of kind id), or -EBADMSG with *why. */\n"
               "int preempt_rv_read_(enum preempt_key_id id, const struct preempt_key *k, const char *value, "
               "unsigned workers,\n                     union preempt_rv *out, const char **why);\n");
    fprintf(c, "    default:\n        break;\n    }\n    *why = \"a record of a known kind\";\n    return -EBADMSG;\n}\n");
    fprintf(h, "\n#endif\n");
    if (fclose(h) || fclose(c)) {
        perror("records-gen");
        return 1;
    }
    return 0;
}
