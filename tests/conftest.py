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


@pytest.fixture(scope="session")
def scenario_pack(tmp_path_factory: pytest.TempPathFactory):
    """The scenario pack, fetched once per test run into a temporary cache that every env of the
    run (worker processes included, through the environment variable) reads."""
    from sf_envs.pack import PACK_ENV_VAR, fetch_pack

    folder = fetch_pack(tmp_path_factory.mktemp("cache") / "scenarios")
    previous = os.environ.get(PACK_ENV_VAR)
    os.environ[PACK_ENV_VAR] = str(folder)
    yield folder
    if previous is None:
        del os.environ[PACK_ENV_VAR]
    else:
        os.environ[PACK_ENV_VAR] = previous
