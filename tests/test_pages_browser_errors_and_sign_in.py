"""Browsers on the pages: an error during a navigation is an HTML page (API clients keep
problem+json), and with API keys set a person signs in at /login so the pages' writes work —
through a session cookie that counts only with the pages' header (no cross-site writes)."""

from __future__ import annotations

from typing import Any

from langclass.app.store.db import upgrade
from langclass.app.web.security import PAGE_HEADER, SESSION_COOKIE

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
KEY = "page-key-0123456789"


def _csrf(api: Any) -> str:
    """The sign-in form's token (GET /login also sets the matching cookie in the client)."""
    import re

    page = api.get("/login").text
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def login(api: Any, key: str, next: str = "/languages", **headers: str) -> Any:
    return api.post("/login", data={"key": key, "next": next, "csrf": _csrf(api)}, headers=headers, follow_redirects=False)


def test_a_browser_navigation_gets_an_html_error_page(make_client: Any, sqlite_url: str) -> None:
    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    r = api.get("/languages/<script>alert(1)<script>", headers={"Accept": BROWSER})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "<h1>404 Not found</h1>" in r.text and "no language with id" in r.text
    assert "<script>alert" not in r.text and "&lt;script&gt;" in r.text  # escaped
    assert api.get("/no/such/page", headers={"Accept": BROWSER}).headers["content-type"].startswith("text/html")
    r = api.post("/languages", headers={"Accept": BROWSER})  # a page path, a method it lacks
    assert r.status_code == 405 and r.headers["content-type"].startswith("text/html") and "GET" in r.headers["allow"]
    # API clients, and the API's paths whoever asks, keep problem+json
    for path, accept in (("/languages/nope", "application/json"), ("/languages/nope", "*/*"), ("/languages/nope", ""),
                         ("/v1/languages/nope", BROWSER), ("/problems/nope", BROWSER)):
        r = api.get(path, headers={"Accept": accept})
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", (path, accept)
        assert r.json()["code"] == "not-found"


def test_signing_in_lets_the_pages_write_and_only_them(make_client: Any, sqlite_url: str) -> None:
    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0, api_keys=KEY, require_key_for_writes=True)
    page = {PAGE_HEADER: "1", "Accept": "application/json"}
    body = {"regex": "(ab)*", "alphabet": ["a", "b"]}
    # the pages read without a key, and offer to sign in
    r = api.get("/languages")
    assert r.status_code == 200 and 'id="sign-in"' in r.text
    assert api.post("/v1/languages", json=body, headers=page).status_code == 401
    r = login(api, "not-the-key-at-all")
    assert r.status_code == 401 and "not one of this service" in r.text and SESSION_COOKIE not in r.headers.get("set-cookie", "")
    r = login(api, KEY, "https://elsewhere.example/")
    assert r.status_code == 303 and r.headers["location"] == "/languages"  # never redirects off the site
    cookie = next(c for c in r.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and KEY not in cookie
    assert 'class="signed-in"' in api.get("/languages").text
    # the cookie counts with the pages' header …
    r = api.post("/v1/languages", json=body, headers=page)
    assert r.status_code == 201, r.text
    lid = r.json()["id"]
    # … not without it (a cross-site form or fetch cannot add it): 401 with the bearer challenge
    r = api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]}, headers={"Accept": "application/json"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert api.delete(f"/v1/languages/{lid}").status_code == 401
    assert api.delete(f"/v1/languages/{lid}", headers=page).status_code == 204
    # a wrong bearer key is not rescued by the cookie; signing out forgets it
    assert api.post("/v1/languages", json=body, headers={**page, "Authorization": "Bearer wrong-key-000"}).status_code == 401
    assert api.post("/logout", follow_redirects=False).status_code == 303
    api.cookies.clear()
    assert api.post("/v1/languages", json=body, headers=page).status_code == 401


def test_a_cookie_from_a_removed_key_is_void(make_client: Any, sqlite_url: str) -> None:
    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0, api_keys=KEY, require_key_for_writes=True)
    assert login(api, KEY).status_code == 303
    cookie = api.cookies.get(SESSION_COOKIE)
    api = make_client(sqlite_url, worker_slots=0, api_keys="another-key-98765", require_key_for_writes=True)
    api.cookies.set(SESSION_COOKIE, cookie)
    r = api.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]}, headers={PAGE_HEADER: "1"})
    assert r.status_code == 401
