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

Today's runs also print where their CPU went per env frame (engines, env workers, the acting
thread, the learner; from /proc) and the most the machine's CPUs could give if only the engines
and the policy's forward passes and its learning used any: ``CPUs / (engines + acting forward +
learner)``. That bounds what faster duel driving can do for self-play: the model's work per
frame is the algorithm's, the engines' is the game's.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from common.baseline import checkout, measure_in
from common.match_timing import SPIN_MODES, spin_mode
from common.training_speed import CPU_PARTS, TrainingSample, print_ratios, train_sample

from sf_train.config.schema import EnvConfig


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
    samples: dict[str, list[TrainingSample]] = {mode: [] for mode in SPIN_MODES}
    for _ in range(args.repeats):
        for mode in SPIN_MODES:
            with spin_mode(mode):
                samples[mode].append(train_sample(env, args.seconds, args.warmup))
            print(f"{mode:<6} {samples[mode][-1].rate:>9,.0f} env frames/s", flush=True)
    print(
        f"{args.env}, {args.num_envs} envs, {env.num_workers} workers, sf-train defaults; "
        f"median of {args.repeats} x {args.seconds:g} s"
    )
    print_ratios({mode: [s.rate for s in runs] for mode, runs in samples.items()}, "as is")
    for mode, runs in samples.items():
        print_cpu(mode, runs)


def against_baseline(args: argparse.Namespace, env: EnvConfig, tree: Path) -> None:
    """The ``--baseline`` comparison (see the module docstring)."""
    here = str(Path(__file__).resolve().parent)
    setup = (
        f"import sys; sys.path.append({here!r})\n"  # after the baseline's own paths
        # The baseline's own harness: benchmarks/training_speed.py in trees from before
        # benchmarks/common, then common/training_speed.py (its own, else today's).
        "try:\n"
        "    from training_speed import train_rate\n"
        "except ModuleNotFoundError:\n"
        "    from common.training_speed import train_rate\n"
        "from sf_train.config.schema import EnvConfig\n"
        f"env = EnvConfig(env={env.env!r}, num_envs={env.num_envs}, batch_size={env.batch_size})"
    )
    expression = f"train_rate(env, {args.seconds}, {args.warmup})"
    today = "today"
    baseline: list[float] = []
    samples: list[TrainingSample] = []
    for _ in range(args.repeats):
        baseline.append(measure_in(tree, setup, expression))
        samples.append(train_sample(env, args.seconds, args.warmup))
        print(
            f"{args.baseline} {baseline[-1]:,.0f}, {today} {samples[-1].rate:,.0f} env frames/s",
            flush=True,
        )
    print(
        f"{args.env}, {args.num_envs} envs, {env.num_workers} workers, sf-train defaults; "
        f"median of {args.repeats} x {args.seconds:g} s"
    )
    print_ratios({args.baseline: baseline, today: [s.rate for s in samples]}, args.baseline)
    bound = print_cpu(today, samples)
    print(f"that bound is x{bound / statistics.median(baseline):.2f} of {args.baseline}")


def print_cpu(name: str, samples: list[TrainingSample]) -> float:
    """Prints the runs' median CPU per env frame by part and the frames/s the CPUs would allow
    if only the engines and the model used any; returns that bound."""
    per_frame = {
        part: statistics.median(s.us_per_frame(part) for s in samples) for part in CPU_PARTS
    }
    parts = ", ".join(f"{part} {us:.0f}" for part, us in per_frame.items())
    cpus = len(os.sched_getaffinity(0))
    needed = per_frame["engines"] + per_frame["acting forward"] + per_frame["learner"]
    bound = cpus * 1e6 / needed
    print(
        f"{name}: CPU per env frame (us): {parts}; total {sum(per_frame.values()):.0f}. "
        f"{cpus} CPUs running only the engines and the model: at most {bound:,.0f} env frames/s"
    )
    return bound


if __name__ == "__main__":
    main()
