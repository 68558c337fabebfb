from __future__ import annotations

import dataclasses
import shutil
import threading
import time

import pytest
import torch
from support.runs import scalars
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sf_train.config.schema import AlgoConfig, config_to_dict, save_config
from sf_train.run.checkpoint import CheckpointError, load_checkpoint
from sf_train.run.folder import (
    RunFolderError,
    checkpoints_of,
    load_run_config,
    prepare_run_folder,
)
from sf_train.run.trainer import Progress, Trainer, train


def test_sync_mode_has_zero_policy_lag(toy_config, tmp_path):
    seen: list[Progress] = []
    result = train(toy_config(frames=1024, sync=True), on_progress=seen.append)
    assert result.frames >= 1024
    assert [p.policy_lag for p in seen] == [0.0] * len(seen)
    tags = scalars(tmp_path / "run")
    assert set(tags["train/policy_lag_max"]) == {0.0}
    assert set(tags["train/stale_fraction"]) == {0.0}


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_sync_training_acts_with_the_weights_it_learnt(toy_config, precision):
    """An acting copy of another precision is published after every update in sync mode too:
    unpublished, the sampler would act with the initial weights for the whole run while the
    learner, held by PPO's clip near that behaviour policy, never left it."""
    cfg = toy_config(frames=1024, sync=True, eval_episodes=0)
    cfg.algo = dataclasses.replace(cfg.algo, precision=precision)
    with Trainer(cfg) as trainer:
        trainer.train()
        learnt, acting = trainer.learner.model, trainer.weights.model
        assert acting is not learnt
        assert trainer.weights.version == trainer.learner.version > 0
        assert torch.equal(acting.actor.weight, learnt.actor.weight.to(acting.actor.weight.dtype))


def test_async_run_measures_lag_and_writes_the_tensorboard_tags(toy_config, tmp_path):
    cfg = toy_config(frames=4096)
    result = train(cfg)
    assert not [t for t in threading.enumerate() if t.name == "sf-train-learner"]
    assert result.dropped_frames == 0  # no env is ever stuck without faults
    tags = scalars(tmp_path / "run")
    expected = {
        "perf/fps",
        "perf/dropped_frames",
        "charts/episodic_return",
        "charts/episodic_length",
        "losses/policy_loss",
        "losses/value_loss",
        "losses/entropy",
        "losses/approx_kl",
        "losses/clipfrac",
        "losses/explained_variance",
        "train/policy_lag_min",
        "train/policy_lag_avg",
        "train/policy_lag_max",
        "train/lr",
        # What CleanRL users look for, beside our own tags.
        "charts/SPS",
        "charts/learning_rate",
    }
    assert expected <= set(tags)
    assert tags["charts/learning_rate"] == tags["train/lr"]
    # Agent steps per second: the toy env's frame_skip is 1, so they are its frames per second.
    assert tags["charts/SPS"] == tags["perf/fps"]
    # The sampler acts while the learner trains: some samples come from older weights. A batch's
    # first steps can be taken while the batch before it still fills (envs straddle batches),
    # so a sample waits for at most three batches of updates (that one, the queued one and the
    # one in training) plus those of its own batch.
    updates = cfg.algo.num_epochs * cfg.algo.num_minibatches
    assert 1 <= max(tags["train/policy_lag_max"]) < 4 * updates
    assert set(tags["charts/episodic_length"]) == {16.0}
    assert result.mean_return is not None


def test_the_hyperparameters_open_the_event_file_as_a_markdown_table(toy_config, tmp_path):
    run = tmp_path / "a|b"  # a pipe must not end a cell
    cfg = toy_config(run, frames=128, sync=True, eval_episodes=0)
    train(cfg)
    acc = EventAccumulator(str(run), size_guidance={"tensors": 0}).Reload()
    (event,) = acc.Tensors("hyperparameters/text_summary")
    assert event.step == 0
    lines = event.tensor_proto.string_val[0].decode().splitlines()
    assert lines[:2] == ["|param|value|", "|-|-|"]
    assert "|algo.gamma|0.5|" in lines and "|env.num_envs|4|" in lines
    assert f"|run.run_dir|{tmp_path}/a\\|b|" in lines
    assert len(lines) == 2 + sum(len(section) for section in config_to_dict(cfg).values())


