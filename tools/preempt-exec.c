/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-exec.c: blocks the notice signals, then execs the trainer,
 * so that the program and every thread it ever starts inherit the mask
 * from their first instruction (the signal mask survives execve and is
 * inherited by new threads). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "preempt.h"
#include "tool.h"

#define NAME "preempt-exec"

static const char usage[] =
    "Usage: preempt-exec [--signal SIG]... -- COMMAND [ARGS]\n"
    "\n"
    "Blocks the notice signals (default SIGTERM) and executes COMMAND in\n"
    "this process, so that the program and all its threads start with them\n"
    "blocked and libpreempt's handler reads them from its signalfd. Use it to\n"
    "start trainers whose runtime starts threads before the program can call\n"
    "preempt_block_signals(): Python (PyTorch starts several at import),\n"
    "the JVM, and any program that gets a notice in its first milliseconds.\n"
    "\n"
    "  --signal SIG   a notice signal (TERM, USR1, ...; repeatable)\n"
    "  --help         this text\n"
    "  --version      the version\n"
    "\n"
    "Exit status: COMMAND's, once it runs; 2 on bad usage; 127 when COMMAND\n"
    "cannot be executed (the reason is printed).\n";

int main(int argc, char **argv)
{
    static const struct option opts[] = { { "signal", required_argument, NULL, 's' },
                                          { "help", no_argument, NULL, 'h' },
                                          { "version", no_argument, NULL, TOOL_OPT_VERSION },
                                          { NULL, 0, NULL, 0 } };
    struct preempt_config cfg;
    unsigned n = 0;
    int c, r;

    preempt_config_init(&cfg);
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if ((r = tool_signal(optarg)) < 0)
                return tool_usage_error(NAME, "--signal: '%s' is not a known signal", optarg);
            if (n + 1 >= sizeof(cfg.signals) / sizeof(cfg.signals[0]))
                return tool_usage_error(NAME, "too many --signal options");
            cfg.signals[n++] = r;
            cfg.signals[n] = 0;
            break;
        case 'h': fputs(usage, stdout); return 0;
        case TOOL_OPT_VERSION: return tool_version(NAME);
        default: return tool_option_error(NAME, c, argv);
        }
    }
    if (optind >= argc)
        return tool_usage_error(NAME, "a command is required (preempt-exec -- COMMAND ARGS)");
    if ((r = preempt_block_signals(&cfg)) < 0) {
        fprintf(stderr, NAME ": cannot block the notice signals: %s\n", strerror(-r));
        return 2;
    }
    execvp(argv[optind], argv + optind);
    fprintf(stderr, NAME ": cannot execute %s: %s\n", argv[optind], strerror(errno));
    return 127;
}
