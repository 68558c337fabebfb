from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from sf_train.model.gru import unroll

T, B, F, H = 6, 3, 10, 7


def _cell_loop(cell: nn.GRUCell, x, h, keep):
    outputs = []
    for t in range(len(x)):
        h = cell(x[t], h * keep[t])
        outputs.append(h)
    return torch.stack(outputs)


@pytest.fixture
def case():
    torch.manual_seed(3)
    cell = nn.GRUCell(F, H).double()
    x = torch.randn(T, B, F, dtype=torch.double, requires_grad=True)
    h = torch.randn(B, H, dtype=torch.double, requires_grad=True)
    keep = torch.ones(T, B, 1, dtype=torch.double)
    keep[2, 1] = keep[4, 0] = keep[5, 2] = 0.0  # episodes start there
    return cell, x, h, keep


def test_states_and_gradients_equal_those_of_the_cell_step_by_step(case):
    cell, x, h, keep = case
    expected = _cell_loop(cell, x, h, keep)
    outputs, last = unroll(cell, x, h, keep)
    torch.testing.assert_close(outputs, expected)
    torch.testing.assert_close(last, expected[-1])

    weights = torch.randn_like(expected)
    inputs = [x, h, *cell.parameters()]
    expected_grads = torch.autograd.grad((expected * weights).sum(), inputs)
    grads = torch.autograd.grad((outputs * weights).sum(), inputs)
    for name, got, want in zip(
        ["x", "h", *dict(cell.named_parameters())], grads, expected_grads, strict=True
    ):
        torch.testing.assert_close(got, want, msg=f"gradient of {name}")


def test_gradients_pass_the_numerical_check(case):
    cell, x, h, keep = case
    names = [name for name, _ in cell.named_parameters()]

    def outputs(x, h, *weights):
        # unroll reads only the cell's four parameters
        return unroll(SimpleNamespace(**dict(zip(names, weights, strict=True))), x, h, keep)[0]

    weights = [p.detach().clone().requires_grad_() for p in cell.parameters()]
    assert torch.autograd.gradcheck(outputs, (x, h, *weights))


def test_under_bfloat16_autocast_states_are_bfloat16_and_gradients_take_their_inputs_dtype():
    cell = nn.GRUCell(F, H)
    x = torch.randn(T, B, F, requires_grad=True)
    h = torch.zeros(B, H, requires_grad=True)
    with torch.autocast("cpu", torch.bfloat16):
        outputs, _ = unroll(cell, x, h, torch.ones(T, B, 1, dtype=torch.bfloat16))
    assert outputs.dtype == torch.bfloat16
    outputs.float().sum().backward()
    assert x.grad.dtype == h.grad.dtype == torch.float32
    assert all(p.grad.dtype == torch.float32 for p in cell.parameters())
