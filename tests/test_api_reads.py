"""Reads that answer like reads: the monoid page over a limit, the plot of a cancelled job, a
running retry, and what the accuracy plot says (title, legend).

Jobs are driven through the jobs repository (claim, finish, lease expiry) on an app without worker
slots, so every state is reached deterministically, without training.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from langclass.app.store import jobs as jobrepo

AB = {"regex": "(ab)*", "alphabet": ["a", "b"]}


def _result(runs: list[tuple[str, dict[int, float], int]], *, complete: bool = True) -> dict[str, Any]:
    return {
        "language": {"fingerprint": "f" * 64},
        "profile": "quick",
        "settings": {"train_lengths": [1, 10]},
        "complete": complete,
        "runs": [{"encoding": label, "accuracy_by_length": {str(n): a for n, a in acc.items()}, "longest_perfect_length": n_star}
                 for label, acc, n_star in runs],
    }


def _new_job(client: Any, lid: str) -> str:
    with client.app.state.db.session_scope() as s:
        return jobrepo.create_job(s, language_id=lid, kind="train", spec={}, max_attempts=3).id


def _claim(client: Any) -> jobrepo.Claim:
    with client.app.state.db.session_scope() as s:
        held = jobrepo.claim(s, owner="test-owner", lease_s=60.0)
    assert held is not None
    return held


def test_plot_of_a_job_cancelled_before_any_run_says_so(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = client.post("/v1/languages", json=AB).json()["id"]
    jid = _new_job(client, lid)
    r = client.get(f"/v1/jobs/{jid}/plot.png")
    assert r.status_code == 409 and "no finished run yet" in r.json()["detail"]
    assert client.delete(f"/v1/jobs/{jid}").json()["status"] == "cancelled"
    r = client.get(f"/v1/jobs/{jid}/plot.png")
    assert r.status_code == 409 and r.json()["job_status"] == "cancelled"
    assert "cancelled before any run finished" in r.json()["detail"] and "yet" not in r.json()["detail"]


def test_plot_of_a_job_cancelled_after_some_runs_draws_them(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = client.post("/v1/languages", json=AB).json()["id"]
    jid = _new_job(client, lid)
    held = _claim(client)
    with client.app.state.db.session_scope() as s:
        assert jobrepo.finish(s, held, status="cancelled", result=_result([("nope", {11: 1.0, 12: 0.5}, 11)], complete=False),
                              error={"reason": "cancelled", "detail": "cancelled while running"})
    r = client.get(f"/v1/jobs/{jid}/plot.png")
    assert r.status_code == 200 and r.content.startswith(b"\x89PNG")


def test_a_running_retry_does_not_show_the_previous_attempts_error(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = client.post("/v1/languages", json=AB).json()["id"]
    jid = _new_job(client, lid)
    _claim(client)
    with client.app.state.db.session_scope() as s:
        counts = jobrepo.recover_expired(s, now=jobrepo.utcnow() + timedelta(seconds=120))
    assert counts["requeued"] == 1
    queued = client.get(f"/v1/jobs/{jid}").json()
    assert queued["status"] == "queued" and queued["error"]["reason"] == "worker-lost" and queued["error"]["retrying"] is True
    _claim(client)  # the retry starts
    running = client.get(f"/v1/jobs/{jid}").json()
    assert running["status"] == "running" and running["attempts"] == 2
    assert running["error"] is None
    assert running["previous_error"]["reason"] == "worker-lost" and running["previous_error"]["attempt"] == 1
    listed = client.get("/v1/jobs").json()["items"][0]
    assert listed["error"] is None and listed["previous_error"]["reason"] == "worker-lost"


def test_monoid_over_its_limit_is_a_409_with_the_reason(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, max_monoid_size=3, worker_slots=0)
    body = client.post("/v1/languages", json=AB).json()
    r = client.get(f"/v1/languages/{body['id']}/monoid")
    assert r.status_code == 409, r.text
    problem = r.json()
    assert problem["code"] == "conflict" and problem["limit"] == "max_monoid_size" and problem["value"] == 3
    assert problem["setting"] == "LANGCLASS_MAX_MONOID_SIZE" and "LANGCLASS_MAX_MONOID_SIZE" in problem["detail"]
    assert problem["monoid"] == body["monoid"]


# --- the figure ------------------------------------------------------------------------------------


def _texts(fig: Any) -> tuple[str, list[str]]:
    ax = fig.axes[0]
    return ax.get_title(), [t.get_text() for t in ax.get_legend().get_texts()]


def test_plot_title_names_the_language_and_legend_says_which_n_star() -> None:
    from langclass.app.usecases.plot import accuracy_figure, language_label

    result = _result([("nope", {11: 1.0, 12: 1.0, 13: 0.5}, 12), ("nope", {11: 1.0, 12: 0.9, 13: 0.5}, 11),
                      ("rope", {11: 1.0, 12: 1.0, 13: 1.0}, 13)])
    name = language_label({"name": None, "source": {"kind": "regex", "regex": "(ab)*", "alphabet": ["a", "b"]}})
    assert name == "(ab)* over {a, b}"
    title, legend = _texts(accuracy_figure(result, language=name))
    assert "(ab)* over {a, b}" in title and "f" * 12 not in title
    assert "nope: mean of 2 runs (band min–max), N* best run 12, worst run 11" in legend
    assert "rope: 1 run, N* = 13" in legend
    assert "training lengths 1–10" in legend
    assert language_label({"name": "even ab", "source": {"kind": "dfa"}}) == "even ab"
    assert language_label({"name": None, "source": {"kind": "dfa"}}) is None
    # without a name the fingerprint is the fallback; a partial result says so
    title, _ = _texts(accuracy_figure(_result([("nope", {11: 1.0}, 11)], complete=False)))
    assert "language ffffffffffff" in title and "partial" in title
