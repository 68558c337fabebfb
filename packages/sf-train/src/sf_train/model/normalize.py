"""Running mean / standard deviation, kept as module buffers so it is saved in state_dict."""

from __future__ import annotations

import math

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
        # forward()'s scale and shift, kept until the statistics change: a sampler normalises
        # a few screens per step with statistics that change once per published update.
        # Held with the buffers it was computed from and their versions at the time.
        self._affine: tuple[Tensor, Tensor, tuple[object, ...], Tensor, Tensor] | None = None

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
            batch_mean, batch_var, n = _byte_entry_moments(x, self.shape)
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
        channels_last = (
            len(self.shape) == 3
            and x.dim() == 4
            and x.is_contiguous(memory_format=torch.channels_last)
        )
        scale, shift = self._scale_and_shift(dtype, channels_last)
        # Screens are tens of megabytes a training batch: scale, shift and clip the one copy
        # that the cast makes, in place (less than half the time of four new tensors).
        y = x * scale if x.dtype == dtype else x.to(dtype).mul_(scale)
        return y.add_(shift).clamp_(-self.clip, self.clip)

    def _scale_and_shift(self, dtype: torch.dtype, channels_last: bool) -> tuple[Tensor, Tensor]:
        """``1 / sqrt(var + eps)`` and ``-mean`` times it in ``dtype``, computed again only
        when a statistic has changed: in place (update, load_state_dict, a publish's copy_
        bump the buffers' versions) or replaced (the cache holds the buffers themselves)."""
        settings = (self.mean._version, self.var._version, dtype, channels_last)
        cached = self._affine
        if cached and cached[0] is self.mean and cached[1] is self.var and cached[2] == settings:
            return cached[3], cached[4]
        scale = torch.rsqrt(self.var + self.eps)
        shift = (-self.mean * scale).to(dtype)
        scale = scale.to(dtype)
        if channels_last:
            # Per-pixel statistics laid out as the channels-last screens they meet: elementwise
            # kernels over matching strides run twice as fast as over mixed ones.
            scale, shift = (
                t[None].contiguous(memory_format=torch.channels_last) for t in (scale, shift)
            )
        self._affine = (self.mean, self.var, settings, scale, shift)
        return scale, shift


def _byte_moments(x: Tensor) -> tuple[Tensor, Tensor, int]:
    """Mean, variance and count of a uint8 tensor from its 256-bin histogram: exact, and one
    pass over the bytes instead of a float64 copy (screens are millions of bytes a batch)."""
    counts = torch.bincount(x.reshape(-1), minlength=256).to(torch.float64)
    values = torch.arange(256, dtype=torch.float64, device=x.device)
    n = x.numel()
    mean = (counts * values).sum() / n
    var = (counts * (values - mean) ** 2).sum() / n
    return mean, var, n


#: Rows summed in float32 at a time: 256 squares of bytes add up to less than 2**24, so every
#: partial sum is an integer float32 holds exactly, in whatever order the sum is taken.
_EXACT_ROWS = 256


def _byte_entry_moments(x: Tensor, shape: tuple[int, ...]) -> tuple[Tensor, Tensor, int]:
    """Per-entry mean and variance of uint8 rows (any leading shape, trailing ``shape``):
    sums of values and of squares as matrix-vector products over blocks of rows, exact, added
    in float64. For a batch of screens this is 4x faster than ``var_mean`` over the rows."""
    rows = x.reshape(-1, math.prod(shape))
    sums = torch.zeros(rows.shape[1], dtype=torch.float64, device=x.device)
    squares = torch.zeros_like(sums)
    for block in rows.split(_EXACT_ROWS):
        values = block.float()
        ones = torch.ones(1, len(values), device=x.device)
        sums += (ones @ values)[0]
        squares += (ones @ values.mul_(values))[0]
    n = rows.shape[0]
    mean = sums / n
    return mean.reshape(shape), (squares / n - mean**2).reshape(shape), n
