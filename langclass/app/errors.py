"""The service's own errors: one family with core's :class:`~langclass.core.base.errors.LangclassError`.

Raised by the repository, the jobs table, pagination, the body reader and the security checks;
rendered as problem details by :mod:`langclass.app.web.problems` (the only place that knows FastAPI).
Importing this module loads no web framework, so job workers can raise and catch them.

This is also where an error *type* meets HTTP: core's errors carry no status (core knows no HTTP);
:data:`CORE_STATUS` maps core's classes to statuses, a service error class declares its own
``status``, and :func:`http_status` / :func:`problem_dict` read them for the problem responses, the
batch rows, the CLI's ``--json`` errors and the job error records alike.
"""

from __future__ import annotations

from typing import Any

from langclass.core.base import errors as core_errors
from langclass.core.base.errors import LangclassError

__all__ = [
    "CORE_STATUS",
    "http_status",
    "problem_dict",
    "ServiceError",
    "NotFoundError",
    "AuthenticationError",
    "ConflictError",
    "CensusDataChanged",
    "ForbiddenError",
    "InvalidCursorError",
    "NotReadyError",
    "MalformedJsonError",
    "UnsupportedMediaTypeError",
]

CORE_STATUS: dict[type[LangclassError], int] = {
    core_errors.LangclassError: 400,
    core_errors.InputError: 422,  # well-formed HTTP, but not a language (or not a construction) we accept
    core_errors.LimitExceeded: 422,  # the request asks for more than a named limit allows
}
"""HTTP status of core's error classes; a subclass not listed takes its nearest listed base's."""


def http_status(err: LangclassError | type[LangclassError]) -> int:
    """The HTTP status the service answers an error of this class with.

    The nearest class in the MRO that declares a ``status`` attribute itself (the service's own
    errors: :class:`ServiceError` subclasses, ``ClassifierBusy``) or is listed in
    :data:`CORE_STATUS` decides; 400 when none does.
    """
    cls = err if isinstance(err, type) else type(err)
    for klass in cls.__mro__:
        if "status" in vars(klass) and isinstance(vars(klass)["status"], int):
            return int(vars(klass)["status"])
        if klass in CORE_STATUS:
            return CORE_STATUS[klass]
    return 400


def problem_dict(err: LangclassError) -> dict[str, Any]:
    """``err.to_dict()`` with the HTTP ``status`` after the title: the problem-details members
    (``code``, ``title``, ``status``, ``detail``, ``field``, extras) as JSON-ready data."""
    out: dict[str, Any] = {}
    for key, value in err.to_dict().items():
        out[key] = value
        if key == "title":
            out["status"] = http_status(err)
    return out


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


class CensusDataChanged(ConflictError):
    """A stored census run's data file is missing (``reason`` ``missing``) or differs from the
    SHA-256 stored with the run (``reason`` ``altered``); ``file`` is its name under
    LANGCLASS_CENSUS_DIR. Checked on every read, also after the run was read once."""

    code = "census-data-changed"
    title = "Census data file changed"


class ForbiddenError(ServiceError):
    """The request would store something that this service stores only with an API key: opening a
    census member as its language page (``GET /census/{run}/languages/{index}``) stores the
    language, and under LANGCLASS_REQUIRE_KEY_FOR_WRITES that needs a key (send
    ``Authorization: Bearer <key>``, or post the member's ``dfa`` to ``POST /v1/languages`` with one)."""

    code = "forbidden"
    status = 403
    title = "Forbidden"


class InvalidCursorError(ServiceError):
    """A pagination cursor that is not well-formed (see :func:`langclass.app.store.pagination.decode_cursor`)."""

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
