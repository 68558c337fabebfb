"""Tournament planning: who meets whom, in which kind of game, under which keys (no engine)."""

from __future__ import annotations

import pytest

from sf_envs.match import bot_ladder
from sf_league.tournament.players import PlayerError, parse_player
from sf_league.tournament.schedule import BOT_GAME, TournamentConfig, TournamentError, plan_games

# Bot names given explicitly, so two bots exist whatever the size of the map's ladder.
TOP = max(bot_ladder("multi_duel"))


def players(*texts: str, map_name: str = "multi_duel"):
    return [parse_player(t, map_name) for t in texts]


def test_round_robin_stages_bot_against_bot_with_a_spectating_host() -> None:
    field = players("random", "noop", "b1=bot:1", f"b2=bot:{TOP}")
    jobs = plan_games(TournamentConfig(games=3, timelimit=0.5), field)
    by_kind: dict[str, list] = {}
    for job in jobs:
        by_kind.setdefault(job.scenario, []).append(job)
    assert {k: len(v) for k, v in by_kind.items()} == {"duel": 3, "duel_bots": 12, BOT_GAME: 3}
    bot_game = by_kind[BOT_GAME][0]
    assert bot_game.agents == () and bot_game.bots == ("b1", "b2")
    assert bot_game.match_kwargs == {"map": "multi_duel", "bot_levels": [1, TOP], "timelimit": 0.5}
    assert bot_game.settings == {"scenario": BOT_GAME, "map": "multi_duel", "timelimit": 0.5}
    keys = [j.key for j in jobs]
    assert len(set(keys)) == len(keys)
    # Keys are stable across reruns (resume) and seeds follow the keys.
    again = plan_games(TournamentConfig(games=3, timelimit=0.5), field)
    assert [(j.key, j.seed) for j in again] == [(j.key, j.seed) for j in jobs]


def test_gauntlet_of_a_bot_against_bots_and_a_baseline() -> None:
    field = players("b1=bot:1", f"b2=bot:{TOP}", "random")
    jobs = plan_games(TournamentConfig(format="gauntlet", games=2), field)
    assert sorted({(j.scenario, j.bots) for j in jobs}) == [
        (BOT_GAME, ("b1", "b2")),
        ("duel_bots", ("b1",)),
    ]
    # Without --timelimit a bot game lasts as long as the scenario's agent games.
    bot_job = next(j for j in jobs if j.scenario == BOT_GAME)
    duel_job = next(j for j in jobs if j.scenario == "duel_bots")
    assert bot_job.match_kwargs["timelimit"] == duel_job.settings["timelimit"]


def test_free_for_all_of_bots_only_is_one_bot_game_per_round() -> None:
    field = players("a=bot:1", "b=bot:1", "c=bot:1", map_name="cig_map02")
    jobs = plan_games(TournamentConfig(scenario="deathmatch_bots", games=2), field)
    assert [j.scenario for j in jobs] == [BOT_GAME, BOT_GAME]
    assert jobs[0].bots == ("a", "b", "c") and jobs[0].match_kwargs["map"] == "cig_map02"


def test_map_override_reaches_agent_games_and_bot_games() -> None:
    field = players("random", "a=bot:1", "b=bot:1", map_name="cig_map01")
    jobs = plan_games(TournamentConfig(map="cig_map01", games=1), field)
    assert {j.settings["map"] for j in jobs} == {"cig_map01"}
    assert {j.scenario for j in jobs} == {"duel_bots", BOT_GAME}


def test_lineups_a_map_cannot_hold_are_refused_before_any_game() -> None:
    # multi_duel holds 3 players: the spectating host and 2 bots.
    field = players("a=bot:1", "b=bot:1", "c=bot:1")
    with pytest.raises(TournamentError, match="at most 2 bots"):
        plan_games(TournamentConfig(scenario="deathmatch_bots", map="multi_duel"), field)
    with pytest.raises(TournamentError, match="--map: unknown map"):
        plan_games(TournamentConfig(map="e1m1"), players("random", "noop"))
    with pytest.raises(PlayerError, match=f"use bot:{TOP}"):
        parse_player(f"bot:{TOP + 1}", "multi_duel")


def test_a_recalibrated_bot_level_is_another_player() -> None:
    (bot,) = players("bot:1")
    (same,) = players("bot:1")
    assert bot.record() == same.record()
    assert bot.record().fingerprint.startswith("multi_duel:1:")
    (elsewhere,) = players("bot:1", map_name="cig_map02")
    assert elsewhere.record().fingerprint != bot.record().fingerprint


def test_a_named_baseline_plays_as_its_baseline() -> None:
    (job,) = plan_games(TournamentConfig(games=1), players("me=random", "noop"))
    assert {seat.player: seat.kind for seat in job.agents} == {"me": "random", "noop": "noop"}
    assert parse_player("me=random", "multi_duel").record().spec == "random"


def test_scripted_players_get_seats_of_their_own_and_alternate_hosting() -> None:
    field = players("random", "s3=scripted:3", "s4=scripted:4", "bot:1")
    jobs = plan_games(TournamentConfig(games=2, timelimit=0.5), field)
    pairs = {tuple(sorted([*(s.player for s in j.agents), *j.scripted, *j.bots])) for j in jobs}
    assert len(pairs) == 6
    scripted = [j for j in jobs if j.scripted]
    assert {j.scenario for j in scripted} == {"duel_scripted"}
    both = [j for j in scripted if len(j.scripted) == 2]
    assert [j.scripted for j in both] == [("s3", "s4"), ("s4", "s3")]
    assert [j.match_kwargs["scripted_skill"] for j in both] == [[3, 4], [4, 3]]
    assert all(j.match_kwargs["num_agents"] == 0 for j in both)
    against_bot = next(j for j in scripted if j.bots)
    assert against_bot.agents == () and against_bot.match_kwargs["bot_skill"] == [1]
    assert all("scripted_skill" not in j.settings for j in jobs)  # who plays: the pairing


def test_scripted_levels_are_per_map_and_play_duels_only() -> None:
    with pytest.raises(PlayerError, match="multi_duel has scripted levels 1, 2, 3, 4 "):
        parse_player("scripted:5", "multi_duel")
    with pytest.raises(PlayerError, match="ssl2 has scripted levels 1, 2, 3, 5 "):
        parse_player("scripted:4", "ssl2")
    # A level of the map's own ladder is another player than the default ladder's level.
    assert parse_player("scripted:4", "multi_duel").fingerprint != (
        parse_player("scripted:4", "cig_map02").fingerprint
    )
    # So is a hunting level (dwango5's) than the same knobs without hunting.
    assert parse_player("scripted:3", "dwango5").fingerprint != (
        parse_player("scripted:3", "cig_map02").fingerprint
    )
    (top,) = players("scripted:5", map_name="freedoom2_map01")
    assert top.kind == "scripted" and not top.is_agent and top.record().spec == "5"
    with pytest.raises(TournamentError, match="scripted players play duels only"):
        plan_games(
            TournamentConfig(scenario="deathmatch_bots", map="cig_map02"),
            players("random", "scripted:3", map_name="cig_map02"),
        )
