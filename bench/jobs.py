"""Job-queue figures: claim throughput under contention, and queue latency of the embedded executor.

    .venv/bin/python bench/jobs.py [--jobs 400] [--claimants 4] [--postgres URL]

Prints, per backend (SQLite file; PostgreSQL when reachable): claims/s with N concurrent claimants
(each job must be claimed exactly once — checked), and for the embedded executor (1 slot) the time
from commit to claim and to completion of no-op jobs (includes spawning the worker process once).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from langclass.app.store import jobs as jobrepo  # noqa: E402
from langclass.app.store.db import Database, upgrade  # noqa: E402


def _setup(url: str) -> tuple[Database, str]:
    from test_jobs_repo import add_language

    upgrade(url)
    db = Database(url)
    return db, add_language(db, uuid.uuid4().hex + uuid.uuid4().hex)


def claim_throughput(url: str, n_jobs: int, claimants: int) -> None:
    db, lid = _setup(url)
    with db.session_scope() as s:
        for i in range(n_jobs):
            jobrepo.create_job(s, language_id=lid, kind="train", spec={"i": i}, max_attempts=3)
    got: list[str] = []
    lock = threading.Lock()

    def run() -> None:
        d = Database(url)
        while True:
            with d.session_scope() as s:
                c = jobrepo.claim(s, owner="bench", lease_s=60)
            if c is None:
                break
            with lock:
                got.append(c.job_id)
        d.dispose()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=run) for _ in range(claimants)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    assert len(got) == len(set(got)) == n_jobs, "a job was claimed twice or missed"
    print(f"  claim: {n_jobs} jobs, {claimants} claimants: {n_jobs / dt:,.0f} claims/s ({dt:.2f} s), each claimed exactly once")
    db.dispose()


def executor_latency(url: str, n_jobs: int) -> None:
    from langclass.app.execution.executor import LocalExecutor
    from langclass.app.execution.worker import WorkerConfig

    db, lid = _setup(url)
    trace = tempfile.mkdtemp()
    ex = LocalExecutor(WorkerConfig(database_url=url, lease_s=10.0, kinds={"train": "test_jobs_support:sleep_job"}), 1, log_level="warning")
    ex.start()
    try:
        ids = []
        for _ in range(n_jobs):
            with db.session_scope() as s:
                ids.append(jobrepo.create_job(s, language_id=lid, kind="train", spec={"trace_dir": trace, "steps": 0}, max_attempts=3).id)
            ex.notify()
            while True:
                with db.session_scope() as s:
                    r = jobrepo.get_job(s, ids[-1])
                    if r.status == "succeeded":
                        break
                time.sleep(0.005)
        with db.session_scope() as s:
            rows = [jobrepo.get_job(s, j) for j in ids]
            start = [(r.started_at - r.created_at).total_seconds() for r in rows]
            total = [(r.finished_at - r.created_at).total_seconds() for r in rows]
        print(f"  embedded executor, 1 slot: first job commit→claim {start[0]:.2f} s (spawns the worker), "
              f"then median commit→claim {statistics.median(start[1:]) * 1000:.0f} ms, commit→done {statistics.median(total[1:]) * 1000:.0f} ms "
              f"over {n_jobs - 1} no-op jobs")
    finally:
        ex.stop()
        db.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--claimants", type=int, default=4)
    ap.add_argument("--latency-jobs", type=int, default=20)
    ap.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite:///{d}/bench.db"
        print("SQLite file")
        claim_throughput(url, args.jobs, args.claimants)
        executor_latency(url, args.latency_jobs)
    try:
        from sqlalchemy import create_engine, text

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001
        print(f"PostgreSQL skipped: {type(exc).__name__}: {exc}")
        return
    try:
        from sqlalchemy.engine import make_url

        url = make_url(args.postgres).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
        print("PostgreSQL")
        claim_throughput(url, args.jobs, args.claimants)
        executor_latency(url, args.latency_jobs)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


if __name__ == "__main__":
    main()
