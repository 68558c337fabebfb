"""Reward shaping for matches: a weighted sum of per-step game events.

The true objective of a deathmatch is frags (and winning); shaping terms only help learning. So
the shaped reward is configurable, while the unshaped frag count and the win are always reported
in ``info`` next to it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from sf_envs.errors import OptionError

__all__ = ["EVENTS", "RENAMED_EVENTS", "RewardConfig", "current_event_names"]

log = logging.getLogger(__name__)

#: Per-step event counts every player reports, in the order of :meth:`RewardConfig.weights`.
#: The names are those of the match's stats (``info``, the game variables ``--shaping`` weighs,
#: the league's records) wherever the match keeps a stat of the event.
EVENTS: tuple[str, ...] = (
    "frags",
    "deaths",
    "hits",
    "damage_dealt",
    "damage_taken",
    "health",
    "armor",
    "weapon",
    "ammo",
)

#: Former spellings of match events (rewards before they took the stats' names), with the
#: current one: still read, with a :class:`DeprecationWarning`.
RENAMED_EVENTS: dict[str, str] = {
    "frag": "frags",
    "death": "deaths",
    "hit": "hits",
    "damage": "damage_dealt",
}


def current_event_names(names: Iterable[str], where: str) -> list[str]:
    """``names`` with every former spelling of :data:`RENAMED_EVENTS` replaced by the current
    one, warning (a :class:`DeprecationWarning` and a logged warning) for each one replaced.

    Args:
        names: Event or game-variable names as a user wrote them.
        where: What they came from, for the message (e.g. ``"algo.shaping"``).
    """
    out = []
    for name in names:
        new = RENAMED_EVENTS.get(name)
        if new is not None:
            message = f"{where}: {name!r} is now spelled {new!r}; the old name will be removed"
            warnings.warn(message, DeprecationWarning, stacklevel=3)
            log.warning(message)
        out.append(new or name)
    return out


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the events that make up an agent's reward each step.

    Attributes:
        frags: Per frag (a suicide counts -1 frag, as on the scoreboard).
        deaths: Per death (suicides included); usually negative.
        hits: Per hit landed on another player.
        damage_dealt: Per point of damage dealt.
        damage_taken: Per point of damage taken; usually negative.
        health: Per point of health picked up (respawning does not count).
        armor: Per point of armor picked up.
        weapon: Per new weapon picked up.
        ammo: Per unit of ammunition picked up.

    The default rewards frags only: the unshaped objective. :meth:`shaped` is a denser preset.
    """

    frags: float = 1.0
    deaths: float = 0.0
    hits: float = 0.0
    damage_dealt: float = 0.0
    damage_taken: float = 0.0
    health: float = 0.0
    armor: float = 0.0
    weapon: float = 0.0
    ammo: float = 0.0

    @classmethod
    def shaped(cls) -> RewardConfig:
        """Small pickup and damage terms on top of frags, in the spirit of sample-factory's."""
        return cls(
            frags=1.0,
            deaths=-0.5,
            damage_dealt=0.01,
            damage_taken=-0.003,
            health=0.005,
            armor=0.005,
            weapon=0.05,
            ammo=0.001,
        )

    @classmethod
    def create(cls, value: RewardConfig | dict[str, Any] | str | None) -> RewardConfig:
        """Accepts a config, a dict of weights, ``"frags"`` or ``"shaped"``. A dict's former
        spellings of events (:data:`RENAMED_EVENTS`) are read with a deprecation warning.

        Raises:
            ValueError: naming the unknown keys or preset and the valid ones.
        """
        if value is None or value == "frags":
            return cls()
        if value == "shaped":
            return cls.shaped()
        if isinstance(value, RewardConfig):
            return value
        if isinstance(value, dict):
            value = dict(zip(current_event_names(value, "rewards"), value.values(), strict=True))
            unknown = sorted(set(value) - set(EVENTS))
            if unknown:
                raise OptionError(
                    f"unknown reward terms {unknown}; valid terms: {', '.join(EVENTS)}"
                )
            bad = [k for k, v in value.items() if not isinstance(v, (int, float))]
            if bad:
                raise OptionError(f"reward weights must be numbers; check {bad}")
            return cls(**{k: float(v) for k, v in value.items()})
        raise OptionError(
            f"rewards must be a RewardConfig, a dict of weights, 'frags' or 'shaped'; got {value!r}"
        )

    def weights(self) -> np.ndarray:
        """The weights as a float64 vector in :data:`EVENTS` order."""
        return np.array([getattr(self, f.name) for f in fields(self)], dtype=np.float64)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)
