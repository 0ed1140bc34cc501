"""Web pages served by the service itself: browse and add languages, one language with its pictures,
experiments and jobs (server-rendered Jinja2 templates, a little JavaScript, every asset shipped in
``langclass/app/web/static`` — the pages work offline).

Pages (not part of the OpenAPI schema):

* ``GET /`` → ``/languages``;
* ``GET /languages``: the table (a column per class), filters (class, member, alphabet size, states,
  name, tag), cursor paging, and the add form (regex + alphabet, DFA JSON text or file, formula);
  the form posts to ``POST /v1/languages`` and shows the problem response inline;
* ``GET /languages/{id}``: source, the minimal DFA drawn (SVG; the user's state names), the class
  lattice (members green, non-members red) with every certificate and witness (words as words), the
  egg-box diagram of the syntactic monoid (paged by D-classes: ``?dpage=``), the encodings with their
  theorems, the experiments and a form launching one;
* ``GET /jobs``: every job, newest first, filtered by status and kind, with links to their pages.
* ``GET /jobs/{id}``: status and progress (refreshed live), cancel, the accuracy-by-length plot and
  the per-run table;
* ``GET /login``, ``POST /login``, ``POST /logout``: with ``LANGCLASS_API_KEYS`` set, a browser signs
  in with a key for the pages' writes (a session cookie, :mod:`langclass.app.web.security`); reading the
  pages needs no key.

A browser navigation (``Accept: text/html``) that ends in an error gets a small HTML page instead
of problem+json (:func:`langclass.app.web.problems.install_problem_handlers`).

Reads go through :mod:`langclass.app.store.repository` / :mod:`langclass.app.store.jobs` as the API does; the
monoid is enumerated in the classification runner under the service's limits.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path as PathParam, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from langclass.core.algebra.classes.base import STATE_FIELDS, with_state_names
from langclass.core.drawing.svg import dfa_svg, eggbox_html, eggbox_of, lattice_svg, user_state_names, word_text
from langclass.core.base.errors import LangclassError
from langclass.core.algebra.lattice import CLASS_INFO, CLASS_KEYS
from langclass.app.store import jobs as jobrepo
from langclass.app.store import repository as repo
from .problems import NotFoundError
from .security import (CSRF_COOKIE, SESSION_COOKIE, SESSION_MAX_AGE_S, LoginThrottle, key_id, new_nonce,
                       parse_session_token, same_origin, session_key_id, session_token)
from langclass.app.usecases.service import dfa_from_record

__all__ = ["router", "STATIC_DIR", "TEMPLATE_DIR", "D_CLASSES_PER_PAGE"]

STATIC_DIR = Path(__file__).parent / "static"
TEMPLATE_DIR = Path(__file__).parent / "templates"
D_CLASSES_PER_PAGE = 12
"""D-classes per page of the egg-box diagram."""
PAGE_SIZE = 50

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(TEMPLATE_DIR))
templates.env.filters["word"] = word_text

FILTERS = ("class", "member", "alphabet_size", "states", "name", "tag", "cursor")


def _short_name(key: str) -> str:
    return CLASS_INFO[key].name.split(" (")[0]


def _is_word(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def evidence_items(d: Any, state_names: Any = None) -> list[tuple[str, str]]:
    """A certificate or witness as (label, text) pairs: lists of symbols shown as words (ε for the
    empty word), nested data as compact JSON; fields that are ``None`` (not applicable) are left out.
    With ``state_names`` (``{canonical state: user names}`` of a DFA input) states are shown in the
    user's names with the canonical number alongside (``4 (canonical 0)``)."""
    if not isinstance(d, dict):
        return []
    by = d.get("implied_by")
    if isinstance(by, str) and by in CLASS_INFO:  # an answer through the lattice: the implying class's evidence, item by item
        out = [("implied by", f"{CLASS_INFO[by].name} ({by})")]
        if isinstance(d.get("inclusion"), str):
            out.append(("inclusion", d["inclusion"]))
        inner = d.get("certificate", d.get("witness"))
        return out + [(f"{by}: {k}", v) for k, v in evidence_items(inner, state_names) if k != "check"]
    out = []
    for k, v in with_state_names(d, state_names).items():
        if v is None:
            continue
        if state_names and k in STATE_FIELDS and isinstance(v, (str, list)):
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            out.append((str(k), text if len(text) <= 400 else text[:399] + "…"))
            continue
        if _is_word(v):
            text = word_text(v)
        elif isinstance(v, (str, int, float, bool)):
            text = str(v)
        elif isinstance(v, list) and v and all(_is_word(w) for w in v):
            text = ", ".join(word_text(w) for w in v)
        else:
            text = json.dumps(v, ensure_ascii=False, default=str)
            if len(text) > 400:
                text = text[:399] + "…"
        out.append((str(k), text))
    return out


