"""RLlib (Ray) on sf envs: PPO (new API stack) trains on a single id and on a PettingZoo duel.

Used as RLlib's own documentation shows: an env creator registered with ``register_env``, a
``PPOConfig`` built with ``.environment().env_runners().training()``, ``algo.train()``. The duel
goes through RLlib's ``ParallelPettingZooEnv``, both players mapped to one shared policy.

What RLlib needs from image observations, and what these tests choose:

- Channels last: RLlib's CNN encoder reads ``(H, W, C)``, so every env is made with
  ``channels_last=True``.
- A size RLlib has default conv filters for: only square 96, 84, 64, 42 and 10
  (``ray.rllib.models.utils.get_filter_config``), anything else needs ``conv_filters``.
  ``obs_size=(64, 64)`` from the cheapest render, 160x120, gets RLlib's own 64x64 stack (four
  stride-2 4x4 convs, 16-32-64-128 channels); no model config at all.
- Floats: RLlib's CNN encoder passes observations to the conv layers as they come, and a uint8
  screen fails there ("Input type (unsigned char) and bias type (float) should be the same").
  Doom basic is wrapped in RLlib's own ``NormalizedImageEnv`` (its Atari pipeline's wrapper:
  float32 in [-1, 1]); the duel, a PettingZoo env that Gymnasium wrappers cannot wrap, gets
  an env-to-module connector (RLlib's ``SingleAgentObservationPreprocessor``, applied per agent)
  that scales the screens to float32 in [0, 1].
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile

import pytest

pytest.importorskip(
    "ray.rllib",
    reason="RLlib is not installed (optional): pip install 'ray[rllib]==2.60.0' torch, "
    "in its own env since it pins gymnasium==1.2.2",
)

import gymnasium as gym
import numpy as np
import ray
import vizdoom
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.env_to_module.observation_preprocessor import (
    SingleAgentObservationPreprocessor,
)
from ray.rllib.env.wrappers.atari_wrappers import NormalizedImageEnv
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

SMALL = {"resolution": (160, 120), "obs_size": (64, 64), "channels_last": True}
# Steps per iteration, above basic's longest episode (300 tics = 75 steps): every iteration then
# ends an episode, so its episode_return_mean is a number (with 64, a random policy's 60-step
# episode followed by a timeout left the second iteration without one: NaN).
BATCH = 96
TINY_PPO = {"train_batch_size_per_learner": BATCH, "minibatch_size": 32, "num_epochs": 1}
ITERATIONS = 2

#: Every env the creators made, closed by the fixture even when RLlib fails half-built: an
#: algorithm whose construction raised is never stopped, and its match engines would outlive
#: the test process.
_MADE: list = []


def _basic_env(config: dict) -> gym.Env:
    import sf_envs  # noqa: F401 - registers the sf/ ids in the process that makes the env

    env = NormalizedImageEnv(gym.make("sf/DoomBasic-v0", **SMALL, **config))
    _MADE.append(env)
    return env


def _duel_env(config: dict) -> ParallelPettingZooEnv:
    import sf_envs

    # 0.05 minutes: 105 tics, 26 steps at frame_skip 4, so matches end (and reset) in the test.
    env = ParallelPettingZooEnv(sf_envs.make_match("duel", timelimit=0.05, **SMALL, **config))
    _MADE.append(env)
    return env


class ScaleScreens(SingleAgentObservationPreprocessor):
    """Each agent's uint8 screen to float32 in [0, 1]: RLlib's CNN encoder does not cast."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        def scaled(space: gym.spaces.Box) -> gym.spaces.Box:
            return gym.spaces.Box(0.0, 1.0, space.shape, np.float32)

        # A multi-agent pipeline sees one Dict holding every agent's space.
        if isinstance(input_observation_space, gym.spaces.Dict):
            return gym.spaces.Dict({a: scaled(s) for a, s in input_observation_space.items()})
        return scaled(input_observation_space)

    def preprocess(self, observation, episode):
        return observation.astype(np.float32) / 255.0


def _engine_pids() -> set[int]:
    """Running ViZDoom engines of this interpreter's vizdoom package (not other suites')."""
    engine = os.path.join(os.path.dirname(vizdoom.__file__), "vizdoom")
    pids = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0].decode()
        except (OSError, ValueError):
            continue
        if argv0 == engine:
            pids.add(int(entry))
    return pids


@pytest.fixture
def ray_session(tmp_path, monkeypatch):
    # Every Algorithm makes a log folder under ~/ray_results: keep it in the test's tmp_path.
    monkeypatch.setattr("ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH", str(tmp_path))
    before = _engine_pids()
    # Ray's sockets and logs in a folder of the test's (its default, /tmp/ray, keeps every
    # session's); a short path, since a Unix socket path has at most 107 bytes.
    temp = tempfile.mkdtemp(prefix="sfr")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    try:
        yield
    finally:
        try:
            while _MADE:
                _MADE.pop().close()
        finally:
            ray.shutdown()
            shutil.rmtree(temp, ignore_errors=True)
    left = _engine_pids() - before
    assert not left, f"ViZDoom engines still running after the test: {sorted(left)}"


def _train(config: PPOConfig, module_id: str) -> list[dict]:
    algo = config.build_algo()
    try:
        # The CNN sees 64x64 pictures of 3 channels. (Channels first, (3, 64, 64), also trains
        # without an error, RLlib taking it for a 3-pixel-high image of 64 channels.)
        assert algo.get_module(module_id).observation_space.shape == (64, 64, 3)
        return [algo.train() for _ in range(ITERATIONS)]
    finally:
        algo.stop()


def _check_trained(results: list[dict], module_id: str) -> dict:
    """What a user reads in each iteration's result; returns the last ``env_runners`` block."""
    for result in results:
        loss = result["learners"][module_id]["policy_loss"]
        assert math.isfinite(float(loss)), f"policy loss {loss!r}"
    runners = results[-1]["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= ITERATIONS * BATCH
    assert runners["num_episodes_lifetime"] >= 1  # episodes ended and the env was reset
    assert math.isfinite(runners["episode_return_mean"])
    return runners


def test_ppo_trains_on_doom_basic(ray_session) -> None:
    register_env("sf_basic", _basic_env)
    config = (
        PPOConfig()
        .environment("sf_basic")
        .env_runners(num_env_runners=0, rollout_fragment_length=BATCH)
        .training(**TINY_PPO)
    )
    _check_trained(_train(config, "default_policy"), "default_policy")


def test_ppo_trains_one_shared_policy_on_a_duel(ray_session) -> None:
    register_env("sf_duel", _duel_env)
    config = (
        PPOConfig()
        .environment("sf_duel")
        .env_runners(
            num_env_runners=0,
            rollout_fragment_length=BATCH,
            env_to_module_connector=lambda env, spaces, device: ScaleScreens(),
        )
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *_, **__: "shared")
        .training(**TINY_PPO)
    )
    results = _train(config, "shared")
    runners = _check_trained(results, "shared")
    # Both players fed the one policy; no other module was trained.
    steps = runners["num_agent_steps_sampled_lifetime"]
    assert set(steps) == {"player_0", "player_1"} and min(steps.values()) > 0
    assert set(results[-1]["learners"]) == {"shared", "__all_modules__"}
