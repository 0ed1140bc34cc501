"""Run CPU-heavy calls in separate worker processes that can be killed at a time limit.

``core`` checks its :class:`~langclass.core.base.limits.Deadline` cooperatively, but a step that does not
check it often enough would keep a worker *thread* busy long after the request was answered, and
threads cannot be stopped. A :class:`ProcessPool` runs each call in one of ``size`` worker processes
(``python -m langclass.app.execution.isolation``: a plain interpreter that imports ``core`` and nothing of the
service, started on first use); a call that outlives its wall-clock budget gets its process killed
and replaced, so the CPU it used is returned at once.

The pool is shared by every app in the process (:func:`get_pool`), is thread-safe (callers block in
worker threads, never on the event loop) and is shut down at interpreter exit. It never runs more
than ``size`` processes (start-up in the background and on demand share one count), and it
*recycles* a worker — kills it after the call and starts a fresh one in the background — once the
worker has served ``max_tasks`` calls or its resident memory (RSS) reached ``max_rss_bytes``, so
memory a heavy request made the interpreter keep is given back to the system.

Errors cross the process boundary by class: a :class:`~langclass.core.base.errors.LangclassError`
raised in the worker is re-raised in the caller with the same class, ``detail``, ``field`` and
``extra``; any other exception becomes :class:`WorkerError` (a bug: HTTP 500).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from langclass.core.base.errors import LangclassError, TimeLimitExceeded

__all__ = ["ProcessPool", "WorkerError", "ClassifierBusy", "get_pool", "shutdown_pools"]

log = logging.getLogger("langclass.app")

_STARTUP_TIMEOUT_S = 120.0
_WARM_UP = ("langclass.app.usecases.service", "warm_worker")  # run before "ready": the first call pays no lazy set-up
_PRELOAD = ["langclass.app.usecases.service", "langclass.app.usecases.schemas", "langclass.core.classification.analysis", "langclass.core.algebra.monoid", "langclass.core.ingest.parse"]


class WorkerError(RuntimeError):
    """A worker process failed for a reason other than a LangclassError (crash or bug)."""


class ClassifierBusy(LangclassError):
    """No classification worker is free: the wait queue is full, or every worker stayed busy for the
    whole queue timeout; retry after ``Retry-After`` seconds."""

    code = "busy"
    status = 503
    title = "Classifier busy"

    def __init__(self, waited_s: float, *, detail: str | None = None, retry_after_s: float | None = None, **extra: Any) -> None:
        super().__init__(detail or f"every classification worker was busy for {waited_s:g} s; retry later", waited_s=waited_s, **extra)
        retry = retry_after_s if retry_after_s is not None else waited_s / 4
        self.headers = {"Retry-After": str(max(1, int(math.ceil(retry))))}


def rss_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes (Linux ``/proc``; None elsewhere or when gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _dump_error(err: LangclassError) -> dict[str, Any]:
    return {
        "module": type(err).__module__,
        "qualname": type(err).__qualname__,
        "detail": err.detail,
        "field": err.field,
        "extra": dict(err.extra),
        "attrs": {k: v for k, v in vars(err).items() if k not in ("detail", "field", "extra")},
    }


def _load_error(data: dict[str, Any]) -> LangclassError:
    try:
        cls: Any = importlib.import_module(data["module"])
        for part in data["qualname"].split("."):
            cls = getattr(cls, part)
        if not (isinstance(cls, type) and issubclass(cls, LangclassError)):
            raise TypeError(cls)
    except (ImportError, AttributeError, TypeError):
        cls = LangclassError
    err = cls.__new__(cls)
    Exception.__init__(err, data["detail"])
    err.detail = data["detail"]
    err.field = data["field"]
    err.extra = data["extra"]
    for key, value in data["attrs"].items():
        setattr(err, key, value)
    return err


def _serve(recv: Connection, send: Connection) -> None:
    """Worker loop: receive ``(fn, args, kwargs)``, send ``("ok", result)`` or an error record."""
    while True:
        try:
            fn, args, kwargs = recv.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args, **kwargs))
        except LangclassError as err:
            reply = ("error", _dump_error(err))
        except BaseException as exc:  # a bug or resource failure: report it, keep serving
            reply = ("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            send.send(reply)
        except (BrokenPipeError, OSError):
            return
        except Exception as exc:  # unpicklable result: report instead
            send.send(("crash", f"cannot send the result back: {type(exc).__name__}: {exc}"))


def worker_main() -> None:
    """Entry point of a worker process (``python -m langclass.app.execution.isolation``).

    Requests arrive on standard input, replies leave on the original standard output; anything the
    computation prints goes to standard error so it cannot corrupt the channel.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from .lifeline import die_with_parent

    die_with_parent()  # started from short-lived threads: the pid watch, not PR_SET_PDEATHSIG
    out_fd = os.dup(1)
    os.dup2(2, 1)
    for name in _PRELOAD:
        importlib.import_module(name)
    module, function = _WARM_UP
    getattr(importlib.import_module(module), function)()
    # the imported modules and warmed-up caches live as long as the process: out of the collector's
    # way, so a full collection during a call walks only what calls made (not ~100,000 objects)
    gc.collect()
    gc.freeze()
    send = Connection(out_fd, readable=False)
    try:
        send.send(("ready", os.getpid()))
    except (BrokenPipeError, OSError):
        # the parent is gone before this worker finished starting (e.g. `langclass serve` on a busy
        # port exits right after start-up): nothing to serve, and nothing to report on its terminal
        return
    _serve(Connection(0, writable=False), send)


