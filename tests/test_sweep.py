"""The sweep (langclass.models.experiments.sweep, sweep_report, app.usecases.sweep, ``langclass sweep``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.experiments.sweep import check_sweep, run_sweep, sweep_spec
from langclass.models.experiments.sweep_report import aggregate, contradictions, markdown_table

TINY = {"max_steps": 2, "eval_per_length": 2, "test_lengths": {"range": [41, 44]}, "train_lengths": {"range": [1, 8]}}


def _rec(cell, fp, tested=True, **encs):
    return {"cell": cell, "fingerprint": fp, "dfa": {"fp": fp}, "longest_tested_length": 100, "length_generalization_tested": tested,
            "encodings": {e: {"label": e, "encoding_name": e, "predicted_sufficient": p, "reason": "r", "longest_perfect_length": n,
                              "accuracy": 1.0 if n == 100 else 0.7, "reached_longest": n == 100, "runs": 1}
                          for e, (p, n) in encs.items()}}


RECORDS = [
    _rec("ltl_p", "a", nope=(True, 100), rope=(False, 100)),   # rope: no guarantee, measured only
    _rec("ltl_p", "b", nope=(True, 60), rope=(False, 41)),     # nope: training failure
    _rec("ltl_p", "c", nope=(True, 100), rope=(False, 100)),
    _rec("mod", "d", nope=(False, 100), rope=(False, 50)),     # nope outside LTL[P] perfect: beyond the prediction
    _rec("mod", "e", tested=False, nope=(False, 100), rope=(False, 100)),  # not tested: ignored
]


def test_aggregate_arithmetic():
    agg = aggregate(RECORDS, ["ltl_p", "mod", "beyond"], ["nope", "rope"])
    p = agg["cells"]["ltl_p"]["encodings"]
    assert (p["nope"]["reached"], p["nope"]["languages"], p["nope"]["share"]) == (2, 3, pytest.approx(2 / 3))
    assert p["nope"]["predicted_majority"] and not p["rope"]["predicted_majority"]
    assert p["rope"]["share"] == pytest.approx(2 / 3)
    m = agg["cells"]["mod"]
    assert (m["tested"], m["not_tested"], m["encodings"]["rope"]["share"], m["encodings"]["nope"]["share"]) == (1, 1, 0.0, 1.0)
    assert agg["cells"]["beyond"]["encodings"]["nope"]["share"] is None
    table = markdown_table(agg, {"ltl_p": "LTL[P]"}, ["nope", "rope"])
    assert "| LTL[P] | 3 | 2/3 (67%)* | 2/3 (67%) |" in table
    assert "(+1 not tested)" in table


def test_contradictions_listed():
    cs = contradictions(RECORDS)
    got = [(c["kind"], c["fingerprint"], c["encoding"], c["longest_perfect_length"]) for c in cs]
    assert got == [("training_failure", "b", "nope", 60), ("beyond_prediction", "d", "nope", 100)]
    assert [c["cell"] for c in cs] == ["ltl_p", "mod"]
    assert all(c["dfa"] == {"fp": c["fingerprint"]} for c in cs)
    assert "only up to the tested lengths" in cs[1]["note"]


def _lang(cell, accepting):
    return cell, DFA.from_table(["a", "b"], [[1, 0], [0, 1]], 0, accepting), {"ltl_p": False}


def _spec_for(dfa):
    return {"language": dfa.to_canonical_dict(), "encodings": ["nope", "alibi"],
            "prediction": {"sufficient": ["nope"], "per_encoding": {"nope": {"sufficient": True, "reason": "x"},
                                                                   "alibi": {"sufficient": False, "reason": "y"}}}}


def test_resume_skips_finished_languages(tmp_path):
    langs = [_lang("mod", [0]), _lang("mod", [1])]
    calls = []

    def runner(todo):
        from langclass.models.experiments.sweep import run_language

        for args in todo:
            calls.append(args[1]["accepting"])
            yield run_language(*args)

    a = run_sweep(langs, _spec_for, tmp_path, overrides=TINY, runner=runner)
    assert len(calls) == 2 and a["resumed"] == 0 and a["runs"] == 4
    rec = a["records"][0]
    assert rec["encodings"]["nope"]["predicted_sufficient"] is True and rec["encodings"]["alibi"]["predicted_sufficient"] is False
    # a kill after the first language: remove the second record, run again
    (tmp_path / "languages" / f"{langs[1][1].fingerprint()}.json").unlink()
    b = run_sweep(langs, _spec_for, tmp_path, overrides=TINY, runner=runner)
    assert len(calls) == 3 and b["resumed"] == 1
    assert b["records"][0] == a["records"][0]
    # other settings: nothing is reused
    c = run_sweep(langs, _spec_for, tmp_path, overrides={**TINY, "max_steps": 3}, runner=runner)
    assert len(calls) == 5 and c["resumed"] == 0


def test_limits_before_training(tmp_path):
    langs = [_lang("mod", [0])]
    with pytest.raises(LimitExceeded) as err:
        run_sweep(langs, _spec_for, tmp_path, overrides=TINY, max_runs=1)
    assert err.value.limit == "max_sweep_runs"
    with pytest.raises(LimitExceeded):
        check_sweep([sweep_spec(_spec_for(langs[0][1]), "cpu", overrides={"test_lengths": {"range": [41, 10_000_000]}})])
    with pytest.raises(InputError) as err:
        sweep_spec({}, "gpu")
    assert err.value.field == "profile"
    assert not list((tmp_path / "languages").iterdir())


def test_cli_end_to_end_tiny(tmp_path):
    out = tmp_path / "sw"
    args = ["sweep", "--states", "2", "--alphabet", "2", "--per-cell", "1", "--seed", "0", "--out", str(out),
            "--overrides", json.dumps(TINY)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "| LTL[P] |" in r.output and "## Contradicting runs" in r.output
    data = json.loads((out / "sweep.json").read_text())
    # by default each cell trains its own encodings (the predicted model first, then baselines)
    from langclass.models.experiments.sweep import SWEEP_CELL_ENCODINGS

    for rec in data["records"]:
        assert list(rec["encodings"]) == list(SWEEP_CELL_ENCODINGS[rec["cell"]])
    assert set(data["encodings"]) == {e for rec in data["records"] for e in rec["encodings"]}
    cells_drawn = {r["cell"] for r in data["records"]}
    assert cells_drawn and cells_drawn <= set(data["cells"])
    # every contradiction is listed in sweep.md with its language
    md = (out / "sweep.md").read_text()
    for c in data["contradictions"]:
        assert json.dumps(c["dfa"], separators=(",", ":")) in md
    rows = (out / "sweep.csv").read_text().splitlines()
    assert len(rows) == 1 + sum(len(r["encodings"]) for r in data["records"])
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    # the train job's prediction: NoPE is predicted sufficient exactly on LTL[P]
    for rec in data["records"]:
        if "nope" in rec["encodings"]:
            assert rec["encodings"]["nope"]["predicted_sufficient"] is (rec["cell"] == "ltl_p")
        if "rope" in rec["encodings"]:
            assert rec["encodings"]["rope"]["predicted_sufficient"] is False
        first = next(iter(rec["encodings"].values()))
        assert first["predicted_sufficient"] is (rec["cell"] != "beyond")  # the predicted model of the cell comes first
    r2 = CliRunner().invoke(app, args)
    assert r2.exit_code == 0 and f"{len(data['records'])}/{len(data['records'])} languages already in" in r2.output


def test_cli_bad_input(tmp_path):
    r = CliRunner().invoke(app, ["sweep", "--out", str(tmp_path), "--profile", "gpu", "--states", "2"])
    assert r.exit_code != 0 and "profile" in r.output
    r = CliRunner().invoke(app, ["sweep", "--out", str(tmp_path), "--overrides", "[1]", "--states", "2"])
    assert r.exit_code == 2


def test_python_api_sweep(tmp_path):
    import langclass

    out = langclass.sweep(2, 2, per_cell=1, out=str(tmp_path), overrides=TINY)
    assert out["records"] and (tmp_path / "sweep.md").exists()
    assert set(out["aggregate"]["cells"]) == set(out["cells"])


def test_cancel_between_languages_keeps_the_finished_ones(tmp_path):
    from langclass.models.experiments.sweep import SweepCancelled

    langs = [_lang("mod", [0]), _lang("mod", [1])]
    done = []
    with pytest.raises(SweepCancelled) as err:
        run_sweep(langs, _spec_for, tmp_path, overrides=TINY, progress=lambda d, t, rec: done.append(rec),
                  should_cancel=lambda: len(done) > 1)  # True once the first language finished
    part = err.value.partial
    assert part["complete"] is False and part["languages"] == 2
    assert [r["fingerprint"] for r in part["records"]] == [langs[0][1].fingerprint()]
    again = run_sweep(langs, _spec_for, tmp_path, overrides=TINY)
    assert again["resumed"] == 1 and again["records"][0] == part["records"][0]
