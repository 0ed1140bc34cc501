"""RFC 9457 problem details (``application/problem+json``) for every error the service returns.

The mapping goes by exception *class*, never by message text:

* :class:`~langclass.core.base.errors.LangclassError` subclasses carry ``code`` (problem type), ``status``,
  ``field`` and ``extra`` (for limits: ``limit`` and ``value``) — rendered as they are;
* FastAPI request validation errors → 422 ``validation-error`` with every offending ``field``;
  a body that is not UTF-8 JSON → 400 ``malformed-json``, a body that is not ``application/json``
  → 415 ``unsupported-media-type`` (both from :mod:`langclass.app.web.body`);
* Starlette HTTP errors (404 unknown route, 405 wrong method, 413 body too large) → their status;
* anything else → 500 ``internal-error`` (a bug: user input must never get here).

Each ``type`` is the relative URI ``/problems/<code>``; ``GET /problems/<code>`` describes it.
"""

from __future__ import annotations

import logging
import re
from typing import Annotated, Any


from fastapi import APIRouter, FastAPI, Path, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from langclass.core.base import errors as core_errors
from langclass.core.base.errors import LangclassError
from langclass.app.errors import (  # noqa: F401 - re-exported: the problem handlers render these
    AuthenticationError,
    CensusDataChanged,
    ConflictError,
    ForbiddenError,
    InvalidCursorError,
    MalformedJsonError,
    NotFoundError,
    NotReadyError,
    ServiceError,
    UnsupportedMediaTypeError,
    http_status,
)

__all__ = [
    "PROBLEM_JSON",
    "Problem",
    "problem_response",
    "install_problem_handlers",
    "problem_responses",
    "validation_problem",
    "ServiceError",
    "NotFoundError",
    "AuthenticationError",
    "InvalidCursorError",
    "NotReadyError",
    "ConflictError",
    "CensusDataChanged",
    "ForbiddenError",
    "PayloadTooLarge",
    "MalformedJsonError",
    "UnsupportedMediaTypeError",
    "router",
]

log = logging.getLogger("langclass.app")

PROBLEM_JSON = "application/problem+json"
_RESERVED = {"type", "title", "status", "detail", "instance", "code", "field"}


class Problem(BaseModel):
    """An RFC 9457 problem details object, with ``code`` and ``field`` as extension members."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "type": "/problems/regex-syntax",
                    "title": "Regex syntax error",
                    "status": 422,
                    "detail": "unbalanced parenthesis at position 3",
                    "instance": "/v1/classify",
                    "code": "regex-syntax",
                    "field": "regex",
                    "position": 3,
                },
                {
                    "type": "/problems/limit-exceeded",
                    "title": "Limit exceeded",
                    "status": 422,
                    "detail": "max_states=100000 exceeded (needed at least 131072)",
                    "code": "limit-exceeded",
                    "limit": "max_states",
                    "value": 100000,
                },
            ]
        },
    )

    type: str = Field(description="URI reference of the problem type: /problems/<code>")
    title: str = Field(description="short summary of the problem type")
    status: int = Field(description="HTTP status code")
    detail: str = Field(description="explanation of this occurrence, naming the offending item")
    instance: str | None = Field(None, description="the request path")
    code: str = Field(description="stable machine-readable problem code")
    field: str | None = Field(None, description="the offending input field, dotted path (e.g. dfa.transitions.q1.a)")


# --- service-side errors live in app/errors.py (no FastAPI); re-exported here for the handlers

class PayloadTooLarge(StarletteHTTPException):
    """Raised while reading a request body that exceeds ``LANGCLASS_MAX_BODY_BYTES``."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body exceeds {max_bytes} bytes (LANGCLASS_MAX_BODY_BYTES)")
        self.max_bytes = max_bytes


# Problems that only the HTTP layer produces (not exceptions of the LangclassError family).
_HTTP_PROBLEMS: dict[str, tuple[int, str, str]] = {
    "validation-error": (422, "Request validation failed", "The request does not match the documented schema; the errors member lists every offending field."),
    "bad-request": (400, "Bad request", "The request could not be understood."),
    "not-found": (404, "Not found", "No resource at this address."),
    "method-not-allowed": (405, "Method not allowed", "The resource exists but not with this HTTP method; see the Allow header."),
    "payload-too-large": (413, "Payload too large", "The request body exceeds LANGCLASS_MAX_BODY_BYTES."),
    "request-timeout": (408, "Request timeout", "The client stopped sending its request body for LANGCLASS_BODY_READ_TIMEOUT_S seconds."),
    "internal-error": (500, "Internal error", "A bug on our side; the log has the traceback."),
}
_STATUS_CODES = {400: "bad-request", 404: "not-found", 405: "method-not-allowed", 413: "payload-too-large", 415: "unsupported-media-type"}


