"""The diagnostic scripts of the sparse Doom tasks: predict_position's scripted timer and the
map of my_way_home's starts, on real ViZDoom games."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def map_script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as `python benchmarks/...` has
    spec = importlib.util.spec_from_file_location(
        "my_way_home_map", BENCHMARKS / "my_way_home_map.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scripted_timer_hits_far_more_often_than_random(tmp_path: Path) -> None:
    """Seeded games replay exactly; the timer's 24-tic lead hits in most of them, the random
    policy in about one in twelve."""
    command = [sys.executable, str(BENCHMARKS / "predict_position_timer.py")]
    done = subprocess.run(
        [*command, "--episodes", "10", "--lead", "24"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=True,
    )
    hits = int(re.search(r"lead 24 tics: (\d+) hits in 10 episodes", done.stdout).group(1))
    assert hits >= 4
    assert list(tmp_path.iterdir()) == []  # ViZDoom's files went to a temporary folder


def test_the_map_has_the_vest_and_every_start_inside_its_walls(
    map_script: ModuleType, tmp_path: Path
) -> None:
    starts, walls, vest = map_script.read_map(list(range(10_000, 10_030)))
    assert vest == (1040, -352)
    xs = [x for wall in walls for x in (wall[0], wall[2])]
    ys = [y for wall in walls for y in (wall[1], wall[3])]
    assert len(starts) == 30 and len(set(starts)) >= 8  # the seed picks among many starts
    assert all(min(xs) < x < max(xs) and min(ys) < y < max(ys) for x, y in starts)
    rates = {start: [True, False] for start in set(starts)}
    figure = map_script.draw(walls, vest, rates, "test")
    figure.savefig(tmp_path / "map.png")
    assert (tmp_path / "map.png").stat().st_size > 0
