"""Deep and shared formulas in the construction, and its one wall-clock budget."""

from __future__ import annotations

import pytest

from langclass.core.logic import formulas as F
from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Deadline, Limits
from langclass.core.ingest.regex import regex_to_dfa
from langclass.models.construct import build_formula_transformer
from langclass.models.construct.plan import plan_formula
from langclass.models.construct.verify import run_construction, verify_formula_model


def _shared_chain(n: int) -> F.Formula:
    """f_0 = a, f_{i+1} = f_i & P f_i: n + 1 distinct nodes, a text of length ~ 2^n."""
    f: F.Formula = F.Atom("a")
    for _ in range(n):
        f = F.And(f, F.Past(f))
    return f


def test_bounded_text_is_the_prefix_of_the_full_text() -> None:
    f = _shared_chain(7)
    full = f.text()
    for k in (0, 1, 5, 17, 60, len(full) - 1, len(full), len(full) + 10):
        assert f.text(k) == full[:k]


def test_bounded_text_of_an_exponential_dag_is_cheap() -> None:
    # the full text would have ~2^80 characters; labels used to render it whole (a{30} hung)
    assert len(_shared_chain(80).text(60)) == 60


def test_plan_of_a_deep_formula_does_not_recurse() -> None:
    # a chain of 1500 P's (the shape of a{n}'s formula): planned without Python recursion
    f: F.Formula = F.Atom("a")
    for _ in range(1500):
        f = F.Past(f)
    plan = plan_formula(f, ["a"])
    assert plan.heads_by_kind["P"] == 1500
    assert len(plan.layers) == 1500


def test_plan_of_a_shared_dag_is_small() -> None:
    plan = plan_formula(_shared_chain(60), ["a"])
    assert plan.heads_by_kind["P"] == 60


def test_verification_stops_at_the_deadline_naming_the_step() -> None:
    dfa = regex_to_dfa("a", ["a"])
    model = build_formula_transformer("a & !P true", ["a"])
    with pytest.raises(TimeLimitExceeded) as info:
        verify_formula_model(model, F.parse_formula("a & !P true", ["a"]), ["a"], dfa, all_words_up_to=3,
                             random_lengths=[], deadline=Deadline(-1.0))
    assert info.value.extra["step"].startswith("verification")


def test_construct_time_limit_is_one_budget() -> None:
    with pytest.raises(TimeLimitExceeded) as info:
        run_construction({"regex": "a{5}", "alphabet": ["a"]}, limits=Limits(time_limit_s=-1.0))
    assert info.value.extra["limit"] == "time_limit_s"
    assert info.value.extra["step"]


def _record(program_lines: int, formula: str | None, tree_size: int) -> dict:
    return {"formula": formula, "fragment": "LTL[S]", "program": "\n".join(f"v{i} := a" for i in range(program_lines)),
            "model": {"program_depth": 7},
            "synthesis": {"method": "local-divisors", "source": "src", "verified": True,
                          "formula_tree_size": tree_size, "formula_distinct_subformulas": 99}}


def test_construct_summary_shows_sizes_not_long_programs() -> None:
    from langclass.app.cli.construct import summary_lines

    lines = summary_lines(_record(1077, None, 3_000_000))
    text = "\n".join(lines)
    assert "1,077 lines" in text and "v1076" not in text          # summarized, not printed
    assert "3,000,000 nodes" in text and "not shown" in text      # the dropped formula is announced
    assert any(line.startswith("verified   True") for line in lines)
    full = "\n".join(summary_lines(_record(1077, None, 3_000_000), show_program=True))
    assert "v1076 := a" in full
    short = "\n".join(summary_lines(_record(3, "P a", 2)))
    assert "v2 := a" in short and "formula    P a" in short
    long_formula = "\n".join(summary_lines(_record(3, "P a & " * 500 + "a", 1001)))
    assert "3,001 characters" in long_formula and "1,001 nodes" in long_formula


def test_every_step_of_a_construction_shares_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Synthesis, the route's plans, narrowing and verification all end at the run's start +
    time_limit_s: no step starts a budget of its own (a user's 5 s limit once took 13 s: the
    synthesis' two letter orders, its proof and the plan each had their own 5 s)."""
    from langclass.models.construct import verify_stream
    made: list[Deadline] = []
    original = verify_stream.CancellableLimits.deadline

    def recording(self):
        d = original(self)
        made.append(d)
        return d

    monkeypatch.setattr(verify_stream.CancellableLimits, "deadline", recording)
    run_construction({"regex": "(a(ab)*b)*", "alphabet": ["a", "b"], "route": "local-divisors",
                      "all_words_up_to": 4, "random_words": 1, "random_max_length": 20}, limits=Limits(time_limit_s=500))
    assert len(made) > 3
    first_end = made[0]._end
    assert all(d._end <= first_end for d in made)


def test_a_shorter_step_budget_ends_at_the_earlier_instant() -> None:
    import dataclasses
    import time

    from langclass.models.construct.verify_stream import CancellableLimits

    limits = CancellableLimits(time_limit_s=500, end=time.monotonic() - 1)  # the run's budget is spent
    with pytest.raises(TimeLimitExceeded):
        dataclasses.replace(limits, time_limit_s=1000).deadline().check("a step")
    longer = CancellableLimits(time_limit_s=500, end=time.monotonic() + 1000)
    assert dataclasses.replace(longer, time_limit_s=10).deadline().remaining <= 10


def test_narrowing_and_the_formula_translation_check_the_deadline() -> None:
    from langclass.core.logic.brasp import formula_to_brasp
    from langclass.core.logic.brasp_width import narrow_program

    program = formula_to_brasp("P(a & P b)", ["a", "b"])
    with pytest.raises(TimeLimitExceeded) as info:
        narrow_program(program, deadline=Deadline(-1.0))
    assert info.value.extra["step"].startswith("B-RASP narrowing")
    with pytest.raises(TimeLimitExceeded) as info:
        formula_to_brasp("P(a & P b)", ["a", "b"], Limits(time_limit_s=-1.0))
    assert info.value.extra["step"].startswith("formula → B-RASP")
