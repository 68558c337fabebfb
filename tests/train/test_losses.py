from __future__ import annotations

import numpy as np
import pytest
import torch

from sf_train.algo.losses import (
    AdvantageMoments,
    entropy_bonus,
    masked_mean,
    normalize_advantages,
    policy_lag_mask,
    policy_loss,
    value_loss,
)


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def test_policy_loss_matches_reference():
    lp, old, adv = rand(6, 4), rand(6, 4), rand(6, 4)
    mask = torch.rand(6, 4) < 0.7
    eps = 0.2
    terms, clipped, kept = [], 0, 0
    for x, o, a, m in zip(lp.flatten(), old.flatten(), adv.flatten(), mask.flatten(), strict=True):
        if not m:
            continue
        r = float(torch.exp(x - o))
        terms.append(min(r * a, min(max(r, 1 - eps), 1 + eps) * a))
        clipped += abs(r - 1) > eps
        kept += 1
    loss, frac = policy_loss(lp, old, adv, eps, mask)
    assert loss.item() == pytest.approx(-float(np.mean(terms)), abs=1e-10)
    assert frac.item() == pytest.approx(clipped / kept)


def test_policy_loss_gradient_vanishes_when_clipped():
    lp = torch.tensor([1.0], requires_grad=True)  # ratio e ~ 2.7 > 1.2
    loss, _ = policy_loss(lp, torch.tensor([0.0]), torch.tensor([1.0]), 0.2)
    loss.backward()
    assert lp.grad.item() == 0.0


@pytest.mark.parametrize("clip", [None, 0.3])
def test_value_loss_matches_reference(clip):
    v, t, old = rand(5, 3), rand(5, 3), rand(5, 3)
    errs = []
    for vi, ti, oi in zip(v.flatten(), t.flatten(), old.flatten(), strict=True):
        e = (vi - ti) ** 2
        if clip is not None:
            vc = oi + min(max(vi - oi, -clip), clip)
            e = max(e, (vc - ti) ** 2)
        errs.append(float(e))
    got = value_loss(v, t, old, clip)
    assert got.item() == pytest.approx(0.5 * np.mean(errs), abs=1e-10)


def test_value_clip_requires_old_values():
    with pytest.raises(ValueError, match="old_values"):
        value_loss(rand(2), rand(2), clip_value=0.2)


def test_masked_mean_and_entropy():
    x = torch.tensor([1.0, 2.0, 3.0, 10.0])
    mask = torch.tensor([True, True, True, False])
    assert masked_mean(x, mask).item() == pytest.approx(2.0)
    assert entropy_bonus(x, mask).item() == pytest.approx(2.0)
    assert masked_mean(x, torch.zeros(4, dtype=torch.bool)).item() == 0.0


def test_normalize_advantages_uses_masked_statistics():
    adv = rand(8, 4) * 3 + 5
    mask = torch.rand(8, 4) < 0.6
    out = normalize_advantages(adv, mask)
    kept = out[mask]
    assert kept.mean().item() == pytest.approx(0.0, abs=1e-7)
    assert kept.var(unbiased=False).item() == pytest.approx(1.0, abs=1e-6)


def test_advantage_moments_against_hand_computed_values():
    moments = AdvantageMoments(decay=0.5)
    first = moments.normalize(torch.tensor([1.0, 2.0, 3.0]))
    # mean 2, second moment 14/3, variance 2/3
    expected = (torch.tensor([1.0, 2.0, 3.0]) - 2.0) / (2.0 / 3.0) ** 0.5
    torch.testing.assert_close(first, expected)
    second = moments.normalize(torch.tensor([10.0, 10.0, 99.0]), torch.tensor([True, True, False]))
    # the masked-out 99 counts nowhere: mean 0.5*2 + 0.5*10 = 6, second moment
    # 0.5*14/3 + 0.5*100 = 157/3, variance 157/3 - 36 = 49/3
    torch.testing.assert_close(second[:2], torch.full((2,), 4.0 / (49.0 / 3.0) ** 0.5))


def test_advantage_moments_keep_a_minibatch_without_reward_small():
    """The critic's small errors in a minibatch with no reward stay small beside the
    advantages of one with a success, where a minibatch's own statistics make them unit-size."""
    moments = AdvantageMoments()
    success = torch.zeros(128)
    success[5] = 1.0
    moments.normalize(success)
    noise = 1e-3 * rand(128).float()
    assert moments.normalize(noise).std().item() < 0.05
    assert normalize_advantages(noise).std().item() == pytest.approx(1.0, abs=0.01)


def test_advantage_moments_state_round_trip():
    moments = AdvantageMoments()
    assert moments.state_dict() == {}
    moments.normalize(torch.tensor([1.0, 4.0]))
    restored = AdvantageMoments()
    restored.load_state_dict(moments.state_dict())
    x = torch.tensor([0.5, 2.0])
    torch.testing.assert_close(restored.normalize(x.clone()), moments.normalize(x.clone()))


def test_policy_lag_mask():
    versions = torch.tensor([[10, 7], [5, 10]])
    mask, lag = policy_lag_mask(versions, current_version=10, max_policy_lag=3)
    assert lag.tolist() == [[0, 3], [5, 0]]
    assert mask.tolist() == [[True, True], [False, True]]
    with pytest.raises(ValueError, match="max_policy_lag"):
        policy_lag_mask(versions, 10, -1)
