"""``langclass serve`` as a real process: what its HTTP layer answers itself (docs/api.md "Malformed
HTTP"), and that SIGTERM stops it promptly (a liveness check with a generous bound, not a benchmark).
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Any:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update(PYTHONPATH=str(ROOT), LANGCLASS_DATABASE_URL=f"sqlite:///{tmp_path / 'serve.db'}")
    proc = subprocess.Popen([sys.executable, "-m", "langclass.app.cli.commands", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "langclass serve did not come up"
            time.sleep(0.3)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_malformed_content_length_is_answered_by_the_http_layer_as_documented(served: Any) -> None:
    """docs/api.md: a Content-Length the parser refuses gets uvicorn's own 400 text/plain, no problem+json."""
    _, port = served
    for value in ("abc", "-1", "1, 2"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(f"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {value}\r\n\r\n{{}}".encode())
            data = b""
            while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"received."):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), data
        assert b"content-type: text/plain" in head.lower() and body.strip() == b"Invalid HTTP request received.", data


def test_sigterm_stops_a_server_with_an_idle_keep_alive_connection_promptly(served: Any) -> None:
    """After a classification (warm worker pools) and with a keep-alive connection left idle, SIGTERM
    ends the process with status 0 well within 10 s (a liveness bound, kept generous)."""
    proc, port = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/classify", body=b'{"regex": "(ab)*", "alphabet": ["a", "b"]}',
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    response.read()  # the connection stays open, idle
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(10)
    finally:
        conn.close()
    assert code == 0
