"""The ``sf-league`` command: ``evaluate`` (play a tournament), ``ratings``, ``plot``, ``train``
(a population by self-play and PBT, :mod:`sf_league.population.commands`) and ``lineage``.

Examples::

    sf-league evaluate --scenario duel_bots --players runs/a random noop bot:1 bot:2 \\
        --games 10 --format round-robin --db league.sqlite
    # Free for all on cig_map02 among a random agent and three level-1 bots:
    sf-league evaluate --scenario deathmatch_bots --players random bot:1 b=bot:1 c=bot:1 \\
        --games 12 --timelimit 1 --db ffa.sqlite
    sf-league ratings --db league.sqlite --anchor bot:1 [--json]
    sf-league ratings --db league.sqlite --map multi_duel --timelimit 0.25   # one group
    sf-league plot --db league.sqlite --out ratings.png
    # The same games as Ray actors over a cluster (sf-league[ray]; sf_league.tournament.ray_games):
    sf-league evaluate --ray auto --players runs/a random noop bot:1 --db league.sqlite

Games are rated in groups of equal settings (kind of game, map, time limit, frame skip): one
table (one plot panel) per group, never one fit across them (sf_league.ratings.groups).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from sf_envs.actions import ACTION_SETS
from sf_envs.errors import OptionError
from sf_envs.terminal import DefaultsHelpFormatter, LineProgress, make_console
from sf_league.population.commands import (
    add_lineage_parser,
    add_train_parser,
    run_lineage,
    run_train,
)
from sf_league.population.training import TRAINING
from sf_league.ratings.groups import GroupSelection, group_of
from sf_league.ratings.standings import Standings, compute_standings
from sf_league.store import FailedGame, GameRecord, LeagueStore, LeagueStoreError
from sf_league.tournament.game import GameJob
from sf_league.tournament.players import PlayerError, parse_player
from sf_league.tournament.ray_games import ClusterError
from sf_league.tournament.schedule import (
    DUEL_SCENARIOS,
    FFA_SCENARIOS,
    FORMATS,
    TournamentConfig,
    TournamentError,
    plan_games,
    run_tournament,
)

__all__ = ["main", "print_failed", "print_standings"]

_GROUPS_HELP = (
    "Games are rated in groups of equal settings (duel or deathmatch, map, time limit, frame "
    "skip; bot-only games count in every group of their map and time limit): one table per "
    "group, each under a header naming its settings and the options that select it alone."
)


def _user_errors() -> tuple[type[Exception], ...]:
    """Problems with what the user gave (flags, players, league files, run folders), which
    print as one line; anything else is a bug and keeps its traceback. sf-train's are imported
    only here, when something failed: importing them imports torch, seconds that a command
    playing only bots and baselines need not wait."""
    from sf_train.config.schema import ConfigError
    from sf_train.run.checkpoint import CheckpointError
    from sf_train.run.folder import RunFolderError

    return (
        LeagueStoreError,
        PlayerError,
        TournamentError,
        OptionError,
        ClusterError,
        ConfigError,
        RunFolderError,
        CheckpointError,
    )


def _size(text: str) -> tuple[int, int]:
    from sf_envs.options import parse_size

    try:
        return parse_size(text, "--obs-size")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _rating_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="the league's SQLite file")
    p.add_argument(
        "--anchor",
        help="player held at --anchor-value Elo, e.g. bot:1 (default: none, the mean rating is "
        "held there)",
    )
    p.add_argument(
        "--anchor-value",
        type=float,
        default=0.0,
        help="Elo given to the anchor, or to the mean rating without one",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="bootstrap resamples of the games, for the error bars and intervals",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the games")


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scenario",
        choices=("duel", "deathmatch", *DUEL_SCENARIOS[1:], *FFA_SCENARIOS[1:], TRAINING),
        help="rate only games of this kind; duel_bots selects the same games as duel, "
        "deathmatch_bots as deathmatch, and training selects the matches of sf-league train "
        "among its members (default: every kind)",
    )
    p.add_argument("--map", help="rate only games on this map (default: every map)")
    p.add_argument(
        "--timelimit",
        type=float,
        help="rate only games of this many minutes (default: every time limit)",
    )
    p.add_argument(
        "--frame-skip",
        type=int,
        help="rate only games at this frame skip (default: every frame skip)",
    )


def _selection(args: argparse.Namespace) -> GroupSelection:
    return GroupSelection(args.scenario, args.map, args.timelimit, args.frame_skip)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sf-league",
        description="Elo-rated tournaments among sf agents and ViZDoom bots.",
        formatter_class=DefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser(
        "evaluate",
        help="play a tournament, store every game, print ratings",
        description="Plays the games of the tournament not yet stored in --db, then prints the "
        "ratings of the games played under this tournament's settings (other games of the "
        "league are rated separately: sf-league ratings). " + _GROUPS_HELP,
        formatter_class=DefaultsHelpFormatter,
    )
    ev.add_argument(
        "--players",
        nargs="+",
        required=True,
        help="bot:N (an engine bot at level N of the map's ladder), scripted:N, random, noop, "
        "run folders or checkpoint files; NAME=SPEC names one (e.g. b=bot:1, a second bot of level 1)",
    )
    ev.add_argument(
        "--scenario",
        default="duel_bots",
        choices=DUEL_SCENARIOS + FFA_SCENARIOS,
        help="the match played: duel*, one on one; deathmatch*, free for all",
    )
    ev.add_argument(
        "--map",
        help="map played; bot levels are per map (default: the scenario's, multi_duel for "
        "duels, cig_map02 for free for all)",
    )
    ev.add_argument(
        "--format",
        default="round-robin",
        choices=FORMATS,
        help="pairings: round-robin, every pair of players; gauntlet, the first player against "
        "each of the others",
    )
    ev.add_argument(
        "--games",
        type=int,
        default=10,
        help="games per pairing; a rerun plays only the games not yet stored",
    )
    ev.add_argument(
        "--timelimit",
        type=float,
        help="minutes of game time per game (default: the scenario's, 2 for duels, 4 for free "
        "for all)",
    )
    ev.add_argument(
        "--obs-size",
        type=_size,
        help="observation WxH (default: the checkpoints' own, else 64x36)",
    )
    ev.add_argument(
        "--grayscale",
        action=argparse.BooleanOptionalAction,
        help="gray observations (default: the checkpoints' own, else gray)",
    )
    ev.add_argument(
        "--action-set",
        choices=ACTION_SETS,
        help="the agents' controls (default: the checkpoints' own, else discrete)",
    )
    ev.add_argument(
        "--frame-skip",
        type=int,
        help="game tics per agent step (default: the checkpoints' own, else 4)",
    )
    ev.add_argument(
        "--workers",
        type=int,
        help="game processes (default: one per CPU core, of the whole cluster with --ray)",
    )
    ev.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="play the games as Ray actors over a cluster: auto (the cluster running on this "
        "machine), HOST:PORT, or no address to start Ray here; needs sf-league[ray] (default: "
        "no Ray, game processes on this machine)",
    )
    ev.add_argument("--json", action="store_true", help="print JSON instead of tables")
    _rating_args(ev)
    ra = sub.add_parser(
        "ratings",
        help="print the ranked table and the cross table of each group of comparable games",
        description=_GROUPS_HELP + " Games that failed on every attempt are listed, not rated.",
        formatter_class=DefaultsHelpFormatter,
    )
    ra.add_argument("--json", action="store_true", help="print JSON instead of tables")
    _rating_args(ra)
    _selection_args(ra)
    pl = sub.add_parser(
        "plot",
        help="write a PNG of the ratings with error bars, one panel per group",
        description=_GROUPS_HELP,
        formatter_class=DefaultsHelpFormatter,
    )
    pl.add_argument("--out", required=True, help="PNG file to write")
    pl.add_argument(
        "--over-time",
        action="store_true",
        help="draw each population member's rating against its training frames (the "
        "gauntlet checkpoints of sf-league train) instead of one bar per player",
    )
    _rating_args(pl)
    _selection_args(pl)
    add_train_parser(sub)
    add_lineage_parser(sub)
    return parser


def _fmt(x: float) -> str:
    return f"{x:g}"


def print_standings(console: Console, s: Standings) -> None:
    """Prints the header naming the group's settings, the ranked table and the cross table."""
    console.print(
        f"[bold]{escape(s.group.label())}[/] (alone: {s.group.flags()})",
        highlight=False,
        soft_wrap=True,
    )
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


