"""``/v1`` routes for languages, classification and the encoding catalogue.

Routes stay thin: parse/classify through :mod:`langclass.app.usecases.service` (off the event loop, under the
limits), store and query through :mod:`langclass.app.store.repository` (in worker threads).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import PlainTextResponse

from langclass.core.base.errors import InputError, LimitExceeded
from langclass.app.store import repository as repo
from ..body import JsonBodyRoute
from langclass.app.store.db import Database
from ..problems import ConflictError, NotFoundError, problem_responses
from langclass.app.usecases.schemas import (
    CURSOR_SCHEMA,
    NO_NUL_PATTERN,
    Classification,
    ClassifyInput,
    Language,
    LanguageEncodings,
    LanguageInput,
    LanguagePage,
    LanguagePatch,
    MonoidPage,
    StoredLanguage,
)
from ..security import require_api_key, require_write_key
from langclass.app.execution.coalesce import InFlight
from langclass.app.execution.runner import ClassifyRunner
from langclass.app.usecases.service import (
    ClassificationCache,
    ClassifiedJson,
    ParsedLanguage,
    analyze_language,
    classification_record,
    classify_json,
    code_version,
    dfa_from_record,
    monoid_page,
    parse_language,
    predicted_light,
    state_names_record,
)
from langclass.app.settings import Settings
from langclass.app.usecases.export_csv import csv_rows, export_row

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)

LanguageId = Annotated[str, Path(description="the language's fingerprint (SHA-256 hex)", max_length=200, json_schema_extra={"pattern": NO_NUL_PATTERN})]


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _db(request: Request) -> Database:
    return request.app.state.db


def _runner(request: Request) -> ClassifyRunner:
    return request.app.state.runner


def _classification_cache(request: Request) -> ClassificationCache:
    """The app's cache of finished classifications (made on first use; handlers run on the event loop)."""
    cache = getattr(request.app.state, "classification_cache", None)
    if cache is None:
        cache = request.app.state.classification_cache = ClassificationCache()
    return cache


def _in_flight(request: Request) -> InFlight:
    """The app's table of classifications in flight (identical requests share one computation)."""
    table = getattr(request.app.state, "classify_in_flight", None)
    if table is None:
        table = request.app.state.classify_in_flight = InFlight()
    return table


def _budget_end(request: Request) -> float | None:
    """When the request must be answered: its arrival (``request.state.arrived``, stamped by the
    app's outermost middleware) plus ``time_limit_s``."""
    return _runner(request).budget_end(getattr(request.state, "arrived", None))


def _version(request: Request) -> str:
    return request.app.state.settings.code_version or code_version()


async def _parse(request: Request, body: ClassifyInput, budget_end: float | None = None) -> ParsedLanguage:
    limits = _settings(request).limits()
    return await _runner(request).run(
        parse_language, regex=body.regex, dfa=body.dfa, formula=body.formula, alphabet=body.alphabet, limits=limits,
        budget_end=budget_end,
    )


def _load(db: Database, language_id: str) -> dict[str, Any]:
    with db.session_scope() as session:
        row = repo.get_language(session, language_id)
        if row is None:
            raise NotFoundError(f"no language with id {language_id!r}", field="id")
        return repo.language_resource(row)


# --- classify (no storage) ------------------------------------------------------------------


@router.post(
    "/classify",
    response_model=Classification,
    tags=["classify"],
    summary="Classify a language without storing it",
    responses=problem_responses(400, 413, 415, 422, 503),
)
async def classify_language(body: ClassifyInput, request: Request) -> Response:
    """Parse the language, build its minimal DFA and syntactic monoid, and return every class with
    its certificate and the encoding that suffices. Nothing is stored. A request this API process
    has already answered (same text, alphabet and limits) is served from its in-memory cache of the
    last 512 classifications: the same record, with the timings of its first computation.

    A small request (one whose minimal DFA, found by a parse bounded to
    ``LANGCLASS_CLASSIFY_LIGHT_MAX_STATES`` states, fits in that bound) runs first in the light lane under hard bounds, so it does not wait behind heavy
    ones; the record is built and serialized (validated against ``Classification``) in the worker
    process, so the API process only passes the bytes on. One wall-clock budget of
    ``LANGCLASS_TIME_LIMIT_S`` runs from the request's arrival to its answer. Identical requests
    in flight at the same time share one computation (and its answer or error).
    """
    settings = _settings(request)
    limits = settings.limits()
    cache = _classification_cache(request)
    key = cache.key(regex=body.regex, dfa=body.dfa, formula=body.formula, alphabet=body.alphabet, limits=limits)
    hit = cache.get(key)
    if hit is None:  # not classified by this app yet: one worker round trip, shared by identical requests in flight
        runner = _runner(request)
        budget_end = _budget_end(request)

        async def compute() -> ClassifiedJson:
            light = await runner.predict(
                predicted_light, key, regex=body.regex, dfa=body.dfa, formula=body.formula, alphabet=body.alphabet,
                max_states=settings.classify_light_max_states, limits=limits,
            ) if runner.light_runner is not None else False
            answer = await runner.run_light_first(
                classify_json, regex=body.regex, dfa=body.dfa, formula=body.formula, alphabet=body.alphabet, limits=limits,
                version=_version(request), light_ok=light, budget_end=budget_end, light_key=key,
            )
            cache.put(key, answer, num_states=answer.num_states)
            return answer

        hit = await _in_flight(request).run(key, compute)
    answer: ClassifiedJson = hit
    return Response(answer.body, media_type="application/json")


