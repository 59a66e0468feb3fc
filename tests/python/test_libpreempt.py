# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""The Python package's API: run by tests/python.sh under preempt-exec (the
notice signals blocked in every thread), with Debian's pytest."""
import asyncio
import ctypes
import re
import errno
import os
import select
import signal

import pytest

import libpreempt


def blobs(value):
    return lambda step: {"model": value(step)}


def test_layouts_are_checked(tmp_path):
    class Newer(ctypes.Structure):  # a binding of a newer version: a field the library lacks
        _fields_ = libpreempt._Status._fields_ + [("next_field", ctypes.c_uint64)]

    class Moved(ctypes.Structure):  # a field of another type: every later one moves
        _fields_ = [("state", ctypes.c_int), ("run", ctypes.c_uint32)] + libpreempt._Status._fields_[2:]

    class Older(ctypes.Structure):  # 1.0's binding: the library appended stall_ms in 1.1
        _fields_ = [f for f in libpreempt._Status._fields_ if f[0] != "stall_ms"]

    for struct in (Newer, Moved):
        with pytest.raises(ImportError, match="different versions"):
            libpreempt._check_layout(struct, "preempt_status")
    libpreempt._check_layout(libpreempt._Config, "preempt_config")  # this one matches
    libpreempt._check_layout(Older, "preempt_status")  # an older binding runs on a newer library
    st = Older()  # and the library takes its size
    h = libpreempt.Handler(str(tmp_path / "c"), save=lambda s: {}, restore=lambda s, r: None)
    try:
        assert libpreempt._lib.preempt_handler_get_status_size(h._h, ctypes.cast(ctypes.byref(st), ctypes.POINTER(
            libpreempt._Status)), ctypes.sizeof(Older)) == 0
        assert st.state == 0 and st.exit_code == 42
    finally:
        h.close()
    assert libpreempt.version().count(".") == 2


def test_signal_save_exit_and_restore(tmp_path):
    seen = []
    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b"at %d" % s), restore=lambda s, r: None) as h:
        assert h.status()["state"] == "idle"
        for step in range(1, 100):
            if step == 5:
                os.kill(os.getpid(), signal.SIGTERM)
            if h.boundary():
                break
        assert (h.exit_reason, h.exit_code) == ("saved", 42)
        assert h.status()["saves"] == 1
        saved = h.status()["run"]

    def restore(step, read):
        seen.append((step, read("model")))

    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b""), restore=restore) as h:
        assert h.status()["restored_step"] == saved
    assert seen == [(saved, b"at %d" % saved)]


def test_periodic_checkpoints_train_on(tmp_path):
    saved = []
    with libpreempt.Handler(str(tmp_path / "c"), save=lambda s: saved.append(s) or {"model": b"%d" % s},
                            restore=lambda s, r: None, save_every_steps=10, max_to_keep=libpreempt.UNLIMITED) as h:
        for step in range(1, 36):
            assert not h.boundary()  # training goes on
            if step == 13:
                assert h.request_checkpoint()
                assert not h.request_checkpoint()  # one under way
        h.done()
        assert h.status()["committed_step"] == saved[-1]
    # one round per trigger (steps 10, 13, 20, 30), each within its lead
    assert len(saved) == 4 and all(0 <= s - t <= 2 for s, t in zip(saved, (10, 13, 20, 30))), saved
    assert sorted(n for n in os.listdir(tmp_path / "c") if n.startswith("ckpt-")) == ["ckpt-%020d" % s for s in saved]


