# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""A PyTorch DistributedDataParallel trainer (gloo on CPU) that survives
preemption without losing a step: one process per rank, each a worker of a
libpreempt job on etcd. A SIGTERM to any rank (or to all) makes every rank
save at one agreed step and exit 42; the restart resumes at the next step,
and the final parameters are bitwise those of an uninterrupted run.

Run each rank under preempt-exec (torch starts threads at import):

    preempt-exec -- python3 pytorch_ddp.py --etcd http://127.0.0.1:2379 \\
        --job ddp --rank R --world 4 --master-port 29500 --ckpt-dir ckpt

Under torchrun (the rank, world size and port come from its environment;
the library reads the launch id from TORCHELASTIC_RUN_ID), put preempt-exec
after torchrun, not before it, so that torchrun still gets the SIGTERM to
pass on:

    torchrun --nproc_per_node 4 --redirects 1 --tee 1 --no_python \
        preempt-exec -- python3 pytorch_ddp.py --etcd http://127.0.0.1:2379 --ckpt-dir ckpt

torchrun turns the ranks' 42 into its own exit status 1, so have the
scheduler restart on any failure (tests/torchrun.sh runs exactly this).

The checkpoint holds what makes the run exact: the model, the optimizer
(momentum), torch's RNG (dropout) and the data position (the step: batch
n is generated from n).
"""
import argparse
import asyncio
import hashlib
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import libpreempt


def say(**kv):
    print(json.dumps(kv, separators=(",", ":")), flush=True)  # one flat JSON object per line


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 64), nn.ReLU(),
                                  nn.Linear(64, 1))

    def forward(self, x):
        return self.body(x)


def batch(step, rank):
    """Rank `rank`'s batch of step `step`: a function of both alone, so the
    data position is the step."""
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(16, 32, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def per_parameter_allreduce(state, bucket):
    """DDP's gradient hook: one all-reduce per parameter.

    DDP groups gradients into buckets and all-reduces each bucket as one
    flat tensor. A freshly built DDP (every restart) uses a first-iteration
    bucket order, then rebuilds its buckets from the order gradients became
    ready; gloo's ring sums each element in an order that depends on where
    it falls in the flat tensor. So a restored run would sum the same
    gradients in another order and drift from the uninterrupted run in the
    last bits. Reducing each parameter's gradient on its own makes the
    order depend on the parameter alone: the same before and after a
    restart."""
    world = dist.get_world_size()
    grads = [g.clone() for g in bucket.gradients()]  # the bucket's buffer, parameter by parameter
    works = [dist.all_reduce(g, async_op=True) for g in grads]

    def done(_):
        return torch.cat([g.flatten() for g in grads]).div_(world)  # the buffer's layout

    return torch.futures.collect_all([w.get_future() for w in works]).then(done)


def digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--job", default="ddp")
    ap.add_argument("--rank", type=int, default=int(os.environ.get("RANK", 0)))
    ap.add_argument("--world", type=int, default=int(os.environ.get("WORLD_SIZE", 1)))
    ap.add_argument("--master-port", type=int, default=int(os.environ.get("MASTER_PORT", 29500)))
    ap.add_argument("--step-ms", type=int, default=0, help="extra time per step (compute stands in)")
    ap.add_argument("--lease-ttl-s", type=int, default=10,
                    help="the membership lease (it grows by itself once a step takes a third of it)")
    ap.add_argument("--async", dest="use_async", action="store_true", help="an asyncio loop")
    ap.add_argument("--no-hook", action="store_true", help="DDP's own bucketed all-reduce (drifts after a restart)")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)  # the same initial model on every rank
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.master_port, rank=a.rank,
                            world_size=a.world)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

    # torch.save and torch.load work on the checkpoint's file itself: no
    # copy of the state is built in memory on either side.
    def save(step):
        return {"state": lambda f: torch.save({"model": net.state_dict(), "opt": opt.state_dict(),
                                                "rng": torch.get_rng_state(), "step": step}, f)}

    def restore(step, read):
        try:
            with read.open("state") as f:
                st = torch.load(f)
        except Exception as e:  # not a checkpoint of this trainer: the next older one is tried
            raise libpreempt.CheckpointUnusable(str(e))
        if st["step"] != step:
            raise libpreempt.CheckpointUnusable("holds step %d" % st["step"])
        net.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        torch.set_rng_state(st["rng"])

    os.makedirs(a.ckpt_dir, exist_ok=True)
    h = libpreempt.Handler(os.path.join(a.ckpt_dir, "rank-%d" % a.rank), save=save, restore=restore,
                           etcd=a.etcd, job=a.job, worker=a.rank, workers=a.world, async_start=a.use_async,
                           lease_ttl_s=a.lease_ttl_s,
                           log=lambda lvl, msg: lvl >= 2 and print("rank %d: %s" % (a.rank, msg), file=sys.stderr))
    with h:
        code = asyncio.run(train_async(h, net, opt, a)) if a.use_async else train(h, net, opt, a, h.boundary)
        dist.destroy_process_group()
        if code is None:
            h.done()
            say(event="done", rank=a.rank, step=a.steps, digest=digest(net))
            return 0
        say(event="exit", rank=a.rank, code=code, reason=h.exit_reason, saved_step=h.status()["save_step"])
        return code


def ddp(net, a):
    model = DDP(net)
    if not a.no_hook:
        model.register_comm_hook(None, per_parameter_allreduce)
    return model


def one_step(model, opt, n, a):
    if a.step_ms:
        time.sleep(a.step_ms / 1000)
    x, y = batch(n, a.rank)
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # the all-reduce: blocks until every rank is in this step
    opt.step()


def train(h, net, opt, a, boundary):
    first = h.status()["run"]
    say(event="start", rank=a.rank, restored_step=first, mode="sync")
    model = ddp(net, a)
    for n in range(first + 1, a.steps + 1):
        one_step(model, opt, n, a)
        if boundary():
            return h.exit_code
    return None


async def train_async(h, net, opt, a):
    await h.started()  # joining and restoring on this loop
    first = h.status()["run"]
    say(event="start", rank=a.rank, restored_step=first, mode="async")
    model = ddp(net, a)
    detach = h.attach()
    try:
        for n in range(first + 1, a.steps + 1):
            one_step(model, opt, n, a)
            code = await h.astep()
            if code is not None:
                return code
        return None
    finally:
        detach()


if __name__ == "__main__":
    sys.exit(main())
