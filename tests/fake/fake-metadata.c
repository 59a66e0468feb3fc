/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/fake/fake-metadata.c: a cloud instance metadata service for tests,
 * on loopback only (libevent's evhttp). It serves the files of a directory
 * and enforces what the real services enforce, so that a test changes a
 * file and the library sees a cloud change its answer:
 *
 *   GET  /PATH            the file DIR/PATH (query string ignored); 404 when
 *                         absent. DIR/PATH.status overrides the status,
 *                         DIR/PATH.delay_ms delays the reply (a slow or hung
 *                         endpoint), DIR/PATH.reset holding 1 drops the
 *                         connection without a reply ("RESET PATH"),
 *                         whatever .status says.
 *   GCE  /computeMetadata/...  needs "Metadata-Flavor: Google" (else 403) and
 *                         refuses X-Forwarded-For; replies carry an ETag (a
 *                         hash of the content; with DIR/etag_opaque, one
 *                         with '+', '/' and '=' that a query must escape); ?wait_for_change=true
 *                         &last_etag=E holds the reply until the content
 *                         changes or timeout_sec passes.
 *   AWS  PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
 *                         issues a token; /latest/meta-data/... needs a valid
 *                         X-aws-ec2-metadata-token (else 401), or none when
 *                         DIR/imdsv1 holds 1 (IMDSv1 allowed). Tokens expire
 *                         after DIR/token_life_ms (default: their TTL);
 *                         latest/api/token.delay_ms holds the token's answer
 *                         (hop limit 1: it never comes back).
 *   Azure /metadata/...   needs "Metadata: true" (else 400). POST
 *                         /metadata/scheduledevents (the approval, with
 *                         StartRequests) prints "APPROVE BODY", answers 200.
 *
 * Prints "port N" when it listens, then one line per reply:
 * "METHOD PATH STATUS", and "WAIT PATH ETAG" when a long poll starts.
 * Stops on SIGTERM. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define MAX_TOKENS 256

static const char *dir;
static struct event_base *base;
static struct { char tok[32]; uint64_t expires; } tokens[MAX_TOKENS];
static unsigned n_tokens;

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Reads DIR/path[suffix]; returns a malloc'ed string or NULL. */
static char *read_file(const char *path, const char *suffix, size_t *ret_len)
{
    char full[4096];
    FILE *f;
    char *buf;
    long n;

    if (strstr(path, ".."))
        return NULL;
    snprintf(full, sizeof(full), "%s%s%s", dir, path, suffix);
    f = fopen(full, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    if (ret_len)
        *ret_len = (size_t)n;
    return buf;
}

static long read_number(const char *path, const char *suffix, long def)
{
    char *s = read_file(path, suffix, NULL);
    long v = s ? strtol(s, NULL, 10) : def;

    free(s);
    return v;
}

static unsigned long hash(const char *s)
{
    unsigned long h = 5381;

    while (s && *s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

/* The ETag of a body: a hash, or, when DIR/etag_opaque exists, an opaque
 * one with the characters a query must escape ('+', '/', '='), as
 * emulators make them. */
static void make_etag(const char *body, char *out, size_t size)
{
    char *opaque = read_file("/etag_opaque", "", NULL);

    snprintf(out, size, opaque ? "v1+%lx/==" : "%lx", hash(body));
    free(opaque);
}

struct pending {
    struct evhttp_request *req;
    char path[1024];
    char etag[32];
    uint64_t until;
    struct event *ev;
    bool gce_wait;
};

static void reply(struct evhttp_request *req, const char *path, int status, const char *body, size_t len)
{
    struct evbuffer *b = evbuffer_new();
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);

    if (body)
        evbuffer_add(b, body, len);
    printf("%s %s %d\n", cmd == EVHTTP_REQ_PUT ? "PUT" : cmd == EVHTTP_REQ_POST ? "POST" : "GET", path, status);
    fflush(stdout);
    evhttp_send_reply(req, status, status == 200 ? "OK" : "Error", b);
    evbuffer_free(b);
}

/* Sends the file's current content (or 404), with its status override. */
static void serve(struct evhttp_request *req, const char *path, bool gce)
{
    size_t len = 0;
    char *body = read_file(path, "", &len);
    int status = (int)read_number(path, ".status", body ? 200 : 404);

    if (gce && body) {
        char etag[32];

        make_etag(body, etag, sizeof(etag));
        evhttp_add_header(evhttp_request_get_output_headers(req), "ETag", etag);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Metadata-Flavor", "Google");
    }
    reply(req, path, status, body ? body : "not found\n", body ? len : 10);
    free(body);
}

static void on_pending(evutil_socket_t fd, short what, void *arg)
{
    struct pending *p = arg;
    char *body;
    char etag[32] = "";

    (void)fd;
    (void)what;
    if (p->gce_wait) {
        body = read_file(p->path, "", NULL);
        if (body)
            make_etag(body, etag, sizeof(etag));
        free(body);
        if (!strcmp(etag, p->etag) && now_ms() < p->until) {
            struct timeval tv = { 0, 20000 };

            evtimer_add(p->ev, &tv);
            return;
        }
    }
    serve(p->req, p->path, p->gce_wait || !strncmp(p->path, "/computeMetadata/", 17));
    event_free(p->ev);
    free(p);
}

static void later(struct evhttp_request *req, const char *path, long delay_ms, bool gce_wait, const char *etag,
                  long timeout_s)
{
    struct pending *p = calloc(1, sizeof(*p));
    struct timeval tv = { delay_ms / 1000, (delay_ms % 1000) * 1000 };

    p->req = req;
    snprintf(p->path, sizeof(p->path), "%s", path);
    snprintf(p->etag, sizeof(p->etag), "%s", etag ? etag : "");
    p->gce_wait = gce_wait;
    p->until = now_ms() + (uint64_t)timeout_s * 1000;
    p->ev = evtimer_new(base, on_pending, p);
    evtimer_add(p->ev, &tv);
}

/* Azure's approval: POST scheduledevents {"StartRequests":[{"EventId":..}]}
 * is printed as "APPROVE BODY" and answered 200 (an empty body is 400). */
static void approve(struct evhttp_request *req, const char *path)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = calloc(1, len + 1);

    if (body)
        evbuffer_copyout(in, body, len);
    printf("APPROVE %s\n", body ? body : "");
    if (!body || len == 0 || !strstr(body, "\"StartRequests\""))
        reply(req, path, 400, "{\"error\":\"Bad request\"}", 23);
    else
        reply(req, path, 200, "", 0);
    free(body);
}

static bool token_ok(const char *tok)
{
    for (unsigned i = 0; tok && i < n_tokens; i++)
        if (!strcmp(tokens[i].tok, tok))
            return now_ms() < tokens[i].expires;
    return false;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    const char *uri = evhttp_request_get_uri(req);
    struct evkeyvalq *in = evhttp_request_get_input_headers(req), q;
    struct evhttp_uri *u = evhttp_uri_parse(uri);
    const char *path = u && evhttp_uri_get_path(u) ? evhttp_uri_get_path(u) : "/";
    const char *query = u ? evhttp_uri_get_query(u) : NULL;
    long delay;

    (void)arg;
    TAILQ_INIT(&q);
    if (query)
        evhttp_parse_query_str(query, &q);
    delay = read_number(path, ".delay_ms", 0);
    if (read_number(path, ".reset", 0) > 0) { /* the connection drops without a reply */
        struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));

        printf("RESET %s\n", path);
        fflush(stdout);
        shutdown(bufferevent_getfd(bev), SHUT_RDWR); /* libevent sees the end and frees the request */
    } else if (!strncmp(path, "/computeMetadata/", 17)) {
        const char *flavor = evhttp_find_header(in, "Metadata-Flavor");
        const char *wait = evhttp_find_header(&q, "wait_for_change");
        const char *etag = evhttp_find_header(&q, "last_etag");
        const char *ts = evhttp_find_header(&q, "timeout_sec");

        if (!flavor || strcmp(flavor, "Google") || evhttp_find_header(in, "X-Forwarded-For"))
            reply(req, path, 403, "Missing Metadata-Flavor:Google header.\n", 38);
        else if (wait && !strcmp(wait, "true") && etag) {
            printf("WAIT %s %s\n", path, etag);
            fflush(stdout);
            later(req, path, delay, true, etag, ts ? strtol(ts, NULL, 10) : 300);
        }
        else if (delay)
            later(req, path, delay, false, NULL, 0);
        else
            serve(req, path, true);
    } else if (!strcmp(path, "/latest/api/token")) {
        const char *ttl = evhttp_find_header(in, "X-aws-ec2-metadata-token-ttl-seconds");
        long t = ttl ? strtol(ttl, NULL, 10) : 0;

        if (delay) { /* a container behind hop limit 1: the token's answer never comes back */
            later(req, path, delay, false, NULL, 0);
        } else if (evhttp_request_get_command(req) != EVHTTP_REQ_PUT || t < 1 || t > 21600) {
            reply(req, path, 400, "bad token request\n", 18);
        } else {
            unsigned i = n_tokens < MAX_TOKENS ? n_tokens++ : MAX_TOKENS - 1;

            snprintf(tokens[i].tok, sizeof(tokens[i].tok), "tok-%u-%lx", i, (unsigned long)now_ms());
            tokens[i].expires = now_ms() + (uint64_t)read_number("/token_life_ms", "", t * 1000);
            reply(req, path, 200, tokens[i].tok, strlen(tokens[i].tok));
        }
    } else if (!strncmp(path, "/latest/", 8)) {
        const char *tok = evhttp_find_header(in, "X-aws-ec2-metadata-token");

        /* IMDSv1 allowed (DIR/imdsv1 holds 1): a request without a token
         * is served; one with a bad token is refused all the same */
        if (tok ? !token_ok(tok) : read_number("/imdsv1", "", 0) != 1)
            reply(req, path, 401, "", 0);
        else if (delay)
            later(req, path, delay, false, NULL, 0);
        else
            serve(req, path, false);
    } else if (!strncmp(path, "/metadata/", 10)) {
        const char *m = evhttp_find_header(in, "Metadata");

        if (!m || strcmp(m, "true"))
            reply(req, path, 400, "{\"error\":\"Bad request. Required metadata header not specified\"}", 62);
        else if (evhttp_request_get_command(req) == EVHTTP_REQ_POST)
            approve(req, path);
        else if (delay)
            later(req, path, delay, false, NULL, 0);
        else
            serve(req, path, false);
    } else {
        reply(req, path, 404, "", 0);
    }
    evhttp_clear_headers(&q);
    if (u)
        evhttp_uri_free(u);
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
    struct evhttp *http;
    struct evhttp_bound_socket *s;
    struct event *term;
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof(ss);

    if (argc != 2) {
        fprintf(stderr, "usage: fake-metadata DIR\n");
        return 2;
    }
    dir = argv[1];
    base = event_base_new();
    http = evhttp_new(base);
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_PUT | EVHTTP_REQ_POST);
    evhttp_set_gencb(http, on_request, NULL);
    s = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    if (!s) {
        fprintf(stderr, "fake-metadata: cannot listen on 127.0.0.1\n");
        return 1;
    }
    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss, &len);
    printf("port %d\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
    fflush(stdout);
    term = evsignal_new(base, SIGTERM, on_term, NULL);
    event_add(term, NULL);
    event_base_dispatch(base);
    event_free(term);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}
