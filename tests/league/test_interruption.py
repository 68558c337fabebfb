"""A tournament killed with SIGKILL keeps every finished game; rerunning completes the rest."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from support.league import children_of, stored_games

from sf_league.cli import main

ARGS = (
    "--players",
    "bot:2",
    "noop",
    "random",
    "--format",
    "gauntlet",
    "--games",
    "6",
    "--timelimit",
    "0.25",
    "--bootstrap",
    "50",
)


def test_sigkill_mid_tournament_then_rerun_completes(tmp_path: Path, monkeypatch, capsys) -> None:
    db = tmp_path / "league.sqlite"
    scratch_root = tmp_path / "tmp"  # the game processes' scratch folders, apart from other tests'
    scratch_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sf_league.cli", "evaluate", *ARGS, "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while stored_games(db) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        processes = children_of(proc.pid)
        assert proc.poll() is None, "the tournament finished before it could be interrupted"
    finally:
        proc.kill()
        proc.wait()
    kept = stored_games(db)
    assert 3 <= kept < 12
    # The game processes notice their parent is gone and exit (killing their engines first).
    deadline = time.monotonic() + 30
    while any(os.path.exists(f"/proc/{pid}") for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = []
    for pid in processes:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            continue
    assert not alive, f"game processes {alive} outlived the killed tournament"
    assert [p.name for p in scratch_root.iterdir()] == []  # their scratch folders went with them
    # The rerun in this process: the same main(), without the start-up of another Python.
    assert main(["evaluate", *ARGS, "--db", str(db), "--json"]) == 0
    assert '"already_stored": ' + str(kept) in capsys.readouterr().out
    with sqlite3.connect(db) as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM games")]
        seats = conn.execute("SELECT COUNT(*) FROM game_players").fetchone()[0]
    assert len(keys) == 12 and len(set(keys)) == 12  # none lost, none duplicated
    assert seats == 24
