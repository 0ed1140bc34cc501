"""``langclass serve`` as a process: SIGTERM ends it with status 0 after a graceful shutdown, a busy
port is one clear message without a traceback, and a classification worker whose parent is gone
before it is ready exits quietly (the traceback a busy port used to print came from there)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update({
        "LANGCLASS_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
        "LANGCLASS_WORKER_SLOTS": "0",
        "LANGCLASS_CLASSIFY_CONCURRENCY": "1",
        "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    })
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path: Path, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "langclass.app.cli.commands", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )


@pytest.mark.slow
def test_sigterm_exits_zero_after_graceful_shutdown(tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(tmp_path, port)
    try:
        deadline = time.monotonic() + 240
        while True:  # wait until it serves (a readiness poll, not a timing assertion)
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "Application shutdown complete" in out
    assert "Traceback" not in out


@pytest.mark.slow
def test_busy_port_is_one_clear_message(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _serve(tmp_path, port)
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode != 0
    assert "address already in use" in out
    assert "Traceback" not in out and "BrokenPipeError" not in out


def test_worker_whose_parent_left_before_it_was_ready_exits_quietly() -> None:
    """The parent closes both pipes before the worker has even started: its ready handshake meets a
    broken pipe, which must end it with status 0 and nothing on standard error."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "langclass.app.execution.isolation"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_a_served_app_freezes_its_start_up_objects_and_a_test_app_does_not(migrated_url: str) -> None:
    """``create_served_app`` (what ``langclass serve`` runs) moves the objects alive after its
    start-up to the collector's permanent generation, so a full collection no longer walks them while
    requests wait; ``create_app`` (built by the hundred in tests) leaves the collector alone."""
    import gc

    from fastapi.testclient import TestClient

    from langclass.app.main import create_app
    from conftest import make_settings

    settings = make_settings(migrated_url, classify_isolation="thread")
    gc.unfreeze()
    try:
        with TestClient(create_app(settings)) as client:
            assert client.get("/healthz").status_code == 200
            assert gc.get_freeze_count() == 0
        with TestClient(create_app(settings, freeze_gc=True)) as client:
            assert client.get("/healthz").status_code == 200
            assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
