"""Positional encodings: one interface, manifests and digests, values of each family."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from langclass.core.base.errors import InputError
from langclass.models.nn.encodings import (
    ENCODING_FAMILIES,
    ALiBi,
    NoPE,
    PeriodicRoPE,
    Sinusoidal,
    SinusoidalPeriodic,
    canonical_json,
    exact_cos_sin,
    make_encoding,
)

CTX = dict(d_model=16, d_head=8, n_heads=2)


@pytest.mark.parametrize("name", list(ENCODING_FAMILIES))
def test_every_family_has_a_json_manifest_digest_and_rebuildable_spec(name):
    enc = make_encoding(name, **CTX)
    m = enc.manifest()
    assert m["family"] == name and m["schema"] == "langclass.encoding/1"
    assert m["position"]["origin"] == 0 and m["compute_dtype"] == "float32"
    text = canonical_json(m)
    assert json.loads(text) == m
    assert len(enc.digest()) == 64 and enc.digest() == make_encoding(name, **CTX).digest()
    rebuilt = make_encoding(**enc.spec())
    assert rebuilt.digest() == enc.digest()
    # the origin is part of the identity for every family
    assert make_encoding(name, position_origin=3, **CTX).digest() != enc.digest()
    # interface: shapes are preserved
    pos = enc.position_ids(5)
    assert pos.dtype == torch.long and pos.tolist() == [[0, 1, 2, 3, 4]]
    x = torch.randn(2, 5, 16)
    assert enc.embed(x, pos).shape == x.shape
    q = torch.randn(2, 2, 5, 8)
    q2, k2 = enc.rotate(q, q.clone(), pos)
    assert q2.shape == q.shape and k2.shape == q.shape
    bias = enc.score_bias(pos)
    assert bias is None or bias.shape == (1, 2, 5, 5)


def test_family_kinds_touch_only_their_hook():
    pos = torch.arange(6).unsqueeze(0)
    x = torch.randn(1, 6, 16)
    q = torch.randn(1, 2, 6, 8)
    for name in ENCODING_FAMILIES:
        enc = make_encoding(name, **CTX)
        emb_changed = not torch.equal(enc.embed(x, pos), x)
        rot_changed = not torch.equal(enc.rotate(q, q, pos)[0], q)
        biased = enc.score_bias(pos) is not None
        assert (emb_changed, rot_changed, biased) == {
            "none": (False, False, False), "absolute": (True, False, False),
            "rotary": (False, True, False), "bias": (False, False, True), "rotary_bias": (False, True, True)}[enc.kind], name


def test_factory_errors_are_typed():
    with pytest.raises(InputError) as e:
        make_encoding("xpos", **CTX)
    assert e.value.field == "encoding.name"
    with pytest.raises(InputError) as e:
        make_encoding("rope", bogus=1, **CTX)
    assert e.value.field == "encoding.bogus"
    with pytest.raises(InputError):
        make_encoding("rope")  # no d_head
    with pytest.raises(InputError):
        make_encoding("rope", base="big", **CTX)
    with pytest.raises(InputError):
        make_encoding("rope", d_head=4, **{k: v for k, v in CTX.items() if k != "d_head"}, rotary_dim=8)
    with pytest.raises(InputError):
        make_encoding("rope", position_origin=-1, **CTX)
    with pytest.raises(InputError):
        make_encoding("alibi", slopes=[1.0], **CTX)
    with pytest.raises(InputError):
        make_encoding("sinusoidal", dim=17, **CTX)
    with pytest.raises(InputError):
        make_encoding("rope", compute_dtype="bfloat16", **CTX)
    with pytest.raises(InputError):
        make_encoding("rope_periodic", periods=[2, 1.5], **CTX)


def test_sinusoidal_values():
    enc = Sinusoidal(6, base=100.0)
    pe = enc.table(torch.tensor([0, 1, 7]))
    for row, i in enumerate([0, 1, 7]):
        for t in range(3):
            w = 100.0 ** (-2 * t / 6)
            assert pe[row, 2 * t].item() == pytest.approx(math.sin(i * w), abs=1e-6)
            assert pe[row, 2 * t + 1].item() == pytest.approx(math.cos(i * w), abs=1e-6)
    partial = Sinusoidal(6, dim=2)
    assert torch.equal(partial.table(torch.tensor([5]))[0, 2:], torch.zeros(4))
    assert Sinusoidal(6, base=100.0).digest() != Sinusoidal(6, base=1e4).digest()


def test_sinusoidal_periodic_is_a_finite_periodic_table():
    enc = SinusoidalPeriodic(8, periods=[2, 3, 4], steps=[1, 1, 3])
    assert enc.dim == 6
    pos = torch.arange(0, 200_000)
    pe = enc.table(pos)
    assert torch.equal(pe[12:, :], pe[:-12, :])  # lcm = 12, bit for bit
    assert torch.equal(pe[:, 6:], torch.zeros(200_000, 2))
    # image is finite: exactly 12 distinct rows
    assert len({tuple(r) for r in pe[:24].tolist()}) == 12
    # values: pair 2 has angle 2π·3/4 per position, exact at quarter turns
    assert pe[1, 4].item() == -1.0 and pe[1, 5].item() == 0.0
    assert pe[1, 0].item() == 0.0 and pe[1, 1].item() == -1.0  # period 2: sin π = 0, cos π = −1
    # a non-periodic sinusoid with the same angle formed as θ·i does not repeat exactly at large i
    c = torch.cos((torch.arange(10**7, 10**7 + 30, dtype=torch.float32) * np.float32(2 * math.pi / 3)))
    assert not torch.equal(c[3:], c[:-3])
    # int periods fill every pair
    assert SinusoidalPeriodic(8, periods=2).periods == (2, 2, 2, 2)


def test_exact_cos_sin_is_correctly_rounded():
    assert exact_cos_sin(1, 2) == (-1.0, 0.0)
    assert exact_cos_sin(3, 4) == (0.0, -1.0)
    assert exact_cos_sin(1, 6) == (0.5, math.sqrt(3) / 2)
    assert exact_cos_sin(7, 5) == exact_cos_sin(2, 5)
    c, s = exact_cos_sin(1, 7)
    assert abs(c - math.cos(2 * math.pi / 7)) < 1e-15 and abs(s - math.sin(2 * math.pi / 7)) < 1e-15


def test_alibi_bias_is_linear_recency():
    enc = ALiBi(4)
    assert enc.slopes == (2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8)
    pos = torch.arange(5).unsqueeze(0)
    b = enc.score_bias(pos)
    assert b.shape == (1, 4, 5, 5)
    for h, s in enumerate(enc.slopes):
        for i in range(5):
            for j in range(5):
                assert b[0, h, i, j].item() == pytest.approx(-s * abs(i - j))
    # translation invariant: only differences matter
    assert torch.equal(enc.score_bias(pos + 100), b)
    assert ALiBi(4, slopes=[1, 1, 1, 1]).digest() != enc.digest()


def test_nope_and_periodic_rope_manifest_contents():
    assert NoPE().manifest()["kind"] == "none"
    m = PeriodicRoPE(8, periods=[3, 4], steps=[1, 1]).manifest()
    assert m["periods"] == [3, 4] and m["rotary_dim"] == 4 and m["pair_layout"] == "half_split"
    assert m["table_values"][1] == [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]
    assert PeriodicRoPE(8, periods=[3, 4]).digest() != PeriodicRoPE(8, periods=[3, 5]).digest()
    assert PeriodicRoPE(8, periods=[3, 4]).digest() != PeriodicRoPE(8, periods=[3, 4], steps=[2, 1]).digest()


def test_model_dtype_changes_do_not_touch_encoding_tables():
    enc = PeriodicRoPE(8, periods=[3, 5])
    before = enc.cos_table.clone()
    enc.to(torch.float16)
    assert enc.cos_table.dtype == torch.float32 and torch.equal(enc.cos_table, before)
    enc.half()
    assert enc.cos_table.dtype == torch.float32


@pytest.mark.parametrize("periods,words", [([], "empty list"), (list(range(2, 12)), "at most 4 periods")])
def test_periodic_rope_refuses_period_lists_that_give_no_or_too_many_pairs(periods, words):
    """An empty list would be a NoPE run under a periodic label; a list longer than d_head/2 pairs
    cannot fit: both are refused naming ``periods`` (not a derived rotary_dim)."""
    from langclass.core.base.errors import InputError
    from langclass.models.nn.encodings import make_encoding

    with pytest.raises(InputError, match=words) as err:
        make_encoding("rope_periodic", d_model=32, d_head=8, n_heads=4, periods=periods)
    assert err.value.field.endswith("periods")
