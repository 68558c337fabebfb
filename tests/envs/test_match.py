"""Multiplayer matches: PettingZoo conformance, lock step, scoreboard, ports, bots, bad input.

Matches are kept tiny (a few seconds of game time, 40x30 observations) and tests that only play
share one match per line-up (:func:`shared`), so the module stays fast on a shared 2-core
machine; tests that break or close a match make their own. Tests that could hit a fatal engine
error during ``init()`` (which segfaults Python) run their games in subprocesses or probes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

import sf_envs
from sf_envs.match import MatchConfig, MatchError, RewardConfig, bot_ladder
from sf_envs.match import core as match_core
from sf_envs.match import ports as match_ports
from sf_envs.match import probe as match_probe
from sf_envs.match.ports import PortsExhaustedError, lease_port
from sf_envs.match.rewards import EVENTS

SMALL = {"timelimit": 0.05, "obs_size": (40, 30)}  # 105 tics: 26 steps at frame skip 4
LONGER = {**SMALL, "timelimit": 0.15}  # 79 steps: long enough for some frags
LINEUPS = {
    "duel": LONGER,
    "duel_bots": {**SMALL, "bot_skill": 1},
    "duel_scripted": {**LONGER, "scripted_skill": 3},
    "deathmatch_bots": {**LONGER, "num_bots": 2},
    "deathmatch": {**SMALL, "num_agents": 3, "num_bots": 1, "frame_skip": 3},
}


@pytest.fixture(scope="module")
def shared():
    """``shared(scenario)``: one match per line-up for the module; tests leave it usable."""
    envs: dict[str, sf_envs.MatchEnv] = {}

    def get(scenario: str) -> sf_envs.MatchEnv:
        if scenario not in envs:
            envs[scenario] = sf_envs.make_match(scenario, **LINEUPS[scenario])
        return envs[scenario]

    yield get
    for env in envs.values():
        env.close()


def play_out(env, seed: int = 0, check=None) -> tuple[dict, dict]:
    """Plays random actions until the match ends; returns the last infos and summed rewards."""
    env.reset(seed=seed)
    infos = {}
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(env.agents, 0.0)
    while env.agents:
        actions = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
        _, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            totals[agent] += reward
        if check is not None:
            check(env, infos)
    return infos, totals


@pytest.mark.parametrize("scenario", sorted(LINEUPS))
def test_every_scenario_passes_the_parallel_and_aec_api_tests(scenario: str, shared) -> None:
    env = shared(scenario)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports soft API problems as warnings
        parallel_api_test(env, num_cycles=1000)
    api_test(parallel_to_aec(env), num_cycles=1000)  # the same match, reset by the test


def test_lock_step_keeps_every_player_on_the_same_tic(shared) -> None:
    env = shared("deathmatch")  # frame skip 3
    seen = []

    def check(env, infos):
        times = env.core.episode_times()
        assert len(set(times)) == 1, f"players drifted apart: {times}"
        seen.append(times[0])

    play_out(env, check=check)
    start = seen[0] - 3
    assert seen == list(range(start + 3, start + 3 * len(seen) + 1, 3))


@pytest.mark.parametrize("scenario", ["duel", "deathmatch_bots", "duel_scripted"])
def test_stats_and_result_agree_with_the_engine_scoreboard(scenario: str, shared) -> None:
    env = shared(scenario)
    infos, totals = play_out(env)
    core = env.core
    result = infos["player_0"]["match"]
    others = {b.name for b in core.config.bots} | {s.name for s in core.config.scripted}
    assert set(result["frags"]) == set(env.possible_agents) | others
    # The engine's scoreboard, read directly now, scored from the match-start baseline.
    state = core.players[0].game.get_server_state()
    server = dict(zip(state.players_names, state.players_frags, strict=True))
    for name, frags in result["frags"].items():
        assert frags == server[name] - core._frag_baseline[name]
    best = max(result["frags"].values())
    leaders = [n for n, f in result["frags"].items() if f == best]
    assert result["draw"] == (len(leaders) > 1)
    assert result["winner"] == (leaders[0] if len(leaders) == 1 else None)
    for agent, info in infos.items():
        assert info["frags"] == result["frags"][agent]
        assert info["placement"] == 1 + sum(f > info["frags"] for f in result["frags"].values())
        assert info["win"] == float(result["winner"] == agent)
        # Default rewards are the unshaped objective: summed rewards are the frags.
        assert totals[agent] == info["frags"]
        assert {"deaths", "hits", "damage_dealt", "damage_taken", "objective"} <= set(info)


def test_shaped_rewards_leave_the_true_objective_in_info() -> None:
    env = sf_envs.make_match(
        "duel_bots", rewards={"frags": 1.0, "damage_taken": -0.1, "deaths": -1.0}, **SMALL
    )
    try:
        env.reset(seed=3)
        frags = reward = 0.0
        weights = env.core.config.rewards
        while env.agents:
            _, rewards, _, _, infos = env.step({"player_0": 3})  # fire in place
            frags += infos["player_0"]["objective"]
            reward += rewards["player_0"]
        info = infos["player_0"]
        assert frags == info["frags"]
        expected = (
            frags + weights.deaths * info["deaths"] + weights.damage_taken * info["damage_taken"]
        )
        assert reward == pytest.approx(expected)
    finally:
        env.close()


def test_bot_levels_are_written_to_the_bots_file_in_use() -> None:
    env = sf_envs.make_match(
        "deathmatch_bots", map="multi_duel", num_bots=2, bot_skill=[1, 2], **SMALL
    )
    try:
        _, infos = env.reset(seed=0)
        bots = infos["player_0"]["bots"]
        assert bots == [{"name": "bot1_L1", "level": 1}, {"name": "bot2_L2", "level": 2}]
        path = env.core.bots_path
        assert os.path.isabs(path)  # a relative path silently loads the shipped bots.cfg
        assert f"+viz_bots_path {path}" in env.core.players[0]._args
        with open(path) as f:
            entries = f.read().split("}")[:-1]
        assert len(entries) == 2
        ladder = bot_ladder("multi_duel")
        for entry, bot in zip(entries, bots, strict=True):
            assert f"name        {bot['name']}" in entry
            assert f"isp         {ladder[bot['level']].isp}" in entry
            switch = int(ladder[bot["level"]].neverswitch)
            assert f"neverswitchonpickup {switch}" in entry
        # The engine took them: every bot is on the scoreboard.
        assert set(env.core.scoreboard) == {"player_0", "bot1_L1", "bot2_L2"}
    finally:
        env.close()


def test_each_map_offers_only_its_measured_levels() -> None:
    assert sorted(bot_ladder("multi_duel")) == [1, 2]
    assert sorted(bot_ladder("cig_map02")) == [1, 2]
    assert sorted(bot_ladder("cig_map01")) == [1]
    strongest = MatchConfig.create("duel_bots")  # the map's strongest level by default
    assert [b.level for b in strongest.bots] == [2]
    with pytest.raises(ValueError, match=r"levels on cig_map02 are 1, 2 "):
        MatchConfig.create("duel_bots", map="cig_map02", bot_skill=3)


def test_multi_duel_controls_cannot_walk_into_the_death_floor() -> None:
    config = MatchConfig.create("duel", **SMALL)
    assert config.buttons == ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")
    assert "MOVE_FORWARD" in MatchConfig.create("deathmatch_bots", num_bots=1).buttons


_HOLD_PORTS = textwrap.dedent(
    """
    import sys
    from sf_envs.match.ports import lease_port
    leases = [lease_port() for _ in range(40)]
    print(" ".join(str(lease.port) for lease in leases), flush=True)
    sys.stdin.readline()  # hold the leases until the parent has every process's ports
    """
)


def test_ports_are_unique_across_parallel_processes() -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLD_PORTS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        ports = [int(p) for proc in procs for p in proc.stdout.readline().split()]
        assert len(ports) == len(set(ports)) == 160
        assert all(23000 <= p <= 32000 for p in ports)  # below the ephemeral range
    finally:
        for proc in procs:
            proc.communicate("\n", timeout=60)


def test_a_port_bound_by_someone_else_is_skipped() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("", 0))
        port = busy.getsockname()[1]
        with pytest.raises(PortsExhaustedError, match="no free UDP port"):
            lease_port((port, port), attempts=3)
    lease = lease_port((port, port), attempts=3)
    with pytest.raises(PortsExhaustedError):  # locked by our own lease now
        lease_port((port, port), attempts=3)
    lease.release()


def _udp_sockets(n: int) -> list[socket.socket]:
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    for sock in socks:
        sock.bind(("", 0))
    return socks


def _lease_in_turn(monkeypatch, ports: list[int]) -> None:
    """Leases hand out ``ports`` in order and their bind lies, as if a foreign program took each
    port just after the lease checked it: only the engine meets the busy port. No config counts
    as proven, so the start is probed."""
    queue = iter(ports)
    monkeypatch.setattr(match_ports, "_bind", lambda port: socket.socket(type=socket.SOCK_DGRAM))
    monkeypatch.setattr(
        match_core, "lease_port", lambda: lease_port((port := next(queue), port), attempts=1)
    )
    monkeypatch.setattr(match_probe, "_PROVEN", set())


def test_a_lease_keeps_its_port_bound_until_the_engine_needs_it() -> None:
    lease = lease_port()
    try:
        assert match_ports._bind(lease.port) is None  # nobody else can bind it
        lease.unbind()
        sock = match_ports._bind(lease.port)
        assert sock is not None  # free for the engine
        assert not lease.rebind()  # taken meanwhile: the lease says so
        sock.close()
        assert lease.rebind()
    finally:
        lease.release()
    sock = match_ports._bind(lease.port)
    assert sock is not None
    sock.close()


def test_a_start_on_a_port_taken_by_someone_else_is_retried_on_a_fresh_port(monkeypatch) -> None:
    busy, spare = _udp_sockets(2)
    free = spare.getsockname()[1]
    spare.close()
    _lease_in_turn(monkeypatch, [busy.getsockname()[1], free])
    try:
        # A hang would cost seconds; the segfault on the busy port stays in the probe.
        env = sf_envs.make_match("duel", timeout=2.0, **SMALL)
        try:
            assert env.core.port == free
            play_out(env)
        finally:
            env.close()
    finally:
        busy.close()


def test_a_match_that_cannot_start_is_a_clear_error_not_a_dead_caller(monkeypatch) -> None:
    busy = _udp_sockets(3)
    ports = [sock.getsockname()[1] for sock in busy]
    _lease_in_turn(monkeypatch, ports)
    try:
        with pytest.raises(MatchError, match="failed to start 3 times") as err:
            sf_envs.make_match("duel", timeout=2.0, **SMALL)
        for port in ports:
            assert f"port {port}:" in str(err.value)
    finally:
        for sock in busy:
            sock.close()


def _vizdoom_instances_of_descendants(root: int) -> set[str]:
    """ViZDoom instance ids that descendants of ``root`` map from /dev/shm right now."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    family, ids = {root}, set()
    for _ in range(4):  # children, grandchildren...
        family |= {pid for pid, parent in parents.items() if parent in family}
    for pid in family - {root}:
        try:
            with open(f"/proc/{pid}/maps") as f:
                ids |= {
                    line.split("/dev/shm/ViZDoomMQCtr")[1].split()[0]
                    for line in f
                    if "/dev/shm/ViZDoomMQCtr" in line
                }
        except OSError:
            continue
    return ids


