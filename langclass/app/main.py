"""The FastAPI application factory.

``create_app(settings)`` builds an app bound to one database; ``uvicorn --factory
langclass.app.main:create_served_app`` or ``langclass serve`` runs it. The schema is *not* migrated here:
``langclass serve`` / ``langclass db upgrade`` do that before serving (``/readyz`` reports a
database that is behind).

Extension points for later issues (append one entry each):

* :data:`langclass.app.web.routes.ROUTERS` — routers to mount;
* :data:`LIFESPAN_HOOKS` — async context managers ``hook(app)`` entered at start-up and left at
  shutdown (e.g. embedded job workers).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from langclass.app.store.db import Database
from langclass.app.execution.executor import executor_lifespan
from langclass.app.web.query import strict_query
from langclass.app.web.problems import HeadAsGetMiddleware, PayloadTooLarge, install_problem_handlers, problem_response
from langclass.app.web.routes import ROUTERS
from langclass.app.web.body import refuse_nul_parameters
from langclass.app.execution.runner import ClassifyRunner, LightLane
from langclass.app.web.security import SecurityHeadersMiddleware, install_access_log_redaction
from langclass.app.usecases.service import code_version, warm_predictor
from .settings import Settings, get_settings

__all__ = ["create_app", "create_served_app", "freeze_startup_objects", "LIFESPAN_HOOKS", "BodySizeLimitMiddleware", "ArrivalMiddleware"]

log = logging.getLogger("langclass.app")

LIFESPAN_HOOKS: list[Callable[[FastAPI], AbstractAsyncContextManager[Any]]] = [executor_lifespan]
"""Async context managers entered (in order) at app start-up and exited at shutdown."""

_DESCRIPTION = """\
Classify regular languages exactly in the logic/algebra hierarchy that decides what transformers
recognize (LTL[P], LTL[P,MOD], LTL[P,Y], star-free, DA, FO[<,MOD], …), say which positional
encoding suffices, and store the results.

Errors are RFC 9457 problem details (`application/problem+json`) with a `code` and the offending
`field`; limit errors name the `limit`. When `LANGCLASS_API_KEYS` is set, DELETE and GPU-costing
writes need `Authorization: Bearer <key>`; reads stay open.
"""

_TAGS = [
    {"name": "classify", "description": "Classify without storing."},
    {"name": "languages", "description": "Stored languages: create (idempotent), browse, inspect, delete."},
    {"name": "encodings", "description": "The positional-encoding catalogue."},
    {"name": "health", "description": "Liveness and readiness probes."},
    {"name": "problems", "description": "Documentation of the problem types (the `type` URIs of errors)."},
]


WARM_UP_PATH = "/.well-known/langclass-warm-up"
"""A path no route takes, matched once at start-up by :func:`warm_up_routing`."""


async def warm_up_routing(app: FastAPI) -> None:
    """Match one request for :data:`WARM_UP_PATH` (which no route takes) against every route,
    in-process, at start-up.

    FastAPI builds each route's state — its request and response validators, dozens of pydantic
    schemas for the classification records — lazily, the first time a request is matched against
    it, on the event loop: ~0.15 s for the first ``/healthz`` and ~0.2 s more for the first
    ``/v1`` request on an idle machine, several times that under load, while every other request
    (a liveness probe among them) waits. Matching a path that no route takes walks them all.
    """
    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": WARM_UP_PATH, "raw_path": WARM_UP_PATH.encode(), "query_string": b"", "root_path": "",
        "headers": [], "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0), "state": {}, "app": app,
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        return None

    try:
        await app.router(scope, receive, send)
    except Exception:  # the 404 of the unmatched path (raised as HTTPException with "app" in scope)
        pass


def _arrival_clock() -> float:
    """The clock of :class:`ArrivalMiddleware` (``time.monotonic``; one name so a test can move it)."""
    return time.monotonic()


class ArrivalMiddleware:
    """Outermost middleware: stamps ``request.state.arrived`` (``time.monotonic()`` when the request
    reached the app), where a classification's one wall-clock budget starts — so the time spent
    reading the body and waiting for the handler counts against ``time_limit_s`` too — and says in
    the standard ``Server-Timing`` response header how long the app took from there to the start of
    its answer (``Server-Timing: app;dur=12.3``, milliseconds)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = scope.setdefault("state", {})["arrived"] = _arrival_clock()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (_arrival_clock() - arrived) * 1000
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", f"app;dur={took:.1f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed_send)


