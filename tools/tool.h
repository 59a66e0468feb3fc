/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/tool.h: what every command-line tool says the same way: its name as
 * users type it (never libtool's .libs/lt- path), its version, and its usage
 * errors (one line and a pointer to --help, exit status 2). */
#ifndef PREEMPT_TOOL_H
#define PREEMPT_TOOL_H

#include <stdint.h>

/* The exit status of bad usage, for every tool. */
#define TOOL_USAGE 2

/* The long option every tool takes besides --help. */
#define TOOL_OPT_VERSION 0x7fff

/* Prints "NAME (libpreempt) VERSION" on stdout; returns 0. */
int tool_version(const char *name);

/* Prints "NAME: MESSAGE" and "Try 'NAME --help' for more information." on
 * stderr; returns TOOL_USAGE. */
int tool_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Turns getopt_long's '?' or ':' (the option string must begin with ':',
 * and opterr be 0) into a usage error naming the option; returns TOOL_USAGE. */
int tool_option_error(const char *name, int c, char *const argv[]);

/* Reads the value S of option OPT as a decimal number from MIN to MAX into
 * *RET; anything else is a usage error. Returns 0 or TOOL_USAGE. */
int tool_parse_u64(const char *name, const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* A signal's number from its name, with or without "SIG" (TERM, INT, HUP,
 * USR1, USR2, QUIT, XCPU, PWR, CONT), or -EINVAL. */
int tool_signal(const char *name);

#endif
