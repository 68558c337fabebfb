"""Where on my_way_home's map a policy finds the vest: its success from each spawn point.

ViZDoom's my_way_home starts the player at one of 17 places, picked by the game's seed, and
the vest lies in one room. A single success rate hides whether a policy solves every start a
little or the near rooms always and the far ones never. This script plays a run's checkpoint
(sampled actions, or greedy as the run evaluated) on seeds ``--seed`` onwards, learns each
seed's start from the scenario's game given the same seed (sf-envs seeds its game the same
way), and draws the map's walls, the vest and every start coloured by its share of episodes
that reached the vest. With ``--random`` it plays the uniform random policy instead.

    hatch run python benchmarks/my_way_home_map.py RUN_DIR --episodes 160 --out map.png
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from common.inspected_game import inspected_game
from common.policies import uniform_policy

from sf_train.envs import make_single_env
from sf_train.evaluation import load_policy
from sf_train.run.folder import load_run_config
from sf_train.sampling.acting import PolicyRunner, stack_obs

Point = tuple[int, int]
Wall = tuple[float, float, float, float]


def read_map(seeds: list[int]) -> tuple[list[Point], list[Wall], Point]:
    """Each seed's start, the map's walls and the vest's place, from the scenario's game."""
    with inspected_game("my_way_home") as game:
        starts: list[Point] = []
        for seed in seeds:
            game.set_seed(seed)
            game.new_episode()
            state = game.get_state()
            player = next(o for o in state.objects if o.name == "DoomPlayer")
            starts.append((round(player.position_x), round(player.position_y)))
        walls = [
            (line.x1, line.y1, line.x2, line.y2)
            for sector in state.sectors
            for line in sector.lines
            if line.is_blocking
        ]
        vest = next(o for o in state.objects if o.name == "GreenArmor")
        return starts, walls, (round(vest.position_x), round(vest.position_y))


def play(run_dir: Path, seeds: list[int], checkpoint: str, random: bool) -> list[bool]:
    """Whether each seed's episode reached the vest (ended before its time limit)."""
    cfg = load_run_config(run_dir)
    env = make_single_env(cfg.env, render_mode=None)
    try:
        if random:
            model = uniform_policy(env.observation_space, env.action_space, cfg.model)
        else:
            model, _ = load_policy(run_dir, env.observation_space, env.action_space, checkpoint)
        generator = torch.Generator().manual_seed(0)
        reached = []
        for seed in seeds:
            runner = PolicyRunner(model, 1, "cpu", generator, cfg.run.eval_greedy)
            obs, _ = env.reset(seed=seed)
            terminated = truncated = False
            while not (terminated or truncated):
                acted = runner.act(stack_obs([obs]), np.zeros(1, dtype=np.int64))
                action = int(model.action_dist.for_env(acted).cpu().numpy()[0])
                obs, _, terminated, truncated, _ = env.step(action)
            reached.append(terminated)
        return reached
    finally:
        env.close()


def draw(walls: list[Wall], vest: Point, rates: dict[Point, list[bool]], title: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 7))
    for x1, y1, x2, y2 in walls:
        ax.plot([x1, x2], [y1, y2], color="0.4", linewidth=1)
    ax.scatter(*vest, marker="*", s=400, color="gold", edgecolors="black", zorder=3, label="vest")
    points = sorted(rates)
    shares = [float(np.mean(rates[p])) for p in points]
    dots = ax.scatter(
        [p[0] for p in points],
        [p[1] for p in points],
        c=shares,
        cmap="RdYlGn",
        vmin=0.0,
        vmax=1.0,
        s=[40 + 25 * len(rates[p]) for p in points],
        edgecolors="black",
        zorder=2,
    )
    for p in points:
        ax.annotate(
            f"{sum(rates[p])}/{len(rates[p])}", p, textcoords="offset points", xytext=(6, 6)
        )
    fig.colorbar(dots, ax=ax, label="share of episodes from this start that reached the vest")
    ax.set_aspect("equal")
    ax.set_title(title)
    ax.legend(loc="lower left")
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--episodes", type=int, default=160)
    parser.add_argument("--seed", type=int, default=10_000)
    parser.add_argument("--random", action="store_true", help="the uniform random policy")
    parser.add_argument("--out", type=Path, default=Path("my_way_home_map.png"))
    args = parser.parse_args()
    seeds = list(range(args.seed, args.seed + args.episodes))
    starts, walls, vest = read_map(seeds)
    reached = play(args.run_dir, seeds, args.checkpoint, args.random)
    rates: dict[Point, list[bool]] = defaultdict(list)
    for start, success in zip(starts, reached, strict=True):
        rates[start].append(success)
    who = "random policy" if args.random else f"{args.run_dir.name}, {args.checkpoint}"
    print(f"{who}: the vest in {sum(reached)} of {len(reached)} episodes")
    print("| start (x, y) | distance to the vest | reached |")
    print("|---|---:|---:|")
    for p in sorted(rates, key=lambda p: np.hypot(p[0] - vest[0], p[1] - vest[1])):
        distance = np.hypot(p[0] - vest[0], p[1] - vest[1])
        print(f"| {p} | {distance:.0f} | {sum(rates[p])}/{len(rates[p])} |")
    title = f"my_way_home, {who}: {sum(reached)}/{len(reached)} at the vest"
    draw(walls, vest, rates, title).savefig(args.out, dpi=100, bbox_inches="tight")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
