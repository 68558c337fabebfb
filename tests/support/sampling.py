"""What the sampler tests share: a tiny model, the check that a rollout's columns are each one
env's own replayable steps, and a toy env that keeps the actions it was sent."""

from __future__ import annotations

import numpy as np
import torch

from sf_train.config.schema import ModelConfig
from sf_train.model.network import ActorCritic

from .toy_env import ToyVecEnv

__all__ = ["TINY", "ActionRecordingToyVecEnv", "assert_aligned_and_replayable", "bright_side"]

TINY = ModelConfig(
    conv_channels=(4,), conv_kernels=(4,), conv_strides=(2,), fc_size=16, rnn=True, rnn_size=8
)


def bright_side(screen: torch.Tensor) -> torch.Tensor:
    """1 where the bright pixel is in the right half of the (C, H, W) screens."""
    cols = screen.flatten(-3, -2).amax(-2).argmax(-1)
    return (cols >= screen.shape[-1] // 2).long()


def assert_aligned_and_replayable(model: ActorCritic, buf) -> None:
    """Every column is one env's own steps: rewards pay the actions taken on their
    observations, and replaying the trajectories from their stored recurrent states and
    episode resets reproduces the sampled log-probs and values."""
    T, played = buf.T, buf.valid  # padding (after a row left for another policy) aside
    screen = buf.obs["screen"] if isinstance(buf.obs, dict) else buf.obs
    expected = (buf.actions == bright_side(screen[:T])).float()
    torch.testing.assert_close(buf.rewards[played], expected[played])
    with torch.no_grad():
        out = model.forward_sequence(buf.obs, buf.rnn_state, buf.resets())
    log_probs = model.action_dist.log_prob(out.logits[:T], buf.actions)
    torch.testing.assert_close(log_probs[played], buf.log_probs[played], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.values[:T][played], buf.values[played], atol=1e-5, rtol=1e-5)


class ActionRecordingToyVecEnv(ToyVecEnv):
    """Keeps every action sent, by env id."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: dict[int, list[int]] = {}

    def send(self, actions, env_ids):
        for a, e in zip(np.asarray(actions).tolist(), np.asarray(env_ids).tolist(), strict=True):
            self.sent.setdefault(e, []).append(a)
        super().send(actions, env_ids)
