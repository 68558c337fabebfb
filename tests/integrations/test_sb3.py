"""Stable-Baselines3 as its documentation shows it, over sf envs and over our engine adapter."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is not installed (sf-envs[sb3])")

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecMonitor

import sf_envs  # noqa: F401 - registers the ids
from sf_envs.integrations.sb3 import make_sb3_vec_env

SMALL = {"resolution": (160, 120), "obs_size": (64, 48)}


@pytest.fixture(autouse=True)
def _logs_in_tmp_path(monkeypatch, tmp_path) -> None:
    """SB3's logger makes a folder even when it logs nothing (``$TMPDIR/SB3-<time>`` unless
    ``SB3_LOGDIR`` is set): keep it in the test's own temporary folder."""
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))


def _learn(env, policy: str) -> PPO:
    model = PPO(policy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    return model.learn(total_timesteps=256)


def test_ppo_cnn_policy_through_sb3s_own_vec_env() -> None:
    env = make_vec_env("sf/DoomBasic-v0", n_envs=2, env_kwargs=SMALL, seed=0)
    try:
        model = _learn(env, "CnnPolicy")
        assert model.num_timesteps >= 256
        assert len(model.ep_info_buffer) > 0  # Monitor saw whole episodes
    finally:
        env.close()


def test_ppo_multi_input_policy_on_dict_observations() -> None:
    env = make_vec_env(
        "sf/DoomHealthGathering-v0", n_envs=2, env_kwargs=SMALL | {"measurements": True}
    )
    try:
        assert set(env.observation_space.spaces) == {"screen", "measurements"}
        assert _learn(env, "MultiInputPolicy").num_timesteps >= 256
    finally:
        env.close()


def test_ppo_through_the_engine_adapter() -> None:
    env = VecMonitor(make_sb3_vec_env("sf/DoomBasic-v0", num_envs=4, num_workers=2, **SMALL))
    try:
        model = _learn(env, "CnnPolicy")
        assert model.num_timesteps >= 256
        episodes = list(model.ep_info_buffer)
        assert episodes and all(1 <= e["l"] <= 75 for e in episodes)  # 300 tics / frame skip 4
    finally:
        env.close()


def test_adapter_follows_sb3_vec_env_semantics() -> None:
    env = make_sb3_vec_env("sf/DoomBasic-v0", num_envs=4, num_workers=2, **SMALL)
    try:
        env.seed(3)
        first = env.reset()
        env.seed(3)
        assert np.array_equal(first, env.reset())  # SB3 seeding reaches the engine
        returns = np.zeros(4)
        ended = 0
        for _ in range(200):
            obs, rewards, dones, infos = env.step(np.full(4, 2))  # attack in place
            returns += rewards
            assert obs.shape == (4, 3, 48, 64) and rewards.dtype == np.float32
            for i in np.flatnonzero(dones):
                info = infos[i]
                assert info["terminal_observation"].shape == (3, 48, 64)
                assert not np.array_equal(info["terminal_observation"], obs[i])  # obs is next
                assert info["episode_summary"]["r"] == pytest.approx(returns[i], abs=1e-3)
                assert info["TimeLimit.truncated"] in (True, False)
                returns[i] = 0.0
                ended += 1
        assert ended > 0
    finally:
        env.close()


def test_adapter_refuses_an_engine_that_steps_part_of_the_envs() -> None:
    import gymnasium as gym

    from sf_envs.integrations.sb3 import SB3VecEnv

    engine = gym.make_vec("sf/DoomBasic-v0", 4, batch_size=2, num_workers=2, **SMALL)
    try:
        with pytest.raises(ValueError, match="batch_size=num_envs"):
            SB3VecEnv(engine)
    finally:
        engine.close()
