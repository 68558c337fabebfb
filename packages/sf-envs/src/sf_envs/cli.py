"""The sf-envs command: list the scenarios, record an episode, measure an env's speed and
install the scenario pack."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike
from rich.table import Table

import sf_envs
from sf_envs.errors import OptionError
from sf_envs.match.scenarios import MATCH_SCENARIOS
from sf_envs.options import DoomOptions
from sf_envs.pack import PACK_ENV_VAR, SAMPLE_FACTORY_PACK, fetch_pack, pack_dir, read_manifest
from sf_envs.speed import steps_per_second
from sf_envs.terminal import DefaultsHelpFormatter, make_console

__all__ = ["main"]

console = make_console()


def _list(_: argparse.Namespace) -> int:
    table = Table(title="sf Doom scenarios (defaults: frame skip 4, obs 3x72x128 uint8)")
    for column in ("id", "actions", "episode limit", "description"):
        table.add_column(column, overflow="fold")
    frame_skip = DoomOptions().frame_skip
    for name in sf_envs.scenario_names():
        scenario = sf_envs.get_scenario(name)
        actions = ", ".join(scenario.action_name(i) for i in range(len(scenario.actions)))
        limit = f"{scenario.episode_timeout} tics = {scenario.episode_timeout // frame_skip} steps"
        table.add_row(
            scenario.env_id,
            f"Discrete({len(scenario.actions)}): {actions}",
            limit,
            scenario.description,
        )
    console.print(table)
    matches = Table(title="Multiplayer matches (sf_envs.make_match(name): PettingZoo)")
    for column in ("name", "id", "agents", "bots", "map", "min"):
        # Names and ids stay whole (they are typed); the rest wraps on a narrow terminal.
        matches.add_column(column, no_wrap=column in ("name", "id"), overflow="fold")
    for name in sf_envs.match_scenario_names():
        m = MATCH_SCENARIOS[name]
        agents, bots = _range(m.num_agents, m.agents_range), _range(m.num_bots, m.bots_range)
        matches.add_row(name, m.env_id or "-", agents, bots, m.map, f"{m.timelimit:g}")
    console.print(matches)
    return 0


def _range(default: int, bounds: tuple[int, int]) -> str:
    low, high = bounds
    return str(default) if low == high else f"{default} ({low}-{high})"


def _record(args: argparse.Namespace) -> int:
    import imageio.v2 as imageio

    env = sf_envs.make(args.env_id, render_mode="rgb_array")
    frames: list[ArrayLike] = []  # what imageio.mimsave takes
    try:
        env.reset(seed=args.seed)
        episode_return, done = 0.0, False
        while not done and len(frames) < args.max_steps:
            frames.append(cast(np.ndarray, env.render()))  # rgb_array
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            episode_return += float(reward)
            done = terminated or truncated
    finally:
        env.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    imageio.mimsave(args.out, frames, duration=1000 / args.fps, loop=0)
    console.print(
        f"wrote {args.out}: {len(frames)} frames of a random agent, return {episode_return:.1f}"
    )
    return 0


def _bench(args: argparse.Namespace) -> int:
    env = sf_envs.make(args.env_id, frame_skip=args.frame_skip).unwrapped
    rng = np.random.default_rng(0)
    space = cast(spaces.Discrete, env.action_space)  # every single-player scenario's
    actions = rng.integers(0, space.n, size=args.steps)
    try:
        steps_per_s = steps_per_second(env, actions)
    finally:
        env.close()
    console.print(
        f"{args.env_id}: {steps_per_s:,.0f} steps/s = {steps_per_s * args.frame_skip:,.0f} "
        f"env frames/s (one process, random actions, frame skip {args.frame_skip}); "
        "see benchmarks/ for comparisons"
    )
    return 0


def _fetch_pack(args: argparse.Namespace) -> int:
    source = SAMPLE_FACTORY_PACK
    console.print(f"downloading {source.requirement} (no dependencies) with pip ...")
    folder = fetch_pack(args.dir)
    files = (read_manifest(folder) or {}).get("files", [])
    console.print(f"installed {len(files)} scenario files in {folder} ({source.license})")
    return 0


def _list_pack(args: argparse.Namespace) -> int:
    folder = pack_dir(args.dir)
    files = sorted(p.name for p in folder.glob("*") if p.suffix in (".cfg", ".wad"))
    if not files:
        console.print(f"no scenario pack in {folder}: run `sf-envs scenarios fetch`")
        return 1
    manifest = read_manifest(folder)
    origin = manifest["source"] if manifest else "a folder of your own"
    console.print(f"scenario pack in {folder} (from {origin}):")
    users = {s.config: s.env_id for s in sf_envs.SCENARIOS.values() if s.in_pack}
    for name in files:
        console.print(f"  {name}" + (f"  -> {users[name]}" if name in users else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sf-envs", description=__doc__, formatter_class=DefaultsHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add(parent: Any, name: str, help_text: str) -> argparse.ArgumentParser:
        return parent.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            formatter_class=DefaultsHelpFormatter,
        )

    scenarios = add(
        commands, "list", "print the scenarios (ids, actions, episode limits) and the matches"
    )
    scenarios.set_defaults(run=_list)
    record = add(commands, "record", "record an episode of a random agent as a GIF")
    record.add_argument(
        "env_id", help="the env to play, an id from sf-envs list such as sf/DoomBasic-v0"
    )
    record.add_argument("--out", default="episode.gif", help="GIF file to write")
    record.add_argument("--seed", type=int, default=0, help="seed of the env's reset")
    record.add_argument(
        "--max-steps",
        type=int,
        default=300,
        help="stop after this many steps if the episode has not ended",
    )
    record.add_argument(
        "--fps",
        type=float,
        default=8.75,
        help="frame rate of the GIF; 35 / frame skip plays at the game's real speed",
    )
    record.set_defaults(run=_record)
    pack = add(commands, "scenarios", "the scenario pack: Sample Factory's Doom scenarios and maps")
    pack_commands = pack.add_subparsers(dest="pack_command", required=True)
    where = f"pack folder (default: ${PACK_ENV_VAR}, else the XDG cache: {pack_dir()})"
    fetch = add(pack_commands, "fetch", "download the pack with pip and install it")
    fetch.add_argument("--dir", help=where)
    fetch.set_defaults(run=_fetch_pack)
    listing = add(pack_commands, "list", "show the installed pack's files and where it is")
    listing.add_argument("--dir", help=where)
    listing.set_defaults(run=_list_pack)
    bench = add(commands, "bench", "measure one env's steps/s with random actions, in one process")
    bench.add_argument(
        "env_id",
        nargs="?",
        default="sf/DoomBasic-v0",
        help="the env to time, an id from sf-envs list",
    )
    bench.add_argument("--steps", type=int, default=2000, help="steps to time")
    bench.add_argument("--frame-skip", type=int, default=4, help="game tics per step")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs ``sf-envs``; returns the exit status (2 for an invalid option, with the fix)."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except OptionError as exc:  # anything else is a bug and keeps its traceback
        console.print(f"[red]error:[/red] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
