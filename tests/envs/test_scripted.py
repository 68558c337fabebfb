"""Scripted players: their decisions on made-up views, and real games in which they play."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import sf_envs
from sf_envs.match import MatchConfig, MatchCore
from sf_envs.match.scripted import (
    HUNTING_REVISION,
    SCRIPTED_LEVELS,
    Enemy,
    ScriptedBrain,
    ScriptedLevel,
    View,
    scripted_ladder,
)

FLAT = np.ones(32)  # depth: open space everywhere
STEADY = ScriptedLevel(9, reaction_tics=8, aim_noise=0.0, turn_speed=10.0, fire_cone=3.0)


def view(tic: int, *, enemies=(), rockets=(), angle: float = 0.0, x: float = 0.0, **kw) -> View:
    return View(
        tic=tic,
        x=x,
        y=kw.pop("y", 0.0),
        angle=angle,
        health=kw.pop("health", 100.0),
        dead=kw.pop("dead", False),
        enemies=list(enemies),
        depth=kw.pop("depth", FLAT),
        rockets=list(rockets),
        weapon=kw.pop("weapon", 0),
    )


def test_it_reacts_after_its_delay_turns_at_its_speed_and_fires_only_on_target() -> None:
    brain = ScriptedBrain(STEADY, frame_skip=4)
    left = Enemy(400.0, 400.0)  # 45 degrees to the left of a player facing east
    first = brain.decide(view(0, enemies=[left]))
    assert first[2] <= 0 and first[3] == 0.0  # seen, not reacted to: no shot
    forward, _, turn, fire = brain.decide(view(8, enemies=[left]))
    assert turn == -STEADY.turn_speed and fire == 0.0  # turns left at full speed, off target
    assert forward > 0  # far away: closes in
    # Aim within the fire cone after this step's turn: it fires.
    _, _, turn, fire = brain.decide(view(12, enemies=[left], angle=44.0))
    assert turn == pytest.approx(-0.25) and fire == 1.0


def test_without_turning_it_aims_by_strafing_toward_the_enemy() -> None:
    brain = ScriptedBrain(STEADY, frame_skip=4, turn=False, advance=False)
    left = Enemy(800.0, 200.0)
    brain.decide(view(0, enemies=[left]))
    forward, strafe, turn, fire = brain.decide(view(8, enemies=[left]))
    assert (forward, turn, fire) == (0.0, 0.0, 0.0) and strafe < 0  # steps left
    ahead = Enemy(800.0, 0.0)
    assert brain.decide(view(12, enemies=[ahead]))[3] == 1.0
    assert brain.decide(view(16)) == [0.0, 0.0, 0.0, 0.0]  # nobody in view: waits


def test_a_dodging_player_steps_away_from_an_incoming_rocket_not_from_its_own() -> None:
    level = ScriptedLevel(9, reaction_tics=0, aim_noise=0.0, turn_speed=10.0, fire_cone=3.0,
                          dodge_distance=160.0)  # fmt: skip
    brain = ScriptedBrain(level, frame_skip=4)
    enemy = Enemy(800.0, 0.0)
    # A rocket from the enemy passing 40 units to the player's left (north, facing east).
    incoming = Enemy(400.0, 40.0, vx=-20.0)
    assert brain.decide(view(0, enemies=[enemy], rockets=[incoming]))[1] > 0  # steps right
    passing_right = Enemy(400.0, -40.0, vx=-20.0)
    assert brain.decide(view(4, enemies=[enemy], rockets=[passing_right]))[1] < 0
    own = Enemy(40.0, 0.0, vx=20.0)  # flies away from the player
    calm = ScriptedBrain(level, frame_skip=4)
    assert calm.decide(view(0, enemies=[enemy], rockets=[own]))[1] == 0.0


def test_exploring_runs_toward_open_space_and_backs_out_when_blocked() -> None:
    brain = ScriptedBrain(STEADY, frame_skip=4, seed=1)
    open_right = np.zeros(32)
    open_right[28:] = 10.0
    forward, _, turn, _ = brain.decide(view(0, depth=open_right))
    assert forward > 0 and turn > 0  # runs, turning right toward the open side
    decisions = [brain.decide(view(t, depth=open_right)) for t in range(4, 40, 4)]
    assert any(d[0] < 0 and abs(d[2]) == STEADY.turn_speed for d in decisions)  # stuck: escapes


def test_decisions_replay_under_a_seed_and_a_dead_player_presses_nothing() -> None:
    noisy = SCRIPTED_LEVELS[1]
    enemy = Enemy(300.0, 120.0, vx=3.0)

    def play(seed: int) -> list[list[float]]:
        brain = ScriptedBrain(noisy, frame_skip=4)
        brain.reset(seed)
        return [brain.decide(view(t, enemies=[enemy])) for t in range(0, 400, 4)]

    assert play(3) == play(3) and play(3) != play(4)
    assert ScriptedBrain(noisy, 4).decide(view(0, dead=True)) == [0.0, 0.0, 0.0, 0.0]


def test_stronger_levels_turn_react_and_aim_better() -> None:
    levels = [SCRIPTED_LEVELS[k] for k in sorted(SCRIPTED_LEVELS)]
    for weaker, stronger in itertools.pairwise(levels):
        assert stronger.reaction_tics < weaker.reaction_tics
        assert stronger.aim_noise < weaker.aim_noise
        assert stronger.turn_speed > weaker.turn_speed


@pytest.mark.parametrize("map_name", ["multi_duel", "ssl2", "dwango5", "cig_map02", "cig_map01"])
def test_every_ladder_is_better_knob_by_knob_at_each_level(map_name: str) -> None:
    ladder = scripted_ladder(map_name)
    assert sorted(ladder) == [lv.level for lv in ladder.values()]
    for weaker, stronger in itertools.pairwise(ladder[k] for k in sorted(ladder)):
        assert stronger.reaction_tics <= weaker.reaction_tics
        assert stronger.aim_noise <= weaker.aim_noise
        assert stronger.turn_speed >= weaker.turn_speed
        assert stronger.fire_cone <= weaker.fire_cone
        assert stronger.dodge_distance >= weaker.dodge_distance
        assert stronger.lead >= weaker.lead
        assert stronger.strafe >= weaker.strafe
        assert stronger.retreat_health >= weaker.retreat_health
        assert stronger.hunt >= weaker.hunt
        assert stronger != weaker


def test_a_level_is_its_number_and_the_knobs_it_sets_away_from_their_defaults() -> None:
    plain = ScriptedLevel(2, reaction_tics=5, aim_noise=1.0, turn_speed=4.0, fire_cone=9.0)
    assert plain.knobs() == {
        "level": 2, "reaction_tics": 5, "aim_noise": 1.0, "turn_speed": 4.0, "fire_cone": 9.0
    }  # fmt: skip
    hunting = dataclasses.replace(plain, hunt=True)
    # How hunting plays beyond the knobs has a revision of its own, part of who the player is.
    assert hunting.knobs() == {**plain.knobs(), "hunt": True, "hunting_revision": HUNTING_REVISION}


def test_a_leading_player_aims_ahead_of_a_moving_enemy_with_rockets_only() -> None:
    level = ScriptedLevel(9, reaction_tics=0, aim_noise=0.0, turn_speed=90.0, fire_cone=1.0,
                          lead=1.0)  # fmt: skip
    # 400 units east, running north at 10 units per tic: a rocket (20 per tic) needs 20 tics,
    # by then the enemy is 200 units north, about 26.6 degrees to the left.
    running = Enemy(400.0, 0.0, vy=10.0)
    with_rockets = ScriptedBrain(level, frame_skip=1)
    _, _, turn, fire = with_rockets.decide(view(0, enemies=[running], weapon=5))
    assert turn == pytest.approx(-math.degrees(math.atan2(200.0, 400.0))) and fire == 1.0
    hitscan = ScriptedBrain(level, frame_skip=1)
    _, _, turn, fire = hitscan.decide(view(0, enemies=[running], weapon=2))
    assert turn == pytest.approx(0.0) and fire == 1.0


def scripted_game(levels: list[int], seed: int, map_name: str, minutes: float) -> dict[str, float]:
    """A game of scripted players only (no agent); frags by in-game name."""
    config = MatchConfig.create(
        "duel_scripted",
        map=map_name,
        num_agents=0,
        num_scripted=len(levels),
        scripted_skill=levels,
        timelimit=minutes,
    )
    screens = np.zeros((0, *config.options.obs_shape), dtype=np.uint8)
    with MatchCore(config) as core:
        core.reset(seed, screens, None)
        while not core.finished:
            core.step(np.zeros(0, dtype=np.int64), screens, None)
        return core.result()["frags"]


# Measured: on ssl2 level 5 beat level 1 in every game (8/0/0); on multi_duel its own level 4
# beat its level 1 86/8/2. Multiplayer games do not replay exactly under a seed (the players'
# processes meet over the network), so the test counts games won and lost until the stronger
# level leads by LEAD games: three games when it wins every one. At the measured multi_duel
# rates that lead is missed within MAX_GAMES games about once in a thousand tries; two equal
# levels reach it about two times in five (a lone game's margin: a coin toss).
LEAD, MAX_GAMES = 3, 12


@pytest.mark.parametrize("map_name", ["ssl2", "multi_duel"])
def test_the_strongest_level_outscores_the_weakest_game_by_game(map_name, scenario_pack) -> None:
    ladder = scripted_ladder(map_name)
    strongest, weakest = max(ladder), min(ladder)
    margins = []
    for seed in range(MAX_GAMES):
        # Alternate who hosts, so the order of the players is not what is measured.
        levels = [strongest, weakest] if seed % 2 == 0 else [weakest, strongest]
        frags = scripted_game(levels, seed, map_name, minutes=1.0)
        by_level = {int(name.rsplit("_L", 1)[1]): f for name, f in frags.items()}
        margins.append(by_level[strongest] - by_level[weakest])
        if sum(np.sign(margins)) >= LEAD:
            return
    pytest.fail(
        f"level {strongest} did not lead level {weakest} by {LEAD} games within {MAX_GAMES} "
        f"on {map_name}; frag margins game by game: {margins}"
    )


def test_a_scripted_player_beats_a_still_agent_in_the_gymnasium_id() -> None:
    import gymnasium as gym

    env = gym.make("sf/DoomDuelScripted-v0", timelimit=0.5, obs_size=(40, 30))
    try:
        env.reset(seed=0)
        noop = 0
        while True:
            _, _, terminated, truncated, info = env.step(noop)
            if terminated or truncated:
                break
        frags = info["match"]["frags"]
        top = max(scripted_ladder("multi_duel"))  # the default level: the map's strongest
        assert frags[f"scripted1_L{top}"] > frags["player_0"], frags
    finally:
        env.close()


def test_scripted_settings_are_checked_before_any_engine_starts() -> None:
    with pytest.raises(ValueError, match=r"scripted levels on multi_duel are 1, 2, 3, 4 "):
        MatchConfig.create("duel_scripted", scripted_skill=5)
    with pytest.raises(ValueError, match=r"num_scripted in \[1, 2\]"):
        MatchConfig.create("duel_scripted", num_scripted=3)
    with pytest.raises(ValueError, match="needs an agent or a scripted player"):
        MatchConfig.create("duel_bots", num_agents=0)
    with pytest.raises(ValueError, match="no learning agent"):
        sf_envs.make_match("duel_scripted", num_agents=0, num_scripted=2)


def test_aim_geometry_matches_the_engine_angles() -> None:
    # The engine's ANGLE grows counterclockwise from east; a positive turn button turns right.
    brain = ScriptedBrain(STEADY, frame_skip=1)
    north = Enemy(0.0, 500.0)
    brain.decide(view(0, enemies=[north], angle=90.0 + 5.0))
    _, _, turn, _ = brain.decide(view(8, enemies=[north], angle=95.0))
    assert turn == pytest.approx(5.0)  # 5 degrees left of the target: turn right by 5
    assert math.isclose(brain.decide(view(9, enemies=[north], angle=90.0))[2], 0.0, abs_tol=1e-9)
