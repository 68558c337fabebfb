"""How many env frames/s sf-train's machinery allows when games and model cost nothing.

Trains sf-train as it is over :mod:`common.free_game` (the real vector engine, its worker processes
and shared memory, over games that return a fixed screen of Doom basic's shape) with a model
whose forward and backward cost next to nothing (one 8x8 convolution of stride 8 to 4
channels, a 16-unit layer, no GRU), for the observations of sf-train's defaults (gray 64x36)
and of the ``sample-factory`` preset (RGB 128x72). It prints the frames/s that leaves and the
CPU per env frame of each part:

- split (a part each sampler would do for its own envs): the env workers; on the acting side
  receive (``recv``), record (the step into the trajectory buffers, the choices beside it),
  act (the batched forward pass and the sampling), send (``send``), and the rest of the
  sampler's loop (columns, episode statistics);
- serial (one per trainer, however many samplers): handing batches out (to the learner, and
  back once learned), the learner's step, its reports and checkpoint checks, and the rest of
  the trainer's loop.

From those it extrapolates what N cores allow if the machinery were the only cost: today's
design drives everything split from one thread of one process, so
``min(1 / acting thread, N / split, 1 / serial)``; a design whose samplers are processes of
their own reaches ``min(N / split, 1 / serial)`` (all per env frame). CPU times are each
thread's own (``time.thread_time``) and the workers' from /proc, so a part waiting for the GIL
or a core is not charged for the wait.

    python benchmarks/machinery_ceiling.py --seconds 20 --warmup 5

``--samplers 1 2`` then trains the same way with each number of sampler processes
(``run.num_samplers``), every sampler acting for the same 16 envs (8 per ``recv``), rounds
alternating, and prints each one's frames/s, its ratio to the first, and the sampling
machinery's CPU per env frame (the samplers' threads or processes and their engine workers):
if splitting costs nothing, that stays flat as the samplers grow. The learner takes one epoch of
one minibatch per batch there: with a free model, sf-train's default three epochs cost the CPU
more than sampling does, and would measure the learner instead (on a GPU host it learns on the
GPU).

    python benchmarks/machinery_ceiling.py --seconds 20 --warmup 8 --samplers 1 2 --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The engine's workers import the free game to build its units.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))

from common import free_game  # noqa: E402
from common.training_speed import TrainingSample, train_sample  # noqa: E402

from sf_envs.vector.async_env import DoomAsyncVectorEnv  # noqa: E402
from sf_train.algo.learner import Learner  # noqa: E402
from sf_train.config.schema import AlgoConfig, EnvConfig, ModelConfig  # noqa: E402
from sf_train.run.checkpointing import Checkpointing  # noqa: E402
from sf_train.run.members import SharedWeights  # noqa: E402
from sf_train.run.reporting import Reporting  # noqa: E402
from sf_train.run.trainer import Trainer  # noqa: E402
from sf_train.sampling.acting import PolicyRunner  # noqa: E402
from sf_train.sampling.columns import Columns  # noqa: E402
from sf_train.sampling.sampler import Sampler  # noqa: E402
from sf_train.sampling.stacked import StackedRunner  # noqa: E402

#: Where each timed method's own time goes (nested timed calls are charged to themselves).
TIMED: dict[str, list[tuple[type, str]]] = {
    "receive": [(DoomAsyncVectorEnv, "recv")],
    "send": [(DoomAsyncVectorEnv, "send")],
    "act": [(PolicyRunner, "decide"), (StackedRunner, "decide"), (Sampler, "_act")],
    "record": [(Sampler, "_record"), (Sampler, "_truncation_values"), (Sampler, "_decide")],
    "sampler loop": [(Sampler, "collect")],
    "hand out": [
        (Columns, "take"),
        (Trainer, "_collected"),
        (Reporting, "_record_batch"),
        (Sampler, "release"),
    ],
    "learner step": [(Learner, "train"), (SharedWeights, "publish")],
    "reports": [(Reporting, "_report"), (Checkpointing, "_maybe_checkpoint")],
}
SPLIT = ("env workers", "receive", "record", "act", "send", "sampler loop")
SERIAL = ("hand out", "learner step", "reports", "trainer rest")
#: The parts that today's design runs in its one acting thread.
ACTING_THREAD = ("receive", "record", "act", "send", "sampler loop", "hand out", "reports")
CORES = (2, 8, 16, 36)
#: Observations of sf-train's defaults and of the sample-factory preset.
SHAPES = {
    "defaults (gray 64x36)": {"obs_size": (64, 36), "grayscale": True},
    "preset (RGB 128x72)": {"obs_size": (128, 72), "grayscale": False},
}
FREE_MODEL = ModelConfig(conv_channels=(4,), conv_kernels=(8,), conv_strides=(8,), fc_size=16)
#: The learner of the samplers' comparison: one step per batch.
LIGHT_LEARNER = AlgoConfig(num_epochs=1, num_minibatches=1)
ENVS_PER_SAMPLER = 16
#: The sampling machinery in :data:`training_speed.CPU_PARTS`: with one sampler its workers and
#: the acting (main) thread; with several the sampler processes and their workers, which all
#: count as "env workers" (the main thread then only hands batches out: serial).
SAMPLING = {True: ("env workers", "acting forward", "acting other"), False: ("env workers",)}
SERIAL_WITH_PROCESSES = ("acting forward", "acting other", "learner", "other")


@contextlib.contextmanager
def exclusive_timers() -> Iterator[Callable[[], dict[str, float]]]:
    """While open, the :data:`TIMED` methods count their own CPU seconds (of the calling
    thread, less what timed calls inside them took); yields a function returning the totals by
    part, with ``"trainer rest"``: the main thread's CPU in none of them."""
    totals: Counter[str] = Counter()
    local = threading.local()
    originals = []

    def timed(part: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stack = local.__dict__.setdefault("stack", [])
            stack.append(0.0)
            start = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                inner = stack.pop()
                totals[part] += spent - inner
                if threading.current_thread() is threading.main_thread():
                    totals["main timed"] += spent - inner
                if stack:
                    stack[-1] += spent

        return wrapper

    for part, methods in TIMED.items():
        for owner, name in methods:
            original = owner.__dict__[name]
            originals.append((owner, name, original))
            setattr(owner, name, timed(part, original))

    def read() -> dict[str, float]:
        main_cpu = time.thread_time()  # read() runs in the main thread (on_progress)
        parts = {part: totals[part] for part in TIMED}
        parts["trainer rest"] = main_cpu - totals["main timed"]
        return parts

    try:
        yield read
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def measure(shape: dict[str, Any], seconds: float, warmup: float, num_envs: int) -> TrainingSample:
    env = EnvConfig(
        env=f"common.free_game:{free_game.ENV_ID}",
        num_envs=num_envs,
        batch_size=num_envs // 2,
        **shape,
    )
    with exclusive_timers() as read:
        return train_sample(env, seconds, warmup, model=FREE_MODEL, probe=read, num_samplers=1)


def report(name: str, sample: TrainingSample) -> None:
    us = {part: sample.us_per_frame(part) for part in (*SPLIT, *SERIAL)}
    split, serial = sum(us[p] for p in SPLIT), sum(us[p] for p in SERIAL)
    acting = sum(us[p] for p in ACTING_THREAD)
    print(f"\n{name}: {sample.rate:,.0f} env frames/s on {os.cpu_count()} cores")
    print(f"  {'part':<14} {'µs/frame':>9}  kind")
    for part in (*SPLIT, *SERIAL):
        kind = "split" if part in SPLIT else "serial"
        print(f"  {part:<14} {us[part]:>9.2f}  {kind}")
    print(f"  {'split, all':<14} {split:>9.2f}\n  {'serial, all':<14} {serial:>9.2f}")
    print(f"  today's acting thread: {acting:.2f} µs/frame, at most {1e6 / acting:,.0f} frames/s")
    print(f"  {'N cores':>8} {'today (one acting thread)':>27} {'samplers in processes':>23}")
    for n in CORES:
        today = min(1e6 / acting, n * 1e6 / split, 1e6 / serial)
        processes = min(n * 1e6 / split, 1e6 / serial)
        print(f"  {n:>8} {today:>27,.0f} {processes:>23,.0f}")


def compare_samplers(counts: list[int], seconds: float, warmup: float, rounds: int) -> None:
    """Frames/s and sampling CPU per frame with each number of sampler processes."""
    samples: dict[int, list[TrainingSample]] = {k: [] for k in counts}
    for _ in range(rounds):
        for k in counts:
            env = EnvConfig(
                env=f"common.free_game:{free_game.ENV_ID}",
                num_envs=ENVS_PER_SAMPLER * k,
                batch_size=ENVS_PER_SAMPLER // 2 * k,
                num_workers=max(2, k),
                **SHAPES["defaults (gray 64x36)"],
            )
            sample = train_sample(env, seconds, warmup, LIGHT_LEARNER, FREE_MODEL, num_samplers=k)
            samples[k].append(sample)
            print(f"  {k} sampler(s): {sample.rate:,.0f} env frames/s", flush=True)
    base = statistics.median(s.rate for s in samples[counts[0]])
    print(f"\nsamplers ({ENVS_PER_SAMPLER} free envs each, gray 64x36, 1 epoch x 1 minibatch)")
    print(
        f"  {'samplers':>8} {'frames/s':>10} {'ratio':>6} {'sampling µs/frame':>18} {'learner':>8}"
    )
    serial = {}
    for k, runs in samples.items():
        rate = statistics.median(s.rate for s in runs)
        parts = SAMPLING[k == 1]
        sampling = statistics.median(sum(s.us_per_frame(p) for p in parts) for s in runs)
        learner = statistics.median(s.us_per_frame("learner") for s in runs)
        print(f"  {k:>8} {rate:>10,.0f} {rate / base:>5.2f}x {sampling:>18.2f} {learner:>8.2f}")
        if k > 1:
            one = statistics.median(
                sum(s.us_per_frame(p) for p in SERIAL_WITH_PROCESSES) for s in runs
            )
            serial[k] = (sampling, one)
    for k, (split, one) in serial.items():
        print(f"  with {k} samplers: split {split:.2f} µs/frame, serial {one:.2f} µs/frame")
        for n in CORES:
            print(f"  {n:>8} cores: {min(n * 1e6 / split, 1e6 / one):>10,.0f} env frames/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="timed window per shape")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the window")
    parser.add_argument("--num-envs", type=int, default=16, help="envs (half of them per recv)")
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    parser.add_argument(
        "--samplers",
        nargs="+",
        type=int,
        help="instead of the parts, compare these numbers of sampler processes",
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (--samplers)")
    args = parser.parse_args()
    if args.samplers:
        compare_samplers(args.samplers, args.seconds, args.warmup, args.rounds)
        return
    for name in args.shapes:
        report(name, measure(SHAPES[name], args.seconds, args.warmup, args.num_envs))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
