"""Which games are rated together (pure: no engine, no database)."""

from __future__ import annotations

from support.league import duel_settings

from sf_league.ratings.groups import GameGroup, GroupSelection, group_games
from sf_league.store import GameRecord, Seat


def test_bot_games_join_every_group_of_their_map_and_time_limit() -> None:
    bots = GameRecord("b", "bot_game", (Seat("x", 1), Seat("y", 0)), {"map": "m", "timelimit": 1})
    agents = [
        GameRecord(
            f"a{fs}", "duel_bots", (Seat("p", 1, 0), Seat("x", 0)), duel_settings(fs, "m", 1)
        )
        for fs in (2, 4)
    ]
    other_map = GameRecord(
        "o", "bot_game", (Seat("x", 1), Seat("y", 0)), {"map": "n", "timelimit": 1}
    )
    groups = group_games([agents[0], bots, agents[1], other_map])
    assert {g: [game.key for game in games] for g, games in groups.items()} == {
        GameGroup("duel", "m", 1.0, 2): ["a2", "b"],
        GameGroup("duel", "m", 1.0, 4): ["b", "a4"],
        GameGroup("duel", "n", 1.0, None): ["o"],
    }
    assert GroupSelection(scenario="duel_bots", frame_skip=4).accepts(
        GameGroup("duel", "m", 1.0, 4)
    )
    assert not GroupSelection(map="n").accepts(GameGroup("duel", "m", 1.0, 4))
