"""Sampling in several processes (``run.num_samplers``) with real processes: the toy env for
learning, populations and resume, Doom for sampler processes killed or hung mid-run and for
self-play (what an ended trainer leaves behind: ``test_train_leftovers``)."""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from support.model import ACTIONS, SCREEN
from support.owner import descendants, running
from support.runs import faults_config

from sf_train.config.schema import (
    AlgoConfig,
    Config,
    ConfigError,
    EnvConfig,
    ModelConfig,
    RunConfig,
)
from sf_train.model.network import ActorCritic
from sf_train.run.members import SharedWeights
from sf_train.run.trainer import Progress, Trainer
from sf_train.sampling.pool import (
    ProcessWeights,
    SamplerPool,
    resolve_num_samplers,
    split_problems,
)
from sf_train.sampling.process import copy_published


def _doom_config(run_dir: Path, frames: int) -> Config:
    """The fault tests' Doom basic run, its 4 envs split between 2 sampler processes."""
    env = EnvConfig(num_envs=4, batch_size=2, num_workers=2, obs_size=(32, 24))
    cfg = faults_config(run_dir, env)
    cfg.run = replace(cfg.run, frames=frames, checkpoint_every=frames, num_samplers=2)
    return cfg


def test_a_copy_that_overlaps_a_publication_is_made_again():
    """The processes take no lock on the published weights (one killed while holding it would
    stop every other): a copy whose sequence number changed meanwhile is made again."""
    cfg = ModelConfig(conv_channels=(8, 16), fc_size=16)
    models = [ActorCritic(SCREEN, ACTIONS, cfg) for _ in range(3)]
    versions = torch.zeros(1, dtype=torch.int64)
    sequences = torch.zeros(1, dtype=torch.int64)
    published = ProcessWeights(models[0], versions, sequences, 0)
    published.publish(models[1], 1)
    assert int(sequences[0]) == 2 and published.version == 1
    local = SharedWeights(ActorCritic(SCREEN, ACTIONS, cfg))
    copies: list[int] = []
    copy = local.publish

    def copy_then_overlap(source: ActorCritic, version: int) -> None:
        copy(source, version)
        copies.append(version)
        if len(copies) == 1:  # the learner published version 2 during this copy
            published.publish(models[2], 2)

    local.publish = copy_then_overlap  # type: ignore[method-assign]
    copy_published([local], [published.model], versions, sequences)
    assert copies == [1, 2] and local.version == 2
    expected = models[2].state_dict()
    for name, value in local.model.state_dict().items():
        assert torch.equal(value, expected[name]), name


def test_two_samplers_learn_the_toy_task_from_every_env(toy_config):
    """As ``test_trainer``'s learning test (a random policy scores 8 of 16), with each of two
    sampler processes acting for 4 of the 8 envs."""
    cfg = toy_config(frames=12_800, num_samplers=2, eval_episodes=0)
    cfg.env.num_envs, cfg.env.batch_size = 8, 4
    cfg.algo = AlgoConfig(rollout=16, gamma=0.5)
    with Trainer(cfg) as trainer:
        assert isinstance(trainer.sampler, SamplerPool)
        result = trainer.train()
        returns = trainer.members[0].returns
    assert result.frames >= 12_800
    assert returns.ready  # every env of both processes ended episodes that count
    assert result.mean_return >= 14.5


def test_two_samplers_fill_every_policys_batches_of_a_population(toy_config):
    cfg = toy_config(frames=8192, num_samplers=2, eval_episodes=0)
    cfg.env.num_envs, cfg.env.batch_size = 8, 4
    cfg.algo.num_policies = 2
    with Trainer(cfg) as trainer:
        pool = trainer.sampler
        assert isinstance(pool, SamplerPool)
        trainer.train()
        assert (pool.batches > 0).all(), pool.batches  # from each process, for each policy
        assert all(m.learner.version > 0 for m in trainer.members)
        assert all(m.returns.ready for m in trainer.members)
        with pytest.raises(ConfigError, match="--num-samplers 1"):
            trainer.set_pairing(lambda game, seats: [0] * seats)


def test_resume_with_another_number_of_samplers(toy_config, tmp_path):
    run = tmp_path / "run"
    with Trainer(toy_config(run, frames=2048, num_samplers=1, eval_episodes=0)) as trainer:
        trainer.train()
    resumed = toy_config(run, frames=4096, num_samplers=2, eval_episodes=0)
    with Trainer(resumed, resume=True) as trainer:
        start = trainer.frames
        version = trainer.members[0].learner.version
        result = trainer.train()
        assert trainer.members[0].learner.version > version
    assert start >= 2048 and result.frames >= 4096


