"""sf_envs: fast single- and multi-agent ViZDoom environments.

Importing the package registers one gymnasium id per scenario, e.g. ``sf/DoomBasic-v0``, and
one per game of the Atari benchmark, e.g. ``sf/Atari-Pong-v0`` (played with the ``atari`` extra).

- Scenarios and ids: ``scenarios`` (the single-player registry), ``pack`` (scenarios fetched
  on demand), ``registration`` (the gymnasium ids), ``options`` (observation and stepping
  options), ``actions`` (action sets).
- One game: ``game`` (a ViZDoom game writing preprocessed observations into caller buffers),
  ``preprocess`` and ``kernel`` (the numba kernels), ``env`` (the gymnasium env).
- Many games: :mod:`sf_envs.vector` (the shared-memory engine and its two faces, which host
  any Gymnasium env too: ``make_gym_vec``),
  :mod:`sf_envs.match` (multiplayer matches, scripted players, single-agent match envs),
  :mod:`sf_envs.lifecycle` (finding, killing and cleaning up every process sf starts).
- Atari: :mod:`sf_envs.atari` (ale-py games with the standard preprocessing, single and on the
  engine).
- Around them: ``integrations`` (adapters for other libraries), ``cli`` (the ``sf-envs``
  command), ``speed`` (timing an env), ``terminal`` (what the three CLIs print through),
  ``exports`` (names a package's top loads on first use),
  ``cache`` (the user cache folder), ``errors``.
"""

from __future__ import annotations

from sf_envs.env import DoomEnv
from sf_envs.errors import ClosedEnvError, OptionError
from sf_envs.game import DoomCore
from sf_envs.match import MatchEnv, make_match, match_scenario_names
from sf_envs.match.single import SingleAgentMatchEnv
from sf_envs.options import DoomOptions
from sf_envs.registration import (
    atari_env_ids,
    env_ids,
    make,
    match_env_ids,
    register_envs,
    self_play_env_ids,
)
from sf_envs.scenarios import SCENARIOS, Scenario, get_scenario, scenario_names
from sf_envs.vector import DoomAsyncVectorEnv, DoomVectorEnv, VectorEnvError, make_gym_vec

__all__ = [
    "SCENARIOS",
    "ClosedEnvError",
    "DoomAsyncVectorEnv",
    "DoomCore",
    "DoomEnv",
    "DoomOptions",
    "DoomVectorEnv",
    "MatchEnv",
    "OptionError",
    "Scenario",
    "SingleAgentMatchEnv",
    "VectorEnvError",
    "atari_env_ids",
    "env_ids",
    "get_scenario",
    "make",
    "make_gym_vec",
    "make_match",
    "match_env_ids",
    "match_scenario_names",
    "register_envs",
    "scenario_names",
    "self_play_env_ids",
]

__version__ = "0.1.0"

register_envs()
