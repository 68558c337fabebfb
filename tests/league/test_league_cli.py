"""``sf-league`` end to end: real (short) Doom games between bots, baselines and checkpoints."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from support.league import make_checkpoint, sf_league, train_tiny

from sf_envs.match import bot_ladder
from sf_league.cli import main
from sf_league.store import GameRecord, LeagueStore, Seat
from sf_league.tournament.players import parse_player

GAME = ("--timelimit", "0.25", "--bootstrap", "200")
LADDER = sorted(bot_ladder("multi_duel"))
TOP = f"bot:{LADDER[-1]}"
# Two bots that meet each other, whatever the number of levels the map's ladder has.
LOW = f"low=bot:{LADDER[0]}"
THREE_BOTS = ("a=bot:1", "b=bot:1", "c=bot:1")


def only_group(out: str) -> dict:
    """The one group of comparable games rated in a JSON output."""
    (group,) = json.loads(out)["groups"]
    return group


def ranks(out: str) -> dict[str, int]:
    return {r["player"]: r["rank"] for r in only_group(out)["ratings"]}


def test_bots_and_baselines_round_robin_resume_and_outputs(tmp_path: Path, capsys) -> None:
    db = tmp_path / "league.sqlite"
    players = ("--players", TOP, "noop", "random", LOW)
    # This first tournament runs as a user runs it; the other commands of this file call
    # main() in this process (the same code, without the start-up of a Python with torch).
    first = sf_league("evaluate", *players, "--games", "2", "--db", str(db), "--json", *GAME)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["tournament"]["planned"] == 12 and data["tournament"]["played"] == 12
    group = only_group(first.stdout)
    assert group["games"] == 12
    row = {r["player"]: r for r in group["ratings"]}
    assert set(row) == {TOP, "noop", "random", "low"}
    assert row["noop"]["games"] == 6 and row[TOP]["games"] == 6
    assert sum(row[TOP][k] for k in ("wins", "draws", "losses")) == 6
    # The bots met each other (a spectating host), in games of their own.
    assert sum(group["cross"][TOP]["low"]) == 2
    for r in group["ratings"]:
        assert r["lower"] <= r["elo"] <= r["upper"]
    with sqlite3.connect(db) as conn:
        scenarios = dict(conn.execute("SELECT scenario, COUNT(*) FROM games GROUP BY scenario"))
    assert scenarios == {"duel": 2, "duel_bots": 8, "bot_game": 2}
    # The same command again plays nothing; a larger --games appends only the difference.
    capsys.readouterr()
    assert main(["evaluate", *players, "--games", "2", "--db", str(db), "--json", *GAME]) == 0
    assert json.loads(capsys.readouterr().out)["tournament"]["played"] == 0
    more = ["--players", TOP, "noop", "--games", "5", "--db", str(db), "--json", *GAME]
    assert main(["evaluate", *more]) == 0
    tour = json.loads(capsys.readouterr().out)["tournament"]
    assert (tour["already_stored"], tour["played"]) == (2, 3)
    # noop never fires: measured on multi_duel it loses or draws every game against the bots.
    anchor = ["--anchor", TOP, "--anchor-value", "1000"]
    assert main(["ratings", "--db", str(db), "--json", *anchor]) == 0
    ratings = capsys.readouterr().out
    result = only_group(ratings)
    assert result["games"] == 15
    assert ranks(ratings)["noop"] > ranks(ratings)[TOP]
    anchored = {r["player"]: r["elo"] for r in result["ratings"]}
    assert anchored[TOP] == 1000.0
    assert main(["ratings", "--db", str(db)]) == 0
    table = capsys.readouterr().out
    assert "W/D/L" in table and "Cross table" in table
    png = tmp_path / "ratings.png"
    assert main(["plot", "--db", str(db), "--out", str(png), "--bootstrap", "50"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM fits").fetchone()[0] == 6
        )  # every table and plot is a stored fit


def test_random_ranks_below_the_top_bot_in_free_for_all(tmp_path: Path, capsys) -> None:
    """Where bots fight: cig_map02 free for all (the deathmatch_bots map).

    Measured here (docs/benchmarks/league.md): in one-on-one games the bots barely meet a
    random agent on the cig maps (mostly 0-0 draws), and on multi_duel a random agent's rocket
    spam beats both levels (19/4/7 W/D/L against the top one over 30 one-minute games). In a
    five-player free for all on cig_map02 the bots frag each other and random (about 1.1
    frags per bot-minute against random's -0.03); resampling 30 such games, random ranked
    below the top bot in all of 2000 leagues of 12 games.
    """
    top = f"bot:{max(bot_ladder('cig_map02'))}"
    field = [top, *(f"{name}={top}" for name in ("b", "c", "d"))]
    args = ["--scenario", "deathmatch_bots", "--players", "random", *field, "--games", "12"]
    args += ["--timelimit", "1", "--bootstrap", "100", "--json"]
    assert main(["evaluate", *args, "--db", str(tmp_path / "ffa.sqlite")]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["tournament"]["played"] == 12
    assert ranks(out)["random"] > ranks(out)[top]


@pytest.fixture(scope="module")
def duelist(tmp_path_factory) -> Path:
    """A run folder trained by sf-train on the single-agent duel (a few hundred frames, tiny
    network), with Sample Factory's controls; shared by the tests that play it."""
    run = tmp_path_factory.mktemp("duelist") / "run"
    train_tiny(run, "sf/DoomDuelBots-v0", 256, "action_set=sample_factory")
    return run


def test_tiny_trained_checkpoint_plays_and_a_misfit_is_refused(
    duelist: Path, tmp_path: Path, capsys
) -> None:
    db = tmp_path / "league.sqlite"
    args = ["--players", f"duelist={duelist}", TOP, "noop", "--games", "2", "--json", *GAME]
    assert main(["evaluate", *args, "--db", str(db)]) == 0
    row = {r["player"]: r for r in only_group(capsys.readouterr().out)["ratings"]}
    assert set(row) == {"duelist", TOP, "noop"} and row["duelist"]["games"] == 4
    with sqlite3.connect(db) as conn:
        (settings,) = conn.execute(
            "SELECT DISTINCT settings FROM games WHERE key LIKE 'duel_bots|%' AND key LIKE "
            "'%duelist%'"
        ).fetchone()
    # The match took the checkpoint's own observation settings.
    assert json.loads(settings)["obs_size"] == [32, 24]
    # A network for 4 actions (e.g. trained on basic) cannot play a 6-action duel.
    make_checkpoint(tmp_path / "basic", num_actions=4)
    # Refusals happen before any game, so they are checked in this process (no engine).
    assert main(["evaluate", "--players", str(tmp_path / "basic"), TOP, "--db", str(db)]) == 2
    assert "does not fit this match" in capsys.readouterr().err
    # Trained on another observation size than the one asked for: refused too.
    me = f"me={duelist}"
    assert main(["evaluate", "--players", me, TOP, "--obs-size", "128x72", "--db", str(db)]) == 2
    assert "does not fit" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 6


def test_a_checkpoint_with_sample_factory_controls_plays_with_them(
    duelist: Path, tmp_path: Path, capsys
) -> None:
    db = tmp_path / "league.sqlite"
    args = ["--players", f"heads={duelist}", "random", "--games", "1", "--json", *GAME]
    assert main(["evaluate", *args, "--db", str(db)]) == 0
    assert {r["player"] for r in only_group(capsys.readouterr().out)["ratings"]} == {
        "heads",
        "random",
    }
    with sqlite3.connect(db) as conn:
        (settings,) = conn.execute("SELECT settings FROM games").fetchone()
    assert json.loads(settings)["action_set"] == "sample_factory"  # the checkpoint's own
    assert main(["evaluate", "--players", str(duelist), "random", "--action-set", "discrete",
                 "--db", str(db)]) == 2  # fmt: skip
    assert "--action-set" in capsys.readouterr().err


def test_bad_input_is_refused_and_nothing_is_lost(tmp_path: Path, capsys) -> None:
    db = tmp_path / "league.sqlite"
    with LeagueStore(db) as store:  # a league with one game already stored
        store.add_player(parse_player("random", "multi_duel").record())
        store.add_player(parse_player(TOP, "multi_duel").record())
        store.record_game(GameRecord("g0", "duel_bots", (Seat("random", 1, 2), Seat(TOP, 2))))
    league = db.read_bytes()
    broken_run = tmp_path / "broken_run"
    make_checkpoint(broken_run, num_actions=6).write_bytes(b"not a checkpoint")
    empty_run = tmp_path / "empty_run"
    (empty_run / "checkpoints").mkdir(parents=True)
    cases = {
        ("--players", "random", "chuck-norris"): "unknown player 'chuck-norris'",
        ("--players", "random", f"bot:{LADDER[-1] + 1}"): f"use {TOP} for the strongest",
        ("--players", "random"): "at least two players",
        ("--players", "random", "random"): "named more than once",
        ("--players", "random", str(tmp_path / "nothing-here")): "no such checkpoint file",
        ("--players", "random", str(empty_run)): "no checkpoint",
        ("--players", "random", str(broken_run)): "player broken_run/",
        ("--players", "random", "noop", "--map", "e1m1"): "unknown map 'e1m1'",
        ("--players", "random", "noop", "--games", "0"): "play at least 1 game",
        ("--players", *THREE_BOTS, "--scenario", "deathmatch_bots", "--map", "multi_duel"): (
            "at most 2 bots"
        ),
    }
    for args, message in cases.items():
        assert main(["evaluate", *args, "--db", str(db)]) == 2, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
    # Refused before the league file is even created.
    fresh = tmp_path / "fresh.sqlite"
    assert main(["evaluate", "--players", "random", "--db", str(fresh)]) == 2
    assert not fresh.exists() and "at least two" in capsys.readouterr().err
    assert main(["ratings", "--db", str(db), "--anchor", "nobody"]) == 2
    assert "--anchor 'nobody' is not a player" in capsys.readouterr().err
    assert db.read_bytes() == league  # nothing written, nothing lost
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not sqlite " * 500)
    for path, message in ((foreign, "another program"), (corrupt, "not a readable SQLite")):
        before = path.read_bytes()
        for command in (["evaluate", "--players", "random", "noop"], ["ratings"], ["plot"]):
            extra = ["--out", str(tmp_path / "r.png")] if command == ["plot"] else []
            assert main([*command, "--db", str(path), *extra]) == 2
            assert message in capsys.readouterr().err
        assert path.read_bytes() == before
    assert main(["ratings", "--db", str(tmp_path / "missing.sqlite")]) == 2
    assert "sf-league evaluate" in capsys.readouterr().err
    assert not (tmp_path / "missing.sqlite").exists()
    assert main(["plot", "--db", str(db), "--out", str(tmp_path / "r.jpg")]) == 2
    assert "name a .png file" in capsys.readouterr().err


def test_a_bug_keeps_its_traceback(tmp_path: Path, monkeypatch) -> None:
    """Only errors about what the user gave print as one line; a ValueError from inside is a bug."""
    db = tmp_path / "league.sqlite"
    with LeagueStore(db) as store:
        store.add_player(parse_player("random", "multi_duel").record())

    def broken(*args, **kwargs):
        raise ValueError("an internal invariant broke")

    monkeypatch.setattr("sf_league.cli._standings", broken)
    with pytest.raises(ValueError, match="an internal invariant broke"):
        main(["ratings", "--db", str(db)])


def test_ray_without_the_extra_or_a_cluster_is_refused_before_the_league(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    db = tmp_path / "league.sqlite"
    args = ["evaluate", "--players", "noop", "random", "--db", str(db)]
    monkeypatch.setitem(sys.modules, "ray", None)  # as without the extra: import fails
    assert main([*args, "--ray"]) == 2
    assert "pip install 'sf-league[ray]'" in capsys.readouterr().err
    monkeypatch.undo()
    if importlib.util.find_spec("ray") is not None:  # nobody listens on port 1
        assert main([*args, "--ray", "127.0.0.1:1"]) == 2
        assert "no Ray cluster answers at '127.0.0.1:1'" in capsys.readouterr().err
    assert not db.exists()
