"""``/v1`` routes for experiments and jobs.

``POST /v1/languages/{id}/experiments`` turns a request into a complete job spec (the stored
canonical DFA, encodings with parameters defaulted from the stored classification, the prediction
the classification makes), validates it, inserts a queued job and — after the transaction commits —
wakes the executor. ``GET /v1/jobs/{id}`` / ``GET /v1/jobs`` read jobs, ``DELETE /v1/jobs/{id}``
cancels, ``GET /v1/jobs/{id}/plot.png`` draws accuracy by length.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from ...core.errors import InputError, LangclassError, UnsupportedError
from ...models.specs import EncodingItem, EncodingSpec, JobLimits, LearningRate, Seed, TrainOverrides
from .. import jobs as jobrepo
from .. import repository as repo
from ..db import Database
from ..problems import ConflictError, NotFoundError, problem_responses
from ..body import JsonBodyRoute
from ..security import require_api_key
from ..settings import Settings

__all__ = ["router", "build_train_spec", "predicted_sufficient", "ExperimentRequest"]

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)

JobId = Annotated[str, Path(description="the job's id (UUID)", max_length=64)]
LanguageId = Annotated[str, Path(description="the language's fingerprint (SHA-256 hex)", max_length=200)]

PERIODIC_FAMILIES = ("rope_periodic", "sinusoidal_periodic")
"""Encoding families whose ``periods`` default to the language's LTL[P,MOD] period k."""

MAX_SEEDS = 50
MAX_LEARNING_RATES = 20
MAX_ENCODINGS = 20


# --- request / response models ---------------------------------------------------------------------


EncodingChoice = EncodingSpec
"""One encoding of an experiment, with explicit parameters (:class:`~langclass.models.specs.EncodingSpec`)."""


class ExperimentRequest(BaseModel):
    """An experiment to run as a job.

    ``kind = "train"``: train recognizers for every (encoding, seed, learning rate) and compare each
    encoding with the prediction (*Disentangling the Expressivity of RoPE*, App. E).
    ``kind = "construct"``: build a transformer by construction and verify it; further fields (e.g.
    ``formula``) go to the construction unchanged.
    """

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"kind": "train", "encodings": ["nope", "rope_periodic"], "profile": "quick", "seeds": [0], "learning_rates": [3e-4]},
                {"kind": "construct", "formula": "MOD_2^0"},
            ]
        },
    )
    kind: Literal["train", "construct"] = "train"
    encodings: list[EncodingItem] | None = Field(
        None, min_length=1, max_length=MAX_ENCODINGS,
        description="encoding names or {name, params, label}; periodic encodings get periods = the language's period k unless given",
    )
    profile: Literal["quick", "paper"] | None = Field(None, description="quick (2-core CPU, ~a minute) or paper (App. E.2)")
    seeds: list[Seed] | None = Field(None, min_length=1, max_length=MAX_SEEDS, description="training seeds (default: the profile's; each ≤ job_max_seed)")
    learning_rates: list[LearningRate] | None = Field(None, min_length=1, max_length=MAX_LEARNING_RATES, description="AdamW learning rates (default: the profile's)")
    overrides: TrainOverrides | None = Field(None, description="profile settings to change: max_steps, test_lengths, d_model, … (each under its named limit)")
    eval_seed: Seed | None = Field(None, description="seed of the test strings (shared by every run; ≤ job_max_seed)")
    max_attempts: int | None = Field(None, ge=1, le=10, description="claims allowed if workers die (default LANGCLASS_JOB_MAX_ATTEMPTS)")


class JobSummary(BaseModel):
    """A job without its spec and result (the listing form)."""

    id: str
    language_id: str
    kind: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    cancel_requested: bool
    attempts: int = Field(description="claims so far (a worker lost mid-run costs one)")
    max_attempts: int
    progress: dict[str, Any] | None = Field(None, description="last progress report: phase, run/runs, step/total, loss, last_evaluation")
    error: dict[str, Any] | None = Field(
        None, description="{reason, detail, …}: worker-lost (retrying or final), worker-stopped, invalid-spec, limit-exceeded, run-error, cancelled"
    )
    previous_error: dict[str, Any] | None = Field(
        None, description="while a retry runs: the error of the attempt before it (e.g. worker-lost); null otherwise"
    )
    created_at: datetime
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    lease_expires_at: datetime | None = None
    finished_at: datetime | None = None
    links: dict[str, str]


