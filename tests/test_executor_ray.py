"""The Ray executor on a local cluster (``num_cpus=1``): the (ab)* experiment through the API with
each run as a Ray task writing to the database, and a task whose worker process is SIGKILLed being
retried from the database record. Skipped (with the reason) only when Ray cannot start here.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from langclass.app.store.db import Database, upgrade
from langclass.app.execution.executor import RayExecutor
from langclass.app.execution.worker import WorkerConfig

from test_executor_local import started_pids, status, wait_for
from test_jobs_api import TINY, check_train_result, store_language, wait_job
from test_jobs_repo import SUPPORT, add_job, add_language, row

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TESTS_DIR = str(Path(__file__).resolve().parent)


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is a test dependency
        pytest.skip(f"ray is not installed: {exc}")
    try:
        ray.init(
            num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [TESTS_DIR, os.environ.get("PYTHONPATH")]))}},
        )
    except Exception as exc:  # pragma: no cover - environment without Ray support
        pytest.skip(f"a local Ray cluster could not start: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()


def test_ab_star_experiment_on_ray(ray_cluster: Any, make_client: Any, postgres_url: str) -> None:
    """The documented Ray setup: tasks write to PostgreSQL."""
    upgrade(postgres_url)
    client = make_client(postgres_url, executor="ray", ray_num_cpus=1.0, ray_num_gpus=0.0, job_lease_s=20.0)
    assert client.app.state.executor.describe()["executor"] == "ray"
    lid = store_language(client)
    body = {"encodings": ["nope", "rope_periodic"], "seeds": [0], "learning_rates": [3e-3], "overrides": TINY}
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 202, r.text
    done = wait_job(client, r.json()["id"], timeout=150)
    assert done["status"] == "succeeded", done["error"]
    check_train_result(done["result"], ["nope", "rope_periodic(periods=2)"], range(11, 17))
    assert done["attempts"] == 1
    ex = client.app.state.executor.describe()
    assert ex["submitted"] == 1 and ex["task_failures"] == 0
    assert done["lease_expires_at"] is None and done["heartbeat_at"] >= done["started_at"]


def test_killed_ray_task_is_retried_from_the_database(ray_cluster: Any, sqlite_url: str, tmp_path: Path) -> None:
    upgrade(sqlite_url)
    db = Database(sqlite_url)
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 60, "step_s": 0.05}, max_attempts=2)
    # a lease far longer than the wait below: the retry can only come from Ray's failure report
    ex = RayExecutor(WorkerConfig(database_url=sqlite_url, lease_s=3600.0, heartbeat_s=0.2, kinds=SUPPORT), num_cpus=1, num_gpus=0)
    ex.start()
    try:
        ex.notify()
        victim = wait_for(lambda: started_pids(tmp_path), 90, "the Ray task to start")[0]
        wait_for(lambda: (row(db, jid).progress or {}).get("step", 0) >= 2, 30, "progress from the task")
        assert status(db, jid) == "running"
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: status(db, jid) == "succeeded", 90, "the retried job")
        r = row(db, jid)
        assert r.attempts == 2 and r.result["pid"] != victim, (victim, started_pids(tmp_path), r.result, r.error, ex.describe())
        assert ex.describe()["task_failures"] == 1
    finally:
        ex.stop(timeout=10)
        db.dispose()


def test_gpu_request_on_a_cluster_without_gpus_leaves_jobs_queued(ray_cluster: Any, sqlite_url: str, tmp_path: Path) -> None:
    """A task Ray could never schedule is never submitted: the job stays queued, not 'running' forever."""
    upgrade(sqlite_url)
    db = Database(sqlite_url)
    lid = add_language(db)
    jid = add_job(db, lid, {"trace_dir": str(tmp_path), "steps": 1})
    ex = RayExecutor(WorkerConfig(database_url=sqlite_url, lease_s=5.0, kinds=SUPPORT), num_cpus=1, num_gpus=0.25)
    ex.start()
    try:
        ex.notify()
        wait_for(lambda: ex._ray is not None, 30, "the dispatcher to connect")
        time.sleep(1.5)
        assert ex.capacity() == 0 and ex.describe()["submitted"] == 0
        assert status(db, jid) == "queued" and row(db, jid).attempts == 0
    finally:
        ex.stop(timeout=10)
        db.dispose()
