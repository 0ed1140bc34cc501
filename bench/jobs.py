"""Job-queue figures: claim throughput under contention, and queue latency of the embedded executor.

    .venv/bin/python bench/jobs.py [--jobs 400] [--claimants 4] [--postgres URL]
    .venv/bin/python bench/jobs.py --cancel-only

Prints, per backend (SQLite file; PostgreSQL when reachable): claims/s with N concurrent claimants
(each job must be claimed exactly once — checked), and for the embedded executor (1 slot) the time
from commit to claim and to completion of no-op jobs (includes spawning the worker process once).
Then (SQLite) the cancel latency of a running train job: from the cancel request to the job's
``cancelled`` status and to its worker process gone — one job whose training step takes seconds
(the watchdog kills its worker after ``LANGCLASS_JOB_CANCEL_GRACE_S``) and one of small steps
(the run sees the cancel within ``cancel_poll_s`` and stops itself; its worker stays). Goal
(issue 35, item 6): a second or two.
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


AB_STAR = {"alphabet": ["a", "b"], "states": [0, 1, 2], "initial": 0, "accepting": [0],
           "transitions": {"0": {"a": 1, "b": 2}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 2}}}
CANCEL_SPECS = {
    "train, steps of seconds": {"language": AB_STAR, "encodings": ["rope"], "seeds": [0],
                                "overrides": {"d_model": 256, "n_layers": 4, "batch_size": 256, "train_lengths": {"range": [1, 100]},
                                              "max_steps": 1000, "test_lengths": {"range": [101, 102]}}},
    "train, small steps": {"language": AB_STAR, "encodings": ["rope"], "seeds": [0],
                           "overrides": {"max_steps": 100000, "patience": None, "test_lengths": {"range": [41, 42]}}},
}


def cancel_latency(url: str) -> None:
    from langclass.app.execution.executor import LocalExecutor
    from langclass.app.execution.worker import WorkerConfig

    db, lid = _setup(url)
    ex = LocalExecutor(WorkerConfig(database_url=url, lease_s=60.0), 1, eager=True, log_level="warning")
    ex.start()
    try:
        for name, spec in CANCEL_SPECS.items():
            with db.session_scope() as s:
                jid = jobrepo.create_job(s, language_id=lid, kind="train", spec=spec, max_attempts=1).id
            ex.notify()
            while True:  # running, and past sampling: in training
                with db.session_scope() as s:
                    r = jobrepo.get_job(s, jid)
                    if r.status != "queued" and (r.progress or {}).get("phase") == "train":
                        break
                    assert r.status in ("queued", "running"), (r.status, r.error)
                time.sleep(0.05)
            pid = ex.pids()[0]
            t0 = time.perf_counter()
            with db.session_scope() as s:
                jobrepo.request_cancel(s, jid)
            t_status = t_gone = None
            while t_status is None or (t_gone is None and time.perf_counter() - t0 < 15):
                with db.session_scope() as s:
                    if t_status is None and jobrepo.get_job(s, jid).status == "cancelled":
                        t_status = time.perf_counter() - t0
                if t_gone is None and not jobrepo.pid_alive(pid):
                    t_gone = time.perf_counter() - t0
                time.sleep(0.02)
            gone = f"worker gone after {t_gone:.2f} s" if t_gone is not None else "worker kept (the run stopped itself)"
            print(f"  cancel of a running job ({name}): cancelled after {t_status:.2f} s, {gone}", flush=True)
            while ex.pids()[0] is None:
                time.sleep(0.05)
    finally:
        ex.stop()
        db.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--claimants", type=int, default=4)
    ap.add_argument("--latency-jobs", type=int, default=20)
    ap.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--cancel-only", action="store_true", help="only the cancel latency (SQLite)")
    args = ap.parse_args()
    if args.cancel_only:
        with tempfile.TemporaryDirectory() as d:
            cancel_latency(f"sqlite:///{d}/bench.db")
        return
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite:///{d}/bench.db"
        print("SQLite file")
        claim_throughput(url, args.jobs, args.claimants)
        executor_latency(url, args.latency_jobs)
    with tempfile.TemporaryDirectory() as d:
        cancel_latency(f"sqlite:///{d}/bench.db")
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
