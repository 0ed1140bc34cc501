"""Tests of langclass.models.nn.grouped: R stacked recognizers compute what each recognizer computes."""

from __future__ import annotations

import random

import pytest
import torch

from langclass.models.nn.grouped import GROUPABLE_FAMILIES, GroupedRecognizers, StackedAdamW, group_key
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.training.train import encode_batch

ENCODINGS = [{"name": "nope"}, {"name": "rope"}, {"name": "rope_periodic", "periods": 2},
             {"name": "rope", "pair_layout": "interleaved", "rotary_dim": 4}, {"name": "rope_periodic", "periods": [2, 3, 5]},
             {"name": "sinusoidal"}, {"name": "sinusoidal_periodic", "periods": 2}, {"name": "alibi"}]


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def _models(n_layers: int, encodings=ENCODINGS) -> list[Recognizer]:
    out = []
    for i, e in enumerate(encodings):
        torch.manual_seed(i)
        out.append(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=n_layers, d_ff=32, encoding=e)))
    return out


def _words(seed: int, n: int, max_len: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.randrange(2) for _ in range(rng.randrange(0, max_len + 1))) for _ in range(n)]


NOT_ABSOLUTE = [e for e in ENCODINGS if not e["name"].startswith("sinusoidal")]


@pytest.mark.parametrize("n_layers,encodings", [(0, ENCODINGS), (1, ENCODINGS), (2, ENCODINGS), (3, ENCODINGS),
                                                (2, NOT_ABSOLUTE), (3, NOT_ABSOLUTE), (2, NOT_ABSOLUTE[:1])])
def test_grouped_logits_and_gradients_equal_each_recognizer(n_layers, encodings):
    """Every groupable family (both pair layouts, partial rotary, several periods) in one group:
    logits on shared and on per-run batches, and the gradients, match each model alone (float32
    reassociation only) — two implementations of one function. Groups without an absolute
    encoding take the first layer's projections from the vocabulary table (GroupedRecognizers.weights);
    NoPE alone has no rotation at all."""
    assert {e["name"] for e in ENCODINGS} == set(GROUPABLE_FAMILIES)
    models = _models(n_layers, encodings)
    group = GroupedRecognizers(models)
    assert ("0.table" in group.weights()) == (n_layers > 1 and encodings is not ENCODINGS)
    ids, valid, eos = encode_batch(_words(0, 24, 13), torch.device("cpu"))
    ref = torch.stack([m(ids, valid, eos) for m in models])
    assert torch.allclose(group.logits(ids[None], eos[None]), ref, atol=2e-5, rtol=1e-5)
    per_run = [encode_batch(_words(r + 1, 24, 13), torch.device("cpu")) for r in range(len(models))]
    T = max(p[0].shape[1] for p in per_run)
    ids_r = torch.stack([torch.nn.functional.pad(p[0], (0, T - p[0].shape[1])) for p in per_run])
    eos_r = torch.stack([p[2] for p in per_run])
    ref_r = torch.stack([m(p[0], p[1], p[2]) for m, p in zip(models, per_run)])
    assert torch.allclose(group.logits(ids_r, eos_r), ref_r, atol=2e-5, rtol=1e-5)
    # gradients of a loss that weights each run differently
    weights = torch.arange(1, len(models) + 1, dtype=torch.float32)
    (group.logits(ids_r, eos_r).pow(2).sum(dim=1) * weights).sum().backward()
    for w, m, p in zip(weights, models, per_run):
        (m(p[0], p[1], p[2]).pow(2).sum() * w).backward()
    grads = group.params(group.model_layout(group.theta.grad))
    for r, m in enumerate(models):
        for name, p in m.named_parameters():
            assert torch.allclose(grads[name][r], p.grad, atol=5e-5, rtol=1e-4), (r, name)


def test_same_length_strings_without_eos_and_copy_back():
    models = _models(2)
    group = GroupedRecognizers(models)
    ids, valid, eos = encode_batch([tuple(random.Random(i).choices([0, 1], k=9)) for i in range(10)],
                                   torch.device("cpu"))
    ref = torch.stack([m(ids, valid, eos) for m in models])
    assert torch.allclose(group.logits(ids[None]), ref, atol=2e-5)
    # a step changes theta; copy_into gives each model exactly its row back in model layout
    with torch.no_grad():
        group.theta.add_(torch.randn_like(group.theta) * 0.1)
    fresh = _models(2)
    for r, m in enumerate(fresh):
        group.copy_into(r, m)
    assert torch.allclose(group.logits(ids[None]), torch.stack([m(ids, valid, eos) for m in fresh]), atol=2e-5)
    # dropping runs keeps the others' functions
    group.select([5, 0])
    assert torch.allclose(group.logits(ids[None]), torch.stack([fresh[5](ids, valid, eos), fresh[0](ids, valid, eos)]), atol=2e-5)


def test_group_key_refuses_what_it_cannot_stack():
    base = dict(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1)
    assert group_key(RecognizerConfig(**base)) == group_key(RecognizerConfig(**base, encoding={"name": "rope"}))
    assert group_key(RecognizerConfig(**base)) != group_key(RecognizerConfig(**{**base, "d_model": 32}))
    for bad in ({"attention": "hard"}, {"mask": "nonstrict"}, {"norm": "post"}, {"bias": False}, {"dropout": 0.1},
                {"dtype": "float64"}, {"encoding": {"name": "pj_bias"}}, {"d_head": 3},
                {"encoding": {"name": "rope", "compute_dtype": "float64"}}):
        assert group_key(RecognizerConfig(**base, **bad)) is None, bad
    with pytest.raises(ValueError):
        GroupedRecognizers([Recognizer(RecognizerConfig(**base)), Recognizer(RecognizerConfig(**{**base, "d_model": 32}))])


def test_stacked_adamw_is_torch_adamw_per_run():
    """Two runs with their own learning rates: each row follows torch.optim.AdamW with that rate."""
    torch.manual_seed(0)
    theta = torch.randn(2, 50)
    grads = [torch.randn(2, 50) for _ in range(5)]
    opt = StackedAdamW(theta, [1e-2, 3e-3], (0.9, 0.98), 1e-8, 0.05)
    mine = theta.clone()
    for g in grads:
        opt.step(mine, g)
    for r, lr in enumerate([1e-2, 3e-3]):
        p = torch.nn.Parameter(theta[r].clone())
        ref = torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.05)
        for g in grads:
            p.grad = g[r].clone()
            ref.step()
        assert torch.allclose(mine[r], p.detach(), atol=1e-6, rtol=1e-5)
