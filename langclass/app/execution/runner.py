"""Admission control and one wall-clock budget for the CPU-heavy calls of a request.

:class:`ClassifyRunner` runs parsing, classification and monoid pages off the event loop:

* **admission** — at most ``concurrency`` calls run at once and at most ``queue_max`` more wait
  for a slot. Waiting happens on the event loop (an ``anyio`` semaphore), so a waiting request holds
  no thread; a request that finds the queue full is answered at once with
  :class:`~langclass.app.execution.isolation.ClassifierBusy` (503 + ``Retry-After``), as is one that waited
  ``queue_timeout_s`` without getting a slot. Running calls block in threads of the runner's own
  limiter (``concurrency`` threads), never in the shared thread pool that serves ``/readyz`` and
  database reads — and ``/healthz`` needs no thread at all — so health checks and reads stay fast
  whatever the classify load.
* **one budget** — a request has one wall-clock budget of ``time_limit_s`` from its arrival
  (:meth:`ClassifyRunner.budget_end`), shared by its queue wait and all its calls (parse, then
  analysis). Each call gets the remaining time less a small reserve for the answer to travel
  (:func:`answer_reserve_s`) as the cooperative deadline of ``core`` (which then names the step that
  overran) and, with process isolation, its worker process is killed a short grace after that
  deadline (:func:`kill_grace_s`) whatever it is doing — at the budget's end for budgets of 20 s
  and more, at most 1 s past it for small ones. Errors name the configured
  ``time_limit_s``.

* **a light lane** — :meth:`ClassifyRunner.run_light_first` first offers a request predicted small
  (:func:`~langclass.app.usecases.service.predicted_light`) to a second, smaller runner with its own worker
  process(es) (:class:`LightLane`, ``LANGCLASS_CLASSIFY_LIGHT_*``), under *hard* bounds lowered for
  the attempt: at most ``max_states`` DFA states, ``max_monoid_size`` monoid elements and
  ``time_limit_s`` seconds (its worker killed past that like any other). A request that stays within
  them is answered there, so small classifications never wait behind heavy ones (when the light
  lane is busy and a main worker is free, a predicted-small request simply runs there); one that hits a
  lowered bound goes on to the main lane within the same budget (an error that is not about a
  lowered bound, e.g. a syntax error, is the answer). One that finds the light queue full goes on
  to the main lane only when a main worker is free; while heavy requests fill the main lane it
  waits for the light lane instead — past the lane's ``queue_max``, within its own budget — so a
  small request is never refused busy, nor queued behind heavy ones, because heavy ones fill the
  pool. The main lane's worker processes also run at a lower CPU priority
  (:data:`MAIN_LANE_NICE`), so on a machine whose cores the heavy ones saturate the light lane's
  worker and the service's event loop still get the CPU first. The prediction
  is made from what the input costs — a bounded parse to at most the lane's ``max_states`` states
  (:func:`~langclass.app.usecases.service.predicted_light`, a few milliseconds) — in a thread of
  its own (:meth:`ClassifyRunner.predict`, never on the event loop nor in the shared pool), and
  remembered per request key, as is every request that overflowed, so a heavy request repeated by
  many clients is looked at once and never again offered to the light lane.

The budget starts when the request *arrived* (``request.state.arrived``, stamped by the app's
outermost middleware), so the time a request spent before its handler ran — reading the body,
waiting for the event loop — counts too: a request is answered within ``time_limit_s`` plus the
kill grace of its arrival.

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

from collections import OrderedDict

import anyio

from langclass.core.base.errors import LimitExceeded, TimeLimitExceeded
from langclass.core.base.limits import Limits
from .isolation import ClassifierBusy, get_pool

__all__ = ["ClassifyRunner", "LightLane", "MAIN_LANE_NICE", "answer_reserve_s", "kill_grace_s"]

T = TypeVar("T")

MAIN_LANE_NICE = 5
"""How much lower the CPU priority (``nice``) of the main lane's worker processes is than the
service's and the light lane's, when there is a light lane: heavy classifications that saturate the
cores yield them to small ones and to the event loop, and use them fully when nothing else runs."""


def answer_reserve_s(remaining: float) -> float:
    """Seconds of a call's remaining budget kept back from its cooperative deadline, for the answer
    (result or error) to come back and go out before the budget ends (5 % of it, at most 1 s)."""
    return min(1.0, 0.05 * remaining)


def kill_grace_s(remaining: float) -> float:
    """Seconds past the cooperative deadline (``remaining`` seconds away) before a worker process is
    killed: enough for the deadline to fire and its error to come back, even on a loaded machine
    (1 s; with :func:`answer_reserve_s` the kill comes at the budget's end for budgets of 20 s and
    more, at most 1 s past it for small ones)."""
    return 1.0


def _with_time_limit(args: tuple[Any, ...], kwargs: dict[str, Any], seconds: float | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args``/``kwargs`` with every :class:`Limits` given the remaining ``seconds`` as its time limit."""
    if seconds is None:
        return args, kwargs

    def fix(v: Any) -> Any:
        return dataclasses.replace(v, time_limit_s=seconds) if isinstance(v, Limits) else v

    return tuple(fix(a) for a in args), {k: fix(v) for k, v in kwargs.items()}


