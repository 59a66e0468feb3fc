# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""libpreempt.torch, the PyTorch helper (run by tests/pytorch-helper.sh with
Debian's python3-torch): a run cut anywhere and resumed from the helper's
checkpoint is bitwise the uninterrupted run, mid-epoch included, with
DataLoader worker processes too; and the trap it avoids is real."""
import os
import random
import shutil

import numpy
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

import libpreempt
import libpreempt.torch as lpt


class Synth(Dataset):
    def __len__(self):
        return 96

    def __getitem__(self, i):
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        return x, x.sum(dim=0, keepdim=True)


def make(workers, sampler=None):
    torch.manual_seed(0), numpy.random.seed(0), random.seed(0)  # a run's start
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5)
    data = Synth()
    if sampler == "distributed":
        loader = lpt.ResumableLoader(data, batch_size=8, num_workers=workers, seed=3,
                                     sampler=DistributedSampler(data, 2, 1, shuffle=True, seed=3))
    else:
        loader = lpt.ResumableLoader(data, batch_size=8, shuffle=True, num_workers=workers, seed=3)
    return net, opt, sched, loader


def train(net, opt, sched, loader, steps, first=0, on_step=None):
    """Steps first+1..steps over the loader's epochs; on_step(n) after each
    says whether to leave. Each step draws from torch's (dropout), numpy's
    and Python's generators."""
    n = first
    while n < steps:
        for x, y in loader:
            n += 1
            noise = float(numpy.random.rand()) + random.random()
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x) + noise * 1e-3, y).backward()
            opt.step()
            sched.step()
            if (on_step and on_step(n)) or n >= steps:
                return n
    return n


def preempt_at(h, cut):
    """A notice once step `cut` is done; the handler's boundary after each step."""
    def on_step(n):
        if n == cut:
            h.notify()
        return h.boundary()
    return on_step


def params(net):
    return b"".join(p.detach().numpy().tobytes() for p in net.parameters())


@pytest.mark.parametrize("workers,sampler,cut", [(0, None, 5), (2, None, 17), (2, "distributed", 29), (0, None, 24)])
def test_resume_is_bitwise(tmp_path, workers, sampler, cut):
    """Cut at a step mid-epoch (12 batches an epoch; 24 is an epoch's end),
    save through a real handler, restore into fresh objects: the rest of
    the run is bitwise the uninterrupted one's."""
    steps = 40
    net, opt, sched, loader = make(workers, sampler)
    train(net, opt, sched, loader, steps)
    want = params(net)

    net, opt, sched, loader = make(workers, sampler)
    ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader)
    with libpreempt.Handler(str(tmp_path / "ckpt"), save=ckpt.save, restore=ckpt.restore) as h:
        saved = train(net, opt, sched, loader, steps, on_step=preempt_at(h, cut))
        assert h.exit_code == 42 and cut <= saved < steps
    # the restart: new objects, the global generators disturbed
    torch.manual_seed(12345), numpy.random.seed(1), random.seed(2)
    net, opt, sched, loader = make(workers, sampler)
    ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader)
    with libpreempt.Handler(str(tmp_path / "ckpt"), save=ckpt.save, restore=ckpt.restore) as h:
        first = h.status()["run"]
        assert first == saved
        assert loader.state_dict()["batch"] == (saved - 1) % 12 + 1  # 12: the end of an epoch
        train(net, opt, sched, loader, steps, first=first)
    assert params(net) == want


@pytest.mark.parametrize("backend", ["io_uring", "aio", "chunked"])
def test_two_phase_checkpoints_are_the_steps(tmp_path, monkeypatch, backend):
    """Checkpoint(two_phase=True): a periodic checkpoint persists while
    training goes on (the weights change meanwhile), then a preemption's;
    a restart from either one is bitwise the uninterrupted run."""
    monkeypatch.setenv("PREEMPT_PERSIST", backend)
    steps = 80
    net, opt, sched, loader = make(2)
    train(net, opt, sched, loader, steps)
    want = params(net)

    net, opt, sched, loader = make(2)
    ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader, two_phase=True)
    states, notified = [], []
    with libpreempt.Handler(str(tmp_path / "ckpt"), save=ckpt.save, restore=ckpt.restore, max_to_keep=5,
                            on_state=lambda frm, to: states.append((to, h.status()["run"]))) as h:
        def on_step(n):
            if n == 9:
                assert h.request_checkpoint()
            # the notice once the periodic checkpoint is committed (the
            # machine idle again), at step 25 or later: its persist may take
            # more steps than that under load (seen in CI: 16 steps of
            # milliseconds did not cover an fsync on a busy disk)
            if n >= 25 and not notified and any(to == "idle" for to, _ in states):
                notified.append(n)
                h.notify()
            return h.boundary()
        saved = train(net, opt, sched, loader, steps, on_step=on_step)
        assert h.exit_code == 42
    persisting = [run for to, run in states if to == "persisting"]
    left = [run for to, run in states if to == "idle"]
    assert persisting and left and left[0] > persisting[0], states  # trained on while it persisted
    ckpts = sorted(n for n in os.listdir(tmp_path / "ckpt") if n.startswith("ckpt-"))
    assert len(ckpts) == 2 and int(ckpts[-1][5:]) == saved
    for keep in (ckpts[-1], ckpts[0]):  # the preemption's, then the periodic one alone
        for n in ckpts:
            if n > keep:
                shutil.rmtree(tmp_path / "ckpt" / n)
        torch.manual_seed(12345), numpy.random.seed(1), random.seed(2)
        net, opt, sched, loader = make(2)
        ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader, two_phase=True)
        with libpreempt.Handler(str(tmp_path / "ckpt"), save=ckpt.save, restore=ckpt.restore) as h:
            first = h.status()["run"]
            assert first == int(keep[5:])
            train(net, opt, sched, loader, steps, first=first)
            h.done()
        assert params(net) == want, keep


