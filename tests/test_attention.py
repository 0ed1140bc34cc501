"""Masked soft / unique hard attention: stable softmax exactness, tie rules, masks, empty rows."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.precision.numerics import f_large
from langclass.models.nn.attention import MultiHeadAttention, hard_attention_weights, stable_softmax, visibility
from langclass.models.nn.encodings import ALiBi, RoPE

DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


def test_visibility_masks():
    s = visibility(4, "strict")[0, 0]
    n = visibility(4, "nonstrict")[0, 0]
    a = visibility(4, "none")[0, 0]
    for i, j in itertools.product(range(4), repeat=2):
        assert s[i, j].item() == (j < i)
        assert n[i, j].item() == (j <= i)
        assert a[i, j].item()
    valid = torch.tensor([[True, True, False, False]])
    v = visibility(4, "none", valid)
    assert v.shape == (1, 1, 4, 4) and not v[0, 0, :, 2:].any()
    with pytest.raises(ValueError):
        visibility(3, "causal")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_stable_softmax_margin_f_large_gives_exact_zero_one(dtype):
    fl = f_large(dtype)
    dt = DT[dtype]
    top = 5.0
    scores = torch.tensor([[top - fl, top, top - fl, top - 3 * fl]], dtype=torch.float64).to(dt)
    assert scores[0, 1] - scores[0, 0] >= fl  # the margin survives rounding to the dtype
    w = stable_softmax(scores, torch.ones(1, 4, dtype=torch.bool))
    assert w.dtype == dt and w.tolist() == [[0.0, 1.0, 0.0, 0.0]]


def test_stable_softmax_below_margin_is_not_hard_and_matches_torch():
    scores = torch.tensor([[0.0, 3.0, -1.0, 2.0]])
    vis = torch.tensor([[True, True, False, True]])
    w = stable_softmax(scores, vis)
    ref = torch.softmax(scores.masked_fill(~vis, float("-inf")), dim=-1)
    torch.testing.assert_close(w, ref)
    assert w[0, 2].item() == 0.0 and 0 < w[0, 1].item() < 1
    # huge scores do not overflow: the row maximum is subtracted
    big = torch.tensor([[1e30, 1e30 - 1e25, 3e29]])
    assert torch.isfinite(stable_softmax(big, torch.ones(1, 3, dtype=torch.bool))).all()


def test_empty_rows_give_zero_weights_and_finite_gradients():
    scores = torch.randn(2, 3, requires_grad=True)
    vis = torch.tensor([[False, False, False], [True, False, True]])
    w = stable_softmax(scores, vis)
    assert w[0].tolist() == [0.0, 0.0, 0.0]
    assert abs(w[1].sum().item() - 1) < 1e-6
    (w * torch.randn(2, 3)).sum().backward()
    assert torch.isfinite(scores.grad).all() and scores.grad[0].abs().sum() == 0
    h = hard_attention_weights(scores.detach(), vis, "leftmost")
    assert h[0].tolist() == [0.0, 0.0, 0.0]


def test_hard_attention_tie_rules():
    scores = torch.tensor([[1.0, 3.0, 0.0, 3.0, 3.0, 2.0]])
    vis = torch.ones(1, 6, dtype=torch.bool)
    assert hard_attention_weights(scores, vis, "leftmost").tolist() == [[0, 1, 0, 0, 0, 0]]
    assert hard_attention_weights(scores, vis, "rightmost").tolist() == [[0, 0, 0, 0, 1, 0]]
    # masked-out maxima are not candidates
    vis2 = torch.tensor([[True, False, True, True, False, True]])
    assert hard_attention_weights(scores, vis2, "leftmost").tolist() == [[0, 0, 0, 1, 0, 0]]
    assert hard_attention_weights(scores, vis2, "rightmost").tolist() == [[0, 0, 0, 1, 0, 0]]
    with pytest.raises(ValueError):
        hard_attention_weights(scores, vis, "random")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2, 2), min_size=1, max_size=9), st.data())
def test_hard_attention_matches_brute_force_definition(vals, data):
    """B_i = best-scoring visible positions; leftmost = min B_i, rightmost = max B_i (§6.1)."""
    n = len(vals)
    vis_list = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    scores = torch.tensor([vals], dtype=torch.float32)
    vis = torch.tensor([vis_list])
    for tie in ("leftmost", "rightmost"):
        w = hard_attention_weights(scores, vis, tie)[0].tolist()
        visible = [j for j in range(n) if vis_list[j]]
        if not visible:
            assert w == [0.0] * n
            continue
        best = [j for j in visible if vals[j] == max(vals[v] for v in visible)]
        chosen = min(best) if tie == "leftmost" else max(best)
        assert w == [1.0 if j == chosen else 0.0 for j in range(n)]


def _set_head_attend_to_marker(attn: MultiHeadAttention):
    """Exact weights: score = 1 on keys whose coordinate 0 is 1, value = coordinate 1."""
    with torch.no_grad():
        for p in attn.parameters():
            p.zero_()
        attn.q_proj.bias[0] = 1.0  # query constant 1
        attn.k_proj.weight[0, 0] = 1.0  # key = x[0]
        attn.v_proj.weight[0, 1] = 1.0  # value = x[1]
        attn.out_proj.weight[2, 0] = 1.0  # write head output to coordinate 2


@pytest.mark.parametrize("mask,tie,expected", [
    ("strict", "leftmost", [0, 1, 10, 10, 10, 10]),
    ("strict", "rightmost", [0, 1, 10, 10, 30, 30]),
    ("nonstrict", "leftmost", [1, 10, 10, 10, 10, 10]),
    ("nonstrict", "rightmost", [1, 10, 10, 30, 30, 50]),
    ("none", "leftmost", [10] * 6),
    ("none", "rightmost", [50] * 6),
])
def test_hard_attention_layer_picks_the_right_position(mask, tie, expected):
    attn = MultiHeadAttention(4, 1, 4, attention="hard", tie=tie, mask=mask, score_scale=1.0)
    _set_head_attend_to_marker(attn)
    marker = [0, 1, 0, 1, 0, 1]
    payload = [1, 10, 20, 30, 40, 50]
    x = torch.zeros(1, 6, 4)
    x[0, :, 0] = torch.tensor(marker, dtype=torch.float32)
    x[0, :, 1] = torch.tensor(payload, dtype=torch.float32)
    out = attn(x, torch.arange(6).unsqueeze(0))
    # position 0 under a strict mask has no visible key: the head returns 0 (only out_proj.bias = 0)
    # for rows with only unmarked visible keys all scores tie at 0 and the tie rule decides
    got = out[0, :, 2].tolist()
    ref = []
    for i in range(6):
        vis = [j for j in range(6) if (j < i if mask == "strict" else j <= i if mask == "nonstrict" else True)]
        if not vis:
            ref.append(0)
            continue
        best = [j for j in vis if marker[j] == max(marker[v] for v in vis)]
        ref.append(payload[min(best) if tie == "leftmost" else max(best)])
    assert got == ref == expected


def test_empty_row_returns_out_proj_bias_only():
    attn = MultiHeadAttention(4, 2, 2, mask="strict")
    x = torch.randn(1, 3, 4)
    out, tr = attn(x, torch.arange(3).unsqueeze(0), return_trace=True)
    assert torch.equal(tr.heads[0, :, 0], torch.zeros(2, 2))
    torch.testing.assert_close(out[0, 0], attn.out_proj.bias)


def test_padding_keys_are_invisible_in_the_layer():
    torch.manual_seed(0)
    for attention in ("soft", "hard"):
        for mask in ("strict", "nonstrict", "none"):
            attn = MultiHeadAttention(8, 2, attention=attention, mask=mask)
            x = torch.randn(1, 7, 8)
            padded = torch.cat([x, torch.randn(1, 4, 8) * 100], dim=1)
            valid = torch.tensor([[True] * 7 + [False] * 4])
            for enc in (None, RoPE(4), ALiBi(2)):
                a = attn(x, torch.arange(7).unsqueeze(0), None, enc)
                b = attn(padded, torch.arange(11).unsqueeze(0), valid, enc)
                torch.testing.assert_close(a, b[:, :7], rtol=1e-5, atol=1e-6)


def test_soft_attention_with_large_margin_is_exactly_hard_in_layer():
    """A head whose target leads by ≥ f_large returns exactly the target's value (float32)."""
    attn = MultiHeadAttention(4, 1, 4, attention="soft", mask="strict", score_scale=1.0)
    _set_head_attend_to_marker(attn)
    with torch.no_grad():
        attn.q_proj.bias[0] = f_large("float32")  # marker keys lead unmarked ones by f_large
    x = torch.zeros(1, 5, 4)
    x[0, :, 0] = torch.tensor([0, 0, 1, 0, 0.0])
    x[0, :, 1] = torch.tensor([7, 8, 9.5, 11, 12.0])
    out, tr = attn(x, torch.arange(5).unsqueeze(0), return_trace=True)
    assert out[0, 3, 2].item() == 9.5 and out[0, 4, 2].item() == 9.5
    assert tr.weights[0, 0, 4].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_autocast_cpu_bfloat16_runs_and_softmax_in_float32():
    attn = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, tr = attn(x, torch.arange(5).unsqueeze(0), return_trace=True)
    assert tr.weights.dtype == torch.float32
    assert torch.isfinite(out.float()).all()


