"""Inside a sampler process (see :mod:`sf_train.sampling.pool`): its envs, its acting copies
and a :class:`~sf_train.sampling.sampler.Sampler` over the shared trajectory batches its trainer
allocated.

The process hears from its trainer on a queue and reports on a pipe of its own, in the messages of
:mod:`sf_train.sampling.messages`: it reports its envs' spaces once (``Ready``), is given the
weights and its batches (``Attach``), then reports each complete batch by its place in its ring
with what happened while it was filled (``BatchFilled``) and gets it back (``Release``) once
learned; settings (``SetOpponent``, ``SetShaping``) and ``Stop`` come the same way. Failures
are sent as ``Failed`` with their traceback.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
import traceback
from typing import Any

import torch

from sf_train.config.schema import Config
from sf_train.model.device import resolve_device
from sf_train.model.network import ActorCritic
from sf_train.run.members import SharedWeights
from sf_train.sampling.messages import (
    Attach,
    BatchFilled,
    Command,
    Failed,
    Ready,
    Release,
    SamplerArgs,
    SetOpponent,
    SetShaping,
    Stop,
)
from sf_train.sampling.protocols import UniformPairing
from sf_train.sampling.sampler import Sampler

__all__ = ["POLL_S", "copy_published", "sampler_main"]

POLL_S = 0.2
"""Seconds between checks of every wait on the other side (stop, progress, a parent gone)."""
PUBLISH_WAIT_S = 0.001
"""Seconds between looks at weights that the learner is publishing (a copy takes about as long)."""


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


def copy_published(
    weights: list[SharedWeights],
    published: list[ActorCritic],
    versions: torch.Tensor,
    sequences: torch.Tensor,
) -> None:
    """Copies in every policy whose published version is not this process's, without a lock:
    a copy made while the policy's sequence number was odd (being written) or that changed
    during the copy is made again (see :class:`~sf_train.sampling.pool.ProcessWeights`)."""
    for p, local in enumerate(weights):
        while int(versions[p]) != local.version:
            before = int(sequences[p])
            if before % 2:
                time.sleep(PUBLISH_WAIT_S)
                continue
            local.publish(published[p], int(versions[p]))
            if int(sequences[p]) != before:
                local.version = -1  # torn by a publication: copy again


def sampler_main(args: SamplerArgs) -> None:
    """A sampler process: builds its envs, reports them, then fills batches until told to stop."""
    from sf_train.envs import game_variable_names, make_env

    # A terminal's Ctrl-C reaches the whole process group; the trainer ends its run on it and
    # then stops this process, which must fill batches until told (or until the trainer dies).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    cfg = args.cfg
    venv = None
    try:
        venv = make_env(cfg.env)
        threading.Thread(target=_watch_parent, args=(args.parent, venv), daemon=True).start()
        args.results.send(
            Ready(
                args.index,
                os.getpid(),
                venv.single_observation_space,
                venv.single_action_space,
                game_variable_names(venv),
            )
        )
        attach: Command = args.commands.get()
        if not isinstance(attach, Attach):  # Stop before it started
            return
        device = resolve_device(cfg.run.device)
        weights = _acting_copies(cfg, venv, attach.published)
        copy_published(weights, attach.published, attach.versions, attach.sequences)
        for local in weights:
            local.model.to(device)
        sampler = Sampler(
            _Beating(venv, args.beats),
            [local.model for local in weights],
            attach.T,
            attach.rings[0][0].B,
            device,
            generator=torch.Generator(device).manual_seed(attach.seed),
            bootstrap_truncations=cfg.algo.value_bootstrap,
            life_loss_ends=cfg.algo.life_loss_ends,
            opponent_envs=args.opponent_envs,
            pairing=UniformPairing(len(weights), attach.seed + 2),
            agents_per_game=args.agents_per_game,
            batches=[[ring[j] for j in attach.free[p]] for p, ring in enumerate(attach.rings)],
        )
        if attach.opponent is not None:
            sampler.set_opponent(attach.opponent)
        for p, vector in attach.shaping.items():
            sampler.set_shaping(p, vector)
        _fill(args, attach, sampler, weights)
    except BaseException:
        with contextlib.suppress(Exception):
            args.results.send(Failed(args.index, traceback.format_exc()))
    finally:
        if venv is not None:
            with contextlib.suppress(Exception):
                venv.close()


def _fill(
    args: SamplerArgs, attach: Attach, sampler: Sampler, weights: list[SharedWeights]
) -> None:
    """Fills batches and reports them until ``Stop``. At most ``attach.outstanding`` of them
    are with the learner at once (the envs wait meanwhile), as one sampler waits while the
    learner's queue is full."""
    rings = attach.rings
    index_of = {id(b): j for ring in rings for j, b in enumerate(ring)}
    pending: queue.SimpleQueue[Command] = queue.SimpleQueue()
    stopping = threading.Event()
    room = threading.Semaphore(attach.outstanding)

    def receive() -> None:
        # Releases go straight to the sampler's columns, as the learner thread's do with one
        # sampler; everything else waits for the loop between batches.
        while not stopping.is_set():
            try:
                command = args.commands.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if isinstance(command, Release):
                sampler.release(rings[command.policy][command.index])
                room.release()
            else:
                pending.put(command)
                if isinstance(command, Stop):
                    return

    threading.Thread(target=receive, daemon=True).start()
    sampler.start(seed=attach.seed)
    pid = os.getpid()
    while True:
        while not pending.empty():
            command = pending.get()
            if isinstance(command, Stop):
                stopping.set()
                return
            if isinstance(command, SetOpponent):
                sampler.set_opponent(command.state_dict)
            elif isinstance(command, SetShaping):
                sampler.set_shaping(command.policy, command.weights)
        if not room.acquire(timeout=POLL_S):
            args.beats += 1  # waiting for the learner is progress too
            continue
        copy_published(weights, attach.published, attach.versions, attach.sequences)
        collected = sampler.collect([local.version for local in weights])
        args.results.send(
            BatchFilled(
                args.index,
                pid,
                collected.policy,
                index_of[id(collected.batch)],
                collected.episodes,
                collected.env_steps,
                collected.dropped_steps,
                collected.policy_steps,
                getattr(sampler.venv, "worker_restarts", 0),
            )
        )
