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

With --loader-workers N the data comes from a DataLoader (N worker
processes) over a DistributedSampler, epoch after epoch, and the package's
PyTorch helper keeps it all (libpreempt.torch: Checkpoint, ResumableLoader,
exact_ddp): a restart resumes mid-epoch at the next batch, bitwise.
--trap rebuilds that DataLoader without its own generator, the trap the
helper avoids: the resumed run drifts. --two-phase makes its checkpoints
two-phase: each is snapshotted into host memory at its step and written
by the library while the ranks train on (docs/guide/two-phase.md).

With --grace-ms G the ranks train on after the first save and save again
before the deadline; --second-exit makes a rank leave at once on a second
notice (with the committed save): the other ranks learn it from the job's
records at their next boundary and exit 42 with the same save.

With --stay-in-place the ranks that no notice came to keep their
processes through a preemption: the signalled rank saves with the others
and exits 42, its replacement (preempt-launch restarts it) restores the
step, and the others destroy their process group as they start to rejoin
(on_state "rejoining"), wait in the library for the replacement, make a
new group on the rendezvous of the new incarnation (port --master-port
plus the incarnation: every incarnation has its own) in on_rebuild, and
train on without restoring anything. The run still ends bitwise.

With --async --watch-peers a rank that dies or hangs does not hold the
others in their all-reduce: each step runs off the asyncio loop, the
handler tells the loop at once that a peer's membership ended
(on_peer_lost), the rank destroys its process group, abandons the
collective and asks for a restart; every rank exits 75 within the lease
bound, and the restart resumes after the last periodic checkpoint
(--save-every-steps).
"""
import argparse
import asyncio
import gc
import hashlib
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

import libpreempt
import libpreempt.torch as lpt


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
    # --worker and --workers: as preempt-launch passes them
    ap.add_argument("--rank", "--worker", type=int, default=int(os.environ.get("RANK", 0)))
    ap.add_argument("--world", "--workers", type=int, default=int(os.environ.get("WORLD_SIZE", 1)))
    ap.add_argument("--master-port", type=int, default=int(os.environ.get("MASTER_PORT", 29500)))
    ap.add_argument("--step-ms", type=int, default=0, help="extra time per step (compute stands in)")
    ap.add_argument("--lease-ttl-s", type=int, default=10,
                    help="the membership lease (it grows by itself once a step takes a third of it)")
    ap.add_argument("--async", dest="use_async", action="store_true", help="an asyncio loop")
    ap.add_argument("--no-hook", action="store_true", help="DDP's own bucketed all-reduce (drifts after a restart)")
    ap.add_argument("--watch-peers", action="store_true",
                    help="with --async: a lost peer aborts the process group and restarts the job (exit 75)")
    ap.add_argument("--save-every-steps", type=int, default=0, help="a periodic checkpoint every this many steps")
    ap.add_argument("--grace-ms", type=int, help="train on after the first save for this long past a notice")
    ap.add_argument("--second-exit", action="store_true",
                    help="a second notice makes this rank leave at once (with the committed save, if any)")
    ap.add_argument("--bound-ms", type=int,
                    help="the deadline assumed for a notice that gives none (default: the library's, 30 s)")
    ap.add_argument("--print-steps", action="store_true", help="a step line as each step ends (tests wait for it)")
    ap.add_argument("--trace", help="write each rank's machine trace to TRACE.<rank> (preempt-replay reads it)")
    ap.add_argument("--loader-workers", type=int, default=-1,
                    help="a DataLoader with this many workers, kept by libpreempt.torch (-1: batches from the step)")
    ap.add_argument("--two-phase", action="store_true",
                    help="with --loader-workers: two-phase checkpoints, persisted while training goes on")
    ap.add_argument("--state-mb", type=int, default=0,
                    help="with --loader-workers: this many MiB more state in every checkpoint (a large model's)")
    ap.add_argument("--stay-in-place", action="store_true",
                    help="ranks without a notice of their own keep their processes through a preemption")
    ap.add_argument("--trap", action="store_true",
                    help="with --loader-workers: a DataLoader without its own generator (drifts after a restart)")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)  # the same initial model on every rank
    if not a.stay_in_place:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.master_port, rank=a.rank,
                                world_size=a.world)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

    a.loader = None
    if a.loader_workers >= 0:
        # the helper keeps everything: model, optimizer, scheduler, every
        # RNG, the loader's epoch and batch
        a.sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)
        data = Synth(a.world * 16 * 24)  # 24 batches an epoch on each rank
        a.loader = lpt.ResumableLoader(data, batch_size=16, num_workers=a.loader_workers, seed=1,
                                       sampler=DistributedSampler(data, a.world, a.rank, shuffle=True, seed=1))
        if a.trap:  # what the helper avoids: the workers' seed drawn from the global RNG
            a.loader.loader = DataLoader(data, batch_sampler=a.loader.loader.batch_sampler,
                                         num_workers=a.loader_workers)
        extra = {"ballast": torch.zeros(a.state_mb << 18)} if a.state_mb > 0 else None  # saved, put back
        ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=a.sched, loader=a.loader, extra=extra,
                              two_phase=a.two_phase)
        save, restore = ckpt.save, ckpt.restore
    else:
        save, restore = own_save(net, opt), own_restore(net, opt)

    if a.watch_peers and not a.use_async:
        ap.error("--watch-peers needs --async (the loop must run while a collective waits)")
    peers = Peers(a)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    h = libpreempt.Handler(os.path.join(a.ckpt_dir, "rank-%d" % a.rank), save=save, restore=restore,
                           etcd=a.etcd, job=a.job, worker=a.rank, workers=a.world, async_start=a.use_async,
                           lease_ttl_s=a.lease_ttl_s, save_every_steps=a.save_every_steps, bound_ms=a.bound_ms,
                           grace_ms=a.grace_ms, second=1 if a.second_exit else None,
                           trace_path="%s.%d" % (a.trace, a.rank) if a.trace else None,
                           on_peer_lost=peers.lost if a.watch_peers else None, on_state=peers.state,
                           stay_in_place=a.stay_in_place or None, on_rebuild=peers.rebuild if a.stay_in_place else None,
                           log=lambda lvl, msg: lvl >= 2 and print("rank %d: %s" % (a.rank, msg), file=sys.stderr))
    peers.h = h
    if a.stay_in_place and not a.use_async:  # the incarnation's own rendezvous, once joined
        peers.group(h.status()["incarnation"])
    with h:
        code = (asyncio.run(train_async(h, net, opt, a, peers)) if a.use_async
                else train(h, net, opt, a, h.boundary, peers))
        if not peers.abandoned:
            # Every collective has ended: the DDP model goes now, while the
            # interpreter is whole. Its reducer holds the process group's
            # last reference, and gloo's work objects hold tensors; left to
            # the interpreter's teardown, their destructors take the GIL of
            # an interpreter being torn down, which aborts the process.
            peers.model = None
            gc.collect()
        if dist.is_initialized():
            dist.destroy_process_group()
        if code is None:
            h.done()
            say(event="done", rank=a.rank, step=a.steps, digest=digest(net))
            return 0
        st = h.status()
        say(event="exit", rank=a.rank, code=code, reason=h.exit_reason, saved_step=st["save_step"],
            committed_step=st["committed_step"], at_ms=int(time.time() * 1000))
    if peers.abandoned:
        # A collective was abandoned: leave without the interpreter's
        # teardown, which would destroy what gloo's threads still use.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def own_save(net, opt):
    # torch.save and torch.load work on the checkpoint's file itself: no
    # copy of the state is built in memory on either side.
    def save(step):
        return {"state": lambda f: torch.save({"model": net.state_dict(), "opt": opt.state_dict(),
                                                "rng": torch.get_rng_state(), "step": step}, f)}
    return save


def own_restore(net, opt):
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
    return restore


class Synth(Dataset):
    """Sample i is a function of i alone (so must any augmentation a
    worker process does be: a worker's RNG cannot be saved)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.randn(32, generator=torch.Generator().manual_seed(i))
        return x, x.sum(dim=0, keepdim=True).sin()


def steps_of(a, first):
    """(n, batch) for the steps first+1 .. a.steps: from the loader, epoch
    after epoch, or made from n."""
    n = first
    while n < a.steps:
        if a.loader is None:
            n += 1
            yield n, batch(n, a.rank)
            continue
        for b in a.loader:
            n += 1
            yield n, b
            if n >= a.steps:
                return


class Peers:
    """--watch-peers: what the handler's loop tells the trainer while a step
    waits in its collective."""

    def __init__(self, a):
        self.a, self.h, self.stop = a, None, None  # stop: a future of the running loop
        self.abandoned = False  # a step was left in its collective
        self.model = None  # the DDP model (train_async), kept while a collective may wait
        self.rebuilt = False  # --stay-in-place: a new process group; the DDP model is made again

    def group(self, incarnation):  # --stay-in-place: every incarnation has its own rendezvous
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % (self.a.master_port + incarnation),
                                rank=self.a.rank, world_size=self.a.world)

    def rebuild(self, incarnation, step):  # on_rebuild: every rank of the new incarnation stands at step
        self.group(incarnation)
        self.rebuilt = True
        say(event="rebuild", rank=self.a.rank, incarnation=incarnation, step=step, pid=os.getpid())

    def lost(self, peer, why):  # on_peer_lost, on the handler's loop
        say(event="peer-lost", rank=self.a.rank, peer=peer, why=why)
        if dist.is_initialized():
            dist.destroy_process_group()  # gloo cannot cancel the all-reduce under way: it is abandoned
            # gloo's threads may still hold what the interpreter's teardown
            # would destroy, whether or not a step is waiting at the exit
            # (a step that failed or ended just before it is not): leave
            # without that teardown. Seen once in CI: a rank whose last step
            # had ended returned normally and hung past 90 s.
            self.abandoned = True
        self.h.request_restart("rank %d: %s" % (peer, why))  # every rank exits with the restart code

    def state(self, frm, to):  # also a peer's request: the job's error record ends this handler
        if to == "rejoining" and dist.is_initialized():
            dist.destroy_process_group()  # before any replacement can reach a rendezvous
        if to == "persisting":
            say(event="persisting")  # a two-phase checkpoint is written while training goes on
        if to == "exit" and self.stop and not self.stop.done():
            self.stop.set_result(None)


