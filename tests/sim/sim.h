/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/sim/sim.h: the deterministic simulation (make sim, tests/sim.sh).
 *
 * One process runs a whole job: 1-64 workers, each the real machine (the
 * pure core behind lib/job/machine.c) with the handler's rules around it
 * (lib/job/worker.c), the real start-up and the real coordinator
 * (lib/job/coord.c, over struct preempt_coord_io), over an
 * in-memory model of etcd's semantics (sim-etcd.c: revisions, prefix
 * watches, leases, txn, reached through the typed port), all on one
 * virtual clock. Everything random comes from the seed. */
#ifndef PREEMPT_SIM_H
#define PREEMPT_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "etcd/etcd-internal.h"

struct sim_etcd;

/* One change a watcher sees (key and value owned by the model). */
struct sim_ev {
    int64_t rev;
    enum preempt_etcd_ev type;
    struct preempt_etcd_kv kv;
};

struct sim_etcd *sim_etcd_new(void);
void sim_etcd_free(struct sim_etcd *m);

/* Answers one request of the typed port at time now_ms. Returns 0 with
 * *ret the answer (the caller clears it with preempt_etcd_reply_clear_),
 * or a negative errno with a message (-EINVAL: a request etcd refuses;
 * -ENOENT: an unknown lease). */
int sim_etcd_do(struct sim_etcd *m, const struct preempt_etcd_req *req, uint64_t now_ms, struct preempt_etcd_reply *ret,
                const char **msg);

/* Expires the leases due by now_ms (their keys are deleted). */
void sim_etcd_expire(struct sim_etcd *m, uint64_t now_ms);
/* Renews every lease to a full TTL from now (etcd does on a leader change). */
void sim_etcd_refresh(struct sim_etcd *m, uint64_t now_ms);
/* The earliest lease expiry (0: none), or an earlier time: a call of
 * sim_etcd_expire() at that time makes the next answer exact. */
uint64_t sim_etcd_next_expiry(struct sim_etcd *m);

int64_t sim_etcd_rev(const struct sim_etcd *m);
/* The history: every change, in revision order. */
const struct sim_ev *sim_etcd_history(const struct sim_etcd *m, size_t *n);
/* The current keys under prefix, or in [prefix, end) when end is not NULL
 * (a snapshot; free with preempt_etcd_kvs_free_). */
int sim_etcd_snapshot(const struct sim_etcd *m, const char *prefix, const char *end, struct preempt_etcd_kv **ret,
                      size_t *n);
/* Writes a key directly (start-up records the simulation sets up itself). */
void sim_etcd_put(struct sim_etcd *m, const char *key, const char *value, int64_t lease, uint64_t now_ms);
int64_t sim_etcd_grant(struct sim_etcd *m, unsigned ttl_s, uint64_t now_ms);

#endif
