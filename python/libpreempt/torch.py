# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""Exact resume for PyTorch trainers: what every trainer must keep, in a
few lines.

    import torch, libpreempt
    from libpreempt.torch import Checkpoint, ResumableLoader, exact_ddp

    loader = ResumableLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset, seed=1),
                             num_workers=2, seed=1)
    ckpt = Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader, two_phase=True)
    with libpreempt.Handler("ckpt", save=ckpt.save, restore=ckpt.restore) as h:
        model = exact_ddp(net)                    # DDP with a restart-invariant gradient order
        while loader.epoch < 3:                   # the epoch is in the checkpoint too
            for x, y in loader:                   # after a restore: on at the next batch
                opt.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                if h.boundary():                  # preempted and saved: leave with the restart code
                    raise SystemExit(h.exit_code)
            sched.step()
        h.done()

A restored run then continues bitwise as the uninterrupted one, given the
same hardware and deterministic kernels (torch.use_deterministic_algorithms).
What it keeps, and the trap each avoids:

- The model, optimizer and scheduler state, copied to host memory at the
  step (Checkpoint.snapshot()): the copy is the step's, whatever the
  trainer does after.
- Every random number generator the step uses: torch's CPU generator and
  each CUDA device's, numpy's global one, Python's random. Dropout draws
  from torch's; forgetting it changes every mask after the restart.
