"""What a population of policies in one trainer reports, and what may be changed in it.

A league (sf-league's population training) steers a running :class:`~sf_train.run.trainer.Trainer`
through a small API: it reads each policy's statistics and the matches played since it last
asked, sets a policy's hyperparameters and shaping weights, copies one policy over another
(exploit) and chooses who meets whom (:data:`~sf_train.sampling.protocols.Pairing`). The calls
are :class:`~sf_train.run.steering.SteerableTrainer`; this module holds the data they exchange.
sf-train knows nothing of leagues.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HYPERPARAMETERS", "MatchBook", "MatchRecord", "PolicyStats", "true_objective"]

HYPERPARAMETERS = (
    "learning_rate",
    "entropy_coef",
    "value_coef",
    "clip_ratio",
    "max_grad_norm",
    "gamma",
)
"""The :class:`~sf_train.config.schema.AlgoConfig` fields a policy of a population may change while it
trains (:meth:`~sf_train.run.trainer.Trainer.set_hyperparameters`)."""


def true_objective(variables: dict[str, float]) -> float | None:
    """Frags minus deaths, the objective of a deathmatch whatever the shaping; None for an env
    that reports no frags and deaths."""
    if "frags" not in variables or "deaths" not in variables:
        return None
    return float(variables["frags"] - variables["deaths"])


@dataclass
class PolicyStats:
    """One policy's activity since the previous :meth:`~sf_train.run.trainer.Trainer.take_stats`.

    Attributes:
        policy: The policy's index.
        frames: Env frames it played in that time.
        total_frames: Env frames it played in the whole run.
        episodes: Episodes it ended in that time.
        mean_return: Its mean return over the last episodes of every env, an equal share each
            (:class:`~sf_train.run.episodes.EpisodeWindow`); None until every env ended one with it.
        mean_shaping: Mean shaping reward per episode ended in that time (None: no episodes).
        mean_objective: Mean frags minus deaths per episode ended in that time (None: no
            episodes, or an env without frags).
        version: Its policy version (optimiser steps) now.
        entropy: Its policy's mean entropy in its last training step (None before one).
    """

    policy: int
    frames: int
    total_frames: int
    episodes: int
    mean_return: float | None
    mean_shaping: float | None
    mean_objective: float | None
    version: int
    entropy: float | None


@dataclass
class MatchRecord:
    """One episode of one game, with the policy that played each seat.

    Attributes:
        game: The game's index in the vector env.
        policies: The policy of each seat.
        versions: Each seat's policy version at its last action.
        returns: Each seat's return (the env's reward, without shaping).
        variables: Each seat's game variables at the episode's end, by name.
    """

    game: int
    policies: tuple[int, ...]
    versions: tuple[int, ...]
    returns: tuple[float, ...]
    variables: tuple[dict[str, float], ...]


@dataclass
class MatchBook:
    """Puts the seats of each game's episodes back together as they end.

    The vector env reports every seat's episode end as a row of its own; the seats of one game
    end on the same step but may come in different batches.

    Args:
        agents: Seats per game (rows ``game * agents`` to ``game * agents + agents - 1``).
        variable_names: Names of the game-variable columns.
    """

    agents: int
    variable_names: tuple[str, ...]
    _pending: dict[int, dict[int, tuple[int, int, float, dict[str, float]]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    _done: list[MatchRecord] = field(default_factory=list)

    def add(
        self,
        env_ids: np.ndarray,
        policies: np.ndarray,
        versions: np.ndarray,
        returns: np.ndarray,
        variables: np.ndarray | None,
    ) -> None:
        """Records ended episodes (one row each, as in
        :class:`~sf_train.sampling.batch.Episodes`)."""
        for i, env in enumerate(env_ids.tolist()):
            game, seat = divmod(env, self.agents)
            named = (
                {}
                if variables is None
                else dict(zip(self.variable_names, variables[i].tolist(), strict=True))
            )
            seats = self._pending[game]
            seats[seat] = (int(policies[i]), int(versions[i]), float(returns[i]), named)
            if len(seats) == self.agents:
                ordered = [seats[s] for s in range(self.agents)]
                self._done.append(
                    MatchRecord(game, *(tuple(x) for x in zip(*ordered, strict=True)))
                )
                del self._pending[game]

    def take(self) -> list[MatchRecord]:
        """The matches completed since the previous call."""
        done, self._done = self._done, []
        return done
