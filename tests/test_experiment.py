"""Tests of run_experiment (langclass.models.experiments.experiment): spec checks, result shape, Table 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import DfaFormatError, InputError, LimitExceeded
from langclass.models.training.evaluate import longest_perfect_length
from langclass.core.ingest.source import DfaSource
from langclass.core.ingest.source import parse_language as parse_source
from langclass.models.experiments.experiment import (
    PROFILES,
    ExperimentCancelled,
    format_results,
    run_experiment,
    validate_spec,
)

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a, b}
AB = DFA.from_table(["a", "b"], [[1, 2], [2, 0], [2, 2]], 0, [0])  # (ab)* over {a, b}

TINY = {"n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32, "max_steps": 4, "batch_size": 8,
        "test_lengths": [41, 44], "eval_per_length": 16, "train_lengths": [1, 12]}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def spec(**kw):
    base = {"language": AA.to_canonical_dict(), "encodings": ["nope", {"name": "rope_periodic", "params": {"periods": 2}}],
            "profile": "quick", "seeds": [0], "overrides": dict(TINY), "prediction": {"sufficient": ["rope_periodic"]}}
    base.update(kw)
    return base


# ----------------------------------------------------------------------------- spec checks
def test_validate_spec_resolves_profile_and_overrides():
    norm = validate_spec(spec())
    assert norm["settings"]["test_lengths"] == [41, 42, 43, 44]
    assert norm["learning_rates"] == PROFILES["quick"]["learning_rates"]
    assert [e.label for e in norm["encodings"]] == ["nope", "rope_periodic(periods=2)"]
    assert norm["dfa"].fingerprint() == AA.fingerprint()
    assert set(norm["model_configs"]) == {"nope", "rope_periodic(periods=2)"}
    paper = validate_spec({"language": AA.to_canonical_dict(), "encodings": ["nope"], "profile": "paper"})
    s = paper["settings"]
    assert (s["n_layers"], s["d_model"], s["n_heads"], s["batch_size"], s["max_steps"]) == (5, 64, 8, 128, 1_000_000)
    assert s["test_lengths"][0] == 41 and s["test_lengths"][-1] == 500 and len(s["test_lengths"]) == 460
    assert paper["seeds"] == [0, 1, 2, 3, 4] and paper["learning_rates"] == [1e-4, 3e-4, 5e-4]


@pytest.mark.parametrize(
    "change, error, field",
    [
        ({"profile": "huge"}, InputError, "profile"),
        ({"encodings": []}, InputError, "encodings"),
        ({"encodings": [{"name": "rope_periodic", "params": {"periods": 0}}]}, InputError, "encodings[0]"),
        ({"encodings": ["warp_drive"]}, InputError, "encodings[0]"),
        ({"seeds": [-1]}, InputError, "seeds"),
        ({"learning_rates": [2.0]}, InputError, "learning_rates"),
        ({"overrides": {"max_steps": 0}}, InputError, "overrides.max_steps"),
        ({"overrides": {"bogus": 1}}, InputError, "overrides.bogus"),
        ({"overrides": {"test_lengths": [50, 41]}}, InputError, "overrides.test_lengths"),
        ({"unknown_key": 1}, InputError, "unknown_key"),
        ({"language": {"alphabet": ["a"], "transitions": [[3]], "initial": 0, "accepting": []}}, DfaFormatError, "language.transitions"),
        ({"seeds": list(range(300))}, LimitExceeded, "seeds"),
        ({"overrides": {"test_lengths": [41, 20_000]}}, LimitExceeded, "overrides.test_lengths"),
    ],
)
def test_bad_specs_name_the_field(change, error, field):
    with pytest.raises(error) as e:
        validate_spec(spec(**change))
    assert e.value.field is not None and e.value.field.startswith(field)


def test_parse_language_forms_agree():
    def parse_language(data):  # how a train spec's "language" is read
        return parse_source(DfaSource(data, field="language")).dfa

    canon = parse_language(AB.to_canonical_dict())
    assert canon.fingerprint() == AB.fingerprint()
    assert parse_language(json.dumps(AB.to_canonical_dict())).fingerprint() == AB.fingerprint()
    named = {"alphabet": ["a", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["s"],
             "transitions": {"s": {"a": "t"}, "t": {"b": "s"}}}  # partial: missing edges go to a sink
    assert parse_language(named).fingerprint() == AB.fingerprint()


# ----------------------------------------------------------------------------- running
def test_run_experiment_result_shape_progress_and_reproducibility():
    events = []
    res = run_experiment(spec(seeds=[0, 1]), progress=events.append)
    json.dumps(res)  # JSON-ready
    assert res["complete"] and len(res["runs"]) == 4
    assert res["test_lengths"] == [41, 42, 43, 44] and res["longest_tested_length"] == 44
    assert res["code_version"] and res["language"]["fingerprint"] == AA.fingerprint()
    for r in res["runs"]:
        assert set(r["accuracy_by_length"]) == {"41", "42", "43", "44"}
        assert r["longest_perfect_length"] == longest_perfect_length(r["accuracy_by_length"])
        assert r["reached_longest"] == (r["longest_perfect_length"] == 44)
        assert r["accuracy"] == pytest.approx(np.mean(list(r["accuracy_by_length"].values())))
        assert r["steps"] <= 4 and len(r["manifest_digest"]) == 64
    periodic = [r for r in res["runs"] if r["encoding_name"] == "rope_periodic"]
    assert periodic[0]["manifest"]["family"] == "rope_periodic"
    assert periodic[0]["manifest_digest"] != res["runs"][0]["manifest_digest"]
    # summaries are computed from the runs
    for label, s in res["summary"].items():
        rs = [r for r in res["runs"] if r["encoding"] == label]
        assert s["runs"] == 2
        assert s["accuracy"]["max"] == max(r["accuracy"] for r in rs)
        assert s["longest_perfect_length"]["mean"] == pytest.approx(np.mean([r["longest_perfect_length"] for r in rs]))
        assert s["longest_perfect_length"]["std"] == pytest.approx(np.std([r["longest_perfect_length"] for r in rs]))
    v = res["verdict"]["per_encoding"]
    assert v["nope"]["status"] == "measured" and not v["nope"]["predicted_sufficient"]
    assert v["rope_periodic(periods=2)"]["predicted_sufficient"]
    assert v["rope_periodic(periods=2)"]["status"] in ("confirmed", "not_confirmed")
    # progress: train steps, per-run evaluation, and a final "done"
    phases = [e["phase"] for e in events]
    assert "train" in phases and "evaluate" in phases and phases[-1] == "done"
    assert all({"run", "runs", "step", "total"} <= set(e) for e in events)
    assert events[-1]["last_evaluation"]["encoding"] == "rope_periodic(periods=2)"
    # reproducible from the seeds
    again = run_experiment(spec(seeds=[0, 1]))
    strip = lambda rr: [{k: v for k, v in r.items() if not k.endswith("wall_s")} for r in rr]
    assert strip(again["runs"]) == strip(res["runs"])
    text = format_results(res)
    assert "N*" in text and "rope_periodic(periods=2)" in text and "test lengths 41..44" in text
    assert f"attention length scale {res['settings']['length_scale']}," in text


def test_report_and_plot_title_say_the_attention_length_scale():
    """paper-lite's "log" can be overridden: the CLI report and the plot's title say which was used."""
    from langclass.app.usecases.plot import accuracy_figure

    result = {"profile": "paper-lite", "settings": {"length_scale": "none", "train_lengths": [1, 40]}, "test_lengths": [41],
              "language": {"fingerprint": "ab" * 32, "alphabet": ["a", "b"]},
              "runs": [{"encoding": "nope", "seed": 0, "learning_rate": 1e-3, "steps": 1,
                        "accuracy_by_length": {"41": 1.0}, "longest_perfect_length": 41}]}
    assert "profile paper-lite, attention length scale none," in format_results(result)
    fig = accuracy_figure(result)
    assert fig.axes[0].get_title().endswith("profile paper-lite, length scale none")
    assert "length scale log" in accuracy_figure({**result, "settings": {"length_scale": "log"}}).axes[0].get_title()


def test_cancel_returns_partial_results():
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 12  # the first run (4 steps + evaluation) finishes, the second does not

    with pytest.raises(ExperimentCancelled) as e:
        run_experiment(spec(batched=False), should_cancel=cancel)
    partial = e.value.partial
    assert partial["complete"] is False and len(partial["runs"]) == 1
    json.dumps(partial)
    # batched (the default), both runs train in one group: a cancel inside it leaves no finished run
    calls["n"] = 6  # 4 polls while drawing the test strings, then the group's 4 steps: stop at the 3rd
    with pytest.raises(ExperimentCancelled) as e:
        run_experiment(spec(), should_cancel=cancel)
    assert e.value.partial["complete"] is False and e.value.partial["runs"] == []


def test_table2_periodic_rope_generalizes_and_nope_does_not():
    """Disentangling the Expressivity of RoPE, Table 2 on (aa)* over {a, b} (quick profile, seeded,
    shortened test grid): periodic RoPE (period 2) reaches the longest tested length, NoPE does not."""
    res = run_experiment({
        "language": AA.to_canonical_dict(),
        "encodings": ["nope", {"name": "rope_periodic", "params": {"periods": 2}}],
        "profile": "quick",
        "seeds": [0],
        "overrides": {"max_steps": 400, "test_lengths": {"min": 41, "max": 120, "step": 1}, "eval_per_length": 32},
        "prediction": {"sufficient": ["rope_periodic"]},
    })
    by = {r["encoding_name"]: r for r in res["runs"]}
    assert by["rope_periodic"]["longest_perfect_length"] == 120
    assert res["verdict"]["per_encoding"]["rope_periodic(periods=2)"]["status"] == "confirmed"
    assert by["nope"]["longest_perfect_length"] < 120
    assert by["nope"]["accuracy"] < 1.0


# ----------------------------------------------------------------------------- verdicts rest on unseen lengths
def test_unseen_lengths_of_one_class_only_give_not_tested():
    """(aa)* tested only at odd lengths 41 and 43 (no word of L there, every test string a reject): a
    constant 'reject' is perfect, so no verdict is drawn — 'not_tested', never 'confirmed'; with an even
    length among them the verdict stands."""
    odd = run_experiment(spec(overrides={**TINY, "test_lengths": {"lengths": [41, 43]}, "max_steps": 1}))
    v = odd["verdict"]
    assert v["length_generalization_tested"] is False and v["unseen_two_class_lengths"] == 0
    for per in v["per_encoding"].values():
        assert per["status"] == "not_tested" and "one class only" in per["reason"]
    assert "a constant answer is perfect there" in format_results(odd)
    even = run_experiment(spec(overrides={**TINY, "test_lengths": {"lengths": [41, 42]}, "max_steps": 1}))
    assert even["verdict"]["length_generalization_tested"] is True and even["verdict"]["unseen_two_class_lengths"] == 1
    assert {p["status"] for p in even["verdict"]["per_encoding"].values()} <= {"confirmed", "not_confirmed", "measured"}


def test_no_unseen_test_length_gives_not_tested():
    """Test lengths inside the training range (train 1–12, test 5–12): however perfect the runs,
    nothing was tested beyond training, so no encoding is 'confirmed'."""
    res = run_experiment(spec(encodings=["rope_periodic"], overrides={**TINY, "test_lengths": [5, 12], "max_steps": 1}))
    v = res["verdict"]
    assert v["length_generalization_tested"] is False and v["unseen_test_lengths"] == 0
    assert v["longest_training_length"] == 12
    (per,) = v["per_encoding"].values()
    assert per["status"] == "not_tested" and "exceeds the longest training length 12" in per["reason"]
    assert "not tested" in format_results(res)


def test_verdict_statuses_follow_the_unseen_lengths():
    """_verdict on fixed summaries: the same perfect runs are 'confirmed' only when some test length
    lies beyond training."""
    from langclass.models.experiments.experiment_report import GridEncoding as _Encoding, verdict as _verdict

    enc = [_Encoding(label="rope_periodic", name="rope_periodic", params={})]
    summary = {"rope_periodic": {"runs": 1, "reached_longest": 1, "accuracy": {"max": 1.0},
                                 "longest_perfect_length": {"max": 40}}}
    pred = {"sufficient": ["rope_periodic"]}
    inside = _verdict(summary, enc, pred, 40, list(range(21, 41)), 40)
    beyond = _verdict(summary, enc, pred, 40, list(range(21, 41)), 20)
    assert inside["per_encoding"]["rope_periodic"]["status"] == "not_tested"
    assert beyond["per_encoding"]["rope_periodic"]["status"] == "confirmed" and beyond["unseen_test_lengths"] == 20
