# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""tests/loops/loop_trainer.py: loop-trainer.c's Python twin, on an asyncio
loop through the package's descriptor forms (tests/loops.sh runs it as
--loop asyncio):

  --idiom ready  h.attach(): the handler runs when its descriptor is
                 readable or its timer fires (loop.add_reader and a
                 call_later re-armed from h.timeout()); steps end with
                 await h.astep()
  --idiom every  await h.astep() alone: the handler runs at every step's end

Each step may sleep (--step-ms, a blocking collective's time, never yielding
to the loop). The model is a deterministic function of the run counter: a
restart checks that the restored state is exactly the one after the
restored step. Output as loop-trainer.c's: "started run=R",
"restored step=S exact=1|0", "saved step=S", "exit code=C run=R".
"""
import argparse
import asyncio
import struct
import sys
import time

import libpreempt

MASK = (1 << 64) - 1


def model_at(run):
    x = 1
    for s in range(run):
        x = (x * 6364136223846793005 + 1442695040888963407 + s) & MASK
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idiom", choices=("ready", "every"), required=True)
    ap.add_argument("--start", choices=("sync", "async"), default="sync")
    ap.add_argument("--step-ms", type=int, default=0)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--more", type=int, default=0)
    ap.add_argument("--mark", type=int, default=0, help='"trained n=N" once this process trained N steps')
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--etcd")
    ap.add_argument("--job")
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--loop", default="asyncio")
    a = ap.parse_args()
    state = {"x": model_at(0)}

    def save(step):
        print("saved step=%d" % step, flush=True)
        return {"model": struct.pack("<Q", state["x"])}

    def restore(step, read):
        state["x"] = struct.unpack("<Q", read("model"))[0]
        print("restored step=%d exact=%d" % (step, state["x"] == model_at(step)), flush=True)

    def log(level, msg):
        print("libpreempt: %s: %s" % (level, msg), file=sys.stderr, flush=True)

    job = {}
    if a.workers > 1:
        job = dict(etcd=a.etcd, job=a.job, worker=a.worker, workers=a.workers)

    async def train():
        h = libpreempt.Handler(a.ckpt_dir, save=save, restore=restore, log=log,
                               async_start=a.start == "async", **job)
        detach = h.attach() if a.idiom == "ready" else None
        try:
            if a.start == "async":
                await h.started()
            run = h.status()["run"]
            stop_at = a.steps or run + a.more
            print("started run=%d" % run, flush=True)
            stepped = 0
            while True:
                run = h.status()["run"]
                state["x"] = (state["x"] * 6364136223846793005 + 1442695040888963407 + run) & MASK
                if a.step_ms:
                    time.sleep(a.step_ms / 1000.0)  # the step's collective, blocking
                stepped += 1
                if stepped == a.mark:
                    print("trained n=%d" % stepped, flush=True)
                code = await h.astep()
                if code is not None:
                    break
                if h.status()["run"] >= stop_at:
                    h.done()
                    code = h.exit_code if h.exit_code is not None else 0
                    break
                await asyncio.sleep(0)  # the loop's other work
            print("exit code=%d run=%d" % (code, h.status()["run"]), flush=True)
            return code
        finally:
            if detach:
                detach()
            h.close()

    return asyncio.run(train())


if __name__ == "__main__":
    sys.exit(main())
