"""Deathmatch maps shipped in the ``vizdoom`` wheel, with the limits measured on them.

Each :class:`MatchMap` encodes what was measured (see ``VIZDOOM_FACTS.md``): how many players a
map holds before the engine crashes, and the console settings it needs. Maps that cannot host a
fair deathmatch are listed in :data:`UNSUPPORTED_MAPS` with the reason, so asking for one fails
with an explanation up front instead of a segfault inside ``DoomGame.init()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain

import vizdoom

from sf_envs.errors import OptionError
from sf_envs.pack import pack_file

__all__ = ["MAPS", "UNSUPPORTED_MAPS", "MatchMap", "get_map", "map_names"]

_PACKAGE_DIR = os.path.dirname(vizdoom.__file__)

_MOVE_AND_SHOOT = (
    "MOVE_FORWARD",
    "MOVE_BACKWARD",
    "MOVE_LEFT",
    "MOVE_RIGHT",
    "TURN_LEFT",
    "TURN_RIGHT",
    "ATTACK",
    "SELECT_NEXT_WEAPON",
)
_COMBOS = (
    ("MOVE_FORWARD", "TURN_LEFT"),
    ("MOVE_FORWARD", "TURN_RIGHT"),
    ("MOVE_FORWARD", "ATTACK"),
    ("TURN_LEFT", "ATTACK"),
    ("TURN_RIGHT", "ATTACK"),
)


# The settings Sample Factory's matches add to ours on its own maps: no jumping or free look, no
# level exit before the time limit, and two seconds before a respawn (ours: one).
_SAMPLE_FACTORY_RULES = "+sv_nojump 1 +sv_nofreelook 1 +sv_noexit 1 +viz_respawn_delay 2"


@dataclass(frozen=True)
class MatchMap:
    """One deathmatch map and its measured limits.

    Attributes:
        name: Short name used by ``make_match(map=...)``.
        iwad: Game data file inside the vizdoom package (``freedoom2.wad``).
        wad: Extra map file inside ``vizdoom.scenarios_path`` (inside the scenario pack when
            ``in_pack``), or None for a map of the iwad.
        doom_map: Map lump name, e.g. ``"map01"``.
        max_players: Most players (agents plus bots) measured to run without an engine crash.
        weapons: ``"hitscan"`` or ``"rockets"``: which bot parameters can matter (``aiming``
            only affects hitscan weapons).
        game_args: Extra console arguments the map needs (e.g. ``+sv_noexit 1``).
        description: One line for listings.
        buttons: The buttons every agent controls on this map.
        combos: Multi-button actions on top of no-op and each single button.
        in_pack: The wad comes from the scenario pack (:mod:`sf_envs.pack`).

    Controls belong to the map, not the scenario: multi_duel is a strafe-and-shoot arena whose
    deathmatch starts face an instant-death floor, so an agent that can walk forward mostly kills
    itself (ViZDoom's own ``multi_duel.cfg`` offers only MOVE_LEFT, MOVE_RIGHT and ATTACK).
    """

    name: str
    iwad: str
    wad: str | None
    doom_map: str
    max_players: int
    weapons: str
    description: str
    game_args: str = ""
    buttons: tuple[str, ...] = _MOVE_AND_SHOOT
    combos: tuple[tuple[str, ...], ...] = _COMBOS
    in_pack: bool = False
    _actions: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = [b for b in chain(self.buttons, *self.combos) if not hasattr(vizdoom.Button, b)]
        if unknown:
            raise ValueError(f"map {self.name!r}: unknown ViZDoom buttons {unknown}")
        object.__setattr__(self, "_actions", ((), *((b,) for b in self.buttons), *self.combos))

    @property
    def actions(self) -> tuple[tuple[str, ...], ...]:
        """The discrete action set: index 0 is no-op, then each button, then the combos."""
        return self._actions

    @property
    def iwad_path(self) -> str:
        return os.path.join(_PACKAGE_DIR, self.iwad)

    @property
    def wad_path(self) -> str | None:
        """The map file's path; raises :class:`~sf_envs.pack.PackMissingError` for a map of a
        pack that is not installed."""
        if self.wad is None:
            return None
        if self.in_pack:
            return pack_file(self.wad)
        return os.path.join(vizdoom.scenarios_path, self.wad)


MAPS: dict[str, MatchMap] = {
    m.name: m
    for m in (
        MatchMap(
            "cig_map01",
            "freedoom2.wad",
            "cig.wad",
            "map01",
            max_players=8,
            weapons="rockets",
            description="CIG 2016 track 1 arena: rocket launchers only.",
        ),
        MatchMap(
            "cig_map02",
            "freedoom2.wad",
            "cig.wad",
            "map02",
            max_players=8,
            weapons="hitscan",
            description="CIG 2016 track 2 arena: full weapon set, mostly hitscan.",
        ),
        MatchMap(
            "multi_duel",
            "freedoom2.wad",
            "multi_duel.wad",
            "map01",
            # Two deathmatch starts: 3 players ran, 5 crashed the engine.
            max_players=3,
            weapons="rockets",
            description="Small duel room with two deathmatch starts and rockets; strafe and shoot.",
            buttons=("MOVE_LEFT", "MOVE_RIGHT", "ATTACK"),
            combos=(("MOVE_LEFT", "ATTACK"), ("MOVE_RIGHT", "ATTACK")),
        ),
        MatchMap(
            "ssl2",
            "freedoom2.wad",
            "ssl2.wad",
            "map01",
            max_players=8,
            weapons="hitscan",
            game_args=_SAMPLE_FACTORY_RULES,
            description="Sample Factory's duel map (scenario pack): a small arena, all weapons.",
            in_pack=True,
        ),
        MatchMap(
            "dwango5",
            "freedoom2.wad",
            "dwango5.wad",
            "map01",
            max_players=8,
            weapons="hitscan",
            game_args=_SAMPLE_FACTORY_RULES,
            description="Dwango 5 MAP01 (scenario pack): Sample Factory's deathmatch against 7 "
            "bots.",
            in_pack=True,
        ),
        MatchMap(
            "freedm",
            "freedoom2.wad",
            "freedm.wad",
            "map01",
            max_players=8,
            weapons="hitscan",
            game_args=_SAMPLE_FACTORY_RULES,
            description="FreeDM MAP01 (scenario pack): Sample Factory's 4 agents + 4 bots free "
            "for all.",
            in_pack=True,
        ),
        MatchMap(
            "freedoom2_map01",
            "freedoom2.wad",
            None,
            "map01",
            max_players=8,
            weapons="hitscan",
            # Without it the first player to reach the exit ends the match for everyone.
            game_args="+sv_noexit 1",
            description="Freedoom 2 MAP01, a campaign level used as an open arena.",
        ),
    )
}

#: Maps that ship in the wheel but cannot host a match, with the reason and what to use instead.
UNSUPPORTED_MAPS: dict[str, str] = {
    "multi_deathmatch": (
        "multi_deathmatch.wad (multi.cfg) ends the map when player 0 or 1 dies (ACS script)"
    ),
    "deathmatch": (
        "deathmatch.wad has no deathmatch starts; with -deathmatch the engine aborts and "
        "segfaults Python"
    ),
}


def map_names() -> list[str]:
    """The names the matches' ``map`` option accepts, sorted."""
    return sorted(MAPS)


def get_map(name: str) -> MatchMap:
    """Returns the map called ``name``; a ValueError explains unsupported and unknown names."""
    if name in MAPS:
        return MAPS[name]
    if name in UNSUPPORTED_MAPS:
        raise OptionError(
            f"map {name!r} cannot host a match: {UNSUPPORTED_MAPS[name]}; "
            f"use one of {', '.join(map_names())}"
        )
    raise OptionError(f"unknown map {name!r}; known maps: {', '.join(map_names())}")
