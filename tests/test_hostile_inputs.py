"""Requests that used to end in 500 (and a reset connection) now get the 4xx/503 they deserve."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest


def _problem(r: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    if code is not None:
        assert body["code"] == code, body
    return body


def _raw_post(client: Any, path: str, text: str) -> Any:
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


def test_integers_longer_than_4300_digits_are_malformed_json(api: Any) -> None:
    body = '{"regex": "a", "alphabet": ["a"], "name": ' + "9" * 5000 + "}"
    problem = _problem(_raw_post(api, "/v1/classify", body), 400, "malformed-json")
    assert "5000 digits" in problem["detail"]
    assert _raw_post(api, "/v1/classify", '{"regex": "a", "alphabet": ["a"]}').status_code == 200


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json_numbers(api: Any, constant: str) -> None:
    lid = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    body = '{"kind": "train", "encodings": ["nope"], "overrides": {"grad_clip": ' + constant + ', "warmup_steps": 1}}'
    problem = _problem(_raw_post(api, f"/v1/languages/{lid}/experiments", body), 400, "malformed-json")
    assert constant.lstrip("-") in problem["detail"]
    assert api.get("/v1/jobs").json()["items"] == []


def test_a_cursor_before_year_one_in_utc_is_invalid_not_a_crash(api: Any) -> None:
    for created in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):
        cursor = base64.urlsafe_b64encode(json.dumps([created, "x"]).encode()).decode().rstrip("=")
        for path in ("/v1/languages", "/v1/jobs"):
            _problem(api.get(path, params={"cursor": cursor}), 400, "invalid-cursor")


@pytest.mark.parametrize(
    "method, path, params",
    [
        ("GET", "/v1/languages/a%00b", None),
        ("GET", "/v1/languages/a%00b/dfa", None),
        ("GET", "/v1/languages/a%00b/monoid", None),
        ("GET", "/v1/languages/a%00b/encodings", None),
        ("DELETE", "/v1/languages/a%00b", None),
        ("GET", "/v1/jobs/a%00b", None),
        ("DELETE", "/v1/jobs/a%00b", None),
        ("GET", "/v1/jobs/a%00b/plot.png", None),
        ("GET", "/v1/jobs", {"language_id": "a\x00b"}),
        ("GET", "/v1/languages", {"name": "a\x00b"}),
    ],
)
def test_nul_in_an_id_or_filter_is_422_on_both_backends(api: Any, method: str, path: str, params: Any) -> None:
    problem = _problem(api.request(method, path, params=params), 422)
    assert problem["field"]


def test_nul_in_the_experiment_path_is_422(api: Any) -> None:
    _problem(api.post("/v1/languages/a%00b/experiments", json={"kind": "train", "encodings": ["nope"]}), 422)


def test_database_down_is_503_not_500(make_client: Any, tmp_path: Any) -> None:
    for url in (f"sqlite:///{tmp_path}/no/such/dir/x.db", "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2"):
        client = make_client(url, worker_slots=0)
        for path in ("/v1/languages", "/v1/jobs", "/v1/languages/" + "0" * 64):
            problem = _problem(client.get(path), 503, "not-ready")
            assert "unreachable" in problem["detail"]
        r = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
        assert r.status_code == 503 and r.headers["Retry-After"]
        assert client.get("/healthz").status_code == 200


def test_schema_behind_is_503_naming_the_upgrade(make_client: Any, database_url: str) -> None:
    client = make_client(database_url, worker_slots=0)  # an empty database: no tables
    for path in ("/v1/languages", "/v1/jobs"):
        problem = _problem(client.get(path), 503, "not-ready")
        assert "langclass db upgrade" in problem["detail"]


def test_cursor_checks_match_the_documentation(api: Any) -> None:
    """docs/api.md: a cursor that is not well-formed is 400 invalid-cursor naming that; cursors are not
    signed, so a well-formed one the service did not issue is accepted (an empty page past the end)."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `invalid-cursor` | 400 |"))
    assert "not well-formed" in row and "not signed" in row
    for path in ("/v1/languages", "/v1/jobs"):
        problem = _problem(api.get(path, params={"cursor": "garbage"}), 400, "invalid-cursor")
        assert "not well-formed" in problem["detail"]
        forged = base64.urlsafe_b64encode(json.dumps(["1970-01-01T00:00:00+00:00", "x"]).encode()).decode().rstrip("=")
        r = api.get(path, params={"cursor": forged})
        assert r.status_code == 200 and r.json()["items"] == []
