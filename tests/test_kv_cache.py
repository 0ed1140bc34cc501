"""Incremental evaluation with a key/value cache (issue 13 item 6): prefill + decode in any split
gives the full forward's outputs, for every encoding family, soft and hard attention, the
recognizer and the constructed formula transformers."""

from __future__ import annotations

import pytest
import torch

from langclass.models.nn.attention import MultiHeadAttention
from langclass.models.construct import ConstructionOptions, build_formula_transformer
from langclass.models.nn.encodings import ENCODING_FAMILIES, make_encoding
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL

D, H, DH, T = 16, 2, 8, 11
CONTEXT = {"d_model": D, "d_head": DH, "n_heads": H}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def _splits(t: int):
    return [[t], [4, t - 4], [1] * t, [3, 1, 1, t - 5]]


@pytest.mark.parametrize("family", sorted(ENCODING_FAMILIES))
@pytest.mark.parametrize("attention,mask", [("soft", "strict"), ("soft", "nonstrict"), ("hard", "strict")])
def test_attention_prefill_plus_decode_equals_forward(family, attention, mask):
    torch.manual_seed(0)
    enc = make_encoding(family, **CONTEXT)
    mha = MultiHeadAttention(D, H, d_head=DH, attention=attention, mask=mask).double()
    x = torch.randn(3, T, D, dtype=torch.float64)
    valid = torch.ones(3, T, dtype=torch.bool)
    valid[1, 8:] = False  # right padding in one row
    x = enc.embed(x, enc.position_ids(T))
    with torch.no_grad():
        full = mha(x, enc.position_ids(T), valid, enc)
        for split in _splits(T):
            cache, outs, s0 = None, [], 0
            for t in split:
                out, cache = mha.step(x[:, s0:s0 + t], enc.position_ids(s0 + t)[:, s0:], cache, valid[:, s0:s0 + t], enc)
                outs.append(out)
                s0 += t
            got = torch.cat(outs, dim=1)
            assert cache.length == T
            assert torch.allclose(got[valid], full[valid], atol=1e-12, rtol=0), (family, split)


@pytest.mark.parametrize("family", sorted(ENCODING_FAMILIES))
def test_recognizer_decode_matches_forward(family):
    torch.manual_seed(1)
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=D, n_heads=H, n_layers=2, encoding={"name": family},
                           dtype="float64")
    model = Recognizer(cfg).eval()
    batch = model.vocab.batch(["abbab", "bbaba"])  # equal lengths: EOS at the same index
    with torch.no_grad():
        full = model(batch.ids, batch.valid)
        states, caches = model.extend(batch.ids[:, :3])
        for t in range(3, batch.ids.shape[1]):
            states, caches = model.extend(batch.ids[:, t:t + 1], caches)
        decoded = model.readout(states[:, -1]).squeeze(-1)
    assert torch.allclose(decoded, full.double(), atol=1e-10, rtol=0)
    assert ((decoded > 0) == (full > 0)).all()


@pytest.mark.parametrize("formula,alphabet,y_mode", [
    ("P(b & Y a)", "abc", "rope"), ("P(b & Y a)", "abc", "recency"), ("Y b & Y^2 a", "ab", "recency"),
    ("MOD(2,1) & !P(MOD(2,0) & !a | MOD(2,1) & !b)", "ab", "rope"), ("MOD(3,0) & Y a", "ab", "recency"),
])
def test_formula_transformer_incremental_is_bitwise_equal(formula, alphabet, y_mode):
    model = build_formula_transformer(formula, tuple(alphabet), ConstructionOptions(y_mode=y_mode))
    g = torch.Generator().manual_seed(2)
    words = torch.randint(0, len(alphabet), (4, 40), generator=g)
    ids = torch.cat([torch.full((4, 1), BOS), words + NUM_SPECIAL, torch.full((4, 1), EOS)], dim=1)
    with torch.no_grad():
        full = model(ids)
        for chunk in (1, 5, 64):
            assert torch.equal(model.forward_incremental(ids, chunk=chunk), full), chunk