def off_loop(loop, fn, *args):
    """fn(*args) in a daemon thread, as a future of the loop: the loop (and
    the handler on it) runs while the step waits in its all-reduce, and a
    step abandoned in a collective that never ends does not hold the exit."""
    fut = loop.create_future()

    def settle(ok, v):
        if not fut.done():
            (fut.set_result if ok else fut.set_exception)(v)

    def run():
        try:
            v, ok = fn(*args), True
        except Exception as e:  # the collective failed: a peer's connection was reset
            v, ok = e, False
        loop.call_soon_threadsafe(settle, ok, v)

    threading.Thread(target=run, daemon=True).start()
    return fut


def ddp(net, a):
    """DDP, with one all-reduce per parameter (the helper's hook) unless
    --no-hook. DDP groups gradients into buckets and all-reduces each as
    one flat tensor; a freshly built DDP (every restart) uses a
    first-iteration bucket order, then rebuilds its buckets from the order
    gradients became ready, and gloo's ring sums each element in an order
    that depends on its place in the flat tensor. So a restored run would
    sum the same gradients in another order and drift in the last bits."""
    if a.no_hook:
        return DDP(net)
    return lpt.exact_ddp(net)


def one_step(model, opt, xy, a):
    if a.step_ms:
        time.sleep(a.step_ms / 1000)
    x, y = xy
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # the all-reduce: blocks until every rank is in this step
    opt.step()
    if a.loader is not None:
        a.sched.step()


