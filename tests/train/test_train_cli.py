from __future__ import annotations

import json

import imageio.v2 as imageio
import pytest
from support.toy_env import TOY_ENV
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sf_train.cli import main
from sf_train.config.presets import ENV_PRESETS, PRESETS, preset_for
from sf_train.config.schema import Config
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import load_run_config


def test_train_eval_enjoy_on_the_toy_env(tmp_path, toy_flags, capsys):
    run = str(tmp_path / "run")
    assert main(["train", *toy_flags, "--run-dir", run, "--frames", "512"]) == 0
    assert main(["train", "--run-dir", run, "--frames", "1024", "--resume"]) == 0
    assert "1,024 frames" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["eval", run, "--episodes", "6", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 6 and summary["length_mean"] == 16.0
    assert 0 <= summary["return_mean"] <= 16
    assert main(["eval", run, "--episodes", "2", "--checkpoint", "best"]) == 0
    assert "return" in capsys.readouterr().out
    gif = tmp_path / "agent.gif"
    assert main(["enjoy", run, "--out", str(gif)]) == 0
    frames = imageio.mimread(gif)
    # 17 frames written; GIF encoders may merge identical neighbours.
    assert 2 <= len(frames) <= 17 and frames[0].shape == (96, 128, 3)


def test_the_done_line_reports_the_evaluation_behind_best(tmp_path, toy_flags, capsys):
    """The last line's return is the unbiased evaluation that chose best.pt; without
    evaluations it says that its return is a training window."""
    run = tmp_path / "run"
    flags = ["--run-dir", str(run), "--frames", "512", "--eval-episodes", "4"]
    assert main(["train", *toy_flags, *flags]) == 0
    done = capsys.readouterr().err.split("done", 1)[1]
    best = load_checkpoint(run / "checkpoints" / "best.pt")
    assert f"evaluation over 4 episodes: mean {best['best_return']:.2f}" in done
    assert "IQM" in done and "time-outs" in done
    flags = ["--run-dir", str(tmp_path / "unjudged"), "--frames", "512", "--eval-episodes", "0"]
    assert main(["train", *toy_flags, *flags]) == 0
    assert "(not an evaluation)" in capsys.readouterr().err.split("done", 1)[1]


def test_a_seconds_budget_drives_the_progress_line(tmp_path, toy_flags, capsys):
    """A run bounded by --seconds long before its frame budget shows both budgets, and its bar
    ends full: the time left follows the budget that ends the run."""
    flags = ["--run-dir", str(tmp_path / "run"), "--frames", str(10**12), "--seconds", "2"]
    assert main(["train", *toy_flags, *flags, "--eval-episodes", "0"]) == 0
    err = capsys.readouterr().err
    (last,) = [line for line in err.splitlines() if "frames or 2 s" in line][-1:]
    assert "/1,000,000,000,000 frames or 2 s" in last and "0:00:00" in last.split("lag")[1]


def test_a_run_that_evaluates_greedily_is_evaluated_greedily_after(
    tmp_path, toy_flags, capsys, monkeypatch
):
    """--eval-greedy picks best.pt by greedy evaluations, and `sf-train eval` plays greedily
    by default on that run (the runner of every evaluation records its mode)."""
    import sf_train.evaluation

    modes: list[bool] = []
    runner = sf_train.evaluation.PolicyRunner

    def recording_runner(model, n, device, generator, greedy):
        modes.append(greedy)
        return runner(model, n, device, generator, greedy)

    monkeypatch.setattr(sf_train.evaluation, "PolicyRunner", recording_runner)
    run = str(tmp_path / "run")
    flags = ["--run-dir", run, "--frames", "256", "--eval-greedy", "--eval-episodes", "4"]
    assert main(["train", *toy_flags, *flags]) == 0
    assert modes and all(modes)
    capsys.readouterr()
    for given, expected in (([], True), (["--no-greedy"], False), (["--greedy"], True)):
        modes.clear()
        assert main(["eval", run, "--episodes", "2", "--json", *given]) == 0
        assert json.loads(capsys.readouterr().out)["greedy"] is expected
        assert modes == [expected]


def test_a_preset_starts_the_config_and_flags_override_it(tmp_path, capsys):
    run = tmp_path / "sf"
    flags = ["--preset", "sample-factory", "--env", TOY_ENV, "--frame-skip", "1", "--num-envs", "2"]
    flags += ["--batch-size", "2", "--num-workers", "1", "--rollout", "4", "--frames", "16"]
    assert main(["train", *flags, "--eval-episodes", "0", "--run-dir", str(run)]) == 0
    saved = load_run_config(run)
    assert saved.model.conv_channels == (32, 64, 128) and saved.model.rnn_size == 512
    assert saved.algo.learning_rate == 1e-4 and saved.env.obs_size == (128, 72)
    assert saved.algo.rollout == 4 and saved.env.num_envs == 2  # the flags given win
    capsys.readouterr()
    assert main(["train", "--run-dir", str(run), "--resume", "--preset", "sample-factory"]) == 2
    assert "drop it with --resume" in capsys.readouterr().err


def test_an_id_trains_with_its_family_preset_unless_one_is_named(
    tmp_path, toy_flags, caplog, monkeypatch
):
    """--env picks the id's preset (and says so); --preset, or any flag, overrides it."""
    monkeypatch.setitem(ENV_PRESETS, TOY_ENV, "sample-factory")
    caplog.set_level("INFO", logger="sf_train.cli")
    flags = [*toy_flags, "--frames", "16", "--eval-episodes", "0", "--rollout", "4"]
    assert main(["train", *flags, "--run-dir", str(tmp_path / "family")]) == 0
    assert f"preset 'sample-factory', the settings of {TOY_ENV}'s task family" in caplog.text
    saved = load_run_config(tmp_path / "family")
    assert saved.algo.learning_rate == 1e-4 and saved.algo.rollout == 4
    caplog.clear()
    assert main(["train", *flags, "--preset", "default", "--run-dir", str(tmp_path / "own")]) == 0
    assert "task family" not in caplog.text
    assert load_run_config(tmp_path / "own").algo.learning_rate == Config().algo.learning_rate


def test_every_family_preset_names_a_registered_id_and_a_preset():
    import gymnasium as gym

    import sf_envs  # noqa: F401  (registers the sf/ ids)

    assert set(ENV_PRESETS) <= set(gym.registry)
    assert set(ENV_PRESETS.values()) <= set(PRESETS) - {"default"}
    assert preset_for("sf/DoomNoFamily-v0") == "default"


def test_user_errors_print_the_fix(tmp_path, toy_flags, capsys):
    assert main(["eval", str(tmp_path / "nowhere")]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert main(["train", *toy_flags, "--run-dir", str(tmp_path), "--num-envs", "0"]) == 2
    assert "env.num_envs=0" in capsys.readouterr().err
    assert main(["train", "--env", "sf/DoomNoSuchThing-v0", "--run-dir", str(tmp_path)]) == 2
    assert "unknown env 'sf/DoomNoSuchThing-v0'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["frobnicate"])


def test_a_bug_keeps_its_traceback(tmp_path, toy_flags, monkeypatch):
    """Only errors about what the user gave print as one line; a ValueError from inside is a bug."""

    def broken(*args, **kwargs):
        raise ValueError("an internal invariant broke")

    monkeypatch.setattr("sf_train.run.trainer.Trainer.train", broken)
    with pytest.raises(ValueError, match="an internal invariant broke"):
        main(["train", *toy_flags, "--run-dir", str(tmp_path / "run"), "--frames", "16"])


TINY_FLAGS = [
    "--obs-size",
    "32",
    "24",
    "--conv-channels",
    "4",
    "--conv-kernels",
    "4",
    "--conv-strides",
    "2",
    "--fc-size",
    "16",
    "--rnn-size",
    "8",
    "--rollout",
    "8",
    "--num-minibatches",
    "2",
    "--torch-threads",
    "1",
]


def test_doom_smoke(tmp_path, capsys):
    """A few hundred frames of sf/DoomBasic-v0 through the CLI with a tiny network."""
    run = str(tmp_path / "doom")
    flags = ["--env", "sf/DoomBasic-v0", "--num-envs", "4", "--batch-size", "2"]
    # Each checkpoint's evaluation: 4 episodes (one per env) rather than the default 100.
    flags += ["--num-workers", "2", *TINY_FLAGS, "--frames", "256", "--eval-episodes", "4"]
    assert main(["train", *flags, "--run-dir", run]) == 0
    capsys.readouterr()
    assert main(["eval", run, "--episodes", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 1 and "killcount_mean" in summary
    # An odd count on 2 workers: one env more than episodes, which plays none.
    assert main(["eval", run, "--episodes", "3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 3 and summary["episodes_per_env"] == [1, 1, 1, 0]
    assert 0.0 <= summary["timeout_fraction"] <= 1.0 and "return_median" in summary
    assert main(["eval", run, "--episodes", "5"]) == 0
    assert "5 episodes on 4 envs (1-2 per env)" in capsys.readouterr().out
    gif = tmp_path / "doom.gif"
    assert main(["enjoy", run, "--out", str(gif)]) == 0
    assert imageio.mimread(gif)[0].shape == (120, 160, 3)


def test_self_play_trains_both_agents_of_a_duel(tmp_path, capsys):
    """sf/DoomDuel-v0: one policy plays both rows of every match; eval rounds up to whole
    matches, and the video is player_0's view of the policy playing both agents."""
    run = str(tmp_path / "duel")
    flags = ["--env", "sf/DoomDuel-v0", "--num-envs", "4", "--batch-size", "4"]
    flags += ["--num-workers", "2", *TINY_FLAGS, "--frames", "256"]
    # Each checkpoint's evaluation: 4 matches rather than the default 100.
    flags += ["--env-options", "timelimit=0.05", "--eval-episodes", "4"]
    assert main(["train", *flags, "--run-dir", run]) == 0
    capsys.readouterr()
    assert main(["eval", run, "--episodes", "3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 3 and summary["length_mean"] == 26.0
    gif = tmp_path / "duel.gif"
    assert main(["enjoy", run, "--out", str(gif)]) == 0
    frames = imageio.mimread(gif)
    # 26 steps and the first frame; GIF encoders may merge identical neighbours.
    assert 2 <= len(frames) <= 27 and frames[0].shape == (120, 160, 3)
    # Against a pool of past selves: the second agent of every duel is a frozen snapshot.
    pool = str(tmp_path / "pool")
    opponents = ["--opponent-pool", "3", "--opponent-snapshot-every", "2"]
    assert main(["train", *flags, *opponents, "--run-dir", pool]) == 0
    tags = EventAccumulator(pool).Reload().Tags()["scalars"]
    assert {"self_play/pool_size", "self_play/opponent_age"} <= set(tags)


def test_an_opponent_pool_needs_a_self_play_env(tmp_path, toy_flags, capsys):
    run = str(tmp_path / "toy")
    assert main(["train", *toy_flags, "--run-dir", run, "--opponent-pool", "2"]) == 2
    assert "sf/DoomDuel-v0" in capsys.readouterr().err


def test_sample_factory_action_set_end_to_end(tmp_path, capsys, scenario_pack):
    """Train, evaluate and record with Sample Factory's MultiDiscrete heads on its battle."""
    run = str(tmp_path / "battle")
    flags = ["--env", "sf/DoomBattle-v0", "--env-options", "action_set=sample_factory"]
    flags += ["--num-envs", "4", "--batch-size", "2", "--num-workers", "2", *TINY_FLAGS]
    assert main(["train", *flags, "--frames", "256", "--eval-episodes", "0", "--run-dir", run]) == 0
    capsys.readouterr()
    assert main(["eval", run, "--episodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2
    assert main(["enjoy", run, "--out", str(tmp_path / "battle.gif")]) == 0
