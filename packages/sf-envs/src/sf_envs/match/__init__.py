"""Multiplayer Doom matches: learning agents and scripted bots over ViZDoom's own netcode.

- The match: ``scenarios`` (the registry and one match's config), ``maps``, ``core`` (lock-step
  stepping into caller buffers), ``player`` (one player's game), ``lockstep`` (the per-tic
  barrier), ``ports``, ``probe`` (a first start in a child process), ``spin`` (engines that
  yield while waiting), ``rewards`` (shaping over game events).
- Its faces: ``env`` (PettingZoo), ``single`` (single-agent envs and their vector form),
  ``unit`` (a vector-engine unit).
- Opponents: ``bots`` (engine bots at measured levels), ``botgame`` (bot-only games),
  ``scripted`` (rule-based players), ``hunt`` and ``navigation`` (where they go).
"""

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
