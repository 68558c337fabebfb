"""Frozen opponents: the PFSP weights, the pairing, and on real duels frozen copies of past
members that play the members, are recorded in the league and survive a resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from support.league import tiny_population

from sf_league.population.frozen import (
    FrozenConfig,
    FrozenOpponents,
    FrozenPairing,
    pfsp_weights,
)
from sf_league.population.training import TRAINING, PopulationConfig, PopulationTrainer, member_name
from sf_league.store import LeagueStore


def test_pfsp_weights_are_one_minus_the_smoothed_win_rate_squared():
    wins, games = np.array([0.0, 3.0, 9.0, 0.0]), np.array([0.0, 4.0, 10.0, 8.0])
    p = np.array([1 / 2, 4 / 6, 10 / 12, 1 / 10])
    expected = (1 - p) ** 2 / ((1 - p) ** 2).sum()
    np.testing.assert_allclose(pfsp_weights(wins, games), expected)
    assert pfsp_weights(wins, games).argmax() == 3  # the one the member loses to


def _filled(members: int, count: int, **options) -> FrozenOpponents:
    frozen = FrozenOpponents(members, FrozenConfig(count=count, **options))
    for k in range(count):
        slot, member = frozen.next()
        assert (slot, member) == (k % count, k % members)  # oldest slot, members in turn
        frozen.fill(slot, f"p{member}@{k}")
    return frozen


def test_pfsp_draws_the_frozen_opponents_a_member_loses_to_most():
    frozen = _filled(2, 3, pfsp=True)
    for _ in range(20):
        frozen.record(0, 0, 1.0)  # member 0 beats slot 0's frozen opponent
        frozen.record(0, 2, 0.0)  # and loses to slot 2's
    rng = np.random.default_rng(0)
    drawn = np.bincount([frozen.draw(0, rng) for _ in range(2000)], minlength=3)
    assert drawn[2] > drawn[1] > drawn[0]
    uniform = _filled(2, 3)
    uniform.slots = frozen.slots
    drawn = np.bincount([uniform.draw(0, rng) for _ in range(3000)], minlength=3)
    assert drawn.min() > 850  # without --pfsp: uniform whatever the results


def test_the_pairing_gives_a_members_opponent_to_a_frozen_one_by_its_share():
    for share, low, high in [(0.0, 0, 0), (1.0, 500, 500), (0.5, 200, 300)]:
        frozen = _filled(3, 2, share=share)
        pairing = FrozenPairing(frozen, seed=1)
        seats = [pairing(0, 2) for _ in range(500)]
        against = [s for s in seats if max(s) >= 3]
        assert low <= len(against) <= high
        assert all(min(s) < 3 for s in seats)  # a frozen opponent never meets only frozen ones
    assert {tuple(s).index(max(s)) for s in against} == {0, 1}  # either side of the map


def test_bad_settings_are_reported():
    problems = FrozenConfig(count=-1, interval=0, share=1.5).problems()
    assert [p.split()[0] for p in problems] == [
        "--snapshots",
        "--snapshot-interval",
        "--snapshot-share",
    ]


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_frozen_opponents_are_past_members_that_play_and_are_recorded(tmp_path: Path) -> None:
    run_dir, db = tmp_path / "pop", tmp_path / "pop.sqlite"
    frozen = FrozenConfig(count=2, interval=1500, share=1.0, pfsp=True)
    cfg = PopulationConfig(tiny_population(run_dir, frames=6000), str(db), frozen=frozen)
    with PopulationTrainer(cfg) as pop:
        assert pop.trainer.num_policies == 4 and len(pop.members) == 2
        pop.train()
        taken = [slot.name for slot in pop.frozen.slots]
        slots = [_weights(pop.trainer.members[2 + k].learner.model) for k in range(2)]
        assert pop.frozen.taken >= 3  # every slot filled, the oldest refilled
        played = sum(slot.games.sum() for slot in pop.frozen.slots)
    with LeagueStore(db) as store:
        # The stored kind of a freeze keeps its first name, "snapshot".
        events = [e for e in store.pbt_events() if e.kind == "snapshot"]
        specs = {p.name: p.spec for p in store.players()}
        games = [g for g in store.games() if g.scenario == TRAINING]
    # Slots and members taken in turn, each event naming what the slot holds.
    assert [(e.policy, e.parent) for e in events][:3] == [(2, 0), (3, 1), (2, 0)]
    assert [f"{member_name(run_dir, e.parent, 0)}@{e.frames}" for e in events[-2:]] == sorted(
        taken, key=lambda name: int(name.split("@")[1])
    )
    # Each slot still has exactly the weights its member had when it was frozen.
    for name, weights in zip(taken, slots, strict=True):
        saved = torch.load(specs[name], weights_only=False)["model"]
        assert all(torch.equal(saved[k], weights[k]) for k in saved)
    # Members played the frozen opponents; those games are the league's, against their players.
    against = [g for g in games if any("@" in s.player for s in g.seats)]
    assert against, "no game against a frozen opponent was recorded"
    assert all(s.player in specs for g in against for s in g.seats)
    assert played > 0  # and PFSP counted them
    resumed = PopulationConfig(tiny_population(run_dir, frames=7000), str(db))
    with PopulationTrainer(resumed, resume=True) as pop:
        assert len(pop.members) == 2 and pop.trainer.num_policies == 4
        assert [slot.name for slot in pop.frozen.slots] == taken
        assert all(pop.trainer.members[p].frozen for p in (2, 3))
    with pytest.raises(ValueError, match="started with 2"):
        PopulationTrainer(
            PopulationConfig(
                tiny_population(run_dir, frames=7000), str(db), frozen=FrozenConfig(count=1)
            ),
            resume=True,
        )
