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

from sf_envs.vector import protocol
from sf_envs.vector.buffers import SharedBuffers
from sf_envs.vector.procs import redirect_console
from sf_envs.vector.units import RowBlock, Unit

__all__ = ["main", "serve"]

# How often a blocked worker checks that its parent still exists.
_PARENT_CHECK_S = 2.0


class _State(enum.Enum):
    NEW = "new"  # built, never reset: stepping it is a parent bug, refused by the faces
    RUNNING = "running"
    NEEDS_RESET = "needs_reset"  # NEXT_STEP: the episode ended on the previous step
    LOST = "lost"  # replaces a dead worker's unit: next step reports the truncation


class _Slot:
    """A unit with its rows and its views."""

    def __init__(self, unit: Unit, start: int, stop: int, block: RowBlock, state: _State) -> None:
        self.unit = unit
        self.rows = slice(start, stop)
        self.block = block
        self.state = state


class _Worker:
    def __init__(self, config: protocol.WorkerConfig, buffers: SharedBuffers) -> None:
        self.config = config
        self.b = buffers
        rpu = config.factory.rows_per_unit
        self.groups: dict[int, list[_Slot]] = {}
        initial = _State.LOST if config.restarted else _State.NEW
        for group_id, unit_start, unit_stop in config.groups:
            slots = []
            for u in range(unit_start, unit_stop):
                rows = slice(u * rpu, (u + 1) * rpu)
                block = RowBlock(
                    obs=buffers["obs"][rows],
                    meas=buffers["meas"][rows] if "meas" in buffers.arrays else None,
                    reward=buffers["reward"][rows],
                    terminated=buffers["terminated"][rows],
                    truncated=buffers["truncated"][rows],
                    variables=buffers["variables"][rows],
                    episode_return=buffers["run_return"][rows],
                    episode_length=buffers["run_length"][rows],
                )
                unit = config.factory(u, config.workdir)
                slots.append(_Slot(unit, rows.start, rows.stop, block, initial))
            self.groups[group_id] = slots

    def reset(self, group_id: int) -> None:
        b = self.b
        for slot in self.groups[group_id]:
            slot.unit.reset(int(b["seed"][slot.rows.start]), slot.block)
            self._clear(slot)
            slot.state = _State.RUNNING

    def step(self, group_id: int) -> None:
        b = self.b
        for slot in self.groups[group_id]:
            rows = slot.rows
            if slot.state is _State.RUNNING:
                if slot.unit.step(b["actions"][rows], slot.block):
                    b["ep_return"][rows] = b["run_return"][rows]
                    b["ep_length"][rows] = b["run_length"][rows]
                    self._end_episode(slot)
                else:
                    b["restarted"][rows] = False
            elif slot.state is _State.NEEDS_RESET:
                slot.unit.reset(None, slot.block)
                self._clear(slot)
                slot.state = _State.RUNNING
            elif slot.state is _State.LOST:
                # The dead worker's last running stats are still in shared memory.
                b["ep_return"][rows] = b["run_return"][rows]
                b["ep_length"][rows] = b["run_length"][rows]
                b["reward"][rows] = 0.0
                b["terminated"][rows] = False
                b["truncated"][rows] = True
                self._end_episode(slot)
                b["restarted"][rows] = True
            else:
                raise RuntimeError(f"unit at rows {rows} stepped before its first reset")

    def _end_episode(self, slot: _Slot) -> None:
        b, rows = self.b, slot.rows
        b["restarted"][rows] = False
        if not self.config.same_step:
            slot.state = _State.NEEDS_RESET
            return
        b["final_obs"][rows] = b["obs"][rows]
        if "final_meas" in b.arrays:
            b["final_meas"][rows] = b["meas"][rows]
        b["final_variables"][rows] = b["variables"][rows]
        slot.unit.reset(None, slot.block)
        slot.state = _State.RUNNING

    def _clear(self, slot: _Slot) -> None:
        b, rows = self.b, slot.rows
        b["reward"][rows] = 0.0
        b["terminated"][rows] = False
        b["truncated"][rows] = False
        b["restarted"][rows] = False

    def close(self) -> None:
        for slots in self.groups.values():
            for slot in slots:
                slot.unit.close()


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
    # SCHED_BATCH: a task woken by a batch task does not preempt it. Every engine tic is a
    # message round trip (make_action(a, 4) is four); under the default policy the woken engine
    # preempted the worker before it could block on the answer, two context switches per tic.
    # Now the worker blocks first and the engine just runs: half the switches (8.4 -> 4.5 per
    # env step) and +0-3% env frames/s in interleaved runs of 8-32 envs. Not for units of
    # several agents: their engine threads meet at a barrier every tic, and there the prompt
    # hand-off of preemption is worth more (duel match steps/s: -20% under SCHED_BATCH).
    if config.factory.rows_per_unit == 1:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    buffers = SharedBuffers(config.layout, name=config.shm_name)
    worker = None
    try:
        worker = _Worker(config, buffers)
        sock.send(protocol.READY)
        done = {group_id: protocol.encode(protocol.DONE, [group_id]) for group_id in worker.groups}
        while True:
            message = _recv(sock, parent)
            opcode = message[:1]
            if opcode == protocol.STEP:
                for group_id in protocol.decode_groups(message).tolist():
                    worker.step(group_id)
                    sock.send(done[group_id])
            elif opcode == protocol.RESET:
                for group_id in protocol.decode_groups(message).tolist():
                    worker.reset(group_id)
                    sock.send(done[group_id])
            elif opcode in (protocol.QUIT, b""):
                return
            else:
                raise RuntimeError(f"unknown command {message!r}")
    finally:
        if worker is not None:
            worker.close()
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