def test_the_trap_is_real():
    """A DataLoader without its own generator takes a number from torch's
    global generator for every iterator it makes: a resumed epoch's second
    iterator moves dropout's generator. ResumableLoader's does not."""
    data = Synth()
    torch.manual_seed(7)
    before = torch.get_rng_state()
    for _ in DataLoader(data, batch_size=8):
        break
    assert not torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(7)
    loader = lpt.ResumableLoader(data, batch_size=8, shuffle=True)
    for _ in loader:
        break
    assert torch.equal(torch.get_rng_state(), before)


def test_every_generator_is_kept():
    torch.manual_seed(1), numpy.random.seed(1), random.seed(1)
    st = lpt.rng_state()
    a = (torch.rand(3), numpy.random.rand(3).tolist(), [random.random() for _ in range(3)])
    lpt.set_rng_state(st)
    b = (torch.rand(3), numpy.random.rand(3).tolist(), [random.random() for _ in range(3)])
    assert torch.equal(a[0], b[0]) and a[1:] == b[1:]


def test_snapshot_is_the_steps(tmp_path):
    """The snapshot is a copy: training after it does not change it."""
    net, opt, sched, loader = make(0)
    ckpt = lpt.Checkpoint(model=net, optimizer=opt, scheduler=sched, loader=loader)
    train(net, opt, sched, loader, 3)
    snap = ckpt.snapshot(3)
    w = snap["model"]["0.weight"].clone()
    train(net, opt, sched, loader, 6, first=3)
    assert torch.equal(snap["model"]["0.weight"], w)
    assert not torch.equal(net.state_dict()["0.weight"], w)
    assert snap["loader"]["batch"] == 3


def test_another_models_checkpoint_is_unusable(tmp_path):
    """A checkpoint of another shape is refused as unusable (set aside, the
    next older one tried), not a crash."""
    net, opt, sched, loader = make(0)
    ckpt = lpt.Checkpoint(model=net, optimizer=opt)
    d = str(tmp_path / "ckpt")
    with libpreempt.Handler(d, save=ckpt.save, restore=ckpt.restore) as h:
        h.notify()
        while not h.boundary():
            pass
    other = torch.nn.Linear(3, 3)
    ok = lpt.Checkpoint(model=other)
    with pytest.raises(libpreempt.PreemptError):
        libpreempt.Handler(d, save=ok.save, restore=ok.restore)
    assert os.listdir(os.path.join(d, "aside"))


@pytest.mark.parametrize("bad", [{"batch": 99}, {"batch": -1}, {"epoch": "1"}, {"generator": b"x"}])
def test_a_damaged_loader_position_is_unusable(tmp_path, bad):
    """A loader position this loader cannot be at (a batch past its epoch,
    another dataset's, a damaged record) makes the checkpoint unusable:
    set aside, never a crash or a silent resume elsewhere."""
    net, opt, sched, loader = make(0)
    ckpt = lpt.Checkpoint(model=net, loader=loader)
    d = str(tmp_path / "ckpt")
    real_state = loader.state_dict

    def damaged():
        st = real_state()
        st.update(bad)
        return st
    loader.state_dict = damaged
    with libpreempt.Handler(d, save=ckpt.save, restore=ckpt.restore) as h:
        h.notify()
        while not h.boundary():
            pass
    net, opt, sched, loader = make(0)
    ckpt = lpt.Checkpoint(model=net, loader=loader)
    with pytest.raises(libpreempt.PreemptError):
        libpreempt.Handler(d, save=ckpt.save, restore=ckpt.restore)
    assert os.listdir(os.path.join(d, "aside"))
    assert loader.state_dict()["batch"] == 0  # nothing changed
