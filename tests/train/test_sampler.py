from __future__ import annotations

import numpy as np
import pytest
import torch

from sf_train.config import ModelConfig
from sf_train.model import ActorCritic
from sf_train.sampler import Sampler
from sf_train.toy_env import ToyVecEnv

TINY = ModelConfig(
    conv_channels=(4,), conv_kernels=(4,), conv_strides=(2,), fc_size=16, rnn=True, rnn_size=8
)


def bright_side(screen: torch.Tensor) -> torch.Tensor:
    """1 where the bright pixel is in the right half of the (C, H, W) screens."""
    cols = screen.flatten(-3, -2).amax(-2).argmax(-1)
    return (cols >= screen.shape[-1] // 2).long()


@pytest.mark.parametrize(
    "batch_size,shuffle,measurements", [(6, False, False), (3, True, False), (2, True, True)]
)
def test_batches_are_aligned_and_replayable(batch_size, shuffle, measurements):
    venv = ToyVecEnv(6, batch_size, episode_length=5, measurements=measurements, shuffle=shuffle)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    T = 8
    sampler = Sampler(venv, model, T=T, B=6, device=torch.device("cpu"))
    sampler.start(seed=1)
    try:
        for _ in range(4):
            rollout = sampler.collect(policy_version=3)
            buf = rollout.buffer
            screen = buf.obs["screen"] if measurements else buf.obs
            # The reward of step t pays the action taken on observation t.
            expected = (buf.actions == bright_side(screen[:T])).float()
            torch.testing.assert_close(buf.rewards, expected)
            assert (buf.policy_versions == 3).all()
            # Replaying the trajectories reproduces the sampled log-probs and values, which
            # checks the stored recurrent states and episode resets.
            with torch.no_grad():
                out = model.forward_sequence(buf.obs, buf.rnn_state, buf.resets())
            log_probs = model.action_dist.log_prob(out.logits[:T], buf.actions)
            torch.testing.assert_close(log_probs, buf.log_probs, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(out.values[:T], buf.values, atol=1e-5, rtol=1e-5)
            assert (rollout.episode_lengths == 5).all()
            sampler.release(buf)
    finally:
        venv.close()


def test_episode_ends_every_episode_length_steps():
    venv = ToyVecEnv(4, episode_length=3)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=6, B=4, device=torch.device("cpu"))
    sampler.start(seed=0)
    rollout = sampler.collect(policy_version=0)
    expected = torch.tensor([False, False, True] * 2).unsqueeze(1).expand(6, 4)
    assert torch.equal(rollout.buffer.dones, expected)
    assert rollout.env_steps == 24
    assert len(rollout.episode_returns) == 8
    np.testing.assert_array_equal(rollout.episode_lengths, 3)


def test_unreleased_buffers_are_reported():
    venv = ToyVecEnv(2)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=2, B=2, device=torch.device("cpu"), num_buffers=2)
    sampler.start(seed=0)
    sampler.collect(0)
    with pytest.raises(RuntimeError, match="release"):
        sampler.collect(0)
        sampler.collect(0)
