"""sf-train on any Gymnasium env: the engine hosts it, the encoder follows its observation, the
heads its actions (Discrete, MultiDiscrete, Gaussian for Box); train, resume, eval and enjoy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
import torch
from gymnasium import spaces

from sf_train.cli import main
from sf_train.config.schema import EnvConfig, ModelConfig
from sf_train.envs import frames_per_step, hosted_by_engine
from sf_train.model.network import ActorCritic
from sf_train.run.checkpoint import load_checkpoint

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = ["--num-envs", "4", "--batch-size", "2", "--rollout", "16", "--num-minibatches", "2"]


def test_cartpole_trains_resumes_evaluates_and_plays(tmp_path, capsys) -> None:
    run = str(tmp_path / "run")
    flags = ["--env", "CartPole-v1", "--run-dir", run, *SMALL, "--eval-episodes", "4"]
    assert main(["train", *flags, "--frames", "3000"]) == 0
    assert main(["train", "--run-dir", run, "--frames", "6000", "--resume"]) == 0
    err = capsys.readouterr().err
    # A frame is an agent step (no frame skip outside Doom).
    assert "6,0" in err.rsplit("done", 1)[1].split("frames")[0]
    assert main(["eval", run, "--episodes", "4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 4
    assert summary["return_mean"] == summary["length_mean"]  # CartPole pays 1 a step
    gif = tmp_path / "agent.gif"
    assert main(["enjoy", run, "--out", str(gif)]) == 0
    with imageio.get_reader(gif) as frames:  # a whole episode of 600x400 frames: read one
        assert frames.get_data(0).shape == (400, 600, 3)


def test_box_actions_train_with_a_gaussian_head(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    flags = ["--env", "Pendulum-v1", "--run-dir", str(run), *SMALL, "--eval-episodes", "2"]
    assert main(["train", *flags, "--frames", "2000"]) == 0
    state = load_checkpoint(run / "checkpoints" / "best.pt")
    model = state["model"]
    assert model["actor.weight"].shape[0] == 2  # the mean and log std of one action
    assert main(["eval", str(run), "--episodes", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["length_mean"] == 200 and summary["return_mean"] < 0


def test_dict_observations_of_vectors_train_and_export(tmp_path, capsys) -> None:
    pytest.importorskip("onnx")
    run = tmp_path / "run"
    flags = ["--env", "support.gym_envs:SplitCartPole-v0", "--run-dir", str(run), *SMALL]
    assert main(["train", *flags, "--frames", "2000", "--eval-episodes", "2"]) == 0
    model = load_checkpoint(run / "checkpoints" / "best.pt")["model"]
    assert model["vector_mlp.0.weight"].shape[1] == 4  # both parts, one MLP
    assert main(["eval", str(run), "--episodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2
    onnx_file = tmp_path / "policy.onnx"
    assert main(["export", str(run), "--onnx", str(onnx_file)]) == 0
    import onnx

    graph = onnx.load(str(onnx_file)).graph
    assert [i.name for i in graph.input] == ["cart", "pole"]


def test_only_ids_without_an_async_engine_are_hosted() -> None:
    assert hosted_by_engine("sf/DoomBasic-v0") and not hosted_by_engine("CartPole-v1")
    assert frames_per_step(EnvConfig(env="CartPole-v1", frame_skip=4)) == 1
    assert frames_per_step(EnvConfig(env="sf/DoomBasic-v0", frame_skip=4)) == 4


def test_a_vector_model_encodes_with_an_mlp() -> None:
    obs_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
    model = ActorCritic(obs_space, spaces.MultiDiscrete([3, 2]), ModelConfig(mlp_sizes=(8, 5)))
    assert model.conv is None and model.vector_norm is not None
    out = model(torch.randn(6, 4), model.initial_state(6))
    assert out.logits.shape == (6, 5) and out.values.shape == (6,)
    sequence = model.forward_sequence(
        torch.randn(3, 6, 4), model.initial_state(6), torch.zeros(3, 6, dtype=torch.bool)
    )
    assert sequence.logits.shape == (3, 6, 5)
    with pytest.raises(ValueError, match="int8 acting quantizes the FC layer"):
        model.acting_copy("int8")
    with pytest.raises(ValueError, match="neither a uint8 Box of shape"):
        ActorCritic(spaces.Box(0, 1, (2, 3)), spaces.Discrete(2), ModelConfig())


def test_the_own_env_of_the_docs_learns(tmp_path, capsys, monkeypatch) -> None:
    """examples/own_env.py, as the docs train it: its module registers the id."""
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the workers get this process's sys.path
    run = str(tmp_path / "run")
    assert (
        main(["train", "--env", "own_env:Corridor-v0", "--run-dir", run, "--frames", "20000"]) == 0
    )
    capsys.readouterr()
    assert main(["eval", run, "--episodes", "32", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # Random walks reach the lit end in 47% of the episodes, after 15 steps on average (mean
    # return -0.14 over 4,000 episodes); walking straight there returns 0.97.
    assert summary["return_mean"] > 0.8, summary
    # Exported, it takes the vector as the env gives it.
    onnxruntime = pytest.importorskip("onnxruntime")
    assert main(["export", run, "--onnx", str(tmp_path / "corridor.onnx")]) == 0
    session = onnxruntime.InferenceSession(str(tmp_path / "corridor.onnx"))
    (vector,) = session.get_inputs()
    assert vector.name == "vector"
    logits = session.run(None, {"vector": np.array([[0, 1], [0, -1]], np.float32)})[0]
    assert logits[0].argmax() == 1 and logits[1].argmax() == 0  # toward the lit end
    sys.modules.pop("own_env", None)
