"""Every construction succeeds under the defaults (issue 38): route auto falls back past a failed
route, the cascade program is narrowed to the compiler's bound, verification is sized to the time
limit, recorded formulas and programs read back; the scan of FO[<,MOD] languages (slow tier; a small
sample here)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from langclass.core.base.errors import LimitExceeded, TimeLimitExceeded
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from langclass.core.ingest.parse import parse_dfa_json
from langclass.core.logic import formulas as F
from langclass.core.logic.brasp import run_program
from langclass.core.logic.brasp_width import narrow_program
from langclass.core.synthesis.cascade_brasp import cascade_program
from langclass.models.construct import route as route_mod
from langclass.models.construct.brasp_plan import plan_brasp
from langclass.models.construct.gates import MAX_FFN_INPUTS
from langclass.models.construct.readback import recorded_formula, recorded_program
from langclass.models.construct.route import CASCADE_NARROW_WIDTH, plan_cascade
from langclass.models.construct.verify import run_construction
from langclass.models.construct.verify_budget import VerificationBudget, count_words
from langclass.models.construct.verify_stream import all_words

sys.path.insert(0, str(Path(__file__).parent))
from _construct_scan import scan_languages  # noqa: E402

# the reproducers of issue 38 (δ rows in the order a, b, c)
CAP = {"alphabet": ["a", "b", "c"], "initial": 0, "accepting": [4],
       "transitions": [[1, 2, 2], [1, 3, 3], [4, 3, 0], [0, 3, 4], [1, 2, 2]]}
"""5 states, |M| = 21: the local-divisor synthesis hits its 200,000-subformula cap."""
WIDE = {"alphabet": ["a", "b", "c"], "initial": 0, "accepting": [3, 4, 5],
        "transitions": [[1, 0, 2], [2, 0, 2], [3, 0, 2], [4, 0, 2], [5, 0, 2], [0, 0, 2]]}
"""6 states, monoid of 12: the cascade program as built reads 15 coordinates > 14."""
SLOW = {"alphabet": ["a", "b", "c"], "initial": 0, "accepting": [1, 2],
        "transitions": [[1, 0, 0], [2, 0, 0], [0, 0, 0]]}
"""3 states: all words to the old default length 11 took 112 s of verification."""

SMALL = {"all_words_up_to": 4, "random_words": 2, "random_max_length": 30}
"""A short verification (given explicitly: not sized)."""


def _program_agrees(a, b, n: int) -> None:
    """Every vector of ``a`` has the same value in ``b`` on every word up to length ``n``."""
    k = len(a.alphabet)
    for L in range(1, n + 1):
        words = all_words(k, L)
        va, vb = run_program(a, words), run_program(b, words)
        for name in va:
            assert np.array_equal(va[name], vb[name]), (name, L)


# ---------------------------------------------------------------- route fallback
def test_a_capped_local_divisor_synthesis_is_a_failed_candidate_under_auto(monkeypatch):
    """The cap of the synthesis (whatever limit it hits) ends that route only: the cascade builds and
    the record names the limit; asked for by name, the route still raises."""
    def capped(*args, **kwargs):  # a limit of the synthesis other than the bound route auto sets itself
        raise LimitExceeded("max_states", 100_000, "the synthesis needed more than 100000 states")

    monkeypatch.setattr(route_mod, "synthesize_fo_mod", capped)
    r = run_construction({"regex": "(a(ab)*b)*", "alphabet": ["a", "b"], "attention": "hard", **SMALL})
    assert r["exact"] and r["route"]["route"] == "cascade"
    cands = r["route"]["candidates"]
    assert cands["cascade"]["parameters"] == r["model"]["parameters"]
    assert cands["local-divisors"]["error"] == ("not synthesized: limit max_states = 100000 hit (the synthesis needed "
                                                "more than 100000 states)")
    with pytest.raises(LimitExceeded, match="more than 100000 states"):
        run_construction({"regex": "(a(ab)*b)*", "alphabet": ["a", "b"], "route": "local-divisors"})


def test_when_both_routes_fail_the_error_names_each(monkeypatch):
    def capped(*args, **kwargs):
        raise LimitExceeded("max_states", 100_000, "the synthesis needed more than 100000 states")

    def too_wide(*args, **kwargs):
        raise LimitExceeded("max_ffn_inputs", MAX_FFN_INPUTS, "the cascade program cannot be compiled: as built: reads 15")

    monkeypatch.setattr(route_mod, "synthesize_fo_mod", capped)
    monkeypatch.setattr(route_mod, "plan_cascade", too_wide)
    with pytest.raises(LimitExceeded) as info:
        run_construction({"regex": "(a(ab)*b)*", "alphabet": ["a", "b"], "attention": "hard"})
    assert "cascade: the cascade program cannot be compiled" in info.value.detail
    assert "local-divisors: not synthesized: limit max_states = 100000" in info.value.detail


# ---------------------------------------------------------------- cascade narrowing
def test_the_wide_cascade_is_narrowed_until_it_compiles():
    """WIDE's cascade as built reads 15 coordinates; narrowed to width 9 every target reads ≤ 14, the
    program computes the same vectors, and plan_cascade records both attempts."""
    A = parse_dfa_json(WIDE)
    cp = cascade_program(A)
    with pytest.raises(LimitExceeded) as info:
        plan_brasp(cp.program)
    assert info.value.limit == "max_ffn_inputs" and "15" in info.value.detail
    cc = plan_cascade(A)
    assert cc.info["narrowing"]["width"] == CASCADE_NARROW_WIDTH
    assert "reads 15 coordinates" in cc.info["narrowing"]["tried"]["as built"]["error"]
    assert max(layer.max_inputs for layer in cc.plan.layers) <= MAX_FFN_INPUTS
    assert cc.parameters <= DEFAULT_LIMITS.max_parameters
    _program_agrees(cp.program, cc.program, 5)


@pytest.mark.parametrize("width", [6, 7, 8, 9, 12])
def test_narrowing_a_cascade_keeps_its_vectors_and_its_width(width):
    """On SLOW's cascade (m = 3, levels 3, 3, 2): at every width the narrowed program computes every
    vector of the original on all words up to length 6 and compiles within the coordinate bound."""
    cp = cascade_program(parse_dfa_json(SLOW))
    narrow = narrow_program(cp.program, width=width, identity_cost=1)
    _program_agrees(cp.program, narrow, 6)
    assert max(layer.max_inputs for layer in plan_brasp(narrow).layers) <= MAX_FFN_INPUTS


def test_plan_cascade_keeps_the_smaller_program():
    cc = plan_cascade(parse_dfa_json(SLOW))
    tried = cc.info["narrowing"]["tried"]
    assert cc.parameters == min(t["parameters"] for t in tried.values() if "parameters" in t)
    assert set(tried) == {"as built", f"width {CASCADE_NARROW_WIDTH}"}


def test_vectorized_truth_tables_equal_the_expression_evaluated_row_by_row():
    """gates.truth_table (the plan's truth tables, one array operation per node) against
    evaluate_expr on every assignment, for random expressions with shared nodes and constants."""
    import itertools

    from langclass.models.construct.gates import evaluate_expr, expr_coords, truth_table

    rng = np.random.default_rng(0)
    for _ in range(200):
        nodes = [("c", int(c)) for c in rng.choice(20, size=int(rng.integers(1, 7)), replace=False)]
        nodes.append(("k", bool(rng.integers(2))))
        for _ in range(int(rng.integers(1, 12))):
            kind = ["not", "and", "or"][int(rng.integers(3))]
            if kind == "not":
                nodes.append(("not", nodes[int(rng.integers(len(nodes)))]))
            else:
                picks = rng.integers(len(nodes), size=int(rng.integers(0, 4)))
                nodes.append((kind, tuple(nodes[int(i)] for i in picks)))
        e = nodes[-1]
        cs = sorted(expr_coords(e)) + [99]  # an extra coordinate the expression does not read
        want = [evaluate_expr(e, dict(zip(cs, bits))) for bits in itertools.product([False, True], repeat=len(cs))]
        assert truth_table(e, cs).tolist() == want


# ---------------------------------------------------------------- verification sized to the time limit
def _budget(seconds: float = 30.0, minimum: int = 3, target: int = 11, k: int = 3) -> VerificationBudget:
    return VerificationBudget(Deadline(seconds), minimum=minimum, target=target, k=k, entries=lambda L: 100 * (L + 2),
                              sized_all=True, sized_random=True, describe="1,000 parameters")


def test_budget_checks_the_minimum_then_stops_at_the_predicted_length():
    """Measured costs (not timed here: given) of 1 ms per word: lengths up to the minimum always run;
    past it, a length whose prediction exceeds the share of the time left is not started."""
    b = _budget()
    for L in range(0, 4):
        assert b.all_words_length(L)
        b.measured(L, 3 ** L, 1e-3 * 3 ** L)
    predicted = [b.predict(L, 3 ** L) for L in range(4, 12)]
    assert all(x < y for x, y in zip(predicted, predicted[1:]))  # more words, longer words: more time
    stop = next(L for L in range(4, 12) if not b.all_words_length(L))
    assert b.predict(stop, 3 ** stop) > 0.7 * 30 - 2 and b.predict(stop - 1, 3 ** (stop - 1)) < 0.7 * 30
    assert b.stopped and f"length {stop}" in b.stopped[0]
    rec = b.record(stop - 1, 32)
    assert rec["sized_to_time_limit"] and rec["minimum_all_words_up_to"] == 3 and rec["all_words_up_to"] == stop - 1


def test_budget_raises_when_the_minimum_is_out_of_reach():
    """A model measured at 2 s per word cannot check the 1,093 words to length 6 in 30 s: the error
    names the minimum, its word count, the measured cost and the model."""
    b = _budget(minimum=6)
    for L in (0, 1, 2):
        assert b.all_words_length(L)
        b.measured(L, 3 ** L, 2.0 * 3 ** L)  # 18 s for length 2: a reliable measurement (≥ 1 s)
    with pytest.raises(TimeLimitExceeded) as info:
        b.all_words_length(3)
    err = info.value
    assert err.limit == "time_limit_s" and err.extra["minimum_all_words_up_to"] == 6
    assert err.extra["seconds_per_word"] == pytest.approx(2.0)
    assert f"all words up to length 6 ({count_words(3, 6):,} words" in err.detail
    assert "2e+03 ms per word of length 2" in err.detail and "1,000 parameters" in err.detail


def test_a_short_measurement_never_refuses_the_minimum():
    """Lengths measured in milliseconds (overhead and load dominate them) do not refuse the minimum,
    however steep their extrapolation: it is tried, and the deadline decides."""
    b = _budget(minimum=6)
    b.measured(1, 3, 0.01)
    b.measured(2, 9, 0.5)  # 50× the time for 3× the words: noise, extrapolated to 729 words ≈ 10⁴ s
    assert b.predict(6, 3 ** 6) > 30 and b.all_words_length(3)


def test_budget_skips_random_words_past_the_time_left():
    b = _budget(seconds=5.0)
    b.measured(1, 3, 0.003)
    b.measured(2, 9, 0.009)
    assert b.random_word(10)
    assert not b.random_word(10 ** 7)  # predicted far past the 5 s left
    assert not b.random_word(20)  # once one is skipped, every longer one is too
    assert b.record(2, 3)["random_words_skipped"] == 2


def test_explicit_options_are_not_sized():
    b = VerificationBudget(Deadline(30), minimum=3, target=11, k=3, entries=lambda L: L + 1, sized_all=False,
                           sized_random=False)
    b.measured(1, 3, 100.0)
    b.measured(2, 9, 300.0)
    assert all(b.all_words_length(L) for L in range(12)) and b.random_word(10 ** 6)
    assert not VerificationBudget(None, minimum=3, target=11, k=3, sized_all=True, sized_random=True).sized_all


def test_the_record_says_what_was_verified():
    r = run_construction({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "attention": "hard"})
    v = r["verification"]
    assert r["exact"] and v["sized_to_time_limit"] and v["minimum_all_words_up_to"] == 3
    assert v["all_words_up_to"] == r["all_words_up_to"] >= 3 and v["all_words_target"] == 12
    assert v["random_words_planned"] == 32 and r["random_words_checked"] + v["random_words_skipped"] == 32
    assert set(v["seconds_per_word"]) <= {str(L) for L in range(1, 13)}
    fixed = run_construction({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "attention": "hard", **SMALL})
    assert not fixed["verification"]["sized_to_time_limit"] and fixed["all_words_up_to"] == 4
    assert fixed["verification"]["minimum_all_words_up_to"] is None
    unlimited = run_construction({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "all_words_up_to": 5, "random_words": 1},
                                 limits=Limits(time_limit_s=None))
    assert not unlimited["verification"]["sized_to_time_limit"] and unlimited["all_words_up_to"] == 5


def test_a_minimum_out_of_reach_is_a_clear_limit_error(monkeypatch):
    """Whatever the measurement, a prediction past the time left stops the construction before the
    minimum with the limit error (the prediction is forced here, so the test does not depend on time)."""
    from langclass.models.construct import verify_budget

    monkeypatch.setattr(VerificationBudget, "predict", lambda self, L, words: 1e6)
    monkeypatch.setattr(verify_budget, "EARLY_MEASURE_S", 0.0)  # the tiny lengths count as measured
    with pytest.raises(TimeLimitExceeded) as info:
        run_construction({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "attention": "hard"})
    assert info.value.extra["minimum_all_words_up_to"] == 3 and "minimum" in info.value.detail


# ---------------------------------------------------------------- read-back
def test_a_recorded_formula_longer_than_user_input_reads_back():
    """The local-divisor formula of (a(ab)*b)* is 10,545 characters, over max_regex_length = 10⁴ of
    user input: the record's formula and program read back, and define the language."""
    # the local-divisor route named, so that its formula is the model's (under auto the smaller cascade is
    # built and the formula moves to the route's candidate entry)
    r = run_construction({"regex": "(a(ab)*b)*", "alphabet": ["a", "b"], "attention": "hard", "route": "local-divisors", **SMALL})
    assert len(r["formula"]) > DEFAULT_LIMITS.max_regex_length
    with pytest.raises(LimitExceeded):
        F.parse_formula(r["formula"], r["alphabet"])
    f = recorded_formula(r)
    assert f.text() == r["formula"]
    assert F.formula_to_dfa(f, r["alphabet"]).fingerprint() == r["language"]["fingerprint"]
    p = recorded_program(r)
    assert p.text() == r["program"]
    from langclass.models.construct import plan_formula

    assert plan_formula(F.Past(F.Atom("a")).text(), ["a", "b"]).d_model > 0  # the text form still plans


# ---------------------------------------------------------------- the reproducers (slow: each takes most of the time limit)
@pytest.mark.slow
@pytest.mark.parametrize("dfa,failed", [(CAP, "local-divisors"), (WIDE, None), (SLOW, None)], ids=["cap", "wide", "slow"])
def test_issue_38_reproducers_build_exact_models_under_the_defaults(dfa, failed):
    r = run_construction({"dfa": dfa})
    assert r["exact"] and r["route"]["route"] == "cascade" and r["seconds"] <= DEFAULT_LIMITS.time_limit_s
    cands = r["route"]["candidates"]
    assert cands["cascade"]["parameters"] == r["model"]["parameters"] <= DEFAULT_LIMITS.max_parameters
    assert set(cands) == {"cascade", "local-divisors"}
    if failed:
        assert "error" in cands[failed]
    v = r["verification"]
    assert r["all_words_up_to"] >= v["minimum_all_words_up_to"] == parse_dfa_json(dfa).num_states


# ---------------------------------------------------------------- the scan
def _scan_row(entry: dict, **verification) -> dict:
    r = run_construction({"dfa": entry["dfa"], **verification})
    assert r["exact"], entry
    assert r["route"]["route"] in r["route"]["candidates"]
    for c in r["route"]["candidates"].values():
        assert "parameters" in c or "parameters_at_least" in c or "error" in c
    assert r["verification"]["all_words_up_to"] == r["all_words_up_to"]
    return r


@pytest.mark.parametrize("index", [0, 2, 3, 4])
def test_scan_sample(index):
    """Four languages of the scan (cascade and formula routes, 2 and 3 letters), built with the
    defaults and a short verification."""
    _scan_row(scan_languages()[index], **SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(240))
def test_scan(index):
    """Every language of the scan (tests/_construct_scan.py: 240 FO[<,MOD] languages with at most 5
    states over 2-3 letters, seed 38) builds an exact model with every default."""
    r = _scan_row(scan_languages()[index])
    assert r["all_words_up_to"] >= r["verification"]["minimum_all_words_up_to"]
