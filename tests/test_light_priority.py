"""Issue 35, item 5: small classifications are not starved by heavy ones. While heavy requests fill
the main lane (every slot taken, its queue at ``queue_max``) and the light lane's own queue is full,
a request predicted small waits for the light lane within its budget — it is answered, never
refused 503 busy, and never queued behind the heavy ones — and the main lane's workers run at a
lower CPU priority than the light lane's. Ordering with events, no timing asserts.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import anyio
import pytest

from langclass.app.execution.isolation import ClassifierBusy, get_pool
from langclass.app.execution.runner import MAIN_LANE_NICE, ClassifyRunner, LightLane


def _runner() -> ClassifyRunner:
    # main lane: one slot, no queue; light lane: one slot, no queue — both fill with one request each
    return ClassifyRunner(1, 60.0, "thread", 60.0, queue_max=0,
                          light=LightLane(workers=1, time_limit_s=30.0, queue_max=0))


async def _until(cond: Any) -> None:
    with anyio.fail_after(60):
        while not cond():
            await anyio.sleep(0.01)


def test_a_small_request_is_answered_while_heavy_ones_fill_the_pool_and_the_light_queue_is_full() -> None:
    runner = _runner()
    release_heavy, release_small = threading.Event(), threading.Event()
    order: list[str] = []

    def blocking(name: str, gate: threading.Event) -> str:
        order.append(f"{name} started")
        gate.wait(60)
        return name

    def quick(name: str) -> str:
        order.append(f"{name} started")
        return name

    async def main() -> None:
        results: dict[str, Any] = {}

        async def call(key: str, light_ok: bool, fn: Any, *args: Any) -> None:
            try:
                results[key] = await runner.run_light_first(fn, *args, light_ok=light_ok)
            except ClassifierBusy as exc:
                results[key] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "heavy", False, blocking, "heavy", release_heavy)
            await _until(lambda: "heavy started" in order)
            tg.start_soon(call, "small-1", True, blocking, "small-1", release_small)
            await _until(lambda: "small-1 started" in order)
            assert runner.would_refuse() and runner.light_runner is not None and runner.light_runner.would_refuse()
            # a second heavy one is refused busy: the main lane is full
            await call("heavy-2", False, quick, "heavy-2")
            assert isinstance(results["heavy-2"], ClassifierBusy)
            # a second small one waits for the light lane instead (before the fix: refused busy)
            tg.start_soon(call, "small-2", True, quick, "small-2")
            await _until(lambda: runner.light_patient == 1)
            assert "small-2" not in results and "small-2 started" not in order
            release_small.set()  # the light worker frees up; the heavy one still holds the main lane
            await _until(lambda: "small-2" in results)
            assert results["small-2"] == "small-2" and "heavy" not in results
            release_heavy.set()
        assert results["heavy"] == "heavy" and results["small-1"] == "small-1"
        assert order.index("small-2 started") > order.index("small-1 started")

    anyio.run(main)
    assert runner.refused == 1 and runner.light_runner is not None and runner.light_runner.refused == 1
    assert runner.light_overflows == 0  # the small one never went to the main lane


def test_a_small_request_still_uses_a_free_main_worker_when_the_light_lane_is_full() -> None:
    runner = _runner()
    gate = threading.Event()
    started = threading.Event()

    def blocking() -> str:
        started.set()
        gate.wait(60)
        return "light"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: runner.run_light_first(blocking, light_ok=True))
            await _until(started.is_set)
            assert await runner.run_light_first(lambda: "main", light_ok=True) == "main"  # no wait
            gate.set()

    anyio.run(main)
    assert runner.light_patient == 0


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX priorities")
def test_the_main_lanes_workers_run_at_a_lower_cpu_priority() -> None:
    pool = get_pool(1, name="nice-test", nice=MAIN_LANE_NICE)
    try:
        pool.prestart()
        for _ in range(600):
            if pool._idle:
                break
            threading.Event().wait(0.1)
        worker = pool._idle[0]
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) == min(19, mine + MAIN_LANE_NICE)
    finally:
        pool.close()
    runner = ClassifyRunner(1, 10.0, "process", light=LightLane(workers=1))
    assert runner.pool.nice == MAIN_LANE_NICE and runner.light_runner is not None and runner.light_runner.pool.nice == 0
