"""Schemathesis fuzz run against a live local service, on SQLite and/or PostgreSQL.

Starts ``langclass serve`` on loopback (a free port) on a throw-away database — a temporary SQLite
file, or a fresh schema ``lc_fuzz_<hex>`` on the PostgreSQL server (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``, dropped afterwards, so tests on the same
database are not disturbed) — stores a few languages and jobs so that id-taking operations also hit
existing resources, then sends exactly ``--cases`` schemathesis cases per backend: every operation of
the published OpenAPI schema, positive (schema-valid) and negative (schema-invalid) data, half of the
id-taking cases on a stored id. Deterministic for a given ``--seed`` (Hypothesis seeds per round).

Every response goes through schemathesis' checks (``not_a_server_error``, status code, content type,
headers and response schema conformance, ``negative_data_rejection``, ``positive_data_acceptance``).
Prints per backend: the number of cases, the statuses, the 5xx answers and requests that got no
answer (the figures that must be 0), and every other check failure grouped by check, operation,
status and problem code (a ``positive_data_acceptance`` failure with a semantic problem code —
``regex-syntax``, ``invalid-dfa``, an unknown id… — is a rejection the schema cannot express).
Exit status 1 when any 5xx or unanswered request was seen.

Bounded for the run (the printed header repeats it): classification time limit ``--time-limit``
(default 10 s), one job worker (``--job-workers``) with small train limits (≤ 200 steps, d_model ≤ 64,
≤ 2 layers, ≤ 4 runs, test lengths ≤ 100, 20 s per run) so queued experiments cost seconds, not
hours; every other setting is the service default.

Usage::

    nice -n 5 python bench/fuzz.py --cases 20000                  # both backends
    python bench/fuzz.py --backend sqlite --cases 500 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_URL = os.environ.get("LANGCLASS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")

# Small train limits: a fuzzed experiment that passes validation trains for seconds.
JOB_BOUNDS = {
    "LANGCLASS_JOB_MAX_STEPS": "200", "LANGCLASS_JOB_MAX_D_MODEL": "64", "LANGCLASS_JOB_MAX_LAYERS": "2",
    "LANGCLASS_JOB_MAX_HEADS": "4", "LANGCLASS_JOB_MAX_D_FF": "256", "LANGCLASS_JOB_MAX_BATCH_SIZE": "64",
    "LANGCLASS_MAX_RUNS": "4", "LANGCLASS_MAX_TEST_LENGTH": "100", "LANGCLASS_MAX_EVAL_STRINGS": "20000",
    "LANGCLASS_JOB_MAX_EVAL_PER_LENGTH": "200", "LANGCLASS_JOB_TIME_LIMIT_S": "20",
}

SEED_LANGUAGES = [
    {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "(ab)*", "tags": ["periodic"]},
    {"regex": "(a|b)*a", "alphabet": ["a", "b"]},
    {"regex": "(aa)*", "alphabet": ["a"], "name": "even"},
    {"formula": "P(b & Y a)", "alphabet": ["a", "b", "c"]},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Backend:
    """A throw-away database: ``url`` while open; ``close()`` removes it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._tmp: str | None = None
        self._schema: str | None = None
        if kind == "sqlite":
            self._tmp = tempfile.mkdtemp(prefix="langclass-fuzz-")
            self.url = f"sqlite:///{self._tmp}/fuzz.db"
        else:
            from sqlalchemy import create_engine, text
            from sqlalchemy.engine import make_url

            self._schema = f"lc_fuzz_{uuid.uuid4().hex[:12]}"
            engine = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{self._schema}"'))
            engine.dispose()
            self.url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={self._schema}"}).render_as_string(
                hide_password=False)

    def close(self) -> None:
        if self._tmp:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
        if self._schema:
            from sqlalchemy import create_engine, text

            engine = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE'))
            engine.dispose()


