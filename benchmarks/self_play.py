"""Self-play training speed on sf/DoomDuel-v0, with the engines as they are and yielding.

Trains sf-train's default configuration on duels (one policy plays both seats) for a fixed wall
time per run, alternating ``SF_ENVS_SPIN_YIELD=0`` (ViZDoom's engines busy-wait for their peers)
and the default (they give their CPU away while they wait, :mod:`sf_envs.match.spin`), and prints
each run's env frames/s over its timed window (after a warm-up that covers the engines' start)
and the ratio of the medians. No evaluations run inside the window.

    python benchmarks/self_play.py --seconds 90 --repeats 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from matches import SPIN_MODES, spin_mode

from sf_train.config import AlgoConfig, Config, EnvConfig, RunConfig
from sf_train.trainer import Progress, Trainer


def train_rate(
    env: EnvConfig, seconds: float, warmup: float, algo: AlgoConfig | None = None
) -> float:
    """Env frames/s of sf-train's default config (``algo`` in place of its defaults, if
    given) on ``env`` between ``warmup`` and ``warmup + seconds`` of training."""
    marks: list[tuple[float, int]] = []
    with tempfile.TemporaryDirectory() as run_dir:
        cfg = Config(
            env=env,
            algo=algo or AlgoConfig(),
            run=RunConfig(run_dir=run_dir, frames=10**10, checkpoint_every=10**10, eval_episodes=0),
        )
        with Trainer(cfg) as trainer:
            start = time.perf_counter()

            def record(p: Progress) -> None:
                elapsed = time.perf_counter() - start
                if elapsed >= warmup:
                    marks.append((elapsed, p.frames))
                if elapsed >= warmup + seconds:
                    trainer.request_stop()

            trainer.on_progress = record
            trainer.train()
    (t0, f0), (t1, f1) = marks[0], marks[-1]
    return (f1 - f0) / (t1 - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="timed seconds per run")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before timing")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--env", default="sf/DoomDuel-v0")
    parser.add_argument("--num-envs", type=int, default=EnvConfig.num_envs)
    args = parser.parse_args()
    env = EnvConfig(env=args.env, num_envs=args.num_envs, batch_size=args.num_envs // 2)
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


def print_ratios(rates: dict[str, list[float]], reference: str) -> None:
    """Each contender's median env frames/s and its ratio to ``reference``'s."""
    base = statistics.median(rates[reference])
    width = max(map(len, rates))
    for name, runs in rates.items():
        rate = statistics.median(runs)
        print(f"{name:<{width}} {rate:>9,.0f} env frames/s  x{rate / base:.2f}")


if __name__ == "__main__":
    main()
