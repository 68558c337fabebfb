"""sf-train's env frames/s over a timed window, and ratios of such rates.

It needs only sf-train's public config and trainer, so that :mod:`baseline` can run it on older
code too.
"""

from __future__ import annotations

import statistics
import tempfile
import time

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


def print_ratios(rates: dict[str, list[float]], reference: str) -> None:
    """Each contender's median env frames/s and its ratio to ``reference``'s."""
    base = statistics.median(rates[reference])
    width = max(map(len, rates))
    for name, runs in rates.items():
        rate = statistics.median(runs)
        print(f"{name:<{width}} {rate:>9,.0f} env frames/s  x{rate / base:.2f}")