class _Worker:
    """One worker process with a request pipe and a reply pipe."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "langclass.app.execution.isolation"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.send = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.recv = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.ready = False
        self.tasks = 0

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT_S) -> None:
        """Block until the worker has imported ``core`` (start-up does not count against a call's limit)."""
        if self.ready:
            return
        try:
            if not self.recv.poll(timeout):
                raise WorkerError(f"a classification worker did not start within {timeout:.0f} s")
            status, _ = self.recv.recv()
        except (EOFError, OSError) as exc:
            raise WorkerError(f"a classification worker exited during start-up (exit code {self.process.poll()})") from exc
        if status != "ready":  # pragma: no cover - protocol error
            raise WorkerError(f"unexpected start-up message {status!r} from a classification worker")
        self.ready = True

    def poll_ready(self, timeout: float) -> bool:
        """:meth:`wait_ready` for at most ``timeout`` seconds: False when the worker is still starting."""
        if self.ready:
            return True
        try:
            if not self.recv.poll(max(0.0, timeout)):
                return False
        except (EOFError, OSError) as exc:
            raise WorkerError(f"a classification worker exited during start-up (exit code {self.process.poll()})") from exc
        self.wait_ready(0)
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal_kill(self) -> None:
        """Send SIGKILL now (returns at once; :meth:`kill` reaps the process)."""
        try:
            if self.process.poll() is None:
                self.process.kill()
        except OSError:  # pragma: no cover - already gone
            pass

    def kill(self) -> None:
        try:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(5)
        except (OSError, subprocess.TimeoutExpired):  # pragma: no cover - kill cannot fail for our child
            pass
        finally:
            self.send.close()
            self.recv.close()


class ProcessPool:
    """At most ``size`` worker processes; :meth:`call` runs one function call in one of them.

    Args:
        size: concurrent calls (further callers wait for a free worker).
        max_tasks: calls a worker serves before it is recycled (None = never).
        max_rss_bytes: resident memory after a call past which the worker is recycled (None = never).
        nice: how much lower than this process's the workers' CPU priority is (0 = the same).
    """

    def __init__(self, size: int, *, max_tasks: int | None = None, max_rss_bytes: int | None = None, nice: int = 0) -> None:
        self.size = size
        self.nice = nice
        self.max_tasks = max_tasks
        self.max_rss_bytes = max_rss_bytes
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Worker] = []
        self._live = 0  # processes started and not yet killed (idle + busy + starting)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a worker became idle or went away
        self._closed = False
        self._prestarted = False
        self.recycled = 0

    def _new_worker(self) -> _Worker:
        """A new worker process, at this pool's lower CPU priority (``nice``; raising a child's
        niceness needs no privilege)."""
        worker = _Worker()
        pid = getattr(getattr(worker, "process", None), "pid", None)
        if self.nice > 0 and isinstance(pid, int):
            try:
                os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + self.nice))
            except (OSError, AttributeError):  # pragma: no cover - not POSIX, or the process is gone
                pass
        return worker

    def _take(self, deadline: float | None = None) -> _Worker | None:
        """An idle worker, or a new one when fewer than ``size`` are counted; None when ``deadline``
        (a ``time.monotonic()`` instant) passes first — while every counted worker is busy or being
        started (a replacement after a kill), the wait is bounded by the caller's deadline (before,
        it waited for the replacement whatever the deadline: a 0.5 s call answered after 3.55 s)."""
        with self._changed:
            while True:
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        return worker
                    self._live -= 1
                    worker.kill()
                if self._live < self.size:
                    self._live += 1
                    break
                # every process is counted but none idle: one is starting (prestart) or being
                # replaced; the caller holds a slot, so one becomes idle or goes away soon
                if deadline is None:
                    self._changed.wait(1.0)
                    continue
                rest = deadline - time.monotonic()
                if rest <= 0:
                    return None
                self._changed.wait(min(1.0, rest))
        try:
            return self._new_worker()
        except BaseException:
            with self._changed:
                self._live -= 1
                self._changed.notify()
            raise

    def _discard(self, worker: _Worker, *, reap_later: bool = False) -> None:
        """Kill ``worker`` and stop counting it. With ``reap_later`` only the signal is sent here and
        the process is reaped in a background thread: a killed worker holding much memory can take
        seconds to exit on a loaded machine, and the caller's answer must not wait for that."""
        if reap_later:
            worker.signal_kill()
            threading.Thread(target=worker.kill, name="langclass-reap", daemon=True).start()
        else:
            worker.kill()
        with self._changed:
            self._live -= 1
            self._changed.notify()

    def _worn_out(self, worker: _Worker) -> bool:
        if self.max_tasks is not None and worker.tasks >= self.max_tasks:
            return True
        if self.max_rss_bytes is not None:
            rss = rss_bytes(worker.process.pid)
            return rss is not None and rss >= self.max_rss_bytes
        return False

    def _give_back(self, worker: _Worker) -> None:
        if worker.tasks and self._worn_out(worker):  # a fresh worker is never recycled (no restart loop
            # when a configured RSS bound is below a fresh interpreter's)
            with self._lock:
                self.recycled += 1
            log.info("recycling classification worker %d after %d calls", worker.process.pid, worker.tasks)
            self._discard(worker)
            self._replenish()  # the fresh worker starts (and warms up) now, not inside the next call
            return
        with self._changed:
            if not self._closed and self._live <= self.size:
                self._idle.append(worker)
                self._changed.notify()
                return
        self._discard(worker)

    def idle_count(self) -> int:
        """Started, ready workers waiting for a call."""
        with self._lock:
            return len(self._idle)

    def process_count(self) -> int:
        """Worker processes alive now (idle, busy or starting)."""
        with self._lock:
            return self._live

    def call(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        timeout: float | None,
        limit_value: Any,
        queue_timeout: float | None = None,
        *,
        deadline: float | None = None,
        rebind: Callable[[float], tuple[tuple[Any, ...], dict[str, Any]]] | None = None,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` in a worker process and return its result (blocking).

        Args:
            fn: a module-level (picklable) function.
            timeout: wall-clock seconds before the worker is killed (None = no limit), counted from
                this call — waiting for a free worker and for a worker to start included.
            limit_value: the ``time_limit_s`` named in the error when the timeout hits.
            queue_timeout: seconds to wait for a free worker (None = as long as it takes).
            deadline: the kill time as a ``time.monotonic()`` instant instead of ``timeout``.
            rebind: ``rebind(now)`` → the ``(args, kwargs)`` to send when the call is sent at
                ``now`` (so the cooperative deadline inside is what is left *then*).

        Raises:
            LangclassError: re-raised from the worker with its class and fields.
            TimeLimitExceeded: the call ran past its deadline (its process was killed; it is reaped
                in the background), or the deadline passed before a worker was ready.
            ClassifierBusy: no worker became free within ``queue_timeout``.
            WorkerError: the worker crashed or raised something else.
        """
        if self._closed:
            raise WorkerError("the classification pool is shut down")
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        def too_late(what: str, step: str | None = "waiting for a worker") -> TimeLimitExceeded:
            return TimeLimitExceeded("time_limit_s", limit_value, f"time limit of {limit_value} s exceeded ({what})", step=step)

        wait = left()
        wait = queue_timeout if wait is None else (wait if queue_timeout is None else min(wait, queue_timeout))
        if not self._slots.acquire(timeout=None if wait is None else max(0.0, wait)):
            if deadline is not None and time.monotonic() >= deadline:
                raise too_late("no worker came free in time")
            raise ClassifierBusy(queue_timeout or 0.0)
        try:
            worker = self._take(deadline)
            if worker is None:
                raise too_late("no worker was ready in time")
            try:
                # start-up (rare: workers are prestarted and replaced in the background) counts
                # against the caller's deadline like any other wait
                rest = left()
                if rest is None:
                    worker.wait_ready()
                elif not worker.poll_ready(min(rest, _STARTUP_TIMEOUT_S)):
                    self._give_back(worker)  # still starting: the next caller gets it
                    raise too_late("no worker was ready in time")
            except WorkerError:
                self._discard(worker)
                raise
            rest = left()
            if rest is not None and rest <= 0:
                self._give_back(worker)
                raise too_late("no worker was ready in time")
            if rebind is not None:
                args, kwargs = rebind(time.monotonic())
            try:
                worker.tasks += 1
                worker.send.send((fn, args, kwargs))
                if not worker.recv.poll(None if deadline is None else max(0.0, deadline - time.monotonic())):
                    self._discard(worker, reap_later=True)
                    self._replenish()
                    raise too_late("the computation was stopped", None)
                status, payload = worker.recv.recv()
            except (EOFError, OSError, BrokenPipeError) as exc:
                self._discard(worker, reap_later=True)
                code = worker.process.returncode
                raise WorkerError(f"the classification worker died (exit code {code})") from exc
            self._give_back(worker)
        finally:
            self._slots.release()
        if status == "ok":
            return payload
        if status == "error":
            raise _load_error(payload)
        log.error("classification worker failed: %s", payload)
        raise WorkerError(payload.splitlines()[0] if payload else "worker failed")

    def _start_one(self, what: str) -> bool:
        """Start one worker process if the pool is open and under its size, and make it idle.

        The process is counted before it starts (under the pool's lock), so calls, prestart and
        replacements share one bound. Returns False when no worker was started (closed, full, or the
        start failed — logged; the failure is reported again on first use).
        """
        with self._changed:
            if self._closed or self._live >= self.size:
                return False
            self._live += 1
        try:
            worker = self._new_worker()
            worker.wait_ready()
        except (WorkerError, OSError) as exc:  # pragma: no cover - reported on first use instead
            with self._changed:
                self._live -= 1
                self._changed.notify()
            log.warning("could not start %s classification worker: %s", what, exc)
            return False
        self._give_back(worker)
        return True

    def _replenish(self) -> None:
        """Start one replacement worker in the background (after a kill), so the next caller finds
        a ready process instead of paying the interpreter start-up inside its own budget."""

        threading.Thread(target=self._start_one, args=("a replacement",), name="langclass-replenish", daemon=True).start()

    def prestart(self) -> None:
        """Start the workers in the background (once), so the first requests do not wait for them."""
        with self._lock:
            if self._prestarted or self._closed:
                return
            self._prestarted = True

        def start() -> None:
            for _ in range(self.size):
                if not self._start_one("a prestarted"):
                    return

        threading.Thread(target=start, name="langclass-prestart", daemon=True).start()

    def close(self) -> None:
        """Kill every idle worker; calls in flight finish, then their workers are killed too."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._live -= len(idle)
        for worker in idle:
            worker.kill()


_POOLS: dict[tuple[str, int, int | None, int | None, int], ProcessPool] = {}
_POOLS_LOCK = threading.Lock()


def get_pool(size: int, *, max_tasks: int | None = None, max_rss_bytes: int | None = None, name: str = "classify",
             nice: int = 0) -> ProcessPool:
    """The process-wide pool ``name`` with ``size`` workers, these recycling bounds and this CPU
    priority offset (created on first use; one per name and configuration — the light lane's pool
    is ``"light"``, never shared with the main lane's)."""
    key = (name, size, max_tasks, max_rss_bytes, nice)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool._closed:
            pool = _POOLS[key] = ProcessPool(size, max_tasks=max_tasks, max_rss_bytes=max_rss_bytes, nice=nice)
        return pool


def shutdown_pools() -> None:
    """Close every pool (registered with :mod:`atexit`)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()


atexit.register(shutdown_pools)


if __name__ == "__main__":
    worker_main()