def test_a_failed_start_leaves_no_vizdoom_shared_memory(monkeypatch) -> None:
    # The probe's host engine dies on the busy port and the probe with it (a segfault), before
    # anything could remove the message queues the probe created for it.
    busy = _udp_sockets(1)
    # Free ports after the busy one: a start that a loaded machine makes slow may be retried.
    free = _udp_sockets(3)
    ports = [busy[0].getsockname()[1], *(s.getsockname()[1] for s in free)]
    for sock in free:
        sock.close()
    _lease_in_turn(monkeypatch, ports)
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(_vizdoom_instances_of_descendants(os.getpid()))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        sf_envs.make_match("duel", timeout=2.0, **SMALL).close()
    finally:
        done.set()
        watcher.join()
        busy[0].close()
    assert seen, "no engine instance was seen starting"
    in_use = _vizdoom_instances_of_descendants(os.getpid())  # engines of other open matches
    left = [
        f"{prefix}{i}"
        for i in seen - in_use
        for prefix in ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")
        if os.path.exists(f"/dev/shm/{prefix}{i}")
    ]
    assert not left, f"left in /dev/shm: {left}"


@pytest.mark.parametrize("scenario", ["duel", "duel_bots"])
def test_an_engine_killed_during_play_is_an_exception_in_the_caller(scenario: str) -> None:
    env = sf_envs.make_match(scenario, **{**SMALL, "timelimit": 1.0, "timeout": 10.0})
    try:
        env.reset(seed=0)
        pids = list(env.core.engine_pids)
        os.kill(pids[-1], signal.SIGKILL)
        with pytest.raises(MatchError, match="failed"):
            for _ in range(1000):  # more steps than the match has
                env.step(dict.fromkeys(env.agents, 0))
        with pytest.raises(MatchError, match="unusable"):
            env.step(dict.fromkeys(env.agents, 0))
    finally:
        env.close()
    for pid in pids:
        assert _gone(pid), f"engine {pid} survived close()"


