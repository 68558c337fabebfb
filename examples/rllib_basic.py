"""RLlib 2.60 (new API stack): PPO on Doom basic (pip install "ray[rllib]==2.60.0" torch).

RLlib's default CNN reads float images, channels last, of a size it has filters for (square 96,
84, 64, 42 or 10). So: channels_last=True, obs_size=(64, 64) from the default 160x120 render
(RLlib's own 64x64 conv stack, no conv_filters needed), and RLlib's NormalizedImageEnv for
uint8 -> float32 in [-1, 1] (its CNN does not cast a uint8 screen itself).
"""

import gymnasium as gym
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.wrappers.atari_wrappers import NormalizedImageEnv
from ray.tune.registry import register_env


def make_env(config):
    import sf_envs  # noqa: F401 - registers the sf/Doom*-v0 ids in each env runner

    return NormalizedImageEnv(gym.make("sf/DoomBasic-v0", channels_last=True, obs_size=(64, 64)))


register_env("doom_basic", make_env)
config = (
    PPOConfig()
    .environment("doom_basic")
    .env_runners(num_env_runners=1)
    .training(train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=4, lr=3e-4)
)
algo = config.build_algo()
for i in range(20):
    result = algo.train()
    print(i, "mean episode return", result["env_runners"]["episode_return_mean"])
algo.stop()
