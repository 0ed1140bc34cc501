"""The languages repository: the only module that queries the ``languages`` tables.

Deleting a language with ``cascade`` deletes its jobs through :mod:`langclass.app.store.jobs` (the only
writer of the jobs table); cursors come from :mod:`langclass.app.store.pagination`.

Functions take an open :class:`~sqlalchemy.orm.Session` (the caller owns the transaction) and
return ORM rows or plain dicts; routes turn them into resources.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from . import jobs
from langclass.app.errors import ConflictError
from .orm import LanguageClassRow, LanguageRow, utcnow
from .pagination import decode_cursor, encode_cursor

__all__ = [
    "class_memberships",
    "get_language",
    "insert_language",
    "delete_language",
    "update_language_labels",
    "list_languages",
    "encode_cursor",
    "decode_cursor",
    "language_resource",
    "language_summary",
]


def class_memberships(analysis: Mapping[str, Any]) -> dict[str, bool | None]:
    """``{class_key: member}`` from an analysis record (``member`` None when undecided)."""
    out: dict[str, bool | None] = {}
    for key, info in (analysis.get("classes") or {}).items():
        member = info.get("member") if isinstance(info, Mapping) else None
        out[str(key)] = member if isinstance(member, bool) else None
    return out


def get_language(session: Session, language_id: str) -> LanguageRow | None:
    """The stored language with this fingerprint, or None."""
    return session.get(LanguageRow, language_id)


def insert_language(
    session: Session,
    *,
    fingerprint: str,
    name: str | None,
    tags: list[str],
    alphabet: list[str],
    source: dict[str, Any],
    dfa: dict[str, Any],
    num_states: int,
    analysis: dict[str, Any],
    code_version: str,
) -> tuple[LanguageRow, bool]:
    """Store a classified language unless its fingerprint is already there.

    Returns:
        ``(row, created)``: the new row and True, or the existing row and False (also when a
        concurrent request inserted the same language first).
    """
    existing = session.get(LanguageRow, fingerprint)
    if existing is not None:
        return existing, False
    row = LanguageRow(
        id=fingerprint,
        name=name,
        tags=list(tags),
        alphabet=list(alphabet),
        alphabet_size=len(alphabet),
        source=source,
        dfa=dfa,
        num_states=num_states,
        analysis=analysis,
        code_version=code_version,
        created_at=utcnow(),
    )
    row.classes = [LanguageClassRow(class_key=k, member=m) for k, m in sorted(class_memberships(analysis).items())]
    savepoint = session.begin_nested()
    try:
        session.add(row)
        session.flush()
    except IntegrityError:
        savepoint.rollback()
        session.expire_all()
        existing = session.get(LanguageRow, fingerprint)
        if existing is None:  # pragma: no cover - an integrity error of another kind
            raise
        return existing, False
    savepoint.commit()
    return row, True


_UNSET: Any = object()


def update_language_labels(
    session: Session, language_id: str, *, name: str | None = _UNSET, tags: list[str] | None = _UNSET
) -> LanguageRow | None:
    """Replace the labels of a stored language: ``name`` (None removes it) and/or ``tags`` (the whole
    list); an argument left out keeps the stored value. The classification is never touched.

    Returns:
        The updated row, or None when no language has this id.
    """
    row = session.get(LanguageRow, language_id)
    if row is None:
        return None
    if name is not _UNSET:
        row.name = name
    if tags is not _UNSET:
        row.tags = list(tags or [])
    session.flush()
    return row


def _has_tag(session: Session, tag: str) -> Any:
    """A WHERE clause: the JSON ``tags`` list of the row holds ``tag`` exactly (element equality,
    not a substring of the JSON text). SQLite reads the list with ``json_each``, PostgreSQL with
    ``jsonb @>``."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy import cast, type_coerce
        from sqlalchemy.dialects.postgresql import JSONB

        return cast(LanguageRow.tags, JSONB).contains(type_coerce([tag], JSONB))
    elements = func.json_each(LanguageRow.tags).table_valued("value")
    return exists(select(1).select_from(elements).where(elements.c.value == tag))


