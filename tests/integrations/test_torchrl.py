"""TorchRL as its documentation shows it: GymWrapper over make_vec, a collector, a PettingZoo duel."""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl", reason="TorchRL is not installed (pip install torchrl)")

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode
from torchrl.collectors import Collector
from torchrl.envs import GymWrapper, PettingZooWrapper

import sf_envs

SMALL = {"resolution": (160, 120), "obs_size": (64, 36)}


def _engine(num_envs: int) -> gym.vector.VectorEnv:
    # TorchRL reads autoreset_mode and refuses NEXT_STEP, Gymnasium's default.
    return gym.make_vec(
        "sf/DoomBasic-v0",
        num_envs,
        num_workers=2,
        autoreset_mode=AutoresetMode.SAME_STEP,
        **SMALL,
    )


def test_gym_wrapper_over_make_vec_rolls_out_whole_episodes() -> None:
    env = GymWrapper(_engine(4))
    try:
        assert env.batch_size == torch.Size([4])
        rollout = env.rollout(100, break_when_any_done=False)
        assert rollout["next", "observation"].shape == (4, 100, 3, 36, 64)
        done = rollout["next", "done"].squeeze(-1)
        assert done.any(dim=1).all()  # basic ends within 75 steps
        # Game variables arrive as tensors beside the observation, every step.
        assert rollout["next", "health"].shape == (4, 100)
    finally:
        env.close()


def test_collector_gathers_the_frames_it_is_asked_for() -> None:
    env = GymWrapper(_engine(4))
    collector = Collector(env, policy=None, frames_per_batch=64, total_frames=128)
    try:
        batches = list(collector)
        assert [b.numel() for b in batches] == [64, 64]
        assert all(b["next", "reward"].dtype == torch.float32 for b in batches)
    finally:
        collector.shutdown()
        env.close()


def test_pettingzoo_wrapper_over_a_duel() -> None:
    env = PettingZooWrapper(
        sf_envs.make_match("duel", timelimit=0.05, **SMALL), categorical_actions=True
    )
    try:
        rollout = env.rollout(20, break_when_any_done=False)
        group = next(iter(env.group_map))
        assert env.group_map[group] == ["player_0", "player_1"]
        assert rollout["next", group, "observation"].shape == (20, 2, 3, 36, 64)
        assert rollout["next", group, "reward"].shape == (20, 2, 1)
    finally:
        env.close()
