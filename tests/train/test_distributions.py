from __future__ import annotations

import pytest
import torch
from gymnasium import spaces
from torch.distributions import Categorical

from sf_train.model.distributions import ActionDistribution

SPACES = {
    "discrete": spaces.Discrete(5),
    "discrete_start": spaces.Discrete(4, start=-1),
    "multidiscrete": spaces.MultiDiscrete([3, 2, 4]),
    "tuple": spaces.Tuple([spaces.Discrete(3), spaces.Discrete(2, start=1)]),
}


def reference(space, logits):
    """One torch Categorical per sub-action, with the space's start offsets."""
    if isinstance(space, spaces.Discrete):
        return [(Categorical(logits=logits), int(space.start))]
    subs = (
        [spaces.Discrete(int(n)) for n in space.nvec]
        if isinstance(space, spaces.MultiDiscrete)
        else space.spaces
    )
    out, i = [], 0
    for s in subs:
        out.append((Categorical(logits=logits[..., i : i + s.n]), int(s.start)))
        i += s.n
    return out


@pytest.mark.parametrize("name", list(SPACES))
def test_log_prob_entropy_and_sampling_match_torch(name):
    space = SPACES[name]
    dist = ActionDistribution(space)
    logits = torch.randn(3, 7, dist.num_logits, dtype=torch.float64)
    actions = dist.sample(logits)
    assert actions.shape == (3, 7, *dist.action_shape)
    assert actions.dtype == torch.int64
    for a in actions.reshape(-1, *dist.action_shape).numpy():
        assert space.contains(tuple(a) if isinstance(space, spaces.Tuple) else a)

    refs = reference(space, logits)
    cols = [actions] if dist.action_shape == () else list(actions.unbind(-1))
    expected_lp = sum(c.log_prob(a - s) for (c, s), a in zip(refs, cols, strict=True))
    expected_h = sum(c.entropy() for c, _ in refs)
    torch.testing.assert_close(dist.log_prob(logits, actions), expected_lp)
    torch.testing.assert_close(dist.entropy(logits), expected_h)
    mode = dist.mode(logits)
    assert mode.shape == actions.shape


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("greedy", [False, True])
def test_choose_gives_the_actions_of_sample_or_mode_and_their_log_probs(name, greedy):
    dist = ActionDistribution(SPACES[name])
    logits = torch.randn(5, dist.num_logits)
    actions, log_probs = dist.choose(logits, torch.Generator().manual_seed(3), greedy)
    alone = dist.mode(logits) if greedy else dist.sample(logits, torch.Generator().manual_seed(3))
    torch.testing.assert_close(actions, alone)
    torch.testing.assert_close(log_probs, dist.log_prob(logits, actions))


def test_sampling_follows_the_probabilities():
    dist = ActionDistribution(spaces.Discrete(3))
    logits = torch.log(torch.tensor([0.7, 0.2, 0.1])).expand(20000, 3)
    counts = torch.bincount(dist.sample(logits), minlength=3).double() / 20000
    expected = torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)
    torch.testing.assert_close(counts, expected, atol=0.02, rtol=0)


def test_entropy_is_finite_with_masked_logits():
    dist = ActionDistribution(spaces.Discrete(3))
    logits = torch.tensor([[0.0, 0.0, -float("inf")]])
    assert dist.entropy(logits).item() == pytest.approx(torch.log(torch.tensor(2.0)).item())


def test_errors_name_the_fix():
    with pytest.raises(TypeError, match="Discrete, MultiDiscrete or a Tuple"):
        ActionDistribution(spaces.Box(0, 1, (2,)))
    dist = ActionDistribution(spaces.MultiDiscrete([2, 2]))
    with pytest.raises(ValueError, match="needs 4"):
        dist.entropy(torch.zeros(1, 5))


def test_uniform_divergence_is_the_symmetric_kl_from_uniform_per_head():
    dist = ActionDistribution(spaces.MultiDiscrete([3, 5]))
    logits = torch.randn(4, 8)
    expected = 0
    for g in torch.split(logits, [3, 5], dim=-1):
        pi = torch.distributions.Categorical(logits=g)
        uniform = torch.distributions.Categorical(logits=torch.zeros_like(g))
        kl = torch.distributions.kl_divergence
        expected = expected + kl(pi, uniform) + kl(uniform, pi)
    torch.testing.assert_close(dist.uniform_divergence(logits), expected)
    assert dist.uniform_divergence(torch.zeros(2, 8)).abs().max() < 1e-6


def test_uniform_divergence_grows_without_bound_where_the_entropy_flattens():
    """As one action's logit rises, the entropy's slope goes to 0; the divergence keeps rising
    with slope (k - 1) / k, since it is linear in the logits of the actions left behind."""
    dist = ActionDistribution(spaces.Discrete(4))
    logits = torch.zeros(1, 4)
    slopes = []
    for peak in (5.0, 20.0):
        x = logits.clone()
        x[0, 0] = peak
        x.requires_grad_(True)
        (entropy_slope,) = torch.autograd.grad(dist.entropy(x).sum(), x)
        (divergence_slope,) = torch.autograd.grad(dist.uniform_divergence(x).sum(), x)
        slopes.append((entropy_slope[0, 0].abs().item(), divergence_slope[0, 0].item()))
    (h5, d5), (h20, d20) = slopes
    assert h20 < 1e-5 < h5
    assert d5 > d20 == pytest.approx(3 / 4, abs=1e-4)


def test_the_gaussian_of_a_box_space_matches_torchs_normal():
    from torch.distributions import Independent, Normal

    from sf_train.model.distributions import GaussianDistribution, action_distribution

    dist = action_distribution(spaces.Box(-2.0, 2.0, (3,)))
    assert isinstance(dist, GaussianDistribution) and dist.num_logits == 6
    assert dist.action_shape == (3,) and dist.action_dtype == torch.float32
    logits = torch.randn(4, 5, 6)
    logits[0, 0, 3] = -50.0  # a log std below the range is held at -5
    mean, log_std = logits.chunk(2, dim=-1)
    normal = Independent(Normal(mean, log_std.clamp(-5.0, 2.0).exp()), 1)
    actions = dist.sample(logits, torch.Generator().manual_seed(0))
    assert actions.shape == (4, 5, 3)
    torch.testing.assert_close(dist.log_prob(logits, actions), normal.log_prob(actions))
    torch.testing.assert_close(dist.entropy(logits), normal.entropy())
    torch.testing.assert_close(dist.mode(logits), mean)
    greedy, log_p = dist.choose(logits, greedy=True)
    torch.testing.assert_close(log_p, normal.log_prob(greedy))
    # Samples spread as the log std says.
    wide = torch.tensor([[0.0, 1.0]]).expand(20000, 2)
    draws = action_distribution(spaces.Box(-1.0, 1.0, (1,))).sample(wide)
    assert abs(draws.std().item() - torch.e) < 0.05
    with pytest.raises(ValueError, match=r"uniform_kl.*discrete actions"):
        dist.uniform_divergence(logits)
    # The env gets them within its bounds; the learner keeps what was drawn.
    sent = dist.for_env(torch.tensor([[-3.0, 0.5, 9.0]]))
    torch.testing.assert_close(sent, torch.tensor([[-2.0, 0.5, 2.0]]))
