"""sf-league on a real multi-node Ray cluster on this machine (Ray's own test cluster: a head
node without CPUs and worker nodes of one CPU each, each its own raylet). Tournaments: every
game is stored once whichever node played it, a node killed mid-tournament costs only its games
in flight (played again elsewhere), and nothing of a game process outlives it. Populations: two
shards on two nodes meet through guests and PBT copies a member across them."""

from __future__ import annotations

import collections
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from support.league import make_checkpoint, sf_league, tiny_population, tiny_population_flags

ray = pytest.importorskip(
    "ray",
    reason="Ray is not installed: run these with `hatch test -i suite=ray` (CI does), or "
    "pip install 'sf-league[ray]'",
)

from ray.cluster_utils import Cluster  # noqa: E402

from sf_league.population.pbt import PBTConfig  # noqa: E402
from sf_league.population.shards import ShardConfig, ShardedTrainer  # noqa: E402
from sf_league.population.training import (  # noqa: E402
    TRAINING,
    PopulationConfig,
    PopulationTrainer,
    member_name,
)
from sf_league.store import GameRecord, LeagueStore  # noqa: E402
from sf_league.tournament.players import parse_player  # noqa: E402
from sf_league.tournament.ray_games import RayGamePool, ray_game_pool  # noqa: E402
from sf_league.tournament.schedule import TournamentConfig, run_tournament  # noqa: E402
from sf_train.run.checkpoint import load_checkpoint  # noqa: E402
from sf_train.run.folder import checkpoints_of, load_run_config  # noqa: E402


class Nodes:
    """The test cluster, and the folder its game processes make their scratch folders in."""

    def __init__(self, cluster: Cluster, game_tmp: Path) -> None:
        self.cluster = cluster
        self.game_tmp = game_tmp
        self.workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()

    def leftovers(self) -> list[str]:
        """Game process scratch folders and ViZDoom shared memory that still exist."""
        folders = [p.name for p in self.game_tmp.iterdir() if p.name.startswith("sf_league_")]
        return folders + [name for name in os.listdir("/dev/shm") if name.startswith("ViZDoom")]


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    # Ray's files (TMPDIR/ray) and the game processes' scratch folders: a private folder with a short
    # name, since Ray's socket paths live under it (a Unix socket path has at most 107 bytes).
    temp = Path(tempfile.mkdtemp(prefix="sfr"))
    previous = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(temp)  # the raylets', so their actors'
    cluster = None
    try:
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
        )
        result = Nodes(cluster, temp)
        ray.init(address=cluster.address, log_to_driver=False)
        yield result
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        if previous is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = previous
        shutil.rmtree(temp, ignore_errors=True)


def recorded(pools: list[RayGamePool]) -> Callable[[int | None, int], RayGamePool]:
    """:func:`ray_game_pool` that keeps the pool it made in ``pools``."""

    def make(workers: int | None, games: int) -> RayGamePool:
        pools.append(ray_game_pool(workers, games))
        return pools[-1]

    return make


def wait_until_gone(nodes: Nodes) -> None:
    """Waits for every game process's scratch folder and engine memory to go (the watchdog of a
    killed game process needs a moment)."""
    deadline = time.monotonic() + 60
    while nodes.leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert nodes.leftovers() == []


