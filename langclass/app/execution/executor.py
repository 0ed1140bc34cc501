"""Executors: what runs the jobs the database holds. Two behind one interface.

* :class:`LocalExecutor` (default, ``LANGCLASS_EXECUTOR=local``): ``LANGCLASS_WORKER_SLOTS`` worker
  processes (``multiprocessing`` *spawn*, one job at a time each) supervised by a thread of the
  service process. They start when there is work (a job was enqueued, or the database holds queued
  or expired jobs at start-up), so a service nobody asks to train spends nothing. The supervisor
  restarts a worker process that died and ends the leases it held at once, so its job is retried
  without waiting for the lease to expire. A watchdog thread (:mod:`langclass.app.execution.watchdog`)
  holds every worker process under a hard memory cap (``LANGCLASS_JOB_WORKER_MAX_RSS_BYTES``; its job
  then fails ``memory-limit``, not retried) and kills one whose run ignores a cancel for
  ``LANGCLASS_JOB_CANCEL_GRACE_S``. No extra server.
* :class:`RayExecutor` (``LANGCLASS_EXECUTOR=ray``, cluster at ``LANGCLASS_RAY_ADDRESS`` /
  ``RAY_ADDRESS``; a local one when unset): a dispatcher thread claims jobs and submits each as a
  Ray task asking for ``LANGCLASS_RAY_NUM_GPUS`` GPUs (a fraction lets many tiny models share one
  GPU) and ``LANGCLASS_RAY_NUM_CPUS`` CPUs; the task runs :func:`langclass.app.execution.worker.run_claim`,
  writing heartbeat, progress and result straight to the database (so the database URL must be
  reachable from the cluster: PostgreSQL in that setup; a SQLite file works on one machine). The
  dispatcher submits no more tasks than the cluster has room for, extends the leases of tasks that
  Ray has not started yet, and ends at once the lease of a task Ray reports failed (the job is then
  retried up to ``max_attempts``). Ray's own retries are off: the database does the retrying.

Either way the database is the record: a job is claimed with a lease (:mod:`langclass.app.store.jobs`),
so a crashed worker, task or service loses no job, leaves none ``running`` forever, and never stores
one twice.

The service enters :func:`executor_lifespan` at start-up (``LIFESPAN_HOOKS`` of
:mod:`langclass.app.main`); routes call ``app.state.executor.notify()`` after the transaction that
created a job has committed.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
import os
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError

from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database
from langclass.app.settings import Settings
from .watchdog import JobWatchdog, default_worker_cap
from .worker import WorkerConfig, run_claim, worker_process_main

__all__ = [
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
    "worker_config",
    "executor_lifespan",
    "ray_run_claim",
]

log = logging.getLogger("langclass.executor")


class Executor(Protocol):
    """What the service needs from an executor."""

    def start(self) -> None:
        """Start supervising (workers themselves may start later, when there is work)."""

    def notify(self) -> None:
        """A job was committed: claim it soon (call only after the commit)."""

    def stop(self, timeout: float = 30.0) -> None:
        """Stop; a running job is released back to the queue (or its lease left to expire)."""

    def describe(self) -> dict[str, Any]:
        """JSON-ready state for health and diagnostics."""


def worker_config(settings: Settings, **overrides: Any) -> WorkerConfig:
    """The :class:`WorkerConfig` of a service's settings (lease ``job_lease_s``, heartbeat a quarter of it)."""
    kw: dict[str, Any] = {"database_url": settings.database_url, "lease_s": settings.job_lease_s,
                          "checkpoint_root": getattr(settings, "job_checkpoint_dir", None),
                          "time_limit_s": settings.job_time_limit_s, "job_limits": settings.job_limits().to_dict(),
                          "limits": dataclasses.asdict(settings.limits()), "model_max_bytes": settings.job_model_max_bytes}
    kw.update(overrides)
    return WorkerConfig(**kw)


def _in_memory(url: str) -> bool:
    return url.startswith("sqlite") and (":memory:" in url or url.rstrip("/") in ("sqlite:", "sqlite+pysqlite:") or "mode=memory" in url)


