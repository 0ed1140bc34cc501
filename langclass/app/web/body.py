"""Strict reading of JSON request bodies, before FastAPI validates them against the schema.

Routes of routers built with ``route_class=JsonBodyRoute`` that take a body read it through
:func:`read_json_body`, which refuses, each with its own problem type:

* a body whose ``Content-Type`` is not JSON (``application/json`` or ``application/*+json``, charset
  UTF-8 if given) → 415 ``unsupported-media-type``;
* bytes that are not UTF-8 → 400 ``malformed-json`` naming the byte offset;
* text that is not JSON → 400 ``malformed-json`` naming line, column and reason;
* arrays/objects nested deeper than ``LANGCLASS_MAX_JSON_DEPTH`` → 422 ``limit-exceeded`` naming
  ``max_json_depth``;
* more than ``LANGCLASS_MAX_JSON_ELEMENTS`` JSON values (scalars, arrays and objects; object keys
  are not counted) → 422 ``limit-exceeded`` naming ``max_json_elements``, counted on the text
  *before* anything is decoded (:func:`count_json_values` stops one past the bound);
* a key repeated in one object (``json.loads`` would silently keep the last) → 422
  ``invalid-input`` (``invalid-dfa`` inside ``dfa``) naming the key's path;
* a key or string holding a lone UTF-16 surrogate (``"\\ud800"``: valid JSON escape, not Unicode
  text) → 422 ``invalid-input`` naming the field.

The decoded value is then handed to FastAPI (``request._json``), so the schema validation and the
OpenAPI document are unchanged.

All of it — counting, decoding, checking, and validating the value against the route's body model
(whose errors for a large invalid value are costly to build) — runs in a thread of the app's own
(two per app, never the event loop, never the shared pool): a ~1 MB body of 499,000 integers took
the event loop for 4–5 s before, stalling every request in flight, ``/healthz`` included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from langclass.core.base.errors import DfaFormatError, InputError, LimitExceeded
from langclass.app.errors import MalformedJsonError, UnsupportedMediaTypeError

__all__ = ["JsonBodyRoute", "read_json_body", "decode_json_strict", "count_json_values", "refuse_nul_parameters"]

_JSON_MEDIA = re.compile(r"^application/(?:[a-z0-9!#$&^_.+-]+\+)?json$")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so repeated keys stay visible."""


