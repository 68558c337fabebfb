from __future__ import annotations

import argparse
import dataclasses
import json
import math

import pytest
import torch

from sf_train.config.arguments import add_config_arguments, config_from_args, field_docs
from sf_train.config.presets import sample_factory
from sf_train.config.schema import (
    AlgoConfig,
    Config,
    ConfigError,
    EnvConfig,
    ModelConfig,
    RunConfig,
    config_from_dict,
    load_config,
    save_config,
    validate,
)
from sf_train.envs import make_env
from sf_train.model.device import resolve_device


def test_defaults_are_valid():
    validate(Config())
    validate(sample_factory())


def test_validation_reports_every_error_at_once():
    cfg = Config(
        env=EnvConfig(num_envs=6, batch_size=0),
        model=ModelConfig(conv_channels=(16, 32, 64)),
        algo=AlgoConfig(gamma=1.5, num_minibatches=4, clip_ratio=0.0, trace_lambda=1.2),
        run=RunConfig(device="tpu"),
    )
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    errors = info.value.errors
    text = str(info.value)
    for expected in (
        "env.batch_size=0",
        "model.conv_channels/conv_kernels/conv_strides have lengths 3/2/2",
        "algo.gamma=1.5",
        "algo.num_minibatches=4: use a divisor of env.num_envs (6)",
        "algo.clip_ratio=0.0",
        "algo.trace_lambda=1.2: use a value in (0, 1]",
        "run.device='tpu'",
    ):
        assert any(expected in e for e in errors), expected
        assert expected in text
    assert len(errors) == 7
    assert isinstance(info.value, ValueError)


def test_conv_stack_too_deep_for_the_observation_is_reported():
    cfg = Config(env=EnvConfig(obs_size=(16, 8)))
    with pytest.raises(ConfigError, match=r"shrink env\.obs_size"):
        validate(cfg)


def test_running_advantage_statistics_need_standardised_advantages():
    cfg = Config(algo=AlgoConfig(advantage_stats="running", normalize_advantages=False))
    with pytest.raises(ConfigError, match="--normalize-advantages"):
        validate(cfg)
    validate(Config(algo=AlgoConfig(advantage_stats="running")))


def test_json_round_trip(tmp_path):
    cfg = Config(
        env=EnvConfig(num_envs=4, batch_size=2, obs_size=(32, 24)),
        model=ModelConfig(conv_channels=(8,), conv_kernels=(4,), conv_strides=(2,), rnn=False),
        algo=AlgoConfig(rho_bar=math.inf, value_clip=0.2, lr_schedule="linear"),
        run=RunConfig(run_dir=str(tmp_path / "run")),
    )
    path = tmp_path / "run" / "config.json"
    save_config(cfg, path)
    assert load_config(path) == cfg
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # no temp files left


def test_loading_reports_unknown_and_mistyped_fields():
    data = dataclasses.asdict(Config())
    data["algo"]["gama"] = 0.9
    data["env"]["num_envs"] = "8"
    data["model"]["screen_norm"] = "zscore"
    data["extra"] = {}
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert len(info.value.errors) == 4
    assert "unknown field algo.gama" in str(info.value)


def test_cli_is_generated_from_the_dataclasses():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    help_text = " ".join(parser.format_help().split())
    for section in (EnvConfig, ModelConfig, AlgoConfig, RunConfig):
        for f in dataclasses.fields(section):
            assert f"--{f.name.replace('_', '-')}" in help_text
    assert " ".join(field_docs(AlgoConfig)["gamma"].split()) in help_text
    assert "V-trace importance-weight truncation; inf disables it." in help_text

    argv = (
        "--env sf/DoomBasic-v0 --num-envs 4 --batch-size 2 --no-rnn --conv-channels 8 16 "
        "--obs-size 32 24 --rho-bar inf --value-clip 0.2 --screen-norm running "
        "--run-dir runs/x --frames 1000"
    )
    args = parser.parse_args(argv.split())
    cfg = config_from_args(args)
    assert cfg.env == EnvConfig(num_envs=4, batch_size=2, obs_size=(32, 24))
    assert cfg.model.rnn is False and cfg.model.conv_channels == (8, 16)
    assert cfg.model.screen_norm == "running"
    assert cfg.algo.rho_bar == math.inf and cfg.algo.value_clip == 0.2
    assert cfg.run == RunConfig(run_dir="runs/x", frames=1000)
    assert config_from_args(parser.parse_args([])) == Config()


