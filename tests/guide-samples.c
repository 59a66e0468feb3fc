/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/guide-samples.c: the guide's C fragments, each as it is printed
 * there (between "guide:" and "end" comments, at the line's start), inside
 * a function that gives it its context. tests/docs.sh checks that every C
 * block of the README and the guide is a whole example program or appears
 * word for word in this file, examples/ or tests/man-examples.c, and
 * compiles this file against the header and the library with -Wall
 * -Wextra -Werror. */
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>

#include <libpreempt/preempt.h>

int sample_any_loop(struct preempt_handler *h);
int sample_two_phase(struct preempt_handler *h, void *staging, const void *state, size_t len, const void *meta,
                     size_t meta_len);

int sample_any_loop(struct preempt_handler *h)
{
/* guide: docs/guide/c-api.md, "Any other event loop" */
int fd;

preempt_handler_get_fd(h, &fd);                      /* an epoll descriptor; never close it */
for (;;) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int64_t ms;

    preempt_handler_get_timeout(h, &ms);             /* -1: only the descriptor can wake it */
    poll(&p, 1, ms < 0 || ms > INT_MAX ? -1 : (int)ms);
    preempt_handler_process(h);                      /* signals, timers, etcd; never blocks */
    /* ... run steps with preempt_step_end() and the save calls, as above ... */
}
/* end */
}

/* guide: docs/guide/two-phase.md, the snapshot's release */
static void release(void *data, void *ud) { (void)data, (void)ud; /* the buffer is yours again */ }
/* end */

int sample_two_phase(struct preempt_handler *h, void *staging, const void *state, size_t len, const void *meta,
                     size_t meta_len)
{
/* guide: docs/guide/two-phase.md, "Two-phase saves" */
uint64_t step;
preempt_save_begin(h, &step);
memcpy(staging, state, len);                   /* the snapshot: the state at this step */
preempt_save_snapshot(h, "model", staging, len, release, NULL);
preempt_save_blob(h, "meta", meta, meta_len);  /* small ones may still be written now */
preempt_save_done(h, 0);                       /* returns at once; training goes on */
/* end */
    return 0;
}
