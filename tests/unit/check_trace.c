/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_trace.c: trace records in text and binary form. Random
 * records round-trip through both encodings; every way a line or a file can
 * be bad gets a clear error and never a crash. */
#define _GNU_SOURCE
#include "check-main.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/claim-internal.h"
#include "job/decision-internal.h"
#include "trace/trace-internal.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A small deterministic generator (xorshift), seeded per test. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

/* A random, well-typed record: any event with random parameters, any
 * verdict, effects with arguments of the right kind. */
static void random_record(struct preempt_trace_rec *r, uint64_t seq)
{
    const struct preempt_param_desc *p;

    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->ev.kind = (enum preempt_event_kind)rnd_below(PREEMPT_EV__COUNT);
    r->ev.now_ms = rnd_below(1u << 30);
    p = preempt_event_params_(r->ev.kind);
    for (unsigned i = 0; i < PREEMPT_EVENT_PARAMS; i++) {
        void *at = (char *)&r->ev + p[i].offset;
        switch (p[i].type) {
        case PREEMPT_PT_u64:
            *(uint64_t *)at = rnd() >> 2; /* values up to INT64_MAX survive sint64 */
            break;
        case PREEMPT_PT_i64:
            *(int64_t *)at = (int64_t)(rnd() >> 1) * (rnd_below(2) ? 1 : -1);
            break;
        case PREEMPT_PT_src:
            *(enum preempt_source *)at = (enum preempt_source)rnd_below(PREEMPT_SOURCE__COUNT);
            break;
        case PREEMPT_PT_none:
            break;
        }
    }
    r->run = rnd_below(1000000);
    r->step_ms = rnd_below(5) ? r->step_ms : rnd_below(10000);
    r->save_ms = rnd_below(100000);
    r->agree_ms = rnd_below(100);
    r->from = (enum preempt_state)rnd_below(PREEMPT_STATE__COUNT);
    r->verdict = (enum preempt_verdict)rnd_below(PREEMPT_VERDICT__COUNT);
    r->to = r->verdict == PREEMPT_VERDICT_TRANSITION ? (enum preempt_state)rnd_below(PREEMPT_STATE__COUNT) : r->from;
    r->n_fx = r->verdict == PREEMPT_VERDICT_TRANSITION ? (uint8_t)rnd_below(PREEMPT_FX_MAX + 1) : 0;
    for (unsigned k = 0; k < r->n_fx; k++) {
        r->fx[k].kind = (enum preempt_fx_kind)rnd_below(PREEMPT_FX__COUNT);
        switch (preempt_fx_arg_kind_(r->fx[k].kind)) {
        case PREEMPT_ARG_NONE:
            r->fx[k].arg = 0;
            break;
        case PREEMPT_ARG_STEP:
        case PREEMPT_ARG_TIME:
            r->fx[k].arg = (int64_t)(rnd() >> 2);
            break;
        case PREEMPT_ARG_CODE:
            r->fx[k].arg = -(int64_t)rnd_below(200);
            break;
        case PREEMPT_ARG_EXIT:
            r->fx[k].arg = (int64_t)rnd_below(PREEMPT_EXIT__COUNT);
            break;
        case PREEMPT_ARG__COUNT:
            break;
        }
    }
}

/* Field-by-field equality (the union has padding, so no memcmp). */
static void assert_same_record(const struct preempt_trace_rec *a, const struct preempt_trace_rec *b)
{
    const struct preempt_param_desc *p = preempt_event_params_(a->ev.kind);

    ck_assert_uint_eq(a->seq, b->seq);
    ck_assert_int_eq(a->ev.kind, b->ev.kind);
    ck_assert_uint_eq(a->ev.now_ms, b->ev.now_ms);
    for (unsigned i = 0; i < PREEMPT_EVENT_PARAMS; i++) {
        const char *x = (const char *)&a->ev + p[i].offset, *y = (const char *)&b->ev + p[i].offset;
        switch (p[i].type) {
        case PREEMPT_PT_u64:
        case PREEMPT_PT_i64:
            ck_assert_mem_eq(x, y, 8);
            break;
        case PREEMPT_PT_src:
            ck_assert_int_eq(*(const enum preempt_source *)(const void *)x, *(const enum preempt_source *)(const void *)y);
            break;
        case PREEMPT_PT_none:
            break;
        }
    }
    ck_assert_uint_eq(a->run, b->run);
    ck_assert_uint_eq(a->step_ms, b->step_ms);
    ck_assert_uint_eq(a->save_ms, b->save_ms);
    ck_assert_uint_eq(a->agree_ms, b->agree_ms);
    ck_assert_int_eq(a->from, b->from);
    ck_assert_int_eq(a->to, b->to);
    ck_assert_int_eq(a->verdict, b->verdict);
    ck_assert_uint_eq(a->n_fx, b->n_fx);
    for (unsigned k = 0; k < a->n_fx; k++) {
        ck_assert_int_eq(a->fx[k].kind, b->fx[k].kind);
        ck_assert_int_eq(a->fx[k].arg, b->fx[k].arg);
    }
    ck_assert_uint_eq(b->wild, 0);
}

#define N_RANDOM 2000

static int load_text_trace(const char *text, struct preempt_trace_file *t, char *err, size_t errsize)
{
    return preempt_trace_load_mem_("view", (const unsigned char *)text, strlen(text), t, err, errsize);
}

/* Loads a text trace and runs one of the replays on it: the replay's 0 or
 * 1 (a divergence, err says where), or the load's negative errno. */
typedef int (*replay_fn)(const struct preempt_trace_file *t, size_t *ret_n, char *err, size_t errsize);
static int replay_text(const char *text, replay_fn replay, char *err, size_t errsize)
{
    struct preempt_trace_file t;
    size_t n;
    int r = load_text_trace(text, &t, err, errsize);

    if (r < 0)
        return r;
    r = replay(&t, &n, err, errsize);
    preempt_trace_file_free_(&t);
    return r;
}

/* Traces of a job's answers and the transitions they cause: each text
 * (HEAD, then lines) replays through the view, and through the declared
 * machines with status rc and, when it fails, an error holding why. */
struct decl_case {
    const char *lines;
    int rc;
    const char *why;
};

static void check_decl_cases(const char *head, const struct decl_case *cases, size_t n)
{
    char text[4 * PREEMPT_TRACE_LINE_MAX], err[512];

    for (size_t i = 0; i < n; i++) {
        (void)snprintf(text, sizeof(text), "%s%s", head, cases[i].lines);
        ck_assert_msg(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)) == 0, "%zu: %s", i, err);
        ck_assert_msg(replay_text(text, preempt_trace_replay_decls_, err, sizeof(err)) == cases[i].rc, "%zu: %s", i,
                      err);
        ck_assert_msg(!cases[i].why || strstr(err, cases[i].why), "%zu: %s", i, err);
    }
}

/* A text trace that the declared machines' replay finds diverging, with
 * an error holding why. */
static void decls_diverge(const char *text, const char *why)
{
    struct preempt_trace_file t;
    char err[512];
    size_t n;

    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, why), "%s", err);
    preempt_trace_file_free_(&t);
}

START_TEST(test_text_round_trip)
{
    struct preempt_text_reader rd;
    struct preempt_trace_rec prev, r, back;
    char line[1024];
    struct preempt_config_facts cfg = preempt_config_defaults_();

    rng_state = 0x9e3779b97f4a7c15ull;
    preempt_text_reader_init_(&rd);
    cfg.grace_ms = 123;
    cfg.plan = PREEMPT_PLAN_TF;
    cfg.second = PREEMPT_SECOND_EXIT;
    ck_assert_int_gt(preempt_trace_format_config_(line, sizeof(line), &cfg), 0);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, line, &back), PREEMPT_TEXT_CONFIG);
    ck_assert_mem_eq(&rd.cfg, &cfg, sizeof(cfg));
    for (uint64_t i = 1; i <= N_RANDOM; i++) {
        random_record(&r, i);
        /* only the facts that changed are printed; the reader keeps the rest */
        ck_assert_int_gt(preempt_trace_format_(line, sizeof(line), &r, i > 1 ? &prev : NULL), 0);
        ck_assert_msg(preempt_text_parse_line_(&rd, line, &back) == PREEMPT_TEXT_RECORD, "%s: %s", line, rd.err);
        assert_same_record(&r, &back);
        prev = r;
    }
}
END_TEST