def test_a_tournament_over_two_nodes_stores_every_game_once(nodes: Nodes, tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "run", num_actions=6)
    config = TournamentConfig(scenario="duel_bots", games=1, timelimit=0.05)
    players = [
        parse_player(t, config.map_name) for t in ("noop", "random", "bot:1", str(tmp_path / "run"))
    ]
    pools: list[RayGamePool] = []
    stored: collections.Counter[str] = collections.Counter()

    def on_game(record: GameRecord | None, done: int, total: int) -> None:
        assert record is not None
        stored[record.key] += 1
        if done == 2 and len(pools) == 1:
            raise KeyboardInterrupt  # Ctrl-C after 2 games

    with LeagueStore(tmp_path / "ray.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            run_tournament(config, players, store, on_game, recorded(pools))
        assert store.count_games() == 2
        wait_until_gone(nodes)  # the interrupted game processes closed or were killed
        result = run_tournament(config, players, store, on_game, recorded(pools))
        assert (result.planned, result.already_stored, result.played) == (6, 2, 4)
        assert result.failed == []
        assert len(stored) == 6 and set(stored.values()) == {1}
        assert store.count_games() == 6
        # Both worker nodes played (the head has no CPU): the checkpoint reached them through
        # the object store, not a shared folder.
        worker_ids = {n.node_id for n in nodes.workers}
        assert set(pools[1].games_per_node) == worker_ids
        assert sum(pools[1].games_per_node.values()) == 4
        ray_keys, ray_players = store.game_keys(), store.players()
    wait_until_gone(nodes)

    # The same tournament with local game processes writes the same league: games, players, settings.
    with LeagueStore(tmp_path / "local.sqlite") as store:
        run_tournament(config, players, store)
        assert store.game_keys() == ray_keys
        assert store.players() == ray_players


def test_a_node_killed_mid_tournament_loses_nothing(
    nodes: Nodes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    victim = nodes.cluster.add_node(num_cpus=1)
    nodes.cluster.wait_for_nodes()
    config = TournamentConfig(scenario="duel_bots", games=3, timelimit=0.1)
    players = [parse_player(t, config.map_name) for t in ("noop", "random", "bot:1")]
    pools: list[RayGamePool] = []
    stored: collections.Counter[str] = collections.Counter()
    killed = threading.Event()
    finished = threading.Event()

    def kill_when_it_plays() -> None:
        # The moment a game is handed to the node's game process: that game is surely in flight.
        while not finished.is_set():
            if pools and pools[0].playing_per_node()[victim.node_id]:
                nodes.cluster.remove_node(victim)  # its raylet and every process on it, at once
                killed.set()
                return
            time.sleep(0.02)

    def on_game(record: GameRecord | None, done: int, total: int) -> None:
        assert record is not None
        stored[record.key] += 1

    killer = threading.Thread(target=kill_when_it_plays)
    killer.start()
    try:
        with LeagueStore(tmp_path / "league.sqlite") as store:
            result = run_tournament(config, players, store, on_game, recorded(pools))
            assert killed.is_set(), "the node never played a game"
            assert result.failed == [] and result.replayed >= 1
            assert result.played == result.planned == 9
            assert len(stored) == 9 and set(stored.values()) == {1}
            assert store.count_games() == 9
    finally:
        finished.set()
        killer.join()
    assert "the Ray actor playing it died" in caplog.text
    # The killed game process's watchdog removed its scratch folder, engines and shared memory (even
    # of an engine it was starting); the other game processes closed theirs.
    wait_until_gone(nodes)


def test_the_cli_plays_on_the_cluster_at_an_address(nodes: Nodes, tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite"
    args = ["--players", "noop", "random", "--games", "2", "--timelimit", "0.05", "--db", str(db)]
    proc = sf_league("evaluate", "--ray", nodes.cluster.address, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["tournament"]
    assert (summary["played"], summary["failed"]) == (2, [])
    assert sum(summary["games_per_node"].values()) == 2
    assert set(summary["games_per_node"]) <= {n.node_id for n in nodes.workers}
    wait_until_gone(nodes)


def test_a_two_shard_population_meets_across_shards_and_exploits_across_them(
    nodes: Nodes, tmp_path: Path
) -> None:
    run_dir, db = tmp_path / "pop", tmp_path / "pop.sqlite"
    pbt = PBTConfig(interval=10**9, fraction=0.5)  # PBT steps only when the test asks
    cfg = PopulationConfig(tiny_population(run_dir, frames=2000), str(db), pbt)
    split = ShardConfig(shards=2, guest_interval=1000, cpus=1)

    def make_trainer(train: object, resume: bool, on_progress: object) -> ShardedTrainer:
        return ShardedTrainer(train, split, on_progress)

    with PopulationTrainer(cfg, make_trainer=make_trainer) as pop:
        sharded = pop.trainer
        # One member and one guest per shard, each shard on a node of its own.
        assert sorted(sharded.nodes) == sorted(n.node_id for n in nodes.workers)
        assert sharded.guests == [[1], [0]]
        pop.train()
        with LeagueStore(db) as store:
            games = [g for g in store.games() if g.scenario == TRAINING]
        # p0 (shard 0) and p1 (shard 1) met only as each other's guest.
        assert games, "no training match between the shards was recorded"
        names = {member_name(run_dir, 0, 0), member_name(run_dir, 1, 0)}
        assert all({s.player for s in g.seats} == names for g in games)
        # The league says p1 beats p0: p0 copies p1 across the shards.
        pop.scores[0].extend([0.0] * 30)
        pop.scores[1].extend([1.0] * 30)
        pop.pbt_step()
        with LeagueStore(db) as store:
            events = [(e.kind, e.policy, e.parent) for e in store.pbt_events()]
        assert events == [("exploit", 0, 1), ("explore", 0, None)]
    # Saved with the exploit, on the driver: the ordinary population folder, p0 a copy of p1.
    p0, p1 = (load_checkpoint(checkpoints_of(run_dir / f"p{i}").latest())["model"] for i in (0, 1))
    assert all(torch.equal(p0[k], p1[k]) for k in p0)
    assert load_run_config(run_dir).algo.num_policies == 2
    wait_until_gone(nodes)


def test_the_cli_trains_a_population_on_the_cluster_and_resumes_it_there_and_here(
    nodes: Nodes, tmp_path: Path
) -> None:
    run_dir, db = tmp_path / "pop", tmp_path / "pop.sqlite"
    common = tiny_population_flags(run_dir, db)
    ray_flags = ["--ray", nodes.cluster.address, "--shard-cpus", "1"]
    resume = ["--run-dir", str(run_dir), "--db", str(db), "--resume"]

    def saved_frames() -> list[int]:
        return [
            load_checkpoint(checkpoints_of(run_dir / p).latest())["frames"] for p in ("p0", "p1")
        ]

    sf_league("train", *common, "--frames", "1000", *ray_flags, check=True)
    first = saved_frames()
    assert first[0] == first[1] >= 1000
    # On the cluster again (the shards load their members' states), then on this machine.
    out = sf_league("train", *resume, "--frames", "1500", *ray_flags, check=True).stdout
    assert f"at {first[0]} frames in 2 shards" in out
    second = saved_frames()
    assert second[0] == second[1] >= 1500
    assert (
        f"at {second[0]} frames"
        in sf_league("train", *resume, "--frames", "2000", check=True).stdout
    )
    assert min(saved_frames()) >= 2000
    wait_until_gone(nodes)