def test_worker_settings_are_checked_and_reach_the_engine():
    with pytest.raises(ConfigError) as info:
        validate(Config(env=EnvConfig(worker_timeout=0.0, worker_max_restarts=-1)))
    assert len(info.value.errors) == 2
    assert "env.worker_timeout=0.0" in str(info.value)
    assert "env.worker_max_restarts=-1" in str(info.value)
    cfg = EnvConfig(num_envs=2, batch_size=2, worker_timeout=7.5, worker_max_restarts=9)
    venv = make_env(cfg)
    try:
        settings = venv._core.engine.settings
        assert (settings.step_timeout_s, settings.max_restarts) == (7.5, 9)
    finally:
        venv.close()


def test_former_shaping_spellings_load_with_a_deprecation_warning(tmp_path):
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(["--shaping", "frag=1", "death=-0.5", "damage=0.01"])
    with pytest.warns(DeprecationWarning) as caught:
        cfg = config_from_args(args)
    assert cfg.algo.shaping == ("frags=1", "deaths=-0.5", "damage_dealt=0.01")
    assert [str(w.message).split(";")[0] for w in caught] == [
        "algo.shaping: 'frag' is now spelled 'frags'",
        "algo.shaping: 'death' is now spelled 'deaths'",
        "algo.shaping: 'damage' is now spelled 'damage_dealt'",
    ]
    # An older run's config.json: converted on load, with the same message.
    data = dataclasses.asdict(Config())
    data["algo"]["shaping"] = ["hit=0.1", "damage_taken=-0.003"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.warns(DeprecationWarning, match="'hit' is now spelled 'hits'"):
        assert load_config(path).algo.shaping == ("hits=0.1", "damage_taken=-0.003")


def test_cli_reports_all_errors():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    with pytest.raises(ConfigError) as info:
        config_from_args(parser.parse_args(["--num-envs", "0", "--gamma", "2"]))
    assert len(info.value.errors) >= 2


def test_every_field_has_a_docstring():
    for section in (EnvConfig, ModelConfig, AlgoConfig, RunConfig):
        assert set(field_docs(section)) == {f.name for f in dataclasses.fields(section)}


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


def test_saved_json_is_plain(tmp_path):
    save_config(Config(), tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    assert data["model"]["conv_channels"] == [16, 32]


def test_env_options_reach_the_env_as_keyword_arguments():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(
        ["--env-options", "bot_skill=1", "timelimit=0.5", "map=cig_map02", "rewards={}"]
    )
    cfg = config_from_args(args)
    assert cfg.env.env_options == ("bot_skill=1", "timelimit=0.5", "map=cig_map02", "rewards={}")
    assert cfg.env.options() == {
        "bot_skill": 1,
        "timelimit": 0.5,
        "map": "cig_map02",
        "rewards": {},
    }


@pytest.mark.parametrize(
    "item, needle",
    [
        ("bot_skill", "not KEY=VALUE"),
        ("=3", "not KEY=VALUE"),
        ("frame_skip=2", "--frame-skip"),
        ("step_timeout_s=5", "--worker-timeout"),
        ("max_restarts=9", "--worker-max-restarts"),
    ],
)
def test_bad_env_options_are_named(item, needle):
    with pytest.raises(ConfigError, match=needle):
        validate(Config(env=EnvConfig(env_options=(item,))))


def test_env_options_configure_a_match_env():
    """A 3-second time limit given as an env option ends sf/DoomDuelBots-v0 episodes early."""
    env_cfg = EnvConfig(
        env="sf/DoomDuelBots-v0",
        num_envs=1,
        batch_size=1,
        num_workers=1,
        env_options=("timelimit=0.05", "bot_skill=1"),
    )
    venv = make_env(env_cfg)
    try:
        venv.async_reset(seed=0)
        steps = 0
        while steps < 200:
            *_, truncated, info = venv.recv()
            if truncated.any():
                break
            venv.send([0], info["env_id"])
            steps += 1
        # 0.05 min = 105 tics = 27 steps of 4 tics (the default 2-minute match is 1,050 steps).
        assert steps <= 40
    finally:
        venv.close()
