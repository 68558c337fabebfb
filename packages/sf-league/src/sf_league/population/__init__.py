"""Populations: policies trained together by self-play in one sf-train trainer, judged by the
league's record of their games and improved by population-based training.

- :mod:`sf_league.population.training`: the population trainer (``sf-league train``).
- :mod:`sf_league.population.pbt`: who copies whom and how the copies change.
- :mod:`sf_league.population.frozen`: frozen opponents (past members), drawn by PFSP.
- :mod:`sf_league.population.gauntlets`: every member's gauntlet checkpoint against fixed opponents.
- :mod:`sf_league.population.run_file`: ``population.json`` beside the sf-train config.
- :mod:`sf_league.population.shards`: a population split into shards on a Ray cluster.
- :mod:`sf_league.population.commands`: the ``train`` and ``lineage`` commands.
"""