@pytest.mark.parametrize("backend", ["io_uring", "aio", "chunked"])
def test_two_phase_snapshots_persist_while_training_goes_on(tmp_path, monkeypatch, backend):
    monkeypatch.setenv("PREEMPT_PERSIST", backend)
    size = 24 << 20
    saved, states = [], []

    def save(step):
        saved.append(step)
        # bytes and a writable buffer, both handed over without a copy
        return {"model": libpreempt.Snapshot(bytes([step % 251]) * size),
                "opt": libpreempt.Snapshot(bytearray(b"o%d" % step))}

    def on_state(frm, to):
        states.append(to)

    with libpreempt.Handler(str(tmp_path / "c"), save=save, restore=lambda s, r: None, on_state=on_state) as h:
        assert h.request_checkpoint()
        steps = 0
        while not saved or h.status()["state"] != "idle":
            assert not h.boundary()  # training goes on, also while the checkpoint persists
            steps += 1
            assert steps < 100000
        assert "persisting" in states
        assert h._snaps == {}  # every snapshot was released once it was durable
        st = h.status()  # the training it stopped: its snapshot phase, less than the save
        assert st["saves"] == 1 and st["stall_ms"] <= st["save_ms"], st
        h.done()
    step = saved[0]
    got = {}

    def restore(s, read):
        got.update(step=s, model=read("model"), opt=read("opt"))

    with libpreempt.Handler(str(tmp_path / "c"), save=lambda s: {}, restore=restore):
        pass
    assert got == {"step": step, "model": bytes([step % 251]) * size, "opt": b"o%d" % step}


@pytest.mark.parametrize("backend", ["io_uring", "aio", "chunked"])
def test_two_phase_on_asyncio(tmp_path, monkeypatch, backend):
    """The persist runs on the asyncio loop through the handler's
    descriptor (attach) while coroutines train; a SIGTERM after it ends
    with the preemption's own two-phase save, awaited."""
    monkeypatch.setenv("PREEMPT_PERSIST", backend)
    states, saved = [], []

    def save(step):
        saved.append(step)
        return {"model": libpreempt.Snapshot(bytes([step % 251]) * (16 << 20))}

    async def train(h):
        detach = h.attach()
        try:
            for step in range(1, 100000):
                await asyncio.sleep(0.001)  # the step
                if step == 3:
                    assert h.request_checkpoint()
                if step > 3 and states[-1] == "idle" and "persisting" in states and len(saved) == 1:
                    asyncio.get_running_loop().call_later(0.01, os.kill, os.getpid(), signal.SIGTERM)
                    saved.append(None)  # sent once
                code = await h.astep()
                if code is not None:
                    return step, code
        finally:
            detach()

    with libpreempt.Handler(str(tmp_path / "c"), save=save, restore=lambda s, r: None, max_to_keep=5,
                            on_state=lambda f, t: states.append(t)) as h:
        step, code = asyncio.run(train(h))
        assert h._snaps == {}
    assert code == 42
    assert states.count("persisting") == 1 and "final-save" in states  # the periodic one persisted, the last awaited
    ckpts = sorted(n for n in os.listdir(tmp_path / "c") if n.startswith("ckpt-"))
    assert [int(n[5:]) for n in ckpts] == [s for s in saved if s is not None]


def test_a_read_only_buffer_is_refused_as_a_snapshot(tmp_path):
    with libpreempt.Handler(str(tmp_path / "c"), save=lambda s: {"m": libpreempt.Snapshot(memoryview(b"x" * 8)[2:])},
                            restore=lambda s, r: None) as h:
        assert h.request_checkpoint()
        with pytest.raises(TypeError, match="read-only"):
            for _ in range(50):
                h.boundary()


def test_async_start_runs_on_the_loop(tmp_path):
    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b"at %d" % s), restore=lambda s, r: None) as h:
        h.notify()
        while not h.boundary():
            pass
        saved = h.status()["run"]
    seen = []

    def broken(step, read):
        raise ValueError("no such layer")

    async def main():
        h = libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b""),
                               restore=lambda s, read: seen.append((s, read("model"))), async_start=True)
        assert h.status()["start_status"] == -errno.EAGAIN and seen == []  # not yet: on the loop
        await h.started()
        assert seen == [(saved, b"at %d" % saved)] and h.status()["start_status"] == 0
        h.close()
        h = libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b""), restore=broken, async_start=True)
        with pytest.raises(ValueError, match="no such layer"):  # the restore's exception, from started()
            await h.started()
        h.close()

    asyncio.run(main())


