"""The worker: claim a job, run it with a heartbeat, store the outcome — and loop.

Used three ways, always through :func:`run_claim`:

* an embedded worker process of ``langclass serve`` (:class:`~langclass.app.execution.executor.LocalExecutor`
  spawns them; :func:`worker_process_main` is the process entry point);
* ``langclass worker`` (a standalone loop: :meth:`Worker.run_forever`);
* a Ray task (:mod:`langclass.app.execution.executor`): the dispatcher claims, the task runs the claim.

While the job function runs, a heartbeat thread extends the lease every ``heartbeat_s`` seconds and
writes the latest progress report (so progress writes are throttled to the heartbeat); it also reads
``cancel_requested``. The job function polls ``should_cancel()``, which turns True when the job was
cancelled, when the lease was lost, or when the worker is shutting down. On shutdown the job is
*released* (put back in the queue without counting the attempt), never marked failed or cancelled.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


from langclass.core.base.errors import LangclassError, LimitExceeded
from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database
from langclass.app.store.orm import utcnow

__all__ = ["WorkerConfig", "Worker", "run_claim", "release", "resolve_job_function", "worker_process_main", "LogThrottle"]

log = logging.getLogger("langclass.worker")


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs (picklable: it crosses to spawned processes and Ray tasks).

    Attributes:
        database_url: where the jobs live (a file or server database; not ``:memory:``).
        lease_s: lease length in seconds; a worker silent this long is presumed dead.
        heartbeat_s: heartbeat (and progress write) interval, default ``lease_s / 4``.
        poll_s: idle wait between claims when no wake-up comes (default ``min(1, heartbeat_s)``).
        kinds: job kind → ``"module:function"`` (default :data:`langclass.app.store.jobs.JOB_KINDS`).
        owner: lease-owner prefix (default ``host:pid`` of the running process).
        cpus: CPU ids this worker's process is pinned to (None = no pinning).
        progress_s: the most often a progress report is written (seconds; also extends the lease).
        checkpoint_root: train jobs checkpoint under ``<checkpoint_root>/<job id>`` so that an
            attempt after a lost worker resumes instead of restarting (None = no checkpoints); sweep
            jobs keep their finished languages there (``out_dir``), so a retry trains only the
            rest. The directory is removed once the job has a final outcome.
        time_limit_s: wall-clock budget of one run (None = none). Past it ``should_cancel()``
            turns True and the job fails with ``limit-exceeded`` naming ``job_time_limit_s``.
        job_limits: the :class:`~langclass.models.training.specs.JobLimits` values (as a dict) handed to
            train, sectors and sweep jobs, which check their specs against them (None = the defaults).
        limits: the service's :class:`~langclass.core.base.limits.Limits` (as a dict: ``max_states``,
            ``time_limit_s``, …) handed to construct jobs, which parse, synthesize and verify under
            them — the same ``LANGCLASS_*`` limits as a classification (None = the library defaults).
        model_max_bytes: the largest model zip a job result may carry into ``job_models``
            (``LANGCLASS_JOB_MODEL_MAX_BYTES``); a larger one is dropped, the result says why.
        cancel_poll_s: how often the heartbeat thread reads the job's cancel request between
            beats (seconds; None = only at beats), so a run that polls ``should_cancel()`` stops
            within about this long of a cancel.
    """

    database_url: str
    lease_s: float = 60.0
    heartbeat_s: float | None = None
    poll_s: float | None = None
    kinds: Mapping[str, str] = field(default_factory=lambda: dict(jobrepo.JOB_KINDS))
    owner: str | None = None
    cpus: tuple[int, ...] | None = None
    progress_s: float = 1.0
    checkpoint_root: str | None = None
    time_limit_s: float | None = None
    job_limits: Mapping[str, Any] | None = None
    limits: Mapping[str, Any] | None = None
    model_max_bytes: int = 64 * 2**20
    cancel_poll_s: float | None = 0.5

    @property
    def heartbeat_interval(self) -> float:
        return self.heartbeat_s if self.heartbeat_s is not None else max(0.05, self.lease_s / 4)

    @property
    def poll_interval(self) -> float:
        return self.poll_s if self.poll_s is not None else min(1.0, self.heartbeat_interval)


