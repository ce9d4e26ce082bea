"""The calling threads of a run (llm.driver.CallPool): at most twice as many
pieces of work in hand as there are threads, every result handed over in
time, the run looked at every quarter second even while submit waits, and
nothing sent after a halt."""

import threading
import time

import pytest

from llm.driver import CallPool


class FakeCaller:
    def __init__(self) -> None:
        self.halted = threading.Event()
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.django_db(transaction=True)
def test_the_window_bounds_what_is_in_hand_and_every_result_is_handed_over():
    caller = FakeCaller()
    running, most, lock = [0], [0], threading.Lock()
    results, watched = [], []

    def work(n: int) -> int:
        with lock:
            running[0] += 1
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return n * n

    with CallPool(caller, lambda: watched.append(time.monotonic()), 4, results.append) as pool:
        for n in range(200):
            pool.submit(work, n)
            most[0] = max(most[0], len(pool.pending))
        pool.drive()
    assert most[0] <= 8  # 2 x 4 threads
    assert sorted(results) == [n * n for n in range(200)]
    assert caller.closed
    # 200 x 10 ms on 4 threads: about half a second, looked at every 0.25 s or so
    assert len(watched) >= 1


@pytest.mark.django_db(transaction=True)
def test_the_run_is_watched_while_submit_waits_and_a_halt_skips_the_rest():
    caller = FakeCaller()
    results, watched = [], []
    gate = threading.Event()

    def work(n: int) -> int:
        gate.wait(5)
        return n

    def watch() -> None:
        watched.append(1)
        if len(watched) >= 3:  # a cancel seen by the watch
            caller.halted.set()
            gate.set()

    with CallPool(caller, watch, 2, results.append, every=0.05) as pool:
        for n in range(20):
            pool.submit(work, n)  # blocks at 4 in hand until the watch lets them go
        pool.drive()
    assert len(watched) >= 3
    assert len(results) == 20
    assert sum(r is None for r in results) >= 10  # skipped after the halt
