"""Fixtures for the whole test tree."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cwd(tmp_path_factory: pytest.TempPathFactory) -> None:
    """ViZDoom writes ``_vizdoom/`` into the working directory: keep it out of the repo."""
    previous = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("vizdoom_cwd"))
    yield
    os.chdir(previous)
