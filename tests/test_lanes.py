"""Classify under load: probes that need no shared thread, the light lane, a budget from arrival,
and the response body built in the worker.

Mechanisms only, nothing timed: a shared thread pool held by a gate, counters of the lanes, a
clock moved back, a serializer that fails in the API process.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import pytest

from langclass.app import main as app_main
from langclass.app.usecases import service
from langclass.app.execution.runner import ClassifyRunner, LightLane
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Limits

SMALL = {"regex": "(ab)*", "alphabet": ["a", "b"]}


ROOMY = {"classify_light_time_limit_s": 120.0}
"""A light-lane time bound no loaded machine reaches: these tests are about which lane answers, and
with the default 1 s a loaded machine's first classification overflowed to the main lane (flaky)."""

def test_health_and_readiness_never_wait_for_the_shared_thread_pool(make_client: Any, migrated_url: str) -> None:
    """The shared pool cut to one thread, and that thread held: /healthz and /readyz still answer.
    (Before: two plain-``def`` app-wide dependencies took a shared thread on every request, and
    /readyz ran its check there.)"""
    client = make_client(migrated_url, classify_isolation="thread")
    gate = threading.Event()
    held = threading.Event()

    async def hold_the_shared_thread() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1

        def block() -> None:
            held.set()
            gate.wait(60)

        await anyio.to_thread.run_sync(block)

    holder = threading.Thread(target=lambda: client.portal.call(hold_the_shared_thread))
    holder.start()
    codes: dict[str, int] = {}
    try:
        assert held.wait(30)
        prober = threading.Thread(target=lambda: codes.update({p: client.get(p).status_code for p in ("/healthz", "/readyz")}))
        prober.start()
        prober.join(30)
        assert codes == {"/healthz": 200, "/readyz": 200}, f"a probe waited for the shared pool: {codes}"
    finally:
        gate.set()
        holder.join(30)
        client.portal.call(lambda: setattr(anyio.to_thread.current_default_thread_limiter(), "total_tokens", 40))


def test_a_small_request_is_answered_by_the_light_lane(make_client: Any, sqlite_url: str) -> None:
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread")
    runner: ClassifyRunner = client.app.state.runner
    r = client.post("/v1/classify", json=SMALL)
    assert r.status_code == 200 and r.json()["num_states"] == 3
    assert runner.light_runner is not None and runner.light_runner.served == 1
    assert runner.served == 0 and runner.light_overflows == 0


def test_a_request_past_a_light_bound_goes_on_to_the_main_lane_with_the_full_limits(make_client: Any, sqlite_url: str) -> None:
    # predicted light (a 3-state DFA) but its 6-element monoid is over the light bound of 3
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread", classify_light_max_monoid_size=3)
    runner: ClassifyRunner = client.app.state.runner
    r = client.post("/v1/classify", json=SMALL)
    assert r.status_code == 200, r.text
    assert r.json()["monoid"]["size"] == 6
    assert runner.light_runner is not None and runner.light_runner.served == 1  # the attempt
    assert runner.light_overflows == 1 and runner.served == 1
    # remembered: the same request again (not cached here: cleared) skips the light lane
    client.app.state.classification_cache = service.ClassificationCache()
    assert client.post("/v1/classify", json=SMALL).status_code == 200
    assert runner.light_runner.served == 1 and runner.served == 2


def test_an_error_in_the_light_lane_is_the_answer(make_client: Any, sqlite_url: str) -> None:
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread")
    runner: ClassifyRunner = client.app.state.runner
    r = client.post("/v1/classify", json={"regex": "(ab", "alphabet": ["a", "b"]})
    assert r.status_code == 422 and r.json()["field"] == "regex"
    assert runner.light_overflows == 0 and runner.served == 0  # not tried again in the main lane


def test_a_request_not_predicted_small_skips_the_light_lane(make_client: Any, sqlite_url: str) -> None:
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread")
    runner: ClassifyRunner = client.app.state.runner
    body = {"regex": "(a|b)*a(a|b){9}", "alphabet": ["a", "b"]}  # 1,024 states > 256
    assert not service.predicted_light(regex=body["regex"], alphabet=body["alphabet"], max_states=256)
    assert client.post("/v1/classify", json=body).status_code == 200
    assert runner.light_runner is not None and runner.light_runner.served == 0 and runner.served == 1


