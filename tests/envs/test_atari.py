"""Atari through ale-py: the preprocessing (max of two frames, area resize as OpenCV's
INTER_AREA), whole games with their raw scores, seeding, the engine stepping games exactly as
Gymnasium's own vector env steps the single env, and errors that name the fix."""

from __future__ import annotations

import itertools
import os
import signal

import cv2
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import sf_envs
from sf_envs.atari import AtariCore, AtariOptions
from sf_envs.atari.kernels import area_weights, pool_and_resize
from sf_envs.errors import OptionError


@pytest.mark.parametrize(("width", "height"), [(84, 84), (64, 48), (160, 105), (100, 50)])
def test_the_kernel_is_the_max_of_two_frames_resized_by_area(width, height) -> None:
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 256, (210, 160), dtype=np.uint8) for _ in range(2))
    cols, rows = area_weights(160, width), area_weights(210, height)
    tall = np.zeros((height, 160 + cols[1].shape[1]), dtype=np.float32)
    out = np.empty((height, width), dtype=np.uint8)
    pool_and_resize(a, b, *cols, *rows, tall, out)
    expected = cv2.resize(np.maximum(a, b), (width, height), interpolation=cv2.INTER_AREA)
    # Rounding differs (OpenCV's fixed point, its halves): by one gray level at most.
    difference = np.abs(out.astype(int) - expected)
    assert difference.max() <= 1
    assert difference.mean() < 0.3


def test_area_weights_cover_the_source_once() -> None:
    first, weights = area_weights(210, 84)
    assert np.allclose(weights.sum(axis=1), 1.0)
    coverage = np.zeros(210)
    for i, start in enumerate(first):
        for k, w in enumerate(weights[i]):
            if w:
                coverage[start + k] += w
    assert np.allclose(coverage, 84 / 210)  # every source row counted in full, once


def test_an_atari_id_passes_gymnasiums_checks() -> None:
    env = gym.make("sf/Atari-Pong-v0", render_mode="rgb_array")
    try:
        check_env(env.unwrapped, skip_render_check=False)
        obs, info = env.reset(seed=0)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        assert set(info) == {"lives", "episode_frame_number"}
        assert env.action_space == gym.spaces.Discrete(6)  # Pong's minimal action set
        assert env.render().shape == (210, 160, 3)
    finally:
        env.close()


def test_every_game_of_the_benchmark_has_an_id() -> None:
    ids = sf_envs.atari_env_ids()
    assert len(ids) == 57
    assert {"sf/Atari-Pong-v0", "sf/Atari-Breakout-v0", "sf/Atari-SpaceInvaders-v0"} <= set(ids)
    assert all(i in gym.registry for i in ids)


def _play(env: gym.Env, seed: int, steps: int) -> list[tuple]:
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = [obs.tobytes()]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
        trace.append((obs.tobytes(), reward, terminated, truncated, info["lives"]))
        if terminated or truncated:
            obs, _ = env.reset()
    return trace


def test_a_seeded_game_replays_sticky_actions_and_no_op_starts_included() -> None:
    with gym.make("sf/Atari-Breakout-v0") as first, gym.make("sf/Atari-Breakout-v0") as second:
        assert _play(first, 7, 300) == _play(second, 7, 300)
        assert _play(first, 7, 50) != _play(second, 8, 50)


def test_an_episode_is_a_whole_game_scored_raw() -> None:
    """Breakout's five lives: one episode, its return the sum of the raw points (bricks of
    the upper rows are worth more than 1)."""
    env = gym.make("sf/Atari-Breakout-v0", sticky_actions=0.0)
    try:
        env.reset(seed=1)
        lives, total, rng = [], 0.0, np.random.default_rng(1)
        while True:
            _, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
            lives.append(info["lives"])
            total += reward
            if terminated or truncated:
                break
        assert terminated and not truncated
        assert lives[0] == 5 and lives[-1] == 0
        assert all(a >= b for a, b in itertools.pairwise(lives))  # only ever lost
        assert info["episode_summary"] == {"r": total, "l": len(lives)}
    finally:
        env.close()


