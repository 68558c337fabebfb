"""Population training speed: P policies in one trainer against one policy, same envs.

Trains on sf/DoomDuel-v0 (16 envs: 8 duels) for a fixed wall time per run, alternating one
policy (self-play) and a population of ``--policies`` (every duel's seats drawn anew at each
episode start, each policy learning from batches of its own, minibatches of the same size), and
prints each run's env frames/s over its timed window and the ratio of the medians (same run,
same machine).

    python benchmarks/population.py --seconds 60 --repeats 2
"""

from __future__ import annotations

import argparse

from common.training_speed import print_ratios, train_rate

from sf_train.config.schema import AlgoConfig, EnvConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="timed seconds per run")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before timing")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--policies", type=int, default=4)
    parser.add_argument("--env", default="sf/DoomDuel-v0")
    parser.add_argument("--num-envs", type=int, default=EnvConfig.num_envs)
    args = parser.parse_args()
    env = EnvConfig(env=args.env, num_envs=args.num_envs, batch_size=args.num_envs // 2)
    contenders = {
        "1 policy": AlgoConfig(entropy_coef=0.01),
        f"{args.policies} policies": AlgoConfig(
            entropy_coef=0.01,
            num_policies=args.policies,
            # Minibatches of as many trajectories as the one policy's: the same optimiser
            # steps per sample (its batches are num_policies times smaller).
            num_minibatches=max(1, AlgoConfig.num_minibatches // args.policies),
        ),
    }
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeats):
        for name, algo in contenders.items():
            rates[name].append(train_rate(env, args.seconds, args.warmup, algo))
            print(f"{name:<12} {rates[name][-1]:>9,.0f} env frames/s", flush=True)
    print(
        f"{args.env}, {args.num_envs} envs, {env.num_workers} workers; median of "
        f"{args.repeats} x {args.seconds:g} s"
    )
    print_ratios(rates, "1 policy")


if __name__ == "__main__":
    main()
