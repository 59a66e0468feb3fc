/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/records/keys-internal.h: the job's key layout in etcd, defined once.
 *
 * Every record of a job is a key P<pattern> with P = /preempt/<job>/ (see
 * preempt_coord_prefix_). A pattern's placeholders are {N} the
 * incarnation, {p} the preemption episode, {k} the round (0 or 1), {S} a
 * checkpoint step and {w} a worker index (< PREEMPT_MAX_WORKERS). From this
 * one table come the keys the coordinator, start-up, the watcher,
 * preemptctl and the simulator write (preempt_key_), the records they
 * recognise (preempt_key_parse_), the ranges they read, count and delete
 * (preempt_key_range_), and docs/protocol.md's key tables (preemptctl
 * keys; tests/docs.sh checks the document against it). */
#ifndef PREEMPT_KEYS_INTERNAL_H
#define PREEMPT_KEYS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The member record's value (N/w/alive/<w>, N/w/joined/<w>). */
#define PREEMPT_MEMBER_GRAMMAR_                                                                                       \
    "pid=<pid:u64> host=<host:word> launch=<launch:word> workers=<workers:u64> [over=1 ]steps=[<steps:list>]"

/* X(ID, pattern, value, written by, meaning): the records. value is the
 * value's grammar (records-internal.h), from which every value is read
 * and checked; it and the last two are the documentation's columns
 * (Markdown). */