FINISH_RETRY_FIRST_S = 0.5
FINISH_RETRY_MAX_S = 8.0
"""Backoff of the final write during a database outage (doubling, capped), while the lease lasts."""

_now = time.monotonic  # injectable clock and sleep (tests)
_sleep = time.sleep


class LogThrottle:
    """Log a repeating failure once with its traceback, then at most one line per ``interval_s``
    per key saying how many were left out (a database outage otherwise logs a traceback every
    poll)."""

    def __init__(self, interval_s: float = 60.0) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}
        self._lock = threading.Lock()

    def _admit(self, key: str) -> tuple[bool, int, bool]:
        now = _now()
        with self._lock:
            first = key not in self._last
            if first or now - self._last[key] >= self.interval_s:
                self._last[key] = now
                return True, self._skipped.pop(key, 0), first
            self._skipped[key] = self._skipped.get(key, 0) + 1
            return False, 0, False

    def exception(self, logger: logging.Logger, key: str, msg: str, *args: Any) -> None:
        """``logger.exception`` the first time, then one line without traceback per interval."""
        ok, skipped, first = self._admit(key)
        if not ok:
            return
        suffix = f" ({skipped} more like it in the last {self.interval_s:g} s)" if skipped else ""
        if first:
            logger.exception(msg + suffix, *args)
        else:
            import sys

            exc = sys.exc_info()[1]
            logger.error(msg + suffix + (f": {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}" if exc else ""), *args)

    def warning(self, logger: logging.Logger, key: str, msg: str, *args: Any) -> None:
        ok, skipped, _ = self._admit(key)
        if ok:
            logger.warning(msg + (f" ({skipped} more like it in the last {self.interval_s:g} s)" if skipped else ""), *args)

    def clear(self, key: str) -> None:
        """The failure stopped: the next one is logged in full again."""
        with self._lock:
            self._last.pop(key, None)
            self._skipped.pop(key, None)


_THROTTLE = LogThrottle()


def resolve_job_function(path: str) -> Callable[..., dict[str, Any]]:
    """Import ``"module:function"``.

    Raises:
        ImportError / AttributeError: the module or function is missing.
    """
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _json_safe(value: Any) -> Any:
    """``value`` as plain JSON (non-finite floats → None, unknown objects → str)."""

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, Mapping):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return clean(json.loads(json.dumps(value, default=str)))


release = jobrepo.release
"""Put a held job back in the queue (see :func:`langclass.app.store.jobs.release`)."""


