"""The lock step's threads and barrier, without engines: order, failures, hangs, stopping."""

from __future__ import annotations

import threading
import time

import pytest

from sf_envs.match.lockstep import LockStep, MatchError, MatchHungError, TicBarrier


@pytest.fixture
def lockstep():
    group = LockStep(3, timeout=5.0)
    yield group
    assert group.stop(timeout=5.0)


def test_every_player_runs_its_call_and_results_come_in_player_order(lockstep):
    assert lockstep.run(lambda i: i * 10) == [0, 10, 20]
    assert lockstep.run(lambda i: threading.current_thread().name) == [
        f"sf-match-{i}" for i in range(3)
    ]


def test_no_player_passes_a_sync_before_all_arrive(lockstep):
    log: list[tuple[str, int]] = []
    lock = threading.Lock()

    def play(i: int) -> None:
        for tic in range(50):
            with lock:
                log.append(("arrive", tic))
            lockstep.sync()

    lockstep.run(play)
    # All three arrivals of tic t come before any arrival of tic t + 1.
    tics = [tic for _, tic in log]
    assert tics == sorted(tics)
    assert len(tics) == 150


def test_a_failed_call_breaks_the_match_with_its_own_error(lockstep):
    def play(i: int) -> None:
        if i == 1:
            raise ValueError("engine crashed")
        lockstep.sync()  # the others wait for player 1 at the barrier and are freed

    with pytest.raises(MatchError, match="player 1 failed: engine crashed") as caught:
        lockstep.run(play)
    assert isinstance(caught.value.__cause__, ValueError)
    assert lockstep.broken
    with pytest.raises(MatchError, match="unusable since player 1 failed"):
        lockstep.run(lambda i: i)


def test_a_player_stuck_past_the_timeout_is_reported_hung():
    group = LockStep(2, timeout=0.2)
    release = threading.Event()
    start = time.monotonic()
    with pytest.raises(MatchHungError, match="did not finish within"):
        group.run(lambda i: release.wait(10) if i == 0 else None)
    assert time.monotonic() - start < 5
    assert group.broken
    release.set()
    assert group.stop(timeout=5.0)


def test_a_player_that_fails_while_another_is_stuck_ends_the_run_after_a_grace():
    group = LockStep(2, timeout=30.0)
    release = threading.Event()

    def play(i: int) -> None:
        if i == 0:
            raise OSError("peer died")
        release.wait(10)  # blocked inside its engine, which the failure left waiting

    start = time.monotonic()
    with pytest.raises(MatchError, match="player 0 failed: peer died"):
        group.run(play)
    assert time.monotonic() - start < 5  # the grace, not the 30 s timeout
    release.set()
    assert group.stop(timeout=5.0)


def test_stop_ends_idle_threads():
    group = LockStep(2, timeout=1.0)
    group.run(lambda i: None)
    threads = [t for t in threading.enumerate() if t.name.startswith("sf-match")]
    assert group.stop(timeout=5.0)
    assert not any(t.is_alive() for t in threads)


def test_a_barrier_wait_that_times_out_breaks_the_barrier_for_everyone():
    barrier = TicBarrier(2, timeout=0.1)
    with pytest.raises(threading.BrokenBarrierError):
        barrier.wait()  # nobody else comes
    with pytest.raises(threading.BrokenBarrierError):
        barrier.wait()


def test_abort_frees_a_waiting_thread():
    barrier = TicBarrier(2, timeout=10.0)
    outcome: list[str] = []

    def wait() -> None:
        try:
            barrier.wait()
            outcome.append("passed")
        except threading.BrokenBarrierError:
            outcome.append("broken")

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    barrier.abort()
    waiter.join(5)
    assert outcome == ["broken"]