/* Which facts a line shows (PREEMPT_TRACE_FACTS' SHOWN): a trace's first
 * line has run=, step-ms=, save-ms= and agree-ms= even at 0, and the
 * later facts only once they are not 0, as the traces written before
 * them had it; a later line has the facts that changed. */
START_TEST(test_format_shows_facts)
{
    struct preempt_trace_rec r = { .seq = 1, .ev = { .kind = PREEMPT_EV_TIMER, .now_ms = 5 },
                                   .from = PREEMPT_STATE_IDLE, .to = PREEMPT_STATE_IDLE,
                                   .verdict = PREEMPT_VERDICT_IGNORED },
                             prev;
    char line[1024];

    ck_assert_int_gt(preempt_trace_format_(line, sizeof(line), &r, NULL), 0);
    ck_assert_str_eq(line, "n=1 t=5 run=0 step-ms=0 save-ms=0 agree-ms=0 ev=timer gen=0 => idle (ignored)");
    r.step_dev_ms = 3;
    r.slow_step_ms = 12;
    ck_assert_int_gt(preempt_trace_format_(line, sizeof(line), &r, NULL), 0);
    ck_assert_str_eq(line, "n=1 t=5 run=0 step-ms=0 step-dev-ms=3 save-ms=0 agree-ms=0 slow-step-ms=12 ev=timer gen=0 "
                           "=> idle (ignored)");
    prev = r;
    r.seq = 2;
    r.run = 7;
    r.step_dev_ms = 0;
    r.persist_left_ms = 40;
    ck_assert_int_gt(preempt_trace_format_(line, sizeof(line), &r, &prev), 0);
    ck_assert_str_eq(line, "n=2 t=5 run=7 step-dev-ms=0 persist-left-ms=40 ev=timer gen=0 => idle (ignored)");
}
END_TEST

START_TEST(test_format_reports_small_buffer)
{
    struct preempt_trace_rec r;
    char small[16];

    rng_state = 7;
    random_record(&r, 1);
    ck_assert_int_eq(preempt_trace_format_(small, sizeof(small), &r, NULL), -ENOSPC);
    ck_assert_int_eq(preempt_trace_format_(small, 0, &r, NULL), -ENOSPC);
}
END_TEST

/* Writes records to a memory stream as a binary trace and returns its bytes. */
static unsigned char *binary_trace(const struct preempt_config_facts *cfg, const struct preempt_trace_rec *recs,
                                   size_t n, size_t *ret_len)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(preempt_trace_write_magic_(f), 0);
    ck_assert_int_eq(preempt_trace_write_config_(f, cfg), 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(preempt_trace_write_record_(f, &recs[i]), 0);
    ck_assert_int_eq(fclose(f), 0);
    *ret_len = len;
    return (unsigned char *)buf;
}

START_TEST(test_binary_round_trip)
{
    static struct preempt_trace_rec recs[N_RANDOM];
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_trace_file t;
    unsigned char *data;
    size_t len;
    char err[256];

    rng_state = 0x1234567ull;
    cfg.bound_ms = 777;
    cfg.second = PREEMPT_SECOND_EXIT;
    for (size_t i = 0; i < N_RANDOM; i++)
        random_record(&recs[i], i + 1);
    data = binary_trace(&cfg, recs, N_RANDOM, &len);
    ck_assert_msg(preempt_trace_load_mem_("mem", data, len, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert(t.binary);
    ck_assert(t.have_config);
    ck_assert_mem_eq(&t.cfg, &cfg, sizeof(cfg));
    ck_assert_uint_eq(t.n, N_RANDOM);
    for (size_t i = 0; i < N_RANDOM; i++)
        assert_same_record(&recs[i], &t.recs[i]);
    preempt_trace_file_free_(&t);
    free(data);
}
END_TEST

START_TEST(test_binary_truncated_everywhere)
{
    struct preempt_trace_rec recs[5];
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_trace_file t;
    unsigned char *data;
    size_t len, boundaries = 0;
    char err[256];

    rng_state = 99;
    for (size_t i = 0; i < ARRAY_SIZE(recs); i++)
        random_record(&recs[i], i + 1);
    data = binary_trace(&cfg, recs, ARRAY_SIZE(recs), &len);
    /* Every cut either ends on an entry boundary (fewer records, all intact)
     * or is reported as truncated. */
    for (size_t cut = 0; cut < len; cut++) {
        int rc = preempt_trace_load_mem_("cut", data, cut, &t, err, sizeof(err));
        if (rc == 0) {
            ck_assert_uint_lt(t.n, ARRAY_SIZE(recs));
            for (size_t i = 0; i < t.n; i++)
                assert_same_record(&recs[i], &t.recs[i]);
            boundaries++;
            preempt_trace_file_free_(&t);
            continue;
        }
        ck_assert_msg(strstr(err, "truncated") || strstr(err, "empty trace") || strstr(err, "line 1"),
                      "cut %zu: %s", cut, err);
    }
    ck_assert_uint_eq(boundaries, ARRAY_SIZE(recs) - 1); /* after records 1..4 */
    free(data);
}
END_TEST

START_TEST(test_binary_unknown_name)
{
    struct preempt_trace_rec r;
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_trace_file t;
    unsigned char *data;
    size_t len;
    char err[256];
    unsigned char *hit;

    rng_state = 5;
    random_record(&r, 1);
    r.from = PREEMPT_STATE_COUNTDOWN;
    data = binary_trace(&cfg, &r, 1, &len);
    hit = memmem(data, len, "countdown", 9);
    ck_assert_ptr_nonnull(hit);
    memcpy(hit, "countdoWn", 9);
    ck_assert_int_eq(preempt_trace_load_mem_("renamed", data, len, &t, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "renamed: record 1: unknown state 'countdoWn'");
    free(data);
}
END_TEST

START_TEST(test_binary_out_of_order)
{
    struct preempt_trace_rec recs[2];
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_trace_file t;
    unsigned char *data;
    size_t len;
    char err[256];

    rng_state = 11;
    random_record(&recs[0], 1);
    random_record(&recs[1], 3); /* record 2 is missing */
    data = binary_trace(&cfg, recs, 2, &len);
    ck_assert_int_eq(preempt_trace_load_mem_("gap", data, len, &t, err, sizeof(err)), -EINVAL);
    ck_assert_str_eq(err, "gap: record 2: sequence number 3 out of order");
    free(data);
}
END_TEST

START_TEST(test_empty_traces)
{
    struct preempt_trace_file t;
    char err[256];
    const char *only_comments = "# nothing\n\nconfig grace=0\n";

    ck_assert_int_eq(preempt_trace_load_mem_("e", (const unsigned char *)"", 0, &t, err, sizeof(err)), -ENODATA);
    ck_assert_str_eq(err, "e: empty trace: no record");
    ck_assert_int_eq(preempt_trace_load_mem_("c", (const unsigned char *)only_comments, strlen(only_comments), &t,
                                             err, sizeof(err)),
                     -ENODATA);
    ck_assert_int_eq(preempt_trace_load_mem_("m", (const unsigned char *)PREEMPT_TRACE_MAGIC,
                                             PREEMPT_TRACE_MAGIC_LEN, &t, err, sizeof(err)),
                     -ENODATA);
}
END_TEST

/* An input a record causes follows that record's job line: the episode
 * machine's seen a notice record, every machine's next-episode the view's
 * move to the next episode. */
START_TEST(test_decl_causes)
{
#define DECL_HEAD                                                                                                     \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"                                                                \
    "job t=1 put k=/preempt/j/3/e0/notice/1 v=5000%20signal => notice worker=1 wall=5000 news=1 withdrawn=0\n"
    static const char good[] = DECL_HEAD "decl t=1 m=episode idle --seen--> active (none)\n"
                                         "job t=2 episode ep=1 => nothing\n"
                                         "decl t=2 m=episode active --next-episode--> idle (none)\n";
    static const char no_episode[] = DECL_HEAD "decl t=1 m=episode idle --seen--> active (none)\n"
                                               "decl t=2 m=episode active --next-episode--> idle (none)\n";
    static const char no_notice[] = DECL_HEAD "job t=2 episode ep=1 => nothing\n"
                                              "decl t=2 m=episode idle --seen--> active (none)\n";
#undef DECL_HEAD
    struct preempt_trace_file t;
    char err[256];
    size_t n;

    ck_assert_msg(preempt_trace_load_mem_("g", (const unsigned char *)good, strlen(good), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 2);
    preempt_trace_file_free_(&t);
    ck_assert(preempt_trace_load_mem_("e", (const unsigned char *)no_episode, strlen(no_episode), &t, err,
                                      sizeof(err)) == 0);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(err, "decl line 2 (line 5) has no cause: episode active --next-episode--> needs the view's "
                              "next episode read just before it, and the job line before it says notice worker=1"),
                  "%s", err);
    preempt_trace_file_free_(&t);
    ck_assert(preempt_trace_load_mem_("n", (const unsigned char *)no_notice, strlen(no_notice), &t, err,
                                      sizeof(err)) == 0);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "needs a notice record read just before it, and the job line before it says nothing"),
                  "%s", err);
    preempt_trace_file_free_(&t);
}
END_TEST

/* A round's reports read, and the decision that follows: replayed, each
 * report counted again; a report's value edited diverges at its line; an
 * all-reported without every report read just before it has no cause; a
 * commit that says other than the reports it follows is refused. */
START_TEST(test_reports_replayed)
{
#define R_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"                                                                \
    "job t=1 put k=/preempt/j/3/e0/r0/agreed v=42 => agreed round=0 step=42\n"                                       \
    "job t=2 reports round=0 step=42 => nothing\n"                                                                   \
    "job t=2 put k=/preempt/j/3/w/e0/r0/shard/42/0 v=120 => shard round=0 step=42 save=120 worker=0 reports=1\n"
#define R_LAST                                                                                                       \
    "job t=2 put k=/preempt/j/3/w/e0/r0/shard/42/1 v=304%20last%20stop=58 => shard round=0 step=42 last save=304 "  \
    "stop=58 worker=1 reports=2\n"
#define R_DECIDE "decl t=2 m=decision open --all-reported--> commit-proposed (propose-commit)\n"
#define R_COMMIT(v, m) "job t=3 put k=/preempt/j/3/decision/e0/r0 v=" v " => " m "\n"
    static const char good[] =
        R_HEAD R_LAST R_DECIDE R_COMMIT("committed%2042%20last%20save=304%20stop=58",
                                        "committed round=0 step=42 last save=304 stop=58");
    static const char edited[] =
        R_HEAD "job t=2 put k=/preempt/j/3/w/e0/r0/shard/42/1 v=305%20last%20stop=58 => shard round=0 step=42 last "
               "save=304 stop=58 worker=1 reports=2\n" R_DECIDE;
    static const char early[] = R_HEAD R_DECIDE R_LAST;
    static const char other[] =
        R_HEAD R_LAST R_DECIDE R_COMMIT("committed%2042%20last%20save=999%20stop=58",
                                        "committed round=0 step=42 last save=999 stop=58");
#undef R_HEAD
#undef R_LAST
#undef R_DECIDE
#undef R_COMMIT
    struct preempt_trace_file t;
    char err[512];
    size_t n;

    ck_assert_msg(preempt_trace_load_mem_("g", (const unsigned char *)good, strlen(good), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 5);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 1);
    preempt_trace_file_free_(&t);

    ck_assert(preempt_trace_load_mem_("e", (const unsigned char *)edited, strlen(edited), &t, err, sizeof(err)) == 0);
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "job line 4 (line 6) diverges\n  expected: shard round=0 step=42 last save=304 stop=58 "
                              "worker=1 reports=2\n  actual:   shard round=0 step=42 last save=305"),
                  "%s", err);
    preempt_trace_file_free_(&t);

    ck_assert(preempt_trace_load_mem_("a", (const unsigned char *)early, strlen(early), &t, err, sizeof(err)) == 0);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "has no cause: decision open --all-reported--> needs every worker's shard report read "
                              "just before it, and the job line before it says shard round=0 step=42 save=120 "
                              "worker=0 reports=1"),
                  "%s", err);
    preempt_trace_file_free_(&t);

    ck_assert(preempt_trace_load_mem_("o", (const unsigned char *)other, strlen(other), &t, err, sizeof(err)) == 0);
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "job line 5 (line 8): the round's decision is not what every worker's reports, read "
                              "before it, make of it (the slowest save)"),
                  "%s", err);
    preempt_trace_file_free_(&t);
}
END_TEST

