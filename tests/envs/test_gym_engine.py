"""Any Gymnasium env on the engine: the same steps as Gymnasium's own vector envs, Dict
observations, MultiDiscrete and Box actions, info fields in shared memory, restarts, errors."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from support.gym_envs import Walk, make_walk

from sf_envs.errors import OptionError
from sf_envs.vector import make_gym_vec
from sf_envs.vector.buffers import SHM_PREFIX


def _random_actions(space: gym.Space, rng: np.random.Generator, n: int) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(0, space.n, n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (n, *space.shape))
    return rng.uniform(space.low, space.high, (n, *space.shape)).astype(space.dtype)


def _assert_same(ours, theirs) -> None:
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            np.testing.assert_array_equal(ours[key], theirs[key])
    else:
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    ("source", "mode"),
    [
        ("CartPole-v1", AutoresetMode.NEXT_STEP),
        ("Pendulum-v1", AutoresetMode.SAME_STEP),
        ("support.gym_envs:make_walk", AutoresetMode.SAME_STEP),
        (make_walk, AutoresetMode.NEXT_STEP),
    ],
)
def test_the_engine_steps_an_env_as_gymnasiums_own_vector_env(source, mode) -> None:
    make = (
        (lambda: gym.make(source)) if isinstance(source, str) and ":" not in source else make_walk
    )
    reference = SyncVectorEnv([make] * 4, autoreset_mode=mode)
    rng = np.random.default_rng(0)
    with make_gym_vec(source, num_envs=4, num_workers=2, autoreset_mode=mode) as envs:
        assert envs.single_observation_space == reference.single_observation_space
        assert envs.single_action_space == reference.single_action_space
        obs, _ = envs.reset(seed=3)
        expected, _ = reference.reset(seed=3)
        _assert_same(obs, expected)
        ended = 0
        for _ in range(210):  # past Pendulum's 200-step episodes
            actions = _random_actions(envs.single_action_space, rng, 4)
            obs, reward, terminated, truncated, info = envs.step(actions)
            theirs = reference.step(actions)
            _assert_same(obs, theirs[0])
            np.testing.assert_allclose(reward, theirs[1], rtol=1e-6)
            np.testing.assert_array_equal(terminated, theirs[2])
            np.testing.assert_array_equal(truncated, theirs[3])
            if mode is AutoresetMode.SAME_STEP and (terminated | truncated).any():
                done = terminated | truncated
                ended += int(done.sum())
                _assert_same(
                    {k: v[done] for k, v in info["final_obs"].items()}
                    if isinstance(obs, dict)
                    else info["final_obs"][done],
                    {k: np.stack([o[k] for o in theirs[4]["final_obs"][done]]) for k in obs}
                    if isinstance(obs, dict)
                    else np.stack(theirs[4]["final_obs"][done]),
                )
        if mode is AutoresetMode.SAME_STEP:
            assert ended > 0
    reference.close()


def test_numeric_info_fields_are_shared_and_episodes_summed() -> None:
    with make_gym_vec(Walk, num_envs=2, batch_size=2, num_workers=1) as pool:
        assert pool.variable_names == ("position", "far")  # the text field is left out
        pool.async_reset(seed=0)
        obs, _, _, _, info = pool.recv()
        np.testing.assert_array_equal(info["variables"][:, 0], obs["position"][:, 0])
        returns = np.zeros(2)
        for _ in range(40):
            pool.send(np.array([[2, 0], [2, 0]]), info["env_id"])  # always right
            obs, reward, terminated, truncated, info = pool.recv()
            returns += reward
            done = terminated | truncated
            if done.any():
                # The summary is the engine's sum of the episode's rewards.
                np.testing.assert_allclose(info["episode_summary"]["r"][done], returns[done])
                assert (info["final_info"]["variables"][done, 0] == 3).all()
                assert (info["final_info"]["variables"][done, 1] == 1).all()
                returns[done] = 0


def test_box_actions_are_checked() -> None:
    with make_gym_vec("Pendulum-v1", num_envs=2, num_workers=1) as envs:
        envs.reset(seed=0)
        with pytest.raises(ValueError, match="finite numeric array of shape"):
            envs.step(np.full((2, 1), np.nan, np.float32))
        with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
            envs.step(np.zeros(2, np.float32))
        envs.step(np.zeros((2, 1), np.float32))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("support.gym_envs:TextObservation", "Box observations .* or a Dict of Boxes"),
        ("NoSuchEnv-v9", "unknown env 'NoSuchEnv-v9'"),
        ("support.gym_envs:not_an_env", "returned object, not a gymnasium.Env"),
        ("no_such_module:Env", "cannot import 'no_such_module'"),
    ],
)
def test_what_the_engine_cannot_host_gets_a_clear_error(source, message) -> None:
    with pytest.raises(OptionError, match=message):
        make_gym_vec(source, num_envs=1)


def test_env_kwargs_go_to_the_env_and_other_options_are_refused() -> None:
    with make_gym_vec(make_walk, num_envs=1, env_kwargs={"limit": 2}) as envs:
        envs.reset(seed=0)
        envs.step(np.array([[1, 1]]))
        assert envs.step(np.array([[1, 1]]))[3].all()  # truncated after 2 steps
    with pytest.raises(OptionError, match="env_kwargs"):
        make_gym_vec("CartPole-v1", num_envs=1, frame_skip=4)


def test_a_killed_worker_of_gym_units_is_restarted_and_nothing_is_left() -> None:
    envs = make_gym_vec("CartPole-v1", num_envs=4, num_workers=2)
    name = envs._core.engine.buffers.name
    assert name.startswith(SHM_PREFIX)
    try:
        envs.reset(seed=0)
        for _ in range(3):  # past the resets: a reset pending on a killed worker is just redone
            envs.step(np.zeros(4, np.int64))
        victim = envs.worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        _, _, terminated, truncated, info = envs.step(np.zeros(4, np.int64))
        lost = info["worker_restarted"]
        assert lost.sum() == 2 and truncated[lost].all() and not terminated[lost].any()
        assert victim not in envs.worker_pids
        for _ in range(5):  # the run goes on
            _, _, _, _, info = envs.step(np.ones(4, np.int64))
        assert "worker_restarted" not in info
    finally:
        envs.close()
    assert not os.path.exists(f"/dev/shm/{name}")
