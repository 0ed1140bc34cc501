"""A time budget per item of ``POST /v1/languages:batch`` (issue 24, item 9).

Before: one budget, from the request's arrival, covered every item, so once it was spent each
remaining item — trivial ones too — was ``time-limit-exceeded``. Nothing timed: the request is
stamped as arrived an hour ago.
"""

from __future__ import annotations

from typing import Any

import pytest

from langclass.app import main as app_main


def test_each_item_gets_its_own_budget(make_client: Any, migrated_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_client(migrated_url, classify_isolation="thread", time_limit_s=30.0)
    real = app_main._arrival_clock
    monkeypatch.setattr(app_main, "_arrival_clock", lambda: real() - 3600.0)
    body = {"languages": [{"regex": "(ab)*", "alphabet": ["a", "b"]}, {"regex": "a*", "alphabet": ["a", "b"]},
                          {"regex": "(a|b)*b", "alphabet": ["a", "b"]}]}
    r = client.post("/v1/languages:batch", json=body)
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    # the first item's budget ran from the arrival (an hour ago); the others each had their own
    assert items[0]["status"] == 422 and items[0]["problem"]["limit"] == "time_limit_s"
    assert [it["status"] for it in items[1:]] == [201, 201]
