"""The ``sectors`` experiment: spec checks, the verdict logic on hand-made readouts, one tiny run."""

from __future__ import annotations

import json

import pytest

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.experiments.sectors import _run_verdict, _verdict, format_sectors, run_sectors, validate_sectors_spec

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0]).to_canonical_dict()
TINY = {"max_steps": 3, "test_lengths": [41, 42], "eval_per_length": 8, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1}


def head(h, rng, energy, freqs, gates=(0.4, 0.3, 0.3)):
    """freqs: (a, q, near_root) or (a, q, near_root, fj_range); without a range the head's ΔK is used."""
    def f(a, q, near, fj=None):
        return {"a": a, "q": q, "near_root": near, "folded": 6.283185307179586 * a / q, "delta": 0.01 if near else 0.2,
                "fj_range": rng if fj is None else fj, "lc_range": 0.0}
    return {"head": h, "kernel_range": rng, "sector_energy": dict(zip(("fj", "affine", "lc"), energy)),
            "frequencies": [f(*x) for x in freqs], "gates": dict(zip(("fj", "affine", "lc"), gates))}


def test_mod_reading_needs_energetic_heads_at_roots_whose_orders_have_lcm_k():
    pred = {"class": "ltl_p_mod", "period": 6}
    ok = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)]), head(1, 2.0, (0.8, 0.2, 0), [(1, 3, True)]), head(2, 0.1, (0.1, 0.9, 0), [(1, 5, True)])]}
    assert _run_verdict(ok, pred, 1.0)["agrees"] is True and _run_verdict(ok, pred, 1.0)["lcm"] == 6
    only2 = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)])]}
    assert _run_verdict(only2, pred, 1.0)["agrees"] is False  # lcm 2 ≠ 6
    wrong = {"heads": [head(0, 3.0, (0.9, 0.1, 0), [(1, 2, True)]), head(1, 3.0, (0.9, 0.1, 0), [(2, 5, True)]), head(2, 3.0, (0.9, 0, 0), [(1, 3, True)])]}
    wrong["root_only"] = {"learned": {"kept_frequencies": 2, "accuracy": 0.6, "accuracy_drop": 0.4}}
    assert _run_verdict(wrong, pred, 1.0)["agrees"] is False  # the order-5 frequency is needed: zeroing it costs accuracy
    assert _run_verdict({"heads": [head(0, 0.2, (1, 0, 0), [(1, 2, True)])]}, pred, 1.0)["agrees"] is False  # nothing energetic


def test_mod_reading_is_per_frequency_and_causal_with_several_frequencies_per_head():
    pred = {"class": "ltl_p_mod", "period": 2}
    ro = lambda drop: {"learned": {"kept_frequencies": 1, "accuracy": 1 - drop, "accuracy_drop": drop}}  # noqa: E731
    # one energetic frequency at π, three near their (small) initial amplitude elsewhere
    quiet = {"heads": [head(0, 5.0, (0.9, 0.1, 0), [(1, 2, True, 5.0), (2, 7, False, 0.3), (1, 9, False, 0.2), (0, 1, False, 0.1)])]}
    v = _run_verdict(quiet, pred, 1.0)
    assert v["agrees"] is True and v["energetic_frequencies"] == 1 and v["at_valid_roots"] == 1 and v["lcm"] == 2
    # an energetic off-root frequency beside the root: agrees only if the root-only kernel keeps the accuracy
    loud = {"heads": [head(0, 5.0, (0.9, 0.1, 0), [(1, 2, True, 5.0), (2, 7, False, 2.0)])]}
    v = _run_verdict({**loud, "root_only": ro(0.0)}, pred, 1.0)
    assert v["agrees"] is True and v["energetic_frequencies"] == 2 and v["at_valid_roots"] == 1 and "root-only kernel" in v["text"]
    assert _run_verdict({**loud, "root_only": ro(0.3)}, pred, 1.0)["agrees"] is False
    # the energetic frequencies sit at an order-3 root only: not a root of order dividing 2
    assert _run_verdict({"heads": [head(0, 5.0, (0.9, 0.1, 0), [(1, 3, True, 5.0)])], "root_only": ro(0.0)}, pred, 1.0)["agrees"] is False


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
    # MOD: no intact run reached the longest length; the root-only kernel did (lcm k) → supported
    mod = {"class": "ltl_p_mod", "period": 3}
    ro = lambda n: {"learned": {"longest_perfect_length": n}, "snapped": {"longest_perfect_length": 41}}  # noqa: E731
    mk = lambda n, lcm: {"reached_longest": False, "seed": 0, "longest_perfect_length": 58, "root_only": ro(n),  # noqa: E731
                         "run_verdict": {"agrees": False, "lcm": lcm, "text": ""}}
    assert _verdict([mk(100, 3)], mod, 100)["status"] == "supported"
    assert _verdict([mk(100, 1)], mod, 100)["status"] == "inconclusive"  # roots of the wrong orders
    assert _verdict([mk(80, 3)], mod, 100)["status"] == "inconclusive"  # the reduced kernel falls short too


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
    from langclass.models.training.specs import JobLimits

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
    assert run["root_only"] is None  # only read for an LTL[P,MOD] prediction


