"""Job specs (langclass.models.training.specs): one frozen model for API, CLI and worker; every number bounded
by a named limit checked before anything is materialized; labels never reach the file system."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.experiments import experiment
from langclass.models.training.specs import DEFAULT_JOB_LIMITS, JobLimits, TrainSpec, parse_train_spec

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])
TINY = {"n_layers": 1, "d_model": 8, "n_heads": 2, "d_ff": 16, "max_steps": 2, "batch_size": 4,
        "train_lengths": [1, 6], "test_lengths": [7, 8], "eval_per_length": 4}


def spec(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"language": AA.to_canonical_dict(), "encodings": ["nope"], "seeds": [0], "overrides": dict(TINY)}
    base.update(kw)
    return base


@pytest.fixture
def no_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a list of lengths is built (the limits must refuse the spec before)."""

    def boom(*_a: Any, **_k: Any) -> None:
        raise AssertionError("lengths were materialized before the limits were checked")

    monkeypatch.setattr(experiment, "_lengths", boom)


@pytest.mark.parametrize(
    "change, limit, field",
    [
        ({"overrides": {**TINY, "max_steps": 10**12}}, "job_max_steps", "overrides.max_steps"),
        ({"overrides": {**TINY, "n_layers": 10**5}}, "job_max_layers", "overrides.n_layers"),
        ({"overrides": {**TINY, "batch_size": 10**9}}, "job_max_batch_size", "overrides.batch_size"),
        ({"overrides": {**TINY, "d_model": 10**6}}, "job_max_d_model", "overrides.d_model"),
        ({"overrides": {**TINY, "patience": 10**9}}, "job_max_steps", "overrides.patience"),
        ({"seeds": [2**70]}, "job_max_seed", "seeds[0]"),
        ({"eval_seed": 2**40}, "job_max_seed", "eval_seed"),
        ({"encodings": [{"name": "rope", "params": {"base": 1e308}}]}, "job_max_encoding_param", "encodings[0].params.base"),
        ({"overrides": {**TINY, "test_lengths": {"min": 0, "max": 30_000_000}}}, "max_test_length", "overrides.test_lengths"),
        ({"overrides": {**TINY, "test_lengths": {"min": 0, "max": 10**18}}}, "max_test_length", "overrides.test_lengths"),
        ({"overrides": {**TINY, "test_lengths": [1, 9000], "eval_per_length": 1000}}, "max_eval_strings", "overrides.eval_per_length"),
        ({"seeds": list(range(300)), "learning_rates": [1e-3, 2e-3]}, "max_runs", "seeds"),
    ],
)
def test_absurd_numbers_hit_a_named_limit_before_anything_is_built(change: dict[str, Any], limit: str, field: str, no_expansion: None) -> None:
    with pytest.raises(LimitExceeded) as info:
        experiment.validate_spec(spec(**change))
    assert info.value.limit == limit and info.value.field == field
    assert info.value.value == getattr(DEFAULT_JOB_LIMITS, limit)


def test_a_raised_limit_admits_the_spec() -> None:
    big = spec(overrides={**TINY, "max_steps": 2_000_000})
    with pytest.raises(LimitExceeded):
        experiment.validate_spec(big)
    norm = experiment.validate_spec(big, JobLimits(job_max_steps=3_000_000))
    assert norm["settings"]["max_steps"] == 2_000_000