def print_failed(console: Console, failed: list[FailedGame]) -> None:
    """Prints the games that failed on every attempt, with the last line of each reason."""
    if not failed:
        return
    table = Table(title="Failed games (not rated; rerunning their tournament plays them again)")
    for col in ("game", "settings", "attempts", "why the last attempt failed"):
        table.add_column(col, justify="right" if col == "attempts" else "left")
    for f in failed:
        group = group_of(f.scenario, f.settings, len(f.players))
        table.add_row(f.key, group.label(), str(f.attempts), f.reason.strip().splitlines()[-1])
    console.print(table)


def _failed_json(failed: list[FailedGame]) -> list[dict[str, Any]]:
    return [
        {"key": f.key, "players": list(f.players), "attempts": f.attempts, "reason": f.reason}
        for f in failed
    ]


def _tournament_selection(jobs: list[GameJob]) -> GroupSelection:
    """The groups of a tournament's games: its agent games' (which bot games join), or any
    frame skip for a tournament of bots only."""
    groups = {group_of(j.scenario, j.settings, len(j.agents) + len(j.bots)) for j in jobs}
    agent_groups = [g for g in groups if g.frame_skip is not None] or list(groups)
    group = agent_groups[0]  # one tournament plays one kind, map, time limit and frame skip
    return GroupSelection(group.scenario, group.map, group.timelimit, group.frame_skip)


