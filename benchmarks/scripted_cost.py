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
"""

from __future__ import annotations

import argparse
import statistics
import time

from matches import single_process

from sf_envs.match import MatchConfig
from sf_envs.match.player import ScriptedMatchPlayer
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--map", default="multi_duel")
    parser.add_argument("--level", type=int, default=None, help="the map's strongest if omitted")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=6.0, help="timed seconds per run")
    parser.add_argument("--frame-skip", type=int, default=4)
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


if __name__ == "__main__":
    main()