class Job(JobSummary):
    """A job and, once it finished, its result."""

    spec: dict[str, Any] = Field(description="the job function's complete input (language DFA, encodings with parameters, prediction, …)")
    result: dict[str, Any] | None = Field(
        None, description="train: runs (encoding, manifest, seed, learning_rate, accuracy_by_length, longest_perfect_length), summary per encoding, verdict"
    )


class JobPage(BaseModel):
    """A page of jobs, newest first (without spec and result)."""

    items: list[JobSummary]
    next_cursor: str | None = Field(None, description="pass as cursor for the next page; null on the last page")
    limit: int


# --- building the spec ------------------------------------------------------------------------------


def _period(analysis: Mapping[str, Any]) -> int | None:
    """The least k of an LTL[P,MOD] language (None when not a member or not decided)."""
    info = (analysis.get("classes") or {}).get("ltl_p_mod")
    if not isinstance(info, Mapping) or info.get("member") is not True:
        return None
    k = info.get("period")
    if k is None and isinstance(info.get("certificate"), Mapping):
        k = info["certificate"].get("period")
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def _member(analysis: Mapping[str, Any], key: str) -> bool | None:
    info = (analysis.get("classes") or {}).get(key)
    m = info.get("member") if isinstance(info, Mapping) else None
    return m if isinstance(m, bool) else None


