"""Tournament games on a Ray cluster: one Ray actor per game process, placed by Ray on any node.

The tournament itself does not change (:func:`sf_league.tournament.schedule.run_tournament`): it hands
games to a pool and stores each outcome in its own transaction, from the driver alone. This
module is the pool. Each game process is an actor that declares one CPU, so Ray spreads game processes over
every node with CPUs free; it plays games one at a time exactly like a local game process
(:func:`sf_league.tournament.game.play_in_game_process`: open matches kept for the next game of the same setup,
engines guarded by the sf-envs watchdog). No filesystem is shared: a checkpoint and its run's
``config.json`` travel as one object in Ray's object store, put once by the driver and fetched
by an actor the first time it meets that checkpoint.

A node lost mid-tournament (or any actor that dies) fails only the games its actors were
playing; they come back as failed attempts, which the tournament plays again on another game process,
and the pool starts a new actor in the dead one's place (pending until some node has a free
CPU). Ray's own task retries stay off (``max_task_retries=0``): a game is replayed by the
tournament, which counts attempts, never behind its back.

Ray is an optional extra (``pip install 'sf-league[ray]'``); nothing here imports it at module
level.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import logging
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from sf_envs.lifecycle import watchdog
from sf_league.store import GameRecord
from sf_league.tournament import game
from sf_league.tournament.game import AgentSeat, GameJob, attempt, isolate, leave
from sf_league.tournament.game_pool import GameOutcome

__all__ = ["ClusterError", "RayGamePool", "RunFiles", "import_ray", "ray_game_pool", "ray_session"]

logger = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 15.0  # idle actors close their matches within this; the rest are killed
_PLACEMENT_TIMEOUT_S = 300.0  # no game process placed for this long: the cluster has no free CPU
_CONNECT_TIMEOUT_S = 10.0  # a head node answers a TCP connect within this
_WAIT_S = 1.0  # how long one ray.wait blocks before the pool looks at its actors again


class ClusterError(RuntimeError):
    """Ray is missing or the cluster cannot host the game processes; the message names the fix."""


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        ClusterError: If Ray is not installed.
    """
    try:
        import ray
    except ImportError as e:
        raise ClusterError(
            f"Ray is not installed ({e}); install the extra with `pip install 'sf-league[ray]'`"
        ) from e
    return ray


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Connected to Ray for the ``with`` block: the cluster at ``address`` (``auto``: the one
    running on this machine, else ``HOST:PORT``), or with ``address`` None a Ray instance
    started here and stopped at the end. A session that is already connected is used as is.

    Raises:
        ClusterError: If Ray is missing or no cluster answers at ``address``.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield
        return
    if address and address != "auto":
        _check_reachable(address)
    # A Ray started here keeps its sockets and logs in a folder of ours, removed at the end
    # (Ray's default, /tmp/ray, keeps every session's).
    temp = None if address else tempfile.mkdtemp(prefix="sf_ray_")
    try:
        try:
            # The game processes' consoles are /dev/null already; Ray's log forwarding would only
            # add its own lines to the progress bar.
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(include_dashboard=False, log_to_driver=False, _temp_dir=temp)
        except ConnectionError as e:  # `auto` with no cluster running here
            raise ClusterError(
                f"no Ray cluster runs on this machine ({e}); start one with `ray start --head`, "
                "or give no address to start Ray for this command alone"
            ) from e
        yield
    finally:
        ray.shutdown()
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _check_reachable(address: str) -> None:
    """Refuses an address nobody listens at (Ray itself would retry forever)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(
            f"--ray {address!r}: give the head node as HOST:PORT (`ray start --head` prints it), "
            "`auto` for the cluster running on this machine, or no address to start Ray here"
        )
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ClusterError(
            f"no Ray cluster answers at {address!r} ({e}); start one with `ray start --head` "
            "(and `ray start --address HEAD:6379` on the other nodes), or give no address to "
            "start Ray on this machine alone"
        ) from e


@dataclasses.dataclass(frozen=True)
class RunFiles:
    """What a node needs to load a checkpoint: its bytes and its run's ``config.json``."""

    name: str
    checkpoint: bytes
    config: bytes

    @classmethod
    def read(cls, seat: AgentSeat) -> RunFiles:
        checkpoint = Path(str(seat.checkpoint))
        return cls(
            checkpoint.name,
            checkpoint.read_bytes(),
            (Path(str(seat.run_dir)) / "config.json").read_bytes(),
        )


