"""The causal training setting (docs/training.md "The causal setting"): the spec fields ``setting`` /
``task`` (422s naming the field), the recognizer's mask and readout (the output at a position does
not depend on later tokens), state prediction (shapes, loss, accuracy), the learned absolute
encoding, the causal cells of the sweep (a partition, tested on every language of ≤ 3 states over
two letters) and the CLI's ``--setting``."""

from __future__ import annotations

import pytest
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.census.sample import (CAUSAL_CELL_KEYS, CAUSAL_CELLS, CELLS, PARTITIONS, cell_conditions, cell_of,
                                          census_languages, stratified_sample)
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.nn.tokens import BOS, NUM_SPECIAL, Vocabulary
from langclass.models.training.data import LanguageSampler
from langclass.models.training.specs import parse_train_spec
from langclass.models.training.train import TrainConfig, encode_batch, make_state_check, state_targets, train_recognizer

# a* b* over {a, b}: star-free, in C-RASP (accept iff no b is followed by an a); 3 states
A_STAR_B_STAR = DFA.from_table(["a", "b"], [[0, 1], [2, 1], [2, 2]], 0, [0, 1])
LANG_JSON = {"alphabet": ["a", "b"], "initial": 0, "accepting": [0, 1], "transitions": [[0, 1], [2, 1], [2, 2]]}


def _causal_config(**kw) -> RecognizerConfig:
    base = dict(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, d_ff=32, mask="nonstrict", readout="last")
    return RecognizerConfig(**{**base, **kw})


# --------------------------------------------------------------------------- spec
def test_spec_setting_and_task_default_and_parse():
    s = parse_train_spec({"language": LANG_JSON, "encodings": ["nope"]})
    assert (s.setting, s.task) == ("strict", "recognition")
    s = parse_train_spec({"language": LANG_JSON, "encodings": ["nope"], "setting": "causal", "task": "state_prediction"})
    assert (s.setting, s.task) == ("causal", "state_prediction")


@pytest.mark.parametrize("body, field", [
    ({"setting": "decoder"}, "setting"),
    ({"setting": 1}, "setting"),
    ({"task": "parse"}, "task"),
    ({"task": "state_prediction"}, "task"),  # strict setting: refused
    ({"setting": "strict", "task": "state_prediction"}, "task"),
])
def test_spec_refusals_name_the_field(body, field):
    with pytest.raises(InputError) as err:
        parse_train_spec({"language": LANG_JSON, "encodings": ["nope"], **body})
    assert err.value.field == field


def test_api_train_job_refuses_state_prediction_outside_causal():
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec

    body = ExperimentRequest(kind="train", encodings=["nope"], task="state_prediction")
    with pytest.raises(InputError) as err:
        build_train_spec(body, {"dfa": LANG_JSON, "analysis": {}})
    assert err.value.field == "task"
    with pytest.raises(InputError) as err:
        build_train_spec(ExperimentRequest(kind="train", encodings=["nope"], setting="fixed"), {"dfa": LANG_JSON, "analysis": {}})
    assert err.value.field == "setting"


def test_causal_prediction_is_nope_on_crasp_only():
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec
    from langclass.core.classification.analysis import analyze

    analysis = analyze(A_STAR_B_STAR).to_dict()
    assert analysis["classes"]["crasp"]["member"] is True
    spec = build_train_spec(ExperimentRequest(kind="train", encodings=["nope", "learned", "rope", "alibi"], setting="causal"),
                            {"dfa": LANG_JSON, "analysis": analysis})
    assert spec["setting"] == "causal" and spec["prediction"]["sufficient"] == ["nope"]
    assert "Formal Framework" in spec["prediction"]["per_encoding"]["alibi"]["reason"]
    parity = DFA.from_table(["a", "b"], [[1, 0], [0, 1]], 0, [0])  # even number of a's: not C-RASP
    spec = build_train_spec(ExperimentRequest(kind="train", encodings=["nope"], setting="causal"),
                            {"dfa": parity.to_canonical_dict(), "analysis": analyze(parity).to_dict()})
    assert spec["prediction"]["sufficient"] == []