@pytest.mark.parametrize(
    "change, field",
    [
        ({"encodings": [{"name": "nope", "label": "../../outside"}]}, "encodings[0].label"),
        ({"encodings": [{"name": "nope", "label": "/tmp/abs"}]}, "encodings[0].label"),
        ({"encodings": [{"name": "nope", "label": ".."}]}, "encodings[0].label"),
        ({"encodings": [{"name": "nope", "label": "$\\undefinedmacro{x}$"}]}, "encodings[0].label"),
        ({"encodings": [{"name": "nope", "label": "a\x00b"}]}, "encodings[0].label"),
        ({"seeds": [True]}, "seeds[0]"),
        ({"overrides": {**TINY, "max_steps": 2.5}}, "overrides.max_steps"),
        ({"overrides": {**TINY, "grad_clip": float("inf")}}, "overrides.grad_clip"),
        ({"overrides": {**TINY, "warmup_steps": float("nan")}}, "overrides.warmup_steps"),
        ({"encodings": [{"name": "rope", "params": {"base": float("nan")}}]}, "encodings[0].params"),
        ({"overrides": {**TINY, "test_lengths": {"min": 3}}}, "overrides.test_lengths.max"),
        ({"checkpointdir": "/tmp"}, "checkpointdir"),
    ],
)
def test_malformed_specs_are_input_errors_naming_the_field(change: dict[str, Any], field: str, no_expansion: None) -> None:
    with pytest.raises(InputError) as info:
        experiment.validate_spec(spec(**change))
    assert info.value.field == field, info.value


def test_the_model_is_frozen_and_round_trips() -> None:
    s = parse_train_spec(spec(encodings=["nope", {"name": "rope", "params": {"base": 100}, "label": "rope 100"}],
                              overrides={**TINY, "test_lengths": {"min": 7, "max": 9, "step": 2}}))
    with pytest.raises(Exception):
        s.profile = "paper"  # type: ignore[misc]
    again = TrainSpec.model_validate(s.model_dump(mode="json", exclude_none=True))
    assert again == s
    assert [e.resolved_label() for e in s.encoding_specs()] == ["nope", "rope 100"]


