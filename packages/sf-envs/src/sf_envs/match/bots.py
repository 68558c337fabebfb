"""Scripted bots at measured skill levels, written as the bots file a match host loads.

ViZDoom's bots read their parameters from a text file (``+viz_bots_path``); ``addbot NAME`` picks
the entry called NAME. A match writes its own file with one uniquely named entry per bot, so each
bot's identity and level are known and reported, and parallel matches never share a file.

What the engine does with a bot's parameters (read in ViZDoom's bot code, ``b_game.cpp``,
``b_func.cpp``, ``b_think.cpp``): the file's keys are ``name``, ``aiming``, ``perfection``,
``reaction``, ``isp`` and ``team``; every other key becomes one of the bot's user settings.
``perfection`` is parsed and never used. ``aiming`` jitters the aim of instant-hit weapons only.
``reaction`` delays the first shot at a new target by (101 - reaction) / 3..5 tics, except with
the rocket launcher and the BFG. ``isp``: the bot holds fire while its pain counter exceeds it,
goes for health when its health is below it, and chases an enemy out of sight with chance
(100 - isp)% (always one holding rockets). There is no per-bot speed or damage setting (game
skill scales damage for every player alike), and bots never pick a weapon themselves: they
switch on picking one up (or on being given one: multi_duel's script hands out rocket launchers
at every spawn) unless the user setting ``neverswitchonpickup`` is on, and when out of ammo.
``neverswitchonpickup 1`` therefore keeps a bot on its starting pistol: the one handicap that
measurably weakens bots (:attr:`BotLevel.neverswitch`).

Every level was calibrated by ``benchmarks/bot_levels.py`` (the numbers are in
``docs/benchmarks/matches.md``): the maps yield two levels at most, not five, so levels are per
map (:data:`BOT_LADDERS`), and asking for a level a map does not have is an error that names the
levels it has.
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
        isp: "Instincts of self preservation": above it, pain stops the bot firing; below it,
            low health sends it for health; low values chase enemies out of sight.
        aiming: Aim accuracy; the engine uses it for instant-hit weapons only.
        reaction: How soon the bot fires at a new target (not with rockets or the BFG).
        neverswitch: Keep the weapon in hand when picking up or being given a better one
            (the engine's ``neverswitchonpickup`` user setting; bots choose weapons only by
            that switch): the bot fights with its pistol until it runs dry.
    """

    level: int
    isp: int
    aiming: int = 100
    reaction: int = 100
    neverswitch: bool = False

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
                # Not a bot key: the engine passes unknown keys on as the bot's user settings.
                f"    neverswitchonpickup {int(self.neverswitch)}",
                f'    color       "{color}"',
                "    skin        base",
                "}",
                "",
            )
        )


#: Measured skill ladders per map, weakest first (see the module docstring for the numbers).
BOT_LADDERS: dict[str, tuple[BotLevel, ...]] = {
    "multi_duel": (BotLevel(1, isp=0, neverswitch=True), BotLevel(2, isp=0)),
    "cig_map01": (BotLevel(1, isp=0),),
    "cig_map02": (BotLevel(1, isp=0, neverswitch=True), BotLevel(2, isp=0)),
    "freedoom2_map01": (BotLevel(1, isp=0),),
    "ssl2": (BotLevel(1, isp=0, neverswitch=True), BotLevel(2, isp=0)),
    "dwango5": (BotLevel(1, isp=0, neverswitch=True), BotLevel(2, isp=0)),
    "freedm": (BotLevel(1, isp=0, neverswitch=True), BotLevel(2, isp=0)),
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
