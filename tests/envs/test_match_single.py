"""Single-agent gymnasium ids over 1-agent matches: sf/DoomDuelBots-v0, sf/DoomDeathmatchBots-v0."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import sf_envs
from sf_envs import ClosedEnvError, SingleAgentMatchEnv
from sf_envs.vector import DoomAsyncVectorEnv

SMALL = {"timelimit": 0.1, "obs_size": (64, 48)}
IDS = ["sf/DoomDuelBots-v0", "sf/DoomDeathmatchBots-v0"]


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_env_checker_passes(env_id: str) -> None:
    env = gym.make(env_id, num_bots=1, **SMALL)
    try:
        raw = env.unwrapped
        assert isinstance(raw, SingleAgentMatchEnv) and env_id in sf_envs.match_env_ids()
        assert not env.spec.nondeterministic
        check_env(raw)  # seed determinism included: a seeded reset starts a fresh engine
    finally:
        env.close()


def test_a_seeded_reset_replays_the_match_and_later_resets_continue_reproducibly() -> None:
    def play(env: gym.Env, seed: int | None) -> list[np.ndarray]:
        obs, _ = env.reset(seed=seed)
        frames = [obs]
        for t in range(40):
            obs, *_ = env.step(t % 6)
            frames.append(obs)
        return frames

    runs = []
    for _ in range(2):
        env = gym.make("sf/DoomDuelBots-v0", **SMALL)
        try:
            runs.append(play(env, 5) + play(env, None))
            again = play(env, 5)
        finally:
            env.close()
        assert all(np.array_equal(a, b) for a, b in zip(runs[-1][:41], again, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(runs[0], runs[1], strict=True))
    assert not np.array_equal(runs[0][5], runs[0][46])  # the next match is not a copy


def test_time_limit_truncates_with_the_match_result_and_episode_stats() -> None:
    env = gym.make("sf/DoomDuelBots-v0", measurements=True, **SMALL)
    try:
        obs, info = env.reset(seed=0)
        assert obs["screen"].shape == (3, 48, 64) and obs["screen"].dtype == np.uint8
        assert env.observation_space.contains(obs)
        stats = {"frags", "deaths", "hits", "damage_dealt", "damage_taken", "placement"}
        assert stats | {"objective"} <= set(info)
        total, steps, terminated, truncated = 0.0, 0, False, False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(3)  # fire in place
            total += reward
            steps += 1
            assert stats <= set(info)
        assert truncated and not terminated
        assert steps == 52  # 0.1 min = 210 tics: 2 settle tics, then ceil(208 / 4) steps
        assert info["episode_summary"] == {"r": total, "l": steps}
        result = info["match"]
        assert set(result["frags"]) == {"player_0", "bot1_L2"}
        assert info["win"] == float(result["winner"] == "player_0")
        with pytest.raises(RuntimeError, match="call reset"):
            env.step(0)
    finally:
        env.close()
    with pytest.raises(ClosedEnvError, match="closed"):
        env.unwrapped.reset()
    env.close()  # idempotent


def test_make_vec_gives_the_async_face_with_one_match_per_env() -> None:
    pool = gym.make_vec("sf/DoomDuelBots-v0", num_envs=4, batch_size=2, num_workers=2, **SMALL)
    try:
        assert isinstance(pool, DoomAsyncVectorEnv)
        assert pool.single_action_space == gym.spaces.Discrete(6)
        assert pool.variable_names[0] == "frags"
        pool.async_reset(seed=0)
        for _ in range(6):
            obs, _, terminated, _, info = pool.recv()
            assert obs.shape == (2, 3, 48, 64) and not terminated.any()
            ids = info["env_id"].tolist()
            assert len(set(ids)) == 2 and set(ids) <= {0, 1, 2, 3}
            pool.send(np.zeros(2, np.int64), info["env_id"])
    finally:
        pool.close()


def test_bad_settings_raise_naming_the_fix() -> None:
    with pytest.raises(ValueError, match=r"unknown options \['bogus'\]"):
        gym.make("sf/DoomDuelBots-v0", bogus=1)
    with pytest.raises(ValueError, match=r"num_bots in \[1, 1\]"):
        gym.make("sf/DoomDuelBots-v0", num_bots=3)
    with pytest.raises(ValueError, match=r"one learning agent.*deathmatch_bots or duel_bots"):
        SingleAgentMatchEnv("duel")
    with pytest.raises(ValueError, match="action 9"):
        env = gym.make("sf/DoomDuelBots-v0", **SMALL)
        try:
            env.reset(seed=0)
            env.unwrapped.step(9)
        finally:
            env.close()


def test_self_play_id_gives_one_env_per_agent_and_refuses_a_single_env() -> None:
    assert sf_envs.self_play_env_ids() == ["sf/DoomDuel-v0"]
    with pytest.raises(
        ValueError, match=r"make_vec\('sf/DoomDuel-v0', num_envs=k \* 2\).*make_match"
    ):
        gym.make("sf/DoomDuel-v0")
    with pytest.raises(ValueError, match="multiple of 2 envs per unit"):
        gym.make_vec("sf/DoomDuel-v0", num_envs=3, num_workers=1, **SMALL)
    env = gym.make_vec("sf/DoomDuel-v0", num_envs=4, batch_size=4, num_workers=2, **SMALL)
    try:
        assert isinstance(env, DoomAsyncVectorEnv)
        env.async_reset(seed=0)
        obs, _, _, _, info = env.recv()
        np.testing.assert_array_equal(info["env_id"], [0, 1, 2, 3])
        # Two agents of one match see the arena from their own spawn spots.
        assert not np.array_equal(obs[0], obs[1])
        steps = 0
        while True:
            env.send(np.full(4, 3), info["env_id"])  # everyone fires in place
            _, _, terminated, truncated, info = env.recv()
            steps += 1
            if truncated.any():
                break
        assert truncated.all() and not terminated.any()  # the envs of a match end together
        assert steps == 52  # 0.1 min, as for the single-agent ids
    finally:
        env.close()
