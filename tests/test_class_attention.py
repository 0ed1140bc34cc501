"""Tests of langclass.models.nn.class_attention: attention from key-class counts is the T × T attention."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.models.nn.class_attention import MAX_POSITION_CLASSES, class_count_attention, position_classes
from langclass.models.nn.encodings import make_encoding
from langclass.models.nn import grouped
from langclass.models.nn.grouped import GroupedRecognizers
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def _brute_force(scores: torch.Tensor, values: torch.Tensor, classes: torch.Tensor, factor: torch.Tensor | None) -> torch.Tensor:
    """Soft attention with the strict mask, one query and one key at a time in float64 (position 0
    attends to itself): out[r, b, i, h] = Σ_{j<i} e^{s_ij} v_j / Σ_{j<i} e^{s_ij}."""
    R, H, U, _ = scores.shape
    _, B, T = classes.shape
    d = values.shape[-1]
    out = torch.zeros(R, B, T, H, d, dtype=torch.float64)
    for r in range(R):
        for b in range(B):
            for i in range(T):
                keys = range(i) if i else range(1)
                for h in range(H):
                    f = 1.0 if factor is None else float(factor[i])
                    s = [f * float(scores[r, h, classes[r, b, i], classes[r, b, j]]) for j in keys]
                    top = max(s)
                    w = [math.exp(x - top) for x in s]
                    for j, wj in zip(keys, w):
                        out[r, b, i, h] += wj * values[r, classes[r, b, j], h].double()
                    out[r, b, i, h] /= sum(w)
    return out


@settings(max_examples=25, deadline=None)
@given(R=st.integers(1, 3), H=st.integers(1, 3), U=st.integers(1, 6), B=st.integers(1, 3), T=st.integers(1, 9),
       spread=st.sampled_from([1.0, 30.0, 300.0]), scaled=st.booleans(), seed=st.integers(0, 2**16))
def test_class_count_attention_is_the_strict_softmax_attention(R, H, U, B, T, spread, scaled, seed):
    """Against a brute force over every (query, key) pair, for any class sequence, with score gaps up
    to hundreds (the shift by the largest score present keeps e^s finite) and the per-query factor."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(R, H, U, U, generator=g, dtype=torch.float64) * spread
    values = torch.randn(R, U, H, 4, generator=g, dtype=torch.float64)
    classes = torch.randint(0, U, (R, B, T), generator=g)
    factor = torch.log(torch.arange(T).clamp(min=1).double()) if scaled else None
    got = class_count_attention(scores, values, classes, factor)
    assert got.shape == (R, B, T, H, 4)
    assert torch.isfinite(got).all()
    assert torch.allclose(got, _brute_force(scores, values, classes, factor), atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("seed,spread,scaled", [(3, 1.0, False), (4, 1.0, True), (5, 30.0, False), (6, 30.0, True), (7, 300.0, True)])
def test_class_count_attention_gradients_match_the_brute_force(seed, spread, scaled):
    """d(loss)/d(scores, values) through the counts form equal those through the pairwise form
    (autograd of both), also for peaked scores and with the per-query factor."""
    g = torch.Generator().manual_seed(seed)
    R, H, U, B, T = 2, 2, 4, 2, 7
    scores = (torch.randn(R, H, U, U, generator=g, dtype=torch.float64) * spread).requires_grad_(True)
    values = torch.randn(R, U, H, 3, generator=g, dtype=torch.float64, requires_grad=True)
    classes = torch.randint(0, U, (R, B, T), generator=g)
    weight = torch.randn(R, B, T, H, 3, generator=g, dtype=torch.float64)
    factor = torch.log(torch.arange(T).clamp(min=1).double()) if scaled else None
    (class_count_attention(scores, values, classes, factor) * weight).sum().backward()
    got = (scores.grad.clone(), values.grad.clone())
    scores.grad = values.grad = None
    # the pairwise form, differentiable: s_ij gathered, masked, softmax over j
    s = scores[torch.arange(R)[:, None, None, None, None], torch.arange(H)[None, None, None, :, None],
               classes[:, :, :, None, None], classes[:, :, None, None, :]]  # [R, B, T(i), H, T(j)]
    if factor is not None:
        s = s * factor[None, None, :, None, None]
    i = torch.arange(T)
    visible = (i[None, :] < i[:, None]) | ((i[:, None] == 0) & (i[None, :] == 0))
    w = torch.softmax(s.masked_fill(~visible[None, None, :, None, :], float("-inf")), dim=-1)
    v = values[torch.arange(R)[:, None, None], classes]  # [R, B, T(j), H, d]
    (torch.einsum("rbihj,rbjhd->rbihd", w, v) * weight).sum().backward()
    assert torch.allclose(got[0], scores.grad, atol=1e-9, rtol=1e-9)
    assert torch.allclose(got[1], values.grad, atol=1e-9, rtol=1e-9)
    assert scores.grad.abs().max() > 0  # not vacuous


def test_position_classes_of_rotation_tables():
    """NoPE: one class; periodic RoPE: i mod lcm(periods) (bit-for-bit periodic tables);
    conventional RoPE: a class per position. Classes are numbered by first occurrence."""
    def rows(enc: dict, T: int) -> torch.Tensor:
        e = make_encoding(enc["name"], d_model=16, d_head=8, n_heads=2, **{k: v for k, v in enc.items() if k != "name"})
        if e.kind != "rotary":
            return torch.zeros(T, 1)
        cos, sin = e.cos_sin(e.position_ids(T))
        return torch.cat((cos[0], sin[0]), dim=-1)

    cls, first = position_classes(rows({"name": "nope"}, 12))
    assert cls.tolist() == [0] * 12 and first.tolist() == [0]
    cls, first = position_classes(rows({"name": "rope_periodic", "periods": 2}, 12))
    assert cls.tolist() == [i % 2 for i in range(12)] and first.tolist() == [0, 1]
    cls, first = position_classes(rows({"name": "rope_periodic", "periods": [2, 3]}, 20))
    assert cls.tolist() == [i % 6 for i in range(20)] and first.tolist() == list(range(6))
    cls, first = position_classes(rows({"name": "rope"}, 12))
    assert cls.tolist() == list(range(12))


def _group(encodings: list[dict], length_scale: str = "none") -> GroupedRecognizers:
    models = []
    for i, e in enumerate(encodings):
        torch.manual_seed(i)
        models.append(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, d_ff=32, encoding=e,
                                                  length_scale=length_scale)))
    return GroupedRecognizers(models)


