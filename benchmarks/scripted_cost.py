"""What a scripted player costs a match: steps/s with it against a seat played from outside.

The reference is a ``duel`` of two agents whose actions the caller picks (random); the
contender is ``duel_scripted``: one agent (random) against one scripted player, which renders
labels and depth for itself and decides on its own lock-step thread. Both run in one process,
alternating round by round (``--rounds``, ``--seconds`` each) so that machine noise hits both
alike; printed per round and as the median ratio. The scripted player's own Python (reading its
labels and depth, deciding) is timed inside the same runs, in microseconds per match step.

    python benchmarks/scripted_cost.py --map multi_duel --rounds 5 --seconds 6

The games differ in what happens (a scripted player hunts, random agents mostly wander), so
the ratio is the cost of a scripted opponent in the match a user gets, not of its code alone.

``--render-rounds N`` then measures what a scripted seat's view costs its engine: a lone engine
on the same map, rendered as a scripted seat renders (160x120, no HUD or effects) with and
without the labels and depth buffers, every step, every other step (``1/2``: dwango5's hunters
while nobody is in view) or never, turning and running at random for ``--render-steps`` steps
of ``--frame-skip`` tics; the engine's CPU per step from /proc, variants alternating round by
round, medians printed with the difference to the plain render.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import vizdoom
from common.cpu_time import is_engine, process_cpu
from common.match_timing import single_process

from sf_envs.lifecycle import find_processes
from sf_envs.match import MatchConfig
from sf_envs.match.maps import get_map
from sf_envs.match.player import ScriptedMatchPlayer, scripted_view
from sf_envs.match.scripted import scripted_ladder


class DecisionClock:
    """Accumulates the time scripted players spend reading their view and deciding."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._observe = ScriptedMatchPlayer._observe

    def __enter__(self) -> DecisionClock:
        original = self._observe

        def timed(player, *args, **kwargs):
            start = time.perf_counter()
            original(player, *args, **kwargs)
            self.seconds += time.perf_counter() - start
            self.calls += 1

        ScriptedMatchPlayer._observe = timed
        return self

    def __exit__(self, *exc: object) -> None:
        ScriptedMatchPlayer._observe = self._observe


#: The render variants of a lone engine: (labels, depth, rendering every this many steps).
RENDERS = {
    "plain": (False, False, 1),
    "labels": (True, False, 1),
    "depth": (False, True, 1),
    "both": (True, True, 1),
    "labels 1/2": (True, False, 2),
    "never": (False, False, 0),
}


def render_cost(
    map_name: str, labels: bool, depth: bool, every: int, steps: int, frame_skip: int
) -> float:
    """Engine CPU µs per step of a lone engine on ``map_name`` rendering a scripted seat's view
    with or without labels and depth, every ``every`` steps (0: never)."""
    match_map = get_map(map_name)
    game = vizdoom.DoomGame()
    game.set_doom_game_path(match_map.iwad_path)
    if match_map.wad_path is not None:
        game.set_doom_scenario_path(match_map.wad_path)
    game.set_doom_map(match_map.doom_map)
    game.set_window_visible(False)
    game.set_sound_enabled(False)
    scripted_view(game, depth=depth)
    game.set_labels_buffer_enabled(labels)
    game.set_available_buttons([vizdoom.Button.MOVE_FORWARD, vizdoom.Button.TURN_LEFT_RIGHT_DELTA])
    game.add_game_args("-deathmatch")
    game.set_seed(0)
    game.init()
    try:
        (engine,) = [p for p in find_processes(parent=os.getpid()) if is_engine(p)]
        rng = np.random.default_rng(0)
        start = process_cpu(engine)
        for k in range(steps):
            game.set_action([1.0, float(rng.uniform(-10.0, 10.0))])
            render = every > 0 and k % every == 0
            game.advance_action(frame_skip, render)
            if game.is_episode_finished():
                game.new_episode()
            if render:
                game.get_state()
        return 1e6 * (process_cpu(engine) - start) / steps
    finally:
        game.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--map", default="multi_duel")
    parser.add_argument("--level", type=int, default=None, help="the map's strongest if omitted")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=6.0, help="timed seconds per run")
    parser.add_argument("--frame-skip", type=int, default=4)
    parser.add_argument("--render-rounds", type=int, default=0, help="lone-engine render rounds")
    parser.add_argument("--render-steps", type=int, default=3000, help="steps per render run")
    args = parser.parse_args()
    level = args.level or max(scripted_ladder(args.map))
    common = {"map": args.map, "frame_skip": args.frame_skip, "timelimit": 10.0}
    reference = MatchConfig.create("duel", **common)
    contender = MatchConfig.create("duel_scripted", scripted_skill=level, **common)
    print(
        f"{args.map}, scripted level {level}, frame skip {args.frame_skip}, "
        f"{args.rounds} rounds of {args.seconds:g} s each, one process"
    )
    print(f"{'round':>5} {'duel steps/s':>13} {'scripted steps/s':>17} {'ratio':>6} {'µs/step':>8}")
    ratios, costs = [], []
    for k in range(args.rounds):
        base = single_process(reference, args.seconds).rate
        with DecisionClock() as clock:
            rate = single_process(contender, args.seconds).rate
        per_step = 1e6 * clock.seconds / max(clock.calls, 1)
        ratios.append(rate / base)
        costs.append(per_step)
        print(f"{k:>5} {base:>13,.0f} {rate:>17,.0f} {rate / base:>6.2f} {per_step:>8.0f}")
    print(
        f"median ratio {statistics.median(ratios):.2f} "
        f"(the scripted player costs {1 - statistics.median(ratios):.0%} of the duel's steps/s); "
        f"scripted player's own Python {statistics.median(costs):.0f} µs per match step"
    )
    if args.render_rounds:
        print_render_costs(args.map, args.render_rounds, args.render_steps, args.frame_skip)


def print_render_costs(map_name: str, rounds: int, steps: int, frame_skip: int) -> None:
    """The lone-engine render table (see the module docstring)."""
    print(f"\na lone engine on {map_name} rendering a scripted seat's view, {rounds} rounds")
    costs: dict[str, list[float]] = {name: [] for name in RENDERS}
    for _ in range(rounds):
        for name, (labels, depth, every) in RENDERS.items():
            costs[name].append(render_cost(map_name, labels, depth, every, steps, frame_skip))
    plain = statistics.median(costs["plain"])
    print(f"{'view':>10} {'engine µs/step':>15} {'over plain':>11}")
    for name, values in costs.items():
        median = statistics.median(values)
        print(f"{name:>10} {median:>15.0f} {median - plain:>+11.0f}")


if __name__ == "__main__":
    main()
