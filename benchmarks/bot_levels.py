"""Calibrates the bot skill ladders: each level against fixed references, per map.

A level is only useful if it is measurably stronger than the one below, and the engine's bot
parameters act differently per map. Two fixed references, chosen with ``--reference``:

``field`` (bot-only games, the host spectates; see ``sf_envs.match.play_bot_game``)
    Every game is a free-for-all of the map's ladder itself: the same number of bots per level
    (up to 3 each, as many as the map holds), so a level's bots meet the same opponents as the
    level below's. When the map cannot hold one bot per level, each pair of neighbouring levels
    plays its own games. Per game, a level's mean frags per bot minus the level below's (a
    paired difference), per minute.

``random``
    One bot against an agent that picks uniformly random actions from the map's action set
    (``duel_bots``): the bot's frags and its net score (bot frags minus agent frags) per minute,
    and the bot's wins, draws and losses on frags. A net score above 0 means the bot beats the
    random agent.

Every number is mean ± standard error over n games, and each level is marked ``yes`` when it
beats the one below by more than two standard errors of the difference. Games run in
``--procs`` processes (default 2).

    python benchmarks/bot_levels.py --reference field --games 100 --minutes 2
    python benchmarks/bot_levels.py --reference random --games 100 --minutes 1 --maps multi_duel
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from sf_envs.match import MAPS, MatchConfig, MatchEnv, MatchError, bot_ladder, play_bot_game


def play_random(map_name: str, level: int, games: int, minutes: float, seed: int) -> np.ndarray:
    """Plays ``games`` matches of the random reference against one bot at ``level``.

    A game whose engine crashed (multi_duel: a few in a hundred) is replayed in a fresh match.

    Returns:
        Per game: ``[bot frags, agent frags]`` since the match start (suicides count -1).
    """
    config = MatchConfig.create(
        "duel_bots", map=map_name, bot_skill=level, timelimit=minutes, obs_size=(40, 30)
    )
    rng = np.random.default_rng(seed)
    scores: list[list[float]] = []
    env = None
    try:
        while len(scores) < games:
            if env is None:
                env = MatchEnv(config)
                n_actions = env.action_space("player_0").n
            try:
                env.reset(seed=seed + len(scores))
                while env.agents:
                    _, _, _, _, infos = env.step({"player_0": int(rng.integers(n_actions))})
            except MatchError as exc:
                print(f"  {map_name} level {level}: replaying a crashed game ({exc})", flush=True)
                env.close()
                env = None
                continue
            frags = infos["player_0"]["match"]["frags"]
            scores.append([frags[config.bots[0].name], frags["player_0"]])
    finally:
        if env is not None:
            env.close()
    return np.array(scores, dtype=np.float64).reshape(-1, 2)


def play_field(
    map_name: str, levels: list[int], games: int, minutes: float, seed: int
) -> np.ndarray:
    """Plays ``games`` bot-only games of one bot per entry of ``levels``; frags per game."""
    scores = []
    for game in range(games):
        result = play_bot_game(map_name, levels, timelimit=minutes, seed=seed + game)
        scores.append([result["frags"][b["name"]] for b in result["bots"]])
    return np.array(scores, dtype=np.float64).reshape(-1, len(levels))


def mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def fmt(m: tuple[float, float]) -> str:
    return f"{m[0]:>6.2f} ± {m[1]:<5.2f}"


def verdict(diff: tuple[float, float]) -> str:
    return f"{diff[0]:+.2f} ± {diff[1]:.2f} " + ("yes" if diff[0] > 2 * diff[1] else "no")


def run(pool: ProcessPoolExecutor, fn, args: argparse.Namespace, *head) -> np.ndarray:
    """Splits ``args.games`` games over the processes; returns the stacked per-game rows."""
    shares = [args.games // args.procs + (i < args.games % args.procs) for i in range(args.procs)]
    jobs = [(*head, s, args.minutes, args.seed + 100_000 * i) for i, s in enumerate(shares) if s]
    parts = list(pool.map(fn, *zip(*jobs, strict=True)))
    return np.concatenate(parts) / args.minutes


def report_random(pool: ProcessPoolExecutor, map_name: str, args: argparse.Namespace) -> None:
    print(
        f"{'level':>5} {'bot frags/min':>15} {'net/min':>15} {'bot W-D-L':>11} {'n':>4}  "
        "above the one below?"
    )
    previous = None
    for level in sorted(bot_ladder(map_name)):
        scores = run(pool, play_random, args, map_name, level)
        margin = scores[:, 0] - scores[:, 1]
        bot, net = mean_se(scores[:, 0]), mean_se(margin)
        wdl = f"{(margin > 0).sum()}-{(margin == 0).sum()}-{(margin < 0).sum()}"
        above = ""
        if previous is not None:
            above = verdict((bot[0] - previous[0], math.hypot(bot[1], previous[1])))
        print(f"{level:>5} {fmt(bot)} {fmt(net)} {wdl:>11} {len(scores):>4}  {above}", flush=True)
        previous = bot


def report_field(pool: ProcessPoolExecutor, map_name: str, args: argparse.Namespace) -> None:
    levels = sorted(bot_ladder(map_name))
    if len(levels) < 2:
        print(f"one level only ({levels}): nothing to compare")
        return
    per_level = min(3, (MAPS[map_name].max_players - 1) // len(levels))
    if per_level:
        print(f"every game: {per_level} bot(s) per level, {per_level * len(levels)} in all")
        lineup = [lv for lv in levels for _ in range(per_level)]
        scores = run(pool, play_field, args, map_name, lineup)
        # Mean frags per bot of each level, per game.
        by_level = scores.reshape(len(scores), len(levels), per_level).mean(axis=2)
    else:
        print("each pair of neighbouring levels in its own games (the map holds too few bots)")
    print(f"{'level':>5} {'frags/min/bot':>15} {'n':>4}  minus the level below, same games")
    for i, level in enumerate(levels):
        if per_level:
            frags, n = mean_se(by_level[:, i]), len(by_level)
            above = "" if i == 0 else verdict(mean_se(by_level[:, i] - by_level[:, i - 1]))
        elif i == 0:
            print(f"{level:>5}")
            continue
        else:
            pair = run(pool, play_field, args, map_name, [levels[i - 1], level])
            frags, n = mean_se(pair[:, 1]), len(pair)
            above = verdict(mean_se(pair[:, 1] - pair[:, 0]))
        print(f"{level:>5} {fmt(frags)} {n:>4}  {above}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=["multi_duel", "cig_map02"])
    parser.add_argument("--reference", choices=("field", "random"), default="field")
    parser.add_argument("--games", type=int, default=100, help="games per map and comparison")
    parser.add_argument("--minutes", type=float, default=1.0, help="game time per game")
    parser.add_argument("--procs", type=int, default=2, help="processes playing games")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    what = "bot-only games of the ladder" if args.reference == "field" else "one bot vs random"
    print(f"{what}: {args.games} games of {args.minutes:g} min each, {args.procs} processes")
    with ProcessPoolExecutor(args.procs) as pool:
        for map_name in args.maps:
            print(f"\n{map_name}")
            (report_field if args.reference == "field" else report_random)(pool, map_name, args)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