def test_best_checkpoint_is_the_best_evaluated_one(toy_config, tmp_path):
    """Every checkpoint is evaluated as it is written; best.pt holds the best of them, with
    the evaluation's mean return."""
    cfg = toy_config(frames=6144, checkpoint_every=1024, eval_episodes=8, eval_share=1.0)
    train(cfg)
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0}).Reload()
    evaluations = acc.Scalars("eval/return_mean")
    # After 1024, 2048, ... 6144 frames; the final checkpoint is that last one, not evaluated
    # twice.
    assert len(evaluations) == 6 and len({e.step for e in evaluations}) == 6
    best = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    first_best = max(evaluations, key=lambda e: (e.value, -e.step))
    assert best["best_return"] == pytest.approx(first_best.value)
    assert best["frames"] == first_best.step


def test_evaluations_keep_within_their_share_of_wall_time(toy_config, tmp_path):
    """With a share no evaluation fits in, even the first checkpoint goes unevaluated (priced at
    training's speed) and the final one, always made, shrinks to one round: every env one
    episode. The others are kept unevaluated, and best.pt is the final one."""
    cfg = toy_config(frames=6144, checkpoint_every=1024, eval_episodes=8, eval_share=1e-12)
    cfg.run.keep_checkpoints = 10
    result = train(cfg)
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0}).Reload()
    assert [e.step for e in acc.Scalars("eval/return_mean")] == [result.frames]
    assert result.eval_seconds > 0
    checkpoints = sorted((tmp_path / "run" / "checkpoints").glob("checkpoint_*.pt"))
    assert len(checkpoints) > 1  # the rest were written, not evaluated
    best = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["frames"] == result.frames
    assert result.best is not None and result.best[1]["episodes"] == cfg.env.num_envs


def _with_last_evaluation(trainer, seconds: float, episodes: int, length: float) -> None:
    trainer._last_eval_seconds, trainer._last_eval_episodes = seconds, episodes
    trainer._last_eval_steps = episodes * length


def test_the_next_evaluation_is_priced_by_the_training_episodes_length(toy_config):
    """An agent that learns to survive makes each evaluation longer than the last: an episode
    is priced at the last evaluation's seconds per step times the training episodes' length
    now, never shorter than the last evaluation's episodes."""
    with Trainer(toy_config(eval_episodes=20)) as trainer:
        member = trainer.members[0]
        envs = list(member.lengths._values)
        _with_last_evaluation(trainer, seconds=1.0, episodes=20, length=5.0)  # 0.01 s a step
        member.lengths.add(envs, [10.0] * len(envs))
        assert trainer._episode_seconds() == pytest.approx(0.1)
        member.lengths.add(
            envs * member.lengths.per_env, [1.0] * len(envs) * member.lengths.per_env
        )
        assert trainer._episode_seconds() == pytest.approx(0.05)


def test_before_any_evaluation_an_episode_is_priced_at_training_speed(toy_config):
    """1,000 env steps trained in 10 s (0.01 s a step), episodes of 30 steps: 0.3 s each; with
    no episode ended yet, each is at least as long as training has gone on per env."""
    with Trainer(toy_config(eval_episodes=20)) as trainer:
        trainer._train_started = time.perf_counter() - 10.0
        trainer.frames = 1000  # frame_skip 1
        assert trainer._episode_seconds() == pytest.approx(0.01 * 1000 / 4, rel=0.01)
        member = trainer.members[0]
        envs = list(member.lengths._values)
        member.lengths.add(envs, [30.0] * len(envs))
        assert trainer._episode_seconds() == pytest.approx(0.3, rel=0.01)


def test_near_the_end_an_evaluation_leaves_room_for_the_final_one(toy_config, monkeypatch):
    """100 s into a run with 7 s of evaluations and 2 s per evaluation (share 0.1): halfway,
    one more fits; at 95% of the run it would leave no room in the share of the whole run for
    a full final evaluation, so the checkpoint goes unevaluated."""
    with Trainer(toy_config(eval_episodes=20, eval_share=0.1)) as trainer:
        trainer._train_started = time.perf_counter() - 100.0
        trainer.eval_seconds = 7.0
        _with_last_evaluation(trainer, seconds=2.0, episodes=20, length=10.0)
        monkeypatch.setattr(trainer, "_progress", lambda: 0.5)
        assert trainer._evaluation_fits()
        monkeypatch.setattr(trainer, "_progress", lambda: 0.95)
        assert not trainer._evaluation_fits()


