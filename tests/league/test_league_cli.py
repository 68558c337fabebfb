"""``sf-league`` end to end: real (short) Doom games between bots, baselines and checkpoints."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from league_support import make_checkpoint, sf_league

GAME = ("--timelimit", "0.25", "--bootstrap", "200")


def ranks(out: str) -> dict[str, int]:
    return {r["player"]: r["rank"] for r in json.loads(out)["ratings"]}


def test_bots_and_baselines_round_robin_resume_and_outputs(tmp_path: Path) -> None:
    db = tmp_path / "league.sqlite"
    players = ("--players", "bot:2", "noop", "random")
    first = sf_league("evaluate", *players, "--games", "2", "--db", str(db), "--json", *GAME)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["tournament"]["planned"] == 6 and data["tournament"]["played"] == 6
    assert data["games"] == 6
    row = {r["player"]: r for r in data["ratings"]}
    assert set(row) == {"bot:2", "noop", "random"}
    assert row["noop"]["games"] == 4 and row["bot:2"]["wins"] + row["bot:2"]["draws"] <= 4
    for r in data["ratings"]:
        assert r["lower"] <= r["elo"] <= r["upper"]
    # The same command again plays nothing; a larger --games appends only the difference.
    again = sf_league("evaluate", *players, "--games", "2", "--db", str(db), "--json", *GAME)
    assert json.loads(again.stdout)["tournament"]["played"] == 0
    more = sf_league(
        "evaluate", "--players", "bot:2", "noop", "--games", "5", "--db", str(db), "--json", *GAME
    )
    tour = json.loads(more.stdout)["tournament"]
    assert (tour["already_stored"], tour["played"]) == (2, 3)
    # noop never fires: measured on multi_duel it loses or draws every game against bot:2.
    ratings = sf_league(
        "ratings",
        "--db",
        str(db),
        "--json",
        "--anchor",
        "bot:2",
        "--anchor-value",
        "1000",
        check=True,
    )
    result = json.loads(ratings.stdout)
    assert result["games"] == 9
    assert ranks(ratings.stdout)["noop"] > ranks(ratings.stdout)["bot:2"]
    anchored = {r["player"]: r["elo"] for r in result["ratings"]}
    assert anchored["bot:2"] == 1000.0
    table = sf_league("ratings", "--db", str(db), check=True).stdout
    assert "W/D/L" in table and "Cross table" in table
    png = tmp_path / "ratings.png"
    sf_league("plot", "--db", str(db), "--out", str(png), "--bootstrap", "50", check=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM fits").fetchone()[0] == 6
        )  # every table and plot is a stored fit


def test_tiny_checkpoint_plays_and_a_misfit_is_refused(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "duelist", num_actions=6)
    db = tmp_path / "league.sqlite"
    out = sf_league(
        "evaluate",
        "--players",
        str(tmp_path / "duelist"),
        "bot:2",
        "--games",
        "2",
        "--db",
        str(db),
        "--json",
        *GAME,
    )
    assert out.returncode == 0, out.stderr
    names = {r["player"] for r in json.loads(out.stdout)["ratings"]}
    assert names == {"duelist/checkpoint_000000004096", "bot:2"}
    # A network for 4 actions (e.g. trained on basic) cannot play a 6-action duel.
    make_checkpoint(tmp_path / "basic", num_actions=4)
    bad = sf_league("evaluate", "--players", str(tmp_path / "basic"), "bot:2", "--db", str(db))
    assert bad.returncode == 2 and "does not fit this match" in bad.stderr
    # Trained on another observation size than the one asked for: refused too.
    other = sf_league(
        "evaluate",
        "--players",
        f"me={tmp_path / 'duelist'}",
        "bot:2",
        "--obs-size",
        "128x72",
        "--db",
        str(db),
    )
    assert other.returncode == 2 and "does not fit" in other.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 2


def test_bad_input_is_refused_and_nothing_is_lost(tmp_path: Path) -> None:
    db = tmp_path / "league.sqlite"
    cases = {
        ("--players", "random", "chuck-norris"): "unknown player",
        ("--players", "random", "bot:5"): "bot levels 1, 2",
        ("--players", "random"): "at least two players",
        ("--players", "random", str(tmp_path / "nothing-here")): "unknown player",
        ("--players", "bot:1", "bot:2"): "bot against bot",
    }
    for args, message in cases.items():
        proc = sf_league("evaluate", *args, "--db", str(db))
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    empty_run = tmp_path / "empty_run"
    (empty_run / "checkpoints").mkdir(parents=True)
    proc = sf_league("evaluate", "--players", "random", str(empty_run), "--db", str(db))
    assert proc.returncode == 2 and "no checkpoint" in proc.stderr
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not sqlite " * 500)
    proc = sf_league("evaluate", "--players", "random", "bot:1", "--db", str(corrupt))
    assert proc.returncode == 2 and "not a readable SQLite" in proc.stderr
    assert corrupt.read_bytes() == b"not sqlite " * 500
    proc = sf_league("ratings", "--db", str(tmp_path / "missing.sqlite"))
    assert proc.returncode == 2 and "sf-league evaluate" in proc.stderr
