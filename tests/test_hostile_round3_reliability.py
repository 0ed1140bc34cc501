"""Regressions of the third round of hostile use (issue 35): the LOW reliability items (item 6).

* The sign-in throttle is keyed by the client address; ``langclass serve`` ran uvicorn with proxy
  headers believed from any loopback peer, so a local client varying ``X-Forwarded-For`` was never
  throttled. Now the address is the TCP peer's unless ``LANGCLASS_TRUSTED_PROXIES`` names the proxy.
"""

from __future__ import annotations

from typing import Any

import pytest

from langclass.app.cli.commands import proxy_options
from langclass.app.settings import Settings
from langclass.app.store.db import upgrade
from langclass.app.web.security import LOGIN_MAX_FAILURES

from conftest import make_settings
from test_pages_browser_errors_and_sign_in import KEY, _csrf


def _served(sqlite_url: str, **settings: Any) -> Any:
    """The app as ``langclass serve`` hands it to uvicorn — uvicorn's own proxy-header middleware
    included — under a TestClient whose TCP peer is 127.0.0.1 (a loopback client)."""
    import uvicorn
    from fastapi.testclient import TestClient

    from langclass.app.main import create_app

    upgrade(sqlite_url)
    s = make_settings(sqlite_url, worker_slots=0, api_keys=KEY, **settings)
    config = uvicorn.Config(create_app(s), **proxy_options(s))
    config.load()
    return TestClient(config.loaded_app, client=("127.0.0.1", 50000))


def _fail_once(api: Any, forwarded: str) -> int:
    token = _csrf(api)
    return api.post("/login", data={"key": "wrong-key-0000000", "next": "/languages", "csrf": token},
                    headers={"X-Forwarded-For": forwarded}, follow_redirects=False).status_code


def test_a_loopback_client_varying_x_forwarded_for_is_throttled(sqlite_url: str) -> None:
    with _served(sqlite_url) as api:
        codes = [_fail_once(api, f"203.0.113.{i}") for i in range(LOGIN_MAX_FAILURES + 2)]
    assert codes[:LOGIN_MAX_FAILURES] == [401] * LOGIN_MAX_FAILURES
    assert codes[LOGIN_MAX_FAILURES:] == [429, 429], codes


def test_a_trusted_proxy_forwards_the_client_address(sqlite_url: str) -> None:
    """Behind a proxy named in LANGCLASS_TRUSTED_PROXIES each forwarded client has its own budget."""
    with _served(sqlite_url, trusted_proxies="127.0.0.1") as api:
        codes = [_fail_once(api, f"203.0.113.{i}") for i in range(LOGIN_MAX_FAILURES + 2)]
        assert codes == [401] * (LOGIN_MAX_FAILURES + 2)
        same = [_fail_once(api, "198.51.100.7") for _ in range(LOGIN_MAX_FAILURES + 1)]
    assert same[-1] == 429


def test_proxy_options_and_the_setting() -> None:
    assert proxy_options(Settings(database_url="sqlite:///x.db")) == {"proxy_headers": False}
    s = Settings(database_url="sqlite:///x.db", trusted_proxies="10.0.0.1, 192.168.0.0/16")
    assert s.trusted_proxies == ["10.0.0.1", "192.168.0.0/16"]
    assert proxy_options(s) == {"proxy_headers": True, "forwarded_allow_ips": "10.0.0.1,192.168.0.0/16"}
    with pytest.raises(Exception, match="not an IP address"):
        Settings(database_url="sqlite:///x.db", trusted_proxies="proxy.example")


# --- labels: no NUL, control or bidirectional formatting characters ----------------------------------

@pytest.fixture
def client(make_client: Any, migrated_url: str) -> Any:
    return make_client(migrated_url, classify_isolation="thread", worker_slots=0)


def _dfa(name: str) -> dict[str, Any]:
    return {"alphabet": ["a"], "states": [name, "t"], "initial": name, "accepting": [name],
            "transitions": {name: {"a": "t"}, "t": {"a": name}}}


@pytest.mark.parametrize("bad", ["s\u0000", "s\u202e", "s\u2066x", "s\nx", "s\u001b[31m", "s\u0085"])
def test_state_names_with_nul_control_or_bidi_characters_are_refused(client: Any, bad: str) -> None:
    for path in ("/v1/classify", "/v1/languages"):
        r = client.post(path, json={"dfa": _dfa(bad)})
        assert r.status_code == 422, r.text
        body = r.json()
        assert body["code"] == "invalid-dfa" and body["field"] == "dfa.states[0]", body
        assert f"U+{ord(bad[1]):04X}" in body["detail"]


