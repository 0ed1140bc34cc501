"""Property-based conformance of the API to its own OpenAPI schema (schemathesis).

Random valid and invalid requests for every operation; each response must be a documented status
with the documented content type, headers and schema, and never a 500. Bounded examples keep it fast.
(The app is built at import: schemathesis' fixture-based loader does not work with this pytest.)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from conftest import make_settings
from langclass.app.store.db import get_database, upgrade
from langclass.app.main import create_app

_DIR = Path(tempfile.mkdtemp(prefix="langclass-schemathesis-"))
_URL = f"sqlite:///{_DIR / 'api.db'}"
upgrade(_URL)
_SETTINGS = make_settings(_URL, worker_slots=0, time_limit_s=5.0, max_states=2_000, max_monoid_size=5_000, max_regex_length=200)
app = create_app(_SETTINGS)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    get_database(_SETTINGS).dispose()
    app.state.db.dispose()
    keyed_app.state.db.dispose()
    shutil.rmtree(_DIR, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_to_its_schema(case: Any) -> None:
    # A schema-valid body can still be an invalid language (a regex with a syntax error is a string):
    # those are 4xx by design, so "positive data acceptance" does not apply; every other check does.
    case.call_and_validate(timeout=120, excluded_checks=[schemathesis.checks.positive_data_acceptance])


# The same with API keys configured: guarded operations must answer a documented 401 problem.
_KEYED_URL = f"sqlite:///{_DIR / 'api-keyed.db'}"
upgrade(_KEYED_URL)
_KEYED_SETTINGS = make_settings(
    _KEYED_URL, worker_slots=0, time_limit_s=5.0, max_states=2_000, max_monoid_size=5_000, max_regex_length=200,
    api_keys="schemathesis-key-0123", require_key_for_writes=True,
)
keyed_app = create_app(_KEYED_SETTINGS)
keyed_schema = schemathesis.openapi.from_asgi("/openapi.json", keyed_app).include(method=["POST", "DELETE"])


@keyed_schema.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_guarded_operations_conform_with_keys_set(case: Any) -> None:
    case.call_and_validate(timeout=120, excluded_checks=[schemathesis.checks.positive_data_acceptance])


# --- the schema is exact: schema-valid data is never refused for a reason the schema could state ----
#
# Positive (schema-valid) data may still be refused for what no schema states; each operation lists
# those rejections by problem code (with the field where the code alone is too broad). Anything else
# — above all ``validation-error``, the server's own schema — means the published schema admits a
# request the server refuses (schemathesis ST202): make the schema say the rule.
_LANGUAGE_SEMANTICS = {
    "regex-syntax", "formula-syntax",   # a regex / formula is a string; its grammar is the parser's
    "unknown-symbol",                   # a symbol used that the alphabet lacks (cross-field)
    "invalid-dfa",                      # initial/accepting/targets listed in states (cross-reference)
    "invalid-alphabet",                 # regex symbols are single characters; NFC-equal symbols
    "limit-exceeded", "time-limit-exceeded",  # the configured limits (settings, not schema)
}
SEMANTIC_REJECTIONS: dict[str, set[str]] = {
    "POST /v1/classify": _LANGUAGE_SEMANTICS,
    "POST /v1/languages": _LANGUAGE_SEMANTICS,
    "GET /v1/languages": {"invalid-cursor",          # a well-formed cursor the service did not issue
                          "invalid-input:member",    # `member` needs `class` (a rule between parameters)
                          "invalid-input:min_states"},  # min_states > max_states: no language can match
    "GET /v1/jobs": {"invalid-cursor"},
    "GET /v1/census": {"invalid-cursor"},
    "GET /v1/sweeps": {"invalid-cursor"},
    # the limits of langclass sweep (the census size, the runs, one language's job limits); a stored
    # run's N, K and classes (a run id is a string; an unknown one is a 404); and the experiment's
    # cross-field rules on overrides (d_model divisible by n_heads, …), as a train spec checks them
    "POST /v1/sweeps": {"limit-exceeded", "invalid-input"},
    # a class key the run lacks, or more states than the run's N (both depend on the stored run)
    "GET /v1/census/{run_id}": {"invalid-input:in", "invalid-input:not_in", "invalid-input:states"},
    "GET /v1/census/{run_id}/languages": {"invalid-input:in", "invalid-input:not_in", "invalid-input:states"},
}
_ACCEPTED = {200, 201, 202, 204, 401, 404, 409}
_POSITIVE_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                              database=None)


def _operations() -> list[Any]:
    return [r.ok() for r in schema.get_all_operations()]


@pytest.mark.parametrize("operation", _operations(), ids=lambda op: op.label)
def test_schema_valid_requests_are_accepted(operation: Any) -> None:
    from hypothesis import given

    allowed = SEMANTIC_REJECTIONS.get(operation.label, set())

    @given(case=operation.as_strategy())
    @_POSITIVE_SETTINGS
    def check(case: Any) -> None:
        response = case.call(timeout=120)  # holds at 8x slowdown (the default is 10 s)
        if response.status_code in _ACCEPTED:
            return
        problem = response.json()
        code = problem.get("code")
        assert code in allowed or f"{code}:{problem.get('field')}" in allowed, (
            f"{operation.label} refused schema-valid data with {response.status_code} {code} "
            f"(field {problem.get('field')!r}): {problem.get('detail')}\n{case.as_curl_command()}"
        )

    check()
