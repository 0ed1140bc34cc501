"""The service's own errors: one family with core's :class:`~langclass.core.errors.LangclassError`.

Raised by the repository, the jobs table, pagination, the body reader and the security checks;
rendered as problem details by :mod:`langclass.app.problems` (the only place that knows FastAPI).
Importing this module loads no web framework, so job workers can raise and catch them.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import LangclassError

__all__ = [
    "ServiceError",
    "NotFoundError",
    "AuthenticationError",
    "ConflictError",
    "InvalidCursorError",
    "NotReadyError",
    "MalformedJsonError",
    "UnsupportedMediaTypeError",
]



class ServiceError(LangclassError):
    """An error raised by the service layer; may carry response headers."""

    def __init__(self, detail: str, *, field: str | None = None, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail, field=field, **extra)
        self.headers = headers or {}


class NotFoundError(ServiceError):
    """The addressed resource does not exist."""

    code = "not-found"
    status = 404
    title = "Not found"


class AuthenticationError(ServiceError):
    """The request needs ``Authorization: Bearer <key>`` with a configured API key."""

    code = "unauthorized"
    status = 401
    title = "Authentication required"


class ConflictError(ServiceError):
    """The request conflicts with stored state: deleting a language that still has jobs (repeat
    with ``?cascade=true`` to delete them too), or a job operation its status does not allow (no
    result yet, already finished)."""

    code = "conflict"
    status = 409
    title = "Conflict"


class InvalidCursorError(ServiceError):
    """A pagination cursor that is not well-formed (see :func:`langclass.app.pagination.decode_cursor`)."""

    code = "invalid-cursor"
    status = 400
    title = "Invalid cursor"


class NotReadyError(ServiceError):
    """The database is unreachable or its schema is not at the newest migration."""

    code = "not-ready"
    status = 503
    title = "Service not ready"


class MalformedJsonError(ServiceError):
    """The request body is not JSON text in UTF-8; the detail names the offending byte or character
    (``position``: its 0-based offset; ``line``/``column`` for JSON syntax)."""

    code = "malformed-json"
    status = 400
    title = "Malformed JSON"


class UnsupportedMediaTypeError(ServiceError):
    """The request body is not declared as JSON: send ``Content-Type: application/json`` (UTF-8)."""

    code = "unsupported-media-type"
    status = 415
    title = "Unsupported media type"