# --- languages --------------------------------------------------------------------------------


@router.post(
    "/languages",
    status_code=201,
    response_model=StoredLanguage,
    tags=["languages"],
    summary="Classify and store a language (idempotent)",
    openapi_extra={"x-langclass-write-key": True},
    responses={
        200: {"model": StoredLanguage, "description": "The language (same fingerprint) was already stored: the stored record, "
              "unchanged (`already_stored: true`; labels given in the request are not applied — PATCH changes them)."},
        201: {"description": "Stored a new language (`already_stored: false`)."},
        **problem_responses(400, 401, 413, 415, 422, 503),
    },
)
async def create_language(
    body: LanguageInput, request: Request, response: Response, _key: str | None = Depends(require_write_key)
) -> dict[str, Any]:
    """Classify and store. Two spellings of the same language (same canonical minimal DFA) are one
    record: the first POST answers 201 (``already_stored: false``), later ones 200 with the stored
    record returned unchanged (``already_stored: true``; a name or tags that differ from the stored
    ones are listed in ``labels_not_applied`` — ``PATCH /v1/languages/{id}`` changes them)."""
    return await store_language(body, request, response, budget_end=_budget_end(request))


async def store_language(body: LanguageInput, request: Request, response: Response, *, budget_end: float | None) -> dict[str, Any]:
    """What ``POST /v1/languages`` does, under the budget ending at ``budget_end`` (a monotonic
    instant: the request's arrival plus the time limit for one language; for each item of
    ``POST /v1/languages:batch`` its own start plus the limit)."""
    db = _db(request)
    parsed = await _parse(request, body, budget_end)

    def existing() -> dict[str, Any] | None:
        with db.session_scope() as session:
            row = repo.get_language(session, parsed.fingerprint)
            return None if row is None else repo.language_resource(row)

    found = await anyio.to_thread.run_sync(existing)
    response.headers["Location"] = f"/v1/languages/{parsed.fingerprint}"
    limits = _settings(request).limits()

    def named(resource: dict[str, Any]) -> dict[str, Any]:
        # a DFA with the user's own state names: the answer maps canonical states to this request's
        # names, as POST /v1/classify does; otherwise to the stored source's names, as GET does
        if parsed.document is not None:
            return {**resource, "state_names": state_names_record(parsed.document, parsed.dfa)}
        return _with_stored_state_names(resource, limits)

    if found is not None:
        response.status_code = 200
        return named(_already_stored(found, body))
    analysis = await _runner(request).run(analyze_language, parsed.dfa, _settings(request).limits(), budget_end=budget_end)
    record = classification_record(parsed, analysis, _version(request))

    def store() -> tuple[dict[str, Any], bool]:
        with db.session_scope() as session:
            row, created = repo.insert_language(
                session,
                fingerprint=parsed.fingerprint,
                name=body.name,
                tags=list(body.tags),
                alphabet=list(parsed.dfa.alphabet),
                source=parsed.source,
                dfa=record["dfa"],
                num_states=int(record["num_states"]),
                analysis=analysis,
                code_version=record["code_version"],
            )
            return repo.language_resource(row), created

    resource, created = await anyio.to_thread.run_sync(store)
    response.status_code = 201 if created else 200
    return named({**resource, "already_stored": False} if created else _already_stored(resource, body))


def _with_stored_state_names(resource: dict[str, Any], limits: Any) -> dict[str, Any]:
    """``resource`` with ``state_names`` when it was stored from a DFA (canonical state → the names
    of the stored source's states, as in ``POST /v1/classify``)."""
    source = resource.get("source")
    if isinstance(source, dict) and source.get("kind") == "dfa" and isinstance(source.get("dfa"), dict):
        resource["state_names"] = state_names_record(source["dfa"], dfa_from_record(resource["dfa"], limits))
    return resource


