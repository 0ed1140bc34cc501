"""Admission control and one wall-clock budget for the CPU-heavy calls of a request.

:class:`ClassifyRunner` runs parsing, classification and monoid pages off the event loop:

* **admission** — at most ``concurrency`` calls run at once and at most ``queue_max`` more wait
  for a slot. Waiting happens on the event loop (an ``anyio`` semaphore), so a waiting request holds
  no thread; a request that finds the queue full is answered at once with
  :class:`~langclass.app.isolation.ClassifierBusy` (503 + ``Retry-After``), as is one that waited
  ``queue_timeout_s`` without getting a slot. Running calls block in threads of the runner's own
  limiter (``concurrency`` threads), never in the shared thread pool that serves ``/readyz`` and
  database reads — and ``/healthz`` needs no thread at all — so health checks and reads stay fast
  whatever the classify load.
* **one budget** — a request has one wall-clock budget of ``time_limit_s`` from its arrival
  (:meth:`ClassifyRunner.budget_end`), shared by its queue wait and all its calls (parse, then
  analysis). Each call gets the remaining time as the cooperative deadline of ``core`` (which then
  names the step that overran) and, with process isolation, its worker process is killed at the
  remaining time plus a short grace whatever it is doing. Errors name the configured
  ``time_limit_s``.

With ``isolation="thread"`` a call that outlives its budget cannot be killed: the request ends at
``1.5 × remaining + 5`` s and the thread stops at its next cooperative deadline check.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from ..core.errors import TimeLimitExceeded
from ..core.limits import Limits
from .isolation import ClassifierBusy, get_pool

__all__ = ["ClassifyRunner", "kill_grace_s"]

T = TypeVar("T")


def kill_grace_s(remaining: float) -> float:
    """Seconds past the cooperative deadline before a worker process is killed: enough for the
    deadline to fire and its error to come back, even on a loaded machine (1 s … 2 s, 5 % of the budget)."""
    return min(2.0, max(1.0, 0.05 * remaining))


def _with_time_limit(args: tuple[Any, ...], kwargs: dict[str, Any], seconds: float | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args``/``kwargs`` with every :class:`Limits` given the remaining ``seconds`` as its time limit."""
    if seconds is None:
        return args, kwargs

    def fix(v: Any) -> Any:
        return dataclasses.replace(v, time_limit_s=seconds) if isinstance(v, Limits) else v

    return tuple(fix(a) for a in args), {k: fix(v) for k, v in kwargs.items()}