def test_max_frames_truncate_an_episode() -> None:
    env = gym.make("sf/Atari-Pong-v0", max_frames=400)
    try:
        env.reset(seed=0)
        steps, terminated, truncated = 0, False, False
        while not (terminated or truncated) and steps < 200:
            _, _, terminated, truncated, info = env.step(0)
            steps += 1
        assert truncated and not terminated
        assert info["episode_frame_number"] >= 400 and steps <= 100  # frame skip 4
    finally:
        env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_engine_steps_games_as_gymnasiums_own_vector_env(mode) -> None:
    """Across game overs (random Breakout games last about 200 steps)."""
    reference = SyncVectorEnv([lambda: gym.make("sf/Atari-Breakout-v0")] * 4, autoreset_mode=mode)
    engine = gym.make_vec("sf/Atari-Breakout-v0", num_envs=4, num_workers=2, autoreset_mode=mode)
    rng = np.random.default_rng(0)
    ended = 0
    try:
        assert engine.single_observation_space == reference.single_observation_space
        obs, _ = engine.reset(seed=5)
        expected, _ = reference.reset(seed=5)
        np.testing.assert_array_equal(obs, expected)
        for _ in range(500):
            actions = rng.integers(0, 4, 4)
            ours = engine.step(actions)
            theirs = reference.step(actions)
            for a, b in zip(ours[:4], theirs[:4], strict=True):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(ours[4]["lives"], theirs[4]["lives"])
            ended += int(np.sum(ours[2] | ours[3]))
    finally:
        engine.close()
        reference.close()
    assert ended >= 3


def test_the_async_face_reports_whole_games() -> None:
    envs = gym.make_vec("sf/Atari-Breakout-v0", num_envs=4, batch_size=2, num_workers=2)
    returns = []
    try:
        envs.async_reset(seed=0)
        rng = np.random.default_rng(0)
        while len(returns) < 4:
            _, _, _, _, info = envs.recv()
            ended = info["_episode_summary"]
            returns += info["episode_summary"]["r"][ended].tolist()
            assert np.all(info["final_info"]["variables"][ended, 0] == 0)  # no lives left
            envs.send(rng.integers(0, 4, len(info["env_id"])), info["env_id"])
    finally:
        envs.close()
    assert all(r >= 0 and float(r).is_integer() for r in returns)


def test_a_killed_atari_worker_is_restarted_and_nothing_is_left() -> None:
    envs = gym.make_vec("sf/Atari-Breakout-v0", num_envs=4, num_workers=2)
    name = envs._core.engine.buffers.name
    actions = np.ones(4, np.int64)
    try:
        envs.reset(seed=0)
        for _ in range(3):  # past the resets
            envs.step(actions)
        victim = envs.worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        _, _, terminated, truncated, info = envs.step(actions)
        lost = info["worker_restarted"]
        assert lost.sum() == 2 and truncated[lost].all() and not terminated[lost].any()
        assert victim not in envs.worker_pids
        for _ in range(5):  # the games go on, the lost ones anew
            obs, _, _, _, info = envs.step(actions)
        assert "worker_restarted" not in info and obs.shape == (4, 4, 84, 84)
    finally:
        envs.close()
    assert not os.path.exists(f"/dev/shm/{name}")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"game": "pongg"}, "unknown Atari game 'pongg'; ale-py has: "),
        ({"grayscale": False}, "grayscale=False"),
        ({"obs_size": "200x84"}, "at most the screen's 160x210"),
        ({"sticky_actions": 1.5}, "sticky_actions is a probability"),
        ({"frame_skip": 0}, "frame_skip must be an integer >= 1"),
        ({"lives": 3}, "unknown Atari option(s) lives; valid: "),
    ],
)
def test_bad_options_are_named_with_their_fix(options, message) -> None:
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        AtariCore(AtariOptions.create(**options))
