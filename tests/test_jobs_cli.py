"""``langclass train`` (foreground training with the per-length table) and ``langclass worker``
(a standalone worker process working the queue, stopped by SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app

pytestmark = pytest.mark.slow

TINY_ARGS = [
    "--max-steps", "20", "--test-lengths", "11-14", "--eval-per-length", "16", "--lr", "3e-3", "--seed", "0",
    "--set", "train_lengths=[1,10]", "--set", "d_model=16", "--set", "n_heads=2", "--set", "d_ff=32",
    "--set", "n_layers=1", "--set", "batch_size=32",
]


def test_train_prints_table_and_n_star(tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    res = CliRunner().invoke(app, ["train", "--regex", "(ab)*", "--alphabet", "ab", "--encoding", "nope", "--encoding", "rope_periodic",
                                   *TINY_ARGS, "--save", str(saved)])
    assert res.exit_code == 0, res.output
    result = json.loads(saved.read_text())
    labels = sorted(r["encoding"] for r in result["runs"])
    assert labels == ["nope", "rope_periodic(periods=2)"]  # period k = 2 from the classification
    assert result["spec"]["prediction"]["sufficient"] == ["rope_periodic(periods=2)"]
    for r in result["runs"]:
        assert sorted(int(n) for n in r["accuracy_by_length"]) == [11, 12, 13, 14]
        # the printed table has this run's row with its N*
        row = next(line for line in res.stdout.splitlines() if line.startswith(r["encoding"]) and "e-03" in line)
        assert row.split()[4] == str(r["longest_perfect_length"]), row
    assert "verdict" in res.stdout
    # both runs share the model shape: trained together by default, one after another with --sequential
    assert result["batched"] is True and [r["trained_with"] for r in result["runs"]] == [2, 2]
    alone = tmp_path / "alone.json"
    res = CliRunner().invoke(app, ["train", "--regex", "(ab)*", "--alphabet", "ab", "--encoding", "nope", "--encoding", "rope_periodic",
                                   *TINY_ARGS, "--sequential", "--save", str(alone)])
    assert res.exit_code == 0, res.output
    seq = json.loads(alone.read_text())
    assert seq["batched"] is False and [r["trained_with"] for r in seq["runs"]] == [1, 1]
    keys = ("encoding", "steps", "longest_perfect_length")
    assert [{k: r[k] for k in keys} for r in seq["runs"]] == [{k: r[k] for k in keys} for r in result["runs"]]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--regex", "(ab", "--alphabet", "ab"], "regex-syntax"),
        (["--regex", "(ab)*"], "alphabet"),
        (["--regex", "(ab)*", "--alphabet", "ab", "--encoding", "warp"], "warp"),
        (["--regex", "(ab)*", "--alphabet", "ab", "--test-lengths", "x"], "test_lengths"),
    ],
)
def test_train_input_errors_exit_2(args: list[str], needle: str) -> None:
    res = CliRunner().invoke(app, ["train", *args])
    assert res.exit_code == 2 and needle in res.output, res.output


def test_train_from_dfa_file(tmp_path: Path) -> None:
    dfa = {"alphabet": ["a"], "states": ["e", "o"], "initial": "e", "accepting": ["e"], "transitions": {"e": {"a": "o"}, "o": {"a": "e"}}}
    path = tmp_path / "aa.json"
    path.write_text(json.dumps(dfa))
    res = CliRunner().invoke(app, ["train", "--dfa", str(path), "--encoding", "rope_periodic", *TINY_ARGS, "--json"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout[res.stdout.index("{"):])
    assert result["runs"][0]["encoding"] == "rope_periodic(periods=2)" and result["language"]["alphabet"] == ["a"]


def test_worker_command_runs_queued_jobs_and_stops_on_sigterm(sqlite_url: str) -> None:
    from langclass.app.store.db import Database, upgrade

    from test_jobs_repo import add_job, row

    upgrade(sqlite_url)
    db = Database(sqlite_url)
    from langclass.app.store import repository as repo
    from langclass.core.automata.export import dfa_to_json
    from langclass.core.ingest.parse import parse_regex

    dfa = parse_regex("(ab)*", ["a", "b"])
    with db.session_scope() as s:
        repo.insert_language(s, fingerprint=dfa.fingerprint(), name=None, tags=[], alphabet=["a", "b"], source={"kind": "test"},
                             dfa=dfa_to_json(dfa), num_states=dfa.num_states, analysis={"classes": {}}, code_version="test")
    jid = add_job(db, dfa.fingerprint(), {"dfa": dfa_to_json(dfa), "alphabet": ["a", "b"], "all_words_up_to": 5, "random_words": 0},
                  kind="construct")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    env.update(LANGCLASS_DATABASE_URL=sqlite_url, LANGCLASS_JOB_LEASE_S="4")
    proc = subprocess.Popen([sys.executable, "-m", "langclass.app.cli.commands", "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 240
        while time.monotonic() < end and row(db, jid).status not in ("succeeded", "failed"):
            time.sleep(0.2)
        r = row(db, jid)
        assert r.status == "succeeded", (r.error, proc.poll())
        assert r.result["exact"] is True
        owner = int(r.lease_owner.split(":")[1])  # a worker process of the command, under its memory watchdog
        ppid = [ln for ln in Path(f"/proc/{owner}/status").read_text().splitlines() if ln.startswith("PPid:")][0]
        assert int(ppid.split()[1]) == proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        db.dispose()
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]


def test_train_save_folder_must_be_new_or_empty(tmp_path: Path) -> None:
    """``--save FOLDER`` into a folder holding another run is refused before training (the other
    language's ``enc-*`` models sat beside the new ``result.json``), as is a folder that cannot be made."""
    used = tmp_path / "m"
    (used / "enc-nope").mkdir(parents=True)
    res = CliRunner().invoke(app, ["train", "--regex", "(ab)*", "--alphabet", "ab", "-e", "nope", *TINY_ARGS, "--save", str(used)])
    assert res.exit_code == 2 and "[save]" in res.output and "not an empty folder" in res.output
    assert not (used / "result.json").exists()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(app, ["train", "--regex", "(ab)*", "--alphabet", "ab", "-e", "nope", *TINY_ARGS,
                                   "--save", str(blocker / "sub")])
    assert res.exit_code == 2 and "[save]" in res.output and "cannot create" in res.output
