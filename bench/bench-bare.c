/* bench/bench-bare.c: the step loop of preempt-bench without the library,
 * linked with libc only: the baseline of the memory figures. */
#include <stdint.h>
#include <stdlib.h>

static volatile uint64_t sink;

static __attribute__((noinline)) int work(void *arg)
{
    uint64_t z = sink + (uint64_t)(uintptr_t)arg;

    for (int i = 0; i < 4; i++)
        z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
    sink = z;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;

    for (unsigned long long i = 0; i < n; i++)
        (void)work(NULL);
    return 0;
}
