"""The jobs repository: the only module that writes the ``jobs`` table, with
:mod:`~langclass.app.store.job_enforcement` (jobs ended from outside their run; re-exported here) — the
table itself is :class:`~langclass.app.store.orm.JobRow`; the executors and workers call the functions here.

A job is one long computation on a stored language — kind ``train`` (train recognizers and compare
with the predicted encoding, :func:`langclass.models.experiments.experiment.run_experiment`), ``construct``
(build a transformer by construction and verify it, :func:`langclass.models.construct.verify.run_construction`)
or ``sectors`` (:func:`langclass.models.experiments.sectors.run_sectors`) — or a ``sweep`` over a stratified
sample of census languages (:func:`langclass.app.usecases.sweep_jobs.run_sweep_job`), which has no
single language (``language_id`` NULL).
The database row *is* the record: executors only run what they claim here.

Life cycle (``status``)::

    queued ──claim──▶ running ──finish──▶ succeeded | failed | cancelled
      ▲                  │
      └──lease expired───┘   (attempts < max_attempts; else failed, reason "worker-lost")
    queued ──cancel──▶ cancelled          running ──cancel──▶ cancel_requested, the run stops itself

Guarantees (on SQLite and PostgreSQL alike):

* **enqueue after commit** — a job is a row inserted in the caller's transaction; no worker sees it
  before that transaction commits, and a rolled-back request leaves nothing behind. Routes wake the
  executor only after the commit (:meth:`Executor.notify`).
* **one claimant** — :func:`claim` is a single ``UPDATE … WHERE id = (SELECT … LIMIT 1 FOR UPDATE
  SKIP LOCKED) AND status = 'queued'`` statement. PostgreSQL locks the candidate row and skips rows
  other workers hold; SQLite runs the whole statement under its single writer lock (the ``FOR
  UPDATE`` clause is not rendered there), and the ``status = 'queued'`` guard makes it a
  conditional update either way. Each claim writes a fresh random *lease token* into
  ``lease_owner`` and reads the row back by that token.
* **lease + heartbeat** — the holder extends ``lease_expires_at`` with :func:`heartbeat`; every
  write of a holder (heartbeat, progress, :func:`finish`) is conditional on its token and on
  ``status = 'running'``. A worker that lost its lease (it stalled, its job was requeued and claimed
  by another) finds 0 rows updated, stops, and its result is discarded — never stored twice.
* **no lost or stuck jobs** — :func:`recover_expired` (run by every worker loop, by the executor's
  supervisor and at service start) requeues ``running`` jobs whose lease expired (``attempts`` was
  already counted at claim) or, once ``attempts`` reached ``max_attempts``, marks them ``failed``
  with ``error.reason = "worker-lost"``; a job whose cancel was requested becomes ``cancelled``.

Error reasons (``error.reason``): ``worker-lost`` (lease expired after the last attempt; while a
retry is queued the same reason is recorded with ``retrying: true``), ``invalid-spec`` and
``limit-exceeded`` (the job function rejected its input: a :class:`~langclass.core.base.errors.
LangclassError`, not retried), ``run-error`` (an unexpected exception: its type only — the
message and traceback go to the worker's log, not to readers of the job; not retried, since it
would fail again), ``unknown-kind``, ``cancelled``.

Timestamps are UTC and come from the process that writes them (workers on several machines need
synchronized clocks, as any lease scheme does; the lease is long compared to clock skew).
"""

from __future__ import annotations

import logging
import secrets
import socket
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from .job_records import error_record, job_resource, job_summary  # re-exported
from .job_enforcement import cancel_requested, cancel_requests_held_by, end_held_by  # re-exported
from .orm import JobModelRow, JobRow, utcnow
from .pagination import decode_cursor, encode_cursor

