"""V-trace off-policy value targets and policy-gradient advantages.

Reference: L. Espeholt et al., "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures", ICML 2018, section 4 (equation 1 and the policy-gradient term).

All tensors are time-major: ``[T, B]`` where ``T`` is the trajectory length and ``B`` the number
of trajectories. Time-major keeps the backward recursion a loop over the first (contiguous) axis.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["VTraceReturns", "vtrace"]


class VTraceReturns(NamedTuple):
    """Result of :func:`vtrace`.

    Attributes:
        vs: V-trace value targets ``v_s``, shape ``[T, B]``.
        pg_advantages: Policy-gradient advantages
            ``min(rho_bar_pg, rho_s) * (r_s + gamma_s * v_{s+1} - V(x_s))``, shape ``[T, B]``.
    """

    vs: Tensor
    pg_advantages: Tensor


def _check_shapes(
    log_rhos: Tensor,
    discounts: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    truncation_bootstrap: Tensor | None,
) -> None:
    if values.dim() != 2:
        raise ValueError(
            f"values must be time-major [T, B], got shape {tuple(values.shape)}; "
            "transpose batch-major data with .transpose(0, 1)"
        )
    step_inputs = {"log_rhos": log_rhos, "discounts": discounts, "rewards": rewards}
    if truncation_bootstrap is not None:
        step_inputs["truncation_bootstrap"] = truncation_bootstrap
    for name, x in step_inputs.items():
        if x.shape != values.shape:
            raise ValueError(
                f"{name} has shape {tuple(x.shape)} but values has shape {tuple(values.shape)}; "
                "all [T, B] inputs must have the same shape"
            )
    if bootstrap_value.shape != values.shape[1:]:
        raise ValueError(
            f"bootstrap_value has shape {tuple(bootstrap_value.shape)} but must be [B] = "
            f"{tuple(values.shape[1:])}: the value of the observation after the last step"
        )


def vtrace(
    log_rhos: Tensor,
    discounts: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float | None = None,
    truncation_bootstrap: Tensor | None = None,
    trace_lambda: float = 1.0,
) -> VTraceReturns:
    """Computes V-trace targets and advantages for a batch of trajectories.

    With ``delta_s = min(rho_bar, rho_s) * (r_s + b_s + gamma_s V(x_{s+1}) - V(x_s))`` the
    targets follow the backward recursion
    ``v_s - V(x_s) = delta_s + gamma_s * lambda * min(c_bar, rho_s) * (v_{s+1} - V(x_{s+1}))``
    with ``v_T = V(x_T) = bootstrap_value``. Episode ends are expressed through ``discounts``
    (``gamma * (1 - done)``), which cuts both the bootstrap and the trace at the boundary.

    Terminated and truncated episodes differ in ``b_s`` (``truncation_bootstrap``): a
    termination ends the task, so nothing follows it (``b_s = 0``); a time limit ends only the
    episode, so the cut step still earns the discounted value of the observation it led to,
    ``b_s = gamma * V(x_final)`` (Pardo et al. 2018, "Time Limits in Reinforcement Learning"),
    while the trace stays cut (``x_{s+1}`` is the next episode's first observation).

    The function is differentiable, but targets are constants for the learner: pass detached
    ``values``/``bootstrap_value``/``log_rhos`` (or call it under ``torch.no_grad()``).

    Args:
        log_rhos: ``log pi(a_s|x_s) - log mu(a_s|x_s)``, target minus behaviour log-probs,
            ``[T, B]``.
        discounts: ``gamma * (1 - done_s)`` where ``done_s`` marks the episode ending after
            step ``s``, ``[T, B]``.
        rewards: Rewards ``r_s``, ``[T, B]``.
        values: Value estimates ``V(x_s)`` under the current value function, ``[T, B]``.
        bootstrap_value: ``V(x_T)``, the value of the observation after the last step, ``[B]``.
        rho_bar: Truncation of the importance weights in ``delta_s`` (the fixed point's
            policy); ``float("inf")`` disables it.
        c_bar: Truncation of the trace coefficients (the contraction speed);
            ``float("inf")`` disables it.
        pg_rho_bar: Truncation of the importance weight in the policy-gradient advantage;
            ``None`` uses ``rho_bar``.
        truncation_bootstrap: ``b_s``: ``gamma * V(x_final)`` where a time limit truncated
            the episode after step ``s`` (its ``discounts_s`` is 0), 0 elsewhere, ``[T, B]``;
            ``None`` treats every episode end as a termination.
        trace_lambda: ``lambda`` in the trace coefficients (Espeholt et al., remark 2): on
            policy the targets are lambda-returns, as in GAE; below 1 it trades the bias of
            the value estimate for less variance of long traces.

    Returns:
        The targets ``vs`` and advantages ``pg_advantages``, both ``[T, B]``.

    Raises:
        ValueError: If the shapes do not follow the ``[T, B]`` / ``[B]`` contract.

    Example:
        >>> T, B = 4, 2
        >>> out = vtrace(torch.zeros(T, B), torch.full((T, B), 0.9), torch.ones(T, B),
        ...              torch.zeros(T, B), torch.zeros(B))
        >>> out.vs.shape
        torch.Size([4, 2])
    """
    _check_shapes(log_rhos, discounts, rewards, values, bootstrap_value, truncation_bootstrap)
    if truncation_bootstrap is not None:
        # b_s enters both one-step targets exactly as a reward would: fold it in once.
        rewards = rewards + truncation_bootstrap
    if pg_rho_bar is None:
        pg_rho_bar = rho_bar
    rhos = torch.exp(log_rhos)
    clipped_rhos = torch.clamp(rhos, max=rho_bar)
    cs = trace_lambda * torch.clamp(rhos, max=c_bar)

    values_tp1 = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], dim=0)
    deltas = clipped_rhos * (rewards + discounts * values_tp1 - values)

    # Backward recursion on v_s - V(x_s); a Python loop over T is cheap next to the network.
    vs_minus_v = torch.empty_like(values)
    acc = torch.zeros_like(bootstrap_value)
    for s in range(values.shape[0] - 1, -1, -1):
        acc = deltas[s] + discounts[s] * cs[s] * acc
        vs_minus_v[s] = acc
    vs = values + vs_minus_v

    vs_tp1 = torch.cat([vs[1:], bootstrap_value.unsqueeze(0)], dim=0)
    clipped_pg_rhos = torch.clamp(rhos, max=pg_rho_bar)
    pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_tp1 - values)
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages)
