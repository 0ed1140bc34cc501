"""Database engine and sessions (SQLAlchemy 2, synchronous).

One :class:`Database` per URL: an engine tuned for the backend (SQLite: foreign keys on, WAL,
a busy timeout, usable from worker threads; PostgreSQL: pre-ping) and a session factory.

Usage::

    db = Database("sqlite:///./langclass.db")
    with db.session_scope() as session:   # commits on success, rolls back on error
        session.add(row)

    with session_scope() as session:      # the process-wide database of get_settings()
        ...

Migrations (Alembic, under ``migrations/``) are the only way the schema changes;
:func:`upgrade`, :func:`downgrade` and :func:`schema_status` drive them from Python.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from langclass.app.settings import Settings, get_settings

__all__ = [
    "Database",
    "make_engine",
    "get_database",
    "session_scope",
    "alembic_config",
    "upgrade",
    "downgrade",
    "schema_status",
]


CONNECT_TIMEOUT_S = 5.0
"""Default bound on opening a database connection (seconds; ``LANGCLASS_DB_CONNECT_TIMEOUT_S``)."""
STATEMENT_TIMEOUT_S = 15.0
"""Default bound on one statement (seconds; ``LANGCLASS_DB_STATEMENT_TIMEOUT_S``): PostgreSQL's
``statement_timeout`` and, for a server that stops answering altogether, ``tcp_user_timeout``;
SQLite's busy timeout."""


def make_engine(url: str, *, connect_timeout_s: float = CONNECT_TIMEOUT_S, statement_timeout_s: float = STATEMENT_TIMEOUT_S,
                **kwargs: Any) -> Engine:
    """A SQLAlchemy engine for ``url`` with backend-specific settings.

    SQLite: ``check_same_thread=False`` (sessions are used from worker threads, one at a time),
    ``PRAGMA foreign_keys=ON`` (cascading deletes), ``journal_mode=WAL`` for file databases (readers
    do not block the writer) and a busy timeout of ``statement_timeout_s``. PostgreSQL: a ping on
    each checkout and a client-side bound on every round trip (:mod:`.stall_guard`: a stopped server
    whose kernel still acknowledges fires no server or TCP timeout); ``connect_timeout`` (``connect_timeout_s``, also the wait for a pooled
    connection), ``statement_timeout`` and ``tcp_user_timeout`` (``statement_timeout_s``: a server
    that stops answering — a network partition, a paused server — fails the statement instead of
    hanging it for the whole outage), and TCP keepalives. A request whose query fails so answers
    503 ``not-ready`` (the problem handlers map the driver's error).
    """
    if url.startswith("sqlite"):
        connect_args = {"check_same_thread": False, "timeout": statement_timeout_s}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        in_memory = ":memory:" in url or url.rstrip("/") in ("sqlite:", "sqlite+pysqlite:")

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            if not in_memory:
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    if url.startswith("postgresql"):
        from sqlalchemy.engine import make_url

        ms = max(1, int(statement_timeout_s * 1000))
        given = make_url(url).query.get("options")  # e.g. a search_path: kept, the timeout added
        given = " ".join(given) if isinstance(given, tuple) else (given or "")
        connect_args = {
            "connect_timeout": max(1, int(round(connect_timeout_s))),
            "options": f"{given} -c statement_timeout={ms}".strip(),
            "tcp_user_timeout": ms,
            "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
            **kwargs.pop("connect_args", {}),
        }
        kwargs.setdefault("pool_timeout", connect_timeout_s)
        from .stall_guard import guard_stalls

        engine = create_engine(url, connect_args=connect_args, **kwargs)
        guard_stalls(engine, statement_timeout_s)  # a server that stops answering: 503, not a hang (pings on checkout)
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