def auth_state(request: Request) -> str | None:
    """For the page header: None when no API keys are configured (nothing to sign in to), else
    ``"signed-in"`` (the session cookie matches a configured key) or ``"signed-out"``."""
    settings = request.app.state.settings
    if not settings.api_keys:
        return None
    return "signed-in" if session_key_id(settings, request.cookies.get(SESSION_COOKIE)) else "signed-out"


templates.env.globals.update(short_name=_short_name, evidence_items=evidence_items, CLASS_KEYS=CLASS_KEYS,
                             CLASS_INFO=CLASS_INFO, auth_state=auth_state)


def _int(value: str | None, field: str, problems: list[str]) -> int | None:
    if value is None or value.strip() == "":
        return None
    try:
        n = int(value)
    except ValueError:
        problems.append(f"{field}: {value!r} is not a whole number")
        return None
    if not 1 <= n <= 2**31 - 1:
        problems.append(f"{field}: {n} is out of range (1 … 2³¹−1)")
        return None
    return n


@router.get("/", response_class=RedirectResponse)
async def home() -> RedirectResponse:
    """The languages page."""
    return RedirectResponse("/languages", status_code=307)


@router.get("/languages", response_class=HTMLResponse)
async def languages_page(
    request: Request,
    class_key: Annotated[str | None, Query(alias="class", max_length=64)] = None,
    member: Annotated[str | None, Query(max_length=8)] = None,
    alphabet_size: Annotated[str | None, Query(max_length=12)] = None,
    states: Annotated[str | None, Query(max_length=12)] = None,
    name: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> HTMLResponse:
    """The languages table with filters, paging and the add form."""
    problems: list[str] = []
    key = class_key or None
    if key is not None and key not in CLASS_INFO:
        problems.append(f"class: unknown class key {key!r}")
        key = None
    want: bool | None = {"": None, None: None, "true": True, "false": False}.get(member, None)
    if member not in (None, "", "true", "false"):
        problems.append(f"member: {member!r} is not true or false")
    n_letters = _int(alphabet_size, "alphabet size", problems)
    n_states = _int(states, "states", problems)
    name_f = name or None
    if name_f is not None and "\x00" in name_f:
        problems.append("name: holds a NUL character")
        name_f = None
    db = request.app.state.db

    def query() -> tuple[list[dict[str, Any]], str | None]:
        with db.session_scope() as session:
            rows, nxt = repo.list_languages(session, limit=PAGE_SIZE, cursor=cursor or None, class_key=key,
                                            member=want if key else None, alphabet_size=n_letters,
                                            num_states=n_states, name=name_f, tag=tag or None)
            return [repo.language_summary(r) for r in rows], nxt

    try:
        items, next_cursor = await anyio.to_thread.run_sync(query)
    except LangclassError as err:  # a malformed cursor
        problems.append(f"{err.field or 'cursor'}: {err.detail}")
        items, next_cursor = [], None
    params = {"class": key or "", "member": member or "", "alphabet_size": alphabet_size or "", "states": states or "",
              "name": name or "", "tag": tag or ""}
    next_query = None
    if next_cursor:
        from urllib.parse import urlencode

        next_query = urlencode({**{k: v for k, v in params.items() if v}, "cursor": next_cursor})
    return templates.TemplateResponse(request, "languages.html", {
        "items": items, "params": params, "problems": problems, "next_query": next_query,
    }, status_code=422 if problems else 200)


MAX_DRAWN_STATES = 200
"""Largest minimal DFA a language page draws; a larger one gets a one-line summary instead (an
8,192-state drawing was a blank 62,858 × 352,316 px SVG in a 7 MB page)."""


def _language_context(resource: dict[str, Any], limits: Any) -> dict[str, Any]:
    dfa = dfa_from_record(resource["dfa"], limits)
    source = resource.get("source") or {}
    names = user_state_names(source["dfa"], dfa) if source.get("kind") == "dfa" and isinstance(source.get("dfa"), dict) else {}
    title = resource.get("name") or source.get("regex") or source.get("formula") or f"DFA {resource['id'][:12]}"
    classes = resource.get("classes") or {}
    members = {k: (v.get("member") if isinstance(v, dict) else None) for k, v in classes.items()}
    drawn = dfa.num_states <= MAX_DRAWN_STATES
    summary = None if drawn else (
        f"Not drawn: {dfa.num_states:,} states (pictures stop at {MAX_DRAWN_STATES}); {len(dfa.alphabet)} letters, "
        f"{int(dfa.accepting.sum()):,} accepting states. "
        "The JSON and DOT below hold the whole automaton.")
    return {"dfa": dfa, "dfa_svg": dfa_svg(dfa, state_names=names or None, title=str(title)) if drawn else None,
            "dfa_summary": summary, "lattice_svg": lattice_svg(members), "title": title, "state_names": names if drawn else {}}


@router.get("/languages/{language_id}", response_class=HTMLResponse)
async def language_page(
    request: Request,
    language_id: Annotated[str, PathParam(max_length=200)],
    dpage: Annotated[int, Query(ge=0, le=100_000, description="page of the egg-box diagram (D-classes)")] = 0,
) -> HTMLResponse:
    """One language: source, DFA, lattice with certificates, egg-box, encodings, experiments."""
    db = request.app.state.db
    settings = request.app.state.settings
    limits = settings.limits()

    def load() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with db.session_scope() as session:
            row = repo.get_language(session, language_id)
            if row is None:
                raise NotFoundError(f"no language with id {language_id!r}", field="id")
            rows, _ = jobrepo.list_jobs(session, limit=50, language_id=language_id)
            return repo.language_resource(row), [jobrepo.job_summary(r) for r in rows]

    resource, jobs = await anyio.to_thread.run_sync(load)
    ctx = await anyio.to_thread.run_sync(_language_context, resource, limits)
    eggbox, eggbox_error = None, None
    try:
        box = await request.app.state.runner.run(eggbox_of, ctx["dfa"], limits, offset=dpage * D_CLASSES_PER_PAGE,
                                                 max_d_classes=D_CLASSES_PER_PAGE)
        eggbox = {"html": eggbox_html(box), "total": box.total_d_classes,
                  "pages": -(-box.total_d_classes // D_CLASSES_PER_PAGE), "page": dpage}
    except LangclassError as err:  # over the monoid cap: say which limit
        eggbox_error = err.detail
    from langclass.core.precision.encoding_choice import encoding_catalogue

    encodings = sorted({e["encoding"] for e in encoding_catalogue() if e["attention"] == "soft"})
    return templates.TemplateResponse(request, "language.html", {
        "lang": resource, "jobs": jobs, "eggbox": eggbox, "eggbox_error": eggbox_error, "soft_encodings": encodings,
        **{k: v for k, v in ctx.items() if k != "dfa"}, "num_states": ctx["dfa"].num_states,
    })


JOBS_PER_PAGE = 50
"""Jobs on one page of ``/jobs``."""


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(
    request: Request,
    status: Annotated[str | None, Query(max_length=16)] = None,
    kind: Annotated[str | None, Query(max_length=16)] = None,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> HTMLResponse:
    """Every job, newest first (:data:`JOBS_PER_PAGE` a page, the next by cursor), filtered by status
    and kind like ``GET /v1/jobs`` (an empty value: any; an unknown one is shown as a problem and
    ignored, as on the languages page): each with its language, status, progress and its page.

    Raises:
        InvalidCursorError: a cursor that is not well-formed (400)."""
    db = request.app.state.db
    problems = []
    if status and status not in JOB_STATUSES:
        problems.append(f"status: {status!r} is not one of {', '.join(JOB_STATUSES)}")
    if kind and kind not in JOB_KINDS:
        problems.append(f"kind: {kind!r} is not one of {', '.join(JOB_KINDS)}")
    status_f = status if status in JOB_STATUSES else None
    kind_f = kind if kind in JOB_KINDS else None

    def load() -> tuple[list[dict[str, Any]], str | None]:
        with db.session_scope() as session:
            rows, nxt = jobrepo.list_jobs(session, limit=JOBS_PER_PAGE, cursor=cursor, status=status_f, kind=kind_f)
            return [jobrepo.job_summary(r) for r in rows], nxt

    jobs, next_cursor = await anyio.to_thread.run_sync(load)
    return templates.TemplateResponse(request, "jobs.html", {
        "jobs": jobs, "next_cursor": next_cursor, "status": status_f, "kind": kind_f, "problems": problems,
        "statuses": JOB_STATUSES, "kinds": JOB_KINDS,
    })


JOB_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
JOB_KINDS = ("train", "construct", "sectors", "sweep")


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: Annotated[str, PathParam(max_length=200)]) -> HTMLResponse:
    """One job: status, live progress, cancel, plot and per-run table."""
    db = request.app.state.db

    def load() -> dict[str, Any]:
        with db.session_scope() as session:
            row = jobrepo.get_job(session, job_id)
            if row is None:
                raise NotFoundError(f"no job with id {job_id!r}", field="id")
            return jobrepo.job_resource(row)

    job = await anyio.to_thread.run_sync(load)
    result = job.get("result") or {}
    runs = result.get("runs") or [] if isinstance(result, dict) else []
    if not runs and isinstance(job.get("progress"), dict):
        runs = job["progress"].get("runs_done") or []
    if not isinstance(runs, list):  # a sweep's result counts its runs (the languages' runs are in its records)
        runs = []
    return templates.TemplateResponse(request, "job.html", {"job": job, "runs": runs, "result": result})


# --- signing in (API keys set) -----------------------------------------------------------------

MAX_LOGIN_BODY = 4096
"""Bytes of a ``POST /login`` form (a key and the page to return to)."""


def _local_path(target: str | None) -> str:
    """``target`` when it is a path on this site (``/…``, not ``//host``), else ``/languages``: the
    sign-in form never redirects elsewhere."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target and "\x00" not in target:
        return target
    return "/languages"


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, next: Annotated[str | None, Query(max_length=1000)] = None) -> HTMLResponse:
    """The sign-in form (a password field for one of ``LANGCLASS_API_KEYS``), with a fresh
    double-submit token in the form and the ``langclass_csrf`` cookie (see :mod:`.security`)."""
    return _login_form(request, _local_path(next), None, 200)


def _login_form(request: Request, target: str, problem: str | None, status: int,
                headers: dict[str, str] | None = None) -> HTMLResponse:
    csrf = new_nonce()
    response = templates.TemplateResponse(request, "login.html", {"next": target, "problem": problem, "csrf": csrf},
                                          status_code=status, headers=headers)
    response.set_cookie(CSRF_COOKIE, csrf, max_age=3600, path="/login", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


def _throttle(request: Request) -> LoginThrottle:
    throttle = getattr(request.app.state, "login_throttle", None)
    if throttle is None:
        throttle = request.app.state.login_throttle = LoginThrottle()
    return throttle


def _forbidden(detail: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><title>403 Forbidden</title><h1>403 Forbidden</h1><p>{detail}</p>", status_code=403)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the key of the form (``application/x-www-form-urlencoded``: ``key``, ``next``,
    ``csrf``); on success start a session, set its cookie and go back to ``next`` (303), else the
    form again with 401. Refused: another site's ``Origin``/``Referer`` or a ``csrf`` field that is
    not the ``langclass_csrf`` cookie (403, login CSRF), and a client address over its failed
    sign-ins (429 with ``Retry-After``). Without configured keys there is nothing to sign in to:
    straight back (303)."""
    from urllib.parse import parse_qs

    from langclass.app.store.sessions import create_session

    settings = request.app.state.settings
    body = await request.body()
    form = parse_qs(body[:MAX_LOGIN_BODY].decode("utf-8", "replace"), max_num_fields=8)
    key = (form.get("key") or [""])[0]
    target = _local_path((form.get("next") or [None])[0])
    if not settings.api_keys:
        return RedirectResponse(target, status_code=303)
    if not same_origin(request):
        return _forbidden("sign-in forms are accepted only from this site's own pages")
    token = (form.get("csrf") or [""])[0]
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    if not token or not cookie or not hmac.compare_digest(token.encode("utf-8", "replace"), cookie.encode("utf-8", "replace")):
        return _forbidden("the sign-in form has expired or was not sent from this site: <a href=\"/login\">reload it</a>")
    client = request.client.host if request.client else "unknown"
    throttle = _throttle(request)
    wait = throttle.retry_after(client)
    if wait is not None:
        return _login_form(request, target, f"too many failed sign-ins from your address: try again in {int(wait) + 1} s",
                           429, {"Retry-After": str(int(wait) + 1)})
    kid = None
    if key:
        for candidate in settings.api_keys:  # every key compared, no early exit
            if hmac.compare_digest(key.encode("utf-8"), candidate.encode("utf-8")):
                kid = key_id(candidate)
    if kid is None:
        throttle.failed(client)
        problem = "that is not one of this service's API keys" if key else "enter an API key"
        return _login_form(request, target, problem, 401)
    throttle.succeeded(client)
    nonce = new_nonce()

    def store() -> None:
        with request.app.state.db.session_scope() as session:
            create_session(session, nonce, kid, SESSION_MAX_AGE_S)

    await anyio.to_thread.run_sync(store)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(SESSION_COOKIE, session_token(key, nonce), max_age=SESSION_MAX_AGE_S, path="/", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    response.delete_cookie(CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the session (deleted from the database: a copy of the cookie stops working too), forget
    the cookie and go to the languages page (303); another site's ``Origin``/``Referer`` gets 403."""
    from langclass.app.store.sessions import delete_session

    if not same_origin(request):
        return _forbidden("signing out is accepted only from this site's own pages")
    parsed = parse_session_token(request.app.state.settings, request.cookies.get(SESSION_COOKIE))
    if parsed is not None:
        def end() -> None:
            with request.app.state.db.session_scope() as session:
                delete_session(session, parsed[1])

        await anyio.to_thread.run_sync(end)
    response = RedirectResponse("/languages", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