_PARALLEL_DUELS = textwrap.dedent(
    """
    import sys, numpy as np, sf_envs
    env = sf_envs.make_match("duel", timelimit=0.03, obs_size=(40, 30))
    env.reset(seed=int(sys.argv[1]))
    while env.agents:
        env.step({a: 1 for a in env.agents})
    print("port", env.core.port)
    env.close()
    """
)


def test_matches_created_in_parallel_processes_do_not_collide(tmp_path) -> None:
    # Subprocesses: two hosts on one port would segfault the Python that runs them.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PARALLEL_DUELS, str(i)],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    ports = [
        line.split()[1] for out in outputs for line in out.splitlines() if line.startswith("port")
    ]
    assert len(set(ports)) == 3


# A pre-fork handler that, like scipy's OpenBLAS (which shuts its thread pool down there), must
# not run twice at once; it counts the times it did. It slows each fork down to widen the window.
_COUNT_CONCURRENT_FORKS = textwrap.dedent(
    """
    import ctypes, threading, time, sf_envs
    inside, overlaps, lock = [0], [0], threading.Lock()

    @ctypes.CFUNCTYPE(None)
    def prepare():
        with lock:
            inside[0] += 1
            overlaps[0] += inside[0] > 1
        time.sleep(0.3)
        with lock:
            inside[0] -= 1

    # pthread_atfork is a static wrapper around this libc function.
    getattr(ctypes.CDLL("libc.so.6"), "__register_atfork")(prepare, None, None, None)
    match = sf_envs.make_match("duel", timelimit=0.05, obs_size=(40, 30))
    match.reset(seed=0)
    match.close()
    print("overlaps", overlaps[0])
    """
)


