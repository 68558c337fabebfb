"""Tournaments: which games to play and playing them, each game in a game process.

- :mod:`sf_league.tournament.players`: who can play (engine bots, scripted players, baselines,
  sf-train checkpoints).
- :mod:`sf_league.tournament.schedule`: which games (round robin, gauntlet) and playing them in
  parallel, each finished game committed at once.
- :mod:`sf_league.tournament.game`: one game, start to finish, inside a game process.
- :mod:`sf_league.tournament.game_pool`: game processes on this machine.
- :mod:`sf_league.tournament.ray_games`: game processes as Ray actors on a cluster.
"""
