"""API-key access control.

Policy (documented in the README):

* reads (every GET) are always open;
* ``POST /v1/classify`` (computes, stores nothing) is open;
* when ``LANGCLASS_API_KEYS`` is set, DELETE and writes that cost GPU time (experiments, jobs) need
  ``Authorization: Bearer <key>`` — routes declare this with ``Depends(require_api_key)``;
* ``POST /v1/languages`` (stores a classification; CPU only, bounded by the limits) is open unless
  ``LANGCLASS_REQUIRE_KEY_FOR_WRITES=true`` — routes declare this with ``Depends(require_write_key)``.

Browsers: the web pages (reads) are open like every GET. For their writes (adding a language,
launching or cancelling a job) a person signs in once at ``/login`` with one of the keys; the
service starts a *session* — a random nonce stored (as its SHA-256) in the ``page_sessions`` table
with the key's id and an expiry — and answers with an ``HttpOnly``, ``SameSite=Strict`` cookie
(``Secure`` over HTTPS) holding ``<key id>.<nonce>.<HMAC-SHA256 of the nonce under the key>``: not
the key, not derivable from it, different for every sign-in. ``/logout`` deletes the session, so a
copied cookie stops working at once; so does removing the key from ``LANGCLASS_API_KEYS`` (the
HMAC no longer verifies). The cookie counts only on requests that also carry the header
``X-Langclass-Page: 1`` (the pages' script sets it): a custom header cannot be sent cross-site
without a CORS preflight the service never grants, so another site cannot make a signed-in browser
write (CSRF), even where ``SameSite`` is not enforced.

Signing in itself is protected against login CSRF (another site signing a browser in with *its*
key): ``POST /login`` and ``POST /logout`` refuse (403) a request whose ``Origin`` (or, without
one, ``Referer``) is another site, and ``POST /login`` needs the form's ``csrf`` field to equal the
``langclass_csrf`` cookie set by ``GET /login`` (``SameSite=Strict``: a cross-site post does not
carry it). Failed sign-ins are throttled per client address (:class:`LoginThrottle`: after
:data:`LOGIN_MAX_FAILURES` failures within :data:`LOGIN_WINDOW_S` seconds, 429 with
``Retry-After``; at most :data:`LOGIN_MAX_CLIENTS` addresses are remembered per process).

Every HTML page is sent with ``Content-Security-Policy`` (scripts only from this site, no framing,
no plugins), ``X-Frame-Options: DENY`` and ``X-Content-Type-Options: nosniff``
(:class:`SecurityHeadersMiddleware`; every other response gets ``nosniff``).

Keys are compared in constant time (:func:`hmac.compare_digest`, against every configured key
without early exit) and never logged; :func:`key_id` gives a short non-reversible label for logs.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

import anyio

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from langclass.app.errors import AuthenticationError
from langclass.app.settings import Settings

__all__ = [
    "bearer_scheme", "require_api_key", "require_write_key", "check_key", "key_id",
    "SESSION_COOKIE", "PAGE_HEADER", "CSRF_COOKIE", "session_token", "new_nonce", "parse_session_token", "check_session",
    "session_key_id", "LoginThrottle", "same_origin", "SecurityHeadersMiddleware", "CONTENT_SECURITY_POLICY",
]

SESSION_COOKIE = "langclass_session"
"""The cookie of a browser signed in at ``/login`` (holds :func:`session_token`)."""

PAGE_HEADER = "X-Langclass-Page"
"""The header (value ``1``) the pages' script sends; the session cookie counts only with it."""

SESSION_MAX_AGE_S = 12 * 3600
"""Lifetime of the session cookie (seconds)."""

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="`Authorization: Bearer <key>` with one of LANGCLASS_API_KEYS (only when keys are configured).",
)

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="langclass"'}


