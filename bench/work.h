/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/work.h: the training step of the benchmark loops, one definition
 * for preempt-bench, bench-bare (which links libc only) and bench-worker: a
 * few nanoseconds of arithmetic that the compiler keeps; and the memory
 * figures' report. */
#ifndef PREEMPT_BENCH_WORK_H
#define PREEMPT_BENCH_WORK_H

#include <stdint.h>
#include <stdio.h>

static volatile uint64_t bench_sink;

static __attribute__((noinline)) int bench_work(void *arg)
{
    uint64_t z = bench_sink + (uint64_t)(uintptr_t)arg;

    for (int i = 0; i < 4; i++)
        z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
    bench_sink = z;
    return 0;
}

/* Prints "hwm_kib N": this program's own peak resident set (VmHWM). Not
 * the parent's wait4() figure: a child's ru_maxrss keeps the peak of the
 * image it had before its exec, the fork of preempt-bench, whose own
 * memory would then be the floor of every figure. */
static inline void bench_report_hwm(void)
{
    char line[128];
    unsigned long kib;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %lu", &kib) == 1)
            printf("hwm_kib %lu\n", kib);
    if (f)
        (void)fclose(f);
}

#endif
