# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""libpreempt for Python: survive preemption without losing a step.

A thin, checked binding of the C library (ctypes). The structures declared
here are compared field by field with the library's own layout at import
(preempt_abi_layout), so a binding and a library of different versions
refuse to work together instead of misreading each other.

    import libpreempt

    libpreempt.block_signals()          # or start the program under preempt-exec

    def save(step):                     # what to keep: name -> bytes, a binary
        return {"model": model_bytes(),  # file object, or a function that
                "big": write_big}       # writes into the file it is given

    def restore(step, read):            # read(name) -> bytes;
        load_model(read("model"))       # read.open(name) -> a binary file
        with read.open("big") as f:
            load_big(f)

    with libpreempt.Handler("ckpt", save=save, restore=restore) as h:
        for step in range(h.status()["run"] + 1, 1001):
            train_one_step()
            if h.boundary():            # saved and should stop: h.exit_code
                raise SystemExit(h.exit_code)
        h.done()

A value may also be libpreempt.Snapshot(buffer): a two-phase save, whose
bytes the library writes on its loop while training goes on and commits
once durable (docs/guide/two-phase.md; libpreempt.torch.Checkpoint(...,
two_phase=True) does it for PyTorch).

The library never exits the process: a preemption ends in a return value
(Handler.boundary(), Handler.astep()) and the exit code, which you pass to
SystemExit so that finally blocks and atexit handlers run.
"""
import asyncio
import ctypes
import errno
import os
import shutil
import signal

__all__ = ["Handler", "Snapshot", "PreemptError", "CheckpointUnusable", "block_signals", "version",
           "CONTINUE", "SAVE", "SAVE_EXIT", "WAIT", "EXIT"]

# preempt_action (frozen values)
CONTINUE, SAVE, SAVE_EXIT, WAIT, EXIT = 0, 1, 2, 3, 4
# PREEMPT_AUTO (grace_ms, exit_code, kill_delay_ms: the library decides; the
# default) and PREEMPT_UNLIMITED (max_to_keep: keep every checkpoint)
AUTO = UNLIMITED = -1
_PLATFORMS = {"auto": 0, "none": 1, "gce": 2, "gce-gpu": 3, "aws": 4, "azure": 5}
_STATES = ("idle", "own-signal", "following", "step-agreed", "saving", "countdown", "final-save", "exit",
           "persisting", "finishing", "stopping", "rejoining")
_EXITS = ("done", "saved", "not-saved", "error")


class Snapshot:
    """A blob for a two-phase save: put it in save()'s dictionary instead of
    bytes. The library keeps a reference to `data` (bytes, or a writable
    buffer: bytearray, memoryview, a numpy array, io.BytesIO.getbuffer())
    and writes it on the handler's loop while training goes on; the
    checkpoint commits once every blob is durable (docs/guide/two-phase.md). Do not change the buffer until the library lets it go (after
    the commit, or when the save is dropped): hand over a copy taken at the
    step, as libpreempt.torch.Checkpoint(two_phase=True) does."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


class _Reader:
    """The restore function's second argument: read(name) -> bytes, or
    read.open(name) -> a seekable binary file of the blob, verified, for
    the caller to close (torch.load() reads it without a copy in memory).
    Both raise CheckpointUnusable for a missing or damaged blob."""

    def __init__(self, h):
        self._h = h

    def _unusable(self, name, r):
        return CheckpointUnusable("blob %s: %s" % (name, _lib.preempt_strerror(r).decode()))

    def __call__(self, name):
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        r = _lib.preempt_restore_blob(self._h, name.encode(), ctypes.byref(p), ctypes.byref(n))
        if r < 0:
            raise self._unusable(name, r)
        try:
            return ctypes.string_at(p, n.value)
        finally:
            _lib.preempt_free(p)

    def open(self, name):
        fd = _int()
        r = _lib.preempt_restore_blob_open(self._h, name.encode(), ctypes.byref(fd))
        if r < 0:
            raise self._unusable(name, r)
        return os.fdopen(fd.value, "rb")


