"""RLlib 2.60 (new API stack): PPO self-play on a duel, both players sharing one policy.

The PettingZoo match goes through RLlib's ParallelPettingZooEnv. Screens are channels last at
64x64 (RLlib's default CNN has filters for that size), and an env-to-module connector turns each
agent's uint8 screen into float32 in [0, 1] (RLlib's CNN does not cast; Gymnasium wrappers do not
wrap a PettingZoo env). Half-minute matches, so episodes end inside every iteration.
"""

import gymnasium as gym
import numpy as np
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.env_to_module.observation_preprocessor import (
    SingleAgentObservationPreprocessor,
)
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env


class ScaleScreens(SingleAgentObservationPreprocessor):
    def recompute_output_observation_space(self, obs_space, action_space):
        return gym.spaces.Dict(  # one Dict of every agent's space in a multi-agent pipeline
            {a: gym.spaces.Box(0.0, 1.0, s.shape, np.float32) for a, s in obs_space.items()}
        )

    def preprocess(self, observation, episode):
        return observation.astype(np.float32) / 255.0


def make_duel(config):
    import sf_envs

    duel = sf_envs.make_match("duel", channels_last=True, obs_size=(64, 64), timelimit=0.5)
    return ParallelPettingZooEnv(duel)


register_env("doom_duel", make_duel)
config = (
    PPOConfig()
    .environment("doom_duel")
    .env_runners(
        num_env_runners=1, env_to_module_connector=lambda env, spaces, device: ScaleScreens()
    )
    .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
    .training(train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=4, lr=3e-4)
)
algo = config.build_algo()
for i in range(20):
    result = algo.train()
    runners = result["env_runners"]  # the sum over both players, then each player's
    print(i, runners["episode_return_mean"], runners["agent_episode_returns_mean"])
algo.stop()
