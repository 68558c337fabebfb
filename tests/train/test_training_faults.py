"""Training rides through faults injected into its real processes: a vector worker killed
(SIGKILL) or hung (SIGSTOP), a ViZDoom engine killed under a worker, a match engine killed
during self-play. Each run must go on past the restart, record it (TensorBoard
``perf/worker_restarts`` and a log line) and leave no process behind."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from support.runs import faults_config
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sf_envs.lifecycle import command_line_option, find_processes
from sf_train.config.schema import Config, EnvConfig
from sf_train.run.trainer import Progress, Trainer, TrainResult

FAULT_AT = 2_000
"""Frames trained before the fault is injected."""
AFTER_RESTART = 4_000
"""Frames the run must train after a replacement worker appears."""
Fault = Callable[[Trainer], list[int]]
"""Injects a fault into a running trainer's env; returns the processes it hit."""


def _train_through(cfg: Config, fault: Fault) -> tuple[TrainResult, list[int], list[int]]:
    """Trains, injects ``fault`` after FAULT_AT frames and stops AFTER_RESTART frames after a
    replacement worker appears; returns the result, every worker the run had and the processes hit."""
    workers: set[int] = set()
    first: set[int] = set()
    hit: list[int] = []
    restarted_at: list[int] = []
    with Trainer(cfg) as trainer:

        def on_progress(p: Progress) -> None:
            pids = set(trainer.venv.worker_pids)
            first.update(pids if not workers else ())
            workers.update(pids)
            if not hit and p.frames >= FAULT_AT:
                hit.extend(fault(trainer))
            if hit and not restarted_at and pids - first:  # a replacement is running
                restarted_at.append(p.frames)
            if restarted_at and p.frames >= restarted_at[0] + AFTER_RESTART:
                trainer.request_stop()

        trainer.on_progress = on_progress
        result = trainer.train()
        workers.update(trainer.venv.worker_pids)
    assert hit and restarted_at, "the fault was not injected or no worker was replaced"
    assert result.frames >= restarted_at[0] + AFTER_RESTART
    return result, sorted(workers), hit


def _assert_recorded(result: TrainResult, run_dir: Path, caplog: pytest.LogCaptureFixture):
    assert result.worker_restarts >= 1
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0}).Reload()
    assert max(e.value for e in acc.Scalars("perf/worker_restarts")) == result.worker_restarts
    assert "vector worker restart" in caplog.text


def _assert_gone(pids: list[int]) -> None:
    for pid in pids:
        assert find_processes(group=pid) == [], f"process group {pid} still has processes"
        assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid), f"process {pid} alive"


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


def _engines(worker: int) -> list[int]:
    """The ViZDoom engine processes a worker started (its process group, less itself)."""
    return sorted(p for p in find_processes(group=worker) if p != worker)


_SHM_PREFIXES = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")


def _kill_engine(trainer: Trainer) -> list[int]:
    """SIGKILLs one engine of the first worker, noting the game files of all its engines."""
    engines = _engines(trainer.venv.worker_pids[0])
    _engine_instances.extend(command_line_option(e, "+viz_instance_id") for e in engines)
    _killed_instances.append(_engine_instances[len(_engine_instances) - len(engines)])
    os.kill(engines[0], signal.SIGKILL)
    return engines


_engine_instances: list[str | None] = []
_killed_instances: list[str | None] = []


def _shm_files(instances: list[str | None]) -> list[str]:
    return [
        f"/dev/shm/{prefix}{i}"
        for i in instances
        if i
        for prefix in _SHM_PREFIXES
        if os.path.exists(f"/dev/shm/{prefix}{i}")
    ]


@pytest.fixture(autouse=True)
def _files_of_killed_engines():
    """An engine killed by SIGKILL cannot remove its /dev/shm files: the test's own mess,
    removed here; every other engine's files must be gone (checked by the tests)."""
    yield
    for path in _shm_files(_killed_instances):
        Path(path).unlink(missing_ok=True)
    _killed_instances.clear()
    _engine_instances.clear()


def _assert_no_files_of_survivors() -> None:
    survivors = [i for i in _engine_instances if i not in _killed_instances]
    assert survivors and _shm_files(survivors) == []


def _doom_basic(**settings) -> EnvConfig:
    return EnvConfig(num_envs=8, batch_size=4, num_workers=2, **settings)


def test_a_killed_worker_is_restarted_and_training_goes_on(tmp_path, caplog):
    caplog.set_level(logging.WARNING)

    def kill_worker(trainer: Trainer) -> list[int]:
        victim = trainer.venv.worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        return [victim]

    cfg = faults_config(tmp_path / "run", _doom_basic())
    result, workers, _ = _train_through(cfg, kill_worker)
    _assert_recorded(result, tmp_path / "run", caplog)
    assert result.dropped_frames > 0
    _assert_gone(workers)


def test_a_hung_worker_neither_starves_nor_stops_training(tmp_path, caplog):
    """The stopped worker's envs hold the oldest batch while the others fill every other batch;
    their columns go to the healthy envs, and the worker is replaced after worker_timeout."""
    caplog.set_level(logging.WARNING)

    def stop_worker(trainer: Trainer) -> list[int]:
        victim = trainer.venv.worker_pids[0]
        os.kill(victim, signal.SIGSTOP)
        return [victim]

    cfg = faults_config(tmp_path / "run", _doom_basic(worker_timeout=3.0))
    result, workers, _ = _train_through(cfg, stop_worker)
    _assert_recorded(result, tmp_path / "run", caplog)
    _assert_gone(workers)


def test_an_engine_killed_under_a_worker_is_survived(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    cfg = faults_config(tmp_path / "run", _doom_basic())
    result, workers, engines = _train_through(cfg, _kill_engine)
    _assert_recorded(result, tmp_path / "run", caplog)
    _assert_gone(workers + engines)
    _assert_no_files_of_survivors()


def test_a_match_engine_killed_during_self_play_is_survived(tmp_path, caplog):
    """sf/DoomDuel-v0 against a pool of past selves: learning and opponent rows both restart."""
    caplog.set_level(logging.WARNING)
    env = EnvConfig(
        env="sf/DoomDuel-v0",
        num_envs=8,
        batch_size=4,
        num_workers=2,
        env_options=("timelimit=0.2",),
    )
    cfg = faults_config(tmp_path / "run", env)
    cfg.algo.opponent_pool = 2
    cfg.algo.num_minibatches = 1
    result, workers, engines = _train_through(cfg, _kill_engine)
    _assert_recorded(result, tmp_path / "run", caplog)
    _assert_gone(workers + engines)
    _assert_no_files_of_survivors()
