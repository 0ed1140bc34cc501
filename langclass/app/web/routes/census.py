"""``/v1/census``: stored census runs (``langclass census``), their counts and their languages.

``GET /v1/census`` lists runs; ``GET /v1/census/{run}`` gives the counts (per class, per state
number with the published counts, the strict parts of the inclusions, the intersections, the
undecided) and, with ``in`` / ``not_in`` / ``states``, a page of the languages that pass the filter
(``offset``, ``limit``, ``total``); ``GET /v1/census/{run}/languages`` is that page alone. The data
come from :mod:`langclass.app.store.census_runs`.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path, Query, Request

from langclass.app.store import census_runs as runs
from langclass.app.store.db import Database
from langclass.app.usecases.census_schemas import CensusMembers, CensusRun, CensusRunPage
from langclass.app.usecases.schemas import CURSOR_SCHEMA, NO_NUL_PATTERN
from langclass.core.base.errors import InputError
from ..body import JsonBodyRoute
from ..problems import NotFoundError, problem_responses

__all__ = ["router", "run_resource"]

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)

RunId = Annotated[str, Path(description="the run's id (UUID)", max_length=64, json_schema_extra={"pattern": NO_NUL_PATTERN})]
_ITEMS = {"items": {"type": "string", "maxLength": 2000, "pattern": NO_NUL_PATTERN}}
InList = Annotated[list[str], Query(alias="in", max_length=64, json_schema_extra=_ITEMS,
                                    description="class keys the languages are members of, comma-separated or repeated (e.g. ltl_p_y_mod)")]
NotInList = Annotated[list[str], Query(max_length=64, json_schema_extra=_ITEMS,
                                       description="class keys the languages are decided non-members of (e.g. ltl_p_y)")]


def _db(request: Request) -> Database:
    return request.app.state.db


def run_resource(row: Any, *, full: bool = True) -> dict[str, Any]:
    """A run row as the CensusRun / CensusRunSummary resource (with links)."""
    out = runs.run_record(row, full=full)
    out["links"] = {"self": f"/v1/census/{row.id}", "page": f"/census/{row.id}",
                    "languages": f"/v1/census/{row.id}/languages"}
    return out


def _member_resources(row: Any, q: runs.MemberQuery, offset: int, limit: int) -> dict[str, Any]:
    total, items = runs.member_page(row, q, offset=offset, limit=limit)  # CensusDataError: 409 census-data-changed
    for it in items:
        it["links"] = {"language_url": f"/census/{row.id}/languages/{it['index']}",
                       "language": f"/v1/languages/{it['fingerprint']}"}
    nxt = offset + len(items) if offset + len(items) < total else None
    return {"filter": {"in": list(q.in_), "not_in": list(q.not_in), "states": q.states}, "total": total,
            "offset": offset, "limit": limit, "items": items, "next_offset": nxt}


def _load(db: Database, run_id: str) -> Any:
    with db.session_scope() as session:
        row = runs.get_run(session, run_id)
    if row is None:
        raise NotFoundError(f"no census run with id {run_id!r}", field="run")
    return row


def _query(row: Any, in_: list[str], not_in: list[str], states: int | None) -> runs.MemberQuery:
    try:
        q = runs.parse_filter(list(row.class_keys), in_, not_in, states)
    except runs.UnknownClassKey as err:
        raise InputError(str(err), field="in" if err.key in {p.strip() for v in in_ for p in v.split(",")} else "not_in") from None
    if states is not None and states > row.max_states:
        raise InputError(f"states={states} exceeds the run's N={row.max_states}", field="states")
    return q


@router.get("/census", response_model=CensusRunPage, tags=["census"], summary="Stored census runs",
            responses=problem_responses(400, 422))
async def list_census_runs(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=200, description="page size")] = 50,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page", json_schema_extra=CURSOR_SCHEMA)] = None,
) -> dict[str, Any]:
    """Stored census runs, newest first (cursor pagination as ``GET /v1/languages``)."""
    db = _db(request)

    def query() -> dict[str, Any]:
        with db.session_scope() as session:
            rows, nxt = runs.list_runs(session, limit=limit, cursor=cursor)
            return {"items": [run_resource(r, full=False) for r in rows], "next_cursor": nxt, "limit": limit}

    return await anyio.to_thread.run_sync(query)


@router.get("/census/{run_id}", response_model=CensusRun, tags=["census"], summary="One census run: counts and a filtered page of languages",
            responses=problem_responses(404, 409, 422))
async def get_census_run(
    run_id: RunId,
    request: Request,
    in_: InList = [],  # noqa: B006 - FastAPI reads the default, never mutated
    not_in: NotInList = [],  # noqa: B006
    states: Annotated[int | None, Query(ge=1, le=10, description="only languages whose minimal DFA has exactly this many states")] = None,
    offset: Annotated[int, Query(ge=0, le=2**40, description="members to skip")] = 0,
    limit: Annotated[int, Query(ge=1, le=200, description="members per page")] = 50,
) -> dict[str, Any]:
    """The run's counts (:meth:`langclass.core.census.run.Census.to_dict`) and, when ``in``, ``not_in``
    or ``states`` is given, ``members``: the languages in every class of ``in`` and decided outside
    every class of ``not_in`` (``?in=ltl_p_y_mod&not_in=ltl_p_y``), in the run's order.

    Errors: 404 unknown run; 422 an unknown class key (the message lists the run's classes), a
    states number above N, a bad limit or offset; 409 ``census-data-changed`` the data file is missing
    or altered (checked on every request)."""
    db = _db(request)

    def load() -> dict[str, Any]:
        row = _load(db, run_id)
        runs.load_data(row)  # the counts stand on the data file: missing or altered is 409, as on the page
        out = run_resource(row)
        if in_ or not_in or states is not None:
            out["members"] = _member_resources(row, _query(row, in_, not_in, states), offset, limit)
        return out

    return await anyio.to_thread.run_sync(load)


@router.get("/census/{run_id}/languages", response_model=CensusMembers, tags=["census"],
            summary="A filtered page of a census run's languages", responses=problem_responses(404, 409, 422))
async def list_census_members(
    run_id: RunId,
    request: Request,
    in_: InList = [],  # noqa: B006
    not_in: NotInList = [],  # noqa: B006
    states: Annotated[int | None, Query(ge=1, le=10, description="only languages whose minimal DFA has exactly this many states")] = None,
    offset: Annotated[int, Query(ge=0, le=2**40, description="members to skip")] = 0,
    limit: Annotated[int, Query(ge=1, le=200, description="members per page")] = 50,
) -> dict[str, Any]:
    """The languages of a run that pass the filter (every language without one); errors as
    ``GET /v1/census/{run}``."""
    db = _db(request)

    def load() -> dict[str, Any]:
        row = _load(db, run_id)
        return _member_resources(row, _query(row, in_, not_in, states), offset, limit)

    return await anyio.to_thread.run_sync(load)