class _GameActor:
    """A game process inside a Ray actor (wrapped by :func:`ray.remote` in the pool)."""

    def __init__(self, play: Callable[[GameJob], GameRecord]) -> None:
        import ray

        self._ray = ray
        self._play = play
        self._scratch = tempfile.mkdtemp(prefix="sf_league_game_")
        # The watchdog removes the folder (and the engines of matches inside it) if the actor is
        # killed or its node's raylet dies with it: no code of ours runs then.
        watchdog.guard(self._scratch)
        isolate(self._scratch)
        self._node = ray.get_runtime_context().get_node_id()
        self._local: dict[str, AgentSeat] = {}  # the driver's checkpoint path -> this node's seat

    def node(self) -> str:
        """The Ray node this game process lives on (answers once the actor is placed and started)."""
        return self._node

    def play(self, job: GameJob, files: dict[str, Any]) -> tuple[GameRecord | None, str | None]:
        """Plays ``job``, loading its checkpoints from ``files`` (object refs, by the driver's
        checkpoint path) the first time this game process meets them."""
        return attempt(lambda j: self._play(self._localised(j, files)), job)

    def _localised(self, job: GameJob, files: dict[str, Any]) -> GameJob:
        seats = []
        for seat in job.agents:
            if seat.kind == "checkpoint":
                key = str(seat.checkpoint)
                if key not in self._local:
                    self._local[key] = self._write(key, self._ray.get(files[key]), seat)
                seat = self._local[key]
            seats.append(seat)
        return dataclasses.replace(job, agents=tuple(seats))

    def _write(self, key: str, files: RunFiles, seat: AgentSeat) -> AgentSeat:
        run_dir = Path(self._scratch, "runs", hashlib.sha256(key.encode()).hexdigest()[:16])
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "config.json").write_bytes(files.config)
        checkpoint = run_dir / "checkpoints" / files.name
        checkpoint.write_bytes(files.checkpoint)
        return dataclasses.replace(seat, checkpoint=str(checkpoint), run_dir=str(run_dir))

    def close(self) -> None:
        """Closes the open matches, kills their engines and removes the scratch folder."""
        leave(self._scratch)
        watchdog.release(self._scratch)


@dataclasses.dataclass
class _Slot:
    """One game process of the pool: its actor, where it lives once started, what it plays."""

    actor: Any
    started: Any  # the ref of actor.node(): set until the actor answered
    node: str | None = None
    job: GameJob | None = None
    result: Any = None  # the ref of the game being played