def _error_classes() -> list[type[LangclassError]]:
    out: list[type[LangclassError]] = []
    stack: list[type[LangclassError]] = [LangclassError]
    while stack:
        cls = stack.pop()
        out.append(cls)
        stack.extend(cls.__subclasses__())
    return out


def plain_text(doc: str) -> str:
    """A docstring paragraph as plain text: reST roles and literals unwrapped, lines joined.

    >>> plain_text("The regex; ``extra['position']`` is the offset. See :class:`~a.b.Limits`.")
    'The regex; the "position" member is the offset. See Limits.'
    """
    text = " ".join(doc.split())
    text = re.sub(r":[a-z:]+:`~?([^`<]+?)(?:\s*<[^>]*>)?`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    text = re.sub(r"``extra\[['\"](\w+)['\"]\]``", r'the "\1" member', text)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return re.sub(r"`([^`]+)`", r"\1", text)


def problem_catalogue() -> dict[str, dict[str, Any]]:
    """Every problem type this service can return: ``{code: {code, title, status, description}}``."""
    cat: dict[str, dict[str, Any]] = {}
    for code, (status, title, desc) in _HTTP_PROBLEMS.items():
        cat[code] = {"code": code, "title": title, "status": status, "description": desc}
    for cls in _error_classes():
        doc = plain_text((cls.__doc__ or "").strip().split("\n\n")[0])
        cat.setdefault(cls.code, {"code": cls.code, "title": cls.title, "status": http_status(cls), "description": doc})
    return cat


def problem_response(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    instance: str | None = None,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """A ``application/problem+json`` response (RFC 9457) with ``code``/``field`` extension members."""
    body: dict[str, Any] = {"type": f"/problems/{code}", "title": title, "status": status, "detail": detail}
    if instance is not None:
        body["instance"] = instance
    body["code"] = code
    if field is not None:
        body["field"] = field
    for key, value in extra.items():
        if key not in _RESERVED:
            body[key] = value
    return JSONResponse(_printable(jsonable_encoder(body)), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _printable(value: Any) -> Any:
    """``value`` with every string made encodable as UTF-8 (a lone surrogate from the input, e.g. in
    a detail naming an unknown symbol, becomes the text ``\\ud800`` instead of crashing the
    response)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _loc_to_field(loc: tuple[Any, ...] | list[Any]) -> tuple[str, str | None]:
    parts = list(loc)
    where = str(parts[0]) if parts else "body"
    rest = parts[1:] if parts and parts[0] in ("body", "query", "path", "header", "cookie") else parts
    from langclass.models.training.specs import field_path  # pydantic only: the path without union tags

    return where, field_path(rest)


async def _langclass_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LangclassError)
    headers = getattr(exc, "headers", None) or None
    extra = dict(exc.extra)
    if isinstance(exc, core_errors.LimitExceeded) and "setting" not in extra:
        from langclass.app.settings import setting_for_limit

        extra["setting"] = setting_for_limit(str(extra.get("limit", "")))
    return problem_response(
        http_status(exc), exc.code, exc.title, exc.detail, instance=request.url.path, field=exc.field, headers=headers, **extra
    )


MAX_LISTED_ERRORS = 100
"""Most validation errors a ``validation-error`` problem lists."""


def validation_problem(errors: Any, *, location: str | None = None) -> dict[str, Any]:
    """The ``validation-error`` problem (without ``type``/``instance``) for pydantic ``errors``:
    ``detail`` names the first offending field (and counts the others), ``field`` is its dotted
    path, ``errors`` lists each as ``{location, field, message, type}``. Used for a whole request
    (the handler below) and, with ``location`` (e.g. ``body.languages[3]``: the errors' paths are
    relative to it), for one item of ``POST /v1/languages:batch``. At most
    :data:`MAX_LISTED_ERRORS` are listed (the detail counts them all): an invalid list of 200,000
    items would otherwise make a 30 MB answer on the event loop."""
    errs = []
    errors = list(errors)
    for err in errors[:MAX_LISTED_ERRORS]:
        loc = tuple(err.get("loc", ()))
        if location is not None:
            loc = (location, *loc)
        where, field = _loc_to_field(loc)
        errs.append({"location": where, "field": field, "message": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    first = errs[0] if errs else {"field": None, "message": "invalid request", "location": "body"}
    detail = f"{first['location']}{'.' + first['field'] if first['field'] else ''}: {first['message']}"
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more)"
    return {"code": "validation-error", "title": "Request validation failed", "status": 422, "detail": detail,
            "field": first["field"], "errors": errs}


async def _validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            where_txt = f" at position {err['loc'][-1]}" if len(err.get("loc", ())) > 1 else ""
            reason = ctx.get("error") if isinstance(ctx.get("error"), str) else err.get("msg", "")
            return problem_response(
                400, "malformed-json", "Malformed JSON", f"the request body is not valid JSON{where_txt}: {reason}", instance=request.url.path
            )
    p = validation_problem(exc.errors())
    return problem_response(422, p["code"], p["title"], p["detail"], instance=request.url.path, field=p["field"], errors=p["errors"])


async def _http_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODES.get(exc.status_code, f"http-{exc.status_code}")
    title = _HTTP_PROBLEMS.get(code, (exc.status_code, "HTTP error", ""))[1]
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no resource at {request.url.path}"
    if exc.status_code == 405 and detail == "Method Not Allowed":
        method = request.scope.get(ORIGINAL_METHOD_KEY, request.method)
        detail = f"{method} is not allowed on {request.url.path}"
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    return problem_response(exc.status_code, code, title, detail, instance=request.url.path, headers=headers or None)


def _leaf_routes(routes: Any) -> Any:
    """Every route, descending into included routers (FastAPI wraps each ``include_router``)."""
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if callable(contexts):
            yield from contexts()
        else:
            yield route


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (one path may have several routes: GET and
    POST); HEAD wherever GET is served (see :class:`HeadAsGetMiddleware`)."""
    allowed: set[str] = set()
    for route in _leaf_routes(request.app.router.routes):
        try:
            match, _ = route.matches(request.scope)
        except Exception:  # pragma: no cover - a route type that cannot match this scope
            continue
        if match != Match.NONE:
            allowed |= set(getattr(route, "methods", None) or ())
    if "GET" in allowed:
        allowed.add("HEAD")
    return sorted(allowed)


ORIGINAL_METHOD_KEY = "langclass.original_method"
"""Scope key where :class:`HeadAsGetMiddleware` keeps the method the client sent (``HEAD``)."""


class HeadAsGetMiddleware:
    """Answers ``HEAD`` like ``GET`` without the body (RFC 9110 §9.3.2): status and headers of the
    GET response (Content-Length included), no content."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        scope = dict(scope, method="GET")
        scope[ORIGINAL_METHOD_KEY] = "HEAD"

        async def send_headers_only(message: Any) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(scope, receive, send_headers_only)


def database_unavailable(exc: BaseException) -> str | None:
    """Why ``exc`` means the database cannot serve now (unreachable, or its schema behind the
    code), or None for any other error. Used to answer 503 instead of 500."""
    from sqlalchemy import exc as sa

    if isinstance(exc, (sa.OperationalError, sa.InterfaceError)) or (isinstance(exc, sa.DBAPIError) and exc.connection_invalidated):
        text = str(getattr(exc, "orig", exc) or exc).lower()
        if "no such table" in text or "no such column" in text:
            return "the database schema is behind this version; run `langclass db upgrade`"
        return f"the database is unreachable ({type(getattr(exc, 'orig', exc) or exc).__name__}); retry later"
    if isinstance(exc, sa.ProgrammingError):
        text = str(getattr(exc, "orig", exc) or exc).lower()
        if "does not exist" in text and ("relation" in text or "column" in text) or "undefinedtable" in text:
            return "the database schema is behind this version; run `langclass db upgrade`"
    return None


async def _database_error_handler(request: Request, exc: Exception) -> JSONResponse:
    why = database_unavailable(exc)
    if why is None:
        return await _internal_error_handler(request, exc)
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return problem_response(503, NotReadyError.code, NotReadyError.title, why, instance=request.url.path, headers={"Retry-After": "5"})


async def _client_disconnect_handler(request: Request, exc: Exception) -> JSONResponse:
    """A client that went away before its whole body arrived: one log line, no traceback (before, the
    500 handler logged one and uvicorn a second), and a 400 that nobody reads (``Connection: close``)."""
    log.info("client disconnected before sending its whole request body: %s %s", request.method, request.url.path)
    return problem_response(400, "bad-request", "Bad request", "the client disconnected before sending its whole request body",
                            instance=request.url.path, headers={"Connection": "close"})


async def _internal_error_handler(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(500, "internal-error", "Internal error", "an unexpected error occurred; it has been logged", instance=request.url.path)


API_PREFIXES = ("/v1/", "/problems", "/healthz", "/readyz", "/openapi.json")
"""Paths of the JSON API: their errors are problem+json whatever the client accepts."""

_KEPT_HEADERS = ("allow", "www-authenticate", "retry-after", "connection", "cache-control")


def _accept_q(accept: str, media_type: str) -> float:
    """The quality the ``Accept`` header gives ``media_type`` itself (0 when not listed; wildcards
    are not counted: a browser names text/html, an API client that sends ``*/*`` gets JSON)."""
    best = 0.0
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0].lower() != media_type:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        best = max(best, q)
    return best


def wants_html(request: Request) -> bool:
    """True for a browser navigation to a page: the path is not the JSON API (:data:`API_PREFIXES`)
    and ``Accept`` names ``text/html`` above ``application/json`` and ``application/problem+json``."""
    path = request.url.path
    if path.startswith(API_PREFIXES):
        return False
    accept = request.headers.get("accept", "")
    html = _accept_q(accept, "text/html")
    return html > 0 and html > max(_accept_q(accept, "application/json"), _accept_q(accept, PROBLEM_JSON))


def html_error_page(problem: dict[str, Any]) -> str:
    """A small HTML page for ``problem`` (title, status, detail, field), styled like the pages, with
    links back; every value is escaped."""
    import html

    status = int(problem.get("status") or 500)
    title = html.escape(str(problem.get("title") or "Error"))
    detail = html.escape(str(problem.get("detail") or ""))
    field = problem.get("field")
    where = f'<p>field: <code>{html.escape(str(field))}</code></p>' if field else ""
    code = html.escape(str(problem.get("code") or ""))
    sign_in = '<p><a href="/login">Sign in with an API key</a></p>' if status == 401 else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{status} {title} · langclass</title><link rel="stylesheet" href="/static/style.css"></head>'
        '<body><header><a class="brand" href="/languages">langclass</a>'
        '<nav><a href="/languages">Languages</a> <a href="/docs">API (Swagger)</a></nav></header>'
        f'<main><h1>{status} {title}</h1><p class="problem" role="alert">{detail}</p>{where}{sign_in}'
        f'<p>Problem type <a href="/problems/{code}"><code>{code}</code></a>. '
        '<a href="/languages">Back to the languages</a>.</p></main></body></html>\n'
    )


def _html_for_browsers(handler: Any) -> Any:
    """``handler`` whose problem+json answer becomes :func:`html_error_page` for a browser navigation
    (:func:`wants_html`); status and the meaningful headers (``Allow``, ``WWW-Authenticate``,
    ``Retry-After``, …) are kept."""
    import json

    from fastapi.responses import HTMLResponse

    async def wrapped(request: Request, exc: Exception) -> Any:
        response = await handler(request, exc)
        if response.media_type != PROBLEM_JSON or not wants_html(request):
            return response
        problem = json.loads(bytes(response.body))
        headers = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
        headers["Vary"] = "Accept"
        return HTMLResponse(html_error_page(problem), status_code=response.status_code, headers=headers)

    return wrapped


def install_problem_handlers(app: FastAPI) -> None:
    """Register the problem+json handlers on ``app`` (an HTML page instead for a browser navigating
    to a page: :func:`wants_html`)."""
    app.add_exception_handler(LangclassError, _html_for_browsers(_langclass_error_handler))
    app.add_exception_handler(RequestValidationError, _html_for_browsers(_validation_error_handler))
    app.add_exception_handler(StarletteHTTPException, _html_for_browsers(_http_error_handler))
    from sqlalchemy.exc import DBAPIError

    # unreachable / schema behind → 503
    app.add_exception_handler(DBAPIError, _html_for_browsers(_database_error_handler))
    from starlette.requests import ClientDisconnect

    app.add_exception_handler(ClientDisconnect, _client_disconnect_handler)
    app.add_exception_handler(Exception, _html_for_browsers(_internal_error_handler))


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries documenting problem+json answers for ``statuses``."""
    descriptions = {
        400: "Malformed request (not UTF-8 JSON, bad cursor)",
        401: "Missing or wrong API key",
        403: "Needs an API key for a write that this request would make",
        404: "Not found",
        409: "Conflicts with stored state (a language that still has jobs, a census data file changed)",
        413: "Request body too large",
        415: "The body is not application/json",
        422: "Invalid input (names the field) or a limit hit (names the limit)",
        503: "Not ready, or every classification worker busy (Retry-After)",
    }
    return {
        s: {"model": Problem, "description": descriptions.get(s, "Problem"), "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
        for s in statuses
    }


router = APIRouter(tags=["problems"])


@router.get("/problems", summary="Every problem type this service returns", responses=problem_responses(422))
def list_problems() -> list[dict[str, Any]]:
    """The catalogue of problem types (``code``, ``title``, ``status``, ``description``)."""
    return sorted(problem_catalogue().values(), key=lambda p: (p["status"], p["code"]))


@router.get("/problems/{code}", summary="Describe one problem type", responses=problem_responses(404, 422))
def describe_problem(code: Annotated[str, Path(max_length=200, json_schema_extra={"pattern": "^[^\\u0000]*$"})]) -> dict[str, Any]:
    """The documentation of the problem type ``/problems/{code}`` (the ``type`` URI of a problem)."""
    cat = problem_catalogue()
    if code not in cat:
        raise NotFoundError(f"no problem type {code!r}", field="code")
    return cat[code]


# Keep the import used (the family is enumerated through LangclassError.__subclasses__()).
_ = core_errors
