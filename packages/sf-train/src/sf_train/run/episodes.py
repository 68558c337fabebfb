"""Training-time episode statistics defined as the evaluator defines them.

Many envs finish episodes in parallel. :class:`EpisodeWindow` keeps every env's own last
``per_env`` values (returns, or lengths) and averages over envs of each env's mean, so each env
weighs the same whatever the lengths of its episodes, as in ``sf-train eval``. The last N
episodes *to finish* weigh an env by how often it finishes; that is the same thing while every
env draws its episodes alike, and not when envs differ (maps, bot skills, opponents). Nothing is
reported until every env has ended an episode: before that, only the short ones could have ended.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["EpisodeWindow"]


class EpisodeWindow:
    """A value (return, length) of the last ``per_env`` episodes of each env, and their
    unbiased mean.

    Args:
        env_ids: The envs whose episodes count (the learning agents' rows).
        window: Episodes the mean should cover in all; each env keeps
            ``ceil(window / len(env_ids))`` of its own.

    Example:
        >>> r = EpisodeWindow([0, 1], window=4)
        >>> r.add([0, 0, 0], [1.0, 1.0, 1.0])  # env 0 ends three short episodes
        >>> r.mean() is None  # env 1 is still in its first, long episode
        True
        >>> r.add([1], [9.0])
        >>> r.mean()  # (mean(1, 1) + mean(9)) / 2, not mean(1, 1, 1, 9)
        5.0
    """

    def __init__(self, env_ids: Iterable[int], window: int = 100) -> None:
        ids = [int(e) for e in env_ids]
        if not ids:
            raise ValueError("EpisodeWindow needs at least one env id")
        if window < 1:
            raise ValueError(f"window={window}: keep at least one episode")
        self.per_env = math.ceil(window / len(ids))
        self._values: dict[int, deque[float]] = {e: deque(maxlen=self.per_env) for e in ids}

    def add(self, env_ids: Iterable[int], values: Iterable[float]) -> None:
        """Records the values of episodes that ended, each with the env it ended in."""
        for e, r in zip(env_ids, values, strict=True):
            self._values[int(e)].append(float(r))

    @property
    def ready(self) -> bool:
        """True once every env has ended at least one episode."""
        return all(self._values.values())

    def mean(self) -> float | None:
        """Mean over envs of each env's mean, or None until :attr:`ready`."""
        if not self.ready:
            return None
        return float(np.mean([np.mean(r) for r in self._values.values()]))

    def state_dict(self) -> dict[str, Any]:
        """The kept values by env, for checkpoints."""
        return {"per_env": self.per_env, "values": {e: list(r) for e, r in self._values.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`; envs this run does not have are ignored."""
        for e, values in state["values"].items():
            if int(e) in self._values:
                self._values[int(e)].extend(float(v) for v in values)
