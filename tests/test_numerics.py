"""Tests of langclass.core.precision.numerics: f_large, round_to and the certified range N_max^(k) (Eq. 10)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.precision.numerics import (
    DTYPES,
    certified_length,
    delta_L,
    f_large,
    float_format,
    ideal_certified_length,
    next_up,
    realized_offset_scores,
    rotation_table,
    round_to,
)

TORCH = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _prev(x: float, dtype: str) -> float:
    """Previous value of ``dtype`` below the positive normal value x (independent of next_up)."""
    if dtype == "float64":
        return float(np.nextafter(np.float64(x), 0.0))
    if dtype == "float32":
        return float(np.nextafter(np.float32(x), np.float32(0)))
    if dtype == "float16":
        return float(np.nextafter(np.float16(x), np.float16(0)))
    bits = np.array([x], dtype=np.float32).view(np.uint32)[0]
    assert bits & 0xFFFF == 0
    return float(np.array([bits - 0x10000], dtype=np.uint32).view(np.float32)[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_f_large_is_the_smallest_value_whose_exp_underflows_in_torch(dtype):
    fl = f_large(dtype)
    td = TORCH[dtype]
    # f_large is a value of the format
    assert float(torch.tensor(fl, dtype=torch.float64).to(td).double()) == fl
    assert torch.exp(-torch.tensor([fl], dtype=td)).item() == 0.0
    # ... and beyond it everything underflows too
    assert torch.exp(-torch.tensor([fl * 1.5, fl * 4], dtype=td)).eq(0).all()
    prev = _prev(fl, dtype)
    assert torch.exp(-torch.tensor([prev], dtype=td)).item() > 0.0


def test_f_large_known_values_and_numpy_agreement():
    assert f_large("bfloat16") == 93.0
    assert f_large("float16") == 17.34375
    assert f_large("float32") == 103.97208404541016
    assert 745.13 < f_large("float64") < 745.14
    assert f_large("bf16") == f_large("bfloat16")
    for dtype, npd in (("float64", np.float64), ("float32", np.float32)):
        fl = f_large(dtype)
        assert np.exp(-npd(fl)) == 0
        assert np.exp(-npd(_prev(fl, dtype))) > 0
    # the threshold is (p − emin) ln 2 and f_large is the next representable value above it
    for dtype in DTYPES:
        fmt = float_format(dtype)
        assert f_large(dtype) > (fmt.precision - fmt.emin) * math.log(2) - 1e-9
        assert _prev(f_large(dtype), dtype) < (fmt.precision - fmt.emin) * math.log(2) + 1e-9


def test_stable_softmax_with_margin_f_large_is_exactly_one_hot():
    for dtype in ("float32", "float16", "bfloat16"):
        fl = f_large(dtype)
        td = TORCH[dtype]
        scores = torch.tensor([[3.0, 3.0 - fl, 3.0 - 2 * fl, -1e3]], dtype=torch.float32).to(td)
        w = torch.softmax(scores, dim=-1)
        assert w.dtype == td and w.tolist() == [[1.0, 0.0, 0.0, 0.0]]
        # one step less margin leaves a non-zero weight
        close = torch.tensor([[3.0, 3.0 - _prev(fl, dtype)]], dtype=torch.float64)
        w = torch.softmax(close.to(td), dim=-1)
        assert w[0, 1].item() > 0


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_round_to_bfloat16_matches_torch_bitwise(x):
    mine = round_to(np.float32(x), "bfloat16")
    ref = torch.tensor([x], dtype=torch.float32).to(torch.bfloat16).float().numpy()[0]
    assert np.array([mine], np.float32).view(np.uint32)[0] == np.array([ref], np.float32).view(np.uint32)[0]


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_round_to_float32_and_float16_match_numpy(x):
    with np.errstate(over="ignore"):
        assert round_to(x, "float32").tobytes() == np.array(x, dtype=np.float32).tobytes()
        ref16 = np.array(x, dtype=np.float16)
    assert round_to(x, "float16").tobytes() == ref16.tobytes()


def test_round_to_edge_cases():
    # subnormals, ties to even, overflow
    assert float(round_to(2.0**-149 * 0.5, "float32")) == 0.0  # tie → 0 (even)
    assert float(round_to(2.0**-149 * 0.51, "float32")) == 2.0**-149
    assert float(round_to(2.0**-133 * 0.75, "bfloat16")) == 2.0**-133
    assert float(round_to(1 + 2**-8, "bfloat16")) == 1.0
    assert float(round_to(1 + 3 * 2**-8, "bfloat16")) == 1 + 2**-6
    assert math.isinf(float(round_to(65520.0, "float16")))  # max + half ulp → inf (tie to even)
    assert float(round_to(65519.0, "float16")) == 65504.0
    assert math.isnan(float(round_to(float("nan"), "bfloat16")))
    assert round_to(np.array([[1.0, 2.0]]), "bfloat16").shape == (1, 2)
    assert next_up(1.0, "bfloat16") == 1 + 2**-7
    assert next_up(0.0, "float16") == 2.0**-24
    with pytest.raises(InputError):
        round_to(1.0, "int8")
    with pytest.raises(InputError):
        f_large("float8")


def _brute_force_certified(k, g, C, dtype, max_length):
    """Eq. 10 literally, scalar by scalar, with the realized scores of realized_offset_scores."""
    S = realized_offset_scores(k, g, C, dtype, max_length)
    fl = f_large(dtype)
    best = min(k - 1, max_length)
    for L in range(k, max_length + 1):
        ok = True
        for i in range(k + 1, L + 2):
            for j in range(0, i):
                if j != i - k and S[i, i - k] - S[i, j] < fl:
                    ok = False
        if not ok:
            break
        best = L
    return best


@pytest.mark.parametrize(
    "k,g,C,dtype",
    [(1, 1.0, 1e4, "float32"), (2, 1.0, 1e4, "bfloat16"), (1, 0.7, 400.0, "float16"), (3, 2.0, 5e3, "float32"),
     (1, 1.0, 2e3, "float64")],
)
def test_certified_length_agrees_with_brute_force(k, g, C, dtype):
    got = certified_length(k, g, C, dtype, 60)
    assert got == _brute_force_certified(k, g, C, dtype, 60)
    assert k - 1 <= got <= 60


def test_realized_scores_match_torch_arithmetic():
    """The numpy emulation of the App. D head equals the same operations done by torch in F."""
    for dtype in ("float32", "float16", "bfloat16"):
        k, g, C, L = 1, 1.0, 300.0, 50
        S = realized_offset_scores(k, g, C, dtype, L)
        td = TORCH[dtype]
        c, s = rotation_table(g, np.arange(L + 2), dtype)
        c = torch.tensor(c.astype(np.float64)).to(td)
        s = torch.tensor(s.astype(np.float64)).to(td)
        b0 = torch.tensor(C * math.cos(k * g), dtype=torch.float64).to(td)
        b1 = torch.tensor(-C * math.sin(k * g), dtype=torch.float64).to(td)
        q0 = c * b0 - s * b1
        q1 = s * b0 + c * b1
        St = q0[:, None] * c[None, :] + q1[:, None] * s[None, :]
        mask = np.tril(np.ones((L + 2, L + 2), bool), -1)
        np.testing.assert_array_equal(St.double().numpy()[mask], S[mask])


def test_certified_range_gives_exact_hard_selection_and_fails_after():
    k, g, C, dtype, max_len = 1, 1.0, 1e4, "float32", 200
    N = certified_length(k, g, C, dtype, max_len)
    assert 0 < N < max_len
    S = torch.tensor(realized_offset_scores(k, g, C, dtype, N + 1), dtype=torch.float32)
    n = S.shape[0]
    visible = torch.tril(torch.ones(n, n, dtype=torch.bool), -1)
    w = torch.softmax(S.nan_to_num(0.0).masked_fill(~visible, float("-inf"))[1:], dim=-1)  # rows i = 1..N+2
    for i in range(k + 1, N + 2):
        row = w[i - 1]
        assert row[i - k].item() == 1.0 and (row.sum() - row[i - k]).item() == 0.0
    # at i = N + 2 some competitor is within f_large of the target (Eq. 10 fails there)
    i = N + 2
    gaps = S[i, i - k] - S[i, :i]
    gaps[i - k] = float("inf")
    assert gaps.min().item() < f_large(dtype)


def test_ideal_bound_and_delta():
    assert delta_L(1.0, 0) == math.inf
    assert delta_L(1.0, 1) == pytest.approx(1 - math.cos(1.0))
    # 1 − cos(44) is small: 44 ≈ 7·2π
    assert delta_L(1.0, 44) < 2e-4
    Lid = ideal_certified_length(1.0, 1e4, "float32", 500)
    assert 1e4 * delta_L(1.0, Lid) >= f_large("float32") > 1e4 * delta_L(1.0, Lid + 1)
    # realized and ideal ranges agree closely in float32 at moderate C
    assert abs(certified_length(1, 1.0, 1e4, "float32", 500) - Lid) <= 2
    # a larger scale never certifies less in exact arithmetic
    assert ideal_certified_length(1.0, 1e6, "float32", 2000) >= Lid


def test_certified_length_input_errors_and_limit():
    with pytest.raises(InputError):
        certified_length(0, 1.0, 1.0, "float32", 10)
    with pytest.raises(InputError):
        certified_length(1, float("nan"), 1.0, "float32", 10)
    with pytest.raises(InputError):
        certified_length(1, 1.0, -1.0, "float32", 10)
    with pytest.raises(InputError):
        certified_length(1, 1.0, 1.0, "float32", -1)
    with pytest.raises(InputError):
        certified_length(1, 1.0, 1.0, "int4", 10)
    with pytest.raises(LimitExceeded) as e:
        certified_length(1, 1.0, 1.0, "float32", 10**6)
    assert e.value.limit == "certified_length_work"
    assert certified_length(5, 1.0, 1e4, "float32", 3) == 3  # L < k: vacuous


def test_phase_modes_agree_at_small_positions():
    c1, s1 = rotation_table(1.0, np.arange(100), "float32", "ideal")
    c2, s2 = rotation_table(1.0, np.arange(100), "float32", "float32")
    assert np.max(np.abs(c1 - c2)) < 1e-4
    # at large positions the float32 phase drifts from the ideal one
    c1, _ = rotation_table(1.0, np.array([10**8 + 1]), "float32", "ideal")
    c2, _ = rotation_table(1.0, np.array([10**8 + 1]), "float32", "float32")
    assert abs(float(c1[0]) - float(c2[0])) > 1e-3


@settings(max_examples=15, deadline=None)
@given(k=st.integers(1, 3), g=st.floats(0.3, 3.0), logC=st.floats(1.0, 4.5), dtype=st.sampled_from(["float32", "bfloat16", "float16"]))
def test_certified_length_property_matches_brute_force(k, g, logC, dtype):
    C = 10.0**logC
    if dtype == "float16":
        C = min(C, 6e4)
    assert certified_length(k, g, C, dtype, 25) == _brute_force_certified(k, g, C, dtype, 25)


@pytest.mark.parametrize("C", [1e4, 3e4])
def test_certified_length_matches_the_torch_rope_head(C):
    """The App. D head built from the project's MultiHeadAttention + RoPE(angles=[g]) in float32 has
    realized scores within a couple of float32 ulps of C of the numerics model (BLAS may fuse
    multiply-adds and reorder the sum) and the same certified range N_max."""
    from langclass.models.nn.attention import MultiHeadAttention
    from langclass.models.nn.encodings import RoPE

    k, g, L = 1, 1.0, 120
    attn = MultiHeadAttention(2, 1, 2, mask="strict", score_scale=1.0)
    with torch.no_grad():
        for p in attn.parameters():
            p.zero_()
        attn.q_proj.bias[0] = C * math.cos(k * g)
        attn.q_proj.bias[1] = -C * math.sin(k * g)
        attn.k_proj.bias[0] = 1.0
    _, tr = attn(torch.zeros(1, L + 2, 2), torch.arange(L + 2).unsqueeze(0), None, RoPE(2, angles=[g]), return_trace=True)
    S = tr.scores[0, 0].detach().double().numpy()
    R = realized_offset_scores(k, g, C, "float32", L, phase="float32")
    low = np.tril(np.ones_like(S, dtype=bool), -1)
    assert np.max(np.abs(S[low] - R[low])) <= 2 * float(np.spacing(np.float32(C)))
    fl = f_large("float32")

    def observed(Sm):
        for i in range(k + 1, L + 2):
            gaps = Sm[i, i - k] - np.delete(Sm[i, :i], i - k)
            if gaps.min() < fl:
                return i - 2
        return L

    n = certified_length(k, g, C, "float32", L, phase="float32")
    assert observed(S) == n == observed(np.nan_to_num(R)) < L
    # stable softmax in the model puts weight exactly 1 on j = i − k up to N_max + 1
    w = tr.weights[0, 0].detach()
    for i in range(k + 1, n + 2):
        assert w[i, i - k].item() == 1.0


# --------------------------------------------------------------------------- pinned N_max values
_PINS = json.loads((Path(__file__).with_name("n_max_pins.json")).read_text())["rows"]


def test_certified_length_pinned_values():
    """N_max^(k) on a grid of (dtype, phase, g, C, max_length, k) equals the values the scalar
    row-block implementation computed before the vectorized one replaced it (tests/n_max_pins.json):
    early failures, the cap reached at 1000, overflowing and subnormal scales."""
    got = [[*row[:6], certified_length(row[5], row[2], row[3], row[0], row[4], phase=row[1])] for row in _PINS]
    assert got == _PINS


def test_conventional_rope_length_pinned_values():
    """The encoding step (min over offsets 1..k at the default g = 1, C = 1e7, float32, L ≤ 1000)."""
    from langclass.core.precision.encoding_choice import conventional_rope_length

    per = {row[5]: row[6] for row in _PINS if row[:5] == ["float32", "ideal", 1.0, 1e7, 1000]}
    assert per == {1: 709, 2: 710, 3: 711, 4: 712, 5: 713, 8: 716}
    out = conventional_rope_length(5, 1.0, 1e7, "float32", 1000)
    assert out["n_max"] == 709 and {j: out["n_max_per_offset"][j] for j in (1, 2, 3, 4, 5)} == {j: per[j] for j in (1, 2, 3, 4, 5)}


def _both_scans(k, g, C, dtype, max_length, phase="ideal"):
    """(sparse, dense) first failing query (None: none fails) of the two scans of
    certified_length; sparse is "n/a" when its error-bound filter does not apply."""
    from langclass.core.precision import numerics as nm

    fmt = float_format(dtype)
    table = nm._offset_table(float(g), max_length + 2, fmt.name, phase)
    q0, q1 = nm._query_vector(k, g, C, table.cos_t, table.sin_t, fmt.name)
    ar = nm._Arithmetic(fmt.name, q0, q1, table.kc, table.ks)
    sparse = nm._sparse_scan(k, fmt, f_large(dtype), q0, q1, table, ar)
    return ("n/a" if sparse is None else sparse[0]), nm._dense_scan(k, f_large(dtype), q0, q1, table, ar)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 6), g=st.floats(0.05, 6.0), logC=st.floats(2.0, 9.0), L=st.integers(5, 400),
       dtype=st.sampled_from(list(DTYPES)), phase=st.sampled_from(["ideal", "float32"]))
def test_sparse_scan_agrees_with_the_dense_scan(k, g, logC, L, dtype, phase):
    """The error-bound filter of the sparse scan never drops a key that decides Eq. 10."""
    C = 10.0**logC
    if dtype == "float16":
        C = min(C, 6e4)
    sparse, dense = _both_scans(k, g, C, dtype, L, phase)
    assert sparse in ("n/a", dense)


def test_sparse_scan_is_used_and_agrees_at_the_default_parameters():
    for k in (1, 2, 5):
        for g, C, dtype in ((1.0, 1e7, "float32"), (2**0.5, 1e9, "float32"), (1.0, 1e7, "float64")):
            sparse, dense = _both_scans(k, g, C, dtype, 1000)
            assert sparse != "n/a" and sparse == dense
    # and the dense scan alone agrees with the literal Eq. 10 (brute force) at small sizes
    for k, g, C, dtype in ((1, 1.0, 1e4, "float32"), (2, 0.7, 400.0, "float16"), (1, 1.0, 1e5, "bfloat16")):
        _, dense = _both_scans(k, g, C, dtype, 60)
        assert (60 if dense is None else max(dense - 2, k - 1)) == _brute_force_certified(k, g, C, dtype, 60)


def test_round_to_fast_paths_match_the_generic_rounding_at_every_midpoint():
    """round_to's float16 cast and bfloat16 bit rounding equal the frexp/ldexp rounding on every
    value of the format, every midpoint between neighbours and the float64 values next to it."""
    from langclass.core.precision.floats import _FORMATS, _round_generic

    f16 = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    bf16 = (np.arange(0, 0x7F80, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)
    for name, vals, bits in (("float16", f16, np.uint16), ("bfloat16", bf16, np.uint32)):
        mid = (vals[:-1] + vals[1:]) / 2
        xs = np.concatenate([vals, mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf), -mid, -np.nextafter(mid, np.inf),
                             [1e39, -1e39, np.inf, -np.inf, 0.0, -0.0, 1e-46, 7e4, 65520.0, 65519.99]])
        fast = round_to(xs, name)
        ref = _round_generic(xs, _FORMATS[name]).astype(fast.dtype)
        assert np.array_equal(fast.view(bits), ref.view(bits)), name
    assert np.isnan(round_to(np.nan, "bfloat16")) and np.isnan(round_to(np.nan, "float16"))
