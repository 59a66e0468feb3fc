/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/bench-bare.c: the step loop of preempt-bench without the library,
 * linked with libc only: the baseline of the memory figures (it prints its
 * peak resident set at the end). */
#include <stdlib.h>

#include "work.h"

int main(int argc, char **argv)
{
    unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;

    for (unsigned long long i = 0; i < n; i++)
        (void)bench_work(NULL);
    bench_report_hwm();
    return 0;
}