/* An answer to the claim, traced with what it says: read again by the
 * replay; one edited diverges; the claim machine's won needs it just
 * before. */
START_TEST(test_claim_answer_replayed)
{
    static const struct preempt_claim_answer lost = { .read = true, .held = "1 5000 signal" };
    struct preempt_claim_says says = preempt_claim_answer_(&lost, 0);
    char line[PREEMPT_TRACE_LINE_MAX], text[2048];
    struct preempt_trace_file t;
    char err[512];
    size_t n;

#define A_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
    ck_assert_int_gt(preempt_trace_format_claim_(line, sizeof(line), 7, &lost, &says), 0);
    ck_assert_str_eq(line, "answer t=7 claim status=0 succeeded=0 read=1 held=1%205000%20signal left=0 => lost worker=1");
    (void)snprintf(text, sizeof(text), A_HEAD "decl t=6 m=claim none --send--> sent (send)\n%s\n"
                                              "decl t=7 m=claim sent --lost--> none (none)\n", line);
    ck_assert_msg(preempt_trace_load_mem_("a", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert(t.n_jobs == 1 && t.jobs[0].kind == PREEMPT_TRACE_JOB_CLAIM && t.jobs[0].ans.read && !strcmp(t.jobs[0].ans.held, "1 5000 signal"));
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    preempt_trace_file_free_(&t);
    /* the holder edited: it says won (this worker's own claim stood) */
    (void)snprintf(text, sizeof(text), A_HEAD "answer t=7 claim status=0 succeeded=0 read=1 held=0 left=0 => lost "
                                              "worker=1\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "job line 1 (line 3) diverges\n  expected: lost worker=1\n  actual:   won"), "%s", err);
    /* a failed claim's answer, and a won input without its answer */
    (void)snprintf(text, sizeof(text), A_HEAD "decl t=6 m=claim none --send--> sent (send)\n"
                                              "answer t=7 claim status=-110 succeeded=0 read=0 held= left=0 => "
                                              "failed\ndecl t=8 m=claim sent --won--> held (none)\n");
    ck_assert(preempt_trace_load_mem_("w", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0);
    ck_assert_int_eq(t.jobs[0].ans.status, -110);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "has no cause: claim sent --won--> needs an answer to the claim that says so read just "
                              "before it, and the job line before it says failed"),
                  "%s", err);
    preempt_trace_file_free_(&t);
    /* malformed */
    (void)snprintf(text, sizeof(text), A_HEAD "answer t=7 claim status=0 succeeded=2 read=0 held= left=0 => won\n");
    ck_assert_int_eq(preempt_trace_load_mem_("m", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)),
                     -EINVAL);
    ck_assert_msg(strstr(err, "malformed answer line"), "%s", err);
#undef A_HEAD
}
END_TEST

/* A survivor in place writes a job-view line per incarnation: the job
 * lines after each are replayed through that incarnation's view (a key of
 * the other one means nothing there); a second header that is not the
 * same worker's in a later incarnation is refused. */
START_TEST(test_view_per_incarnation)
{
#define V_CONFIG "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"
    static const char ok[] = V_CONFIG "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
                             "job t=5 put k=/preempt/j/3/e0/claim v=1%2099999%20signal => notice worker=1 wall=99999 news=1 withdrawn=0\n"
                             "job-view job=/preempt/j/ inc=4 workers=2 me=0\n"
                             "job t=9 put k=/preempt/j/4/e0/claim v=1%2099999%20signal => notice worker=1 wall=99999 news=1 withdrawn=0\n"
                             "job t=9 put k=/preempt/j/3/e1/claim v=1%2099999%20signal => nothing\n";
    char err[512], text[1024];
    struct preempt_trace_file t;
    size_t n;

    ck_assert_msg(load_text_trace(ok, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(t.n_jobs, 3);
    ck_assert_uint_eq(t.jobs[0].view_inc, 3);
    ck_assert_uint_eq(t.jobs[2].view_inc, 4);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 3);
    preempt_trace_file_free_(&t);
    /* one view for both: the second incarnation's notice would mean nothing */
    (void)snprintf(text, sizeof(text), "%s", ok);
    memcpy(strstr(text, "inc=4"), "inc=3", 5);
    ck_assert_int_eq(load_text_trace(text, &t, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "a second job-view line that is not the same worker's in a later incarnation"), "%s", err);
    (void)snprintf(text, sizeof(text), "%s", ok);
    memcpy(strstr(text, "inc=4 workers=2 me=0"), "inc=4 workers=2 me=1", 20);
    ck_assert_int_eq(load_text_trace(text, &t, err, sizeof(err)), -EINVAL);
#undef V_CONFIG
}
END_TEST

/* The driver's reads of the memberships are traced with who they say is
 * lost, and replayed in order with the memory of the reads before: a worker
 * missing in one read is lost in a later one a grace on; an edited read
 * diverges at its line; a read whose absent workers did not fit a line
 * ("cut") ends the comparison; a malformed one is refused. */
START_TEST(test_lost_read_replayed)
{
    uint64_t gone[3] = { 0 };
    struct preempt_lost l = { .n = 3, .me = 0, .gone_at = gone };
    uint8_t absent[1] = { 1u << 2 };
    struct preempt_lost_read rd = { .complete = true, .absent = absent, .now_ms = 100, .grace_ms = 40 };
    struct preempt_lost_says says = preempt_lost_read_(&l, &rd);
    char line[PREEMPT_TRACE_LINE_MAX], first[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    struct preempt_trace_file t;
    char err[512];
    size_t n;

#define L_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=3 me=0\n"
    ck_assert_int_gt(preempt_trace_format_lost_(first, sizeof(first), rd.now_ms, 3, &rd, &says), 0);
    ck_assert_str_eq(first, "answer t=100 members status=0 complete=1 known=0 absent=2 grace=40 => nothing missing=1 "
                            "newly=1 back=0");
    rd.now_ms = 140;
    says = preempt_lost_read_(&l, &rd);
    ck_assert_int_gt(preempt_trace_format_lost_(line, sizeof(line), rd.now_ms, 3, &rd, &says), 0);
    ck_assert_str_eq(line, "answer t=140 members status=0 complete=1 known=0 absent=2 grace=40 => lost worker=2 "
                           "missing=1 newly=0 back=0");
    (void)snprintf(text, sizeof(text), L_HEAD "%s\n%s\n", first, line);
    ck_assert_msg(preempt_trace_load_mem_("l", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert(t.n_jobs == 2 && t.jobs[1].kind == PREEMPT_TRACE_JOB_MEMBERS && t.jobs[1].read.grace_ms == 40 &&
              t.jobs[1].read.now_ms == 140 && PREEMPT_LOST_BIT(t.jobs[1].read.absent, 2));
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 2);
    ck_assert_msg(preempt_trace_replay_causes_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    preempt_trace_file_free_(&t);
    /* the first read removed: the second finds worker 2 missing only now */
    (void)snprintf(text, sizeof(text), L_HEAD "%s\n", line);
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "job line 1 (line 3) diverges\n  expected: lost worker=2 missing=1 newly=0 back=0\n"
                              "  actual:   nothing missing=1 newly=1 back=0"),
                  "%s", err);
    /* a read that says a lost record stands, where the view read none */
    (void)snprintf(text, sizeof(text),
                   L_HEAD "answer t=100 members status=0 complete=1 known=1 absent=2 grace=40 => nothing missing=1 "
                          "newly=1 back=0\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "the read says known=1, and the records read before it hold no lost record"), "%s", err);
    /* a cut read is not compared, nor is any after it */
    (void)snprintf(text, sizeof(text),
                   L_HEAD "answer t=100 members status=0 complete=1 known=0 absent=cut grace=40 => nothing missing=9 "
                          "newly=9 back=0\n%s\n",
                   line);
    ck_assert(preempt_trace_load_mem_("c", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 0);
    preempt_trace_file_free_(&t);
    /* malformed: a worker the job does not have, ranges out of order, a bad status */
    static const char *const bad[] = {
        "answer t=1 members status=0 complete=1 known=0 absent=3 grace=40 => nothing missing=0 newly=0 back=0",
        "answer t=1 members status=0 complete=1 known=0 absent=2,1 grace=40 => nothing missing=0 newly=0 back=0",
        "answer t=1 members status=0 complete=1 known=0 absent=1- grace=40 => nothing missing=0 newly=0 back=0",
        "answer t=1 members status=-0 complete=1 known=0 absent=- grace=40 => nothing missing=0 newly=0 back=0",
        "answer t=1 members status=0 complete=1 known=0 absent=- => nothing missing=0 newly=0 back=0",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        (void)snprintf(text, sizeof(text), L_HEAD "%s\n", bad[i]);
        ck_assert_msg(preempt_trace_load_mem_("m", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) ==
                          -EINVAL,
                      "%s", bad[i]);
        ck_assert_msg(strstr(err, "malformed answer line"), "%s", err);
    }
#undef L_HEAD
}
END_TEST

/* A write that failed for good is traced before the machine's
 * coord-failed, which must follow it with its status: without the line,
 * or with another status, the event has no cause. */
START_TEST(test_write_failed_replayed)
{
    char line[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    struct preempt_trace_file t;
    char err[512];
    size_t n;

#define W_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=1\n"
#define W_EV "t=5000 ev=coord-failed err=-110 => idle -> exit fx=exit:not-saved\n"
    ck_assert_int_gt(preempt_trace_format_write_(line, sizeof(line), 4999, -110), 0);
    ck_assert_str_eq(line, "answer t=4999 write status=-110 => failed");
    (void)snprintf(text, sizeof(text), W_HEAD "%s\n" W_EV, line);
    ck_assert_msg(preempt_trace_load_mem_("w", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert(t.n_jobs == 1 && t.jobs[0].kind == PREEMPT_TRACE_JOB_WRITE && t.jobs[0].ans.status == -110);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(preempt_trace_replay_causes_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 1);
    preempt_trace_file_free_(&t);
    /* another status, and none */
    (void)snprintf(text, sizeof(text), W_HEAD "answer t=4999 write status=-5 => failed\n" W_EV);
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_causes_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "has no cause: no record the job's view read, nor answer, before it tells coord-failed"),
                  "%s", err);
    (void)snprintf(text, sizeof(text), W_HEAD W_EV);
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_causes_, err, sizeof(err)), 1);
    /* what a failed write says is "failed"; a write of status 0 is no line */
    (void)snprintf(text, sizeof(text), W_HEAD "answer t=4999 write status=-110 => won\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "expected: won\n  actual:   failed"), "%s", err);
    (void)snprintf(text, sizeof(text), W_HEAD "answer t=4999 write status=0 => failed\n");
    ck_assert_int_eq(preempt_trace_load_mem_("z", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)),
                     -EINVAL);
#undef W_EV
#undef W_HEAD
}
END_TEST

/* A membership lease's grant is traced before the claim and membership
 * machines take it: their granted and grant-failed inputs need a grant's
 * answer that says so just before them; an edited TTL diverges. */
START_TEST(test_grant_replayed)
{
    char line[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    struct preempt_trace_file t;
    char err[512];
    size_t n;

#define G_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=1\n"
#define G_DECL "decl t=9 m=membership member --granted--> member (put-alive)\n"
    ck_assert_int_gt(preempt_trace_format_grant_(line, sizeof(line), 9, 0, 27), 0);
    ck_assert_str_eq(line, "answer t=9 grant status=0 ttl=27 => granted ttl=27");
    (void)snprintf(text, sizeof(text), G_HEAD "%s\n" G_DECL, line);
    ck_assert_msg(preempt_trace_load_mem_("g", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert(t.n_jobs == 1 && t.jobs[0].kind == PREEMPT_TRACE_JOB_GRANT && t.jobs[0].ttl_s == 27);
    ck_assert_msg(preempt_trace_replay_view_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    preempt_trace_file_free_(&t);
    /* a failed grant is no cause of granted; nothing is none */
    ck_assert_int_gt(preempt_trace_format_grant_(line, sizeof(line), 9, -110, 0), 0);
    ck_assert_str_eq(line, "answer t=9 grant status=-110 ttl=0 => failed");
    for (int k = 0; k < 2; k++) {
        (void)snprintf(text, sizeof(text), G_HEAD "%s%s" G_DECL, k ? "" : line, k ? "" : "\n");
        ck_assert_int_eq(replay_text(text, preempt_trace_replay_decls_, err, sizeof(err)), 1);
        ck_assert_msg(strstr(err, "membership member --granted--> needs a lease's grant that says so"), "%s", err);
    }
    /* the TTL edited in the meaning */
    (void)snprintf(text, sizeof(text), G_HEAD "answer t=9 grant status=0 ttl=27 => granted ttl=30\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "expected: granted ttl=30\n  actual:   granted ttl=27"), "%s", err);
#undef G_DECL
#undef G_HEAD
}
END_TEST

/* A keep-alive of the membership lease is traced (through the one answer
 * formatter the owners call) before the lease machine takes it: its
 * expired must follow an answer that says so; an edited TTL diverges; a
 * grant's answer is the cause of the lease machine's granted. */
START_TEST(test_keep_replayed)
{
    char line[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    char err[512];
    static const struct decl_case cases[] = {
        { "answer t=7 keep status=0 ttl=0 => expired\ndecl t=7 m=lease kept --expired--> granting (grant)\n"
          "answer t=8 grant status=0 ttl=2 => granted ttl=2\ndecl t=8 m=lease granting --granted--> kept (none)\n",
          0, NULL },
        { "decl t=7 m=lease kept --expired--> granting (grant)\n", 1,
          "lease kept --expired--> needs a keep-alive's answer that says the lease expired" },
        { "answer t=7 keep status=0 ttl=2 => kept\ndecl t=7 m=lease kept --expired--> granting (grant)\n", 1,
          "the job line before it says kept" },
        { "answer t=7 keep status=-110 ttl=0 => failed\ndecl t=7 m=lease kept --expired--> granting (grant)\n", 1,
          "the job line before it says failed" },
        { "answer t=7 keep status=0 ttl=0 => expired\ndecl t=7 m=lease kept --expired--> granting (grant)\n"
          "decl t=8 m=lease granting --granted--> kept (none)\n",
          1, "lease granting --granted--> needs a lease's grant that says so" },
    };
    struct preempt_job_answer a = { .kind = PREEMPT_JOB_ANSWER_KEEP, .status = 0, .ttl_s = 0 };

#define K_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=1\n"
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 7, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=7 keep status=0 ttl=0 => expired");
    a.ttl_s = -1; /* what etcd may answer for a lease it knows no more */
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 7, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=7 keep status=0 ttl=0 => expired");
    a.ttl_s = 9;
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 7, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=7 keep status=0 ttl=9 => kept");
    a.status = -110;
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 7, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=7 keep status=-110 ttl=9 => failed");
    check_decl_cases(K_HEAD, cases, sizeof(cases) / sizeof(cases[0]));
    /* what a keep-alive says is read again: an edited TTL diverges */
    (void)snprintf(text, sizeof(text), K_HEAD "answer t=7 keep status=0 ttl=5 => expired\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "expected: expired\n  actual:   kept"), "%s", err);
    (void)snprintf(text, sizeof(text), K_HEAD "answer t=7 keep status=0 => kept\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), -EINVAL);
#undef K_HEAD
}
END_TEST

/* A read of the records while the watch is down (watch-internal.h): the
 * watch machine's read and read-failed must follow the answer that says
 * so; an edited status diverges. */
START_TEST(test_records_replayed)
{
    char line[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    char err[512];
    static const struct decl_case cases[] = {
        { "decl t=5 m=watch blind --tick--> reading (read)\nanswer t=6 records status=0 => read\n"
          "decl t=6 m=watch reading --read--> blind (apply)\ndecl t=7 m=watch blind --tick--> reading (read)\n"
          "answer t=8 records status=-110 => read-failed\ndecl t=8 m=watch reading --read-failed--> blind (none)\n",
          0, NULL },
        { "decl t=5 m=watch blind --tick--> reading (read)\ndecl t=6 m=watch reading --read--> blind (apply)\n", 1,
          "watch reading --read--> needs an answer of a read of the records that says so" },
        { "decl t=5 m=watch blind --tick--> reading (read)\nanswer t=6 records status=-110 => read-failed\n"
          "decl t=6 m=watch reading --read--> blind (apply)\n",
          1, "the job line before it says read-failed" },
        { "decl t=5 m=watch blind --tick--> reading (read)\nanswer t=6 records status=0 => read\n"
          "decl t=6 m=watch reading --read-failed--> blind (none)\n",
          1, "the job line before it says read" },
    };
    struct preempt_job_answer a = { .kind = PREEMPT_JOB_ANSWER_RECORDS, .status = 0 };

#define K_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=1\n"
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 6, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=6 records status=0 => read");
    a.status = -ECONNREFUSED;
    ck_assert_int_gt(preempt_trace_format_answer_(line, sizeof(line), 6, 2, &a), 0);
    ck_assert_str_eq(line, "answer t=6 records status=-111 => read-failed");
    check_decl_cases(K_HEAD, cases, sizeof(cases) / sizeof(cases[0]));
    /* what an answer says is read again: an edited status diverges */
    (void)snprintf(text, sizeof(text), K_HEAD "answer t=6 records status=-5 => read\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "expected: read\n  actual:   read-failed"), "%s", err);
    (void)snprintf(text, sizeof(text), K_HEAD "answer t=6 records => read\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), -EINVAL);
#undef K_HEAD
}
END_TEST

/* The notice record's machine takes the answers to its put and to the
 * claim that carried its value: each of those inputs must follow the
 * answer that says so (a failed write's line between them is no cause and
 * is passed over); an edited put answer diverges. */
START_TEST(test_put_answer_replayed)
{
/* how the machines got where the cases start (each starts in its first
 * state: the replay holds every transition to the one before) */
#define W_PUT "decl t=4 m=notice-record idle --write--> putting (put)\n"
#define C_CLAIM                                                                                                      \
    "decl t=4 m=notice-record idle --defer--> deferred (none)\n"                                                     \
    "decl t=4 m=notice-record deferred --claim-sent--> carried (carry)\ndecl t=4 m=claim none --send--> sent (send)\n"
    char line[PREEMPT_TRACE_LINE_MAX], text[4 * PREEMPT_TRACE_LINE_MAX];
    char err[512];
    static const struct decl_case cases[] = {
        { W_PUT "answer t=5 put status=0 => put-ok\ndecl t=5 m=notice-record putting --put-ok--> idle (none)\n", 0,
          NULL },
        { W_PUT "decl t=5 m=notice-record putting --put-ok--> idle (none)\n", 1,
          "notice-record putting --put-ok--> needs an answer to the notice's put that says so" },
        { W_PUT "answer t=5 put status=-110 => put-failed\ndecl t=5 m=notice-record putting --put-ok--> idle (none)\n",
          1,
          "needs an answer to the notice's put that says so read just before it, and the job line before it says "
          "put-failed" },
        { C_CLAIM "answer t=5 claim status=0 succeeded=1 read=0 held= left=0 => won\n"
          "decl t=5 m=notice-record carried --claim-won--> in-claim (none)\n"
          "answer t=5 write status=-5 => failed\ndecl t=5 m=claim sent --won--> held (none)\n",
          0, NULL },
        { C_CLAIM "answer t=5 claim status=0 succeeded=0 read=1 held=1%205000%20signal left=0 => lost worker=1\n"
          "decl t=5 m=notice-record carried --claim-won--> in-claim (none)\n",
          1, "notice-record carried --claim-won--> needs an answer to the claim that says so" },
        { C_CLAIM "answer t=5 claim status=-110 succeeded=0 read=0 held= left=0 => failed\n"
          "decl t=5 m=notice-record carried --claim-failed--> deferred (none)\n",
          0, NULL },
    };

#define P_HEAD                                                                                                       \
    "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"                        \
    "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
    ck_assert_int_gt(preempt_trace_format_put_(line, sizeof(line), 5, 0), 0);
    ck_assert_str_eq(line, "answer t=5 put status=0 => put-ok");
    ck_assert_int_gt(preempt_trace_format_put_(line, sizeof(line), 5, -110), 0);
    ck_assert_str_eq(line, "answer t=5 put status=-110 => put-failed");
    check_decl_cases(P_HEAD, cases, sizeof(cases) / sizeof(cases[0]));
    (void)snprintf(text, sizeof(text), P_HEAD "answer t=5 put status=0 => put-failed\n");
    ck_assert_int_eq(replay_text(text, preempt_trace_replay_view_, err, sizeof(err)), 1);
    ck_assert_msg(strstr(err, "expected: put-failed\n  actual:   put-ok"), "%s", err);
#undef P_HEAD
#undef W_PUT
#undef C_CLAIM
}
END_TEST

/* A worker of a job killed before its machine took an event wrote the
 * job's records it read and its start-up's transitions, and no record:
 * that trace is not empty, and replays. */
START_TEST(test_trace_without_records)
{
    static const char text[] =
        "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n"
        "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
        "job t=1 put k=/preempt/j/3/e0/notice/1 v=5000%20signal => notice worker=1 wall=5000 news=1 withdrawn=0\n"
        "decl t=1 m=restore joining --joined-none--> training (start-fresh)\n";
    struct preempt_trace_file t;
    char err[256];
    size_t n;

    ck_assert_msg(preempt_trace_load_mem_("k", (const unsigned char *)text, strlen(text), &t, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_uint_eq(t.n_jobs, 1);
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(preempt_trace_replay_causes_(&t, &n, err, sizeof(err)), 0);
    preempt_trace_file_free_(&t);
}
END_TEST

/* ---- the job's view in text traces ------------------------------------------ */

#define VIEW_CONFIG "config grace=0 bound=30000 agree-timeout=10000 margin=500 plan=measured second=ignore\n" \
                    "t=0 run=1 step-ms=100 ev=notice source=signal deadline=0 => idle -> own-signal " \
                    "fx=publish-notice:30000,claim-driver:2,arm-timer:29500\n"

/* What the view made of each input, formatted, loads back, and replays;
 * a value with spaces, '%', a newline or nothing survives the encoding. */
START_TEST(test_view_lines_round_trip)
{
    static const char *const values[] = { "5000 signal", "50%x\ny", "", "7 1 disk full: /a b" };
    static const char *const keys[] = { "/preempt/j/3/e0/notice/1", "/preempt/j/3/e0/notice/0", "/preempt/j/3/e0/claim",
                                        "/preempt/j/3/error" };
    struct preempt_view v;
    char text[8192], line[PREEMPT_TRACE_LINE_MAX], err[256];
    struct preempt_trace_file t;
    size_t n = 0, len;

    ck_assert_int_eq(preempt_view_init_(&v, "/preempt/j/", 3, 2, 0), 0);
    len = (size_t)snprintf(text, sizeof(text), "%s", VIEW_CONFIG);
    ck_assert_int_gt(preempt_trace_format_view_header_(line, sizeof(line), &v), 0);
    len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", line);
    for (size_t i = 0; i < 4; i++) {
        struct preempt_view_in in = { .kind = PREEMPT_VIEW_IN_RECORD, .put = true, .key = keys[i], .value = values[i] };
        struct preempt_view_ev ev = preempt_view_step_(&v, &in);

        ck_assert_int_gt(preempt_trace_format_view_(line, sizeof(line), 10 + i, &in, &ev), 0);
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", line);
    }
    {
        struct preempt_view_in in[] = { { .kind = PREEMPT_VIEW_IN_RECORD, .put = false, .key = keys[2] },
                                        { .kind = PREEMPT_VIEW_IN_REREAD },
                                        { .kind = PREEMPT_VIEW_IN_EPISODE, .ep = 1 } };

        for (size_t i = 0; i < 3; i++) {
            struct preempt_view_ev ev = preempt_view_step_(&v, &in[i]);

            ck_assert_int_gt(preempt_trace_format_view_(line, sizeof(line), 20 + i, &in[i], &ev), 0);
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", line);
        }
    }
    preempt_view_free_(&v);
    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_uint_eq(t.n_jobs, 7);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(t.jobs[i].in.value, values[i]);
    ck_assert_str_eq(t.jobs[4].in.key, keys[2]);
    ck_assert(!t.jobs[4].in.put);
    ck_assert_uint_eq(t.jobs[6].in.ep, 1);
    ck_assert_str_eq(t.jobs[3].meaning, "error code=7 worker=1");
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 7);
    preempt_trace_file_free_(&t);
}
END_TEST

START_TEST(test_view_lines_replayed)
{
    static const char good[] = VIEW_CONFIG "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
                                           "job t=1 put k=/preempt/j/3/e0/notice/1 v=5000%20signal => notice worker=1 "
                                           "wall=5000 news=1 withdrawn=0\n"
                                           "job t=2 put k=/preempt/j/3/e0/notice/1 v=6000%20signal => notice worker=1 "
                                           "wall=6000 news=0 withdrawn=0\n";
    static const char altered[] =
        VIEW_CONFIG "job-view job=/preempt/j/ inc=3 workers=2 me=0\n"
                    "job t=1 put k=/preempt/j/3/e0/notice/1 v=5000%20signal => notice worker=1 wall=5000 news=1 "
                    "withdrawn=0\n"
                    "job t=2 put k=/preempt/j/3/e0/notice/1 v=6000%20signal => notice worker=1 wall=6000 news=1 "
                    "withdrawn=0\n";
    struct preempt_trace_file t;
    char err[256];
    size_t n;

    ck_assert_msg(load_text_trace(good, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 2);
    preempt_trace_file_free_(&t);
    /* a later deadline is no news: a view that took it for news diverges */
    ck_assert_msg(load_text_trace(altered, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(preempt_trace_replay_view_(&t, &n, err, sizeof(err)), 1);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(strstr(err, "job line 2 (line 5) diverges") && strstr(err, "actual:   notice worker=1 wall=6000 news=0"),
                  "%s", err);
    preempt_trace_file_free_(&t);
}
END_TEST

START_TEST(test_view_lines_malformed)
{
    static const struct { const char *line, *why; } bad[] = {
        { "job t=1 reread => nothing", "before the job-view line" },
        { "job-view job=/preempt/j/ inc=3 workers=0 me=0", "malformed job-view" },
        { "job-view job=/preempt/j/ inc=3 workers=2", "malformed job-view" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob-view job=/preempt/j/ inc=3 workers=2 me=0", "second" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=1 put k=/x => nothing", "malformed job line" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=1 put k=/x v=%4 => nothing", "malformed job line" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=1 put k=/x v=%00 => nothing", "malformed job line" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=1 jump => nothing", "malformed job line" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=1 reread =>", "malformed job line" },
        { "job-view job=/preempt/j/ inc=3 workers=2 me=0\njob t=x reread => nothing", "malformed job line" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct preempt_trace_file t;
        char text[1024], err[256];

        (void)snprintf(text, sizeof(text), "%s%s\n", VIEW_CONFIG, bad[i].line);
        ck_assert_int_eq(load_text_trace(text, &t, err, sizeof(err)), -EINVAL);
        ck_assert_msg(strstr(err, bad[i].why) && strstr(err, "line "), "'%s': %s", bad[i].line, err);
    }
}
END_TEST

/* The declared machines' lines: formatted from a transition, loaded back
 * by name (names with '-' included), replayed through each table; a line
 * altered to a transition its table does not make diverges; names this
 * build does not have, and malformed lines, are refused with a reason. */
START_TEST(test_decl_lines)
{
    const struct preempt_decl *claim = preempt_decl_find_("claim"), *rst = preempt_decl_find_("restore");
    char text[2048], line[256], err[256];
    struct preempt_trace_file t;
    size_t n;
    static const struct { const char *line, *why; } bad[] = {
        { "decl t=1 m=nonesuch none --send--> sent (send)", "names machine 'nonesuch'" },
        { "decl t=1 m=claim nowhere --send--> sent (send)", "names a state" },
        { "decl t=1 m=claim none --shout--> sent (send)", "names an input" },
        { "decl t=1 m=claim none --send--> sent (yell)", "names an action" },
        { "decl t=1 m=claim none --send--> sent", "a decl line is not" },
        { "decl t=x m=claim none --send--> sent (send)", "a decl line is not" },
        { "decl m=claim none --send--> sent (send)", "a decl line is not" },
    };

/* start-up's machine from its first state to its barrier */
#define RESTORE_TO_BARRIER                                                                                           \
    "decl t=8 m=restore joining --joined--> restoring (restore)\n"                                                   \
    "decl t=8 m=restore restoring --restored--> barrier (report-ok)\n"
    ck_assert_ptr_nonnull(claim);
    ck_assert_ptr_nonnull(rst);
    (void)preempt_trace_format_decl_(line, sizeof(line), 7, claim, 0, PREEMPT_CLAIM_NONE, PREEMPT_CLAIM_IN_SEND,
                                     PREEMPT_CLAIM_SENT, PREEMPT_CLAIM_DO_SEND);
    ck_assert_str_eq(line, "decl t=7 m=claim none --send--> sent (send)");
    (void)snprintf(text, sizeof(text),
                   "%s%s\n" RESTORE_TO_BARRIER "decl t=8 m=restore barrier --job-unusable--> joining (set-aside)\n"
                   "decl t=9 m=claim sent --stale-lease--> await-lease (regrant)\n"
                   "decl t=9 m=claim await-lease --granted--> sent (send)\n",
                   VIEW_CONFIG, line);
    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(t.n_decls, 6);
    ck_assert_uint_eq(t.decls[1].t_ms, 8);
    ck_assert_ptr_eq(t.decls[1].m, rst);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 6);
    preempt_trace_file_free_(&t);
    /* the running coordinator's machines are held from their first state
     * through every transition: one left out, or a first line that does
     * not start there, diverges */
    (void)snprintf(text, sizeof(text),
                   "%s%s\ndecl t=9 m=claim await-lease --granted--> sent (send)\n", VIEW_CONFIG, line);
    decls_diverge(text, "decl line 2 (line 4) diverges: claim starts from await-lease, but its machine is in "
                        "sent (after its transition before)");
    (void)snprintf(text, sizeof(text), "%sdecl t=9 m=lease granting --granted--> kept (none)\n", VIEW_CONFIG);
    decls_diverge(text, "decl line 1 (line 3) diverges: lease starts from granting, but its machine is in kept "
                        "(its first state)");
    /* the two rounds' decision machines, held as a pair: a line starts
     * where one of them is */
#define DEC_COMMIT "decl t=9 m=decision open --all-reported--> commit-proposed (propose-commit)\n"
#define DEC_NEXT "decl t=9 m=decision commit-proposed --next-episode--> open (none)\n"
    (void)snprintf(text, sizeof(text), "%s" DEC_COMMIT DEC_COMMIT DEC_NEXT DEC_COMMIT DEC_NEXT DEC_NEXT, VIEW_CONFIG);
    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    preempt_trace_file_free_(&t);
    (void)snprintf(text, sizeof(text), "%s" DEC_COMMIT DEC_COMMIT DEC_COMMIT, VIEW_CONFIG);
    decls_diverge(text, "decl line 3 (line 5) diverges: decision starts from open, but neither round's "
                        "machine is there");
    (void)snprintf(text, sizeof(text), "%s" DEC_NEXT, VIEW_CONFIG);
    decls_diverge(text, "decision starts from commit-proposed, but neither round's machine is there");
#undef DEC_COMMIT
#undef DEC_NEXT
    /* named instances (a round's decision #round+1, a start-up phase's
     * machines #phase): each held from its own first state */
    {
        char named[160];

        (void)preempt_trace_format_decl_(named, sizeof(named), 7, &preempt_dec_decl_, 2, PREEMPT_DEC_OPEN,
                                         PREEMPT_DEC_IN_ALL_REPORTED, PREEMPT_DEC_COMMIT_PROPOSED,
                                         PREEMPT_DEC_DO_PROPOSE_COMMIT);
        ck_assert_str_eq(named, "decl t=7 m=decision#2 open --all-reported--> commit-proposed (propose-commit)");
    }
#define DEC_COMMIT(k) "decl t=9 m=decision#" #k " open --all-reported--> commit-proposed (propose-commit)\n"
#define DEC_NEXT(k) "decl t=9 m=decision#" #k " commit-proposed --next-episode--> open (none)\n"
#define END_RUN(k) "decl t=9 m=phase-end#" #k " running --finish--> ending (run-end)\n"
#define END_DONE(k) "decl t=9 m=phase-end#" #k " ending --end-keep--> done (release)\n"
    (void)snprintf(text, sizeof(text), "%s" END_RUN(1) DEC_COMMIT(1) END_RUN(2) DEC_COMMIT(2) END_DONE(1) DEC_NEXT(1)
                   END_DONE(2) DEC_COMMIT(1), VIEW_CONFIG);
    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(t.decls[2].instance, 2);
    ck_assert_msg(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n, 8);
    preempt_trace_file_free_(&t);
    /* a phase's machine that does not start in its first state, or a
     * round's that skips a transition (unnamed, both passed as a pair) */
    (void)snprintf(text, sizeof(text), "%s" END_RUN(1) END_DONE(1) END_DONE(2), VIEW_CONFIG);
    decls_diverge(text, "decl line 3 (line 5) diverges: phase-end#2 starts from ending, but its machine is in "
                        "running (its first state)");
    (void)snprintf(text, sizeof(text), "%s" DEC_COMMIT(1) DEC_COMMIT(1), VIEW_CONFIG);
    decls_diverge(text, "decl line 2 (line 4) diverges: decision#1 starts from open, but its machine is in "
                        "commit-proposed (after its transition before)");
    (void)snprintf(text, sizeof(text), "%s" END_RUN(0), VIEW_CONFIG);
    ck_assert_int_lt(load_text_trace(text, &t, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "names instance '0'"), "%s", err);
#undef DEC_COMMIT
#undef DEC_NEXT
#undef END_RUN
#undef END_DONE
    (void)snprintf(text, sizeof(text),
                   "%s%s\n" RESTORE_TO_BARRIER "decl t=8 m=restore barrier --job-unusable--> training (train)\n",
                   VIEW_CONFIG, line);
    ck_assert_msg(load_text_trace(text, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(preempt_trace_replay_decls_(&t, &n, err, sizeof(err)), 1);
    ck_assert_uint_eq(n, 3);
    ck_assert_msg(strstr(err, "decl line 4 (line 6) diverges: restore in barrier") &&
                      strstr(err, "expected: training (train)") && strstr(err, "actual:   joining (set-aside)"),
                  "%s", err);
    preempt_trace_file_free_(&t);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        (void)snprintf(text, sizeof(text), "%s%s\n", VIEW_CONFIG, bad[i].line);
        ck_assert_int_eq(load_text_trace(text, &t, err, sizeof(err)), -EINVAL);
        ck_assert_msg(strstr(err, bad[i].why) && strstr(err, "line 3"), "'%s': %s", bad[i].line, err);
    }
#undef RESTORE_TO_BARRIER
}
END_TEST

START_TEST(test_missing_file)
{
    struct preempt_trace_file t;
    char err[256];

    ck_assert_int_eq(preempt_trace_load_("/nonexistent/trace", &t, err, sizeof(err)), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/trace"));
}
END_TEST

/* ---- bad text lines: each gets its own clear message --------------------------------- */

static const struct bad_line {
    const char *line;
    const char *message;
} bad_lines[] = {
    { "t=0 ev=notise => idle (ignored)", "line 1: unknown event 'notise'" },
    { "t=0 ev=timer gen=1 => idel (ignored)", "line 1: unknown state 'idel'" },
    { "t=0 ev=timer gen=1 => idle -> nowhere", "line 1: unknown state 'nowhere'" },
    { "t=0 ev=timer gen=x => idle (ignored)", "line 1: gen needs a non-negative integer, not 'x'" },
    { "t=0 ev=timer gen=-1 => idle (ignored)", "line 1: gen needs a non-negative integer, not '-1'" },
    { "t=0 ev=timer gen=99999999999999999999999 => idle (ignored)", "line 1: gen needs a non-negative integer" },
    { "t=0 ev=timer step=1 => idle (ignored)", "line 1: event timer has no field 'step'" },
    { "t=0 ev=notice source=moon => idle (ignored)", "line 1: unknown notice source 'moon'" },
    { "t=0 ev=save-done status=1.5 => idle (ignored)", "line 1: status needs an integer, not '1.5'" },
    { "t=0 ev=timer gen=1", "line 1: missing '=>' and the expected outcome" },
    { "ev=timer gen=1 => idle (ignored)", "line 1: missing t=" },
    { "t=0 => idle (ignored)", "line 1: missing ev=" },
    { "t=0 ev=timer gen=1 =>", "line 1: missing state after '=>'" },
    { "t=0 ev=timer gen=1 => idle", "line 1: missing '-> STATE', '(ignored)' or '(illegal)'" },
    { "t=0 ev=timer gen=1 => idle (ignored) fx=exit:saved", "line 1: unexpected 'fx=exit:saved' after the verdict" },
    { "t=0 ev=timer gen=1 => idle => exit", "line 1: expected '->', '(ignored)' or '(illegal)', not '=>'" },
    { "t=0 ev=timer gen=1 => idle -> exit exit:saved", "line 1: expected 'fx=...', not 'exit:saved'" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=exit:gone", "line 1: unknown exit reason 'gone'" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=exit", "line 1: effect exit needs an argument" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=disarm-timer:3", "line 1: effect disarm-timer takes no argument" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=launch", "line 1: unknown effect 'launch'" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=exit:done,", "line 1: trailing comma" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=exit:done,,exit:done", "line 1: empty effect" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=disarm-timer,disarm-timer,disarm-timer,disarm-timer,disarm-timer,"
      "disarm-timer",
      "line 1: more than 5 effects" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=arm-timer:soon", "line 1: effect arm-timer needs a non-negative integer" },
    { "t=0 ev=timer gen=1 => idle -> exit fx=exit:done trailing", "line 1: unexpected 'trailing' after the effects" },
    { "t=0 ev=timer ev=timer => idle (ignored)", "line 1: two events on one line" },
    { "t=0 when=now ev=timer => idle (ignored)", "line 1: unknown field 'when' (before ev=)" },
    { "t=0 banana ev=timer => idle (ignored)", "line 1: malformed field 'banana' (expected key=value)" },
    { "n=2 t=0 ev=timer => idle (ignored)", "line 1: record number n=2, expected 1" },
    { "config grace=soon", "line 1: config field 'grace' needs a non-negative integer, not 'soon'" },
    /* above INT64_MAX: more than effects carry (fuzz-scenario) */
    { "t=0 ev=timer gen=1 => idle -> exit fx=arm-timer:9223372036854775808",
      "line 1: effect arm-timer needs a non-negative integer" },
    { "config grace=9999999999999999990", "line 1: config field 'grace' needs a non-negative integer" },
    { "config plan=psychic", "line 1: unknown plan 'psychic' (measured or tf)" },
    { "config second=maybe", "line 1: unknown second-notice policy 'maybe' (ignore or exit)" },
    { "config colour=blue", "line 1: unknown config field 'colour'" },
    { "config grace", "line 1: malformed config field 'grace'" },
};

START_TEST(test_bad_line)
{
    const struct bad_line *b = &bad_lines[_i];
    struct preempt_text_reader rd;
    struct preempt_trace_rec r;

    preempt_text_reader_init_(&rd);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, b->line, &r), -EINVAL);
    ck_assert_msg(strncmp(rd.err, b->message, strlen(b->message)) == 0, "'%s': got '%s', expected '%s'", b->line,
                  rd.err, b->message);
}
END_TEST

START_TEST(test_config_after_record)
{
    struct preempt_text_reader rd;
    struct preempt_trace_rec r;

    preempt_text_reader_init_(&rd);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, "t=0 ev=timer gen=0 => idle (ignored)", &r), PREEMPT_TEXT_RECORD);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, "config grace=1", &r), -EINVAL);
    ck_assert_str_eq(rd.err, "line 2: config after the first record");
}
END_TEST

START_TEST(test_wildcards_and_sticky_facts)
{
    struct preempt_text_reader rd;
    struct preempt_trace_rec a, b, actual;

    preempt_text_reader_init_(&rd);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, "  # comment", &a), PREEMPT_TEXT_BLANK);
    ck_assert_int_eq(preempt_text_parse_line_(&rd, "t=5 run=12 step-ms=30 ev=timer gen=1 => own-signal -> * fx=*", &a),
                     PREEMPT_TEXT_RECORD);
    ck_assert_uint_eq(a.wild, PREEMPT_WILD_TO | PREEMPT_WILD_FX);
    ck_assert_int_eq(
        preempt_text_parse_line_(&rd, "n=2 t=6 ev=timer gen=2 => own-signal -> exit fx=disarm-timer,exit:*", &b),
        PREEMPT_TEXT_RECORD);
    ck_assert_uint_eq(b.run, 12); /* sticky */
    ck_assert_uint_eq(b.step_ms, 30);
    ck_assert_uint_eq(b.wild, PREEMPT_WILD_ARG(1));
    actual = b;
    actual.wild = 0;
    actual.fx[1].arg = PREEMPT_EXIT_SAVED;
    ck_assert(preempt_trace_outcome_matches_(&b, &actual));
    actual.fx[0].kind = PREEMPT_FX_ARM_TIMER;
    ck_assert(!preempt_trace_outcome_matches_(&b, &actual));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("text");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_text_round_trip);
    tcase_add_test(tc, test_format_shows_facts);
    tcase_add_test(tc, test_format_reports_small_buffer);
    tcase_add_loop_test(tc, test_bad_line, 0, (int)ARRAY_SIZE(bad_lines));
    tcase_add_test(tc, test_config_after_record);
    tcase_add_test(tc, test_wildcards_and_sticky_facts);
    suite_add_tcase(s, tc);
    tc = tcase_create("binary");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_binary_round_trip);
    tcase_add_test(tc, test_binary_truncated_everywhere);
    tcase_add_test(tc, test_binary_unknown_name);
    tcase_add_test(tc, test_binary_out_of_order);
    tcase_add_test(tc, test_empty_traces);
    tcase_add_test(tc, test_trace_without_records);
    tcase_add_test(tc, test_decl_causes);
    tcase_add_test(tc, test_reports_replayed);
    tcase_add_test(tc, test_claim_answer_replayed);
    tcase_add_test(tc, test_view_per_incarnation);
    tcase_add_test(tc, test_lost_read_replayed);
    tcase_add_test(tc, test_write_failed_replayed);
    tcase_add_test(tc, test_grant_replayed);
    tcase_add_test(tc, test_keep_replayed);
    tcase_add_test(tc, test_records_replayed);
    tcase_add_test(tc, test_put_answer_replayed);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_view_lines_round_trip);
    tcase_add_test(tc, test_view_lines_replayed);
    tcase_add_test(tc, test_view_lines_malformed);
    tcase_add_test(tc, test_decl_lines);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