class _Heartbeat(threading.Thread):
    """Extends the lease, flushes progress and watches for cancellation until stopped."""

    def __init__(self, db: Database, held: jobrepo.Claim, interval: float, progress_interval: float = 1.0,
                 cancel_poll: float | None = None) -> None:
        super().__init__(name=f"heartbeat-{held.job_id[:8]}", daemon=True)
        self.db = db
        self.held = held
        self.interval = interval
        self.progress_interval = min(interval, progress_interval, cancel_poll or progress_interval)
        self.cancel_poll = cancel_poll
        self._last_beat = time.monotonic()
        self._last_poll = time.monotonic()
        self.last_ok = _now()  # last time the lease was known extended (the claim, then each beat)
        self.cancel = threading.Event()
        self.lost = threading.Event()
        self._stop_evt = threading.Event()
        self._lock = threading.Lock()
        self._progress: dict[str, Any] | None = None
        self._dirty = False

    def set_progress(self, report: Mapping[str, Any]) -> None:
        p = _json_safe(dict(report))
        p["updated_at"] = utcnow().isoformat()
        with self._lock:
            self._progress = p
            self._dirty = True

    @property
    def progress(self) -> dict[str, Any] | None:
        with self._lock:
            return self._progress

    def beat(self) -> None:
        with self._lock:
            progress = self._progress if self._dirty else None
            self._dirty = False
        started = _now()
        try:
            with self.db.session_scope() as session:
                held, cancel = jobrepo.heartbeat(session, self.held, progress=progress)
        except Exception:  # a transient database error: the lease outlasts several beats
            _THROTTLE.exception(log, "heartbeat", "job %s: heartbeat failed", self.held.job_id)
            with self._lock:
                self._dirty = self._dirty or progress is not None
            return
        _THROTTLE.clear("heartbeat")
        if held:
            self.last_ok = started
        if not held:
            log.warning("job %s: lease %s lost", self.held.job_id, self.held.token)
            self.lost.set()
        elif cancel:
            self.cancel.set()

    def poll_cancel(self) -> None:
        """Read the job's cancel request (no write); a database error waits for the next beat."""
        try:
            with self.db.session_scope() as session:
                if jobrepo.cancel_requested(session, self.held):
                    self.cancel.set()
        except Exception:  # noqa: BLE001 - the heartbeat reports database trouble
            log.debug("job %s: cancel poll failed", self.held.job_id, exc_info=True)

    def run(self) -> None:
        # wake every progress_interval: write when progress is waiting, and beat at least every interval
        while not self._stop_evt.wait(self.progress_interval):
            with self._lock:
                dirty = self._dirty
            if dirty or time.monotonic() - self._last_beat >= self.interval - 1e-3:
                self._last_beat = self._last_poll = time.monotonic()
                self.beat()
            elif self.cancel_poll is not None and time.monotonic() - self._last_poll >= self.cancel_poll - 1e-3:
                self._last_poll = time.monotonic()
                self.poll_cancel()
            if self.lost.is_set():
                return

    def stop(self) -> None:
        self._stop_evt.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=max(5.0, 2 * self.interval))


def _job_model(result: Any, max_bytes: int) -> dict[str, Any]:
    """The ``model`` / ``model_summary`` arguments of :func:`jobrepo.finish` from a job result that
    carries a model zip (``result.model_zip``: construct and train jobs, :mod:`langclass.app.usecases.model_jobs`);
    a zip over ``max_bytes`` is dropped and ``result["portable_model"]`` says so."""
    data = getattr(result, "model_zip", None)
    if not isinstance(data, (bytes, bytearray)) or not isinstance(result, dict):
        return {}
    info = result.setdefault("portable_model", {})
    if len(data) > max_bytes:
        info.update(stored=False, reason=f"the model zip is {len(data)} bytes, over LANGCLASS_JOB_MODEL_MAX_BYTES = {max_bytes}")
        return {}
    info["stored"] = True
    return {"model": bytes(data), "model_summary": _json_safe(info)}


