"""Match throughput against the limit the engines' own CPU sets, with and without spin yield.

One match step advances every player ``frame_skip`` tics in lock step, so
``agent steps = match steps x agents`` and ``env frames = match steps x frame_skip``. Random
actions, 160x120 render, 128x72 observations.

Every row measures, over its timed window, the CPU the ViZDoom engines used per match step
(summed over all engines, from /proc) and turns it into the match steps/s the machine's CPUs
could sustain if the engines ran alone (``limit = CPUs / engine CPU per step``); ``of limit`` is
the rate reached divided by that. The driving side (this process and the vector engine's
workers) is shown per step too. Each setup runs with the engines' own busy wait for their peers
(``spin`` = ``as is``, ``SF_ENVS_SPIN_YIELD=0``) and with :mod:`sf_envs.match.spin`'s yielding
launcher (``yield``), alternating, so both meet the same machine (``--modes`` picks them;
``x first`` is the ratio to the first mode given). ``--setups`` runs only some rows.

    python benchmarks/matches.py --seconds 8 --repeats 2

``--baseline REF`` measures instead the chosen rows (first mode) against older code in the same
run: the vector engine with 2 pinned workers x 2 duels as the commit ``REF`` ran it, with its own
``benchmarks/matches.py`` (whose ``in_engine(config, seconds, workers, per_worker, pin)``
returns steps/s: 674668b, the code the duel-throughput issue was measured on), alternating
round by round with today's rows, and prints each row's ratio to it.

    python benchmarks/matches.py --seconds 8 --repeats 3 --setups 5 6 --baseline 674668b
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
from common.baseline import checkout, measure_in
from common.match_timing import SPIN_MODES, Sample, random_actions, single_process, spin_mode, timed

from sf_envs.match import MatchConfig
from sf_envs.match.unit import MATCH_VARIABLES, MatchUnitFactory
from sf_envs.vector import protocol
from sf_envs.vector.base import _layout
from sf_envs.vector.engine import Engine, EngineSettings


def in_engine(
    config: MatchConfig, seconds: float, workers: int, per_worker: int, pin: bool, buffers: int
) -> Sample:
    """``workers x per_worker`` matches in the vector engine, each worker (and its engines)
    pinned to one CPU or not. With ``buffers=2`` the matches form two batches that are stepped
    as they come back, as sf-train's sampler does (each batch is resent as soon as it is done,
    while the other one steps); with 1, every step waits for all matches."""
    units = workers * per_worker
    num_envs = units * config.num_agents
    layout = _layout(num_envs, config.options, 4, len(MATCH_VARIABLES), same_step=True)
    settings = EngineSettings(pin_workers=pin)
    factory = MatchUnitFactory(config)
    per_group = per_worker // buffers
    engine = Engine(factory, units, per_group, workers, layout, True, "bench", settings)
    groups = list(range(units // per_group))
    shared = engine.buffers.arrays
    rng = np.random.default_rng(0)
    rows = per_group * config.num_agents

    def send(opcode: bytes, ready: list[int]) -> None:
        for g in ready:
            shared["actions"][g * rows : (g + 1) * rows] = random_actions(config, rng, rows)
        engine.submit(opcode, ready)

    try:
        shared["seed"][:] = np.arange(num_envs)
        send(protocol.RESET, groups)
        done: set[int] = set()
        while len(done) < len(groups):
            done |= set(engine.collect())
        if buffers == 1:

            def step() -> int:
                send(protocol.STEP, groups)
                finished: set[int] = set()
                while len(finished) < len(groups):
                    finished |= set(engine.collect())
                return units

        else:
            send(protocol.STEP, groups)

            def step() -> int:
                ready = engine.collect()
                send(protocol.STEP, ready)
                return len(ready) * per_group

        return timed(seconds, step)
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="timed seconds per row")
    parser.add_argument("--repeats", type=int, default=2, help="runs per row (median shown)")
    parser.add_argument("--scenario", default="duel", help="match scenario (duel, duel_bots…)")
    parser.add_argument("--frame-skip", type=int, default=4)
    parser.add_argument(
        "--setups", nargs="+", type=int, help="only these rows (0-based, in the printed order)"
    )
    parser.add_argument(
        "--modes", nargs="+", choices=list(SPIN_MODES), default=list(SPIN_MODES), help="spin modes"
    )
    parser.add_argument("--baseline", metavar="REF", help="compare the rows with this commit")
    args = parser.parse_args()
    config = MatchConfig.create(args.scenario, frame_skip=args.frame_skip)
    cpus = len(os.sched_getaffinity(0))
    setups: list[tuple[str, Callable[[], Sample]]] = [
        ("1 match, 1 process", lambda: single_process(config, args.seconds)),
        ("engine 1w x 1", lambda: in_engine(config, args.seconds, 1, 1, False, 1)),
        ("engine 2w x 1 pinned", lambda: in_engine(config, args.seconds, 2, 1, True, 1)),
        ("engine 2w x 2 pinned", lambda: in_engine(config, args.seconds, 2, 2, True, 1)),
        ("engine 2w x 2", lambda: in_engine(config, args.seconds, 2, 2, False, 1)),
        ("engine 2w x 2 pinned, 2 batches", lambda: in_engine(config, args.seconds, 2, 2, True, 2)),
        ("engine 2w x 4 pinned, 2 batches", lambda: in_engine(config, args.seconds, 2, 4, True, 2)),
    ]
    if args.setups is not None:
        setups = [setups[i] for i in args.setups]
    print(
        f"{args.scenario}, {config.num_agents} agents, frame skip {args.frame_skip}, {cpus} CPUs, "
        f"{args.seconds:g} s x {args.repeats} (median)"
    )
    if args.baseline:
        with spin_mode(args.modes[0]), checkout(args.baseline) as tree:
            against_baseline(args, setups, tree, cpus)
        return
    print(
        f"{'setup':<32} {'engines':<7} {'match steps/s':>13} {'engine ms/step':>14} "
        f"{'driver ms/step':>14} {'limit':>7} {'of limit':>8} {'x first':>8}"
    )
    for name, measure in setups:
        samples: dict[str, list[Sample]] = {mode: [] for mode in args.modes}
        for _ in range(args.repeats):
            for mode in samples:
                with spin_mode(mode):
                    samples[mode].append(measure())
        base = statistics.median(s.rate for s in samples[args.modes[0]])
        for mode, runs in samples.items():
            rate = statistics.median(s.rate for s in runs)
            engine_ms = _engine_ms(runs)
            driver_ms = statistics.median(1000 * s.driver_cpu / s.steps for s in runs)
            limit = cpus * 1000 / engine_ms
            print(
                f"{name:<32} {mode:<7} {rate:>13,.0f} {engine_ms:>14.3f} {driver_ms:>14.3f} "
                f"{limit:>7,.0f} {rate / limit:>8.2f} {rate / base:>8.2f}",
                flush=True,
            )


def _engine_ms(runs: list[Sample]) -> float:
    """Median engine CPU milliseconds per match step over ``runs``."""
    return statistics.median(1000 * s.engine_cpu / s.steps for s in runs)


def against_baseline(
    args: argparse.Namespace, setups: list[tuple[str, Callable[[], Sample]]], tree: Path, cpus: int
) -> None:
    """The ``--baseline`` table (see the module docstring)."""
    setup = (
        "from matches import in_engine\n"
        "from sf_envs.match import MatchConfig\n"
        f"config = MatchConfig.create({args.scenario!r}, frame_skip={args.frame_skip})"
    )
    expression = f"in_engine(config, {args.seconds}, 2, 2, pin=True)"
    base: list[float] = []
    samples: dict[str, list[Sample]] = {name: [] for name, _ in setups}
    for _ in range(args.repeats):
        base.append(measure_in(tree, setup, expression))
        for name, measure in setups:
            samples[name].append(measure())
    reference = statistics.median(base)
    print(f"{'setup':<40} {'match steps/s':>13} {'of limit':>8} {'x baseline':>10}")
    print(f"{args.baseline + ': engine 2w x 2 pinned':<40} {reference:>13,.0f}")
    for name, runs in samples.items():
        rate = statistics.median(s.rate for s in runs)
        limit = cpus * 1000 / _engine_ms(runs)
        print(f"{name:<40} {rate:>13,.0f} {rate / limit:>8.2f} {rate / reference:>10.2f}")
    print(f"baseline runs: {', '.join(f'{b:,.0f}' for b in base)}")


if __name__ == "__main__":
    main()
