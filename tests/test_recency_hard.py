"""Trainable recency heads and trained unique hard attention (issue 33, items 1, 2 and the strict sweep):
the slope stays bounded, the capped slope is the exact recency construction, the straight-through
estimator's forward is exactly hard attention with a non-zero gradient, the spec names, predictions
per cell, the catalogue and the portable export."""

from __future__ import annotations

import json

import pytest
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError
from langclass.core.classification.analysis import analyze
from langclass.core.precision.encoding_choice import encoding_catalogue
from langclass.core.precision.encoding_families import attention_of
from langclass.models.nn.attention import MultiHeadAttention, grid_scores, hard_attention_weights, straight_through_hard, visibility
from langclass.models.nn.encodings import make_encoding
from langclass.models.nn.recency import default_slope_max
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig


def _dfa(rows, accepting, alphabet=("a", "b")) -> DFA:
    return DFA.from_table(list(alphabet), rows, 0, accepting)


# a sample language of each strict cell (N = 3, K = 2; the sweep's census)
Y = _dfa([[1, 0], [2, 0], [2, 0]], [2])          # LTL[P,Y]: the last two letters are aa … (a suffix test)
SF = _dfa([[0, 1], [0, 2], [1, 2]], [0])         # star-free, outside LTL[P,Y,MOD]
FO_MOD = _dfa([[0, 1], [0, 2], [0, 0]], [1, 2])  # FO[<,MOD] \ (star-free ∪ LTL[P,Y,MOD])
Y_MOD = _dfa([[1, 1], [0, 2], [1, 1]], [0])      # LTL[P,Y,MOD] \ (LTL[P,Y] ∪ LTL[P,MOD])


def test_default_cap_reaches_f_large():
    assert default_slope_max("float32") == 256.0 and default_slope_max("float64") == 2048.0
    enc = make_encoding("recency", n_heads=4, d_head=8)
    assert enc.heads == 2 and torch.allclose(enc.slopes().detach(), torch.tensor([8.0, 8.0, 0.0, 0.0]))
    assert make_encoding(**enc.spec()).spec() == enc.spec()


def test_slopes_stay_within_the_bounds_after_steps():
    enc = make_encoding("recency", n_heads=4, d_head=8, heads=3)
    for sign, steps in ((-1.0, 3), (1.0, 40)):  # push towards the cap, then hard towards 0
        opt = torch.optim.Adam(enc.parameters(), lr=2.0)
        for _ in range(steps):
            opt.zero_grad()
            (sign * enc.slopes().sum()).backward()
            opt.step()
            s = enc.slopes().detach()
            assert bool(((s >= 0) & (s <= enc.slope_max)).all()) and s[3].item() == 0.0  # the NoPE head stays 0
        if sign < 0:
            assert bool((s[:3] > 104).all())  # above f_large(float32): the exact construction is reachable
    assert bool((s[:3] < 1e-3).all())


def test_the_capped_slope_puts_weight_exactly_one_on_the_previous_position():
    enc = make_encoding("recency", n_heads=2, d_head=4, heads=1)
    with torch.no_grad():
        enc.theta.fill_(40.0)  # sigmoid rounds to 1 in float32: s = s_max = 256 exactly
    assert enc.slopes()[0].item() == 256.0
    attn = MultiHeadAttention(8, 2, 4)
    with torch.no_grad():  # zero content scores
        attn.q_proj.weight.zero_(), attn.q_proj.bias.zero_(), attn.k_proj.weight.zero_(), attn.k_proj.bias.zero_()
    T = 300
    x = torch.randn(1, T, 8)
    _, trace = attn(x, enc.position_ids(T), None, enc, return_trace=True)
    w = trace.weights[0, 0]  # [T, T], the recency head
    expected = torch.zeros(T, T)
    expected[torch.arange(1, T), torch.arange(0, T - 1)] = 1.0
    assert torch.equal(w, expected)
    assert not torch.equal(trace.weights[0, 1], expected)  # the NoPE head averages


def test_periodic_variant_rotates_and_refuses_a_bad_cap():
    enc = make_encoding("recency_periodic", n_heads=2, d_head=8, periods=3)
    assert enc.rope is not None and enc.rope.periods == (3, 3)
    q = torch.randn(1, 2, 5, 8)
    rq, _ = enc.rotate(q, q, enc.position_ids(5))
    assert torch.equal(rq[:, :, 0], q[:, :, 0]) and not torch.equal(rq[:, :, 1], q[:, :, 1])
    with pytest.raises(InputError) as err:
        make_encoding("recency", n_heads=2, d_head=8, slope_init=300.0)
    assert err.value.field == "encoding.slope_init"
    with pytest.raises(InputError) as err:
        make_encoding("recency", n_heads=2, d_head=8, heads=3)
    assert err.value.field == "encoding.heads"


