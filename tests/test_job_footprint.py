"""The whole model is bounded, not only each dimension (issue 24 item 5): parameters and the memory of
one training step are estimated at validation (train and sectors jobs) and a job over
``job_max_parameters`` or ``job_max_memory_bytes`` is a 422 carrying the estimate."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.models.experiments import experiment
from langclass.models.training.footprint import footprint, parameter_count
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.experiments.sectors import validate_sectors_spec
from langclass.models.training.specs import JobLimits

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])
BIG = {"d_model": 4096, "n_layers": 48, "d_ff": 16384, "n_heads": 64}
LONG = {"train_lengths": {"range": [1, 10000]}, "batch_size": 4096}


@pytest.mark.parametrize("kw", [
    {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16},
    {"d_model": 12, "n_heads": 3, "n_layers": 2, "d_ff": None, "bias": False},
    {"d_model": 16, "n_heads": 4, "n_layers": 3, "d_ff": 8, "norm": "post", "d_head": 5},
    {"d_model": 8, "n_heads": 2, "n_layers": 0, "norm": "none"},
    {"d_model": 8, "n_heads": 2, "n_layers": 2, "encoding": {"name": "rope"}},
    {"d_model": 8, "n_heads": 2, "n_layers": 1, "encoding": {"name": "pj_bias"}},
    {"d_model": 8, "n_heads": 2, "n_layers": 1, "encoding": {"name": "pj_bias", "max_order": 3, "n_freqs": 2}},
])
def test_parameter_count_is_the_built_models(kw: dict[str, Any]) -> None:
    cfg = RecognizerConfig(alphabet=("a", "b", "c"), **kw)
    assert parameter_count(cfg) == sum(p.numel() for p in Recognizer(cfg).parameters())


def test_the_issues_model_is_refused_with_its_estimate() -> None:
    spec = {"language": AA.to_canonical_dict(), "encodings": ["nope"], "seeds": [0], "overrides": BIG}
    with pytest.raises(LimitExceeded) as info:
        experiment.validate_spec(spec)
    err = info.value
    assert err.limit == "job_max_parameters" and err.field == "overrides"
    assert 9.6e9 < err.extra["estimate"]["parameters"] < 9.8e9  # the issue's ≈ 9.7·10⁹
    assert f"{err.extra['estimate']['parameters']:,}" in str(err)


def test_long_training_strings_in_large_batches_are_refused_by_memory() -> None:
    spec = {"language": AA.to_canonical_dict(), "encodings": ["nope"], "seeds": [0], "overrides": LONG}
    with pytest.raises(LimitExceeded) as info:
        experiment.validate_spec(spec)
    assert info.value.limit == "job_max_memory_bytes"
    est = info.value.extra["estimate"]
    assert est["activation_bytes"] > 10**12 and est["memory_bytes"] > JobLimits().job_max_memory_bytes
    # a site with the memory raises the limit
    experiment.validate_spec(spec, JobLimits(job_max_memory_bytes=10**16))


def test_the_profiles_fit() -> None:
    for profile in experiment.PROFILES:
        spec = {"language": AA.to_canonical_dict(), "encodings": ["nope", "rope"], "profile": profile}
        experiment.validate_spec(spec)


def test_sectors_jobs_are_bounded_too() -> None:
    spec = {"language": AA.to_canonical_dict(), "prediction": {"class": "ltl_p_mod", "period": 2}, "overrides": BIG}
    with pytest.raises(LimitExceeded) as info:
        validate_sectors_spec(spec)
    assert info.value.limit == "job_max_parameters"


def test_footprint_grows_as_the_estimate_says() -> None:
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=2, d_ff=16)
    a = footprint(cfg, batch_size=4, max_train_length=10)
    b = footprint(cfg, batch_size=8, max_train_length=10)
    assert b["activation_bytes"] == 2 * a["activation_bytes"] and b["parameters"] == a["parameters"]
    assert footprint(cfg, batch_size=4, max_train_length=10, precision="bfloat16")["training_state_bytes"] * 2 == a["training_state_bytes"]


def _post(client: Any, body: dict[str, Any]) -> Any:
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    return client.post(f"/v1/languages/{lid}/experiments", content=json.dumps(body), headers={"content-type": "application/json"})


@pytest.mark.parametrize("kind, overrides, limit", [("train", BIG, "job_max_parameters"), ("train", LONG, "job_max_memory_bytes"),
                                                    ("sectors", BIG, "job_max_parameters")])
def test_api_answers_422_with_the_estimate(api: Any, kind: str, overrides: dict[str, Any], limit: str) -> None:
    body = {"kind": kind, "overrides": overrides}
    if kind == "train":
        body["encodings"] = ["nope"]
    r = _post(api, body)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "limit-exceeded" and problem["limit"] == limit
    assert problem["setting"] == f"LANGCLASS_{limit.upper()}"
    assert problem["estimate"]["parameters"] > 0 and problem["estimate"]["memory_bytes"] > 0
    assert "GiB" in problem["detail"]
    assert api.get("/v1/jobs").json()["items"] == []