@pytest.mark.parametrize("bad", ["x\u202ey", "x\u0000", "x\ty", "\u200fname", "a\u007f"])
def test_names_and_tags_with_control_or_bidi_characters_are_refused(client: Any, bad: str) -> None:
    body = {"regex": "a*", "alphabet": ["a"]}
    for extra in ({"name": bad}, {"tags": [bad]}):
        r = client.post("/v1/languages", json={**body, **extra})
        assert r.status_code == 422 and r.json()["code"] == "validation-error", r.text
    lid = client.post("/v1/languages", json={**body, "name": "fine name", "tags": ["ok"]}).json()["id"]
    for extra in ({"name": bad}, {"tags": ["ok", bad]}):
        assert client.patch(f"/v1/languages/{lid}", json=extra).status_code == 422
    stored = client.get(f"/v1/languages/{lid}").json()
    assert stored["name"] == "fine name" and stored["tags"] == ["ok"]


def test_ordinary_labels_stay_accepted(client: Any) -> None:
    r = client.post("/v1/languages", json={"dfa": _dfa("état ü 1 (x)"), "name": "Dyck — depth 2, אבג", "tags": ["a b", "ünïcode"]})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "Dyck — depth 2, אבג"


def test_the_python_api_refuses_them_too() -> None:
    import langclass
    from langclass.core.base.errors import InputError

    with pytest.raises(InputError, match="U\\+202E"):
        langclass.classify(dfa=_dfa("s\u202e"))


# --- a client that disconnects mid-body --------------------------------------------------------------

def test_a_client_disconnecting_mid_body_logs_one_line_and_no_traceback(make_client: Any, _migrated_sqlite: str,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """The app sees half a body, then ``http.disconnect``: it logs one line without a traceback and
    lets nothing escape to the server (before: the 500 handler logged a traceback, and the error,
    re-raised to uvicorn, a second)."""
    import logging

    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0)
    app = client.app
    messages = iter([{"type": "http.request", "body": b'{"regex": "(ab)*", "alph', "more_body": True},
                     {"type": "http.disconnect"}])
    sent: list[dict] = []

    async def receive() -> dict:
        return next(messages)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/classify", "raw_path": b"/v1/classify", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), (b"content-length", b"100")],
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80), "state": {}}
    caplog.set_level(logging.INFO)
    client.portal.call(app, scope, receive, send)  # raises if the error escapes to the server
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    lines = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
    assert len(lines) == 1, lines
    assert sent and sent[0]["type"] == "http.response.start" and sent[0]["status"] == 400


# --- a train spec's lengths are counted before they are listed ---------------------------------------

AB_STAR = {"alphabet": ["a", "b"], "states": [0, 1, 2], "initial": 0, "accepting": [0],
           "transitions": {"0": {"a": 1, "b": 2}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 2}}}


@pytest.mark.parametrize("key, extra", [("test_lengths", {"eval_per_length": 1}), ("train_lengths", {})])
def test_a_length_range_spanning_3e7_is_refused_before_it_is_listed(monkeypatch: pytest.MonkeyPatch, key: str,
                                                                    extra: dict) -> None:
    """A range 1..3·10⁷ with step 10 (3 million lengths, every other limit raised or met) is refused
    with ``max_lengths`` without listing a length (before: listed, 2.2 s, then refused by the memory
    estimate — or, for test lengths with one string each, accepted)."""
    import dataclasses

    from langclass.app.usecases.experiments import validate_train_spec
    from langclass.core.base.errors import LimitExceeded
    from langclass.models.experiments import experiment
    from langclass.models.training.specs import DEFAULT_JOB_LIMITS

    def no_listing(value: Any, field: str) -> list[int]:
        raise AssertionError(f"{field} listed before it was counted")

    monkeypatch.setattr(experiment, "expand_lengths", no_listing)
    limits = dataclasses.replace(DEFAULT_JOB_LIMITS, max_test_length=10 ** 8)
    spec = {"language": AB_STAR, "encodings": ["nope"], "seeds": [0],
            "overrides": {key: {"range": [1, 30_000_000], "step": 10}, **extra}}
    with pytest.raises(LimitExceeded) as caught:
        validate_train_spec(spec, limits)
    err = caught.value
    assert err.limit == "max_lengths" and err.value == experiment.MAX_LENGTHS and err.field == f"overrides.{key}"
    assert "3,000,001 lengths" in err.detail  # 1, 11, …, 29,999,991 and the end 30,000,000


