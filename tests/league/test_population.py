"""sf-league train on real duels: training matches recorded in the league, PBT exploits that
copy weights and optimiser exactly, lineage in the league, and a resume that restores both."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from support.league import sf_league, tiny_population, tiny_population_flags

from sf_league.cli import main
from sf_league.population.gauntlets import GauntletConfig
from sf_league.population.pbt import PBTConfig
from sf_league.population.run_file import saved_settings
from sf_league.population.training import TRAINING, PopulationConfig, PopulationTrainer, member_name
from sf_league.store import LeagueStore


def test_training_matches_are_league_games_and_pbt_copies_exactly(
    tmp_path: Path, monkeypatch
) -> None:
    run_dir, db = tmp_path / "pop", tmp_path / "pop.sqlite"
    # Gauntlets are tournaments of their own (game processes, seconds each): recorded here.
    played: list[tuple[dict[str, Path], GauntletConfig]] = []
    monkeypatch.setattr(
        "sf_league.population.training.play_gauntlet",
        lambda cfg, checkpoints, *_: played.append((dict(checkpoints), cfg)),
    )
    gauntlet = GauntletConfig(every=3000, players=("noop",), games=1)
    cfg = PopulationConfig(
        tiny_population(run_dir), str(db), PBTConfig(fraction=0.5), gauntlet=gauntlet
    )
    with PopulationTrainer(cfg) as pop:
        pop.train()
        with LeagueStore(db) as store:
            games = [g for g in store.games() if g.scenario == TRAINING]
        assert games, "no training match was recorded"
        # One gauntlet, past 3,000 frames, of each member's checkpoint saved at that moment.
        ((checkpoints, config),) = played
        assert config == gauntlet
        frames = {int(name.split("@")[1]) for name in checkpoints}
        assert len(frames) == 1 and 3000 <= frames.pop() < 4000
        assert [name.split("@")[0] for name in checkpoints] == ["pop/p0", "pop/p1"]
        assert all(
            path.parent.parent.name == f"p{k}" for k, path in enumerate(checkpoints.values())
        )
        assert all(path.is_file() for path in checkpoints.values())
        names = {member_name(run_dir, 0, 0), member_name(run_dir, 1, 0)}
        for game in games:
            assert {s.player for s in game.seats} == names  # members, never one against itself
            assert len(game.settings["versions"]) == 2
            assert game.settings["map"] == "multi_duel"
        # Member 0 won all its recent matches, member 1 lost them: 1 copies 0.
        pop.scores[0].clear()
        pop.scores[0].extend([1.0] * 30)
        pop.scores[1].clear()
        pop.scores[1].extend([0.0] * 30)
        pop.pbt_step()
        trainer = pop.trainer
        src, dst = (trainer.members[p].learner for p in (0, 1))
        for a, b in zip(
            src.model.state_dict().values(), dst.model.state_dict().values(), strict=True
        ):
            assert torch.equal(a, b)
        for k, state in src.optimizer.state_dict()["state"].items():
            assert torch.equal(
                state["exp_avg_sq"], dst.optimizer.state_dict()["state"][k]["exp_avg_sq"]
            )
        assert pop.generations == [0, 1]
        with LeagueStore(db) as store:
            events = store.pbt_events()
            players = {p.name for p in store.players()}
        assert [(e.kind, e.policy, e.generation, e.parent) for e in events] == [
            ("exploit", 1, 1, 0),
            ("explore", 1, 1, None),
        ]
        assert events[0].changes["score"] == [0.0, 1.0]
        assert member_name(run_dir, 1, 1) in players
        for name, (old, new) in events[1].changes.items():  # what explore changed, applied
            key = name.removeprefix("shaping.")
            now = (
                trainer.shaping(1)[key]
                if name.startswith("shaping.")
                else trainer.hyperparameters(1)[key]
            )
            assert now == pytest.approx(new) and old != new
    resumed = PopulationConfig(
        tiny_population(run_dir, frames=8000), str(db), PBTConfig(fraction=0.5)
    )
    with PopulationTrainer(resumed, resume=True) as pop:
        assert pop.generations == [0, 1]  # read back from the league's events
        assert len(pop.scores[0]) > 0  # and the ranking windows from its games
        # The copy was saved with the exploit: member 1 resumes as member 0's copy.
        p0, p1 = (m.learner.model.state_dict() for m in pop.trainer.members)
        assert all(torch.equal(p0[k], p1[k]) for k in p0)


def test_the_cli_trains_resumes_and_prints_the_lineage(tmp_path: Path, capsys) -> None:
    """Trainings run as a user runs them (a child process); the commands that only read the
    league or refuse their flags run in this process (the same main(), no torch start-up)."""
    run_dir, db = tmp_path / "pop", tmp_path / "pop.sqlite"
    common = tiny_population_flags(run_dir, db)
    assert main(["train", *common, "--frames", "2000", "--snapshots", "1"]) == 2
    assert "must divide --num-envs (4)" in capsys.readouterr().err
    league = ("--snapshots", "2", "--snapshot-interval", "1500", "--pfsp", "--pbt-window", "50")
    out = sf_league("train", *common, "--frames", "2000", *league, check=True).stdout
    assert "--resume" in out and "p0..p1" in out  # the members (p2, p3: the frozen slots)
    assert (run_dir / "p1" / "config.json").is_file()
    started = saved_settings(run_dir)
    assert started is not None and started.frozen.pfsp and started.pbt.window == 50
    resume = ("--run-dir", str(run_dir), "--db", str(db), "--frames", "4000", "--resume")
    out = sf_league("train", *resume, "--no-pfsp", check=True).stdout
    assert "resumed" in out
    # The resumed run kept the settings it was not told to change, and saved the one it was.
    resumed = saved_settings(run_dir)
    assert resumed == dataclasses.replace(
        started, frozen=dataclasses.replace(started.frozen, pfsp=False)
    )
    with LeagueStore(db) as store:
        taken = [e.frames for e in store.pbt_events() if e.kind == "snapshot"]
    assert max(taken) >= 3000  # at the started run's 1,500-frame interval after the resume
    assert main(["lineage", "--db", str(db)]) == 0
    lineage = capsys.readouterr().out
    assert "snapshot" in lineage and "exploit" not in lineage  # too short for a PBT step
    # A damaged population.json is refused by name, before anything trains.
    saved = (run_dir / "population.json").read_text()
    (run_dir / "population.json").write_text(saved.replace('"pfsp": false', '"pfsp": '))
    assert main(["train", *resume]) == 2
    assert "population.json cannot be read" in capsys.readouterr().err
    assert main(["train", *common, "--frames", "2000", "--pbt-fraction", "0.9"]) == 2
    assert "--pbt-fraction=0.9" in capsys.readouterr().err
