"""Gymnasium ids for every scenario, registered when ``sf_envs`` is imported.

Single-player scenarios and the match scenarios share the ``sf/Doom*-v0`` namespace. A match of
one learning agent against bots is a plain env (:mod:`sf_envs.match.single`); a match of several
learning agents (``sf/DoomDuel-v0``) exists only vectorised, one row per agent, because
``gymnasium.Env`` has room for one agent (its PettingZoo form is ``sf_envs.make_match``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_envs.errors import OptionError
from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchScenario
from sf_envs.scenarios import SCENARIOS

__all__ = [
    "ATARI_57",
    "atari_env_ids",
    "env_ids",
    "make",
    "match_env_ids",
    "register_envs",
    "self_play_env_ids",
]

#: The 57 games of the Atari benchmark (Mnih et al. 2015, Badia et al. 2020), as ale-py names
#: their ROMs; each is ``sf/Atari-<Game>-v0`` (the ``atari`` extra plays them).
ATARI_57 = (
    "alien",
    "amidar",
    "assault",
    "asterix",
    "asteroids",
    "atlantis",
    "bank_heist",
    "battle_zone",
    "beam_rider",
    "berzerk",
    "bowling",
    "boxing",
    "breakout",
    "centipede",
    "chopper_command",
    "crazy_climber",
    "defender",
    "demon_attack",
    "double_dunk",
    "enduro",
    "fishing_derby",
    "freeway",
    "frostbite",
    "gopher",
    "gravitar",
    "hero",
    "ice_hockey",
    "jamesbond",
    "kangaroo",
    "krull",
    "kung_fu_master",
    "montezuma_revenge",
    "ms_pacman",
    "name_this_game",
    "phoenix",
    "pitfall",
    "pong",
    "private_eye",
    "qbert",
    "riverraid",
    "road_runner",
    "robotank",
    "seaquest",
    "skiing",
    "solaris",
    "space_invaders",
    "star_gunner",
    "surround",
    "tennis",
    "time_pilot",
    "tutankham",
    "up_n_down",
    "venture",
    "video_pinball",
    "wizard_of_wor",
    "yars_revenge",
    "zaxxon",
)


def env_ids() -> list[str]:
    """Every single-player ``sf/Doom*-v0`` id, sorted (the match ids: :func:`match_env_ids`)."""
    return sorted(s.env_id for s in SCENARIOS.values())


def match_env_ids() -> list[str]:
    """Every single-agent match id (one agent against bots), sorted.

    Kept apart from :func:`env_ids`: their episodes are whole matches against scripted bots, and
    a seeded reset costs an engine start (see :meth:`sf_envs.match.core.MatchCore.reset`).
    """
    return sorted(env_id for env_id, s in _matches() if s.num_agents == 1)


def self_play_env_ids() -> list[str]:
    """Every id of a match of several learning agents (vector only, one row per agent), sorted."""
    return sorted(env_id for env_id, s in _matches() if s.num_agents > 1)


def atari_env_ids() -> list[str]:
    """Every ``sf/Atari-*-v0`` id (:data:`ATARI_57`), sorted."""
    from sf_envs.atari.unit import atari_env_id

    return sorted(atari_env_id(game) for game in ATARI_57)


def _matches() -> list[tuple[str, MatchScenario]]:
    """``(env_id, scenario)`` of every match scenario with an id."""
    return [(s.env_id, s) for s in MATCH_SCENARIOS.values() if s.env_id is not None]


def register_envs() -> None:
    """Registers one gymnasium id per scenario; safe to call more than once."""
    entries = [
        (s.env_id, s.name, "sf_envs.env:DoomEnv", "sf_envs.vector.make:make_vec", False)
        for s in SCENARIOS.values()
    ] + [
        (
            env_id,
            m.name,
            # gymnasium.make has room for one agent; several exist only vectorised.
            "sf_envs.match.single:"
            + ("SingleAgentMatchEnv" if m.num_agents == 1 else "refuse_single_env"),
            "sf_envs.match.single:make_match_vec",
            # Networked games (several agents, or scripted players: one engine each) are not
            # reproducible under a seed (see MatchCore.reset).
            m.num_agents + m.num_scripted > 1,
        )
        for env_id, m in _matches()
    ]
    for env_id, name, entry_point, vector_entry_point, nondeterministic in entries:
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=entry_point,
                vector_entry_point=vector_entry_point,
                nondeterministic=nondeterministic,
                kwargs={"scenario": name},
            )
    from sf_envs.atari.unit import atari_env_id

    for game in ATARI_57:
        env_id = atari_env_id(game)
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point="sf_envs.atari.env:AtariEnv",
                vector_entry_point="sf_envs.atari.unit:make_atari_vec",
                kwargs={"game": game},
            )


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` for sf ids, with an error that lists the known ids for an unknown one."""
    known = env_ids() + match_env_ids() + self_play_env_ids() + atari_env_ids()
    if env_id not in known:
        raise OptionError(f"unknown env id {env_id!r}; known ids: {', '.join(known)}")
    return gym.make(env_id, **kwargs)
