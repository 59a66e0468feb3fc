/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/preempt.c: library-wide public helpers (version, error strings). */
#include <stdlib.h>
#include <string.h>

#include "platform-internal.h"
#include "preempt.h"

PREEMPT_EXPORT const char *preempt_version(void)
{
    return PREEMPT_STR_(PREEMPT_VERSION_MAJOR) "." PREEMPT_STR_(PREEMPT_VERSION_MINOR) "." PREEMPT_STR_(PREEMPT_VERSION_PATCH);
}

/* Every error the library returns is a negative errno, so libc's table is
 * the one table of messages. */
PREEMPT_EXPORT const char *preempt_strerror(int err)
{
    if (err == 0)
        return "success";
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

PREEMPT_EXPORT void preempt_free(void *p)
{
    free(p);
}
