"""Collection speed inside RL libraries: our engine vs the process pool each library would use.

Each library collects with its own loop and a random policy over the same Doom envs, once over
our shared-memory engine and once over the reference measured in the same run:

- TorchRL: ``Collector`` over ``GymWrapper(gym.make_vec(...))`` (our engine) vs over
  ``GymWrapper`` of Gymnasium's ``AsyncVectorEnv`` of the same envs.
- Stable-Baselines3: PPO's own ``collect_rollouts`` (policy forward included) over
  ``sf_envs.integrations.sb3`` vs over SB3's ``SubprocVecEnv`` (SB3's process-parallel VecEnv;
  SB3 cannot step a Gymnasium ``AsyncVectorEnv``).

Prints env steps/s and frames/s (x frame skip 4) per setup and the ratio ours / reference.

    python benchmarks/library_throughput.py --seconds 20 --num-envs 8 --num-workers 2
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import gymnasium as gym
from common.timing import steps_per_second
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

import sf_envs  # noqa: F401 - registers the ids

ENV_ID = "sf/DoomBasic-v0"
# "module:id" makes a fresh process (SubprocVecEnv's forkserver children) import sf_envs first.
ENV_ID_ANYWHERE = f"sf_envs:{ENV_ID}"
FRAME_SKIP = 4


def _timed(collect: Callable[[], int], seconds: float) -> float:
    """Env steps per second of ``collect`` (returns the steps it took) over ``seconds``."""
    return steps_per_second(collect, seconds, warmup=1)


def torchrl_steps_per_s(ours: bool, num_envs: int, workers: int, seconds: float) -> float:
    from torchrl.collectors import Collector
    from torchrl.envs import GymWrapper

    if ours:
        vector = gym.make_vec(
            ENV_ID, num_envs, num_workers=workers, autoreset_mode=AutoresetMode.SAME_STEP
        )
    else:
        vector = AsyncVectorEnv(
            [lambda: gym.make(ENV_ID) for _ in range(num_envs)],
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
    env = GymWrapper(vector)
    batch = 64 * num_envs
    collector = Collector(env, policy=None, frames_per_batch=batch, total_frames=-1)
    batches = iter(collector)
    try:
        return _timed(lambda: next(batches).numel(), seconds)
    finally:
        collector.shutdown()
        env.close()


def sb3_steps_per_s(ours: bool, num_envs: int, workers: int, seconds: float) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from sf_envs.integrations.sb3 import make_sb3_vec_env

    if ours:
        env = make_sb3_vec_env(ENV_ID, num_envs, num_workers=workers)
    else:
        env = make_vec_env(ENV_ID_ANYWHERE, n_envs=num_envs, vec_env_cls=SubprocVecEnv)
    n_steps = 64
    model = PPO("CnnPolicy", env, n_steps=n_steps, device="cpu")
    model._setup_learn(total_timesteps=10**9, callback=None)
    callback = model._init_callback(None)

    def collect() -> int:
        model.collect_rollouts(env, callback, model.rollout_buffer, n_rollout_steps=n_steps)
        return n_steps * num_envs

    try:
        return _timed(collect, seconds)
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="timed seconds per setup")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-workers", type=int, default=2, help="our engine's processes")
    args = parser.parse_args()
    setups = [
        ("TorchRL Collector", "AsyncVectorEnv", torchrl_steps_per_s),
        ("SB3 PPO collect_rollouts", "SubprocVecEnv", sb3_steps_per_s),
    ]
    print(f"{ENV_ID}, {args.num_envs} envs, random/untrained policy, {args.seconds:g} s per setup")
    print(
        f"{'library loop':<26} {'reference':<16} {'ours steps/s':>13} {'ref steps/s':>12} "
        f"{'ours frames/s':>14} {'ratio':>6}"
    )
    for label, reference, measure in setups:
        ours = measure(True, args.num_envs, args.num_workers, args.seconds)
        ref = measure(False, args.num_envs, args.num_workers, args.seconds)
        print(
            f"{label:<26} {reference:<16} {ours:>13,.0f} {ref:>12,.0f} "
            f"{ours * FRAME_SKIP:>14,.0f} {ours / ref:>5.2f}x"
        )


if __name__ == "__main__":
    main()