def _show(text: str) -> str:
    """``text`` safe to print: lone surrogates as ``\\ud800``-style escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = _show(key)
    return f"{path}.{key}" if path else key


MAX_INT_DIGITS = 4300
"""Longest integer literal read from a body (Python's own bound for decimal conversion)."""


def _refuse_constant(name: str) -> Any:
    raise MalformedJsonError(f"the request body is not valid JSON: {name} is not a JSON number (RFC 8259 has no NaN or Infinity)",
                             constant=name)


def _parse_int(digits: str) -> int:
    n = len(digits.lstrip("-"))
    if n > MAX_INT_DIGITS:
        raise MalformedJsonError(f"the request body holds an integer of {n} digits; at most {MAX_INT_DIGITS} are read", digits=n)
    return int(digits)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_WHITESPACE = re.compile(r"\s+")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def count_json_values(text: str) -> int:
    """The number of JSON values in ``text`` — scalars, arrays and objects, object keys not counted:
    1 + commas + non-empty containers, outside strings.

    Exact for JSON text; for text that is not JSON, a number the decoder's error comes after. Cost:
    a few C-speed passes over the text (string literals replaced by a digit, white space removed, then
    ``str.count``); :func:`decode_json_strict` calls it only when the raw text's commas and
    brackets (an upper bound) are over the limit.

    >>> count_json_values('{"a": [1, 2, {}], "b,c": "x,y"}')
    6
    """
    bare = _WHITESPACE.sub("", _JSON_STRING.sub("0", text))  # a string: one scalar
    return 1 + bare.count(",") + bare.count("[") + bare.count("{") - bare.count("[]") - bare.count("{}")


class _Fallback(Exception):
    """The fast decoding path saw something to refuse: the precise walk names it."""


def _fast_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Fallback
    return out


def _decode_fast(text: str, max_depth: int) -> Any:
    """``json.loads`` with the checks of :func:`decode_json_strict` done cheaply (plain dicts, a
    repeated key or too deep a nesting raises :class:`_Fallback`; lone surrogates can only be
    written as ``\\uD8xx``-``\\uDFxx`` escapes, so text without one has none)."""
    if _SURROGATE_ESCAPE.search(text):
        raise _Fallback
    tree = json.loads(text, object_pairs_hook=_fast_object, parse_constant=_refuse_constant, parse_int=_parse_int)
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if depth > max_depth:
            raise _Fallback
        stack.extend((v, depth + 1) for v in children if type(v) is dict or type(v) is list)
    return tree


def decode_json_strict(text: str, max_depth: int, max_elements: int | None = None) -> Any:
    """Parse ``text`` as JSON, refusing repeated keys, lone surrogates, deep nesting and (with
    ``max_elements``) too many values.

    Args:
        text: the body as text.
        max_depth: deepest allowed nesting of arrays/objects (the top level is depth 1).
        max_elements: most JSON values (:func:`count_json_values`), counted before decoding.

    Returns:
        the value with plain ``dict``/``list`` containers.

    Raises:
        MalformedJsonError: not JSON (``position`` = character offset), ``NaN`` / ``Infinity``
            (not JSON numbers), or an integer longer than :data:`MAX_INT_DIGITS` digits.
        LimitExceeded: ``max_json_depth``; ``max_json_elements``.
        InputError: a repeated key or a lone surrogate (``field`` = its path); ``DfaFormatError``
            for a repeated key inside ``dfa``.
    """
    if max_elements is not None and 1 + text.count(",") + text.count("[") + text.count("{") > max_elements:
        n = count_json_values(text)
        if n > max_elements:
            raise LimitExceeded("max_json_elements", max_elements,
                                f"the JSON body holds more than max_json_elements={max_elements} values (arrays, objects and "
                                "scalars; object keys not counted)")
    try:
        return _decode_fast(text, max_depth)
    except _Fallback:
        pass
    except RecursionError:
        raise LimitExceeded(
            "max_json_depth", max_depth, f"the JSON body nests arrays/objects deeper than max_json_depth={max_depth}"
        ) from None
    except json.JSONDecodeError:
        pass  # the precise walk below reports it
    return _decode_precise(text, max_depth)


def _decode_precise(text: str, max_depth: int) -> Any:
    """:func:`decode_json_strict` walking every value (the first problem in document order is named)."""
    try:
        tree = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_refuse_constant, parse_int=_parse_int)
    except RecursionError:
        raise LimitExceeded(
            "max_json_depth", max_depth, f"the JSON body nests arrays/objects deeper than max_json_depth={max_depth}"
        ) from None
    except json.JSONDecodeError as exc:
        raise MalformedJsonError(
            f"the request body is not valid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno} (char {exc.pos})",
            position=exc.pos, line=exc.lineno, column=exc.colno,
        ) from None

    def check_string(value: str, path: str) -> None:
        m = _SURROGATE.search(value)
        if m is not None:
            raise InputError(
                f"{path or 'body'}: the string holds a lone UTF-16 surrogate U+{ord(m.group()):04X} at index {m.start()}, "
                "which is not Unicode text",
                field=path or None,
            )

    # iterative walk: (node, path, depth, setter) — containers are rebuilt as dict/list
    root: list[Any] = [None]
    stack: list[tuple[Any, str, int, Callable[[Any], None]]] = [(tree, "", 1, lambda v: root.__setitem__(0, v))]
    while stack:
        node, path, depth, put = stack.pop()
        if isinstance(node, (_Pairs, list)) and depth > max_depth:
            raise LimitExceeded(
                "max_json_depth", max_depth,
                f"the JSON body nests arrays/objects deeper than max_json_depth={max_depth} (at {path or 'the top level'})",
                field=path or None,
            )
        if isinstance(node, _Pairs):
            out: dict[str, Any] = {}
            children = []
            for key, value in node:
                where = _child(path, key)
                check_string(key, where)
                if key in out:
                    cls = DfaFormatError if where.startswith("dfa.") else InputError
                    raise cls(f"duplicate JSON key {_show(key)!r} at {where}", field=where)
                out[key] = None
                children.append((value, where, depth + 1, lambda v, o=out, k=key: o.__setitem__(k, v)))
            stack.extend(reversed(children))  # first problem in document order is reported
            put(out)
        elif isinstance(node, list):
            items: list[Any] = [None] * len(node)
            stack.extend(
                (value, _child(path, i), depth + 1, lambda v, o=items, j=i: o.__setitem__(j, v))
                for i, value in reversed(list(enumerate(node)))
            )
            put(items)
        else:
            if isinstance(node, str):
                check_string(node, path)
            put(node)
    return root[0]


