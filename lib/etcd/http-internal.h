/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/http-internal.h: libcurl's multi interface on a libevent base (style
 * R13, the hiperfifo recipe), shared by the etcd client and the cloud
 * metadata sources. One persistent event per socket, one timer; no threads,
 * no blocking call.
 *
 * The owner builds each easy handle itself (URL, headers, write function)
 * and hands it over with preempt_http_add_(); done() is called from the loop
 * when the transfer ends. A handle added from inside curl's own callbacks
 * (where curl refuses calls into the multi handle) is queued and added on
 * the next loop pass. preempt_http_remove_() stops a transfer without
 * calling done(); the easy handle stays the owner's to clean up.
 *
 * preempt_http_new_() is where libcurl is loaded (curl-api.h): nothing
 * calls into it before one succeeded. */
#ifndef PREEMPT_HTTP_INTERNAL_H
#define PREEMPT_HTTP_INTERNAL_H

#include <stdbool.h>
#include "curl-api.h" /* libcurl, loaded when first needed */
#include <event2/event.h>

struct preempt_http;

/* Runs base (EVLOOP_ONCE at a time) until done(arg) holds or bound_ms
 * passes: the bounded wait for last writes and replies. Returns 0 when
 * done, -ETIMEDOUT, or -ENOMEM. */
int preempt_run_until_(struct event_base *base, uint64_t bound_ms, bool (*done)(void *arg), void *arg);

/* A transfer ended: res is curl's result (CURLE_OK: the reply is complete,
 * whatever its HTTP status). Called from the loop, never from inside a call
 * into this API. */
typedef void (*preempt_http_done)(CURL *easy, CURLcode res, void *arg);

/* Returns 0, -ENOMEM, or -ELIBACC when libcurl cannot be loaded
 * (preempt_curl_error_() says why). */
int preempt_http_new_(struct event_base *base, struct preempt_http **ret);
/* Frees the multi handle; the owner removes its transfers first. NULL-safe. */
void preempt_http_free_(struct preempt_http *h);
/* Starts easy (borrowed until done() or preempt_http_remove_()).
 * Returns 0 or -ENOMEM. */
int preempt_http_add_(struct preempt_http *h, CURL *easy, preempt_http_done done, void *arg);
/* Stops easy (started or queued) without calling done(). NULL-safe. */
void preempt_http_remove_(struct preempt_http *h, CURL *easy);
/* True inside curl's callbacks (a write function, for example). */
bool preempt_http_in_callback_(const struct preempt_http *h);

/* Stops *easy (NULL-safe), cleans it up and frees its header list; both
 * pointers are set to NULL. */
void preempt_http_drop_(struct preempt_http *h, CURL **easy, struct curl_slist **hdrs);

/* A reply body collected in memory, NUL-terminated; a reply longer than max
 * ends the transfer with a write error. Give preempt_http_body_write_ as
 * CURLOPT_WRITEFUNCTION and the struct as CURLOPT_WRITEDATA. */
struct preempt_http_body {
    char *data;
    size_t len, cap, max;
};
size_t preempt_http_body_write_(char *data, size_t size, size_t n, void *arg);

#endif