def start_server(url: str, args: argparse.Namespace, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")},
           "LANGCLASS_DATABASE_URL": url, "LANGCLASS_WORKER_SLOTS": str(args.job_workers),
           "LANGCLASS_TIME_LIMIT_S": str(args.time_limit), "LANGCLASS_LOG_LEVEL": "warning",
           "PYTHONPATH": str(ROOT), **JOB_BOUNDS}
    log = log_path.open("wb")
    server = subprocess.Popen([sys.executable, "-m", "langclass.app.cli.commands", "serve", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    import httpx

    end = time.monotonic() + 120
    while True:
        try:
            if httpx.get(base + "/readyz", timeout=5).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        if time.monotonic() > end or server.poll() is not None:
            server.kill()
            sys.exit(f"the server did not become ready; see {log_path}")
        time.sleep(0.3)


def seed_resources(base: str) -> dict[str, list[str]]:
    """Store :data:`SEED_LANGUAGES` and queue two small jobs; the ids, by path parameter name."""
    import httpx

    ids: dict[str, list[str]] = {"language_id": [], "job_id": []}
    with httpx.Client(base_url=base, timeout=120) as c:
        for body in SEED_LANGUAGES:
            for _attempt in range(5):  # the classification workers may still be starting (503 busy)
                r = c.post("/v1/languages", json=body)
                if r.status_code in (200, 201):
                    ids["language_id"].append(r.json()["id"])
                    break
                print(f"  (storing {body} answered {r.status_code}: {r.text[:300]})", flush=True)
                time.sleep(2)
        if not ids["language_id"]:
            sys.exit("could not store any seed language")
        for kind_body in ({"kind": "construct"}, {"kind": "train", "encodings": ["nope"], "seeds": [0],
                                                   "overrides": {"max_steps": 20, "d_model": 16, "n_layers": 1, "train_lengths": {"range": [1, 10]},
                                                                 "test_lengths": {"range": [1, 20]}, "eval_per_length": 8}}):
            r = c.post(f"/v1/languages/{ids['language_id'][0]}/experiments", json=kind_body)
            if r.status_code == 202:
                ids["job_id"].append(r.json()["id"])
            else:
                print(f"  (seeding a {kind_body['kind']} job answered {r.status_code}: {r.text[:200]})")
    return ids


def fuzz(base: str, ids: dict[str, list[str]], n_cases: int, per_round: int, seed: int, verbose: bool = False) -> dict[str, Any]:
    """Send exactly ``n_cases`` cases; the tallies."""
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis.errors import Unsatisfiable
    from schemathesis.core.failures import FailureGroup
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_url(base + "/openapi.json")
    checks = [schemathesis.checks.not_a_server_error, schemathesis.checks.status_code_conformance,
              schemathesis.checks.content_type_conformance, schemathesis.checks.response_headers_conformance,
              schemathesis.checks.response_schema_conformance, schemathesis.checks.negative_data_rejection,
              schemathesis.checks.positive_data_acceptance]
    ops = [r.ok() for r in schema.get_all_operations()]
    session = requests.Session()
    tally: dict[str, Any] = {"cases": 0, "status": collections.Counter(), "server_errors": [], "no_answer": [],
                             "failures": collections.Counter(), "examples": {}, "by_op": collections.Counter(),
                             "unsatisfiable": set()}
    start = time.monotonic()

    def run_case(case: Any, mode: str) -> None:
        if tally["cases"] >= n_cases or STOP:
            return
        tally["cases"] += 1
        label = case.operation.label
        tally["by_op"][label] += 1
        t0 = time.monotonic()
        try:
            response = case.call(session=session, timeout=180)
        except (requests.RequestException, OSError) as exc:  # reset, refused, timed out: no answer
            tally["no_answer"].append((label, mode, type(exc).__name__, case.as_curl_command()[:2000]))
            return
        tally["status"][response.status_code] += 1
        if verbose:
            print(f"  {tally['cases']:6d} {label} {mode} {response.status_code} {time.monotonic() - t0:.2f} s", flush=True)
        if response.status_code >= 500:
            tally["server_errors"].append((label, mode, response.status_code, response.text[:500], case.as_curl_command()[:2000]))
        try:
            case.validate_response(response, checks=checks)
        except FailureGroup as group:
            code = None
            try:
                body = response.json()
                code = body.get("code") if isinstance(body, dict) else None
            except ValueError:
                pass
            for failure in group.exceptions:
                key = (getattr(failure, "code", "?"), failure.title, label, response.status_code, code)
                tally["failures"][key] += 1
                tally["examples"].setdefault(key, case.as_curl_command()[:600])
        if tally["cases"] % 1000 == 0:
            print(f"  {tally['cases']} cases, {time.monotonic() - start:.0f} s, 5xx {len(tally['server_errors'])}, "
                  f"no answer {len(tally['no_answer'])}", flush=True)

    round_no = 0
    while tally["cases"] < n_cases:
        before = tally["cases"]
        for i, op in enumerate(ops):
            fixed_names = [p.name for p in op.path_parameters if p.name in ids and ids[p.name]]
            variants: list[dict[str, Any] | None] = [None]
            if fixed_names:
                variants.append({name: ids[name][round_no % len(ids[name])] for name in fixed_names})
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                for j, fixed in enumerate(variants):
                    strategy = op.as_strategy(mode, path_parameters=fixed) if fixed else op.as_strategy(mode)
                    examples = max(1, per_round // (2 * len(variants)))

                    @hseed(seed * 1_000_003 + round_no * 10_007 + i * 101 + j * 7 + (mode == GenerationMode.NEGATIVE))
                    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                              phases=[Phase.generate])
                    @given(case=strategy)
                    def test(case: Any) -> None:
                        run_case(case, case.meta.generation.mode.value if case.meta else "?")

                    try:
                        test()
                    except Unsatisfiable:  # no such data: e.g. negative data for an operation without parameters
                        tally["unsatisfiable"].add(f"{op.label} ({mode.value})")
                    except Exception as exc:  # generation gave up (an unsatisfiable strategy): note it, go on
                        key = ("generation", f"{type(exc).__name__}: {str(exc)[:200]}", op.label, 0, None)
                        tally["failures"][key] += 1
                    if tally["cases"] >= n_cases or STOP:
                        break
        if STOP:
            tally["stopped"] = True
            break
        round_no += 1
        if tally["cases"] == before:
            raise RuntimeError(f"a whole round generated no case: {dict(tally['failures'])}")
    tally["seconds"] = time.monotonic() - start
    return tally


def report(kind: str, tally: dict[str, Any], log_path: Path) -> None:
    stopped = " (STOPPED by a signal before the target)" if tally.get("stopped") else ""
    print(f"\n== {kind}: {tally['cases']} cases in {tally['seconds']:.0f} s{stopped}")
    print("  statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(tally["status"].items())))
    print(f"  5xx answers: {len(tally['server_errors'])}")
    for label, mode, status, text, curl in tally["server_errors"][:20]:
        print(f"    {status} {label} ({mode}): {text[:200]}\n      {curl[:400]}")
    print(f"  no answer (reset, refused, timeout): {len(tally['no_answer'])}")
    for label, mode, err, curl in tally["no_answer"][:20]:
        print(f"    {label} ({mode}): {err}\n      {curl[:400]}")
    tracebacks = log_path.read_text(errors="replace").count("Traceback") if log_path.exists() else 0
    print(f"  tracebacks in the server log: {tracebacks} ({log_path})")
    print("  other check failures (check, operation, status, problem code: count):")
    if not tally["failures"]:
        print("    none")
    for key, n in sorted(tally["failures"].items(), key=lambda kv: (-kv[1], str(kv[0]))):
        code, title, label, status, problem = key
        print(f"    {code} {title} | {label} | {status} {problem or ''}: {n}")
        print(f"      e.g. {tally['examples'].get(key, '')[:300]}")
    if tally["unsatisfiable"]:
        print("  no data of that kind exists for: " + ", ".join(sorted(tally["unsatisfiable"])))
    print("  cases per operation: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally["by_op"].items())))


STOP: list[int] = []
"""Set by SIGTERM/SIGINT: the run stops sending cases, reports what it has and cleans up."""


def _stop_on_signal(signum: int, frame: Any) -> None:
    STOP.append(signum)  # raising inside Hypothesis' loop is unreliable: the loop checks this flag


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--cases", type=int, default=20_000, help="cases per backend (exact)")
    ap.add_argument("--per-round", type=int, default=40, help="cases per operation per round (positive + negative)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=10.0, help="LANGCLASS_TIME_LIMIT_S of the server")
    ap.add_argument("--job-workers", type=int, default=1, help="LANGCLASS_WORKER_SLOTS of the server")
    ap.add_argument("--verbose", action="store_true", help="print every case (operation, mode, status, seconds)")
    args = ap.parse_args()
    if args.cases < 1:
        sys.exit("--cases must be ≥ 1")
    kinds = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    print(f"schemathesis fuzz: {args.cases} cases per backend on {', '.join(kinds)}, seed {args.seed}; "
          f"time limit {args.time_limit:g} s, {args.job_workers} job worker(s), train bounds "
          + " ".join(f"{k.removeprefix('LANGCLASS_')}={v}" for k, v in JOB_BOUNDS.items()), flush=True)
    bad = 0
    for kind in kinds:
        if STOP:
            break
        backend = Backend(kind)
        log_path = Path(tempfile.gettempdir()) / f"langclass-fuzz-{kind}-{os.getpid()}.log"
        server = None
        try:
            server, base = start_server(backend.url, args, log_path)
            ids = seed_resources(base)
            tally = fuzz(base, ids, args.cases, args.per_round, args.seed, args.verbose)
            report(kind, tally, log_path)
            bad += len(tally["server_errors"]) + len(tally["no_answer"])
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(30)
                except subprocess.TimeoutExpired:
                    server.kill()
            backend.close()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