class Database:
    """An engine plus a session factory for one database URL.

    Attributes:
        url: the SQLAlchemy URL.
        engine: the :class:`~sqlalchemy.engine.Engine`.
        sessionmaker: factory of :class:`~sqlalchemy.orm.Session` (``expire_on_commit=False`` so
            returned rows stay readable after the transaction).
    """

    def __init__(self, url: str, *, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 statement_timeout_s: float = STATEMENT_TIMEOUT_S) -> None:
        self.url = url
        self.engine = make_engine(url, connect_timeout_s=connect_timeout_s, statement_timeout_s=statement_timeout_s)
        self.sessionmaker = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session_scope(self) -> Iterator[Session]:
        """A session in one transaction: commit on success, roll back and re-raise on error."""
        session = self.sessionmaker()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def ping(self) -> None:
        """Run ``SELECT 1``; raises the driver's error when the database is unreachable."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


_databases: dict[str, Database] = {}
_lock = threading.Lock()


def get_database(settings: Settings | None = None) -> Database:
    """The process-wide :class:`Database` for ``settings.database_url`` (one per URL)."""
    settings = settings or get_settings()
    url = settings.database_url
    with _lock:
        db = _databases.get(url)
        if db is None:
            db = _databases[url] = Database(url, connect_timeout_s=settings.db_connect_timeout_s,
                                            statement_timeout_s=settings.db_statement_timeout_s)
        return db


@contextmanager
def session_scope(settings: Settings | None = None) -> Iterator[Session]:
    """Shortcut for ``get_database(settings).session_scope()``."""
    with get_database(settings).session_scope() as session:
        yield session


# --- migrations ----------------------------------------------------------------------------

_REPO_ROOT = Path(__file__).resolve().parents[3]


def _migrations_dir() -> Path:
    """The Alembic script directory: ``migrations/`` next to the package (source checkout or image)."""
    for candidate in (_REPO_ROOT / "migrations", Path.cwd() / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise RuntimeError("cannot find the migrations/ directory (expected next to the langclass package)")


def alembic_config(url: str) -> Any:
    """An :class:`alembic.config.Config` for ``url`` that does not depend on the working directory."""
    from alembic.config import Config

    ini = _REPO_ROOT / "alembic.ini"
    cfg = Config(str(ini)) if ini.is_file() else Config()
    cfg.set_main_option("script_location", str(_migrations_dir()))
    # '%' must be doubled for ConfigParser interpolation (URL-encoded passwords).
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    return cfg


def check_revision(url: str, revision: str) -> None:
    """Refuse a revision the migrations do not know.

    Raises:
        InputError: ``revision`` names no migration (``field`` = ``"revision"``, the known ones listed).
    """
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    script = ScriptDirectory.from_config(alembic_config(url))
    try:
        script.get_revisions(revision)
    except CommandError as err:
        from langclass.core.base.errors import InputError

        known = ["base", *sorted(r.revision for r in script.walk_revisions()), "head"]
        raise InputError(f"unknown revision {revision!r} ({err}); known: {', '.join(known)}, or relative as -1",
                         field="revision") from None


def _alembic(step: Any, url: str, revision: str) -> None:
    """Run an Alembic command; its refusal of the revision (CommandError) as an InputError."""
    from alembic.util import CommandError

    try:
        step(alembic_config(url), revision)
    except CommandError as err:
        from langclass.core.base.errors import InputError

        raise InputError(f"cannot migrate to revision {revision!r}: {err}", field="revision") from None


def upgrade(url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (default: the newest) on ``url``.

    Raises:
        InputError: a revision Alembic refuses (unknown, or not reachable upwards).
    """
    from alembic import command

    if not revision.startswith("+"):
        check_revision(url, revision)
    _alembic(command.upgrade, url, revision)


def stored_rows(url: str) -> dict[str, int]:
    """Rows in each of the service's tables that exist at ``url`` (``alembic_version`` left out):
    what a downgrade that drops tables would delete."""
    from sqlalchemy import MetaData, create_engine, func, select

    engine = create_engine(url)
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                    for t in meta.sorted_tables if t.name != "alembic_version"}
    finally:
        engine.dispose()


def downgrade(url: str, revision: str, *, force: bool = False) -> None:
    """Revert migrations down to ``revision`` (``"base"`` removes every table).

    Raises:
        InputError: an unknown revision (refused first, whatever ``force``); the database holds
            rows (a downgrade drops tables and their data) and ``force`` is False; ``extra["rows"]``
            counts them per table.
    """
    from alembic import command

    check_revision(url, revision)
    if not force:
        rows = {k: v for k, v in stored_rows(url).items() if v}
        if rows:
            from langclass.core.base.errors import InputError

            held = ", ".join(f"{n} row(s) in {t}" for t, n in rows.items())
            raise InputError(f"the database holds {held}; a downgrade drops tables and deletes their rows — "
                             "back it up and pass --force to go ahead", field="revision", rows=rows)
    _alembic(command.downgrade, url, revision)


def schema_status(engine: Engine, url: str) -> dict[str, Any]:
    """The database's migration state: ``{"current": [...], "head": [...], "at_head": bool}``."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(url))
    heads = sorted(script.get_heads())
    with engine.connect() as conn:
        current = sorted(MigrationContext.configure(conn).get_current_heads())
    return {"current": current, "head": heads, "at_head": current == heads}
