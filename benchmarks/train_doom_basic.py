"""Train sf/DoomBasic-v0 with the default config and report how fast it is solved.

Not part of CI. Prints env frames/s, wall time and the frames and seconds at which the mean
return of the last 100 episodes first reached the target (75 in ViZDoom's units, i.e. 0.75 in
Sample Factory's), and writes the reward curve as a PNG.

Reference on the 2-core machine (MEASUREMENTS.md): Sample Factory 2.1.1 reaches 0.75 after 283k
frames and 5 min 20 s. The wall clock here is shared with other work on the machine, so frames
are the fairer comparison.

    python benchmarks/train_doom_basic.py --out doom_basic.png [--frames N] [--sync] [--torch-threads N]
        [--no-value-bootstrap]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sf_train.config import AlgoConfig, Config, RunConfig
from sf_train.trainer import Progress, Trainer

TARGET = 75.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frame budget")
    parser.add_argument("--target", type=float, default=TARGET, help="mean return to reach")
    parser.add_argument("--out", default="doom_basic_reward.png", help="reward-curve PNG")
    parser.add_argument("--sync", action="store_true", help="synchronous mode, for comparison")
    parser.add_argument("--keep-going", action="store_true", help="train past the target")
    parser.add_argument("--torch-threads", type=int, default=0, help="0: the default (1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--value-bootstrap",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bootstrap time-limit truncations (algo.value_bootstrap)",
    )
    args = parser.parse_args()

    curve: list[tuple[float, int, float]] = []
    solved: tuple[float, int] | None = None
    start = time.perf_counter()

    with tempfile.TemporaryDirectory() as run_dir:
        cfg = Config(
            algo=AlgoConfig(value_bootstrap=args.value_bootstrap),
            run=RunConfig(
                run_dir=run_dir,
                frames=args.frames,
                sync=args.sync,
                seed=args.seed,
                torch_threads=args.torch_threads,
            ),
        )
        with Trainer(cfg) as trainer:

            def record(p: Progress) -> None:
                nonlocal solved
                if p.mean_return is None:
                    return
                elapsed = time.perf_counter() - start
                curve.append((elapsed, p.frames, p.mean_return))
                if solved is None and p.mean_return >= args.target:
                    solved = (elapsed, p.frames)
                    if not args.keep_going:
                        trainer.request_stop()

            trainer.on_progress = record
            result = trainer.train()

    mode = ("sync" if args.sync else "async") + f", {args.torch_threads or 1} torch thread(s)"
    print(
        f"mode {mode}: {result.frames:,} frames in {result.seconds:.1f} s = {result.fps:,.0f} frames/s"
    )
    print(f"final mean return (last 100 episodes): {result.mean_return:.1f}")
    if solved:
        print(
            f"solved (mean return >= {args.target:g}) after {solved[1]:,} frames, {solved[0]:.1f} s"
        )
    else:
        print(f"not solved within {result.frames:,} frames")
    _plot(curve, args.target, Path(args.out), mode)
    print(f"reward curve: {args.out}")


def _plot(curve: list[tuple[float, int, float]], target: float, out: Path, mode: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([c[1] for c in curve], [c[2] for c in curve], label=f"sf-train ({mode})")
    ax.axhline(target, color="gray", linestyle="--", label=f"target {target:g}")
    ax.set_xlabel("env frames")
    ax.set_ylabel("mean return, last 100 episodes")
    ax.set_title("sf/DoomBasic-v0, default config, 2-core CPU")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
