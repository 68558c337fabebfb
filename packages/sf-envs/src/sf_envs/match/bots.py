"""Scripted bots at measured skill levels, written as the bots file a match host loads.

ViZDoom's bots read their parameters from a text file (``+viz_bots_path``); ``addbot NAME`` picks
the entry called NAME. A match writes its own file with one uniquely named entry per bot, so each
bot's identity and level are known and reported, and parallel matches never share a file.

The engine's parameters are not a skill dial by themselves, so every level here was calibrated by
``benchmarks/bot_levels.py``: one bot against a fixed reference, an agent that picks uniformly
random actions from the map's action set, scored in bot frags per minute. Measured (mean ±
standard error, 100 one-minute games per setting, 2 processes):

* multi_duel (rockets only): only ``isp`` mattered. isp 100: 2.93 ± 0.14, 75: 2.61 ± 0.14,
  50: 3.38 ± 0.14, 25: 3.47 ± 0.14, 0: 3.42 ± 0.13. ``aiming`` and ``reaction`` at 0 or 100 and
  ``weaponpref`` (not one of the engine's bot keys) changed nothing beyond noise. So the map has
  TWO distinguishable levels: 1 (isp 100, hangs back) and 2 (isp 0, charges). The shipped
  ladder, rerun by the benchmark: level 1 2.77 ± 0.15, level 2 3.29 ± 0.14 bot frags/min
  (difference +0.52 ± 0.21, n = 100 each).
* cig_map01, cig_map02 (and freedoom2_map01, by the same kind of open layout): one bot alone with
  the reference rarely even meets it: 0.0-0.1 bot frags per minute for every setting tried (isp,
  aiming, reaction at 0 and 100; 20 two-minute games each). No parameter separates levels, so
  these maps have ONE level.

So levels are per map (:data:`BOT_LADDERS`); asking for a level a map does not have is an error
that names the levels it has. Before this calibration, multi_duel agents could walk forward into
the map's instant-death floor, which hid the bots' strength entirely (see
:class:`~sf_envs.match.maps.MatchMap`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BOT_LADDERS", "BotLevel", "BotSpec", "bot_ladder", "bot_specs", "write_bots_file"]


@dataclass(frozen=True)
class BotLevel:
    """Engine parameters of one skill level (0-100 each, as in ViZDoom's ``bots.cfg``).

    Attributes:
        level: 1 (weakest) up to the map's number of levels.
        isp: "Intelligence" in the engine's naming; low values charge, high values hang back.
            The only parameter measured to matter (on rocket maps, low isp frags more).
        aiming: Aim accuracy; the engine uses it for hitscan weapons only.
        reaction: How fast the bot reacts to an enemy in sight.
    """

    level: int
    isp: int
    aiming: int = 100
    reaction: int = 100

    def entry(self, name: str, color: str) -> str:
        """This level as one bots-file entry called ``name``."""
        return "\n".join(
            (
                "{",
                f"    name        {name}",
                f"    aiming      {self.aiming}",
                # The engine ignores perfection; written only because the file format expects it.
                f"    perfection  {self.aiming}",
                f"    reaction    {self.reaction}",
                f"    isp         {self.isp}",
                f'    color       "{color}"',
                "    skin        base",
                "}",
                "",
            )
        )


#: Measured skill ladders per map, weakest first (see the module docstring for the numbers).
BOT_LADDERS: dict[str, tuple[BotLevel, ...]] = {
    "multi_duel": (BotLevel(1, isp=100), BotLevel(2, isp=0)),
    "cig_map01": (BotLevel(1, isp=0),),
    "cig_map02": (BotLevel(1, isp=0),),
    "freedoom2_map01": (BotLevel(1, isp=0),),
}

_COLORS = ("cf 40 00", "00 80 ff", "40 cf 00", "ff ff 00", "b0 b0 b0", "a0 00 c0", "00 c0 c0")


def bot_ladder(map_name: str) -> dict[int, BotLevel]:
    """The skill levels measured distinguishable on ``map_name``, by level number."""
    return {b.level: b for b in BOT_LADDERS[map_name]}


@dataclass(frozen=True)
class BotSpec:
    """One bot of a match: its in-game name (unique within the match) and skill level."""

    name: str
    level: int


def bot_specs(levels: Sequence[int]) -> list[BotSpec]:
    """Names one bot per entry of ``levels``: ``bot1_L2`` is the first bot, at level 2."""
    return [BotSpec(f"bot{i + 1}_L{level}", level) for i, level in enumerate(levels)]


def write_bots_file(path: str | os.PathLike[str], bots: Sequence[BotSpec], map_name: str) -> str:
    """Writes the bots file for ``bots`` on ``map_name``'s ladder; returns its absolute path.

    The engine silently falls back to its own ``bots.cfg`` when the file is missing, so the
    caller passes the absolute path returned here.
    """
    path = os.path.abspath(path)
    ladder = bot_ladder(map_name)
    with open(path, "w", encoding="ascii") as f:
        for i, bot in enumerate(bots):
            f.write(ladder[bot.level].entry(bot.name, _COLORS[i % len(_COLORS)]))
    return path