@pytest.mark.parametrize("mask", ["strict", "nonstrict", "none"])
def test_sdpa_path_equals_exact_path(mask):
    torch.manual_seed(1)
    exact = MultiHeadAttention(8, 2, mask=mask)
    fast = MultiHeadAttention(8, 2, mask=mask, impl="sdpa")
    fast.load_state_dict(exact.state_dict())
    x = torch.randn(3, 6, 8)
    valid = torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] + [False] * 5])
    pos = torch.arange(6).unsqueeze(0)
    for enc in (None, RoPE(4), ALiBi(2)):
        a = exact(x, pos, valid, enc)
        b = fast(x, pos, valid, enc)
        torch.testing.assert_close(a[valid], b[valid], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        MultiHeadAttention(8, 2, impl="flash")


def test_vectorized_kernels_also_give_exact_zero_at_f_large():
    """torch's vectorized exp/softmax (long rows) underflow exactly at the margin f_large too."""
    for dtype in ("float32", "bfloat16", "float16", "float64"):
        fl = f_large(dtype)
        s = torch.zeros(4, 1000, dtype=DT[dtype])
        s[:, 1:] = -fl
        assert torch.exp(s[:, 1:]).eq(0).all()
        w = stable_softmax(s, torch.ones(1000, dtype=torch.bool))
        assert w[:, 0].eq(1).all() and w[:, 1:].eq(0).all()
