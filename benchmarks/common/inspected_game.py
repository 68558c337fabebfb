"""A Doom game of an sf-envs scenario whose objects and map the script can read: what the
diagnostic scripts use to see what a policy cannot (positions, walls)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import vizdoom

from sf_envs.game import create_game
from sf_envs.options import DoomOptions
from sf_envs.scenarios import get_scenario

__all__ = ["inspected_game"]


@contextmanager
def inspected_game(scenario: str) -> Iterator[vizdoom.DoomGame]:
    """The scenario's game as sf-envs configures it (its buttons, time limit, 160x120 render),
    started with ViZDoom's object and sector lists on, its files in a private folder; closed
    and the folder removed on exit."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="sf_inspect_") as workdir:
        os.chdir(workdir)  # the engine makes its _vizdoom/ folder in the working directory
        try:
            game = create_game(get_scenario(scenario), DoomOptions.create(), workdir, ())
            game.set_objects_info_enabled(True)
            game.set_sectors_info_enabled(True)
            try:
                game.init()
                yield game
            finally:
                game.close()
        finally:
            os.chdir(here)  # before the folder is removed, also when the game fails to start
