"""Acting with int8 weights (``--precision int8``): an acting copy's fully connected layer and
GRU as dynamically quantized int8 matrix products.

A sampler acts on a handful of rows per call, so these products read their whole weight
matrices for a few rows each: for Sample Factory's model (FC 2304x512, GRU 512) that is 11 MB
of float32 per call, and memory bandwidth, not arithmetic, sets their time. Weights quantized
per output channel to int8 are a quarter of those bytes, and the quantized engine (fbgemm on
x86) multiplies them with inputs it quantizes on the fly. The learner keeps float32 weights;
an acting copy gets int8 weights packed anew whenever new ones are published. The actions'
recorded log-probabilities are those of the int8 policy that acted, so V-trace corrects for
the rounding as for any policy lag.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from sf_train.config.schema import ConfigError

__all__ = ["Int8Layers", "check_int8_support"]


def check_int8_support(device: torch.device) -> None:
    """Raises :class:`~sf_train.config.schema.ConfigError` naming the fix where int8 acting cannot
    run (the CLI prints it as a user error): off the CPU, or in a
    torch build without the quantized engine's dynamic linear (torch marks its quantized
    tensors deprecated; a release that removes them is refused here, not mid-run)."""
    if device.type != "cpu":
        raise ConfigError(
            [
                f"precision 'int8' quantizes the acting copy for CPUs; this run acts on "
                f"{device}: use --precision float32 (or bfloat16) on a GPU"
            ]
        )
    try:
        _linear(torch.ones(1, 1), _pack(torch.ones(1, 1), torch.zeros(1)))
    except (AttributeError, RuntimeError) as e:
        raise ConfigError(
            [
                f"precision 'int8' needs torch's quantized dynamic linear, which this torch "
                f"build ({torch.__version__}, engine {torch.backends.quantized.engine!r}) "
                f"cannot run ({e}): use --precision float32"
            ]
        ) from e


def _pack(weight: Tensor, bias: Tensor) -> object:
    """``weight`` quantized symmetrically per output row to int8, packed with ``bias`` for the
    quantized engine."""
    weight = weight.detach().float()
    scales = (weight.abs().amax(dim=1) / 127.0).clamp_min(1e-12).double()
    zero_points = torch.zeros(weight.shape[0], dtype=torch.int64)
    with warnings.catch_warnings():
        # Quantized tensors are deprecated in torch; check_int8_support refuses a build
        # without them, and this warning would otherwise repeat at every publish.
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        qweight = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(qweight, bias.detach().float())


def _linear(x: Tensor, packed: object) -> Tensor:
    # reduce_range: inputs are quantized to 7 bits, which keeps fbgemm's AVX2 kernels from
    # saturating their 16-bit intermediate sums.
    return torch.ops.quantized.linear_dynamic(x.float().contiguous(), packed, True)


class Int8Layers:
    """The FC layer's and the GRU's forward with int8 weights packed from float layers (the
    GRU's gate equations in float32 after its two products). Packing takes tens of
    milliseconds for Sample Factory's model, so a publisher builds new ones from the learner's
    layers before it takes the acting lock and swaps them in under it."""

    def __init__(self, fc: nn.Linear, cell: nn.GRUCell | None) -> None:
        self._fc = _pack(fc.weight, fc.bias)
        self._cell = (
            None
            if cell is None
            else (_pack(cell.weight_ih, cell.bias_ih), _pack(cell.weight_hh, cell.bias_hh))
        )

    def fc(self, x: Tensor) -> Tensor:
        return _linear(x, self._fc)

    def cell(self, x: Tensor, h: Tensor) -> Tensor:
        if self._cell is None:
            raise RuntimeError("these int8 layers were packed without a GRU")
        h = h.float()
        reset_i, update_i, new_i = _linear(x, self._cell[0]).chunk(3, dim=-1)
        reset_h, update_h, new_h = _linear(h, self._cell[1]).chunk(3, dim=-1)
        reset = torch.sigmoid(reset_i + reset_h)
        update = torch.sigmoid(update_i + update_h)
        new = torch.tanh(new_i + reset * new_h)
        return new + update * (h - new)