__all__ = [
    "JobRow",
    "expire_leases_of_dead_local_owners",
    "end_held_by",
    "cancel_requested",
    "cancel_requests_held_by",
    "pid_alive",
    "JOB_KINDS",
    "LANGUAGE_FREE_KINDS",
    "STATUSES",
    "TERMINAL",
    "Claim",
    "new_owner_id",
    "create_job",
    "get_job",
    "list_jobs",
    "request_cancel",
    "claim",
    "heartbeat",
    "finish",
    "get_model",
    "recover_expired",
    "expire_leases_of",
    "count_claimable",
    "count_by_status",
    "delete_of_language",
    "release",
    "expire_lease",
    "job_resource",
    "job_summary",
    "error_record",
]
# job_resource, job_summary and error_record (the JSON of a row and of a job's error) live in
# job_records and are re-exported here for the routes, pages and workers that call jobrepo.*

log = logging.getLogger("langclass.jobs")

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
TERMINAL = frozenset({"succeeded", "failed", "cancelled"})

JOB_KINDS: dict[str, str] = {
    "train": "langclass.app.usecases.model_jobs:run_train_job",
    "construct": "langclass.app.usecases.model_jobs:run_construct_job",
    "sectors": "langclass.models.experiments.sectors:run_sectors",
    "sweep": "langclass.app.usecases.sweep_jobs:run_sweep_job",
}
"""Job kind → ``"module:function"`` of the job function ``f(spec, *, progress, should_cancel) -> dict``.

Workers import the function lazily (torch is loaded only in the process that runs a job). The
train and construct functions wrap :func:`~langclass.models.experiments.experiment.run_experiment` and
:func:`~langclass.models.construct.verify.run_construction` and add the job's portable model
(:mod:`langclass.app.usecases.model_jobs`), which :func:`finish` stores in ``job_models``."""

LANGUAGE_FREE_KINDS = frozenset({"sweep"})
"""Job kinds with no single language (``language_id`` NULL)."""


