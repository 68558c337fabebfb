"""Inside a sampler process (see :mod:`sf_train.sampling.pool`): its envs, its acting copies
and a :class:`~sf_train.sampling.sampler.Sampler` over the shared batches its trainer allocated.

The process talks to its trainer through two queues: it reports its envs' spaces once
(``ready``), is given the weights and its batches (``attach``), then sends each complete batch
as ``(policy, index in its ring)`` with the rollout's statistics and gets it back (``release``)
once learned; settings (``opponent``, ``shaping``) and ``stop`` come the same way. Failures are
sent as ``error`` with their traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import threading
import time
import traceback
from typing import Any

import numpy as np
import torch

from sf_train.config.schema import Config
from sf_train.model.device import resolve_device
from sf_train.model.network import ActorCritic
from sf_train.run.members import SharedWeights
from sf_train.sampling.buffer import TrajectoryBuffer
from sf_train.sampling.rollout import Rollout, UniformPairing

__all__ = ["POLL_S", "sampler_main"]

POLL_S = 0.2
"""Seconds between checks of every wait on the other side (stop, progress, a parent gone)."""
_STATISTICS = tuple(f.name for f in dataclasses.fields(Rollout) if f.name != "buffer")
"""What a rollout sends besides its batch, which stays in shared memory."""


class _Beating:
    """The vector env, counting each ``recv`` in shared memory so the parent sees progress."""

    def __init__(self, venv: Any, beats: torch.Tensor) -> None:
        self._venv = venv
        self._beats = beats
        self.send = venv.send  # on the hot path: no __getattr__ per step

    def recv(self) -> Any:
        result = self._venv.recv()
        self._beats += 1
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._venv, name)


def _watch_parent(parent: int, venv: Any) -> None:
    """Ends this process (closing its envs) when the trainer that started it is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    with contextlib.suppress(Exception):
        venv.close()
    os._exit(1)


def _acting_copies(cfg: Config, venv: Any, published: list[ActorCritic]) -> list[SharedWeights]:
    """This process's acting copy of each policy, in the run's precision (weights still to be
    copied in)."""
    spaces = venv.single_observation_space, venv.single_action_space
    return [
        SharedWeights(ActorCritic(*spaces, cfg.model).acting_copy(cfg.algo.precision))
        for _ in published
    ]


def _refresh(
    weights: list[SharedWeights], published: list[ActorCritic], versions: torch.Tensor, lock: Any
) -> None:
    """Copies in every policy whose published version is not this process's."""
    stale = [p for p, local in enumerate(weights) if int(versions[p]) != local.version]
    if stale:
        with lock:
            for p in stale:
                weights[p].publish(published[p], int(versions[p]))


def sampler_main(
    index: int,
    cfg: Config,
    opponent_envs: np.ndarray,
    agents_per_game: int,
    lock: Any,
    commands: Any,
    results: Any,
    beats: torch.Tensor,
    parent: int,
) -> None:
    """A sampler process: builds its envs, reports them, then fills batches until told to stop."""
    from sf_train.envs import game_variable_names, make_env
    from sf_train.sampling.sampler import Sampler

    torch.set_num_threads(1)
    venv = None
    try:
        venv = make_env(cfg.env)
        threading.Thread(target=_watch_parent, args=(parent, venv), daemon=True).start()
        spaces = (venv.single_observation_space, venv.single_action_space)
        results.put(("ready", index, os.getpid(), (*spaces, game_variable_names(venv))))
        message = commands.get()
        if message[0] == "stop":
            return
        _, rings, free, outstanding, published, versions, T, seed, opponent, shaping = message
        device = resolve_device(cfg.run.device)
        weights = _acting_copies(cfg, venv, published)
        _refresh(weights, published, versions, lock)
        for local in weights:
            local.model.to(device)
        sampler = Sampler(
            _Beating(venv, beats),
            [local.model for local in weights],
            T,
            rings[0][0].B,
            device,
            generator=torch.Generator(device).manual_seed(seed),
            bootstrap_truncations=cfg.algo.value_bootstrap,
            opponent_envs=opponent_envs,
            pairing=UniformPairing(len(weights), seed + 2),
            agents_per_game=agents_per_game,
            buffers=[[ring[j] for j in free[p]] for p, ring in enumerate(rings)],
        )
        if opponent is not None:
            sampler.set_opponent(opponent)
        for p, vector in shaping.items():
            sampler.set_shaping(p, vector)
        _fill(
            index,
            sampler,
            rings,
            outstanding,
            weights,
            published,
            versions,
            lock,
            commands,
            results,
            beats,
            seed,
        )
    except BaseException:
        with contextlib.suppress(Exception):
            results.put(("error", index, traceback.format_exc()))
    finally:
        if venv is not None:
            with contextlib.suppress(Exception):
                venv.close()


def _fill(
    index: int,
    sampler: Any,
    rings: list[list[TrajectoryBuffer]],
    outstanding: int,
    weights: list[SharedWeights],
    published: list[ActorCritic],
    versions: torch.Tensor,
    lock: Any,
    commands: Any,
    results: Any,
    beats: torch.Tensor,
    seed: int,
) -> None:
    """Fills batches and sends them until ``stop``. At most ``outstanding`` of them are with
    the learner at once (the envs wait meanwhile), as one sampler waits while the learner's
    queue is full."""
    index_of = {id(b): j for ring in rings for j, b in enumerate(ring)}
    pending: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
    stopping = threading.Event()
    room = threading.Semaphore(outstanding)

    def receive() -> None:
        # Releases go straight to the sampler's columns, as the learner thread's do with one
        # sampler; everything else waits for the loop between batches.
        while not stopping.is_set():
            try:
                command = commands.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if command[0] == "release":
                sampler.release(rings[command[1]][command[2]])
                room.release()
            else:
                pending.put(command)
                if command[0] == "stop":
                    return

    threading.Thread(target=receive, daemon=True).start()
    sampler.start(seed=seed)
    while True:
        while not pending.empty():
            command = pending.get()
            if command[0] == "stop":
                stopping.set()
                return
            if command[0] == "opponent":
                sampler.set_opponent(command[1])
            elif command[0] == "shaping":
                sampler.set_shaping(command[1], command[2])
        if not room.acquire(timeout=POLL_S):
            beats += 1  # waiting for the learner is progress too
            continue
        _refresh(weights, published, versions, lock)
        rollout = sampler.collect([local.version for local in weights])
        statistics = {name: getattr(rollout, name) for name in _STATISTICS}
        restarts = getattr(sampler.venv, "worker_restarts", 0)
        j = index_of[id(rollout.buffer)]
        results.put(("rollout", index, os.getpid(), j, statistics, restarts))
