"""The worker process: steps groups of units on command, writing results into shared memory.

Started as ``python -m sf_envs.vector.worker FD`` (see :mod:`sf_envs.vector.engine` for why not
through ``multiprocessing``), with ``FD`` its end of a ``SOCK_SEQPACKET`` socket pair. The first
two messages are pickles: ``sys.path`` (so the unit factory unpickles as in the parent), then a
:class:`~sf_envs.vector.protocol.WorkerConfig`. The worker then builds its units, answers
``READY``, and serves ``STEP``/``RESET`` commands until ``QUIT``, EOF (the parent is gone) or an
error, which it reports as ``ERROR`` + traceback text before exiting with status 1.

Autoreset happens here, next to the engine, so that neither face has to send a second command:
SAME_STEP copies the final obs/variables into the ``final_*`` fields and resets within the step;
NEXT_STEP marks the unit and resets it on its next step (reward 0, not done).
"""

from __future__ import annotations

import enum
import os
import pickle
import socket
import sys
import traceback

from sf_envs.lifecycle import watchdog
from sf_envs.lifecycle.procs import redirect_console
from sf_envs.vector import protocol
from sf_envs.vector.buffers import SharedBuffers, observation_names, observation_of
from sf_envs.vector.units import Unit, UnitViews

__all__ = ["main", "serve"]

# How often a blocked worker checks that its parent still exists.
_PARENT_CHECK_S = 2.0


class _State(enum.Enum):
    NEW = "new"  # built, never reset: stepping it is a parent bug, refused by the faces
    RUNNING = "running"
    NEEDS_RESET = "needs_reset"  # NEXT_STEP: the episode ended on the previous step
    LOST = "lost"  # replaces a dead worker's unit: next step reports the truncation


class _HeldUnit:
    """A unit as this worker holds it: its envs, its views and its autoreset state."""

    def __init__(self, unit: Unit, start: int, stop: int, views: UnitViews, state: _State) -> None:
        self.unit = unit
        self.envs = slice(start, stop)
        self.views = views
        self.state = state


class _GroupStepper:
    """The process side of a worker: builds its groups' units and steps a group per command."""

    def __init__(self, config: protocol.WorkerConfig, buffers: SharedBuffers) -> None:
        self.config = config
        self.b = buffers
        per_unit = config.factory.envs_per_unit
        obs_names = observation_names(config.factory.observation_space)
        self._obs_names = list(obs_names.values())
        self.groups: dict[int, list[_HeldUnit]] = {}
        initial = _State.LOST if config.restarted else _State.NEW
        for group_id, unit_start, unit_stop in config.groups:
            units = []
            for u in range(unit_start, unit_stop):
                envs = slice(u * per_unit, (u + 1) * per_unit)
                views = UnitViews(
                    obs=observation_of(buffers.arrays, obs_names, rows=envs),
                    reward=buffers["reward"][envs],
                    terminated=buffers["terminated"][envs],
                    truncated=buffers["truncated"][envs],
                    variables=buffers["variables"][envs],
                    episode_return=buffers["run_return"][envs],
                    episode_length=buffers["run_length"][envs],
                )
                unit = config.factory(u, config.workdir)
                units.append(_HeldUnit(unit, envs.start, envs.stop, views, initial))
            self.groups[group_id] = units

    def reset(self, group_id: int) -> None:
        b = self.b
        for held in self.groups[group_id]:
            held.unit.reset(int(b["seed"][held.envs.start]), held.views)
            self._clear(held)
            held.state = _State.RUNNING

    def step(self, group_id: int) -> None:
        b = self.b
        for held in self.groups[group_id]:
            envs = held.envs
            if held.state is _State.RUNNING:
                if held.unit.step(b["actions"][envs], held.views):
                    b["ep_return"][envs] = b["run_return"][envs]
                    b["ep_length"][envs] = b["run_length"][envs]
                    self._end_episode(held)
                else:
                    b["restarted"][envs] = False
            elif held.state is _State.NEEDS_RESET:
                held.unit.reset(None, held.views)
                self._clear(held)
                held.state = _State.RUNNING
            elif held.state is _State.LOST:
                # The dead worker's last running stats are still in shared memory.
                b["ep_return"][envs] = b["run_return"][envs]
                b["ep_length"][envs] = b["run_length"][envs]
                b["reward"][envs] = 0.0
                b["terminated"][envs] = False
                b["truncated"][envs] = True
                self._end_episode(held)
                b["restarted"][envs] = True
            else:
                raise RuntimeError(
                    f"unit of envs {envs.start}..{envs.stop - 1} stepped before its first reset"
                )

    def _end_episode(self, held: _HeldUnit) -> None:
        b, envs = self.b, held.envs
        b["restarted"][envs] = False
        if not self.config.same_step:
            held.state = _State.NEEDS_RESET
            return
        for name in self._obs_names:
            b["final_" + name][envs] = b[name][envs]
        b["final_variables"][envs] = b["variables"][envs]
        held.unit.reset(None, held.views)
        held.state = _State.RUNNING

    def _clear(self, held: _HeldUnit) -> None:
        b, envs = self.b, held.envs
        b["reward"][envs] = 0.0
        b["terminated"][envs] = False
        b["truncated"][envs] = False
        b["restarted"][envs] = False

    def close(self) -> None:
        for units in self.groups.values():
            for held in units:
                held.unit.close()