def test_astep_sees_a_notice_when_steps_never_yield(tmp_path):
    # a step that blocks (a collective) and never awaits: the boundary
    # itself must look at the descriptor, or the notice waits forever
    async def main():
        with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b"x"), restore=lambda s, r: None) as h:
            detach = h.attach()
            try:
                for step in range(1, 200):
                    if step == 5:
                        os.kill(os.getpid(), signal.SIGTERM)
                    code = await h.astep()
                    if code is not None:
                        return code, step
            finally:
                detach()
        return None, None

    code, step = asyncio.run(main())
    assert code == 42 and step < 20, (code, step)


def test_file_objects_are_saved(tmp_path):
    import io
    with libpreempt.Handler(str(tmp_path / "c"), save=lambda s: {"model": io.BytesIO(b"file")}, restore=lambda s, r: None) as h:
        h.notify()
        while not h.boundary():
            pass
    got = []
    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b""),
                            restore=lambda s, read: got.append(read("model"))):
        pass
    assert got == [b"file"]


def test_blobs_streamed_through_files(tmp_path):
    """A function that writes into the file it is given, and a file object,
    go to the checkpoint through a descriptor; read.open() gives a verified,
    seekable file back (what torch.save/torch.load need)."""
    big = bytes(range(256)) * 5000
    src = tmp_path / "src"
    src.write_bytes(b"from a file" * 1000)

    def write(f):
        for i in range(0, len(big), 65536):
            f.write(big[i:i + 65536])

    with open(src, "rb") as fsrc:
        with libpreempt.Handler(str(tmp_path / "c"), save=lambda s: {"big": write, "copied": fsrc, "small": b"s"},
                                restore=lambda s, r: None) as h:
            h.notify()
            while not h.boundary():
                pass
    got = {}

    def restore(step, read):
        with pytest.raises(libpreempt.CheckpointUnusable, match="missing"):
            read.open("missing")
        with read.open("big") as f:
            f.seek(len(big) - 3)
            got["tail"] = f.read()
            f.seek(0)
            got["big"] = f.read()
        got["copied"] = read("copied")
        got["small"] = read.open("small").read()

    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b""), restore=restore):
        pass
    assert got["big"] == big and got["tail"] == big[-3:]
    assert got["copied"] == src.read_bytes() and got["small"] == b"s"


MEASURE = r"""
import ctypes, sys, libpreempt
mode, ckpt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def kib(field):                                   # /proc/self/status: VmRSS now, VmHWM its peak
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
state = bytearray(n)                              # the trainer's state, held anyway,
ctypes.memset((ctypes.c_char * n).from_buffer(state), ord("w"), n)  # written in place
with open("/proc/self/clear_refs", "w") as f:     # the peak counts from here (not from start-up's,
    f.write("5")                                  # which the sanitizers' runtime makes large)
base = kib("VmRSS")
if mode == "files":
    save = lambda s: {"state": lambda f: f.write(state)}
    def restore(s, read):
        with read.open("state") as f:
            f.readinto(state)
else:
    save = lambda s: {"state": bytes(state)}
    def restore(s, read):
        state[:] = read("state")
with libpreempt.Handler(ckpt, save=save, restore=restore) as h:
    h.notify()
    while not h.boundary():
        pass
with libpreempt.Handler(ckpt, save=save, restore=restore) as h:
    assert h.status()["restored_step"] > 0
print((kib("VmHWM") - base) // 1024)
"""


def test_streamed_blobs_hold_no_copy_in_memory(tmp_path):
    """Peak memory above the state itself, for a 64 MiB blob saved and
    restored: through files it stays small; through bytes it holds copies
    (which shows that the measurement can see them)."""
    import subprocess
    import sys
    n = 64 << 20
    peak = {}
    for mode in ("files", "bytes"):
        out = subprocess.run([sys.executable, "-c", MEASURE, mode, str(tmp_path / mode), str(n)],
                             check=True, capture_output=True, text=True).stdout
        peak[mode] = int(out.split()[-1])  # MiB
    assert peak["files"] < 16 and peak["bytes"] >= 48, peak


