"""Scripted bots at named skill levels, written as the bots file a match host loads.

ViZDoom's bots read their parameters from a text file (``+viz_bots_path``); ``addbot NAME`` picks
the entry called NAME. A match writes its own file with one uniquely named entry per bot, so each
bot's identity and level are known and reported, and parallel matches never share a file.

The engine's parameters are not a skill dial by themselves (``perfection`` is unused, ``aiming``
only affects hitscan weapons, and on rocket maps a *low* ``isp`` frags more), so levels must be
calibrated by measurement: ``benchmarks/bot_levels.py`` plays each level against a random agent.
Its first run (16 one-minute games per level and map) could NOT tell any two levels apart on
multi_duel, cig_map01 or cig_map02: every level scored -0.1 to +0.25 bot frags per minute, within
two standard errors of its neighbours. The ladder below is therefore ordered by the engine's
parameters only, not yet by measured strength; a stronger reference opponent than a random agent
(or handicaps) is needed to separate the levels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BOT_LEVELS", "BotLevel", "BotSpec", "bot_specs", "write_bots_file"]


@dataclass(frozen=True)
class BotLevel:
    """Engine parameters of one skill level (0-100 each, as in ViZDoom's ``bots.cfg``).

    Attributes:
        level: 1 (weakest) to 5 (strongest).
        aiming: Aim accuracy; only matters with hitscan weapons.
        reaction: How fast the bot reacts to an enemy in sight.
        isp: "Intelligence" in the engine's naming; low values charge, high values hang back.
        weaponpref: Weapon preference order (digits, most preferred first), or None for the
            engine default. A handicap lever: weak bots prefer weak weapons.
    """

    level: int
    aiming: int
    reaction: int
    isp: int
    weaponpref: str | None = None

    def entry(self, name: str, color: str) -> str:
        """This level as one bots-file entry called ``name``."""
        lines = [
            "{",
            f"    name        {name}",
            f"    aiming      {self.aiming}",
            # The engine ignores perfection; written only because the file format expects it.
            f"    perfection  {self.aiming}",
            f"    reaction    {self.reaction}",
            f"    isp         {self.isp}",
            f'    color       "{color}"',
            "    skin        base",
        ]
        if self.weaponpref is not None:
            lines.append(f"    weaponpref  {self.weaponpref}")
        lines.append("}")
        return "\n".join(lines) + "\n"


#: The shipped ladder, weakest first.
BOT_LEVELS: dict[int, BotLevel] = {
    b.level: b
    for b in (
        BotLevel(1, aiming=10, reaction=10, isp=90, weaponpref="012345678"),
        BotLevel(2, aiming=30, reaction=30, isp=70),
        BotLevel(3, aiming=50, reaction=50, isp=50),
        BotLevel(4, aiming=75, reaction=75, isp=30),
        BotLevel(5, aiming=100, reaction=100, isp=10),
    )
}

_COLORS = ("cf 40 00", "00 80 ff", "40 cf 00", "ff ff 00", "b0 b0 b0", "a0 00 c0", "00 c0 c0")


@dataclass(frozen=True)
class BotSpec:
    """One bot of a match: its in-game name (unique within the match) and skill level."""

    name: str
    level: int


def bot_specs(levels: Sequence[int]) -> list[BotSpec]:
    """Names one bot per entry of ``levels``: ``bot1_L3`` is the first bot, at level 3."""
    return [BotSpec(f"bot{i + 1}_L{level}", level) for i, level in enumerate(levels)]


def write_bots_file(path: str | os.PathLike[str], bots: Sequence[BotSpec]) -> str:
    """Writes the bots file for ``bots`` to ``path`` and returns its absolute path.

    The engine silently falls back to its own ``bots.cfg`` when the file is missing, so the
    caller passes the absolute path returned here.
    """
    path = os.path.abspath(path)
    with open(path, "w", encoding="ascii") as f:
        for i, bot in enumerate(bots):
            f.write(BOT_LEVELS[bot.level].entry(bot.name, _COLORS[i % len(_COLORS)]))
    return path
