"""Env frames/s of the sf vector engine against the alternatives, measured side by side.

Same scenario (basic), render 160x120, frame skip 4, random actions everywhere:

  (a) sf engine: gymnasium face (``DoomVectorEnv``) and async face (``batch_size = num_envs/2``),
      the async face also with its workers left unpinned (``pin_workers=False``) for the ratio
  (b) ``gymnasium.vector.AsyncVectorEnv`` over our single ``DoomEnv`` s
  (c) ``gymnasium.vector.AsyncVectorEnv`` over ViZDoom's own gymnasium wrapper (VizdoomBasic-v1)
  (d) the raw limit: one bare ``vizdoom.DoomGame`` per worker in parallel processes, summed
  (e) a diagnostic: the same processes, each stepping ``num_envs / workers`` bare games in turn —
      what many engines per core cost by themselves (caches), with no vector engine at all

Run: ``python benchmarks/vector_env.py --num-envs 16 --workers 2 --seconds 5 --rounds 3``
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from common.raw_vizdoom import FRAME_SKIP, bench_raw
from common.timing import steps_per_second
from rich.console import Console
from rich.table import Table

import sf_envs

OPTIONS = {"resolution": (160, 120), "obs_size": (128, 72), "frame_skip": FRAME_SKIP}
console = Console()


def _timed(step: Callable[[], int], seconds: float) -> float:
    """Env frames/s of calling ``step`` (returns env steps done) for ``seconds`` after warm-up."""
    return steps_per_second(step, seconds) * FRAME_SKIP


def bench_sf_sync(n: int, workers: int, seconds: float) -> float:
    with sf_envs.DoomVectorEnv("basic", num_envs=n, num_workers=workers, **OPTIONS) as env:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        return _timed(lambda: (env.step(rng.integers(0, 4, n)), n)[1], seconds)


def bench_sf_async(n: int, workers: int, seconds: float, pin: bool | None = None) -> float:
    batch = n // 2
    # copy=False: the face as sf-train drives it (each batch consumed before its send).
    pool = sf_envs.DoomAsyncVectorEnv(
        "basic",
        num_envs=n,
        batch_size=batch,
        num_workers=workers,
        pin_workers=pin,
        copy=False,
        **OPTIONS,
    )
    try:
        pool.async_reset(seed=0)
        rng = np.random.default_rng(0)

        def step() -> int:
            *_, info = pool.recv()
            pool.send(rng.integers(0, 4, batch), info["env_id"])
            return batch

        fps = _timed(step, seconds)
        console.print(
            f"  async batches: {pool.zero_copy_batches} zero-copy, {pool.gathered_batches} gathered"
        )
        return fps
    finally:
        pool.close()


def _bench_gym_async(make: Callable[[], gym.Env], n: int, seconds: float) -> float:
    env = gym.vector.AsyncVectorEnv([make] * n)
    try:
        env.reset(seed=0)
        return _timed(lambda: (env.step(env.action_space.sample()), n)[1], seconds)
    finally:
        env.close()


def _make_sf() -> gym.Env:
    return gym.make("sf/DoomBasic-v0", **OPTIONS)


def _make_vizdoom() -> gym.Env:
    from vizdoom import gymnasium_wrapper  # noqa: F401  (registers Vizdoom* ids)

    os.chdir(tempfile.mkdtemp(prefix="vzd_bench_"))
    return gym.make("VizdoomBasic-v1", frame_skip=FRAME_SKIP, screen_resolution="RES_160X120")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=16, help="envs, 8..32")
    parser.add_argument("--workers", type=int, default=2, help="worker processes / cores")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per contender")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; medians are reported"
    )
    args = parser.parse_args()
    n, w, s = args.num_envs, args.workers, args.seconds
    runs = {
        "(a) sf sync face (DoomVectorEnv)": lambda: bench_sf_sync(n, w, s),
        "(a) sf async face (batch n/2)": lambda: bench_sf_async(n, w, s),
        "(a) sf async face, workers not pinned": lambda: bench_sf_async(n, w, s, pin=False),
        "(b) gym AsyncVectorEnv over sf DoomEnv": lambda: _bench_gym_async(_make_sf, n, s),
        "(c) gym AsyncVectorEnv over ViZDoom wrapper": lambda: _bench_gym_async(
            _make_vizdoom, n, s
        ),
        f"(d) raw: {w} bare DoomGame processes": lambda: bench_raw(w, s),
        f"(e) raw: {w} processes x {n // w} bare games in turn": lambda: bench_raw(w, s, n // w),
    }
    # Rounds interleave the contenders so that load from other users of a shared machine hits
    # them alike; the medians and the medians of per-round ratios are what the table shows.
    samples: dict[str, list[float]] = {name: [] for name in runs}
    with console.status("") as status:
        for r in range(args.rounds):
            for name, run in runs.items():
                status.update(f"round {r + 1}/{args.rounds}: measuring {name} ...")
                samples[name].append(run())
                console.print(f"round {r + 1} {name}: {samples[name][-1]:,.0f} frames/s")
    results = {name: float(np.median(v)) for name, v in samples.items()}
    names = list(results)
    a_sync, a_async, a_unpinned, b, c, d, e = (np.array(samples[k]) for k in names)
    best = np.maximum(a_sync, a_async)
    table = Table(
        title=f"basic, 160x120 -> 128x72, frame skip {FRAME_SKIP}, {n} envs, {w} workers, "
        f"{os.cpu_count()} cores"
    )
    table.add_column("contender")
    table.add_column("env frames/s (median)", justify="right")
    for name in names:
        table.add_row(name, f"{results[name]:,.0f}")
    for label, value in (
        ("(a) sync / (b)", a_sync / b),
        ("(a) async / (b)", a_async / b),
        ("(a) best / (c)", best / c),
        ("(a) sync / (d)", a_sync / d),
        ("(a) async / (d)", a_async / d),
        ("(e) / (d): the cost of many engines per core alone", e / d),
        ("(a) async / (e)", a_async / e),
        ("(a) async pinned / not pinned", a_async / a_unpinned),
    ):
        table.add_row(f"{label} (median of rounds)", f"{np.median(value):.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
