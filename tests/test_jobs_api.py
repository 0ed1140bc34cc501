"""Experiments as jobs through the API, run by the real ``run_experiment`` on the embedded
executor (spawned worker processes of the app): validation (422 naming the field), defaults from
the classification, the stored result (per-length accuracies and N*), listing, cancelling, the plot
and API keys.

Training is shrunk to seconds with overrides (few steps, short lengths, few test strings); the
quick profile itself is exercised by the training tests and bench scripts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.slow

KEY = "test-key-0123456789"

TINY = {
    "max_steps": 30,
    "batch_size": 32,
    "train_lengths": [1, 10],
    "test_lengths": [11, 16],
    "eval_per_length": 32,
    "n_layers": 1,
    "d_model": 16,
    "n_heads": 2,
    "d_ff": 32,
    "patience": 1000,
}


def wait_job(client: Any, jid: str, timeout: float = 240.0, until: Callable[[dict], bool] | None = None) -> dict[str, Any]:
    until = until or (lambda j: j["status"] in ("succeeded", "failed", "cancelled"))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        job = client.get(f"/v1/jobs/{jid}").json()
        if until(job):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {jid} still {job['status']} after {timeout} s: {job.get('progress')}")


def n_star(acc: dict[str, float]) -> int:
    """Longest perfect length recomputed from the stored accuracies (0 when the first length fails)."""
    best = 0
    for n in sorted(acc, key=int):
        if acc[n] < 1.0:
            break
        best = int(n)
    return best


def check_train_result(result: dict[str, Any], labels: list[str], lengths: range) -> None:
    """Every run stores accuracy at every tested length, a consistent N*, a manifest; a summary per encoding."""
    runs = result["runs"]
    assert sorted(r["encoding"] for r in runs) == sorted(labels)
    for r in runs:
        acc = r["accuracy_by_length"]
        assert sorted(int(n) for n in acc) == list(lengths)
        assert all(0.0 <= a <= 1.0 for a in acc.values())
        assert r["longest_perfect_length"] == n_star(acc)
        assert r["manifest"] and len(r["manifest_digest"]) == 64
        assert r["seed"] == 0 and r["learning_rate"] == pytest.approx(3e-3)
    for label in labels:
        s = result["summary"][label]
        mine = [r for r in runs if r["encoding"] == label]
        assert s["runs"] == len(mine)
        assert s["longest_perfect_length"]["max"] == max(r["longest_perfect_length"] for r in mine)
        assert s["accuracy"]["max"] == pytest.approx(max(r["accuracy"] for r in mine))
        assert "verdict" in s


def store_language(client: Any, regex: str = "(ab)*") -> str:
    r = client.post("/v1/languages", json={"regex": regex, "alphabet": ["a", "b"]})
    assert r.status_code in (200, 201), r.text
    return r.json()["id"]


@pytest.fixture
def client(make_client: Any, migrated_url: str) -> Any:
    return make_client(migrated_url, job_lease_s=5.0, worker_slots=1)


@pytest.fixture
def sqlite_client(make_client: Any, sqlite_url: str) -> Any:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    return make_client(sqlite_url, job_lease_s=5.0, worker_slots=1)


def test_ab_star_experiment_runs_and_stores_accuracies_and_n_star(sqlite_client: Any) -> None:
    """The embedded executor on the default SQLite deployment (the Ray test uses PostgreSQL)."""
    client = sqlite_client
    lid = store_language(client)
    body = {"kind": "train", "encodings": ["nope", "rope_periodic"], "profile": "quick", "seeds": [0],
            "learning_rates": [3e-3], "overrides": TINY}
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["status"] in ("queued", "running") and r.headers["location"] == f"/v1/jobs/{job['id']}"
    spec = job["spec"]
    # the period k = 2 of (ab)* comes from the stored classification; the prediction names periodic RoPE only
    assert spec["encodings"][1] == {"name": "rope_periodic", "params": {"periods": 2}, "label": "rope_periodic(periods=2)"}
    assert spec["prediction"]["sufficient"] == ["rope_periodic(periods=2)"]
    assert spec["prediction"]["per_encoding"]["nope"]["sufficient"] is False
    assert spec["language"] == client.get(f"/v1/languages/{lid}/dfa").json()

    done = wait_job(client, job["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["attempts"] == 1 and done["error"] is None and done["finished_at"]
    assert done["progress"]["phase"] == "done"
    check_train_result(done["result"], ["nope", "rope_periodic(periods=2)"], range(11, 17))
    verdict = done["result"]["summary"]["rope_periodic(periods=2)"]["verdict"]
    assert verdict["predicted_sufficient"] is True and verdict["status"] in ("confirmed", "not_confirmed")
    assert done["result"]["summary"]["nope"]["verdict"]["status"] == "measured"

    png = client.get(f"/v1/jobs/{job['id']}/plot.png")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"

    page = client.get("/v1/jobs", params={"language_id": lid}).json()
    assert [j["id"] for j in page["items"]] == [job["id"]] and "result" not in page["items"][0] and "spec" not in page["items"][0]
    assert client.get("/v1/jobs", params={"language_id": "0" * 64}).json()["items"] == []
    # a finished job cannot be cancelled
    assert client.delete(f"/v1/jobs/{job['id']}").status_code == 409


def test_train_job_trains_runs_sharing_a_shape_together_with_the_sequential_verdicts(sqlite_client: Any) -> None:
    """A train job with 2 encodings × 2 seeds takes the batched path by default (all four runs share
    the model shape: one group, ``trained_with`` 4) and gives the runs and verdicts of the same job
    with ``batched: false`` (each run alone)."""
    client = sqlite_client
    lid = store_language(client, "(aa)*")
    body = {"kind": "train", "encodings": ["nope", "rope_periodic"], "seeds": [0, 1], "learning_rates": [3e-3],
            "overrides": {**TINY, "patience": 8}}
    results = {}
    for batched in (None, False):
        r = client.post(f"/v1/languages/{lid}/experiments", json=body if batched is None else {**body, "batched": batched})
        assert r.status_code == 202, r.text
        done = wait_job(client, r.json()["id"])
        assert done["status"] == "succeeded", done["error"]
        results[batched] = done["result"]
    together, alone = results[None], results[False]
    assert together["batched"] is True and [r["trained_with"] for r in together["runs"]] == [4, 4, 4, 4]
    assert alone["batched"] is False and [r["trained_with"] for r in alone["runs"]] == [1, 1, 1, 1]
    keys = ("encoding", "seed", "steps", "stopped", "longest_perfect_length", "reached_longest")
    assert [{k: r[k] for k in keys} for r in together["runs"]] == [{k: r[k] for k in keys} for r in alone["runs"]]
    assert {k: v["status"] for k, v in together["verdict"]["per_encoding"].items()} == \
        {k: v["status"] for k, v in alone["verdict"]["per_encoding"].items()}


@pytest.mark.parametrize(
    "body,field",
    [
        ({"kind": "train"}, "encodings"),
        ({"kind": "train", "encodings": ["no_such_pe"]}, "encodings[0]"),
        ({"kind": "train", "encodings": [{"name": "rope", "params": {"bogus": 1}}]}, "encodings[0].params.bogus"),
        ({"kind": "train", "encodings": ["nope"], "profile": "huge"}, "profile"),
        ({"kind": "train", "encodings": ["nope"], "seeds": []}, "seeds"),
        ({"kind": "train", "encodings": ["nope"], "learning_rates": [2.0]}, "learning_rates[0]"),
        ({"kind": "train", "encodings": ["nope"], "overrides": {"bogus": 1}}, "overrides.bogus"),
        ({"kind": "train", "encodings": ["nope"], "overrides": {"test_lengths": [0, 20000]}}, "overrides.test_lengths"),
        ({"kind": "train", "encodings": ["nope"], "formula": "x"}, "formula"),
        ({"kind": "fly", "encodings": ["nope"]}, "kind"),
        ({"kind": "train", "encodings": ["nope"], "batched": "sometimes"}, "batched"),
        ({"kind": "train", "encodings": ["nope"], "seeds": list(range(51))}, "seeds"),
    ],
)
def test_bad_experiments_are_422_naming_the_field(client: Any, body: dict[str, Any], field: str | tuple[str, ...]) -> None:
    lid = store_language(client)
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["field"] in ((field,) if isinstance(field, str) else field), r.json()
    assert client.get("/v1/jobs").json()["items"] == []  # nothing queued


def test_unknown_language_and_job_are_404(client: Any) -> None:
    r = client.post(f"/v1/languages/{'0' * 64}/experiments", json={"encodings": ["nope"]})
    assert r.status_code == 404 and r.json()["code"] == "not-found"
    for path in ("/v1/jobs/nope", "/v1/jobs/nope/plot.png"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
    assert client.delete("/v1/jobs/nope").status_code == 404


def test_cancel_queued_and_running_jobs_and_plot_before_result(make_client: Any, sqlite_url: str) -> None:
    """With no worker slot, a job stays queued: DELETE cancels it at once. With a slot, a long job
    is asked to stop (202) and ends cancelled within a heartbeat. (The conditional updates behind
    this are tested on both backends in test_jobs_repo.)"""
    from langclass.app.store.db import upgrade

    migrated_url = sqlite_url
    upgrade(migrated_url)
    idle = make_client(migrated_url, worker_slots=0)
    lid = store_language(idle)
    long = {"encodings": ["nope"], "seeds": [0], "learning_rates": [3e-3], "overrides": {**TINY, "max_steps": 100000}}
    jid = idle.post(f"/v1/languages/{lid}/experiments", json=long).json()["id"]
    plot = idle.get(f"/v1/jobs/{jid}/plot.png")
    assert plot.status_code == 409 and plot.json()["code"] == "conflict"
    r = idle.delete(f"/v1/jobs/{jid}")
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["error"]["reason"] == "cancelled"
    assert idle.delete(f"/v1/jobs/{jid}").status_code == 200  # idempotent

    busy = make_client(migrated_url, worker_slots=1, job_lease_s=2.0)
    jid = busy.post(f"/v1/languages/{lid}/experiments", json=long).json()["id"]
    wait_job(busy, jid, until=lambda j: (j["progress"] or {}).get("step", 0) >= 1)
    r = busy.delete(f"/v1/jobs/{jid}")
    assert r.status_code == 202 and r.json()["cancel_requested"] is True
    done = wait_job(busy, jid, timeout=120)
    assert done["status"] == "cancelled" and done["error"]["reason"] == "cancelled"
    assert 1 <= done["progress"]["step"] < 100000


def test_api_keys_guard_experiments_and_cancel(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, api_keys=KEY, worker_slots=0)
    lid = store_language(client)
    body = {"encodings": ["nope"], "overrides": TINY}
    assert client.post(f"/v1/languages/{lid}/experiments", json=body).status_code == 401
    r = client.post(f"/v1/languages/{lid}/experiments", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 202
    jid = r.json()["id"]
    assert client.get(f"/v1/jobs/{jid}").status_code == 200  # reads stay open
    assert client.delete(f"/v1/jobs/{jid}").status_code == 401
    assert client.delete(f"/v1/jobs/{jid}", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_construct_job_verifies_the_synthesized_transformer(sqlite_client: Any) -> None:
    client = sqlite_client
    lid = store_language(client)
    body = {"kind": "construct", "all_words_up_to": 6, "random_words": 2, "random_max_length": 60}
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 202, r.text
    assert r.json()["spec"]["dfa"] == client.get(f"/v1/languages/{lid}/dfa").json()
    done = wait_job(client, r.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["result"]["exact"] is True and done["result"]["agrees_with_dfa"] is True
    assert client.get(f"/v1/jobs/{done['id']}/plot.png").status_code == 409  # no accuracy curves


@pytest.mark.parametrize(
    "body,field",
    [
        ({"kind": "construct", "formula": "MOD(2,0)"}, "formula"),  # (aa|ab|ba|bb)*, not (ab)*
        ({"kind": "construct", "formula": "P(("}, "formula"),
        ({"kind": "construct", "encodings": ["nope"]}, "encodings"),
        ({"kind": "construct", "bogus": 1}, "bogus"),
        ({"kind": "construct", "random_words": -1}, "options.random_words"),
    ],
)
def test_bad_constructions_are_422(make_client: Any, migrated_url: str, body: dict[str, Any], field: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = store_language(client)
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field, r.json()
    if body.get("formula") == "MOD(2,0)":
        word = "".join(r.json()["counterexample"])
        import re

        assert (re.fullmatch("(ab)*", word) is None) != (len(word) % 2 == 0)  # in exactly one of the two