def train(h, net, opt, a, boundary, peers):
    first = h.status()["run"]
    say(event="start", rank=a.rank, restored_step=first, mode="sync")
    model = ddp(net, a)
    for n, xy in steps_of(a, first):
        one_step(model, opt, xy, a)
        if a.print_steps:
            say(event="step", rank=a.rank, step=n)
        if boundary():
            return h.exit_code
        if peers.rebuilt:  # in place: DDP on the new process group
            peers.rebuilt = False
            model = ddp(net, a)
    return None


async def train_async(h, net, opt, a, peers):
    await h.started()  # joining and restoring on this loop
    if a.stay_in_place:  # the incarnation's own rendezvous, once joined
        peers.group(h.status()["incarnation"])
    first = h.status()["run"]
    say(event="start", rank=a.rank, restored_step=first, mode="async")
    # peers holds the DDP model past this coroutine: once a collective is
    # abandoned and the process group destroyed, the model's reducer holds
    # the group's last reference, and its destructor would join gloo's
    # thread, which waits on the lost peer for ever (seen in the stress
    # run: a rank whose coroutine returned hung in ~Reducer ->
    # ~ProcessGroupGloo -> std::thread::join). Such a process leaves with
    # os._exit; any other lets the model go in main, before its teardown.
    model = peers.model = ddp(net, a)
    loop = asyncio.get_running_loop()
    peers.stop = loop.create_future()
    detach = h.attach()
    try:
        for n, xy in steps_of(a, first):
            if a.watch_peers:
                step = off_loop(loop, one_step, model, opt, xy, a)
                await asyncio.wait({step, peers.stop}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done() or step.exception():
                    # The handler exited (a peer lost), or gloo failed the
                    # all-reduce first (a dead peer's connection): the
                    # handler says within the lease bound whether a peer is
                    # gone; anything else is this trainer's error.
                    try:
                        await asyncio.wait_for(asyncio.shield(peers.stop), 2 * a.lease_ttl_s + 1)
                    except asyncio.TimeoutError:
                        raise step.exception() from None
                    peers.abandoned = True
                    return h.exit_code
            else:
                one_step(model, opt, xy, a)
            if a.print_steps:
                say(event="step", rank=a.rank, step=n)
            code = await h.astep()
            if code is not None:
                return code
            if peers.rebuilt:  # in place: DDP on the new process group
                peers.rebuilt = False
                model = peers.model = ddp(net, a)
        return None
    finally:
        detach()


if __name__ == "__main__":
    sys.exit(main())