class Claim:
    """What a claimant holds: the job's id, kind, spec, attempt number and lease token.

    A plain object (no ORM state) so it can cross to a worker thread, process or Ray task.
    """

    __slots__ = ("job_id", "kind", "spec", "attempt", "max_attempts", "token", "lease_s")

    def __init__(self, job_id: str, kind: str, spec: dict[str, Any], attempt: int, max_attempts: int, token: str, lease_s: float) -> None:
        self.job_id = job_id
        self.kind = kind
        self.spec = spec
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.token = token
        self.lease_s = lease_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for shipping to a Ray task)."""
        return {s: getattr(self, s) for s in self.__slots__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Claim":
        return cls(**{s: data[s] for s in cls.__slots__})

    def __repr__(self) -> str:
        return f"Claim(job_id={self.job_id!r}, kind={self.kind!r}, attempt={self.attempt}/{self.max_attempts})"


def new_owner_id(prefix: str | None = None) -> str:
    """A lease-owner prefix naming this process: ``host:pid`` (or ``prefix``), without the random part."""
    import os

    return prefix or f"{socket.gethostname()[:100]}:{os.getpid()}"


def _token(owner: str) -> str:
    return f"{owner}:{secrets.token_hex(8)}"


# --- creating and reading -------------------------------------------------------------------------


def create_job(
    session: Session, *, language_id: str | None, kind: str, spec: dict[str, Any], max_attempts: int
) -> JobRow:
    """Insert a queued job in the caller's transaction (visible to workers once it commits).

    Args:
        language_id: a stored language's fingerprint (the caller checked it exists); None for a
            ``sweep`` job, which has no single language.
        kind: a key of :data:`JOB_KINDS`.
        spec: the complete JSON-ready input of the job function.
        max_attempts: claims allowed before a lost worker fails the job (≥ 1).

    Raises:
        ValueError: unknown ``kind``, ``max_attempts < 1``, or a language missing on a kind that
            needs one (programming errors: the route validated the request).
    """
    if kind not in JOB_KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    if language_id is None and kind not in LANGUAGE_FREE_KINDS:
        raise ValueError(f"a {kind} job needs a language")
    if max_attempts < 1:
        raise ValueError("max_attempts must be >= 1")
    row = JobRow(
        id=str(uuid.uuid4()),
        language_id=language_id,
        kind=kind,
        status="queued",
        spec=spec,
        attempts=0,
        max_attempts=max_attempts,
        cancel_requested=False,
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


def get_job(session: Session, job_id: str) -> JobRow | None:
    """The job with this id, or None (also for ids that are not UUIDs)."""
    return session.get(JobRow, job_id)


def list_jobs(
    session: Session,
    *,
    limit: int,
    cursor: str | None = None,
    language_id: str | None = None,
    status: str | None = None,
    kind: str | None = None,
) -> tuple[list[JobRow], str | None]:
    """A page of jobs, newest first (created_at, then id, descending), with filters.

    Returns:
        ``(rows, next_cursor)``; ``next_cursor`` is None on the last page.

    Raises:
        InvalidCursorError: a cursor that is not well-formed.
    """
    stmt = select(JobRow)
    if language_id is not None:
        stmt = stmt.where(JobRow.language_id == language_id)
    if status is not None:
        stmt = stmt.where(JobRow.status == status)
    if kind is not None:
        stmt = stmt.where(JobRow.kind == kind)
    if cursor is not None:
        when, jid = decode_cursor(cursor)
        stmt = stmt.where(or_(JobRow.created_at < when, and_(JobRow.created_at == when, JobRow.id < jid)))
    stmt = stmt.order_by(JobRow.created_at.desc(), JobRow.id.desc()).limit(limit + 1)
    rows = list(session.scalars(stmt))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (encode_cursor(rows[-1]) if more and rows else None)  # type: ignore[arg-type]


def request_cancel(session: Session, job_id: str) -> JobRow | None:
    """Cancel a job: a queued one becomes ``cancelled`` at once; a running one gets
    ``cancel_requested`` (its worker sees it at the next heartbeat and stops); a finished one is
    left as it is.

    Both transitions are conditional updates, so a job claimed between the read and the write is
    handled by the second one (never a cancelled status on a job that keeps running unseen). A
    running job whose worker missed two heartbeats is cancelled at once (its worker is presumed
    lost, e.g. after a whole-service kill), not a lease later.

    Returns:
        The job after the change (None when there is no such job).
    """
    now = utcnow()
    res = session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.status == "queued")
        .values(
            status="cancelled",
            cancel_requested=True,
            finished_at=now,
            error={"reason": "cancelled", "detail": "cancelled before it started"},
        )
        .execution_options(synchronize_session=False)
    )
    if not res.rowcount:
        session.execute(
            update(JobRow)
            .where(JobRow.id == job_id, JobRow.status == "running")
            .values(cancel_requested=True)
            .execution_options(synchronize_session=False)
        )
        _cancel_if_orphaned(session, job_id, now)
    session.expire_all()
    return session.get(JobRow, job_id)


def _cancel_if_orphaned(session: Session, job_id: str, now: datetime) -> None:
    """A running job whose holder missed two heartbeats (half its lease; heartbeats come every
    quarter) is presumed orphaned — e.g. the whole service was killed — and is cancelled now rather
    than when its lease runs out. Conditional on the exact lease seen: a holder that is alive after
    all finds the job cancelled at its next heartbeat, stops, and stores nothing."""
    r = session.execute(
        select(JobRow.lease_owner, JobRow.lease_expires_at, JobRow.heartbeat_at, JobRow.attempts).where(
            JobRow.id == job_id, JobRow.status == "running"
        )
    ).one_or_none()
    if r is None or r.lease_expires_at is None or r.heartbeat_at is None:
        return
    lease = r.lease_expires_at - r.heartbeat_at
    if now - r.heartbeat_at < lease / 2:
        return
    session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.status == "running", JobRow.lease_owner == r.lease_owner,
               JobRow.lease_expires_at == r.lease_expires_at)
        .values(status="cancelled", finished_at=now, lease_expires_at=None,
                error={"reason": "cancelled", "detail": f"cancelled; its worker had not heartbeaten since {r.heartbeat_at.isoformat()} (presumed lost)",
                       "attempt": int(r.attempts), "lease_owner": r.lease_owner})
        .execution_options(synchronize_session=False)
    )


# --- claiming and holding a lease -----------------------------------------------------------------


def claim(
    session: Session, *, owner: str, lease_s: float, kinds: tuple[str, ...] | None = None
) -> Claim | None:
    """Claim the oldest queued job (of ``kinds``, default any) for ``lease_s`` seconds.

    One atomic statement (see the module docstring); commits before returning so the lease is
    visible at once. Increments ``attempts`` and sets ``started_at`` on the first claim.

    Args:
        owner: the claimant's prefix (:func:`new_owner_id`); a random suffix makes the token.
        lease_s: lease length in seconds (> 0).
        kinds: job kinds this claimant can run.

    Returns:
        The :class:`Claim`, or None when nothing is queued — or, on PostgreSQL, when every queued
        candidate is row-locked by another transaction at that instant (``SKIP LOCKED``): a
        competing claimant, or a stale holder's conditional heartbeat/finish that is losing (an
        ``UPDATE`` that re-checks a row changed under it locks the new version until it commits,
        even when it then updates nothing). Such locks last one short transaction; callers poll
        again (workers every ``poll_s``), so a job is at worst claimed one poll later.
    """
    now = utcnow()
    token = _token(owner)
    candidate = select(JobRow.id).where(JobRow.status == "queued")
    if kinds is not None:
        candidate = candidate.where(JobRow.kind.in_(list(kinds)))
    candidate = candidate.order_by(JobRow.created_at, JobRow.id).limit(1).with_for_update(skip_locked=True)
    stmt = (
        update(JobRow)
        .where(JobRow.id == candidate.scalar_subquery(), JobRow.status == "queued")
        .values(
            status="running",
            attempts=JobRow.attempts + 1,
            lease_owner=token,
            lease_expires_at=now + timedelta(seconds=lease_s),
            heartbeat_at=now,
            started_at=func.coalesce(JobRow.started_at, now),
            progress=None,
        )
        .execution_options(synchronize_session=False)
    )
    res = session.execute(stmt)
    if not res.rowcount:
        session.commit()
        return None
    row = session.execute(
        select(JobRow.id, JobRow.kind, JobRow.spec, JobRow.attempts, JobRow.max_attempts).where(JobRow.lease_owner == token)
    ).one()
    session.commit()
    return Claim(row.id, row.kind, row.spec, int(row.attempts), int(row.max_attempts), token, float(lease_s))


def heartbeat(
    session: Session, held: Claim, *, progress: dict[str, Any] | None = None
) -> tuple[bool, bool]:
    """Extend ``held``'s lease (and store ``progress`` when given); commits.

    Returns:
        ``(still_held, cancel_requested)`` — ``still_held`` is False when the lease was lost (the
        job was requeued, finished, cancelled or deleted): the holder must stop and not store.
    """
    now = utcnow()
    values: dict[str, Any] = {"heartbeat_at": now, "lease_expires_at": now + timedelta(seconds=held.lease_s)}
    if progress is not None:
        values["progress"] = progress
    res = session.execute(
        update(JobRow)
        .where(JobRow.id == held.job_id, JobRow.lease_owner == held.token, JobRow.status == "running")
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if not res.rowcount:
        session.commit()
        return False, False
    cancel = session.execute(select(JobRow.cancel_requested).where(JobRow.id == held.job_id)).scalar_one()
    session.commit()
    return True, bool(cancel)


def finish(
    session: Session,
    held: Claim,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    progress: dict[str, Any] | None = None,
    model: bytes | None = None,
    model_summary: dict[str, Any] | None = None,
) -> bool:
    """Record the outcome of ``held``'s run; commits.

    Args:
        status: ``succeeded`` | ``failed`` | ``cancelled``.
        result: the job function's result (or the partial result of a cancelled run).
        error: ``{"reason", "detail", …}`` for failed / cancelled.
        model: the zip of the job's portable model(s), stored in ``job_models`` in the same
            transaction (only when the outcome is stored); ``model_summary`` its summary.

    Returns:
        True when stored; False when the lease was no longer held (the outcome is discarded, so a
        job is never finished twice by a stale worker).
    """
    if status not in TERMINAL:
        raise ValueError(f"finish needs a terminal status, got {status!r}")
    values: dict[str, Any] = {"status": status, "result": result, "error": error, "finished_at": utcnow(), "lease_expires_at": None}
    if progress is not None:
        values["progress"] = progress
    res = session.execute(
        update(JobRow)
        .where(JobRow.id == held.job_id, JobRow.lease_owner == held.token, JobRow.status == "running")
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if res.rowcount and model is not None:
        session.execute(delete(JobModelRow).where(JobModelRow.job_id == held.job_id))
        session.add(JobModelRow(job_id=held.job_id, data=model, size=len(model), summary=model_summary or {}))
    session.commit()
    if not res.rowcount:
        log.warning("job %s: lease %s lost before finishing; outcome %s discarded", held.job_id, held.token, status)
    return bool(res.rowcount)


def get_model(session: Session, job_id: str) -> JobModelRow | None:
    """The stored portable model of a job (``GET /v1/jobs/{id}/model``), or None."""
    return session.get(JobModelRow, job_id)


# --- recovery -------------------------------------------------------------------------------------


def recover_expired(session: Session, *, now: datetime | None = None) -> dict[str, int]:
    """Requeue, fail or cancel every ``running`` job whose lease has expired; commits.

    Each row is changed by an update conditional on the exact lease seen (owner and expiry), so two
    recoverers running at once, or a holder whose heartbeat lands first, never double-count.

    Returns:
        ``{"requeued": n, "failed": n, "cancelled": n}``.
    """
    now = now or utcnow()
    counts = {"requeued": 0, "failed": 0, "cancelled": 0}
    expired = session.execute(
        select(
            JobRow.id, JobRow.lease_owner, JobRow.lease_expires_at, JobRow.heartbeat_at,
            JobRow.attempts, JobRow.max_attempts, JobRow.cancel_requested,
        ).where(JobRow.status == "running", JobRow.lease_expires_at < now)
    ).all()
    for r in expired:
        lost = {
            "reason": "worker-lost",
            "detail": f"the worker holding attempt {r.attempts} stopped heartbeating (lease expired at {r.lease_expires_at.isoformat()})",
            "attempt": int(r.attempts),
            "max_attempts": int(r.max_attempts),
            "lease_owner": r.lease_owner,
            "last_heartbeat_at": r.heartbeat_at.isoformat() if r.heartbeat_at else None,
        }
        if r.cancel_requested:
            values: dict[str, Any] = {"status": "cancelled", "finished_at": now, "error": {**lost, "reason": "cancelled", "detail": "cancelled; its worker was lost"}}
            key = "cancelled"
        elif r.attempts >= r.max_attempts:
            values = {"status": "failed", "finished_at": now, "error": {**lost, "retrying": False, "detail": lost["detail"] + f"; no attempts left ({r.attempts}/{r.max_attempts})"}}
            key = "failed"
        else:
            values = {"status": "queued", "lease_owner": None, "lease_expires_at": None, "error": {**lost, "retrying": True}}
            key = "requeued"
        res = session.execute(
            update(JobRow)
            .where(
                JobRow.id == r.id,
                JobRow.status == "running",
                JobRow.lease_owner == r.lease_owner,
                JobRow.lease_expires_at == r.lease_expires_at,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if res.rowcount:
            counts[key] += 1
            log.warning("job %s: lease of %s expired → %s", r.id, r.lease_owner, key)
    session.commit()
    return counts


def expire_leases_of(session: Session, owner: str) -> int:
    """End now the leases held by ``owner`` (a prefix ``host:pid``), e.g. a worker process the
    supervisor saw die; :func:`recover_expired` then requeues or fails their jobs. Commits.

    Returns:
        The number of leases ended.
    """
    now = utcnow() - timedelta(microseconds=1)
    res = session.execute(
        update(JobRow)
        .where(JobRow.status == "running", JobRow.lease_owner.startswith(owner + ":", autoescape=True))
        .values(lease_expires_at=now)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return int(res.rowcount or 0)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine and is not a zombie (Linux ``/proc``; else
    ``kill(pid, 0)``). A pid of another user's process counts as alive."""
    import os

    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def expire_leases_of_dead_local_owners(session: Session, *, host: str | None = None,
                                       alive: Callable[[int], bool] = pid_alive) -> int:
    """End now the leases held by processes of this host (``host``, default this machine's name, as
    :func:`new_owner_id` writes it) that no longer run: after a whole process group was killed, the
    restarted service takes their jobs back at once instead of when each lease expires. A token
    ``host:pid:random`` whose pid is not alive (:func:`pid_alive`) is ended by an update conditional
    on that exact token; a pid reused by another process counts as alive (its job waits for its
    lease to expire, as before). Hosts must have distinct names (containers sharing a database and
    one host name would end each other's leases). Commits.

    Returns:
        The number of leases ended (:func:`recover_expired` then requeues or fails their jobs).
    """
    import os

    host = (host or socket.gethostname())[:100]
    rows = session.execute(
        select(JobRow.id, JobRow.lease_owner).where(JobRow.status == "running", JobRow.lease_owner.startswith(host + ":", autoescape=True))
    ).all()
    now = utcnow() - timedelta(microseconds=1)
    ended = 0
    for job_id, token in rows:
        parts = str(token)[len(host) + 1:].split(":")
        if len(parts) != 2 or not parts[0].isdigit():
            continue  # not a host:pid:random token of this module
        pid = int(parts[0])
        if pid == os.getpid() or alive(pid):
            continue
        res = session.execute(
            update(JobRow).where(JobRow.id == job_id, JobRow.status == "running", JobRow.lease_owner == token)
            .values(lease_expires_at=now).execution_options(synchronize_session=False)
        )
        if res.rowcount:
            ended += 1
            log.warning("job %s: its lease owner %s (this host, pid %d) is not running; lease ended", job_id, token, pid)
    session.commit()
    return ended


