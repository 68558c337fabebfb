"""The league file: transactions, resume semantics, foreign and corrupt files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sf_league.store import (
    FailedGame,
    GameRecord,
    LeagueStore,
    LeagueStoreError,
    PBTEvent,
    PlayerRecord,
    Seat,
)

RANDOM = PlayerRecord("random", "baseline", "random", "random")
BOT = PlayerRecord("bot:2", "bot", "2", "multi_duel:2")


def game(key: str, a: float = 1.0, b: float = 0.0) -> GameRecord:
    return GameRecord(key, "duel_bots", (Seat("random", a, 2.0), Seat("bot:2", b)), {"map": "x"})


def test_games_round_trip_and_keys_are_unique(tmp_path: Path) -> None:
    path = tmp_path / "league.sqlite"
    with LeagueStore(path) as store:
        store.add_player(RANDOM)
        store.add_player(BOT)
        store.add_player(RANDOM)  # the same player again is fine
        assert store.record_game(game("g0"))
        assert not store.record_game(game("g0", 5.0))  # a rerun never duplicates a game
        assert store.record_game(game("g1", 0.0, 3.0))
    with LeagueStore(path, create=False) as store:
        games = list(store.games())
        assert [g.key for g in games] == ["g0", "g1"]
        assert games[0].seats == (Seat("random", 1.0, 2.0), Seat("bot:2", 0.0, None))
        assert games[0].settings == {"map": "x"}
        assert store.game_keys() == {"g0", "g1"}
        assert [p.name for p in store.players()] == ["random", "bot:2"]


def test_same_name_other_player_is_refused(tmp_path: Path) -> None:
    with LeagueStore(tmp_path / "l.sqlite") as store:
        store.add_player(PlayerRecord("a", "checkpoint", "/x.pt", "hash1"))
        with pytest.raises(LeagueStoreError, match="another name"):
            store.add_player(PlayerRecord("a", "checkpoint", "/y.pt", "hash2"))
        # All or nothing: a refused player keeps the others of its tournament out too.
        with pytest.raises(LeagueStoreError, match="another name"):
            store.add_players([RANDOM, PlayerRecord("a", "checkpoint", "/y.pt", "hash2")])
        assert [p.name for p in store.players()] == ["a"]
        store.add_player(BOT)
        recalibrated = PlayerRecord("bot:2", "bot", "2", "multi_duel:2:other")
        with pytest.raises(LeagueStoreError, match=r"recalibrated.*NEWNAME=bot:2"):
            store.add_player(recalibrated)
        store.add_player(PlayerRecord("scripted:2", "scripted", "2", "scripted:aaaa"))
        retuned = PlayerRecord("scripted:2", "scripted", "2", "scripted:bbbb")
        with pytest.raises(LeagueStoreError, match=r"other knobs.*NEWNAME=scripted:2"):
            store.add_player(retuned)


def test_failed_game_rolls_back_completely(tmp_path: Path) -> None:
    with LeagueStore(tmp_path / "l.sqlite") as store:
        store.add_player(RANDOM)
        bad = GameRecord("g", "duel", (Seat("random", 1.0), Seat("nobody", 0.0)))
        with pytest.raises(LeagueStoreError, match="nobody"):
            store.record_game(bad)
        assert store.count_games() == 0
        assert list(store.games()) == []


def test_fits_are_stored_with_settings(tmp_path: Path) -> None:
    with LeagueStore(tmp_path / "l.sqlite") as store:
        store.add_player(RANDOM)
        store.add_player(BOT)
        fit_id = store.record_fit(
            {"anchor": "bot:2"}, 7, {"random": (-100.0, -150, -50), "bot:2": (0, 0, 0)}
        )
        (fit,) = store.fits()
        assert fit.id == fit_id and fit.games == 7 and fit.settings == {"anchor": "bot:2"}
        assert fit.ratings["random"] == (-100.0, -150.0, -50.0)


def test_missing_foreign_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(LeagueStoreError, match="sf-league evaluate"):
        LeagueStore(tmp_path / "none.sqlite", create=False)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE customers (id INTEGER)")
        db.execute("INSERT INTO customers VALUES (42)")
    before = foreign.read_bytes()
    with pytest.raises(LeagueStoreError, match=r"another program.*customers"):
        LeagueStore(foreign)
    assert foreign.read_bytes() == before
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database at all" * 100)
    before = corrupt.read_bytes()
    with pytest.raises(LeagueStoreError, match="not a readable SQLite"):
        LeagueStore(corrupt)
    assert corrupt.read_bytes() == before
    with pytest.raises(LeagueStoreError, match="folder"):
        LeagueStore(tmp_path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    LeagueStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(LeagueStoreError, match="schema version 99"):
        LeagueStore(path)


def _older_league(path: Path, version: int, missing: tuple[str, ...]) -> None:
    """A league with one game as schema ``version`` wrote it: without the ``missing`` tables."""
    with LeagueStore(path) as store:
        store.add_players([PlayerRecord("a", "baseline", "random", "random")])
        store.add_players([PlayerRecord("b", "baseline", "noop", "noop")])
        store.record_game(GameRecord("g0", "duel", (Seat("a", 1), Seat("b", 0))))
    with sqlite3.connect(path) as db:
        for table in missing:
            db.execute(f"DROP TABLE {table}")
        db.execute(f"UPDATE meta SET value = '{version}' WHERE key = 'schema_version'")


def test_a_version_1_league_is_upgraded_and_keeps_its_games(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    _older_league(path, 1, ("failed_games", "pbt_events"))
    with LeagueStore(path) as store:
        assert store.game_keys() == {"g0"} and store.failed_games() == []
        store.record_failure(FailedGame("g1", "duel", ("a", "b"), {}, 3, "engine crashed"))
        store.record_failure(FailedGame("g1", "duel", ("a", "b"), {}, 3, "engine crashed again"))
        assert [(f.key, f.attempts, f.reason) for f in store.failed_games()] == [
            ("g1", 6, "engine crashed again")
        ]
        store.record_game(GameRecord("g1", "duel", (Seat("a", 0), Seat("b", 0))))
        assert store.failed_games() == []  # played at last


def test_a_version_2_league_gains_the_lineage_table_and_keeps_its_games(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    _older_league(path, 2, ("pbt_events",))
    with LeagueStore(path) as store:
        assert store.game_keys() == {"g0"} and store.pbt_events() == []
        event = PBTEvent("runs/pop", 400, 1, 1, "exploit", 0, {"score": [0.2, 0.7]})
        store.record_pbt_event(event)
        store.record_pbt_event(PBTEvent("runs/other", 500, 0, 1, "explore", None, {}))
        assert store.pbt_events("runs/pop") == [event]
        assert [e.run for e in store.pbt_events()] == ["runs/pop", "runs/other"]
