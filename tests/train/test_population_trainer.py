"""A population in one trainer: folders and tags per policy, the league's API (stats, matches,
hyperparameters, shaping, exploit copies), and resuming every policy as it was."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch
from support.runs import scalars

from sf_train.config.schema import ConfigError
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import checkpoints_of, load_run_config
from sf_train.run.trainer import Trainer, train


def population(toy_config, count: int = 2, frames: int = 2048, **run):
    cfg = toy_config(frames=frames, **run)
    cfg.algo.num_policies = count
    return cfg


def test_each_policy_trains_into_a_run_folder_of_its_own(toy_config, tmp_path):
    result = train(population(toy_config, sync=True))
    root = tmp_path / "run"
    assert load_run_config(root).algo.num_policies == 2
    for p in (0, 1):
        folder = root / f"p{p}"
        cfg = load_run_config(folder)  # eval, enjoy and sf-league take it as a run folder
        assert cfg.algo.num_policies == 1 and cfg.run.run_dir == str(folder)
        state = load_checkpoint(checkpoints_of(folder).latest())
        assert state["frames"] == result.frames
        assert 0 < state["policy_frames"] < result.frames
    assert checkpoints_of(root).latest() is None
    tags = scalars(root)
    assert {"p0/losses/entropy", "p1/losses/entropy", "p0/charts/episodic_return"} <= tags.keys()
    assert "losses/entropy" not in tags
    assert len(result.returns) == 2


def test_stats_count_every_policys_frames_and_episodes(toy_config):
    cfg = population(toy_config, count=2, frames=1024, sync=True)
    with Trainer(cfg) as trainer:
        trainer.train()
        stats = trainer.take_stats()
        matches = trainer.take_matches()
        assert trainer.take_stats()[0].frames == 0  # counted once
    assert sum(s.frames for s in stats) == trainer.frames
    assert [s.policy for s in stats] == [0, 1]
    assert all(s.episodes > 0 and s.entropy is not None for s in stats)
    # One seat per game in the toy env: every ended episode is a match of one.
    assert sum(s.episodes for s in stats) == len(matches)
    assert {m.policies[0] for m in matches} == {0, 1}


def test_copy_policy_copies_weights_optimiser_and_settings(toy_config):
    cfg = population(toy_config, count=2, frames=512, sync=True)
    with Trainer(cfg) as trainer:
        trainer.train()
        trainer.set_hyperparameters(0, {"entropy_coef": 0.02, "learning_rate": 1e-3})
        before = trainer.members[1].learner.version
        trainer.copy_policy(0, 1)
        src, dst = (trainer.members[p].learner for p in (0, 1))
        pairs = zip(src.model.state_dict().values(), dst.model.state_dict().values(), strict=True)
        for a, b in pairs:
            assert torch.equal(a, b)
        acting = trainer.members[1].weights.model.state_dict()
        for a, b in zip(src.model.state_dict().values(), acting.values(), strict=True):
            assert torch.equal(a, b)  # the sampler acts with the copy at once
        s_opt, d_opt = src.optimizer.state_dict(), dst.optimizer.state_dict()
        assert s_opt["state"].keys() == d_opt["state"].keys()
        for k, state in s_opt["state"].items():
            assert torch.equal(state["exp_avg"], d_opt["state"][k]["exp_avg"])
            assert state["exp_avg"] is not d_opt["state"][k]["exp_avg"]  # a copy, not shared
        assert trainer.hyperparameters(1) == trainer.hyperparameters(0)
        assert trainer.hyperparameters(1)["entropy_coef"] == 0.02
        # Experience sampled by the old weights is masked out as stale.
        assert dst.version > before + cfg.algo.max_policy_lag


def test_a_policy_exported_by_one_trainer_is_imported_by_another(toy_config, tmp_path):
    """As between the shards of a population on Ray: the state crosses a process by pickle."""
    first = population(toy_config, count=2, frames=512, run_dir=tmp_path / "a", sync=True)
    second = population(toy_config, count=2, frames=256, run_dir=tmp_path / "b", sync=True)
    with Trainer(first) as a, Trainer(second) as b:
        a.train()
        a.set_hyperparameters(0, {"entropy_coef": 0.03})
        a.set_shaping(0, {})
        before = b.members[1].learner.version
        b.import_policy(1, pickle.loads(pickle.dumps(a.export_policy(0))))
        src, dst = a.members[0].learner, b.members[1].learner
        source = src.model.state_dict()
        for copied in (dst.model.state_dict(), b.members[1].weights.model.state_dict()):
            # The learner's weights, and the sampler's (it acts with them at once).
            for x, y in zip(source.values(), copied.values(), strict=True):
                assert torch.equal(x, y)
        assert (
            src.optimizer.state_dict()["state"].keys() == dst.optimizer.state_dict()["state"].keys()
        )
        assert b.hyperparameters(1)["entropy_coef"] == 0.03
        assert dst.lr == src.lr and dst.version > before + second.algo.max_policy_lag
        assert b.hyperparameters(0)["entropy_coef"] == second.algo.entropy_coef  # untouched


def test_a_frozen_policy_plays_but_does_not_learn(toy_config):
    cfg = population(toy_config, count=2, frames=1024)  # asynchronous: the learner thread
    with Trainer(cfg) as trainer:
        trainer.freeze(1)
        weights = {k: v.clone() for k, v in trainer.members[1].learner.model.state_dict().items()}
        trainer.train()
        stats = trainer.take_stats()
        frozen, learning = trainer.members[1].learner, trainer.members[0].learner
        assert stats[1].frames > 0 and stats[1].version == 0 and frozen.version == 0
        for name, value in frozen.model.state_dict().items():
            assert torch.equal(value, weights[name])
        assert learning.version > 0


def test_hyperparameters_are_checked(toy_config):
    cfg = population(toy_config, count=2, frames=256, sync=True)
    with Trainer(cfg) as trainer:
        with pytest.raises(ConfigError, match="not a policy hyperparameter"):
            trainer.set_hyperparameters(0, {"rollout": 4})
        with pytest.raises(ConfigError, match="clip_ratio"):
            trainer.set_hyperparameters(0, {"clip_ratio": 1.5})
        assert trainer.hyperparameters(0)["clip_ratio"] == cfg.algo.clip_ratio


def test_shaping_names_the_envs_variables(toy_config):
    cfg = population(toy_config, count=2, frames=256, sync=True)
    cfg.env.env_options = ("variables=true",)
    cfg.algo.shaping = ("kills=1",)
    with pytest.raises(ConfigError, match=r"kills.*episode_return"):
        Trainer(cfg)


def test_shaping_reaches_the_learner_and_is_logged_apart(toy_config, tmp_path):
    cfg = population(toy_config, count=2, frames=1024, sync=True)
    cfg.env.env_options = ("variables=true",)
    with Trainer(cfg) as trainer:
        trainer.set_shaping(1, {"episode_return": 2.0})
        trainer.train()
        stats = trainer.take_stats()
    assert stats[0].mean_shaping == 0.0
    assert stats[1].mean_shaping > 0.0
    tags = scalars(tmp_path / "run")
    assert "p1/charts/shaping_return" in tags and "p0/charts/shaping_return" not in tags


def test_resume_restores_every_policy(toy_config, tmp_path):
    cfg = population(toy_config, count=2, frames=512, sync=True)
    cfg.env.env_options = ("variables=true",)
    with Trainer(cfg) as trainer:
        trainer.set_hyperparameters(1, {"entropy_coef": 0.05})
        trainer.set_shaping(1, {"episode_return": 0.5})
        trainer.train()
        weights = [
            {k: v.clone() for k, v in m.learner.model.state_dict().items()} for m in trainer.members
        ]
        versions = [m.learner.version for m in trainer.members]
    resumed_cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, frames=1024))
    with Trainer(resumed_cfg, resume=True) as trainer:
        for member, saved, version in zip(trainer.members, weights, versions, strict=True):
            assert member.learner.version == version
            for k, v in member.learner.model.state_dict().items():
                assert torch.equal(v, saved[k])
        assert trainer.hyperparameters(1)["entropy_coef"] == 0.05
        assert trainer.hyperparameters(0)["entropy_coef"] == cfg.algo.entropy_coef
        assert trainer.shaping(1) == {"episode_return": 0.5}
        assert trainer.shaping(0) == {}


def test_resume_takes_the_latest_checkpoint_every_policy_has(toy_config, tmp_path):
    """A crash while the population was saved leaves p0 one checkpoint ahead of p1."""
    cfg = population(toy_config, count=2, frames=512, sync=True, keep_checkpoints=5)
    cfg.run.checkpoint_every = 256
    train(cfg)
    p0, p1 = (checkpoints_of(tmp_path / "run" / f"p{p}") for p in (0, 1))
    p1.latest().unlink()
    expected = p1.latest().name
    resumed = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, frames=1024))
    with Trainer(resumed, resume=True) as trainer:
        frames = trainer.frames
    assert expected == f"checkpoint_{frames:012d}.pt"
    assert p0.latest().name != expected


def test_a_population_needs_a_divisor_of_the_envs(toy_config):
    cfg = population(toy_config, count=3)
    with pytest.raises(ConfigError, match="num_policies=3"):
        Trainer(cfg)