_AB = ["a", "b"]
_HEAVY_NO_COUNTER = "(a|b)*a" + "(a|b)" * 12  # the reported one: 8,192 states, no {n} in sight


@pytest.mark.parametrize("request_body, light", [
    ({"regex": _HEAVY_NO_COUNTER, "alphabet": _AB}, False),
    ({"regex": "(a|b)*a(a|b){12}", "alphabet": _AB}, False),
    ({"regex": "((a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b))*" + "(a|b)" * 20, "alphabet": _AB}, True),  # long text, 8 states
    ({"regex": "(ab)*", "alphabet": _AB}, True),
    ({"regex": "(ab", "alphabet": _AB}, True),  # a syntax error: the light lane answers it at once
    # the canonical list form (no "states"), the named form, and large ones of both
    ({"dfa": {"alphabet": _AB, "transitions": [[1, 0], [2, 0], [2, 1]]}}, True),
    ({"dfa": {"alphabet": _AB, "initial": 0, "accepting": [2], "transitions": [[1, 0], [2, 0], [2, 1]]}}, True),
    ({"dfa": {"alphabet": _AB, "states": [0, 1, 2], "initial": 0, "accepting": [2],
              "transitions": {"0": {"a": 1, "b": 0}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 1}}}}, True),
    ({"dfa": {"alphabet": _AB, "transitions": [[(q + 1) % 300, q] for q in range(300)]}}, False),
    ({"dfa": {"alphabet": _AB, "states": list(range(300)), "initial": 0, "accepting": [0],
              "transitions": {str(q): {"a": (q + 1) % 300} for q in range(300)}}}, False),
    ({"formula": "a & Y b", "alphabet": _AB}, True),
    ({"program": "anything", "alphabet": _AB}, False),
])
def test_the_light_prediction_comes_from_what_the_input_costs(request_body: dict[str, Any], light: bool) -> None:
    """Every input form is predicted from a parse bounded to the lane's states — not from the text
    (before: the 8,192-state regex without a counter was predicted light, the 3-state DFA in the
    list form without ``states`` was not)."""
    assert service.predicted_light(**request_body, max_states=256) is light


def test_the_prediction_agrees_with_the_light_lanes_own_parse_on_random_regexes() -> None:
    """Independent check: predicted light exactly when a parse under the lane's ``max_states`` (the
    bound on every intermediate automaton the lane's worker would build) succeeds; and then the
    minimal DFA has at most that many states."""
    import random

    from langclass.core.ingest.source import language_source, parse_language

    rng = random.Random(24)
    atoms = ["a", "b", "(a|b)", "a*", "(ab)*", "(a|b)*", "(a|b)(a|b)"]
    seen = set()
    for _ in range(40):
        regex = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 9)))
        states = parse_language(language_source(regex=regex, alphabet=_AB), Limits(time_limit_s=None)).dfa.num_states
        for bound in (4, 16):
            try:
                parse_language(language_source(regex=regex, alphabet=_AB), Limits(max_states=bound, time_limit_s=None))
                fits = True
            except LimitExceeded:
                fits = False
            predicted = service.predicted_light(regex=regex, alphabet=_AB, max_states=bound, budget_s=30.0)
            assert predicted is fits, regex
            assert not predicted or states <= bound, regex
            seen.add(predicted)
    assert seen == {True, False}


