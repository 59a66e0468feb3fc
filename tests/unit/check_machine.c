/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_machine.c: the shell's machine with the real local-mode
 * coordinator and a recording fake for saves, timers and exit. The text log
 * it writes must replay through the pure core (style R17), steps never
 * nest, and the queue's bounds hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-main.h"
#include "job/machine-internal.h"

struct harness {
    struct preempt_sm *sm;
    uint64_t now;
    char *log;
    size_t log_len;
    FILE *logf;
    struct preempt_trace_rec prev;
    unsigned records;
    bool in_record;
    unsigned saves;
    uint64_t save_step[4];
    int64_t timer_at;
    bool timer_armed;
    int exit_reason;
    unsigned flood;         /* timer events the next arm-timer effect posts (queue tests) */
    unsigned drain_requests;
};

static void run_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg)
{
    struct harness *h = arg;

    ck_assert_msg(!h->in_record, "an effect ran inside a record callback");
    if (preempt_local_coord_fx_(sm, fx, h->now))
        return;
    switch (fx->kind) {
    case PREEMPT_FX_BEGIN_SAVE:
        ck_assert_uint_lt(h->saves, 4);
        h->save_step[h->saves++] = (uint64_t)fx->arg;
        break;
    case PREEMPT_FX_ARM_TIMER:
        h->timer_at = fx->arg;
        h->timer_armed = true;
        for (unsigned i = 0; i < h->flood; i++) {
            struct preempt_event ev = { .kind = PREEMPT_EV_TIMER, .now_ms = h->now, .u.timer = { 999 } };
            (void)preempt_sm_post_(sm, &ev);
        }
        h->flood = 0; /* once */
        break;
    case PREEMPT_FX_DISARM_TIMER:
        h->timer_armed = false;
        break;
    case PREEMPT_FX_EXIT:
        h->exit_reason = (int)fx->arg;
        break;
    case PREEMPT_FX_KEEP_SHARD: /* the checkpoint store's; there is none here */
    case PREEMPT_FX_DISCARD_SHARD:
        break;
    case PREEMPT_FX_PUBLISH_NOTICE: /* the local coordinator handles these */
    case PREEMPT_FX_CLAIM_DRIVER:
    case PREEMPT_FX_PROPOSE_STEP:
    case PREEMPT_FX_REQUEST_FINAL:
    case PREEMPT_FX_REPORT_SHARD:
    case PREEMPT_FX_PUBLISH_ERROR:
    case PREEMPT_FX_ANNOUNCE_DONE:
    case PREEMPT_FX_ANNOUNCE_LEFT:
    case PREEMPT_FX_CLEAR_ROUND:
    case PREEMPT_FX_PROPOSE_ABORT:
    case PREEMPT_FX_REJOIN: /* a job's only: local mode never stays in place */
    case PREEMPT_FX_RESUME:
    case PREEMPT_FX__COUNT:
        ck_abort_msg("effect %s reached the fake shell", preempt_fx_to_string_(fx->kind));
    }
}

static void on_record(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg)
{
    struct harness *h = arg;
    char line[512];

    (void)sm;
    ck_assert_msg(!h->in_record, "a step ran inside another");
    h->in_record = true;
    ck_assert_int_gt(preempt_trace_format_(line, sizeof(line), rec, h->records ? &h->prev : NULL), 0);
    fprintf(h->logf, "%s\n", line);
    h->prev = *rec;
    h->records++;
    h->in_record = false;
}

static void schedule_drain(struct preempt_sm *sm, void *arg)
{
    (void)sm;
    ((struct harness *)arg)->drain_requests++;
}

static void start(struct harness *h, uint64_t grace_ms, bool with_schedule)
{
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_sm_ops ops = { .run_fx = run_fx, .on_record = on_record,
                                  .schedule_drain = with_schedule ? schedule_drain : NULL };
    char line[256];

    memset(h, 0, sizeof(*h));
    h->exit_reason = -1;
    cfg.grace_ms = grace_ms;
    h->logf = open_memstream(&h->log, &h->log_len);
    ck_assert_ptr_nonnull(h->logf);
    ck_assert_int_gt(preempt_trace_format_config_(line, sizeof(line), &cfg), 0);
    fprintf(h->logf, "%s\n", line);
    ck_assert_int_eq(preempt_sm_new_(&cfg, &ops, h, &h->sm), 0);
}