# --------------------------------------------------------------------------- model
def test_causal_framing_and_readout_index():
    v = Vocabulary(("a", "b"))
    b = v.batch(["ab", ""], eos=False)
    assert b.ids.tolist() == [[BOS, NUM_SPECIAL, NUM_SPECIAL + 1], [BOS, 0, 0]]
    assert b.eos_index.tolist() == [2, 0]  # the last letter; BOS for the empty word
    ids, valid, last = encode_batch([(0, 1), ()], torch.device("cpu"), eos=False)
    assert torch.equal(ids, b.ids) and last.tolist() == [2, 0]


@pytest.mark.parametrize("encoding", [{"name": "nope"}, {"name": "learned", "max_positions": 12}, {"name": "rope"}, {"name": "alibi"}])
def test_output_at_a_position_does_not_depend_on_later_tokens(encoding):
    torch.manual_seed(0)
    m = Recognizer(_causal_config(encoding=encoding, outputs=3)).eval()
    ids = torch.tensor([[BOS, 3, 4, 4, 3, 3, 4, 3]])
    out = m.position_logits(ids)  # [1, 8, 3]
    for t in range(1, ids.shape[1] - 1):
        changed = ids.clone()
        changed[0, t + 1:] = 7 - changed[0, t + 1:]  # swap a <-> b after position t
        again = m.position_logits(changed)
        assert torch.equal(out[0, : t + 1], again[0, : t + 1])
        assert not torch.equal(out[0, t + 1:], again[0, t + 1:])  # the later ones do depend on them
    # the non-strict mask: position t sees its own token (the strict mask would not)
    changed = ids.clone()
    changed[0, 3] = 3
    assert not torch.equal(m.position_logits(changed)[0, 3], out[0, 3])


def test_readout_last_reads_the_last_position():
    torch.manual_seed(1)
    m = Recognizer(_causal_config()).eval()
    words = ["abba", "a", ""]
    logits = m.logits_for(words)
    per_pos = m.position_logits(m.vocab.batch(words, eos=False).ids)[..., 0]
    assert torch.allclose(logits, torch.stack([per_pos[0, 4], per_pos[1, 1], per_pos[2, 0]]))
    assert "readout" not in RecognizerConfig(alphabet=("a",)).to_dict()  # defaults keep old digests
    assert _causal_config().to_dict()["readout"] == "last"
    with pytest.raises(InputError) as err:
        _causal_config(readout="middle")
    assert err.value.field == "model.readout"


def test_learned_table_refuses_positions_without_a_row():
    m = Recognizer(_causal_config(encoding={"name": "learned", "max_positions": 4}))
    m.logits_for(["aab"])  # BOS + 3 letters = positions 0..3
    with pytest.raises(LimitExceeded) as err:
        m.logits_for(["aabb"])
    assert err.value.limit == "max_positions"


# --------------------------------------------------------------------------- state prediction
def test_state_targets_and_check_shapes():
    sampler = LanguageSampler(A_STAR_B_STAR, 10)
    t = state_targets(sampler, [(0, 1, 0), ()], 4)
    q = sampler.dfa
    path = [q.initial]
    for a in (0, 1, 0):
        path.append(int(q.transitions[path[-1], a]))
    assert t.tolist() == [path, [q.initial, -100, -100, -100]]
    torch.manual_seed(0)
    m = Recognizer(_causal_config(outputs=q.num_states))
    ids, valid, _ = encode_batch([(0, 1, 0), ()], torch.device("cpu"), eos=False)
    assert m.position_logits(ids, valid).shape == (2, 4, q.num_states)
    ok = make_state_check(m, sampler, torch.device("cpu"))([(0, 1, 0), (), (1,)])
    assert ok.shape == (3,) and ok.dtype == bool