def test_the_final_evaluation_shrinks_to_whole_rounds_that_fit(toy_config):
    """At 0.5 s an episode, 100 s into a run with share 0.1: 3 s left after 7 s of evaluations
    pay for 6 episodes, one round of the 4 envs; with 9.5 s spent, still one round (the
    least); with none spent, 20 of the 20 asked for."""
    with Trainer(toy_config(eval_episodes=20, eval_share=0.1)) as trainer:
        trainer._train_started = time.perf_counter() - 100.0
        _with_last_evaluation(trainer, seconds=10.0, episodes=20, length=10.0)
        trainer.eval_seconds = 7.0
        assert trainer._final_episodes() == 4
        trainer.eval_seconds = 9.5
        assert trainer._final_episodes() == 4
        trainer.eval_seconds = 0.0
        assert trainer._final_episodes() == 20


def test_every_evaluation_pays_the_envs_start_up(toy_config):
    """Envs that took 6 s to start (trainer created to first batch) cost an evaluation 6 s
    before its first step: a last evaluation of 16 s over 200 steps stepped at 0.05 s a step
    (0.5 s an episode of 10), and 100 s into a run with share 0.1 the final evaluation gets
    (10 - 6) / 0.5 = 8 episodes, not the 12 that pricing without the start-up would give."""
    with Trainer(toy_config(eval_episodes=20, eval_share=0.1)) as trainer:
        trainer._train_started = time.perf_counter() - 100.0
        trainer._startup_seconds = 6.0
        _with_last_evaluation(trainer, seconds=16.0, episodes=20, length=10.0)
        assert trainer._episode_seconds() == pytest.approx(0.5)
        assert trainer._final_episodes() == 8
        assert not trainer._evaluation_fits()  # 6 + 20 * 0.5 = 16 s > 10 s
        trainer._train_started = time.perf_counter() - 1000.0
        assert trainer._evaluation_fits()


def test_the_start_up_is_measured_to_the_first_batch(toy_config):
    with Trainer(toy_config(frames=256, eval_episodes=0)) as trainer:
        assert trainer._startup_seconds is None
        trainer.train()
        assert 0 < trainer._startup_seconds < time.perf_counter() - trainer._created


def test_a_run_stops_at_its_seconds(toy_config):
    """run.seconds ends training when this session has trained that long, long before its
    frames; the final checkpoint is written as usual."""
    result = train(toy_config(frames=10**12, seconds=1.0, eval_episodes=0))
    assert 0 < result.frames < 10**12 and result.seconds >= 1.0
    assert result.checkpoint.is_file()


def test_resume_continues_exactly(toy_config, tmp_path):
    """Train N, resume for M == train N + M straight, bit for bit (sync mode, toy env)."""
    batch = 4 * 8
    straight = toy_config(tmp_path / "straight", frames=15 * batch, sync=True)
    split = toy_config(tmp_path / "split", frames=10 * batch, sync=True)
    for cfg in (straight, split):
        cfg.algo.num_epochs, cfg.algo.num_minibatches = 2, 2
        # A linear decay would follow each session's own frame budget, which differs here.
        cfg.algo.lr_schedule = "constant"
        cfg.model.screen_norm = "running"  # normaliser statistics must resume too
        cfg.algo.advantage_stats = "running"  # and the advantages' running moments
    train(straight)
    train(split)
    split.run.frames = straight.run.frames
    result = train(split, resume=True)
    assert result.frames == 15 * batch
    a = load_checkpoint(checkpoints_of(tmp_path / "straight").latest())
    b = load_checkpoint(checkpoints_of(tmp_path / "split").latest())
    updates = straight.algo.num_epochs * straight.algo.num_minibatches
    assert updates > 1  # minibatch order comes from the saved torch RNG
    assert a["version"] == b["version"] == 15 * updates
    assert a["model"].keys() == b["model"].keys()
    assert a["model"]["screen_norm.count"] == 15 * batch * 12 * 16  # one scalar over pixels
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    for sa, sb in zip(
        a["optimizer"]["state"].values(), b["optimizer"]["state"].values(), strict=True
    ):
        assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert a["episode_returns"] == b["episode_returns"]
    assert a["advantage_moments"].keys() == {"mean", "square"}
    for key in a["advantage_moments"]:
        assert torch.equal(a["advantage_moments"][key], b["advantage_moments"][key])