def _is_missing_table(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "no such table" in text or "does not exist" in text or "undefinedtable" in text


class _Supervisor(ABC):
    """Common loop: recover expired leases, see whether there is work, call :meth:`tick`."""

    def __init__(self, config: WorkerConfig, *, interval: float | None = None) -> None:
        self.config = config
        self.interval = interval if interval is not None else config.poll_interval
        self.db = Database(config.database_url)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.recovered = {"requeued": 0, "failed": 0, "cancelled": 0}
        self.schema_missing = False
        self._failing: str | None = None  # the current failure of supervision rounds (None: they succeed)
        self._failing_since = 0.0
        self._failed_rounds = 0

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name=type(self).__name__, daemon=True)
        self._thread.start()

    def notify(self) -> None:
        self._wake.set()

    def _pending(self) -> int:
        """Recover expired leases and count the jobs that need a worker (0 when the schema is missing)."""
        try:
            with self.db.session_scope() as session:
                for k, v in jobrepo.recover_expired(session).items():
                    self.recovered[k] += v
                n = jobrepo.count_claimable(session)
            self.schema_missing = False
            return n
        except DBAPIError as exc:
            if _is_missing_table(exc):
                if not self.schema_missing:
                    log.warning("the jobs table is missing (run `langclass db upgrade`); jobs wait")
                self.schema_missing = True
                return 0
            raise

    def reclaim_dead_local_leases(self) -> int:
        """At start: end the leases of this host's job processes that no longer run (a whole-group
        kill left them), so their jobs are retried now, not when each lease expires
        (:func:`~langclass.app.store.jobs.expire_leases_of_dead_local_owners`). Never raises: a
        database that is down is the first round's to report."""
        try:
            with self.db.session_scope() as session:
                n = jobrepo.expire_leases_of_dead_local_owners(session)
        except Exception:  # noqa: BLE001 - reported by the supervision rounds
            return 0
        if n:
            log.warning("%s: %d job lease(s) of dead processes of this host ended at start", type(self).__name__, n)
        return n

    def _loop(self) -> None:
        woken = False
        self.reclaim_dead_local_leases()
        while not self._stop.is_set():
            self._round(woken)
            woken = self._wake.wait(self.interval)
            self._wake.clear()

    def _round(self, woken: bool) -> None:
        """One :meth:`tick`, logging one line per change of state — the first failure (with its
        traceback at debug level), a different failure, the recovery — instead of a traceback for
        every failed round (a 30 s database outage logged 3,872 lines)."""
        name = type(self).__name__
        try:
            self.tick(woken=woken)
        except Exception as exc:
            summary = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
            if self._failing is None:
                self._failing_since = time.monotonic()
                self._failed_rounds = 0
            self._failed_rounds += 1
            if summary != self._failing:
                log.error("%s: supervisor round failed (%s); retrying every %.1f s", name, summary[:300], self.interval)
                log.debug("%s: supervisor failure", name, exc_info=True)
                self._failing = summary
            return
        if self._failing is not None:
            log.warning("%s: supervisor recovered after %.1f s (%d failed rounds)", name,
                        time.monotonic() - self._failing_since, self._failed_rounds)
            self._failing = None

    @abstractmethod
    def tick(self, woken: bool) -> None:
        """One supervision round (``woken``: a wake-up was requested rather than the interval passing)."""

    def _stop_loop(self, timeout: float) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)


