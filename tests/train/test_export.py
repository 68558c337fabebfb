"""`sf-train export`: the ONNX file acts as the torch policy does, state and normalisers
included, and plays a Doom episode without torch (examples/onnx_play.py)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from support.onnx_policy import step_side_by_side, untrained_run

from sf_train.cli import main
from sf_train.config.schema import Config, EnvConfig, ModelConfig, RunConfig
from sf_train.export import export_onnx
from sf_train.run.trainer import train

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "onnx_play.py"
TOLERANCE = 1e-4

# ModelConfig fields over the toy config's, and env options; each run is trained briefly, so
# that its normalisers hold statistics of their own.
MODELS = {
    "gru": ({"screen_norm": "per_pixel", "normalize_values": True}, ()),
    "no-rnn": ({"rnn": False, "screen_norm": "running"}, ()),
    "dict-obs": ({"screen_norm": "running"}, ("measurements=true",)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_onnx_runtime_acts_as_the_torch_policy_across_episodes(tmp_path, toy_config, name):
    model, env_options = MODELS[name]
    base = toy_config(frames=256, eval_episodes=0)
    cfg = dataclasses.replace(
        base,
        env=dataclasses.replace(base.env, env_options=env_options),
        model=dataclasses.replace(base.model, **model),
    )
    train(cfg)
    path = export_onnx(cfg.run.run_dir, tmp_path / "policy.onnx")

    graph = onnx.load(path).graph
    inputs, outputs = [i.name for i in graph.input], [o.name for o in graph.output]
    state = ["rnn_state"] if cfg.model.rnn else []
    measurements = ["measurements"] if env_options else []
    assert inputs == ["screen", *measurements, *state]
    assert outputs == ["logits", "values", *[f"new_{s}" for s in state]]
    # 40 steps of 16-step episodes: every env starts two new ones, its state zeroed.
    gaps = step_side_by_side(cfg, path, steps=40)
    assert gaps.episode_ends == 8
    assert gaps.logits < TOLERANCE and gaps.values < TOLERANCE and gaps.rnn_state < TOLERANCE


def test_the_cli_exports_the_best_checkpoint_atomically(tmp_path, toy_config, toy_flags, capsys):
    run = tmp_path / "run"
    flags = ["--run-dir", str(run), "--frames", "256", "--eval-episodes", "2"]
    assert main(["train", *toy_flags, *flags]) == 0
    out = tmp_path / "exports" / "policy.onnx"
    assert main(["export", str(run), "--onnx", str(out), "--checkpoint", "best"]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    meta = {p.key: json.loads(p.value) for p in onnx.load(out).metadata_props}
    assert meta["sf.checkpoint"] == str(run / "checkpoints" / "best.pt")
    assert meta["sf.env_kwargs"] == {"frame_skip": 1, "obs_size": [16, 12], "grayscale": True}
    assert meta["sf.action_nvec"] == [2] and meta["sf.action_starts"] == [0]
    assert list(out.parent.iterdir()) == [out]  # no temporary file left beside it


def test_a_failed_export_leaves_the_previous_file(tmp_path, toy_config, monkeypatch):
    cfg = toy_config(frames=128, eval_episodes=0)
    train(cfg)
    out = export_onnx(cfg.run.run_dir, tmp_path / "policy.onnx")
    before = out.read_bytes()

    def broken(model):
        raise onnx.checker.ValidationError("broken on purpose")

    monkeypatch.setattr(onnx.checker, "check_model", broken)
    with pytest.raises(onnx.checker.ValidationError):
        export_onnx(cfg.run.run_dir, out)
    assert out.read_bytes() == before
    assert list(tmp_path.glob("*.tmp")) + list(tmp_path.glob(".*.tmp")) == []


def test_export_without_a_run_or_without_onnx_says_what_to_do(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "policy.onnx")
    assert main(["export", str(tmp_path / "nothing"), "--onnx", out]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    assert main(["export", str(tmp_path / "nothing"), "--onnx", out]) == 2
    assert "pip install 'sf-train[onnx]'" in capsys.readouterr().err
    assert not Path(out).exists()


def test_the_example_plays_a_doom_episode_without_torch(tmp_path):
    cfg = _tiny_doom_config(tmp_path / "doom")
    path = export_onnx(untrained_run(cfg), tmp_path / "doom.onnx")
    inputs = [i.name for i in onnx.load(path).graph.input]
    assert inputs == ["screen", "measurements", "rnn_state"]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(path), "--seed", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    played = re.search(r"sf/DoomBasic-v0: return -?[\d.]+ over (\d+) steps", done.stdout)
    assert played, done.stdout
    assert 1 <= int(played[1]) <= 75  # Doom basic: at most 300 tics, i.e. 75 steps of 4 tics


def _tiny_doom_config(run_dir: Path) -> Config:
    return Config(
        # Dict observations and a GRU: the example feeds measurements and carries the state.
        env=EnvConfig(
            env="sf/DoomBasic-v0",
            obs_size=(32, 18),
            frame_skip=4,
            env_options=("measurements=true",),
        ),
        model=ModelConfig(
            conv_channels=(8,),
            conv_kernels=(4,),
            conv_strides=(2,),
            fc_size=16,
            rnn_size=8,
            rnn=True,
        ),
        run=RunConfig(run_dir=str(run_dir)),
    )
