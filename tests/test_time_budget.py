"""Every answer within the time limit, under load (issue 24, item 3) — mechanisms, nothing timed.

Where time was lost beyond the budget: the kill time of a worker call was counted from the moment
the call was *sent*, after waiting for a worker to start (a replacement of a killed one, seconds
under load), and the cooperative deadline sent along was the one computed before that wait; and
the killed worker was reaped (up to 5 s) before the caller got its answer. A fake clock and fake
worker processes show each.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from langclass.app.execution import isolation
from langclass.app.execution.isolation import ProcessPool
from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Limits


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class FakeWorker:
    """A worker process stand-in: start-up takes ``startup_s`` of the fake clock; a call never answers."""

    clock: Clock
    startup_s = 0.0
    made: list["FakeWorker"] = []
    reap_gate = threading.Event()

    def __init__(self) -> None:
        self.ready = False
        self.tasks = 0
        self.sent: list[Any] = []
        self.polled: list[float | None] = []
        self.signalled = False
        self.reaped = False
        self.process = SimpleNamespace(pid=4242, returncode=None, poll=lambda: None)
        self.send = SimpleNamespace(send=self.sent.append)
        self.recv = SimpleNamespace(poll=self._poll)
        FakeWorker.made.append(self)

    def _poll(self, timeout: float | None) -> bool:
        self.polled.append(timeout)
        return False  # the computation never answers: the deadline decides

    def poll_ready(self, timeout: float) -> bool:
        if self.ready:
            return True
        if self.startup_s > timeout:
            self.clock.now += timeout
            return False
        self.clock.now += self.startup_s
        self.ready = True
        return True

    def wait_ready(self, timeout: float = 0.0) -> None:
        self.ready = True

    def alive(self) -> bool:
        return True

    def signal_kill(self) -> None:
        self.signalled = True

    def kill(self) -> None:
        self.signalled = True
        FakeWorker.reap_gate.wait(30)  # a killed worker that takes long to exit
        self.reaped = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    FakeWorker.clock = clock
    FakeWorker.made = []
    FakeWorker.startup_s = 0.0
    FakeWorker.reap_gate = threading.Event()
    monkeypatch.setattr(isolation, "_Worker", FakeWorker)
    monkeypatch.setattr(isolation, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(ProcessPool, "_replenish", lambda self: None)
    return clock


def test_a_workers_start_up_counts_against_the_deadline(fake: Clock) -> None:
    pool = ProcessPool(1)
    FakeWorker.startup_s = 8.0  # a replacement worker starting on a loaded machine
    sent_with: list[float] = []

    def rebind(now: float) -> tuple[tuple[Any, ...], dict[str, Any]]:
        sent_with.append(now)
        return (Limits(time_limit_s=1010.0 - now - 0.5),), {}

    with pytest.raises(TimeLimitExceeded):
        pool.call(print, (Limits(time_limit_s=9.5),), {}, None, 10.0, deadline=fake.now + 10.0, rebind=rebind)
    worker = FakeWorker.made[0]
    assert sent_with == [1008.0]  # bound when sent, 8 s after the call began
    assert worker.sent[0][1][0].time_limit_s == pytest.approx(1.5)  # what was left then, not 9.5 s
    assert worker.polled == [pytest.approx(2.0)]  # the kill at the fixed deadline, not 10 s after the send
    assert fake.now == pytest.approx(1008.0)


def test_a_deadline_that_passes_during_start_up_sends_nothing(fake: Clock) -> None:
    pool = ProcessPool(1)
    FakeWorker.startup_s = 30.0
    with pytest.raises(TimeLimitExceeded, match="no worker was ready in time"):
        pool.call(print, (), {}, 5.0, 5.0)
    assert FakeWorker.made[0].sent == [] and fake.now == pytest.approx(1005.0)
    assert pool.idle_count() == 1  # the starting worker is kept for the next caller


def test_the_answer_does_not_wait_for_the_killed_worker_to_exit(fake: Clock) -> None:
    pool = ProcessPool(1)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            pool.call(print, (), {}, 1.0, 1.0)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(20)
    worker = FakeWorker.made[0]
    try:
        assert not caller.is_alive(), "the caller waited for the killed worker to be reaped"
        assert isinstance(outcome[0], TimeLimitExceeded)
        assert worker.signalled and not worker.reaped
        assert pool.process_count() == 0
    finally:
        FakeWorker.reap_gate.set()
