/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/work.h: the training step of the benchmark loops, one definition
 * for preempt-bench and bench-bare (which links libc only): a few
 * nanoseconds of arithmetic that the compiler keeps. */
#ifndef PREEMPT_BENCH_WORK_H
#define PREEMPT_BENCH_WORK_H

#include <stdint.h>

static volatile uint64_t bench_sink;

static __attribute__((noinline)) int bench_work(void *arg)
{
    uint64_t z = bench_sink + (uint64_t)(uintptr_t)arg;

    for (int i = 0; i < 4; i++)
        z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
    bench_sink = z;
    return 0;
}

#endif
