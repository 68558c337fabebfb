"""The single-agent gymnasium env: API conformance, semantics users rely on, bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import sf_envs
from sf_envs import ClosedEnvError, DoomEnv

SMALL = {"resolution": (160, 120), "obs_size": (64, 36)}


@pytest.fixture
def basic():
    env = gym.make("sf/DoomBasic-v0", **SMALL)
    try:
        yield env
    finally:
        env.close()


def rollout(env: gym.Env, seed: int, actions: list[int]) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed)
    frames = [obs]
    for action in actions:
        obs, _, terminated, truncated, _ = env.step(action)
        frames.append(obs)
        if terminated or truncated:
            break
    return frames


def test_ids_follow_the_camel_case_scheme() -> None:
    ids = sf_envs.env_ids()
    for expected in (
        "sf/DoomBasic-v0",
        "sf/DoomDefendTheCenter-v0",
        "sf/DoomHealthGathering-v0",
        "sf/DoomMyWayHome-v0",
        "sf/DoomDeadlyCorridor-v0",
        "sf/DoomHealthGatheringSupreme-v0",
    ):
        assert expected in ids


def test_default_observation_is_channels_first_uint8_128x72() -> None:
    env = gym.make("sf/DoomBasic-v0")
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (3, 72, 128) and obs.dtype == np.uint8
        assert env.observation_space.shape == (3, 72, 128)
        assert obs.std() > 0, "the frame should show the scene, not a flat colour"
    finally:
        env.close()


def test_same_seed_same_actions_give_identical_trajectories() -> None:
    actions = [int(a) for a in np.random.default_rng(3).integers(0, 4, size=40)]
    first, second = gym.make("sf/DoomBasic-v0", **SMALL), gym.make("sf/DoomBasic-v0", **SMALL)
    try:
        a = rollout(first, 123, actions)
        b = rollout(second, 123, actions)
        again = rollout(first, 123, actions)
        other = rollout(first, 124, actions)
    finally:
        first.close()
        second.close()
    assert len(a) == len(b) == len(again)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(a, again, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, other, strict=False))


def test_time_limit_truncates_and_returns_the_real_last_frame(basic) -> None:
    basic.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = basic.step(0)  # no-op never kills the monster
        steps += 1
    assert truncated and not terminated
    assert steps == 300 // 4  # basic.cfg: 300 tics at frame skip 4
    assert obs.any() and obs.std() > 0, "the last observation must be a real frame, not zeros"
    assert info["episode_summary"]["l"] == steps
    assert info["episode_summary"]["r"] == pytest.approx(-300 - 4 * 0, abs=5)  # -1 per tic


def test_death_terminates_without_truncation() -> None:
    env = gym.make("sf/DoomHealthGathering-v0", **SMALL)
    try:
        env.reset(seed=0)
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, _ = env.step(0)  # standing in acid is fatal
        assert terminated and not truncated
        assert obs.any()
    finally:
        env.close()


def test_info_carries_game_variables_every_step_and_stats_at_the_end(basic) -> None:
    _, info = basic.reset(seed=0)
    for key in ("health", "armor", "selected_weapon_ammo", "killcount", "damagecount", "hitcount"):
        assert key in info
    assert info["health"] == 100 and info["selected_weapon_ammo"] == 50
    for _ in range(3):
        _, _, _, _, info = basic.step(3)  # ATTACK spends bullets
        assert "episode_summary" not in info
    assert info["selected_weapon_ammo"] < 50


def test_last_step_reports_the_final_game_variables(basic) -> None:
    """The kill that ends a basic episode must show in the last step's info (no state is left)."""
    for seed in range(20):
        basic.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = basic.step(3)  # keep shooting straight ahead
        if terminated:
            assert info["killcount"] == 1
            assert info["episode_summary"]["r"] > 0
            return
    pytest.fail("no basic episode out of 20 ended in a kill from shooting straight ahead")


