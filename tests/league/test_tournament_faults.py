"""Tournaments survive faults of real game processes: a game that fails on every attempt
(an exception, or its game process SIGKILLed) is stored as failed and charged alone, the other games
are played and stored once, the failure is logged when it happens, and no game process scratch folder,
game process or engine is left behind."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support import fault_players
from support.league import children_of, stored_games

import sf_league.tournament.schedule
from sf_envs.lifecycle import command_line_option, interruptible
from sf_envs.match import bot_ladder
from sf_league.cli import main
from sf_league.store import LeagueStore
from sf_league.tournament.players import parse_player
from sf_league.tournament.schedule import TournamentConfig, run_tournament

TOP = f"bot:{max(bot_ladder('multi_duel'))}"


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private temp folder for this test's game processes (others may run tournaments meanwhile)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))  # the game processes'
    monkeypatch.setattr(tempfile, "tempdir", str(root))  # this process's
    return root


def game_folders(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if p.name.startswith("sf_league_game_")]


@pytest.mark.parametrize(
    ("play", "reason"),
    [
        (fault_players.play_or_raise, "RuntimeError: a bug in this game's player"),
        (fault_players.play_or_die, "killed by SIGKILL"),
    ],
)
def test_a_game_that_always_fails_is_stored_as_failed_and_the_rest_go_on(
    tmp_path: Path, scratch_root: Path, monkeypatch, caplog, capsys, play, reason: str
) -> None:
    monkeypatch.setattr(sf_league.tournament.schedule, "play_in_game_process", play)
    config = TournamentConfig(format="gauntlet", games=2, timelimit=0.1, workers=2)
    # crash+noop game 0 fails on every attempt; it is also the first game scheduled.
    players = [parse_player(t, config.map_name) for t in ("noop", f"crash={TOP}", TOP)]
    finished: list[float] = []
    db = tmp_path / "league.sqlite"
    with caplog.at_level(logging.WARNING, logger="sf_league"), LeagueStore(db) as store:
        result = run_tournament(
            config, players, store, lambda record, *_: record and finished.append(time.time())
        )
        failed = store.failed_games()
        keys = sorted(g.key for g in store.games())
    (bad,) = result.failed
    assert fault_players.crashes_key(bad)
    assert (result.played, result.replayed) == (3, 2)  # the 2 replays were all the bad game's
    assert len(keys) == len(set(keys)) == 3 and bad not in keys
    assert [(f.key, f.attempts) for f in failed] == [(bad, 3)] and reason in failed[0].reason
    # Reported when it happened, while other games were still to be played.
    first_failure = next(r for r in caplog.records if bad in r.getMessage())
    assert reason in first_failure.getMessage() and first_failure.created < finished[-1]
    assert game_folders(scratch_root) == []
    # The league's reports show it, not rated.
    assert main(["ratings", "--db", str(db), "--bootstrap", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(f["key"], f["attempts"]) for f in report["failed_games"]] == [(bad, 3)]
    assert [g["games"] for g in report["groups"]] == [3]


def test_a_sigkilled_game_process_costs_only_its_own_game(
    tmp_path: Path, scratch_root: Path
) -> None:
    db = tmp_path / "league.sqlite"
    args = ["--players", "noop", "random", TOP, "--format", "gauntlet", "--games", "4"]
    args += ["--timelimit", "0.25", "--workers", "2", "--bootstrap", "20", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sf_league.cli", "evaluate", *args, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    engines: list[int] = []
    try:
        processes = _game_processes_once_a_game_is_stored(proc, db)
        assert proc.poll() is None and processes, (
            "the tournament ended before a game process was killed"
        )
        engines = children_of(processes[0])
        os.kill(processes[0], signal.SIGKILL)
        out, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
        proc.wait()
        for pid in engines:  # on failure only: the pool kills them itself
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0
    tournament = json.loads(out)["tournament"]
    assert tournament["failed"] == [] and tournament["played"] == 8
    assert tournament["replayed"] <= 1  # the killed game process's game, if it was playing one
    assert stored_games(db) == 8
    assert [pid for pid in engines if _alive(pid)] == []
    assert game_folders(scratch_root) == []


def _game_processes_once_a_game_is_stored(proc: subprocess.Popen, db: Path) -> list[int]:
    """Waits (up to 2 minutes) until the tournament stored a game; its game processes then."""
    deadline = time.monotonic() + 120
    while stored_games(db) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in children_of(proc.pid) if _is_game_process(pid)]


def _is_game_process(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"spawn_main" in f.read()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_tournament_leaves_nothing_behind(
    tmp_path: Path, scratch_root: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (SIGINT) or SIGTERM of ``sf-league evaluate`` mid-game: the games stored so far
    stay, and no game process, engine, engine shared-memory file or scratch folder outlives it."""
    db = tmp_path / "league.sqlite"
    args = ["--players", "noop", "random", TOP, "--games", "6", "--timelimit", "0.25"]
    args += ["--workers", "2", "--db", str(db), "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sf_league.cli", "evaluate", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=interruptible,
    )
    processes: list[int] = []
    engines: list[int] = []
    try:
        processes = _game_processes_once_a_game_is_stored(proc, db)
        engines = [pid for process in processes for pid in children_of(process)]
        instances = [command_line_option(pid, "+viz_instance_id") for pid in engines]
        assert proc.poll() is None and engines, "the tournament ended before the signal"
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert stored_games(db) >= 1
    deadline = time.monotonic() + 30  # after SIGTERM the game processes' watchdogs clean up
    while any(map(_alive, processes + engines)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in processes + engines if _alive(pid)] == []
    assert [f for f in os.listdir("/dev/shm") if any(i and f.endswith(i) for i in instances)] == []
    assert game_folders(scratch_root) == []
