"""sf-train's env frames/s on this host against the most its cores allow, over envs x samplers.

One prepared script for a CUDA host (it runs on a CPU too, with ``--quick``). First it
measures the host's engine-bound limit: one process per core, each stepping a bare ViZDoom
basic game (render 160x120, frame skip 4, random actions), summed. Then it trains sf-train
with the ``sample-factory`` preset on ``sf/DoomBasic-v0`` for each ``--num-envs`` x
``--samplers`` pair (``run.num_samplers``; one env worker per core, split among the samplers)
and prints each run's env frames/s over its timed window and its ratio to that limit, all
measured in the same run.

    python benchmarks/gpu_scale.py                 # the full sweep, about 10 minutes on a 16-core host
    python benchmarks/gpu_scale.py --quick         # 2 runs of a few seconds (CPU hosts, CI)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

from common.raw_vizdoom import bench_raw
from common.training_speed import train_sample

from sf_train.config.presets import sample_factory
from sf_train.model.device import resolve_device


def _workers(cores: int, samplers: int, num_envs: int) -> int:
    """One worker per core, a multiple of ``samplers``, at most the envs."""
    workers = max(samplers, cores - cores % samplers)
    return min(workers, num_envs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--samplers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=20.0, help="timed window per run")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before the window")
    parser.add_argument("--limit-seconds", type=float, default=10.0, help="bare-game timing")
    parser.add_argument(
        "--quick", action="store_true", help="8 envs, 1 and 2 samplers, a few seconds each"
    )
    args = parser.parse_args()
    if args.quick:
        args.num_envs, args.samplers = [8], [1, 2]
        args.seconds, args.warmup, args.limit_seconds = 3.0, 6.0, 3.0
    cores = len(os.sched_getaffinity(0))
    preset = sample_factory()
    device = resolve_device(preset.run.device)
    started = time.perf_counter()
    limit = bench_raw(cores, args.limit_seconds)
    print(f"{cores} cores, device {device}: bare games allow {limit:,.0f} env frames/s")
    print(f"{'envs':>6} {'samplers':>8} {'workers':>7} {'frames/s':>10} {'of limit':>8}")
    for num_envs in args.num_envs:
        for samplers in args.samplers:
            workers = _workers(cores, samplers, num_envs)
            env = dataclasses.replace(
                preset.env,
                num_envs=num_envs,
                batch_size=num_envs // 2,
                num_workers=workers,
            )
            sample = train_sample(
                env, args.seconds, args.warmup, preset.algo, preset.model, num_samplers=samplers
            )
            print(
                f"{num_envs:>6} {samplers:>8} {workers:>7} {sample.rate:>10,.0f} "
                f"{sample.rate / limit:>8.2f}",
                flush=True,
            )
    print(f"in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
