"""The ``sf-envs`` command line: what a person types to see the scenarios and watch one."""

from __future__ import annotations

import imageio.v2 as imageio
import pytest

import sf_envs
from sf_envs.cli import main


def test_list_prints_every_scenario_id(capsys) -> None:
    assert main(["list"]) == 0
    # Captured output is not a terminal, as in CI or `| tee`: no line is cut or wrapped.
    out = capsys.readouterr().out
    for fragment in (*sf_envs.env_ids(), "Discrete(4)", "300 tics = 75 steps"):
        assert fragment in out
    # The matches, with the ids single-agent libraries use and the self-play id.
    for fragment in ("duel_bots", "sf/DoomDuelBots-v0", "sf/DoomDuel-v0", "deathmatch_bots"):
        assert fragment in out


def test_record_writes_a_gif_of_the_episode(tmp_path, capsys) -> None:
    out = tmp_path / "clips" / "basic.gif"
    assert main(["record", "sf/DoomBasic-v0", "--out", str(out), "--max-steps", "12"]) == 0
    frames = imageio.mimread(out)
    # GIF writers may merge identical consecutive frames, so only bound the count.
    assert 1 < len(frames) <= 12 and frames[0].shape[:2] == (120, 160)
    assert "wrote" in capsys.readouterr().out


def test_bench_reports_frames_per_second(capsys) -> None:
    assert main(["bench", "sf/DoomBasic-v0", "--steps", "50"]) == 0
    assert "env frames/s" in capsys.readouterr().out


def test_unknown_id_exits_2_and_lists_the_known_ids(capsys) -> None:
    assert main(["record", "sf/DoomNoSuchThing-v0"]) == 2
    assert "sf/DoomDefendTheCenter-v0" in capsys.readouterr().out


def test_a_bug_keeps_its_traceback(monkeypatch) -> None:
    """Only errors about what the user gave print as one line; a ValueError from inside is a bug."""

    def broken(_):
        raise ValueError("an internal invariant broke")

    monkeypatch.setattr("sf_envs.cli._list", broken)
    with pytest.raises(ValueError, match="an internal invariant broke"):
        main(["list"])
