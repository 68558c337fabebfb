"""Networked engines start through the spin-yield launcher; without a compiler they run as is
and say so; the lock step is unchanged."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from sf_envs.match import MatchConfig, MatchCore, spin

SMALL = {"timelimit": 0.05, "obs_size": (40, 30)}
needs_compiler = pytest.mark.skipif(
    not (shutil.which("cc") or shutil.which("gcc")),
    reason="no C compiler on PATH: networked engines run without the spin-yield launcher",
)


def _preloaded(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as f:
        return "spin_yield.so" in f.read()


def _play(core: MatchCore, steps: int) -> None:
    n = core.num_agents
    obs = np.zeros((n, *core.config.options.obs_shape), dtype=np.uint8)
    core.reset(0, obs, None)
    for _ in range(steps):
        core.step(np.zeros(n, dtype=np.int64), obs, None)
        times = core.episode_times()
        assert len(set(times)) == 1, f"players out of step: {times}"


@needs_compiler
def test_a_duels_engines_yield_while_they_wait_and_stay_in_lock_step():
    with MatchCore(MatchConfig.create("duel", **SMALL)) as core:
        assert core.engine_pids and all(_preloaded(pid) for pid in core.engine_pids)
        _play(core, 10)


def test_an_engine_without_peers_starts_as_it_is():
    with MatchCore(MatchConfig.create("duel_bots", bot_skill=1, **SMALL)) as core:
        assert core.engine_pids and not any(_preloaded(pid) for pid in core.engine_pids)


def test_the_launcher_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(spin.SPIN_YIELD_ENV_VAR, "0")
    assert spin.engine_path() is None
    with MatchCore(MatchConfig.create("duel", **SMALL)) as core:
        assert not any(_preloaded(pid) for pid in core.engine_pids)
        _play(core, 3)


@needs_compiler
def test_the_launcher_is_built_once_into_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(spin, "_built", {})
    path = spin.engine_path()
    assert path is not None and path.startswith(str(tmp_path / "sf-envs" / "engine"))
    built = {p.name for p in (tmp_path / "sf-envs" / "engine").rglob("*") if p.is_file()}
    folders = [p for p in (tmp_path / "sf-envs" / "engine").rglob("*") if p.is_dir()]
    assert built == {"vizdoom", "spin_yield.so"} and len(folders) == 1  # no temporary leftovers
    monkeypatch.setattr(spin, "_built", {})
    assert spin.engine_path() == path  # found, not rebuilt


def test_without_a_compiler_matches_run_as_is_and_warn_with_the_fix(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(spin, "_built", {})
    with caplog.at_level(logging.WARNING, logger=spin.__name__):
        assert spin.engine_path() is None
        assert spin.engine_path() is None
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, "warned more than once per process"
    assert "Install a C compiler" in warnings[0] and spin.SPIN_YIELD_ENV_VAR in warnings[0]
