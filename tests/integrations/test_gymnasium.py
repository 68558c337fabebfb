"""Gymnasium's own tools on sf envs: the env checker, the standard wrappers, every make_vec mode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vector_wrappers

import sf_envs

SMALL = {"resolution": (160, 120), "obs_size": (64, 36)}
MODES = ["sync", "async", "vector_entry_point"]


def _play_until_episodes_end(envs: gym.vector.VectorEnv, count: int, steps: int = 400) -> list:
    """Random actions until ``count`` episodes ended; returns the info of every ending step."""
    envs.reset(seed=0)
    endings = []
    for _ in range(steps):
        _, _, terminated, truncated, info = envs.step(envs.action_space.sample())
        if (terminated | truncated).any():
            endings.append(info)
            if sum(int((i["_episode"]).sum()) for i in endings) >= count:
                return endings
    raise AssertionError(f"fewer than {count} episodes ended in {steps} steps")


@pytest.mark.parametrize("env_id", sf_envs.env_ids() + sf_envs.match_env_ids())
def test_check_env_passes_on_every_single_agent_id(env_id: str, scenario_pack) -> None:
    kwargs = {"timelimit": 0.1} if env_id in sf_envs.match_env_ids() else {}
    env = gym.make(env_id, **SMALL, **kwargs)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize("mode", MODES)
def test_record_episode_statistics_on_make_vec_agrees_with_our_summary(mode: str) -> None:
    # Gymnasium's async mode forks by default, and a process that imported numpy has threads
    # (OpenBLAS's pool), which fork may deadlock (Python 3.12+ warns): start from a fork server.
    kwargs = {"vector_kwargs": {"context": "forkserver"}} if mode == "async" else {}
    envs = gym.make_vec("sf/DoomBasic-v0", 2, vectorization_mode=mode, **kwargs, **SMALL)
    envs = vector_wrappers.RecordEpisodeStatistics(envs)
    try:
        for info in _play_until_episodes_end(envs, 2):
            ended = info["_episode"]
            assert (info["_episode_summary"] == ended).all()
            np.testing.assert_allclose(
                info["episode"]["r"][ended], info["episode_summary"]["r"][ended], rtol=1e-5
            )
            assert (info["episode"]["l"][ended] == info["episode_summary"]["l"][ended]).all()
    finally:
        envs.close()


def test_single_env_standard_wrappers_stack() -> None:
    env = gym.make("sf/DoomBasic-v0", channels_last=True, max_episode_steps=30, **SMALL)
    env = gym.wrappers.RecordEpisodeStatistics(env)
    env = gym.wrappers.GrayscaleObservation(env, keep_dim=False)
    env = gym.wrappers.ResizeObservation(env, (42, 42))
    env = gym.wrappers.FrameStackObservation(env, 4)
    env = gym.wrappers.NormalizeReward(env)
    try:
        lengths = []
        for episode in range(3):
            obs, _ = env.reset(seed=episode)
            assert obs.shape == (4, 42, 42) and env.observation_space.contains(obs)
            terminated = truncated = False
            step = 0
            while not (terminated or truncated):
                obs, _, terminated, truncated, info = env.step(env.action_space.sample())
                assert env.observation_space.contains(obs)
                step += 1
            assert info["episode"]["l"] == step
            if terminated:  # ended by the game, not by the wrapper's limit: both summaries
                assert info["episode_summary"]["l"] == step
            lengths.append(step)
        assert max(lengths) <= 30
    finally:
        env.close()


def test_vector_standard_wrappers_on_the_engine() -> None:
    envs = gym.make_vec("sf/DoomBasic-v0", 4, num_workers=2, channels_last=True, **SMALL)
    envs = vector_wrappers.ResizeObservation(envs, (32, 32))
    envs = vector_wrappers.NormalizeObservation(envs)
    envs = vector_wrappers.NormalizeReward(envs)
    envs = vector_wrappers.RecordEpisodeStatistics(envs)
    try:
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (4, 32, 32, 3) and obs.dtype == np.float32
        endings = _play_until_episodes_end(envs, 4)
        assert sum(int(i["_episode"].sum()) for i in endings) >= 4
    finally:
        envs.close()


def test_our_vector_env_carries_the_attributes_gymnasium_vector_envs_carry() -> None:
    ours = gym.make_vec("sf/DoomBasic-v0", 2, vectorization_mode="vector_entry_point", **SMALL)
    theirs = gym.make_vec("sf/DoomBasic-v0", 2, vectorization_mode="sync", **SMALL)
    try:
        for name in ("autoreset_mode", "num_envs", "metadata", "spec", "render_mode", "closed"):
            assert hasattr(ours, name), name
        for name in (
            "single_observation_space",
            "single_action_space",
            "observation_space",
            "action_space",
        ):
            assert getattr(ours, name) == getattr(theirs, name), name
        assert ours.autoreset_mode is AutoresetMode.NEXT_STEP
        assert ours.metadata["autoreset_mode"] is ours.autoreset_mode
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("grayscale", [False, True])
def test_channels_last_is_the_transpose_of_channels_first(grayscale: bool) -> None:
    first = gym.make_vec("sf/DoomBasic-v0", 2, num_workers=1, grayscale=grayscale, **SMALL)
    last = gym.make_vec(
        "sf/DoomBasic-v0", 2, num_workers=1, grayscale=grayscale, channels_last=True, **SMALL
    )
    try:
        a, _ = first.reset(seed=3)
        b, _ = last.reset(seed=3)
        assert b.shape == (2, 36, 64, 1 if grayscale else 3)
        assert last.single_observation_space.shape == b.shape[1:]
        for t in range(10):
            np.testing.assert_array_equal(a.transpose(0, 2, 3, 1), b)
            actions = np.array([t % 3, (t + 1) % 3])
            a, *_ = first.step(actions)
            b, *_ = last.step(actions)
    finally:
        first.close()
        last.close()