#define PREEMPT_KEYS(X)                                                                                              \
    X(INCARNATION, "incarnation", "<N:u64>", "the first worker of an incarnation (a transaction on the old value)",       \
      "the job's current incarnation")                                                                               \
    X(START_OVER, "start-over", "preemptctl <at:unixms>", "`preemptctl start-over`",                                 \
      "the operator's one-time request: the next barrier whose plan is at risk starts over, and deletes the "        \
      "request in the transaction that writes `N/ready`")                                                            \
    X(HISTORY, "history/{N}/{w}",                                                                                   \
      "exit=<code:int> reason=<reason:word> at=<at:unixms> started=<started:unixms> restore_ms=<restore:u64> "      \
      "run=<run:u64> committed=<committed:u64> saves=<saves:u64>[ notice=<notice:unixms> source=<source:word> "    \
      "from=<from:w> agreed=<agreed:u64>]",                                                                         \
      "worker w at its exit",                                                                                        \
      "how w's run in incarnation N ended, for `preemptctl history`: its exit, when it began training and how "     \
      "long its restore took, and the notice it ended on. Outside the incarnations; the last 16 incarnations' are " \
      "kept (each worker deletes `history/<N-16>/` as it writes)")                                                   \
    X(SHAPE, "{N}/shape", "workers=<workers:u64>", "N's first member, create-if-absent",                                       \
      "the worker count of N: a worker with another one is refused")                                                \
    X(READY, "{N}/ready",                                                                                            \
      "restore=(<restore:u64>|none) workers=<workers:u64> launch=<launch:word>[ refused=<refused:u64> "          \
      "lacking=<lacking:list>][ over=<over:u64>]",               \
      "create-if-absent, by the worker that counted the W-th member",                                                \
      "the start-up barrier's one record: N started, with these members, from this step; or N refused to start "     \
      "because workers lack step S that others hold; or it started over, setting S and the other newer steps aside") \
    X(RESTORED, "{N}/restored", "(ok|unusable <step:u64> worker=<w:w>: <why:text>|failed <step:u64> worker=<w:w>: <why:text>)",                             \
      "create-if-absent: `ok` by the worker whose report completed the count of W, the others by the first worker "  \
      "whose restore failed",                                                                                        \
      "the restore barrier's one record: training starts; or (unusable) every worker sets that step aside and the "  \
      "job joins again (a new incarnation) without it; or (failed: out of memory, I/O) every worker's start-up "     \
      "fails, nothing set aside")                                                                                    \
    X(NOTICE_OP, "{N}/notice/op", "<deadline:unixms> <source:word>", "`preemptctl notice`",                                      \
      "an operator's notice: every worker's own (source operator)")                                                 \
    X(ERROR, "{N}/error", "<code:int> <w:w> <message:text>", "create-if-absent", "the job's first error")                     \
    X(NOTICE, "{N}/e{p}/notice/{w}", "<deadline:unixms> <source:word>[ withdrawn]", "worker w",                       \
      "w's earliest notice; `withdrawn` when its sources cancelled it or it was advisory. When every record is "     \
      "withdrawn (and no operator's notice stands), every worker gets `notice-withdrawn`: the round's save "         \
      "completes and the job returns to idle (episodes, below)")                                                     \
    X(CLAIM, "{N}/e{p}/claim", "<w:w>[ <deadline:unixms> <source:word>[ withdrawn]]",                                              \
      "create-if-absent, lease-bound, in one transaction with round 0's step",                                       \
      "the driver of the preemption, and its notice when that opened the episode (w's notice record until w "       \
      "writes one: when the notice changes, or when the claim goes with w's lease or w's exit)")                    \
    X(LOST, "{N}/e{p}/lost", "<w:w>[ left]",                                                                      \
      "the driver, create-if-absent; or w itself (`left`) as it exits on a second notice",                           \
      "w's membership is gone (its lease ended), or w left the job before the preemption's end: every worker "     \
      "gets `peer-lost`")                                                                                            \
    X(FINAL, "{N}/e{p}/final", "<w:w>", "the driver", "the final round (grace period) is open")                      \
    X(AGREED, "{N}/e{p}/r{k}/agreed", "<step:u64>[ last]",                                                             \
      "the driver, with its claim (round 0) or `final` (round 1), create-if-absent; raised by a worker past it "    \
      "(compare-and-put on the value it saw)",                                                                       \
      "round k's save step: the driver's step plus the lead, or a raise's; `last` when the proposal said so: that " \
      "save ends the preemption (no countdown after it), for every worker")                                         \
    X(DECISION, "{N}/decision/e{p}/r{k}",                                                                           \
      "(committed <step:u64>[ last][ save=<save:u64>][ stop=<stop:u64>][ from=<from:u64> pace=<pace:u64>]|"         \
      "aborted <step:u64> (<w:w>|restart))",        \
      "create-if-absent: the first to land wins",                                                                    \
      "round k's one decision; `last` when a worker's report said no time is left for another round: the commit "   \
      "ends the preemption for every worker; `save`: the slowest save the reports name, which every worker plans "   \
      "the final round with (until the next decision names another); `stop`: with `last`, the highest stop "      \
      "step the reports name when past the step: every worker that trained on while its checkpoint persisted "     \
      "stops there (without it: at the step); `from` and `pace`: the lowest step a worker had reached as the "   \
      "reports were read (a report's step, plus, with `at`, its steps since at its pace) and the "                  \
      "slowest pace (ms a step), with which the driver plans the final round for the job's slowest worker. Kept for the incarnation's life, outside `e<p>/`, because a "        \
      "worker's pending copy may wait on it after the episode is cleared")                                   \
    X(W_RESTORED, "{N}/w/restored/{w}", "ok", "worker w, counted in the same transaction",                         \
      "w's restore callback accepted the step")                                                                      \
    X(JOINED, "{N}/w/joined/{w}", PREEMPT_MEMBER_GRAMMAR_, "worker w at start",                  \
      "w lived in N (permanent: a worker that finds its own marks a restart). Outside the watched range: in it, "    \
      "every worker's first read of the range returned all W of them, W^2 records at start-up")                      \
    X(ALIVE, "{N}/w/alive/{w}", PREEMPT_MEMBER_GRAMMAR_,                         \
      "worker w, bound to its lease",                                                                                \
      "the member record: membership, identity and the checkpoint steps w offers. Deleted with the report of w's "   \
      "last save")                                                                                                   \
    X(DONE, "{N}/w/done/{w}", "<step:u64>", "worker w", "w finished training")                                         \
    X(SHARD, "{N}/w/e{p}/r{k}/shard/{S}/{w}", "<save:u64>[ last][ stop=<stop:u64>][ run=<run:u64> pace=<pace:u64>[ at=<at:unixms>]]",                               \
      "worker w, counted in the same transaction",                                                                   \
      "w's shard of round k, at step S, is written (still pending: see \"One decision per round\"), and the "       \
      "longest save w measured itself (awaited by the trainer; before one was, persisted while it trained on; "     \
      "never the job's figure a decision named). `last`: w judges, its save done and measured, that no time is "   \
      "left for another round; `stop`: then where w would have the job stop training (its step, or, training on "  \
      "while the checkpoint persisted, its step plus the lead); `run` and `pace`: the step w had reached as it "     \
      "reported, and its mean step time (ms); `at`: when w trains on from there (its checkpoint persisted while "  \
      "it trained; without it, w waits at its step for the decision)")

/* X(ID, pattern): the ranges read, counted, watched and deleted as a whole. */
#define PREEMPT_RANGES(X)                                                                                            \
    X(INC, "{N}/")              /* the incarnation; every worker watches [INC, WORKERS) */                          \
    X(WORKERS, "{N}/w/")        /* the per-worker records: outside the watch, read by the driver */                 \
    X(EPISODE, "{N}/e{p}/")     /* an episode's records, cleared when it ends */                                    \
    X(W_EPISODE, "{N}/w/e{p}/") /* an episode's per-worker records, cleared with it */                              \
    X(HISTORY_ALL, "history/")  /* every kept incarnation's history */                                             \
    X(HISTORY_INC, "history/{N}/") /* one incarnation's */

enum preempt_key_id {
#define PREEMPT_KEY_ENUM_(id, ...) PREEMPT_KEY_##id,
    PREEMPT_KEYS(PREEMPT_KEY_ENUM_) PREEMPT_KEY_COUNT,
    PREEMPT_KEY_RANGES_ = PREEMPT_KEY_COUNT - 1, /* the ranges follow the records */
    PREEMPT_RANGES(PREEMPT_KEY_ENUM_) PREEMPT_KEY_ALL_COUNT_
#undef PREEMPT_KEY_ENUM_
};