def _check_and_decode(body: bytes, content_type: str | None, max_depth: int, max_elements: int | None) -> Any:
    """The checks of :func:`read_json_body` on the raw body (blocking; run in a thread)."""
    media, _, params = (content_type or "").partition(";")
    media = media.strip().lower()
    if not _JSON_MEDIA.match(media):
        got = f"Content-Type {_show(media)!r}" if media else "no Content-Type"
        raise UnsupportedMediaTypeError(f"the request body must be application/json (got {got})", field="Content-Type")
    charset = re.search(r"charset\s*=\s*\"?([^\";\s]+)", params, re.I)
    if charset is not None and charset.group(1).lower() not in ("utf-8", "utf8"):
        raise UnsupportedMediaTypeError(
            f"the request body must be UTF-8 JSON (got charset={_show(charset.group(1))!r})", field="Content-Type"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJsonError(
            f"the request body is not valid UTF-8: byte 0x{body[exc.start]:02x} at offset {exc.start} ({exc.reason})",
            position=exc.start,
        ) from None
    return decode_json_strict(text, max_depth, max_elements)


def body_threads(app: Any) -> anyio.CapacityLimiter:
    """The app's two threads for reading request bodies (made on first use, on the event loop)."""
    limiter = getattr(app.state, "body_threads", None)
    if limiter is None:
        limiter = app.state.body_threads = anyio.CapacityLimiter(2)
    return limiter


async def read_json_body(request: Request, max_depth: int, max_elements: int | None = None,
                         validate: Callable[[Any], None] | None = None) -> None:
    """Check and decode the JSON body of ``request`` (see the module docstring) in the app's body
    threads (:func:`body_threads`), then ``validate(value)`` there too; caches the value where
    FastAPI's ``request.json()`` finds it. An empty body without a Content-Type is left to the
    schema (which reports a missing body)."""
    body = await request.body()
    content_type = request.headers.get("content-type")
    if not body and not content_type:
        return

    def work() -> Any:
        value = _check_and_decode(body, content_type, max_depth, max_elements)
        if validate is not None:
            validate(value)
        return value

    request._json = await anyio.to_thread.run_sync(work, limiter=body_threads(request.app))  # FastAPI's request.json() returns this


class JsonBodyRoute(APIRoute):
    """An ``APIRoute`` whose JSON body (if the route takes one) goes through :func:`read_json_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        field = self.body_field
        embedded = getattr(self, "_embed_body_fields", True)

        def validate(value: Any) -> None:
            # the body model's validation, as FastAPI runs it next on the event loop for a single
            # not-embedded body: an invalid value's errors are raised from here, off the loop
            if embedded:
                return
            _, errors = field.validate(value, {}, loc=("body",))
            if errors:
                raise RequestValidationError(errors, body=value)

        async def strict_handler(request: Request) -> Response:
            settings = request.app.state.settings
            await read_json_body(request, settings.max_json_depth, getattr(settings, "max_json_elements", None), validate)
            return await handler(request)

        return strict_handler


async def refuse_nul_parameters(request: Request) -> None:
    """Application-wide dependency: a path or query parameter holding NUL (U+0000, ``%00``) is
    refused with 422 naming it — no id contains one, and PostgreSQL text cannot hold it (the
    query would fail with a 500). ``async`` so it runs on the event loop, never in the shared
    thread pool (it runs on every request, ``/healthz`` included).

    Raises:
        InputError: 422 ``invalid-input`` with ``field`` the parameter's name.
    """
    bad = [("path", k) for k, v in request.path_params.items() if isinstance(v, str) and "\x00" in v]
    bad += [("query", k) for k, v in request.query_params.multi_items() if "\x00" in v or "\x00" in k]
    if bad:
        where, name = bad[0]
        raise InputError(f"{where} parameter {_show(name)!r}: NUL (U+0000) is not allowed", field=_show(name), location=where)
