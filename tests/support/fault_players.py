"""Test doubles for tournament faults: what a game process calls per game instead of
:func:`sf_league.tournament.game.play_in_game_process` (monkeypatched into ``sf_league.tournament.schedule``; pickled by
name, so the spawned game processes import this module too).

Game number 0 of a pairing with a player named ``crash`` fails on every attempt; every other
game is a real game.
"""

from __future__ import annotations

import os
import signal

from sf_league.store import GameRecord
from sf_league.tournament.game import GameJob, play_in_game_process


def crashes_key(key: str) -> bool:
    """Whether the game of ``key`` is the one these doubles break."""
    pairing = key.split("|")[2].split("+")
    return "crash" in pairing and key.endswith("|0")


def play_or_raise(job: GameJob) -> GameRecord:
    if crashes_key(job.key):
        raise RuntimeError("a bug in this game's player")
    return play_in_game_process(job)


def play_or_die(job: GameJob) -> GameRecord:
    if crashes_key(job.key):
        os.kill(os.getpid(), signal.SIGKILL)
    return play_in_game_process(job)
