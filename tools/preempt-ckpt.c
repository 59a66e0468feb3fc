/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-ckpt.c: lists a checkpoint directory's checkpoints (in
 * place and set aside) with whose they are and whether they verify, and
 * puts a set-aside one back. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt-internal.h"
#include "tool.h"

#define NAME "preempt-ckpt"

static const char usage[] =
    "Usage: preempt-ckpt list DIR\n"
    "       preempt-ckpt restore DIR aside/ckpt-<step>[.n]\n"
    "\n"
    "Inspects the checkpoint directory DIR of one libpreempt worker (a\n"
    "multi-worker trainer's DIR/worker-I).\n"
    "\n"
    "  list      one line per checkpoint, in place (newest first) then set aside:\n"
    "            its name, step, verification (ok, corrupt, or why it cannot be\n"
    "            read), total size, whose it is (job, worker, launch), whether\n"
    "            the job's decision on it is pending, and why it was set aside.\n"
    "            Reads only: safe while a trainer runs.\n"
    "  restore   moves a set-aside checkpoint back into place (DIR/ckpt-<step>);\n"
    "            refused while a trainer holds DIR or when that step is in place.\n"
    "            In a multi-worker job, restore the same step on every worker.\n"
    "\n"
    "Checkpoints are set aside (never deleted) when start-up restores an older\n"
    "step, when the trainer's restore callback fails on one, or when a corrupt\n"
    "one is in a save's way; they are removed once a newer step is committed.\n"
    "\n"
    "  --help     this text\n"
    "  --version  the version\n"
    "\n"
    "Exit status: 0 on success; 1 when DIR or the checkpoint cannot be read or\n"
    "moved (the reason is printed); 2 on bad usage.\n";

static void human(uint64_t bytes, char *buf, size_t size)
{
    if (bytes >= 10ull << 30)
        (void)snprintf(buf, size, "%" PRIu64 " GiB", bytes >> 30);
    else if (bytes >= 10ull << 20)
        (void)snprintf(buf, size, "%" PRIu64 " MiB", bytes >> 20);
    else if (bytes >= 10ull << 10)
        (void)snprintf(buf, size, "%" PRIu64 " KiB", bytes >> 10);
    else
        (void)snprintf(buf, size, "%" PRIu64 " B", bytes);
}

static int list(const char *dir)
{
    struct preempt_ckpt_entry *v;
    size_t n;
    int r = preempt_ckpt_entries_(dir, &v, &n);

    if (r < 0) {
        fprintf(stderr, NAME ": cannot read %s: %s\n", dir, strerror(-r));
        return 1;
    }
    if (n == 0)
        printf("no checkpoints in %s\n", dir);
    for (size_t i = 0; i < n; i++) {
        const struct preempt_ckpt_entry *e = &v[i];
        char size[32], who[PREEMPT_CKPT_MAX_JOB + PREEMPT_CKPT_MAX_LAUNCH + 64];
        const char *status = e->status == 0 ? "ok" : e->status == -EBADMSG ? "corrupt" : "unreadable";

        human(e->bytes, size, sizeof(size));
        if (e->version >= 2)
            (void)snprintf(who, sizeof(who), "job %s, worker %u of %u, launch %s", e->job[0] ? e->job : "(none)",
                           e->worker, e->workers, e->launch[0] ? e->launch : "unknown");
        else
            (void)snprintf(who, sizeof(who), "%s", e->version ? "writer unknown (manifest v1)" : "-");
        printf("%-34s step %-10" PRIu64 " %-10s %-9s %s%s", e->name, e->step, status, e->status ? "-" : size, who,
               e->pending ? "; pending the job's decision" : "");
        if (e->status)
            printf("; %s", e->why);
        else if (e->aside)
            printf("; set aside: %s", e->why[0] ? e->why : "reason not recorded");
        printf("\n");
    }
    free(v);
    return 0;
}

static int restore(const char *dir, const char *name)
{
    static const struct preempt_ckpt_id tool = { 0 };
    struct preempt_ckpt_store *s;
    const char *base = strncmp(name, "aside/", 6) ? name : name + 6;
    int r = preempt_ckpt_open_(dir, 0, &tool, NULL, NULL, &s);

    if (r < 0) {
        fprintf(stderr, NAME ": cannot open %s: %s\n", dir,
                r == -EBUSY ? "a trainer holds it (stop it first)" : strerror(-r));
        return 1;
    }
    r = preempt_ckpt_unset_aside_(s, base);
    preempt_ckpt_close_(s);
    if (r < 0) {
        fprintf(stderr, NAME ": cannot restore %s/%s: %s\n", dir, name,
                r == -EEXIST  ? "a checkpoint of its step is in place"
                : r == -EINVAL ? "not the name of a set-aside checkpoint (see preempt-ckpt list)"
                               : strerror(-r));
        return 1;
    }
    printf("%s/%s is back in place\n", dir, name);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
                                          { "version", no_argument, NULL, TOOL_OPT_VERSION },
                                          { NULL, 0, NULL, 0 } };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage, stdout); return 0;
        case TOOL_OPT_VERSION: return tool_version(NAME);
        default: return tool_option_error(NAME, c, argv);
        }
    }
    if (optind >= argc)
        return tool_usage_error(NAME, "a command is required (list or restore)");
    if (!strcmp(argv[optind], "list")) {
        if (argc - optind != 2)
            return tool_usage_error(NAME, "list takes one directory");
        return list(argv[optind + 1]);
    }
    if (!strcmp(argv[optind], "restore")) {
        if (argc - optind != 3)
            return tool_usage_error(NAME, "restore takes a directory and a set-aside checkpoint's name");
        return restore(argv[optind + 1], argv[optind + 2]);
    }
    return tool_usage_error(NAME, "unknown command '%s'", argv[optind]);
}
