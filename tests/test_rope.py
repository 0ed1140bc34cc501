"""The RoPE operator contract (Transformer System M3.4 — Rotary Position Embedding, §0x01A–0x08, failure lab 0x0C)
and the periodicity facts of Disentangling the Expressivity of RoPE (§2.4 Eq. 7, Prop. 4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.base.errors import InputError
from langclass.core.precision.numerics import rotation_table
from langclass.models.nn.attention import MultiHeadAttention
from langclass.models.nn.encodings import PeriodicRoPE, RoPE, make_encoding

torch.manual_seed(0)


def _scores(q_rot_fn, k_rot_fn, q, k, qpos, kpos):
    """Pairwise scores q_i·k_j [B, H, Nq, Nk] after rotating q at qpos and k at kpos."""
    return torch.matmul(q_rot_fn(q, qpos), k_rot_fn(k, kpos).transpose(-2, -1))


def shift_invariant(q_rot_fn, k_rot_fn, shift: int = 37, tol: float = 1e-4) -> bool:
    """The oracle of §0x08A: a common shift of query and key positions must preserve pairwise scores."""
    g = torch.Generator().manual_seed(1)
    B, H, N, D = 2, 3, 5, 16  # distinct H and N so a wrong broadcast axis cannot hide
    q = torch.randn(B, H, N, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, H, N, D, generator=g, dtype=torch.float64)
    pos = torch.arange(N).unsqueeze(0).expand(B, N)
    a = _scores(q_rot_fn, k_rot_fn, q, k, pos, pos)
    b = _scores(q_rot_fn, k_rot_fn, q, k, pos + shift, pos + shift)
    return bool(torch.allclose(a, b, rtol=tol, atol=tol))


@pytest.mark.parametrize("layout", ["interleaved", "half_split"])
@pytest.mark.parametrize("rotary_dim", [16, 8])
@pytest.mark.parametrize("compute_dtype", ["float32", "float64"])
def test_scores_depend_only_on_offset(layout, rotary_dim, compute_dtype):
    rope = RoPE(16, base=10_000.0, rotary_dim=rotary_dim, pair_layout=layout, compute_dtype=compute_dtype)
    assert shift_invariant(rope.apply, rope.apply)
    # also at large offsets (phase formed in float32 stays accurate enough)
    assert shift_invariant(rope.apply, rope.apply, shift=100_000, tol=5e-2 if compute_dtype == "float32" else 1e-6)


def test_mismatched_frequencies_or_one_sided_rotation_fail_the_shift_oracle():
    """Counterexamples: the oracle must be able to fail (failure lab: 'RoPE to Q but not K', wrong rope_theta)."""
    good = RoPE(16, base=10_000.0)
    other_base = RoPE(16, base=500.0)
    other_denominator = RoPE(16, angles=[10_000.0 ** (-2 * t / 16 / 2) for t in range(8)])
    assert shift_invariant(good.apply, good.apply)
    assert not shift_invariant(good.apply, other_base.apply)
    assert not shift_invariant(good.apply, other_denominator.apply)
    assert not shift_invariant(good.apply, lambda x, p: x)  # Q rotated, K not
    assert not shift_invariant(lambda x, p: x, good.apply)  # K rotated, Q not
    # a reversed rotate_half sign (rotation by −φ on one side) also fails
    flipped = lambda x, p: good.apply(x, -p)  # noqa: E731
    assert not shift_invariant(good.apply, flipped)
    # rotating the input *before* a (channel-mixing) projection is a different object: not relative
    g = torch.Generator().manual_seed(5)
    Wq, Wk = torch.randn(16, 16, generator=g, dtype=torch.float64), torch.randn(16, 16, generator=g, dtype=torch.float64)
    assert shift_invariant(lambda x, p: good.apply(x @ Wq.T, p), lambda x, p: good.apply(x @ Wk.T, p))
    assert not shift_invariant(lambda x, p: good.apply(x, p) @ Wq.T, lambda x, p: good.apply(x, p) @ Wk.T)


@pytest.mark.parametrize("enc", [RoPE(12, rotary_dim=8, pair_layout="interleaved"), RoPE(12, rotary_dim=12),
                                 PeriodicRoPE(12, periods=[2, 3, 5], rotary_dim=6)])
def test_rotate_then_inverse_is_identity_and_position_zero_is_identity(enc):
    x = torch.randn(2, 3, 7, 12, dtype=torch.float32)
    pos = torch.arange(7).unsqueeze(0).expand(2, 7) * 13 + 5
    back = enc.apply(enc.apply(x, pos), -pos)
    torch.testing.assert_close(back, x, rtol=1e-5, atol=1e-5)
    zero = torch.zeros(2, 7, dtype=torch.long)
    assert torch.equal(enc.apply(x, zero), x)


@pytest.mark.parametrize("layout", ["interleaved", "half_split"])
def test_matrix_rotate_half_and_complex_paths_agree(layout):
    enc = RoPE(10, base=300.0, rotary_dim=8, pair_layout=layout, compute_dtype="float64")
    x = torch.randn(2, 3, 6, 10, dtype=torch.float64)
    pos = torch.tensor([[0, 1, 2, 3, 50, 999], [7, 8, 9, 10, 11, 12]])
    fast = enc.apply(x, pos)
    M = enc.rotation_matrix(pos)  # [B, N, D, D]
    via_matrix = torch.einsum("bnij,bhnj->bhni", M, x)
    via_complex = enc.apply_complex(x, pos)
    torch.testing.assert_close(fast, via_matrix, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fast, via_complex, rtol=1e-12, atol=1e-12)
    # the explicit matrix is orthogonal with det 1 and the relative identity R_iᵀ R_j = R_{j−i} holds
    Mi, Mj = enc.rotation_matrix(torch.tensor([5])), enc.rotation_matrix(torch.tensor([12]))
    rel = enc.rotation_matrix(torch.tensor([7]))
    torch.testing.assert_close(Mi[0].T @ Mj[0], rel[0], rtol=1e-9, atol=1e-9)
    assert abs(torch.linalg.det(M[0, 4]).item() - 1) < 1e-12


def test_sign_convention_two_dimensional_sanity_check():
    """§0x03: rotating (1, 0) by 90° gives (0, 1); the score with a key rotated by 30° is sin 30°."""
    enc = RoPE(2, angles=[math.pi / 2], compute_dtype="float64")
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    out = enc.apply(q, torch.tensor([1]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0]], dtype=torch.float64), atol=1e-15, rtol=0)
    enc30 = RoPE(2, angles=[math.pi / 6], compute_dtype="float64")
    k = enc30.apply(q, torch.tensor([1]))
    assert abs(float(out[0] @ k[0]) - 0.5) < 1e-12


def test_interleaved_and_half_split_equal_after_projection_row_permutation_and_differ_under_flag_only():
    torch.manual_seed(3)
    d_model, H, d_head, R = 12, 2, 6, 4
    attn_i = MultiHeadAttention(d_model, H, d_head, mask="nonstrict").double()
    enc_i = RoPE(d_head, base=50.0, rotary_dim=R, pair_layout="interleaved", compute_dtype="float64")
    enc_h = RoPE(d_head, base=50.0, rotary_dim=R, pair_layout="half_split", compute_dtype="float64")
    perm = enc_i.layout_permutation()
    assert perm == [0, 2, 1, 3, 4, 5]  # identity on the tail (channels ≥ R)
    attn_h = MultiHeadAttention(d_model, H, d_head, mask="nonstrict").double()
    attn_h.load_state_dict(attn_i.state_dict())
    rows = torch.cat([torch.tensor(perm) + h * d_head for h in range(H)])
    with torch.no_grad():
        for proj in (attn_h.q_proj, attn_h.k_proj):  # V is not rotary: left as is
            proj.weight.copy_(proj.weight[rows])
            proj.bias.copy_(proj.bias[rows])
    x = torch.randn(2, 9, d_model, dtype=torch.float64)
    pos = torch.arange(9).unsqueeze(0)
    out_i, tr_i = attn_i(x, pos, None, enc_i, return_trace=True)
    out_h, tr_h = attn_h(x, pos, None, enc_h, return_trace=True)
    torch.testing.assert_close(tr_i.scores, tr_h.scores, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out_i, out_h, rtol=1e-12, atol=1e-12)
    # flag-only change: same weights, other layout → different scores (same shapes)
    out_flag, tr_flag = attn_i(x, pos, None, enc_h, return_trace=True)
    assert tr_flag.scores.shape == tr_i.scores.shape
    assert (tr_flag.scores - tr_i.scores).abs().max() > 1e-3
    # permuting the full head (tail included) is a different model as well
    assert enc_i.layout_permutation()[R:] == list(range(R, d_head))


@pytest.mark.parametrize("enc", [RoPE(16, rotary_dim=6), PeriodicRoPE(16, periods=3, rotary_dim=8), RoPE(16, rotary_dim=0)])
def test_partial_rotary_tail_is_untouched_bit_for_bit(enc):
    x = torch.randn(2, 4, 9, 16).to(torch.bfloat16)
    pos = torch.arange(9).unsqueeze(0).expand(2, 9) + 1000
    out = enc.apply(x, pos)
    assert out.dtype == torch.bfloat16 and out.shape == x.shape
    assert torch.equal(out[..., enc.rotary_dim :], x[..., enc.rotary_dim :])
    if enc.rotary_dim:
        assert not torch.equal(out[..., : enc.rotary_dim], x[..., : enc.rotary_dim])


def test_rotary_dim_not_d_head_is_the_exponent_denominator():
    enc = RoPE(64, base=10_000.0, rotary_dim=32)
    t = np.arange(16)
    expected = (10_000.0 ** (-2 * t / 32)).astype(np.float32)
    wrong = (10_000.0 ** (-2 * t / 64)).astype(np.float32)
    got = enc.inv_freq.numpy()
    assert np.array_equal(got, expected)
    assert got[0] == wrong[0] == 1.0  # only the first frequency coincides
    assert not np.any(got[1:] == wrong[1:])
    assert enc.manifest()["exponent_denominator"] == "rotary_dim"


def test_phase_is_float32_whatever_the_model_dtype_and_matches_numerics_table():
    enc = RoPE(8, base=10_000.0)
    pos = torch.arange(0, 5000, 7).unsqueeze(0)
    cos, sin = enc.cos_sin(pos)
    assert cos.dtype == torch.float32 and sin.dtype == torch.float32
    # same table whatever the model dtype: a bfloat16 model rotates in float32 and rounds once at the end
    enc_b = RoPE(8, base=10_000.0)
    torch.nn.Module.to(enc_b, torch.bfloat16)  # a model-wide .to(dtype) must not touch the frequencies
    assert enc_b.inv_freq.dtype == torch.float32
    x = torch.randn(1, 2, pos.shape[1], 8).to(torch.bfloat16)
    ref = enc.apply(x.float(), pos).to(torch.bfloat16)
    assert torch.equal(enc_b.apply(x, pos), ref)
    # pair 0 has angle 1: its realized entries equal the numerics model with float32 phases
    c_np, s_np = rotation_table(1.0, pos[0].numpy(), "float32", phase="float32")
    assert np.array_equal(cos[0, :, 0].numpy(), c_np) and np.array_equal(sin[0, :, 0].numpy(), s_np)


def test_position_ids_must_be_integers():
    enc = RoPE(8)
    with pytest.raises(TypeError):
        enc.cos_sin(torch.arange(4).float())
    with pytest.raises(TypeError):
        PeriodicRoPE(8).cos_sin(torch.arange(4).float())


def test_rope_acts_per_head_not_on_d_model():
    enc = RoPE(8)
    with pytest.raises(ValueError):
        enc.apply(torch.randn(1, 5, 16), torch.arange(5).unsqueeze(0))  # d_model-wide tensor
    x = torch.randn(1, 3, 5, 8)
    pos = torch.arange(5).unsqueeze(0)
    out = enc.apply(x, pos)
    for h in range(3):  # every head gets the same per-position rotation
        torch.testing.assert_close(out[:, h], enc.apply(x[:, h], pos))


def test_v_is_never_rotated():
    """With Q = K = 0 the weights are uniform, so the head output is the mean of the *unrotated* V."""
    attn = MultiHeadAttention(8, 2, 4, mask="nonstrict").double()
    with torch.no_grad():
        attn.q_proj.weight.zero_(); attn.q_proj.bias.zero_()
        attn.k_proj.weight.zero_(); attn.k_proj.bias.zero_()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    pos = torch.arange(6).unsqueeze(0)
    _, tr_rope = attn(x, pos, None, RoPE(4, compute_dtype="float64"), return_trace=True)
    _, tr_nope = attn(x, pos, None, None, return_trace=True)
    torch.testing.assert_close(tr_rope.heads, tr_nope.heads, rtol=0, atol=1e-15)
    v = attn.v_proj(x).view(1, 6, 2, 4).transpose(1, 2)
    expected = torch.cumsum(v, dim=2) / torch.arange(1, 7, dtype=torch.float64)[None, None, :, None]
    torch.testing.assert_close(tr_rope.heads, expected)


def test_manifest_digest_changes_with_base_pairing_or_origin_only():
    base = dict(d_head=16, rotary_dim=8)
    a = make_encoding("rope", **base)
    same = make_encoding("rope", **base)
    assert a.digest() == same.digest() and len(a.digest()) == 64
    variants = [
        make_encoding("rope", base=500.0, **base),
        make_encoding("rope", pair_layout="interleaved", **base),
        make_encoding("rope", position_origin=1, **base),
        make_encoding("rope", d_head=16, rotary_dim=16),
    ]
    digests = {v.digest() for v in variants}
    assert a.digest() not in digests and len(digests) == len(variants)
    m = a.manifest()
    for key in ("family", "base", "rotary_dim", "pair_layout", "position", "compute_dtype", "inv_freq", "exponent_denominator"):
        assert key in m
    # rebuilding from spec gives the same operator
    assert make_encoding(**a.spec()).digest() == a.digest()


def test_invalid_rotary_configurations_are_rejected():
    with pytest.raises(InputError):
        RoPE(8, rotary_dim=5)  # odd
    with pytest.raises(InputError):
        RoPE(8, rotary_dim=10)  # larger than d_head
    with pytest.raises(InputError):
        RoPE(8, pair_layout="gptj")
    with pytest.raises(InputError):
        RoPE(8, base=0.0)
    with pytest.raises(InputError):
        RoPE(8, angles=[1.0])  # wrong count
    with pytest.raises(InputError):
        PeriodicRoPE(8, periods=[2, 0])
    with pytest.raises(InputError):
        PeriodicRoPE(8, periods=[2, 3, 4], rotary_dim=4)  # 3 periods for 2 pairs


# --- periodicity (Disentangling the Expressivity of RoPE, Def. 2.1, Eq. 7, Prop. 4.1) ----------


def test_periodic_rope_tables_repeat_bitwise_up_to_a_million():
    enc = PeriodicRoPE(16, periods=[2, 3, 5, 7, 12, 1], steps=[1, 1, 2, 3, 5, 0], rotary_dim=12)
    N = 1_000_000
    pos = torch.arange(N + 13)
    cos, sin = enc.cos_sin(pos)  # [N+13, 6] float32
    assert cos.dtype == torch.float32
    for d, m in enumerate(enc.periods):
        assert torch.equal(cos[m : N + m, d], cos[:N, d]) and torch.equal(sin[m : N + m, d], sin[:N, d])
    # exact table values at quarter turns (round of the ideal rotation, sin π = 0 exactly)
    assert cos[1, 0].item() == -1.0 and sin[1, 0].item() == 0.0
    assert sin[3, 1].item() == 0.0 and cos[3, 1].item() == 1.0
    # and the rotation applied to vectors repeats too
    x = torch.randn(1, 1, 1, 16).expand(1, 1, 4, 16)
    p = torch.tensor([[5, 5 + 420, 999_995, 999_995 + 420]])  # 420 = lcm(2, 3, 5, 7, 12)
    out = enc.apply(x, p)
    assert torch.equal(out[..., 0, :], out[..., 1, :]) and torch.equal(out[..., 2, :], out[..., 3, :])


def test_conventional_rope_never_repeats_exactly():
    enc = RoPE(8, base=10_000.0)  # pair 0 has angle 1 rad: 1/(2π) is irrational
    N = 1_000_000
    cos, sin = enc.cos_sin(torch.arange(N + 1))
    first = torch.cat([cos[0], sin[0]])
    rows = torch.cat([cos, sin], dim=1)
    # a period m ≤ 10^6 would make row m equal to row 0 (the identity): no row 1..10^6 is
    same_as_origin = (rows[1:] == first).all(dim=1)
    assert not same_as_origin.any()


def test_forming_theta_times_i_breaks_the_period_of_a_rational_angle():
    """Prop. 2.2 holds for the ideal map only: computing θ·i in float32 for θ = 2π/3 does not repeat."""
    enc_phase = RoPE(2, angles=[2 * math.pi / 3])
    pos = torch.arange(3_000_000, 3_000_000 + 3000)
    c_phase, _ = enc_phase.cos_sin(pos)
    assert not torch.equal(c_phase[3:, 0], c_phase[:-3, 0])
    enc_table = PeriodicRoPE(2, periods=[3], rotary_dim=2)
    c_tab, _ = enc_table.cos_sin(pos)
    assert torch.equal(c_tab[3:, 0], c_tab[:-3, 0])


def test_default_periodic_rope_leaves_half_the_pairs_unrotated():
    enc = make_encoding("rope_periodic", d_head=8, periods=2)
    assert enc.rotary_dim == 4 and enc.d_head - enc.rotary_dim == 4
    assert enc.manifest()["periods"] == [2, 2]
    assert enc.manifest()["table_values"][0] == [[1.0, 0.0], [-1.0, 0.0]]


@settings(max_examples=25, deadline=None)
@given(st.integers(-10_000, 10_000), st.integers(0, 10_000), st.integers(0, 10_000),
       st.sampled_from(["interleaved", "half_split"]), st.floats(2.0, 1e6))
def test_relative_identity_property(shift, i, j, layout, base):
    """q_i·k_j = q_{i+s}·k_{j+s} for random positions, shifts, bases and layouts (float64 compute)."""
    enc = RoPE(6, base=base, rotary_dim=4, pair_layout=layout, compute_dtype="float64")
    g = torch.Generator().manual_seed(i * 7 + j)
    q = torch.randn(6, generator=g, dtype=torch.float64)
    k = torch.randn(6, generator=g, dtype=torch.float64)
    a = enc.apply(q[None], torch.tensor([i])) @ enc.apply(k[None], torch.tensor([j])).T
    b = enc.apply(q[None], torch.tensor([i + shift])) @ enc.apply(k[None], torch.tensor([j + shift])).T
    assert abs(a.item() - b.item()) < 1e-7
