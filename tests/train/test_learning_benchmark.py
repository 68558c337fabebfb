"""benchmarks/learning.py: a run in two sittings (the second resumes the first; each stopped as
Ctrl-C stops a run) scored against its goal, and seconds that count training sessions only."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from torch.utils.tensorboard import SummaryWriter

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "learning.py"


@pytest.fixture
def learning(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as `python benchmarks/learning.py` has
    spec = importlib.util.spec_from_file_location("learning", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "learning", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _session(run_dir: Path, start: float, points: list[tuple[int, float, float]]) -> None:
    """An event file of one training session starting at ``start`` (Unix seconds), as sf-train
    names them; ``points`` are (frames, value, seconds into the session)."""
    writer = SummaryWriter(str(run_dir), filename_suffix=f".{int(start)}")
    for frames, value, seconds in points:
        writer.add_scalar("eval/timeout_fraction", value, frames, walltime=start + seconds)
    writer.close()
    (written,) = [
        p for p in run_dir.glob("events.out.tfevents.*") if p.name.endswith(f".{int(start)}")
    ]
    written.rename(run_dir / f"events.out.tfevents.{int(start)}.host.1.0")


def test_seconds_leave_out_the_time_between_sessions(tmp_path: Path, learning: ModuleType) -> None:
    _session(tmp_path, 1_000_000, [(100, 0.9, 0.0), (200, 0.5, 60.0)])
    _session(tmp_path, 1_086_400, [(300, 0.3, 0.0), (400, 0.1, 30.0)])  # a day later
    points = learning.read_series(tmp_path)["eval/timeout_fraction"]
    assert [(f, round(s)) for f, _, s in points] == [(100, 0), (200, 60), (300, 60), (400, 90)]
    goal = learning.Goal(0.2, timeouts=True)
    assert learning.first_reaching(points, goal) == (400, pytest.approx(90.0))
    assert learning.first_reaching(points, learning.Goal(0.95, timeouts=False)) is None
    assert str(goal) == "time-outs <= 20%"


def test_a_run_goes_on_across_sittings(tmp_path: Path) -> None:
    """Two sittings that each end at a frame budget (the second raises it, as a resumed run
    may); the second resumes the first's run. Stopping a sitting by its clock is SIGTERM, the
    stop tests/train/test_interrupts.py checks."""
    out = tmp_path / "learning"
    command = [sys.executable, str(SCRIPT), "--ids", "CartPole-v1", "--sitting", "600"]
    command += ["--episodes", "2", "--goal", "500", "--out", str(out), "--"]
    command += ["--eval-episodes", "2", "--num-envs", "4", "--batch-size", "2"]
    frames = []
    for budget in (2000, 4000):
        done = subprocess.run(
            [*command, "--frames", str(budget)], capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        (row,) = json.loads((out / "results.json").read_text())
        frames.append(row["frames"])
    assert 2000 <= frames[0] < 4000 <= frames[1]  # the second sitting went on from the first
    assert len(list((out / "runs" / "CartPole-v1").glob("events.out.tfevents.*"))) == 2
    assert 0 < row["training_seconds"] < 120 and row["best"]["episodes"] == 2
    assert row["goal"] == ">= 500" and "| `CartPole-v1` |" in done.stdout
    assert (out / "CartPole-v1.png").stat().st_size > 0


GRACEFUL = """
import signal, sys, time
from pathlib import Path
def stop(*_):
    time.sleep(1.5)  # a final checkpoint and evaluation
    Path("ended").write_text("gracefully")
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
time.sleep(60)
"""


@pytest.mark.parametrize(
    ("grace", "signal_used", "ended"), [(20.0, "SIGINT", True), (0.3, "SIGTERM", False)]
)
def test_a_stopped_sitting_is_given_its_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: float, signal_used: str, ended: bool
) -> None:
    """A sitting stops its run with SIGINT and waits ``grace`` seconds for the final
    checkpoint before stopping it harder."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    from common.supervise import run_for

    ran = run_for([sys.executable, "-c", GRACEFUL], tmp_path, seconds=1.0, grace=grace)
    assert ran.stop_signal == signal_used
    assert (tmp_path / "ended").exists() == ended
    assert ran.leftover_processes == (0 if ended else 1)  # outlived the first signal
