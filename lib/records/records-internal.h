/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/records-internal.h: the values of the job's records, defined once.
 *
 * Each record kind's value column of the key table (keys-internal.h) is a
 * grammar, and this file reads values with it: what docs/protocol.md shows
 * is what every reader accepts and every writer is checked against. The
 * grammar:
 *
 *   <name:type>   a field; types: u64 (decimal, no sign, no leading zero),
 *                 unixms (a u64 up to 10^14: a wall-clock time in ms, 0:
 *                 none), w (a worker of the job: a u64 below its worker
 *                 count), int (an optional '-', then a u64 up to 2^31-1),
 *                 word (1-255 of A-Z a-z 0-9 . _ : / -), list (u64s
 *                 separated by ',', ",..." after the last one when more
 *                 were left out; 1-1024 bytes), text (the rest of the
 *                 value, printable)
 *   [ ... ]       optional; a group of literal text alone (" last") is a
 *                 flag named by it ("last")
 *   ( a | b )     alternatives, the first that matches wins; an
 *                 alternative that starts with a word ("committed") is a
 *                 flag named by it
 *   anything else itself
 *
 * Matching is greedy and never backtracks out of a group that matched:
 * the grammars are written so that the literal text after an optional
 * part tells. A value matches only as a whole. */
#ifndef PREEMPT_RECORDS_INTERNAL_H
#define PREEMPT_RECORDS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys-internal.h"

#define PREEMPT_RECORD_FIELDS_MAX 12

/* A value read with its grammar: its fields and flags, in order. Strings
 * point into the value read (not terminated: s, len). */
struct preempt_record {
    unsigned n;
    struct {
        const char *name; /* into the grammar */
        size_t name_len;
        const char *s;    /* the field's text in the value; a flag's: the name */
        size_t len;
        uint64_t u;       /* u64, unixms, w: the number; int: its two's complement */
        const uint64_t *list; /* a list to write (preempt_record_set_list_): its numbers, */
        size_t list_n;        /* how many, */
        bool list_more;       /* and whether more were left out */
    } f[PREEMPT_RECORD_FIELDS_MAX];
};

/* Reads value (NUL-terminated; NULL reads as "") as a record of kind id
 * whose job has workers workers. 0 with *r filled, or -EBADMSG with *why
 * (static text) saying what was expected where it failed. Pure. */
int preempt_record_parse_(enum preempt_key_id id, const char *value, unsigned workers, struct preempt_record *r,
                          const char **why);

/* Whether a value of kind id is well formed (preempt_record_parse_ == 0). */
bool preempt_record_valid_(enum preempt_key_id id, const char *value, unsigned workers);

/* A field's number (u64, unixms, w; int: cast it to int64_t); false when
 * the record has no field of that name. */
bool preempt_record_u64_(const struct preempt_record *r, const char *name, uint64_t *ret);

/* A shard report's or a decision's "<name>=<step> pace=<ms>[ at=<unixms>]"
 * (name "run" or "from"): all 0 when it names no pace. */
struct preempt_pace preempt_record_pace_(const struct preempt_record *r, const char *name);

/* A list field's numbers, the first max of them into out: their count
 * (0 when the record has no such list), *more whether the list names more
 * than that or says that more were left out (",..."). */
size_t preempt_record_list_(const struct preempt_record *r, const char *name, uint64_t *out, size_t max, bool *more);
/* The same of a list field's text as a typed reader found it (s, len;
 * NULL: none). */
size_t preempt_rv_list_(const char *s, size_t len, uint64_t *out, size_t max, bool *more);

/* Whether the record has the field or flag name. */
bool preempt_record_has_(const struct preempt_record *r, const char *name);

/* A field's text (not NUL-terminated), NULL when absent; *len its length. */
const char *preempt_record_text_(const struct preempt_record *r, const char *name, size_t *len);

/* ---- writing a value ----
 *
 * A writer sets the fields and flags of a record (cleared: {0}) by name,
 * and preempt_record_format_ writes them where the grammar puts them. The
 * value is then read back with the grammar: what a writer formats is what
 * every reader accepts, or it is refused. Nothing else writes a value. */

/* A number field (u64, unixms, w; int: its two's complement, (uint64_t)x). */
void preempt_record_set_u64_(struct preempt_record *r, const char *name, uint64_t u);
/* A word, list or text field (s NUL-terminated, borrowed until the value is
 * formatted; NULL: not set). */
