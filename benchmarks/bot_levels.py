"""Calibrates the bot skill ladder: bot frags per minute against a random agent, per map.

A level is only useful if it is measurably stronger than the one below, and the engine's bot
parameters act differently per map (``aiming`` only matters with hitscan weapons; on rocket maps
a low ``isp`` frags more). So each level plays ``--games`` one-minute duels against an agent that
picks uniformly random actions, on each map, and the table reports the bot's frags per minute
(mean ± standard error, n games) and whether each level beats the one below by more than two
standard errors of the difference.

    python benchmarks/bot_levels.py --games 16 --minutes 1
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from sf_envs.match import BOT_LEVELS, MatchConfig, MatchEnv


def bot_frags_per_minute(
    map_name: str, level: int, games: int, minutes: float, seed: int
) -> list[float]:
    """Plays ``games`` duels of a random agent against one bot at ``level``."""
    config = MatchConfig.create(
        "duel_bots", map=map_name, bot_skill=level, timelimit=minutes, obs_size=(40, 30)
    )
    env = MatchEnv(config)
    rng = np.random.default_rng(seed)
    rates = []
    try:
        n_actions = env.action_space("player_0").n
        for game in range(games):
            env.reset(seed=seed + game)
            while env.agents:
                _, _, _, _, infos = env.step({"player_0": int(rng.integers(n_actions))})
            frags = infos["player_0"]["match"]["frags"]
            rates.append(frags[config.bots[0].name] / minutes)
    finally:
        env.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=["multi_duel", "cig_map01", "cig_map02"])
    parser.add_argument("--levels", nargs="+", type=int, default=sorted(BOT_LEVELS))
    parser.add_argument("--games", type=int, default=16, help="games per map and level")
    parser.add_argument("--minutes", type=float, default=1.0, help="game time per game")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"bot frags per minute vs a random agent ({args.games} games of {args.minutes:g} min each)"
    )
    for map_name in args.maps:
        print(f"\n{map_name}")
        print(f"{'level':>5} {'frags/min':>16} {'n':>4}  above the level below?")
        previous = None
        for level in args.levels:
            rates = np.array(
                bot_frags_per_minute(map_name, level, args.games, args.minutes, args.seed)
            )
            mean = rates.mean()
            se = rates.std(ddof=1) / math.sqrt(len(rates)) if len(rates) > 1 else float("nan")
            verdict = ""
            if previous is not None:
                diff, diff_se = mean - previous[0], math.hypot(se, previous[1])
                verdict = f"{diff:+.2f} ± {diff_se:.2f} " + ("yes" if diff > 2 * diff_se else "no")
            print(f"{level:>5} {mean:>9.2f} ± {se:<4.2f} {len(rates):>4}  {verdict}", flush=True)
            previous = (mean, se)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
