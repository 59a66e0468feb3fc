/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/curl-api.c: loads libcurl when it is first needed (curl-api.h). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "curl-api.h"
#include "base/base.h"

struct preempt_curl_api preempt_curl_;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = -ELIBACC;
static char why[256];

static void load(void)
{
    struct preempt_curl_api api;
    void *lib = dlopen(PREEMPT_CURL_SONAME, RTLD_NOW | RTLD_LOCAL), *sym;
    const char *err;

    if (!lib) {
        err = dlerror();
        (void)snprintf(why, sizeof(why), "%s", err ? err : "cannot load " PREEMPT_CURL_SONAME);
        return;
    }
#define X(ret, n, params)                                                                                             \
    if (!(sym = dlsym(lib, "curl_" #n))) {                                                                            \
        (void)snprintf(why, sizeof(why), "%s lacks curl_" #n, PREEMPT_CURL_SONAME);                                  \
        return; /* the library stays mapped: it may be the process's own libcurl */                                   \
    }                                                                                                                 \
    memcpy(&api.n, &sym, sizeof(sym));
    PREEMPT_CURL_FUNCS(X)
#undef X
    preempt_curl_ = api;
    loaded = 0;
}

int preempt_curl_load_(void)
{
    if (preempt_fault_(PREEMPT_FAULT_LIBCURL) < 0) {
        (void)snprintf(why, sizeof(why), "%s", "libcurl: injected fault");
        return -ELIBACC;
    }
    if (pthread_once(&once, load) != 0)
        return -ELIBACC;
    return loaded;
}

const char *preempt_curl_error_(void)
{
    return why;
}
