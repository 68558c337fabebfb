"""Train sf/DoomBasic-v0 with the default config and report how fast it is solved.

Not part of CI. Every 50k frames the trainer evaluates its policy over 100 episodes (every env
an equal share); "solved" is the first evaluation whose mean return reaches the target (75 in
ViZDoom's units, i.e. 0.75 in Sample Factory's). Prints env frames/s (evaluations included),
wall time and the frames and seconds at which it was solved, and writes the training return
and the evaluations as a PNG. For a comparison with Sample Factory in the same sitting, see
``benchmarks/peers/sample_factory.py``.

    python benchmarks/train_doom_basic.py --out doom_basic.png [--frames N] [--sync] [--torch-threads N]
        [--no-value-bootstrap] [--keep-going]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sf_train.config.schema import AlgoConfig, Config, RunConfig
from sf_train.run.trainer import Progress, Trainer

TARGET = 75.0
EVAL_EVERY = 50_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=500_000, help="frame budget")
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
    evaluations: list[tuple[float, int, float]] = []
    solved: tuple[float, int] | None = None
    start = time.perf_counter()

    with tempfile.TemporaryDirectory() as run_dir:
        cfg = Config(
            algo=AlgoConfig(value_bootstrap=args.value_bootstrap),
            run=RunConfig(
                run_dir=run_dir,
                frames=args.frames,
                checkpoint_every=EVAL_EVERY,
                sync=args.sync,
                seed=args.seed,
                torch_threads=args.torch_threads,
            ),
        )
        with Trainer(cfg) as trainer:

            def take_evaluations() -> None:
                nonlocal solved
                elapsed = time.perf_counter() - start
                for frames, summary in trainer.evaluations[len(evaluations) :]:
                    evaluations.append((elapsed, frames, summary["return_mean"]))
                    if solved is None and summary["return_mean"] >= args.target:
                        solved = (elapsed, frames)
                        if not args.keep_going:
                            trainer.request_stop()

            def record(p: Progress) -> None:
                if p.mean_return is not None:
                    curve.append((time.perf_counter() - start, p.frames, p.mean_return))
                take_evaluations()

            trainer.on_progress = record
            result = trainer.train()
            take_evaluations()  # the final checkpoint's

    mode = ("sync" if args.sync else "async") + f", {args.torch_threads or 1} torch thread(s)"
    print(
        f"mode {mode}: {result.frames:,} frames in {result.seconds:.1f} s = {result.fps:,.0f} frames/s"
    )
    print(f"final training return (each env's last episodes): {result.mean_return:.1f}")
    print(f"evaluations: {', '.join(f'{f // 1000}k: {r:.1f}' for _, f, r in evaluations)}")
    if solved:
        print(
            f"solved (evaluated mean return >= {args.target:g}) after {solved[1]:,} frames, "
            f"{solved[0]:.1f} s"
        )
    else:
        print(f"not solved within {result.frames:,} frames")
    _plot(curve, evaluations, args.target, Path(args.out), mode)
    print(f"reward curve: {args.out}")


def _plot(
    curve: list[tuple[float, int, float]],
    evaluations: list[tuple[float, int, float]],
    target: float,
    out: Path,
    mode: str,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([c[1] for c in curve], [c[2] for c in curve], label=f"training return ({mode})")
    ax.plot(
        [e[1] for e in evaluations], [e[2] for e in evaluations], "o-", label="evaluation (100 ep.)"
    )
    ax.axhline(target, color="gray", linestyle="--", label=f"target {target:g}")
    ax.set_xlabel("env frames")
    ax.set_ylabel("mean return")
    ax.set_title("sf/DoomBasic-v0, default config, 2-core CPU")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
