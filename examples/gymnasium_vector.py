"""Gymnasium: the engine as a VectorEnv, with the standard episode-statistics wrapper."""

import gymnasium as gym

import sf_envs  # noqa: F401 - registers the sf/Doom*-v0 ids

envs = gym.make_vec("sf/DoomBasic-v0", num_envs=8, num_workers=2)
envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
obs, info = envs.reset(seed=0)
for _ in range(300):
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    if "episode" in info:
        print("returns of ended episodes:", info["episode"]["r"][info["_episode"]])
envs.close()
