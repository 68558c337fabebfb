"""Preallocated storage for one batch of ``T``-step trajectories, time-major ``[T, B]``.

The sampler writes each env's steps into a column; the learner reads the whole batch. Nothing
is allocated per step. On CUDA hosts the (CPU) tensors are pinned so the copy to the GPU can
overlap with compute.
"""

from __future__ import annotations

from typing import cast

import torch
from gymnasium import spaces
from torch import Tensor

from sf_train.model.network import Obs

__all__ = ["TrajectoryBuffer"]


def _alloc(shape: tuple[int, ...], dtype: torch.dtype, pin: bool) -> Tensor:
    return torch.zeros(shape, dtype=dtype, pin_memory=pin)


def _shape(space: spaces.Space) -> tuple[int, ...]:
    # A Box's shape (gymnasium types a Space's as optional).
    return cast(tuple[int, ...], space.shape)


def _torch_dtype(space: spaces.Space) -> torch.dtype:
    return torch.uint8 if space.dtype == "uint8" else torch.float32


class TrajectoryBuffer:
    """One learner batch: ``B`` trajectories of ``T`` steps.

    Attributes:
        obs: Observations ``[T + 1, B, ...]``; row ``T`` is the observation after the last
            step, whose value bootstraps V-trace. A tensor, or a dict for Dict spaces.
        actions: Actions taken, ``[T, B, *action_shape]`` int64.
        log_probs: Behaviour-policy log-probs of the actions, ``[T, B]``.
        values: Behaviour-time value estimates, ``[T, B]`` (for value clipping).
        rewards: Rewards, ``[T, B]``.
        dones: Whether the episode ended after step ``t`` (terminated or truncated), ``[T, B]``.
        truncation_values: Where a time limit cut the episode after step ``t``, the behaviour
            policy's value of the final observation (the bootstrap that the cut hides), else 0,
            ``[T, B]``.
        policy_versions: Version of the policy that chose each action, ``[T, B]`` int64.
        valid: Whether step ``t`` was played, ``[T, B]``; false only in the padding after an
            episode whose row went to another policy of a population.
        rnn_state: Recurrent state before step 0, ``[B, H]`` (already zeroed at episode starts).
        policy: The policy (of a population) whose trajectories it holds.
    """

    def __init__(
        self,
        T: int,
        B: int,
        observation_space: spaces.Space,
        action_shape: tuple[int, ...],
        rnn_size: int,
        pin_memory: bool | None = None,
        policy: int = 0,
    ) -> None:
        pin = torch.cuda.is_available() if pin_memory is None else pin_memory
        self.T, self.B = T, B
        self.policy = policy
        self.obs: Obs
        if isinstance(observation_space, spaces.Dict):
            self.obs = {
                k: _alloc((T + 1, B, *_shape(s)), _torch_dtype(s), pin)
                for k, s in observation_space.spaces.items()
            }
        else:
            self.obs = _alloc((T + 1, B, *_shape(observation_space)), torch.uint8, pin)
        self.actions = _alloc((T, B, *action_shape), torch.int64, pin)
        self.log_probs = _alloc((T, B), torch.float32, pin)
        self.values = _alloc((T, B), torch.float32, pin)
        self.rewards = _alloc((T, B), torch.float32, pin)
        self.dones = _alloc((T, B), torch.bool, pin)
        self.truncation_values = _alloc((T, B), torch.float32, pin)
        self.policy_versions = _alloc((T, B), torch.int64, pin)
        self.valid = torch.ones((T, B), dtype=torch.bool, pin_memory=pin)
        self.rnn_state = _alloc((B, rnn_size), torch.float32, pin)

    def resets(self) -> Tensor:
        """Episode starts for the ``T + 1`` observation rows, ``[T + 1, B]`` bool.

        Row 0 is false because ``rnn_state`` is already zeroed where an episode starts.
        """
        return torch.cat([torch.zeros(1, self.B, dtype=torch.bool), self.dones], dim=0)

    def to(self, device: torch.device) -> dict[str, Tensor | dict[str, Tensor]]:
        """All fields on ``device`` as a dict (non-blocking from pinned memory)."""

        def move(x: Tensor) -> Tensor:
            return x.to(device, non_blocking=True)

        obs = (
            {k: move(v) for k, v in self.obs.items()}
            if isinstance(self.obs, dict)
            else move(self.obs)
        )
        fields = (
            "actions",
            "log_probs",
            "values",
            "rewards",
            "dones",
            "truncation_values",
            "policy_versions",
            "valid",
        )
        out: dict[str, Tensor | dict[str, Tensor]] = {f: move(getattr(self, f)) for f in fields}
        out["obs"] = obs
        out["rnn_state"] = move(self.rnn_state)
        out["resets"] = move(self.resets())
        return out