def _batch(R: int, B: int, T: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 5, (R, B, T), generator=g)
    ids[:, :, 0] = 1
    eos = torch.randint(1, T, (R, B), generator=g)
    for r in range(R):
        for b in range(B):
            ids[r, b, eos[r, b]] = 2
            ids[r, b, eos[r, b] + 1:] = 0
    return ids, eos


@pytest.mark.parametrize("encodings,counted", [
    ([{"name": "nope"}, {"name": "rope_periodic", "periods": 2}, {"name": "rope"}, {"name": "alibi"}], [0, 1]),
    ([{"name": "rope"}, {"name": "nope"}, {"name": "rope_periodic", "periods": [2, 3, 5]}, {"name": "rope_periodic", "periods": 2}], [1, 3]),
    ([{"name": "nope"}, {"name": "rope_periodic", "periods": [2, 4]}], [0, 1]),
    ([{"name": "nope"}], [0]),
    ([{"name": "rope"}, {"name": "alibi"}], []),
])
@pytest.mark.parametrize("length_scale", ["none", "log"])
def test_grouped_first_layer_by_counts_equals_the_pairwise_layer(encodings, counted, length_scale, monkeypatch):
    """Which runs of a group take the class-count first layer (≤ MAX_POSITION_CLASSES rotations, no
    bias, no absolute table), that it is taken, and that logits and parameter gradients equal those of
    the T × T path (GroupedRecognizers.count_attention False) for mixed, all-counted and uncounted groups."""
    calls = []

    def spy(scores, values, classes, query_factor=None):
        calls.append(scores.shape[0])
        return class_count_attention(scores, values, classes, query_factor)

    monkeypatch.setattr(grouped, "class_count_attention", spy)
    group = _group(encodings, length_scale)
    ids, eos = _batch(len(encodings), 6, 40, seed=len(encodings))
    count = group._tables_for(40)["count"]
    assert (count["rows"].tolist() if count is not None else []) == counted
    assert MAX_POSITION_CLASSES < 30  # periods 2, 3, 5 (lcm 30) stay on the pairwise path
    out = []
    for flag in (True, False):
        group.count_attention = flag
        group.theta.grad = None
        logits = group.logits(ids, eos)
        logits.sum().backward()
        out.append((logits.detach(), group.theta.grad.clone()))
    assert calls == ([len(counted)] if counted else [])  # once, with the counted runs, and only with the flag on
    assert torch.allclose(out[0][0], out[1][0], atol=1e-5)
    assert torch.allclose(out[0][1], out[1][1], atol=1e-4, rtol=1e-4)


