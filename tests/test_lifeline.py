"""Worker processes die with their parent (issue 24, item 9).

Before: ``kill -9`` of ``langclass classify --batch -j 2`` left its two pool workers running as
orphans (blocked for ever on a pipe a sibling held open). The test kills a real batch run and
waits (bounded) for its workers to go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _kill_parent_and_watch_children(script: str, tmp_path: Path, workers: int, marker: Path | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path)
    try:
        assert _wait(lambda: len([c for c in _children(parent.pid) if _alive(c)]) >= workers, 120), "the workers never started"
        if marker is not None:
            assert _wait(marker.exists, 120), "the worker never became ready"
            time.sleep(1.0)  # the call is sent right after the marker: the worker is busy by now
        kids = [c for c in _children(parent.pid) if _alive(c)]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(120)
        assert _wait(lambda: not any(_alive(k) for k in kids), 120), f"orphaned workers: {[k for k in kids if _alive(k)]}"
    finally:
        if parent.poll() is None:
            parent.kill()
        for k in _children(parent.pid):
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass


def test_batch_workers_die_when_the_batch_is_killed(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"regex": "(a|b)*a(a|b){9}" + "a" * (i % 7), "alphabet": "ab"}) + "\n" for i in range(400)))
    script = ("from pathlib import Path\nfrom langclass.app.cli.batch import run_batch\nfrom langclass.core.base.limits import Limits\n"
              "run_batch(Path('rows.jsonl'), Path('out.jsonl'), limits=Limits(time_limit_s=None), jobs=2)\n")
    _kill_parent_and_watch_children(script, tmp_path, 2)


def test_a_busy_classification_worker_dies_when_the_service_is_killed(tmp_path: Path) -> None:
    # the worker is in the middle of a call (an idle one already ended at its pipe's end of file)
    script = ("import time\nfrom pathlib import Path\nfrom langclass.app.execution.isolation import ProcessPool\n"
              "p = ProcessPool(1)\np.prestart()\nwhile p.idle_count() < 1:\n    time.sleep(0.05)\n"
              "Path('ready').touch()\np.call(time.sleep, (600,), {}, None, None)\n")
    _kill_parent_and_watch_children(script, tmp_path, 1, marker=tmp_path / "ready")