void preempt_record_set_text_(struct preempt_record *r, const char *name, const char *s);
/* The same of s's first len bytes (a field's text as a reader found it). */
void preempt_record_set_textn_(struct preempt_record *r, const char *name, const char *s, size_t len);
/* A list field: v's n numbers (borrowed until the value is formatted; n
 * 0: not set), and ",..." after them when more is set. What does not fit
 * in a list's 1024 bytes is left out the same way. */
void preempt_record_set_list_(struct preempt_record *r, const char *name, const uint64_t *v, size_t n, bool more);
/* A flag (an optional literal such as "last", or an alternative's first word such as "committed"). */
void preempt_record_set_flag_(struct preempt_record *r, const char *name);

/* A record's value as written: made only here, by preempt_record_format_
 * (the port's writes and compares take nothing else, so no value reaches
 * etcd that the records' writer did not make; tests/records-grammar.sh
 * checks that no file outside lib/records/ touches text_). Read it with
 * preempt_value_str_ (NULL for none). The longest value is a member record (identity and
 * 64 offered steps). */
#define PREEMPT_VALUE_MAX 1600
struct preempt_value {
    char text_[PREEMPT_VALUE_MAX]; /* private: the writer's */
};

static inline const char *preempt_value_str_(const struct preempt_value *v)
{
    return v ? v->text_ : NULL;
}

/* Formats r as a value of kind id into *v, for a job of workers workers:
 * 0, or -EBADMSG with *why (static text) when the grammar needs a field r
 * lacks, has no place for a field r sets, or cannot hold a value r sets
 * (an empty word, a worker past the count), or -ENAMETOOLONG when it does
 * not fit. *v is "" on failure. A text field (a message) is written with
 * each byte that is not printable as a space, a word field (a host name)
 * with each byte outside its alphabet as '-'; nothing else is changed.
 * Pure. */
int preempt_record_format_(struct preempt_value *v, enum preempt_key_id id, const struct preempt_record *r,
                           unsigned workers, const char **why);

/* A value read (from etcd, a trace) taken as one to write again: 0 when
 * text reads as kind id's grammar for a job of workers workers, and fits;
 * else -EBADMSG with *why, or -ENAMETOOLONG (*v "" on failure). */
int preempt_record_value_of_(struct preempt_value *v, enum preempt_key_id id, const char *text, unsigned workers,
                             const char **why);

/* Whether c may be in a word field (A-Z a-z 0-9 . _ : / -). */
bool preempt_record_word_char_(char c);

/* id's grammar, as the key table's value column; NULL for no such id. */
const char *preempt_record_grammar_(enum preempt_key_id id);

/* Tells fn each field and flag of id's grammar, in its order, as a value
 * is read with it: a field's name and type (name, its length; type, its
 * length), or a flag's name (type NULL: a group of literal text alone, an
 * alternative's first word); optional: inside a group. A name in two
 * alternatives comes twice. 0, or -EINVAL for a grammar that does not
 * read (or no such id). What records-gen.c writes the typed records
 * from. */
typedef void (*preempt_record_field_fn)(void *arg, const char *name, size_t name_len, const char *type,
                                         size_t type_len, bool optional);
int preempt_record_fields_(enum preempt_key_id id, preempt_record_field_fn fn, void *arg);

/* ---- typed records ----
 *
 * A struct per record kind, with a reader and a writer, written at build
 * time from the value column of the key table (records-gen.c), so that
 * the grammar stays the one table: struct preempt_rv_<kind> (kind in
 * lower case: notice, decision, alive, ...), preempt_rv_<kind>_read_(value,
 * workers, &r, &why) and preempt_rv_<kind>_write_(&v, &r, workers, &why),
 * each 0 or the engine's error above. A field inside a group has
 * has_<name> beside its number; a text, word or list field is a pointer,
 * NULL when absent, and read it points into the value with <name>_len
 * beside it; a list is written from <name>_v, <name>_n and <name>_more; a
 * flag is a bool. The readers and writers outside this folder use these
 * alone (tests/records-grammar.sh): a field the grammar lacks does not
 * compile. */
#ifndef PREEMPT_RECORDS_GEN /* records-gen itself, which writes it */
#include "records/records-kinds.h"
#endif

#endif
