/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/bench-worker.c: bench-bare's loop with a handler and its
 * asynchronous hook, linked with libpreempt only, as a trainer is: the
 * memory figures' worker (preempt-bench itself links libcurl, for its own
 * requests to etcd, so its resident set would count libcurl's libraries
 * for a local handler too).
 *
 * bench-worker STEPS [ETCD]: with ETCD, the handler is a one-worker job's
 * (its lease, its watch, its connections); without, a local handler. It
 * prints its peak resident set at the end (work.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preempt.h"
#include "work.h"

static int on_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h;
    (void)step;
    (void)ud;
    return 0;
}

int main(int argc, char **argv)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = on_save };
    struct preempt_handler *h = NULL;
    unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
    enum preempt_action a;
    char job[64];
    int r = 0;

    preempt_config_init(&cfg);
    cfg.platform = PREEMPT_PLATFORM_NONE;
    if (argc > 2) {
        (void)snprintf(job, sizeof(job), "bench-mem-%d", (int)getpid());
        cfg.etcd_endpoints = argv[2];
        cfg.job = job;
    }
    if (preempt_block_signals(&cfg) < 0 || preempt_handler_new(NULL, &cfg, &cb, NULL, &h) < 0)
        return 1;
    for (unsigned long long i = 0; i < n && r == 0; i++) {
        (void)bench_work(NULL);
        if (preempt_step_end(h, &a) < 0 || a != PREEMPT_ACTION_CONTINUE)
            r = 1;
    }
    preempt_handler_free(h);
    bench_report_hwm();
    return r;
}
