/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/port.c: the pure side of the typed port (etcd-internal.h) that the
 * coordinator sees: a reply's accessors and the log formatter. The
 * coordinator (lib/coord*.c, lib/startup.c, lib/offers.c, lib/worker.c)
 * calls these, never the etcd client, libevent or libcurl:
 * tests/fsm-purity.sh checks it from the objects' symbols. */
#include <stdarg.h>
#include <stdio.h>

#include "etcd-internal.h"

void preempt_logf_(void (*log)(int level, const char *msg, void *arg), void *arg, int level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (!log)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log(level, buf, arg);
}

const struct preempt_etcd_kv *preempt_etcd_reply_kv_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res && r->res[i].n > 0 ? &r->res[i].kvs[0] : NULL;
}

int64_t preempt_etcd_reply_count_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res ? r->res[i].count : -1;
}
