"""Ratings from stored games.

- :mod:`sf_league.ratings.elo`: Elo fitted by maximum likelihood with bootstrap intervals.
- :mod:`sf_league.ratings.groups`: which stored games may be rated together.
- :mod:`sf_league.ratings.standings`: the ranked table and the cross table.
- :mod:`sf_league.ratings.plot`: PNGs of ratings and of members' ratings over training.
"""