def test_short_strings_with_many_key_classes_take_the_pairwise_path(monkeypatch):
    """V·P key classes ≥ T keys: the pairwise path is the cheaper one and is taken (same logits)."""
    calls = []
    monkeypatch.setattr(grouped, "class_count_attention", lambda *a, **k: calls.append(1) or class_count_attention(*a, **k))
    group = _group([{"name": "rope_periodic", "periods": 2}])  # V = 5 tokens × P = 2 classes
    ids, eos = _batch(1, 4, 10, seed=1)
    group.logits(ids, eos)
    assert calls == []
    ids, eos = _batch(1, 4, 11, seed=1)
    group.logits(ids, eos)
    assert calls == [1]


def test_bfloat16_inputs_keep_exact_counts():
    """Counts are held in at least float32: with bfloat16 scores and values, 600 keys of one class and
    one of another still weigh e^3 : 598 (bfloat16 counts would round above 256), up to the output's
    own bfloat16 rounding."""
    T = 600
    classes = torch.zeros(1, 1, T, dtype=torch.long)
    classes[0, 0, 1] = 1
    scores = torch.zeros(1, 1, 2, 2)
    scores[0, 0, :, 1] = 3.0
    values = torch.tensor([[[[0.0]], [[1.0]]]])
    out = class_count_attention(scores.bfloat16(), values.bfloat16(), classes)
    assert out.dtype == torch.bfloat16
    exact = torch.tensor([math.exp(3) / (math.exp(3) + i - 1) for i in range(2, T)])
    assert ((out[0, 0, 2:, 0, 0].float() - exact) / exact).abs().max() < 2 ** -8


def test_grouped_count_path_equals_each_recognizer_on_a_larger_alphabet():
    """Against each Recognizer alone (the reference forward): 5 letters, periodic RoPE with lcm 8 (P = 8,
    the largest that qualifies) in the interleaved layout, NoPE, and a conventional RoPE run between
    them, log-length scaling, strings long enough (T > V·P = 64) for the count path; logits and the
    gradients of every parameter."""
    from langclass.models.training.train import encode_batch

    alphabet = ("a", "b", "c", "d", "e")
    encodings = [{"name": "rope_periodic", "periods": [2, 8], "pair_layout": "interleaved"}, {"name": "rope"}, {"name": "nope"}]
    models = []
    for i, e in enumerate(encodings):
        torch.manual_seed(10 + i)
        models.append(Recognizer(RecognizerConfig(alphabet=alphabet, d_model=16, n_heads=2, n_layers=2, d_ff=32, encoding=e,
                                                  length_scale="log")))
    group = GroupedRecognizers(models)
    count = group._tables_for(80)["count"]
    assert count["rows"].tolist() == [0, 2] and count["P"] == 8
    g = torch.Generator().manual_seed(0)
    words = [tuple(torch.randint(0, 5, (int(n),), generator=g).tolist()) for n in torch.randint(60, 78, (6,), generator=g)]
    ids, valid, eos = encode_batch(words, torch.device("cpu"))
    assert ids.shape[1] > 8 * 8  # V = 5 letters + PAD, BOS, EOS; P = 8
    calls = []
    original = grouped.class_count_attention
    grouped.class_count_attention = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        logits = group.logits(ids[None], eos[None])
    finally:
        grouped.class_count_attention = original
    assert calls == [1]
    ref = torch.stack([m(ids, valid, eos) for m in models])
    assert torch.allclose(logits, ref, atol=2e-5, rtol=1e-5)
    logits.sum().backward()
    for m in models:
        m.zero_grad()
        m(ids, valid, eos).sum().backward()
    want = torch.stack([torch.cat([p.grad.reshape(-1) for p in m.parameters()]) for m in models])
    got = group.model_layout(group.theta.grad)
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)