def test_straight_through_forward_is_exactly_hard_and_its_gradient_is_not_zero():
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 7, 7)
    scores[0, 0, 5, 1] = scores[0, 0, 5, 3] = 9.0  # a tie: rightmost wins
    scores.requires_grad_(True)
    vis = visibility(7, "strict", None)
    w = straight_through_hard(scores, vis, "rightmost")
    hard = hard_attention_weights(scores.detach(), vis, "rightmost")
    assert torch.equal(w.detach(), hard) and w[0, 0, 5, 3].item() == 1.0
    (w * torch.randn_like(w)).sum().backward()
    assert scores.grad is not None and scores.grad.abs().sum().item() > 0


def test_the_score_grid_makes_near_ties_ties_and_keeps_the_forward_hard():
    scores = torch.tensor([[[0.0, 0.0, 0.0], [2.2, 0.0, 0.0], [2.3, 1.9, 0.0]]], requires_grad=True)  # [1, 3, 3]
    vis = visibility(3, "strict", None)[0]
    w = straight_through_hard(scores, vis, "rightmost", grid=1.0)
    assert torch.equal(w.detach(), hard_attention_weights(grid_scores(scores.detach(), 1.0), vis, "rightmost"))
    assert w[0, 2].tolist() == [0.0, 1.0, 0.0]  # 2.3 and 1.9 both round to 2: the rightmost wins
    assert straight_through_hard(scores, vis, "rightmost")[0, 2].tolist() == [1.0, 0.0, 0.0]  # exact scores: 2.3
    w.sum().backward()
    assert scores.grad is not None
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, attention="hard", score_grid=1.0)
    assert RecognizerConfig.from_dict(cfg.to_dict()).score_grid == 1.0
    assert "score_grid" not in RecognizerConfig(alphabet=("a", "b")).to_dict()  # digests of older models unchanged
    with pytest.raises(InputError) as err:
        RecognizerConfig(alphabet=("a", "b"), score_grid=1.0)  # soft attention: no grid
    assert err.value.field == "model.score_grid"


def test_a_hard_recognizer_trains_through_the_estimator_and_evaluates_hard():
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, attention="hard")
    m = Recognizer(cfg)
    logits = m.logits_for(["ab", "bba"])
    b = m.vocab.batch(["ab", "bba"])
    out = m(b.ids, b.valid, b.eos_index)
    assert torch.equal(out.detach().reshape(-1), logits.reshape(-1))  # the training forward = the exact hard forward
    out.sum().backward()
    assert m.layers[0].attn.q_proj.weight.grad.abs().sum().item() > 0


def test_attention_of_names():
    assert attention_of("hard_nope") == ("hard", "nope")
    assert attention_of("hard_mod_onehot") == ("hard", "mod_onehot")
    assert attention_of("recency") == ("soft", "recency")
    with pytest.raises(InputError):
        attention_of("hard_rope")


def test_specs_accept_the_new_models_and_name_bad_fields():
    from langclass.models.experiments.experiment import validate_spec

    lang = Y.to_canonical_dict()
    norm = validate_spec({"language": lang, "encodings": ["recency", "hard_nope", {"name": "recency_periodic", "params": {"periods": 2}},
                                                          {"name": "hard_mod_onehot", "params": {"period": 2}}]})
    cfgs = norm["model_configs"]
    assert cfgs["hard_nope"].attention == "hard" and cfgs["hard_nope"].tie == "rightmost" and cfgs["hard_nope"].mask == "strict"
    assert cfgs["hard_nope"].score_grid == 1.0 and cfgs["recency"].score_grid is None
    assert cfgs["recency"].attention == "soft" and cfgs["recency"].encoding["name"] == "recency"
    for bad, field in ((["hard_rope"], "encodings[0]"),
                       ([{"name": "recency", "params": {"slope_init": 1000.0}}], "encodings[0].params.slope_init")):
        with pytest.raises(InputError) as err:
            validate_spec({"language": lang, "encodings": bad})
        assert err.value.field == field


def _prediction(dfa: DFA, name: str, params=None):
    from langclass.app.usecases.experiments import predicted_sufficient

    return predicted_sufficient(name, params or {}, analyze(dfa).to_dict())[0]


def test_predictions_per_cell():
    from langclass.app.usecases.experiments import least_modulus, y_mod_period

    assert _prediction(Y, "recency") is True and _prediction(Y, "nope") is False
    assert _prediction(SF, "hard_nope") is True and _prediction(SF, "recency") is False and _prediction(SF, "nope") is False
    a = analyze(Y_MOD).to_dict()
    m = y_mod_period(a)
    assert m and m > 1
    assert _prediction(Y_MOD, "recency_periodic", {"periods": m}) is True
    assert _prediction(Y_MOD, "recency_periodic", {"periods": m + 1}) is False
    assert _prediction(Y_MOD, "recency") is False
    k = least_modulus(analyze(FO_MOD).to_dict())
    assert k and k > 1
    assert _prediction(FO_MOD, "hard_mod_onehot", {"period": k}) is True
    assert _prediction(FO_MOD, "hard_mod_onehot", {"period": k + 1}) is False
    assert _prediction(FO_MOD, "hard_nope") is False


