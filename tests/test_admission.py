"""Hostile load: admission control, one budget per request, bounded worker memory.

Nothing here measures time: load is made by calls that block on a gate the test opens, budgets are
far below the work (or already spent), and every wait is for a state (a counter), not a delay.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from langclass.app.usecases import service
from langclass.app.execution.isolation import ClassifierBusy, ProcessPool
from langclass.app.execution.runner import ClassifyRunner, answer_reserve_s, kill_grace_s
from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Limits


def _until(cond: Any, what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


async def _until_async(cond: Any) -> None:
    with anyio.fail_after(60):
        while not cond():
            await anyio.sleep(0.01)


# --- admission control ----------------------------------------------------------------------------


def test_a_full_queue_is_refused_at_once_with_retry_after() -> None:
    gate = threading.Event()

    async def main() -> None:
        runner = ClassifyRunner(1, 60.0, "thread", 600.0, queue_max=1)
        results: list[Any] = []

        async def call() -> None:
            results.append(await runner.run(gate.wait, 120))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await _until_async(lambda: runner.running == 1)
            tg.start_soon(call)
            await _until_async(lambda: runner.waiting == 1)
            with pytest.raises(ClassifierBusy) as info:
                await runner.run(operator.add, 1, 2)  # would be quick, but there is no room to wait
            assert info.value.status == 503 and int(info.value.headers["Retry-After"]) >= 1
            assert runner.describe()["refused"] == 1
            gate.set()
        assert results == [True, True] and runner.running == runner.waiting == 0
        assert await runner.run(operator.add, 1, 2) == 3

    anyio.run(main)


def test_health_and_reads_answer_while_classify_is_saturated(make_client: Any, migrated_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 classifications run (blocked on a gate) and 30 wait, with the shared thread pool cut to 8
    threads: /healthz, /readyz and a database read still answer; the 33rd classify gets 503 at
    once; opening the gate lets all 32 finish. (Before: each waiting request held a thread of the
    shared pool, so /readyz and reads queued behind them.)"""
    from langclass.app.web.routes import languages

    gate = threading.Event()
    real = languages.classify_json

    def gated(**kw: Any) -> Any:
        assert gate.wait(120), "the test never opened the gate"
        return real(**kw)

    monkeypatch.setattr(languages, "classify_json", gated)
    client = make_client(migrated_url, classify_isolation="thread", classify_concurrency=2, classify_queue_max=30,
                         classify_queue_timeout_s=600.0, time_limit_s=600.0, classify_light_workers=0)
    client.portal.call(lambda: setattr(anyio.to_thread.current_default_thread_limiter(), "total_tokens", 8))
    runner = client.app.state.runner
    codes: list[int] = []
    # 32 different languages (identical requests in flight would share one computation)
    bodies = [{"regex": "(ab)*" + "a" * i, "alphabet": ["a", "b"]} for i in range(33)]
    threads = [threading.Thread(target=lambda b=b: codes.append(client.post("/v1/classify", json=b).status_code)) for b in bodies[:32]]
    try:
        for t in threads:
            t.start()
        _until(lambda: runner.running == 2 and runner.waiting == 30, "2 running and 30 waiting classifications")
        probes: dict[str, int] = {}

        def probe() -> None:
            for path in ("/healthz", "/readyz", "/v1/languages"):
                probes[path] = client.get(path).status_code

        prober = threading.Thread(target=probe)
        prober.start()
        prober.join(60)
        assert probes == {"/healthz": 200, "/readyz": 200, "/v1/languages": 200}, probes
        busy = client.post("/v1/classify", json=bodies[32])
        assert busy.status_code == 503 and busy.json()["code"] == "busy" and int(busy.headers["Retry-After"]) >= 1
    finally:
        gate.set()
        for t in threads:
            t.join(120)
    assert codes == [200] * 32


# --- one budget per request -----------------------------------------------------------------------


