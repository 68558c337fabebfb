"""Nothing left behind: a script holding a single env, a duel or a vector env, ended by Ctrl-C,
SIGTERM or SIGKILL, leaves no engine running, no shared memory and no temp folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.owner import end_owner

_SCRIPTS = {
    "single": """
import gymnasium as gym, sf_envs
env = gym.make("sf/DoomBasic-v0", obs_size=(64, 36))
env.reset(seed=0)
""",
    "duel": """
import sf_envs
match = sf_envs.make_match("duel", obs_size=(64, 36))
match.reset(seed=0)
""",
    "vector": """
from sf_envs.vector import DoomVectorEnv
env = DoomVectorEnv("basic", num_envs=2, num_workers=2, obs_size=(64, 36))
env.reset(seed=0)
""",
}
_ENGINES = {"single": 1, "duel": 2, "vector": 2}


@pytest.mark.parametrize("how", ["sigint", "sigterm", "sigkill"])
@pytest.mark.parametrize("kind", ["single", "duel", "vector"])
def test_an_ended_owner_leaves_nothing_behind(tmp_path: Path, kind: str, how: str) -> None:
    script = tmp_path / "owner.py"
    script.write_text(_SCRIPTS[kind] + "import time\ntime.sleep(120)\n")
    left = end_owner([sys.executable, str(script)], tmp_path, how, _ENGINES[kind])
    assert not left, f"left behind after {how} of the owner: {left}"