/* A key's placeholders' values. */
struct preempt_key {
    uint64_t inc;    /* {N} */
    uint64_t ep;     /* {p} */
    uint64_t step;   /* {S} */
    unsigned round;  /* {k}: 0 or 1 */
    unsigned worker; /* {w} */
};

/* The longest key under a valid job prefix. */
#define PREEMPT_KEY_MAX 256

/* Writes jobp (the job's prefix) + id's pattern with k's values into buf.
 * 0, or -ENAMETOOLONG, -EINVAL (no such id); on failure buf holds "" (no
 * key, never a cut one: every port refuses a request naming it,
 * preempt_etcd_req_keys_ok_()). */
int preempt_key_(char *buf, size_t size, const char *jobp, enum preempt_key_id id, const struct preempt_key *k);

/* A range of keys: of record kind id, the prefix before placeholder upto
 * ('w': every worker's "P/N/w/alive/"; 'S': every step's), or (upto 0) the
 * range id ("P/N/e3/"). Returns as preempt_key_. */
int preempt_key_range_(char *buf, size_t size, const char *jobp, enum preempt_key_id id, char upto,
                       const struct preempt_key *k);

/* Which record key is (jobp + a pattern with every placeholder a decimal
 * number in its domain, without leading zeros): its id with *k filled
 * (placeholders it lacks are 0), or -1. */
int preempt_key_parse_(const char *key, const char *jobp, struct preempt_key *k);

/* A record kind's pattern ("{N}/e{p}/claim"); NULL for no such id. */
const char *preempt_key_pattern_(enum preempt_key_id id);

/* Whether id's pattern has placeholder c ('N', 'p', 'k', 'S', 'w'). */
bool preempt_key_has_(enum preempt_key_id id, char c);

/* The value of an agreed record: a step, and " last" when the save there
 * ends the preemption. Writes it into *v by its grammar
 * (records-internal.h): its length (at most PREEMPT_STEP_VALUE_MAX), or a
 * negative errno (*v ""). */
#define PREEMPT_STEP_VALUE_MAX 32
struct preempt_value;
int preempt_step_value_(struct preempt_value *v, uint64_t step, bool last);

/* Parses such a value: true with *step and *last set, false for anything
 * else (a number with other words after it, a sign, nothing). */
bool preempt_step_value_parse_(const char *value, uint64_t *step, bool *last);

/* A worker's step and pace as a shard report names them (run=, pace=,
 * and at=: the wall-clock time from which it trains on from that step; 0:
 * it waits there for the decision), or the lowest step and the slowest
 * pace of a round's reports as its commit names them (from=, pace=; at 0);
 * ms 0: not named. */
struct preempt_pace {
    uint64_t step, ms, at;
};

/* A shard report, "<save>[ last][ stop=<step>][ run=<step> pace=<ms>[ at=<unixms>]]"
 * (stop 0: not named): writes it into *v (at most PREEMPT_SHARD_VALUE_MAX) as
 * preempt_step_value_ does; parses it, true with *save_ms, *last, *stop (0: not
 * named) and *pace set, false for anything else. */
#define PREEMPT_SHARD_VALUE_MAX 136
int preempt_shard_value_(struct preempt_value *v, uint64_t save_ms, bool last, uint64_t stop, struct preempt_pace pace);
bool preempt_shard_value_parse_(const char *value, uint64_t *save_ms, bool *last, uint64_t *stop,
                                struct preempt_pace *pace);

/* A committed decision, "committed <step>[ last] save=<ms>[ stop=<step>]
 * [ from=<step> pace=<ms>]" (the round's slowest save, older records lack
 * it; the job's stop step, 0: not named; the reports' lowest step and
 * slowest pace, pace.ms 0: not named): writes it into *v as
 * preempt_step_value_ does (at most PREEMPT_COMMITTED_VALUE_MAX); parses it, true with *step, *last and
 * *save_ms (0: not named) set, false for anything else (an abort
 * included). */
#define PREEMPT_COMMITTED_VALUE_MAX 144
int preempt_committed_value_(struct preempt_value *v, uint64_t step, bool last, uint64_t save_ms, uint64_t stop,
                             struct preempt_pace pace);
bool preempt_committed_parse_(const char *value, uint64_t *step, bool *last, uint64_t *save_ms);

/* Whether a value may be written at key: 0 when key is no record of a job
 * (outside /preempt/<job>/, or no kind's pattern) or its value reads as
 * that kind's grammar (records-internal.h; worker indices up to
 * PREEMPT_MAX_WORKERS); else -EBADMSG with *why (static text: what was
 * expected). Every write of the etcd client (lib/etcd/etcd.c) and of the
 * simulation passes through it. Pure. */
int preempt_record_check_put_(const char *key, const char *value, const char **why);

/* docs/protocol.md's key tables, in Markdown: the records under the
 * watched range and the job (watched), or those under {N}/w/ (per-worker).
 * Returns the length written as snprintf does. */
int preempt_key_table_(char *buf, size_t size, bool per_worker);

#endif
