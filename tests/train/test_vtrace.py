from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sf_train.vtrace import vtrace


def reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, rho_bar, c_bar):
    """Plain per-element loops over the definition in Espeholt et al. 2018, eq. (1)."""
    T, B = values.shape
    vs = np.zeros((T, B))
    adv = np.zeros((T, B))
    for b in range(B):
        v_ext = [*values[:, b], bootstrap[b]]
        for s in range(T):
            total = v_ext[s]
            for t in range(s, T):
                coef = 1.0
                for i in range(s, t):
                    coef *= discounts[i, b] * min(c_bar, math.exp(log_rhos[i, b]))
                rho_t = min(rho_bar, math.exp(log_rhos[t, b]))
                delta = rho_t * (rewards[t, b] + discounts[t, b] * v_ext[t + 1] - v_ext[t])
                total += coef * delta
            vs[s, b] = total
        for s in range(T):
            v_next = vs[s + 1, b] if s + 1 < T else bootstrap[b]
            rho_s = min(rho_bar, math.exp(log_rhos[s, b]))
            adv[s, b] = rho_s * (rewards[s, b] + discounts[s, b] * v_next - values[s, b])
    return vs, adv


def random_inputs(T=7, B=5, seed=0):
    rng = np.random.default_rng(seed)
    log_rhos = rng.normal(0.0, 0.7, (T, B))
    dones = rng.random((T, B)) < 0.2
    dones[2, 0] = True  # at least one episode end in the batch
    discounts = 0.95 * (1.0 - dones)
    rewards = rng.normal(size=(T, B))
    values = rng.normal(size=(T, B))
    bootstrap = rng.normal(size=B)
    return log_rhos, discounts, rewards, values, bootstrap


@pytest.mark.parametrize("rho_bar,c_bar", [(1.0, 1.0), (1.5, 0.8), (math.inf, math.inf)])
def test_matches_reference_loop(rho_bar, c_bar):
    inputs = random_inputs()
    expected_vs, expected_adv = reference_vtrace(*inputs, rho_bar, c_bar)
    out = vtrace(*(torch.tensor(x, dtype=torch.float64) for x in inputs), rho_bar, c_bar)
    np.testing.assert_allclose(out.vs.numpy(), expected_vs, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), expected_adv, atol=1e-5)


def test_on_policy_untruncated_equals_n_step_returns():
    _, discounts, rewards, values, bootstrap = random_inputs(T=6, B=4, seed=1)
    T, B = values.shape
    expected = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            ret, scale = 0.0, 1.0
            for t in range(s, T):
                ret += scale * rewards[t, b]
                scale *= discounts[t, b]
            expected[s, b] = ret + scale * bootstrap[b]
    out = vtrace(
        torch.zeros(T, B, dtype=torch.float64),
        *(torch.tensor(x, dtype=torch.float64) for x in (discounts, rewards, values, bootstrap)),
        rho_bar=math.inf,
        c_bar=math.inf,
    )
    np.testing.assert_allclose(out.vs.numpy(), expected, atol=1e-5)


def test_float32_matches_float64():
    inputs = random_inputs(T=32, B=8, seed=2)
    out64 = vtrace(*(torch.tensor(x, dtype=torch.float64) for x in inputs))
    out32 = vtrace(*(torch.tensor(x, dtype=torch.float32) for x in inputs))
    torch.testing.assert_close(out32.vs.double(), out64.vs, atol=1e-5, rtol=1e-5)


def test_shape_errors_name_the_shapes():
    T, B = 4, 3
    ok = torch.zeros(T, B)
    with pytest.raises(ValueError, match=r"rewards has shape \(3, 4\)"):
        vtrace(ok, ok, torch.zeros(B, T), ok, torch.zeros(B))
    with pytest.raises(ValueError, match=r"bootstrap_value has shape \(4,\)"):
        vtrace(ok, ok, ok, ok, torch.zeros(T))
    with pytest.raises(ValueError, match=r"time-major \[T, B\]"):
        vtrace(ok, ok, ok, torch.zeros(T), torch.zeros(B))