def test_root_only_kernel_keeps_the_frequencies_at_valid_roots_and_restores_the_encoding():
    import torch

    from langclass.models.nn.pj import PJBias
    from langclass.models.experiments.sectors import _root_only

    torch.manual_seed(0)
    enc = PJBias(2, n_freqs=2, max_order=1, omega_init=[[3.13, 1.0], [2.1, 0.5]], zeta_init_std=1.0, compute_dtype="float64")
    before = {n: t.detach().clone() for n, t in enc.named_parameters()}
    lags = torch.arange(1, 41)
    with _root_only(enc, 2, 0.05, 12, snap=True) as kept:
        K = enc.kernel(lags=lags).detach()
        assert kept == 1  # 3.13 is within 0.05 of π; 2.1 is near 2π/3, whose order 3 does not divide 2
        assert float(K[1].abs().max()) == 0.0  # head 1 has no valid root: its kernel is zeroed
        assert torch.allclose(K[0, :-2], K[0, 2:], atol=1e-12) and float((K[0] - K[0].mean()).abs().max()) > 0  # period 2 exactly
    with _root_only(enc, 2, 0.05, 12, snap=False) as kept:
        K = enc.kernel(lags=lags).detach()
        assert kept == 1 and float(K[1].abs().max()) == 0.0 and not torch.allclose(K[0, :-2], K[0, 2:], atol=1e-6)  # learned ω ≠ π
    for n, t in enc.named_parameters():
        assert torch.equal(t, before[n]), n
    assert enc.ablate == frozenset()


def test_a_tiny_mod_run_reads_the_root_only_kernels():
    spec = {"language": AA, "prediction": {"class": "ltl_p_mod", "period": 2}, "overrides": TINY}
    r = run_sectors(spec)
    run = r["runs"][0]
    ro = run["root_only"]
    assert set(ro) == {"learned", "snapped"} and all(0 <= v["accuracy"] <= 1 and v["kept_frequencies"] >= 0 for v in ro.values())
    assert all(abs(v["accuracy_drop"] - (run["accuracy"] - v["accuracy"])) < 1e-12 for v in ro.values())
    assert all(v["longest_perfect_length"] in (0, 41, 42) for v in ro.values())
    # 2 heads × 4 frequencies (the sectors default), each read with its FJ and LC ranges
    assert [len(h["frequencies"]) for h in run["heads"]] == [4, 4] and all("fj_range" in f for h in run["heads"] for f in h["frequencies"])
    assert "root-only kernel" in run["run_verdict"]["text"] and r["verdict"]["status"] in ("agrees", "disagrees", "inconclusive")
