"""The ``sectors`` experiment: spec checks, the verdict logic on hand-made readouts, one tiny run."""

from __future__ import annotations

import json

import pytest

from langclass.core.automaton import DFA
from langclass.core.errors import InputError, LimitExceeded
from langclass.models.sectors import _run_verdict, _verdict, format_sectors, run_sectors, validate_sectors_spec

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0]).to_canonical_dict()
TINY = {"max_steps": 3, "test_lengths": [41, 42], "eval_per_length": 8, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1}


def head(h, rng, energy, freqs, gates=(0.4, 0.3, 0.3)):
    return {"head": h, "kernel_range": rng, "sector_energy": dict(zip(("fj", "affine", "lc"), energy)),
            "frequencies": [{"a": a, "q": q, "near_root": near} for a, q, near in freqs], "gates": dict(zip(("fj", "affine", "lc"), gates))}


def test_mod_reading_needs_energetic_heads_at_roots_whose_orders_have_lcm_k():
    pred = {"class": "ltl_p_mod", "period": 6}
    ok = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)]), head(1, 2.0, (0.8, 0.2, 0), [(1, 3, True)]), head(2, 0.1, (0.1, 0.9, 0), [(1, 5, True)])]}
    assert _run_verdict(ok, pred, 1.0)["agrees"] is True and _run_verdict(ok, pred, 1.0)["lcm"] == 6
    only2 = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)])]}
    assert _run_verdict(only2, pred, 1.0)["agrees"] is False  # lcm 2 ≠ 6
    wrong = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)]), head(1, 3.0, (0.9, 0.1, 0), [(2, 5, True)]), head(2, 3.0, (0.9, 0, 0), [(1, 3, True)])]}
    assert _run_verdict(wrong, pred, 1.0)["agrees"] is False  # an energetic head at a root of order 5
    assert _run_verdict({"heads": [head(0, 0.2, (1, 0, 0), [(1, 2, True)])]}, pred, 1.0)["agrees"] is False  # nothing energetic


def test_y_reading_and_overall_verdicts():
    pred = {"class": "ltl_p_y"}
    run = {"heads": [], "lag1_lengths": [41, 42], "lag1_mass": {"41": [[0.2, 0.95]], "42": [[0.1, 0.92]]},
           "loo_accuracy_drop": {"fj": 0.0, "affine": 0.4, "lc": 0.005}}
    assert _run_verdict(run, pred, 1.0)["agrees"] is True
    run["lag1_mass"]["42"] = [[0.1, 0.85]]
    assert _run_verdict(run, pred, 1.0)["agrees"] is False
    runs = [{"reached_longest": False, "run_verdict": {"agrees": True, "text": ""}, "seed": 0}]
    assert _verdict(runs, pred, 100)["status"] == "inconclusive"
    runs = [{"reached_longest": True, "run_verdict": {"agrees": a, "text": ""}, "seed": s} for s, a in enumerate([True, False, True])]
    assert _verdict(runs, pred, 100)["status"] == "agrees"
    runs[2]["run_verdict"]["agrees"] = False
    assert _verdict(runs, pred, 100)["status"] == "disagrees"
    assert _verdict(runs, {"class": None}, 100)["status"] == "measured"


def test_ltl_p_reading_needs_a_sparse_run_at_unchanged_n_star():
    pred = {"class": "ltl_p"}
    mk = lambda lam, n, rng: {"sparsity": lam, "seed": 0, "longest_perfect_length": n, "run_verdict": _run_verdict({"heads": [head(0, rng, (1, 0, 0), [])]}, pred, 1.0)}  # noqa: E731
    assert _verdict([mk(0.0, 100, 3.0), mk(0.01, 100, 0.2)], pred, 100)["status"] == "agrees"
    assert _verdict([mk(0.0, 100, 3.0), mk(0.01, 60, 0.2)], pred, 100)["status"] == "disagrees"
    assert _verdict([mk(0.0, 100, 3.0), mk(0.01, 100, 0.9)], pred, 100)["status"] == "disagrees"
    assert _verdict([mk(0.0, 100, 3.0)], pred, 100)["status"] == "inconclusive"


def test_spec_errors_name_their_field():
    for spec, field in (({"prediction": {"class": "ltl_p_mod"}}, "prediction.period"), ({"pj": {"max_order": -1}}, "pj.max_order"),
                        ({"sparsity": [-1]}, "sparsity[0]"), ({"sparsity": [0.0] * 9}, "sparsity"), ({"bogus": 1}, "bogus"),
                        ({"pj": {"name": "rope"}}, "pj"), ({"prediction": {"class": "ltl_q"}}, "prediction.class"),
                        ({"root_tolerance": 4.0}, "root_tolerance"), ({"overrides": {"max_steps": 0}}, "overrides.max_steps")):
        with pytest.raises(InputError) as e:
            validate_sectors_spec({"language": AA, **spec})
        assert e.value.field == field, (spec, e.value.field)
    from langclass.models.specs import JobLimits

    with pytest.raises(LimitExceeded) as e:
        validate_sectors_spec({"language": AA, "sparsity": [0.0, 0.1, 0.2], "seeds": [0, 1]}, JobLimits(max_runs=5))
    assert e.value.field == "sparsity"


def test_a_tiny_run_reports_heads_kernels_and_a_verdict():
    spec = {"language": AA, "prediction": {"class": "ltl_p", "period": None}, "sparsity": [0.0, 0.1], "overrides": TINY}
    r = run_sectors(spec)
    json.dumps(r)
    assert len(r["runs"]) == 2 and r["verdict"]["status"] in ("agrees", "disagrees")
    run = r["runs"][0]
    assert len(run["heads"]) == 2 and len(run["kernel"]["values"][0]) == 43
    assert set(run["loo_accuracy_drop"]) == {"fj", "affine", "lc"}
    assert len(run["lag1_mass"]["42"]) == 1 and len(run["lag1_mass"]["42"][0]) == 2
    text = format_sectors(r)
    assert "verdict:" in text and "head 1" in text
