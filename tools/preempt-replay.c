/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/preempt-replay.c: replays a recorded trace (text or binary) through
 * the pure core and reports the first record whose outcome differs. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "trace/trace-internal.h"

static const char usage[] =
    "Usage: preempt-replay [--print] [--record OUT] [--quiet] FILE\n"
    "\n"
    "Feeds the events of a trace through libpreempt's pure state machine and\n"
    "compares each record: the state before, the verdict, the state after and\n"
    "the effects with their arguments. FILE is a text trace (a scenario in\n"
    "tests/traces/, or the library's text log) or a binary trace. A text\n"
    "trace of a worker of a job also holds the job's records as it read them\n"
    "(\"job\" lines, a round's shard reports included), the answers to its\n"
    "driver claim, as the driver its reads of the memberships, its writes\n"
    "that failed for good, its lease's grants and keep-alives, its\n"
    "notice's put and its reads of the records while its watch is down\n"
    "(\"answer\" lines): each goes through the job's view\n"
    "again (an answer: what it says is computed again; a read: who it says is\n"
    "lost, with the reads before it) and its meaning is compared; a round's\n"
    "commit must say what the reports read before it say; the transitions of\n"
    "the job's declared machines (\"decl\" lines: start-up's and the\n"
    "coordinator's, fsmdump --machine job) are each stepped through its\n"
    "machine's table again (every machine, and every named instance of one:\n"
    "decision#<round+1>, a start-up phase's phase-end#<phase> ..., held from\n"
    "its first state: each line must start where its machine's last one\n"
    "ended), and an input a record or answer causes\n"
    "(next-episode, the episode machine's seen, the decision machine's\n"
    "all-reported, the claim machine's answers, a lease's grant and its\n"
    "expiry, the watch machine's read) must follow its line; and\n"
    "every event the job told the machine (the claim's answer, a round's\n"
    "step, its decision, the final round, a lost peer, a peer's error, a\n"
    "peer's notice, the operator's notice, a failed write) must be what a\n"
    "line read before it says. Such a trace also holds each input of the\n"
    "job's coordinator with all it carries (an answer, a watch's records, a\n"
    "tick, an effect of the machine ...) and each of its outputs (a request,\n"
    "its timer, an event for the machine ...: \"coord\" lines): the\n"
    "coordinator runs again from its start over those inputs, and each\n"
    "output it makes must be the trace's (--print and --record keep only\n"
    "the machine's records).\n"
    "\n"
    "  -p, --print       print what the machine did, one text record per line\n"
    "                    (this converts a binary trace to text)\n"
    "  -r, --record OUT  write what the machine did as a binary trace to OUT\n"
    "  -q, --quiet       print nothing on success\n"
    "  -h, --help        this text\n"
    "      --version     the version\n"
    "\n"
    "Exit status: 0 when every record matches; 1 at the first divergence, after\n"
    "printing its record number, the expected and the actual outcome; 2 on bad\n"
    "usage or input (unreadable, truncated or malformed trace, unknown names).\n";

