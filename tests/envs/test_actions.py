"""Action sets: our discrete combos and Sample Factory's heads, read back from the engine."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

import sf_envs
from sf_envs.actions import TURN_BUTTON, combo_action_set, sample_factory_set

SMALL = {"obs_size": (64, 36)}


def test_sample_factory_heads_are_its_spaces_with_no_op_first() -> None:
    match, single = sample_factory_set(match=True), sample_factory_set(match=False)
    assert list(match.space.nvec) == [3, 3, 8, 2, 2, 2, 21]
    assert match.head_names == ("move", "strafe", "weapon", "attack", "sprint", "use", "turn")
    assert list(single.space.nvec) == [3, 3, 2, 2, 11]
    for action_set in (match, single):
        assert not any(action_set.button_values(np.zeros(len(action_set.nvec), np.int64)))
    turn = single.buttons.index(TURN_BUTTON)
    turns = [single.button_values(np.array([0, 0, 0, 0, k]))[turn] for k in range(11)]
    assert turns[0] == 0 and sorted(turns) == [-10, -8, -6, -4, -2, 0, 2, 4, 6, 8, 10]
    weapon = match.button_values(np.array([0, 0, 3, 1, 0, 0, 0]))
    assert [b for b, v in zip(match.buttons, weapon, strict=True) if v] == [
        "SELECT_WEAPON3",
        "ATTACK",
    ]


def test_the_discrete_set_presses_each_combo() -> None:
    buttons = ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")
    action_set = combo_action_set(buttons, ((), ("MOVE_LEFT",), ("MOVE_RIGHT", "ATTACK")))
    assert action_set.space == gym.spaces.Discrete(3) and action_set.buttons == buttons
    assert [action_set.button_values(a) for a in range(3)] == [[0, 0, 0], [1, 0, 0], [0, 1, 1]]


def test_the_engine_receives_what_the_set_says(scenario_pack) -> None:
    env = gym.make("sf/DoomBattle-v0", action_set="sample_factory", **SMALL)
    try:
        check_env(env.unwrapped)
        env.reset(seed=0)
        core = env.unwrapped._core
        rng = np.random.default_rng(0)
        for _ in range(5):
            action = env.action_space.sample()
            env.step(action)
            assert core.game.get_last_action() == core.action_set.button_values(action)
        with pytest.raises(ValueError, match=r"not in MultiDiscrete"):
            env.step(int(rng.integers(3)))
    finally:
        env.close()


def test_the_vector_engine_steps_head_actions(scenario_pack) -> None:
    with gym.make_vec("sf/DoomBattle-v0", 4, num_workers=2, action_set="sample_factory") as envs:
        assert envs.single_action_space == gym.spaces.MultiDiscrete([3, 3, 2, 2, 11])
        envs.reset(seed=0)
        for _ in range(5):
            envs.step(envs.action_space.sample())
        with pytest.raises(ValueError, match=r"shape \(4, 5\)"):
            envs.step(np.zeros(4, np.int64))
    pool = gym.make_vec("sf/DoomBattle-v0", 4, batch_size=2, action_set="sample_factory")
    try:
        pool.async_reset(seed=0)
        *_, info = pool.recv()
        pool.send(np.ones((2, 5), np.int64), info["env_id"])
        pool.recv()
    finally:
        pool.close()


def test_matches_take_the_full_set_on_every_map(scenario_pack) -> None:
    env = sf_envs.make_match("duel", map="ssl2", action_set="sample_factory", timelimit=0.05)
    try:
        assert env.action_space("player_0") == gym.spaces.MultiDiscrete([3, 3, 8, 2, 2, 2, 21])
        parallel_api_test(env, num_cycles=20)
    finally:
        env.close()
    with gym.make_vec("sf/DoomDuelBots-v0", 2, num_workers=1, action_set="sample_factory") as v:
        v.reset(seed=0)
        v.step(v.action_space.sample())


def test_an_unknown_action_set_names_the_choices() -> None:
    with pytest.raises(ValueError, match="action_set must be one of discrete, sample_factory"):
        gym.make("sf/DoomBasic-v0", action_set="mouse")
