/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/plan.c: grace-period planning, driven through the machine (the pure
 * core and its local coordination, lib/job/machine.c) on a virtual clock.
 *
 * One worker trains with step times of step_ms +-10% and saves taking
 * save_ms +-15% (uniform, from a fixed seed). A notice with no deadline of
 * its own arrives; the deadline is grace_ms later (SIGKILL then). The
 * machine agrees on a step, saves, trains through the countdown and plans
 * the final save. The shell's timing is mirrored: step times feed the same
 * moving mean and deviation as the handler's (preempt_facts_measure_step_()), the slowest save seen is the planner's
 * save time, and the machine's timer is handled at step boundaries (the
 * loop runs between steps). Both plans see identical step and save times.
 *
 * A run "keeps" the time between the first commit and the start of the
 * final save when the final save is committed by the deadline; it "misses"
 * when the final round was entered but not committed by the deadline, or
 * when the timer ended the countdown before a final save (the training of
 * the countdown is lost either way). A first save that itself ends past
 * the deadline is no plan's fault: it is counted apart, for both plans. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "job/machine-internal.h"
#include "preempt_fsm.h"

struct sim {
    struct preempt_sm *sm;
    uint64_t now_us;
    uint64_t timer_at_ms;     /* 0: disarmed */
    uint32_t timer_gen;
    bool save_asked, exited, countdown;
    uint64_t rng;
};

static uint64_t sim_ms(const struct sim *s)
{
    return s->now_us / 1000u + 1u; /* as the handler's clock: starts at 1 */
}

