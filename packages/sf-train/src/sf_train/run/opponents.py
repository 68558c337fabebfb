"""Self-play opponents: which rows of a match env the opponents play, and the pool of past
policies they play with (frozen copies added every ``opponent_snapshot_every`` policy versions)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from sf_train.config.schema import AlgoConfig, Config, ConfigError
from sf_train.envs import agents_per_game

__all__ = ["OpponentPool", "opponent_envs_of"]


def opponent_envs_of(cfg: Config) -> np.ndarray:
    """Envs (rows) played by the opponent pool: every agent but the first of each game."""
    if not cfg.algo.opponent_pool:
        return np.zeros(0, dtype=np.int64)
    agents = agents_per_game(cfg.env)
    if agents == 1:
        raise ConfigError(
            [
                f"algo.opponent_pool={cfg.algo.opponent_pool} needs an env of several learning "
                f"agents per game (self-play: sf/DoomDuel-v0), not {cfg.env.env}; drop "
                "--opponent-pool"
            ]
        )
    return np.flatnonzero(np.arange(cfg.env.num_envs) % agents != 0)


class OpponentPool:
    """The last ``opponent_pool`` frozen copies of the policy, with their policy versions."""

    def __init__(self, cfg: AlgoConfig, seed: int) -> None:
        self.every = cfg.opponent_snapshot_every
        self._frozen: collections.deque[tuple[int, dict[str, Any]]] = collections.deque(
            maxlen=cfg.opponent_pool
        )
        self._next = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self._frozen)

    def due(self, version: int) -> bool:
        return version >= self._next

    def add_and_draw(self, version: int, weights: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self._frozen.append((version, weights))
        self._next = (version // self.every + 1) * self.every
        return self._frozen[int(self._rng.integers(len(self._frozen)))]
