"""A small real league tournament: ranked table, cross table, plot and game throughput.

Players: an optional trained agent (``--checkpoint``: an sf-train run folder or checkpoint
file), the baselines ``random`` and ``noop``, and one bot per level of the map's ladder. They
play a round robin of ``--games`` games per pairing in the league's parallel game runners (bot
against bot with a spectating host); the script prints the tables, writes the PNG plot and the
tournament's games/s.

Throughput is then compared on identical games, measured in the same run: ``--compare`` games
of ``random`` against the map's strongest bot, once through the league's runners and once in
a plain single-process loop over one ``MatchEnv`` (reset between games, so it pays no match
start per game). The ratio is league games/s over loop games/s, from the tournament's start
(runner processes start, import torch and open their matches: seconds) and after its first
game (the steady rate of a long tournament).

    python benchmarks/league_tournament.py --games 4 --timelimit 0.5 --out /tmp/league_bench
    python benchmarks/league_tournament.py --checkpoint runs/duel --games 10
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from sf_envs.match import MatchConfig, MatchEnv, bot_ladder
from sf_league.cli import print_standings
from sf_league.players import parse_player
from sf_league.plot import plot_ratings
from sf_league.standings import compute_standings
from sf_league.store import LeagueStore
from sf_league.tournament import TournamentConfig, run_tournament


def league_run(
    config: TournamentConfig, texts: list[str], db: Path
) -> tuple[list[float], int, LeagueStore]:
    """Plays the tournament into a fresh league at ``db`` (an old file there is replaced).

    Returns:
        Seconds from the start at which each game finished, agent steps played, and the
        (open) store.
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
    return finished, steps, store


def loop_run(config: TournamentConfig, games: int) -> tuple[float, int]:
    """``games`` games of random against the strongest bot in one MatchEnv in this process.

    Returns:
        Wall seconds (from the first reset; the one match start is not timed) and agent steps.
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
    steps = 0
    try:
        n = env.action_space("player_0").n
        start = time.perf_counter()
        for game in range(games):
            env.reset(seed=game)
            while env.agents:
                env.step({"player_0": int(rng.integers(n))})
                steps += 1
        return time.perf_counter() - start, steps
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="an sf-train run folder or checkpoint to include")
    parser.add_argument("--map", default="multi_duel", help="map of the duels")
    parser.add_argument("--games", type=int, default=4, help="games per pairing")
    parser.add_argument("--timelimit", type=float, default=0.5, help="minutes per game")
    parser.add_argument("--workers", type=int, help="game runners (default: CPU cores)")
    parser.add_argument("--compare", type=int, default=32, help="games of the throughput check")
    parser.add_argument("--out", default=None, help="folder for league.sqlite and ratings.png")
    args = parser.parse_args()
    console = Console()
    out = Path(args.out or tempfile.mkdtemp(prefix="sf_league_bench_"))
    out.mkdir(parents=True, exist_ok=True)
    config = TournamentConfig(
        scenario="duel_bots",
        map=args.map,
        games=args.games,
        timelimit=args.timelimit,
        workers=args.workers,
    )
    ladder = sorted(bot_ladder(config.map_name))
    texts = ([f"agent={args.checkpoint}"] if args.checkpoint else []) + ["random", "noop"]
    texts += [f"bot:{level}" for level in ladder]
    if len(ladder) == 1:  # a second bot of the one level, so bots meet each other too
        texts.append(f"bot:{ladder[0]}b=bot:{ladder[0]}")
    console.print(
        f"round robin on {config.map_name}: {', '.join(texts)}; {args.games} games per pairing, "
        f"{args.timelimit:g} min each"
    )
    finished, steps, store = league_run(config, texts, out / "league.sqlite")
    with store:
        standings = compute_standings(store, bootstrap=500)
        print_standings(console, standings)
        png = plot_ratings(standings, out / "ratings.png")
    console.print(f"plot: {png}")
    seconds, games = finished[-1], len(finished)
    console.print(
        f"tournament: {games} games in {seconds:.1f} s = {games / seconds:.2f} games/s "
        f"({steps / seconds:,.0f} agent steps/s, {games * args.timelimit * 60 / seconds:.1f} "
        f"s of game time per wall second); the first game finished after {finished[0]:.1f} s "
        "(runner start-up and first match start)"
    )
    top = f"bot:{ladder[-1]}"
    same = TournamentConfig(
        scenario="duel_bots",
        map=args.map,
        games=args.compare,
        timelimit=args.timelimit,
        workers=args.workers,
    )
    finished, league_steps, store = league_run(same, ["random", top], out / "compare.sqlite")
    store.close()
    loop_s, loop_steps = loop_run(same, args.compare)
    loop_rate = args.compare / loop_s
    overall = args.compare / finished[-1]
    # After the first game: runners started and their matches open, as in a long tournament.
    steady = (args.compare - 1) / (finished[-1] - finished[0])
    console.print(
        f"random vs {top}, {args.compare} games of {args.timelimit:g} min, "
        f"{same.workers or os.cpu_count()} runners:\n"
        f"  one MatchEnv loop in this process: {loop_rate:.2f} games/s "
        f"({loop_steps / loop_s:,.0f} agent steps/s)\n"
        f"  league, start to end:              {overall:.2f} games/s = {overall / loop_rate:.2f}x "
        f"the loop ({league_steps / finished[-1]:,.0f} agent steps/s)\n"
        f"  league, after its first game:      {steady:.2f} games/s = {steady / loop_rate:.2f}x "
        "the loop"
    )


if __name__ == "__main__":
    main()
