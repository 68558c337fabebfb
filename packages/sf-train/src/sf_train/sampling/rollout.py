"""What the sampler drives and what it hands out: the vector env's faces it relies on, the
weights it acts with (:data:`PolicySource`), who plays each game (:data:`Pairing`) and a
finished batch (:class:`Rollout`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces

from sf_train.sampling.buffer import TrajectoryBuffer

__all__ = [
    "AsyncVectorEnv",
    "Pairing",
    "PolicySource",
    "RestartingEnv",
    "Rollout",
    "StatefulEnv",
    "UniformPairing",
]


class AsyncVectorEnv(Protocol):
    """The EnvPool-style face of the sf-envs engine that the sampler needs."""

    num_envs: int
    batch_size: int
    single_observation_space: spaces.Space
    single_action_space: spaces.Space

    def async_reset(self, seed: int | None = None) -> None: ...

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]: ...

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class StatefulEnv(Protocol):
    """A vector env that can save and restore everything that decides its future steps; the
    trainer checkpoints it in synchronous mode, so a resumed run continues bit for bit."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class RestartingEnv(Protocol):
    """A vector env that replaces failed workers and counts it (the sf-envs engine does); the
    trainer logs each restart and keeps the count in TensorBoard."""

    @property
    def worker_restarts(self) -> int: ...


PolicySource = Callable[[], AbstractContextManager[int]]
"""Weights that another thread may update: calling it gives a context manager that keeps the
sampler's model fixed while it is held and yields the version of those weights."""

Pairing = Callable[[int, int], Sequence[int]]
"""Chooses who plays a game's next episode: called with the game's index and its number of
seats (agents), it returns one policy index per seat. Matchmaking (a league choosing who meets
whom) plugs in here."""


class UniformPairing:
    """Every seat of every episode goes to a policy drawn uniformly, independently.

    Args:
        num_policies: Policies to draw from.
        seed: Seed of the draws.
    """

    def __init__(self, num_policies: int, seed: int | None = None) -> None:
        self.num_policies = num_policies
        self._rng = np.random.default_rng(seed)

    def __call__(self, game: int, seats: int) -> Sequence[int]:
        return self._rng.integers(self.num_policies, size=seats).tolist()


@dataclass
class Rollout:
    """A complete batch and what happened while it was sampled.

    Attributes:
        buffer: The ``[T, B]`` trajectories; give it back with :meth:`Sampler.release`.
        episode_returns: Returns of the episodes that ended since the previous rollout.
        episode_lengths: Their lengths in agent steps.
        episode_env_ids: The env each of them ended in.
        env_steps: Steps of the learning agents (every env that is not an opponent's) since
            the previous rollout.
        episode_variables: The envs' game variables at each episode end, ``[episodes, V]``
            (from ``info["final_info"]["variables"]``); ``None`` when the env reports none.
        dropped_steps: Learning-agent steps discarded since the previous rollout because of a
            fault (see the module docstring); ``env_steps`` does not count them.
        policy: The policy whose trajectories ``buffer`` holds.
        episode_policies: The policy that played each ended episode.
        episode_versions: That policy's version at the episode's last action.
        episode_shaping: The shaping reward each episode earned on top of its return (0
            without shaping weights; see :meth:`Sampler.set_shaping`).
        policy_steps: ``env_steps`` by policy, ``[num_policies]``.
    """

    buffer: TrajectoryBuffer
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    episode_env_ids: np.ndarray
    env_steps: int
    episode_variables: np.ndarray | None = None
    dropped_steps: int = 0
    policy: int = 0
    episode_policies: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    episode_versions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    episode_shaping: np.ndarray = field(default_factory=lambda: np.zeros(0))
    policy_steps: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
