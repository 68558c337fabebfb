"""Ratings never pool unrelated games: games of another kind, map, time limit or frame skip are
rated in a group of their own, in ``evaluate``, ``ratings`` and ``plot``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from support.league import duel_settings

from sf_league.cli import main
from sf_league.store import GameRecord, LeagueStore, PlayerRecord, Seat
from sf_league.tournament.players import parse_player


def won_by(winner: str, loser: str, key: str, frame_skip: int) -> GameRecord:
    return GameRecord(
        key, "duel", (Seat(winner, 3, 0), Seat(loser, 0, 3)), duel_settings(frame_skip), 1, 45, 1.0
    )


def league_of_two_frame_skips(db: Path) -> None:
    """noop beats random 4 times at frame skip 2; random beats noop 4 times at frame skip 4.
    Pooled, they would look equal; apart, each setting has a clear winner."""
    with LeagueStore(db) as store:
        store.add_players([parse_player(n, "multi_duel").record() for n in ("noop", "random")])
        for k in range(4):
            store.record_game(won_by("noop", "random", f"fs2|{k}", frame_skip=2))
            store.record_game(won_by("random", "noop", f"fs4|{k}", frame_skip=4))


def test_ratings_and_plot_rate_each_frame_skip_apart(tmp_path: Path, capsys) -> None:
    db = tmp_path / "league.sqlite"
    league_of_two_frame_skips(db)
    assert main(["ratings", "--db", str(db), "--json", "--bootstrap", "20"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert [(g["group"]["frame_skip"], g["games"]) for g in groups] == [(2, 4), (4, 4)]
    assert [g["ratings"][0]["player"] for g in groups] == ["noop", "random"]
    assert all(g["ratings"][0]["elo"] > 100 for g in groups)  # pooled they would be equal
    # Each table under a header naming its settings and the options that select it alone.
    assert main(["ratings", "--db", str(db), "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "frame skip 2" in out and "frame skip 4" in out and "--frame-skip 4" in out
    assert main(["ratings", "--db", str(db), "--json", "--frame-skip", "4"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["groups"]
    assert only["group"]["frame_skip"] == 4 and only["games"] == 4
    assert main(["ratings", "--db", str(db), "--map", "cig_map02"]) == 2
    err = capsys.readouterr().err
    assert "no games" in err and "--frame-skip 2" in err and "--frame-skip 4" in err
    png = tmp_path / "ratings.png"
    assert main(["plot", "--db", str(db), "--out", str(png), "--bootstrap", "20"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with sqlite3.connect(db) as conn:
        fitted = [
            json.loads(s)["group"]["frame_skip"]
            for (s,) in conn.execute("SELECT settings FROM fits ORDER BY id")
        ]
    assert fitted == [2, 4, 2, 4, 4, 2, 4]  # every table and plot panel is its own stored fit


def test_evaluate_rates_only_the_games_of_its_own_settings(tmp_path: Path, capsys) -> None:
    db = tmp_path / "league.sqlite"
    league_of_two_frame_skips(db)
    # In this process and one game process: the 2 short games are cheap, the start-ups are not.
    args = ["--players", "noop", "random", "--games", "2", "--timelimit", "0.1"]
    args += ["--frame-skip", "3", "--workers", "1", "--bootstrap", "20", "--json"]
    assert main(["evaluate", *args, "--db", str(db)]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["group"] == {
        "scenario": "duel",
        "map": "multi_duel",
        "timelimit": 0.1,
        "frame_skip": 3,
    }
    assert group["games"] == 2
    assert {r["player"]: r["games"] for r in group["ratings"]} == {"noop": 2, "random": 2}


def test_plot_over_time_draws_the_gauntlet_checkpoints_of_members(tmp_path: Path) -> None:
    db, png = tmp_path / "pop.sqlite", tmp_path / "elo.png"
    league_of_two_frame_skips(db)
    assert main(["plot", "--db", str(db), "--over-time", "--out", str(png)]) == 2  # none yet
    with LeagueStore(db) as store:
        checkpoints = [f"pop/p0@{frames}" for frames in (1000, 2000)]
        store.add_players([PlayerRecord(n, "checkpoint", n, n) for n in checkpoints])
        for k, checkpoint in enumerate(checkpoints):
            store.record_game(won_by(checkpoint, "random", f"s{k}", frame_skip=4))
            store.record_game(won_by("noop", checkpoint, f"t{k}", frame_skip=4))
    assert main(["plot", "--db", str(db), "--over-time", "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
