"""``GET /v1/jobs/{id}/model``: the zip of a finished construct and train job (config, weights, runner),
404 while there is none, the link on the job resource and page, the size limit; run by the embedded
executor on SQLite (spawned worker processes), as tests/test_jobs_api.py."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest

from test_jobs_api import TINY, store_language, wait_job

pytestmark = pytest.mark.slow


@pytest.fixture
def sqlite_client(make_client: Any, sqlite_url: str) -> Any:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    return make_client(sqlite_url, job_lease_s=5.0, worker_slots=1)


def _unzip(data: bytes, tmp_path) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = sorted(zf.namelist())
        zf.extractall(tmp_path)
    return names


def test_construct_job_model_download_runs_and_is_linked(sqlite_client: Any, tmp_path) -> None:
    from langclass.models.portable.load import load_model

    client = sqlite_client
    lid = store_language(client)
    assert client.get("/v1/jobs/00000000-0000-0000-0000-000000000000/model").status_code == 404
    r = client.post(f"/v1/languages/{lid}/experiments",
                    json={"kind": "construct", "all_words_up_to": 6, "random_words": 2, "random_max_length": 60})
    assert r.status_code == 202, r.text
    done = wait_job(client, r.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    pm = done["result"]["portable_model"]
    assert pm["stored"] is True and done["links"]["model"] == f"/v1/jobs/{done['id']}/model"
    got = client.get(done["links"]["model"])
    assert got.status_code == 200 and got.headers["content-type"] == "application/zip"
    assert "attachment" in got.headers["content-disposition"] and len(got.content) == pm["bytes"]
    assert _unzip(got.content, tmp_path) == ["config.json", "langclass_runner.py", "model.safetensors"]
    model = load_model(tmp_path)
    assert model.classify(["", "ab", "abab", "aba", "ba", "bb"]) == [True, True, True, False, False, False]
    prov = model.config["provenance"]
    assert prov["language"]["id"] == lid and prov["verification"]["all_words_up_to"] == 6 and prov["theorem"]
    summary = pm["models"]["model"]
    assert (summary["layers"], summary["parameters"]) == (len(model.config["layers"]), model.config["parameters"])
    page = client.get(f"/jobs/{done['id']}")
    assert page.status_code == 200 and f'href="/v1/jobs/{done["id"]}/model"' in page.text and 'id="model-summary"' in page.text


def test_causal_construct_job_model_download_runs(sqlite_client: Any, tmp_path) -> None:
    """A construct job of setting causal (the C-RASP construction) has its model too (tests/test_portable_causal.py)."""
    from langclass.models.portable.load import load_model

    client = sqlite_client
    lid = store_language(client, "(ab|ba)*")
    r = client.post(f"/v1/languages/{lid}/experiments",
                    json={"kind": "construct", "setting": "causal", "all_words_up_to": 6, "random_words": 2, "random_max_length": 60})
    assert r.status_code == 202, r.text
    done = wait_job(client, r.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["result"]["setting"] == "causal" and done["result"]["portable_model"]["stored"] is True
    got = client.get(done["links"]["model"])
    assert got.status_code == 200 and _unzip(got.content, tmp_path) == ["config.json", "langclass_runner.py", "model.safetensors"]
    model = load_model(tmp_path)
    assert model.classify(["", "ab", "ba", "abba", "aabb", "a"]) == [True, True, True, True, False, False]
    assert model.config["vocabulary"]["framing"] == "bos_word" and model.config["provenance"]["class"] == "C-RASP"
    assert done["result"]["portable_model"]["models"]["model"]["attention"] == ["soft_uniform"]

def test_no_model_while_the_job_is_queued(make_client: Any, sqlite_url: str) -> None:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, worker_slots=0)  # no worker: the job stays queued
    lid = store_language(client)
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct", "all_words_up_to": 4})
    assert r.status_code == 202 and r.json()["status"] == "queued" and "model" not in r.json()["links"]
    miss = client.get(f"/v1/jobs/{r.json()['id']}/model")
    assert miss.status_code == 404 and "queued" in miss.json()["detail"]
    assert 'id="model-download"' not in client.get(f"/jobs/{r.json()['id']}").text


def test_train_job_model_download_has_the_best_run_of_every_encoding(sqlite_client: Any, tmp_path) -> None:
    from langclass.models.portable.load import load_model

    client = sqlite_client
    lid = store_language(client)
    body = {"kind": "train", "encodings": ["nope", "rope_periodic"], "profile": "quick", "seeds": [0, 1],
            "learning_rates": [3e-3], "overrides": TINY}
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 202, r.text
    done = wait_job(client, r.json()["id"], timeout=180)
    assert done["status"] == "succeeded", done["error"]
    got = client.get(f"/v1/jobs/{done['id']}/model")
    assert got.status_code == 200
    names = _unzip(got.content, tmp_path)
    assert names == ["enc-nope/config.json", "enc-nope/model.safetensors", "enc-rope_periodic_periods_2_/config.json",
                     "enc-rope_periodic_periods_2_/model.safetensors", "langclass_runner.py"]
    runs = done["result"]["runs"]
    for folder, label in (("enc-nope", "nope"), ("enc-rope_periodic_periods_2_", "rope_periodic(periods=2)")):
        model = load_model(tmp_path / folder)
        prov = model.config["provenance"]
        mine = [x for x in runs if x["encoding"] == label]
        best = max(mine, key=lambda x: (x["longest_perfect_length"], x["accuracy"]))
        assert prov["encoding"] == label and prov["verification"]["longest_perfect_length"] == best["longest_perfect_length"]
        assert (prov["seed"], prov["learning_rate"]) == (best["seed"], best["learning_rate"])
        assert len(model.classify(["ab", "abab", "b"])) == 3
    page = client.get(f"/jobs/{done['id']}")
    assert 'id="model-summary"' in page.text and "enc-nope" in page.text


def test_a_model_over_the_size_limit_is_not_stored(make_client: Any, sqlite_url: str) -> None:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, job_lease_s=5.0, worker_slots=1, job_model_max_bytes=100)
    lid = store_language(client)
    r = client.post(f"/v1/languages/{lid}/experiments",
                    json={"kind": "construct", "all_words_up_to": 4, "random_words": 2, "random_max_length": 20})
    done = wait_job(client, r.json()["id"])
    assert done["status"] == "succeeded" and done["result"]["portable_model"]["stored"] is False
    assert "LANGCLASS_JOB_MODEL_MAX_BYTES" in done["result"]["portable_model"]["reason"] and "model" not in done["links"]
    miss = client.get(f"/v1/jobs/{done['id']}/model")
    assert miss.status_code == 404 and "LANGCLASS_JOB_MODEL_MAX_BYTES" in miss.json()["detail"]
    assert "No model download" in client.get(f"/jobs/{done['id']}").text
