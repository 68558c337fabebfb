"""Train sf/DoomBasic-v0 undisturbed and while a random vector worker is killed every N s.

Not part of CI. Two runs of the default config with the same seed and frame budget, one after
the other in this process: undisturbed, then with a thread that SIGKILLs a random worker of the
trainer's vector env every ``--kill-every`` seconds. Prints each run's frames/s (frames trained
on, per second of training), their ratio (goal: >= 0.9), the restarts and the frames of
experience dropped, and the return each final checkpoint reaches in the unbiased evaluation of
``sf-train eval`` (every env an equal share of ``--episodes``; goal: the same return). Writes
frames over time for both runs, with the kills marked, as a PNG.

    python benchmarks/training_faults.py [--frames 1000000] [--kill-every 20] [--episodes 100]
        [--seed 0] [--out training_faults.png]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sf_train.config.schema import Config, EnvConfig, RunConfig
from sf_train.evaluation import evaluate
from sf_train.run.trainer import Trainer, TrainResult

RESTART_WINDOW_S = 300.0
"""The sf-envs engine's window for its restart budget (``EngineSettings.restart_window_s``)."""


@dataclass
class RunRecord:
    """What one run measured."""

    label: str
    result: TrainResult
    curve: list[tuple[float, int]]
    kills: list[float]
    eval_mean: float
    eval_std: float
    eval_episodes: int


class WorkerKiller:
    """A thread that SIGKILLs a random worker of ``trainer.venv`` every ``every_s`` seconds
    until the trainer reaches its frame budget (kills during its final checkpoint's evaluation
    would hit no training)."""

    def __init__(self, trainer: Trainer, every_s: float, seed: int, start: float) -> None:
        self.trainer, self.every_s, self.start = trainer, every_s, start
        self.kills: list[float] = []
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-killer", daemon=True)

    def __enter__(self) -> WorkerKiller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        trainer = self.trainer
        while not self._stop.wait(self.every_s) and trainer.frames < trainer.cfg.run.frames:
            try:
                # Read from this thread while the engine may be replacing a worker; a worker
                # gone between the listing and the kill is skipped until the next round.
                pids = trainer.venv.worker_pids
                os.kill(self._rng.choice(pids), signal.SIGKILL)
            except (AttributeError, IndexError, ProcessLookupError):
                continue
            self.kills.append(time.perf_counter() - self.start)


def train_and_evaluate(
    label: str, cfg: Config, kill_every: float, seed: int, episodes: int
) -> RunRecord:
    """Trains ``cfg`` (killing a worker every ``kill_every`` s when > 0), then evaluates the
    final checkpoint as ``sf-train eval`` does."""
    curve: list[tuple[float, int]] = []
    kills: list[float] = []
    start = time.perf_counter()
    with Trainer(cfg) as trainer:
        trainer.on_progress = lambda p: curve.append((time.perf_counter() - start, p.frames))
        if kill_every > 0:
            with WorkerKiller(trainer, kill_every, seed, start) as killer:
                result = trainer.train()
            kills = killer.kills
        else:
            result = trainer.train()
    summary = evaluate(cfg.run.run_dir, episodes).summary()
    return RunRecord(
        label,
        result,
        curve,
        kills,
        summary["return_mean"],
        summary["return_std"],
        summary["episodes"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frame budget per run")
    parser.add_argument("--kill-every", type=float, default=20.0, help="seconds between kills")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="training_faults.png", help="frames-over-time PNG")
    args = parser.parse_args()
    if not args.kill_every > 0:
        parser.error(f"--kill-every {args.kill_every}: give a positive number of seconds")

    # Every kill may hit the same worker: allow as many restarts as kills fit in the window.
    max_restarts = int(RESTART_WINDOW_S / args.kill_every) + 1
    records = []
    with tempfile.TemporaryDirectory(prefix="sf_bench_faults_") as root:
        for label, kill_every in (("undisturbed", 0.0), ("killed", args.kill_every)):
            cfg = Config(
                env=EnvConfig(worker_max_restarts=max_restarts if kill_every else None),
                run=RunConfig(run_dir=str(Path(root) / label), frames=args.frames, seed=args.seed),
            )
            records.append(train_and_evaluate(label, cfg, kill_every, args.seed, args.episodes))

    for r in records:
        res = r.result
        print(
            f"{r.label:>11}: {res.frames:,} frames in {res.seconds:.1f} s = {res.fps:,.0f} frames/s;"
            f" {len(r.kills)} kills, {res.worker_restarts} worker restarts, "
            f"{res.dropped_frames:,} frames dropped; evaluation ({r.eval_episodes} episodes): "
            f"return {r.eval_mean:.1f} ± {r.eval_std:.1f}"
        )
    calm, hit = records
    print(
        f"frames/s ratio killed / undisturbed: {hit.result.fps / calm.result.fps:.3f} (goal >= 0.9)"
    )
    print(
        f"evaluated return killed - undisturbed: {hit.eval_mean - calm.eval_mean:+.1f} "
        f"(standard error of the difference ≈ {_se_of_difference(records):.1f})"
    )
    _plot(records, Path(args.out), args.kill_every)
    print(f"frames over time: {args.out}")


def _se_of_difference(records: list[RunRecord]) -> float:
    return sum(r.eval_std**2 / max(r.eval_episodes, 1) for r in records) ** 0.5


def _plot(records: list[RunRecord], out: Path, kill_every: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in records:
        ax.plot([c[0] for c in r.curve], [c[1] for c in r.curve], label=r.label)
    for i, t in enumerate(records[1].kills):
        ax.axvline(
            t, color="red", alpha=0.3, linewidth=1, label="worker killed" if i == 0 else None
        )
    ax.set_xlabel("seconds of training")
    ax.set_ylabel("env frames trained on")
    ax.set_title(f"sf/DoomBasic-v0, default config; a random worker killed every {kill_every:g} s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
