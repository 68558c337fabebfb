"""sf-train makes every env alike, from any gymnasium id or ``MODULE:ID``."""

from __future__ import annotations

import sys

import gymnasium as gym
import pytest

from sf_train.envs import env_spec


def test_module_colon_id_imports_the_module_that_registers_the_id(tmp_path, monkeypatch):
    (tmp_path / "registers_an_env.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('SfTrainTestEnv-v0', entry_point='registers_an_env:Nothing')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert "SfTrainTestEnv-v0" not in gym.registry
        spec = env_spec("registers_an_env:SfTrainTestEnv-v0")
        assert spec.id == "SfTrainTestEnv-v0"
    finally:
        gym.registry.pop("SfTrainTestEnv-v0", None)
        sys.modules.pop("registers_an_env", None)


@pytest.mark.parametrize("env_id", ["NoSuchEnv-v0", "no_such_module:NoSuchEnv-v0"])
def test_unknown_ids_name_the_fix(env_id):
    with pytest.raises(ValueError, match=r"sf/DoomBasic-v0.*or MODULE:ID"):
        env_spec(env_id)
