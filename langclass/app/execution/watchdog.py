"""The job workers' watchdog: a hard memory cap per worker process and a prompt end to cancelled runs.

A thread of the service process (:class:`~langclass.app.execution.executor.LocalExecutor` starts one)
looks at every worker process each ``interval_s`` (default 0.25 s):

* **memory** — the process's resident memory (``/proc/<pid>/statm``) over ``max_rss_bytes``: the
  process is frozen (``SIGSTOP``, so it neither allocates more nor stores an outcome), the job its
  lease holds is finished ``failed`` with ``error.reason = "memory-limit"`` (the cap, its setting
  ``LANGCLASS_JOB_WORKER_MAX_RSS_BYTES`` and the measured RSS) — *not* requeued: the same spec would
  be killed again — and the process is killed (``SIGKILL``); the executor starts a fresh one.
* **cancel** — a running job with a cancel request that its run has not honoured ``grace_s``
  seconds after the watchdog first saw the request (the run polls ``should_cancel`` between steps,
  but one step of a big model, or a synthesis, may take seconds): frozen, finished ``cancelled``,
  killed, as above.

Why a watchdog and not a kernel limit: ``RLIMIT_AS`` counts address space, and torch and its
OpenMP/BLAS threads map gigabytes they never touch (a worker that holds 0.4 GiB maps 3–5 GiB), so a
cap meant for resident memory either kills nothing or breaks start-up; ``RLIMIT_DATA`` has the same
defect in a smaller form and makes an allocation fail *inside* the job (a ``MemoryError`` in the
heartbeat thread or the database driver, an outcome that may not be stored), not a named
refusal; a cgroup (v2 ``memory.max``) is exact but needs a delegated, writable cgroup tree, which
neither a plain user account nor a default container has. Sampling RSS bounds what the cap is
about — physical memory — on every Linux, and lets the record say why the job ended. Its price is
the sampling interval: a job that allocates faster than ``max_rss_bytes − RSS`` per interval can
overshoot the cap by what it allocates in one interval (a few hundred MiB at 0.25 s), which is why
the default cap leaves a tenth of the host's memory free (:func:`default_worker_cap`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database

from .isolation import rss_bytes

__all__ = ["JobWatchdog", "host_memory_bytes", "default_worker_cap", "MEMORY_SETTING"]

log = logging.getLogger("langclass.watchdog")

MEMORY_SETTING = "LANGCLASS_JOB_WORKER_MAX_RSS_BYTES"

HOST_SHARE = 0.9
"""Share of the host's memory the job workers together may hold (the rest: the service, the
database, the page cache and one sampling interval's overshoot)."""


def host_memory_bytes() -> int | None:
    """Physical memory of this machine in bytes, or the memory limit of this process's cgroup when
    smaller (v2 ``memory.max``, v1 ``memory.limit_in_bytes``); None when unknown (not Linux)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return int(total)


def default_worker_cap(slots: int, configured: int | None = None) -> int | None:
    """The memory cap of one job worker process (bytes): ``configured`` when given, but never more
    than :data:`HOST_SHARE` of the host's memory divided by ``slots`` (so ``slots × cap`` stays under
    the host's memory; a larger setting is lowered, with a warning). None when the host's memory is
    unknown and nothing is configured."""
    host = host_memory_bytes()
    share = None if host is None else int(host * HOST_SHARE / max(1, slots))
    if configured is None:
        return share
    if share is not None and configured > share:
        log.warning("%s = %d × %d slots exceeds %.0f%% of this host's %d bytes; each worker is capped at %d bytes",
                    MEMORY_SETTING, configured, slots, HOST_SHARE * 100, host, share)
        return share
    return configured


class JobWatchdog(threading.Thread):
    """Samples the worker processes; see the module doc.

    Args:
        db: the jobs database.
        processes: returns the live worker processes (objects with ``pid``) to watch.
        lock: held while a process is stopped and its job finished (the executor's lock, so that
            its supervision round does not requeue the job of a process it finds dead meanwhile).
        max_rss_bytes: the cap (None = memory not watched).
        grace_s: seconds a cancel request may go unhonoured before the process is killed (None =
            cancels not watched).
        interval_s: sampling interval.
    """

    def __init__(self, db: Database, processes: Callable[[], list[Any]], lock: threading.Lock, *,
                 max_rss_bytes: int | None, grace_s: float | None = 1.0, interval_s: float = 0.25) -> None:
        super().__init__(name="job-watchdog", daemon=True)
        self.db = db
        self.processes = processes
        self.lock = lock
        self.max_rss_bytes = max_rss_bytes
        self.grace_s = grace_s
        self.interval_s = interval_s
        self.host = socket.gethostname()[:100]
        self._stop_evt = threading.Event()
        self._seen: dict[tuple[str, str], float] = {}  # (job id, lease token) → first seen with a cancel request
        self.killed = {"memory-limit": 0, "cancelled": 0}

    def stop(self) -> None:
        self._stop_evt.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5.0)

    def run(self) -> None:
        while not self._stop_evt.wait(self.interval_s):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - a database hiccup: the next round tries again
                log.debug("watchdog round failed", exc_info=True)

    def check(self) -> None:
        """One round: the memory of every process, then the cancel requests of their jobs."""
        procs = [p for p in self.processes() if p is not None and p.pid is not None and p.is_alive()]
        if self.max_rss_bytes is not None:
            for p in procs:
                rss = rss_bytes(p.pid)
                if rss is not None and rss > self.max_rss_bytes:
                    self._end(p, "failed", {
                        "reason": "memory-limit", "limit": "job_worker_max_rss_bytes", "value": self.max_rss_bytes,
                        "setting": MEMORY_SETTING, "rss_bytes": rss,
                        "detail": f"the job's worker process held {rss:,} bytes of memory, over the cap of "
                                  f"{self.max_rss_bytes:,} bytes ({MEMORY_SETTING}); it was stopped and the job is not retried"})
                    self.killed["memory-limit"] += 1
        if self.grace_s is None:
            return
        live = [p for p in procs if p.is_alive()]
        owners = {f"{self.host}:{p.pid}": p for p in live}
        with self.db.session_scope() as session:
            requests = jobrepo.cancel_requests_held_by(session, list(owners))
        now = time.monotonic()
        current = set(requests)
        self._seen = {k: t for k, t in self._seen.items() if k in current}
        for job_id, token in requests:
            first = self._seen.setdefault((job_id, token), now)
            if now - first < self.grace_s:
                continue
            owner = token.rsplit(":", 1)[0]
            p = owners.get(owner)
            if p is None:
                continue
            self._end(p, "cancelled", {"reason": "cancelled",
                                        "detail": f"cancelled while running; the run did not stop within {self.grace_s:g} s, "
                                                  "so its worker process was killed"}, token=token)
            self.killed["cancelled"] += 1
            self._seen.pop((job_id, token), None)

    def _end(self, proc: Any, status: str, error: dict[str, Any], token: str | None = None) -> None:
        """Freeze ``proc``, finish its job with ``status`` / ``error`` (no retry), kill it."""
        with self.lock:
            if not proc.is_alive():
                return
            try:
                os.kill(proc.pid, signal.SIGSTOP)
            except ProcessLookupError:
                return
            ids: list[str] = []
            try:
                with self.db.session_scope() as session:
                    ids = jobrepo.end_held_by(session, f"{self.host}:{proc.pid}", status=status, error=error, token=token)
            finally:
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.join(5.0)
        log.warning("worker pid %s killed (%s); job(s) %s %s", proc.pid, error["reason"], ", ".join(ids) or "none", status)