TINY = {"max_steps": 300, "batch_size": 32, "n_layers": 2, "d_model": 16, "n_heads": 2, "d_ff": 32,
        "train_lengths": {"range": [1, 12]}, "test_lengths": {"range": [13, 20]}, "eval_per_length": 16, "patience": 30}


@pytest.mark.parametrize("task", ["recognition", "state_prediction"])
def test_a_tiny_causal_run_learns_a_crasp_language(task):
    from langclass.models.experiments.experiment import run_experiment

    r = run_experiment({"language": LANG_JSON, "encodings": ["nope"], "setting": "causal", "task": task, "seeds": [0],
                        "learning_rates": [3e-3], "overrides": TINY})
    run = r["runs"][0]
    assert (r["setting"], r["task"], run["setting"], run["task"]) == ("causal", task, "causal", task)
    assert run["accuracy"] >= 0.95, run["accuracy_by_length"]
    assert run["manifest"]["family"] == "nope"


def test_state_prediction_needs_a_state_head():
    sampler = LanguageSampler(A_STAR_B_STAR, 12)
    with pytest.raises(InputError) as err:  # a recognition head cannot train states
        train_recognizer(_causal_config(), TrainConfig(max_steps=1, device="cpu", train_lengths=(1, 8), task="state_prediction"), sampler)
    assert err.value.field == "task"
    with pytest.raises(InputError):
        TrainConfig(task="translation")


# --------------------------------------------------------------------------- sweep cells
@pytest.fixture(scope="module")
def n3_causal():
    return list(census_languages(3, 2, keys=CAUSAL_CELL_KEYS))


def test_causal_cells_partition_the_census_n3(n3_causal):
    assert len(n3_causal) == 1054
    seen = {c: 0 for c in CAUSAL_CELLS}
    for dfa, prof in n3_causal:
        conds = cell_conditions(prof, CAUSAL_CELLS)
        assert None not in conds.values(), dfa.to_canonical_dict()
        held = [c for c, v in conds.items() if v]
        assert len(held) == 1, (held, dfa.to_canonical_dict())
        assert cell_of(prof, CAUSAL_CELLS) == held[0]
        # each causal cell refines the strict cell it is named after
        assert held[0].rsplit("_crasp", 1)[0].removesuffix("_not") == cell_of(prof, CELLS)
        assert held[0].endswith("_not_crasp") != bool(prof["crasp"])
        seen[held[0]] += 1
    assert sum(seen.values()) == 1054
    assert seen["ltl_p_crasp"] > 0 and seen["mod_not_crasp"] > 0


def test_causal_sample_draws_from_the_causal_cells(n3_causal):
    s = stratified_sample(n3_causal, 2, 0, partition=CAUSAL_CELLS)
    assert set(s.languages) == set(CAUSAL_CELLS)
    for cell, items in s.languages.items():
        assert len(items) == min(2, s.counts[cell])
        assert all(cell_of(p, CAUSAL_CELLS) == cell for _d, p in items)
    assert PARTITIONS["causal"][0] is CAUSAL_CELLS
    with pytest.raises(InputError):
        stratified_sample(n3_causal, 1, 0, cells=["ltl_p"], partition=CAUSAL_CELLS)


# --------------------------------------------------------------------------- CLI
def test_cli_train_setting(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    res = CliRunner().invoke(app, ["train", "-r", "a*b*", "-a", "ab", "--task", "state_prediction", "-e", "nope", "--max-steps", "1"])
    assert res.exit_code == 2 and "[task]" in res.output
    res = CliRunner().invoke(app, ["train", "-r", "a*b*", "-a", "ab", "--setting", "sideways", "-e", "nope"])
    assert res.exit_code == 2 and "setting" in res.output
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["train", "-r", "a*b*", "-a", "ab", "--setting", "causal", "-e", "nope", "--max-steps", "2",
                                   "--test-lengths", "41,42", "--eval-per-length", "2", "--set", "d_model=8", "--set", "n_heads=2",
                                   "--set", "n_layers=1", "--save", str(out)])
    assert res.exit_code == 0, res.output
    import json

    assert json.loads(out.read_text())["runs"][0]["setting"] == "causal"


