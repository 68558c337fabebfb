"""Atari games through ale-py with the standard preprocessing, as Gymnasium envs
(``sf/Atari-Pong-v0``) and on the vector engine; ale-py is the ``atari`` extra.

Map: ``options`` (what a game is played and seen with), ``kernels`` (the max of two frames
and the area resize, compiled), ``core`` (one emulator), ``env`` (the single env), ``unit``
(the engine's unit and ``make_atari_vec``).
"""

from sf_envs.atari.core import VARIABLES, AtariCore, game_names
from sf_envs.atari.env import AtariEnv, atari_spaces
from sf_envs.atari.options import AtariOptions
from sf_envs.atari.unit import AtariUnit, AtariUnitFactory, atari_env_id, make_atari_vec

__all__ = [
    "VARIABLES",
    "AtariCore",
    "AtariEnv",
    "AtariOptions",
    "AtariUnit",
    "AtariUnitFactory",
    "atari_env_id",
    "atari_spaces",
    "game_names",
    "make_atari_vec",
]
