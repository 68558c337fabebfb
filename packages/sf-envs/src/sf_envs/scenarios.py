"""The registry of single-player Doom scenarios.

Every scenario is one declarative :class:`Scenario` entry over a config that ships inside the
``vizdoom`` wheel, or inside the scenario pack (:mod:`sf_envs.pack`: the Sample Factory work's own
scenarios, fetched once with ``sf-envs scenarios fetch``). Adding a scenario means adding one entry to :data:`SCENARIOS`; the gymnasium id,
action set and limits all derive from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain

import vizdoom

from sf_envs.errors import OptionError
from sf_envs.pack import pack_file

__all__ = ["COMMON_GAME_VARIABLES", "SCENARIOS", "Scenario", "get_scenario", "scenario_names"]

#: Game variables reported in ``info`` on every step of every scenario. Cheap to read, and what
#: users plot (kills, damage, ammo) without wrapping the env.
COMMON_GAME_VARIABLES: tuple[str, ...] = (
    "HEALTH",
    "ARMOR",
    "SELECTED_WEAPON_AMMO",
    "KILLCOUNT",
    "ITEMCOUNT",
    "FRAGCOUNT",
    "DEATHCOUNT",
    "HITCOUNT",
    "HITS_TAKEN",
    "DAMAGECOUNT",
    "DAMAGE_TAKEN",
)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


@dataclass(frozen=True)
class Scenario:
    """One single-player Doom task.

    Attributes:
        name: Short snake_case name, e.g. ``"defend_the_center"``.
        config: Config file name inside ``vizdoom.scenarios_path``, or inside the scenario pack
            when ``in_pack``.
        buttons: The buttons the agent controls (overrides the cfg so the action set is explicit).
        combos: Extra multi-button actions on top of no-op and each single button, e.g.
            ``("MOVE_FORWARD", "TURN_LEFT")``; combinations are what make navigation learnable.
        episode_timeout: Episode limit in game tics (35 per second); reaching it truncates.
        measurements: Game variables in the optional measurements vector (``measurements=True``).
        description: One line for ``sf-envs list``.
        in_pack: The config (and its wad) come from the scenario pack, not the vizdoom wheel.
    """

    name: str
    config: str
    buttons: tuple[str, ...]
    episode_timeout: int
    description: str
    combos: tuple[tuple[str, ...], ...] = ()
    measurements: tuple[str, ...] = ("HEALTH", "ARMOR", "SELECTED_WEAPON_AMMO")
    in_pack: bool = False
    _actions: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = [b for b in chain(self.buttons, *self.combos) if not hasattr(vizdoom.Button, b)]
        if unknown:
            raise ValueError(f"scenario {self.name!r}: unknown ViZDoom buttons {unknown}")
        stray = [c for c in self.combos if not set(c) <= set(self.buttons)]
        if stray:
            raise ValueError(
                f"scenario {self.name!r}: combos {stray} use buttons not in {self.buttons}"
            )
        actions = ((), *((b,) for b in self.buttons), *self.combos)
        object.__setattr__(self, "_actions", actions)

    @property
    def env_id(self) -> str:
        """The gymnasium id, ``sf/Doom<CamelCaseName>-v0``."""
        return f"sf/Doom{_camel(self.name)}-v0"

    @property
    def config_path(self) -> str:
        """The config's path; raises :class:`~sf_envs.pack.PackMissingError` when the scenario
        is in the pack and the pack is not installed."""
        if self.in_pack:
            return pack_file(self.config)
        return os.path.join(vizdoom.scenarios_path, self.config)

    @property
    def actions(self) -> tuple[tuple[str, ...], ...]:
        """The discrete action set: index 0 is no-op, then each button, then the combos."""
        return self._actions

    def action_name(self, index: int) -> str:
        return "+".join(self._actions[index]) or "NOOP"


_TURN_AND_MOVE = (("MOVE_FORWARD", "TURN_LEFT"), ("MOVE_FORWARD", "TURN_RIGHT"))
_AIM_AND_SHOOT = (("TURN_LEFT", "ATTACK"), ("TURN_RIGHT", "ATTACK"))

# Battle: move on both axes, turn, shoot, and the moves that are hard to learn one button at a time.
_BATTLE_BUTTONS = (
    "MOVE_FORWARD",
    "MOVE_BACKWARD",
    "MOVE_LEFT",
    "MOVE_RIGHT",
    "TURN_LEFT",
    "TURN_RIGHT",
    "ATTACK",
)
_BATTLE_COMBOS = (*_TURN_AND_MOVE, *_AIM_AND_SHOOT, ("MOVE_FORWARD", "ATTACK"))


def _battle(name: str, config: str, description: str) -> Scenario:
    """A battle of the scenario pack: the same controls, limit and measurements on every map."""
    return Scenario(
        name,
        config,
        _BATTLE_BUTTONS,
        episode_timeout=2100,
        combos=_BATTLE_COMBOS,
        measurements=("HEALTH", "SELECTED_WEAPON_AMMO"),
        in_pack=True,
        description=description,
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "basic",
            "basic.cfg",
            ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK"),
            episode_timeout=300,
            description="Strafe to face one monster and shoot it; -1 per tic, +100 for the kill.",
        ),
        Scenario(
            "defend_the_center",
            "defend_the_center.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "ATTACK"),
            episode_timeout=2100,
            combos=_AIM_AND_SHOOT,
            description="Turn in place and kill approaching monsters; +1 per kill, limited ammo.",
        ),
        Scenario(
            "defend_the_line",
            "defend_the_line.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "ATTACK"),
            episode_timeout=2100,
            combos=_AIM_AND_SHOOT,
            description="Hold a line against respawning monsters; +1 per kill, -1 on death.",
        ),
        Scenario(
            "health_gathering",
            "health_gathering.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD"),
            episode_timeout=2100,
            combos=_TURN_AND_MOVE,
            description="Survive on an acid floor by collecting medkits; +1 per tic alive.",
        ),
        Scenario(
            "health_gathering_supreme",
            "health_gathering_supreme.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD"),
            episode_timeout=2100,
            combos=_TURN_AND_MOVE,
            description="Health gathering in a maze with poison vials; +1 per tic alive.",
        ),
        Scenario(
            "my_way_home",
            "my_way_home.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD", "MOVE_LEFT", "MOVE_RIGHT"),
            episode_timeout=2100,
            combos=_TURN_AND_MOVE,
            description="Find the vest in a maze of rooms (sparse reward +1).",
        ),
        Scenario(
            "deadly_corridor",
            "deadly_corridor.cfg",
            (
                "MOVE_LEFT",
                "MOVE_RIGHT",
                "ATTACK",
                "MOVE_FORWARD",
                "MOVE_BACKWARD",
                "TURN_LEFT",
                "TURN_RIGHT",
            ),
            episode_timeout=2100,
            combos=(*_TURN_AND_MOVE, ("MOVE_FORWARD", "ATTACK"), *_AIM_AND_SHOOT),
            description="Run a corridor of shooters to the vest; reward is progress, -100 on death.",
        ),
        Scenario(
            "take_cover",
            "take_cover.cfg",
            ("MOVE_LEFT", "MOVE_RIGHT"),
            episode_timeout=2100,
            description="Dodge fireballs by strafing; +1 per tic alive.",
        ),
        _battle(
            "battle",
            "battle.cfg",
            "Sample Factory's battle: kill monsters in a hall, pick up health and ammo; +1 per "
            "kill (scenario pack).",
        ),
        _battle(
            "battle2",
            "battle2_continuous_turning.cfg",
            "Sample Factory's battle2: battle in a maze of rooms; +1 per kill (scenario pack).",
        ),
        Scenario(
            "predict_position",
            "predict_position.cfg",
            ("TURN_LEFT", "TURN_RIGHT", "ATTACK"),
            episode_timeout=300,
            description="Hit a moving target with a rocket by leading it; +1 for the hit.",
        ),
    )
}


def scenario_names() -> list[str]:
    """The single-player scenario names, sorted (pack scenarios included, installed or not)."""
    return sorted(SCENARIOS)


def get_scenario(name: str) -> Scenario:
    """Returns the scenario called ``name``; a ValueError lists the known ones otherwise."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise OptionError(
            f"unknown scenario {name!r}; known scenarios: {', '.join(scenario_names())}"
        ) from None
