"""Shared fixtures: databases (SQLite temp files and the real PostgreSQL) and API clients.

PostgreSQL comes from ``LANGCLASS_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``). Every test database on it is a fresh schema
(``search_path`` set through the URL), dropped afterwards, so concurrent runs never clash. When the
server is unreachable the PostgreSQL tests are skipped locally and *fail* under CI (``CI`` set).

Fixtures other test modules can use:

* ``sqlite_url`` / ``postgres_url``: an empty database (no tables) per test;
* ``database_url``: parametrized over both backends, empty;
* ``migrated_url``: parametrized over both backends, migrated to head, emptied of rows before each test;
* ``make_client(url, **settings)``: a started ``TestClient`` for ``create_app(Settings(...))``;
* ``api``: ``make_client()`` on ``migrated_url``.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

# Tests configure the service explicitly; a developer's LANGCLASS_* variables must not leak in.
for _name in list(os.environ):
    if _name.startswith("LANGCLASS_") and not _name.startswith("LANGCLASS_TEST_"):
        del os.environ[_name]

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)

# Property tests draw the same examples in every run (``derandomize``), so a run's outcome depends on
# the code alone: a case found by exploration becomes a fixed regression test, never a failure one
# run in ten. ``LANGCLASS_TEST_HYPOTHESIS=explore`` draws fresh random examples (run it to hunt).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
_hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
_hypothesis_settings.load_profile(os.environ.get("LANGCLASS_TEST_HYPOTHESIS", "ci"))

POSTGRES_URL = os.environ.get("LANGCLASS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _postgres_problem() -> str | None:
    from sqlalchemy import create_engine, text

    try:
        engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:  # unreachable, auth, missing database...
        return f"PostgreSQL at {POSTGRES_URL} unreachable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The base PostgreSQL URL, after checking the server answers."""
    problem = _postgres_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    return POSTGRES_URL


class PostgresSchemas:
    """Creates throw-away schemas on the test server and drops them at the end."""

    def __init__(self, base_url: str) -> None:
        from sqlalchemy import create_engine

        self.base_url = base_url
        self.engine = create_engine(base_url, isolation_level="AUTOCOMMIT")
        self.created: list[str] = []

    def new(self) -> str:
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        name = f"lc_test_{uuid.uuid4().hex[:12]}"
        with self.engine.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{name}"'))
        self.created.append(name)
        url = make_url(self.base_url).update_query_dict({"options": f"-csearch_path={name}"})
        return url.render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        from sqlalchemy import text

        from langclass.app.store import db as dbmod

        # close pooled connections to this schema first (the app caches engines per URL)
        cached = dbmod._databases.pop(url, None)
        if cached is not None:
            cached.dispose()
        name = next((n for n in self.created if n in url), None)
        if name is None:
            return
        with self.engine.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
        self.created.remove(name)

    def close(self) -> None:
        for name in list(self.created):
            from sqlalchemy import text

            with self.engine.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
        self.created.clear()
        self.engine.dispose()


@pytest.fixture(scope="session")
def pg_schemas(postgres_server: str) -> Iterator[PostgresSchemas]:
    schemas = PostgresSchemas(postgres_server)
    yield schemas
    schemas.close()


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    """An empty SQLite database file (no tables)."""
    return f"sqlite:///{tmp_path / 'langclass-test.db'}"


@pytest.fixture
def postgres_url(pg_schemas: PostgresSchemas) -> Iterator[str]:
    """An empty PostgreSQL schema (no tables), dropped after the test."""
    url = pg_schemas.new()
    yield url
    pg_schemas.drop(url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """An empty database on each backend."""
    return request.getfixturevalue(f"{request.param}_url")


def _empty_all_tables(url: str) -> None:
    """Delete every row (children first), keeping the schema and its Alembic revision."""
    from sqlalchemy import MetaData

    from langclass.app.store.db import get_database

    engine = get_database(make_settings(url)).engine
    meta = MetaData()
    meta.reflect(engine)
    with engine.begin() as conn:
        for table in reversed(meta.sorted_tables):
            if table.name != "alembic_version":
                conn.execute(table.delete())


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> str:
    from langclass.app.store.db import upgrade

    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'langclass-api.db'}"
    upgrade(url)
    return url


@pytest.fixture(scope="session")
def _migrated_postgres(pg_schemas: PostgresSchemas) -> str:
    from langclass.app.store.db import upgrade

    url = pg_schemas.new()
    upgrade(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def migrated_url(request: pytest.FixtureRequest) -> str:
    """A database at the newest migration with no rows (emptied before each test), on each backend."""
    url = request.getfixturevalue(f"_migrated_{request.param}")
    _empty_all_tables(url)
    return url


def make_settings(url: str, **overrides: Any) -> Any:
    """``Settings`` for tests: the given database, no keys, generous limits unless overridden."""
    from langclass.app.settings import Settings

    values: dict[str, Any] = {"database_url": url, "time_limit_s": 60.0, "classify_concurrency": 2}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def make_client() -> Iterator[Callable[..., Any]]:
    """``make_client(url, **settings)`` → a started ``TestClient`` on ``create_app(Settings(...))``
    (closed after the test; server errors come back as 500 responses, not exceptions)."""
    from fastapi.testclient import TestClient

    from langclass.app.main import create_app

    with ExitStack() as stack:

        def factory(url: str, **overrides: Any) -> TestClient:
            client = TestClient(create_app(make_settings(url, **overrides)), raise_server_exceptions=False)
            return stack.enter_context(client)

        yield factory


@pytest.fixture
def api(make_client: Callable[..., Any], migrated_url: str) -> Any:
    """A client of a fresh app on an empty migrated database (each backend)."""
    return make_client(migrated_url)


@pytest.fixture
def one_torch_thread():
    """One torch intra-op thread for the test (tiny models train fastest so; see configure_threads),
    the previous count restored after it. torch is imported only by the tests that ask for this."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