def test_cli_sweep_refuses_an_unknown_setting(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    res = CliRunner().invoke(app, ["sweep", "--setting", "diagonal", "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "setting" in res.output


def test_sweep_job_setting():
    from langclass.app.usecases.sweep_jobs import SweepRequest, build_sweep_spec
    from langclass.models.experiments.sweep import CAUSAL_SWEEP_ENCODINGS

    spec = build_sweep_spec(SweepRequest(setting="causal"))
    assert spec["setting"] == "causal" and spec["encodings"] == list(CAUSAL_SWEEP_ENCODINGS)
    assert spec["per_cell"] == 3 and spec["runs_bound"] == len(CAUSAL_CELLS) * 3 * 4  # the cpu profile's 3 per causal cell
    explicit = build_sweep_spec(SweepRequest(setting="causal", per_cell=10))  # a number given is taken as given
    assert explicit["per_cell"] == 10 and explicit["runs_bound"] == len(CAUSAL_CELLS) * 10 * 4
    with pytest.raises(InputError) as err:
        build_sweep_spec(SweepRequest(setting="causal", encodings=["nope", "rope_periodic"]))
    assert err.value.field == "encodings[1]"
    with pytest.raises(InputError) as err:
        build_sweep_spec(SweepRequest(encodings=["learned"]))  # not a strict-setting sweep encoding
    assert err.value.field == "encodings[0]"
    assert build_sweep_spec(SweepRequest())["setting"] == "strict"


def test_state_prediction_prediction_needs_every_state_language_in_crasp():
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec, state_languages_in_crasp

    ends_ab = DFA.from_table(["a", "b"], [[1, 0], [1, 2], [1, 0]], 0, [2])  # (a|b)*ab: the state "last letter a" needs the previous one
    assert state_languages_in_crasp(ends_ab.to_canonical_dict()) is False
    assert state_languages_in_crasp(LANG_JSON) is True
    body = ExperimentRequest(kind="train", encodings=["nope"], setting="causal", task="state_prediction")
    assert build_train_spec(body, {"dfa": LANG_JSON, "analysis": {}})["prediction"]["sufficient"] == ["nope"]
    assert build_train_spec(body, {"dfa": ends_ab.to_canonical_dict(), "analysis": {}})["prediction"]["sufficient"] == []


def test_portable_export_refuses_state_heads_and_exports_learned_tables(tmp_path):
    from langclass.models.portable.export import save_model
    from langclass.models.portable.load import load_model

    with pytest.raises(InputError) as err:
        save_model(Recognizer(_causal_config(outputs=3)), tmp_path / "a", {"kind": "test"})
    assert err.value.field == "model" and "state-prediction" in err.value.detail
    m = Recognizer(_causal_config(encoding={"name": "learned", "max_positions": 8})).eval()
    save_model(m, tmp_path / "b", {"kind": "test"})  # the rows travel as a tensor (tests/test_portable_trained.py: bit for bit)
    words = ["", "a", "ab", "babba", "abbaab"]
    assert torch.equal(load_model(tmp_path / "b").logits(words).float(), m.logits_for(words).float())


def test_sweep_both_runs_each_setting_into_its_own_directory(tmp_path, monkeypatch):
    import langclass.app.usecases.sweep as usecase
    from langclass.models.experiments.sweep_report import aggregate

    calls = []

    def fake_run(states, alphabet, per_cell, seed, out_dir, *, setting, progress=None, write=True, **kw):
        calls.append((setting, str(out_dir), sorted(kw)))
        cells, names, _keys = PARTITIONS[setting]
        encs = ["nope", "rope"]
        return {"states": states, "alphabet": alphabet, "profile": "cpu", "setting": setting, "cells": dict(names),
                "encodings": encs, "aggregate": aggregate([], list(cells), encs), "contradictions": [], "runs": 2, "wall_s": 1.0}

    monkeypatch.setattr(usecase, "run", fake_run)
    both = usecase.run_settings(3, 2, 1, 0, tmp_path, setting="both", encodings=["nope"])
    assert [c[0] for c in calls] == ["strict", "causal"]
    assert calls[0][1] == str(tmp_path / "strict") and calls[1][1] == str(tmp_path / "causal")
    assert "encodings" in calls[0][2] and "encodings" not in calls[1][2]  # the strict catalogue is not the causal one
    assert both["setting"] == "both" and both["runs"] == 4
    for name in ("sweep.json", "sweep.md", "sweep-strict.png", "sweep-causal.png"):
        assert (tmp_path / name).stat().st_size > 0
    md = (tmp_path / "sweep.md").read_text()
    assert "# Strict setting" in md and "# Causal setting" in md and "C-RASP" in md
    with pytest.raises(InputError) as err:
        usecase.run_settings(3, 2, 1, 0, tmp_path, setting="sideways")
    assert err.value.field == "setting"


def test_state_prediction_trains_everywhere_a_model_is_kept(tmp_path):
    """A state-prediction head has no portable form: the train job, ``--save DIR`` and
    ``return_model=True`` still finish (the run stands; only its download is missing, with the
    reason). Before, all three failed after training with ``invalid-spec`` / exit 2."""
    import json

    from typer.testing import CliRunner

    import langclass
    from langclass.app.cli.commands import app
    from langclass.app.usecases.model_jobs import run_train_job

    tiny = {"max_steps": 2, "batch_size": 4, "n_layers": 1, "d_model": 8, "n_heads": 2, "d_ff": 8,
            "train_lengths": {"range": [1, 4]}, "test_lengths": {"lengths": [5]}, "eval_per_length": 2}
    spec = {"language": LANG_JSON, "encodings": [{"name": "nope"}], "setting": "causal", "task": "state_prediction",
            "profile": "quick", "seeds": [0], "overrides": tiny}
    out = run_train_job(spec)
    assert out["runs"][0]["task"] == "state_prediction" and out.model_zip is None
    assert "state-prediction" in out["portable_model_refused"]["enc-nope"]
    res = CliRunner().invoke(app, ["train", "-r", "a*b*", "-a", "ab", "--setting", "causal", "--task", "state_prediction",
                                   "-e", "nope", "--max-steps", "2", "--test-lengths", "5", "--eval-per-length", "2",
                                   "--set", "d_model=8", "--set", "n_heads=2", "--set", "n_layers=1", "--save", str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    assert "not saved: enc-nope" in res.output
    assert json.loads((tmp_path / "m" / "result.json").read_text())["runs"][0]["task"] == "state_prediction"
    r = langclass.train("a*b*", alphabet="ab", encodings=["nope"], setting="causal", task="state_prediction",
                        overrides=tiny, return_model=True)
    assert r.model["nope"].config.outputs == 3 and not r.downloads  # the module, but no portable download


def test_a_learned_table_too_short_for_the_run_is_refused_before_training():
    from langclass.models.experiments.experiment import validate_spec

    spec = {"language": LANG_JSON, "profile": "quick", "setting": "causal",
            "encodings": [{"name": "nope"}, {"name": "learned", "params": {"max_positions": 10}}]}
    with pytest.raises(InputError) as err:
        validate_spec(spec)
    assert err.value.field == "encodings[1].params.max_positions" and "no row" in err.value.detail
    assert "as BOS w)" in err.value.detail  # the causal framing: no EOS row
    longest = max(validate_spec({**spec, "encodings": [{"name": "nope"}]})["settings"]["test_lengths"])
    spec["encodings"][1] = {"name": "learned", "params": {"max_positions": longest + 1}}  # BOS w: one row more is enough
    validate_spec(spec)
    spec["encodings"][1] = {"name": "learned"}  # sized to the run by default
    assert validate_spec(spec)["model_configs"]["learned"].encoding["max_positions"] >= 12
