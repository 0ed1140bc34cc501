"""Sign-in on the pages holds (issue 24 item 7): logout revokes the session (a copied cookie stops
working), failed sign-ins are throttled per address in bounded memory, a cross-site ``POST /login``
is refused (login CSRF), and pages carry CSP, X-Frame-Options and nosniff."""

from __future__ import annotations

from typing import Any

from langclass.app.store.db import upgrade
from langclass.app.web.security import (CONTENT_SECURITY_POLICY, CSRF_COOKIE, LOGIN_MAX_FAILURES, PAGE_HEADER,
                                        SESSION_COOKIE, LoginThrottle)

from test_pages_browser_errors_and_sign_in import KEY, _csrf, login

BODY = {"regex": "(ab)*", "alphabet": ["a", "b"]}
PAGE = {PAGE_HEADER: "1", "Accept": "application/json"}


def _client(make_client: Any, sqlite_url: str) -> Any:
    upgrade(sqlite_url)
    return make_client(sqlite_url, worker_slots=0, api_keys=KEY, require_key_for_writes=True)


def test_logout_revokes_the_session_and_every_sign_in_is_a_new_one(make_client: Any, sqlite_url: str) -> None:
    api = _client(make_client, sqlite_url)
    assert login(api, KEY).status_code == 303
    first = api.cookies.get(SESSION_COOKIE)
    assert first and KEY not in first
    assert api.post("/v1/languages", json=BODY, headers=PAGE).status_code in (200, 201)
    assert api.post("/logout", follow_redirects=False).status_code == 303
    api.cookies.clear()
    api.cookies.set(SESSION_COOKIE, first)  # the copied cookie
    r = api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]}, headers=PAGE)
    assert r.status_code == 401, r.text
    api.cookies.clear()
    assert login(api, KEY).status_code == 303
    second = api.cookies.get(SESSION_COOKIE)
    assert second != first  # a fresh nonce per sign-in, not a fixed hash of the key
    assert api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]}, headers=PAGE).status_code == 201
    forged = second.rsplit(".", 1)[0] + "." + "0" * 64  # a nonce with a made-up signature
    api.cookies.clear()
    api.cookies.set(SESSION_COOKIE, forged)
    assert api.post("/v1/languages", json={"regex": "b*", "alphabet": ["b"]}, headers=PAGE).status_code == 401


def test_failed_sign_ins_are_throttled_per_address(make_client: Any, sqlite_url: str) -> None:
    api = _client(make_client, sqlite_url)
    for _ in range(LOGIN_MAX_FAILURES):
        assert login(api, "wrong-key-0000000").status_code == 401
    r = login(api, KEY)  # even the right key waits now
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    assert SESSION_COOKIE not in api.cookies


def test_the_throttle_window_and_its_memory_bound() -> None:
    now = [0.0]
    t = LoginThrottle(max_failures=3, window_s=10.0, max_clients=5, clock=lambda: now[0])
    for _ in range(3):
        assert t.retry_after("a") is None
        t.failed("a")
    assert t.retry_after("a") == 10.0
    now[0] = 4.0
    assert t.retry_after("a") == 6.0
    now[0] = 10.5  # the oldest failures left the window
    assert t.retry_after("a") is None
    for i in range(50):
        t.failed(f"client-{i}")
    assert len(t) == 5  # bounded: the least recently failed are forgotten
    t.succeeded("client-49")
    assert len(t) == 4


def test_a_cross_site_login_is_refused(make_client: Any, sqlite_url: str) -> None:
    api = _client(make_client, sqlite_url)
    token = _csrf(api)
    r = api.post("/login", data={"key": KEY, "csrf": token}, headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert r.status_code == 403 and SESSION_COOKIE not in api.cookies
    r = api.post("/login", data={"key": KEY, "csrf": token}, headers={"Referer": "https://evil.example/x"}, follow_redirects=False)
    assert r.status_code == 403 and SESSION_COOKIE not in api.cookies
    api.cookies.delete(CSRF_COOKIE, path="/login")  # a cross-site post does not carry the SameSite=Strict cookie
    r = api.post("/login", data={"key": KEY, "csrf": token}, follow_redirects=False)
    assert r.status_code == 403 and SESSION_COOKIE not in api.cookies
    r = api.post("/login", data={"key": KEY}, follow_redirects=False)
    assert r.status_code == 403
    assert login(api, KEY, **{"Origin": "http://testserver"}).status_code == 303  # the site's own form
    assert api.post("/logout", headers={"Origin": "https://evil.example"}, follow_redirects=False).status_code == 403
    assert SESSION_COOKIE in api.cookies


def test_pages_carry_the_security_headers(make_client: Any, sqlite_url: str) -> None:
    api = _client(make_client, sqlite_url)
    for path in ("/languages", "/login", "/no/such/page"):
        r = api.get(path, headers={"Accept": "text/html"})
        assert r.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY and "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    r = api.get("/v1/languages")
    assert r.headers["x-content-type-options"] == "nosniff" and "content-security-policy" not in r.headers
    assert "content-security-policy" not in api.get("/docs").headers  # the bundled Swagger UI runs inline scripts