def test_the_analysis_gets_what_parsing_left_of_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 103.5])
    monkeypatch.setattr(service.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(service, "parse_language", lambda **kw: type("P", (), {"dfa": "dfa"})())
    seen: list[Limits] = []
    monkeypatch.setattr(service, "analyze_language", lambda dfa, limits: seen.append(limits) or {"ok": True})
    parsed, analysis = service.parse_and_analyze(regex="a", alphabet=["a"], limits=Limits(time_limit_s=10.0))
    assert analysis == {"ok": True} and seen[0].time_limit_s == pytest.approx(6.5)


def test_a_budget_spent_by_parsing_fails_naming_the_whole_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 111.0])
    monkeypatch.setattr(service.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(service, "parse_language", lambda **kw: type("P", (), {"dfa": "dfa"})())
    monkeypatch.setattr(service, "analyze_language", lambda dfa, limits: pytest.fail("analysis ran past the budget"))
    with pytest.raises(TimeLimitExceeded) as info:
        service.parse_and_analyze(regex="a", alphabet=["a"], limits=Limits(time_limit_s=10.0))
    assert info.value.value == 10.0 and info.value.extra["step"] == "analysis"


def test_calls_of_one_request_share_its_budget_and_the_kill_comes_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = ClassifyRunner(1, 30.0, "process", 60.0, queue_max=4)
    calls: list[tuple[Any, ...]] = []

    class FakePool:
        def call(self, fn: Any, args: Any, kwargs: Any, timeout: float, limit_value: Any, queue_timeout: Any = None, *,
                 deadline: float, rebind: Any) -> Any:
            now = time.monotonic()
            _, sent = rebind(now)  # what is sent: the cooperative deadline left at the send
            calls.append((deadline - now, sent["limits"].time_limit_s))
            return "done"

    monkeypatch.setattr(ClassifyRunner, "pool", property(lambda self: FakePool()))

    async def main() -> None:
        end = time.monotonic() + 30.0
        assert await runner.run(service.analyze_language, "dfa", limits=Limits(time_limit_s=30.0), budget_end=end) == "done"
        with pytest.raises(TimeLimitExceeded) as info:  # the same request, its budget gone
            await runner.run(service.analyze_language, "dfa", limits=Limits(time_limit_s=30.0), budget_end=time.monotonic() - 1)
        assert info.value.value == 30.0 and info.value.extra["limit"] == "time_limit_s"

    anyio.run(main)
    (kill_at, cooperative), = calls
    assert cooperative <= 30.0 - answer_reserve_s(30.0) + 0.1  # room for the answer to go out
    assert kill_at == pytest.approx(cooperative + kill_grace_s(cooperative), abs=0.1)
    assert kill_at <= 30.0  # one budget, not one per phase (was 2 × 30 + 15 s); killed by its end


def test_a_worker_ignoring_its_deadline_is_killed_at_the_budget() -> None:
    """``time.sleep`` never checks a deadline: only the kill ends it (a budget far below the work)."""
    runner = ClassifyRunner(1, 0.5, "process", 60.0, queue_max=4)

    async def main() -> None:
        runner.pool.prestart()  # as the service does at start-up: start-up counts against a budget
        await _until_async(lambda: runner.pool.idle_count() == 1)
        pid = await runner.run(os.getpid)
        with pytest.raises(TimeLimitExceeded) as info:
            await runner.run(time.sleep, 3600)
        assert info.value.value == 0.5
        # a replacement starts in the background at once (its start-up would not fit a 0.5 s budget)
        await _until_async(lambda: runner.pool.idle_count() == 1)
        assert await runner.run(os.getpid) != pid

    try:
        anyio.run(main)
    finally:
        runner.pool.close()


# --- bounded memory: recycling, process count, cache ----------------------------------------------------


def test_workers_are_recycled_after_max_tasks_and_past_max_rss() -> None:
    by_tasks = ProcessPool(1, max_tasks=2)
    by_rss = ProcessPool(1, max_rss_bytes=1)  # every worker is over 1 byte: recycled after each call
    try:
        first = by_tasks.call(os.getpid, (), {}, 60, 60)
        assert by_tasks.call(os.getpid, (), {}, 60, 60) == first
        third = by_tasks.call(os.getpid, (), {}, 60, 60)
        assert third != first and by_tasks.recycled == 1
        with pytest.raises(ProcessLookupError):
            _until(lambda: os.kill(first, 0) and False, "the recycled worker to exit", timeout=120)
        a = by_rss.call(os.getpid, (), {}, 60, 60)
        b = by_rss.call(os.getpid, (), {}, 60, 60)
        assert a != b and by_rss.recycled == 2
        # the replacement starts in the background (not inside the next call), and only one
        _until(lambda: by_rss.idle_count() == 1, "a replacement worker started in the background")
        assert by_rss.process_count() == 1
    finally:
        by_tasks.close()
        by_rss.close()


def test_prestart_and_calls_never_run_more_processes_than_the_size() -> None:
    pool = ProcessPool(2)
    try:
        pool.prestart()
        callers = [threading.Thread(target=pool.call, args=(operator.add, (i, i), {}, 60, 60)) for i in range(6)]
        for t in callers:
            t.start()
        peak = 0
        while any(t.is_alive() for t in callers):
            peak = max(peak, pool.process_count())
        for t in callers:
            t.join()
        _until(lambda: not any(t.name == "langclass-prestart" for t in threading.enumerate()), "prestart to finish")
        peak = max(peak, pool.process_count())
        assert peak <= 2 and pool.process_count() <= 2
    finally:
        pool.close()


def test_the_monoid_cache_stays_within_its_byte_budget() -> None:
    from langclass.core.ingest.parse import parse_regex

    service._MONOID_CACHE.clear()
    records = {}
    for i, regex in enumerate(["(ab)*", "(aab)*", "(aaab)*", "a*b*a*"]):
        dfa = parse_regex(regex, ["a", "b"])
        records[f"lang{i}"] = service.dfa_to_json(dfa)
    limits = Limits()
    service.monoid_page("lang0", records["lang0"], limits, 0, 5, cache_bytes=10**9)
    one = service.monoid_cache_usage()[1]
    assert one > 0
    budget = int(2.5 * one)
    for key, rec in records.items():
        service.monoid_page(key, rec, limits, 0, 5, cache_bytes=budget)
        entries, used = service.monoid_cache_usage()
        assert used <= budget
    assert 1 <= entries < len(records)
    service.monoid_page("lang3", records["lang3"], Limits(time_limit_s=1.0), 0, 5, cache_bytes=budget)  # a hit
    assert service.monoid_cache_usage()[0] == entries
    service._MONOID_CACHE.clear()
    service.monoid_page("lang0", records["lang0"], limits, 0, 5, cache_bytes=0)
    assert service.monoid_cache_usage() == (0, 0)
