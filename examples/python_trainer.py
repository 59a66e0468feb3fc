#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""A deterministic toy trainer on libpreempt, synchronous or asyncio.

Its state after step N is a function of N alone, so a preempted and resumed
run ends with the digest of an uninterrupted one: a lost or repeated step
changes it. Prints one JSON line per event (start, saved, exit, done).

    preempt-exec -- python3 examples/python_trainer.py --ckpt-dir ckpt --steps 500
    kill -TERM <pid>      # saves, exits 42; run it again: it resumes
"""
import argparse
import asyncio
import hashlib
import json
import os
import sys
import time

import libpreempt


def say(**event):
    print(json.dumps(event), flush=True)


class Model:
    def __init__(self, words=256):
        self.state = [0] * words

    def step(self, n):  # the update of step n (1-based), deterministic
        s = self.state
        for i in range(len(s)):
            s[i] = (s[i] * 6364136223846793005 + n * 1442695040888963407 + i) % (1 << 64)

    def to_bytes(self):
        return b"".join(x.to_bytes(8, "little") for x in self.state)

    def from_bytes(self, data):
        if len(data) != 8 * len(self.state):
            raise libpreempt.CheckpointUnusable("%d bytes of state, not %d" % (len(data), 8 * len(self.state)))
        self.state = [int.from_bytes(data[i:i + 8], "little") for i in range(0, len(data), 8)]

    def digest(self):
        return hashlib.sha256(self.to_bytes()).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--step-ms", type=float, default=0)
    ap.add_argument("--async", dest="use_async", action="store_true", help="an asyncio loop")
    ap.add_argument("--etcd", help="etcd endpoints: several workers")
    ap.add_argument("--job", default="job")
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--lease-ttl", type=int, default=10, help="the membership lease, seconds")
    ap.add_argument("--watch-peers", action="store_true",
                    help="print a peer-lost event when a peer's membership ends (where a DDP trainer "
                         "would call torch.distributed.destroy_process_group())")
    a = ap.parse_args()

    model = Model()
    multi = {}
    ckpt = a.ckpt_dir
    if a.etcd:
        os.makedirs(ckpt, exist_ok=True)
        ckpt = os.path.join(ckpt, "worker-%d" % a.worker)
        multi = dict(etcd=a.etcd, job=a.job, worker=a.worker, workers=a.workers, lease_ttl_s=a.lease_ttl)
        if a.watch_peers:  # a DDP trainer aborts its process group here, not after the collective's timeout
            multi["on_peer_lost"] = lambda peer, why: say(event="peer-lost", worker=a.worker, peer=peer, why=why)

    saved = []

    def save(step):
        saved.append(step)
        return {"model": model.to_bytes()}

    def restore(step, read):
        model.from_bytes(read("model"))

    def log(level, msg):
        if level >= 2:
            print("python_trainer: %s" % msg, file=sys.stderr)

    # asyncio: creation returns at once and start-up (joining the job,
    # restoring) runs on the loop, which keeps serving whatever else it has
    with libpreempt.Handler(ckpt, save=save, restore=restore, log=log, async_start=a.use_async, **multi) as h:
        code = asyncio.run(train_async(h, model, a)) if a.use_async else train_sync(h, model, a)
        if code is None:
            h.done()
            say(event="done", worker=a.worker, step=a.steps, digest=model.digest())
            return 0
        say(event="exit", worker=a.worker, reason=h.exit_reason, code=code,
            saved_step=saved[-1] if saved and h.exit_reason == "saved" else None)
        return code


def started(h, a):
    first = h.status()["run"]
    say(event="start", worker=a.worker, restored_step=first, mode="async" if a.use_async else "sync")
    return first


def train_sync(h, model, a):
    first = started(h, a)
    for n in range(first + 1, a.steps + 1):
        if a.step_ms:
            time.sleep(a.step_ms / 1000)
        model.step(n)
        if h.boundary():
            return h.exit_code
    return None


async def train_async(h, model, a):
    await h.started()
    first = started(h, a)
    detach = h.attach()  # the handler runs on this loop while steps await
    try:
        for n in range(first + 1, a.steps + 1):
            await asyncio.sleep(a.step_ms / 1000)
            model.step(n)
            code = await h.astep()
            if code is not None:
                return code
        return None
    finally:
        detach()


if __name__ == "__main__":
    sys.exit(main())
