"""The census pages (not part of the OpenAPI schema; docs/web.md):

* ``GET /census``: the stored runs (``langclass census``), newest first;
* ``GET /census/{run}``: counts per state number beside the published counts, counts per class, the
  class lattice annotated with the number of languages in each class, the strict parts of the
  inclusions, and a filter form (in / not in / states) listing member languages, paged;
* ``GET /census/{run}/languages/{index}``: opens one language of the run as its language page:
  303 to ``/languages/{fingerprint}``, storing the language first (through the path of
  ``POST /v1/languages``) when it is not stored yet.

Why a GET may store: the record is fixed by the run (no user input reaches it), and storing is
idempotent by fingerprint, so a repeated or cross-site GET can only create the one record that the
link names, under the classification limits of any other store. With
``LANGCLASS_REQUIRE_KEY_FOR_WRITES`` (and keys set) a language not yet stored is stored by a GET
only with ``Authorization: Bearer <key>``; otherwise 403 ``forbidden`` (an HTML page for a browser,
problem+json when JSON is asked for) saying so — signing in and adding it from its DFA, or
``POST /v1/languages`` with the member's ``dfa`` and a key, are the ways.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path as PathParam, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from langclass.app.store import census_runs as runs
from langclass.app.store import repository as repo
from langclass.app.usecases.schemas import LanguageInput
from langclass.core.algebra.lattice import CLASS_INFO, INCLUSIONS
from langclass.core.base.errors import InputError
from langclass.core.drawing.svg import lattice_svg
from .pages import templates
from .problems import ForbiddenError, NotFoundError
from .security import check_key

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50


def _row(request: Request, run_id: str) -> Any:
    with request.app.state.db.session_scope() as session:
        row = runs.get_run(session, run_id)
    if row is None:
        raise NotFoundError(f"no census run with id {run_id!r}", field="run")
    return row


@router.get("/census", response_class=HTMLResponse)
async def census_runs_page(request: Request, cursor: Annotated[str | None, Query(max_length=1000)] = None) -> HTMLResponse:
    """The stored census runs."""
    db = request.app.state.db

    def load() -> tuple[list[dict[str, Any]], str | None]:
        with db.session_scope() as session:
            rows, nxt = runs.list_runs(session, limit=PAGE_SIZE, cursor=cursor)
            return [runs.run_record(r, full=False) for r in rows], nxt

    items, nxt = await anyio.to_thread.run_sync(load)
    return templates.TemplateResponse(request, "census_runs.html", {"items": items, "next_cursor": nxt})


@router.get("/census/{run_id}", response_class=HTMLResponse)
async def census_run_page(
    request: Request,
    run_id: Annotated[str, PathParam(max_length=64)],
    in_: Annotated[list[str], Query(alias="in", max_length=64)] = [],  # noqa: B006 - read only
    not_in: Annotated[list[str], Query(max_length=64)] = [],  # noqa: B006
    states: Annotated[str | None, Query(max_length=4)] = None,
    offset: Annotated[int, Query(ge=0, le=2**40)] = 0,
) -> HTMLResponse:
    """One run: counts, the annotated lattice, and the filtered member list."""
    in_ = [v for v in in_ if v]
    not_in = [v for v in not_in if v]
    try:
        n_states = int(states) if states else None
    except ValueError:
        raise InputError(f"states must be a whole number, not {states!r}", field="states") from None

    def load() -> dict[str, Any]:
        row = _row(request, run_id)
        record = runs.run_record(row)
        try:
            q = runs.parse_filter(list(row.class_keys), in_, not_in, n_states)
        except runs.UnknownClassKey as err:
            raise InputError(str(err), field="in" if err.key in {p.strip() for v in in_ for p in v.split(",")}
                             else "not_in") from None
        if n_states is not None and not 1 <= n_states <= row.max_states:
            raise InputError(f"states must be in 1..{row.max_states}", field="states")
        total, items = runs.member_page(row, q, offset=offset, limit=PAGE_SIZE)  # 409 census-data-changed
        return {"record": record, "q": q, "total": total, "items": items}

    ctx = await anyio.to_thread.run_sync(load)
    rec = ctx["record"]
    keys = rec["class_keys"]
    inclusions = [(sub, sup, rec["differences"].get(f"{sup}-{sub}")) for sub, sup in INCLUSIONS
                  if sub in keys and sup in keys]
    by_states = [(n, c, rec["published"].get(n)) for n, c in rec["by_states"].items()]
    q = ctx["q"]
    base = [("in", k) for k in q.in_] + [("not_in", k) for k in q.not_in] + ([("states", str(q.states))] if q.states else [])
    from urllib.parse import urlencode

    nxt = urlencode(base + [("offset", str(offset + PAGE_SIZE))]) if offset + PAGE_SIZE < ctx["total"] else None
    prev = urlencode(base + [("offset", str(max(0, offset - PAGE_SIZE)))]) if offset > 0 else None
    return templates.TemplateResponse(request, "census_run.html", {
        "run": rec, "by_states": by_states, "inclusions": inclusions, "CLASS_INFO": CLASS_INFO,
        "lattice_svg": lattice_svg({}, counts=rec["classes"], total=rec["total"],
                                   href=f"/census/{run_id}?in={{key}}"),
        "q": q, "total": ctx["total"], "items": ctx["items"], "offset": offset, "next_query": nxt, "prev_query": prev,
    })


def _check_may_store(request: Request, run_id: str, index: int) -> None:
    """Whether this GET may store the member: always, unless writes need a key
    (``LANGCLASS_REQUIRE_KEY_FOR_WRITES`` with keys set, as for ``POST /v1/languages``); then only
    with ``Authorization: Bearer <key>`` (a wrong key is 401). A browser's session cookie does not
    count on a plain GET (it counts only with the pages' header: security.py)."""
    settings = request.app.state.settings
    if not (settings.require_key_for_writes and settings.api_keys):
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        check_key(settings, token.strip())
        return
    raise ForbiddenError(
        f"opening census member #{index} stores it as a language, and storing needs an API key here "
        "(LANGCLASS_REQUIRE_KEY_FOR_WRITES): sign in and add it from its DFA on /languages, send Authorization: Bearer <key>, "
        f"or POST its dfa (from GET /v1/census/{run_id}/languages) to /v1/languages with a key", field="Authorization")


@router.get("/census/{run_id}/languages/{index}")
async def census_member_page(request: Request, run_id: Annotated[str, PathParam(max_length=64)],
                             index: Annotated[int, PathParam(ge=0, le=2**40)]) -> Response:
    """Open the ``index``-th language of a run as its language page (storing it when needed)."""
    from .routes.languages import _budget_end, store_language

    db = request.app.state.db

    def member() -> tuple[Any, bool]:
        row = _row(request, run_id)
        try:
            dfa, _n, _p = runs.member_dfa(row, index)
        except IndexError:
            raise NotFoundError(f"census run {run_id} has no language #{index} (it has {row.total})", field="index") from None
        with db.session_scope() as session:
            return dfa, repo.get_language(session, dfa.fingerprint()) is not None

    dfa, stored = await anyio.to_thread.run_sync(member)
    if not stored:
        _check_may_store(request, run_id, index)
        body = LanguageInput(dfa=dfa.to_canonical_dict())
        await store_language(body, request, Response(), budget_end=_budget_end(request))
    return RedirectResponse(f"/languages/{dfa.fingerprint()}", status_code=303)
