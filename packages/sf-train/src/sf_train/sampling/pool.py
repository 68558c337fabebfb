"""Sampling in several processes: each sampler process acts for its own share of the envs.

One :class:`~sf_train.sampling.sampler.Sampler` drives all the envs from one thread, and that thread's
CPU per env frame bounds the trainer however many cores the host has
(``benchmarks/machinery_ceiling.py``). :class:`SamplerPool` splits the envs, the vector
engine's workers and the batches among ``K`` sampler processes instead:

- Each process builds its own vector env (``num_envs / K`` envs on ``num_workers / K``
  workers) and its own acting copy of the policy (on the run's device: with CUDA, each process
  runs its batched forward passes on the GPU), and runs a :class:`Sampler` over trajectory
  batches that the trainer allocated in shared memory, so a complete batch reaches the learner
  as its place in a ring, never as a copy or a pickle of its tensors. The processes and the
  pool talk in the dataclass messages of :mod:`sf_train.sampling.messages`.
- The learner publishes weights into one shared float32 copy of the policy
  (:class:`ProcessWeights`); a sampler process copies them into its own acting copy (in its
  precision) before a batch when the version has changed, under a sequence number that tells
  it when a copy overlapped a publication. Nothing that one process could hold when killed is
  shared with the others: no lock, and each process reports on a pipe of its own.
- A sampler process that dies, or whose loop makes no progress for :data:`HANG_S`, is killed and
  started again; the batches it was filling are dropped (the learner's are given back to the
  new process once learned), and its envs start new episodes. The engine inside each process
  restarts its own failed workers as with one sampler.

The pool has the trainer-facing methods of :class:`Sampler` (``collect``, ``release``,
``set_opponent``, ``set_shaping``) and the spaces and counters of the vector env, so the
trainer drives one sampler or several through the same loop. Self-play (frozen opponents
included) and populations work as with one sampler; each process pairs its games' seats with a
uniform pairing of its own, so a custom pairing (``set_pairing``) needs one process.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from multiprocessing import connection
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch
import torch.multiprocessing as mp

from sf_train.config.schema import Config, ConfigError
from sf_train.model.network import ActorCritic
from sf_train.run.members import SharedWeights
from sf_train.sampling.batch import CollectResult, TrajectoryBatch
from sf_train.sampling.messages import (
    Attach,
    BatchFilled,
    Failed,
    Ready,
    Release,
    Report,
    SamplerArgs,
    SetOpponent,
    SetShaping,
    Stop,
)
from sf_train.sampling.process import POLL_S, sampler_main
from sf_train.sampling.protocols import Pairing, PolicySource

__all__ = ["ProcessWeights", "SamplerPool", "resolve_num_samplers", "share_batch"]

log = logging.getLogger(__name__)

CORES_PER_SAMPLER = 8
"""``run.num_samplers = 0`` starts one sampler process per this many cores (at least one): a
sampler drives tens of thousands of env frames/s, the engines of about this many cores."""
START_TIMEOUT_S = 120.0
"""Seconds a sampler process may take to build its envs and report them."""
HANG_S = 60.0
"""Seconds without progress of a sampler loop after which its process counts as hung, unless
``env.worker_timeout`` (the same limit for the engine's workers) sets another."""
MAX_RESTARTS = 3
"""Sampler processes restarted within :data:`RESTART_WINDOW_S` before training stops."""
RESTART_WINDOW_S = 300.0
OUTSTANDING = 3
"""Batches of one sampler process that may be with the learner at once: one queued, one
learning, one waiting to be queued, as with one sampler. The rings have room for them beside
the batches that the envs fill."""


def resolve_num_samplers(cfg: Config, agents_per_game: int = 1) -> int:
    """``run.num_samplers``, or for 0 one per :data:`CORES_PER_SAMPLER` cores where the run
    can split (asynchronous, one policy), the largest such count that divides the envs, the
    batch and the workers evenly."""
    if cfg.run.num_samplers:
        return cfg.run.num_samplers
    if cfg.run.sync or cfg.algo.num_policies > 1:
        return 1
    k = max(1, (os.cpu_count() or 1) // CORES_PER_SAMPLER)
    while k > 1 and split_problems(cfg, k, agents_per_game):
        k -= 1
    return k


def split_problems(cfg: Config, k: int, agents_per_game: int = 1) -> list[str]:
    """Why ``cfg``'s envs cannot be split among ``k`` sampler processes (none: they can)."""
    env = cfg.env
    problems = []
    if cfg.run.sync:
        problems.append(f"run.num_samplers={k} with run.sync: sample in one process to debug")
    if env.num_envs % (k * agents_per_game):
        problems.append(
            f"env.num_envs={env.num_envs} does not split into {k} samplers of whole games "
            f"({agents_per_game} envs each): use a multiple of {k * agents_per_game}"
        )
    if env.batch_size % k:
        problems.append(f"env.batch_size={env.batch_size}: use a multiple of num_samplers={k}")
    if env.num_workers % k:
        problems.append(f"env.num_workers={env.num_workers}: use a multiple of num_samplers={k}")
    return problems


def share_batch(batch: TrajectoryBatch) -> TrajectoryBatch:
    """Moves every tensor of ``batch`` into shared memory (in place), so processes started
    with it, or sent it, write the same storage."""
    for name, value in vars(batch).items():
        if isinstance(value, torch.Tensor):
            value.share_memory_()
        elif isinstance(value, dict):
            for tensor in value.values():
                tensor.share_memory_()
        elif name == "obs" and value is not None:
            raise TypeError(f"unexpected observation storage {type(value)}")
    return batch


class ProcessWeights(SharedWeights):
    """A policy's published weights in shared memory, which every sampler process reads.

    :class:`~sf_train.run.members.SharedWeights` whose model and version are shared with the
    sampler processes. No lock is shared with them: a process killed while it held one would
    stop the learner and every other process for good. Instead each publication makes the
    policy's sequence number odd while it writes and even again when done (a sequence lock);
    a process copies the weights while the number is even and copies again if it changed
    meanwhile (:func:`sf_train.sampling.process.copy_published`).
    """

    def __init__(
        self, model: ActorCritic, versions: torch.Tensor, sequences: torch.Tensor, index: int
    ) -> None:
        self._versions = versions
        self._sequences = sequences
        self._index = index
        super().__init__(model.share_memory(), int(versions[index]))
        self._writing = threading.Lock()

    @property
    def version(self) -> int:
        return int(self._versions[self._index])

    @version.setter
    def version(self, value: int) -> None:
        self._versions[self._index] = value

    def publish(self, source: ActorCritic, version: int) -> None:
        with self._writing:  # one writer at a time; the readers take no lock
            self._sequences[self._index] += 1
            try:
                super().publish(source, version)
            finally:
                self._sequences[self._index] += 1


@dataclass
class _Child:
    """The parent's view of one sampler process."""

    index: int
    process: Any
    commands: Any
    results: Connection | None
    """The read end of the process's report pipe (None once it has closed)."""
    beats: torch.Tensor
    held: set[tuple[int, int]]
    """Batches ``(policy, index in its ring)`` that the learner holds."""
    last_beat: int = -1
    last_progress: float = 0.0
    worker_restarts: int = 0
    """The child's engine's restarts, as it last reported them."""
    attached: bool = False
    """Whether it was given the weights and batches (later settings are sent as they come)."""


class SamplerPool:
    """``K`` sampler processes over shared-memory batches; see the module docstring.

    Created in two steps: the constructor starts the processes, which build their envs and
    report the spaces (``single_observation_space``, ``single_action_space``,
    ``variable_names``); :meth:`attach` then gives them the policy and the batches.

    Args:
        cfg: The run's configuration; ``cfg.env`` is split among the processes.
        num_samplers: ``K``.
        opponent_envs: Rows played by a frozen opponent, as for :class:`Sampler`.
        agents_per_game: Rows of one game.
    """

    def __init__(
        self,
        cfg: Config,
        num_samplers: int,
        opponent_envs: np.ndarray,
        agents_per_game: int = 1,
    ) -> None:
        problems = split_problems(cfg, num_samplers, agents_per_game)
        if problems:
            raise ConfigError(problems)
        self.cfg = cfg
        self.num_samplers = num_samplers
        self.envs_per_sampler = cfg.env.num_envs // num_samplers
        self.agents_per_game = agents_per_game
        self._opponent_envs = np.asarray(opponent_envs, dtype=np.int64)
        self._context = mp.get_context("spawn")
        self._children: list[_Child | None] = [None] * num_samplers
        self.num_policies = cfg.algo.num_policies
        self._rings: list[list[list[TrajectoryBatch]]] = []
        self._where: dict[int, tuple[int, int, int]] = {}
        self._versions = torch.zeros(self.num_policies, dtype=torch.int64).share_memory_()
        self._sequences = torch.zeros(self.num_policies, dtype=torch.int64).share_memory_()
        self._weights: list[ProcessWeights] = []
        self.batches = np.zeros((num_samplers, self.num_policies), dtype=np.int64)
        """Batches received from each process for each policy."""
        self._opponent_state: dict[str, Any] | None = None
        self._shaping: dict[int, np.ndarray | None] = {}
        self._restarts: list[float] = []
        self._restarted_engines = 0
        self.sampler_restarts = 0
        """Sampler processes restarted (each also logged)."""
        self._supervised = time.monotonic()
        self._hang_s = cfg.env.worker_timeout or HANG_S
        self._backlog: collections.deque[Report] = collections.deque()
        """Reports read from the pipes, in order."""
        self._held_back: collections.deque[Report] = collections.deque()
        """Reports that arrived while a process was starting, for :meth:`collect`."""
        self._closed = False
        self.single_observation_space: Any = None
        self.single_action_space: Any = None
        self.variable_names: tuple[str, ...] = ()
        try:
            for k in range(num_samplers):
                self._spawn(k)
            for _ in range(num_samplers):
                ready = self._next_ready()
                self.single_observation_space = ready.observation_space
                self.single_action_space = ready.action_space
                self.variable_names = ready.variable_names
        except BaseException:
            self.close()
            raise

    # -- what the trainer sees of a vector env -------------------------------------------------

    @property
    def worker_restarts(self) -> int:
        """Engine workers restarted in every sampler process so far."""
        live = sum(c.worker_restarts for c in self._children if c is not None)
        return self._restarted_engines + live

    # -- setup ----------------------------------------------------------------------------------

    def weights_for(self, model: ActorCritic) -> ProcessWeights:
        """The published weights of the next policy: a shared float32 copy of ``model``."""
        shared = copy.deepcopy(model).to("cpu").float().requires_grad_(False)
        weights = ProcessWeights(shared, self._versions, self._sequences, len(self._weights))
        self._weights.append(weights)
        return weights

    def attach(self, T: int, B: int, num_batches: int) -> None:
        """Allocates every process's rings (one per policy) of ``num_batches`` shared
        trajectory batches of ``B / K`` trajectories, after :meth:`weights_for` for every policy. A process stops
        stepping while :data:`OUTSTANDING` of its batches are with the learner, as one
        sampler stops while the learner's queue is full."""
        if len(self._weights) != self.num_policies:
            raise RuntimeError("attach() before weights_for() of every policy")
        if B % self.num_samplers:
            raise ConfigError(
                [f"{B} learning envs do not split into {self.num_samplers} samplers evenly"]
            )
        self._T, self._B = T, B // self.num_samplers
        for k in range(self.num_samplers):
            rings = [
                [
                    share_batch(
                        TrajectoryBatch(
                            T,
                            self._B,
                            self.single_observation_space,
                            weights.model.action_dist.action_shape,
                            weights.model.rnn_size,
                            policy=p,
                            pin_memory=False,
                            action_dtype=weights.model.action_dist.action_dtype,
                        )
                    )
                    for _ in range(num_batches)
                ]
                for p, weights in enumerate(self._weights)
            ]
            self._rings.append(rings)
            for p, ring in enumerate(rings):
                self._where.update({id(b): (k, p, j) for j, b in enumerate(ring)})

    def start(self, seed: int | None = None) -> None:
        """Gives every process the weights and its batches, and starts its envs; process
        ``k`` seeds them apart from the others."""
        self._seed = 0 if seed is None else seed
        for k in range(self.num_samplers):
            self._send_attach(k)

    def _send_attach(self, k: int) -> None:
        child = self._live(k)
        rings = self._rings[k]
        free = [[j for j in range(len(r)) if (p, j) not in child.held] for p, r in enumerate(rings)]
        child.commands.put(
            Attach(
                rings=rings,
                free=free,
                outstanding=max(0, OUTSTANDING - len(child.held)),
                published=[w.model for w in self._weights],
                versions=self._versions,
                sequences=self._sequences,
                T=self._T,
                seed=self._seed + k * 1_000_003 + self.sampler_restarts,
                opponent=self._opponent_state,
                shaping=self._shaping,
            )
        )
        child.attached = True

    def _spawn(self, k: int) -> None:
        commands = self._context.Queue()
        results, reports = self._context.Pipe(duplex=False)
        beats = torch.zeros(1, dtype=torch.int64).share_memory_()
        previous = self._children[k]
        held = previous.held if previous is not None else set()
        env = replace(
            self.cfg.env,
            num_envs=self.envs_per_sampler,
            batch_size=self.cfg.env.batch_size // self.num_samplers,
            num_workers=max(1, self.cfg.env.num_workers // self.num_samplers),
        )
        lo = k * self.envs_per_sampler
        local_opponents = self._opponent_envs[
            (self._opponent_envs >= lo) & (self._opponent_envs < lo + self.envs_per_sampler)
        ]
        process = self._context.Process(
            target=sampler_main,
            name=f"sf-train-sampler-{k}",
            args=(
                SamplerArgs(
                    index=k,
                    cfg=replace(self.cfg, env=env),
                    opponent_envs=local_opponents - lo,
                    agents_per_game=self.agents_per_game,
                    commands=commands,
                    results=reports,
                    beats=beats,
                    parent=os.getpid(),
                ),
            ),
            daemon=True,
        )
        process.start()
        reports.close()  # the process's end: the pipe reads as closed once the process is gone
        self._children[k] = _Child(k, process, commands, results, beats, held, -1, time.monotonic())

    def _live(self, k: int) -> _Child:
        child = self._children[k]
        if child is None:
            raise RuntimeError(f"sampler process {k} is not running")
        return child

    def _next_ready(self) -> Ready:
        """The report of the next process to build its envs; batches that arrive meanwhile are
        kept for :meth:`collect`."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            message = self._receive()
            if message is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the sampler processes did not start within {START_TIMEOUT_S:.0f} s"
                    ) from None
                for child in self._children:
                    if child is not None and not child.process.is_alive():
                        raise RuntimeError(
                            f"sampler process {child.index} exited while starting "
                            f"(exit code {child.process.exitcode})"
                        ) from None
                continue
            self._raise_error(message)
            if isinstance(message, Ready):
                return message
            self._held_back.append(message)

    def _receive(self) -> Report | None:
        """The next report of any process, or None after :data:`POLL_S` without one."""
        if not self._backlog:
            readers = {c.results: c for c in self._children if c is not None and c.results}
            for ready in connection.wait(list(readers), timeout=POLL_S):
                child = readers[ready]  # type: ignore[index]
                assert child.results is not None
                try:
                    self._backlog.append(child.results.recv())
                except (EOFError, OSError):  # the process is gone; supervision restarts it
                    child.results.close()
                    child.results = None
        return self._backlog.popleft() if self._backlog else None

    @staticmethod
    def _raise_error(message: Report) -> None:
        if isinstance(message, Failed):
            raise RuntimeError(f"sampler process {message.sampler} failed:\n{message.traceback}")

    # -- the Sampler face -----------------------------------------------------------------------

    def collect(
        self, policy_version: int | PolicySource | Sequence[int | PolicySource]
    ) -> CollectResult:
        """The next complete trajectory batch of any sampler process (the versions come with
        it: each process acts with the weights it copied in)."""
        while True:
            now = time.monotonic()
            if now - self._supervised > POLL_S:  # the others' batches may never pause
                self._supervised = now
                self._supervise()
            message = self._held_back.popleft() if self._held_back else self._receive()
            if message is None:
                continue
            self._raise_error(message)
            if not isinstance(message, BatchFilled):
                continue
            k, p, j = message.sampler, message.policy, message.index
            child = self._children[k]
            if child is None or message.pid != child.process.pid:
                continue  # a message of a process restarted since
            child.worker_restarts = message.worker_restarts
            child.held.add((p, j))
            self.batches[k, p] += 1
            return message.result(self._rings[k][p][j], k * self.envs_per_sampler)

    def release(self, batch: TrajectoryBatch) -> None:
        """Gives a learned trajectory batch back to the process that fills it (or its
        replacement)."""
        k, p, j = self._where[id(batch)]
        child = self._children[k]
        if child is None:
            return
        child.held.discard((p, j))
        child.commands.put(Release(p, j))

    def set_opponent(self, state_dict: dict[str, Any]) -> None:
        """Loads the opponent's weights in every process (and in any started later)."""
        self._opponent_state = {k: v.detach().cpu().clone() for k, v in state_dict.items()}
        self._broadcast(SetOpponent(self._opponent_state))

    def set_shaping(self, policy: int, weights: np.ndarray | None) -> None:
        """Sets the shaping weights in every process (and in any started later)."""
        self._shaping[policy] = weights
        self._broadcast(SetShaping(policy, weights))

    def _broadcast(self, command: SetOpponent | SetShaping) -> None:
        for child in self._children:
            if child is not None and child.attached:
                child.commands.put(command)

    def set_pairing(self, pairing: Pairing) -> None:
        """Refused: each process draws its games' seats from a uniform pairing of its own; a
        pairing that reads the league's live records (sf-league's frozen opponents) needs
        one process."""
        raise ConfigError(
            [
                f"a custom pairing with run.num_samplers={self.num_samplers}: each sampler "
                "process pairs its games uniformly; use --num-samplers 1"
            ]
        )

    # -- faults ---------------------------------------------------------------------------------

    def _supervise(self) -> None:
        now = time.monotonic()
        for k, child in enumerate(self._children):
            if child is None:
                continue
            beat = int(child.beats[0])
            if beat != child.last_beat:
                child.last_beat, child.last_progress = beat, now
            dead = not child.process.is_alive()
            hung = not dead and now - child.last_progress > self._hang_s
            if dead or hung:
                why = (
                    f"exited (code {child.process.exitcode})"
                    if dead
                    else f"made no progress for {self._hang_s:.0f} s"
                )
                self._restart(k, why)

    def _restart(self, k: int, why: str) -> None:
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW_S] + [now]
        if len(self._restarts) > MAX_RESTARTS:
            raise RuntimeError(
                f"sampler process {k} {why}; {MAX_RESTARTS} restarts within "
                f"{RESTART_WINDOW_S:.0f} s already: stopping (check the env)"
            )
        child = self._live(k)
        log.warning("sampler process %d %s; restarting it (its unfinished batches dropped)", k, why)
        _kill(child.process)
        _close(child)
        self._restarted_engines += child.worker_restarts
        self.sampler_restarts += 1
        self._spawn(k)
        self._next_ready()  # only k is starting
        self._send_attach(k)

    def close(self) -> None:
        """Stops every sampler process and its envs; idempotent."""
        if self._closed:
            return
        self._closed = True
        for child in self._children:
            if child is not None and child.process.is_alive():
                with contextlib.suppress(Exception):
                    child.commands.put(Stop())
        for child in self._children:
            if child is not None:
                child.process.join(10.0)
                _kill(child.process)
                _close(child)
        self._children = [None] * self.num_samplers


def _kill(process: Any) -> None:
    if process.is_alive():
        process.kill()
    process.join(10.0)


def _close(child: _Child) -> None:
    """Closes the parent's ends of a stopped process's queue and pipe."""
    if child.results is not None:
        child.results.close()
        child.results = None
    child.commands.cancel_join_thread()  # commands to a dead process may never be read
    child.commands.close()