class RayGamePool:
    """``workers`` game processes as Ray actors of one CPU each, playing the submitted games; a
    :class:`~sf_league.tournament.game_pool.GamePool`. Needs a connected Ray session (:func:`ray_session`).

    Args:
        workers: Actors to start; Ray places them, each where a CPU is free.
        play: What a game process calls per game; a module-level function (pickled by name, so every
            node must have it installed).
    """

    def __init__(self, workers: int, play: Callable[[GameJob], GameRecord]) -> None:
        self._ray = import_ray()
        if not self._ray.is_initialized():
            raise ClusterError("RayGamePool needs a Ray session: open it with ray_session()")
        self._actor_class = self._ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            _GameActor
        )
        self._play = play
        self._waiting: collections.deque[GameJob] = collections.deque()
        self._files: dict[str, Any] = {}  # the driver's checkpoint path -> ref of its RunFiles
        #: Games finished (a record came back) per Ray node id.
        self.games_per_node: collections.Counter[str] = collections.Counter()
        self._slots = [self._start() for _ in range(workers)]
        self._unplaced_since = time.monotonic()

    def _start(self) -> _Slot:
        actor = self._actor_class.remote(self._play)
        return _Slot(actor, actor.node.remote())

    def _replace(self, slot: _Slot) -> None:
        with contextlib.suppress(Exception):  # already dead: nothing to kill
            self._ray.kill(slot.actor)
        self._slots[self._slots.index(slot)] = self._start()

    def submit(self, job: GameJob) -> None:
        """Queues ``job``; games start in the order submitted."""
        self._waiting.append(job)

    @property
    def unfinished(self) -> int:
        """Games submitted whose outcome has not been returned yet."""
        return len(self._waiting) + sum(s.job is not None for s in self._slots)

    def playing_per_node(self) -> collections.Counter[str]:
        """Games being played now per Ray node id."""
        return collections.Counter(str(s.node) for s in self._slots if s.job is not None)

    def _refs_of(self, job: GameJob) -> dict[str, Any]:
        refs = {}
        for seat in job.agents:
            if seat.kind == "checkpoint":
                key = str(seat.checkpoint)
                if key not in self._files:
                    self._files[key] = self._ray.put(RunFiles.read(seat))
                refs[key] = self._files[key]
        return refs

    def _dispatch(self) -> None:
        for slot in self._slots:
            if slot.node is not None and slot.job is None and self._waiting:
                slot.job = self._waiting.popleft()
                slot.result = slot.actor.play.remote(slot.job, self._refs_of(slot.job))

    def next_outcome(self) -> GameOutcome:
        """Starts waiting games on idle game processes and returns the next finished attempt.

        A game process whose actor died (its node lost, its process killed) is replaced at once; if
        it was playing, its game's outcome is that death.

        Raises:
            RuntimeError: If no game is waiting or playing.
            ClusterError: If no game process could be placed on the cluster for 5 minutes.
        """
        ray = self._ray
        if not self.unfinished:
            raise RuntimeError("next_outcome() with no game submitted: submit() one first")
        while True:
            self._dispatch()
            pending = {s.result: s for s in self._slots if s.job is not None}
            pending |= {s.started: s for s in self._slots if s.node is None}
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=_WAIT_S)
            for ref in ready:
                slot = pending[ref]
                if slot.job is None:  # an actor answered: it is placed and started
                    try:
                        slot.node = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        logger.warning(
                            "a Ray game process failed to start (%s); starting another", e
                        )
                        self._replace(slot)
                    continue
                job, slot.job, slot.result = slot.job, None, None
                try:
                    record, error = ray.get(ref)
                except ray.exceptions.RayActorError as e:
                    record, error = None, f"the Ray actor playing it died: {_first_line(e)}"
                    self._replace(slot)
                except ray.exceptions.RayError as e:
                    record, error = None, f"Ray lost the game: {_first_line(e)}"
                if record is not None:
                    self.games_per_node[str(slot.node)] += 1
                return GameOutcome(job, record, error)
            self._check_placed()

    def _check_placed(self) -> None:
        if any(s.node is not None for s in self._slots):
            self._unplaced_since = time.monotonic()
        elif time.monotonic() - self._unplaced_since > _PLACEMENT_TIMEOUT_S:
            raise ClusterError(
                f"no game process could be placed on the Ray cluster for {_PLACEMENT_TIMEOUT_S:.0f}"
                " s: no node has a free CPU (see `ray status`); add a node or free one"
            )

    def close(self) -> None:
        """Stops every game process: idle ones close their matches, the rest are killed (the
        watchdog of each then removes its engines and scratch folder); idempotent."""
        ray = self._ray
        self._waiting.clear()
        closing = [s.actor.close.remote() for s in self._slots if s.node and s.job is None]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=_STOP_TIMEOUT_S)
        while self._slots:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(self._slots.pop().actor)

    def __enter__(self) -> RayGamePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def ray_game_pool(workers: int | None, games: int) -> RayGamePool:
    """Game processes on the connected Ray cluster: ``workers`` (None: one per CPU of the cluster),
    never more than the ``games`` to play.

    Raises:
        ClusterError: If the cluster has no CPU.
    """
    ray = import_ray()
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if cpus < 1:
        raise ClusterError(
            "the Ray cluster has no CPU to run games on; start a node with CPUs "
            "(`ray start --address HEAD:6379 --num-cpus N`)"
        )
    return RayGamePool(min(workers or cpus, games), game.play_in_game_process)