class _BodyStalled(Exception):
    """The client declared more body than it sent and stopped sending."""


class BodySizeLimitMiddleware:
    """Answers 413 (problem+json) for request bodies over ``max_bytes``, and 408 when the client
    stops sending its body for ``read_timeout_s`` seconds (a stalled body would hold the request open).

    Checks ``Content-Length`` up front and also counts streamed (chunked) bodies while the app reads
    them, so a missing or false length header does not get around the cap.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, read_timeout_s: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = -1
                if length < 0:
                    await self._reject(scope, send, 400, "bad-request", "Bad request", "invalid Content-Length header")
                    return
                if length > self.max_bytes:
                    await self._too_large(scope, send)
                    return
        received = 0
        started = False
        body_done = False

        async def limited_receive() -> Message:
            nonlocal received, body_done
            if body_done or self.read_timeout_s is None:
                message = await receive()  # after the body: waiting for a disconnect is no stall
            else:
                try:
                    with anyio.fail_after(self.read_timeout_s):
                        message = await receive()
                except TimeoutError:
                    raise _BodyStalled() from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.max_bytes:
                    raise PayloadTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except PayloadTooLarge:
            if started:
                raise
            await self._too_large(scope, send)
        except _BodyStalled:
            if started:
                raise
            await self._reject(scope, send, 408, "request-timeout", "Request timeout",
                               f"the request body stalled: no data for {self.read_timeout_s:g} s (LANGCLASS_BODY_READ_TIMEOUT_S)",
                               timeout_s=self.read_timeout_s)

    async def _too_large(self, scope: Scope, send: Send) -> None:
        await self._reject(
            scope, send, 413, "payload-too-large", "Payload too large",
            f"request body exceeds {self.max_bytes} bytes (LANGCLASS_MAX_BODY_BYTES)", max_bytes=self.max_bytes,
        )

    async def _reject(self, scope: Scope, send: Send, status: int, code: str, title: str, detail: str, **extra: Any) -> None:
        response = problem_response(status, code, title, detail, instance=scope.get("path"), headers={"Connection": "close"}, **extra)

        async def empty_receive() -> Message:
            return {"type": "http.disconnect"}

        await response(scope, empty_receive, send)


def freeze_startup_objects() -> None:
    """Collect once, then move every object alive now to the garbage collector's permanent
    generation (:func:`gc.freeze`), at the end of a served process's start-up.

    A started API process holds ~160,000 container objects (modules, the routes' validators, the
    response schemas), and CPython's occasional full (generation-2) collection walks all of them:
    100–700 ms during which the event loop answers nothing, so every request in flight — 8 for
    ``bench/api.py`` — waits for it (its p99 was 20 × its p50 on the idle machine). Frozen, they are
    never walked again; a full collection then only walks what requests made since. Objects of the
    start-up that become garbage later are not reclaimed (there are none to speak of: they live as
    long as the app). Only for a served process (:func:`create_served_app`), not for apps that tests
    build by the hundred in one interpreter.
    """
    gc.collect()
    gc.freeze()


def create_served_app() -> FastAPI:
    """:func:`create_app` for ``langclass serve`` (uvicorn's factory): the app freezes its start-up
    objects (:func:`freeze_startup_objects`) once its lifespan start-up is done."""
    return create_app(freeze_gc=True)


def create_app(settings: Settings | None = None, *, freeze_gc: bool = False) -> FastAPI:
    """Build the service.

    Args:
        settings: the configuration; default :func:`~langclass.app.settings.get_settings` (environment).
        freeze_gc: at the end of the start-up, :func:`freeze_startup_objects` (for a served process).

    ``app.state`` holds ``settings``, ``db`` (:class:`~langclass.app.store.db.Database`) and ``runner``
    (:class:`~langclass.app.execution.runner.ClassifyRunner`).
    """
    settings = settings or get_settings()
    db = Database(settings.database_url, connect_timeout_s=settings.db_connect_timeout_s,
                  statement_timeout_s=settings.db_statement_timeout_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_access_log_redaction()  # after uvicorn configured its loggers
        app.state.runner.prestart()  # both lanes' worker processes (process isolation)
        await warm_up_routing(app)
        if app.state.runner.light_runner is not None:  # the light prediction's parsers, imported off the event loop
            await anyio.to_thread.run_sync(warm_predictor)
        async with AsyncExitStack() as stack:
            for hook in LIFESPAN_HOOKS:
                await stack.enter_async_context(hook(app))
            if freeze_gc:
                freeze_startup_objects()
            try:
                yield
            finally:
                pass
        db.dispose()

    # /docs and /redoc load Swagger UI and ReDoc from files shipped with fastapi-offline (no CDN)
    app = FastAPIOffline(
        title="langclass",
        version=settings.code_version or code_version(),
        description=_DESCRIPTION,
        openapi_tags=_TAGS,
        lifespan=lifespan,
        # unknown / repeated query parameters, and NUL in any parameter → 422 on every route
        dependencies=[Depends(strict_query), Depends(refuse_nul_parameters)],
    )
    app.state.settings = settings
    app.state.db = db
    app.state.runner = ClassifyRunner(
        settings.classify_concurrency, settings.time_limit_s, settings.classify_isolation, settings.classify_queue_timeout_s,
        queue_max=settings.classify_queue_max, max_tasks=settings.classify_worker_max_tasks,
        max_rss_bytes=settings.classify_worker_max_rss_mb * 2**20,
        light=LightLane(settings.classify_light_workers, settings.classify_light_max_states, settings.classify_light_max_monoid_size,
                        settings.classify_light_time_limit_s, settings.classify_light_queue_max),
    )
    install_problem_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes, read_timeout_s=settings.body_read_timeout_s)
    app.add_middleware(HeadAsGetMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)  # CSP, X-Frame-Options, nosniff (web.security)
    app.add_middleware(ArrivalMiddleware)  # added last = outermost: the stamp is taken first
    for router in ROUTERS:
        app.include_router(router)
    from langclass.app.web.pages import STATIC_DIR
    from langclass.app.web.pages import router as pages_router

    app.include_router(pages_router)  # the web pages (docs/web.md)
    from langclass.app.web.census_pages import router as census_pages_router

    app.include_router(census_pages_router)  # the census pages
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    _finish_openapi(app, settings)
    return app


WRITE_KEY_MARK = "x-langclass-write-key"
"""OpenAPI extension set (``openapi_extra``) on routes guarded by ``require_write_key``."""


def _finish_openapi(app: FastAPI, settings: Settings) -> None:
    """Post-process the generated schema so it says what this configuration does.

    * error responses are ``application/problem+json`` only (FastAPI adds ``application/json`` too);
    * the bearer key is *required* only where this configuration enforces it: with keys configured,
      on ``require_api_key`` routes, and on ``require_write_key`` routes (marked with
      :data:`WRITE_KEY_MARK`) only with ``LANGCLASS_REQUIRE_KEY_FOR_WRITES``; elsewhere it is optional
      (``security: [{}, {"ApiKey": []}]``).
    """
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                for status, response in (operation.get("responses") or {}).items():
                    content = response.get("content") or {}
                    if str(status)[:1] in "45" and "application/problem+json" in content:
                        content.pop("application/json", None)
                write_only = bool(operation.pop(WRITE_KEY_MARK, False))
                security = operation.get("security")
                required = settings.auth_enabled and (not write_only or settings.require_key_for_writes)
                if security and not required:
                    operation["security"] = [{}, *[s for s in security if s]]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
