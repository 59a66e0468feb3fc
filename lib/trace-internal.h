/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace-internal.h: trace files, text or binary (nanopb), for the shell
 * and the tools. The pure text codec is in fsm/preempt_trace.h. */
#ifndef PREEMPT_TRACE_INTERNAL_H
#define PREEMPT_TRACE_INTERNAL_H

#include <stdio.h>

#include "preempt_trace.h"

/* Binary trace files start with these 8 bytes. */
#define PREEMPT_TRACE_MAGIC "\x89PTRACE\n"
#define PREEMPT_TRACE_MAGIC_LEN 8

/* A whole trace in memory. */
struct preempt_trace_file {
    struct preempt_config_facts cfg;
    bool have_config;
    bool binary;
    struct preempt_trace_rec *recs;
    size_t n;
    unsigned *lines;              /* text: the line of each record; NULL for binary */
};

/* Loads a trace file, text or binary (told apart by the magic). On error
 * returns a negative errno and writes a message naming the file and the
 * line or record into err. An empty trace (no record) is an error.
 * Ownership: *ret owns its arrays; free them with preempt_trace_file_free_(). */
int preempt_trace_load_(const char *path, struct preempt_trace_file *ret, char *err, size_t errsize);
/* The same from memory; `name` is used in messages. */
int preempt_trace_load_mem_(const char *name, const unsigned char *data, size_t len, struct preempt_trace_file *ret,
                            char *err, size_t errsize);
void preempt_trace_file_free_(struct preempt_trace_file *t);

/* Binary writing: the magic, then the config entry, then one entry per
 * record. Returns 0 or a negative errno. */
int preempt_trace_write_magic_(FILE *f);
int preempt_trace_write_config_(FILE *f, const struct preempt_config_facts *cfg);
int preempt_trace_write_record_(FILE *f, const struct preempt_trace_rec *r);

#endif