class PreemptError(OSError):
    """A libpreempt call failed: errno and the library's message."""


class CheckpointUnusable(Exception):
    """Raised by a restore function for a checkpoint it cannot use (bad data,
    another model's shape): the library sets it aside and tries the next
    older one. Any other exception fails the handler's creation and sets
    nothing aside (a restart tries again)."""


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("LIBPREEMPT_LIBRARY"),
                  os.path.join(here, "..", "..", "lib", ".libs", "libpreempt.so"),  # in the source tree
                  "libpreempt.so.0", "libpreempt.so"]
    last = None
    for c in candidates:
        if not c:
            continue
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            last = e
    raise ImportError("libpreempt: cannot load the C library (set LIBPREEMPT_LIBRARY): %s" % last)


_lib = _load()

_u64, _i64, _uint, _int, _bool, _cstr = (ctypes.c_uint64, ctypes.c_int64, ctypes.c_uint, ctypes.c_int,
                                         ctypes.c_bool, ctypes.c_char_p)


class _Config(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("ckpt_dir", _cstr), ("max_to_keep", _uint), ("start_run", _u64),
                ("grace_ms", _u64), ("bound_ms", _u64), ("agree_timeout_ms", _u64), ("margin_ms", _u64),
                ("plan", _int), ("second", _int), ("exit_code", _int), ("exit_code_not_saved", _int),
                ("signals", _int * 8), ("poll_interval_ms", _u64), ("save_every_steps", _u64),
                ("save_every_ms", _u64), ("trace_path", _cstr), ("platform", _int),
                ("metadata_url", _cstr), ("metadata_poll_ms", _u64), ("metadata_timeout_ms", _u64),
                ("advisory_checkpoint", _bool), ("kill_delay_ms", _u64), ("etcd_endpoints", _cstr),
                ("job", _cstr), ("worker", _uint), ("workers", _uint), ("etcd_user", _cstr),
                ("etcd_password", _cstr), ("etcd_ca", _cstr), ("etcd_cert", _cstr), ("etcd_key", _cstr),
                ("lease_ttl_s", _uint), ("join_timeout_ms", _u64), ("etcd_timeout_ms", _u64),
                ("launch_id", _cstr), ("start_over", _bool), ("async_start", _bool), ("azure_approve", _bool),
                ("termination_log", _cstr), ("metrics_path", _cstr), ("stay_in_place", _bool)]


class _Status(ctypes.Structure):
    _fields_ = [("state", _int), ("run", _u64), ("restored_step", _u64), ("start_status", _int),
                ("committed_step", _u64),
                ("restore_fallbacks", _uint),
                ("refused_step", _u64), ("save_step", _u64), ("deadline_in_ms", _i64), ("step_us", _u64),
                ("save_ms", _u64), ("saves", _uint), ("incarnation", _u64), ("platform", _int),
                ("notice_source", _cstr), ("kill_delay_ms", _u64), ("grace_ms", _u64), ("exit_code", _int),
                ("stall_ms", _u64)]


_H = ctypes.c_void_p
_SAVE = ctypes.CFUNCTYPE(_int, _H, _u64, ctypes.c_void_p)
_POLL = ctypes.CFUNCTYPE(_int, _H, ctypes.POINTER(_u64), ctypes.c_void_p)
_STATE = ctypes.CFUNCTYPE(None, _H, _int, _int, ctypes.c_void_p)
_EXIT = ctypes.CFUNCTYPE(None, _H, _int, _int, ctypes.c_void_p)
_LOG = ctypes.CFUNCTYPE(None, _H, _int, _cstr, ctypes.c_void_p)
_START = ctypes.CFUNCTYPE(None, _H, _int, ctypes.c_void_p)
_PEER = ctypes.CFUNCTYPE(None, _H, _uint, _cstr, ctypes.c_void_p)
_REBUILD = ctypes.CFUNCTYPE(None, _H, _u64, _u64, ctypes.c_void_p)


