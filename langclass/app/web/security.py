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
service answers with an ``HttpOnly``, ``SameSite=Strict`` cookie (``Secure`` over HTTPS) holding a
*session token* derived from the key (SHA-256 of a fixed prefix and the key — not the key itself,
and void as soon as the key is removed from ``LANGCLASS_API_KEYS``). The cookie counts only on
requests that also carry the header ``X-Langclass-Page: 1`` (the pages' script sets it): a custom
header cannot be sent cross-site without a CORS preflight the service never grants, so another site
cannot make a signed-in browser write (CSRF), even where ``SameSite`` is not enforced.

Keys are compared in constant time (:func:`hmac.compare_digest`, against every configured key
without early exit) and never logged; :func:`key_id` gives a short non-reversible label for logs.
"""

from __future__ import annotations

import logging

import re

import hashlib
import hmac

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from langclass.app.errors import AuthenticationError
from langclass.app.settings import Settings

__all__ = [
    "bearer_scheme", "require_api_key", "require_write_key", "check_key", "key_id",
    "SESSION_COOKIE", "PAGE_HEADER", "session_token", "check_session", "session_key_id",
]

SESSION_COOKIE = "langclass_session"
"""The cookie of a browser signed in at ``/login`` (holds :func:`session_token` of the key)."""

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


def session_token(key: str) -> str:
    """The session token of ``key`` (64 hex digits): what the ``/login`` cookie holds instead of the
    key itself (a leaked cookie does not reveal a key usable with ``Authorization: Bearer``)."""
    return hashlib.sha256(b"langclass-page-session\x00" + key.encode("utf-8")).hexdigest()


def session_key_id(settings: Settings, token: str | None) -> str | None:
    """The :func:`key_id` of the configured key whose :func:`session_token` is ``token``, else None
    (compared in constant time against every key)."""
    if not token or not settings.api_keys:
        return None
    given = token.encode("ascii", "replace")
    found: str | None = None
    for key in settings.api_keys:
        if hmac.compare_digest(given, session_token(key).encode("ascii")):
            found = key_id(key)
    return found


def check_session(settings: Settings, request: Request) -> str | None:
    """The key id of a page request signed in by cookie, or None: the cookie counts only with the
    :data:`PAGE_HEADER` header (see the module docstring: no cross-site writes)."""
    if request.headers.get(PAGE_HEADER) != "1":
        return None
    return session_key_id(settings, request.cookies.get(SESSION_COOKIE))


def _authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    settings: Settings = request.app.state.settings
    if not settings.api_keys:
        return None
    if credentials is None:
        signed_in = check_session(settings, request)
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
    return _authenticate(request, credentials)


async def require_write_key(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme)
) -> str | None:
    """FastAPI dependency for storing writes: needs a key (as :func:`require_api_key` takes it) only
    with ``LANGCLASS_REQUIRE_KEY_FOR_WRITES``."""
    settings: Settings = request.app.state.settings
    if not settings.require_key_for_writes:
        return None
    return _authenticate(request, credentials)


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