def run_claim(
    db: Database,
    held: jobrepo.Claim,
    config: WorkerConfig,
    *,
    stopping: threading.Event | None = None,
) -> str:
    """Run one claimed job to its end and store the outcome.

    Args:
        db: the jobs database.
        held: the claim (lease token, spec, kind).
        config: lease / heartbeat intervals and the kind → function table.
        stopping: set when the worker shuts down; the run is stopped and the job released.

    Returns:
        What happened: ``succeeded`` | ``failed`` | ``cancelled`` | ``released`` (back in the
        queue) | ``lost`` (the lease was lost; the outcome was discarded).
    """
    stopping = stopping or threading.Event()
    hb = _Heartbeat(db, held, config.heartbeat_interval, config.progress_s, config.cancel_poll_s)
    over_budget = threading.Event()
    deadline = None if config.time_limit_s is None else time.monotonic() + config.time_limit_s

    def should_cancel() -> bool:
        if deadline is not None and not over_budget.is_set() and time.monotonic() > deadline:
            over_budget.set()
        return hb.cancel.is_set() or hb.lost.is_set() or stopping.is_set() or over_budget.is_set()

    def store(status: str, **kw: Any) -> str:
        """Write the outcome; during a database outage retry with backoff while the lease lasts
        (a result computed during an outage is kept, not rerun)."""
        from sqlalchemy.exc import DBAPIError

        delay = FINISH_RETRY_FIRST_S
        while True:
            try:
                with db.session_scope() as session:
                    ok = jobrepo.finish(session, held, status=status, progress=hb.progress, **kw)
                return status if ok else "lost"
            except DBAPIError as exc:
                lease_end = hb.last_ok + held.lease_s
                if _now() + delay >= lease_end - min(1.0, held.lease_s / 10):
                    log.error("job %s: could not store the outcome before the lease ends; it will be retried", held.job_id)
                    raise
                _THROTTLE.warning(log, "finish", "job %s: storing the outcome failed (%s); retrying in %.1f s while the lease lasts",
                                  held.job_id, type(exc).__name__, delay)
                _sleep(delay)
                delay = min(delay * 2, FINISH_RETRY_MAX_S)

    path = config.kinds.get(held.kind)
    if path is None:
        return store("failed", error={"reason": "unknown-kind", "detail": f"this worker cannot run jobs of kind {held.kind!r}", "attempt": held.attempt})
    spec = held.spec
    ckpt = None
    if config.checkpoint_root and held.kind == "train" and isinstance(spec, Mapping) and not spec.get("checkpoint_dir"):
        ckpt = os.path.join(config.checkpoint_root, held.job_id)
        spec = {**spec, "checkpoint_dir": ckpt}
    if config.checkpoint_root and held.kind == "sweep" and isinstance(spec, Mapping) and not spec.get("out_dir"):
        ckpt = os.path.join(config.checkpoint_root, held.job_id)  # finished languages: a retry trains only the rest
        spec = {**spec, "out_dir": ckpt}
    extra: dict[str, Any] = {}
    if config.job_limits is not None and held.kind in ("train", "sectors", "sweep"):
        from langclass.models.training.specs import job_limits_from

        extra["limits"] = job_limits_from(config.job_limits)
    if config.limits is not None and held.kind == "construct":
        from langclass.core.base.limits import Limits

        extra["limits"] = Limits(**config.limits)
    hb.start()
    try:
        fn = resolve_job_function(path)
        result = fn(spec, progress=hb.set_progress, should_cancel=should_cancel, **extra)
        model = _job_model(result, config.model_max_bytes)
        outcome: tuple[str, dict[str, Any]] = ("succeeded", {"result": _json_safe(result), "error": None, **model})
    except Exception as exc:  # noqa: BLE001 - every failure is recorded with its reason
        partial = getattr(exc, "partial", None)
        partial = _json_safe(partial) if isinstance(partial, Mapping) else None
        if stopping.is_set() and not hb.cancel.is_set():
            outcome = ("released", {})
        elif hb.cancel.is_set():
            outcome = ("cancelled", {"result": partial, "error": {"reason": "cancelled", "detail": "cancelled while running", "attempt": held.attempt}})
        elif hb.lost.is_set():
            outcome = ("lost", {})
        elif over_budget.is_set():
            budget = LimitExceeded("job_time_limit_s", config.time_limit_s,
                                   f"the job ran past its wall-clock budget of {config.time_limit_s:g} s and was stopped")
            outcome = ("failed", {"result": partial, "error": {**jobrepo.error_record(budget, attempt=held.attempt), "setting": "LANGCLASS_JOB_TIME_LIMIT_S"}})
        else:
            log.warning("job %s failed: %s", held.job_id, exc, exc_info=not isinstance(exc, LangclassError))
            outcome = ("failed", {"result": partial, "error": jobrepo.error_record(exc, attempt=held.attempt)})
    finally:
        hb.stop()
    status, kw = outcome
    if status == "lost" or hb.lost.is_set():
        log.warning("job %s: lease lost during the run; its outcome is discarded", held.job_id)
        return "lost"
    if status == "released":
        with db.session_scope() as session:
            ok = release(session, held, detail="the worker was stopped during the run; requeued")
        return "released" if ok else "lost"
    if isinstance(kw.get("result"), dict) and ckpt is not None:
        kw["result"].get("spec", {}).pop("checkpoint_dir", None)  # a worker-local path, not part of the record
    stored = store(status, **kw)
    if ckpt is not None and stored != "lost":
        shutil.rmtree(ckpt, ignore_errors=True)
    return stored


