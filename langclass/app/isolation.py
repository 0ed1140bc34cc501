"""Run CPU-heavy calls in separate worker processes that can be killed at a time limit.

``core`` checks its :class:`~langclass.core.limits.Deadline` cooperatively, but a step that does not
check it often enough would keep a worker *thread* busy long after the request was answered, and
threads cannot be stopped. A :class:`ProcessPool` runs each call in one of ``size`` worker processes
(forked from a ``forkserver`` that has already imported ``core``, so a replacement starts in tens of
milliseconds); a call that outlives its wall-clock budget gets its process killed and replaced, so
the CPU it used is returned at once.

The pool is shared by every app in the process (:func:`get_pool`), is thread-safe (callers block in
worker threads, never on the event loop) and is shut down at interpreter exit.

Errors cross the process boundary by class: a :class:`~langclass.core.errors.LangclassError`
raised in the worker is re-raised in the caller with the same class, ``detail``, ``field`` and
``extra``; any other exception becomes :class:`WorkerError` (a bug: HTTP 500).
"""

from __future__ import annotations

import atexit
import importlib
import logging
import multiprocessing as mp
import signal
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from ..core.errors import LangclassError, TimeLimitExceeded

__all__ = ["ProcessPool", "WorkerError", "get_pool", "shutdown_pools"]

log = logging.getLogger("langclass.app")

_PRELOAD = ["langclass.app.service", "langclass.core.analysis", "langclass.core.monoid", "langclass.core.parse"]


class WorkerError(RuntimeError):
    """A worker process failed for a reason other than a LangclassError (crash or bug)."""


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


def _worker_main(conn: Connection) -> None:
    """Worker loop: receive ``(fn, args, kwargs)``, send ``("ok", result)`` or an error record."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args, **kwargs))
        except LangclassError as err:
            reply = ("error", _dump_error(err))
        except BaseException as exc:  # a bug or resource failure: report it, keep serving
            reply = ("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            conn.send(reply)
        except Exception as exc:  # unpicklable result: report instead
            conn.send(("crash", f"cannot send the result back: {type(exc).__name__}: {exc}"))


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="langclass-classify")
        self.process.start()
        child.close()

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.join(5)
        finally:
            self.conn.close()


class ProcessPool:
    """At most ``size`` worker processes; :meth:`call` runs one function call in one of them.

    Args:
        size: concurrent calls (further callers wait for a free worker).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        self._ctx = mp.get_context(method)
        if method == "forkserver":
            self._ctx.set_forkserver_preload(_PRELOAD)
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self._ctx)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None, limit_value: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` in a worker process and return its result (blocking).

        Args:
            fn: a module-level (picklable) function.
            timeout: wall-clock seconds before the worker is killed (None = no limit).
            limit_value: the ``time_limit_s`` named in the error when the timeout hits.

        Raises:
            LangclassError: re-raised from the worker with its class and fields.
            TimeLimitExceeded: the call ran past ``timeout`` (its process was killed).
            WorkerError: the worker crashed or raised something else.
        """
        if self._closed:
            raise WorkerError("the classification pool is shut down")
        self._slots.acquire()
        try:
            worker = self._take()
            try:
                worker.conn.send((fn, args, kwargs))
                if not worker.conn.poll(timeout):
                    worker.kill()
                    raise TimeLimitExceeded(
                        "time_limit_s", limit_value, f"time limit of {limit_value} s exceeded (the computation was stopped)"
                    )
                status, payload = worker.conn.recv()
            except (EOFError, OSError, BrokenPipeError) as exc:
                worker.kill()
                code = worker.process.exitcode
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

    def close(self) -> None:
        """Kill every idle worker; calls in flight finish, then their workers are killed too."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOLS: dict[int, ProcessPool] = {}
_POOLS_LOCK = threading.Lock()


def get_pool(size: int) -> ProcessPool:
    """The process-wide pool with ``size`` workers (created on first use; one per size)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(size)
        if pool is None or pool._closed:
            pool = _POOLS[size] = ProcessPool(size)
        return pool


def shutdown_pools() -> None:
    """Close every pool (registered with :mod:`atexit`)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()


atexit.register(shutdown_pools)
