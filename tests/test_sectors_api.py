"""The ``sectors`` job kind through the API: prediction from the stored classification, a run on
the embedded executor, the plot, and 422s naming the field."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow

TINY = {"max_steps": 10, "batch_size": 16, "train_lengths": [1, 8], "test_lengths": [9, 10], "eval_per_length": 8,
        "n_layers": 1, "d_model": 8, "n_heads": 2, "d_ff": 16}


def store(client: Any, regex: str) -> str:
    r = client.post("/v1/languages", json={"regex": regex, "alphabet": ["a", "b"]})
    assert r.status_code in (200, 201), r.text
    return r.json()["id"]


def test_sectors_job_is_queued_with_the_classifier_prediction_and_its_function_runs_it(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = store(client, "(ab)*")
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "sectors", "seeds": [0], "overrides": TINY, "pj": {"max_order": 1}})
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["kind"] == "sectors" and job["status"] == "queued"
    assert job["spec"]["prediction"]["class"] == "ltl_p_mod" and job["spec"]["prediction"]["period"] == 2
    assert [j["id"] for j in client.get("/v1/jobs", params={"kind": "sectors"}).json()["items"]] == [job["id"]]
    assert client.get(f"/v1/jobs/{job['id']}/plot.png").status_code == 409  # no result yet
    # what a worker runs for this kind, on the stored spec
    import importlib

    from langclass.app.store.jobs import JOB_KINDS
    from langclass.app.usecases.plot_sectors import plot_sectors

    module, func = JOB_KINDS["sectors"].split(":")
    res = getattr(importlib.import_module(module), func)(job["spec"])
    assert res["verdict"]["status"] in ("agrees", "disagrees", "inconclusive") and len(res["runs"]) == 1
    assert len(res["runs"][0]["heads"]) == 2
    assert plot_sectors(res)[:8] == b"\x89PNG\r\n\x1a\n"
    r = client.post(f"/v1/languages/{store(client, 'a(a|b)*')}/experiments", json={"kind": "sectors"})
    assert r.status_code == 202 and r.json()["spec"]["prediction"]["class"] == "ltl_p"


@pytest.mark.parametrize("body,field", [
    ({"kind": "sectors", "encodings": ["nope"]}, "encodings"),
    ({"kind": "sectors", "pj": {"bogus": 1}}, "pj.bogus"),
    ({"kind": "sectors", "sparsity": [-1]}, "sparsity[0]"),
    ({"kind": "sectors", "formula": "x"}, "formula"),
    ({"kind": "sectors", "pj": {"roots": [[1, 2]]}}, "pj.max_order"),
])
def test_bad_sectors_requests_are_422(make_client: Any, migrated_url: str, body: dict[str, Any], field: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = store(client, "(aa)*")
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field, r.json()
