"""Game processes: open matches are reused between games of one setup, and dropped when broken."""

from __future__ import annotations

from typing import Any

import pytest

import sf_envs.match
from sf_envs.match import MatchError, bot_ladder
from sf_league.tournament.game import AgentSeat, GameJob, MatchCache, play_game

TOP = max(bot_ladder("multi_duel"))


def job(key: str, bot_level: int = TOP, timelimit: float = 0.25) -> GameJob:
    return GameJob(
        key=key,
        scenario="duel_bots",
        match_kwargs={
            "map": "multi_duel",
            "num_agents": 1,
            "num_bots": 1,
            "bot_skill": [bot_level],
            "timelimit": timelimit,
            "obs_size": (32, 24),
        },
        agents=(AgentSeat("noop", "noop"),),
        bots=(f"bot:{bot_level}",),
        seed=7,
        settings={},
    )


class FakeMatch:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_cache_reuses_per_setup_evicts_the_oldest_and_discards(monkeypatch) -> None:
    monkeypatch.setattr(sf_envs.match, "make_match", lambda scenario, **kw: FakeMatch(**kw))
    cache = MatchCache(size=2)
    a = cache.get(job("g0"), None)
    assert cache.get(job("g1"), None) is a  # same setup, another game
    b = cache.get(job("g2", timelimit=0.5), None)
    c = cache.get(job("g3", timelimit=0.75), None)
    assert a.closed == 1 and not b.closed and not c.closed  # the oldest was closed
    assert cache.get(job("g4", timelimit=0.5), None) is b
    cache.discard(b)
    assert b.closed == 1 and cache.get(job("g5", timelimit=0.5), None) is not b
    cache.close()
    cache.close()  # idempotent
    assert c.closed == 1


def test_a_reused_match_plays_whole_fresh_games() -> None:
    cache = MatchCache()
    try:
        first = play_game(job("g0"), cache=cache)
        (env,) = cache._open.values()
        second = play_game(job("g1"), cache=cache)
        assert list(cache._open.values()) == [env]  # reset, not restarted
    finally:
        cache.close()
    # A quarter minute at 4 tics a step, both times: the reset restarted the clock.
    assert first.steps == second.steps == 0.25 * 60 * 35 // 4
    for record in (first, second):
        noop, bot = record.seats
        assert noop.frags <= 0 and noop.deaths >= 0 and bot.deaths is None


def test_a_match_that_raised_is_closed_and_forgotten(monkeypatch) -> None:
    class Broken(FakeMatch):
        possible_agents = ("player_0",)

        def reset(self, seed: int | None = None) -> Any:
            raise MatchError("engine crashed")

    monkeypatch.setattr(sf_envs.match, "make_match", lambda scenario, **kw: Broken(**kw))
    cache = MatchCache()
    with pytest.raises(MatchError, match="crashed"):
        play_game(job("g0"), cache=cache)
    assert not cache._open


@pytest.mark.parametrize("opponent", ["scripted", "bot"])
def test_games_without_agents_are_played_by_the_scripted_players(opponent: str) -> None:
    kwargs: dict[str, Any] = {"map": "multi_duel", "num_agents": 0, "timelimit": 0.25}
    if opponent == "bot":
        kwargs |= {"num_scripted": 1, "scripted_skill": [3], "num_bots": 1, "bot_skill": [1]}
        names = {"bots": ("bot:1",), "scripted": ("scripted:3",)}
    else:
        kwargs |= {"num_scripted": 2, "scripted_skill": [4, 3], "num_bots": 0}
        names = {"bots": (), "scripted": ("scripted:4", "scripted:3")}
    game = GameJob(
        key="s0",
        scenario="duel_scripted",
        match_kwargs=kwargs,
        agents=(),
        seed=3,
        settings={},
        **names,
    )
    record = play_game(game)
    assert [s.player for s in record.seats] == [*names["scripted"], *names["bots"]]
    assert record.steps == 0  # no agent stepped
    scripted_seats = record.seats[: len(names["scripted"])]
    assert all(s.deaths is not None and s.deaths >= 0 for s in scripted_seats)