def test_the_length_count_bound_through_the_api(make_client: Any, _migrated_sqlite: str) -> None:
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, max_test_length=10 ** 8)
    lid = client.post("/v1/languages", json={"dfa": AB_STAR}).json()["id"]
    r = client.post(f"/v1/languages/{lid}/experiments", json={
        "kind": "train", "encodings": ["nope"], "seeds": [0],
        "overrides": {"test_lengths": {"range": [1, 30_000_000], "step": 10}, "eval_per_length": 1}})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "limit-exceeded" and body["limit"] == "max_lengths" and body["setting"] is None
    ok = client.post(f"/v1/languages/{lid}/experiments", json={
        "kind": "train", "encodings": ["nope"], "seeds": [0], "overrides": {"test_lengths": {"range": [41, 60]}}})
    assert ok.status_code == 202, ok.text


# --- the time limit while a killed worker is replaced (item 2) -------------------------------------

def test_a_call_waiting_for_a_replacement_worker_ends_at_its_deadline() -> None:
    """Every worker of the pool is counted but none idle — the state while a killed worker's
    replacement starts. A call with a 0.2 s deadline ends with time-limit-exceeded at that deadline
    instead of waiting for the replacement (here one that never comes: before, the call never ended).
    A liveness bound of 60 s, not a timing."""
    import threading
    import time

    from langclass.app.execution.isolation import ProcessPool
    from langclass.core.base.errors import TimeLimitExceeded

    pool = ProcessPool(1)
    pool._prestarted = True  # nothing starts in the background
    with pool._changed:
        pool._live = 1  # "a replacement is starting"
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            pool.call(len, ((),), {}, None, 0.2, deadline=time.monotonic() + 0.2)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the call waited for the replacement past its deadline"
    (err,) = outcome
    assert isinstance(err, TimeLimitExceeded) and err.extra["step"] == "waiting for a worker", err
    assert pool._slots.acquire(timeout=0)  # the call gave its slot back


# --- a database that stops answering: /readyz is 503 within its bound (item 4) ------------------------

def test_readyz_answers_503_when_the_database_stops_answering(make_client: Any, _migrated_sqlite: str) -> None:
    """The database accepts the check and never answers (a stopped PostgreSQL: the kernel still
    acknowledges, no TCP timeout fires). /readyz answers 503 ``not-ready`` at its bound,
    LANGCLASS_DB_CONNECT_TIMEOUT_S, instead of hanging for the stall (before: 29.8 s, the whole
    stall). A liveness bound of 60 s, not a timing."""
    import threading

    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, db_connect_timeout_s=0.5)
    assert client.get("/readyz").status_code == 200
    stall = threading.Event()
    db = client.app.state.db
    real_ping = db.ping
    db.ping = lambda: stall.wait(120) or real_ping()  # the stalled server: answers when the stall ends
    answers: list[Any] = []
    try:
        thread = threading.Thread(target=lambda: answers.append(client.get("/readyz")), daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "/readyz waited for the stalled database"
    finally:
        stall.set()
        db.ping = real_ping
    (r,) = answers
    assert r.status_code == 503 and r.json()["code"] == "not-ready", r.text
    assert "did not answer within 0.5 s" in r.json()["detail"]
    assert client.get("/readyz").status_code == 200  # the stall over, ready again


# --- a construct experiment is validated in the worker pool, under the time limit (item 3) -----------

def test_construct_specs_are_validated_in_the_worker_pool(make_client: Any, _migrated_sqlite: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The construct validation (parse, synthesis, plan; it imports torch) goes through the
    classification runner — the killable worker processes and the request's time limit — not a
    thread of the API process (before: +180 MB in the API, /healthz stalled 3.56 s, 32–44 s for a
    1,024-state DFA under a 10 s limit). Its errors still answer 422 naming the field."""
    client = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0)
    runner = client.app.state.runner
    calls: list[str] = []
    real_run = runner.run

    async def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(fn, "__name__", str(fn)))
        return await real_run(fn, *args, **kwargs)

    monkeypatch.setattr(runner, "run", spy)
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    ok = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct"})
    assert ok.status_code == 202, ok.text
    assert "validate_construct_spec" in calls
    bad = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct", "formula": "P(b & "})
    assert bad.status_code == 422 and bad.json()["code"] == "formula-syntax", bad.text
