"""Nothing left behind: a script holding a single env, a duel or a vector env, ended by Ctrl-C,
SIGTERM or SIGKILL, leaves no engine running, no ViZDoom shared memory and no temp folder.

Each script runs in a session of its own with a private TMPDIR; this test knows its engines by
PID and instance id (read from their command lines while they run), so concurrent tests on the
machine do not disturb the checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sf_envs.vector.procs import command_line_option, find_processes

_SCRIPTS = {
    "single": """
import gymnasium as gym, sf_envs
env = gym.make("sf/DoomBasic-v0", obs_size=(64, 36))
env.reset(seed=0)
hosts = [os.getpid()]
""",
    "duel": """
import sf_envs
match = sf_envs.make_match("duel", obs_size=(64, 36))
match.reset(seed=0)
hosts = [os.getpid()]
""",
    "vector": """
from sf_envs.vector import DoomVectorEnv
env = DoomVectorEnv("basic", num_envs=2, num_workers=2, obs_size=(64, 36))
env.reset(seed=0)
hosts = env._core.engine.worker_pids
shm.append("/dev/shm/" + env._core.engine.buffers.name)
""",
}
_PROLOGUE = "import json, os, sys, time\nshm = []\n"
_EPILOGUE = """
print(json.dumps({"hosts": hosts, "shm": shm}), flush=True)
time.sleep(120)
"""
# What ViZDoom creates in /dev/shm per engine (measured), followed by its instance id.
_VIZDOOM_SHM = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")
# Until the owner's end has been swept up (engines killed, files removed).
_SWEEP_LIMIT_S = 20.0


def _alive(pid: int, instance: str) -> bool:
    # The instance id guards against a reused PID.
    return pid in find_processes() and command_line_option(pid, "+viz_instance_id") == instance


def _leftovers(engines: dict[int, str], files: list[str], tmpdir: Path) -> list[str]:
    found = [f"engine {pid}" for pid, instance in engines.items() if _alive(pid, instance)]
    found += [
        f"/dev/shm/{prefix}{instance}"
        for instance in engines.values()
        for prefix in _VIZDOOM_SHM
        if os.path.exists(f"/dev/shm/{prefix}{instance}")
    ]
    found += [f for f in files if os.path.exists(f)]
    return found + [str(p) for p in tmpdir.iterdir()]


@pytest.mark.parametrize(
    ("kind", "how"),
    [
        ("single", "sigint"),
        ("single", "sigterm"),
        ("single", "sigkill"),
        ("duel", "sigint"),
        ("duel", "sigterm"),
        ("duel", "sigkill"),
        ("vector", "sigint"),
        ("vector", "sigterm"),
        ("vector", "sigkill"),
    ],
)
def test_an_ended_owner_leaves_nothing_behind(tmp_path: Path, kind: str, how: str) -> None:
    script = tmp_path / "owner.py"
    script.write_text(_PROLOGUE + _SCRIPTS[kind] + _EPILOGUE)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr.txt", "wb"),  # noqa: SIM115 - closed with the process
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        start_new_session=True,
    )
    engines: dict[int, str] = {}
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, (tmp_path / "stderr.txt").read_text()[-2000:]
        started = json.loads(line)
        for host in started["hosts"]:
            for pid in find_processes(parent=host):
                instance = command_line_option(pid, "+viz_instance_id")
                if instance:
                    engines[pid] = instance
        expected = {"single": 1, "duel": 2, "vector": 2}[kind]
        assert len(engines) == expected, f"engines found: {engines}"
        if how == "sigint":  # Ctrl-C in a terminal signals the whole foreground process group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + _SWEEP_LIMIT_S
        while (left := _leftovers(engines, started["shm"], tmpdir)) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert not left, f"left behind after {how} of the owner: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, instance in engines.items():  # on failure: do not leave them to others
            if _alive(pid, instance):
                os.kill(pid, signal.SIGKILL)
        proc.stdout.close()  # type: ignore[union-attr]