static void post(struct harness *h, struct preempt_event ev)
{
    ev.now_ms = h->now;
    ck_assert_int_eq(preempt_sm_post_(h->sm, &ev), 0);
}

/* Replays the log the shell wrote through the pure core: every line must match. */
static void assert_log_replays(struct harness *h)
{
    struct preempt_text_reader rd;
    struct preempt_core core = preempt_fsm_init_();
    char *save = NULL, *line;
    unsigned replayed = 0;

    ck_assert_int_eq(fflush(h->logf), 0);
    preempt_text_reader_init_(&rd);
    for (line = strtok_r(h->log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct preempt_trace_rec expect, actual;
        int r = preempt_text_parse_line_(&rd, line, &expect);
        ck_assert_msg(r >= 0, "%s: %s", line, rd.err);
        if (r != PREEMPT_TEXT_RECORD)
            continue;
        ck_assert_msg(preempt_replay_record_(&core, &rd.cfg, &expect, &actual), "diverges: %s", line);
        replayed++;
    }
    ck_assert_uint_eq(replayed, h->records);
    ck_assert_int_eq(core.state, preempt_sm_core_(h->sm)->state);
}

static void stop(struct harness *h)
{
    fclose(h->logf);
    free(h->log);
    preempt_sm_free_(h->sm);
}

static void step_to(struct harness *h, uint64_t run)
{
    preempt_sm_facts_(h->sm)->run = run;
    post(h, (struct preempt_event){ .kind = PREEMPT_EV_STEP_REACHED, .u.step_reached = { run } });
}

START_TEST(test_local_grace0)
{
    struct harness h;

    start(&h, 0, false);
    preempt_sm_facts_(h.sm)->run = 41;
    preempt_sm_facts_(h.sm)->step_ms = 100;
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } });
    /* run to completion: the notice, the claim won and its proposal come back as the step */
    ck_assert_int_eq(preempt_sm_core_(h.sm)->state, PREEMPT_STATE_STEP_AGREED);
    ck_assert_uint_eq(preempt_sm_core_(h.sm)->save_step, 42);
    ck_assert_uint_eq(h.records, 3);
    ck_assert(h.timer_armed);
    ck_assert_uint_eq(h.saves, 0);
    h.now = 100;
    step_to(&h, 42);
    ck_assert_uint_eq(h.saves, 1);
    ck_assert_uint_eq(h.save_step[0], 42);
    ck_assert_int_eq(preempt_sm_core_(h.sm)->state, PREEMPT_STATE_FINAL_SAVE);
    h.now = 160;
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_SAVE_DONE, .u.save_done = { 0 } });
    ck_assert_int_eq(preempt_sm_core_(h.sm)->state, PREEMPT_STATE_EXIT);
    ck_assert_int_eq(h.exit_reason, PREEMPT_EXIT_SAVED);
    ck_assert(!h.timer_armed);
    ck_assert_uint_eq(h.records, 6);
    ck_assert_uint_eq(preempt_sm_illegal_(h.sm), 0);
    assert_log_replays(&h);
    stop(&h);
}
END_TEST

