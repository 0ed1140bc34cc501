"""The construct and train job functions with their downloads: the run, then its portable model(s).

``run_construct_job`` wraps :func:`~langclass.models.construct.verify.run_construction` and
``run_train_job`` wraps :func:`~langclass.models.experiments.experiment.run_experiment` (the best
run of every encoding); each returns the run's record as before plus ``portable_model`` (the
summary of every model: layers, heads, parameters, route, verification) and carries the zip of the
files (config.json, model.safetensors, langclass_runner.py; docs/models.md) as the result's
``model_zip`` attribute, which the worker stores beside the job (``job_models``) instead of in its
JSON. ``GET /v1/jobs/{id}/model`` serves that zip.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = ["JobResult", "run_construct_job", "run_train_job"]


class JobResult(dict):
    """A job's JSON result that also carries the zip of its models (``model_zip``, not part of the JSON)."""

    model_zip: bytes | None = None


def _summaries(folders: Mapping[str, Mapping[str, bytes]]) -> dict[str, Any]:
    from langclass.models.portable.export import summary_of

    return {folder or "model": summary_of(json.loads(files["config.json"])) for folder, files in folders.items()}


def run_construct_job(spec: Mapping[str, Any], *, progress: Callable[[dict], None] | None = None,
                      should_cancel: Callable[[], bool] | None = None, limits: Limits = DEFAULT_LIMITS) -> JobResult:
    """The ``construct`` job: :func:`run_construction` (same arguments, errors and record) and the
    verified model's download (one model at the top of the zip)."""
    from langclass.models.construct.verify import run_construction
    from langclass.models.portable.export import zip_models
    from langclass.models.portable.provenance import construct_files

    held: dict[str, Any] = {}
    record = run_construction(spec, progress=progress, should_cancel=should_cancel, limits=limits,
                              on_model=lambda m, d: held.update(model=m, dfa=d))
    out = JobResult(record)
    folders = {"": construct_files(held["model"], held["dfa"], record)}
    out.model_zip = zip_models(folders)
    out["portable_model"] = {"models": _summaries(folders), "bytes": len(out.model_zip)}
    return out


def run_train_job(spec: Mapping[str, Any], *, progress: Callable[[dict], None] | None = None,
                  should_cancel: Callable[[], bool] | None = None, limits: Any = None) -> JobResult:
    """The ``train`` job: :func:`run_experiment` (same arguments, errors and record) and the download of
    the best run of every encoding (one folder ``enc-<label>`` each; the runner at the top)."""
    from langclass.core.ingest.source import DfaSource, parse_language
    from langclass.models.experiments.experiment import run_experiment
    from langclass.models.portable.provenance import BestRuns

    dfa = parse_language(DfaSource(spec.get("language"), field="language")).dfa if isinstance(spec, Mapping) else None
    best = BestRuns(dfa, spec.get("prediction") if isinstance(spec, Mapping) else None)
    record = run_experiment(spec, progress=progress, should_cancel=should_cancel, limits=limits, on_model=best.on_model)
    out = JobResult(record)
    out.model_zip = best.zip()
    if out.model_zip is not None:
        out["portable_model"] = {"models": _summaries(best.folders()), "runs": best.runs(), "bytes": len(out.model_zip)}
    if best.refused:  # e.g. state-prediction heads: the runs stand, their downloads are named as missing
        out["portable_model_refused"] = dict(best.refused)
    return out
