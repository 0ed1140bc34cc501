"""Bounded memory and honest limits of the construction (issue 23, items 4 and 5): the planned size
equals the built size, a plan over the parameter budget is refused before any allocation, words are
verified in fixed-size chunks with the deadline and cancellation checked between them, the time
limit follows the settings and --time-limit, and a formula is built by its language's class."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Deadline, Limits
from langclass.core.ingest.regex import regex_to_dfa
from langclass.core.logic.brasp import DYCK_1_DEPTH_2, formula_to_brasp, parse_program
from langclass.core.logic.brasp_nonstrict import nonstrict_program
from langclass.models.construct import verify_stream
from langclass.models.construct import ConstructionOptions, build_brasp_transformer, build_formula_transformer
from langclass.models.construct.brasp_plan import plan_brasp
from langclass.models.construct.hard import BraspTransformer
from langclass.models.construct.plan import plan_formula
from langclass.models.construct.size import planned_parameters
from langclass.models.construct.soft import FormulaTransformer
from langclass.models.construct.verify import ConstructionCancelled, run_construction, validate_spec, verify_brasp_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ------------------------------------------------------------------ planned size = built size
@pytest.mark.parametrize("formula,alphabet,options", [
    ("P a", "ab", ConstructionOptions()),
    ("P(b & Y a)", "abc", ConstructionOptions()),
    ("MOD(3,1) & P(b & MOD(2,0))", "ab", ConstructionOptions()),
    ("Y^2 a & MOD(3,0) | P(Y b)", "ab", ConstructionOptions()),
    ("Y a | P(Y b)", "ab", ConstructionOptions(y_mode="recency")),
])
def test_planned_parameters_of_a_formula_equal_the_built_model(formula, alphabet, options):
    model = build_formula_transformer(formula, list(alphabet), options)
    assert planned_parameters(model.plan) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("program", [
    parse_program(DYCK_1_DEPTH_2, ["a", "b"]),
    formula_to_brasp("a S b", ["a", "b", "c"]),
    formula_to_brasp("MOD(3,1) & P b", ["a", "b"]),
    nonstrict_program(formula_to_brasp("P(b & P a)", ["a", "b"])),
], ids=["dyck", "since", "marks", "nonstrict"])
def test_planned_parameters_of_a_program_equal_the_built_model(program):
    model = build_brasp_transformer(program)
    assert planned_parameters(model.plan) == model.describe()["parameters"]


# ------------------------------------------------------------------ the budget, before allocation
@pytest.fixture
def no_assembly(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Assembling a model (the step that allocates its weights) records itself and fails."""
    calls: list[str] = []

    def refuse(self: Any) -> None:
        calls.append(type(self).__name__)
        raise AssertionError("a model was assembled")

    monkeypatch.setattr(FormulaTransformer, "_assemble", refuse)
    monkeypatch.setattr(BraspTransformer, "_assemble", refuse)
    return calls


@pytest.mark.parametrize("spec", [
    {"regex": "a(a|b)*", "alphabet": ["a", "b"]},                                   # soft, NoPE
    {"regex": "(a|b)*ab(a|b)*", "alphabet": ["a", "b"], "attention": "hard"},       # hard, strict
    {"program": DYCK_1_DEPTH_2, "alphabet": ["a", "b"]},                            # hard, program
])
def test_a_plan_over_the_budget_is_refused_before_any_allocation(spec, no_assembly):
    plan_size = _planned(spec)
    for limits, options in ((Limits(max_parameters=plan_size - 1), {}),
                            (Limits(), {"max_parameters": plan_size - 1})):  # the setting, or the option
        for check in (lambda: run_construction({**spec, **options}, limits=limits),
                      lambda: validate_spec({**spec, **options}, limits)):
            with pytest.raises(LimitExceeded) as info:
                check()
            assert info.value.limit == "max_parameters" and info.value.value == plan_size - 1
            assert info.value.extra["planned"]["parameters"] == plan_size
    assert no_assembly == []


def _planned(spec: dict) -> int:
    """The planned parameter count, from a run within the budget (no allocation is needed for it)."""
    from langclass.models.construct.choice import plan_model
    from langclass.models.construct.verify import _prepare

    return plan_model(_prepare(spec, Limits()))[1]["parameters"]


