"""Regressions of the third round of hostile use (issue 35): API and CLI answers (item 11).

Each test failed on the code before its fix:
* ``POST /v1/languages`` answered ``state_names: null`` for a DFA with the user's own state names
  (``GET``, ``/v1/classify`` and the CLI returned them);
* a time-limit error raised while waiting for a worker, or when a worker was stopped at the
  deadline, had no ``step`` (the docs promise one on every time-limit error);
* a repeated CLI option (``--regex '(ab)*' --regex a``) silently took the last value;
* reasons ran words of ``(``, ``)`` or digits together with the text around them (``η(()()))``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

import langclass
from langclass.app.cli.commands import app
from langclass.core.algebra.classes.base import show
from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Deadline

NAMED = {"alphabet": ["a", "b"], "states": ["even", "odd", "dead"], "initial": "even", "accepting": ["even"],
         "transitions": {"even": {"a": "odd", "b": "dead"}, "odd": {"a": "dead", "b": "even"}, "dead": {"a": "dead", "b": "dead"}}}


@pytest.fixture
def client(make_client: Any, migrated_url: str) -> Any:
    return make_client(migrated_url, classify_isolation="thread", worker_slots=0)


# --- state names -----------------------------------------------------------------------------------


def test_post_languages_answers_the_users_state_names(client: Any) -> None:
    classified = client.post("/v1/classify", json={"dfa": NAMED})
    assert classified.status_code == 200 and classified.json()["state_names"], classified.text
    expected = classified.json()["state_names"]
    assert sorted(n for ns in expected.values() for n in ns) == ["dead", "even", "odd"]
    first = client.post("/v1/languages", json={"dfa": NAMED})
    assert first.status_code == 201 and first.json()["state_names"] == expected, first.text
    again = client.post("/v1/languages", json={"dfa": NAMED})
    assert again.status_code == 200 and again.json()["state_names"] == expected
    assert client.get(f"/v1/languages/{first.json()['id']}").json()["state_names"] == expected
    # the same language as a regex: the stored record's names (it was stored from the DFA), as GET
    regex = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    assert regex.status_code == 200 and regex.json()["state_names"] == expected  # the stored record's (a DFA)
    other = client.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]})
    assert other.status_code == 201 and other.json().get("state_names") is None


def test_batch_items_answer_the_users_state_names(client: Any) -> None:
    r = client.post("/v1/languages:batch", json={"languages": [{"dfa": NAMED}]})
    assert r.status_code == 200, r.text
    item = r.json()["items"][0]
    lid = item["id"]
    assert client.get(f"/v1/languages/{lid}").json()["state_names"]


# --- the step of a time-limit error ------------------------------------------------------------------


def test_time_limit_spent_waiting_names_the_step(make_client: Any, _migrated_sqlite: str) -> None:
    from langclass.app.usecases.service import analyze_language

    runner = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, time_limit_s=5.0).app.state.runner

    async def call() -> None:
        await runner.run(analyze_language, None, None, budget_end=time.monotonic() - 1.0)

    with pytest.raises(TimeLimitExceeded) as caught:
        anyio.run(call)
    assert caught.value.extra["step"] == "waiting for a worker"
    assert "during waiting for a worker" in caught.value.detail and caught.value.extra["value"] == 5.0


def test_a_stopped_computation_names_the_call_as_its_step(make_client: Any, _migrated_sqlite: str) -> None:
    """A worker killed at the deadline cannot say which of its inner steps ran: the error names the
    call's own step (``analysis`` for analyze_language) instead of none."""
    from langclass.app.execution.runner import step_of
    from langclass.app.usecases.service import analyze_language

    runner = make_client(_migrated_sqlite, classify_isolation="thread", worker_slots=0, time_limit_s=5.0).app.state.runner
    err = runner._restated(TimeLimitExceeded("time_limit_s", 1.0, "time limit of 1.0 s exceeded (the computation was stopped)"),
                           analyze_language)
    assert err.extra["step"] == "analysis" and err.detail == "time limit of 5.0 s exceeded during analysis"
    # a step the computation reported is kept
    inner = TimeLimitExceeded("time_limit_s", 1.0, "x", step="subset construction")
    assert runner._restated(inner, analyze_language).extra["step"] == "subset construction"
    import functools

    def count_the_words() -> None: ...

    assert step_of(functools.partial(analyze_language, None)) == "analysis" and step_of(count_the_words) == "count the words"
    assert TimeLimitExceeded("time_limit_s", 1, step="minimization").extra["step"] == "minimization"


