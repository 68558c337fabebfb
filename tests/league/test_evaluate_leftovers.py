"""`sf-league evaluate` ended by SIGTERM leaves no engine, shared memory or temp folder behind."""

from __future__ import annotations

import sys
from pathlib import Path

from support.owner import end_owner

# The game processes' own scratch folders (sf_league_game_*) are fixed in sf_league's game process, apart
# from this test; everything the engines leave is checked here.
_GAME_FOLDERS = ("sf_league_game_",)
_TOURNAMENT = ["--players", "bot:2", "noop", "random", "--games", "40", "--timelimit", "0.5"]


def test_a_terminated_tournament_leaves_nothing_behind(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "sf_league.cli", "evaluate", *_TOURNAMENT]
    db = str(tmp_path / "league.sqlite")
    left = end_owner([*command, "--db", db], tmp_path, "sigterm", 1, ignored_prefixes=_GAME_FOLDERS)
    assert not left, f"left behind after SIGTERM of sf-league evaluate: {left}"