class _Callbacks(ctypes.Structure):
    _fields_ = [("save", _SAVE), ("restore", _SAVE), ("poll", _POLL), ("on_state", _STATE), ("on_exit", _EXIT),
                ("log", _LOG), ("on_start", _START)]


def _check_layout(struct, name):
    """The library's layout of struct `name` begins with this binding's, field by field: the library is this
    binding's version or a newer one (structures grow at their end only, and the library reads and writes only as
    much as the caller's size says; python3-libpreempt depends on libpreempt0 >= its own version)."""
    text = _lib.preempt_abi_layout(name.encode())
    if not text:
        raise ImportError("libpreempt: the library does not describe struct %s" % name)
    parts = text.decode().split()
    size = int(parts[0].split("=")[1])
    theirs = []
    for p in parts[1:]:
        fname, rest = p.split("@")
        off, fsize = rest.split(":")
        theirs.append((fname, int(off), int(fsize)))
    mine = [(f[0], getattr(struct, f[0]).offset, getattr(struct, f[0]).size) for f in struct._fields_]
    if size < ctypes.sizeof(struct) or mine != theirs[:len(mine)]:
        raise ImportError("libpreempt: struct %s of the library (%s) differs from this binding's: the Python "
                          "package and the C library are of different versions" % (name, text.decode()))


_lib.preempt_abi_layout.restype = _cstr
_lib.preempt_abi_layout.argtypes = [_cstr]
for _s, _n in ((_Config, "preempt_config"), (_Status, "preempt_status"), (_Callbacks, "preempt_callbacks")):
    _check_layout(_s, _n)

_lib.preempt_config_init_size.argtypes = [ctypes.POINTER(_Config), ctypes.c_size_t]
# the sized forms, with this module's own structures' sizes (checked above)
_lib.preempt_handler_new_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Config), ctypes.POINTER(_Callbacks),
                                          ctypes.c_void_p, ctypes.POINTER(_H), ctypes.c_size_t]
_lib.preempt_handler_free.argtypes = [_H]
_lib.preempt_handler_free.restype = _H
for _f in ("preempt_training_done", "preempt_handler_process", "preempt_request_checkpoint"):
    getattr(_lib, _f).argtypes = [_H]
_lib.preempt_save_checkpoint_if_preempted.argtypes = [_H, ctypes.POINTER(_bool)]
for _f in ("preempt_step_end", "preempt_handler_get_action", "preempt_handler_get_exit_code",
           "preempt_handler_get_fd"):
    getattr(_lib, _f).argtypes = [_H, ctypes.POINTER(_int)]  # enums and codes are C ints
