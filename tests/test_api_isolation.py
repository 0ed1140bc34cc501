"""The classification process pool: errors keep their class and fields, overruns are killed."""

from __future__ import annotations

import operator
import os
import time

import pytest

from langclass.app.execution.isolation import ClassifierBusy, ProcessPool, WorkerError
from langclass.core.base.errors import LimitExceeded, RegexSyntaxError, TimeLimitExceeded
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex


@pytest.fixture(scope="module")
def pool():
    p = ProcessPool(1)
    yield p
    p.close()


def test_results_and_typed_errors_cross_the_process_boundary(pool: ProcessPool) -> None:
    dfa = pool.call(parse_regex, ("(ab)*", ["a", "b"]), {}, 60, 60)
    assert dfa.fingerprint() == parse_regex("(ab)*", ["a", "b"]).fingerprint()
    with pytest.raises(RegexSyntaxError) as info:
        pool.call(parse_regex, ("(ab", ["a", "b"]), {}, 60, 60)
    local = pytest.raises(RegexSyntaxError, parse_regex, "(ab", ["a", "b"]).value
    assert (info.value.detail, info.value.field, info.value.extra) == (local.detail, local.field, local.extra)
    with pytest.raises(LimitExceeded) as info:
        pool.call(Limits(max_states=3).check, ("max_states", 10), {}, 60, 60)
    assert info.value.limit == "max_states" and info.value.value == 3 and info.value.extra["limit"] == "max_states"


def test_other_exceptions_are_worker_errors_and_the_worker_survives(pool: ProcessPool) -> None:
    with pytest.raises(WorkerError, match="ZeroDivisionError"):
        pool.call(operator.truediv, (1, 0), {}, 60, 60)
    assert pool.call(operator.add, (2, 3), {}, 60, 60) == 5


def test_a_dead_worker_is_replaced(pool: ProcessPool) -> None:
    with pytest.raises(WorkerError, match="died"):
        pool.call(os._exit, (3,), {}, 60, 60)
    assert pool.call(operator.add, (1, 1), {}, 60, 60) == 2


def test_an_overrun_is_killed_at_the_time_limit(pool: ProcessPool) -> None:
    pid = pool.call(os.getpid, (), {}, 60, 60)
    with pytest.raises(TimeLimitExceeded) as info:
        pool.call(time.sleep, (3600,), {}, 0.5, 0.25)  # a budget far below the work
    assert info.value.limit == "time_limit_s" and info.value.value == 0.25
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # the killed process is gone (reaped by the pool)
            os.kill(pid, 0)
            time.sleep(0.1)
    assert pool.call(os.getpid, (), {}, 60, 60) != pid


def test_thread_isolation_serves_the_same_answers(make_client, migrated_url: str) -> None:
    body = {"regex": "(ab)*", "alphabet": ["a", "b"]}
    threaded = make_client(migrated_url, classify_isolation="thread").post("/v1/classify", json=body)
    isolated = make_client(migrated_url).post("/v1/classify", json=body)
    assert threaded.status_code == isolated.status_code == 200
    a, b = threaded.json(), isolated.json()
    for key in ("id", "classes", "monoid", "encodings", "num_states", "dfa"):
        assert a[key] == b[key]


def test_a_full_pool_answers_busy_after_the_queue_timeout(tmp_path) -> None:
    """The pool's only worker is held by a call that cannot end before the queue timeout of the
    next caller (it waits for that caller to give up), so the answer is 503 every time."""
    import threading

    pool = ProcessPool(1)
    try:
        pool.call(operator.add, (0, 0), {}, 60, 60)  # a ready worker
        fifo = tmp_path / "gate"
        os.mkfifo(fifo)
        holder = threading.Thread(target=pool.call, args=(fifo.read_bytes, (), {}, 60, 60))  # blocks until we write
        holder.start()
        while pool._slots._value != 0:  # the holder owns the worker (a state, not a sleep race)
            time.sleep(0.01)
        with pytest.raises(ClassifierBusy) as info:
            pool.call(operator.add, (1, 2), {}, 60, 60, 0.3)
        assert info.value.status == 503 and info.value.headers["Retry-After"]
        with open(fifo, "wb") as gate:
            gate.write(b"x")
        holder.join()
        assert pool.call(operator.add, (1, 2), {}, 60, 60, 0.3) == 3
    finally:
        pool.close()


def test_busy_is_a_documented_problem(make_client, migrated_url: str) -> None:
    doc = make_client(migrated_url).get("/problems/busy")
    assert doc.status_code == 200 and doc.json()["status"] == 503
