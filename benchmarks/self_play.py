"""Self-play training speed on sf/DoomDuel-v0, with the engines as they are and yielding.

Trains sf-train's default configuration on duels (one policy plays both seats) for a fixed wall
time per run, alternating ``SF_ENVS_SPIN_YIELD=0`` (ViZDoom's engines busy-wait for their peers)
and the default (they give their CPU away while they wait, :mod:`sf_envs.match.spin`), and prints
each run's env frames/s over its timed window (after a warm-up that covers the engines' start)
and the ratio of the medians. No evaluations run inside the window.

    python benchmarks/self_play.py --seconds 90 --repeats 2

``--baseline REF`` alternates instead today's code (engines yielding) with the commit ``REF``
(e.g. 674668b, the code the duel-throughput issue was measured on), both trained by the same
measuring code (:mod:`training_speed`) on the same machine.

    python benchmarks/self_play.py --seconds 90 --repeats 2 --baseline 674668b
"""

from __future__ import annotations

import argparse
from pathlib import Path

from baseline import checkout, measure_in
from matches import SPIN_MODES, spin_mode
from training_speed import print_ratios, train_rate

from sf_train.config import EnvConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="timed seconds per run")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before timing")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--env", default="sf/DoomDuel-v0")
    parser.add_argument("--num-envs", type=int, default=EnvConfig.num_envs)
    parser.add_argument("--baseline", metavar="REF", help="compare with this commit")
    args = parser.parse_args()
    env = EnvConfig(env=args.env, num_envs=args.num_envs, batch_size=args.num_envs // 2)
    if args.baseline:
        with checkout(args.baseline) as tree:
            against_baseline(args, env, tree)
        return
    rates: dict[str, list[float]] = {mode: [] for mode in SPIN_MODES}
    for _ in range(args.repeats):
        for mode in SPIN_MODES:
            with spin_mode(mode):
                rates[mode].append(train_rate(env, args.seconds, args.warmup))
            print(f"{mode:<6} {rates[mode][-1]:>9,.0f} env frames/s", flush=True)
    print(
        f"{args.env}, {args.num_envs} envs, {env.num_workers} workers, sf-train defaults; "
        f"median of {args.repeats} x {args.seconds:g} s"
    )
    print_ratios(rates, "as is")


def against_baseline(args: argparse.Namespace, env: EnvConfig, tree: Path) -> None:
    """The ``--baseline`` comparison (see the module docstring)."""
    here = str(Path(__file__).resolve().parent)
    setup = (
        f"import sys; sys.path.append({here!r})\n"  # after the baseline's own paths
        "from training_speed import train_rate\n"
        "from sf_train.config import EnvConfig\n"
        f"env = EnvConfig(env={env.env!r}, num_envs={env.num_envs}, batch_size={env.batch_size})"
    )
    expression = f"train_rate(env, {args.seconds}, {args.warmup})"
    today = "today"
    rates: dict[str, list[float]] = {args.baseline: [], today: []}
    for _ in range(args.repeats):
        rates[args.baseline].append(measure_in(tree, setup, expression))
        rates[today].append(train_rate(env, args.seconds, args.warmup))
        print(
            f"{args.baseline} {rates[args.baseline][-1]:,.0f}, {today} {rates[today][-1]:,.0f} "
            "env frames/s",
            flush=True,
        )
    print(
        f"{args.env}, {args.num_envs} envs, {env.num_workers} workers, sf-train defaults; "
        f"median of {args.repeats} x {args.seconds:g} s"
    )
    print_ratios(rates, args.baseline)


if __name__ == "__main__":
    main()