static void print_divergence(const char *path, const struct preempt_trace_file *t, size_t i,
                             const struct preempt_trace_rec *actual)
{
    char line[512], want[384], got[384];

    if (preempt_trace_format_(line, sizeof(line), &t->recs[i], NULL) < 0)
        (void)snprintf(line, sizeof(line), "(record too long to print)");
    if (preempt_trace_format_outcome_(want, sizeof(want), &t->recs[i]) < 0)
        (void)snprintf(want, sizeof(want), "?");
    if (preempt_trace_format_outcome_(got, sizeof(got), actual) < 0)
        (void)snprintf(got, sizeof(got), "?");
    if (t->lines)
        fprintf(stderr, "preempt-replay: %s: record %zu (line %u) diverges\n", path, i + 1, t->lines[i]);
    else
        fprintf(stderr, "preempt-replay: %s: record %zu diverges\n", path, i + 1);
    fprintf(stderr, "  record:   %s\n  expected: %s\n  actual:   %s\n", line, want, got);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "print", no_argument, NULL, 'p' }, { "record", required_argument, NULL, 'r' },
        { "quiet", no_argument, NULL, 'q' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, TOOL_OPT_VERSION }, { NULL, 0, NULL, 0 },
    };
    const char *record = NULL;
    bool print = false, quiet = false;
    struct preempt_trace_file t;
    struct preempt_core core = preempt_fsm_init_();
    struct preempt_trace_rec prev;
    FILE *out = NULL;
    char err[4096], line[512];
    size_t diverged = 0, n_jobs = 0, n_decls = 0, n_causes = 0, n_cin = 0, n_cout = 0;
    int c, rc = 0;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":pr:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            print = true;
            break;
        case 'r':
            record = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case TOOL_OPT_VERSION:
            return tool_version("preempt-replay");
        default:
            return tool_option_error("preempt-replay", c, argv);
        }
    }
    if (optind + 1 != argc)
        return tool_usage_error("preempt-replay", "expected one trace file, not %d arguments", argc - optind);
    if (preempt_trace_load_(argv[optind], &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "preempt-replay: %s\n", err);
        return 2;
    }
    if (record) {
        errno = 0;
        out = fopen(record, "wb");
        if (!out || preempt_trace_write_magic_(out) < 0 || preempt_trace_write_config_(out, &t.cfg) < 0) {
            fprintf(stderr, "preempt-replay: cannot write %s: %s\n", record, strerror(errno ? errno : EIO));
            rc = 2;
            goto done;
        }
    }
    if (print && preempt_trace_format_config_(line, sizeof(line), &t.cfg) >= 0)
        printf("%s\n", line);
    for (size_t i = 0; i < t.n; i++) {
        struct preempt_trace_rec actual;
        bool match = preempt_replay_record_(&core, &t.cfg, &t.recs[i], &actual);

        if (!match && !diverged) {
            print_divergence(argv[optind], &t, i, &actual);
            diverged = i + 1;
        }
        if (print) {
            if (preempt_trace_format_(line, sizeof(line), &actual, i ? &prev : NULL) < 0) {
                fprintf(stderr, "preempt-replay: record %zu is too long to print\n", i + 1);
                rc = 2;
                goto done;
            }
            printf("%s\n", line);
        }
        errno = 0;
        if (out && preempt_trace_write_record_(out, &actual) < 0) {
            fprintf(stderr, "preempt-replay: cannot write %s: %s\n", record, strerror(errno ? errno : EIO));
            rc = 2;
            goto done;
        }
        prev = actual;
        if (diverged && !print && !out)
            break;
    }
    if (!diverged) { /* the job's view: its inputs through the pure view */
        int v = preempt_trace_replay_view_(&t, &n_jobs, err, sizeof(err));

        if (v != 0) {
            fprintf(stderr, "preempt-replay: %s: %s\n", argv[optind], err);
            rc = v < 0 ? 2 : 1;
            goto done;
        }
    }
    if (!diverged && preempt_trace_replay_decls_(&t, &n_decls, err, sizeof(err)) != 0) {
        fprintf(stderr, "preempt-replay: %s: %s\n", argv[optind], err); /* a declared machine's transition */
        rc = 1;
        goto done;
    }
    if (!diverged) { /* what the job told the machine: each from a record read before it */
        int v = preempt_trace_replay_causes_(&t, &n_causes, err, sizeof(err));

        if (v != 0) {
            fprintf(stderr, "preempt-replay: %s: %s\n", argv[optind], err);
            rc = v < 0 ? 2 : 1;
            goto done;
        }
    }
    err[0] = '\0'; /* stays empty unless the coordinator's replay stops early, or diverges */
    if (!diverged) { /* the coordinator again, over its inputs */
        int v = preempt_trace_replay_coord_(t.coord, t.n_coord, &n_cin, &n_cout, err, sizeof(err));

        if (v != 0) {
            fprintf(stderr, "preempt-replay: %s: %s\n", argv[optind], err);
            rc = v;
            goto done;
        }
    }
    if (diverged)
        rc = 1;
    else if (!quiet)
        fprintf(stderr,
                "preempt-replay: %s: %zu records match, final state %s; %zu job view lines match; %zu declared "
                "machines' transitions match; %zu events the job told the machine have their records; the "
                "coordinator ran again over %zu inputs and made the trace's %zu outputs%s%s%s\n",
                argv[optind], t.n, preempt_state_to_string(core.state), n_jobs, n_decls, n_causes, n_cin, n_cout,
                err[0] ? " (" : "", err, err[0] ? ")" : "");
done:
    if (out && fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "preempt-replay: cannot write %s: %s\n", record, strerror(errno));
        rc = 2;
    }
    preempt_trace_file_free_(&t);
    return rc;
}
