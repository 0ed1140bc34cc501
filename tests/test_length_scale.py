"""Log-length attention scaling (``length_scale="log"``; *Overcoming a Theoretical Limitation of
Self-Attention*): the scores of query i times ln(keys i sees), the same function in the exact, the
fused (sdpa), the incremental (KV cache) and the grouped implementations."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
import torch

from langclass.models.nn.attention import MultiHeadAttention, length_factor, stable_softmax, visibility
from langclass.models.nn.encodings import ALiBi, RoPE
from langclass.models.experiments.experiment import validate_spec
from langclass.models.nn.grouped import GroupedRecognizers, group_key
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.training.train import encode_batch

AA = {"alphabet": ["a", "b"], "initial": 0, "accepting": [0], "transitions": [[1, 2], [0, 2], [2, 2]]}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def test_length_factor_is_log_of_visible_keys():
    vis = visibility(5, "strict", torch.tensor([[True] * 5, [True] * 3 + [False] * 2]))
    f = length_factor(vis, torch.float32)  # [2, 1, 5, 1]
    assert f.shape == (2, 1, 5, 1)
    expect0 = [0.0, 0.0, math.log(2), math.log(3), math.log(4)]  # BOS sees none, query 1 one key
    expect1 = [0.0, 0.0, math.log(2), math.log(3), math.log(3)]  # padding keys are not counted
    assert torch.allclose(f[0, 0, :, 0], torch.tensor(expect0)) and torch.allclose(f[1, 0, :, 0], torch.tensor(expect1))
    f_ns = length_factor(visibility(3, "nonstrict"), torch.float64)[0, 0, :, 0]
    assert torch.allclose(f_ns, torch.tensor([0.0, math.log(2), math.log(3)], dtype=torch.float64))


@pytest.mark.parametrize("mask", ["strict", "nonstrict"])
def test_layer_scales_every_score_row_and_sdpa_agrees(mask):
    torch.manual_seed(0)
    plain = MultiHeadAttention(8, 2, mask=mask)
    logged = MultiHeadAttention(8, 2, mask=mask, length_scale="log")
    fast = MultiHeadAttention(8, 2, mask=mask, length_scale="log", impl="sdpa")
    logged.load_state_dict(plain.state_dict())
    fast.load_state_dict(plain.state_dict())
    x = torch.randn(3, 7, 8)
    valid = torch.tensor([[True] * 7, [True] * 5 + [False] * 2, [True] * 2 + [False] * 5])
    pos = torch.arange(7).unsqueeze(0)
    for enc in (None, RoPE(4), ALiBi(2)):
        _, tr0 = plain(x, pos, valid, enc, return_trace=True)
        out, tr = logged(x, pos, valid, enc, return_trace=True)
        vis = visibility(7, mask, valid)
        n = vis.sum(-1, keepdim=True).clamp(min=1).float()
        # the definition: scores (after scale and bias) × ln(visible keys) per query row
        torch.testing.assert_close(tr.scores, tr0.scores * torch.log(n), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(tr.weights, stable_softmax(tr0.scores * torch.log(n), vis), rtol=1e-6, atol=1e-7)
        assert not torch.allclose(tr.weights, tr0.weights, atol=1e-3)
        torch.testing.assert_close(fast(x, pos, valid, enc)[valid], out[valid], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        MultiHeadAttention(8, 2, length_scale="sqrt")


def test_hard_attention_is_unchanged():
    torch.manual_seed(1)
    a = MultiHeadAttention(8, 2, attention="hard")
    b = MultiHeadAttention(8, 2, attention="hard", length_scale="log")
    b.load_state_dict(a.state_dict())
    x, pos = torch.randn(2, 9, 8), torch.arange(9).unsqueeze(0)
    assert torch.equal(a(x, pos, None, RoPE(4)), b(x, pos, None, RoPE(4)))


def test_kv_cache_decode_equals_forward():
    torch.manual_seed(2)
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, encoding={"name": "alibi"},
                           dtype="float64", length_scale="log")
    model = Recognizer(cfg).eval()
    ids = torch.tensor([[1, 3, 4, 3, 3, 4, 3, 2]])
    with torch.no_grad():
        full = model.final_norm(_states(model, ids))
        caches, outs = None, []
        for t in range(ids.shape[1]):
            s, caches = model.extend(ids[:, t:t + 1], caches)
            outs.append(s)
    assert torch.allclose(torch.cat(outs, dim=1), full, atol=1e-12, rtol=0)


def _states(model: Recognizer, ids: torch.Tensor) -> torch.Tensor:
    _, trace = model(ids, return_trace=True)
    return trace.states[-1]


def _models(length_scale: str, n_layers: int) -> list[Recognizer]:
    out = []
    for i, e in enumerate([{"name": "nope"}, {"name": "rope_periodic", "periods": 2}, {"name": "alibi"}, {"name": "sinusoidal"}]):
        torch.manual_seed(i)
        out.append(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=n_layers, d_ff=32,
                                               encoding=e, length_scale=length_scale)))
    return out


@pytest.mark.parametrize("n_layers", [1, 2])
def test_grouped_equals_each_recognizer_with_log_scale(n_layers):
    """The grouped model (fused and bias paths, the last layer at EOS only) computes the scaled
    recognizer: logits and gradients, and they differ from the unscaled model's."""
    models = _models("log", n_layers)
    group = GroupedRecognizers(models)
    rng = random.Random(0)
    words = [tuple(rng.randrange(2) for _ in range(rng.randrange(0, 15))) for _ in range(24)]
    ids, valid, eos = encode_batch(words, torch.device("cpu"))
    ref = torch.stack([m(ids, valid, eos) for m in models])
    got = group.logits(ids[None], eos[None])
    assert torch.allclose(got, ref, atol=2e-5, rtol=1e-5)
    plain = GroupedRecognizers(_models("none", n_layers))
    assert not torch.allclose(plain.logits(ids[None], eos[None]), ref, atol=1e-3)
    got.pow(2).sum().backward()
    for m in models:
        m(ids, valid, eos).pow(2).sum().backward()
    grads = group.params(group.model_layout(group.theta.grad))
    for r, m in enumerate(models):
        for name, p in m.named_parameters():
            assert torch.allclose(grads[name][r], p.grad, atol=5e-5, rtol=1e-4), (r, name)


