"""ORM tables (SQLAlchemy 2 declarative). The schema itself changes only through ``migrations/``.

``languages``         one row per language, keyed by the fingerprint of its canonical minimal
                      complete DFA (SHA-256 hex), with the input it came from, the canonical DFA
                      (export JSON), the full analysis record and the code version that made it.
``language_classes``  one row per (language, class key) with the membership (true / false / NULL
                      when undecided, e.g. monoid over its size cap), so ``?class=K&member=true``
                      is an indexed query on SQLite and PostgreSQL alike.

``jobs``              one row per long computation (train / construct / sectors) on a stored
                      language, or a sweep over census languages (no language: ``language_id``
                      NULL), with its life cycle; written only by :mod:`langclass.app.store.jobs`.
``census_runs``       one row per stored census run (N, K, classes, counts, where the per-language
                      data file is, its SHA-256 and size); written only by
                      :mod:`langclass.app.store.census_runs`.
``census_profiles``   one row per (run, membership profile, state number) with its count, so a
                      filter is counted without opening the data file.
``job_models``        one row per construct / train job that finished with a model: the zip of its
                      portable files (docs/models.md) and their summary; deleted with the job;
                      written only by :mod:`langclass.app.store.jobs`.
``page_sessions``     one row per signed-in browser (``/login``), deleted by ``/logout``; written only
                      by :mod:`langclass.app.store.sessions`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (JSON, BigInteger, Boolean, CheckConstraint, DateTime, Float, ForeignKey, Index, Integer, LargeBinary,
                        String, TypeDecorator)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["Base", "LanguageRow", "LanguageClassRow", "JobRow", "JobModelRow", "PageSessionRow", "CensusRunRow", "CensusProfileRow",
           "UTCDateTime", "utcnow"]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """A timestamp stored as UTC and always returned timezone-aware (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    """Declarative base of every table."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: UTCDateTime}


class LanguageRow(Base):
    """A stored, classified language.

    Columns:
        id: fingerprint (SHA-256 hex of the canonical minimal complete DFA's canonical JSON).
        name, tags: user labels (not part of the identity).
        alphabet: the ordered alphabet (JSON list of symbols); ``alphabet_size`` its length.
        source: the input as given (``{"kind": "regex", "regex": ..., "alphabet": [...]}``,
            ``{"kind": "dfa", "dfa": {...}}`` or ``{"kind": "formula", ...}``).
        dfa: the canonical DFA in the DFA JSON schema (integer state names).
        num_states: states of the minimal complete DFA.
        analysis: the classification record (``core.analysis.Analysis.to_dict()``).
        code_version: version of the code that computed ``analysis``.
        created_at: insertion time (UTC); with ``id`` the stable order of listings.
    """

    __tablename__ = "languages"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    alphabet: Mapped[list[Any]] = mapped_column(JSON)
    alphabet_size: Mapped[int] = mapped_column(Integer, index=True)
    source: Mapped[dict[str, Any]] = mapped_column(JSON)
    dfa: Mapped[dict[str, Any]] = mapped_column(JSON)
    num_states: Mapped[int] = mapped_column(Integer, index=True)
    analysis: Mapped[dict[str, Any]] = mapped_column(JSON)
    code_version: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    classes: Mapped[list["LanguageClassRow"]] = relationship(
        back_populates="language", cascade="all, delete-orphan", passive_deletes=True
    )

    __table_args__ = (Index("ix_languages_created_at_id", "created_at", "id"),)


class LanguageClassRow(Base):
    """Membership of one language in one class (``member`` is NULL when undecided)."""

    __tablename__ = "language_classes"

    language_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("languages.id", ondelete="CASCADE"), primary_key=True
    )
    class_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    member: Mapped[bool | None] = mapped_column(Boolean, nullable=True)

    language: Mapped[LanguageRow] = relationship(back_populates="classes")

    __table_args__ = (Index("ix_language_classes_key_member", "class_key", "member"),)


class JobRow(Base):
    """One job (see the module docstring for the life cycle).

    Columns:
        id: UUID4 string.
        language_id: the stored language (DELETE with ``?cascade=true`` deletes its jobs; without it a language that has jobs is kept, 409);
            NULL for a ``sweep`` job, which trains a sample of census languages (migration 0005).
        kind: ``train`` | ``construct`` | ``sectors`` | ``sweep``.
        status: ``queued`` | ``running`` | ``succeeded`` | ``failed`` | ``cancelled``.
        spec: the job function's input, complete (language DFA, encodings with their resolved
            parameters, profile, seeds, learning rates, overrides, prediction).
        attempts / max_attempts: claims so far / the most allowed.
        lease_owner: the current (or last) lease token ``host:pid:random``.
        lease_expires_at / heartbeat_at: end of the lease / last heartbeat (UTC).
        progress: the job function's last progress report (step, total, last evaluation, …).
        result: the job function's JSON result (``runs``, ``summary``, ``verdict``, …).
        error: ``{"reason", "detail", …}`` when the job failed or was retried / cancelled.
        cancel_requested: set by ``DELETE /v1/jobs/{id}`` while running.
        created_at / started_at / finished_at: UTC timestamps (started = first claim).
    """

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    language_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("languages.id", ondelete="CASCADE", name="fk_jobs_language_id"), nullable=True
    )
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="queued")
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=3)
    lease_owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    progress: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    __table_args__ = (
        CheckConstraint(
            "status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')", name="ck_jobs_status"
        ),
        CheckConstraint("attempts >= 0 AND max_attempts >= 1", name="ck_jobs_attempts"),
        Index("ix_jobs_status_created_at", "status", "created_at"),
        Index("ix_jobs_language_created_at", "language_id", "created_at", "id"),
        Index("ix_jobs_created_at_id", "created_at", "id"),
        Index("ix_jobs_status_lease", "status", "lease_expires_at"),
    )


class JobModelRow(Base):
    """The portable model(s) of a finished job (``GET /v1/jobs/{id}/model``), migration 0006.

    A separate table, so reading or listing jobs never loads the bytes; stored in the database (not
    a worker's folder) because a job may run on another machine (Ray) than the one serving it, and
    the row goes with its job (``ON DELETE CASCADE``). Its size is bounded by
    ``LANGCLASS_JOB_MODEL_MAX_BYTES``.

    Columns:
        job_id: the job (primary key, foreign key to ``jobs.id``).
        data: the zip: ``config.json``, ``model.safetensors`` (one folder per encoding for a train
            job) and ``langclass_runner.py``.
        size: ``len(data)`` in bytes.
        summary: :func:`langclass.models.portable.export.summary_of` of each model (``{"models": {folder: …}}``).
        created_at: when it was stored (UTC).
    """

    __tablename__ = "job_models"

    job_id: Mapped[str] = mapped_column(String(36), ForeignKey("jobs.id", ondelete="CASCADE", name="fk_job_models_job_id"),
                                        primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class PageSessionRow(Base):
    """A browser signed in at ``/login`` (see :mod:`langclass.app.web.security`).

    Columns:
        id: SHA-256 hex of the session's random nonce (the cookie holds the nonce, signed; a read of
            this table does not give a usable cookie).
        key_id: :func:`~langclass.app.web.security.key_id` of the key it signed in with.
        created_at / expires_at: UTC.
    """

    __tablename__ = "page_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_id: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)

    __table_args__ = (Index("ix_page_sessions_expires_at", "expires_at"),)


class CensusRunRow(Base):
    """A stored census run (:func:`langclass.core.census.run.census`).

    Columns:
        id: UUID4 string.
        max_states / alphabet_size: N and K.
        class_keys: the classes in profile order (a profile's i-th character answers class i).
        counts: :meth:`~langclass.core.census.run.Census.to_dict` (per class, differences, intersections, …).
        by_states / published: ``{n: languages}`` counted / from the literature; ``matches_published``
            compares (NULL when nothing is published).
        total: languages in the run.
        seconds / executor / jobs: wall time of the storing invocation, ``local`` | ``ray``, workers.
        code_version: the code that counted.
        data_path / data_sha256 / data_bytes: the per-language ``.npz`` file, its SHA-256 hex and size.
        created_at: UTC.
    """

    __tablename__ = "census_runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    max_states: Mapped[int] = mapped_column(Integer, nullable=False)
    alphabet_size: Mapped[int] = mapped_column(Integer, nullable=False)
    class_keys: Mapped[list[Any]] = mapped_column(JSON, nullable=False)
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    by_states: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    published: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    matches_published: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    total: Mapped[int] = mapped_column(BigInteger, nullable=False)
    seconds: Mapped[float] = mapped_column(Float, nullable=False)
    executor: Mapped[str] = mapped_column(String(16), nullable=False)
    jobs: Mapped[int] = mapped_column(Integer, nullable=False)
    code_version: Mapped[str] = mapped_column(String(100), nullable=False)
    data_path: Mapped[str] = mapped_column(String(1000), nullable=False)
    data_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    data_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    __table_args__ = (Index("ix_census_runs_created_at_id", "created_at", "id"),)


class CensusProfileRow(Base):
    """Languages of one run with one membership profile and one state number."""

    __tablename__ = "census_profiles"

    run_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("census_runs.id", ondelete="CASCADE", name="fk_census_profiles_run_id"), primary_key=True
    )
    profile: Mapped[str] = mapped_column(String(200), primary_key=True)
    states: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, nullable=False)
