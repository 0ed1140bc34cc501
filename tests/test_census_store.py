"""Stored census runs: per-language records against a brute-force recount, the stored counts, the
REST filters and pagination on SQLite and PostgreSQL, resuming a killed run, and the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langclass.core.automata.automaton import DFA
from langclass.core.census.run import census, classify, minimal_dfas, profile_text, run_shard

from conftest import make_settings


@pytest.fixture(scope="module")
def small() -> Any:
    """Every language with at most 3 states over 2 letters, with per-language records."""
    return census(3, 2, keep_members=True)


def _dfa(table: tuple[int, ...] | np.ndarray, mask: int, n: int, k: int) -> DFA:
    rows = [list(map(int, table[q * k:(q + 1) * k])) for q in range(n)]
    return DFA.from_table([chr(97 + i) for i in range(k)], rows, 0, [q for q in range(n) if mask >> q & 1])


def test_members_equal_a_brute_force_recount(small: Any) -> None:
    """Every (table, mask) of minimal_dfas appears once; each profile agrees with classify on the DFA."""
    order = list(small.profiles)
    for n in range(1, 4):
        tables, masks, pids = small.members[n]
        got = [(tuple(int(v) for v in t), int(m)) for t, m in zip(tables, masks)]
        assert len(got) == len(set(got)) == small.by_states[n]
        assert set(got) == set(minimal_dfas(n, 2))
        for (table, mask), pid in zip(got, pids.tolist()):
            m = classify(_dfa(table, mask, n, 2))
            assert profile_text(tuple(m[key] for key in small.class_keys)) == profile_text(order[pid])
    fps = {_dfa(t, int(m), n, 2).fingerprint() for n in range(1, 4) for t, m in zip(*small.members[n][:2])}
    assert len(fps) == small.total  # distinct languages (the fingerprints of the languages table)


def test_shard_records_add_up_and_survive_a_round_trip() -> None:
    from langclass.core.census.run import shards

    s = shards(3, 2, 16)[5]
    r = run_shard(s)
    assert len(r.member_masks) == r.languages and r.member_tables.shape == (r.languages, 6)
    back = type(r).from_dict(r.to_dict()).with_members(r.members_arrays())
    assert (back.member_profiles == r.member_profiles).all()
    with pytest.raises(ValueError):
        type(r).from_dict({**r.to_dict(), "languages": r.languages + 1}).with_members(r.members_arrays())


def _store(url: str, c: Any, data_dir: Path) -> str:
    from langclass.app.store.census_runs import save_run
    from langclass.app.store.db import get_database

    with get_database(make_settings(url)).session_scope() as session:
        return save_run(session, c, data_dir, code_version="test").id


def test_rest_counts_filters_and_pages(api: Any, migrated_url: str, small: Any, tmp_path: Path) -> None:
    run_id = _store(migrated_url, small, tmp_path)
    listing = api.get("/v1/census").json()
    assert [r["id"] for r in listing["items"]] == [run_id]
    body = api.get(f"/v1/census/{run_id}").json()
    want = small.to_dict()
    for key in ("total", "by_states", "published", "matches_published", "classes", "differences", "intersections",
                "undecided", "profiles", "class_keys"):
        assert body[key] == want[key], key
    assert "members" not in body or body["members"] is None
    from langclass.app.store import census_runs
    from langclass.app.store.db import get_database

    with get_database(make_settings(migrated_url)).session_scope() as session:
        assert census_runs.profile_total(session, run_id) == small.total
        per_n: dict[int, int] = {}
        for _p, n, c in census_runs.profile_counts(session, run_id):
            per_n[n] = per_n.get(n, 0) + c
        assert per_n == small.by_states
    keys = small.class_keys
    for a, b in itertools.permutations(("ltl_p", "ltl_p_mod", "ltl_p_y", "ltl_p_y_mod", "star_free"), 2):
        r = api.get(f"/v1/census/{run_id}", params={"in": a, "not_in": b, "limit": 1})
        assert r.status_code == 200, r.text
        assert r.json()["members"]["total"] == small.count((a,), (b,))
    # the done-when URL pages through every member exactly once
    a, b = "ltl_p_y_mod", "ltl_p_y"
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        page = api.get(f"/v1/census/{run_id}?in={a}&not_in={b}&limit=7&offset={offset}").json()["members"]
        for it in page["items"]:
            assert it["profile"][a] is True and it["profile"][b] is False
            dfa = DFA.from_table(it["dfa"]["alphabet"], it["dfa"]["transitions"], it["dfa"]["initial"], it["dfa"]["accepting"])
            assert dfa.fingerprint() == it["fingerprint"] and dfa.canonical().num_states == it["states"]
            assert it["links"]["language_url"] == f"/census/{run_id}/languages/{it['index']}"
        seen += [it["index"] for it in page["items"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == small.count((a,), (b,)) > 0
    # every language once without a filter, through the separate listing; states and comma lists
    every = []
    offset = 0
    while offset is not None:
        page = api.get(f"/v1/census/{run_id}/languages", params={"limit": 200, "offset": offset}).json()
        every += [it["index"] for it in page["items"]]
        offset = page["next_offset"]
    assert every == list(range(small.total))
    two = api.get(f"/v1/census/{run_id}/languages", params={"in": "ltl_p,star_free", "states": 2}).json()
    ids = {k: i for i, k in enumerate(keys)}
    want2 = sum(c for p, c in small.profiles.items() if p[ids["ltl_p"]] and p[ids["star_free"]])
    assert two["total"] <= want2 and all(it["states"] == 2 for it in two["items"])
    assert api.get(f"/v1/census/{run_id}/languages", params={"in": ["ltl_p", "star_free"]}).json()["total"] == want2


def test_rest_errors(api: Any, migrated_url: str, small: Any, tmp_path: Path) -> None:
    run_id = _store(migrated_url, small, tmp_path)
    r = api.get(f"/v1/census/{run_id}", params={"in": "ltl_q"})
    assert r.status_code == 422 and "ltl_q" in r.text and "ltl_p_y_mod" in r.text
    assert api.get(f"/v1/census/{run_id}", params={"not_in": "nope"}).status_code == 422
    assert api.get("/v1/census/00000000-0000-0000-0000-000000000000").status_code == 404
    assert api.get(f"/v1/census/{run_id}", params={"in": "ltl_p", "limit": 0}).status_code == 422
    assert api.get(f"/v1/census/{run_id}", params={"in": "ltl_p", "offset": -1}).status_code == 422
    assert api.get(f"/v1/census/{run_id}", params={"states": 4}).status_code == 422  # above N = 3
    assert api.get("/v1/census", params={"cursor": "!!"}).status_code == 400
    data = api.get(f"/v1/census/{run_id}").json()["data"]
    assert data["file"] == f"{run_id}.npz" and "path" not in data
    (tmp_path / data["file"]).write_bytes(b"altered")
    from langclass.app.store import census_runs

    census_runs._CACHE.clear()
    r = api.get(f"/v1/census/{run_id}/languages")
    assert r.status_code == 409 and r.json()["code"] == "census-data-changed" and str(tmp_path) not in r.text


def test_iter_members_filters(migrated_url: str, small: Any, tmp_path: Path) -> None:
    from langclass.app.store import census_runs
    from langclass.app.store.db import get_database

    run_id = _store(migrated_url, small, tmp_path)
    with get_database(make_settings(migrated_url)).session_scope() as session:
        row = census_runs.get_run(session, run_id)
    got = list(census_runs.iter_members(row, in_=("ltl_p_mod",), not_in=("ltl_p",), states=3))
    idx = {k: i for i, k in enumerate(small.class_keys)}
    assert all(p["ltl_p_mod"] and p["ltl_p"] is False and d.num_states == 3 for _i, d, p in got)
    n3 = small.members[3][2]
    order = list(small.profiles)
    assert len(got) == sum(1 for pid in n3.tolist()
                           if order[pid][idx["ltl_p_mod"]] is True and order[pid][idx["ltl_p"]] is False)
    with pytest.raises(census_runs.UnknownClassKey):
        list(census_runs.iter_members(row, in_=("x",)))


def test_a_killed_run_resumes_with_every_language(tmp_path: Path) -> None:
    """Cut after 4 shards (and one shard's sidecar lost): the rerun runs only the rest (and that
    one again) and keeps exactly the languages of an uninterrupted run."""
    path = tmp_path / "c.jsonl"
    ran: list[str] = []

    def interrupted(todo, keys):
        for s in todo:
            if len(ran) == 4:
                raise KeyboardInterrupt
            ran.append(s.id)
            yield run_shard(s, keys)

    with pytest.raises(KeyboardInterrupt):
        census(3, 2, runner=interrupted, checkpoint=path, shard_target=16, keep_members=True)
    sidecars = sorted((tmp_path / "c.jsonl.members").glob("*.npz"))
    assert len(sidecars) == 4
    sidecars[0].unlink()
    first, again = set(ran), []

    def counting(todo, keys):
        for s in todo:
            again.append(s.id)
            yield run_shard(s, keys)

    resumed = census(3, 2, runner=counting, checkpoint=path, shard_target=16, keep_members=True)
    assert len(first & set(again)) == 1 and resumed.resumed == 3
    full = census(3, 2, shard_target=16, keep_members=True)
    assert resumed.profiles == full.profiles
    for n in range(1, 4):
        for a, b in zip(resumed.members[n], full.members[n]):
            assert (a == b).all()


def test_cli_stores_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.app.settings import get_settings

    url = f"sqlite:///{tmp_path}/cli.db"
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", url)
    monkeypatch.setenv("LANGCLASS_CENSUS_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    runner = CliRunner()
    out = runner.invoke(app, ["census", "--states", "2", "--alphabet", "2", "--no-checkpoint", "--no-progress", "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    assert d["total"] == 26 and d["run_id"]
    assert list((tmp_path / "data").glob("*.npz")) == [tmp_path / "data" / f"{d['run_id']}.npz"]
    out = runner.invoke(app, ["census", "--states", "2", "--alphabet", "2", "--no-checkpoint", "--no-progress", "--no-store"])
    assert out.exit_code == 0 and "not stored" in out.stdout
    assert len(list((tmp_path / "data").glob("*.npz"))) == 1
    get_settings.cache_clear()  # the next test reads its own environment


def test_pages_show_counts_and_open_a_member(api: Any, migrated_url: str, small: Any, tmp_path: Path) -> None:
    run_id = _store(migrated_url, small, tmp_path)
    runs_page = api.get("/census")
    assert runs_page.status_code == 200 and f"/census/{run_id}" in runs_page.text
    page = api.get(f"/census/{run_id}", params={"in": "ltl_p_y_mod", "not_in": "ltl_p_y"})
    assert page.status_code == 200
    for k, c in small.to_dict()["classes"].items():
        assert f'data-class="{k}" data-count="{c}"' in page.text  # the lattice box of each class, with its count
    assert f"{small.count(('ltl_p_y_mod',), ('ltl_p_y',)):,} language" in page.text
    assert "1,028" in page.text  # languages with 3 states, beside the published count
    assert api.get(f"/census/{run_id}", params={"in": "nope"}).status_code == 422
    r = api.get(f"/census/{run_id}/languages/30", follow_redirects=False)
    assert r.status_code == 303
    from langclass.app.store import census_runs
    from langclass.app.store.db import get_database

    with get_database(make_settings(migrated_url)).session_scope() as session:
        dfa, n, _p = census_runs.member_dfa(census_runs.get_run(session, run_id), 30)
    assert r.headers["location"] == f"/languages/{dfa.fingerprint()}" and n == 3
    lang = api.get(r.headers["location"])
    assert lang.status_code == 200
    assert api.get(f"/census/{run_id}/languages/30", follow_redirects=False).headers["location"] == r.headers["location"]
    assert api.get(f"/v1/languages/{dfa.fingerprint()}").json()["num_states"] == 3
    assert api.get(f"/census/{run_id}/languages/{small.total}", follow_redirects=False).status_code == 404
