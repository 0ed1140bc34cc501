"""Repository layer on both backends: filters and cursor pagination on synthetic records.

These tests exercise the storage queries only (membership values are set by hand to cover every
combination); the real classifications go through the API in ``test_api.py``.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest

from langclass.app.store import repository as repo
from langclass.app.store.db import Database
from langclass.app.web.problems import InvalidCursorError


def _record(i: int, memberships: dict[str, bool | None]) -> dict:
    return {
        "num_states": 1 + i % 4,
        "monoid": {"size": 2 + i},
        "classes": {k: {"key": k, "name": k, "member": m} for k, m in memberships.items()},
        "encodings": {},
    }


@pytest.fixture
def db(migrated_url: str):
    d = Database(migrated_url)
    yield d
    d.dispose()


def _store(db: Database, n: int, same_time: bool = False) -> list[str]:
    ids = []
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    cycle = itertools.cycle([True, False, None])
    with db.session_scope() as s:
        for i in range(n):
            fp = f"{i:02d}".ljust(64, "a" if i % 2 else "b")
            member = next(cycle)
            row, created = repo.insert_language(
                s,
                fingerprint=fp,
                name=f"Lang_{i}%" if i == 3 else f"lang {i}",
                tags=[],
                alphabet=["a", "b"] if i % 2 else ["a"],
                source={"kind": "regex", "regex": str(i)},
                dfa={},
                num_states=1 + i % 4,
                analysis=_record(i, {"ltl_p": member, "star_free": i % 2 == 0}),
                code_version="test",
            )
            assert created
            if same_time:
                row.created_at = base
            else:
                row.created_at = base + timedelta(microseconds=7 * (n - i))  # insertion order ≠ time order
            ids.append(fp)
    return ids


def _all_pages(db: Database, limit: int, **filters) -> list[str]:
    out: list[str] = []
    cursor = None
    for _ in range(100):
        with db.session_scope() as s:
            rows, cursor = repo.list_languages(s, limit=limit, cursor=cursor, **filters)
            out.extend(r.id for r in rows)
            assert len(rows) <= limit
        if cursor is None:
            return out
    raise AssertionError("pagination did not terminate")


@pytest.mark.parametrize("same_time", [False, True])
def test_pagination_visits_every_row_once_in_stable_order(db: Database, same_time: bool) -> None:
    ids = _store(db, 11, same_time=same_time)
    with db.session_scope() as s:
        full, cursor = repo.list_languages(s, limit=100)
        assert cursor is None
        order = [r.id for r in full]
        keys = [(r.created_at, r.id) for r in full]
    assert sorted(order) == sorted(ids)
    assert keys == sorted(keys)
    for limit in (1, 3, 5, 11, 12):
        assert _all_pages(db, limit) == order


def test_filters(db: Database) -> None:
    _store(db, 9)
    with db.session_scope() as s:
        rows, _ = repo.list_languages(s, limit=100)
        memberships = {r.id: repo.class_memberships(r.analysis) for r in rows}
        sizes = {r.id: r.alphabet_size for r in rows}
        states = {r.id: r.num_states for r in rows}
    for want in (True, False):
        expect = sorted(i for i, m in memberships.items() if m["ltl_p"] is want)
        assert sorted(_all_pages(db, 2, class_key="ltl_p", member=want)) == expect
    # class alone means members; undecided (None) is in neither list
    assert sorted(_all_pages(db, 4, class_key="ltl_p")) == sorted(i for i, m in memberships.items() if m["ltl_p"] is True)
    assert _all_pages(db, 4, class_key="no_such_class") == []
    assert sorted(_all_pages(db, 4, alphabet_size=2)) == sorted(i for i, n in sizes.items() if n == 2)
    assert sorted(_all_pages(db, 4, num_states=2)) == sorted(i for i, n in states.items() if n == 2)
    assert sorted(_all_pages(db, 4, min_states=2, max_states=3)) == sorted(i for i, n in states.items() if 2 <= n <= 3)
    combined = _all_pages(db, 3, class_key="star_free", member=True, alphabet_size=1)
    assert sorted(combined) == sorted(i for i in memberships if memberships[i]["star_free"] and sizes[i] == 1)
    assert combined  # the combination is not vacuous


def test_name_search_is_case_insensitive_and_escapes_wildcards(db: Database) -> None:
    ids = _store(db, 6)
    assert _all_pages(db, 10, name="LANG_3%") == [ids[3]]
    assert _all_pages(db, 10, name="%") == [ids[3]]  # '%' is a literal, not a wildcard
    assert len(_all_pages(db, 10, name="lang")) == 6


def test_insert_is_idempotent_and_delete_cascades(db: Database) -> None:
    [fp] = _store(db, 1)
    with db.session_scope() as s:
        row, created = repo.insert_language(
            s, fingerprint=fp, name="other", tags=["x"], alphabet=["a"], source={}, dfa={}, num_states=1,
            analysis=_record(0, {"ltl_p": False}), code_version="test",
        )
        assert not created and row.name == "lang 0"
    with db.session_scope() as s:
        assert repo.delete_language(s, fp)
        assert not repo.delete_language(s, fp)
    assert _all_pages(db, 5, class_key="star_free") == []


def test_insert_race_falls_back_to_the_stored_row(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another request stored the language between our existence check and our INSERT: the
    unique key rejects ours and the stored row is returned (no error, no second row)."""
    [fp] = _store(db, 1)
    with db.session_scope() as s:
        real_get = s.get
        calls = {"n": 0}

        def stale_get(cls, key, **kw):  # the first check misses the concurrent insert
            calls["n"] += 1
            return None if calls["n"] == 1 else real_get(cls, key, **kw)

        monkeypatch.setattr(s, "get", stale_get)
        row, created = repo.insert_language(
            s, fingerprint=fp, name="late", tags=[], alphabet=["a"], source={}, dfa={}, num_states=1,
            analysis=_record(0, {"ltl_p": True}), code_version="test",
        )
        assert not created and row.name == "lang 0" and calls["n"] == 2
    assert _all_pages(db, 10) == [fp]


@pytest.mark.parametrize("cursor", ["", "!!!", "bm90IGpzb24", "WzEsMl0", "WyJub3QgYSBkYXRlIiwiaWQiXQ"])
def test_foreign_cursors_are_rejected(cursor: str) -> None:
    with pytest.raises(InvalidCursorError):
        repo.decode_cursor(cursor)
