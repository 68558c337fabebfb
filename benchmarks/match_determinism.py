"""Where does a seed reach a ViZDoom multiplayer game? The evidence behind seeded match resets.

Plays one agent against a bot on multi_duel (``-host 1``, our match settings) with a fixed
action sequence, twice per case, and reports the first step at which the two screens differ:

- seed given only before ``new_episode`` (fresh engines): what a single-player game needs;
- the same engine, a second episode with the same seed (a map restart);
- seed given before ``init`` (fresh engines): what ``MatchCore.reset(seed)`` does.

Only the last replays exactly, so a seeded reset of a one-agent match starts a fresh engine.

    python benchmarks/match_determinism.py --steps 60
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile

import vizdoom

from sf_envs.match.bots import write_bots_file
from sf_envs.match.player import game_args
from sf_envs.match.scenarios import MatchConfig

_BUTTONS = [vizdoom.Button.ATTACK, vizdoom.Button.TURN_LEFT, vizdoom.Button.MOVE_FORWARD]


def _start(config: MatchConfig, workdir: str, seed: int | None) -> vizdoom.DoomGame:
    game = vizdoom.DoomGame()
    match_map = config.map
    game.set_doom_config_path(os.path.join(workdir, "_vizdoom.ini"))
    game.set_doom_game_path(match_map.iwad_path)
    if match_map.wad_path is not None:
        game.set_doom_scenario_path(match_map.wad_path)
    game.set_doom_map(match_map.doom_map)
    bots_path = write_bots_file(os.path.join(workdir, "bots.cfg"), config.bots, match_map.name)
    game.add_game_args(game_args(config, 0, None, bots_path, config.timeout))
    game.set_window_visible(False)
    game.set_sound_enabled(False)
    game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
    game.set_available_buttons(_BUTTONS)
    game.set_episode_timeout(0)
    if seed is not None:
        game.set_seed(seed)
    game.init()
    return game


def _episode(game: vizdoom.DoomGame, config: MatchConfig, seed: int, steps: int) -> list[str]:
    """Hashes of the screen after each step of one episode started with ``seed``."""
    game.set_seed(seed)
    game.new_episode()
    for bot in config.bots:
        game.send_game_command(f"addbot {bot.name}")
    hashes = []
    for t in range(steps):
        game.make_action([t % 2, 1, 1], 1)
        hashes.append(hashlib.sha1(game.get_state().screen_buffer.tobytes()).hexdigest())
    return hashes


def _first_difference(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return f"differ from step {i}"
    return "identical"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="steps (one tic each) per episode")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    config = MatchConfig.create("duel_bots", map="multi_duel")
    with tempfile.TemporaryDirectory(prefix="sf_determinism_") as workdir:

        def fresh(seed_at_start: bool) -> tuple[list[str], list[str]]:
            folder = tempfile.mkdtemp(dir=workdir)
            game = _start(config, folder, args.seed if seed_at_start else None)
            try:
                first = _episode(game, config, args.seed, args.steps)
                second = _episode(game, config, args.seed, args.steps)
            finally:
                game.close()
            return first, second

        late_a, restarted = fresh(seed_at_start=False)
        late_b, _ = fresh(seed_at_start=False)
        early_a, _ = fresh(seed_at_start=True)
        early_b, _ = fresh(seed_at_start=True)
    print(f"vizdoom {vizdoom.__version__}; duel_bots on multi_duel, same actions, seed {args.seed}")
    rows = [
        ("seed before new_episode only, fresh engines", _first_difference(late_a, late_b)),
        ("same engine, next episode, same seed", _first_difference(late_a, restarted)),
        ("seed before init, fresh engines", _first_difference(early_a, early_b)),
    ]
    for label, outcome in rows:
        print(f"{label:>45}: {outcome}")


if __name__ == "__main__":
    main()
