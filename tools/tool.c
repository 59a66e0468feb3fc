/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/tool.c: see tool.h. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool.h"

int tool_version(const char *name)
{
    printf("%s (libpreempt) %s\n", name, PACKAGE_VERSION);
    return 0;
}

int tool_usage_error(const char *name, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", name);
    return TOOL_USAGE;
}

int tool_option_error(const char *name, int c, char *const argv[])
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";

    if (c == ':')
        return tool_usage_error(name, "option '%s' needs a value", arg);
    if (optopt && !(arg[0] == '-' && arg[1] == '-'))
        return tool_usage_error(name, "unknown option '-%c'", optopt);
    return tool_usage_error(name, "unknown option '%s'", arg);
}

int tool_parse_u64(const char *name, const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || s[0] == '+' || s[0] == ' ' || v < min || v > max)
        return tool_usage_error(name, "%s: '%s' is not a number from %" PRIu64 " to %" PRIu64, opt, s, min, max);
    *ret = v;
    return 0;
}

int tool_signal(const char *name)
{
    static const struct { const char *name; int sig; } sigs[] = {
        { "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },   { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
        { "QUIT", SIGQUIT }, { "XCPU", SIGXCPU }, { "PWR", SIGPWR }, { "CONT", SIGCONT },
    };

    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (strcmp(name, sigs[i].name) == 0)
            return sigs[i].sig;
    return -EINVAL;
}
