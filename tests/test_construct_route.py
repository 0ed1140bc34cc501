"""The route of a hard-attention construction: Krohn–Rhodes cascade vs local divisors (issue 23, item 2).

Checks: the planned parameter count equals the built model's; the lower bound of an unplanned
local-divisor program never exceeds its planned count; the chooser keeps the smaller; the record
names the route with its sizes; the O(n) interpreter path equals a brute-force interpreter; the dense
and the sparse feed-forward layers agree bit for bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from langclass.core.base.errors import InputError, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS
from langclass.core.ingest.regex import regex_to_dfa
from langclass.core.logic.brasp import DYCK_1_DEPTH_2, AttentionOp, bexpr_eval, formula_to_brasp, parse_program, run_program
from langclass.core.logic.brasp_width import narrow_program
from langclass.core.synthesis.cascade_brasp import cascade_program
from langclass.core.synthesis.fo_mod import synthesize_fo_mod
from langclass.models.construct.brasp_plan import plan_brasp
from langclass.models.construct.hard import BraspTransformer
from langclass.models.construct.route import choose_hard_route, parameters_at_least, planned_parameters
from langclass.models.construct.verify import run_construction

TOMITA3 = "0*((11)+0+|1(11)*(00)+)*1*"


@pytest.mark.parametrize("regex,alphabet", [(TOMITA3, "01"), ("(a(ab)*b)*", "ab"), ("(aa|b)*", "ab")])
def test_planned_parameters_equal_the_model(regex, alphabet):
    plan = plan_brasp(cascade_program(regex_to_dfa(regex, list(alphabet))).program)
    model = BraspTransformer.from_plan(plan)
    assert planned_parameters(plan) == model.describe()["parameters"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("regex", ["(ab)*", "(a|b)*ab(a|b)*", "a(a|b)*b", "((a|b)(a|b))*a"])
def test_lower_bound_below_the_planned_local_divisor_program(regex):
    dfa = regex_to_dfa(regex, ["a", "b"])
    program = formula_to_brasp(synthesize_fo_mod(dfa).formula, dfa.alphabet)
    lower, d_lower = parameters_at_least(program)
    plan = plan_brasp(narrow_program(program))
    assert d_lower <= plan.d_model and lower <= planned_parameters(plan)


def test_tomita3_picks_the_cascade_without_planning_the_local_divisor_program():
    dfa = regex_to_dfa(TOMITA3, ["0", "1"])
    formula = synthesize_fo_mod(dfa).formula
    choice = choose_hard_route(dfa, formula, dfa.alphabet)
    d = choice.to_dict()
    assert d["route"] == "cascade" and d["cascade_height"] == 4 and d["layers"] == 2 * 4 + 1
    assert d["parameters"] <= 10 ** 6 and d["layers"] <= 20
    ld = d["candidates"]["local-divisors"]
    assert ld["planned"] is False and ld["parameters_at_least"] > d["parameters"]


def test_asked_routes_and_bad_routes():
    dfa = regex_to_dfa("(ab)*", ["a", "b"])
    formula = synthesize_fo_mod(dfa).formula
    ld = choose_hard_route(dfa, formula, dfa.alphabet, route="local-divisors")
    assert ld.route == "local-divisors" and "cascade" not in ld.candidates
    assert choose_hard_route(dfa, None, dfa.alphabet, route="cascade").route == "cascade"
    with pytest.raises(InputError, match="route"):
        choose_hard_route(dfa, formula, dfa.alphabet, route="fastest")
    with pytest.raises(InputError, match="formula"):
        choose_hard_route(dfa, None, dfa.alphabet, route="local-divisors")
    with pytest.raises(UnsupportedError):
        choose_hard_route(regex_to_dfa("(b*ab*a)*b*", ["a", "b"]), None, ("a", "b"), route="cascade")


def test_record_names_the_route():
    r = run_construction({"regex": TOMITA3, "alphabet": ["0", "1"], "all_words_up_to": 7, "random_words": 2,
                          "random_max_length": 120})
    assert r["exact"] and r["attention"] == "hard" and r["encoding"] == "mod_onehot" and r["modulus"] == 2
    route = r["route"]
    assert route["route"] == "cascade" and route["cascade_height"] == 4
    # the record describes the model built: the local-divisor formula, synthesized to compare the
    # routes and not built, sits with its candidate (before: as the record's formula and synthesis)
    assert r["formula"] is None and r["synthesis"] is None and r["fragment"] is None
    ld = route["candidates"]["local-divisors"]
    assert ld["built"] is False and (ld["synthesis"] is None or ld["synthesis"]["formula"] == ld["formula"])
    assert r["program"]
    for key in ("layers", "heads", "d_model", "parameters"):
        assert route[key] == r["model"][key]
    soft = run_construction({"regex": "(ab)*", "alphabet": ["a", "b"], "all_words_up_to": 4, "random_words": 1,
                             "random_max_length": 20})
    assert soft["route"]["route"] == "formula"
    hard = run_construction({"regex": "(ab)*", "alphabet": ["a", "b"], "route": "cascade", "all_words_up_to": 6,
                             "random_words": 1, "random_max_length": 50})
    assert hard["attention"] == "hard" and hard["route"]["route"] == "cascade" and hard["exact"]
    with pytest.raises(InputError, match="route"):
        run_construction({"formula": "P a", "alphabet": ["a", "b"], "route": "cascade"})
    with pytest.raises(InputError, match="route"):
        run_construction({"regex": "(ab)*", "alphabet": ["a", "b"], "route": "cascade", "attention": "soft"})


def _brute_force(program, word):
    """Every vector at every position by the definition (§3.1), one position at a time."""
    n = len(word)
    idx = {s: k for k, s in enumerate(program.alphabet)}
    vals = {name: [word[p] == idx[sym] for p in range(n)] for name, sym in program.initial.items()}
    for name, r in program.marks.items():
        vals[name] = [(p + 1) % program.modulus == r for p in range(n)]
    masks = {"none": lambda i, j: True, "future": lambda i, j: j < i, "past": lambda i, j: j > i,
             "future_nonstrict": lambda i, j: j <= i, "past_nonstrict": lambda i, j: j >= i}
    for op in program.ops:
        out = []
        for i in range(n):
            if not isinstance(op, AttentionOp):
                out.append(bool(bexpr_eval(op.expr, lambda nm, s: vals[nm][i])))
                continue
            ok = [j for j in range(n) if masks[op.mask](i, j)
                  and bexpr_eval(op.score, lambda nm, s, j=j: vals[nm][i if s == "i" else j])]
            if not ok:
                out.append(bool(bexpr_eval(op.default, lambda nm, s: vals[nm][i])))
            else:
                j = ok[-1] if op.direction == "rightmost" else ok[0]
                out.append(bool(bexpr_eval(op.value, lambda nm, s: vals[nm][i if s == "i" else j])))
        vals[op.name] = out
    return vals


@pytest.mark.parametrize("program", [
    cascade_program(regex_to_dfa(TOMITA3, ["0", "1"])).program,
    parse_program(DYCK_1_DEPTH_2, ["a", "b"]),
    formula_to_brasp("(a S b) & !Y a", ["a", "b"]),
], ids=["cascade", "dyck2", "since"])
def test_interpreter_against_brute_force(program):
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 9):
        words = rng.integers(0, len(program.alphabet), (6, n))
        got = run_program(program, words)
        for b, w in enumerate(words):
            want = _brute_force(program, list(w))
            for name, v in want.items():
                assert got[name][b].tolist() == v, (name, list(w))


def test_dense_and_sparse_feed_forward_agree():
    model = BraspTransformer.from_plan(plan_brasp(cascade_program(regex_to_dfa(TOMITA3, ["0", "1"])).program))
    words = torch.tensor(list(itertools.product([0, 1], repeat=7)))
    with torch.no_grad():
        x = model.embed(words)
        x = model.encoding.embed(x, model.encoding.position_ids(7))
        for dense, sparse in zip(model.ffns, model.sparse_ffns):
            if sparse.units:
                assert torch.equal(dense(x), sparse(x))
        hidden = model(words)
    values = model.vector_values(hidden)
    ref = run_program(model.program, words.numpy())
    for name, v in ref.items():
        assert np.array_equal(values[name].numpy(), v.astype(np.float64)), name


def test_cli_route_option():
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    res = CliRunner().invoke(app, ["construct", "--regex", "(a(ab)*b)*", "--alphabet", "ab", "--route", "cascade",
                                   "--all-words", "6", "--random-words", "2", "--random-max-length", "60"])
    assert res.exit_code == 0, res.output
    assert "route      cascade (cascade height 3" in res.output
    # the summary describes the cascade that was built, not the local-divisor formula that was not
    assert "synthesis  cascade: holonomy decomposition, 3 levels" in res.output
    assert "local-divisors (Diekert" not in res.output and "formula    " not in res.output
    local = CliRunner().invoke(app, ["construct", "--regex", "(ab)*", "--alphabet", "ab", "--attention", "hard",
                                     "--route", "local-divisors", "--all-words", "6", "--random-words", "2",
                                     "--random-max-length", "60"])
    assert local.exit_code == 0, local.output
    assert "synthesis  local-divisors" in local.output and "holonomy" not in local.output
    bad = CliRunner().invoke(app, ["construct", "--regex", "(ab)*", "--alphabet", "ab", "--route", "fastest"])
    assert bad.exit_code == 2 and "route" in bad.output


def test_plan_stops_at_the_deadline():
    from langclass.core.base.errors import TimeLimitExceeded
    from langclass.core.base.limits import Deadline

    program = cascade_program(regex_to_dfa("(a(ab)*b)*", ["a", "b"])).program
    with pytest.raises(TimeLimitExceeded) as e:
        plan_brasp(program, Deadline(-1.0))
    assert "B-RASP plan" in e.value.extra["step"]


def test_cascade_route_needs_no_formula():
    r = run_construction({"regex": "(a(a(ab)*b)*b)*", "alphabet": ["a", "b"], "route": "cascade",
                          "all_words_up_to": 6, "random_words": 1, "random_max_length": 40})
    assert r["exact"] and r["formula"] is None and r["synthesis"] is None
    assert r["route"]["route"] == "cascade" and "local-divisors" not in r["route"]["candidates"]
    with pytest.raises(UnsupportedError, match="quasi-aperiodic"):
        run_construction({"regex": "(b*ab*a)*b*", "alphabet": ["a", "b"], "route": "cascade"})


# ----------------------------------------------------------------------------- the synthesis' node bound
def _hard_ground_truth():
    import json
    from pathlib import Path

    langs = json.loads((Path(__file__).parent / "ground_truth.json").read_text())["languages"]
    return [(e["id"], e["regex"], e["alphabet"]) for e in langs
            if e["expected"]["star_free"] or e["expected"]["quasi_aperiodic"]]


def _nodes_built(dfa):
    """The formula of the unbounded synthesis and the distinct subformulas its final letter order built."""
    from langclass.core.synthesis import starfree

    budgets = []
    orig = starfree.SynthesisBudget.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        budgets.append(self)

    starfree.SynthesisBudget.__init__ = init
    try:
        s = synthesize_fo_mod(dfa)
    finally:
        starfree.SynthesisBudget.__init__ = orig
    return s, len(budgets[-1].seen) if budgets else 0


@pytest.mark.slow
@pytest.mark.parametrize("name,regex,alphabet", _hard_ground_truth(), ids=lambda x: x if isinstance(x, str) else "")
def test_node_bound_changes_no_route_choice(name, regex, alphabet):
    """The bounded synthesis (route auto) chooses what the unbounded one chooses, and every program has
    at least (|Σ| + 1) parameters per subformula its synthesis built (the bound's premise)."""
    from langclass.models.construct.route import local_divisor_candidate

    dfa = regex_to_dfa(regex, list(alphabet))
    full, built = _nodes_built(dfa)
    lower, _ = parameters_at_least(formula_to_brasp(full.formula, dfa.alphabet))
    assert lower >= (len(dfa.alphabet) + 1) * built
    want = choose_hard_route(dfa, full.formula, dfa.alphabet)
    synthesis, note, cascade = local_divisor_candidate(dfa, DEFAULT_LIMITS, "auto", None)
    got = choose_hard_route(dfa, synthesis.formula if synthesis else None, dfa.alphabet, cascade=cascade)
    assert got.route == want.route and planned_parameters(got.plan) == planned_parameters(want.plan), note


def test_node_bound_is_the_smaller_size_over_the_alphabet():
    from langclass.models.construct.route import local_divisor_node_bound

    assert local_divisor_node_bound(2) is None
    assert local_divisor_node_bound(2, 3000, None) == 1000 and local_divisor_node_bound(2, 3000, 30) == 10
    assert local_divisor_node_bound(4, None, 3) == 1


def test_over_budget_refused_before_the_local_divisor_synthesis_runs(monkeypatch):
    """Dyck-1 of depth 5 (a 13,598-subformula local-divisor formula): with a small budget the induction
    stops after budget / (|Σ| + 1) subformulas, and the refusal names the cascade's planned size."""
    from langclass.core.base.errors import LimitExceeded
    from langclass.core.synthesis import starfree

    peak = []
    orig = starfree.SynthesisBudget.note

    def note(self, f):
        peak.append(len(self.seen))
        return orig(self, f)

    monkeypatch.setattr(starfree.SynthesisBudget, "note", note)
    with pytest.raises(LimitExceeded) as info:
        run_construction({"regex": "(a(a(a(a(ab)*b)*b)*b)*b)*", "alphabet": ["a", "b"], "max_parameters": 3000})
    assert info.value.limit == "max_parameters" and info.value.extra["planned"]["parameters"] > 3000
    assert max(peak) <= 3000 // 3 + 1


def test_local_divisor_route_refused_by_the_budget_bound():
    from langclass.core.base.errors import LimitExceeded

    with pytest.raises(LimitExceeded) as info:
        run_construction({"regex": "(a(a(a(ab)*b)*b)*b)*", "alphabet": ["a", "b"], "route": "local-divisors",
                          "max_parameters": 3000})
    assert info.value.limit == "max_parameters" and "local-divisor synthesis" in info.value.detail


def test_route_record_says_why_the_local_divisor_formula_was_not_synthesized():
    r = run_construction({"regex": "(a(a(a(a(ab)*b)*b)*b)*b)*", "alphabet": ["a", "b"], "all_words_up_to": 6,
                          "random_words": 2, "random_max_length": 50})
    assert r["route"]["route"] == "cascade" and r["exact"]
    assert "not synthesized" in r["route"]["candidates"]["local-divisors"]["error"]