def _already_stored(resource: dict[str, Any], body: LanguageInput) -> dict[str, Any]:
    """The 200 answer of a POST for a stored language: the stored record unchanged, saying so, with
    the request's labels that were not applied."""
    ignored: dict[str, Any] = {}
    if "name" in body.model_fields_set and body.name != resource.get("name"):
        ignored["name"] = body.name
    if "tags" in body.model_fields_set and list(body.tags) != list(resource.get("tags") or []):
        ignored["tags"] = list(body.tags)
    return {**resource, "already_stored": True, "labels_not_applied": ignored or None}


@router.patch(
    "/languages/{language_id}",
    response_model=Language,
    tags=["languages"],
    summary="Change the name and/or tags of a stored language",
    openapi_extra={"x-langclass-write-key": True},
    responses=problem_responses(400, 401, 404, 413, 415, 422),
)
async def patch_language(
    language_id: LanguageId, body: LanguagePatch, request: Request, _key: str | None = Depends(require_write_key)
) -> dict[str, Any]:
    """Replace the labels of a stored language: each field given (``name``, ``tags``) replaces the
    stored value, a field left out is kept, ``"name": null`` removes the name. Tags must be distinct
    (422 ``validation-error`` naming ``tags`` otherwise). The classification never changes. Needs a
    key exactly where ``POST /v1/languages`` does.

    Raises:
        NotFoundError: no language with this id (404).
    """
    if "tags" in body.model_fields_set and body.tags is None:
        raise InputError("tags must be a list (give [] to remove every tag)", field="tags")
    db = _db(request)
    changes: dict[str, Any] = {}
    if "name" in body.model_fields_set:
        changes["name"] = body.name
    if "tags" in body.model_fields_set:
        changes["tags"] = list(body.tags or [])

    def update() -> dict[str, Any]:
        with db.session_scope() as session:
            row = repo.update_language_labels(session, language_id, **changes)
            if row is None:
                raise NotFoundError(f"no language with id {language_id!r}", field="id")
            return repo.language_resource(row)

    return await anyio.to_thread.run_sync(update)


def _known_class_keys() -> set[str] | None:
    try:
        from langclass.core.algebra.lattice import CLASS_INFO
    except ImportError:  # pragma: no cover - before the lattice module exists
        return None
    return set(CLASS_INFO)


@router.get(
    "/languages",
    response_model=LanguagePage,
    tags=["languages"],
    summary="Browse stored languages (JSON, or CSV with ?format=csv)",
    responses={200: {"content": {"application/json": {}, "text/csv": {"schema": {"type": "string"}}},
                     "description": "A page of languages; with format=csv one CSV row each (header first) and the "
                                    "next page in the `Link` header (rel=next)"},
               **problem_responses(400, 422)},
)
async def list_languages(
    request: Request,
    class_key: Annotated[
        str | None, Query(alias="class", max_length=64, description="class key, e.g. ltl_p_mod", examples=["ltl_p_mod"],
              json_schema_extra={"enum": sorted(_known_class_keys() or ())})
    ] = None,
    member: Annotated[bool | None, Query(description="with `class`: members (true, the default) or non-members (false)")] = None,
    alphabet_size: Annotated[int | None, Query(ge=1, le=1_000_000, description="exact alphabet size")] = None,
    states: Annotated[int | None, Query(ge=1, le=2**31 - 1, description="exact number of states of the minimal DFA")] = None,
    min_states: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    max_states: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    name: Annotated[str | None, Query(max_length=200, description="case-insensitive substring of the name", json_schema_extra={"pattern": NO_NUL_PATTERN})] = None,
    tag: Annotated[str | None, Query(min_length=1, max_length=64, description="languages carrying exactly this tag", json_schema_extra={"pattern": NO_NUL_PATTERN})] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="page size")] = 50,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page", json_schema_extra=CURSOR_SCHEMA)] = None,
    format: Annotated[Literal["json", "csv"], Query(description="json (a page object) or csv (export)")] = "json",
) -> Any:
    """Stored languages in a stable order (creation time, then id), filtered and paginated by cursor.
    ``format=csv`` exports the page as CSV with the columns of the batch CSV
    (:data:`~langclass.app.usecases.export_csv.CSV_COLUMNS`: lists as JSON, the DFA source as JSON,
    period and encodings; formula-like cells prefixed with ``'``); the next page in ``Link``."""
    if member is not None and class_key is None:
        raise InputError("'member' needs 'class' (which class to test membership of)", field="member")
    if min_states is not None and max_states is not None and min_states > max_states:
        raise InputError(f"min_states={min_states} is greater than max_states={max_states}: no language can match",
                         field="min_states")
    for label, bound, bad in (("min_states", min_states, states is not None and min_states is not None and states < min_states),
                              ("max_states", max_states, states is not None and max_states is not None and states > max_states)):
        if bad:
            raise InputError(f"states={states} is outside {label}={bound}: no language can match", field="states")
    for label, value in (("name", name), ("tag", tag)):
        if value is not None and "\x00" in value:
            raise InputError(f"the {label} filter holds a NUL character (U+0000), which no stored {label} contains", field=label)
    if class_key is not None:
        known = _known_class_keys()
        if known is not None and class_key not in known:
            raise InputError(f"unknown class key {class_key!r}; known: {', '.join(sorted(known))}", field="class")
    db = _db(request)

    def query() -> dict[str, Any]:
        with db.session_scope() as session:
            rows, next_cursor = repo.list_languages(
                session,
                limit=limit,
                cursor=cursor,
                class_key=class_key,
                member=member,
                alphabet_size=alphabet_size,
                num_states=states,
                min_states=min_states,
                max_states=max_states,
                name=name,
                tag=tag,
            )
            if format == "csv":
                items = [export_row(source=r.source, analysis=r.analysis, status="ok", id=r.id, name=r.name,
                                    tags=list(r.tags or []), alphabet=list(r.alphabet), num_states=r.num_states,
                                    monoid_size=repo.language_summary(r)["monoid_size"], created_at=r.created_at)
                         for r in rows]
                return {"items": items, "next_cursor": next_cursor, "limit": limit}
            return {"items": [repo.language_summary(r) for r in rows], "next_cursor": next_cursor, "limit": limit}

    page = await anyio.to_thread.run_sync(query)
    if format == "csv":
        return _csv_page(request, page)
    return page


