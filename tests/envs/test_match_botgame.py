"""Bot-only games with a spectating host: results, crash recovery, bad input before any engine."""

from __future__ import annotations

import textwrap

import pytest

from sf_envs.match import MatchError, bot_ladder, botgame, play_bot_game
from sf_envs.match.bots import bot_specs
from sf_envs.match.player import game_args


def test_a_bot_game_reports_every_bot_and_a_consistent_result() -> None:
    levels = sorted(bot_ladder("cig_map02"))
    levels = [levels[0], levels[-1], levels[-1]]
    result = play_bot_game("cig_map02", levels, timelimit=0.3, seed=0)
    names = [b.name for b in bot_specs(levels)]
    assert list(result["frags"]) == names  # the host is not a player of the game
    assert result["bots"] == [{"name": n, "level": lv} for n, lv in zip(names, levels, strict=True)]
    best = max(result["frags"].values())
    leaders = [n for n, f in result["frags"].items() if f == best]
    assert result["draw"] == (len(leaders) > 1)
    assert result["winner"] == (leaders[0] if len(leaders) == 1 else None)


def test_the_host_spectates() -> None:
    config = botgame.bot_game_config("multi_duel", [1, 1], timelimit=0.1)
    assert "+viz_spectator 1" in game_args(config, 0, None, "/tmp/bots.cfg", 10)
    assert config.num_players == 3  # the map's limit: the spectator takes a slot


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# Child programs standing in for botgame._CHILD_CODE; {dir} is the test's folder.
_SEGFAULT_ONCE = textwrap.dedent(
    """
    import os, signal
    marker = os.path.join({dir!r}, "crashed")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGSEGV)
    from sf_envs.match.botgame import _main
    _main()
    """
)
_DIE_WITH_A_RUNNING_ENGINE = textwrap.dedent(
    """
    import os, pickle, signal, sys
    from sf_envs.match.core import MatchCore
    config, seed = pickle.loads(sys.stdin.buffer.read())
    core = MatchCore(config)
    with open(os.path.join({dir!r}, f"pids{{os.getpid()}}"), "w") as f:
        f.write(" ".join(map(str, core.engine_pids)))
    os.kill(os.getpid(), signal.SIGKILL)  # the engine is orphaned, as after a real crash
    """
)


def test_a_crashed_game_is_replayed_in_a_fresh_process(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(botgame, "_CHILD_CODE", _SEGFAULT_ONCE.format(dir=str(tmp_path)))
    result = play_bot_game("cig_map02", [1, 1], timelimit=0.05, seed=3)
    assert (tmp_path / "crashed").exists()
    assert set(result["frags"]) == {"bot1_L1", "bot2_L1"}


def test_repeated_crashes_are_an_error_and_leave_no_engine(monkeypatch, tmp_path) -> None:
    code = _DIE_WITH_A_RUNNING_ENGINE.format(dir=str(tmp_path))
    monkeypatch.setattr(botgame, "_CHILD_CODE", code)
    with pytest.raises(MatchError, match=r"(?s)failed 3 times.*killed by SIGKILL"):
        play_bot_game("multi_duel", [1, 1], timelimit=0.05, seed=3)
    files = list(tmp_path.glob("pids*"))
    assert len(files) == botgame._ATTEMPTS
    pids = [int(p) for f in files for p in f.read_text().split()]
    assert len(pids) == botgame._ATTEMPTS  # one engine per attempt
    for pid in pids:
        assert _gone(pid), f"engine {pid} of a dead game survived"


@pytest.mark.parametrize(
    ("map_name", "levels", "message"),
    [
        ("nowhere", [1, 1], r"unknown map 'nowhere'"),
        ("deathmatch", [1, 1], r"no deathmatch starts"),
        ("cig_map02", [1, 99], r"bot levels on cig_map02 are .*got \[99\]"),
        ("cig_map02", [1, True], r"got \[True\]"),
        ("cig_map02", [1], r"at least 2 bots"),
        ("cig_map02", [], r"at least 2 bots"),
        ("multi_duel", [1, 1, 1], r"multi_duel holds at most 2 bots"),
        ("cig_map02", [1] * 8, r"cig_map02 holds at most 7 bots"),
        ("cig_map02", 1, r"a list of levels"),
    ],
)
def test_bad_bot_games_fail_before_any_engine_starts(monkeypatch, map_name, levels, message):
    def no_game(*args, **kwargs):
        raise AssertionError("a game was started")

    monkeypatch.setattr(botgame, "_play_in_child", no_game)
    with pytest.raises(ValueError, match=message):
        play_bot_game(map_name, levels, timelimit=0.1)


def test_a_bad_time_limit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"(?s)timelimit must be a positive.*") as info:
        botgame.bot_game_config("cig_map02", [1, 1], timelimit=0)
    assert "invalid bot game" in str(info.value)
