"""The census through a two-node Ray cluster started on this machine (``ray start --head`` and a
second ``ray start --address`` with its own resource), with the second node killed mid-run: every
shard still counts once and the totals equal the local run's. Every Ray process the test started is
stopped at the end (found by the test's own temp folder, killed by pid). Skipped only when Ray
cannot start here."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from langclass.core.census.run import census

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 120
RUN_TIMEOUT_S = 300
NODE_DEATH_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_of(folder: str, port: int) -> list[int]:
    """Processes whose command line names ``folder`` or an address ``…:port`` (the Ray processes of
    this test's cluster: the port was free when the test chose it)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if folder in cmd or any(tok.endswith(f":{port}") for tok in cmd.replace("=", " ").split()):
            out.append(int(p.name))
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([RAY, "start", *args, "--block"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture()
def two_nodes(monkeypatch: pytest.MonkeyPatch) -> Any:
    if not Path(RAY).exists():
        pytest.skip(f"no ray command at {RAY}")
    tmp = tempfile.mkdtemp(prefix="rc25-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = _free_port()
    host = "127.0.0.1"
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_health_check_period_ms="500",
               RAY_health_check_failure_threshold="4", RAY_health_check_initial_delay_ms="1000",
               RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # this process (the driver) too
    common = ["--num-cpus", "1", "--disable-usage-stats", "--node-ip-address", "127.0.0.1", "--min-worker-port", str(port + 100),
              "--max-worker-port", str(port + 200)]
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["head"] = _start(["--head", "--port", str(port), "--temp-dir", tmp, "--include-dashboard", "false",
                                "--node-manager-port", str(port + 1), "--object-manager-port", str(port + 2),
                                "--ray-client-server-port", str(port + 3), *common], env)
        procs["worker"] = None  # started once the head answers
        import ray

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                ray.init(address=f"{host}:{port}", log_to_driver=False,
                         runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
                break
            except Exception as err:  # the head is still starting
                if time.monotonic() > deadline or procs["head"].poll() is not None:
                    pytest.skip(f"a Ray head node did not start here: {err}")
                time.sleep(2)
        procs["worker"] = _start(["--address", f"127.0.0.1:{port}", "--resources", '{"second_node": 1}', "--temp-dir", tmp,
                                  "--node-manager-port", str(port + 4), "--object-manager-port", str(port + 5),
                                  *common], env)
        while sum(1 for n in ray.nodes() if n["Alive"]) < 2:
            if time.monotonic() > deadline or procs["worker"].poll() is not None:
                pytest.skip("the second Ray node did not join")
            time.sleep(1)
        yield {"port": port, "tmp": tmp, "procs": procs, "ray": ray}
    finally:
        try:
            import ray

            ray.shutdown()
        except Exception:  # pragma: no cover - best effort
            pass
        for p in procs.values():
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=120)
        for _ in range(10):  # raylets, GCS and workers of this cluster: all name its temp folder or ports
            left = _pids_of(tmp, port)
            if not left:
                break
            _kill(left)
            time.sleep(0.5)
        assert not _pids_of(tmp, port), "Ray processes of the test are still running"
        shutil.rmtree(tmp, ignore_errors=True)


def test_ray_census_equals_local_with_a_node_killed_mid_run(two_nodes: dict[str, Any], tmp_path: Path) -> None:
    from langclass.app.execution.census_ray import ray_runner

    ray = two_nodes["ray"]
    runner, cpus = ray_runner(f"127.0.0.1:{two_nodes['port']}", max_retries=5, resubmits=5)
    assert cpus == 2
    killed: dict[str, Any] = {}

    def kill_worker_node(done: int, total: int, languages: int) -> None:
        if done >= 4 and not killed:
            worker = two_nodes["procs"]["worker"]
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=120)
            killed["at"] = (done, total)

    t0 = time.monotonic()
    remote = census(4, 2, runner=runner, checkpoint=tmp_path / "ray.jsonl", executor="ray", jobs=cpus,
                    shard_target=64, progress=kill_worker_node)
    assert time.monotonic() - t0 < RUN_TIMEOUT_S
    assert killed and killed["at"][0] < killed["at"][1], "the node was killed before the last shard finished"
    # The GCS marks the killed node dead after its health checks fail (0.5 s x 4 here); the census
    # may finish on the head before that, so wait for the mark rather than read it at once.
    deadline = time.monotonic() + NODE_DEATH_TIMEOUT_S
    while sum(1 for n in ray.nodes() if n["Alive"]) != 1:
        assert time.monotonic() < deadline, "the killed node was never marked dead"
        time.sleep(0.5)
    local = census(4, 2, shard_target=64)
    assert remote.by_states == local.by_states and remote.profiles == local.profiles
    assert remote.matches_published and remote.total == 57068