def delete_language(session: Session, language_id: str, *, cascade: bool = False) -> bool:
    """Delete a language and its class rows; True when it existed.

    A language with jobs (experiments) is kept unless ``cascade``: then its jobs are deleted too
    (a running job's worker finds its row gone and drops the result).

    Raises:
        ConflictError: the language has jobs and ``cascade`` is false (409; nothing is deleted).
    """
    counts = jobs.count_by_status(session, language_id)
    total = sum(counts.values())
    if total and not cascade:
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        raise ConflictError(
            f"language {language_id!r} has {total} job{'s' if total != 1 else ''} ({summary}); "
            "delete with ?cascade=true to delete its jobs too",
            field="cascade", jobs=total,
        )
    if total:
        jobs.delete_of_language(session, language_id)
    session.execute(delete(LanguageClassRow).where(LanguageClassRow.language_id == language_id))
    result = session.execute(delete(LanguageRow).where(LanguageRow.id == language_id))
    return bool(result.rowcount)


def list_languages(
    session: Session,
    *,
    limit: int,
    cursor: str | None = None,
    class_key: str | None = None,
    member: bool | None = None,
    alphabet_size: int | None = None,
    num_states: int | None = None,
    min_states: int | None = None,
    max_states: int | None = None,
    name: str | None = None,
    tag: str | None = None,
) -> tuple[list[LanguageRow], str | None]:
    """A page of languages ordered by (created_at, id), with filters.

    ``class_key`` with ``member`` keeps languages whose membership in that class is exactly
    ``member``; ``class_key`` alone keeps languages that are members (``member=true``). ``name`` is a
    case-insensitive substring match; ``tag`` keeps languages carrying exactly that tag.

    Returns:
        ``(rows, next_cursor)`` — ``next_cursor`` is None on the last page.
    """
    stmt = select(LanguageRow)
    if class_key is not None:
        want = True if member is None else member
        stmt = stmt.where(
            exists().where(
                and_(
                    LanguageClassRow.language_id == LanguageRow.id,
                    LanguageClassRow.class_key == class_key,
                    LanguageClassRow.member == want,
                )
            )
        )
    if alphabet_size is not None:
        stmt = stmt.where(LanguageRow.alphabet_size == alphabet_size)
    if num_states is not None:
        stmt = stmt.where(LanguageRow.num_states == num_states)
    if min_states is not None:
        stmt = stmt.where(LanguageRow.num_states >= min_states)
    if max_states is not None:
        stmt = stmt.where(LanguageRow.num_states <= max_states)
    if name:
        stmt = stmt.where(func.lower(LanguageRow.name).contains(name.lower(), autoescape=True))
    if tag is not None:
        stmt = stmt.where(_has_tag(session, tag))
    if cursor is not None:
        when, lid = decode_cursor(cursor)
        stmt = stmt.where(or_(LanguageRow.created_at > when, and_(LanguageRow.created_at == when, LanguageRow.id > lid)))
    stmt = stmt.order_by(LanguageRow.created_at, LanguageRow.id).limit(limit + 1)
    rows = list(session.scalars(stmt))
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1]) if more and rows else None
    return rows, next_cursor


def language_resource(row: LanguageRow) -> dict[str, Any]:
    """The Language resource of a stored row (analysis fields + identity + labels)."""
    out: dict[str, Any] = {
        "id": row.id,
        "name": row.name,
        "tags": list(row.tags or []),
        "alphabet": list(row.alphabet),
        "source": row.source,
        "dfa": row.dfa,
    }
    out.update(row.analysis)
    out["num_states"] = row.num_states
    out["code_version"] = row.code_version
    out["created_at"] = row.created_at
    return out


def source_summary(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """The input as given, for listings: a regex or formula (with its alphabet) whole; a DFA input as
    ``{"kind": "dfa"}`` only (its JSON can be large; ``GET /v1/languages/{id}`` has it)."""
    if not isinstance(source, Mapping):
        return {"kind": "unknown"}
    return {k: v for k, v in source.items() if k != "dfa"}


def language_summary(row: LanguageRow) -> dict[str, Any]:
    """The short listing form of a stored row."""
    monoid = row.analysis.get("monoid") or {}
    size = monoid.get("size") if isinstance(monoid, Mapping) else None
    return {
        "id": row.id,
        "name": row.name,
        "tags": list(row.tags or []),
        "alphabet": list(row.alphabet),
        "source": source_summary(row.source),
        "num_states": row.num_states,
        "monoid_size": size if isinstance(size, int) else None,
        "classes": class_memberships(row.analysis),
        "created_at": row.created_at,
    }