def test_a_match_never_forks_two_engines_at_once(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_CONCURRENT_FORKS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "overlaps 0" in done.stdout, done.stdout


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie runs nothing
    except FileNotFoundError:
        return True


def test_close_kills_the_engines_and_is_idempotent() -> None:
    env = sf_envs.make_match("duel", **LINEUPS["duel"])  # proven: starts without a probe
    pids = list(env.core.engine_pids)
    workdir = env.core.workdir
    assert len(pids) == 2
    env.close()
    env.close()
    for pid in pids:
        assert _gone(pid), f"engine {pid} survived close()"
    assert not os.path.exists(workdir)
    with pytest.raises(sf_envs.ClosedEnvError, match="closed"):
        env.reset()


def test_a_match_never_closed_leaves_no_engine_after_its_process_exits() -> None:
    code = textwrap.dedent(
        """
        import sf_envs
        match = sf_envs.make_match("duel", timelimit=0.05, obs_size=(40, 30))
        match.reset(seed=0)
        print(match.core.workdir, *match.core.engine_pids, flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    workdir, *pids = done.stdout.split()
    assert len(pids) == 2
    for pid in map(int, pids):
        assert _gone(pid), f"engine {pid} outlived its process"
    assert not os.path.exists(workdir)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"map": "multi_duel", "num_bots": 3}, "at most 3 players"),
        ({"map": "multi_deathmatch"}, "ends the map when player 0 or 1 dies"),
        ({"map": "deathmatch"}, "no deathmatch starts"),
        ({"map": "e1m1"}, "unknown map"),
        ({"num_bots": 8}, r"num_bots in \[1, 7\]"),
        ({"bot_skill": 3}, r"levels on cig_map02 are 1, 2 "),
        ({"bot_skill": [1, 2]}, "2 levels for 7 players"),
        ({"timelimit": 0}, "timelimit must be a positive"),
        ({"rewards": {"kills": 1.0}}, "unknown reward terms"),
        ({"obs_size": (640, 480)}, "larger than the render"),
        ({"framesskip": 4}, "unknown options"),
    ],
)
def test_bad_settings_fail_before_any_engine_starts(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        sf_envs.make_match("deathmatch_bots", **kwargs)


def test_all_setting_errors_are_reported_at_once() -> None:
    with pytest.raises(ValueError) as err:
        MatchConfig.create("duel", num_agents=3, bot_skill=0, timelimit=-1)
    for part in ("num_agents", "bot levels", "timelimit"):
        assert part in str(err.value)


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="deathmatch_bots, duel, duel_bots"):
        sf_envs.make_match("tournament")


def test_bad_actions_and_misuse_are_clear_errors(shared) -> None:
    env = shared("duel")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="one action for each"):
        env.step({"player_0": 0})
    with pytest.raises(ValueError, match=r"not in Discrete\(6\)"):
        env.step({"player_0": 0, "player_1": 6})
    with pytest.raises(ValueError, match="unknown agent"):
        env.action_space("player_7")
    env.step({"player_0": np.int64(1), "player_1": 2})  # numpy integers are fine
    while env.agents:
        env.step(dict.fromkeys(env.agents, 0))
    with pytest.raises(RuntimeError, match="call reset"):  # the match is over
        env.step({"player_0": 0, "player_1": 0})


def test_step_before_reset_is_a_clear_error() -> None:
    env = sf_envs.make_match("duel_bots", **SMALL)  # no network: starts in a third of a second
    try:
        with pytest.raises(RuntimeError, match="call reset"):
            env.step({"player_0": 0})
    finally:
        env.close()


def test_reward_presets() -> None:
    assert RewardConfig.create("shaped").deaths < 0
    assert RewardConfig.create(None) == RewardConfig()
    with pytest.raises(ValueError, match="'frags' or 'shaped'"):
        RewardConfig.create("dense")


def test_reward_terms_are_the_stats_names_and_former_spellings_still_read() -> None:
    assert {"frags", "deaths", "hits", "damage_dealt", "damage_taken"} <= set(EVENTS)
    with pytest.warns(DeprecationWarning) as caught:
        old = RewardConfig.create({"frag": 2.0, "death": -1.0, "hit": 0.1, "damage": 0.01})
    assert old == RewardConfig(frags=2.0, deaths=-1.0, hits=0.1, damage_dealt=0.01)
    assert [str(w.message).split(";")[0] for w in caught] == [
        "rewards: 'frag' is now spelled 'frags'",
        "rewards: 'death' is now spelled 'deaths'",
        "rewards: 'hit' is now spelled 'hits'",
        "rewards: 'damage' is now spelled 'damage_dealt'",
    ]


def test_engine_console_goes_to_the_match_log_not_the_terminal(capfd) -> None:
    env = sf_envs.make_match("duel", **LINEUPS["duel"])
    try:
        env.reset(seed=0)
        env.step({agent: 0 for agent in env.agents})
        out, err = capfd.readouterr()
        assert "player" not in out + err, "engine chatter reached the terminal"
        with open(env.engine_log) as f:
            assert "Found player_1" in f.read()  # the network handshake of the host
    finally:
        env.close()
