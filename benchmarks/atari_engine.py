"""Env frames/s on Atari of the sf vector engine against the alternatives, side by side.

Every contender plays the same games with the same preprocessing (no-op starts up to 30, frame
skip 4 with the max of the last two frames, 84x84 gray by area averaging, 4 stacked frames,
sticky actions 0.25, no fire at reset, raw rewards), ``--num-envs`` envs on ``--workers``
workers or threads, random actions, the async faces returning half the envs per call:

  (a) sf engine, async face (``batch_size = num_envs / 2``), as sf-train drives it
  (b) sf engine, gymnasium face (``gym.make_vec``), every env each step
  (c) EnvPool (its own venv: it pins its own numpy/gymnasium), async ``send``/``recv``
  (d) ale-py's own ``AtariVectorEnv`` (C++ threads), async ``send``/``recv``
  (e) ``gymnasium.vector.AsyncVectorEnv`` over ale-py's ``ALE/<Game>-v5`` with gymnasium's
      ``AtariPreprocessing`` and ``FrameStackObservation`` (needs opencv)

Rounds interleave the contenders; the ratios are medians of each round's ratios.

Run: ``python benchmarks/atari_engine.py --games pong breakout --seconds 5 --rounds 3``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from statistics import median

import gymnasium as gym
import numpy as np
from common.timing import steps_per_second
from rich.console import Console
from rich.table import Table

import sf_envs
from sf_envs.atari import atari_env_id

FRAME_SKIP = 4
ENVPOOL = "envpool==1.2.5"
DEFAULT_ENVPOOL_VENV = Path.home() / ".cache/sf/peers/envpool-1.2.5"
console = Console()

#: EnvPool's timing loop, run with its venv's python: argv = game, envs, threads, seconds.
ENVPOOL_TIMING = textwrap.dedent(
    """
    import json, sys, time
    import envpool, numpy as np
    game, n, threads, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    task = "".join(p.capitalize() for p in game.split("_")) + "-v5"
    env = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n // 2,
                       num_threads=threads, repeat_action_probability=0.25, noop_max=30,
                       episodic_life=False, reward_clip=False, use_fire_reset=False,
                       stack_num=4, frame_skip=4, img_height=84, img_width=84, gray_scale=True)
    actions = env.action_space.n
    rng = np.random.default_rng(0)
    env.async_reset()
    def step():
        obs, rew, term, trunc, info = env.recv()
        ids = info["env_id"]
        env.send(rng.integers(0, actions, len(ids)), ids)
        return len(ids)
    for _ in range(20):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    print(json.dumps(steps * 4 / (time.perf_counter() - start)))
    env.close()
    """
)


def _timed(step: Callable[[], int], seconds: float) -> float:
    """Env frames/s of calling ``step`` (returns env steps done) for ``seconds`` after warm-up."""
    return steps_per_second(step, seconds) * FRAME_SKIP


def _send_recv(env: gym.Env, actions: int, seconds: float, with_ids: bool = True) -> float:
    """``with_ids``: ``send`` takes the env ids (sf, EnvPool) or, as ale-py's, only the
    actions of the last ``recv``'s envs."""
    rng = np.random.default_rng(0)

    def step() -> int:
        *_, info = env.recv()
        ids = np.asarray(info["env_id"])
        chosen = rng.integers(0, actions, len(ids))
        env.send(chosen, ids) if with_ids else env.send(chosen)
        return len(ids)

    return _timed(step, seconds)