def _standings(
    args: argparse.Namespace, store: LeagueStore, selection: GroupSelection
) -> list[Standings]:
    return compute_standings(
        store,
        selection,
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
        action_set=args.action_set,
        workers=args.workers,
        seed=args.seed,
    )
    problems = config.problems()
    if problems:  # before the players, whose bot levels depend on the map
        raise TournamentError("invalid tournament:\n  - " + "\n  - ".join(problems))
    players = [parse_player(text, config.map_name) for text in args.players]
    jobs = plan_games(config, players)  # every check before the league file is opened or created
    selection = _tournament_selection(jobs)
    pools: list[Any] = []  # the Ray pool, for its games per node
    game_pool = None
    session: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if args.ray is not None:
        from sf_league.tournament.ray_games import ray_game_pool, ray_session

        session = ray_session(args.ray or None)

        def game_pool(workers: int | None, games: int) -> Any:
            pools.append(ray_game_pool(workers, games))
            return pools[-1]

    with session, LeagueStore(args.db) as store:
        progress = LineProgress(
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
                result = run_tournament(config, players, store, on_game, game_pool)
            except KeyboardInterrupt:
                console.print(
                    f"[yellow]interrupted: {store.count_games()} games are stored in {args.db}; "
                    "rerun the same command to play the rest[/]"
                )
                return 130
        standings = _standings(args, store, selection)
        keys = {j.key for j in jobs}
        failed = [f for f in store.failed_games() if f.key in keys]
    summary: dict[str, Any] = {
        "planned": result.planned,
        "already_stored": result.already_stored,
        "played": result.played,
        "failed": result.failed,
        "replayed": result.replayed,
    }
    if pools:
        summary["games_per_node"] = dict(pools[0].games_per_node)
    if args.json:
        out = {
            "tournament": summary,
            "groups": [s.to_json() for s in standings],
            "failed_games": _failed_json(failed),
        }
        print(json.dumps(out, indent=2))
    else:
        console.print(
            f"{result.played} games played, {result.already_stored} already stored, "
            f"{len(result.failed)} failed (of {result.planned} planned)"
            + (f"; {result.replayed} replays after failed attempts" if result.replayed else "")
        )
        if pools:
            nodes = sorted(pools[0].games_per_node.items())
            console.print(
                f"played on {len(nodes)} Ray node(s): "
                + ", ".join(f"{node[:8]} {games}" for node, games in nodes)
            )
        for s in standings:
            print_standings(console, s)
        print_failed(console, failed)
    return 1 if result.failed else 0


def main(argv: list[str] | None = None) -> int:
    """Runs ``sf-league``; returns the exit status (2 for user errors, with the fix printed; 1
    when games of the tournament failed on every attempt)."""
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    console = make_console(stderr=getattr(args, "json", False))
    err = make_console(stderr=True)
    try:
        if args.command == "train":  # its defaults depend on --resume: it parses on its own
            return run_train(argv[argv.index("train") + 1 :], console)
        if args.command == "lineage":
            return run_lineage(args, console)
        if args.command == "evaluate":
            return _evaluate(args, console)
        selection = _selection(args)
        with LeagueStore(args.db, create=False) as store:
            standings = _standings(args, store, selection)
            failed = [
                f
                for f in store.failed_games()
                if selection.accepts(group_of(f.scenario, f.settings, len(f.players)))
            ]
        if args.command == "ratings":
            if args.json:
                groups = [s.to_json() for s in standings]
                print(
                    json.dumps({"groups": groups, "failed_games": _failed_json(failed)}, indent=2)
                )
            else:
                for s in standings:
                    print_standings(console, s)
                print_failed(console, failed)
        elif args.over_time:
            from sf_league.ratings.plot import plot_over_time

            console.print(f"wrote {plot_over_time(standings, args.out)}")
        else:
            from sf_league.ratings.plot import plot_ratings

            console.print(f"wrote {plot_ratings(standings, args.out)}")
        return 0
    except Exception as e:
        if not isinstance(e, _user_errors()):
            raise
        # Unwrapped (paths stay copyable) and escaped (messages quote lists like ['a', 'b']).
        err.print(f"[red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
