"""APPO loss pieces as pure functions.

The learner combines them as ``policy_loss + value_coef * value_loss - entropy_coef * entropy``.
Every mean accepts an optional boolean ``mask`` so that samples excluded by the policy-lag
bound (:func:`policy_lag_mask`) count neither in the numerator nor in the denominator.

Reference for the clipped surrogate: J. Schulman et al., "Proximal Policy Optimization
Algorithms", 2017; for APPO (PPO clipping on V-trace advantages): A. Petrenko et al.,
"Sample Factory", ICML 2020.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "AdvantageMoments",
    "entropy_bonus",
    "masked_mean",
    "normalize_advantages",
    "policy_lag_mask",
    "policy_loss",
    "value_loss",
]


def masked_mean(x: Tensor, mask: Tensor | None = None) -> Tensor:
    """Mean of ``x`` over the entries where ``mask`` is true (all entries when ``None``).

    An all-false mask gives 0 rather than NaN, so a batch made entirely of stale samples
    produces no update instead of poisoning the weights.
    """
    if mask is None:
        return x.mean()
    if mask.shape != x.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)} but x has {tuple(x.shape)}")
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1.0)


def policy_lag_mask(
    policy_versions: Tensor, current_version: int, max_policy_lag: int
) -> tuple[Tensor, Tensor]:
    """Marks the samples recent enough to learn from.

    Args:
        policy_versions: Version of the policy that produced each sample, any shape.
        current_version: Version of the weights being trained.
        max_policy_lag: Samples whose lag ``current_version - version`` exceeds this are
            excluded; their importance weights would be too far from 1 to be useful.

    Returns:
        ``(mask, lag)``: a boolean mask (true = keep) and the integer lag, same shape as
        ``policy_versions``.
    """
    if max_policy_lag < 0:
        raise ValueError(f"max_policy_lag must be >= 0, got {max_policy_lag}")
    lag = current_version - policy_versions
    return lag <= max_policy_lag, lag


def normalize_advantages(
    advantages: Tensor, mask: Tensor | None = None, eps: float = 1e-8
) -> Tensor:
    """Standardises advantages to zero mean, unit variance over the (masked) batch.

    Keeps the policy-gradient scale independent of the reward scale. The statistics use only
    the masked entries; the masked-out entries are transformed too but are ignored by the loss.
    """
    mean = masked_mean(advantages, mask)
    var = masked_mean((advantages - mean) ** 2, mask)
    return (advantages - mean) / (var.sqrt() + eps)


class AdvantageMoments:
    """Standardises advantages by their mean and second moment averaged over recent
    minibatches (an exponential moving average), not by each minibatch's own.

    Where a reward is rare, most minibatches hold none: their advantages are the critic's small
    errors, and standardising each minibatch alone blows those up into updates as large as the
    ones a success gives. Running moments keep such minibatches small beside the ones that hold
    a success.

    Args:
        decay: Weight of the past in each update; 0.99 averages about the last 100 minibatches.
        eps: Added to the standard deviation, guarding constant advantages.
    """

    def __init__(self, decay: float = 0.99, eps: float = 1e-8) -> None:
        self.decay = decay
        self.eps = eps
        self.mean: Tensor | None = None
        self.square: Tensor | None = None

    def normalize(self, advantages: Tensor, mask: Tensor | None = None) -> Tensor:
        """Merges the (masked) minibatch's moments into the running ones, then standardises
        ``advantages`` by the running ones."""
        mean = masked_mean(advantages, mask).detach()
        square = masked_mean(advantages**2, mask).detach()
        if self.mean is None or self.square is None:
            self.mean, self.square = mean, square
        else:  # moments restored from a checkpoint may sit on another device
            self.mean = self.decay * self.mean.to(mean.device) + (1.0 - self.decay) * mean
            self.square = self.decay * self.square.to(mean.device) + (1.0 - self.decay) * square
        var = (self.square - self.mean**2).clamp(min=0.0)
        return (advantages - self.mean) / (var.sqrt() + self.eps)

    def state_dict(self) -> dict[str, Tensor]:
        """The running moments (empty before the first minibatch), for checkpoints."""
        if self.mean is None or self.square is None:
            return {}
        return {"mean": self.mean.clone(), "square": self.square.clone()}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        """Restores what :meth:`state_dict` gave."""
        self.mean, self.square = state.get("mean"), state.get("square")


def policy_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    clip_ratio: float,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """PPO clipped surrogate on (V-trace) advantages.

    ``L = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))`` with
    ``ratio = exp(log_probs - old_log_probs)``; ``old_log_probs`` are the behaviour policy's.

    Args:
        log_probs: Log-probs of the taken actions under the current policy (with gradient).
        old_log_probs: Log-probs under the behaviour policy (constants).
        advantages: Advantages (constants), same shape.
        clip_ratio: ``eps``; the ratio is clipped to ``[1 - eps, 1 + eps]``.
        mask: Optional boolean mask of the samples to include.

    Returns:
        ``(loss, clip_fraction)``: the scalar loss and the fraction of samples whose ratio
        was clipped (a diagnostic, no gradient).
    """
    ratio = torch.exp(log_probs - old_log_probs)
    surrogate = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio) * advantages
    loss = -masked_mean(torch.min(surrogate, clipped), mask)
    with torch.no_grad():
        clip_fraction = masked_mean(((ratio - 1.0).abs() > clip_ratio).float(), mask)
    return loss, clip_fraction


def value_loss(
    values: Tensor,
    targets: Tensor,
    old_values: Tensor | None = None,
    clip_value: float | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Squared-error value loss, optionally clipped around the behaviour-time values.

    ``0.5 * mean((V - v_s)^2)``; with ``clip_value`` the pessimistic maximum of the plain and
    the clipped error, where the clipped prediction is ``old + clip(V - old, -c, c)``, which
    stops one batch from moving the value function far from where it was when sampling.

    Raises:
        ValueError: If ``clip_value`` is given without ``old_values``.
    """
    error = (values - targets) ** 2
    if clip_value is not None:
        if old_values is None:
            raise ValueError("clip_value needs old_values: pass the values recorded at sampling")
        clipped_values = old_values + torch.clamp(values - old_values, -clip_value, clip_value)
        error = torch.max(error, (clipped_values - targets) ** 2)
    return 0.5 * masked_mean(error, mask)


def entropy_bonus(entropy: Tensor, mask: Tensor | None = None) -> Tensor:
    """Mean policy entropy; the learner subtracts ``entropy_coef`` times this from the loss."""
    return masked_mean(entropy, mask)
