"""Frozen opponents: copies of past members kept as opponents, drawn by prioritized fictitious
self-play.

Members that only ever meet each other can chase each other in circles: each learns to beat
the others' current habits and forgets how to beat the old ones. Frozen opponents keep the
old ones in play. The trainer holds ``count`` extra policies that never learn (sf-train's
``freeze``), which start as copies of the members as they start; every ``interval`` frames
the oldest of them is overwritten by a copy of a live member (round robin over the members),
and a share ``share`` of the seats facing a member is given to a frozen opponent instead of
another member.

Which frozen opponent: uniform, or with ``pfsp`` by prioritized fictitious self-play
(AlphaStar, Vinyals et al. 2019): frozen opponent ``s`` is drawn for member ``m`` with weight ``(1 - p)^2``,
``p`` the member's smoothed win rate against ``s`` since ``s`` was taken, so opponents the
member still loses to come back most often and those it has mastered rarely.

Everything is plain numbers here (the population driver applies the decisions through the
trainer and keeps the league's records), so the choices can be tested without a trainer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

__all__ = [
    "FREEZE_EVENT",
    "FrozenConfig",
    "FrozenOpponents",
    "FrozenPairing",
    "pfsp_weights",
]


FREEZE_EVENT = "snapshot"
"""The kind of a stored event that filled a frozen slot (its policy) with a member (its
parent) in the member's generation at the event's frames. Stored as ``snapshot``, the word
the first league files used, so that they read the same."""


@dataclass
class FrozenConfig:
    """Frozen opponents of a population.

    Attributes:
        count: Frozen past members kept as opponents; 0: members only meet each other. None:
            as the resumed run was started (0 for a new run).
        interval: Env frames (all seats together) between two freezes (the oldest slot refilled).
        share: Chance that a seat facing a member goes to a frozen opponent.
        pfsp: Draw frozen opponents by prioritized fictitious self-play instead of uniformly.
    """

    count: int | None = None
    interval: int = 1_000_000
    share: float = 0.5
    pfsp: bool = False

    def problems(self) -> list[str]:
        """Every invalid setting, with the fix."""
        out = []
        if self.count is not None and self.count < 0:
            out.append(f"--snapshots {self.count}: use 0 (none) or more")
        if self.interval < 1:
            out.append(f"--snapshot-interval {self.interval}: use at least 1 frame")
        if not 0.0 <= self.share <= 1.0:
            out.append(f"--snapshot-share {self.share}: use a probability in [0, 1]")
        return out


def pfsp_weights(wins: np.ndarray, games: np.ndarray) -> np.ndarray:
    """PFSP's ``(1 - p)^2`` for win rates ``p = (wins + 1) / (games + 2)`` (a draw is half a
    win; the prior keeps an unplayed frozen opponent at ``p = 0.5``), normalised to sum to 1.

    Args:
        wins: A member's wins against each frozen opponent, ``[S]``.
        games: Its games against each, ``[S]``.
    """
    p = (np.asarray(wins, np.float64) + 1.0) / (np.asarray(games, np.float64) + 2.0)
    weights = (1.0 - p) ** 2
    return weights / weights.sum()


@dataclass
class _Slot:
    name: str | None  # the league player it is, None until filled
    wins: np.ndarray  # a member's wins against it (draws half), by member
    games: np.ndarray  # a member's games against it, by member


class FrozenOpponents:
    """Which frozen opponent each slot holds and how every member fares against it.

    Args:
        members: Live members (policies ``0 .. members - 1``).
        cfg: The frozen opponents' settings; slots are policies ``members .. members + count - 1``.
    """

    def __init__(self, members: int, cfg: FrozenConfig) -> None:
        self.members = members
        self.cfg = cfg
        self._count = cast(int, cfg.count)  # resolved by the population driver, never None
        self.slots = [self._empty() for _ in range(self._count)]
        self.taken = 0  # freezes so far: the next slot and member in turn

    def _empty(self, name: str | None = None) -> _Slot:
        return _Slot(name, np.zeros(self.members), np.zeros(self.members))

    def policy(self, slot: int) -> int:
        """The trainer policy of ``slot``."""
        return self.members + slot

    def next(self) -> tuple[int, int]:
        """``(slot, member)`` of the next freeze: the oldest slot, the next member."""
        return self.taken % self._count, self.taken % self.members

    def fill(self, slot: int, name: str) -> None:
        """Slot ``slot`` now holds the league player ``name``; its results start afresh."""
        self.slots[slot] = self._empty(name)
        self.taken += 1

    def slot_of(self, name: str) -> int | None:
        """The slot holding the league player ``name``, if any."""
        for k, slot in enumerate(self.slots):
            if slot.name == name:
                return k
        return None

    def record(self, member: int, slot: int, score: float) -> None:
        """A game of ``member`` against ``slot``'s frozen opponent: 1 won, 0.5 drawn, 0 lost."""
        self.slots[slot].wins[member] += score
        self.slots[slot].games[member] += 1

    def draw(self, member: int, rng: np.random.Generator) -> int:
        """A slot to face ``member`` (uniform, or by :func:`pfsp_weights`)."""
        if not self.cfg.pfsp:
            return int(rng.integers(len(self.slots)))
        weights = pfsp_weights(
            np.array([slot.wins[member] for slot in self.slots]),
            np.array([slot.games[member] for slot in self.slots]),
        )
        return int(rng.choice(len(self.slots), p=weights))


class FrozenPairing:
    """The trainer's pairing (``Trainer.set_pairing``): the first seat of a game is a member
    drawn uniformly; each other seat is a frozen opponent with chance ``share`` (drawn for that
    member by :meth:`FrozenOpponents.draw`), else a member drawn uniformly; then the seats are
    shuffled, so no policy always plays one side of a map.

    Args:
        frozen: The slots and their records (read at every draw).
        seed: Seed of the draws.
    """

    def __init__(self, frozen: FrozenOpponents, seed: int | None = None) -> None:
        self.frozen = frozen
        self._rng = np.random.default_rng(seed)

    def __call__(self, game: int, seats: int) -> Sequence[int]:
        pool, rng = self.frozen, self._rng
        first = int(rng.integers(pool.members))
        policies = [first]
        for _ in range(seats - 1):
            if pool.slots and rng.random() < pool.cfg.share:
                policies.append(pool.policy(pool.draw(first, rng)))
            else:
                policies.append(int(rng.integers(pool.members)))
        rng.shuffle(policies)
        return policies
