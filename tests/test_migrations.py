"""Migrations on SQLite and PostgreSQL: upgrade → downgrade → upgrade, and the ORM matches them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import create_engine, inspect, select
from sqlalchemy import delete as sa_delete

from langclass.app.store.db import Database, downgrade, schema_status, upgrade
from langclass.app.store.orm import LanguageClassRow, LanguageRow

MY_TABLES = {"languages", "language_classes", "page_sessions", "census_runs", "census_profiles"}


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(database_url: str) -> None:
    assert not (_tables(database_url) & MY_TABLES)
    upgrade(database_url)
    assert MY_TABLES <= _tables(database_url)
    db = Database(database_url)
    try:
        status = schema_status(db.engine, database_url)
        assert status["at_head"] and status["current"] == status["head"]
    finally:
        db.dispose()

    downgrade(database_url, "base")
    assert not (_tables(database_url) & MY_TABLES)
    db = Database(database_url)
    try:
        assert schema_status(db.engine, database_url)["current"] == []
    finally:
        db.dispose()

    upgrade(database_url)
    assert MY_TABLES <= _tables(database_url)


def test_orm_matches_migrations(database_url: str) -> None:
    """Alembic's autogenerate comparison finds no difference for the tables this service owns."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from langclass.app.store.orm import Base

    upgrade(database_url)
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()

    def touches_mine(diff: object) -> bool:
        text = repr(diff)
        return any(f"'{t}'" in text or f"Table('{t}'" in text for t in MY_TABLES)

    mine = [d for d in diffs if touches_mine(d)]
    assert mine == [], mine


def test_rows_round_trip_and_cascade(database_url: str) -> None:
    """Timestamps come back timezone-aware UTC; deleting a language deletes its class rows."""
    upgrade(database_url)
    db = Database(database_url)
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    try:
        with db.session_scope() as s:
            row = LanguageRow(
                id="f" * 64, name="x", tags=["t"], alphabet=["a"], alphabet_size=1, source={"kind": "regex"},
                dfa={"alphabet": ["a"]}, num_states=1, analysis={"classes": {}}, code_version="test", created_at=when,
            )
            row.classes = [LanguageClassRow(class_key="ltl_p", member=True), LanguageClassRow(class_key="fo_mod", member=None)]
            s.add(row)
        with db.session_scope() as s:
            got = s.get(LanguageRow, "f" * 64)
            assert got is not None and got.created_at == when and got.created_at.tzinfo is not None
            assert {(c.class_key, c.member) for c in got.classes} == {("ltl_p", True), ("fo_mod", None)}
        with db.session_scope() as s:  # a plain DELETE: the foreign key's ON DELETE CASCADE does the rest
            s.execute(sa_delete(LanguageRow).where(LanguageRow.id == "f" * 64))
        with db.session_scope() as s:
            assert s.scalars(select(LanguageClassRow)).all() == []
    finally:
        db.dispose()


@pytest.mark.parametrize("revision", ["0001"])
def test_named_revision_exists(sqlite_url: str, revision: str) -> None:
    """The first revision id is the stable string '0001' (later migrations name it as down_revision)."""
    upgrade(sqlite_url, revision)
    db = Database(sqlite_url)
    try:
        assert schema_status(db.engine, sqlite_url)["current"] == [revision]
    finally:
        db.dispose()


def _jobs_language_column(url: str) -> tuple[bool, list[dict]]:
    engine = create_engine(url)
    try:
        insp = inspect(engine)
        col = next(c for c in insp.get_columns("jobs") if c["name"] == "language_id")
        return bool(col["nullable"]), insp.get_foreign_keys("jobs")
    finally:
        engine.dispose()


def test_0005_language_id_nullable_round_trip(database_url: str) -> None:
    """0005 makes jobs.language_id nullable (a sweep job has no language) and keeps the foreign key
    with its name and ON DELETE CASCADE; its downgrade deletes the jobs without a language and makes
    the column NOT NULL again; upgrading once more works."""
    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError

    upgrade(database_url, "0004")
    assert _jobs_language_column(database_url)[0] is False
    engine = create_engine(database_url)
    lang = ("INSERT INTO languages (id, name, tags, alphabet, alphabet_size, source, dfa, num_states, analysis, code_version, created_at) "
            "VALUES (:id, NULL, '[]', '[\"a\"]', 1, '{}', '{}', 1, '{}', 't', :at)")
    job = ("INSERT INTO jobs (id, language_id, kind, status, spec, attempts, max_attempts, cancel_requested, created_at) "
           "VALUES (:id, :lid, :kind, 'queued', '{}', 0, 1, false, :at)")
    at = datetime(2026, 12, 2, tzinfo=timezone.utc)
    try:
        with engine.begin() as conn:
            conn.execute(text(lang), {"id": "f" * 64, "at": at})
            conn.execute(text(job), {"id": "j-train", "lid": "f" * 64, "kind": "train", "at": at})
        with pytest.raises(IntegrityError), engine.begin() as conn:  # NOT NULL before 0005
            conn.execute(text(job), {"id": "j-sweep", "lid": None, "kind": "sweep", "at": at})
    finally:
        engine.dispose()

    upgrade(database_url, "0005")
    nullable, fks = _jobs_language_column(database_url)
    assert nullable is True
    assert [(fk["name"], fk["constrained_columns"], fk["referred_table"], (fk.get("options") or {}).get("ondelete"))
            for fk in fks] == [("fk_jobs_language_id", ["language_id"], "languages", "CASCADE")]
    db = Database(database_url)  # foreign keys enforced on SQLite too
    engine = db.engine
    try:
        with engine.begin() as conn:
            conn.execute(text(job), {"id": "j-sweep", "lid": None, "kind": "sweep", "at": at})
            assert conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 2
        with pytest.raises(IntegrityError), engine.begin() as conn:  # the foreign key still holds
            conn.execute(text(job), {"id": "j-bad", "lid": "0" * 64, "kind": "train", "at": at})
    finally:
        db.dispose()

    downgrade(database_url, "0004", force=True)
    nullable, fks = _jobs_language_column(database_url)
    assert nullable is False and [fk["name"] for fk in fks] == ["fk_jobs_language_id"]
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            assert [r[0] for r in conn.execute(text("SELECT id FROM jobs"))] == ["j-train"]
    finally:
        engine.dispose()
    upgrade(database_url)
    assert _jobs_language_column(database_url)[0] is True
