"""Identical classify requests in flight share one computation (issue 24, item 9).

Before: 40 identical concurrent POSTs were 40 admissions — with one worker and a short queue, 22 of
them were answered 503 ``busy``. Nothing timed: the one computation is held until the other 39
requests are waiting for it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from langclass.app.execution.coalesce import InFlight
from langclass.app.web.routes import languages as routes

BODY = {"regex": "(ab)*b", "alphabet": ["a", "b"]}


def test_forty_identical_requests_cost_one_computation(make_client: Any, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_client(sqlite_url, classify_isolation="thread", classify_concurrency=1, classify_queue_max=0,
                         classify_light_workers=0)
    calls: list[int] = []
    real = routes.classify_json

    def held(**kwargs: Any) -> Any:
        calls.append(1)
        table = getattr(client.app.state, "classify_in_flight", None)
        end = time.monotonic() + 60
        while (table is None or table.waiting < 39) and time.monotonic() < end:
            time.sleep(0.01)
            table = getattr(client.app.state, "classify_in_flight", None)
        return real(**kwargs)

    monkeypatch.setattr(routes, "classify_json", held)
    codes: list[int] = []
    lock = threading.Lock()

    def post() -> None:
        r = client.post("/v1/classify", json=BODY)
        with lock:
            codes.append(r.status_code)

    threads = [threading.Thread(target=post) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(set(codes)) == [200] and len(codes) == 40, codes
    assert len(calls) == 1
    table = client.app.state.classify_in_flight
    assert table.leaders == 1 and table.followers == 39 and table.in_flight() == 0


def test_a_followers_answer_is_the_leaders_error_and_a_cancelled_leader_is_replaced() -> None:
    async def main() -> None:
        table = InFlight()
        gate = anyio.Event()
        runs: list[str] = []

        async def failing() -> int:
            runs.append("fail")
            await gate.wait()
            raise ValueError("the leader's error")

        errors: list[str] = []

        async def follow() -> None:
            try:
                await table.run("k", failing)
            except ValueError as exc:
                errors.append(str(exc))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(follow)
            await anyio.sleep(0)
            while table.waiting < 2:
                await anyio.sleep(0.001)
            gate.set()
        assert errors == ["the leader's error"] * 3 and runs == ["fail"]

        # a cancelled leader: a follower computes it itself
        async def slow() -> int:
            runs.append("slow")
            await anyio.sleep(3600)
            return 0

        async def quick() -> int:
            runs.append("quick")
            return 7

        results: list[int] = []
        async with anyio.create_task_group() as tg:
            leader = anyio.CancelScope()

            async def lead() -> None:
                with leader:
                    await table.run("k2", slow)

            async def second() -> None:
                results.append(await table.run("k2", quick))

            tg.start_soon(lead)
            await anyio.sleep(0)
            tg.start_soon(second)
            while table.waiting < 1:
                await anyio.sleep(0.001)
            leader.cancel()
        assert results == [7] and runs[-2:] == ["slow", "quick"] and table.in_flight() == 0

    anyio.run(main)