def test_a_save_exception_reaches_the_caller_not_c(tmp_path):
    def save(step):
        raise RuntimeError("disk on fire")

    with libpreempt.Handler(str(tmp_path / "c"), save=save, restore=lambda s, r: None) as h:
        h.notify()
        with pytest.raises(RuntimeError, match="disk on fire"):
            for _ in range(10):
                h.boundary()
    assert not [p for p in os.listdir(tmp_path / "c") if p.startswith("ckpt-")]


def test_unusable_checkpoints_fall_back_and_errors_do_not(tmp_path):
    d = str(tmp_path / "c")
    for n in (1, 2):  # two checkpoints, at two steps
        with libpreempt.Handler(d, save=blobs(lambda s: b"%d" % s), restore=lambda s, read: None) as h:
            h.notify()
            while not h.boundary():
                pass

    def boom(step, read):
        raise KeyError("a bug in restore")

    with pytest.raises(KeyError):  # not the checkpoint's fault: nothing set aside
        libpreempt.Handler(d, save=blobs(lambda s: b""), restore=boom)
    assert not os.path.exists(os.path.join(d, "aside"))

    tried = []

    def picky(step, read):
        tried.append(step)
        if len(tried) == 1:
            raise libpreempt.CheckpointUnusable("another model")

    with libpreempt.Handler(d, save=blobs(lambda s: b""), restore=picky) as h:
        st = h.status()
        assert st["restore_fallbacks"] == 1 and st["refused_step"] == tried[0]
        assert st["restored_step"] == tried[1] < tried[0]
    assert os.listdir(os.path.join(d, "aside"))

    def never(step, read):
        raise libpreempt.CheckpointUnusable("no")

    with pytest.raises(libpreempt.PreemptError) as e:
        libpreempt.Handler(d, save=blobs(lambda s: b""), restore=never)
    assert e.value.errno == errno.ENOTRECOVERABLE


def test_errors_carry_errno_and_message(tmp_path):
    with pytest.raises(libpreempt.PreemptError) as e:
        libpreempt.Handler(str(tmp_path / "no" / "such" / "dir"), save=blobs(lambda s: b""),
                           restore=lambda s, r: None)
    assert e.value.errno == errno.ENOENT
    assert "parent directory does not exist" in str(e.value)
    with pytest.raises(TypeError):
        libpreempt.Handler(None, save=blobs(lambda s: b""), bogus=1)


def test_descriptor_from_select(tmp_path):
    """Any loop: select() on the descriptor, then process()."""
    with libpreempt.Handler(None, save=lambda s: {}, poll_interval_ms=10) as h:
        fd = h.fileno()
        assert h.timeout() is None  # nothing armed: only the descriptor can wake it
        os.kill(os.getpid(), signal.SIGTERM)
        r, _, _ = select.select([fd], [], [], 5)
        assert r == [fd]
        h.process()
        assert h.status()["state"] == "step-agreed"
        assert h.status()["notice_source"] == "signal"


def test_asyncio_attach_and_astep(tmp_path):
    states = []

    async def train(h):
        detach = h.attach()
        try:
            for step in range(1, 1000):
                await asyncio.sleep(0.001)  # the step
                if step == 20:
                    asyncio.get_running_loop().call_later(0.01, os.kill, os.getpid(), signal.SIGTERM)
                code = await h.astep()
                if code is not None:
                    return step, code
        finally:
            detach()

    with libpreempt.Handler(str(tmp_path / "c"), save=blobs(lambda s: b"x"), restore=lambda s, r: None,
                            on_state=lambda f, t: states.append(t)) as h:
        step, code = asyncio.run(train(h))
    assert code == 42 and step > 20
    assert states[0] == "own-signal" and states[-1] == "exit"


def test_status_documents_every_key(tmp_path):
    """Handler.status()'s docstring names every key it returns."""
    with libpreempt.Handler(str(tmp_path / "ckpt"), save=lambda step: {"x": b"1"}, restore=lambda step, read: None) as h:
        keys = h.status().keys()
    doc = libpreempt.Handler.status.__doc__
    assert set(keys) == {f[0] for f in libpreempt._Status._fields_}
    assert [k for k in keys if not re.search(r"\b%s\b" % k, doc)] == []