class Worker:
    """A claim → run → store loop over one database.

    Args:
        config: see :class:`WorkerConfig`.
        stop: set it to stop the loop (a running job is released back to the queue).
        wake: set by the executor after a job was enqueued, to claim without waiting ``poll_s``.
    """

    def __init__(self, config: WorkerConfig, *, stop: Any = None, wake: Any = None, db: Database | None = None) -> None:
        self.config = config
        self.db = db or Database(config.database_url)
        self.owner = jobrepo.new_owner_id(config.owner)
        self.stop = stop if stop is not None else threading.Event()
        self.wake = wake
        self._last_recover = 0.0
        self.outcomes: list[str] = []

    def recover(self) -> dict[str, int]:
        """Requeue / fail jobs whose lease expired (at most every ``poll_s`` seconds)."""
        now = time.monotonic()
        if now - self._last_recover < self.config.poll_interval:
            return {}
        self._last_recover = now
        with self.db.session_scope() as session:
            return jobrepo.recover_expired(session)

    def run_once(self) -> str | None:
        """Recover expired leases, claim one job and run it.

        Returns:
            The outcome (see :func:`run_claim`), or None when nothing was queued.
        """
        self.recover()
        with self.db.session_scope() as session:
            held = jobrepo.claim(session, owner=self.owner, lease_s=self.config.lease_s, kinds=tuple(self.config.kinds))
        if held is None:
            return None
        log.info("job %s (%s) claimed, attempt %d/%d", held.job_id, held.kind, held.attempt, held.max_attempts)
        outcome = run_claim(self.db, held, self.config, stopping=_EventView(self.stop))
        log.info("job %s: %s", held.job_id, outcome)
        self.outcomes.append(outcome)
        return outcome

    def _idle(self) -> None:
        wait = self.config.poll_interval
        if self.wake is not None:
            if self.wake.wait(wait):
                self.wake.clear()
        else:
            self.stop.wait(wait)

    def run_forever(self, *, max_jobs: int | None = None) -> None:
        """Loop until ``stop`` is set (or ``max_jobs`` jobs were run). Database errors are logged
        and retried after ``poll_s`` (the database may be restarting)."""
        done = 0
        while not self.stop.is_set():
            try:
                outcome = self.run_once()
                _THROTTLE.clear("loop")
            except Exception:
                _THROTTLE.exception(log, "loop", "worker %s: loop error; retrying", self.owner)
                outcome = None
                self.stop.wait(self.config.poll_interval)
            if outcome is None:
                self._idle()
                continue
            done += 1
            if max_jobs is not None and done >= max_jobs:
                return
        self.db.dispose()


class _EventView:
    """``threading.Event``-like read view of a multiprocessing event (``is_set`` only)."""

    def __init__(self, event: Any) -> None:
        self._event = event

    def is_set(self) -> bool:
        return bool(self._event.is_set())


def _pin(cpus: tuple[int, ...] | None) -> None:
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, set(cpus))
        except OSError:  # pragma: no cover - restricted container
            log.warning("could not pin worker to CPUs %s", cpus)


def worker_process_main(config: WorkerConfig, stop: Any, wake: Any, log_level: str = "info") -> None:
    """Entry point of an embedded worker process (``multiprocessing`` spawn).

    SIGTERM sets ``stop`` (the running job is released); SIGINT is ignored so that a Ctrl-C in the
    terminal reaches only the parent, which stops its workers in order.
    """
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(processName)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _pin(config.cpus)
    local_stop = threading.Event()
    _watch_parent(os.getppid(), stop, local_stop)
    Worker(config, stop=_AnyEvent(stop, local_stop), wake=wake).run_forever()


class _AnyEvent:
    """Set when either event is set (the executor's stop, or this process's own orphan watch)."""

    def __init__(self, *events: Any) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)

    def wait(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._events[0].wait(min(left, 0.5))
        return True


def _watch_parent(parent: int, *_events: Any) -> None:
    """Stop this worker when its parent (the service) dies without stopping it (e.g. SIGKILL):
    the running job is released instead of an orphan process working on unsupervised."""
    local = _events[-1]

    def watch() -> None:
        while not local.is_set():
            if os.getppid() != parent:
                log.warning("the service process %d is gone; this worker stops", parent)
                local.set()
                return
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
