"""The registry of multiplayer match scenarios and the validated config of one match.

Every scenario is one declarative :class:`MatchScenario` entry; :meth:`MatchConfig.create` turns
a scenario name plus user overrides into a checked config, reporting every problem at once. All
of it runs before any engine starts, because a bad setup inside ``DoomGame.init()`` (too many
players for a map, no deathmatch starts) segfaults Python instead of raising.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sf_envs.actions import ActionSet, make_action_set
from sf_envs.errors import OptionError
from sf_envs.match.bots import BotSpec, bot_ladder, bot_specs
from sf_envs.match.maps import MatchMap, get_map
from sf_envs.match.rewards import RewardConfig
from sf_envs.match.scripted import ScriptedSpec, scripted_ladder, scripted_specs
from sf_envs.options import DoomOptions

__all__ = [
    "MATCH_SCENARIOS",
    "MatchConfig",
    "MatchScenario",
    "get_match_scenario",
    "match_scenario_names",
]


@dataclass(frozen=True)
class MatchScenario:
    """One kind of match: who plays where, for how long, with which controls.

    Attributes:
        name: Short snake_case name passed to ``make_match``.
        map: Default map name (see :mod:`sf_envs.match.maps`); overridable per match.
        num_agents: Default number of learning agents, within ``agents_range``.
        num_bots: Default number of engine bots, within ``bots_range``.
        agents_range: Inclusive ``(min, max)`` learning agents.
        bots_range: Inclusive ``(min, max)`` bots.
        num_scripted: Default number of scripted players (:mod:`sf_envs.match.scripted`),
            within ``scripted_range``.
        scripted_range: Inclusive ``(min, max)`` scripted players.
        timelimit: Match length in minutes of game time (35 tics per second).
        description: One line for listings.
        env_id: Its gymnasium id, or None. A scenario of one learning agent gets a plain
            ``gymnasium.Env`` (``sf_envs.match.single``); one of several agents a vector-only
            id whose rows are the agents (self-play: one policy plays every row).
        spectator_host: Whether the host (``player_0``) joins as a spectator (``+viz_spectator
            1``: invisible, noclip, unshootable), so that only the bots play. Bot-only games
            (:func:`~sf_envs.match.botgame.play_bot_game`) use it; it is not for learning agents.

    The controls come with the map (:attr:`MatchConfig.actions`), since what an agent may safely
    do depends on the map.
    """

    name: str
    map: str
    num_agents: int
    num_bots: int
    agents_range: tuple[int, int]
    bots_range: tuple[int, int]
    timelimit: float
    description: str
    env_id: str | None = None
    spectator_host: bool = False
    num_scripted: int = 0
    scripted_range: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        get_map(self.map)


MATCH_SCENARIOS: dict[str, MatchScenario] = {
    s.name: s
    for s in (
        MatchScenario(
            "duel",
            map="multi_duel",
            num_agents=2,
            num_bots=0,
            agents_range=(2, 2),
            bots_range=(0, 0),
            timelimit=2.0,
            description="Two learning agents, one on one (self-play).",
            env_id="sf/DoomDuel-v0",
        ),
        MatchScenario(
            "duel_bots",
            map="multi_duel",
            num_agents=1,
            num_bots=1,
            agents_range=(1, 1),
            bots_range=(1, 1),
            timelimit=2.0,
            description="One learning agent against one engine bot.",
            env_id="sf/DoomDuelBots-v0",
        ),
        MatchScenario(
            "duel_scripted",
            map="multi_duel",
            num_agents=1,
            num_bots=0,
            # Games without a learning agent (a scripted player against another or against a
            # bot) are for rating the ladder; the env id has one agent.
            agents_range=(0, 1),
            bots_range=(0, 1),
            timelimit=2.0,
            description="One learning agent against one scripted player.",
            env_id="sf/DoomDuelScripted-v0",
            num_scripted=1,
            scripted_range=(1, 2),
        ),
        MatchScenario(
            "deathmatch_bots",
            map="cig_map02",
            num_agents=1,
            num_bots=7,
            agents_range=(1, 1),
            bots_range=(1, 7),
            timelimit=4.0,
            description="One learning agent against 1-7 engine bots, free for all.",
            env_id="sf/DoomDeathmatchBots-v0",
        ),
        MatchScenario(
            "deathmatch",
            map="cig_map02",
            num_agents=4,
            num_bots=0,
            agents_range=(2, 8),
            bots_range=(0, 6),
            timelimit=4.0,
            description="2-8 learning agents, optionally with engine bots, free for all.",
        ),
    )
}


def match_scenario_names() -> list[str]:
    """The match scenarios :func:`~sf_envs.make_match` accepts, sorted."""
    return sorted(MATCH_SCENARIOS)


def get_match_scenario(name: str) -> MatchScenario:
    """Returns the match scenario called ``name``; a ValueError lists the known ones otherwise."""
    try:
        return MATCH_SCENARIOS[name]
    except KeyError:
        raise OptionError(
            f"unknown match scenario {name!r}; known: {', '.join(match_scenario_names())}"
        ) from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class MatchConfig:
    """Everything one match needs, validated: built by :meth:`create`, not by hand.

    Attributes:
        scenario: The match scenario.
        map: The map played.
        num_agents: Learning agents (``player_0`` is the host).
        bots: The engine bots, names and levels.
        timelimit: Minutes of game time per match.
        options: Frame skip and observation options, shared by all agents.
        rewards: Reward shaping weights.
        timeout: Seconds any wait on the engine may take before the match is declared hung.
    """

    scenario: MatchScenario
    map: MatchMap
    num_agents: int
    bots: tuple[BotSpec, ...]
    timelimit: float
    options: DoomOptions
    rewards: RewardConfig
    timeout: float
    scripted: tuple[ScriptedSpec, ...] = ()

    @property
    def num_players(self) -> int:
        return self.num_agents + len(self.scripted) + len(self.bots)

    @property
    def num_engines(self) -> int:
        """Engines in the match: one per agent and per scripted player (bots live in the
        host's)."""
        return self.num_agents + len(self.scripted)

    @property
    def player_names(self) -> tuple[str, ...]:
        """In-game names of the engines' players: ``player_0``... then the scripted players."""
        agents = tuple(f"player_{i}" for i in range(self.num_agents))
        return agents + tuple(s.name for s in self.scripted)

    @property
    def buttons(self) -> tuple[str, ...]:
        """The buttons every agent controls (the map's)."""
        return self.map.buttons

    @property
    def actions(self) -> tuple[tuple[str, ...], ...]:
        """The discrete action set (the map's): index 0 is no-op, then buttons, then combos."""
        return self.map.actions

    @property
    def action_set(self) -> ActionSet:
        """What every agent's action presses: the ``action_set`` option over the map's controls."""
        return make_action_set(self.options.action_set, self.buttons, self.actions, match=True)

    @classmethod
    def create(
        cls,
        scenario: str | MatchScenario,
        *,
        num_agents: int | None = None,
        num_bots: int | None = None,
        bot_skill: int | Sequence[int] | None = None,
        num_scripted: int | None = None,
        scripted_skill: int | Sequence[int] | None = None,
        map: str | None = None,
        timelimit: float | None = None,
        rewards: RewardConfig | dict[str, float] | str | None = None,
        timeout: float = 30.0,
        **options: Any,
    ) -> MatchConfig:
        """Validates a match setup; every problem is reported in one ValueError.

        Args:
            scenario: A match scenario or its name.
            num_agents: Learning agents; the scenario's default when None.
            num_bots: Engine bots; the scenario's default when None.
            bot_skill: One level for all bots, or one level per bot; the map's strongest when
                None. Levels are per map (:data:`~sf_envs.match.bots.BOT_LADDERS`): only those
                measured to differ in strength exist.
            num_scripted: Scripted players; the scenario's default when None.
            scripted_skill: One level for all scripted players, or one per player, from the
                map's :func:`~sf_envs.match.scripted.scripted_ladder`; the strongest when None.
            map: Map name; the scenario's default when None.
            timelimit: Minutes per match; the scenario's default when None.
            rewards: See :meth:`RewardConfig.create`.
            timeout: Seconds before a wait on the engine counts as a hang.
            **options: :class:`~sf_envs.options.DoomOptions` fields (frame_skip, obs_size, ...).
        """
        if not isinstance(scenario, MatchScenario):
            scenario = get_match_scenario(scenario)
        errors: list[str] = []
        match_map = None
        try:
            match_map = get_map(scenario.map if map is None else map)
            match_map.wad_path  # noqa: B018  (a map of a missing pack fails here, up front)
        except ValueError as exc:  # PackMissingError too
            errors.append(str(exc))
        agents = scenario.num_agents if num_agents is None else num_agents
        n_bots = scenario.num_bots if num_bots is None else num_bots
        n_scripted = scenario.num_scripted if num_scripted is None else num_scripted
        for what, value, (low, high) in (
            ("num_agents", agents, scenario.agents_range),
            ("num_bots", n_bots, scenario.bots_range),
            ("num_scripted", n_scripted, scenario.scripted_range),
        ):
            if not _is_int(value) or not low <= value <= high:
                errors.append(
                    f"{scenario.name} takes {what} in [{low}, {high}], got {value!r}; "
                    "pick another scenario for other line-ups"
                )
        counts_valid = all(_is_int(v) for v in (agents, n_bots, n_scripted))
        if counts_valid and agents + n_scripted == 0:
            errors.append("a match needs an agent or a scripted player to host it; add one")
        if (
            match_map is not None
            and counts_valid
            and agents + n_scripted + n_bots > match_map.max_players
        ):
            errors.append(
                f"map {match_map.name} holds at most {match_map.max_players} players "
                f"(more crash the engine), got {agents} agents + {n_scripted} scripted + "
                f"{n_bots} bots; lower num_bots to "
                f"{max(match_map.max_players - agents - n_scripted, 0)} or choose a bigger "
                "map such as cig_map01"
            )
        levels = (
            []
            if match_map is None
            else cls._bot_levels(
                bot_skill, n_bots if _is_int(n_bots) else 0, match_map.name, errors
            )
        )
        scripted = (
            []
            if match_map is None
            else _levels(
                "scripted_skill",
                scripted_skill,
                n_scripted if _is_int(n_scripted) else 0,
                scripted_ladder(match_map.name),
                f"scripted levels on {match_map.name}",
                errors,
            )
        )
        limit = scenario.timelimit if timelimit is None else timelimit
        if not isinstance(limit, (int, float)) or isinstance(limit, bool) or limit <= 0:
            errors.append(f"timelimit must be a positive number of minutes, got {limit!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            errors.append(f"timeout must be a positive number of seconds, got {timeout!r}")
        reward_config = None
        try:
            reward_config = RewardConfig.create(rewards)
        except ValueError as exc:
            errors.append(str(exc))
        doom_options = None
        try:
            doom_options = DoomOptions.create(**options)
        except TypeError:
            errors.append(
                f"unknown options {sorted(options)}; match options are num_agents, num_bots, "
                "bot_skill, map, timelimit, rewards, timeout and the DoomOptions fields "
                "(frame_skip, resolution, obs_size, grayscale, frame_stack, measurements, "
                "interpolation)"
            )
        except ValueError as exc:
            errors.append(str(exc))
        if errors or match_map is None or reward_config is None or doom_options is None:
            raise OptionError(f"invalid {scenario.name} match:\n  - " + "\n  - ".join(errors))
        return cls(
            scenario=scenario,
            map=match_map,
            num_agents=agents,
            bots=tuple(bot_specs(levels)),
            timelimit=float(limit),
            options=doom_options,
            rewards=reward_config,
            timeout=float(timeout),
            scripted=tuple(scripted_specs(scripted)),
        )

    @staticmethod
    def _bot_levels(bot_skill: Any, n_bots: int, map_name: str, errors: list[str]) -> list[int]:
        return _levels(
            "bot_skill",
            bot_skill,
            n_bots,
            bot_ladder(map_name),
            f"bot levels on {map_name}",
            errors,
        )


def _levels(
    option: str, skill: Any, count: int, ladder: dict[int, Any], what: str, errors: list[str]
) -> list[int]:
    """One level per player from ``skill`` (a level for all, or a list); the strongest when
    None. Problems go to ``errors``."""
    if skill is None:
        skill = max(ladder)
    levels = [skill] * count if _is_int(skill) else skill
    if not isinstance(levels, Sequence) or isinstance(levels, str):
        errors.append(f"{option} must be a level or a list of levels, got {skill!r}")
        return []
    levels = list(levels)
    if len(levels) != count:
        errors.append(f"{option} lists {len(levels)} levels for {count} players; give one each")
    bad = [lv for lv in levels if not _is_int(lv) or lv not in ladder]
    if bad or (_is_int(skill) and skill not in ladder):
        errors.append(
            f"{what} are {', '.join(map(str, sorted(ladder)))} (only levels measured to "
            f"differ in strength), got {skill!r}"
        )
    return levels if not bad and len(levels) == count else []
