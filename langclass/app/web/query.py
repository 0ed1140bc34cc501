"""Strict query strings: an unknown or repeated query parameter is an error, not silently ignored.

FastAPI reads the query parameters a route declares and ignores every other one, and of a repeated
scalar parameter it keeps the last. A typo (``?clas=ltl_p_mod``) then answers an unfiltered listing
and ``?class=a&class=b`` answers only ``class=b`` — both look like correct answers. :func:`strict_query`
is installed once as an application-wide dependency (``FastAPI(dependencies=[Depends(strict_query)])``),
so every route of every router — present and future — refuses, with 422 ``validation-error`` naming
the parameter (``field``; ``errors[i].location`` is ``query``):

* a parameter the route does not declare (``type`` = ``unknown_parameter``; the message lists the
  parameters the route takes and a close match when there is one);
* a parameter given more than once where the route takes one value (``type`` = ``repeated_parameter``);
  list-typed parameters may repeat.

The same rule bodies follow (``extra="forbid"`` models, repeated JSON keys refused in
:mod:`langclass.app.web.body`).
"""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any

from fastapi import Request
from fastapi._compat import field_annotation_is_sequence
from fastapi.exceptions import RequestValidationError

__all__ = ["strict_query", "declared_query_parameters"]

_CACHE_ATTR = "_langclass_query_parameters"


def declared_query_parameters(route: Any) -> dict[str, bool]:
    """The query parameters ``route`` declares (its own and its dependencies'), by the name a client
    sends (the alias): ``{name: may_repeat}`` where ``may_repeat`` is True for list-typed parameters.

    Cached on the route object (routes are built once per application)."""
    cached = getattr(route, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    out: dict[str, bool] = {}
    dependant = getattr(route, "dependant", None)
    stack = [dependant] if dependant is not None else []
    while stack:
        current = stack.pop()
        for field in current.query_params:
            out[field.alias] = field_annotation_is_sequence(field.field_info.annotation)
        stack.extend(current.dependencies)
    try:
        setattr(route, _CACHE_ATTR, out)
    except AttributeError:  # pragma: no cover - a route type with __slots__
        pass
    return out


async def strict_query(request: Request) -> None:
    """Application-wide dependency: refuse unknown and repeated query parameters.

    ``async`` on purpose: it runs on every request, ``/healthz`` included, and a plain ``def``
    dependency would take a thread of the shared pool for microseconds of work (under load that
    pool is where a probe would wait).

    Raises:
        RequestValidationError: rendered as 422 ``validation-error``; ``errors`` has one entry per
            offending parameter, ``field`` names the first.
    """
    route = request.scope.get("route")
    if route is None or getattr(route, "dependant", None) is None:
        return
    declared = declared_query_parameters(route)
    counts = Counter(key for key, _ in request.query_params.multi_items())
    errors: list[dict[str, Any]] = []
    for key, count in counts.items():
        if key not in declared:
            takes = ", ".join(sorted(declared)) if declared else "no query parameters"
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append({
                "type": "unknown_parameter", "loc": ("query", key), "input": request.query_params.getlist(key),
                "msg": f"unknown query parameter {key!r}{hint}; this endpoint takes: {takes}",
            })
        elif count > 1 and not declared[key]:
            errors.append({
                "type": "repeated_parameter", "loc": ("query", key), "input": request.query_params.getlist(key),
                "msg": f"query parameter {key!r} given {count} times; it takes one value",
            })
    if errors:
        raise RequestValidationError(errors)