START_TEST(test_local_grace_two_saves_before_deadline)
{
    struct harness h;
    uint64_t run = 10, deadline;

    start(&h, 5000, false);
    preempt_sm_facts_(h.sm)->run = run;
    preempt_sm_facts_(h.sm)->step_ms = 100;
    preempt_sm_facts_(h.sm)->save_ms = 200;
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } });
    deadline = preempt_sm_core_(h.sm)->deadline_ms;
    ck_assert_uint_eq(deadline, 5000);
    /* the trainer: a step every 100 ms; a save takes 200 ms */
    while (preempt_sm_core_(h.sm)->state != PREEMPT_STATE_EXIT && h.now < 10000) {
        unsigned saves = h.saves;
        h.now += 100;
        step_to(&h, ++run);
        if (h.saves > saves) {
            h.now += 200;
            post(&h, (struct preempt_event){ .kind = PREEMPT_EV_SAVE_DONE, .u.save_done = { 0 } });
        }
    }
    ck_assert_int_eq(h.exit_reason, PREEMPT_EXIT_SAVED);
    ck_assert_uint_eq(h.saves, 2);
    ck_assert_uint_eq(h.save_step[0], 11);
    ck_assert_uint_gt(h.save_step[1], 40);      /* trained through most of the grace period */
    ck_assert_uint_lt(h.now, deadline - 500);   /* committed before the deadline, margin kept */
    assert_log_replays(&h);
    stop(&h);
}
END_TEST

START_TEST(test_queue_overflow_is_counted)
{
    struct harness h;

    start(&h, 0, false);
    h.flood = PREEMPT_EVQ_SIZE + 10; /* one effect posts more events than fit */
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } });
    ck_assert_uint_gt(preempt_sm_dropped_(h.sm), 0);
    ck_assert_uint_eq(preempt_sm_illegal_(h.sm), 0);
    stop(&h);
}
END_TEST

START_TEST(test_drain_yields_to_the_loop)
{
    struct harness h;
    unsigned before;

    start(&h, 0, true);
    /* the notice, claim-won, step-agreed and 62 timers: 65 steps, more than
     * one wake-up may take, while the queue (64) never overflows */
    h.flood = PREEMPT_EVQ_SIZE - 2;
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } });
    ck_assert_uint_ge(h.drain_requests, 1);
    before = h.records;
    ck_assert_uint_le(before, PREEMPT_MAX_STEPS_PER_WAKEUP);
    while (h.drain_requests > 0) {
        h.drain_requests--;
        preempt_sm_drain_(h.sm);
    }
    ck_assert_uint_gt(h.records, before);
    ck_assert_int_eq(preempt_sm_core_(h.sm)->state, PREEMPT_STATE_STEP_AGREED);
    ck_assert_uint_eq(preempt_sm_dropped_(h.sm), 0);
    assert_log_replays(&h);
    stop(&h);
}
END_TEST

START_TEST(test_illegal_is_counted_and_recorded)
{
    struct harness h;

    start(&h, 0, false);
    post(&h, (struct preempt_event){ .kind = PREEMPT_EV_SAVE_DONE, .u.save_done = { 0 } });
    ck_assert_uint_eq(preempt_sm_illegal_(h.sm), 1);
    ck_assert_uint_eq(h.records, 1);
    ck_assert_int_eq(h.prev.verdict, PREEMPT_VERDICT_ILLEGAL);
    ck_assert_int_eq(preempt_sm_core_(h.sm)->state, PREEMPT_STATE_IDLE);
    assert_log_replays(&h);
    stop(&h);
}
END_TEST

START_TEST(test_bad_arguments)
{
    struct preempt_config_facts cfg = preempt_config_defaults_();
    struct preempt_sm_ops ops = { 0 };
    struct preempt_sm *sm = NULL;

    ck_assert_int_eq(preempt_sm_new_(&cfg, &ops, NULL, &sm), -EINVAL); /* run_fx is required */
    ck_assert_ptr_null(sm);
    ck_assert_int_eq(preempt_sm_new_(NULL, &ops, NULL, &sm), -EINVAL);
    preempt_sm_free_(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("machine");
    TCase *tc = tcase_create("shell");

    tcase_add_test(tc, test_local_grace0);
    tcase_add_test(tc, test_local_grace_two_saves_before_deadline);
    tcase_add_test(tc, test_queue_overflow_is_counted);
    tcase_add_test(tc, test_drain_yields_to_the_loop);
    tcase_add_test(tc, test_illegal_is_counted_and_recorded);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