def test_the_option_cannot_raise_the_settings_budget(no_assembly):
    spec = {"regex": "a(a|b)*", "alphabet": ["a", "b"]}
    size = _planned(spec)
    with pytest.raises(LimitExceeded) as info:
        run_construction({**spec, "max_parameters": 10 * size}, limits=Limits(max_parameters=size - 1))
    assert info.value.value == size - 1


def test_api_refuses_a_construct_job_over_the_budget_with_422(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0, max_parameters=50)
    r = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})
    lid = r.json()["id"]
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["limit"] == "max_parameters" and body["value"] == 50 and body["planned"]["parameters"] > 50


# ------------------------------------------------------------------ fixed-size chunks
def _spy_forward(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int | None]]:
    seen: list[tuple[int, int, int | None]] = []
    original = BraspTransformer.forward

    def forward(self, ids, *, query_block=None, between=None):
        seen.append((ids.shape[0], ids.shape[1], query_block))
        return original(self, ids, query_block=query_block, between=between)

    monkeypatch.setattr(BraspTransformer, "forward", forward)
    return seen


def test_words_are_checked_in_chunks_of_a_fixed_size(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(verify_stream, "CHUNK_ENTRIES", 20_000)
    program = formula_to_brasp("P(b & P a)", ["a", "b"])
    model = build_brasp_transformer(program)
    dfa = regex_to_dfa("(a|b)*a(a|b)*b(a|b)*", ["a", "b"])
    largest = {}
    for n in (7, 10):  # 255 and 2047 words: the chunk size does not grow with the number of words
        seen = _spy_forward(monkeypatch)
        out = verify_brasp_model(model, program, dfa, all_words_up_to=n, random_lengths=[])
        assert out["all_words"]["wrong"] == 0 and out["all_words"]["checked"] == 2 ** (n + 1) - 1
        by_length: dict[int, int] = {}
        for B, T, _ in seen:
            by_length[T] = max(by_length.get(T, 0), B)
        largest[n] = by_length
    assert largest[7][7] == largest[10][7] < 2 ** 7  # length 7 is cut into chunks, the same ones both times
    assert largest[10][10] <= largest[10][7]  # longer words: no larger chunks


def test_a_long_word_is_evaluated_in_query_blocks(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(verify_stream, "CHUNK_ENTRIES", 5_000)
    program = formula_to_brasp("P(b & P a)", ["a", "b"])
    model = build_brasp_transformer(program)
    seen = _spy_forward(monkeypatch)
    out = verify_brasp_model(model, program, None, all_words_up_to=0, random_lengths=[400])
    assert out["random"]["checked"] == 1 and out["random"]["wrong"] == 0 and out["random"]["sim_inexact"] == 0
    (B, T, block), = seen
    heads = max(len(h) for h in model.attn_layers)
    assert T == 400 and block is not None and B * heads * block * T <= 5_000


# ------------------------------------------------------------------ deadline and cancellation between chunks
class _CountingDeadline(Deadline):
    __slots__ = ("steps",)

    def __init__(self) -> None:
        super().__init__(None)
        self.steps: list[str] = []

    def check(self, step: str = "") -> None:
        self.steps.append(step)


def test_the_deadline_is_checked_before_every_chunk_and_inside_long_words(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(verify_stream, "CHUNK_ENTRIES", 20_000)
    program = formula_to_brasp("P(b & P a)", ["a", "b"])
    model = build_brasp_transformer(program)
    seen = _spy_forward(monkeypatch)
    deadline = _CountingDeadline()
    verify_brasp_model(model, program, None, all_words_up_to=9, random_lengths=[300], deadline=deadline)
    chunks = sum(1 for B, T, _ in seen if T <= 9)
    assert sum(s.startswith("verification (all words") for s in deadline.steps) >= chunks
    layers = len(model.plan.layers)
    assert sum(s.startswith("verification (random") for s in deadline.steps) > layers  # inside the one forward


def test_cancellation_stops_inside_one_long_word(monkeypatch: pytest.MonkeyPatch):
    """A cancel that arrives while one word is being evaluated stops at the next query block or
    layer (before: only between words, ~39 s for a large model on a word of length 2000)."""
    monkeypatch.setattr(verify_stream, "CHUNK_ENTRIES", 5_000)
    program = formula_to_brasp("P(b & P a)", ["a", "b"])
    model = build_brasp_transformer(program)
    polls: list[int] = []
    interpreted: list[int] = []
    import langclass.models.construct.verify as verify

    original_run = verify.run_program
    monkeypatch.setattr(verify, "run_program", lambda *a, **k: interpreted.append(1) or original_run(*a, **k))

    def should_cancel() -> bool:
        polls.append(1)
        return len(polls) >= 3  # the 1st poll is before the word, the 2nd and 3rd inside its forward

    with pytest.raises(ConstructionCancelled) as info:
        verify_brasp_model(model, program, None, all_words_up_to=0, random_lengths=[400], should_cancel=should_cancel)
    assert len(polls) == 3 and interpreted == []  # stopped inside the forward, before the interpreter ran
    assert "random" in info.value.partial


def test_cancellation_is_polled_during_synthesis():
    polls: list[int] = []

    def should_cancel() -> bool:
        polls.append(1)
        return True

    with pytest.raises(ConstructionCancelled):
        run_construction({"regex": "(a|b)*ab(a|b)*", "alphabet": ["a", "b"]}, should_cancel=should_cancel)
    assert polls  # raised by the first poll, wherever it came (synthesis, plan or the first chunk)


# ------------------------------------------------------------------ time limit and budget of the CLI and the Python API
def test_cli_limits_follow_the_settings_and_the_options(monkeypatch: pytest.MonkeyPatch):
    from langclass.app.cli.construct import construct_limits
    from langclass.app.settings import get_settings

    monkeypatch.setenv("LANGCLASS_TIME_LIMIT_S", "500")
    monkeypatch.setenv("LANGCLASS_MAX_PARAMETERS", "12345")
    get_settings.cache_clear()
    try:
        assert (construct_limits().time_limit_s, construct_limits().max_parameters) == (500.0, 12345)
        limits = construct_limits(time_limit=7.5, max_parameters=99)
        assert (limits.time_limit_s, limits.max_parameters) == (7.5, 99)
    finally:
        get_settings.cache_clear()


def test_cli_construct_passes_its_limits_to_the_run(monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    import langclass.models.construct.verify as verify
    from langclass.app.cli.commands import app
    from langclass.app.settings import get_settings

    got: list[Limits] = []

    def fake(spec, *, limits, **kw):
        got.append(limits)
        raise LimitExceeded("max_parameters", limits.max_parameters, "stop here")

    monkeypatch.setattr(verify, "run_construction", fake)
    monkeypatch.setenv("LANGCLASS_TIME_LIMIT_S", "500")
    get_settings.cache_clear()
    try:
        out = CliRunner().invoke(app, ["construct", "-r", "a*", "-a", "ab"])
        assert got[-1].time_limit_s == 500.0, out.output
        out = CliRunner().invoke(app, ["construct", "-r", "a*", "-a", "ab", "--time-limit", "3", "--max-parameters", "77"])
        assert (got[-1].time_limit_s, got[-1].max_parameters) == (3.0, 77), out.output
        assert out.exit_code == 2 and "LANGCLASS_MAX_PARAMETERS" in out.output
    finally:
        get_settings.cache_clear()


def test_python_construct_reads_the_settings(monkeypatch: pytest.MonkeyPatch):
    import langclass
    import langclass.models.construct.verify as verify

    got: list[Limits] = []
    monkeypatch.setattr(verify, "run_construction", lambda spec, limits: got.append(limits) or {"kind": "construct"})
    monkeypatch.setenv("LANGCLASS_TIME_LIMIT_S", "500")
    langclass.construct("a*", alphabet="ab")
    assert got[-1].time_limit_s == 500.0


# ------------------------------------------------------------------ a formula by its language's class
def test_formula_is_built_by_the_class_of_its_language():
    small = {"all_words_up_to": 8, "random_words": 2, "random_max_length": 400}
    r = run_construction({"formula": "P(b & Y a)", "alphabet": ["a", "b"], **small})
    assert (r["input_fragment"], r["language_class"], r["fragment"], r["encoding"]) == ("LTL[P,Y]", "LTL[P]", "LTL[P]", "nope")
    assert r["input_formula"] == "P (b & Y a)" and r["n_max"] is None and r["exact"] and r["agrees_with_dfa"]
    written = run_construction({"formula": "P(b & Y a)", "alphabet": ["a", "b"], "by_class": False, **small})
    assert written["encoding"] == "rope" and written["formula_choice"] == "as written" and written["n_max"] is not None
    # over {a, b, c} the same formula's language needs Y (c between a and b breaks it): kept as written
    r3 = run_construction({"formula": "P(b & Y a)", "alphabet": ["a", "b", "c"], "all_words_up_to": 5, "random_words": 0})
    assert (r3["language_class"], r3["encoding"], r3["formula_choice"]) == ("LTL[P,Y]", "rope", "as written")


def test_nonstrict_mask_is_recorded_and_verified():
    r = run_construction({"regex": "a(a|b)*", "alphabet": ["a", "b"], "mask": "nonstrict", "all_words_up_to": 8,
                          "random_words": 2, "random_max_length": 300})
    assert r["mask"] == "nonstrict" and set(r["model"]["masks"]) <= {"future_nonstrict", "past_nonstrict"}
    assert r["exact"] and r["agrees_with_dfa"]
    strict = run_construction({"regex": "a(a|b)*", "alphabet": ["a", "b"], "attention": "hard", "all_words_up_to": 4,
                               "random_words": 0})
    assert strict["mask"] == "strict" and "future" in strict["model"]["masks"]


def test_cancelled_partial_counts_are_numbers():
    calls: list[dict] = []
    with pytest.raises(ConstructionCancelled) as info:
        run_construction({"formula": "P a", "alphabet": ["a", "b"]}, progress=calls.append,
                         should_cancel=lambda: len(calls) >= 2)
    assert np.isscalar(info.value.partial["all_words"]["checked"])


def _stutter_invariant_star_free() -> list[dict]:
    import json
    from pathlib import Path

    langs = json.loads((Path(__file__).parent / "ground_truth.json").read_text())["languages"]
    return [l for l in langs if l["expected"].get("stutter_invariant") and l["expected"].get("star_free")]


@pytest.mark.slow
@pytest.mark.parametrize("entry", _stutter_invariant_star_free(), ids=lambda l: l["id"])
def test_every_stutter_invariant_star_free_ground_truth_language_builds_nonstrict(entry):
    # every word to length 6 is 19,531 words over five letters: under the default 60 s budget that
    # fails on a loaded machine (seen in CI), so the test gives it a budget no load reaches
    r = run_construction({"regex": entry["regex"], "alphabet": entry["alphabet"], "mask": "nonstrict",
                          "all_words_up_to": 6, "random_words": 4, "random_max_length": 300},
                         limits=Limits(time_limit_s=900.0))
    assert r["mask"] == "nonstrict" and set(r["model"]["masks"]) <= {"future_nonstrict", "past_nonstrict"}
    assert r["exact"] and r["agrees_with_dfa"] and r["all_words_up_to"] == 6, r["first_failure"]


@pytest.mark.parametrize("regex", ["0*1*0*1*", "(a|b)*a(a|b)*b(a|b)*"])
def test_nonstrict_routes_are_compared_after_the_rewrite(regex):
    """Under route auto both routes are rewritten (Thm 18) and planned; the smaller rewritten one is
    built, and the record gives every candidate's size after the rewrite beside its strict size."""
    from langclass.models.construct.route import choose_hard_route

    alphabet = sorted(set(regex) & set("01ab"))
    r = run_construction({"regex": regex, "alphabet": alphabet, "mask": "nonstrict", "all_words_up_to": 6,
                          "random_words": 2, "random_max_length": 40})
    cands = r["route"]["candidates"]
    assert r["exact"] and set(cands) == {"cascade", "local-divisors"}
    assert all(c["mask"] == "nonstrict" and "strict" in c for c in cands.values())
    assert r["model"]["parameters"] == min(c["parameters"] for c in cands.values()) == cands[r["route"]["route"]]["parameters"]
    for route in ("cascade", "local-divisors"):  # each forced route builds exactly the candidate's size
        forced = run_construction({"regex": regex, "alphabet": alphabet, "mask": "nonstrict", "route": route,
                                   "all_words_up_to": 4, "random_words": 0})
        assert forced["model"]["parameters"] == cands[route]["parameters"]