def _recv(sock: socket.socket, parent: int) -> bytes:
    """The next message; empty bytes when the parent has gone away."""
    while True:
        try:
            return sock.recv(protocol.MAX_MESSAGE)
        except TimeoutError:
            if os.getppid() != parent:
                return b""


def serve(sock: socket.socket) -> None:
    """Runs the worker protocol on ``sock`` until told to quit or the parent disappears."""
    parent = os.getppid()
    watchdog.covered_by_parent()  # this worker runs from a folder the parent's watchdog guards
    sock.settimeout(_PARENT_CHECK_S)
    sys.path[:] = pickle.loads(_recv(sock, parent))
    config: protocol.WorkerConfig = pickle.loads(_recv(sock, parent))
    os.chdir(config.workdir)
    # The parent quotes this log's tail when the worker fails.
    for fd in redirect_console(os.path.join(config.workdir, protocol.WORKER_LOG)):
        os.close(fd)
    # Both before any engine starts: ViZDoom's engine processes inherit affinity and policy.
    if config.cpu is not None:
        os.sched_setaffinity(0, {config.cpu})
    # SCHED_BATCH: the engine this worker wakes no longer preempts it before it blocks on the
    # answer, halving context switches per step; units of several envs keep the default, because
    # their engine threads meet at a barrier every tic, where prompt hand-offs are worth more
    # (numbers in docs/benchmarks/env-speed.md).
    if config.factory.envs_per_unit == 1:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    buffers = SharedBuffers(config.layout, name=config.shm_name)
    stepper = None
    try:
        stepper = _GroupStepper(config, buffers)
        sock.send(protocol.READY)
        done = {group_id: protocol.encode(protocol.DONE, [group_id]) for group_id in stepper.groups}
        while True:
            message = _recv(sock, parent)
            opcode = message[:1]
            if opcode == protocol.STEP:
                for group_id in protocol.decode_groups(message).tolist():
                    stepper.step(group_id)
                    sock.send(done[group_id])
            elif opcode == protocol.RESET:
                for group_id in protocol.decode_groups(message).tolist():
                    stepper.reset(group_id)
                    sock.send(done[group_id])
            elif opcode in (protocol.QUIT, b""):
                return
            else:
                raise RuntimeError(f"unknown command {message!r}")
    finally:
        if stepper is not None:
            stepper.close()
        buffers.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sf_envs.vector.worker FD``."""
    argv = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(argv[0]))
    # The engine is a child of this process: it must not inherit the socket, or the parent would
    # not see EOF when this worker dies while an orphaned engine lives on.
    sock.set_inheritable(False)
    try:
        serve(sock)
    except BaseException:
        try:
            sock.settimeout(_PARENT_CHECK_S)
            sock.send(protocol.ERROR + traceback.format_exc()[-60000:].encode())
        except OSError:
            pass
        return 1
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
