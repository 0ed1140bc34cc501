"""``/v1`` routes for experiments and jobs.

``POST /v1/languages/{id}/experiments`` turns a request into a complete job spec (the stored
canonical DFA, encodings with parameters defaulted from the stored classification, the prediction
the classification makes), validates it, inserts a queued job and — after the transaction commits —
wakes the executor. ``GET /v1/jobs/{id}`` / ``GET /v1/jobs`` read jobs, ``DELETE /v1/jobs/{id}``
cancels, ``GET /v1/jobs/{id}/plot.png`` draws accuracy by length, ``GET /v1/jobs/{id}/model`` serves the
portable model(s) of a finished construct or train job (docs/models.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field

from langclass.core.base.errors import LangclassError
from langclass.app.store import jobs as jobrepo
from langclass.app.store import repository as repo
from langclass.app.store.db import Database
from langclass.app.usecases.experiments import (  # noqa: F401 - the use cases; re-exported for callers of the old place
    ExperimentRequest,
    build_construct_spec,
    build_sectors_spec,
    build_train_spec,
    predicted_sufficient,
    validate_construct_spec,
    validate_sectors_spec,
    validate_train_spec,
)
from ..problems import ConflictError, NotFoundError, problem_responses
from langclass.app.usecases.schemas import CURSOR_SCHEMA, NO_NUL_PATTERN
from ..body import JsonBodyRoute
from ..security import require_api_key
from langclass.app.settings import Settings

__all__ = ["router", "build_train_spec", "predicted_sufficient", "ExperimentRequest"]  # the last three: see ..experiments

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)

JobId = Annotated[str, Path(description="the job's id (UUID)", max_length=64, json_schema_extra={"pattern": NO_NUL_PATTERN})]
LanguageId = Annotated[str, Path(description="the language's fingerprint (SHA-256 hex)", max_length=200, json_schema_extra={"pattern": NO_NUL_PATTERN})]

class JobSummary(BaseModel):
    """A job without its spec and result (the listing form)."""

    id: str
    language_id: str | None = Field(description="the stored language; null for a sweep job (a sample of census languages, GET /v1/sweeps/{id})")
    kind: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    cancel_requested: bool
    attempts: int = Field(description="claims so far (a worker lost mid-run costs one)")
    max_attempts: int
    progress: dict[str, Any] | None = Field(None, description="last progress report: phase, run/runs, step/total, loss, last_evaluation")
    error: dict[str, Any] | None = Field(
        None, description="{reason, detail, …}: worker-lost (retrying or final), worker-stopped, invalid-spec, limit-exceeded, run-error, cancelled"
    )
    notes: list[str] = Field(
        default_factory=list, description="how deprecated notation in the spec was read (e.g. test_lengths [21, 40] = the range 21..40)"
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
    summary="Queue an experiment (train recognizers, find PJ-RoPE sectors, or verify a construction) as a job",
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
    elif body.kind == "sectors":
        spec = build_sectors_spec(body, language)
        await anyio.to_thread.run_sync(validate_sectors_spec, spec, settings.job_limits())
    else:
        spec = build_construct_spec(body, language)
        # parse, synthesis and plan can be long and import torch: in the killable worker pool, under
        # the time limit (before: in the API process, outside both — the first one stalled /healthz)
        await request.app.state.runner.run(validate_construct_spec, spec, language["dfa"], settings.limits())
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
    language_id: Annotated[str | None, Query(max_length=200, description="only this language's jobs", json_schema_extra={"pattern": NO_NUL_PATTERN})] = None,
    status: Annotated[Literal["queued", "running", "succeeded", "failed", "cancelled"] | None, Query()] = None,
    kind: Annotated[Literal["train", "construct", "sectors", "sweep"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="page size")] = 50,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page", json_schema_extra=CURSOR_SCHEMA)] = None,
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
    summary="Accuracy by test length, one curve per encoding (train jobs); K_h(d) per head and gates (sectors jobs) (PNG)",
    responses={200: {"content": {"image/png": {}}, "description": "the plot"}, **problem_responses(404, 409, 422)},
)
async def job_plot(job_id: JobId, request: Request) -> Response:
    """Mean accuracy per test length for each encoding (band: min–max over seeds and learning rates),
    the training range and N* marked; for a sectors job K_h(d) per head with the predicted roots and
    the gates (:func:`langclass.app.usecases.plot_sectors.plot_sectors`). A cancelled or failed job is drawn from the runs it finished
    (the title says "partial"). 409 while no run has finished, or when the job ended before one did
    (the detail says which)."""
    resource = await anyio.to_thread.run_sync(_load_job, _db(request), job_id)
    result = resource.get("result")
    if resource["kind"] not in ("train", "sectors"):
        raise ConflictError("only train and sectors jobs have plots", field="id")
    if not result or not result.get("runs"):
        raise ConflictError(_no_plot_reason(job_id, resource), field="id", job_status=resource["status"])
    from langclass.app.usecases.plot import language_label, plot_accuracy_by_length

    def load_language() -> dict[str, Any] | None:
        with _db(request).session_scope() as session:
            row = repo.get_language(session, resource["language_id"])
            return None if row is None else {"name": row.name, "source": row.source}

    name = language_label(await anyio.to_thread.run_sync(load_language))
    try:
        if resource["kind"] == "sectors":
            from langclass.app.usecases.plot_sectors import plot_sectors

            png = await anyio.to_thread.run_sync(plot_sectors, result)
        else:
            png = await anyio.to_thread.run_sync(functools.partial(plot_accuracy_by_length, result, language=name))
    except LangclassError:
        raise
    return Response(content=png, media_type="image/png", headers={"Cache-Control": "no-store" if resource["status"] not in jobrepo.TERMINAL else "max-age=3600"})


@router.get(
    "/jobs/{job_id}/model",
    tags=["jobs"],
    summary="The job's portable model(s): a zip of config.json, model.safetensors and langclass_runner.py",
    responses={200: {"content": {"application/zip": {}}, "description": "the zip (docs/models.md)"}, **problem_responses(404, 422)},
)
async def job_model(job_id: JobId, request: Request) -> Response:
    """A finished construct job: its verified model at the top of the zip; a finished train job: the
    best run of every encoding, one folder ``enc-<label>`` each, ``langclass_runner.py`` at the top.
    Each model is ``config.json`` (vocabulary, layers, heads, attention kinds, masks, positional
    encodings as data, readout, provenance) and ``model.safetensors``; the runner needs only torch and
    safetensors. Readable by whoever may read the job (``GET /v1/jobs/{id}``). 404 while the job has
    none: queued, running, failed, cancelled, another kind, or a zip over ``LANGCLASS_JOB_MODEL_MAX_BYTES``
    (the detail says which)."""
    db = _db(request)

    def load() -> tuple[bytes, str]:
        with db.session_scope() as session:
            row = jobrepo.get_job(session, job_id)
            if row is None:
                raise NotFoundError(f"no job with id {job_id!r}", field="id")
            stored = jobrepo.get_model(session, job_id)
            if stored is None:
                info = (row.result or {}).get("portable_model") if isinstance(row.result, dict) else None
                if row.kind not in ("construct", "train"):
                    why = f"a {row.kind} job makes no model (construct and train jobs do)"
                elif row.status != "succeeded":
                    why = f"the job is {row.status}; its model exists once it succeeded"
                elif info and info.get("reason"):
                    why = f"the model was not stored: {info['reason']}"
                else:
                    why = "the job finished without a stored model (it ran before models were kept)"
                raise NotFoundError(f"job {job_id} has no model: {why}", field="id", job_status=row.status)
            return bytes(stored.data), row.kind

    data, kind = await anyio.to_thread.run_sync(load)
    return Response(content=data, media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="langclass-{kind}-{job_id}.zip"',
                             "Cache-Control": "max-age=3600"})
