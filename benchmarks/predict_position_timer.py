"""How far timing alone goes on predict_position: a scripted player that never turns.

The player of ViZDoom's predict_position has one rocket; its episode ends when the rocket
explodes. The script reads the target's true position from ViZDoom's object list (which no
policy sees), estimates its speed from the last step, and fires when the target will be
straight ahead after the rocket's flight, ``--lead`` tics. Its hit rate is what a policy
that faces ahead can reach once it knows where the target is and which way it moves. Steps
are four tics, as sf-envs plays the scenario.

    hatch run python benchmarks/predict_position_timer.py --episodes 40 --lead 24 28 32
"""

from __future__ import annotations

import argparse

import vizdoom as vzd
from common.inspected_game import inspected_game

FRAME_SKIP = 4
AIM_TOLERANCE = 30.0
"""How far (map units) from the line of fire the target may be predicted and still be shot."""
NOOP, FIRE = [0, 0, 0], [0, 0, 1]


def target_y(game: vzd.DoomGame) -> float | None:
    """The target's position along the far wall, or None once it is gone."""
    state = game.get_state()
    if state is None:
        return None
    return next((o.position_y for o in state.objects if o.name == "Cacodemon"), None)


def play(game: vzd.DoomGame, lead: int) -> bool:
    """One episode; True when the rocket killed the target."""
    game.new_episode()
    previous, fired = target_y(game), False
    while not game.is_episode_finished():
        y = target_y(game)
        speed = (y - previous) / FRAME_SKIP if y is not None and previous is not None else 0.0
        previous = y
        due = y is not None and speed != 0.0 and abs(y + speed * lead) < AIM_TOLERANCE
        game.make_action(FIRE if due and not fired else NOOP, FRAME_SKIP)
        fired = fired or due
    return game.get_total_reward() > 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--lead", type=int, nargs="+", default=[24, 28, 32], help="tics")
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    with inspected_game("predict_position") as game:
        for lead in args.lead:
            hits = 0
            for episode in range(args.episodes):
                game.set_seed(args.seed + episode)
                hits += play(game, lead)
            print(f"lead {lead} tics: {hits} hits in {args.episodes} episodes")


if __name__ == "__main__":
    main()
