"""sf_league."""