def test_frame_skip_sets_the_episode_length() -> None:
    env = gym.make("sf/DoomBasic-v0", frame_skip=10, **SMALL)
    try:
        env.reset(seed=0)
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            steps += 1
            done = terminated or truncated
        assert steps == 30
    finally:
        env.close()


def test_grayscale_frame_stack_and_measurements_shapes() -> None:
    env = gym.make(
        "sf/DoomDefendTheCenter-v0", grayscale=True, frame_stack=4, measurements=True, **SMALL
    )
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        screen = obs["screen"]
        assert screen.shape == (4, 36, 64)
        assert all(np.array_equal(screen[0], screen[i]) for i in range(4)), "reset fills the stack"
        assert obs["measurements"].dtype == np.float32
        assert obs["measurements"][0] == 100  # HEALTH first
        previous = screen
        for _ in range(3):
            obs, *_ = env.step(1)  # turning changes the view
        screen = obs["screen"]
        assert np.array_equal(screen[0], previous[3]), "the oldest frame comes first"
        assert not np.array_equal(screen[3], screen[2])
    finally:
        env.close()


def test_render_returns_the_full_resolution_frame() -> None:
    env = gym.make("sf/DoomBasic-v0", render_mode="rgb_array", **SMALL)
    try:
        env.reset(seed=0)
        frame = env.render()
        assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
    finally:
        env.close()


def test_observations_are_not_overwritten_by_later_steps(basic) -> None:
    first, _ = basic.reset(seed=0)
    kept = first.copy()
    for _ in range(5):
        basic.step(1)
    assert np.array_equal(first, kept)


# --- bad input -------------------------------------------------------------------------------


def test_unknown_id_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="sf/DoomBasic-v0"):
        sf_envs.make("sf/DoomNoSuchThing-v0")


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="defend_the_center"):
        DoomEnv("no_such_scenario")


@pytest.mark.parametrize("action", [4, -1, 1.5, "1", np.array([1, 2]), np.array(0.5), True])
def test_action_outside_the_space_names_the_space(basic, action) -> None:
    basic.reset(seed=0)
    with pytest.raises(ValueError, match=r"Discrete\(4\)"):
        basic.unwrapped.step(action)


def test_numpy_integer_actions_are_accepted(basic) -> None:
    basic.reset(seed=0)
    basic.unwrapped.step(np.int64(2))
    basic.unwrapped.step(np.array(1))


def test_use_after_close_is_a_clear_error() -> None:
    env = gym.make("sf/DoomBasic-v0", **SMALL)
    env.reset(seed=0)
    env.close()
    env.close()  # idempotent
    with pytest.raises(ClosedEnvError, match="closed"):
        env.unwrapped.step(0)
    with pytest.raises(ClosedEnvError, match="closed"):
        env.unwrapped.reset()


def test_step_before_reset_is_a_clear_error() -> None:
    env = DoomEnv("basic", **SMALL)
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"obs_size": (200, 100)}, "larger than the render resolution"),
        ({"frame_skip": 0}, "frame_skip must be an integer >= 1"),
        ({"frame_stack": 0}, "frame_stack"),
        ({"resolution": (100, 100)}, "not a ViZDoom render mode"),
        ({"resolution": "big"}, "WIDTHxHEIGHT"),
        ({"interpolation": "cubic"}, "nearest, bilinear, area"),
        ({"render_mode": "human"}, "render_mode"),
        ({"no_such_option": 1}, "valid options"),
    ],
)
def test_invalid_options_fail_at_construction(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        DoomEnv("basic", **kwargs)


def test_all_option_errors_are_reported_at_once() -> None:
    with pytest.raises(ValueError) as excinfo:
        DoomEnv("basic", frame_skip=0, frame_stack=0, obs_size=(500, 500))
    text = str(excinfo.value)
    assert "frame_skip" in text and "frame_stack" in text and "obs_size" in text
