"""Reward shaping: each policy's weights over the change of the env's game variables, added to
the rewards of its steps. :class:`Shaping` is held by the :class:`~sf_train.sampling.sampler.Sampler`,
which asks it for every ``recv()``'s shaping rewards; it keeps what shaping needs between
steps (each env's variables after its last step) and what it earned (each env's shaping
reward this episode), so the sampler's stepping stays free of it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["Shaping"]


class Shaping:
    """Shaping rewards of a vector env's steps, by the policy acting for each env.

    Args:
        num_policies: Policies that may have weights (none has any until :meth:`set_weights`).
        num_envs: Envs (rows) of the vector env.

    Attributes:
        episode_returns: Each env's shaping reward in its current episode so far.
    """

    def __init__(self, num_policies: int, num_envs: int) -> None:
        self._weights: list[np.ndarray | None] = [None] * num_policies
        self._num_envs = num_envs
        self._variables_now: np.ndarray | None = None  # each env's, after its last step
        self.episode_returns = np.zeros(num_envs, dtype=np.float64)

    @property
    def active(self) -> bool:
        """Whether any policy has weights (else :meth:`rewards` need not be asked)."""
        return any(w is not None for w in self._weights)

    def set_weights(self, policy: int, weights: np.ndarray | None) -> None:
        """Adds ``weights @ (change of the env's game variables)`` to every reward of
        ``policy``'s steps (``None``: no shaping). The env must report its game variables
        every step (``info["variables"]``) and at episode ends (``info["final_info"]``), as
        the sf-envs engine does."""
        self._weights[policy] = None if weights is None else np.asarray(weights, np.float64)

    def rewards(
        self,
        info: dict[str, Any],
        env_ids: np.ndarray,
        fresh: np.ndarray,
        by_policy: Iterable[tuple[int, np.ndarray]],
    ) -> np.ndarray:
        """Per recv() row, the shaping reward of its last step under its policy's weights,
        from the change of the env's game variables (``fresh``: rows showing their env's first
        observation, which follows no step; ``by_policy``: the rows grouped by the policy
        acting for them), also added to :attr:`episode_returns`. The sampler asks only while
        :attr:`active`, which spares unshaped runs the work.

        Raises:
            ValueError: If the env does not report its game variables, or a policy's weights
                do not match their number.
        """
        if "variables" not in info:
            raise ValueError(
                "reward shaping needs the env's game variables every step (info['variables']), "
                "which this env does not report: drop the shaping weights or use an sf-envs env"
            )
        now = np.asarray(info["variables"], dtype=np.float64)
        if self._variables_now is None:
            self._variables_now = np.zeros((self._num_envs, now.shape[1]))
        ended = np.asarray(info.get("_final_info", np.zeros(len(env_ids), bool)), dtype=bool)
        after = now.copy()
        if ended.any():
            after[ended] = np.asarray(info["final_info"]["variables"])[ended]
        change = np.where(fresh[:, None], 0.0, after - self._variables_now[env_ids])
        self._variables_now[env_ids] = now
        rewards = np.zeros(len(env_ids))
        for policy, rows in by_policy:
            weights = self._weights[policy]
            if weights is not None:
                if len(weights) != change.shape[1]:
                    raise ValueError(
                        f"policy {policy} has {len(weights)} shaping weights for an env of "
                        f"{change.shape[1]} game variables: give one weight per variable"
                    )
                rewards[rows] = change[rows] @ weights
        self.episode_returns[env_ids] += rewards
        return rewards

    def end_episodes(self, env_ids: np.ndarray) -> None:
        """Starts the shaping returns of envs whose episodes ended anew."""
        self.episode_returns[env_ids] = 0.0
