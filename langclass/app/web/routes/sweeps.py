"""``/v1/sweeps``: the census sweep (``langclass sweep``) as a job of the service.

``POST /v1/sweeps`` checks a :class:`~langclass.app.usecases.sweep_jobs.SweepRequest` as far as it
can without training (:func:`~langclass.app.usecases.sweep_jobs.build_sweep_spec`: the limits of
``langclass sweep``; an unknown census run is a 404) and queues a job of kind ``sweep`` with no
language; ``GET /v1/sweeps`` lists sweep jobs, ``GET /v1/sweeps/{id}`` gives one with its progress
and, once it ran, its report (:func:`~langclass.app.usecases.sweep_jobs.sweep_report`), and
``GET /v1/sweeps/{id}/heatmap.png`` draws the cells × encodings heat map. Cancel with
``DELETE /v1/jobs/{id}``. The sweep tests the predictions of *Disentangling the Expressivity of
RoPE* (§2.2, Thm 3.1, Thm 3.2, Cor. 4.1); docs/sweep.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field

from langclass.app.settings import Settings
from langclass.app.store import census_runs as runs
from langclass.app.store import jobs as jobrepo
from langclass.app.store.db import Database
from langclass.app.usecases.schemas import CURSOR_SCHEMA, NO_NUL_PATTERN
from langclass.app.usecases.sweep_jobs import SweepRequest, build_sweep_spec, sweep_report
from ..body import JsonBodyRoute
from ..problems import ConflictError, NotFoundError, problem_responses
from ..security import require_api_key
from .jobs import Job, JobSummary

__all__ = ["router", "Sweep", "SweepPage"]

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute)

JobId = Annotated[str, Path(description="the sweep job's id (UUID)", max_length=64, json_schema_extra={"pattern": NO_NUL_PATTERN})]


class Sweep(Job):
    """A sweep job: status, progress (``step`` / ``total`` count languages) and, once it ran, the report."""

    report: dict[str, Any] | None = Field(
        None, description="per cell: name, tested languages, predicted encodings, per encoding {languages, reached, share, predicted, "
                          "predicted_majority}; contradictions (with each language's DFA); sample; runs; markdown (sweep.md); "
                          "complete (false for a cancelled or stopped sweep's finished languages)")


class SweepPage(BaseModel):
    """A page of sweep jobs, newest first (without spec, result and report)."""

    items: list[JobSummary]
    next_cursor: str | None = Field(None, description="pass as cursor for the next page; null on the last page")
    limit: int


def _db(request: Request) -> Database:
    return request.app.state.db


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _resource(row: Any) -> dict[str, Any]:
    out = jobrepo.job_resource(row)
    out["report"] = sweep_report(out.get("result"))
    return out


def _load(db: Database, job_id: str) -> dict[str, Any]:
    with db.session_scope() as session:
        row = jobrepo.get_job(session, job_id)
        if row is None or row.kind != "sweep":
            raise NotFoundError(f"no sweep job with id {job_id!r}", field="id")
        return _resource(row)


@router.post("/sweeps", status_code=202, response_model=Sweep, tags=["sweeps"],
             summary="Queue a census sweep: train every catalogue encoding on a stratified sample of census languages",
             responses=problem_responses(400, 401, 404, 413, 415, 422))
async def create_sweep(body: SweepRequest, request: Request, response: Response,
                       _key: str | None = Depends(require_api_key)) -> dict[str, Any]:
    """Check the sweep and queue it as a job (202, ``Location: /v1/sweeps/{id}``).

    Body: ``{states, alphabet, per_cell, profile, seed, encodings, overrides, census_run,
    max_attempts}`` (:class:`~langclass.app.usecases.sweep_jobs.SweepRequest`, unknown fields
    refused), or a published suite ``{suite, setting, task, limit, only, profile, encodings, overrides,
    max_attempts}`` (docs/sweep.md, "The published suite"; an unknown suite or name is a 422 naming
    ``suite`` or ``only``). Checked before queueing: ``max_sample_languages`` (the census to enumerate),
    ``max_sweep_runs`` (on the most runs the sample can have), the job limits of one language's
    experiment, the profile and test lengths, and the census run (N, K, classes).

    Errors: 422 naming the field or the limit; 404 ``census_run`` names no stored run; 409
    ``census-data-changed`` when that run's data file is missing or altered; 401 without
    an API key when keys are configured."""
    db = _db(request)
    settings = _settings(request)

    def build() -> dict[str, Any]:
        row = counts = None
        if body.census_run is not None:
            with db.session_scope() as session:
                row = runs.get_run(session, body.census_run)
                if row is None:
                    raise NotFoundError(f"no census run with id {body.census_run!r}", field="census_run")
                counts = runs.profile_counts(session, row.id)
                session.expunge(row)
            runs.load_data(row)  # a missing or altered data file: 409 census-data-changed now, not a failed job later
        return build_sweep_spec(body, census_run=row, run_profile_counts=counts, limits=settings.job_limits())

    spec = await anyio.to_thread.run_sync(build)
    max_attempts = body.max_attempts or settings.job_max_attempts

    def insert() -> dict[str, Any]:
        with db.session_scope() as session:
            row = jobrepo.create_job(session, language_id=None, kind="sweep", spec=spec, max_attempts=max_attempts)
            return _resource(row)

    resource = await anyio.to_thread.run_sync(insert)
    executor = getattr(request.app.state, "executor", None)
    if executor is not None:
        executor.notify()  # only after the commit: a worker can now see the job
    response.headers["Location"] = f"/v1/sweeps/{resource['id']}"
    return resource


@router.get("/sweeps", response_model=SweepPage, tags=["sweeps"], summary="Browse sweep jobs (newest first)",
            responses=problem_responses(400, 422))
async def list_sweeps(
    request: Request,
    status: Annotated[Literal["queued", "running", "succeeded", "failed", "cancelled"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="page size")] = 50,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page", json_schema_extra=CURSOR_SCHEMA)] = None,
) -> dict[str, Any]:
    """Sweep jobs newest first, cursor-paginated as ``GET /v1/jobs``; items omit spec, result and report.

    Errors: 400 a malformed cursor; 422 a bad limit or status."""
    db = _db(request)

    def query() -> dict[str, Any]:
        with db.session_scope() as session:
            rows, nxt = jobrepo.list_jobs(session, limit=limit, cursor=cursor, status=status, kind="sweep")
            return {"items": [jobrepo.job_summary(r) for r in rows], "next_cursor": nxt, "limit": limit}

    return await anyio.to_thread.run_sync(query)


@router.get("/sweeps/{job_id}", response_model=Sweep, tags=["sweeps"], summary="One sweep: status, progress, report",
            responses=problem_responses(404, 422))
async def get_sweep(job_id: JobId, request: Request) -> dict[str, Any]:
    """The sweep job; ``report`` once it has a result (whole, or the finished languages of a
    cancelled or stopped one: ``report.complete`` false), ``result`` the content of ``sweep.json``.

    Errors: 404 no sweep job with this id."""
    return await anyio.to_thread.run_sync(_load, _db(request), job_id)


@router.get("/sweeps/{job_id}/heatmap.png", tags=["sweeps"],
            summary="Cells × encodings: the share of languages whose N* reaches the longest tested length (PNG)",
            responses={200: {"content": {"image/png": {}}, "description": "the heat map"}, **problem_responses(404, 409, 422)})
async def sweep_heatmap(job_id: JobId, request: Request) -> Response:
    """The heat map of ``sweep.png`` (predicted squares outlined), drawn from the job's result.

    Errors: 404 no sweep job with this id; 409 the job has no result yet (queued, running, or it
    ended before a language finished)."""
    resource = await anyio.to_thread.run_sync(_load, _db(request), job_id)
    result = resource.get("result")
    if not result or "aggregate" not in result:
        raise ConflictError(f"sweep {job_id} has no result to draw yet (status {resource['status']})", field="id",
                            job_status=resource["status"])
    from langclass.app.usecases.sweep import heatmap_png

    png = await anyio.to_thread.run_sync(heatmap_png, result)
    final = resource["status"] in jobrepo.TERMINAL
    return Response(content=png, media_type="image/png", headers={"Cache-Control": "max-age=3600" if final else "no-store"})
