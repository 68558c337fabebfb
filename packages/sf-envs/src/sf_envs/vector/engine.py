"""The engine: worker processes, their lifecycle, restarts and timeouts, over shared buffers.

Layout: envs are numbered so that every *group* (what a worker steps per command) is one
contiguous slice of envs, and groups are dealt round-robin to workers: group ``g`` runs on worker
``g % num_workers``. With two groups per worker, groups ``0..W-1`` form the first half of the envs
and ``W..2W-1`` the second, so the double-buffered steady state (half the envs step while the
caller works on the other half) hands out one contiguous slice: zero-copy views.

Workers are ``python -m sf_envs.vector.worker`` subprocesses rather than ``multiprocessing``
children: spawn/forkserver re-import the caller's ``__main__`` in every child (for a trainer that
means torch, seconds and hundreds of MB per worker), and fork is unsafe with ViZDoom and threads.
Each worker starts its own session, so it and the ViZDoom engines it spawns share a process
group that :func:`os.killpg` removes in one call — engines orphaned by a killed worker spin at
100% CPU otherwise.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import pickle
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

from sf_envs.errors import OptionError
from sf_envs.lifecycle import watchdog
from sf_envs.lifecycle.procs import kill_group, log_tail
from sf_envs.vector import protocol
from sf_envs.vector.buffers import BufferLayout, SharedBuffers
from sf_envs.vector.units import UnitFactory

__all__ = ["Engine", "EngineSettings", "EngineState", "VectorEnvError"]

log = logging.getLogger(__name__)

# First pause before respawning a failed worker; doubles with each failure of that worker
# within _REPEATED_FAILURE_S (a crash repeating at once), up to _MAX_BACKOFF_S.
_RESTART_BACKOFF_S = 0.25
_REPEATED_FAILURE_S = 10.0
_MAX_BACKOFF_S = 2.0


def _restart_pause(failures: deque[float], now: float) -> float:
    """Seconds to wait before respawning a worker that failed at the monotonic times
    ``failures`` (the last one ``now``). Only failures in quick succession lengthen the pause:
    a worker that fails now and then (a killed process, a rare engine crash) always comes back
    after the first one."""
    repeated = sum(1 for t in failures if t > now - _REPEATED_FAILURE_S)
    return min(_RESTART_BACKOFF_S * 2 ** max(repeated - 1, 0), _MAX_BACKOFF_S)


class VectorEnvError(RuntimeError):
    """A worker failed more often in a row than restarting can fix."""


class EngineState(enum.Enum):
    """Whether the engine still steps its workers or has been closed (and refuses calls)."""

    RUNNING = "running"
    CLOSED = "closed"


@dataclass(frozen=True)
class EngineSettings:
    """How the engine supervises and places its workers (the faces take these as keywords).

    Attributes:
        step_timeout_s: A worker that shows no progress for this long counts as hung.
        start_timeout_s: Limit for a worker to start its engines and answer READY.
        max_restarts: Failures of one worker tolerated within ``restart_window_s``; one more
            raises :class:`VectorEnvError`. A window, not a count of failures in a row, because
            a replacement answers its first step without touching the engine (it reports the
            truncation), so a game that crashes on every step would otherwise never count twice.
        restart_window_s: See ``max_restarts``.
        pin_workers: Pin worker ``i`` and its ViZDoom engines to the ``i``-th CPU this process
            may use. A worker and its engines hand control back and forth every step; pinned,
            that hand-off stays on one core instead of waking a task on another one (more
            frames/s: ``benchmarks/vector_env.py`` measures both). None (the default) pins only
            when the workers deal evenly to the CPUs, so that several engines in one machine
            (parallel tests, a league's game processes) never pile onto the first cores.
    """

    step_timeout_s: float = 60.0
    start_timeout_s: float = 120.0
    max_restarts: int = 3
    restart_window_s: float = 300.0
    pin_workers: bool | None = None

    def __post_init__(self) -> None:
        for name in ("step_timeout_s", "start_timeout_s", "restart_window_s"):
            if not getattr(self, name) > 0:
                raise OptionError(f"{name} must be > 0 seconds, got {getattr(self, name)!r}")
        if not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise OptionError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}")

    def worker_cpus(self, num_workers: int) -> list[int | None]:
        """The CPU each worker is pinned to (None: not pinned)."""
        cpus = sorted(os.sched_getaffinity(0))
        pin = num_workers % len(cpus) == 0 if self.pin_workers is None else self.pin_workers
        return [cpus[i % len(cpus)] if pin else None for i in range(num_workers)]


@dataclass
class _WorkerHandle:
    """The parent's handle on one worker process (the process runs :mod:`.worker`)."""

    index: int
    groups: tuple[int, ...]
    proc: subprocess.Popen | None = None
    sock: socket.socket | None = None
    #: Groups sent and not yet answered, with their opcodes, in send order.
    pending: dict[int, bytes] = field(default_factory=dict)
    #: When the worker must next show progress (READY or DONE), else it counts as hung.
    deadline: float | None = None
    ready: bool = False
    #: When it failed recently (monotonic s), for the restart budget.
    failures: deque[float] = field(default_factory=deque)
    last_error: str = ""
    #: When a failed worker's replacement is due (after the restart pause), else None.
    respawn_at: float | None = None


class _Resources:
    """What must be released even if the engine object is never closed (finalizer target)."""

    def __init__(self, buffers: SharedBuffers, tmpdir: str) -> None:
        self.buffers = buffers
        self.tmpdir = tmpdir
        self.handles: list[_WorkerHandle] = []
        # The workers run from tmpdir and their engines from folders inside it, so if this
        # process dies unclosed (SIGTERM, SIGKILL) the watchdog takes them and the segment too.
        for path in self.guarded:
            watchdog.guard(path)

    @property
    def guarded(self) -> tuple[str, str]:
        return self.tmpdir, os.path.join("/dev/shm", self.buffers.name)

    def release(self) -> None:
        for handle in self.handles:
            if handle.sock is not None and handle.proc is not None and handle.proc.poll() is None:
                with contextlib.suppress(OSError):
                    handle.sock.send(protocol.QUIT)
        deadline = time.monotonic() + 5.0
        for handle in self.handles:
            _stop(handle, max(0.0, deadline - time.monotonic()))
        self.buffers.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        for path in self.guarded:
            watchdog.release(path)


def _stop(handle: _WorkerHandle, grace_s: float) -> None:
    """Waits up to ``grace_s`` for the worker to exit, then kills its whole process group."""
    proc, handle.proc = handle.proc, None
    if handle.sock is not None:
        handle.sock.close()
        handle.sock = None
    if proc is None:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    # Also after a clean exit: a worker killed mid-step leaves engines behind in its group.
    kill_group(proc.pid)
    try:
        proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        log.error("worker process %d did not die after SIGKILL", proc.pid)


class Engine:
    """Worker processes stepping groups of units that write into one shared-memory segment.

    Args:
        factory: Builds the units (single-player games or matches) inside the workers.
        num_units: Units in total; envs = ``num_units * factory.envs_per_unit``.
        units_per_group: Units stepped per command; must divide ``num_units`` and the groups
            must deal evenly to the workers.
        num_workers: Worker processes.
        layout: The shared fields (built by the caller, which knows the spaces).
        same_step: Autoreset within the step (SAME_STEP) instead of on the next one.
        name: What the engine runs, e.g. the scenario, for error messages.
        settings: Timeouts, restart budget and CPU pinning; defaults when None.

    The faces (:class:`~sf_envs.vector.gym_vector.DoomVectorEnv`,
    :class:`~sf_envs.vector.async_env.DoomAsyncVectorEnv`) drive it with :meth:`submit` and
    :meth:`collect`; it knows nothing of observations or autoreset semantics.
    """

    def __init__(
        self,
        factory: UnitFactory,
        num_units: int,
        units_per_group: int,
        num_workers: int,
        layout: BufferLayout,
        same_step: bool,
        name: str,
        settings: EngineSettings | None = None,
    ) -> None:
        num_groups = num_units // units_per_group
        if num_units % units_per_group or num_groups % num_workers:
            raise ValueError(
                f"{num_units} units in groups of {units_per_group} do not deal evenly to "
                f"{num_workers} workers; pick num_envs, batch_size and num_workers so that "
                "num_envs is a multiple of batch_size and batch_size of num_workers"
            )
        self.factory = factory
        self.name = name
        self.same_step = same_step
        settings = EngineSettings() if settings is None else settings
        self.settings = settings
        self._cpus = settings.worker_cpus(num_workers)
        self.num_groups = num_groups
        envs = units_per_group * factory.envs_per_unit
        #: ``(start, stop)`` envs of every group.
        self.group_envs = tuple((g * envs, (g + 1) * envs) for g in range(num_groups))
        self.envs_per_group = envs
        self.units_per_group = units_per_group
        self.buffers = SharedBuffers(layout)
        self._res = _Resources(self.buffers, tempfile.mkdtemp(prefix="sf_vec_"))
        self._finalizer = weakref.finalize(self, self._res.release)
        self._selector = selectors.DefaultSelector()
        self._handles = [
            _WorkerHandle(w, tuple(range(w, num_groups, num_workers))) for w in range(num_workers)
        ]
        self._res.handles = self._handles
        self._worker_of = [g % num_workers for g in range(num_groups)]
        self.restarts = 0
        self.state = EngineState.RUNNING
        try:
            for handle in self._handles:
                self._spawn(handle, restarted=False)
            self._await_ready(self._handles)
        except BaseException:
            self.close()
            raise

    # -- commands ---------------------------------------------------------------------------

    def submit(self, opcode: bytes, groups: list[int]) -> None:
        """Sends ``opcode`` for ``groups``: one message per worker, groups in the given order."""
        per_worker: dict[int, list[int]] = {}
        for g in groups:
            per_worker.setdefault(self._worker_of[g], []).append(g)
        now = time.monotonic()
        for w, gs in per_worker.items():
            handle = self._handles[w]
            for g in gs:
                handle.pending[g] = opcode
            if not handle.ready:
                continue  # a replacement still starting: sent when it answers READY
            if len(handle.pending) == len(gs):
                handle.deadline = now + self.settings.step_timeout_s
            # A dead worker refuses the send; collect() sees its EOF and restarts it with these
            # groups pending.
            with contextlib.suppress(OSError):
                handle.sock.send(protocol.encode(opcode, gs))  # type: ignore[union-attr]

    def collect(self) -> list[int]:
        """Blocks (sleeping) until at least one submitted group is done; returns the done groups.

        A worker that died or hung is restarted here and its pending groups are sent again; the
        new worker answers them as truncated (see :mod:`sf_envs.vector.worker`).

        Raises:
            VectorEnvError: a worker kept failing, or nothing was submitted.
        """
        if not any(h.pending for h in self._handles):
            raise RuntimeError("collect() with nothing submitted")
        done: list[int] = []
        while not done:
            self._wait(self._handles, done)
        return done

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (each also the id of its process group)."""
        return [h.proc.pid for h in self._handles if h.proc is not None]

    def close(self) -> None:
        """Stops the workers and their engines, frees the shared memory. Idempotent."""
        if self.state is EngineState.CLOSED:
            return
        self.state = EngineState.CLOSED
        self._selector.close()
        self._finalizer()

    # -- internals --------------------------------------------------------------------------

    def _workdir(self, handle: _WorkerHandle) -> str:
        return os.path.join(self._res.tmpdir, f"worker{handle.index}")

    def _spawn(self, handle: _WorkerHandle, restarted: bool) -> None:
        workdir = self._workdir(handle)
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            handle.proc = subprocess.Popen(
                [sys.executable, "-m", "sf_envs.vector.worker", str(child_sock.fileno())],
                pass_fds=(child_sock.fileno(),),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                cwd=workdir,
            )
        finally:
            child_sock.close()
        handle.sock = parent_sock
        handle.ready = False
        handle.deadline = time.monotonic() + self.settings.start_timeout_s
        groups = tuple(
            (g, g * self.units_per_group, (g + 1) * self.units_per_group) for g in handle.groups
        )
        config = protocol.WorkerConfig(
            worker_index=handle.index,
            factory=self.factory,
            layout=self.buffers.layout,
            shm_name=self.buffers.name,
            groups=groups,
            same_step=self.same_step,
            restarted=restarted,
            workdir=workdir,
            cpu=self._cpus[handle.index],
        )
        parent_sock.send(pickle.dumps(sys.path))
        parent_sock.send(pickle.dumps(config))
        self._selector.register(parent_sock, selectors.EVENT_READ, handle)

    def _await_ready(self, handles: list[_WorkerHandle]) -> None:
        """Waits until every worker of ``handles`` is READY, restarting those that fail."""
        while not all(h.ready for h in handles):
            self._wait(handles, [])

    def _wait(self, handles: list[_WorkerHandle], done: list[int]) -> None:
        """Sleeps until a message arrives or the earliest deadline of ``handles`` passes."""
        busy = [h for h in handles if h.pending or not h.ready]
        # A handle that is pending or starting has a deadline.
        deadline = min(cast(Iterator[float], (h.deadline for h in busy)))
        events = self._selector.select(max(0.0, deadline - time.monotonic()))
        for key, _ in events:
            self._drain(key.data, done)
        now = time.monotonic()
        for handle in busy:
            if handle.respawn_at is not None:
                if handle.respawn_at <= now:
                    handle.respawn_at = None
                    self._spawn(handle, restarted=True)
            elif handle.proc is not None and handle.deadline <= now:  # type: ignore[operator]
                if handle.ready:
                    self._fail(
                        handle,
                        f"no answer within step_timeout_s={self.settings.step_timeout_s:g} (hung)",
                    )
                else:
                    self._fail(
                        handle,
                        f"not ready within start_timeout_s={self.settings.start_timeout_s:g}",
                    )

    def _drain(self, handle: _WorkerHandle, done: list[int]) -> None:
        """Reads every message the worker has sent; handles DONE, READY, ERROR and EOF."""
        sock = handle.sock
        while sock is not None:
            try:
                message = sock.recv(protocol.MAX_MESSAGE, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as exc:
                message = b""
                handle.last_error = f"connection lost: {exc}"
            opcode = message[:1]
            if opcode == protocol.DONE:
                for g in protocol.decode_groups(message).tolist():
                    del handle.pending[g]
                    done.append(g)
                handle.deadline = time.monotonic() + self.settings.step_timeout_s
            elif opcode == protocol.READY:
                handle.ready = True
                watchdog.note_engines()  # its engines run: their shared memory is named now
                if handle.pending:  # a replacement: redo what the dead worker left undone
                    self._resend(handle)
            elif opcode == protocol.ERROR:
                handle.last_error = message[1:].decode(errors="replace")
            else:  # EOF: the worker exited or was killed
                self._fail(handle, handle.last_error or self._exit_reason(handle))
                return

    def _resend(self, handle: _WorkerHandle) -> None:
        by_opcode: dict[bytes, list[int]] = {}
        for g, opcode in handle.pending.items():
            by_opcode.setdefault(opcode, []).append(g)
        for opcode, gs in by_opcode.items():
            handle.sock.send(protocol.encode(opcode, gs))  # type: ignore[union-attr]
        handle.deadline = time.monotonic() + self.settings.step_timeout_s

    def _fail(self, handle: _WorkerHandle, reason: str) -> None:
        """Replaces a dead or hung worker, or raises once restarting has stopped helping."""
        if handle.sock is not None:
            self._selector.unregister(handle.sock)
        # A worker that reported an error is exiting on its own: let it close its engines.
        _stop(handle, grace_s=1.0 if handle.last_error else 0.0)
        summary = reason.strip().splitlines()[-1] if reason.strip() else reason
        output = log_tail(os.path.join(self._workdir(handle), protocol.WORKER_LOG))
        if output:
            reason = f"{reason.rstrip()}\nlast output of the worker and its engines:\n{output}"
        now = time.monotonic()
        handle.failures.append(now)
        while handle.failures[0] < now - self.settings.restart_window_s:
            handle.failures.popleft()
        self.restarts += 1
        if len(handle.failures) > self.settings.max_restarts:
            self.close()
            raise VectorEnvError(
                f"worker {handle.index} of {self.name} failed {len(handle.failures)} times within "
                f"{self.settings.restart_window_s:g} s, more than max_restarts={self.settings.max_restarts}; "
                f"last error:\n{reason}"
            )
        log.warning(
            "restarting worker %d of %s (failure %d of at most %d): %s",
            handle.index,
            self.name,
            len(handle.failures),
            self.settings.max_restarts,
            summary,
        )
        handle.last_error = ""
        # Back off before respawning: a crash that repeats at once (an engine that cannot init
        # while a port or a previous engine's resources are still being released) gets time to
        # clear instead of using up every restart within a second. The respawn is scheduled
        # (see _wait), not slept, so the other workers keep stepping meanwhile.
        handle.ready = False
        handle.respawn_at = handle.deadline = now + _restart_pause(handle.failures, now)

    @staticmethod
    def _exit_reason(handle: _WorkerHandle) -> str:
        proc = handle.proc
        code = None if proc is None else proc.poll()
        if code is None and proc is not None:
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                return "worker closed its connection but is still running"
        if code is not None and code < 0:
            return f"worker killed by signal {signal.Signals(-code).name}"
        return f"worker exited with status {code}"
