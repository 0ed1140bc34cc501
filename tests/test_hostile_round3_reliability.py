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