def test_a_killed_sampler_process_is_restarted_and_training_goes_on(tmp_path, caplog):
    killed: list[int] = []
    orphans: list[int] = []
    cfg = _doom_config(tmp_path / "run", frames=400_000)
    with Trainer(cfg) as trainer:
        pool = trainer.sampler
        assert isinstance(pool, SamplerPool)

        def on_progress(p: Progress) -> None:
            if not killed and p.frames >= 2_000:
                pid = pool._children[0].process.pid
                orphans.extend(descendants(pid))  # its engine's workers and their games
                os.kill(pid, signal.SIGKILL)
                killed.append(p.frames)
            if killed and pool.sampler_restarts and p.frames >= killed[0] + 6_000:
                trainer.request_stop()

        trainer.on_progress = on_progress
        result = trainer.train()
        replacement = pool._children[0].process
        assert replacement.is_alive() and pool.sampler_restarts == 1
    assert result.frames >= killed[0] + 6_000
    assert "sampler process 0 exited" in caplog.text
    assert not replacement.is_alive()  # closed with the trainer
    assert len(orphans) >= 2 and not [p for p in orphans if running(p)]


def test_self_play_against_snapshots_in_two_sampler_processes(tmp_path):
    """Duels: every second row is the snapshot opponent's, in each process's own duels; the
    snapshots reach every process."""
    cfg = _doom_config(tmp_path / "run", frames=3_000)
    cfg.env = EnvConfig(
        env="sf/DoomDuel-v0", num_envs=4, batch_size=4, num_workers=2, obs_size=(32, 24)
    )
    cfg.algo.opponent_pool, cfg.algo.opponent_snapshot_every = 2, 1
    with Trainer(cfg) as trainer:
        pool = trainer.sampler
        assert isinstance(pool, SamplerPool)
        result = trainer.train()
        assert (pool.batches > 0).all() and pool._opponent_state is not None
    assert result.frames >= 3_000


def test_a_hung_sampler_process_is_restarted(tmp_path, caplog):
    """SIGSTOP: the process lives but its loop makes no progress for env.worker_timeout."""
    stopped: list[int] = []
    before: list[int] = []
    cfg = _doom_config(tmp_path / "run", frames=400_000)
    cfg.env.worker_timeout = 4.0
    with Trainer(cfg) as trainer:
        pool = trainer.sampler
        assert isinstance(pool, SamplerPool)

        def on_progress(p: Progress) -> None:
            if not stopped and p.frames >= 2_000:
                stopped.append(pool._children[1].process.pid)
                before.append(int(pool.batches[1].sum()))
                os.kill(stopped[0], signal.SIGSTOP)
            # The replacement's batches (those sent before the stop are at most 3).
            if pool.sampler_restarts and pool.batches[1].sum() > before[0] + 3:
                trainer.request_stop()

        trainer.on_progress = on_progress
        trainer.train()
        assert pool.sampler_restarts == 1 and pool._children[1].process.pid != stopped[0]
    assert "sampler process 1 made no progress for 4 s" in caplog.text
    assert not running(stopped[0])


def test_splits_that_do_not_fit_are_refused_with_the_fix():
    cfg = Config(env=EnvConfig(num_envs=6, batch_size=3, num_workers=2))
    problems = split_problems(cfg, 2)
    assert any("batch_size=3" in p for p in problems)
    sync = Config(run=RunConfig(sync=True))
    assert any("sample in one process to debug" in p for p in split_problems(sync, 2))
    with pytest.raises(ConfigError, match="batch_size=3"):
        SamplerPool(cfg, 2, np.zeros(0, np.int64))


def test_the_default_is_one_sampler_per_eight_cores(monkeypatch):
    cfg = Config(env=EnvConfig(num_envs=32, batch_size=16, num_workers=8))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert resolve_num_samplers(cfg) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 36)
    assert resolve_num_samplers(cfg) == 4
    monkeypatch.setattr(os, "cpu_count", lambda: 48)  # 6 does not divide 32 envs: 4
    assert resolve_num_samplers(cfg) == 4
    sync = Config(env=cfg.env, run=RunConfig(sync=True))
    assert resolve_num_samplers(sync) == 1
