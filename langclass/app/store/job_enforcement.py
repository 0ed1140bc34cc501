"""Jobs ended from outside their run, and the reads that decide it: the executor's watchdog
(:mod:`langclass.app.execution.watchdog`) finishes the job of a worker process it is about to kill —
over its memory cap, or deaf to a cancel — so that the job is recorded with its reason and never
requeued; the worker's heartbeat thread reads cancel requests between beats. Every write is
conditional on ``status = 'running'`` and the exact lease seen, as in :mod:`langclass.app.store.jobs`
(which re-exports these functions).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from .orm import JobRow, utcnow

__all__ = ["end_held_by", "cancel_requests_held_by", "cancel_requested"]

log = logging.getLogger("langclass.jobs")


def cancel_requested(session: Session, held: Any) -> bool:
    """Whether a cancel was requested for ``held``'s job (a :class:`~langclass.app.store.jobs.Claim`) (a read only: the holder polls it between
    heartbeats, so a cancel is seen within ``cancel_poll_s``, not a heartbeat later)."""
    return bool(session.execute(select(JobRow.cancel_requested).where(JobRow.id == held.job_id)).scalar_one_or_none())


def end_held_by(session: Session, owner: str, *, status: str, error: dict[str, Any], token: str | None = None) -> list[str]:
    """Finish now, with ``status`` (``failed`` or ``cancelled``) and ``error``, the running jobs whose
    lease ``owner`` (a prefix ``host:pid``) holds — or only the lease ``token`` when given — without a
    retry: the executor's watchdog calls it for a worker it stopped for memory or for a cancel the
    run did not honour in time, before it kills the process (so the job is never requeued). Commits.

    Returns:
        The ids of the jobs finished.
    """
    if status not in ("failed", "cancelled"):
        raise ValueError(f"end_held_by finishes as failed or cancelled, not {status!r}")
    cond = [JobRow.status == "running"]
    cond.append(JobRow.lease_owner == token if token is not None else JobRow.lease_owner.startswith(owner + ":", autoescape=True))
    rows = session.execute(select(JobRow.id, JobRow.lease_owner, JobRow.attempts).where(*cond)).all()
    done: list[str] = []
    for r in rows:
        res = session.execute(
            update(JobRow)
            .where(JobRow.id == r.id, JobRow.status == "running", JobRow.lease_owner == r.lease_owner)
            .values(status=status, finished_at=utcnow(), lease_expires_at=None,
                    error={**error, "attempt": int(r.attempts), "retrying": False})
            .execution_options(synchronize_session=False)
        )
        if res.rowcount:
            done.append(r.id)
            log.warning("job %s: %s by the executor (%s)", r.id, status, error.get("reason"))
    session.commit()
    return done


def cancel_requests_held_by(session: Session, owners: list[str]) -> list[tuple[str, str]]:
    """``(job id, lease token)`` of the running jobs with a cancel request whose lease one of
    ``owners`` (prefixes ``host:pid``) holds."""
    if not owners:
        return []
    rows = session.execute(
        select(JobRow.id, JobRow.lease_owner).where(
            JobRow.status == "running", JobRow.cancel_requested.is_(True),
            or_(*[JobRow.lease_owner.startswith(o + ":", autoescape=True) for o in owners]))
    ).all()
    return [(r.id, r.lease_owner) for r in rows]
