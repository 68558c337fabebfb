"""A fixed tournament played by local game processes and by Ray actors, on this machine, in
the same run: Ray's overhead, and the driver's serial cost per game that bounds a cluster.

The tournament: a round robin of ``random``, ``noop``, the map's bots and optionally a trained
agent (``--checkpoint``) on duel_bots, ``--games`` games per pairing. Each round plays it once
with local game processes and once on a Ray instance started on this machine (started once, before the
first round; its start is reported apart), each into a fresh league; the ratio is Ray games/s
over local games/s, from the first game handed out to the last one stored, and over the last
three quarters of the games (game processes started, matches open: the rate of a long tournament).

What is serial at the driver, per game: its CPU time (this process's, Ray's threads in it
included) over the Ray tournament divided by its games, plus the wall time of the league write
(one SQLite transaction per game, waiting on the disk; its CPU part is counted twice, so the
bound is conservative). Games of any number of nodes pass through that one process, so
``1 / (serial seconds per game)`` is the most games/s any cluster can reach with one driver;
the plan printed at the end is ``min(nodes x cores x games/s per game process, that bound)``.

    python benchmarks/league_ray.py --games 4 --timelimit 0.25 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.tournament import add_tournament_arguments, ladder_players, tournament_config

from sf_league.store import LeagueStore
from sf_league.tournament.players import parse_player
from sf_league.tournament.ray_games import ray_game_pool, ray_session
from sf_league.tournament.schedule import TournamentConfig, run_tournament


class Timed:
    """One tournament's clock: when each game was stored, the driver's CPU seconds, and the
    seconds spent writing the league."""

    def __init__(self) -> None:
        self.finished: list[float] = []
        self.write_s = 0.0
        self.cpu_s = 0.0

    @property
    def rate(self) -> float:
        return len(self.finished) / self.finished[-1]

    @property
    def steady_rate(self) -> float:
        k = len(self.finished) // 4
        return (len(self.finished) - k) / (self.finished[-1] - self.finished[k - 1])


def play(
    config: TournamentConfig, texts: list[str], db: Path, game_pool: Callable[..., Any] | None
) -> Timed:
    """Plays the tournament into a fresh league at ``db`` and times it."""
    players = [parse_player(t, config.map_name) for t in texts]
    db.unlink(missing_ok=True)
    timed = Timed()
    with LeagueStore(db) as store:
        record_game = store.record_game

        def timed_write(record: Any) -> bool:
            start = time.perf_counter()
            try:
                return record_game(record)
            finally:
                timed.write_s += time.perf_counter() - start

        store.record_game = timed_write  # type: ignore[method-assign]
        cpu = time.process_time()
        start = time.perf_counter()
        result = run_tournament(
            config,
            players,
            store,
            lambda *_: timed.finished.append(time.perf_counter() - start),
            game_pool,
        )
        timed.cpu_s = time.process_time() - cpu
    if result.failed:
        raise SystemExit(f"{len(result.failed)} games failed: {result.failed}")
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_tournament_arguments(parser, timelimit=0.25)
    parser.add_argument("--rounds", type=int, default=3, help="local/Ray rounds (load varies)")
    args = parser.parse_args()
    config = tournament_config(args)
    texts = ladder_players(args.checkpoint, config.map_name)
    start = time.perf_counter()
    with ray_session(None), tempfile.TemporaryDirectory(prefix="sf_league_bench_") as folder:
        out = Path(folder)
        ray_start = time.perf_counter() - start
        print(
            f"round robin of {', '.join(texts)} on {config.map_name}, {args.games} games per "
            f"pairing of {args.timelimit:g} min; Ray started in {ray_start:.1f} s"
        )
        rates: dict[str, list[float]] = {"local": [], "ray": []}
        steady: dict[str, list[float]] = {"local": [], "ray": []}
        driver: list[Timed] = []
        for r in range(args.rounds):
            for mode, game_pool in (("local", None), ("ray", ray_game_pool)):
                timed = play(config, texts, out / f"{mode}.sqlite", game_pool)
                rates[mode].append(timed.rate)
                steady[mode].append(timed.steady_rate)
                if mode == "ray":
                    driver.append(timed)
                print(
                    f"  round {r + 1} {mode:<5}: {len(timed.finished)} games, {timed.rate:.2f} "
                    f"games/s ({timed.steady_rate:.2f} over the last three quarters); driver "
                    f"CPU {timed.cpu_s / len(timed.finished) * 1e3:.1f} ms/game, league write "
                    f"{timed.write_s / len(timed.finished) * 1e3:.1f} ms/game"
                )
    for what, values in (("start to end", rates), ("last three quarters", steady)):
        ratio = statistics.median(values["ray"]) / statistics.median(values["local"])
        print(
            f"ray / local games/s, {what}: x{ratio:.2f} (local {statistics.median(values['local']):.2f}, "
            f"ray {statistics.median(values['ray']):.2f}; medians of {args.rounds} rounds)"
        )
    games = sum(len(t.finished) for t in driver)
    cpu_per_game = sum(t.cpu_s for t in driver) / games
    write_per_game = sum(t.write_s for t in driver) / games
    workers = args.workers or os.cpu_count() or 1  # both modes' default
    per_process = statistics.median(steady["ray"]) / workers
    bound = 1 / (cpu_per_game + write_per_game)
    print(
        f"serial at the driver per game: {cpu_per_game * 1e3:.1f} ms CPU + {write_per_game * 1e3:.1f}"
        f" ms league write -> at most {bound:,.0f} games/s with one driver"
    )
    print(
        f"per game process: {per_process:.3f} games/s of these games; plan for N nodes of C cores:"
    )
    for nodes, cores in ((1, workers), (4, 16), (16, 32), (64, 64)):
        processes = nodes * cores
        print(
            f"  {nodes:>3} x {cores:>2} cores: {min(processes * per_process, bound):8.1f} games/s"
            + ("  (driver-bound)" if processes * per_process > bound else "")
        )


if __name__ == "__main__":
    main()