def count_claimable(session: Session, *, now: datetime | None = None) -> int:
    """Jobs that need a worker: queued, or running with an expired lease."""
    now = now or utcnow()
    return int(
        session.execute(
            select(func.count()).select_from(JobRow).where(
                or_(JobRow.status == "queued", and_(JobRow.status == "running", JobRow.lease_expires_at < now))
            )
        ).scalar_one()
    )


def count_by_status(session: Session, language_id: str) -> dict[str, int]:
    """``{status: number of jobs}`` of one language (statuses without jobs left out)."""
    rows = session.execute(
        select(JobRow.status, func.count()).where(JobRow.language_id == language_id).group_by(JobRow.status)
    ).all()
    return {str(status): int(n) for status, n in rows}


def delete_of_language(session: Session, language_id: str) -> int:
    """Delete every job of a language (``DELETE /v1/languages/{id}?cascade=true``); the number deleted.
    A running job's worker finds its row gone and drops its result."""
    res = session.execute(delete(JobRow).where(JobRow.language_id == language_id))
    return int(res.rowcount or 0)


def release(session: Session, held: Claim, *, detail: str) -> bool:
    """Put a held job back in the queue without counting the attempt (the worker is shutting
    down, not the job failing); commits. Returns False when the lease was already lost."""
    res = session.execute(
        update(JobRow)
        .where(JobRow.id == held.job_id, JobRow.lease_owner == held.token, JobRow.status == "running")
        .values(
            status="queued",
            lease_owner=None,
            lease_expires_at=None,
            attempts=JobRow.attempts - 1,
            error={"reason": "worker-stopped", "detail": detail, "retrying": True, "attempt": held.attempt},
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return bool(res.rowcount)


def expire_lease(session: Session, held: Claim) -> None:
    """End a held lease now (its task was lost), so :func:`recover_expired` requeues or fails the
    job at once; conditional on the lease token; commits."""
    session.execute(
        update(JobRow)
        .where(JobRow.id == held.job_id, JobRow.lease_owner == held.token, JobRow.status == "running")
        .values(lease_expires_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.commit()
