"""ORM tables (SQLAlchemy 2 declarative). The schema itself changes only through ``migrations/``.

``languages``         one row per language, keyed by the fingerprint of its canonical minimal
                      complete DFA (SHA-256 hex), with the input it came from, the canonical DFA
                      (export JSON), the full analysis record and the code version that made it.
``language_classes``  one row per (language, class key) with the membership (true / false / NULL
                      when undecided, e.g. monoid over its size cap), so ``?class=K&member=true``
                      is an indexed query on SQLite and PostgreSQL alike.

Other tables (jobs) declare themselves on the same :class:`Base` in their own modules.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, TypeDecorator
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["Base", "LanguageRow", "LanguageClassRow", "UTCDateTime", "utcnow"]


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