def predicted_sufficient(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Whether the theory says soft attention with this encoding recognizes the language at every length.

    * NoPE: exactly LTL[P] (*Disentangling the Expressivity of RoPE*, §2.2).
    * periodic RoPE / periodic sinusoidal PE: exactly LTL[P,MOD] (Thm 3.1, 3.2); a language of
      period k needs MOD_k atoms, which a pair of period m gives when k divides m, so some
      ``periods`` entry must be a multiple of k.
    * conventional RoPE, sinusoidal, ALiBi: no length-independent guarantee (Cor. 4.1: RoPE simulates
      Y^k only up to a certified length) — reported as measured, never predicted.

    Returns:
        ``(sufficient, reason)`` — sufficient is None when the classification is undecided.
    """
    in_p, in_mod = _member(analysis, "ltl_p"), _member(analysis, "ltl_p_mod")
    if name == "nope":
        if in_p is None:
            return None, "LTL[P] membership undecided"
        return in_p, "NoPE recognizes exactly LTL[P] (Disentangling the Expressivity of RoPE, §2.2)" + ("" if in_p else "; the language is not in LTL[P]")
    if name in PERIODIC_FAMILIES:
        if in_mod is None:
            return None, "LTL[P,MOD] membership undecided"
        if not in_mod:
            return False, "the language is not in LTL[P,MOD] (Disentangling the Expressivity of RoPE, Thm 3.1/3.2)"
        k = _period(analysis) or 1
        periods = params.get("periods", 2)
        plist = periods if isinstance(periods, list) else [periods]
        ok = any(isinstance(m, int) and m % k == 0 for m in plist) or k == 1
        return ok, (f"periodic encodings recognize LTL[P,MOD] (Thm 3.1/3.2); period k = {k} "
                    + ("divides a table period" if ok else f"divides none of the periods {plist}"))
    return False, "no length-independent guarantee for this encoding (Cor. 4.1)"


def build_train_spec(body: ExperimentRequest, language: Mapping[str, Any]) -> dict[str, Any]:
    """The ``run_experiment`` spec of a train request on a stored language.

    Periodic encodings without ``periods`` get the language's LTL[P,MOD] period k (left to the
    encoding's default when the language has none); ``prediction.sufficient`` lists the labels the
    theory predicts sufficient (:func:`predicted_sufficient`), with reasons.

    Raises:
        InputError: no encodings, or extra fields a train job does not take (``field`` names it).
    """
    extra = sorted((body.model_extra or {}).keys())
    if extra:
        raise InputError(f"unknown field {extra[0]!r} for a train experiment", field=extra[0])
    if not body.encodings:
        raise InputError("a train experiment needs at least one encoding", field="encodings")
    analysis = language.get("analysis") or language
    period = _period(analysis)
    encodings: list[dict[str, Any]] = []
    sufficient: list[str] = []
    reasons: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for i, e in enumerate(body.encodings):
        choice = EncodingSpec(name=e) if isinstance(e, str) else e
        params = dict(choice.params)
        if choice.name in PERIODIC_FAMILIES and "periods" not in params and period is not None:
            params["periods"] = period
            defaults[f"encodings[{i}].params.periods"] = period
        label = choice.label or EncodingSpec(name=choice.name, params=params).resolved_label()
        encodings.append({"name": choice.name, "params": params, "label": label})
        ok, why = predicted_sufficient(choice.name, params, analysis)
        reasons[label] = {"sufficient": ok, "reason": why}
        if ok:
            sufficient.append(label)
    spec: dict[str, Any] = {
        "language": language["dfa"],
        "encodings": encodings,
        "profile": body.profile or "quick",
        "prediction": {"sufficient": sufficient, "per_encoding": reasons, "language_period": period,
                       "source": "Disentangling the Expressivity of RoPE, §2.2, Thm 3.1, Thm 3.2, Cor. 4.1"},
    }
    if body.seeds is not None:
        spec["seeds"] = list(body.seeds)
    if body.learning_rates is not None:
        spec["learning_rates"] = list(body.learning_rates)
    if body.overrides is not None:
        spec["overrides"] = body.overrides.model_dump(exclude_none=True, mode="json")
    if body.eval_seed is not None:
        spec["eval_seed"] = body.eval_seed
    if defaults:
        spec["prediction"]["defaults_from_classification"] = defaults
    soft = (analysis.get("encodings") or {}).get("soft")
    if isinstance(soft, Mapping):
        spec["prediction"]["classification"] = {k: soft.get(k) for k in ("encoding", "name", "class", "length_guarantee", "theorem", "reason")}
    return spec


def validate_train_spec(spec: Mapping[str, Any], limits: JobLimits | None = None) -> None:
    """Check a train spec before it is queued, so a bad request is a 422 now, not a failed job later.

    Delegates to :func:`langclass.models.experiment.validate_spec` — the very checks the run makes
    first (the :class:`~langclass.models.specs.TrainSpec` model, every named limit of
    :class:`~langclass.models.specs.JobLimits` before anything is materialized, and every encoding
    built once with its parameters).

    Raises:
        InputError / LimitExceeded: naming the field or limit.
    """
    from ...models.experiment import validate_spec
    from ...models.specs import DEFAULT_JOB_LIMITS

    validate_spec(spec, limits or DEFAULT_JOB_LIMITS)


CONSTRUCT_FIELDS = ("formula", "program", "options")
TRAIN_ONLY_FIELDS = ("encodings", "profile", "seeds", "learning_rates", "overrides", "eval_seed")


def build_construct_spec(body: ExperimentRequest, language: Mapping[str, Any]) -> dict[str, Any]:
    """The ``run_construction`` spec: the request's ``formula`` / ``program`` / options, with the
    stored canonical DFA as the reference language (without either, a formula is synthesized from it).

    Raises:
        InputError: a training field or an unknown field (``field`` names it).
    """
    for key in TRAIN_ONLY_FIELDS:
        if getattr(body, key) is not None:
            raise InputError(f"{key!r} is a field of train experiments, not of construct", field=key)
    try:
        from ...models.verify import _OPTION_KEYS as option_keys
    except ImportError:  # pragma: no cover - partial installation
        option_keys = set()
    spec: dict[str, Any] = {}
    for key, value in (body.model_extra or {}).items():
        if key not in CONSTRUCT_FIELDS and key not in option_keys:
            raise InputError(f"unknown field {key!r} for a construct experiment; expected formula, program, options "
                             f"or one of {sorted(option_keys)}", field=key)
        spec[key] = value
    if "formula" in spec and "program" in spec:
        raise InputError("give a formula or a program, not both", field="program")
    spec["alphabet"] = list(language.get("alphabet") or language["dfa"].get("alphabet", []))
    if "formula" not in spec:
        spec["dfa"] = language["dfa"]  # the reference language (program) or the synthesis input
    return spec


def validate_construct_spec(spec: Mapping[str, Any], stored_dfa: Mapping[str, Any], limits: Any) -> None:
    """Check a construct spec before it is queued: options, program syntax, and that a formula
    defines the stored language (a counterexample word otherwise).

    Raises:
        InputError (FormulaSyntaxError, ProgramSyntaxError, …): naming the field.
    """
    try:
        from ...models import verify
    except ImportError:
        raise UnsupportedError("construction jobs are not available in this installation", field="kind") from None
    check = getattr(verify, "validate_spec", None)
    if check is not None:
        check(spec)
    elif hasattr(verify, "_options"):
        verify._options(spec)
    from ..service import dfa_from_record

    if "formula" in spec:
        from ...core.formulas import formula_from_mapping, formula_to_dfa

        formula, alphabet = formula_from_mapping(spec, limits)
        fdfa = formula_to_dfa(formula, alphabet, limits)
        target = dfa_from_record(stored_dfa, limits)
        if fdfa.fingerprint() != target.fingerprint():
            word = fdfa.counterexample(target) if fdfa.alphabet == target.alphabet else None
            raise InputError(
                "the formula does not define this language" + (f": they differ on {''.join(word)!r}" if word is not None else ""),
                field="formula", counterexample=list(word) if word is not None else None,
            )
    if "program" in spec:
        from ...core.brasp import parse_program

        if not isinstance(spec["program"], str):
            raise InputError("program must be B-RASP text", field="program")
        parse_program(spec["program"], spec["alphabet"], limits)


# --- routes ------------------------------------------------------------------------------------------


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _db(request: Request) -> Database:
    return request.app.state.db


def _notify(request: Request) -> None:
    executor = getattr(request.app.state, "executor", None)
    if executor is not None:
        executor.notify()


@router.post(
    "/languages/{language_id}/experiments",
    status_code=202,
    response_model=Job,
    tags=["jobs"],
    summary="Queue an experiment (train recognizers or verify a construction) as a job",
    responses=problem_responses(400, 401, 404, 413, 415, 422),
)
async def create_experiment(
    language_id: LanguageId, body: ExperimentRequest, request: Request, response: Response,
    _key: str | None = Depends(require_api_key),
) -> dict[str, Any]:
    """Validate the experiment, store it as a queued job and return it (202). Poll
    ``GET /v1/jobs/{id}`` for progress and the result. Needs an API key when keys are configured."""
    db = _db(request)
    settings = _settings(request)

    def load() -> dict[str, Any]:
        with db.session_scope() as session:
            row = repo.get_language(session, language_id)
            if row is None:
                raise NotFoundError(f"no language with id {language_id!r}", field="language_id")
            return {"dfa": row.dfa, "analysis": row.analysis, "alphabet": list(row.alphabet)}

    language = await anyio.to_thread.run_sync(load)
    if body.kind == "train":
        spec = build_train_spec(body, language)
        await anyio.to_thread.run_sync(validate_train_spec, spec, settings.job_limits())
    else:
        spec = build_construct_spec(body, language)
        await anyio.to_thread.run_sync(validate_construct_spec, spec, language["dfa"], settings.limits())
    max_attempts = body.max_attempts or settings.job_max_attempts

    def insert() -> dict[str, Any]:
        with db.session_scope() as session:
            row = jobrepo.create_job(session, language_id=language_id, kind=body.kind, spec=spec, max_attempts=max_attempts)
            return jobrepo.job_resource(row)
        # the transaction has committed here

    resource = await anyio.to_thread.run_sync(insert)
    _notify(request)  # only after the commit: a worker can now see the job
    response.headers["Location"] = f"/v1/jobs/{resource['id']}"
    return resource


def _load_job(db: Database, job_id: str) -> dict[str, Any]:
    with db.session_scope() as session:
        row = jobrepo.get_job(session, job_id)
        if row is None:
            raise NotFoundError(f"no job with id {job_id!r}", field="id")
        return jobrepo.job_resource(row)


@router.get("/jobs/{job_id}", response_model=Job, tags=["jobs"], summary="One job: status, progress, result, error",
            responses=problem_responses(404, 422))
async def get_job(job_id: JobId, request: Request) -> dict[str, Any]:
    """The job; ``result`` holds the runs, per-encoding summary and verdict once it succeeded."""
    return await anyio.to_thread.run_sync(_load_job, _db(request), job_id)


@router.get("/jobs", response_model=JobPage, tags=["jobs"], summary="Browse jobs (newest first)",
            responses=problem_responses(400, 422))
async def list_jobs(
    request: Request,
    language_id: Annotated[str | None, Query(max_length=200, description="only this language's jobs")] = None,
    status: Annotated[Literal["queued", "running", "succeeded", "failed", "cancelled"] | None, Query()] = None,
    kind: Annotated[Literal["train", "construct"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="page size")] = 50,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page")] = None,
) -> dict[str, Any]:
    """Jobs newest first, filtered, paginated by cursor; items omit ``spec`` and ``result``."""
    db = _db(request)

    def query() -> dict[str, Any]:
        with db.session_scope() as session:
            rows, nxt = jobrepo.list_jobs(session, limit=limit, cursor=cursor, language_id=language_id, status=status, kind=kind)
            return {"items": [jobrepo.job_summary(r) for r in rows], "next_cursor": nxt, "limit": limit}

    return await anyio.to_thread.run_sync(query)


@router.delete(
    "/jobs/{job_id}",
    response_model=Job,
    tags=["jobs"],
    summary="Cancel a job (needs an API key when keys are set)",
    responses={202: {"model": Job, "description": "Cancellation requested; the running job stops at its next check."},
               **problem_responses(401, 404, 409, 422)},
)
async def cancel_job(job_id: JobId, request: Request, response: Response, _key: str | None = Depends(require_api_key)) -> dict[str, Any]:
    """A queued job is cancelled at once (200); a running one is asked to stop (202, ``cancel_requested``)
    and becomes ``cancelled`` when its worker notices (within a heartbeat). A cancelled job answers 200
    again; a succeeded or failed one 409."""
    db = _db(request)

    def cancel() -> dict[str, Any]:
        with db.session_scope() as session:
            row = jobrepo.request_cancel(session, job_id)
            if row is None:
                raise NotFoundError(f"no job with id {job_id!r}", field="id")
            return jobrepo.job_resource(row)

    resource = await anyio.to_thread.run_sync(cancel)
    if resource["status"] in ("succeeded", "failed"):
        raise ConflictError(f"job {job_id} already {resource['status']}; nothing to cancel", field="id", job_status=resource["status"])
    response.status_code = 202 if resource["status"] == "running" else 200
    return resource


def _no_plot_reason(job_id: str, resource: Mapping[str, Any]) -> str:
    """Why a train job has nothing to plot, by its status (a finished job will never have more)."""
    status = resource["status"]
    if status == "cancelled":
        return f"job {job_id} was cancelled before any run finished: it has no accuracies to plot"
    if status == "failed":
        reason = (resource.get("error") or {}).get("reason", "an error")
        return f"job {job_id} failed ({reason}) before any run finished: it has no accuracies to plot"
    if status == "succeeded":
        return f"job {job_id} succeeded without runs: it has no accuracies to plot"
    return f"job {job_id} has no finished run yet (status {status}); the plot exists once the first run is evaluated"


@router.get(
    "/jobs/{job_id}/plot.png",
    tags=["jobs"],
    summary="Accuracy by test length, one curve per encoding (PNG)",
    responses={200: {"content": {"image/png": {}}, "description": "the plot"}, **problem_responses(404, 409, 422)},
)
async def job_plot(job_id: JobId, request: Request) -> Response:
    """Mean accuracy per test length for each encoding (band: min–max over seeds and learning rates),
    the training range and N* marked. A cancelled or failed job is drawn from the runs it finished
    (the title says "partial"). 409 while no run has finished, or when the job ended before one did
    (the detail says which)."""
    resource = await anyio.to_thread.run_sync(_load_job, _db(request), job_id)
    result = resource.get("result")
    if resource["kind"] != "train":
        raise ConflictError("only train jobs have accuracy-by-length plots", field="id")
    if not result or not result.get("runs"):
        raise ConflictError(_no_plot_reason(job_id, resource), field="id", job_status=resource["status"])
    from ..plot import language_label, plot_accuracy_by_length

    def load_language() -> dict[str, Any] | None:
        with _db(request).session_scope() as session:
            row = repo.get_language(session, resource["language_id"])
            return None if row is None else {"name": row.name, "source": row.source}

    name = language_label(await anyio.to_thread.run_sync(load_language))
    try:
        png = await anyio.to_thread.run_sync(functools.partial(plot_accuracy_by_length, result, language=name))
    except LangclassError:
        raise
    return Response(content=png, media_type="image/png", headers={"Cache-Control": "no-store" if resource["status"] not in jobrepo.TERMINAL else "max-age=3600"})
