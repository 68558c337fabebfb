"""Running mean / standard deviation, kept as module buffers so it is saved in state_dict."""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["RunningMeanStd"]


class RunningMeanStd(nn.Module):
    """Normalises inputs by statistics accumulated over every batch seen so far.

    Batches are merged with the parallel-variance formula of Chan et al. (1979), so the
    result does not depend on how the data was split into batches. Statistics are float64 to
    stay exact over millions of samples; :meth:`forward` returns the input's dtype.

    Args:
        shape: Shape of one normalised entry (``()`` for a single scalar over all values).
        eps: Added to the variance before the square root, guarding constant inputs.
        clip: Normalised values are clipped to ``[-clip, clip]`` so outliers cannot
            saturate the network.
    """

    mean: Tensor
    var: Tensor
    count: Tensor

    def __init__(self, shape: tuple[int, ...] = (), eps: float = 1e-5, clip: float = 5.0) -> None:
        super().__init__()
        self.shape = tuple(shape)
        self.eps = eps
        self.clip = clip
        self.register_buffer("mean", torch.zeros(self.shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(self.shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merges the statistics of ``x`` (any leading shape, trailing ``shape``)."""
        if tuple(x.shape[x.dim() - len(self.shape) :]) != self.shape:
            raise ValueError(
                f"input of shape {tuple(x.shape)} does not end in the normalised shape {self.shape}"
            )
        if x.numel() == 0:
            return
        if x.dtype == torch.uint8 and not self.shape:
            batch_mean, batch_var, n = _byte_moments(x)
        elif x.dtype == torch.uint8:
            # Per-entry moments of bytes are exact enough in float32, at a quarter of the
            # memory traffic of a float64 copy of a batch of screens.
            x = x.reshape(-1, *self.shape).float()
            n = x.shape[0]
            batch_var, batch_mean = (m.double() for m in torch.var_mean(x, 0, correction=0))
        else:
            x = x.to(torch.float64).reshape(-1, *self.shape)
            n = x.shape[0]
            batch_mean = x.mean(0)
            batch_var = x.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * (n / total)
        m2 = self.var * self.count + batch_var * n + delta**2 * (self.count * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @property
    def std(self) -> Tensor:
        """``sqrt(var + eps)`` as float32."""
        return torch.sqrt(self.var + self.eps).float()

    def denormalize(self, x: Tensor) -> Tensor:
        """The inverse of :meth:`forward` without its clipping: ``x * std + mean``."""
        return x * self.std.to(x.dtype) + self.mean.to(x.dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Returns ``clip((x - mean) / sqrt(var + eps))`` in ``x``'s floating dtype."""
        dtype = x.dtype if x.is_floating_point() else torch.float32
        scale = torch.rsqrt(self.var + self.eps)
        shift = (-self.mean * scale).to(dtype)
        scale = scale.to(dtype)
        # Screens are tens of megabytes a training batch: scale, shift and clip the one copy
        # that the cast makes, in place (less than half the time of four new tensors).
        y = x * scale if x.dtype == dtype else x.to(dtype).mul_(scale)
        return y.add_(shift).clamp_(-self.clip, self.clip)


def _byte_moments(x: Tensor) -> tuple[Tensor, Tensor, int]:
    """Mean, variance and count of a uint8 tensor from its 256-bin histogram: exact, and one
    pass over the bytes instead of a float64 copy (screens are millions of bytes a batch)."""
    counts = torch.bincount(x.reshape(-1), minlength=256).to(torch.float64)
    values = torch.arange(256, dtype=torch.float64, device=x.device)
    n = x.numel()
    mean = (counts * values).sum() / n
    var = (counts * (values - mean) ** 2).sum() / n
    return mean, var, n
