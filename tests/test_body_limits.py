"""Request bodies cost what their size allows, off the event loop (issue 24, item 1).

Before: a ~1 MB body of 499,000 integers to ``POST /v1/classify`` was decoded on the event loop
(4–5 s during which ``/healthz`` answered nothing), and only bytes were bounded. Now the JSON values
are counted before decoding (``max_json_elements``) and everything runs in the app's body threads.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.app.web import body as body_module
from langclass.app.web.body import count_json_values, decode_json_strict
from langclass.core.base.errors import InputError, LimitExceeded

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(alphabet=' ,[]{}":\\ab', max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet=' ,[]{}":ab', max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _values(tree: Any) -> int:
    if isinstance(tree, dict):
        return 1 + sum(_values(v) for v in tree.values())
    if isinstance(tree, list):
        return 1 + sum(_values(v) for v in tree)
    return 1


@settings(max_examples=150, deadline=None)
@given(json_values, st.booleans())
def test_the_count_is_the_number_of_values_of_the_decoded_tree(tree: Any, spaced: bool) -> None:
    text = json.dumps(tree, indent=1 if spaced else None)
    assert count_json_values(text) == _values(tree)
    limit = _values(tree)
    assert decode_json_strict(text, 64, limit) == tree
    if limit > 16:
        with pytest.raises(LimitExceeded) as info:
            decode_json_strict(text, 64, limit - 1)
        assert info.value.limit == "max_json_elements"


def test_the_fast_path_still_names_a_repeated_key_deep_nesting_and_a_lone_surrogate() -> None:
    with pytest.raises(InputError, match=r"duplicate JSON key 'x' at a\.x"):
        decode_json_strict('{"a": {"x": 1, "x": 2}}', 64, 100)
    with pytest.raises(LimitExceeded) as info:
        decode_json_strict("[" * 10 + "]" * 10, 5, 100)
    assert info.value.limit == "max_json_depth"
    with pytest.raises(InputError, match="surrogate"):
        decode_json_strict('{"a": ["ok", "\\ud800"]}', 64, 100)
    assert decode_json_strict('["\\ud83d\\ude00"]', 64, 100) == ["\U0001F600"]  # a pair is one character


def test_the_reported_body_of_499000_integers_is_refused_naming_the_limit(make_client: Any, sqlite_url: str) -> None:
    client = make_client(sqlite_url, classify_isolation="thread")
    text = json.dumps({"dfa": {"alphabet": ["a"], "transitions": [[0] * 499_000]}}, separators=(",", ":"))
    assert len(text) < 1_000_000
    r = client.post("/v1/classify", content=text, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "limit-exceeded" and r.json()["limit"] == "max_json_elements" and r.json()["value"] == 200_000
    empty = json.dumps({"dfa": {"alphabet": ["a"], "transitions": [{}] * 330_000}}, separators=(",", ":"))
    r = client.post("/v1/classify", content=empty, headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["limit"] == "max_json_elements"


def test_bodies_are_decoded_and_validated_off_the_event_loop(make_client: Any, sqlite_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_client(sqlite_url, classify_isolation="thread")
    on_loop: list[bool] = []
    real = body_module.decode_json_strict

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return real(*args, **kwargs)

    monkeypatch.setattr(body_module, "decode_json_strict", spy)
    assert client.post("/v1/classify", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).status_code == 200
    r = client.post("/v1/classify", json={"regex": "a", "alphabet": list(range(5000))})  # 5,000 invalid symbols
    assert r.status_code == 422 and r.json()["code"] == "validation-error" and r.json()["field"].startswith("alphabet")
    assert len(r.json()["errors"]) == 100 and "(and 4999 more)" in r.json()["detail"]
    assert on_loop == [False, False]