static uint64_t rnd(struct sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* base_ms * (1 +- spread), in microseconds. */
static uint64_t jitter_us(struct sim *s, uint64_t base_ms, double spread)
{
    double u = (double)(rnd(s) >> 11) / (double)(1ull << 53);

    return (uint64_t)((double)base_ms * 1000.0 * (1.0 - spread + 2.0 * spread * u));
}

static void sim_post(struct sim *s, struct preempt_event ev)
{
    ev.now_ms = sim_ms(s);
    (void)preempt_sm_post_(s->sm, &ev);
}

static void sim_fx(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg)
{
    struct sim *s = arg;

    if (preempt_local_coord_fx_(sm, fx, sim_ms(s)))
        return;
    if (fx->kind == PREEMPT_FX_BEGIN_SAVE) {
        s->save_asked = true;
    } else if (fx->kind == PREEMPT_FX_ARM_TIMER) {
        s->timer_at_ms = (uint64_t)fx->arg;
        s->timer_gen = preempt_sm_core_(sm)->timer_gen;
    } else if (fx->kind == PREEMPT_FX_DISARM_TIMER) {
        s->timer_at_ms = 0;
    } else if (fx->kind == PREEMPT_FX_EXIT) {
        s->exited = true;
    }
}

static void sim_after(struct preempt_sm *sm, enum preempt_state from, enum preempt_state to, void *arg)
{
    struct sim *s = arg;

    (void)sm;
    (void)from;
    if (to == PREEMPT_STATE_COUNTDOWN)
        s->countdown = true;
}

/* One step of step_ms +-10%, measured as the handler measures it. */
static void train_step(struct sim *s, struct preempt_facts *f, uint64_t *mean_us, uint64_t *dev_us, uint64_t step_ms)
{
    uint64_t d = jitter_us(s, step_ms, 0.10);

    s->now_us += d;
    preempt_facts_measure_step_(f, mean_us, dev_us, d);
    f->run++;
}

struct outcome {
    bool first_late;   /* the first save alone ended past the deadline */
    bool missed;
    double kept;       /* fraction of the grace period trained and kept */
};

static struct outcome simulate(uint64_t step_ms, uint64_t save_ms, uint64_t grace_ms, enum preempt_plan plan,
                               uint64_t seed)
{
    struct preempt_config_facts cfg = { .grace_ms = grace_ms, .bound_ms = 30000, .agree_timeout_ms = 10000,
                                        .margin_ms = 500, .plan = plan };
    struct preempt_sm_ops ops = { .run_fx = sim_fx, .after_step = sim_after };
    struct sim s = { .rng = seed, .now_us = 0 };
    struct preempt_facts *f;
    struct outcome o = { 0 };
    uint64_t ewma = 0, dev = 0, deadline_us, first_commit_us = 0, final_start_us = 0, final_commit_us = 0;

    if (preempt_sm_new_(&cfg, &ops, &s, &s.sm) < 0)
        abort();
    f = preempt_sm_facts_(s.sm);
    /* Training before the notice: the planner's step time settles. */
    for (int i = 0; i < 50; i++)
        train_step(&s, f, &ewma, &dev, step_ms);
    deadline_us = s.now_us + grace_ms * 1000u;
    sim_post(&s, (struct preempt_event){ .kind = PREEMPT_EV_NOTICE, .u.notice = { PREEMPT_SOURCE_SIGNAL, 0 } });
    while (!s.exited) {
        const struct preempt_core *c = preempt_sm_core_(s.sm);

        if (s.save_asked) { /* a blocking save: the loop (and the timer) wait for it */
            uint64_t d = jitter_us(&s, save_ms, 0.15), ms;

            s.save_asked = false;
            bool in_final = c->state == PREEMPT_STATE_FINAL_SAVE;

            if (in_final)
                final_start_us = s.now_us;
            s.now_us += d;
            ms = (d + 999) / 1000;
            if (ms > f->save_ms)
                f->save_ms = ms;
            sim_post(&s, (struct preempt_event){ .kind = PREEMPT_EV_SAVE_DONE });
            if (preempt_sm_core_(s.sm)->committed) {
                if (!first_commit_us)
                    first_commit_us = s.now_us;
                else if (in_final)
                    final_commit_us = s.now_us;
            }
            continue;
        }
        /* One step, then the boundary: the step is counted, then the loop
         * runs (a timer that came due during the step fires now). */
        {
            train_step(&s, f, &ewma, &dev, step_ms);
            if (c->state != PREEMPT_STATE_IDLE)
                sim_post(&s, (struct preempt_event){ .kind = PREEMPT_EV_STEP_REACHED, .u.step_reached = { f->run } });
            if (!s.exited && !s.save_asked && s.timer_at_ms && s.timer_at_ms <= sim_ms(&s)) {
                struct preempt_event ev = { .kind = PREEMPT_EV_TIMER };

                ev.u.timer.gen = s.timer_gen;
                s.timer_at_ms = 0;
                sim_post(&s, ev);
            }
        }
        if (s.now_us > deadline_us + 10 * grace_ms * 1000u + 3600000000u)
            abort(); /* a machine that never exits: a bug worth a crash */
    }
    if (!first_commit_us || first_commit_us > deadline_us) {
        o.first_late = true; /* no checkpoint of this preemption before SIGKILL */
    } else if (final_commit_us) {
        o.missed = final_commit_us > deadline_us;
        if (!o.missed)
            o.kept = (double)(final_start_us - first_commit_us) / (double)(grace_ms * 1000u);
    } else {
        /* No final save: fine when the first save left no time for a
         * countdown; a miss when a countdown ran (its training is lost). */
        o.missed = s.countdown;
    }
    preempt_sm_free_(s.sm);
    return o;
}

int bench_plan(const struct bench_opts *o, json_t *out)
{
    static const uint64_t steps[] = { 10, 100, 1000, 10000 };
    static const uint64_t saves[] = { 100, 1000, 10000, 30000 };
    static const uint64_t graces[] = { 30000, 120000, 600000, 3600000 };
    static const enum preempt_plan plans[] = { PREEMPT_PLAN_MEASURED, PREEMPT_PLAN_TF };
    unsigned seeds = o->quick ? 3 : 20;
    json_t *rows = json_array();
    unsigned total_missed[2] = { 0, 0 }, runs = 0, first_late = 0;
    double total_kept[2] = { 0, 0 };

    printf("\n6. Grace-period planning (virtual clock, %u seeds per cell; steps +-10%%, saves +-15%%)\n", seeds);
    printf("   %-9s %-9s | %-22s | %-22s\n", "", "", "kept training / grace", "missed deadlines");
    printf("   %-9s %-9s | %10s %11s | %10s %11s\n", "grace", "step", "libpreempt", "TF rule", "libpreempt",
           "TF rule");
    for (size_t g = 0; g < sizeof(graces) / sizeof(graces[0]); g++) {
        for (size_t st = 0; st < sizeof(steps) / sizeof(steps[0]); st++) {
            double kept[2] = { 0, 0 };
            unsigned missed[2] = { 0, 0 }, n = 0;

            for (size_t sv = 0; sv < sizeof(saves) / sizeof(saves[0]); sv++) {
                json_t *row = json_pack("{sI sI sI}", "grace_ms", (json_int_t)graces[g], "step_ms",
                                        (json_int_t)steps[st], "save_ms", (json_int_t)saves[sv]);

                for (size_t p = 0; p < 2; p++) {
                    double k = 0;
                    unsigned m = 0, late = 0;

                    for (unsigned seed = 1; seed <= seeds; seed++) {
                        struct outcome r = simulate(steps[st], saves[sv], graces[g], plans[p],
                                                    seed * 1000003u + g * 101 + st * 11 + sv);

                        k += r.kept;
                        m += r.missed;
                        late += r.first_late;
                    }
                    if (p == 0)
                        first_late += late;
                    kept[p] += k;
                    missed[p] += m;
                    (void)json_object_set_new(row, p == 0 ? "libpreempt" : "tf",
                                              json_pack("{sf sI sI}", "kept_fraction", k / seeds, "missed",
                                                        (json_int_t)m, "first_save_late", (json_int_t)late));
                }
                n += seeds;
                (void)json_array_append_new(rows, row);
            }
            printf("   %7llus %7llums | %9.1f%% %10.1f%% | %6u/%-3u %7u/%-3u\n",
                   (unsigned long long)graces[g] / 1000, (unsigned long long)steps[st], 100 * kept[0] / n,
                   100 * kept[1] / n, missed[0], n, missed[1], n);
            for (int p = 0; p < 2; p++) {
                total_missed[p] += missed[p];
                total_kept[p] += kept[p];
            }
            runs += n;
        }
    }
    printf("   %-19s | %9.1f%% %10.1f%% | %6u/%-3u %7u/%-3u\n", "all", 100 * total_kept[0] / runs,
           100 * total_kept[1] / runs, total_missed[0], runs, total_missed[1], runs);
    printf("   (and in %u runs of each plan the first save alone ended past the deadline: a save longer\n"
           "   than the grace period, which no plan can help)\n", first_late);
    (void)json_object_set_new(out, "first_save_late", json_integer(first_late));
    (void)json_object_set_new(out, "cells", rows);
    (void)json_object_set_new(out, "seeds", json_integer(seeds));
    (void)json_object_set_new(out, "runs", json_integer(runs));
    (void)json_object_set_new(out, "libpreempt", json_pack("{sf sI}", "kept_fraction", total_kept[0] / runs,
                                                            "missed", (json_int_t)total_missed[0]));
    (void)json_object_set_new(out, "tf", json_pack("{sf sI}", "kept_fraction", total_kept[1] / runs, "missed",
                                                    (json_int_t)total_missed[1]));
    return 0;
}
