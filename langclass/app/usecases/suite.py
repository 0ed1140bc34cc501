"""The sweep over a published suite: every language of the suite trained, side by side with its labels.

:func:`run_suite` reads the suite (:func:`langclass.core.ingest.suite.load_suite`), classifies each
language (:func:`langclass.core.classification.analysis.analyze`), trains every distinct language
with the suite encodings (:func:`langclass.models.experiments.sweep.run_sweep`, resumable in
``out_dir``) in the chosen setting, and writes ``suite.json`` (everything), ``suite.csv`` (one row
per language × encoding) and ``suite.md`` (the agreement counts and the per-language table,
:mod:`langclass.models.experiments.suite_report`). docs/sweep.md, "The published suite".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langclass.core.base.errors import InputError

__all__ = ["SUITE_ENCODINGS", "SUITE_SWEEP_PROFILES", "SETTINGS", "TASKS", "select_languages", "run_suite", "write_suite_outputs"]

SUITE_ENCODINGS: tuple[str, ...] = ("nope", "learned")
"""The default encodings of a suite run: NoPE (the product's causal prediction for C-RASP) and learned
absolute positions (the suite's own GPT-2 models' encoding)."""

SUITE_STRICT_ENCODINGS: tuple[str, ...] = ("nope", "rope")
"""The suite's default encodings in the strict setting (whose sweep has no learned positions)."""

SUITE_SWEEP_PROFILES: dict[str, str] = {"cpu": "suite-cpu", "paper": "suite-paper"}
"""``--profile`` of a suite run → the sweep profile (:data:`langclass.models.experiments.sweep.SWEEP_PROFILES`)."""

SETTINGS: tuple[str, ...] = ("strict", "causal")
"""The training settings (docs/training.md): ``strict`` (strict future mask, BOS/EOS, read at EOS) and
``causal`` (non-strict causal mask, read at the last position)."""

TASKS: tuple[str, ...] = ("recognition", "state_prediction")
"""The training tasks (:data:`langclass.models.training.specs.TaskName`)."""


def select_languages(suite: str, *, only: Sequence[str] | None = None, limit: int | None = None) -> list[Any]:
    """The suite's languages, restricted to the names in ``only`` (in the suite's order), then to the
    first ``limit``.

    Raises:
        InputError: unknown suite (``field="suite"``), a name not in the suite (``field="only"``),
            ``limit`` < 1 (``field="limit"``), a malformed row or regex (``field="suite"``).
    """
    from langclass.core.ingest.suite import load_suite

    langs = load_suite(suite)
    if only:
        names = {lang.name for lang in langs}
        unknown = [n for n in only if n not in names]
        if unknown:
            raise InputError(f"no language {unknown[0]!r} in suite {suite!r}", field="only")
        wanted = set(only)
        langs = [lang for lang in langs if lang.name in wanted]
    if limit is not None:
        if limit < 1:
            raise InputError("limit must be at least 1", field="limit")
        langs = langs[:limit]
    for lang in langs:
        lang.dfa()  # every regex parses before anything trains (InputError naming the row)
    return langs


def run_suite(suite: str, out_dir: str | Path, *, profile: str = "cpu", setting: str = "causal", task: str = "recognition",
              encodings: Sequence[str] | None = None, only: Sequence[str] | None = None, limit: int | None = None,
              seeds: Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None, runner: Any = None,
              limits: Any = None, progress: Any = None, write: bool = True, should_cancel: Callable[[], bool] | None = None,
              language_progress: Any = None) -> dict[str, Any]:
    """Train every language of ``suite`` (or the ``only`` / ``limit`` subset) and compare.

    Languages with the same canonical DFA train once (the sweep keys records by fingerprint) and share
    their record.

    Args:
        suite: a shipped suite name (:data:`langclass.core.ingest.suite.SUITES`).
        profile: ``"cpu"`` (train lengths 1-50, test lengths 51, 100, 200, …, 500, a short training) or
            ``"paper"`` (the App. E.2 grid with the suite's lengths, for a GPU).
        setting: ``"causal"`` or ``"strict"`` (:data:`SETTINGS`), every language's train spec's.
        task: ``"recognition"`` (accept/reject, what the product's prediction is about) or
            ``"state_prediction"`` (the DFA state after every symbol, the suite's own task; causal only).
        encodings: default :data:`SUITE_ENCODINGS`.
        seeds, overrides, runner, limits, progress, should_cancel, language_progress: as
            :func:`langclass.app.usecases.sweep.run`.
        write: write ``suite.json`` / ``.csv`` / ``.md`` to ``out_dir``.

    Returns:
        ``{suite, source, profile, sweep_profile, setting, task, encodings, rows, agreement, records, runs,
        resumed, settings, overrides, seeds, wall_s}`` (``rows``: :func:`~langclass.models.experiments.suite_report.suite_row`).

    Raises:
        InputError: unknown suite / profile / setting / names (``field`` names it); LimitExceeded and
            InputError of any language's spec, before anything trains.
        SweepCancelled: as :func:`langclass.models.experiments.sweep.run_sweep`.
    """
    from langclass.core.ingest.suite import suite_source
    from langclass.core.classification.analysis import analyze
    from langclass.models.experiments.suite_report import agreement, suite_row
    from langclass.models.experiments.sweep import SweepCancelled, run_sweep

    from .experiments import state_languages_in_crasp
    from .sweep import train_spec_for

    source = suite_source(suite)
    if profile not in SUITE_SWEEP_PROFILES:
        raise InputError(f"unknown suite profile {profile!r}; expected one of {', '.join(SUITE_SWEEP_PROFILES)}", field="profile")
    if setting not in SETTINGS:
        raise InputError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}", field="setting")
    from langclass.models.training.specs import check_task

    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}", field="task")
    check_task(setting, task)
    langs = select_languages(suite, only=only, limit=limit)
    encs = list(encodings or (SUITE_ENCODINGS if setting == "causal" else SUITE_STRICT_ENCODINGS))
    from langclass.models.experiments.sweep import check_sweep_encodings

    check_sweep_encodings(setting, encs)  # as a census sweep: only the setting's encodings
    analyses = {}
    predicted: dict[str, bool | None] = {}
    sweep_langs = []
    seen: set[str] = set()
    for lang in langs:
        dfa = lang.dfa()
        a = analyze(dfa).to_dict()
        analyses[lang.name] = a
        member = ((a.get("classes") or {}).get("crasp") or {}).get("member")
        # the product's NoPE prediction: the crasp class for recognition; for state prediction every
        # state's prefix language in C-RASP (the train job's prediction, build_train_spec)
        predicted[lang.name] = state_languages_in_crasp(dfa.to_canonical_dict()) if task == "state_prediction" else member
        if dfa.fingerprint() in seen:  # the same language written twice trains once
            continue
        seen.add(dfa.fingerprint())
        sweep_langs.append(("crasp" if member else "not crasp" if member is False else "crasp undecided", dfa, {"crasp": member}))
    spec_for = train_spec_for(encs, setting, task=task)

    def rows_of(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        by_fp = {r["fingerprint"]: r for r in records}
        return [suite_row(lang, analyses[lang.name], by_fp.get(lang.dfa().fingerprint()), predicted=predicted[lang.name])
                for lang in langs]

    try:
        res = run_sweep(sweep_langs, spec_for, out_dir, profile=SUITE_SWEEP_PROFILES[profile], seeds=seeds, overrides=overrides,
                        runner=runner, limits=limits, progress=progress, should_cancel=should_cancel,
                        language_progress=language_progress)
    except SweepCancelled as exc:  # the finished languages, side by side like a whole run
        records = list(exc.partial.get("records") or [])
        rows = rows_of(records)
        exc.partial = {"suite": suite, "source": source, "profile": profile, "setting": setting, "task": task,
                       "encodings": list(records[0]["encodings"]) if records else encs, "rows": rows,
                       "agreement": agreement(rows), "records": records, "languages": len(sweep_langs), "complete": False}
        raise
    rows = rows_of(res["records"])
    labels = list(res["records"][0]["encodings"]) if res["records"] else encs
    out = {**res, "sweep_profile": res["profile"], "suite": suite, "source": source, "profile": profile, "setting": setting, "task": task,
           "encodings": labels, "rows": rows, "agreement": agreement(rows)}
    if write:
        write_suite_outputs(out, out_dir)
    return out


def write_suite_outputs(out: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``suite.json``, ``suite.csv`` and ``suite.md`` (the source, the setting, the agreement lines
    and the per-language table); returns their paths."""
    from langclass.models.experiments.suite_report import SUITE_CSV_FIELDS, markdown_suite, suite_csv_rows

    from .export_csv import csv_table

    d = Path(out_dir)
    paths = {k: d / f"suite.{k}" for k in ("json", "csv", "md")}
    paths["json"].write_text(json.dumps(out, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    paths["csv"].write_text(csv_table(SUITE_CSV_FIELDS, suite_csv_rows(out["rows"])), encoding="utf-8", newline="")
    src = out["source"]
    head = (f"# Suite {out['suite']}: {len(out['rows'])} languages, {out['setting']} setting, task {out.get('task', 'recognition')}, "
            f"{out['profile']} profile\n\n"
            f"Source: {src['repository']} (commit {src['commit'][:12]}, {src['table']}), *{src['paper']}*; "
            f"their task: {src['task']}.\n\n")
    paths["md"].write_text(head + markdown_suite(out["rows"], out["agreement"], out["encodings"]), encoding="utf-8")
    return paths
