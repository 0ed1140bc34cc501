"""Job functions for the job/executor tests (importable by spawned worker processes and Ray tasks).

They follow the job-function contract ``f(spec, *, progress, should_cancel) -> dict`` of
:data:`langclass.app.store.jobs.JOB_KINDS` and leave traces on disk so a test can see which process ran
which attempt (and kill it).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from langclass.core.base.errors import InputError


class Cancelled(Exception):
    def __init__(self, partial: dict[str, Any]) -> None:
        super().__init__("cancelled")
        self.partial = partial


def sleep_job(spec: dict[str, Any], *, progress: Any = None, should_cancel: Any = None) -> dict[str, Any]:
    """Count ``spec["steps"]`` steps of ``spec["step_s"]`` seconds; writes ``<trace_dir>/<pid>.start``."""
    trace = Path(spec["trace_dir"])
    trace.mkdir(parents=True, exist_ok=True)
    (trace / f"{os.getpid()}.start").write_text(json.dumps({"pid": os.getpid(), "t": time.time()}))
    steps = int(spec.get("steps", 10))
    for step in range(steps):
        if should_cancel is not None and should_cancel():
            raise Cancelled({"completed_steps": step})
        time.sleep(float(spec.get("step_s", 0.05)))
        if progress is not None:
            progress({"step": step + 1, "total": steps})
    (trace / f"{os.getpid()}.done").write_text("ok")
    return {"steps": steps, "pid": os.getpid()}


def failing_job(spec: dict[str, Any], *, progress: Any = None, should_cancel: Any = None) -> dict[str, Any]:
    """Raise the error ``spec["error"]`` names: ``input`` (an InputError) or ``bug`` (a RuntimeError)."""
    if spec.get("error") == "input":
        raise InputError("seeds must be a non-empty list", field="seeds")
    raise RuntimeError("boom")


def spec_echo_job(spec: dict[str, Any], *, progress: Any = None, should_cancel: Any = None) -> dict[str, Any]:
    """Return what the worker handed over (and create the checkpoint directory, as training does)."""
    if spec.get("checkpoint_dir"):
        Path(spec["checkpoint_dir"]).mkdir(parents=True, exist_ok=True)
        (Path(spec["checkpoint_dir"]) / "last.pt").write_text("x")
    return {"checkpoint_dir": spec.get("checkpoint_dir")}


def alloc_job(spec: dict[str, Any], *, progress: Any = None, should_cancel: Any = None) -> dict[str, Any]:
    """Allocate (and touch) ``spec["mb"]`` MiB in 16 MiB pieces, ``spec["piece_s"]`` seconds apart,
    then return; writes ``<trace_dir>/<pid>.start`` (the memory-cap tests)."""
    trace = Path(spec["trace_dir"])
    trace.mkdir(parents=True, exist_ok=True)
    (trace / f"{os.getpid()}.start").write_text(json.dumps({"pid": os.getpid(), "t": time.time()}))
    held = []
    for _ in range(int(spec["mb"]) // 16):
        held.append(bytearray(b"x" * (16 * 2**20)))
        time.sleep(float(spec.get("piece_s", 0.02)))
    return {"mb": len(held) * 16, "pid": os.getpid()}


def stubborn_job(spec: dict[str, Any], *, progress: Any = None, should_cancel: Any = None) -> dict[str, Any]:
    """Sleep ``spec["sleep_s"]`` seconds without polling ``should_cancel`` (one long step, as a big
    model's training step or a synthesis); writes ``<trace_dir>/<pid>.start``."""
    trace = Path(spec["trace_dir"])
    trace.mkdir(parents=True, exist_ok=True)
    (trace / f"{os.getpid()}.start").write_text(json.dumps({"pid": os.getpid(), "t": time.time()}))
    time.sleep(float(spec.get("sleep_s", 60)))
    return {"pid": os.getpid()}