def bench_sf_async(game: str, n: int, workers: int, seconds: float) -> float:
    env = gym.make_vec(atari_env_id(game), num_envs=n, batch_size=n // 2, num_workers=workers)
    try:
        env.async_reset(seed=0)
        return _send_recv(env, int(env.single_action_space.n), seconds)
    finally:
        env.close()


def bench_sf_gym(game: str, n: int, workers: int, seconds: float) -> float:
    with gym.make_vec(atari_env_id(game), num_envs=n, num_workers=workers) as env:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = int(env.single_action_space.n)
        return _timed(lambda: (env.step(rng.integers(0, actions, n)), n)[1], seconds)


def bench_ale_vector(game: str, n: int, workers: int, seconds: float) -> float:
    from ale_py.vector_env import AtariVectorEnv

    env = AtariVectorEnv(
        game,
        n,
        batch_size=n // 2,
        num_threads=workers,
        repeat_action_probability=0.25,
        noop_max=30,
        reward_clipping=False,
        use_fire_reset=False,
        episodic_life=False,
    )
    try:
        obs, _ = env.reset(seed=0)
        env.send(np.zeros(len(obs), dtype=np.int64))
        return _send_recv(env, int(env.single_action_space.n), seconds, with_ids=False)
    finally:
        env.close()


def _ale_gym_env(game: str) -> gym.Env:
    import ale_py

    gym.register_envs(ale_py)
    name = "".join(p.capitalize() for p in game.split("_"))
    env = gym.make(f"ALE/{name}-v5", frameskip=1, repeat_action_probability=0.25)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84)
    return gym.wrappers.FrameStackObservation(env, 4)


def bench_gym_async(game: str, n: int, workers: int, seconds: float) -> float:
    # One process per env, as AsyncVectorEnv has it (it has no notion of workers).
    from functools import partial

    env = gym.vector.AsyncVectorEnv([partial(_ale_gym_env, game)] * n)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = int(env.single_action_space.n)
        return _timed(lambda: (env.step(rng.integers(0, actions, n)), n)[1], seconds)
    finally:
        env.close()


def ensure_envpool(venv: Path) -> Path:
    """EnvPool's venv (built once); returns its python."""
    python = venv / "bin/python"
    marker = venv / ".sf-complete"
    if not marker.exists():
        base = shutil.which("python3.11") or sys.executable
        console.print(f"creating EnvPool's venv at {venv} (about a minute)")
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", ENVPOOL], check=True)
        marker.touch()
    return python


def bench_envpool(python: Path, game: str, n: int, workers: int, seconds: float) -> float:
    out = subprocess.run(
        [str(python), "-c", ENVPOOL_TIMING, game, str(n), str(workers), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["pong", "breakout"])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envpool-venv", type=Path, default=DEFAULT_ENVPOOL_VENV)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    envpool = ensure_envpool(args.envpool_venv)
    contenders: dict[str, Callable[[str, int, int, float], float]] = {
        "sf async": bench_sf_async,
        "sf gym face": bench_sf_gym,
        "EnvPool": lambda *a: bench_envpool(envpool, *a),
        "ale-py AtariVectorEnv": bench_ale_vector,
        "AsyncVectorEnv": bench_gym_async,
    }
    results: dict[str, dict[str, list[float]]] = {}
    for game in args.games:
        runs = results[game] = {name: [] for name in contenders}
        for r in range(args.rounds):
            for name, bench in contenders.items():
                fps = bench(game, args.num_envs, args.workers, args.seconds)
                runs[name].append(fps)
                console.print(f"{game} round {r + 1}: {name:>22} {fps:>10,.0f} frames/s")
    for game, runs in results.items():
        table = Table(
            title=f"{game}: env frames/s, {args.num_envs} envs, {args.workers} workers "
            f"(medians of {args.rounds} rounds)"
        )
        for column in ("contender", "frames/s", "sf async / it"):
            table.add_column(column, justify="left" if column == "contender" else "right")
        sf = runs["sf async"]
        for name, fps in runs.items():
            ratio = median(a / b for a, b in zip(sf, fps, strict=True))
            table.add_row(name, f"{median(fps):,.0f}", f"{ratio:.2f}x")
        console.print(table)
    if args.json:
        settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"args": settings, "results": results}, indent=1))


if __name__ == "__main__":
    sf_envs.register_envs()
    main()
