"""What the sampler relies on: the vector env's faces it drives (:class:`AsyncVectorEnv`, and
what a trainer may ask of it beyond: :class:`StatefulEnv`, :class:`RestartingEnv`), the weights
it acts with (:data:`PolicySource`) and who plays each game (:data:`Pairing`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces

__all__ = [
    "AsyncVectorEnv",
    "Pairing",
    "PolicySource",
    "RestartingEnv",
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
