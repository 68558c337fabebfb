"""Match throughput: agent steps/s and env frames/s, single process and in the vector engine.

One match step advances every player ``frame_skip`` tics in lock step, so
``agent steps = match steps x agents`` and ``env frames = match steps x frame_skip`` (frames of
game time, as for single-player envs). Random actions, 160x120 render, 128x72 observations.
The vector engine runs twice: workers free to move between CPUs, and pinned (the default when the
workers deal evenly to the CPUs). Measured here (2 cores, 4 s each): match steps/s unpinned ->
pinned: duel 392 -> 566, duel_bots 1,934 -> 2,252, deathmatch_bots (7 bots) 1,160 -> 1,586; one
match in one process: 601, 1,070, 712.

    python benchmarks/matches.py --seconds 8 --workers 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sf_envs.match import MatchConfig, MatchCore
from sf_envs.match.unit import MATCH_VARIABLES, MatchUnitFactory
from sf_envs.vector import protocol
from sf_envs.vector.base import _layout
from sf_envs.vector.engine import Engine, EngineSettings

LINEUPS = {
    "duel": {},
    "duel_bots": {},
    "deathmatch_bots": {"num_bots": 7},
}


def single_process(config: MatchConfig, seconds: float) -> float:
    """Match steps per second of one MatchCore stepped in this process."""
    n = config.num_agents
    obs = np.zeros((n, *config.options.obs_shape), dtype=np.uint8)
    rng = np.random.default_rng(0)
    core = MatchCore(config)
    space = core.action_space
    high = space.nvec if space.shape else space.n
    try:
        core.reset(0, obs, None)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            actions = rng.integers(high, size=(n, *space.shape))
            _, _, truncated = core.step(actions, obs, None)
            steps += 1
            if truncated.any():
                core.reset(steps, obs, None)
        return steps / (time.perf_counter() - start)
    finally:
        core.close()


def in_engine(
    config: MatchConfig, seconds: float, workers: int, per_worker: int, pin: bool
) -> float:
    """Match steps per second summed over ``workers x per_worker`` matches in the vector engine,
    with each worker (and its engines) pinned to one CPU or not."""
    units = workers * per_worker
    num_envs = units * config.num_agents
    layout = _layout(num_envs, config.options, 4, len(MATCH_VARIABLES), same_step=True)
    settings = EngineSettings(pin_workers=pin)
    factory = MatchUnitFactory(config)
    engine = Engine(factory, units, per_worker, workers, layout, True, "bench", settings)
    groups = list(range(workers))
    shared = engine.buffers.arrays
    rng = np.random.default_rng(0)

    def run(opcode: bytes) -> None:
        engine.submit(opcode, groups)
        done: set[int] = set()
        while len(done) < len(groups):
            done |= set(engine.collect())

    try:
        shared["seed"][:] = np.arange(num_envs)
        run(protocol.RESET)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            shared["actions"][:] = rng.integers(0, len(config.actions), num_envs)
            run(protocol.STEP)
            steps += units
        return steps / (time.perf_counter() - start)
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="timed seconds per row")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--per-worker", type=int, default=2, help="matches per worker")
    parser.add_argument("--frame-skip", type=int, default=4)
    args = parser.parse_args()
    print(
        f"{'scenario':<16} {'where':<26} {'agents':>6} {'match steps/s':>14} "
        f"{'agent steps/s':>14} {'env frames/s':>13}"
    )
    for name, lineup in LINEUPS.items():
        config = MatchConfig.create(name, frame_skip=args.frame_skip, **lineup)
        engine = f"engine {args.workers}w x {args.per_worker}"
        for where, rate in (
            ("1 process", single_process(config, args.seconds)),
            (engine, in_engine(config, args.seconds, args.workers, args.per_worker, pin=False)),
            (
                f"{engine} pinned",
                in_engine(config, args.seconds, args.workers, args.per_worker, pin=True),
            ),
        ):
            print(
                f"{name:<16} {where:<26} {config.num_agents:>6} {rate:>14,.0f} "
                f"{rate * config.num_agents:>14,.0f} {rate * args.frame_skip:>13,.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