@dataclasses.dataclass(frozen=True)
class LightLane:
    """The light lane of a :class:`ClassifyRunner` (settings ``LANGCLASS_CLASSIFY_LIGHT_*``).

    Attributes:
        workers: its worker processes (0 = no light lane).
        max_states: the hard ``max_states`` of an attempt there (DFA states).
        max_monoid_size: the hard ``max_monoid_size`` of an attempt (monoid elements).
        time_limit_s: the hard wall-clock bound of an attempt (seconds; its worker is killed past it
            plus the kill grace).
        queue_max: attempts that may wait for a light worker; one more goes to the main lane at once.
    """

    workers: int = 1
    max_states: int = 256
    max_monoid_size: int = 50_000  # every DFA of ≤ 6 states fits (6^6 = 46,656 transformations)
    time_limit_s: float = 1.0
    queue_max: int = 8

    def bounded(self, limits: Limits) -> Limits:
        """``limits`` with the lane's hard bounds (never raising a bound)."""
        return dataclasses.replace(
            limits,
            max_states=min(limits.max_states, self.max_states),
            max_monoid_size=min(limits.max_monoid_size, self.max_monoid_size),
        )


class _Overflow(Exception):
    """A light attempt hit a bound of the lane (or its queue was full): go to the main lane."""


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
        light: the light lane (None or ``workers=0``: none).
        lane: the name of this runner's process pool (``"classify"``; the light lane's is ``"light"``).
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
        light: LightLane | None = None,
        lane: str = "classify",
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
        self.served = 0  # calls that ran to an answer (a result or an error of ``fn``)
        self.lane = lane
        self.light = light if light is not None and light.workers > 0 else None
        self.light_runner: ClassifyRunner | None = None
        self.light_overflows = 0  # light attempts that went on to this runner
        self.light_patient = 0  # small requests that waited for the light lane past its queue bound (the main lane busy)
        if self.light is not None:
            self.light_runner = ClassifyRunner(
                self.light.workers, self.light.time_limit_s, isolation, self.light.time_limit_s,
                queue_max=self.light.queue_max, max_tasks=max_tasks, max_rss_bytes=max_rss_bytes, lane="light",
            )
        self._slots: anyio.Semaphore | None = None
        self._threads: anyio.CapacityLimiter | None = None
        self._predict_threads: anyio.CapacityLimiter | None = None
        self._predictions: OrderedDict[Any, bool] = OrderedDict()
        self.predictions_size = 4096
        self.predicted = 0  # predictions made (not answered from memory)

    def remembered(self, key: Any) -> bool | None:
        """The light prediction remembered for the request ``key`` (None: not made yet)."""
        if key is None:
            return None
        hit = self._predictions.get(key)
        if hit is not None:
            self._predictions.move_to_end(key)
        return hit

    def remember(self, key: Any, light: bool) -> None:
        """Remember the light prediction of the request ``key`` (least recently used first out)."""
        if key is None:
            return
        self._predictions[key] = light
        self._predictions.move_to_end(key)
        while len(self._predictions) > self.predictions_size:
            self._predictions.popitem(last=False)

    async def predict(self, fn: Callable[..., bool], key: Any = None, **kwargs: Any) -> bool:
        """``fn(**kwargs)`` — a light prediction such as
        :func:`~langclass.app.usecases.service.predicted_light` — in one of two threads of its own
        (not the event loop, not the shared thread pool), remembered under ``key``."""
        hit = self.remembered(key)
        if hit is not None:
            return hit
        if self._predict_threads is None:
            self._predict_threads = anyio.CapacityLimiter(2)
        light = bool(await anyio.to_thread.run_sync(functools.partial(fn, **kwargs), limiter=self._predict_threads))
        self.predicted += 1
        self.remember(key, light)
        return light

    @property
    def pool(self) -> Any:
        """The process pool (process isolation)."""
        return get_pool(self.concurrency, max_tasks=self.max_tasks, max_rss_bytes=self.max_rss_bytes, name=self.lane,
                        nice=MAIN_LANE_NICE if self.light is not None else 0)

    def prestart(self) -> None:
        """Start the worker processes of both lanes in the background (process isolation)."""
        if self.isolation == "process":
            self.pool.prestart()
            if self.light_runner is not None:
                self.light_runner.pool.prestart()

    def budget_end(self, arrived: float | None = None) -> float | None:
        """The monotonic time a request that arrived at ``arrived`` (default: now) must be answered
        by (None = no limit)."""
        if self.time_limit_s is None:
            return None
        return (time.monotonic() if arrived is None else arrived) + self.time_limit_s

    def has_free_slot(self) -> bool:
        """Whether a call admitted now would start at once (a slot is free and nobody waits)."""
        return self.waiting == 0 and (self._slots is None or self._slots.value > 0)

    def describe(self) -> dict[str, Any]:
        """JSON-ready load figures: running, waiting, refused and served so far, and the bounds
        (with the light lane's under ``light``)."""
        out: dict[str, Any] = {"running": self.running, "waiting": self.waiting, "refused": self.refused, "served": self.served,
                               "concurrency": self.concurrency, "queue_max": self.queue_max}
        if self.light_runner is not None:
            out["light"] = {**self.light_runner.describe(), "overflows": self.light_overflows, "patient": self.light_patient}
        return out

    def _retry_after(self) -> float:
        return max(1.0, (self.time_limit_s or 10.0) / 2)

    def would_refuse(self) -> bool:
        """Whether a call admitted now would be refused busy at once (every slot taken and the
        queue at ``queue_max``)."""
        return (self._slots is not None and self._slots.value == 0 and self.queue_max is not None
                and self.waiting >= self.queue_max)

    @asynccontextmanager
    async def _admitted(self, end: float | None, *, patient: bool = False) -> AsyncIterator[None]:
        if self._slots is None:
            self._slots = anyio.Semaphore(self.concurrency)
            self._threads = anyio.CapacityLimiter(self.concurrency)
        slots = self._slots
        if not patient and slots.value == 0 and self.queue_max is not None and self.waiting >= self.queue_max:
            self.refused += 1
            raise ClassifierBusy(
                0.0, detail=f"the classification queue is full ({self.running} running, {self.waiting} waiting); retry later",
                retry_after_s=self._retry_after(), running=self.running, waiting=self.waiting,
            )
        wait = None if patient else self.queue_timeout_s
        if end is not None:
            left = end - time.monotonic()
            if left <= 0:
                raise self._restated(TimeLimitExceeded("time_limit_s", self.time_limit_s, "budget spent before a worker was asked",
                                                               step="waiting for a worker"))
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
            self.served += 1
            slots.release()

    def _restated(self, err: TimeLimitExceeded, fn: Callable[..., Any] | None = None) -> TimeLimitExceeded:
        """``err`` naming the configured limit (the call ran under the remaining part of it) and the
        step that overran: the one the computation reported, else the call's own step (its process
        was stopped at the deadline, so which of its inner steps was running is not known)."""
        if not err.extra.get("step"):
            err.extra["step"] = step_of(fn) if fn is not None else "computation"
        if self.time_limit_s is not None:
            err.value = err.extra["value"] = self.time_limit_s
            step = err.extra.get("step")
            err.detail = f"time limit of {self.time_limit_s} s exceeded" + (f" during {step}" if step else " (the computation was stopped)")
            err.args = (err.detail,)
        return err

    async def run(self, fn: Callable[..., T], *args: Any, budget_end: float | None = None, wait_until: float | None = None,
                  **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` (a module-level function; arguments and result picklable
        with process isolation) within the request's budget.

        Args:
            budget_end: the request's :meth:`budget_end` when it makes several calls (default: a
                fresh budget starting now).
            wait_until: wait for a slot until this monotonic instant, past ``queue_max`` and
                ``queue_timeout_s`` (the light lane's patient attempt); the call then runs under
                this runner's own ``time_limit_s`` from its start, never past ``wait_until``.

        Raises:
            ClassifierBusy: the queue is full, or no slot came free in time (503).
            TimeLimitExceeded: the budget ran out (the process was killed with process isolation).
            LangclassError: whatever ``fn`` raised, with its class and fields.
        """
        end = budget_end if budget_end is not None else self.budget_end()
        async with self._admitted(end if wait_until is None else wait_until, patient=wait_until is not None):
            if wait_until is not None:
                own = self.budget_end()
                end = wait_until if own is None else min(wait_until, own)
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise self._restated(TimeLimitExceeded("time_limit_s", self.time_limit_s, "budget spent waiting for a worker",
                                                               step="waiting for a worker"))
            cooperative = None if remaining is None else remaining - answer_reserve_s(remaining)
            given_args, given_kwargs = args, kwargs
            args, kwargs = _with_time_limit(args, kwargs, cooperative)
            try:
                if self.isolation == "process":
                    # one absolute kill time, fixed now: waiting for a worker (or for one to start)
                    # inside the pool counts against it, and the cooperative deadline sent along is
                    # what is left when the call is sent (before: both were counted from the send,
                    # so a worker's start-up under load went on top of the budget)
                    deadline = None if cooperative is None else time.monotonic() + cooperative + kill_grace_s(cooperative)

                    def rebind(now: float) -> tuple[tuple[Any, ...], dict[str, Any]]:
                        if end is None:
                            return args, kwargs
                        rest = end - now
                        return _with_time_limit(given_args, given_kwargs, max(0.0, rest - answer_reserve_s(rest)))

                    call = functools.partial(self.pool.call, fn, args, kwargs, None, self.time_limit_s, remaining,
                                             deadline=deadline, rebind=rebind)
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
                        "time_limit_s", self.time_limit_s, f"time limit of {self.time_limit_s} s exceeded (hard backstop at {backstop:.1f} s)",
                        step=step_of(fn),
                    ) from None
            except TimeLimitExceeded as err:
                raise self._restated(err, fn) from None

    async def run_light_first(self, fn: Callable[..., T], *args: Any, light_ok: bool, budget_end: float | None = None,
                              light_key: Any = None, **kwargs: Any) -> T:
        """:meth:`run`, first offered to the light lane when ``light_ok`` (the request is predicted
        small) and this runner has one (see the module docstring) — unless the light lane is busy
        and a main worker is free right now: then the request runs there at once (the lane exists
        so that small requests never wait behind heavy ones, not to make them wait for each other).

        The attempt runs with every :class:`Limits` argument lowered to the lane's hard bounds and
        at most the lane's time; it overflows to :meth:`run` (same ``budget_end``) when it hits a
        lowered bound (``max_states``, ``max_monoid_size`` or the lane's time) — raised, or recorded
        in the result's ``limits_hit`` (the analysis records limits instead of raising them) — or
        the light queue is full. Anything else it raises is the answer. A request ``light_key``
        that overflowed on a bound is remembered as not light (:meth:`remember`).

        Raises:
            as :meth:`run`; TimeLimitExceeded naming this runner's ``time_limit_s`` when the whole
            budget ran out during the attempt.
        """
        end = budget_end if budget_end is not None else self.budget_end()
        lane, light = self.light_runner, self.light
        if lane is not None and light is not None and light_ok and (lane.has_free_slot() or not self.has_free_slot()):
            try:
                return await self._light_attempt(lane, light, fn, args, kwargs, end)
            except _Overflow as over:
                bound = bool(over.args and over.args[0] == "bound")
                if not bound and not self.has_free_slot():
                    # the light queue is full (or its wait ran out) and the main lane is busy too:
                    # a small request waits for the light lane within its own budget instead of
                    # queueing behind heavy ones, or being refused busy by them
                    self.light_patient += 1
                    try:
                        return await self._light_attempt(lane, light, fn, args, kwargs, end, patient=True)
                    except _Overflow as again:
                        bound = bool(again.args and again.args[0] == "bound")
                self.light_overflows += 1
                if bound:
                    self.remember(light_key, False)
        return await self.run(fn, *args, budget_end=end, **kwargs)

    async def _light_attempt(self, lane: ClassifyRunner, light: LightLane, fn: Callable[..., T], args: tuple[Any, ...],
                             kwargs: dict[str, Any], end: float | None, *, patient: bool = False) -> T:
        lowered: set[str] = set()
        for v in (*args, *kwargs.values()):
            if isinstance(v, Limits):
                lowered |= {name for name in ("max_states", "max_monoid_size") if getattr(light, name) < getattr(v, name)}

        def fix(v: Any) -> Any:
            return light.bounded(v) if isinstance(v, Limits) else v

        light_args = tuple(fix(a) for a in args)
        light_kwargs = {k: fix(v) for k, v in kwargs.items()}
        light_end = time.monotonic() + light.time_limit_s
        whole_budget_first = end is not None and end <= light_end
        if whole_budget_first:
            light_end = end  # type: ignore[assignment]
        try:
            if patient:  # wait past the lane's queue bound, until the request's own budget ends
                result = await lane.run(fn, *light_args, wait_until=math.inf if end is None else end, **light_kwargs)
            else:
                result = await lane.run(fn, *light_args, budget_end=light_end, **light_kwargs)
        except ClassifierBusy:
            raise _Overflow from None
        except TimeLimitExceeded as err:
            if patient:
                whole_budget_first = end is not None and time.monotonic() >= end - answer_reserve_s(light.time_limit_s) - 0.05
            if whole_budget_first:  # the request's own budget ran out, not the lane's
                raise self._restated(err, fn) from None
            raise _Overflow("bound") from None
        except LimitExceeded as err:
            if err.limit in lowered:
                raise _Overflow("bound") from None
            raise
        # a computation that records a limit instead of raising it (the analysis leaves the classes
        # it could not decide undecided) says so in ``limits_hit``: a lowered bound or the lane's
        # time there means the full limits could answer more, so the main lane computes it again
        hit = getattr(result, "limits_hit", None) or frozenset()
        if hit & lowered or ("time_limit_s" in hit and not whole_budget_first):
            raise _Overflow("bound")
        return result


STEPS = {
    "analyze_language": "analysis",
    "parse_language": "parsing",
    "classify_json": "classification",
    "classify_request": "classification",
    "eggbox_of": "egg-box diagram",
    "monoid_page": "monoid enumeration",
}
"""Readable step names of the functions the runner calls (``step`` of a time-limit error)."""


def step_of(fn: Callable[..., Any]) -> str:
    """The step a call of ``fn`` performs, as a time-limit error names it (:data:`STEPS`, else the
    function's name in words)."""
    name = getattr(getattr(fn, "func", fn), "__name__", "computation")
    return STEPS.get(name, name.strip("_").replace("_", " ") or "computation")
