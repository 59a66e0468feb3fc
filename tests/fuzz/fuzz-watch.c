/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/fuzz/fuzz-watch.c: libFuzzer harness for what etcd's gateway sends:
 * the watch stream (framing, JSON, classification, key-value decoding, the
 * order of revisions) and the replies to requests (range, txn, lease).
 *
 * The first byte sets the size of the chunks the stream arrives in (as
 * curl's write callback would cut it); the rest is the stream. The decoder
 * must deliver revisions in increasing order, never one below its start, and
 * ignore everything once it has ended. The same bytes are then read as one
 * reply and decoded the ways the client decodes replies. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd-internal.h"

#define START_REV 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    int64_t last_rev;
    unsigned events;
};

static void on_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct seen *s = arg;

    assert(type == PREEMPT_ETCD_PUT || type == PREEMPT_ETCD_DELETE);
    assert(kv->key != NULL && kv->value != NULL);
    /* in revision order; one revision's events (a txn's keys) all, and only from the message that carries them */
    assert(kv->mod_rev >= START_REV && kv->mod_rev >= s->last_rev);
    assert(strlen(kv->value) <= kv->value_len);
    s->last_rev = kv->mod_rev;
    s->events++;
}

static void decode_stream(const uint8_t *data, size_t size)
{
    struct seen s = { .last_rev = 0 };
    struct preempt_watch_dec d = { .prefix = "/fuzz/", .on_event = on_event, .arg = &s };
    size_t chunk = size ? (size_t)data[0] + 1 : 1, off = 1;

    preempt_watch_dec_init_(&d, START_REV);
    while (off < size) {
        size_t n = size - off < chunk ? size - off : chunk;
        enum preempt_watch_end before = d.end, after;
        unsigned events = s.events;

        after = preempt_watch_dec_feed_(&d, (const char *)data + off, n);
        if (before != PREEMPT_WATCH_GOING)
            assert(after == before && s.events == events); /* ended stays ended, silent */
        if (after == PREEMPT_WATCH_REREAD)
            assert(d.next_rev == 0);
        off += n;
    }
    preempt_watch_dec_finish_(&d);
    if (d.end == PREEMPT_WATCH_GOING)
        assert(d.next_rev >= START_REV && (s.events == 0 || d.next_rev > s.last_rev));
    preempt_watch_dec_free_(&d);
}

static void decode_reply(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, 0, &jerr);

    if (!j)
        return;
    /* every kind of answer the typed port decodes: it decodes or says -EPROTO */
    for (int k = PREEMPT_ETCD_RQ_PUT; k <= PREEMPT_ETCD_RQ_TIMETOLIVE; k++) {
        struct preempt_etcd_reply r;
        int rc = preempt_etcd_reply_decode_((enum preempt_etcd_rq)k, j, &r);

        assert(rc == 0 || rc == -EPROTO || rc == -ENOMEM);
        for (size_t i = 0; rc == 0 && i < r.n_res; i++)
            for (size_t m = 0; m < r.res[i].n; m++)
                assert(r.res[i].kvs[m].key && r.res[i].kvs[m].value);
        (void)preempt_etcd_reply_kv_(&r, 0);
        if (rc == 0)
            preempt_etcd_reply_clear_(&r);
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, *raw;
    size_t raw_len;

    decode_stream(data, size);
    decode_reply(data, size);
    s = malloc(size + 1); /* base64 as etcd sends keys and values */
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
        if (preempt_b64_decode_(s, &raw, &raw_len) == 0) {
            assert(raw[raw_len] == '\0');
            free(raw);
        }
        free(s);
    }
    return 0;
}