def test_the_train_spec_fills_the_least_period_and_modulus():
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec

    for dfa, name, key in ((Y_MOD, "recency_periodic", "periods"), (FO_MOD, "hard_mod_onehot", "period")):
        a = analyze(dfa).to_dict()
        spec = build_train_spec(ExperimentRequest(kind="train", encodings=[name]), {"dfa": dfa.to_canonical_dict(), "analysis": a})
        (enc,) = spec["encodings"]
        assert enc["params"][key] > 1 and spec["prediction"]["sufficient"] == [enc["label"]]


def test_every_strict_cell_trains_a_predicted_model():
    from langclass.app.usecases.sweep import train_spec_for
    from langclass.core.census.sample import CELL_KEYS, cell_of

    for dfa, cell, first in ((Y, "y", "recency"), (SF, "sf", "hard_nope"), (FO_MOD, "fo_mod", "hard_mod_onehot"),
                             (Y_MOD, "y_mod", "recency_periodic")):
        a = analyze(dfa).to_dict()
        assert cell_of({k: a["classes"][k]["member"] for k in CELL_KEYS}) == cell
        spec = train_spec_for(None)(dfa)  # the sweep's default: the cell's encodings
        assert spec["encodings"][0]["name"] == first
        assert spec["prediction"]["sufficient"] == [spec["encodings"][0]["label"]]


def test_catalogue_names_the_trainable_models():
    cat = encoding_catalogue()
    trains = {(e["encoding"], e["attention"], e.get("mask")): e["train"] for e in cat}
    assert trains[("recency", "soft", "strict")]["name"] == "recency"
    assert trains[("recency_periodic", "soft", "strict")]["name"] == "recency_periodic"
    assert trains[("nope", "hard", "strict")]["name"] == "hard_nope"
    assert trains[("mod_onehot", "hard", "strict")]["name"] == "hard_mod_onehot"
    assert trains[("nope", "hard", "nonstrict")] is None
    crasp = next(e for e in cat if e["class"] == "crasp")
    assert crasp["train"] == {"name": "nope", "params": {}} and crasp["train_setting"] == "causal"
    assert {e["train_setting"] for e in cat if e["train"] is not None and e["class"] != "crasp"} == {"strict"}
    assert all(e["train_setting"] is None for e in cat if e["train"] is None)
    from langclass.models.experiments.experiment import validate_spec  # pasted into a spec as is, it validates

    validate_spec({"language": {"alphabet": ["a", "b"], "initial": 0, "accepting": [0], "transitions": [[0, 1], [1, 1]]},
                   "profile": "quick", "setting": crasp["train_setting"], "encodings": [crasp["train"]]})
    # every entry pasted into a train job on a stored language: the period comes from the language, never a fixed 2
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec
    from langclass.core.classification.analysis import analyze

    aaa = DFA.from_table(["a", "b"], [[1, 3], [2, 3], [0, 3], [3, 3]], 0, [0])  # (aaa)* over {a, b}
    stored = {"dfa": aaa.to_canonical_dict(), "analysis": analyze(aaa).to_dict()}
    for e in cat:
        if e["train"] is None:
            continue
        spec = build_train_spec(ExperimentRequest(kind="train", encodings=[e["train"]], setting=e["train_setting"]), stored)
        params = spec["encodings"][0].get("params") or {}
        periods = params.get("periods", params.get("period"))
        if periods is not None:  # the language's own period, 3
            assert set(periods if isinstance(periods, list) else [periods]) == {3}, (e["encoding"], params)


def test_portable_export_of_recency_periodic_rope_and_score_grid(tmp_path):
    from langclass.models.portable.export import save_model as export_model
    from langclass.models.portable.load import load_model

    words = ["", "ab", "babba", "aaab"]
    for name, cfg in {"rec": dict(d_model=8, encoding={"name": "recency"}),
                      "recp": dict(d_model=16, encoding={"name": "recency_periodic", "periods": 2}),
                      "hard": dict(d_model=8, attention="hard", score_grid=1.0)}.items():
        m = Recognizer(RecognizerConfig(alphabet=("a", "b"), n_heads=2, n_layers=1, **cfg)).eval()
        export_model(m, tmp_path / name)
        loaded = load_model(tmp_path / name)  # the runner of the saved folder; bit for bit: tests/test_portable_trained.py
        assert torch.allclose(loaded.logits(words).double(), m.logits_for(words).double(), atol=1e-5)
    config = json.loads((tmp_path / "recp" / "config.json").read_text())
    enc = config["encodings"][0]
    assert enc["family"] == "recency_periodic" and enc["kind"] == "rotary" and len(enc["slopes"]) == 2 and enc["periods"]
    assert json.loads((tmp_path / "hard" / "config.json").read_text())["layers"][0]["attention"]["score_grid"] == 1.0