def test_checkpoint_paths_come_from_the_run_index_never_the_label(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    result = experiment.run_experiment(spec(encodings=[{"name": "nope", "label": "nope..x"}], checkpoint_dir=str(ckpt)))
    assert result["complete"]
    assert sorted(p.name for p in ckpt.iterdir()) == ["run0000"]
    assert (ckpt / "run0000" / "last.pt").is_file()


class _Plant:
    """A pickle that creates a file when unpickled (what a planted last.pt could do)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.mkdir, (self.marker,))


def test_a_planted_checkpoint_is_never_unpickled(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    marker = tmp_path / "pwned"
    ckpt = tmp_path / "ckpt" / "run0000"
    ckpt.mkdir(parents=True)
    with open(ckpt / "last.pt", "wb") as fh:
        pickle.dump({"digest": _Plant(str(marker))}, fh)
    result = experiment.run_experiment(spec(checkpoint_dir=str(tmp_path / "ckpt")))
    assert result["complete"] and result["runs"][0]["resumed_from"] is None
    assert not marker.exists()
    # the planted file was replaced by a real checkpoint, which loads weights-only
    state = torch.load(ckpt / "last.pt", weights_only=True)
    assert state["step"] == result["runs"][0]["steps"]


def test_train_recognizer_loads_checkpoints_weights_only(tmp_path: Path) -> None:
    from langclass.models.training.data import LanguageSampler
    from langclass.models.nn.recognizer import RecognizerConfig
    from langclass.models.training.train import TrainConfig, train_recognizer

    torch.set_num_threads(1)
    marker = tmp_path / "pwned"
    with open(tmp_path / "last.pt", "wb") as fh:
        pickle.dump({"digest": _Plant(str(marker))}, fh)
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, d_ff=16, encoding={"name": "nope"})
    tconf = TrainConfig(max_steps=2, batch_size=4, train_lengths=(1, 6), patience=None, device="cpu", checkpoint_dir=str(tmp_path))
    res = train_recognizer(cfg, tconf, LanguageSampler(AA, 6))
    assert not marker.exists() and res.resumed_from is None and res.steps == 2


# --- the API refuses the same specs with 422 before queueing (both backends) ------------------------------


def _post(client: Any, body: dict[str, Any]) -> Any:
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    return client.post(f"/v1/languages/{lid}/experiments", content=__import__("json").dumps(body), headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    "body, field, limit",
    [
        ({"encodings": [{"name": "nope", "label": "../../outside"}]}, "encodings[0].label", None),
        ({"encodings": [{"name": "nope", "label": "/abs/outside"}]}, "encodings[0].label", None),
        ({"encodings": ["nope"], "overrides": {"max_steps": 10**12}}, "overrides.max_steps", "job_max_steps"),
        ({"encodings": ["nope"], "overrides": {"d_model": 10**6}}, "overrides.d_model", "job_max_d_model"),
        ({"encodings": ["nope"], "seeds": [2**70]}, "seeds[0]", "job_max_seed"),
        ({"encodings": ["nope"], "overrides": {"test_lengths": {"min": 0, "max": 30_000_000}}}, "overrides.test_lengths", "max_test_length"),
        ({"encodings": ["nope"], "overrides": {"test_lengths": {"min": 0, "max": 10**18}}}, "overrides.test_lengths", "max_test_length"),
        ({"encodings": [{"name": "rope", "params": {"base": 1e308}}]}, "encodings[0].params.base", "job_max_encoding_param"),
        ({"encodings": ["nope"], "overrides": {"d_ff": 0}}, "overrides.d_ff", None),
        ({"encodings": ["nope"], "overrides": {"grad_clip": 1e300}}, "overrides.grad_clip", None),
    ],
)
def test_api_refuses_absurd_and_hostile_specs(api: Any, body: dict[str, Any], field: str, limit: str | None) -> None:
    r = _post(api, {"kind": "train", **body})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["field"] == field, problem
    if limit is not None:
        assert problem["code"] == "limit-exceeded" and problem["limit"] == limit
        assert problem["setting"] == f"LANGCLASS_{limit.upper()}"
    assert api.get("/v1/jobs").json()["items"] == []


def test_api_job_limits_are_raised_by_settings(make_client: Any, migrated_url: str) -> None:
    body = {"kind": "train", "encodings": ["nope"], "overrides": {"max_steps": 2_000_000}}
    assert _post(make_client(migrated_url, worker_slots=0), body).status_code == 422
    r = _post(make_client(migrated_url, worker_slots=0, job_max_steps=3_000_000), body)
    assert r.status_code == 202, r.text
    assert r.json()["spec"]["overrides"] == {"max_steps": 2_000_000}


def test_a_job_past_its_wall_clock_budget_is_stopped_and_failed(migrated_url: str, tmp_path: Path) -> None:
    """A budget far below the work: the endless job is stopped at its first poll after the budget."""
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import Database
    from langclass.app.execution.worker import WorkerConfig, run_claim
    from test_jobs_repo import SUPPORT, add_job, add_language, row

    db = Database(migrated_url)
    try:
        jid = add_job(db, add_language(db), {"trace_dir": str(tmp_path), "steps": 100_000, "step_s": 0.01})
        with db.session_scope() as s:
            held = jobrepo.claim(s, owner="w", lease_s=60)
        cfg = WorkerConfig(database_url=migrated_url, lease_s=60, kinds=SUPPORT, time_limit_s=1e-6)
        assert run_claim(db, held, cfg) == "failed"
        r = row(db, jid)
        assert r.status == "failed" and r.error["reason"] == "limit-exceeded"
        assert r.error["limit"] == "job_time_limit_s" and r.error["setting"] == "LANGCLASS_JOB_TIME_LIMIT_S"
        assert r.result["completed_steps"] < 100_000
    finally:
        db.dispose()


def test_plot_shows_a_stored_mathtext_label_as_typed() -> None:
    """A job stored before labels were validated may carry ``$\\undefinedmacro{x}$``: the plot must
    still draw (it raised inside matplotlib's mathtext parser: a 500 on every request)."""
    from langclass.app.usecases.plot import plot_accuracy_by_length

    run = {"encoding": "$\\undefinedmacro{x}$", "accuracy_by_length": {"5": 1.0, "6": 0.5}, "longest_perfect_length": 5}
    png = plot_accuracy_by_length({"runs": [run], "settings": {"train_lengths": [1, 4]}})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
