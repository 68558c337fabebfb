"""``sf-league train --wandb``: the population's trainer is an sf-train trainer, whose writer
mirrors to W&B (tests/train/test_wandb.py); here only that the league's command offers it."""

from __future__ import annotations

import pytest

from sf_league.cli import main


def test_league_training_offers_wandb(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--wandb" in capsys.readouterr().out
