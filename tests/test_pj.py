"""PJ-bias and PJ-rotary (*PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*):
relative law against independent references, reductions to RoPE/ALiBi, difference-module identities
(App. B), LC numerics (§7), gradients, softmax invariance and the exact periodic mode."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

from langclass.core.base.errors import InputError
from langclass.models.nn.attention import MultiHeadAttention
from langclass.models.nn.encodings import ALiBi, RoPE, make_encoding
from langclass.models.nn.pj import PJBias, beta_l, fold_frequency, nearest_root, phi_l
from langclass.models.nn.pj_rotary import PJRotary
from langclass.models.experiments.pj_diagnostics import functional_energy, head_readouts, leave_one_order_out, order_masses, sector_energies
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.training.train import parameter_groups

SEEDS = (0, 1, 2)


def random_bias(seed: int, *, H: int = 3, R: int = 2, F: int = 2, L: int = 42, dtype: str = "float64", **kw) -> PJBias:
    """A PJ-bias with every parameter drawn at random (amplitudes O(1), some damping)."""
    torch.manual_seed(seed)
    enc = PJBias(H, train_length=L, max_order=R, n_freqs=F, compute_dtype=dtype, **kw)
    with torch.no_grad():
        for name, p in enc.named_parameters():
            if name == "omega":
                p.uniform_(0.05, 3.0)
            elif name == "raw_damping":
                p.uniform_(-3.0, 0.0)
            else:
                p.normal_(0.0, 1.0)
    return enc


def mp_kernel(enc: PJBias, h: int, d: int) -> float:
    """K_h(d) from the formulas of Definition 1 / §6 in 40-digit arithmetic (independent of torch)."""
    with mpmath.workdps(40):
        P = {n: [[mpmath.mpf(float(v)) for v in row] for row in (p.detach().double().reshape(enc.n_heads, -1).tolist())]
             for n, p in enc.named_parameters()}
        L, R, F = mpmath.mpf(enc.train_length), enc.max_order, enc.n_freqs
        lg = P["gate_logits"][h]
        ex = [mpmath.exp(v) if s in enc.sectors else mpmath.mpf(0) for v, s in zip(lg, ("fj", "affine", "lc"))]
        g = [v / sum(ex) for v in ex]

        def soft(row):
            e = [mpmath.exp(v) for v in row]
            return [v / sum(e) for v in e]

        om = [mpmath.mpf(float(v)) for v in enc.omega[h].tolist()]
        d = mpmath.mpf(d)
        x = d / L
        K = mpmath.mpf(0)
        if "fj" in enc.sectors:
            a = soft(P["fj_alpha_logits"][h])
            c = [mpmath.log1p(mpmath.exp(v)) for v in P["raw_damping"][h]] if enc.damping else [0] * F
            for r in range(R + 1):
                for l in range(F):
                    zr, zi = P["fj_zeta_re"][h][l * (R + 1) + r], P["fj_zeta_im"][h][l * (R + 1) + r]
                    K += g[0] * a[r] * x**r / mpmath.factorial(r) * mpmath.exp(-c[l] * x) * (zr * mpmath.cos(om[l] * d) - zi * mpmath.sin(om[l] * d))
        if "affine" in enc.sectors:
            s = mpmath.log1p(mpmath.exp(P["raw_slope"][h][0]))
            K += -g[1] * s * x
        if "lc" in enc.sectors:
            a = soft(P["lc_alpha_logits"][h])
            phi, beta = L * mpmath.asinh(x), d / mpmath.sqrt(d * d + L * L)
            for r in range(R + 1):
                for l in range(F):
                    zr, zi = P["lc_zeta_re"][h][l * (R + 1) + r], P["lc_zeta_im"][h][l * (R + 1) + r]
                    K += g[2] * a[r] * beta**r * (zr * mpmath.cos(om[l] * phi) - zi * mpmath.sin(om[l] * phi))
        return float(K)


# ------------------------------------------------------------------------------ 1. relative law, bias
@pytest.mark.parametrize("seed", SEEDS)
def test_bias_entries_are_a_function_of_the_lag_matching_a_40_digit_reference(seed):
    enc = random_bias(seed)
    lags = [0, 1, 2, 7, 41, 300, 4096, 99_999]
    K = enc.kernel(lags=torch.tensor(lags)).detach()
    for h in range(enc.n_heads):
        for col, d in enumerate(lags):
            ref = mp_kernel(enc, h, d)
            assert abs(float(K[h, col]) - ref) <= 1e-12 * max(1.0, abs(ref)) * (1 + d / 1000), (h, d)
    # float32 model: same table rounded (1e-6 relative)
    enc32 = random_bias(seed, dtype="float32")
    K32 = enc32.score_bias(torch.arange(0, 2000).unsqueeze(0))[0, :, 1999, 1999 - torch.tensor([1, 300, 1999])]
    ref = enc32.kernel(lags=torch.tensor([1, 300, 1999])).detach()
    assert torch.allclose(K32.double(), ref, rtol=1e-6, atol=1e-6 * float(ref.abs().max()))


@pytest.mark.parametrize("origin", [1, 1000])
def test_bias_is_bit_identical_under_a_shift_of_positions(origin):
    enc = random_bias(0, dtype="float32")
    pos = torch.arange(30).unsqueeze(0)
    base = enc.score_bias(pos)
    assert torch.equal(base, enc.score_bias(pos + origin))
    shifted = PJBias(3, max_order=2, n_freqs=2, position_origin=origin)
    shifted.load_state_dict(enc.state_dict())
    assert torch.equal(shifted.score_bias(shifted.position_ids(30)), base)
    i, j = torch.tril_indices(30, 30)
    table = enc.kernel(30).float()
    assert torch.equal(base[0][:, i, j], table[:, i - j])  # Toeplitz gather of the [H, D] table
    assert torch.all(base[0][:, j[i != j], i[i != j]] == 0)  # future entries are 0


# ------------------------------------------------------------------------------ 2. relative law, rotary
def closed_form_logit(q: np.ndarray, k: np.ndarray, d: int, enc: PJRotary) -> float:
    """Re Σ_b e^{iω_b d} Σ_{c≤r<m} (εd)^{r−c}/(r−c)! q_{b,r} conj(k_{b,c}) (§1.3 derivation)."""
    m, B, eps = enc.order, enc.n_blocks, enc.epsilon
    omega = enc.inv_freq.double().numpy()[::m]
    zq = q[: 2 * m * B : 2] + 1j * q[1 : 2 * m * B : 2]
    zk = k[: 2 * m * B : 2] + 1j * k[1 : 2 * m * B : 2]
    tail = float(q[2 * m * B :] @ k[2 * m * B :])
    total = 0j
    for b in range(B):
        for r in range(m):
            for c in range(r + 1):
                total += np.exp(1j * omega[b] * d) * (eps * d) ** (r - c) / math.factorial(r - c) * zq[m * b + r] * np.conj(zk[m * b + c])
    return total.real + tail


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_rotary_logits_depend_on_the_lag_only_and_match_the_closed_form(m):
    enc = PJRotary(d_head=2 * m * 2 + 2, order=m, eta=1.0, train_length=42, base=100.0, compute_dtype="float64")
    g = torch.Generator().manual_seed(m)
    q = torch.randn(enc.d_head, generator=g, dtype=torch.float64)
    k = torch.randn(enc.d_head, generator=g, dtype=torch.float64)
    for i, j in [(5, 2), (40, 0), (300, 123)]:
        for o in (0, 1, 1000):
            pos = torch.tensor([[i + o, j + o]])
            x = torch.stack([q, k]).unsqueeze(0)  # [1, 2, d_head]
            qq, kk = enc.apply(x, pos, "q")[0, 0], enc.apply(x, pos, "k")[0, 1]
            logit = float(qq @ kk)
            ref = closed_form_logit(q.numpy(), k.numpy(), i - j, enc)
            scale = (1 + enc.epsilon * (i + o)) ** (2 * (m - 1)) * float(q.norm() * k.norm())
            assert abs(logit - ref) <= 1e-14 * scale + 1e-13, (m, i, j, o)


def test_rotary_float32_error_bound_and_bf16_is_computed_in_float32():
    enc32 = PJRotary(d_head=8, order=2, compute_dtype="float32")
    enc64 = PJRotary(d_head=8, order=2, compute_dtype="float64")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 2, 8, generator=g)
    pos = torch.tensor([[500, 480]])
    l32 = float(enc32.apply(x, pos, "q")[0, 0] @ enc32.apply(x, pos, "k")[0, 1])
    l64 = float(enc64.apply(x.double(), pos, "q")[0, 0] @ enc64.apply(x.double(), pos, "k")[0, 1])
    assert abs(l32 - l64) < 1e-4
    xb = x.to(torch.bfloat16)
    out = enc32.apply(xb, pos, "q")
    assert out.dtype == torch.float32  # never rounded back to bf16
    assert torch.equal(out, enc32.apply(xb.float(), pos, "q"))
    # under autocast the recognizer's QKᵀ runs in float32 too
    att = MultiHeadAttention(8, 1, 8)
    h = torch.randn(1, 6, 8)
    p = torch.arange(6).unsqueeze(0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, tr = att(h, p, None, enc32, return_trace=True)
    assert tr.scores.dtype == torch.float32


# ------------------------------------------------------------------------------ 3. reductions
@pytest.mark.parametrize("kw", [{"order": 1}, {"order": 3, "eta": 0.0}])
def test_pj_rotary_order_one_or_eta_zero_is_rope_bit_for_bit(kw):
    m = kw["order"]
    enc = PJRotary(d_head=12, rotary_dim=12 if m == 1 else 12, **kw)
    omega = enc.inv_freq.double().tolist()
    rope = RoPE(d_head=12, pair_layout="interleaved", angles=omega)
    x = torch.randn(2, 3, 50, 12)
    pos = torch.arange(50).unsqueeze(0).expand(2, 50) + 7
    assert torch.equal(enc.apply(x, pos, "q"), rope.apply(x, pos))
    assert torch.equal(enc.apply(x, pos, "k"), rope.apply(x, pos))


def test_affine_only_pj_bias_is_alibi_on_visible_entries():
    H, L = 4, 42
    alibi = ALiBi(H)
    enc = PJBias(H, train_length=L, sectors=["affine"], slope_init=1.0)
    with torch.no_grad():
        s = torch.tensor([L * v for v in alibi.slopes], dtype=torch.float64)
        enc.raw_slope.copy_((s + torch.log(-torch.expm1(-s))).float())  # softplus⁻¹
    assert torch.equal(enc.gates()[:, 1], torch.ones(H, dtype=torch.float64))
    pos = torch.arange(80).unsqueeze(0)
    i, j = torch.tril_indices(80, 80)
    a, b = alibi.score_bias(pos)[0][:, i, j], enc.score_bias(pos)[0][:, i, j]
    assert torch.allclose(a, b, rtol=2e-6, atol=1e-6)


def test_fj_order_zero_unit_amplitudes_give_cos_and_sin():
    enc = PJBias(1, max_order=0, sectors=["fj"], damping=False, omega_init=[0.7], compute_dtype="float64")
    d = torch.arange(200, dtype=torch.float64)
    with torch.no_grad():
        enc.fj_zeta_re.fill_(1.0), enc.fj_zeta_im.fill_(0.0)
        assert torch.allclose(enc.kernel(200)[0], torch.cos(0.7 * d), atol=1e-15)
        enc.fj_zeta_re.fill_(0.0), enc.fj_zeta_im.fill_(-1.0)  # ζ = −i
        assert torch.allclose(enc.kernel(200)[0], torch.sin(0.7 * d), atol=1e-15)


def test_lc_matches_fj_to_second_order_for_short_lags():
    L = 10_000
    fj = PJBias(1, train_length=L, max_order=0, sectors=["fj"], damping=False, omega_init=[0.3], compute_dtype="float64")
    lc = PJBias(1, train_length=L, max_order=0, sectors=["lc"], omega_init=[0.3], compute_dtype="float64")
    with torch.no_grad():
        for e in (fj, lc):
            e.fj_zeta_re.fill_(1.0), e.lc_zeta_re.fill_(1.0), e.fj_zeta_im.fill_(0.5), e.lc_zeta_im.fill_(0.5)
    d = torch.arange(0, 100, dtype=torch.float64)
    diff = (fj.kernel(lags=d) - lc.kernel(lags=d)).abs()[0]
    bound = 0.3 * math.hypot(1, 0.5) * d**3 / (6 * L**2)  # |ω(d − φ_L)| ≤ ω d³/(6L²)
    assert torch.all(diff <= bound + 1e-15)
    assert float(diff[-1]) > 0  # and they do differ (not the same code path)


# ------------------------------------------------------------------------------ 4. difference modules
def apply_poly(coeffs: np.ndarray, K: np.ndarray) -> np.ndarray:
    """(P(E)K)(d) = Σ_k p_k K(d + k) for P(t) = Σ p_k t^k (coefficients low → high)."""
    n = len(K) - len(coeffs) + 1
    return sum(c * K[k : k + n] for k, c in enumerate(coeffs))


def test_jet_basis_identities_of_proposition_2():
    d = np.arange(0, 40)
    for z in (np.exp(0.7j), 0.9 * np.exp(-1.3j), 1.0 + 0j):
        phi = [np.array([math.comb(int(t), r) for t in d]) * z**d for r in range(4)]
        for r in range(1, 4):
            lhs = phi[r][1:] - z * phi[r][:-1]
            assert np.allclose(lhs, z * phi[r - 1][:-1], atol=1e-12)
            assert np.allclose(apply_poly((np.poly1d([1, -z]) ** (r + 1)).coeffs[::-1], phi[r]), 0, atol=1e-9)
    assert np.array_equal(apply_poly(np.array([1.0, -2.0, 1.0]), d.astype(float)), np.zeros(len(d) - 2))  # (E − 1)² d = 0


@pytest.mark.parametrize("seed", SEEDS)
def test_damped_fj_plus_affine_kernel_is_annihilated_by_its_roots(seed):
    R = 2
    enc = random_bias(seed, H=1, R=R, F=1, sectors=["fj", "affine"])
    K = enc.kernel(70)[0].detach().numpy()
    c, w = float(enc.damping_rate()[0, 0]), float(enc.omega[0, 0])
    z = np.exp(-c / enc.train_length + 1j * w)
    P = np.poly1d([1.0]) * np.poly1d([1, -z]) ** (R + 1) * np.poly1d([1, -np.conj(z)]) ** (R + 1) * np.poly1d([1, -1]) ** 2
    res = apply_poly(P.coeffs[::-1].real, K)
    assert np.abs(P.coeffs.imag).max() < 1e-12
    assert np.abs(res[:61]).max() < 1e-9 * max(1.0, np.abs(K).max())
    # without (E − 1)² the affine part survives
    P2 = np.poly1d([1, -z]) ** (R + 1) * np.poly1d([1, -np.conj(z)]) ** (R + 1)
    assert np.abs(apply_poly(P2.coeffs[::-1].real, K)).max() > 1e-6


def test_lc_kernel_is_not_a_difference_module_solution():
    enc = random_bias(0, H=1, R=2, F=1, sectors=["lc"], L=8)
    K = enc.kernel(70)[0].detach().numpy()
    w = float(enc.omega[0, 0])
    z = np.exp(1j * w)
    P = np.poly1d([1, -z]) ** 3 * np.poly1d([1, -np.conj(z)]) ** 3 * np.poly1d([1, -1]) ** 2
    assert np.abs(apply_poly(P.coeffs[::-1].real, K)).max() > 1e-3 * np.abs(K).max()


@pytest.mark.parametrize("omega", [0.6, math.pi])
@pytest.mark.parametrize("periods", [10, 100])
def test_lemma_a1_first_jet_is_not_in_phase_plus_affine(omega, periods):
    # Lemma A.1 (also at ω = π, which the paper excludes needlessly): d cos ωd ∉ span{1, d, cos ωd, sin ωd}.
    # On d = 0 … N the projection keeps only d̄·cos ωd, so R² → 3/4 (= d̄²/mean d²) and never reaches 1.
    d = np.arange(0, int(periods * 2 * math.pi / omega) + 1, dtype=float)
    y = d * np.cos(omega * d)
    X = np.stack([np.ones_like(d), d, np.cos(omega * d), np.sin(omega * d)], axis=1)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    r2 = 1 - ((X @ coef - y) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert 0.70 < r2 < 0.76
    # the jet basis contains it exactly
    Xj = np.concatenate([X, (d * np.cos(omega * d))[:, None]], axis=1)
    coef, *_ = np.linalg.lstsq(Xj, y, rcond=None)
    assert np.abs(Xj @ coef - y).max() < 1e-8 * np.abs(y).max()


# ------------------------------------------------------------------------------ 5. diagnostics
def test_effective_mass_functional_energy_and_loo_closed_forms():
    enc = PJBias(2, max_order=2, n_freqs=1, sectors=["fj", "lc"], damping=False, omega_init=[0.5, 1.1], compute_dtype="float64")
    with torch.no_grad():
        enc.gate_logits.copy_(torch.tensor([[0.0, 0.0, math.log(3.0)], [1.0, 0.0, 1.0]]))
        enc.fj_alpha_logits.copy_(torch.tensor([[0.0, math.log(2.0), -math.inf], [0.0, 0.0, 0.0]]).clamp_min(-1e9))
        enc.lc_alpha_logits.zero_()
        enc.fj_zeta_re.copy_(torch.tensor([[[3.0, 0.0, 5.0]], [[1.0, 1.0, 1.0]]]))
        enc.fj_zeta_im.copy_(torch.tensor([[[4.0, 1.0, 0.0]], [[0.0, 0.0, 0.0]]]))
        enc.lc_zeta_re.copy_(torch.tensor([[[0.0, 0.0, 0.0]], [[0.0, 2.0, 0.0]]]))
        enc.lc_zeta_im.zero_()
    M = order_masses(enc)
    # head 0: g = (1/4, 0, 3/4); α^FJ = (1/3, 2/3, 0); |ζ^FJ| = (5, 1, 5); LC amplitudes 0
    assert torch.allclose(M["fj"][0], torch.tensor([0.25 * 5 / 3, 0.25 * 2 / 3, 0.0], dtype=torch.float64), atol=1e-12)
    assert torch.allclose(M["lc"][0], torch.zeros(3, dtype=torch.float64))
    tot = 0.25 * 5 / 3 + 0.25 * 2 / 3
    assert torch.allclose(M["normalized"][0], torch.tensor([5 / 7, 2 / 7, 0.0], dtype=torch.float64), atol=1e-9)
    assert abs(float(M["normalized"][0].sum()) - 1) < 1e-9 and tot > 0
    # head 1: g = (1/2, 0, 1/2), α uniform; M^FJ = 1/6 each, M^LC = (0, 1/3, 0)
    assert torch.allclose(M["normalized"][1], torch.tensor([1 / 6, 1 / 2, 1 / 6], dtype=torch.float64) / (5 / 6), atol=1e-9)
    # E = 1 when only one order is nonzero
    one = PJBias(1, max_order=2, sectors=["fj"], damping=False, omega_init=[0.4], compute_dtype="float64")
    with torch.no_grad():
        one.fj_zeta_re.copy_(torch.tensor([[[0.0, 2.0, 0.0]]])), one.fj_zeta_im.zero_()
    lags = torch.arange(1, 200, dtype=torch.float64)
    E = functional_energy(one, lags)[0]
    assert abs(float(E[1]) - 1) < 1e-9 and float(E[0]) == 0 and float(E[2]) == 0
    # with a single order, removing it leaves 0: Δ = mean_W K²
    per = PJBias(1, max_order=0, n_freqs=2, sectors=["fj"], damping=False, roots=[[[1, 8], [1, 4]]], compute_dtype="float64")
    with torch.no_grad():
        per.fj_zeta_re.copy_(torch.tensor([[[1.0], [0.5]]])), per.fj_zeta_im.zero_()
    lags = torch.arange(0, 64, dtype=torch.float64)
    K = per.kernel(lags=lags)
    d = leave_one_order_out(per, lags, K[0])
    assert torch.allclose(d[0], (K[0] ** 2).mean().reshape(1), atol=1e-12)


def test_two_frequency_loo_equals_mean_square_for_orthogonal_orders():
    enc = PJBias(1, max_order=1, sectors=["fj"], damping=False, omega_init=[math.pi / 2], learn_omega=False, compute_dtype="float64",
                 train_length=1)
    with torch.no_grad():
        enc.fj_zeta_re.copy_(torch.tensor([[[1.0, 0.0]]])), enc.fj_zeta_im.copy_(torch.tensor([[[0.0, -1.0]]]))
    lags = torch.arange(0, 8, dtype=torch.float64)  # order 0: cos(πd/2), order 1: d·sin(πd/2) — disjoint supports
    C0 = enc.components(lags=lags)[("fj", 0)][0]
    C1 = enc.components(lags=lags)[("fj", 1)][0]
    assert abs(float((C0 * C1).sum())) < 1e-14
    K = enc.kernel(lags=lags)[0]
    d = leave_one_order_out(enc, lags, K)[0]
    assert torch.allclose(d, torch.stack([(C0**2).mean(), (C1**2).mean()]), atol=1e-12)


def test_readouts_find_roots_ranges_and_sector_energies():
    enc = PJBias(2, max_order=0, sectors=["fj", "affine"], damping=False, omega_init=[math.pi + 0.01, 2 * math.pi / 3 - 2 * math.pi],
                 compute_dtype="float64")
    with torch.no_grad():
        enc.gate_logits.copy_(torch.tensor([[10.0, -10.0, 0.0], [-10.0, 10.0, 0.0]]))
        enc.fj_zeta_re.fill_(1.0), enc.fj_zeta_im.zero_()
    heads = head_readouts(enc, 50)
    assert (heads[0]["frequencies"][0]["a"], heads[0]["frequencies"][0]["q"]) == (1, 2)
    assert abs(heads[0]["frequencies"][0]["delta"] - 0.01) < 1e-9
    assert (heads[1]["frequencies"][0]["a"], heads[1]["frequencies"][0]["q"]) == (1, 3)
    assert heads[0]["sector_energy"]["fj"] > 0.99 and heads[1]["sector_energy"]["affine"] > 0.99
    assert heads[1]["effective_slope"] == pytest.approx(float(enc.gates()[1, 1] * enc.slope()[1]) / 42)
    assert nearest_root(2 * math.pi * 5 / 12 + 1e-3) == (5, 12, pytest.approx(1e-3))
    assert fold_frequency(-0.3) == pytest.approx(0.3) and fold_frequency(2 * math.pi + 0.3) == pytest.approx(0.3)
    S = sector_energies(enc, torch.arange(1, 51, dtype=torch.float64))
    assert torch.allclose(S.sum(dim=-1), torch.ones(2, dtype=torch.float64))


# ------------------------------------------------------------------------------ 6. LC numerics
def test_lc_coordinates():
    L = 40.0
    d = torch.linspace(0, 1e4, 20001, dtype=torch.float64)
    phi = phi_l(d, L)
    assert torch.all(phi[1:] > phi[:-1])
    gap = d - phi
    assert torch.all(gap >= 0) and torch.all(gap <= d**3 / (6 * L**2) + 1e-12)
    fd = (phi_l(d + 1e-4, L) - phi_l(d - 1e-4, L)) / 2e-4
    assert torch.allclose(fd[1:], 1 / torch.sqrt(1 + (d[1:] / L) ** 2), rtol=1e-7)
    eta = torch.asinh(d / L)
    assert torch.allclose(phi, L * eta, rtol=0, atol=2e-16 * float(phi.abs().max()))
    assert torch.allclose(beta_l(d, L), torch.tanh(eta), atol=2e-16)
    big = torch.tensor([0.0, 1.0, 253.0, 1e5, 1e7], dtype=torch.float64)
    b = beta_l(big, L)
    assert torch.all((b >= 0) & (b < 1))
    tiny = torch.tensor([1e-12], dtype=torch.float64)
    assert float(phi_l(tiny, L)) == pytest.approx(1e-12, rel=1e-15)  # asinh, not log(x + √(x²+1))
    # wrong-scale regression: the local increment at d = 32L is ≈ 0.0312 with the outer L, 3e-5 without
    L, T = 1024.0, 32768
    inc = float(phi_l(torch.tensor([T - 1.0], dtype=torch.float64), L) - phi_l(torch.tensor([T - 2.0], dtype=torch.float64), L))
    assert inc == pytest.approx(0.031236, rel=1e-4)
    wrong = float(torch.asinh(torch.tensor((T - 1.0) / L)) - torch.asinh(torch.tensor((T - 2.0) / L)))
    assert wrong == pytest.approx(3.0504e-5, rel=1e-3)


def test_lc_kernel_is_bounded_and_fp16_cannot_corrupt_it():
    enc = random_bias(1, H=2, R=3, F=1, sectors=["lc"], L=40)
    lags = torch.tensor([0.0, 10.0, 253.0, 1e4, 1e7], dtype=torch.float64)
    K = enc.kernel(lags=lags)
    amp = torch.softmax(enc.lc_alpha_logits.double(), -1) * torch.sqrt(enc.lc_zeta_re.double() ** 2 + enc.lc_zeta_im.double() ** 2)[:, 0]
    assert torch.all(K.abs() <= amp.sum(-1, keepdim=True) + 1e-12)
    d16 = torch.tensor([253.0], dtype=torch.float16)
    assert float(d16 / torch.sqrt(d16 * d16 + 40.0 * 40.0)) == 0.0  # the naive fp16 formula silently gives β = 0
    enc32 = random_bias(1, H=2, R=3, F=1, sectors=["lc"], L=40, dtype="float32")
    pos = torch.arange(300).unsqueeze(0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bias = enc32.score_bias(pos)
    assert bias.dtype == torch.float32
    assert torch.allclose(bias[0, :, 299, 299 - 253].double(), enc32.kernel(lags=torch.tensor([253.0]))[:, 0], rtol=1e-6)


# ------------------------------------------------------------------------------ 7. gradients
def test_gradcheck_every_pj_bias_parameter():
    from torch.func import functional_call

    enc = random_bias(2, H=1, R=1, F=1)
    lags = torch.tensor([0.0, 3.0, 29.0, 130.0], dtype=torch.float64)
    params = dict(enc.named_parameters())
    assert set(params) == {"omega", "raw_damping", "gate_logits", "fj_alpha_logits", "fj_zeta_re", "fj_zeta_im",
                           "lc_alpha_logits", "lc_zeta_re", "lc_zeta_im", "raw_slope"}

    class Kernel(torch.nn.Module):
        def __init__(self, e):
            super().__init__()
            self.e = e

        def forward(self, lags):
            return self.e.kernel(lags=lags)

    wrapper = Kernel(enc)
    for name, p in params.items():
        value = p.detach().clone().requires_grad_(True)
        assert torch.autograd.gradcheck(lambda v, name=name: functional_call(wrapper, {f"e.{name}": v}, (lags,)), (value,)), name


def test_gradcheck_pj_rotary_inputs():
    enc = PJRotary(d_head=6, order=3, eta=2.0, train_length=10, compute_dtype="float64")
    pos = torch.tensor([[3, 11, 17]])
    x = torch.randn(1, 3, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: enc.apply(t, pos, "q"), (x,))
    assert torch.autograd.gradcheck(lambda t: enc.apply(t, pos, "k"), (x,))


def test_omega_gradient_is_the_first_jet_and_masked_sectors_have_zero_gradient():
    R, L = 2, 42
    enc = random_bias(3, H=1, R=R, F=1, sectors=["fj"], L=L)
    d = torch.arange(0, 300, dtype=torch.float64)
    for r in range(R + 1):
        enc.zero_grad()
        enc.components(lags=d)[("fj", r)].sum().backward()
        a = float(torch.softmax(enc.fj_alpha_logits.double(), -1)[0, r])
        c = float(enc.damping_rate()[0, 0])
        w = float(enc.omega[0, 0])
        zr, zi = float(enc.fj_zeta_re[0, 0, r]), float(enc.fj_zeta_im[0, 0, r])
        x = d / L
        ref = -a * d * x**r / math.factorial(r) * torch.exp(-c * x) * (zr * torch.sin(w * d) + zi * torch.cos(w * d))
        assert float(enc.omega.grad[0, 0]) == pytest.approx(float(ref.sum()), rel=1e-9, abs=1e-9)
    # ∂K_LC/∂ω grows like φ_L(d), ∂K_FJ/∂ω like d
    lc = random_bias(3, H=1, R=0, F=1, sectors=["lc"], L=L)
    big = torch.tensor([1e4], dtype=torch.float64)
    g_lc = torch.autograd.grad(lc.kernel(lags=big).sum(), lc.omega)[0].abs()
    assert float(g_lc) <= float(lc.lc_zeta_re.abs().sum() + lc.lc_zeta_im.abs().sum()) * float(phi_l(big, L)) + 1e-9
    # a disabled sector: gate exactly 0, zero gradient, no NaN
    enc = random_bias(4, H=2, R=1, F=1, sectors=["fj", "affine"])
    assert torch.all(enc.gates()[:, 2] == 0)
    enc.kernel(40).sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name
    assert enc.lc_zeta_re.grad is None or torch.all(enc.lc_zeta_re.grad == 0)
    assert torch.all(enc.gate_logits.grad[:, 2] == 0)


# ------------------------------------------------------------------------------ 8. softmax invariances
def test_constant_shift_and_future_entries_do_not_change_attention():
    torch.manual_seed(0)
    enc = random_bias(5, H=2, R=1, F=1, dtype="float64")
    att = MultiHeadAttention(8, 2, 4).double()
    x = torch.randn(2, 9, 8, dtype=torch.float64)
    pos = torch.arange(9).unsqueeze(0)
    out, tr = att(x, pos, None, enc, return_trace=True)

    class Shifted(PJBias):
        pass

    shifted = Shifted(2, max_order=1, n_freqs=1, compute_dtype="float64")
    shifted.load_state_dict(enc.state_dict())
    base_bias = shifted.score_bias

    def plus_constant(p):
        b = base_bias(p)
        i = torch.arange(9)
        return b + 0.75 + 1e6 * (i[None, :] > i[:, None]).to(b.dtype)  # a constant, and junk on the future

    shifted.score_bias = plus_constant
    out2, tr2 = att(x, pos, None, shifted, return_trace=True)
    assert torch.allclose(tr.weights, tr2.weights, rtol=0, atol=1e-14)
    assert torch.allclose(out, out2, rtol=0, atol=1e-13)


# ------------------------------------------------------------------------------ 9. exact periodic mode
def test_periodic_mode_scores_are_bit_identical_modulo_q_and_snap():
    enc = PJBias(2, max_order=0, n_freqs=2, sectors=["fj"], damping=False, roots=[[[1, 3], [1, 2]], [[2, 5], [0, 1]]])
    with torch.no_grad():
        enc.fj_zeta_re.normal_(), enc.fj_zeta_im.normal_()
    pos = torch.arange(200).unsqueeze(0)
    bias = enc.score_bias(pos)[0]  # [H, T, T]
    for h, period in ((0, 6), (1, 5)):
        row = bias[h, 199, :200][torch.arange(199, -1, -1)]  # lag d = 0 … 199
        for d in range(period, 200):
            assert row[d].item() == row[d - period].item()
    assert "omega" not in dict(enc.named_parameters())
    # snap: learned frequencies near roots move onto them, amplitudes kept
    learned = PJBias(2, max_order=1, sectors=["fj", "affine", "lc"], omega_init=[2 * math.pi / 3 + 0.02, -math.pi + 0.01])
    snap = learned.snapped(12)
    assert snap.roots == (((1, 3),), ((1, 2),)) and snap.sectors == ("fj", "affine")
    d = torch.arange(0, 30, dtype=torch.float64)
    near = PJBias(1, max_order=0, sectors=["fj"], damping=False, omega_init=[-2 * math.pi / 5 - 1e-9], compute_dtype="float64")
    assert torch.allclose(near.kernel(lags=d), near.snapped(12).kernel(lags=d), atol=1e-7)


def test_periodic_mode_rejects_non_periodic_parts():
    for kw in ({"max_order": 1, "damping": False, "sectors": ["fj"]}, {"max_order": 0, "damping": False},
               {"max_order": 0, "sectors": ["fj"]}):
        with pytest.raises(InputError):
            PJBias(2, roots=[[1, 3]], **kw)
    with pytest.raises(InputError):
        make_encoding("pj_bias", n_heads=2, sectors=["xyz"])
    with pytest.raises(InputError):
        make_encoding("pj_rotary", d_head=8, order=3)  # rotary_dim 6 fits, but explicit 8 does not
        make_encoding("pj_rotary", d_head=8, order=3, rotary_dim=8)


# ------------------------------------------------------------------------------ integration
def test_parameters_move_with_the_model_keep_float32_and_skip_weight_decay():
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, encoding={"name": "pj_bias", "max_order": 1})
    m = Recognizer(cfg).to(torch.bfloat16)
    assert m.encoding.omega.dtype == torch.float32 and m.embedding.weight.dtype == torch.bfloat16
    m = Recognizer(cfg)
    groups = parameter_groups(m, 0.01)
    no_decay = {id(p) for g in groups[1:] for p in g["params"]}
    assert all(g["weight_decay"] == 0.0 for g in groups[1:]) and id(m.encoding.omega) in no_decay and id(m.encoding.gate_logits) in no_decay
    assert id(m.embedding.weight) not in no_decay
    m64 = Recognizer(RecognizerConfig(alphabet=("a",), d_model=8, n_heads=2, n_layers=1, dtype="float64", encoding={"name": "pj_bias"}))
    assert m64.encoding.omega.dtype == torch.float64
    for name in ("pj_bias", "pj_rotary"):
        r = Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, encoding={"name": name}))
        assert torch.isfinite(r.logits_for(["ab", "", "abba" * 10])).all()


def test_pj_parameter_groups_have_their_own_learning_rates_and_no_weight_decay():
    from langclass.models.experiments.sectors import PJ_DEFAULTS

    enc_cfg = {"name": "pj_bias", **PJ_DEFAULTS}
    m = Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, encoding=enc_cfg))
    e = m.encoding
    groups = parameter_groups(m, 0.01, 1e-3)
    by_name = {g.get("name"): g for g in groups}
    assert set(by_name) == {None, "pj", "omega"}
    assert by_name[None]["weight_decay"] == 0.01 and "lr" not in by_name[None]
    assert by_name["pj"]["weight_decay"] == by_name["omega"]["weight_decay"] == 0.0
    assert by_name["pj"]["lr"] == pytest.approx(1e-3 * PJ_DEFAULTS["lr_scale"]) and by_name["omega"]["lr"] == pytest.approx(1e-3 * PJ_DEFAULTS["omega_lr_scale"])
    assert [id(p) for p in by_name["omega"]["params"]] == [id(e.omega)]
    pj_ids = {id(p) for p in by_name["pj"]["params"]}
    for name in ("gate_logits", "fj_alpha_logits", "fj_zeta_re", "fj_zeta_im", "lc_zeta_re", "raw_slope", "raw_damping"):
        assert id(getattr(e, name)) in pj_ids, name
    # every parameter is in exactly one group
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in m.parameters())
    # the optimizer the training loop builds uses these rates
    opt = torch.optim.AdamW(groups, lr=1e-3)
    assert sorted(g["lr"] for g in opt.param_groups) == sorted([1e-3, 1e-3 * PJ_DEFAULTS["lr_scale"], 1e-3 * PJ_DEFAULTS["omega_lr_scale"]])
    # defaults: F = 4 frequencies drawn U(0, π) from the seed (reproducible, no fixed grid), slope e^raw
    torch.manual_seed(3)
    w1 = make_encoding("pj_bias", n_heads=4, **{k: v for k, v in PJ_DEFAULTS.items()}).frequencies()
    torch.manual_seed(3)
    w2 = make_encoding("pj_bias", n_heads=4, **PJ_DEFAULTS).frequencies()
    assert w1.shape == (4, 4) and torch.equal(w1, w2) and bool(((w1 > 0) & (w1 < math.pi)).all())
    assert len({round(float(x), 6) for x in w1.flatten()}) == 16
    assert e.slope_param == "exp" and float(e.slope()[0]) == pytest.approx(PJ_DEFAULTS["slope_init"])
    # a fixed ω (learn_omega false) leaves no omega group; the old configuration keeps its digest
    fixed = make_encoding("pj_bias", n_heads=2, learn_omega=False, lr_scale=3.0)
    assert [g["name"] for g in fixed.optimizer_groups()] == ["pj"]
    assert "lr_scale" not in make_encoding("pj_bias", n_heads=2).spec() and make_encoding("pj_bias", n_heads=2, lr_scale=3.0).spec()["lr_scale"] == 3.0
    with pytest.raises(InputError):
        make_encoding("pj_bias", n_heads=2, slope_param="relu")
    with pytest.raises(InputError):
        make_encoding("pj_bias", n_heads=2, lr_scale=0)
    # e^raw and softplus give the same slope at initialisation
    assert float(make_encoding("pj_bias", n_heads=1, slope_param="exp", slope_init=2.0).slope()[0]) == pytest.approx(
        float(make_encoding("pj_bias", n_heads=1, slope_init=2.0).slope()[0]))


def test_frequency_ranges_split_the_fj_kernel_by_frequency_and_restore_the_amplitudes():
    from langclass.models.experiments.pj_diagnostics import frequency_ranges

    enc = make_encoding("pj_bias", n_heads=2, n_freqs=3, max_order=1, compute_dtype="float64", omega_init=[[0.5, math.pi, 2.0], [1.0, 1.5, 2.5]])
    with torch.no_grad():
        for t in (enc.fj_zeta_re, enc.fj_zeta_im, enc.lc_zeta_re, enc.lc_zeta_im):
            t.zero_()
        enc.fj_zeta_re[0, 1, 0] = 4.0  # head 0: only the frequency π carries FJ amplitude
        enc.lc_zeta_re[1, 2, 0] = 2.0  # head 1: only frequency 2 carries LC amplitude
    before = [t.clone() for t in (enc.fj_zeta_re, enc.fj_zeta_im, enc.lc_zeta_re, enc.lc_zeta_im)]
    lags = torch.arange(1, 61, dtype=torch.float64)
    fr = frequency_ranges(enc, lags)
    fj = enc.components(lags=lags)
    k0 = sum(c for (s_, _), c in fj.items() if s_ == "fj")[0]
    assert float(fr["fj"][0, 1]) == pytest.approx(float(k0.max() - k0.min()), rel=1e-12) and float(fr["fj"][0, 1]) > 1
    assert float(fr["fj"][0, 0]) == float(fr["fj"][0, 2]) == 0.0 and float(fr["fj"][1].abs().max()) == 0.0
    assert float(fr["lc"][1, 2]) > 0 and float(fr["lc"][1, :2].abs().max()) == 0.0 and float(fr["lc"][0].abs().max()) == 0.0
    for t, b in zip((enc.fj_zeta_re, enc.fj_zeta_im, enc.lc_zeta_re, enc.lc_zeta_im), before):
        assert torch.equal(t, b)
    h = head_readouts(enc, 60)
    assert h[0]["frequencies"][1]["fj_range"] == pytest.approx(float(fr["fj"][0, 1])) and h[0]["frequencies"][1]["q"] == 2


def test_expanded_positions_give_the_same_bias_and_sdpa_agrees():
    enc = random_bias(6, H=2, R=1, F=1, dtype="float32")
    pos = torch.arange(12).unsqueeze(0)
    full = enc.score_bias(pos.repeat(3, 1))
    view = enc.score_bias(pos.expand(3, 12))
    assert view.shape == (3, 2, 12, 12) and torch.equal(full, view)
    cfg = dict(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, encoding={"name": "pj_bias"})
    torch.manual_seed(0)
    exact = Recognizer(RecognizerConfig(**cfg))
    fused = Recognizer(RecognizerConfig(**cfg, attention_impl="sdpa"))
    fused.load_state_dict(exact.state_dict())
    words = ["ab", "", "abba" * 5]
    assert torch.allclose(exact.logits_for(words), fused.logits_for(words), atol=1e-5)


def test_per_layer_pj_bias_gives_each_layer_its_own_kernels():
    H, L = 2, 2
    base = dict(alphabet=("a", "b"), d_model=16, n_heads=H, n_layers=L, dtype="float64")
    torch.manual_seed(0)
    m = Recognizer(RecognizerConfig(**base, encoding={"name": "pj_bias", "layers": L, "zeta_init_std": 1.0}))
    e = m.encoding
    assert e.n_heads == H * L and e.omega.shape[0] == H * L and e.spec()["n_heads"] == H and e.spec()["layers"] == L
    assert "layers" not in make_encoding("pj_bias", n_heads=2).spec()  # shared kernels keep their digest
    pos = torch.arange(9).unsqueeze(0)
    table = e.kernel(9).detach()
    for layer in range(L):
        b = e.for_layer(layer).score_bias(pos)[0].detach()  # [H, T, T]
        assert b.shape == (H, 9, 9)
        for h in range(H):
            assert torch.equal(b[h, 5, 2], table[layer * H + h, 3]) and float(b[h, 2, 5]) == 0.0
    assert e.for_layer(1) is e.for_layer(1) and not list(e.for_layer(1).parameters())
    with pytest.raises(ValueError):
        e.score_bias(pos)
    with pytest.raises(IndexError):
        e.for_layer(L)
    # the two layers' attention differ (different kernels), the model's output matches its cached decode
    _, trace = m.forward_batch(m.vocab.batch(["abba"]), return_trace=True)
    assert not torch.allclose(trace.attention[0].weights, trace.attention[1].weights)
    ids = m.vocab.batch(["abbab"]).ids
    full = m(ids)
    states, _ = m.extend(ids)
    assert torch.allclose(m.readout(states[:, -1]).squeeze(-1), full, atol=1e-10)
    # gradients reach both layers' rows; each parameter is registered once
    m(ids).sum().backward()
    assert e.fj_zeta_re.grad[:H].abs().sum() > 0 and e.fj_zeta_re.grad[H:].abs().sum() > 0
    assert len({id(p) for p in m.parameters()}) == len(list(m.parameters()))
    with pytest.raises(InputError) as err:
        RecognizerConfig(**base, encoding={"name": "pj_bias", "layers": 3})
    assert err.value.field == "encoding.layers"
    # diagnostics name the layer of each kernel row
    heads = head_readouts(e, 20)
    assert [(h["layer"], h["head"]) for h in heads] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert head_readouts(make_encoding("pj_bias", n_heads=2), 20)[1]["layer"] is None
    # a snapped copy keeps the layers
    assert e.snapped().for_layer(1).score_bias(pos).shape == (1, H, 9, 9)
