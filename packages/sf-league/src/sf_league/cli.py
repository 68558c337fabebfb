"""The ``sf-league`` command: ``evaluate`` (play a tournament), ``ratings``, ``plot``.

Examples::

    sf-league evaluate --scenario duel_bots --players runs/a random noop bot:1 bot:2 \\
        --games 10 --format round-robin --db league.sqlite
    # Free for all on cig_map02, where bots fight and rank above random (measured; README):
    sf-league evaluate --scenario deathmatch_bots --players random bot:1 b=bot:1 c=bot:1 \\
        --games 12 --timelimit 1 --db ffa.sqlite
    sf-league ratings --db league.sqlite --anchor bot:1 [--json]
    sf-league plot --db league.sqlite --out ratings.png
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from sf_league.players import parse_player
from sf_league.standings import Standings, compute_standings
from sf_league.store import GameRecord, LeagueStore, LeagueStoreError
from sf_league.tournament import (
    DUEL_SCENARIOS,
    FFA_SCENARIOS,
    FORMATS,
    TournamentConfig,
    TournamentError,
    plan_games,
    run_tournament,
)

__all__ = ["main", "print_standings"]


def _size(text: str) -> tuple[int, int]:
    from sf_envs.options import parse_size

    try:
        return parse_size(text, "--obs-size")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _rating_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="the league's SQLite file")
    p.add_argument(
        "--anchor", help="player held at --anchor-value Elo (e.g. bot:1); default: mean 0"
    )
    p.add_argument("--anchor-value", type=float, default=0.0, help="Elo of the anchor (or mean)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the games")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (and of the games)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sf-league", description="Elo-rated tournaments among sf agents and ViZDoom bots."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="play a tournament, store every game, print ratings")
    ev.add_argument(
        "--players",
        nargs="+",
        required=True,
        help="bot:N, random, noop, run folders or checkpoint files; NAME=SPEC names one (e.g. "
        "b=bot:1, a second bot of level 1)",
    )
    ev.add_argument(
        "--scenario",
        default="duel_bots",
        choices=DUEL_SCENARIOS + FFA_SCENARIOS,
        help="duel*: one on one; deathmatch*: free for all",
    )
    ev.add_argument(
        "--map",
        help="map played (default: the scenario's: multi_duel for duels, cig_map02 for free "
        "for all); bot levels are per map",
    )
    ev.add_argument("--format", default="round-robin", choices=FORMATS, help="pairings")
    ev.add_argument(
        "--games", type=int, default=10, help="games per pairing (target; reruns top up)"
    )
    ev.add_argument("--timelimit", type=float, help="minutes of game time per game")
    ev.add_argument("--obs-size", type=_size, help="observation WxH (default: the checkpoints')")
    ev.add_argument("--grayscale", action=argparse.BooleanOptionalAction, help="gray observations")
    ev.add_argument("--frame-skip", type=int, help="tics per agent step")
    ev.add_argument("--workers", type=int, help="game-runner processes (default: CPU cores)")
    ev.add_argument("--json", action="store_true", help="print JSON instead of tables")
    _rating_args(ev)
    ra = sub.add_parser("ratings", help="print the ranked table and the cross table")
    ra.add_argument("--json", action="store_true", help="print JSON instead of tables")
    _rating_args(ra)
    pl = sub.add_parser("plot", help="write a PNG of the ratings with error bars")
    pl.add_argument("--out", required=True, help="PNG file to write")
    _rating_args(pl)
    return parser


def _fmt(x: float) -> str:
    return f"{x:g}"


def print_standings(console: Console, s: Standings) -> None:
    """Prints the ranked table and the cross table of ``s``."""
    anchor = s.settings["anchor"]
    title = f"Ratings over {s.games} games (" + (
        f"{anchor} = {s.settings['anchor_value']:g} Elo)" if anchor else "mean 0)"
    )
    table = Table(title=title)
    for col in ("rank", "player", "Elo", "±", "95% interval", "games", "score %", "W/D/L"):
        table.add_column(col, justify="left" if col == "player" else "right")
    table.add_column("LOS next", justify="right")
    for r in s.rows:
        table.add_row(
            str(r.rank),
            r.player,
            f"{r.elo:.0f}",
            f"{r.plus_minus:.0f}",
            f"[{r.lower:.0f}, {r.upper:.0f}]",
            str(r.games),
            "-" if math.isnan(r.score_pct) else f"{r.score_pct:.1f}",
            "/".join(_fmt(x) for x in (r.wins, r.draws, r.losses)),
            "" if r.los_next is None else f"{r.los_next:.2f}",
        )
    console.print(table)
    cross = Table(title="Cross table (row's W/D/L against column)")
    cross.add_column("")
    names = [r.player for r in s.rows]
    for name in names:
        cross.add_column(name, justify="right")
    for a in names:
        cells = []
        for b in names:
            v = s.cross[a].get(b)
            cells.append("·" if a == b else "" if v is None else "/".join(map(_fmt, v)))
        cross.add_row(a, *cells)
    console.print(cross)


def _standings(args: argparse.Namespace, store: LeagueStore) -> Standings:
    return compute_standings(
        store,
        anchor=args.anchor,
        anchor_value=args.anchor_value,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )


def _evaluate(args: argparse.Namespace, console: Console) -> int:
    config = TournamentConfig(
        scenario=args.scenario,
        map=args.map,
        format=args.format,
        games=args.games,
        timelimit=args.timelimit,
        frame_skip=args.frame_skip,
        obs_size=args.obs_size,
        grayscale=args.grayscale,
        workers=args.workers,
        seed=args.seed,
    )
    problems = config.problems()
    if problems:  # before the players, whose bot levels depend on the map
        raise TournamentError("invalid tournament:\n  - " + "\n  - ".join(problems))
    players = [parse_player(text, config.map_name) for text in args.players]
    plan_games(config, players)  # every check before the league file is opened or created
    with LeagueStore(args.db) as store:
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=args.json,
        )
        with progress:
            task = progress.add_task("games", total=None)

            def on_game(record: GameRecord | None, done: int, total: int) -> None:
                what = (
                    "failed"
                    if record is None
                    else " ".join(f"{s.player} {s.frags:g}" for s in record.seats)
                )
                progress.update(task, completed=done, total=total, description=what[:60])

            try:
                result = run_tournament(config, players, store, on_game)
            except KeyboardInterrupt:
                console.print(
                    f"[yellow]interrupted: {store.count_games()} games are stored in {args.db}; "
                    "rerun the same command to play the rest[/]"
                )
                return 130
        standings = _standings(args, store)
    summary: dict[str, Any] = {
        "planned": result.planned,
        "already_stored": result.already_stored,
        "played": result.played,
        "failed": result.failed,
        "replayed": result.replayed,
    }
    if args.json:
        print(json.dumps({"tournament": summary, **standings.to_json()}, indent=2))
    else:
        console.print(
            f"{result.played} games played, {result.already_stored} already stored, "
            f"{len(result.failed)} failed (of {result.planned} planned)"
            + (f"; {result.replayed} replays after engine crashes" if result.replayed else "")
        )
        print_standings(console, standings)
    return 1 if result.failed else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=getattr(args, "json", False))
    err = Console(stderr=True)
    try:
        if args.command == "evaluate":
            return _evaluate(args, console)
        with LeagueStore(args.db, create=False) as store:
            standings = _standings(args, store)
        if args.command == "ratings":
            if args.json:
                print(json.dumps(standings.to_json(), indent=2))
            else:
                print_standings(console, standings)
        else:
            from sf_league.plot import plot_ratings

            console.print(f"wrote {plot_ratings(standings, args.out)}")
        return 0
    except (LeagueStoreError, ValueError) as e:  # PlayerError, TournamentError, bad settings
        # Unwrapped (paths stay copyable) and escaped (messages quote lists like ['a', 'b']).
        err.print(f"[red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
