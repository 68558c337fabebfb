"""Calibrates the bot skill ladders: one bot per level against a fixed reference agent, per map.

A level is only useful if it is measurably stronger than the one below, and the engine's bot
parameters act differently per map. So each level of a map's ladder
(``sf_envs.match.BOT_LADDERS``) plays ``--games`` one-bot matches against the reference, an agent
that picks uniformly random actions from the map's action set, and the table reports the bot's
frags per minute and its net score (bot frags minus agent frags) per minute, mean ± standard
error over n games, and whether each level beats the one below by more than two standard errors
of the difference. Games run in ``--procs`` processes (default 2).

    python benchmarks/bot_levels.py --games 100 --minutes 1 --maps multi_duel
    python benchmarks/bot_levels.py --games 20 --minutes 2 --maps cig_map01 cig_map02
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from sf_envs.match import MatchConfig, MatchEnv, bot_ladder


def play(map_name: str, level: int, games: int, minutes: float, seed: int) -> list[list[float]]:
    """Plays ``games`` matches of the random reference against one bot at ``level``.

    Returns:
        Per game: ``[bot frags, agent frags]`` since the match start (suicides count -1).
    """
    config = MatchConfig.create(
        "duel_bots", map=map_name, bot_skill=level, timelimit=minutes, obs_size=(40, 30)
    )
    env = MatchEnv(config)
    rng = np.random.default_rng(seed)
    scores = []
    try:
        n_actions = env.action_space("player_0").n
        for game in range(games):
            env.reset(seed=seed + game)
            while env.agents:
                _, _, _, _, infos = env.step({"player_0": int(rng.integers(n_actions))})
            frags = infos["player_0"]["match"]["frags"]
            scores.append([frags[config.bots[0].name], frags["player_0"]])
    finally:
        env.close()
    return scores


def mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=["multi_duel", "cig_map01", "cig_map02"])
    parser.add_argument("--games", type=int, default=100, help="games per map and level")
    parser.add_argument("--minutes", type=float, default=1.0, help="game time per game")
    parser.add_argument("--procs", type=int, default=2, help="processes playing games")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"one bot vs a random agent: {args.games} games of {args.minutes:g} min per level, "
        f"{args.procs} processes"
    )
    shares = [args.games // args.procs + (i < args.games % args.procs) for i in range(args.procs)]
    with ProcessPoolExecutor(args.procs) as pool:
        for map_name in args.maps:
            print(f"\n{map_name}")
            print(
                f"{'level':>5} {'bot frags/min':>15} {'net/min':>14} {'n':>4}  above the one below?"
            )
            previous = None
            for level in sorted(bot_ladder(map_name)):
                jobs = [
                    (map_name, level, share, args.minutes, args.seed + 100_000 * i)
                    for i, share in enumerate(shares)
                ]
                parts = pool.map(play, *zip(*jobs, strict=True))
                scores = np.array([g for part in parts for g in part]) / args.minutes
                bot, net = mean_se(scores[:, 0]), mean_se(scores[:, 0] - scores[:, 1])
                verdict = ""
                if previous is not None:
                    diff, diff_se = bot[0] - previous[0], math.hypot(bot[1], previous[1])
                    verdict = f"{diff:+.2f} ± {diff_se:.2f} " + (
                        "yes" if diff > 2 * diff_se else "no"
                    )
                print(
                    f"{level:>5} {bot[0]:>7.2f} ± {bot[1]:<5.2f} {net[0]:>6.2f} ± {net[1]:<5.2f} "
                    f"{len(scores):>4}  {verdict}",
                    flush=True,
                )
                previous = bot
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