def test_a_dfa_declaring_fewer_states_than_the_bound_is_light_without_a_parse(monkeypatch) -> None:
    """A DFA that declares fewer than ``max_states`` states is predicted light without parsing it; the
    independent check: the bounded parse of every such random DFA (complete or not, so a sink may be
    added) finishes within the bound."""
    import random

    from langclass.core.ingest.source import language_source, parse_language

    rng = random.Random(5)
    bound = 6
    for _ in range(60):
        n = rng.randint(1, bound - 1)
        rows = [[rng.choice([None] + list(range(n))) for _ in _AB] for _ in range(n)]
        named = {"alphabet": _AB, "states": list(range(n)), "initial": 0, "accepting": [0],
                 "transitions": {str(q): {a: t for a, t in zip(_AB, row) if t is not None} for q, row in enumerate(rows)}}
        assert service.predicted_light(dfa=named, max_states=bound) is True
        parse_language(language_source(dfa=named), Limits(max_states=bound, time_limit_s=None))  # no LimitExceeded
    monkeypatch.setattr(service, "parse_source", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
    assert service.predicted_light(dfa={"alphabet": _AB, "transitions": [[1, 0], [0, 1]]}, max_states=bound) is True


def test_a_heavy_request_without_a_counter_never_reaches_the_light_lane(make_client: Any, sqlite_url: str) -> None:
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread", max_states=20_000)
    runner: ClassifyRunner = client.app.state.runner
    body = {"regex": "(a|b)*a" + "(a|b)" * 8, "alphabet": _AB}  # 512 states, counter-free text
    assert client.post("/v1/classify", json=body).status_code == 200
    assert runner.light_runner is not None and runner.light_runner.served == 0 and runner.served == 1
    dfa = {"dfa": {"alphabet": _AB, "transitions": [[1, 0], [2, 0], [2, 1]]}}  # list form: light
    assert client.post("/v1/classify", json=dfa).status_code == 200
    assert runner.light_runner.served == 1 and runner.served == 1


def test_the_light_attempt_runs_under_the_hard_bounds_and_overflows_only_on_them() -> None:
    """The light attempt sees the lowered limits; LimitExceeded on a lowered bound → main lane with
    the request's own limits; on another limit → that error is the answer."""
    light = LightLane(workers=1, max_states=10, max_monoid_size=20, time_limit_s=5.0, queue_max=2)
    runner = ClassifyRunner(1, 60.0, "thread", 60.0, queue_max=4, light=light)
    seen: list[tuple[str, Limits]] = []

    def fn(limits: Limits, fail: str | None) -> str:
        lane = "light" if limits.max_states == 10 else "main"
        seen.append((lane, limits))
        if lane == "light" and fail:
            raise LimitExceeded(fail, getattr(limits, fail))
        return lane

    async def main() -> None:
        full = Limits(max_states=1000, max_monoid_size=1000)
        assert await runner.run_light_first(fn, full, None, light_ok=True) == "light"
        assert await runner.run_light_first(fn, full, "max_monoid_size", light_ok=True) == "main"
        with pytest.raises(LimitExceeded) as info:
            await runner.run_light_first(fn, full, "max_alphabet", light_ok=True)
        assert info.value.limit == "max_alphabet"

    anyio.run(main)
    lanes = [lane for lane, _ in seen]
    assert lanes == ["light", "light", "main", "light"]
    assert seen[0][1].max_monoid_size == 20 and seen[0][1].time_limit_s is not None and seen[0][1].time_limit_s <= 5.0
    assert seen[2][1].max_states == 1000 and seen[2][1].max_monoid_size == 1000
    assert runner.light_overflows == 1


def test_the_budget_runs_from_the_requests_arrival(make_client: Any, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request stamped as arrived 100 s ago (limit 30 s) is answered with the time limit, and no
    worker is asked. (Before: the budget started when the handler first called the runner.)"""
    client = make_client(sqlite_url, classify_isolation="thread", time_limit_s=30.0)
    runner: ClassifyRunner = client.app.state.runner
    real = app_main._arrival_clock
    monkeypatch.setattr(app_main, "_arrival_clock", lambda: real() - 100.0)
    r = client.post("/v1/classify", json={"regex": "(ab)*(ba)*", "alphabet": ["a", "b"]})
    assert r.status_code == 422 and r.json()["limit"] == "time_limit_s" and r.json()["value"] == 30.0, r.text
    assert runner.served == 0 and runner.light_runner is not None and runner.light_runner.served == 0
    assert client.get("/healthz").headers["server-timing"].startswith("app;dur=")


def test_the_classification_body_is_built_in_the_worker_as_the_response_model_would(
    make_client: Any, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With process isolation the API process never builds or serializes the record (its
    serializer is broken here and the answer is still 200), and the body equals what FastAPI's
    ``response_model=Classification`` produces from the record."""
    from pydantic import TypeAdapter

    from langclass.app.usecases.schemas import Classification

    def broken(record: Any) -> bytes:
        raise AssertionError("the API process serialized a classification")

    monkeypatch.setattr(service, "classification_json", broken)
    client = make_client(sqlite_url, **ROOMY, classify_isolation="process", classify_concurrency=1)
    runner: ClassifyRunner = client.app.state.runner
    r = client.post("/v1/classify", json=SMALL)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    # answered by the light lane's own worker process
    assert runner.light_runner is not None and runner.light_runner.served == 1 and runner.served == 0
    assert runner.light_runner.pool is not runner.pool and runner.light_runner.pool.process_count() == 1
    monkeypatch.undo()
    parsed, analysis = service.parse_and_analyze(**SMALL, limits=client.app.state.settings.limits())
    adapter = TypeAdapter(Classification)
    expected = adapter.dump_python(adapter.validate_python(service.classification_record(parsed, analysis, "v")),
                                   mode="json", by_alias=True)
    got = r.json()
    for volatile in ("timings_ms", "code_version"):
        got.pop(volatile), expected.pop(volatile)
    assert got == json.loads(json.dumps(expected))


def test_routes_are_built_at_start_up_not_on_the_first_requests(make_client: Any, sqlite_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """FastAPI builds a route's validators (pydantic schemas) the first time a request is matched
    against it, on the event loop; the app does that at start-up (``warm_up_routing``), so the
    first ``/healthz`` and the first ``/v1`` requests build no schema. (Before: 3 and 77 schemas,
    ~0.15 s and ~0.2 s of event loop on an idle machine.)"""
    generate = pytest.importorskip("pydantic._internal._generate_schema")
    built: list[Any] = []
    original = generate.GenerateSchema.generate_schema

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(args[:1])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(generate.GenerateSchema, "generate_schema", counting)
    client = make_client(sqlite_url, classify_isolation="thread")
    built.clear()
    assert client.get("/healthz").status_code == 200
    client.get("/v1/languages")
    client.post("/v1/classify", json=SMALL)
    assert built == []


def test_an_answer_left_undecided_by_a_light_bound_is_computed_again_in_the_main_lane(make_client: Any, sqlite_url: str) -> None:
    """The analysis records a limit instead of raising it (classes over the monoid cap are null):
    a light answer with such a gap is not the answer — the main lane, with the full limits, decides
    every class. (Before: the light lane's nulls were returned.)"""
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread", classify_light_max_monoid_size=3)
    runner: ClassifyRunner = client.app.state.runner
    r = client.post("/v1/classify", json=SMALL)  # (ab)*: a 6-element monoid
    assert r.status_code == 200, r.text
    assert service.limits_hit(r.json()) == frozenset()
    assert all(c["member"] is not None for c in r.json()["classes"].values())
    assert runner.light_overflows == 1 and runner.served == 1


def test_the_users_46656_element_monoid_is_decided_through_the_api_and_the_cache(make_client: Any, sqlite_url: str) -> None:
    """The reported case: a 6-state DFA whose monoid (46,656 elements) is over a 5,000-element light
    bound. The light attempt's undecided answer must neither be returned nor cached: both the first
    answer and the cached second one decide FO[<,MOD] (no) with the whole monoid."""
    dfa = {"alphabet": ["c", "t", "z"], "states": [0, 1, 2, 3, 4, 5], "initial": 0, "accepting": [0],
           "transitions": {"0": {"c": 1, "t": 1, "z": 1}, "1": {"c": 2, "t": 0, "z": 1}, "2": {"c": 3, "t": 2, "z": 2},
                           "3": {"c": 4, "t": 3, "z": 3}, "4": {"c": 5, "t": 4, "z": 4}, "5": {"c": 0, "t": 5, "z": 5}}}
    client = make_client(sqlite_url, **ROOMY, classify_isolation="thread", classify_light_max_monoid_size=5000)
    runner: ClassifyRunner = client.app.state.runner
    for _ in range(2):
        r = client.post("/v1/classify", json={"dfa": dfa})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["monoid"]["size"] == 46656 and service.limits_hit(body) == frozenset()
        assert body["classes"]["fo_mod"]["member"] is False and body["classes"]["fo2_mod"]["member"] is False
    assert runner.light_overflows == 1 and runner.served == 1  # computed once in the main lane, then cached
