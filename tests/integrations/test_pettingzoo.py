"""PettingZoo's own tests and SuperSuit's common wrappers on matches (the API tests of every
line-up live with the match tests in ``tests/envs/test_match.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import sf_envs

SMALL = {"timelimit": 0.05, "resolution": (160, 120), "obs_size": (64, 48)}


def test_parallel_seed_test_passes_on_a_match_against_bots() -> None:
    # A one-agent match replays exactly after a seeded reset (a fresh engine is seeded).
    parallel_seed_test(lambda: sf_envs.make_match("duel_bots", **SMALL), num_cycles=30)


def test_supersuit_common_wrappers_on_a_duel() -> None:
    ss = pytest.importorskip(
        "supersuit", reason="SuperSuit is not installed (pip install supersuit)"
    )
    env = sf_envs.make_match("duel", channels_last=True, **SMALL)  # SuperSuit wants (H, W, C)
    env = ss.color_reduction_v0(env, mode="full")
    env = ss.resize_v1(env, 32, 32)
    env = ss.frame_stack_v1(env, 4)
    env = ss.dtype_v0(env, np.float32)
    env = ss.normalize_obs_v0(env, env_min=0.0, env_max=1.0)
    try:
        parallel_api_test(env, num_cycles=40)
        obs, _ = env.reset(seed=0)
        for agent in env.agents:
            assert obs[agent].shape == (32, 32, 4) and obs[agent].dtype == np.float32
            assert obs[agent].min() >= 0.0 and obs[agent].max() <= 1.0
    finally:
        env.close()