class ClassifyRunner:
    """Runs blocking, CPU-heavy calls under admission control and one budget per request (see the
    module docstring).

    Args:
        concurrency: calls running at once (= worker processes of the pool).
        time_limit_s: a request's wall-clock budget (None = unlimited).
        isolation: ``"process"`` (killable worker processes) or ``"thread"``.
        queue_timeout_s: longest wait for a slot (None = as long as the budget lasts).
        queue_max: requests allowed to wait for a slot; beyond it 503 at once (None = unbounded).
        max_tasks / max_rss_bytes: worker recycling bounds of the process pool.
    """

    def __init__(
        self,
        concurrency: int,
        time_limit_s: float | None,
        isolation: str = "process",
        queue_timeout_s: float | None = None,
        *,
        queue_max: int | None = None,
        max_tasks: int | None = None,
        max_rss_bytes: int | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.time_limit_s = time_limit_s
        self.isolation = isolation
        self.queue_timeout_s = queue_timeout_s
        self.queue_max = queue_max
        self.max_tasks = max_tasks
        self.max_rss_bytes = max_rss_bytes
        self.running = 0
        self.waiting = 0
        self.refused = 0
        self._slots: anyio.Semaphore | None = None
        self._threads: anyio.CapacityLimiter | None = None

    @property
    def pool(self) -> Any:
        """The process pool (process isolation)."""
        return get_pool(self.concurrency, max_tasks=self.max_tasks, max_rss_bytes=self.max_rss_bytes)

    def budget_end(self) -> float | None:
        """The monotonic time a request arriving now must be answered by (None = no limit)."""
        return None if self.time_limit_s is None else time.monotonic() + self.time_limit_s

    def describe(self) -> dict[str, Any]:
        """JSON-ready load figures: running, waiting, refused so far, and the bounds."""
        return {"running": self.running, "waiting": self.waiting, "refused": self.refused,
                "concurrency": self.concurrency, "queue_max": self.queue_max}

    def _retry_after(self) -> float:
        return max(1.0, (self.time_limit_s or 10.0) / 2)

    @asynccontextmanager
    async def _admitted(self, end: float | None) -> AsyncIterator[None]:
        if self._slots is None:
            self._slots = anyio.Semaphore(self.concurrency)
            self._threads = anyio.CapacityLimiter(self.concurrency)
        slots = self._slots
        if slots.value == 0 and self.queue_max is not None and self.waiting >= self.queue_max:
            self.refused += 1
            raise ClassifierBusy(
                0.0, detail=f"the classification queue is full ({self.running} running, {self.waiting} waiting); retry later",
                retry_after_s=self._retry_after(), running=self.running, waiting=self.waiting,
            )
        wait = self.queue_timeout_s
        if end is not None:
            left = end - time.monotonic()
            if left <= 0:
                raise self._restated(TimeLimitExceeded("time_limit_s", self.time_limit_s, "budget spent before a worker was asked"))
            wait = left if wait is None else min(wait, left)
        self.waiting += 1
        t0 = time.monotonic()
        try:
            got = False
            try:
                slots.acquire_nowait()
                got = True
            except anyio.WouldBlock:
                with anyio.move_on_after(wait if wait is not None else math.inf):
                    await slots.acquire()
                    got = True
        finally:
            self.waiting -= 1
        if not got:
            self.refused += 1
            raise ClassifierBusy(time.monotonic() - t0, retry_after_s=self._retry_after())
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            slots.release()

    def _restated(self, err: TimeLimitExceeded) -> TimeLimitExceeded:
        """``err`` naming the configured limit (the call ran under the remaining part of it)."""
        if self.time_limit_s is not None:
            err.value = err.extra["value"] = self.time_limit_s
            step = err.extra.get("step")
            err.detail = f"time limit of {self.time_limit_s} s exceeded" + (f" during {step}" if step else " (the computation was stopped)")
            err.args = (err.detail,)
        return err

    async def run(self, fn: Callable[..., T], *args: Any, budget_end: float | None = None, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` (a module-level function; arguments and result picklable
        with process isolation) within the request's budget.

        Args:
            budget_end: the request's :meth:`budget_end` when it makes several calls (default: a
                fresh budget starting now).

        Raises:
            ClassifierBusy: the queue is full, or no slot came free in time (503).
            TimeLimitExceeded: the budget ran out (the process was killed with process isolation).
            LangclassError: whatever ``fn`` raised, with its class and fields.
        """
        end = budget_end if budget_end is not None else self.budget_end()
        async with self._admitted(end):
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise self._restated(TimeLimitExceeded("time_limit_s", self.time_limit_s, "budget spent waiting for a worker"))
            args, kwargs = _with_time_limit(args, kwargs, remaining)
            try:
                if self.isolation == "process":
                    kill_at = None if remaining is None else remaining + kill_grace_s(remaining)
                    call = functools.partial(self.pool.call, fn, args, kwargs, kill_at, self.time_limit_s, remaining)
                    return await anyio.to_thread.run_sync(call, limiter=self._threads)
                call = functools.partial(fn, *args, **kwargs)
                if remaining is None:
                    return await anyio.to_thread.run_sync(call, limiter=self._threads)
                backstop = 1.5 * remaining + 5.0
                try:
                    with anyio.fail_after(backstop):
                        return await anyio.to_thread.run_sync(call, limiter=self._threads, abandon_on_cancel=True)
                except TimeoutError:
                    raise TimeLimitExceeded(
                        "time_limit_s", self.time_limit_s, f"time limit of {self.time_limit_s} s exceeded (hard backstop at {backstop:.1f} s)"
                    ) from None
            except TimeLimitExceeded as err:
                raise self._restated(err) from None