_lib.preempt_handler_get_timeout.argtypes = [_H, ctypes.POINTER(_i64)]
_lib.preempt_save_begin.argtypes = [_H, ctypes.POINTER(_u64)]
_lib.preempt_save_blob.argtypes = [_H, _cstr, ctypes.c_char_p, ctypes.c_size_t]
_lib.preempt_save_done.argtypes = [_H, _int]
_lib.preempt_restore_blob.argtypes = [_H, _cstr, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
_lib.preempt_save_blob_open.argtypes = [_H, _cstr, ctypes.POINTER(_int)]
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_lib.preempt_save_snapshot.argtypes = [_H, _cstr, ctypes.c_void_p, ctypes.c_size_t, _RELEASE, ctypes.c_void_p]
_lib.preempt_restore_blob_open.argtypes = [_H, _cstr, ctypes.POINTER(_int)]
_lib.preempt_notify.argtypes = [_H, _u64]
_lib.preempt_request_restart.argtypes = [_H, ctypes.c_char_p]
_lib.preempt_handler_on_peer_lost.argtypes = [_H, _PEER, ctypes.c_void_p]
_lib.preempt_handler_on_rebuild.argtypes = [_H, _REBUILD, ctypes.c_void_p]
_lib.preempt_handler_get_status_size.argtypes = [_H, ctypes.POINTER(_Status), ctypes.c_size_t]
_lib.preempt_free.argtypes = [ctypes.c_void_p]
_lib.preempt_strerror.restype = _cstr
_lib.preempt_version.restype = _cstr
_lib.preempt_block_signals.argtypes = [ctypes.POINTER(_Config)]


def version():
    """The C library's version."""
    return _lib.preempt_version().decode()


def _config(signals):
    cfg = _Config()
    if _lib.preempt_config_init_size(ctypes.byref(cfg), ctypes.sizeof(cfg)) < 0:
        raise PreemptError(errno.EINVAL, "libpreempt: struct preempt_config size mismatch")
    if signals is not None:
        sigs = list(signals)[:7] + [0]
        for i, s in enumerate(sigs):
            cfg.signals[i] = int(s)
    return cfg


def block_signals(signals=(signal.SIGTERM,)):
    """Blocks the notice signals in the calling thread; threads started
    afterwards inherit the mask. Call it before anything starts threads
    (import torch after it), or run the program under preempt-exec."""
    cfg = _config(signals)
    r = _lib.preempt_block_signals(ctypes.byref(cfg))
    if r < 0:
        raise PreemptError(-r, _lib.preempt_strerror(r).decode())


class Handler:
    """One worker's preemption handler (the C library's struct preempt_handler).

    save(step) -> {name: bytes or a readable binary file object}: the state to
    keep at `step`. restore(step, read): read(name) -> bytes; raise
    CheckpointUnusable for a checkpoint it cannot use. Several workers:
    etcd="http://host:2379", job=..., worker=i, workers=n. Keyword names
    follow struct preempt_config (grace_ms, exit_code, max_to_keep,
    platform, launch_id, start_over, trace_path, ...); AUTO and UNLIMITED
    are its special values (max_to_keep=UNLIMITED keeps every checkpoint),
    and None leaves a field at its default.

    on_peer_lost(worker, why): called on the handler's loop as soon as a
    peer's membership in the job ends (it died, hung past its lease, or left
    after its last save before this worker saved), e.g. to abort the process group
    (torch.distributed.destroy_process_group()) instead of waiting out a
    collective's timeout, then leave with request_restart(). It must not
    block.

    stay_in_place=True: a worker that had no notice of its own keeps its
    process and its state through a preemption and joins the job's next
    incarnation (the state "rejoining": tear the process group down
    there, in on_state); on_rebuild(incarnation, step) is then called on
    the handler's loop once every worker of the new incarnation stands at
    `step`: make the process group again there, with a rendezvous of that
    incarnation's own (a replacement worker reads it from
    status()["incarnation"]). It may block for the rendezvous.

    Creation restores the newest checkpoint (joining the job first) and
    raises PreemptError on failure, or the restore function's exception;
    Ctrl-C during it raises KeyboardInterrupt. With async_start=True it
    returns at once and `await started()` runs start-up on the asyncio loop.
    """

    def __init__(self, ckpt_dir=None, *, save=None, restore=None, log=None, on_state=None,
                 signals=(signal.SIGTERM,), platform="none", etcd=None, on_peer_lost=None, on_rebuild=None,
                 **options):
        self._save, self._restore, self._log, self._on_state = save, restore, log, on_state
        self._error = None          # an exception raised inside a callback, re-raised at the next call
        self._messages = []         # the library's recent messages, for errors
        self.exit_code = None       # set when the handler exits
        self.exit_reason = None
        self._h = _H()
        self._keep = []             # C strings and callbacks must outlive the handler
        self._snaps = {}            # snapshots the library holds: key -> (object, C view)
        self._next_snap = 1
        self._release = _RELEASE(self._c_release)
        cfg = _config(signals)
        self._set(cfg, "ckpt_dir", ckpt_dir)
        self._set(cfg, "etcd_endpoints", etcd)
        if platform not in _PLATFORMS:
            raise ValueError("platform: one of %s" % ", ".join(_PLATFORMS))
        cfg.platform = _PLATFORMS[platform]
        for k, v in options.items():
            if k in ("size", "signals", "platform") or k not in dict(_Config._fields_):
                raise TypeError("unknown option %r" % k)
            self._set(cfg, k, v)
        cbs = _Callbacks()
        cbs.save = _SAVE(self._c_save) if save else _SAVE()
        cbs.restore = _SAVE(self._c_restore) if restore else _SAVE()
        cbs.on_state = _STATE(self._c_state)
        cbs.on_exit = _EXIT(self._c_exit)
        cbs.log = _LOG(self._c_log)
        self._keep += [cbs, cfg]
        r = _lib.preempt_handler_new_size(None, ctypes.byref(cfg), ctypes.byref(cbs), None, ctypes.byref(self._h),
                                          ctypes.sizeof(cbs))
        if self._error:
            err, self._error = self._error, None
            raise err
        if r == -errno.EINTR:  # Ctrl-C during start-up
            raise KeyboardInterrupt
        if r < 0:
            raise self._failure(r, "cannot create the handler")
        if on_peer_lost is not None:
            self._on_peer_lost = on_peer_lost
            peer = _PEER(self._c_peer_lost)
            self._keep.append(peer)
            r = _lib.preempt_handler_on_peer_lost(self._h, peer, None)
            if r < 0:
                raise self._failure(r, "cannot watch the peers")
        if on_rebuild is not None:
            self._on_rebuild = on_rebuild
            rebuild = _REBUILD(self._c_rebuild)
            self._keep.append(rebuild)
            r = _lib.preempt_handler_on_rebuild(self._h, rebuild, None)
            if r < 0:
                raise self._failure(r, "cannot register on_rebuild")

    # ---- plumbing -------------------------------------------------------------------
    def _set(self, cfg, name, value):
        if value is None:
            return
        if isinstance(value, str):
            value = value.encode()
            self._keep.append(value)
        setattr(cfg, name, value)

    def _failure(self, r, what):
        last = next((m for lvl, m in reversed(self._messages) if lvl >= 3), None)
        return PreemptError(-r, "%s: %s%s" % (what, _lib.preempt_strerror(r).decode(), "; " + last if last else ""))

    def _guard(self, fn, fail):
        """Runs a Python callback; an exception never reaches C: it is kept and
        raised from the next call into the handler."""
        try:
            return fn()
        except BaseException as e:  # noqa: B902 (KeyboardInterrupt too: C cannot unwind it)
            if self._error is None:
                self._error = e
            return fail

    def _c_rebuild(self, h, incarnation, step, ud):
        self._guard(lambda: self._on_rebuild(incarnation, step), None)

    def _c_peer_lost(self, h, worker, why, ud):
        self._guard(lambda: self._on_peer_lost(worker, why.decode()), None)

    def _c_save(self, h, step, ud):
        def failed(name, r):
            return PreemptError(-r, "cannot save blob %s: %s" % (name, _lib.preempt_strerror(r).decode()))

        def run():
            for name, data in self._save(step).items():
                if callable(data) or hasattr(data, "read"):  # streamed: never held whole here
                    fd = _int()
                    r = _lib.preempt_save_blob_open(h, name.encode(), ctypes.byref(fd))
                    if r < 0:
                        raise failed(name, r)
                    with os.fdopen(fd.value, "w+b") as f:
                        if callable(data):
                            data(f)
                        else:
                            shutil.copyfileobj(data, f, 1 << 20)
                    continue
                if isinstance(data, Snapshot):
                    self._snapshot(h, name, data.data, failed)
                    continue
                data = bytes(data)
                r = _lib.preempt_save_blob(h, name.encode(), data, len(data))
                if r < 0:
                    raise failed(name, r)
            return 0
        return self._guard(run, -errno.EIO)

    def _snapshot(self, h, name, data, failed):
        """Hands data over without a copy; it stays referenced until released."""
        if isinstance(data, bytes):
            view = ctypes.c_char_p(data)  # points into the bytes object itself
            size = len(data)
        else:
            mv = memoryview(data).cast("B")
            if mv.readonly:
                raise TypeError("Snapshot: a read-only buffer other than bytes (hand over bytes, or a writable buffer)")
            size = mv.nbytes
            view = (ctypes.c_char * size).from_buffer(mv) if size else ctypes.c_char_p(b"")
        key, self._next_snap = self._next_snap, self._next_snap + 1
        self._snaps[key] = (data, view)
        r = _lib.preempt_save_snapshot(h, name.encode(), ctypes.cast(view, ctypes.c_void_p), size, self._release,
                                       ctypes.c_void_p(key))
        if r < 0:
            del self._snaps[key]
            raise failed(name, r)

    def _c_release(self, data, ud):
        self._snaps.pop(ud, None)

    def _c_restore(self, h, step, ud):
        def run():
            try:
                self._restore(step, _Reader(h))
            except CheckpointUnusable as e:
                self._messages.append((3, "checkpoint at step %d unusable: %s" % (step, e)))
                return -errno.EBADMSG
            return 0
        return self._guard(run, -errno.EIO)

    def _c_state(self, h, frm, to, ud):
        if self._on_state:
            self._guard(lambda: self._on_state(_STATES[frm], _STATES[to]), None)

    def _c_exit(self, h, reason, code, ud):
        self.exit_reason, self.exit_code = _EXITS[reason], code

    def _c_log(self, h, level, msg, ud):
        text = msg.decode(errors="replace")
        self._messages = self._messages[-31:] + [(level, text)]
        if self._log:
            self._guard(lambda: self._log(level, text), None)

    def _exit_code(self):
        """The code the handler exited with (on_exit's, else the library's)."""
        if self.exit_code is not None:
            return self.exit_code
        code = _int()
        r = _lib.preempt_handler_get_exit_code(self._h, ctypes.byref(code))
        return None if r == -errno.EAGAIN else self._call(r, "exit code") or code.value

    def _out(self, fn, what):
        """The int a preempt_*(h, &ret) call sets, or its error raised."""
        v = _int()
        self._call(fn(self._h, ctypes.byref(v)), what)
        return v.value

    def _call(self, r, what):
        if self._error:
            err, self._error = self._error, None
            raise err
        if r < 0:
            raise self._failure(r, what)
        return r

    # ---- the handler ------------------------------------------------------------------
    def close(self):
        """Frees the handler (its last etcd writes are delivered first)."""
        if self._h:
            _lib.preempt_handler_free(self._h)
            self._h = _H()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()

    def status(self):
        """A snapshot of the handler, a dict (struct preempt_status's fields,
        man 3 preempt_status): state (its name, "idle", ...), run (steps
        completed, restored ones counted), restored_step, start_status (0,
        -EAGAIN while an asynchronous start-up runs, else why it failed),
        committed_step, restore_fallbacks (checkpoints set aside at start-up),
        refused_step (the newest of them), save_step (the round's agreed
        step), deadline_in_ms (-1: none known), step_us (mean step time),
        save_ms (the last save's time), saves (checkpoints committed),
        incarnation (the job's; 0 alone), platform (its enum value),
        notice_source (the last notice's source, or None), kill_delay_ms,
        grace_ms, exit_code (the "saved, restart me" code) and stall_ms (the
        training the last save stopped)."""
        st = _Status()
        self._call(_lib.preempt_handler_get_status_size(self._h, ctypes.byref(st), ctypes.sizeof(st)), "status")
        d = {f[0]: getattr(st, f[0]) for f in _Status._fields_}
        d["state"] = _STATES[st.state]
        d["notice_source"] = st.notice_source.decode() if st.notice_source else None
        return d

    def boundary(self):
        """The synchronous form: counts one completed step and does what the
        handler says (saves through save(), waits where the job must). True
        when the handler has exited: stop and leave with self.exit_code."""
        exited = _bool()
        self._call(_lib.preempt_save_checkpoint_if_preempted(self._h, ctypes.byref(exited)), "step boundary")
        return exited.value

    def done(self):
        """Training finished."""
        self._call(_lib.preempt_training_done(self._h), "training done")

    def request_checkpoint(self):
        """A checkpoint now, training going on (False: one is under way)."""
        r = _lib.preempt_request_checkpoint(self._h)
        return r != -errno.EALREADY and self._call(r, "request checkpoint") == 0

    def notify(self, deadline_in_ms=0):
        """A notice from the application (source "inject")."""
        self._call(_lib.preempt_notify(self._h, deadline_in_ms), "notify")

    def request_restart(self, why=None):
        """This worker cannot go on but a restart can: called from
        on_peer_lost once the process group is aborted. The handler exits
        at once without saving (the "restart me" code, also for every other
        worker of the job: they follow its error record); returns that exit
        code. The restart resumes after the newest committed checkpoint."""
        self._call(_lib.preempt_request_restart(self._h, why.encode() if why else None), "request restart")
        return self._exit_code()

    # ---- any event loop ----------------------------------------------------------------
    def fileno(self):
        """The descriptor to wait on for reading (then call process())."""
        return self._out(_lib.preempt_handler_get_fd, "get_fd")

    def timeout(self):
        """Seconds until process() must run anyway (None: only the descriptor)."""
        ms = _i64()
        self._call(_lib.preempt_handler_get_timeout(self._h, ctypes.byref(ms)), "get_timeout")
        return None if ms.value < 0 else ms.value / 1000.0

    def process(self):
        """Does the pending work without blocking."""
        self._call(_lib.preempt_handler_process(self._h), "process")

    def _save_now(self):
        step = _u64()
        r = _lib.preempt_save_begin(self._h, ctypes.byref(step))
        if r < 0:
            _lib.preempt_save_done(self._h, r)
            return self._call(r, "save")
        r = self._c_save(self._h, step.value, None)
        self._call(_lib.preempt_save_done(self._h, r), "save")
        if self._error:
            err, self._error = self._error, None
            raise err

    async def _pump(self, loop):
        """Waits (without blocking the event loop) until the handler has work
        or a timer of its own is due, then does it."""
        woke = loop.create_future()
        fd = self.fileno()
        loop.add_reader(fd, lambda: woke.done() or woke.set_result(None))
        try:
            await asyncio.wait_for(asyncio.shield(woke), self.timeout())
        except asyncio.TimeoutError:
            pass
        finally:
            loop.remove_reader(fd)
        self.process()

    async def started(self):
        """With async_start=True: runs start-up (the restore; in a job, joining
        and the restore barrier) on this asyncio loop, and returns once
        training may begin. Raises PreemptError when start-up failed, or the
        restore function's exception."""
        loop = asyncio.get_running_loop()
        while self.status()["start_status"] == -errno.EAGAIN:
            await self._pump(loop)
        self._call(self.status()["start_status"], "start-up")

    async def astep(self):
        """The asyncio form of a step boundary: counts one step, saves when
        asked, waits (without blocking the event loop) where the job must,
        and returns None to go on training or the exit code to stop with."""
        loop = asyncio.get_running_loop()
        # what came since the last boundary (a notice, etcd's records), also
        # when the step never yielded to the loop (a blocking collective)
        self.process()
        action = self._out(_lib.preempt_step_end, "step end")
        while True:
            if action in (SAVE, SAVE_EXIT):
                self._save_now()
            elif action == CONTINUE:
                return None
            elif action == EXIT:
                return self._exit_code()
            else:  # WAIT: run the handler on this loop until it says more
                await self._pump(loop)
            action = self._out(_lib.preempt_handler_get_action, "action")

    def attach(self, loop=None):
        """Runs the handler on an asyncio loop between steps: its descriptor
        is watched and its timers honoured (a notice arrives while the
        trainer awaits something else). Returns a function that detaches."""
        loop = loop or asyncio.get_event_loop()
        fd = self.fileno()
        timer = [None]

        def run():
            if timer[0]:
                timer[0].cancel()
            try:
                self.process()
            except BaseException as e:  # kept for the next call, as a callback's
                self._error = self._error or e
            t = self.timeout() if self._h else None
            timer[0] = loop.call_later(t, run) if t is not None else None

        loop.add_reader(fd, run)
        run()

        def detach():
            loop.remove_reader(fd)
            if timer[0]:
                timer[0].cancel()
        return detach
