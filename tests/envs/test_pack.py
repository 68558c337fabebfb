"""The scenario pack: fetched from the package index, found, listed, and missed clearly."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import sf_envs
from sf_envs.cli import main
from sf_envs.pack import (
    PACK_ENV_VAR,
    SAMPLE_FACTORY_PACK,
    PackMissingError,
    PackSource,
    fetch_pack,
    pack_dir,
)

PACK_IDS = [s.env_id for s in sf_envs.SCENARIOS.values() if s.in_pack]


def test_the_pack_holds_the_papers_scenarios_and_records_its_source(scenario_pack) -> None:
    manifest = json.loads((scenario_pack / "pack.json").read_text())
    assert manifest["source"] == "sample-factory==2.1.1"
    assert manifest["sha256"] == SAMPLE_FACTORY_PACK.sha256
    for name in (
        "battle.cfg",
        "battle.wad",
        "battle2.wad",
        "ssl2.wad",
        "dwango5.wad",
        "freedm.wad",
    ):
        assert name in manifest["files"] and (scenario_pack / name).is_file()
    assert PACK_IDS == ["sf/DoomBattle-v0", "sf/DoomBattle2-v0"]


def test_the_folder_comes_from_the_flag_then_the_variable_then_the_xdg_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(PACK_ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pack_dir() == tmp_path / "xdg" / "sf-envs" / "scenarios"
    monkeypatch.setenv(PACK_ENV_VAR, str(tmp_path / "mine"))
    assert pack_dir() == tmp_path / "mine"
    assert pack_dir(tmp_path / "flag") == tmp_path / "flag"


def test_a_missing_pack_names_the_fetch_command(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv(PACK_ENV_VAR, str(tmp_path / "empty"))
    with pytest.raises(PackMissingError, match="sf-envs scenarios fetch"):
        gym.make("sf/DoomBattle-v0")
    with pytest.raises(PackMissingError, match="sf-envs scenarios fetch"):
        gym.make_vec("sf/DoomBattle-v0", 2, num_workers=1)
    assert main(["record", "sf/DoomBattle-v0", "--out", str(tmp_path / "x.gif")]) == 2
    assert "sf-envs scenarios fetch" in capsys.readouterr().out
    assert main(["scenarios", "list"]) == 1


def test_a_wheel_with_another_hash_installs_nothing(tmp_path) -> None:
    forged = PackSource(**{**SAMPLE_FACTORY_PACK.__dict__, "sha256": "0" * 64})
    with pytest.raises(RuntimeError, match="not the pinned"):
        fetch_pack(tmp_path / "scenarios", forged)
    assert not (tmp_path / "scenarios").exists()
    assert list(tmp_path.iterdir()) == []  # no staging folder left either


def test_fetch_replaces_an_earlier_pack_and_list_shows_it(tmp_path, capsys) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "stale.cfg").write_text("")
    assert main(["scenarios", "fetch", "--dir", str(folder)]) == 0
    assert not (folder / "stale.cfg").exists() and (folder / "battle.cfg").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenarios"]
    capsys.readouterr()
    assert main(["scenarios", "list", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "sample-factory==2.1.1" in out and "battle.cfg  -> sf/DoomBattle-v0" in out


@pytest.mark.parametrize("env_id", PACK_IDS)
def test_pack_ids_reward_each_kill_and_run_in_the_vector_engine(env_id, scenario_pack) -> None:
    env = gym.make(env_id, obs_size=(64, 36))
    rng = np.random.default_rng(0)
    try:
        for seed in range(2):
            env.reset(seed=seed)
            episode_return, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, info = env.step(int(rng.integers(13)))
                episode_return += reward
                assert episode_return == info["killcount"]  # +1 per kill, nothing else
                done = terminated or truncated
    finally:
        env.close()
    with gym.make_vec(env_id, 2, num_workers=1, obs_size=(64, 36)) as envs:
        obs, _ = envs.reset(seed=0)
        obs, *_ = envs.step(np.zeros(2, np.int64))
        assert obs.shape == (2, 3, 36, 64) and envs.single_action_space.n == 13


@pytest.mark.parametrize(
    ("scenario", "map_name", "bots"),
    [
        ("deathmatch_bots", "ssl2", 3),
        ("deathmatch_bots", "dwango5", 7),
        ("deathmatch_bots", "freedm", 7),
    ],
)
def test_the_papers_matches_run_on_the_pack_maps(scenario, map_name, bots, scenario_pack) -> None:
    env = sf_envs.make_match(
        scenario, map=map_name, num_bots=bots, timelimit=0.5, obs_size=(64, 36)
    )
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        while env.agents:
            *_, infos = env.step({a: int(rng.integers(env.action_space(a).n)) for a in env.agents})
        match = infos["player_0"]["match"]
        assert len(match["bots"]) == bots and sum(match["frags"].values()) != 0  # they met
    finally:
        env.close()


def test_a_pack_map_without_the_pack_is_refused_up_front(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(PACK_ENV_VAR, str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="sf-envs scenarios fetch"):
        sf_envs.make_match("duel", map="ssl2")
