"""Our single-agent env vs a bare ``vizdoom.DoomGame``, side by side in one run.

Both play the same scenario at the same render resolution and frame skip with random actions;
ours also resizes to ``--obs-size`` and builds the gymnasium step tuple and info dict. Rounds
alternate between the two so machine noise hits both alike; the medians and their ratio are
printed (target: ours >= 0.9 of bare at obs 128x72).

    python benchmarks/env_single.py --scenario basic --steps 3000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import gymnasium as gym
import numpy as np
import vizdoom
from rich.console import Console
from rich.progress import track
from rich.table import Table

import sf_envs
from sf_envs.game import create_game
from sf_envs.options import DoomOptions, parse_size
from sf_envs.speed import steps_per_second


def random_actions(scenario: sf_envs.Scenario, steps: int) -> np.ndarray:
    """One action sequence for both loops, so episode lengths (and resets) match."""
    return np.random.default_rng(0).integers(0, len(scenario.actions), size=steps)


def bare_frames_per_second(scenario: sf_envs.Scenario, options: DoomOptions, steps: int) -> float:
    """The raw limit: ViZDoom's own loop with the same config, reading the screen each step."""
    with tempfile.TemporaryDirectory(prefix="sf_bench_") as workdir:
        game = create_game(scenario, options, workdir, ())
        game.init()
        try:
            elapsed = _bare_loop(game, scenario, options, steps)
        finally:
            game.close()
    return steps * options.frame_skip / elapsed


def _bare_loop(
    game: vizdoom.DoomGame, scenario: sf_envs.Scenario, options: DoomOptions, steps: int
) -> float:
    """Seconds for ``steps`` random steps, reading the screen each step."""
    buttons = [[float(b in action) for b in scenario.buttons] for action in scenario.actions]
    actions = random_actions(scenario, steps)
    game.set_seed(0)
    game.new_episode()
    start = time.perf_counter()
    for action in actions:
        game.make_action(buttons[action], options.frame_skip)
        if game.is_episode_finished():
            game.new_episode()
        else:
            game.get_state().screen_buffer  # noqa: B018 - reading the frame is part of the work
    return time.perf_counter() - start


def env_frames_per_second(env: gym.Env, steps: int, frame_skip: int) -> float:
    actions = random_actions(env.unwrapped.scenario, steps)
    return steps_per_second(env, actions) * frame_skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="basic")
    parser.add_argument("--resolution", default="160x120")
    parser.add_argument("--obs-size", default="128x72")
    parser.add_argument("--frame-skip", type=int, default=4)
    parser.add_argument("--interpolation", default=DoomOptions.interpolation)
    parser.add_argument("--steps", type=int, default=3000, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    home = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="sf_bench_cwd_") as cwd:
        os.chdir(cwd)  # ViZDoom writes _vizdoom/ into the cwd
        try:
            compare(args)
        finally:
            os.chdir(home)


def compare(args: argparse.Namespace) -> None:
    """Runs the rounds and prints the table."""
    scenario = sf_envs.get_scenario(args.scenario)
    options = DoomOptions.create(
        frame_skip=args.frame_skip,
        resolution=parse_size(args.resolution, "resolution"),
        obs_size=parse_size(args.obs_size, "obs_size"),
        interpolation=args.interpolation,
    )
    kwargs = {
        "frame_skip": args.frame_skip,
        "resolution": options.resolution,
        "obs_size": options.obs_size,
        "interpolation": options.interpolation,
    }
    wrapped = gym.make(scenario.env_id, **kwargs)
    unwrapped = gym.make(scenario.env_id, **kwargs).unwrapped
    results: dict[str, list[float]] = {
        "bare DoomGame": [],
        "sf env (gym.make)": [],
        "sf env (unwrapped)": [],
    }
    try:
        for _ in track(range(args.rounds), description="rounds"):
            results["bare DoomGame"].append(bare_frames_per_second(scenario, options, args.steps))
            results["sf env (gym.make)"].append(
                env_frames_per_second(wrapped, args.steps, args.frame_skip)
            )
            results["sf env (unwrapped)"].append(
                env_frames_per_second(unwrapped, args.steps, args.frame_skip)
            )
    finally:
        wrapped.close()
        unwrapped.close()

    bare = statistics.median(results["bare DoomGame"])
    table = Table(
        title=f"{scenario.env_id}: render {args.resolution}, obs {args.obs_size}, "
        f"frame skip {args.frame_skip}, {args.interpolation}, {args.rounds} rounds x {args.steps} steps"
    )
    for column in ("what", "median env frames/s", "min", "max", "ratio to bare"):
        table.add_column(column, justify="right")
    for name, values in results.items():
        median = statistics.median(values)
        table.add_row(
            name,
            f"{median:,.0f}",
            f"{min(values):,.0f}",
            f"{max(values):,.0f}",
            f"{median / bare:.3f}",
        )
    Console().print(table)
    print(f"vizdoom {vizdoom.__version__}; target: sf env >= 0.9 x bare")


if __name__ == "__main__":
    main()