- The data position, mid-epoch included: the epoch, the batches handed to
  the trainer (counted where the trainer receives them, not where the
  sampler was read: a DataLoader with workers reads its sampler ahead),
  and the state of the loader's own generator at the epoch's start.
  Trap: a DataLoader without its own `generator` draws its workers' base
  seed (and a RandomSampler without one its permutation's seed) from
  torch's *global* generator each time an iterator is made. A run resumed
  mid-epoch makes one iterator more than the uninterrupted run, so it
  takes one more number from the generator dropout uses and drifts,
  although every state was restored. ResumableLoader gives the loader and
  its sampler a generator of their own, and never touches the global one.
  Random augmentation inside worker processes must derive from the sample
  (seed, epoch, index): a worker's generator state cannot be saved, and
  after a resume batches reach workers in another round-robin order.
- DistributedDataParallel's gradient order (exact_ddp()): a freshly built
  DDP all-reduces first-iteration buckets, then rebuilds them in the order
  gradients became ready; gloo's ring sums each element in an order that
  depends on its place in the flat bucket, so a restored run would sum the
  same gradients in another order and drift in the last bits. One
  all-reduce per parameter makes the order the parameter's alone.

How the snapshot reaches the disk is the handler's save: by default
(Checkpoint(two_phase=False)) torch.save writes it into the checkpoint's
file inside the step, before training goes on; with two_phase=True it is
serialized into host memory at the step and the library writes that copy
on its loop while training goes on (docs/guide/two-phase.md; the copy is
held until the commit, one set in flight). Either way the checkpoint is
the step's. This module needs torch; numpy is used when it is installed.
"""
import copy
import io
import random

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, Sampler, SequentialSampler

try:
    import numpy
except ImportError:  # pragma: no cover - numpy is optional
    numpy = None

import libpreempt

__all__ = ["Checkpoint", "ResumableLoader", "exact_ddp", "per_parameter_allreduce", "rng_state", "set_rng_state"]


# ---- random number generators ---------------------------------------------------------

def rng_state():
    """Every generator a training step may draw from, as a picklable dict."""
    st = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    if numpy is not None:
        st["numpy"] = numpy.random.get_state()
    return st


def set_rng_state(st):
    """Puts back what rng_state() returned."""
    torch.set_rng_state(st["torch"])
    random.setstate(st["random"])
    if "cuda" in st:
        if not torch.cuda.is_available() or torch.cuda.device_count() != len(st["cuda"]):
            raise libpreempt.CheckpointUnusable("saved with %d CUDA devices" % len(st["cuda"]))
        torch.cuda.set_rng_state_all(st["cuda"])
    if "numpy" in st and numpy is not None:
        numpy.random.set_state(st["numpy"])


# ---- the data position ----------------------------------------------------------------

class _SkipBatches(Sampler):
    """A batch sampler whose next iteration starts after `skip` batches."""

    def __init__(self, batches):
        self.batches, self.skip = batches, 0

    def __iter__(self):
        skip, self.skip = self.skip, 0
        for i, b in enumerate(self.batches):
            if i >= skip:
                yield b

    def __len__(self):
        return len(self.batches)


class ResumableLoader:
    """A DataLoader whose position (epoch and batch) is part of the
    checkpoint. Iterate it once per epoch, as a DataLoader; after a restore
    the current epoch goes on at the next batch the trainer did not get.

    sampler: a DistributedSampler (its epoch is set here, each epoch),
    another sampler whose order is a function of its own state, or None
    (shuffle=True: a RandomSampler on this loader's generator; else in
    order). seed: this loader's own generator (workers' seeds, a
    RandomSampler's order). Other keywords go to DataLoader (num_workers,
    collate_fn, ...), except generator, batch_sampler and shuffle-with-
    sampler, which this class owns."""

    def __init__(self, dataset, batch_size=1, *, sampler=None, shuffle=False, drop_last=False, seed=0, **kw):
        for k in ("generator", "batch_sampler"):
            if k in kw:
                raise TypeError("ResumableLoader owns %s" % k)
        self.generator = torch.Generator()
        self.generator.manual_seed(seed)
        if sampler is None:
            sampler = RandomSampler(dataset, generator=self.generator) if shuffle else SequentialSampler(dataset)
        elif shuffle:
            raise ValueError("shuffle with a sampler: the sampler orders the data")
        self.sampler = sampler
        self._batches = _SkipBatches(BatchSampler(sampler, batch_size, drop_last))
        self.loader = DataLoader(dataset, batch_sampler=self._batches, generator=self.generator, **kw)
        self.epoch = 0
        self.batch = 0          # batches of this epoch handed to the trainer
        self._epoch_gen = None  # the generator's state when this epoch's iterator was made

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(self.epoch)
        if self._epoch_gen is None:
            self._epoch_gen = self.generator.get_state()
        else:  # a restored epoch: its iterator draws what the first one drew
            self.generator.set_state(self._epoch_gen)
        self._batches.skip = self.batch
        for b in self.loader:
            self.batch += 1
            yield b
        self.epoch, self.batch, self._epoch_gen = self.epoch + 1, 0, None

    def state_dict(self):
        return {"epoch": self.epoch, "batch": self.batch,
                "generator": self._epoch_gen if self._epoch_gen is not None else self.generator.get_state()}

    def load_state_dict(self, st):
        """Puts back what state_dict() returned; a position this loader
        cannot be at (another dataset's, a damaged record) is ValueError,
        nothing changed."""
        epoch, batch, gen = st["epoch"], st["batch"], st["generator"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (epoch, batch)) or epoch < 0 \
                or not 0 <= batch <= len(self.loader) or not isinstance(gen, torch.ByteTensor):
            raise ValueError("loader position epoch %r, batch %r of %d: not this loader's"
                             % (epoch, batch, len(self.loader)))
        self.generator.set_state(gen)  # refuses a state of another size
        self.epoch, self.batch = epoch, batch
        self._epoch_gen = gen if batch else None


# ---- DistributedDataParallel ----------------------------------------------------------

def per_parameter_allreduce(state, bucket):
    """DDP's gradient hook: one all-reduce per parameter, so that the order
    in which each element is summed does not depend on DDP's buckets (see
    the module's doc)."""
    world = dist.get_world_size()
    grads = [g.clone() for g in bucket.gradients()]
    works = [dist.all_reduce(g, async_op=True) for g in grads]

    def done(_):
        return torch.cat([g.flatten() for g in grads]).div_(world)  # the bucket buffer's layout

    return torch.futures.collect_all([w.get_future() for w in works]).then(done)


def exact_ddp(module, **kw):
    """DistributedDataParallel(module, **kw) with per_parameter_allreduce."""
    model = torch.nn.parallel.DistributedDataParallel(module, **kw)
    model.register_comm_hook(None, per_parameter_allreduce)
    return model


# ---- the checkpoint -------------------------------------------------------------------

def _host_copy(obj):
    """obj with every tensor copied to host memory (a deep copy)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _host_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_host_copy(v) for v in obj)
    return copy.deepcopy(obj)


class Checkpoint:
    """What a trainer keeps for an exact resume: give its save and restore
    to libpreempt.Handler. Any of model, optimizer, scheduler and loader may
    be None; extra (a dict of picklable values, e.g. a metric's running
    sum) is saved and put back in place.

    two_phase=True makes every save two-phase (docs/guide/two-phase.md):
    the snapshot is serialized into host memory at the step, handed over
    as a libpreempt.Snapshot, and written by the library on its loop while
    training goes on. It costs the serialized copy in memory until the
    commit (one set in flight); the default writes it inside the step."""

    def __init__(self, model=None, optimizer=None, scheduler=None, loader=None, extra=None, blob="state",
                 two_phase=False):
        self.model, self.optimizer, self.scheduler, self.loader = model, optimizer, scheduler, loader
        self.extra = extra if extra is not None else {}
        self.blob = blob
        self.two_phase = two_phase

    def snapshot(self, step):
        """The state at `step`, in host memory: later steps do not change it."""
        st = {"step": step, "rng": _host_copy(rng_state()), "extra": copy.deepcopy(self.extra)}
        if self.model is not None:
            st["model"] = _host_copy(self.model.state_dict())
        if self.optimizer is not None:
            st["optimizer"] = _host_copy(self.optimizer.state_dict())
        if self.scheduler is not None:
            st["scheduler"] = copy.deepcopy(self.scheduler.state_dict())
        if self.loader is not None:
            st["loader"] = _host_copy(self.loader.state_dict())
        return st

    def save(self, step):
        """Handler(save=...): the snapshot at `step`. By default torch.save
        writes it straight into the checkpoint's file, inside the step; with
        two_phase=True it is serialized into host memory now and handed to
        the library as a libpreempt.Snapshot, which writes it while training
        goes on."""
        snap = self.snapshot(step)
        if self.two_phase:
            buf = io.BytesIO()
            torch.save(snap, buf)
            return {self.blob: libpreempt.Snapshot(buf.getbuffer())}
        return {self.blob: lambda f: torch.save(snap, f)}

    def restore(self, step, read):
        """Handler(restore=...): puts everything back. A checkpoint that is
        not this trainer's raises libpreempt.CheckpointUnusable (the next
        older one is tried)."""
        try:
            with read.open(self.blob) as f:
                st = torch.load(f)
        except libpreempt.CheckpointUnusable:
            raise
        except Exception as e:
            raise libpreempt.CheckpointUnusable("%s: %s" % (self.blob, e))
        if st.get("step") != step:
            raise libpreempt.CheckpointUnusable("holds step %s, not %d" % (st.get("step"), step))
        try:
            if self.model is not None:
                self.model.load_state_dict(st["model"])
            if self.optimizer is not None:
                self.optimizer.load_state_dict(st["optimizer"])
            if self.scheduler is not None:
                self.scheduler.load_state_dict(st["scheduler"])
            if self.loader is not None:
                self.loader.load_state_dict(st["loader"])
        except (KeyError, RuntimeError, TypeError, ValueError) as e:  # another model's shape, a missing part
            raise libpreempt.CheckpointUnusable(str(e))
        self.extra.clear()
        self.extra.update(st["extra"])
        set_rng_state(st["rng"])
