"""A small real league tournament: ranked table, cross table, plot and game throughput.

Players: an optional trained agent (``--checkpoint``: an sf-train run folder or checkpoint
file), the baselines ``random`` and ``noop``, and one bot per level of the map's ladder. They
play a round robin of ``--games`` games per pairing in the league's parallel game processes (bot
against bot with a spectating host); the script prints the tables, writes the PNG plot and the
tournament's games/s.

Throughput is then compared on identical games, measured in the same run: ``--compare`` games
of ``random`` against the map's strongest bot, once through the league's game processes and once in
a plain single-process loop over one ``MatchEnv`` (reset between games, so it pays no match
start per game). The ratio is league games/s over loop games/s, from the tournament's start
(game processes start and open their matches: seconds) and over its last three quarters of
games (the steady rate of a long tournament); league and loop alternate for ``--rounds`` rounds, and the median
ratio is reported, since load from other processes varies over a run. One loop leaves cores
idle while its Python thread and its engine hand each tic to each other (measured: each of 2
loops in parallel ran 5.8-8.4 games/s where one alone ran 4.1-5.1), so the league can beat one
loop by more than its number of game processes; the last ratio, the league from start to end against
as many loops as game processes in parallel processes, is the cost of the league's machinery (process
start, scheduling, the store).

    python benchmarks/league_tournament.py --games 4 --timelimit 0.5 --out /tmp/league_bench
    python benchmarks/league_tournament.py --checkpoint runs/duel --games 10
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from common.tournament import add_tournament_arguments, ladder_players, tournament_config
from rich.console import Console

from sf_envs.match import MatchConfig, MatchEnv, MatchError, bot_ladder
from sf_league.cli import print_standings
from sf_league.ratings.plot import plot_ratings
from sf_league.ratings.standings import compute_standings
from sf_league.store import LeagueStore
from sf_league.tournament.players import parse_player
from sf_league.tournament.schedule import TournamentConfig, run_tournament


def league_run(
    config: TournamentConfig, texts: list[str], db: Path
) -> tuple[list[float], int, int, LeagueStore]:
    """Plays the tournament into a fresh league at ``db`` (an old file there is replaced).

    Returns:
        Seconds from the start at which each game finished, agent steps played, replays after
        failed attempts, and the (open) store.
    """
    players = [parse_player(t, config.map_name) for t in texts]
    db.unlink(missing_ok=True)
    store = LeagueStore(db)
    start = time.perf_counter()
    finished: list[float] = []
    result = run_tournament(
        config, players, store, lambda *_: finished.append(time.perf_counter() - start)
    )
    if result.failed:
        raise SystemExit(f"{len(result.failed)} games failed: {result.failed}")
    steps = sum(g.steps for g in store.games())
    return finished, steps, result.replayed, store


def loop_run(config: TournamentConfig, games: int) -> tuple[float, int, int]:
    """``games`` games of random against the strongest bot in one MatchEnv in this process.

    A game whose engine crashes is replayed on a new match, as the league's game processes do.

    Returns:
        Wall seconds (from the first reset; the first match start is not timed), agent steps
        of the finished games, and the number of crashes.
    """
    match = MatchConfig.create(
        "duel_bots",
        map=config.map_name,
        bot_skill=max(bot_ladder(config.map_name)),
        timelimit=config.timelimit,
        obs_size=(64, 36),
        grayscale=True,
        frame_skip=4,
    )
    env = MatchEnv(match)
    rng = np.random.default_rng(0)
    n = env.action_space("player_0").n
    steps = crashes = game = 0
    try:
        start = time.perf_counter()
        while game < games:
            try:
                env.reset(seed=game)
                played = 0
                while env.agents:
                    env.step({"player_0": int(rng.integers(n))})
                    played += 1
            except MatchError:
                crashes += 1
                env.close()
                env = MatchEnv(match)
                continue
            steps += played
            game += 1
        return time.perf_counter() - start, steps, crashes
    finally:
        env.close()


def _started(_: int) -> int:
    return os.getpid()


def _loop_in_child(config: TournamentConfig, games: int) -> tuple[float, int, int]:
    os.chdir(tempfile.mkdtemp(prefix="sf_league_bench_loop_"))  # the engine's _vizdoom/
    return loop_run(config, games)


def parallel_loops(config: TournamentConfig, games: int, workers: int) -> float:
    """Games/s of ``workers`` MatchEnv loops in as many processes, ``games`` split among them
    (the league's work without its machinery: no store, no scheduling, no policies)."""
    share = [games // workers + (k < games % workers) for k in range(workers)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        # Start the processes first, so that only the games are timed (as in loop_run).
        list(pool.map(_started, range(workers)))
        start = time.perf_counter()
        list(pool.map(_loop_in_child, [config] * workers, share))
        return games / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_tournament_arguments(parser, timelimit=0.5)
    parser.add_argument(
        "--compare", type=int, default=32, help="games per throughput round (at least 4)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="league/loop rounds (the machine's load varies)"
    )
    parser.add_argument("--out", default=None, help="folder for league.sqlite and ratings.png")
    args = parser.parse_args()
    if args.compare < 4:
        parser.error("--compare: use at least 4 games per round")
    console = Console()
    out = Path(args.out or tempfile.mkdtemp(prefix="sf_league_bench_"))
    out.mkdir(parents=True, exist_ok=True)
    config = tournament_config(args)
    ladder = sorted(bot_ladder(config.map_name))
    texts = ladder_players(args.checkpoint, config.map_name)
    if len(ladder) == 1:  # a second bot of the one level, so bots meet each other too
        texts.append(f"bot:{ladder[0]}b=bot:{ladder[0]}")
    console.print(
        f"round robin on {config.map_name}: {', '.join(texts)}; {args.games} games per pairing, "
        f"{args.timelimit:g} min each"
    )
    finished, steps, replayed, store = league_run(config, texts, out / "league.sqlite")
    with store:
        standings = compute_standings(store, bootstrap=500)  # one group: one tournament
        for group in standings:
            print_standings(console, group)
        png = plot_ratings(standings, out / "ratings.png")
    console.print(f"plot: {png}")
    seconds, games = finished[-1], len(finished)
    console.print(
        f"tournament: {games} games in {seconds:.1f} s = {games / seconds:.2f} games/s "
        f"({steps / seconds:,.0f} agent steps/s, {games * args.timelimit * 60 / seconds:.1f} "
        f"s of game time per wall second); the first game finished after {finished[0]:.1f} s "
        f"(game process start-up and first match start); {replayed} replays after failed attempts"
    )
    top = f"bot:{ladder[-1]}"
    same = dataclasses.replace(config, games=args.compare)
    console.print(
        f"throughput, random vs {top}: {args.rounds} rounds of {args.compare} games of "
        f"{args.timelimit:g} min, league ({same.workers or os.cpu_count()} game processes) then one "
        "MatchEnv loop in this process"
    )
    workers = same.workers or os.cpu_count() or 1
    ratios: dict[str, list[float]] = {
        "start to end": [],
        "last three quarters": [],
        f"vs {workers} loops in {workers} processes": [],
    }
    for r in range(args.rounds):
        finished, league_steps, replayed, store = league_run(
            same, ["random", top], out / "compare.sqlite"
        )
        store.close()
        loop_s, loop_steps, crashes = loop_run(same, args.compare)
        loop_rate = args.compare / loop_s
        overall = args.compare / finished[-1]
        # The last three quarters: game processes started and their matches open, as in a long league.
        k = args.compare // 4
        steady = (args.compare - k) / (finished[-1] - finished[k - 1])
        ratios["start to end"].append(overall / loop_rate)
        ratios["last three quarters"].append(steady / loop_rate)
        loops_rate = parallel_loops(same, args.compare, workers)
        ratios[f"vs {workers} loops in {workers} processes"].append(overall / loops_rate)
        console.print(
            f"  round {r + 1}: loop {loop_rate:.2f} games/s ({loop_steps / loop_s:,.0f} agent "
            f"steps/s, {crashes} crashes replayed); league {overall:.2f} games/s start to end "
            f"({league_steps / finished[-1]:,.0f} agent steps/s, {replayed} replays), "
            f"{steady:.2f} over its last three quarters; {workers} loops in parallel "
            f"{loops_rate:.2f} games/s"
        )
    for what, values in ratios.items():
        console.print(
            f"league / loop, {what}: median {np.median(values):.2f}x "
            f"(rounds: {', '.join(f'{v:.2f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