def test_config_key_digest_and_experiment_setting():
    base = RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1)
    logged = dataclasses.replace(base, length_scale="log")
    assert "length_scale" not in base.to_dict() and logged.to_dict()["length_scale"] == "log"
    assert RecognizerConfig.from_dict(logged.to_dict()) == logged and RecognizerConfig.from_dict(base.to_dict()) == base
    assert Recognizer(base).digest() != Recognizer(logged).digest()
    assert group_key(base) != group_key(logged)
    with pytest.raises(Exception) as err:
        RecognizerConfig(alphabet=("a", "b"), length_scale="sqrt")
    assert getattr(err.value, "field", "") == "model.length_scale"
    spec = {"language": AA, "encodings": ["nope", {"name": "rope_periodic", "params": {"periods": 2}}], "profile": "quick",
            "overrides": {"length_scale": "log"}}
    norm = validate_spec(spec)
    assert {c.length_scale for c in norm["model_configs"].values()} == {"log"}
    assert {c.length_scale for c in validate_spec({**spec, "overrides": {}})["model_configs"].values()} == {"none"}
    assert sorted(c.encoding["name"] for c in norm["model_configs"].values()) == ["nope", "rope_periodic"]


def test_paper_lite_profile_scales_every_encoding_and_quick_does_not():
    encodings = ["nope", {"name": "rope_periodic", "params": {"periods": 2}}, {"name": "rope", "params": {"base": 10000}}]
    lite = validate_spec({"language": AA, "encodings": encodings, "profile": "paper-lite"})
    assert {c.length_scale for c in lite["model_configs"].values()} == {"log"} and lite["settings"]["test_lengths"] == list(range(41, 501))
    quick = validate_spec({"language": AA, "encodings": encodings, "profile": "quick"})
    assert {c.length_scale for c in quick["model_configs"].values()} == {"none"}
    off = validate_spec({"language": AA, "encodings": encodings, "profile": "paper-lite", "overrides": {"length_scale": "none"}})
    assert {c.length_scale for c in off["model_configs"].values()} == {"none"}
