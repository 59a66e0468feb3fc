/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/escape-internal.h: the text of a text trace's lines: their bound, and
 * the percent-encoding of the keys, values and messages they carry
 * (lib/base/escape.c). */
#ifndef PREEMPT_ESCAPE_INTERNAL_H
#define PREEMPT_ESCAPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest line of a text trace (the loader's bound). */
#define PREEMPT_TRACE_LINE_MAX 1024

/* A record's value in a trace line, encoded, at most this long (trace-internal.h). */
#define PREEMPT_TRACE_VALUE_MAX 480

/* Percent-encodes s into buf (spaces, '%', controls and non-ASCII as %XX),
 * at most max bytes: false when it was cut (at a whole byte's encoding). */
bool preempt_trace_encode_(char *buf, size_t size, const char *s, size_t max);
/* Decodes n bytes of p into a new string (free it); NULL when malformed
 * (or out of memory). */
char *preempt_trace_decode_(const char *p, size_t n);
/* Reads n bytes of p (not terminated) as a u64 (preempt_parse_u64_). */
bool preempt_trace_u64_(const char *p, size_t n, uint64_t *ret);

/* A decimal u64 filling the whole of s (no sign, no space, no overflow);
 * false otherwise. */
bool preempt_parse_u64_(const char *s, uint64_t *ret);

#endif
