"""Stable-Baselines3: PPO on Doom basic over the shared-memory engine (pip install sf-envs[sb3])."""

from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor

from sf_envs.integrations.sb3 import make_sb3_vec_env

env = VecMonitor(make_sb3_vec_env("sf/DoomBasic-v0", num_envs=8, num_workers=2))
model = PPO("CnnPolicy", env, n_steps=128, batch_size=256, verbose=1)
model.learn(total_timesteps=100_000)
env.close()
