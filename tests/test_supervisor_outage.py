"""During a database outage the supervisor logs one line per change of state (issue 24, item 9).

Before: a full traceback every round (every second): 3,872 lines for a 30 s outage.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from langclass.app.execution.executor import _Supervisor
from langclass.app.execution.worker import WorkerConfig


class Scripted(_Supervisor):
    def __init__(self, url: str, outcomes: list[BaseException | None]) -> None:
        super().__init__(WorkerConfig(database_url=url), interval=1.0)
        self.outcomes = outcomes

    def tick(self, woken: bool) -> None:
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome


def _outage() -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception('connection to server at "127.0.0.1", port 5432 failed: Connection refused\nIs the server running?'))


def test_thirty_failed_rounds_log_two_lines_and_the_recovery_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sup = Scripted(f"sqlite:///{tmp_path}/jobs.db", [_outage() for _ in range(30)] + [RuntimeError("another failure")] + [None] * 5)
    caplog.set_level(logging.INFO, logger="langclass")
    for _ in range(36):
        sup._round(False)
    lines = [r for r in caplog.records if r.name.startswith("langclass") and r.levelno >= logging.INFO]
    assert len(lines) == 3, [r.getMessage() for r in lines]
    first, second, recovered = (r.getMessage() for r in lines)
    assert "OperationalError" in first and "Connection refused" in first and "\n" not in first
    assert "another failure" in second
    assert "recovered" in recovered and "31 failed rounds" in recovered
    assert all(r.exc_info is None for r in lines)  # no traceback at INFO and above
