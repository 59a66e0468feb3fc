/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/fault-alloc.c: the alloc fault point. In a fault build libpreempt.so
 * is linked with -Wl,--wrap=malloc (and calloc, realloc, strdup, strndup),
 * so the library's own allocations come here; nothing else is linked with
 * those flags, which is why this file is part of libpreempt.la alone. */
#include "fault-internal.h"

#ifdef PREEMPT_FAULTS
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The library's own allocations, redirected here by the linker
 * (-Wl,--wrap=malloc,... on libpreempt.so in a fault build). */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

#define ALLOC_FAULT(ret)                                                                                               \
    do {                                                                                                               \
        int r_ = preempt_fault_(PREEMPT_FAULT_ALLOC);                                                                  \
        if (r_ < 0) {                                                                                                  \
            errno = -r_;                                                                                               \
            return ret;                                                                                                \
        }                                                                                                              \
    } while (0)

void *__wrap_malloc(size_t n)
{
    ALLOC_FAULT(NULL);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    ALLOC_FAULT(NULL);
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    ALLOC_FAULT(NULL);
    return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    ALLOC_FAULT(NULL);
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    ALLOC_FAULT(NULL);
    return __real_strndup(s, n);
}
#endif
