"""Job records: the JSON of a job row (the Job resource and its listing form) and of a job's error.

Nothing here writes the jobs table (:mod:`langclass.app.store.jobs` is its only writer and re-exports
these functions); routes, pages and workers render rows and exceptions with them.
"""

from __future__ import annotations

from pathlib import PurePath

from collections.abc import Mapping
from typing import Any

from langclass.core.base.errors import LangclassError, LimitExceeded
from langclass.app.errors import problem_dict
from .orm import JobRow

__all__ = ["error_record", "job_resource", "job_summary"]


def error_record(exc: BaseException, *, attempt: int | None = None) -> dict[str, Any]:
    """The ``error`` JSON for an exception raised by a job function.

    :class:`LimitExceeded` → ``limit-exceeded`` (with ``limit`` and ``value``); another
    :class:`LangclassError` → ``invalid-spec`` (with its ``code`` and ``field``); anything else (a
    bug) → ``run-error`` naming the exception's type only: its message and traceback may hold server
    paths or internals, and any reader of ``GET /v1/jobs/{id}`` sees this record, so they go to the
    worker's log (which logs the traceback with the job id) and not here.
    """
    if isinstance(exc, LimitExceeded):
        out: dict[str, Any] = {"reason": "limit-exceeded", **problem_dict(exc)}
    elif isinstance(exc, LangclassError):
        out = {"reason": "invalid-spec", **problem_dict(exc)}
    else:
        out = {
            "reason": "run-error",
            "detail": f"the run failed with an internal error ({type(exc).__name__}); the worker's log has the traceback",
            "type": type(exc).__name__,
        }
    if attempt is not None:
        out["attempt"] = attempt
    return out


def _public_spec(spec: Any) -> Any:
    """The spec as served: a sweep's census run names its data file, not the server path the worker
    reads it from (``data_path`` → ``data_file``)."""
    run = spec.get("census_run") if isinstance(spec, Mapping) else None
    if not (isinstance(run, Mapping) and "data_path" in run):
        return spec
    public = {k: v for k, v in run.items() if k != "data_path"}
    public["data_file"] = PurePath(str(run["data_path"])).name
    return {**spec, "census_run": public}


def _spec_notes(row: JobRow) -> list[str]:
    """How deprecated forms in a train job's spec were read (e.g. ``test_lengths: [21, 40]`` = the
    range 21..40) and how to write them now; empty otherwise."""
    if row.kind != "train" or not isinstance(row.spec, Mapping):
        return []
    from langclass.models.training.specs import length_notation_notes

    return length_notation_notes(row.spec)


def job_resource(row: JobRow) -> dict[str, Any]:
    """The Job resource of a row (what ``GET /v1/jobs/{id}`` returns).

    ``language_id`` is None for a sweep job (no single language); its links then name the sweep and
    its heat map instead of a language and a plot.

    ``error`` describes the job as it stands: while a retry runs, the stored error belongs to the
    attempt before it (a lost worker), so it is shown as ``previous_error`` and ``error`` is null.
    """
    running_retry = row.status == "running" and row.error is not None
    links = {"self": f"/v1/jobs/{row.id}"}
    if row.language_id is not None:  # a sweep job has no language: no link
        links["language"] = f"/v1/languages/{row.language_id}"
    if row.kind == "sweep":
        links["sweep"] = f"/v1/sweeps/{row.id}"
        if not (isinstance(row.spec, Mapping) and row.spec.get("suite")):  # a suite's report is a table, no heat map
            links["heatmap"] = f"/v1/sweeps/{row.id}/heatmap.png"
    else:
        links["plot"] = f"/v1/jobs/{row.id}/plot.png"
    if isinstance(row.result, dict) and (row.result.get("portable_model") or {}).get("stored"):
        links["model"] = f"/v1/jobs/{row.id}/model"  # the zip of config, weights and runner (docs/models.md)
    return {
        "id": row.id,
        "language_id": row.language_id,
        "kind": row.kind,
        "status": row.status,
        "cancel_requested": bool(row.cancel_requested),
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "spec": _public_spec(row.spec),
        "progress": row.progress,
        "result": row.result,
        "error": None if running_retry else row.error,
        "previous_error": row.error if running_retry else None,
        "notes": _spec_notes(row),
        "created_at": row.created_at,
        "started_at": row.started_at,
        "heartbeat_at": row.heartbeat_at,
        "lease_expires_at": row.lease_expires_at,
        "finished_at": row.finished_at,
        "links": links,
    }


def job_summary(row: JobRow) -> dict[str, Any]:
    """The listing form: the resource without ``spec`` and ``result`` (fetch the job for those)."""
    out = job_resource(row)
    out.pop("spec")
    out.pop("result")
    return out
