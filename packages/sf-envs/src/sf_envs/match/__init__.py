"""Multiplayer Doom matches: learning agents and scripted bots over ViZDoom's own netcode."""

from __future__ import annotations

from sf_envs.match.botgame import play_bot_game
from sf_envs.match.bots import BOT_LADDERS, BotLevel, BotSpec, bot_ladder
from sf_envs.match.core import MatchCore
from sf_envs.match.env import MatchEnv, make_match
from sf_envs.match.lockstep import MatchError, MatchHungError
from sf_envs.match.maps import MAPS, MatchMap
from sf_envs.match.rewards import RewardConfig
from sf_envs.match.scenarios import (
    MATCH_SCENARIOS,
    MatchConfig,
    MatchScenario,
    get_match_scenario,
    match_scenario_names,
)

__all__ = [
    "BOT_LADDERS",
    "MAPS",
    "MATCH_SCENARIOS",
    "BotLevel",
    "BotSpec",
    "MatchConfig",
    "MatchCore",
    "MatchEnv",
    "MatchError",
    "MatchHungError",
    "MatchMap",
    "MatchScenario",
    "RewardConfig",
    "bot_ladder",
    "get_match_scenario",
    "make_match",
    "match_scenario_names",
    "play_bot_game",
]