def test_resume_restores_the_kl_adaptive_learning_rate(toy_config, tmp_path):
    cfg = toy_config(frames=256, sync=True)
    cfg.algo = AlgoConfig(rollout=8, lr_schedule="kl_adaptive", target_kl=10.0)
    train(cfg)
    saved = load_checkpoint(checkpoints_of(tmp_path / "run").latest())
    assert saved["lr"] != cfg.algo.learning_rate  # a tiny KL raised it
    cfg.run.frames = 512
    with Trainer(cfg, resume=True) as trainer:
        assert trainer.learner.lr == saved["lr"]
        assert trainer.learner.version == saved["version"]
        assert trainer.frames == saved["frames"]


def test_run_folder_errors_name_the_fix(toy_config, tmp_path):
    cfg = toy_config(frames=128, sync=True)
    with pytest.raises(RunFolderError, match="not a run folder"):
        Trainer(cfg, resume=True)
    save_config(cfg, tmp_path / "run" / "config.json")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        Trainer(cfg, resume=True)
    train(cfg)
    with pytest.raises(RunFolderError, match="--resume"):
        Trainer(cfg)
    cfg.algo.gamma = 0.9
    with pytest.raises(RunFolderError, match=r"algo.gamma: saved 0.5, given 0.9"):
        Trainer(cfg, resume=True)
    cfg.algo.gamma = 0.5
    latest = checkpoints_of(tmp_path / "run").latest()
    latest.write_bytes(latest.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=latest.name):
        Trainer(cfg, resume=True)


def test_worker_settings_may_change_on_resume(toy_config, tmp_path):
    """How long a worker may hang and how often it may restart decide how the run goes on, not
    what it trains."""
    cfg = toy_config(frames=128, sync=True)
    train(cfg)
    cfg.env.worker_timeout, cfg.env.worker_max_restarts = 5.0, 9
    assert prepare_run_folder(cfg, resume=True)[0]["frames"] == 128
    assert load_run_config(tmp_path / "run").env.worker_timeout == 5.0


def test_a_moved_run_folder_resumes_where_it_now_is(toy_config, tmp_path):
    cfg = toy_config(frames=128, sync=True)
    train(cfg)
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "run", moved)
    cfg.run.run_dir, cfg.run.frames = str(moved), 256
    with Trainer(cfg, resume=True) as trainer:
        assert trainer.frames == 128
        trainer.train()
    assert load_run_config(moved).run.run_dir == str(moved)
    assert checkpoints_of(moved).latest().name != checkpoints_of(tmp_path / "run").latest().name


def test_learner_errors_reach_the_caller_and_stop_the_thread(toy_config, monkeypatch):
    def broken(*args, **kwargs):
        raise FloatingPointError("boom")

    with Trainer(toy_config(frames=4096)) as trainer:
        monkeypatch.setattr(trainer.learner, "train", broken)
        with pytest.raises(RuntimeError, match="learner thread failed") as info:
            trainer.train()
    assert isinstance(info.value.__cause__, FloatingPointError)
    assert not [t for t in threading.enumerate() if t.name == "sf-train-learner"]


@pytest.mark.parametrize("precision", ["float32", "bfloat16", "int8"])
def test_async_training_learns_the_toy_env(toy_config, precision):
    """A random policy scores 8 of 16; the default algorithm settings learn it within 100
    batches of 128 steps, also when the sampler acts with bfloat16 or int8 weights."""
    cfg = toy_config(frames=12_800)
    cfg.env.num_envs, cfg.env.batch_size = 8, 4
    # A short horizon: rewards pay single actions.
    cfg.algo = AlgoConfig(rollout=16, gamma=0.5, precision=precision)
    with Trainer(cfg) as trainer:
        acting = {p.dtype for p in trainer.weights.model.parameters()}
        quantized = trainer.weights.model.int8 is not None
        result = trainer.train()
    assert acting == {torch.float32 if precision == "int8" else getattr(torch, precision)}
    assert quantized == (precision == "int8")
    assert result.mean_return >= 14.5


def test_checkpoints_on_a_wall_clock_grid(toy_config, tmp_path, monkeypatch):
    """run.checkpoint_seconds adds checkpoints by wall time: a clock that advances one second
    per call makes every batch due."""
    clock = iter(range(10**6))
    monkeypatch.setattr("sf_train.run.trainer.time.perf_counter", lambda: float(next(clock)))
    cfg = toy_config(frames=256, checkpoint_seconds=0.5, keep_checkpoints=100, eval_episodes=0)
    train(cfg)
    assert len(checkpoints_of(tmp_path / "run").all()) >= 256 // (4 * 8)
