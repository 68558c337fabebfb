from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sf_train.algo.vtrace import vtrace


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


@pytest.mark.parametrize("trace_lambda", [0.95, 0.5])
def test_on_policy_trace_lambda_gives_lambda_returns(trace_lambda):
    """On policy, lambda in the traces turns the targets into lambda-returns,
    ``G_s = r_s + gamma_s * ((1 - lambda) V(x_{s+1}) + lambda G_{s+1})`` with ``G_T = V(x_T)``."""
    _, discounts, rewards, values, bootstrap = random_inputs(T=6, B=4, seed=3)
    T, B = values.shape
    expected = np.zeros((T, B))
    for b in range(B):
        following = bootstrap[b]  # G_{s+1}
        for s in range(T - 1, -1, -1):
            v_next = values[s + 1, b] if s + 1 < T else bootstrap[b]
            mixed = (1 - trace_lambda) * v_next + trace_lambda * following
            expected[s, b] = following = rewards[s, b] + discounts[s, b] * mixed
    out = vtrace(
        torch.zeros(T, B, dtype=torch.float64),
        *(torch.tensor(x, dtype=torch.float64) for x in (discounts, rewards, values, bootstrap)),
        trace_lambda=trace_lambda,
    )
    np.testing.assert_allclose(out.vs.numpy(), expected, atol=1e-10)
    whole = vtrace(
        torch.zeros(T, B, dtype=torch.float64),
        *(torch.tensor(x, dtype=torch.float64) for x in (discounts, rewards, values, bootstrap)),
    )
    assert not torch.allclose(whole.vs, out.vs), "lambda below 1 must change the targets"


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


def reference_vtrace_with_time_limits(
    log_rhos, gamma, rewards, values, bootstrap, terminated, truncated, final_values, rho_bar, c_bar
):
    """Plain loops over eq. (1) with episode ends spelt out: after step ``t`` the next state's
    value is ``V(x_{t+1})`` if the episode goes on, ``V(x_final)`` if a time limit cut it and
    0 if it terminated; any end stops the trace."""
    T, B = values.shape
    vs = np.zeros((T, B))
    adv = np.zeros((T, B))
    for b in range(B):
        v_ext = [*values[:, b], bootstrap[b]]

        def next_value(t, v_next, b=b):
            if terminated[t, b]:
                return 0.0
            return final_values[t, b] if truncated[t, b] else v_next

        for s in range(T):
            total = v_ext[s]
            for t in range(s, T):
                coef = 1.0
                for i in range(s, t):
                    ended = terminated[i, b] or truncated[i, b]
                    coef *= 0.0 if ended else gamma * min(c_bar, math.exp(log_rhos[i, b]))
                rho_t = min(rho_bar, math.exp(log_rhos[t, b]))
                target = rewards[t, b] + gamma * next_value(t, v_ext[t + 1])
                total += coef * rho_t * (target - v_ext[t])
            vs[s, b] = total
        for s in range(T):
            v_next = vs[s + 1, b] if s + 1 < T else bootstrap[b]
            rho_s = min(rho_bar, math.exp(log_rhos[s, b]))
            target = rewards[s, b] + gamma * next_value(s, v_next)
            adv[s, b] = rho_s * (target - values[s, b])
    return vs, adv


def time_limit_inputs(T=7, B=5, seed=3):
    rng = np.random.default_rng(seed)
    log_rhos, _, rewards, values, bootstrap = random_inputs(T, B, seed)
    ends = rng.random((T, B)) < 0.3
    truncated = ends & (rng.random((T, B)) < 0.5)
    truncated[1, 0] = True  # at least one cut and one termination
    truncated[4, 0] = False
    terminated = ends & ~truncated
    terminated[4, 0] = True
    final_values = rng.normal(size=(T, B)) * truncated  # the engine reports them at cuts only
    return log_rhos, rewards, values, bootstrap, terminated, truncated, final_values


@pytest.mark.parametrize("rho_bar,c_bar", [(1.0, 1.0), (1.5, 0.8), (math.inf, math.inf)])
def test_time_limit_truncations_match_the_reference_loop(rho_bar, c_bar):
    """A cut step bootstraps from the final observation's value; a termination does not; both
    stop the trace."""
    gamma = 0.95
    log_rhos, rewards, values, bootstrap, terminated, truncated, final_values = time_limit_inputs()
    expected_vs, expected_adv = reference_vtrace_with_time_limits(
        log_rhos, gamma, rewards, values, bootstrap, terminated, truncated, final_values,
        rho_bar, c_bar,
    )  # fmt: skip
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    out = vtrace(
        t(log_rhos),
        t(gamma * (1.0 - (terminated | truncated))),
        t(rewards),
        t(values),
        t(bootstrap),
        rho_bar,
        c_bar,
        truncation_bootstrap=t(gamma * final_values),
    )
    np.testing.assert_allclose(out.vs.numpy(), expected_vs, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), expected_adv, atol=1e-5)
    without = vtrace(t(log_rhos), t(gamma * (1.0 - (terminated | truncated))), t(rewards),
                     t(values), t(bootstrap), rho_bar, c_bar)  # fmt: skip
    assert not torch.allclose(without.vs, out.vs), "the cut steps must change the targets"


def test_the_truncation_argument_equals_the_former_reward_editing_bit_for_bit():
    """The learner used to add ``gamma * V(x_final)`` to the (scaled) rewards before calling
    V-trace; passing it as ``truncation_bootstrap`` gives the very same float32 numbers."""
    gamma, scale = 0.99, 0.01
    log_rhos, rewards, values, bootstrap, terminated, truncated, final_values = time_limit_inputs(
        T=32, B=8, seed=4
    )
    f = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731
    discounts = gamma * (~torch.tensor(terminated | truncated)).float()
    scaled, cut_values = f(rewards) * scale, f(final_values)
    old = vtrace(f(log_rhos), discounts, scaled + gamma * cut_values, f(values), f(bootstrap))
    new = vtrace(
        f(log_rhos),
        discounts,
        scaled,
        f(values),
        f(bootstrap),
        truncation_bootstrap=gamma * cut_values,
    )
    assert torch.equal(new.vs, old.vs)
    assert torch.equal(new.pg_advantages, old.pg_advantages)


def test_a_truncation_bootstrap_of_the_wrong_shape_is_named():
    T, B = 4, 3
    ok = torch.zeros(T, B)
    with pytest.raises(ValueError, match=r"truncation_bootstrap has shape \(4,\)"):
        vtrace(ok, ok, ok, ok, torch.zeros(B), truncation_bootstrap=torch.zeros(T))
