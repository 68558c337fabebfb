"""One SQLite file per league: players, games with per-player frags and deaths, rating fits,
and the exploit/explore events of population training (its lineage).

Why SQLite: one file the user can copy, no server, and transactions — every game is committed
on its own, so a tournament killed at any moment keeps every finished game, and a half-written
game is rolled back by SQLite itself on the next open. Games carry a unique key (pairing,
settings, game number), so a rerun skips what is stored and plays only the rest.

The file is stamped (``PRAGMA application_id`` and a ``meta`` table with the schema version)
so a foreign or corrupt file is refused before anything is written to it.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

__all__ = [
    "SCHEMA_VERSION",
    "FailedGame",
    "FitRecord",
    "GameRecord",
    "LeagueStore",
    "LeagueStoreError",
    "PBTEvent",
    "PlayerRecord",
    "Seat",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 3  # 2 added failed_games, 3 pbt_events; older leagues are upgraded when opened
APPLICATION_ID = 0x7366_4C47  # "sfLG": marks the file as an sf-league database

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE players (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    added_at REAL NOT NULL
);
CREATE TABLE games (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    scenario TEXT NOT NULL,
    settings TEXT NOT NULL,
    seed INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    finished_at REAL NOT NULL
);
CREATE TABLE game_players (
    game_id INTEGER NOT NULL REFERENCES games(id),
    player_id INTEGER NOT NULL REFERENCES players(id),
    seat INTEGER NOT NULL,
    frags REAL NOT NULL,
    deaths REAL,
    PRIMARY KEY (game_id, player_id)
);
CREATE TABLE failed_games (
    key TEXT PRIMARY KEY,
    scenario TEXT NOT NULL,
    players TEXT NOT NULL,
    settings TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    reason TEXT NOT NULL,
    failed_at REAL NOT NULL
);
CREATE TABLE fits (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    settings TEXT NOT NULL,
    games INTEGER NOT NULL
);
CREATE TABLE fit_ratings (
    fit_id INTEGER NOT NULL REFERENCES fits(id),
    player_id INTEGER NOT NULL REFERENCES players(id),
    elo REAL NOT NULL,
    lower REAL NOT NULL,
    upper REAL NOT NULL,
    PRIMARY KEY (fit_id, player_id)
);
CREATE TABLE pbt_events (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    frames INTEGER NOT NULL,
    policy INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    kind TEXT NOT NULL,
    parent INTEGER,
    changes TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""

_ADDED_IN = {2: ("failed_games",), 3: ("pbt_events",)}
"""The tables each schema version added, created when an older league is opened."""


# Why a bot or scripted level can have another fingerprint under the same name.
_RECALIBRATED = {
    "bot": " (the same level with other engine parameters: sf-envs recalibrated the map's bot "
    "ladder)",
    "scripted": " (the same level with other knobs: sf-envs recalibrated the map's scripted "
    "ladder)",
}


class LeagueStoreError(RuntimeError):
    """The league file cannot be used as asked; the message names the file and the fix."""


@dataclass(frozen=True)
class PlayerRecord:
    """A player of the league.

    Attributes:
        name: Unique name in the league (``bot:2``, ``random``, ``runs/a/checkpoint_...``).
        kind: ``bot``, ``baseline`` or ``checkpoint``.
        spec: What plays: the bot level, the baseline name, the checkpoint path.
        fingerprint: Identity of what plays (a checkpoint's content hash), so one name never
            silently stands for two different policies.
    """

    name: str
    kind: str
    spec: str
    fingerprint: str


@dataclass(frozen=True)
class Seat:
    """One player's outcome in a game (``deaths`` is None where the engine does not report it,
    e.g. for scripted bots)."""

    player: str
    frags: float
    deaths: float | None = None


@dataclass(frozen=True)
class GameRecord:
    """One finished game.

    Attributes:
        key: Unique key: the same key is the same scheduled game, so reruns skip it.
        scenario: Match scenario played (``duel_bots``, ``deathmatch`` ...).
        seats: Every player's outcome, in seat order.
        settings: Match settings (map, time limit, frame skip ...), JSON-ready.
        seed: Seed of the match.
        steps: Agent steps played.
        duration_s: Wall-clock seconds the game took.
    """

    key: str
    scenario: str
    seats: tuple[Seat, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    steps: int = 0
    duration_s: float = 0.0


@dataclass(frozen=True)
class FailedGame:
    """A scheduled game that failed on every attempt: not rated, played again by a rerun.

    Attributes:
        key: The game's key (a stored game with this key replaces the failure).
        scenario: Match scenario it was to play.
        players: League names of its players, in seat order.
        settings: Its match settings, as a played game would store them.
        attempts: Attempts that failed, over every run that tried it.
        reason: Why the last attempt failed (an engine error, a traceback, a game process's death).
    """

    key: str
    scenario: str
    players: tuple[str, ...]
    settings: dict[str, Any]
    attempts: int
    reason: str


@dataclass(frozen=True)
class PBTEvent:
    """One change of a population member.

    Attributes:
        run: The population's run folder.
        frames: The run's env frames when it happened.
        policy: The member changed.
        generation: The member's generation after the change (exploits start a new one).
        kind: ``exploit`` (copied ``parent``'s weights, optimiser, hyperparameters and
            shaping) or ``explore`` (mutated its own).
        parent: The member copied (exploits only).
        changes: ``{name: [old, new]}`` of every hyperparameter or ``shaping.NAME`` changed;
            an exploit also records the scores that decided it (``score``: [target, source]).
    """

    run: str
    frames: int
    policy: int
    generation: int
    kind: str
    parent: int | None
    changes: dict[str, list[float]]


@dataclass(frozen=True)
class FitRecord:
    """A stored rating fit: its settings, games used and ``{player: (elo, lower, upper)}``."""

    id: int
    created_at: float
    settings: dict[str, Any]
    games: int
    ratings: dict[str, tuple[float, float, float]]


class LeagueStore:
    """The league database at ``path``; use as a context manager.

    Args:
        path: The SQLite file.
        create: Create the league when the file does not exist (or is empty); otherwise a
            missing file is an error naming the command that creates it.

    Raises:
        LeagueStoreError: If the file is not an sf-league database, is corrupt, or was written
            by a newer schema. The file is not modified in those cases.
    """

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        exists = self.path.is_file() and self.path.stat().st_size > 0
        if not exists and not create:
            raise LeagueStoreError(
                f"no league at {self.path}: run sf-league evaluate --db {self.path} first"
            )
        if self.path.is_dir():
            raise LeagueStoreError(
                f"--db {self.path} is a folder; name a file such as league.sqlite"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT), one per write.
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            if exists:
                self._check()
            else:
                self._create()
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise LeagueStoreError(
                f"{self.path} is not a readable SQLite database ({e}); it was left untouched: "
                "name a new --db file, or restore this one from a copy"
            ) from e
        except BaseException:
            self._db.close()
            raise

    def _check(self) -> None:
        app = self._db.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if app != APPLICATION_ID or "meta" not in tables:
            raise LeagueStoreError(
                f"{self.path} is an SQLite file of another program (tables: "
                f"{', '.join(sorted(tables)) or 'none'}), not an sf-league database; it was left "
                "untouched: name a new --db file"
            )
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else None
        if version in (1, 2):
            self._upgrade_from(version)
            return
        if version != SCHEMA_VERSION:
            raise LeagueStoreError(
                f"{self.path} has league schema version {version}; this sf-league reads version "
                f"{SCHEMA_VERSION}: use the sf-league that wrote it, or a new --db file"
            )

    def _create(self) -> None:
        with self._transaction() as db:
            # Not executescript: it commits on its own, outside this transaction.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('created_at', ?)",
                (str(SCHEMA_VERSION), str(time.time())),
            )
        logger.info("created league %s", self.path)

    def _upgrade_from(self, version: int) -> None:
        """Adds the (empty) tables of the later versions, keeps the rest."""
        with self._transaction() as db:
            for later in range(version + 1, SCHEMA_VERSION + 1):
                for table in _ADDED_IN[later]:
                    statement = _SCHEMA[_SCHEMA.index(f"CREATE TABLE {table}") :].split(";")[0]
                    db.execute(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
        logger.info("upgraded league %s to schema version %d", self.path, SCHEMA_VERSION)

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, exc_type: object, *rest: object) -> None:
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")

    def _transaction(self) -> LeagueStore._Tx:
        return LeagueStore._Tx(self._db)

    def close(self) -> None:
        """Closes the file; idempotent."""
        self._db.close()

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Players -------------------------------------------------------------------------------

    def add_player(self, player: PlayerRecord) -> None:
        """Registers ``player``; see :meth:`add_players`."""
        self.add_players([player])

    def add_players(self, players: Sequence[PlayerRecord]) -> None:
        """Registers ``players`` in one transaction: all of them, or none if one is refused.

        A player already registered under its name must be the same one (kind and
        fingerprint).

        Raises:
            LeagueStoreError: If a name is taken by a different player (another checkpoint
                under the same name, or a bot level whose parameters were recalibrated).
        """
        with self._transaction() as db:
            for player in players:
                row = db.execute(
                    "SELECT kind, spec, fingerprint FROM players WHERE name = ?", (player.name,)
                ).fetchone()
                if row is None:
                    db.execute(
                        "INSERT INTO players (name, kind, spec, fingerprint, added_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (player.name, player.kind, player.spec, player.fingerprint, time.time()),
                    )
                elif (row[0], row[2]) != (player.kind, player.fingerprint):
                    spec = player.spec
                    if player.kind in _RECALIBRATED:
                        spec = f"{player.kind}:{spec}"
                    why = _RECALIBRATED.get(player.kind, "") if player.kind == row[0] else ""
                    raise LeagueStoreError(
                        f"player {player.name!r} in {self.path} is a different {row[0]} "
                        f"({row[1]}){why}; give the new one another name (NEWNAME={spec}) or "
                        "use another --db"
                    )

    def players(self) -> list[PlayerRecord]:
        """Every player, in the order they joined."""
        rows = self._db.execute("SELECT name, kind, spec, fingerprint FROM players ORDER BY id")
        return [PlayerRecord(*r) for r in rows]

    # Games ---------------------------------------------------------------------------------

    def record_game(self, game: GameRecord) -> bool:
        """Stores one game in its own transaction; False if its key was already stored. A
        failure stored under the same key (an earlier run's) is deleted: the game was played.

        Raises:
            LeagueStoreError: If a seat names a player that was never added.
        """
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM games WHERE key = ?", (game.key,)).fetchone():
                return False
            ids = {}
            for seat in game.seats:
                row = db.execute("SELECT id FROM players WHERE name = ?", (seat.player,)).fetchone()
                if row is None:
                    raise LeagueStoreError(f"game {game.key} names unknown player {seat.player!r}")
                ids[seat.player] = row[0]
            cur = db.execute(
                "INSERT INTO games (key, scenario, settings, seed, steps, duration_s, finished_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    game.key,
                    game.scenario,
                    json.dumps(game.settings, sort_keys=True),
                    game.seed,
                    game.steps,
                    game.duration_s,
                    time.time(),
                ),
            )
            db.executemany(
                "INSERT INTO game_players VALUES (?, ?, ?, ?, ?)",
                [
                    (cur.lastrowid, ids[s.player], k, s.frags, s.deaths)
                    for k, s in enumerate(game.seats)
                ],
            )
            db.execute("DELETE FROM failed_games WHERE key = ?", (game.key,))
        return True

    def record_failure(self, failed: FailedGame) -> None:
        """Stores a game that failed on every attempt (adding to the attempts of an earlier
        run's failure of the same game), in its own transaction.

        Raises:
            LeagueStoreError: If the game is already stored as played.
        """
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM games WHERE key = ?", (failed.key,)).fetchone():
                raise LeagueStoreError(f"game {failed.key} is stored as played, not failed")
            row = db.execute(
                "SELECT attempts FROM failed_games WHERE key = ?", (failed.key,)
            ).fetchone()
            db.execute(
                "INSERT OR REPLACE INTO failed_games VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    failed.key,
                    failed.scenario,
                    json.dumps(list(failed.players)),
                    json.dumps(failed.settings, sort_keys=True),
                    failed.attempts + (row[0] if row else 0),
                    failed.reason,
                    time.time(),
                ),
            )

    def failed_games(self) -> list[FailedGame]:
        """Every game that failed on every attempt and was not played since, oldest first."""
        rows = self._db.execute(
            "SELECT key, scenario, players, settings, attempts, reason FROM failed_games "
            "ORDER BY failed_at"
        )
        return [
            FailedGame(key, scenario, tuple(json.loads(names)), json.loads(settings), n, reason)
            for key, scenario, names, settings, n, reason in rows
        ]

    def game_keys(self) -> set[str]:
        """Keys of every stored game."""
        return {r[0] for r in self._db.execute("SELECT key FROM games")}

    def games(self) -> Iterator[GameRecord]:
        """Every stored game in the order finished."""
        seats: dict[int, list[Seat]] = {}
        for game_id, name, frags, deaths in self._db.execute(
            "SELECT gp.game_id, p.name, gp.frags, gp.deaths FROM game_players gp "
            "JOIN players p ON p.id = gp.player_id ORDER BY gp.game_id, gp.seat"
        ):
            seats.setdefault(game_id, []).append(Seat(name, frags, deaths))
        for game_id, key, scenario, settings, seed, steps, duration in self._db.execute(
            "SELECT id, key, scenario, settings, seed, steps, duration_s FROM games ORDER BY id"
        ):
            yield GameRecord(
                key,
                scenario,
                tuple(seats.get(game_id, ())),
                json.loads(settings),
                seed,
                steps,
                duration,
            )

    def count_games(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0]

    # Population training -------------------------------------------------------------------

    def record_pbt_event(self, event: PBTEvent) -> None:
        """Stores one exploit or explore event in its own transaction."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO pbt_events (run, frames, policy, generation, kind, parent, changes, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.run,
                    event.frames,
                    event.policy,
                    event.generation,
                    event.kind,
                    event.parent,
                    json.dumps(event.changes, sort_keys=True),
                    time.time(),
                ),
            )

    def pbt_events(self, run: str | None = None) -> list[PBTEvent]:
        """Every event (of ``run`` only, if given), in the order they happened."""
        query = "SELECT run, frames, policy, generation, kind, parent, changes FROM pbt_events"
        rows = (
            self._db.execute(query + " WHERE run = ? ORDER BY id", (run,))
            if run is not None
            else self._db.execute(query + " ORDER BY id")
        )
        return [PBTEvent(r, f, p, g, k, parent, json.loads(c)) for r, f, p, g, k, parent, c in rows]

    # Fits ----------------------------------------------------------------------------------

    def record_fit(
        self,
        settings: dict[str, Any],
        games: int,
        ratings: dict[str, tuple[float, float, float]],
    ) -> int:
        """Stores a rating fit with its settings; returns its id."""
        with self._transaction() as db:
            cur = db.execute(
                "INSERT INTO fits (created_at, settings, games) VALUES (?, ?, ?)",
                (time.time(), json.dumps(settings, sort_keys=True), games),
            )
            fit_id = cast(int, cur.lastrowid)  # set by an INSERT
            db.executemany(
                "INSERT INTO fit_ratings SELECT ?, id, ?, ?, ? FROM players WHERE name = ?",
                [(fit_id, e, lo, hi, name) for name, (e, lo, hi) in ratings.items()],
            )
        return int(fit_id)

    def fits(self) -> list[FitRecord]:
        """Every stored fit, oldest first."""
        out = []
        for fit_id, created, settings, games in list(
            self._db.execute("SELECT id, created_at, settings, games FROM fits ORDER BY id")
        ):
            ratings = {
                name: (elo, lo, hi)
                for name, elo, lo, hi in self._db.execute(
                    "SELECT p.name, r.elo, r.lower, r.upper FROM fit_ratings r "
                    "JOIN players p ON p.id = r.player_id WHERE r.fit_id = ?",
                    (fit_id,),
                )
            }
            out.append(FitRecord(fit_id, created, json.loads(settings), games, ratings))
        return out