def test_deadline_without_a_step_name_still_names_one() -> None:
    d = Deadline(0.0)
    time.sleep(0.001)
    with pytest.raises(TimeLimitExceeded) as caught:
        d.check()
    assert caught.value.extra["step"] == "analysis"


def test_worker_pool_timeouts_name_the_step() -> None:
    """Every TimeLimitExceeded the pool raises while no worker is ready names ``waiting for a worker``
    (read from the source: each ``too_late`` call site but the stopped computation's)."""
    import inspect

    from langclass.app.execution import isolation

    src = inspect.getsource(isolation)
    assert 'def too_late(what: str, step: str | None = "waiting for a worker")' in src
    assert 'too_late("the computation was stopped", None)' in src


# --- repeated CLI options ---------------------------------------------------------------------------


@pytest.mark.parametrize("args, flag", [
    (["classify", "--regex", "(ab)*", "--regex", "a", "--alphabet", "ab"], "--regex"),
    (["classify", "-r", "(ab)*", "--regex=a", "-a", "ab"], "-r"),
    (["classify", "--regex", "a", "--alphabet", "ab", "--alphabet", "abc"], "--alphabet"),
    (["classify", "--regex", "a", "-aab", "-a", "ab"], "-a"),
    (["db", "downgrade", "0001", "--force", "--force"], "--force"),
])
def test_a_repeated_option_is_refused_naming_it(args: list[str], flag: str) -> None:
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    assert f"error (invalid-input) [{flag}]" in out.output and "given 2 times" in out.output, out.output


def test_a_repeated_option_is_refused_in_json_too() -> None:
    out = CliRunner().invoke(app, ["classify", "--regex", "(ab)*", "--regex", "a", "--alphabet", "ab", "--json"])
    assert out.exit_code == 2
    err = json.loads(out.output)["error"]
    assert err["code"] == "invalid-input" and err["field"] == "--regex"


def test_options_declared_multiple_and_values_that_look_like_options_are_not_refused() -> None:
    import typer.main

    from langclass.app.cli.commands import repeated_option

    group = typer.main.get_command(app)
    ctx = group.make_context("langclass", ["--help"], resilient_parsing=True)
    assert repeated_option(group, ["train", "-r", "a", "-a", "ab", "-e", "nope", "-e", "rope", "--seed", "0", "--seed", "1"], ctx) is None
    assert repeated_option(group, ["classify", "--regex", "--regex", "--alphabet", "-"], ctx) is None  # values, not options
    assert repeated_option(group, ["classify", "--regex", "a", "--", "--regex"], ctx) is None
    assert repeated_option(group, ["classify", "--regex", "a", "--alphabet", "ab"], ctx) is None
    out = CliRunner().invoke(app, ["classify", "--regex", "(ab)*", "--alphabet", "ab"])
    assert out.exit_code == 0, out.output


# --- words in reasons ------------------------------------------------------------------------------


def test_words_of_brackets_and_digits_are_quoted_and_spaced() -> None:
    assert show("abba") == "abba" and show(()) == "ε"
    assert show("(()") == '"( ( )"' and show("0110") == '"0 1 1 0"'
    assert show(["x1", "x2"]) == "x1·x2"
    r = langclass.classify("(\\(\\))*", alphabet="()")
    reasons = " ".join(c.reason for c in r.classes.values())
    assert '"(' in reasons and "η(()" not in reasons and "η())" not in reasons, reasons
    tomita = langclass.classify("(10)*", alphabet="01")
    assert 'u = "1"' in tomita.classes["ltl_p"].reason, tomita.classes["ltl_p"].reason
