"""sf-train's env frames/s over a timed window, where its CPU went, and ratios of such rates.

It needs only sf-train's public config and trainer (and sf-envs' process lookup), so that
``self_play.py --baseline`` (through :mod:`common.baseline`) can run it on older code too.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sf_train.config.schema import AlgoConfig, Config, EnvConfig, ModelConfig, RunConfig
from sf_train.model.network import ActorCritic
from sf_train.run.trainer import Progress, Trainer

from .cpu_time import children_cpu, thread_cpu


@dataclass
class TrainingSample:
    """A timed window of training: env frames, seconds, and CPU seconds by part (see
    :data:`CPU_PARTS`)."""

    frames: int
    seconds: float
    cpu: dict[str, float]

    @property
    def rate(self) -> float:
        return self.frames / self.seconds

    def us_per_frame(self, part: str) -> float:
        return 1e6 * self.cpu[part] / self.frames


#: Parts of a training run's CPU: the ViZDoom engines, the vector engine's worker processes,
#: the trainer's main thread (it acts) in the model's forward passes and in everything else
#: (observations, sampling, recording, the engine hand-offs), its learner thread, and the rest
#: of the trainer process.
CPU_PARTS = ("engines", "env workers", "acting forward", "acting other", "learner", "other")
_LEARNER_THREAD = "sf-train-learner"


@contextlib.contextmanager
def _timing_acting_forward() -> Iterator[list[float]]:
    """While open, ``[seconds]``: the CPU the main thread has spent in the model's forward."""
    spent = [0.0]
    forward = ActorCritic.forward
    main = threading.main_thread()

    def timed(self: ActorCritic, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not main:
            return forward(self, *args, **kwargs)
        start = time.thread_time()
        try:
            return forward(self, *args, **kwargs)
        finally:
            spent[0] += time.thread_time() - start

    ActorCritic.forward = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        ActorCritic.forward = forward  # type: ignore[method-assign]


def _cpu_parts(forward_seconds: float) -> dict[str, float]:
    """CPU seconds so far of each of :data:`CPU_PARTS` (called in the trainer's process)."""
    engines, workers = children_cpu()
    threads = thread_cpu()
    if _LEARNER_THREAD not in threads:
        raise RuntimeError(f"no thread named {_LEARNER_THREAD!r}: is the trainer asynchronous?")
    acting, learner = threads.pop("MainThread"), threads.pop(_LEARNER_THREAD)
    # With sampler processes, the acting happens in them (they count as "env workers").
    parts = (
        engines,
        workers,
        forward_seconds,
        acting - forward_seconds,
        learner,
        sum(threads.values()),
    )
    return dict(zip(CPU_PARTS, parts, strict=True))


def train_sample(
    env: EnvConfig,
    seconds: float,
    warmup: float,
    algo: AlgoConfig | None = None,
    model: ModelConfig | None = None,
    probe: Callable[[], dict[str, float]] | None = None,
    num_samplers: int | None = None,
) -> TrainingSample:
    """Trains sf-train's default config (``algo`` and ``model`` in place of its defaults, if
    given) on ``env`` and measures the window from ``warmup`` to ``warmup + seconds``.

    ``probe`` returns more running totals (CPU seconds by name) to take over the same window;
    they join :data:`CPU_PARTS` in the sample's ``cpu``. ``num_samplers`` sets
    ``run.num_samplers`` (left out: the config's default)."""
    marks: list[tuple[float, int, dict[str, float]]] = []

    def totals(forward_seconds: float) -> dict[str, float]:
        return {**_cpu_parts(forward_seconds), **(probe() if probe else {})}

    with tempfile.TemporaryDirectory() as run_dir:
        cfg = Config(
            env=env,
            model=model or ModelConfig(),
            algo=algo or AlgoConfig(),
            run=RunConfig(
                run_dir=run_dir,
                frames=10**10,
                checkpoint_every=10**10,
                eval_episodes=0,
                **({} if num_samplers is None else {"num_samplers": num_samplers}),
            ),
        )
        with _timing_acting_forward() as forward, Trainer(cfg) as trainer:
            start = time.perf_counter()

            def record(p: Progress) -> None:
                elapsed = time.perf_counter() - start
                if (elapsed >= warmup and not marks) or elapsed >= warmup + seconds:
                    marks.append((elapsed, p.frames, totals(forward[0])))
                if elapsed >= warmup + seconds:
                    trainer.request_stop()

            trainer.on_progress = record
            trainer.train()
    (t0, f0, cpu0), (t1, f1, cpu1) = marks[0], marks[-1]
    return TrainingSample(f1 - f0, t1 - t0, {k: cpu1[k] - cpu0[k] for k in cpu1})


def train_rate(
    env: EnvConfig, seconds: float, warmup: float, algo: AlgoConfig | None = None
) -> float:
    """Env frames/s of :func:`train_sample`'s window."""
    return train_sample(env, seconds, warmup, algo).rate


def print_ratios(rates: dict[str, list[float]], reference: str) -> None:
    """Each contender's median env frames/s and its ratio to ``reference``'s."""
    base = statistics.median(rates[reference])
    width = max(map(len, rates))
    for name, runs in rates.items():
        rate = statistics.median(runs)
        print(f"{name:<{width}} {rate:>9,.0f} env frames/s  x{rate / base:.2f}")
