/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/curl-api.h: libcurl, loaded when it is first needed.
 *
 * A local handler never talks HTTP; only a job's etcd client and a cloud
 * metadata source do. libcurl is therefore not a link-time dependency of
 * libpreempt.so: preempt_http_new_() loads it (dlopen of the soname found
 * by ./configure, PREEMPT_CURL_SONAME) the first time either needs it, and
 * a handler without them never maps it, nor the ~30 libraries it brings
 * (TLS, Kerberos, LDAP ...). It stays loaded for the process's life.
 *
 * Every file that calls libcurl includes this header (through
 * http-internal.h) after <curl/curl.h>: each curl_* function it uses is
 * then a call through preempt_curl_, filled by preempt_curl_load_(). Only
 * the functions listed in PREEMPT_CURL_FUNCS may be called. Before a
 * successful load the table is empty: nothing may call into it but the
 * NULL-safe frees below. */
#ifndef PREEMPT_CURL_API_H
#define PREEMPT_CURL_API_H

#include <curl/curl.h>

/* The functions used: X(return type, name less "curl_", parameters). The
 * table's fields and the loader's lookups are both made from this list, so
 * that no field can stay unfilled. */
#define PREEMPT_CURL_FUNCS(X)                                                                                         \
    X(CURLcode, global_init, (long flags))                                                                            \
    X(void, global_cleanup, (void))                                                                                   \
    X(CURL *, easy_init, (void))                                                                                      \
    X(CURLcode, easy_setopt, (CURL * easy, CURLoption option, ...))                                                   \
    X(CURLcode, easy_getinfo, (CURL * easy, CURLINFO info, ...))                                                      \
    X(void, easy_cleanup, (CURL * easy))                                                                              \
    X(const char *, easy_strerror, (CURLcode code))                                                                   \
    X(CURLM *, multi_init, (void))                                                                                    \
    X(CURLMcode, multi_setopt, (CURLM * multi, CURLMoption option, ...))                                              \
    X(CURLMcode, multi_add_handle, (CURLM * multi, CURL * easy))                                                      \
    X(CURLMcode, multi_remove_handle, (CURLM * multi, CURL * easy))                                                   \
    X(CURLMcode, multi_assign, (CURLM * multi, curl_socket_t s, void *arg))                                           \
    X(CURLMcode, multi_socket_action, (CURLM * multi, curl_socket_t s, int mask, int *running))                       \
    X(CURLMsg *, multi_info_read, (CURLM * multi, int *left))                                                         \
    X(CURLMcode, multi_cleanup, (CURLM * multi))                                                                      \
    X(struct curl_slist *, slist_append, (struct curl_slist * list, const char *s))                                   \
    X(void, slist_free_all, (struct curl_slist * list))

struct preempt_curl_api {
#define PREEMPT_CURL_FIELD_(ret, name, params) ret(*name) params;
    PREEMPT_CURL_FUNCS(PREEMPT_CURL_FIELD_)
#undef PREEMPT_CURL_FIELD_
};

/* Filled once by the first successful preempt_curl_load_(); read-only after. */
extern struct preempt_curl_api preempt_curl_;

/* Loads libcurl (once per process; thread-safe). Returns 0, or -ELIBACC
 * when it cannot be loaded or lacks a function (preempt_curl_error_() says
 * which). In a fault build, the point "libcurl" fails a call. */
int preempt_curl_load_(void);
/* Why the last failed load failed ("" when none did); static. */
const char *preempt_curl_error_(void);

/* NULL-safe, as libcurl's own are, and callable before a load. */
static inline void preempt_curl_easy_cleanup_(CURL *easy)
{
    if (easy)
        preempt_curl_.easy_cleanup(easy);
}
static inline void preempt_curl_slist_free_all_(struct curl_slist *list)
{
    if (list)
        preempt_curl_.slist_free_all(list);
}

/* libcurl's names, as calls through the table (its type-checking macros
 * for the variadic ones give way: each option's argument type is checked
 * by review and by the tests that send every request kind). */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init preempt_curl_.global_init
#define curl_global_cleanup preempt_curl_.global_cleanup
#define curl_easy_init preempt_curl_.easy_init
#define curl_easy_setopt preempt_curl_.easy_setopt
#define curl_easy_getinfo preempt_curl_.easy_getinfo
#define curl_easy_cleanup preempt_curl_easy_cleanup_
#define curl_easy_strerror preempt_curl_.easy_strerror
#define curl_multi_init preempt_curl_.multi_init
#define curl_multi_setopt preempt_curl_.multi_setopt
#define curl_multi_add_handle preempt_curl_.multi_add_handle
#define curl_multi_remove_handle preempt_curl_.multi_remove_handle
#define curl_multi_assign preempt_curl_.multi_assign
#define curl_multi_socket_action preempt_curl_.multi_socket_action
#define curl_multi_info_read preempt_curl_.multi_info_read
#define curl_multi_cleanup preempt_curl_.multi_cleanup
#define curl_slist_append preempt_curl_.slist_append
#define curl_slist_free_all preempt_curl_slist_free_all_

#endif
