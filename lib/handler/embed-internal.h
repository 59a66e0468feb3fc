/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/embed-internal.h: a libevent base driven from another event loop
 * (the handler's preempt_handler_get_fd(), _get_timeout(), _process()).
 *
 * The descriptor is an epoll descriptor: readable whenever a descriptor
 * the base waits on is ready, or its earliest timer is due (a timerfd in
 * the same set). It is kept in line with the base by
 * preempt_embed_timeout_() and preempt_embed_process_(): call the former
 * after anything else ran on the base (an API call that added events)
 * before waiting. Not thread-safe: one thread, the loop's. */
#ifndef PREEMPT_EMBED_INTERNAL_H
#define PREEMPT_EMBED_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct preempt_embed;

/* Mirrors base (borrowed; it must outlive the mirror). 0 or a negative
 * errno. Ownership: *ret is freed with preempt_embed_free_(). */
int preempt_embed_new_(struct event_base *base, struct preempt_embed **ret);
void preempt_embed_free_(struct preempt_embed *m);

/* The descriptor to wait on for reading (owned by the mirror). */
int preempt_embed_fd_(const struct preempt_embed *m);

/* Syncs, then: milliseconds until the base must run even if the
 * descriptor stays quiet (0: now), or -1 when only a descriptor can wake it. */
int64_t preempt_embed_timeout_(struct preempt_embed *m);

/* Runs the base once without blocking (what is ready, what is due), then
 * syncs. 0 or a negative errno. */
int preempt_embed_process_(struct preempt_embed *m);

#endif