def key_id(key: str) -> str:
    """A short label for a key that is safe to log (first 8 hex digits of its SHA-256)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]


def check_key(settings: Settings, presented: str | None) -> str | None:
    """Validate ``presented`` against ``settings.api_keys``.

    Returns:
        ``None`` when no keys are configured (access open), else the :func:`key_id` of the key.

    Raises:
        AuthenticationError: (401, with a ``WWW-Authenticate: Bearer`` challenge) when keys are
            configured and ``presented`` is missing or matches none of them.
    """
    if not settings.api_keys:
        return None
    if not presented:
        raise AuthenticationError("this operation needs Authorization: Bearer <key>", field="Authorization", headers=_CHALLENGE)
    given = presented.encode("utf-8")
    match = False
    for key in settings.api_keys:
        # compare against every key (no early exit) so timing does not reveal which one matched
        match |= hmac.compare_digest(given, key.encode("utf-8"))
    if not match:
        raise AuthenticationError(
            "the API key is not valid", field="Authorization", headers={"WWW-Authenticate": 'Bearer realm="langclass", error="invalid_token"'}
        )
    return key_id(presented)


def session_token(key: str, nonce: str) -> str:
    """The cookie of a session: ``<key id>.<nonce>.<HMAC-SHA256(key, nonce) hex>`` (no part reveals the key)."""
    sig = hmac.new(key.encode("utf-8"), b"langclass-page-session\x00" + nonce.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{key_id(key)}.{nonce}.{sig}"


def new_nonce() -> str:
    """A fresh session nonce (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def parse_session_token(settings: Settings, token: str | None) -> tuple[str, str] | None:
    """``(key id, nonce)`` of a cookie whose HMAC verifies under a configured key (compared in
    constant time against every key), else None. Says nothing about revocation (see
    :func:`check_session`)."""
    if not token or not settings.api_keys or len(token) > 300:
        return None
    parts = token.split(".")
    if len(parts) != 3:
        return None
    kid, nonce, _ = parts
    found: tuple[str, str] | None = None
    for key in settings.api_keys:
        if hmac.compare_digest(token.encode("ascii", "replace"), session_token(key, nonce).encode("ascii")):
            found = (kid, nonce)
    return found


def session_key_id(settings: Settings, token: str | None) -> str | None:
    """The key id of a cookie whose signature verifies (no database read: for the page header's
    "signed in"; writes also need :func:`check_session`)."""
    parsed = parse_session_token(settings, token)
    return parsed[0] if parsed else None


def check_session(settings: Settings, request: Request) -> str | None:
    """The key id of a page request signed in by cookie, or None: the cookie counts only with the
    :data:`PAGE_HEADER` header (see the module docstring: no cross-site writes), a valid signature
    and a live session in the database (not logged out, not expired). Blocking: call it off the
    event loop."""
    if request.headers.get(PAGE_HEADER) != "1":
        return None
    parsed = parse_session_token(settings, request.cookies.get(SESSION_COOKIE))
    if parsed is None:
        return None
    from langclass.app.store.sessions import session_key

    with request.app.state.db.session_scope() as session:
        live = session_key(session, parsed[1])
    return parsed[0] if live == parsed[0] else None


CSRF_COOKIE = "langclass_csrf"
"""The sign-in form's double-submit token (set by ``GET /login``, echoed in the form's ``csrf`` field)."""

LOGIN_MAX_FAILURES = 10
"""Failed sign-ins per client address within :data:`LOGIN_WINDOW_S` before ``POST /login`` answers 429."""

LOGIN_WINDOW_S = 300.0
"""The window of :data:`LOGIN_MAX_FAILURES` (seconds)."""

LOGIN_MAX_CLIENTS = 10_000
"""Client addresses :class:`LoginThrottle` remembers (the least recently failed are forgotten first)."""


class LoginThrottle:
    """Failed sign-ins per client address in a sliding window, in bounded memory (one process).

    Args:
        max_failures / window_s / max_clients: see :data:`LOGIN_MAX_FAILURES`,
            :data:`LOGIN_WINDOW_S`, :data:`LOGIN_MAX_CLIENTS`.
        clock: seconds (``time.monotonic``; tests pass their own).
    """

    def __init__(self, max_failures: int = LOGIN_MAX_FAILURES, window_s: float = LOGIN_WINDOW_S,
                 max_clients: int = LOGIN_MAX_CLIENTS, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures, self.window_s, self.max_clients, self.clock = max_failures, window_s, max_clients, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again, or None when it may now."""
        now = self.clock()
        with self._lock:
            times = self._failures.get(client)
            if times is None:
                return None
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) < self.max_failures:
                return None
            return max(0.0, times[0] + self.window_s - now)

    def failed(self, client: str) -> None:
        """Record a failed sign-in of ``client``."""
        now = self.clock()
        with self._lock:
            times = self._failures.pop(client, None) or deque(maxlen=self.max_failures)
            times.append(now)
            self._failures[client] = times  # most recent last
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)

    def __len__(self) -> int:
        return len(self._failures)


def same_origin(request: Request) -> bool:
    """The request's ``Origin`` (or, without one, ``Referer``) is this site — or neither is sent (not
    a browser's cross-site form: browsers send ``Origin`` on every cross-site POST)."""
    own = f"{request.url.scheme}://{request.url.netloc}"
    origin = request.headers.get("origin")
    if origin is not None:
        return origin == own
    referer = request.headers.get("referer")
    if referer is not None:
        return referer == own or referer.startswith(own + "/")
    return True


CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                           "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
"""The pages' CSP: scripts and styles from this site (style attributes allowed: the SVG drawings
use them), no plugins, no framing, forms only to this site."""


class SecurityHeadersMiddleware:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every response; on HTML responses
    also ``X-Frame-Options: DENY`` and, except for the API documentation (``/docs``, ``/redoc``,
    whose bundled UIs use inline scripts), :data:`CONTENT_SECURITY_POLICY`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                if ctype.startswith(b"text/html"):
                    if b"x-frame-options" not in names:
                        headers.append((b"x-frame-options", b"DENY"))
                    if not path.startswith(("/docs", "/redoc")) and b"content-security-policy" not in names:
                        headers.append((b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    settings: Settings = request.app.state.settings
    if not settings.api_keys:
        return None
    if credentials is None and request.headers.get(PAGE_HEADER) == "1" and request.cookies.get(SESSION_COOKIE):
        signed_in = await anyio.to_thread.run_sync(check_session, settings, request)  # a database read
        if signed_in is not None:
            return signed_in
    return check_key(settings, credentials.credentials if credentials else None)


async def require_api_key(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme)
) -> str | None:
    """FastAPI dependency for DELETE and GPU-costing writes: needs a key when keys are configured
    (the bearer header, or the pages' session cookie with :data:`PAGE_HEADER`).

    Returns the :func:`key_id` of the presented key (``None`` when access is open).

    Raises:
        AuthenticationError: 401 with a ``WWW-Authenticate: Bearer`` challenge.
    """
    return await _authenticate(request, credentials)


async def require_write_key(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme)
) -> str | None:
    """FastAPI dependency for storing writes: needs a key (as :func:`require_api_key` takes it) only
    with ``LANGCLASS_REQUIRE_KEY_FOR_WRITES``."""
    settings: Settings = request.app.state.settings
    if not settings.require_key_for_writes:
        return None
    return await _authenticate(request, credentials)


SECRET_QUERY_PARAMETERS = ("api_key", "apikey", "key", "token", "access_token")
"""Query parameters whose values never reach a log (a key sent as ``?api_key=`` is redacted)."""

_SECRET_QUERY = re.compile(r"([?&](?:" + "|".join(SECRET_QUERY_PARAMETERS) + r")=)[^&\s\"]*", re.IGNORECASE)


def redact_query_secrets(text: str) -> str:
    """``text`` with the values of :data:`SECRET_QUERY_PARAMETERS` in any URL query replaced by ``***``."""
    return _SECRET_QUERY.sub(r"\1***", text)


class RedactQuerySecrets(logging.Filter):
    """A logging filter that redacts secret query parameters in a record's message and arguments
    (uvicorn's access log passes the request path with its query as an argument)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_query_secrets(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_query_secrets(a) if isinstance(a, str) else a for a in record.args)
        return True


def install_access_log_redaction() -> None:
    """Add :class:`RedactQuerySecrets` to uvicorn's access and error loggers (once)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactQuerySecrets) for f in logger.filters):
            logger.addFilter(RedactQuerySecrets())
