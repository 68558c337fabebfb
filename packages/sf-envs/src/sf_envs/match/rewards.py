"""Reward shaping for matches: a weighted sum of per-step game events.

The true objective of a deathmatch is frags (and winning); shaping terms only help learning. So
the shaped reward is configurable, while the unshaped frag count and the win are always reported
in ``info`` next to it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from sf_envs.errors import OptionError

__all__ = ["EVENTS", "RewardConfig"]

#: Per-step event counts every player reports, in this order, to :meth:`RewardConfig.reward`.
EVENTS: tuple[str, ...] = (
    "frag",
    "death",
    "hit",
    "damage",
    "damage_taken",
    "health",
    "armor",
    "weapon",
    "ammo",
)


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the events that make up an agent's reward each step.

    Attributes:
        frag: Per frag (a suicide counts -1 frag, as on the scoreboard).
        death: Per death (suicides included); usually negative.
        hit: Per hit landed on another player.
        damage: Per point of damage dealt.
        damage_taken: Per point of damage taken; usually negative.
        health: Per point of health picked up (respawning does not count).
        armor: Per point of armor picked up.
        weapon: Per new weapon picked up.
        ammo: Per unit of ammunition picked up.

    The default rewards frags only: the unshaped objective. :meth:`shaped` is a denser preset.
    """

    frag: float = 1.0
    death: float = 0.0
    hit: float = 0.0
    damage: float = 0.0
    damage_taken: float = 0.0
    health: float = 0.0
    armor: float = 0.0
    weapon: float = 0.0
    ammo: float = 0.0

    @classmethod
    def shaped(cls) -> RewardConfig:
        """Small pickup and damage terms on top of frags, in the spirit of sample-factory's."""
        return cls(
            frag=1.0,
            death=-0.5,
            damage=0.01,
            damage_taken=-0.003,
            health=0.005,
            armor=0.005,
            weapon=0.05,
            ammo=0.001,
        )

    @classmethod
    def create(cls, value: RewardConfig | dict[str, Any] | str | None) -> RewardConfig:
        """Accepts a config, a dict of weights, ``"frags"`` or ``"shaped"``.

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