class LocalExecutor(_Supervisor):
    """``slots`` spawned worker processes on this machine, started when there is work.

    Args:
        config: the workers' configuration (database, lease, heartbeat, job kinds).
        slots: worker processes (= jobs at once); 0 runs nothing (another process works the queue).
        eager: start the processes at once instead of when work appears.
        pin_cpus: with several slots, pin each process to its own share of this process's CPUs
            (so the torch threads of several models do not oversubscribe the cores).
        log_level: the workers' logging level.
        max_rss_bytes: hard memory cap of each worker process (bytes; default: a ``slots``-th of
            nine tenths of the host's memory, :func:`~langclass.app.execution.watchdog.default_worker_cap`,
            which also lowers a larger value). A worker over it is killed and its job fails with
            ``memory-limit``, not retried (:mod:`langclass.app.execution.watchdog`).
        cancel_grace_s: a running job's cancel request unhonoured this long kills its worker
            process (the job is recorded ``cancelled``); None leaves cancels to the run.
        watch_interval_s: the watchdog's sampling interval.
    """

    def __init__(self, config: WorkerConfig, slots: int, *, eager: bool = False, pin_cpus: bool = True, log_level: str = "info",
                 max_rss_bytes: int | None = None, cancel_grace_s: float | None = 1.0, watch_interval_s: float = 0.25) -> None:
        super().__init__(config)
        self.slots = slots
        self.eager = eager
        self.log_level = log_level
        self._ctx = mp.get_context("spawn")
        self._proc_stop = self._ctx.Event()
        self._proc_wake = self._ctx.Event()
        self._procs: list[Any] = [None] * slots
        self._started = False
        self._lock = threading.Lock()
        self.restarts = 0
        self._cpus = self._cpu_shares(slots) if pin_cpus and slots > 1 else [None] * slots
        self.max_rss_bytes = default_worker_cap(slots, max_rss_bytes) if slots else None
        admitted = (config.job_limits or {}).get("job_max_memory_bytes")
        if self.max_rss_bytes is not None and admitted is not None and admitted > self.max_rss_bytes:
            log.warning("LANGCLASS_JOB_MAX_MEMORY_BYTES = %d admits jobs estimated above the worker cap of %d bytes: "
                        "such a job would be killed (memory-limit); lower it or raise the cap", admitted, self.max_rss_bytes)
        self._watchdog = JobWatchdog(self.db, lambda: list(self._procs), self._lock, max_rss_bytes=self.max_rss_bytes,
                                     grace_s=cancel_grace_s, interval_s=watch_interval_s)

    @staticmethod
    def _cpu_shares(slots: int) -> list[tuple[int, ...] | None]:
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - non-Linux
            return [None] * slots
        if len(cpus) < slots:
            return [None] * slots
        per = len(cpus) // slots
        return [tuple(cpus[i * per:(i + 1) * per]) for i in range(slots)]

    def notify(self) -> None:
        self._proc_wake.set()
        super().notify()

    def _spawn(self, i: int) -> None:
        cfg = WorkerConfig(**{**self.config.__dict__, "cpus": self._cpus[i]})
        p = self._ctx.Process(
            target=worker_process_main, args=(cfg, self._proc_stop, self._proc_wake, self.log_level),
            name=f"langclass-worker-{i}", daemon=False,
        )
        p.start()
        self._procs[i] = p
        log.info("worker process %d started (pid %s)", i, p.pid)

    def tick(self, woken: bool) -> None:
        if self.slots == 0:
            self._pending()  # recovery still runs at start-up and periodically
            return
        with self._lock:
            if self._stop.is_set():
                return
            # a dead worker: end its leases now so its job is retried without waiting
            for i, p in enumerate(self._procs):
                if p is not None and not p.is_alive():
                    owner = f"{socket.gethostname()[:100]}:{p.pid}"
                    with self.db.session_scope() as session:
                        n = jobrepo.expire_leases_of(session, owner)
                    log.warning("worker process %d (pid %s) exited with %s; %d lease(s) ended", i, p.pid, p.exitcode, n)
                    self._procs[i] = None
                    self.restarts += 1
            pending = self._pending()
            if not self._started and (self.eager or woken or pending):
                self._started = True
            if self._started:
                for i, p in enumerate(self._procs):
                    if p is None:
                        self._spawn(i)
                if pending:
                    self._proc_wake.set()

    def start(self) -> None:
        super().start()
        if self.slots and not self._watchdog.is_alive() and not self._stop.is_set():
            self._watchdog.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the workers (their running jobs go back to the queue) and the supervisor."""
        self._stop_loop(timeout)
        self._watchdog.stop()
        with self._lock:
            self._proc_stop.set()
            self._proc_wake.set()
            deadline = time.monotonic() + timeout
            for p in self._procs:
                if p is not None:
                    p.join(max(0.1, deadline - time.monotonic()))
            for p in self._procs:
                if p is not None and p.is_alive():
                    log.warning("worker pid %s did not stop in %.0f s; terminating", p.pid, timeout)
                    p.terminate()
                    p.join(5)
            self._procs = [None] * self.slots
        self.db.dispose()

    def pids(self) -> list[int | None]:
        """Process ids of the worker slots (None where none runs)."""
        return [p.pid if p is not None and p.is_alive() else None for p in self._procs]

    def describe(self) -> dict[str, Any]:
        return {"executor": "local", "slots": self.slots, "started": self._started, "pids": self.pids(),
                "restarts": self.restarts, "recovered": dict(self.recovered), "worker_max_rss_bytes": self.max_rss_bytes,
                "watchdog_kills": dict(self._watchdog.killed)}


# --- Ray -----------------------------------------------------------------------------------------


def ray_run_claim(claim: dict[str, Any], config: dict[str, Any]) -> str:
    """Body of the Ray task: run one claimed job against the database (see :func:`run_claim`)."""
    logging.basicConfig(level=logging.INFO)
    cfg = WorkerConfig(**config)
    db = Database(cfg.database_url)
    try:
        return run_claim(db, jobrepo.Claim.from_dict(claim), cfg)
    finally:
        db.dispose()


class RayExecutor(_Supervisor):
    """Dispatch jobs as Ray tasks (see the module docstring).

    Args:
        config: worker configuration shipped to every task (database URL, lease, kinds).
        address: Ray cluster address (None: ``RAY_ADDRESS`` or a new local cluster).
        num_gpus / num_cpus: resources each task asks for.
        max_in_flight: most tasks at once (default: what the cluster's resources allow).
        init_kwargs: extra ``ray.init`` arguments (tests: ``num_cpus=1, include_dashboard=False``).
    """

    def __init__(
        self,
        config: WorkerConfig,
        *,
        address: str | None = None,
        num_gpus: float = 0.0,
        num_cpus: float = 1.0,
        max_in_flight: int | None = None,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(config)
        if _in_memory(config.database_url):
            raise ValueError("the Ray executor needs a database the tasks can reach (not an in-memory SQLite)")
        self.address = address
        self.num_gpus = float(num_gpus)
        self.num_cpus = float(num_cpus)
        self.max_in_flight = max_in_flight
        self.init_kwargs = dict(init_kwargs or {})
        self.owner = f"ray-dispatcher:{jobrepo.new_owner_id()}"
        self._inflight: dict[Any, jobrepo.Claim] = {}
        self._ray: Any = None
        self._remote: Any = None
        self._initialized_here = False
        self.submitted = 0
        self.task_failures = 0
        self._warned_capacity = False
        self._last_touch = 0.0

    def _ensure_ray(self) -> Any:
        if self._ray is not None:
            return self._ray
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": True}
            if self.address:
                kwargs["address"] = self.address
            kwargs.update(self.init_kwargs)
            ray.init(**kwargs)
            self._initialized_here = True
        self._remote = ray.remote(num_gpus=self.num_gpus, num_cpus=self.num_cpus, max_retries=0)(ray_run_claim)
        self._ray = ray
        log.info("Ray executor connected: %s", ray.cluster_resources())
        return ray

    def capacity(self) -> int:
        """Tasks the cluster can run at once with the requested resources.

        0 when the cluster lacks a requested resource altogether (e.g. ``num_gpus > 0`` on a cluster
        without GPUs): then nothing is claimed and jobs stay ``queued`` (never ``running`` as a task
        Ray cannot schedule), and a warning names the missing resource.
        """
        if self.max_in_flight is not None:
            return self.max_in_flight
        res = self._ray.cluster_resources() if self._ray is not None else {}
        fits = []
        for name, want in (("GPU", self.num_gpus), ("CPU", self.num_cpus)):
            if want > 0:
                fits.append(int(res.get(name, 0) / want + 1e-9))
                if fits[-1] == 0 and not self._warned_capacity:
                    log.warning("the Ray cluster has %s %s; each task asks for %s: jobs wait queued", res.get(name, 0), name, want)
                    self._warned_capacity = True
        return min(fits) if fits else 1

    def tick(self, woken: bool) -> None:
        pending = self._pending()
        if not self._inflight and not pending:
            return
        ray = self._ensure_ray()
        cfg = dict(self.config.__dict__)
        cfg["kinds"] = dict(cfg["kinds"])
        capacity = self.capacity()
        while pending and len(self._inflight) < capacity and not self._stop.is_set():
            with self.db.session_scope() as session:
                held = jobrepo.claim(session, owner=self.owner, lease_s=self.config.lease_s, kinds=tuple(self.config.kinds))
            if held is None:
                break
            ref = self._remote.remote(held.to_dict(), cfg)
            self._inflight[ref] = held
            self.submitted += 1
            log.info("job %s submitted to Ray (attempt %d/%d)", held.job_id, held.attempt, held.max_attempts)
        if not self._inflight:
            return
        done, waiting = ray.wait(list(self._inflight), num_returns=len(self._inflight), timeout=0)
        for ref in done:
            held = self._inflight.pop(ref)
            try:
                outcome = ray.get(ref)
                log.info("job %s: Ray task ended: %s", held.job_id, outcome)
            except Exception as exc:  # the task's process died or Ray failed it
                self.task_failures += 1
                log.warning("job %s: Ray task failed (%s); ending its lease", held.job_id, type(exc).__name__)
                with self.db.session_scope() as session:
                    self._expire(session, held)
                    jobrepo.recover_expired(session)
        # tasks Ray has not reported done: keep their leases alive (a queued task does not heartbeat;
        # a running one also beats itself). A lost task is reported by Ray and handled above.
        if time.monotonic() - self._last_touch < self.config.heartbeat_interval:
            return
        self._last_touch = time.monotonic()
        for ref in waiting:
            held = self._inflight[ref]
            with self.db.session_scope() as session:
                still, _cancel = jobrepo.heartbeat(session, held)
            if not still:
                self._inflight.pop(ref, None)

    def _expire(self, session: Any, held: jobrepo.Claim) -> None:
        jobrepo.expire_lease(session, held)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop dispatching. Tasks in flight are cancelled and their jobs released back to the
        queue (without counting the attempt); a cancelled task that still writes finds its lease gone."""
        from .worker import release

        self._stop_loop(timeout)
        if self._ray is not None:
            for ref, held in list(self._inflight.items()):
                try:
                    self._ray.cancel(ref, force=True)
                except Exception:  # pragma: no cover - best effort
                    pass
                try:
                    with self.db.session_scope() as session:
                        release(session, held, detail="the Ray executor stopped during the run; requeued")
                except Exception:  # pragma: no cover - the lease then expires instead
                    log.exception("job %s: could not release", held.job_id)
            if self._initialized_here:
                self._ray.shutdown()
        self._inflight.clear()
        self.db.dispose()

    def describe(self) -> dict[str, Any]:
        return {"executor": "ray", "address": self.address, "num_gpus": self.num_gpus, "num_cpus": self.num_cpus,
                "in_flight": len(self._inflight), "submitted": self.submitted, "task_failures": self.task_failures,
                "recovered": dict(self.recovered)}


def make_executor(settings: Settings, **overrides: Any) -> Executor | None:
    """The executor ``settings`` ask for, or None when jobs cannot run in this process (an
    in-memory SQLite database is invisible to other processes: jobs then stay queued)."""
    if _in_memory(settings.database_url):
        log.warning("in-memory database: jobs are stored but not run (use a file or PostgreSQL)")
        return None
    config = worker_config(settings, **overrides)
    if settings.executor == "ray":
        return RayExecutor(
            config,
            address=settings.ray_address or os.environ.get("RAY_ADDRESS") or None,
            num_gpus=settings.ray_num_gpus,
            num_cpus=settings.ray_num_cpus,
        )
    return LocalExecutor(config, settings.worker_slots, log_level=settings.log_level, **_watch_settings(settings))


def _watch_settings(settings: Settings) -> dict[str, Any]:
    """The :class:`LocalExecutor` watchdog arguments of ``settings``."""
    return {"max_rss_bytes": settings.job_worker_max_rss_bytes, "cancel_grace_s": settings.job_cancel_grace_s,
            "watch_interval_s": settings.job_watch_interval_s}


@asynccontextmanager
async def executor_lifespan(app: Any) -> AsyncIterator[None]:
    """Start the settings' executor with the service and stop it at shutdown (``app.state.executor``)."""
    import anyio

    settings: Settings = app.state.settings
    executor = make_executor(settings)
    app.state.executor = executor
    if executor is not None:
        executor.start()
    try:
        yield
    finally:
        if executor is not None:
            await anyio.to_thread.run_sync(executor.stop)
        app.state.executor = None


def run_worker_loop(settings: Settings, *, slots: int = 1, stop: threading.Event | None = None) -> None:
    """``langclass worker``: a local executor with ``slots`` (at least one) worker processes started at
    once, each under the watchdog's memory cap (:mod:`langclass.app.execution.watchdog`); returns when
    ``stop`` is set."""
    stop = stop or threading.Event()
    ex = LocalExecutor(worker_config(settings), max(1, slots), eager=True, log_level=settings.log_level, **_watch_settings(settings))
    ex.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        ex.stop()
