"""Ctrl-C and SIGTERM end `sf-train train` as its frame budget does: a final checkpoint, its
evaluation and the done line, and no episode that the stop cut short counted anywhere (the
progress window, TensorBoard, the window kept in the checkpoint)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import support
from support.runs import scalars

from sf_envs.lifecycle.procs import interruptible
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint
from sf_train.run.interrupts import STOP_SIGNALS, stop_on_signals

EPISODE_LENGTH = 50
"""Steps of every toy episode: any other length in a window is an episode the stop cut."""


def _start(run_dir: Path, flags: list[str], samplers: int, log: Path) -> subprocess.Popen:
    tests = str(Path(support.__file__).resolve().parents[1])  # for sampler processes' imports
    command = [
        sys.executable,
        "-m",
        "sf_train.cli",
        "train",
        *flags,
        "--run-dir",
        str(run_dir),
        "--frames",
        "100000000",
        "--env-options",
        f"episode_length={EPISODE_LENGTH}",
        "--checkpoint-every",
        "2000",
        "--eval-episodes",
        "4",
        "--num-samplers",
        str(samplers),
    ]
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    with open(log, "wb") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,
            preexec_fn=interruptible,
        )


def _wait_for_checkpoints(proc: subprocess.Popen, run_dir: Path, log: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while len(list((run_dir / "checkpoints").glob("checkpoint_*.pt"))) < count:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the run wrote no checkpoints in 120 s"
        time.sleep(0.2)


@pytest.mark.parametrize(("how", "samplers"), [("sigterm", 1), ("sigint", 2)])
def test_a_stopped_run_reports_only_episodes_that_ended(
    tmp_path: Path, toy_flags: list[str], how: str, samplers: int
) -> None:
    """Stopped mid-episode (Ctrl-C to the whole process group, as a terminal sends it, or
    SIGTERM to the trainer, as a scheduler does), with sampler processes or without."""
    run_dir, log = tmp_path / "run", tmp_path / "train.log"
    proc = _start(run_dir, toy_flags, samplers, log)
    try:
        _wait_for_checkpoints(proc, run_dir, log, 2)
        if how == "sigint":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        returncode = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out = log.read_text()
    assert returncode == 0, out[-3000:]
    assert f"{signal.Signals[how.upper()].name}: ending after this batch" in out
    assert "done:" in out and "evaluation over" in out, out[-3000:]

    final = load_checkpoint(find_checkpoint(run_dir, "latest"))
    done_frames = int(out.rsplit("done: ", 1)[1].split(" frames", 1)[0].replace(",", ""))
    assert final["frames"] == done_frames  # the policy at the stop, saved
    kept = [v for values in final["episode_lengths"]["values"].values() for v in values]
    assert kept and set(kept) == {EPISODE_LENGTH}
    logged = scalars(run_dir)["charts/episodic_length"]
    assert logged and set(logged) == {float(EPISODE_LENGTH)}


def test_the_first_signal_asks_to_stop_and_the_second_acts_as_before() -> None:
    calls: list[str] = []
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}

    def previous(signum: int, frame: object) -> None:
        calls.append(f"previous {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, previous)
    try:
        with stop_on_signals(lambda: calls.append("stop")):
            os.kill(os.getpid(), signal.SIGTERM)
            assert calls == ["stop"]
            os.kill(os.getpid(), signal.SIGTERM)
            assert calls == ["stop", "previous SIGTERM"]
        assert signal.getsignal(signal.SIGTERM) is previous
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
