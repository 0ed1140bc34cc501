"""The page of a large language is a summary, not a huge blank picture (issue 24, item 9).

Before: the page of an 8,192-state language was 7 MB, nearly all of it a 62,858 × 352,316 px SVG.
"""

from __future__ import annotations

from typing import Any

from langclass.app.store import repository as repo
from langclass.app.store.db import Database
from langclass.app.web.pages import MAX_DRAWN_STATES
from langclass.core.automata.export import dfa_to_json
from langclass.core.base.limits import Limits
from langclass.core.ingest.source import language_source, parse_language


def _store(url: str, regex: str) -> str:
    from langclass.core.classification.analysis import analyze

    parsed = parse_language(language_source(regex=regex, alphabet=["a", "b"]), Limits(time_limit_s=None))
    analysis = analyze(parsed.dfa, Limits(time_limit_s=2.0, max_monoid_size=2_000)).to_dict()  # partial is fine
    db = Database(url)
    try:
        with db.session_scope() as s:
            repo.insert_language(s, fingerprint=parsed.fingerprint, name=None, tags=[], alphabet=["a", "b"], source=parsed.source,
                                 dfa=dfa_to_json(parsed.dfa), num_states=parsed.dfa.num_states, analysis=analysis,
                                 code_version="test")
    finally:
        db.dispose()
    return parsed.fingerprint


def test_an_8192_state_language_gets_a_summary_not_a_drawing(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, classify_isolation="thread")
    big = _store(migrated_url, "(a|b)*a" + "(a|b)" * 12)
    r = client.get(f"/languages/{big}")
    assert r.status_code == 200
    assert len(r.content) < 200_000, len(r.content)
    assert 'id="dfa-summary"' in r.text and "8,192 states" in r.text and "<svg" in r.text  # the lattice is still drawn
    assert 'id="dfa-picture"' not in r.text
    small = _store(migrated_url, "(a|b)*a" + "(a|b)" * 6)  # 128 states ≤ the cap: drawn
    assert MAX_DRAWN_STATES >= 128
    page = client.get(f"/languages/{small}").text
    assert 'id="dfa-picture"' in page and 'id="dfa-summary"' not in page