def _csv_page(request: Request, page: dict[str, Any]) -> Response:
    """A page of languages as CSV, by the writer the batch CSV uses too
    (:mod:`langclass.app.usecases.export_csv`: the same columns, formula-like cells neutralized)."""
    from urllib.parse import urlencode

    headers = {}
    if page["next_cursor"]:
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "cursor"] + [("cursor", page["next_cursor"])]
        headers["Link"] = f'<{request.url.path}?{urlencode(query)}>; rel="next"'
    return Response(csv_rows(page["items"]), media_type="text/csv; charset=utf-8", headers=headers)


@router.get(
    "/languages/{language_id}",
    response_model=Language,
    tags=["languages"],
    summary="One stored language",
    responses=problem_responses(404, 422),
)
async def get_language(language_id: LanguageId, request: Request) -> dict[str, Any]:
    """The stored Language resource; for a language stored from a DFA with ``state_names``
    (canonical state → the input's names, as in ``POST /v1/classify``)."""
    db, limits = _db(request), _settings(request).limits()

    def load() -> dict[str, Any]:
        return _with_stored_state_names(_load(db, language_id), limits)

    return await anyio.to_thread.run_sync(load)


@router.get(
    "/languages/{language_id}/dfa",
    tags=["languages"],
    summary="The canonical minimal DFA as JSON or Graphviz DOT",
    responses={
        200: {
            "description": "The DFA",
            "content": {"application/json": {"schema": {"type": "object"}}, "text/vnd.graphviz": {"schema": {"type": "string"}}},
        },
        **problem_responses(404, 422),
    },
)
async def get_dfa(
    language_id: LanguageId,
    request: Request,
    format: Annotated[Literal["json", "dot"], Query(description="json (DFA JSON schema) or dot (Graphviz)")] = "json",
) -> Any:
    """The canonical minimal complete DFA (states numbered breadth-first from the initial state).
    In DOT, a language stored from a DFA labels each state with the user's names of the states it
    merges (``0 (s)``, ``1 (t | u)``); an edge label lists its symbols (comma-joined single
    characters, or JSON-quoted symbols when the alphabet has longer symbols or a comma)."""
    resource = await anyio.to_thread.run_sync(_load, _db(request), language_id)
    if format == "json":
        return resource["dfa"]
    from langclass.core.automata.export import dfa_to_dot

    limits = _settings(request).limits()
    dfa = dfa_from_record(resource["dfa"], limits)
    return PlainTextResponse(dfa_to_dot(dfa, names=_user_state_names(resource.get("source"), dfa, limits)),
                             media_type="text/vnd.graphviz")


