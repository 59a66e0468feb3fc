/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/allreduce.h: a blocking all-reduce among a job's workers over
 * loopback TCP, for preempt-trainer --allreduce. It blocks as NCCL, gloo and
 * MPI collectives block: a worker cannot finish a step until every worker
 * has entered it, which is what data-parallel training does to a
 * preemption protocol. Worker 0 is the hub: it listens on the port, the
 * others connect to it; each reduction sends one number to the hub and
 * waits for the sum. */
#ifndef PREEMPT_ALLREDUCE_H
#define PREEMPT_ALLREDUCE_H

#include <stdint.h>

struct allreduce;

/* Connects worker @p worker of @p workers through 127.0.0.1:@p port, waiting
 * at most @p timeout_ms for the others; every later reduction waits at most
 * that long too. Returns 0 or a negative errno. */
int allreduce_open(unsigned worker, unsigned workers, unsigned port, unsigned timeout_ms, struct allreduce **ret);

/* The sum of every worker's @p in, in *ret_sum. Blocks until every worker
 * has contributed. Returns 0, or a negative errno when a worker is gone or
 * the wait timed out. */
int allreduce_sum(struct allreduce *a, uint64_t in, uint64_t *ret_sum);

/* Closes the connections. NULL-safe. */
void allreduce_close(struct allreduce *a);

#endif
