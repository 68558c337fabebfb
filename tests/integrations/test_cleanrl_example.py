"""The CleanRL-style PPO example (examples/cleanrl_ppo_doom.py) runs end to end on Doom basic."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (the example trains a torch model)")
pytest.importorskip("tensorboard", reason="tensorboard is not installed (the example logs to it)")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "cleanrl_ppo_doom.py"


def test_cleanrl_ppo_example_trains_and_logs_episode_statistics(tmp_path: Path) -> None:
    # 4 envs x 128 steps x 2 iterations: Doom basic episodes end within 75 steps (300 tics,
    # frame skip 4), so every env finishes several episodes.
    args = ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "128"]
    args += ["--num-workers", "2", "--update-epochs", "2", "--seed", "3", "--eval-episodes", "8"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]

    returns = [float(r) for r in re.findall(r"episodic_return=(-?[\d.]+)", done.stdout)]
    assert returns, done.stdout
    # Doom basic: -1 per tic for at most 300 tics, -5 per missed shot, +100 for the kill.
    assert all(-500 <= r <= 100 for r in returns)
    # The final policy is evaluated on 8 fresh episodes, 2 per env.
    assert re.search(r"evaluation: return -?[\d.]+ \+- [\d.]+ over 8 episodes", done.stdout)

    event_files = list((tmp_path / "runs").glob("*/events.out.tfevents.*"))
    assert len(event_files) == 1
    events = EventAccumulator(str(event_files[0].parent))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/episodic_length", "charts/SPS"} <= tags
    assert {"losses/value_loss", "losses/policy_loss", "losses/approx_kl"} <= tags
    assert "eval/episodic_return" in tags
    # One scalar per ended episode, taken from RecordEpisodeStatistics's info["episode"].
    lengths = [e.value for e in events.Scalars("charts/episodic_length")]
    assert len(lengths) >= 4 and all(1 <= n <= 75 for n in lengths)
    assert [e.step for e in events.Scalars("losses/value_loss")] == [512, 1024]