def _user_state_names(source: Any, dfa: Any, limits: Any) -> dict[int, list[str]] | None:
    """For a language stored from a DFA: the user's state names of each canonical state (the states
    each one merges); None for other sources."""
    if not isinstance(source, dict) or source.get("kind") != "dfa" or not isinstance(source.get("dfa"), dict):
        return None
    from langclass.core.automata.export import state_names
    from langclass.core.ingest.parse import read_dfa_json

    raw, names = read_dfa_json(source["dfa"], limits)
    return state_names(raw, names, dfa)


@router.get(
    "/languages/{language_id}/monoid",
    response_model=MonoidPage,
    tags=["languages"],
    summary="The syntactic monoid: elements as words, idempotents, Green's classes (paginated)",
    responses=problem_responses(404, 409, 422, 503),
)
async def get_monoid(
    language_id: LanguageId,
    request: Request,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1, description="index of the first element")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="elements per page")] = 100,
) -> dict[str, Any]:
    """The transition monoid of the minimal DFA (= the syntactic monoid): its size, each element as
    its shortest word with idempotent flag and R/L/J/H-class ids, and the D-class structure.

    Raises:
        ConflictError: 409 when a limit (``max_monoid_size``, ``max_monoid_entries``, ``time_limit_s``)
            stops the enumeration: the problem names ``limit``, ``value``, ``setting`` and carries the
            stored summary as ``monoid``.
    """
    resource = await anyio.to_thread.run_sync(_load, _db(request), language_id)
    limits = _settings(request).limits()

    try:
        page = await _runner(request).run(monoid_page, language_id, resource["dfa"], limits, offset, limit,
                                          _settings(request).monoid_cache_mb * 2**20)
    except LimitExceeded as exc:
        raise _unreadable_monoid(exc, resource) from None
    return {"id": language_id, **page}


def _unreadable_monoid(exc: LimitExceeded, resource: dict[str, Any]) -> ConflictError:
    """409 for a monoid read that a limit stops: the stored language is fine (not an invalid
    request), but its monoid cannot be listed under this service's limits. Names the limit, the
    setting that raises it, and carries the stored summary (``monoid``)."""
    from langclass.app.settings import setting_for_limit

    limit = str(exc.extra.get("limit", getattr(exc, "limit", "")))
    setting = setting_for_limit(limit)
    return ConflictError(
        f"the syntactic monoid of this language cannot be listed under this service's limits: {exc.detail}"
        + (f" (raise {setting} to read it)" if setting else "")
        + "; the stored summary is in 'monoid'",
        field="id", limit=limit, value=exc.extra.get("value"), setting=setting, limit_code=exc.code,
        monoid=resource.get("monoid"),
    )


@router.get(
    "/languages/{language_id}/encodings",
    response_model=LanguageEncodings,
    tags=["languages"],
    summary="Which positional encoding suffices for this language",
    responses=problem_responses(404, 422),
)
async def get_language_encodings(language_id: LanguageId, request: Request) -> dict[str, Any]:
    """Per attention family (soft, hard): the encoding that suffices, its parameters and theorem."""
    resource = await anyio.to_thread.run_sync(_load, _db(request), language_id)
    classes = {k: (v.get("member") if isinstance(v, dict) else None) for k, v in (resource.get("classes") or {}).items()}
    return {"id": language_id, "classes": classes, "encodings": resource.get("encodings") or {}}


@router.delete(
    "/languages/{language_id}",
    status_code=204,
    tags=["languages"],
    summary="Delete a stored language (needs an API key when keys are set)",
    responses=problem_responses(401, 404, 409, 422),
)
async def delete_language(
    language_id: LanguageId,
    request: Request,
    cascade: Annotated[bool, Query(description="also delete the language's jobs (experiments); without it a language with jobs answers 409")] = False,
    _key: str | None = Depends(require_api_key),
) -> Response:
    """Remove the language and its class memberships. A language that has jobs is refused with 409
    ``conflict`` unless ``?cascade=true``, which deletes its jobs (queued, running and finished) too."""
    db = _db(request)

    def remove() -> bool:
        with db.session_scope() as session:
            return repo.delete_language(session, language_id, cascade=cascade)

    if not await anyio.to_thread.run_sync(remove):
        raise NotFoundError(f"no language with id {language_id!r}", field="id")
    return Response(status_code=204)


# --- encodings catalogue ------------------------------------------------------------------------


@router.get("/encodings", tags=["encodings"], summary="The positional-encoding catalogue", responses=problem_responses(422))
def list_encodings() -> list[dict[str, Any]]:
    """Each encoding family, the class of languages it captures, its parameters and the source."""
    from langclass.core.precision.encoding_choice import encoding_catalogue

    return encoding_catalogue()
