"""TorchRL: GymWrapper over the engine and a collector (TorchRL needs SAME_STEP autoreset)."""

import gymnasium as gym
from gymnasium.vector import AutoresetMode
from torchrl.collectors import Collector
from torchrl.envs import GymWrapper

import sf_envs  # noqa: F401 - registers the sf/Doom*-v0 ids

vector = gym.make_vec("sf/DoomBasic-v0", 8, autoreset_mode=AutoresetMode.SAME_STEP)
env = GymWrapper(vector)
collector = Collector(env, policy=None, frames_per_batch=1024, total_frames=4096)
for batch in collector:  # random policy; pass a TensorDictModule to act with yours
    print(batch["next", "reward"].sum().item(), batch["next", "done"].sum().item())
collector.shutdown()
env.close()
