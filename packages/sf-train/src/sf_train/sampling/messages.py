"""The messages between a :class:`~sf_train.sampling.pool.SamplerPool` and its sampler
processes (:mod:`sf_train.sampling.process`), one dataclass each, never a bare tuple.

A process is started with :class:`SamplerArgs`. It reports its envs once (:class:`Ready`), is
given the weights and its trajectory batches (:class:`Attach`), then reports each complete
batch by its place in its ring with what happened while it was filled (:class:`BatchFilled`)
and gets it back once learned (:class:`Release`); settings (:class:`SetOpponent`,
:class:`SetShaping`) and :class:`Stop` come the same way, and a failure goes back as
:class:`Failed` with its traceback.

Messages are per trajectory batch or rarer, never per step; the batches themselves stay in
shared memory and only their places travel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from sf_train.sampling.batch import CollectResult, Episodes, TrajectoryBatch

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from gymnasium import spaces

    from sf_train.config.schema import Config
    from sf_train.model.network import ActorCritic

__all__ = [
    "Attach",
    "BatchFilled",
    "Command",
    "Failed",
    "Ready",
    "Release",
    "Report",
    "SamplerArgs",
    "SetOpponent",
    "SetShaping",
    "Stop",
]


@dataclass(slots=True)
class SamplerArgs:
    """What a sampler process is started with (pickled once, by the ``spawn`` start).

    Attributes:
        index: The process's place in its pool (its envs are the pool's ``index``-th share).
        cfg: The run's configuration with ``env`` cut to this process's share.
        opponent_envs: This process's rows played by the frozen opponent (local env ids).
        agents_per_game: Rows of one game.
        commands: The queue of this process's :data:`Command` messages.
        results: The write end of this process's pipe of :data:`Report` messages.
        beats: A shared counter the process advances while it makes progress.
        parent: The trainer's process id; the process ends when its parent is gone.
    """

    index: int
    cfg: Config
    opponent_envs: np.ndarray
    agents_per_game: int
    commands: Any
    results: Connection
    beats: torch.Tensor
    parent: int


# -- process -> trainer ----------------------------------------------------------------------


@dataclass(slots=True)
class Ready:
    """The process built its envs: their spaces and game-variable names."""

    sampler: int
    pid: int
    observation_space: spaces.Space
    action_space: spaces.Space
    variable_names: tuple[str, ...]


@dataclass(slots=True)
class BatchFilled:
    """A trajectory batch is complete: its place (``policy``'s ring, ``index`` in it) and
    what :class:`~sf_train.sampling.batch.CollectResult` says besides the batch.

    Attributes:
        sampler: The process's index.
        pid: The process's id (a report of a process since restarted is ignored).
        policy: The policy whose ring holds the batch.
        index: The batch's place in that ring.
        episodes: The episodes that ended meanwhile (local env ids).
        env_steps: As :attr:`CollectResult.env_steps`.
        dropped_steps: As :attr:`CollectResult.dropped_steps`.
        policy_steps: As :attr:`CollectResult.policy_steps`.
        worker_restarts: The process's engine's worker restarts so far.
    """

    sampler: int
    pid: int
    policy: int
    index: int
    episodes: Episodes
    env_steps: int
    dropped_steps: int
    policy_steps: np.ndarray
    worker_restarts: int

    def result(self, batch: TrajectoryBatch, first_env: int) -> CollectResult:
        """The trainer's :class:`CollectResult` of ``batch`` (this message's batch, in shared
        memory), its env ids counted from ``first_env``, the process's first env."""
        return CollectResult(
            batch,
            self.episodes.shifted(first_env),
            self.env_steps,
            self.dropped_steps,
            self.policy_steps,
        )


@dataclass(slots=True)
class Failed:
    """The process failed; ``traceback`` says where."""

    sampler: int
    traceback: str


Report = Ready | BatchFilled | Failed
"""What a sampler process sends its trainer."""


# -- trainer -> process ----------------------------------------------------------------------


@dataclass(slots=True)
class Attach:
    """The weights and trajectory batches a process acts with and fills.

    Attributes:
        rings: Every policy's ring of trajectory batches of this process (shared memory).
        free: For each policy, the places in its ring of the batches the learner does not hold.
        outstanding: Batches the process may have with the learner at once from now on.
        published: Every policy's published float32 weights (shared memory).
        versions: Every policy's published version (shared memory).
        sequences: Every policy's publication sequence number, odd while it is written
            (shared memory; see :class:`~sf_train.sampling.pool.ProcessWeights`).
        T: Trajectory length.
        seed: Seed of the process's envs, actions and pairing.
        opponent: The frozen opponent's weights (None: no opponent, or none set yet).
        shaping: Shaping weights set so far, by policy.
    """

    rings: list[list[TrajectoryBatch]]
    free: list[list[int]]
    outstanding: int
    published: list[ActorCritic]
    versions: torch.Tensor
    sequences: torch.Tensor
    T: int
    seed: int
    opponent: dict[str, Any] | None
    shaping: dict[int, np.ndarray | None]


@dataclass(slots=True)
class Release:
    """The learner is done with the batch at ``index`` of ``policy``'s ring."""

    policy: int
    index: int


@dataclass(slots=True)
class SetOpponent:
    """Load these weights into the frozen opponent."""

    state_dict: dict[str, Any]


@dataclass(slots=True)
class SetShaping:
    """Set ``policy``'s shaping weights (None: no shaping)."""

    policy: int
    weights: np.ndarray | None


@dataclass(slots=True)
class Stop:
    """Close the envs and end."""


Command = Attach | Release | SetOpponent | SetShaping | Stop
"""What a trainer sends a sampler process."""
