"""Sector diagnostics of a PJ-bias kernel, and readouts of a trained PJ-bias recognizer.

Kernel level (§6 of *PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*):

* gates g_h = (g_FJ, g_aff, g_LC) and the order spectra α^B_{h,r};
* effective mass M^B_{h,r} = g_{h,B} α^B_{h,r} |ζ^B_{h,r}| and the normalised order mass
  M̄_{h,r} = (M^FJ + M^LC)_{h,r} / (Σ_j (M^FJ + M^LC)_{h,j} + ε);
* functional energy E_{h,r}(W) = ‖C_{h,r}‖_W / (‖Σ_j C_{h,j}‖_W + ε), C_{h,r} = g_FJ C^FJ_r + g_LC C^LC_r;
* leave-one-order-out Δ^LOO_{h,r}(W) = MSE_W(K_h − C_{h,r}, y) − MSE_W(K_h, y).

With F > 1 frequencies per head, |ζ^B_{h,r}| is the Euclidean norm over the F (cos, sin) pairs
(the paper has one frequency, where this is its definition). Weights w_d = 1 and ε = 1e-12, as in
the released code.

Recognizer level (readouts for trained models; ours, documented in docs/pjrope.md): folded
frequency ω̃ and the nearest root e^{2πia/q} (q ≤ Q) with its error δ, the centred kernel range
ΔK_h = max_W K_h − min_W K_h on W = {1 … N}, sector energies S_{h,B} = ‖g_B(K_B − mean_W K_B)‖_W /
Σ_B′ ‖…‖_W (centred, since softmax ignores constants), the effective per-token slope σ_h = g_aff
s_h/L, and the lag-1 attention mass per layer and head.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from langclass.models.nn.pj import SECTORS, PJBias, fold_frequency, nearest_root

__all__ = [
    "EPS",
    "order_masses",
    "functional_energy",
    "leave_one_order_out",
    "sector_energies",
    "frequency_ranges",
    "head_readouts",
    "lag1_mass",
    "diagnostics",
]

EPS = 1e-12


def order_masses(enc: PJBias) -> dict[str, torch.Tensor]:
    """Effective masses (§6): ``{"fj": M^FJ [H, R+1], "lc": M^LC [H, R+1], "normalized": M̄ [H, R+1],
    "gates": [H, 3], "fj_alpha", "lc_alpha": [H, R+1]}`` (float64, detached). A disabled sector has
    gate 0 and hence mass 0."""
    with torch.no_grad():
        g = enc.gates()
        out: dict[str, torch.Tensor] = {"gates": g}
        for b, col in (("fj", 0), ("lc", 2)):
            alpha = torch.softmax(getattr(enc, f"{b}_alpha_logits").double(), dim=-1)
            zeta = torch.sqrt((getattr(enc, f"{b}_zeta_re").double() ** 2 + getattr(enc, f"{b}_zeta_im").double() ** 2).sum(dim=1))  # [H, R+1]
            out[f"{b}_alpha"] = alpha
            out[b] = g[:, col : col + 1] * alpha * zeta
        tot = out["fj"] + out["lc"]
        out["normalized"] = tot / (tot.sum(dim=-1, keepdim=True) + EPS)
    return out


def _order_components(enc: PJBias, lags: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """C_{h,r} ``[H, R+1, D]`` and K ``[H, D]`` on ``lags`` (float64, detached)."""
    with torch.no_grad():
        comps = enc.components(lags=lags)
        H, D = enc.n_heads, lags.numel()
        C = torch.zeros(H, enc.max_order + 1, D, dtype=torch.float64, device=enc.gate_logits.device)
        for (sector, r), c in comps.items():
            if sector in ("fj", "lc"):
                C[:, r] += c
        K = sum(comps.values())
    return C, K


def functional_energy(enc: PJBias, lags: torch.Tensor) -> torch.Tensor:
    """E_{h,r}(W) ``[H, R+1]`` on the window W = ``lags`` (§6; need not sum to 1)."""
    C, _ = _order_components(enc, lags)
    total = C.sum(dim=1)  # [H, D]
    return C.norm(dim=-1) / (total.norm(dim=-1, keepdim=True) + EPS)


def leave_one_order_out(enc: PJBias, lags: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Δ^LOO_{h,r}(W) ``[H, R+1]`` against ``target`` ``[D]`` or ``[H, D]`` (§6).

    Raises:
        ValueError: a target whose last axis is not len(lags).
    """
    C, K = _order_components(enc, lags)
    y = target.to(K)
    if y.shape[-1] != K.shape[-1]:
        raise ValueError(f"target has {y.shape[-1]} lags, the window {K.shape[-1]}")
    y = y.expand_as(K)
    base = ((K - y) ** 2).mean(dim=-1, keepdim=True)  # [H, 1]
    return (((K[:, None, :] - C) - y[:, None, :]) ** 2).mean(dim=-1) - base


def sector_energies(enc: PJBias, lags: torch.Tensor) -> torch.Tensor:
    """S_{h,B} ``[H, 3]`` (order fj, affine, lc): centred sector norms over W, normalised to sum 1
    (0 for a head whose kernel is constant on W)."""
    with torch.no_grad():
        comps = enc.components(lags=lags)
        H = enc.n_heads
        S = torch.zeros(H, 3, dtype=torch.float64, device=enc.gate_logits.device)
        for i, sector in enumerate(SECTORS):
            parts = [c for (s, _), c in comps.items() if s == sector]
            if parts:
                k = sum(parts)
                S[:, i] = (k - k.mean(dim=-1, keepdim=True)).norm(dim=-1)
        total = S.sum(dim=-1, keepdim=True)
        return torch.where(total > 0, S / total.clamp_min(EPS), torch.zeros_like(S))


def frequency_ranges(enc: PJBias, lags: torch.Tensor) -> dict[str, torch.Tensor]:
    """Centred range on W of each frequency's gated contribution, ``{"fj": [H, F], "lc": [H, F]}``
    (float64): for frequency ℓ of head h, max_W − min_W of g_B Σ_r α^B_r amp_r(d) (ζ^re_ℓr cos ω_ℓψ −
    ζ^im_ℓr sin ω_ℓψ) (ψ = d with damping for FJ, φ_L for LC). With F > 1 frequencies per head this
    says which of them carry the head's kernel (a frequency whose amplitude stayed near its
    initialisation has a range near 0). A disabled sector gives zeros."""
    H, F = enc.n_heads, enc.n_freqs
    out = {b: torch.zeros(H, F, dtype=torch.float64) for b in ("fj", "lc")}
    with torch.no_grad():
        for f in range(F):
            keep = {}
            for b in ("fj", "lc"):
                keep[b] = [getattr(enc, f"{b}_zeta_{part}").detach().clone() for part in ("re", "im")]
            try:
                for b in ("fj", "lc"):
                    for part in ("re", "im"):
                        t = getattr(enc, f"{b}_zeta_{part}")
                        mask = torch.zeros_like(t)
                        mask[:, f] = 1
                        t.mul_(mask)
                comps = enc.components(lags=lags)
                for b in ("fj", "lc"):
                    parts = [c for (s_, _), c in comps.items() if s_ == b]
                    if parts:
                        k = sum(parts)
                        out[b][:, f] = (k.max(dim=-1).values - k.min(dim=-1).values).cpu()
            finally:
                for b in ("fj", "lc"):
                    for part, v in zip(("re", "im"), keep[b]):
                        getattr(enc, f"{b}_zeta_{part}").copy_(v)
    return out


def head_readouts(enc: PJBias, n_test: int, max_root_order: int = 12, root_tolerance: float = 0.05) -> list[dict[str, Any]]:
    """Per-head readouts on W = {1, …, n_test} (strict mask: lag 0 is never seen).

    Each head's dict: ``head`` (index within its layer), ``layer`` (None when one kernel set is
    shared by every layer, else the layer of a per-layer ``pj_bias``), ``gates`` {fj, affine, lc}, ``slope`` s, ``effective_slope`` σ = g_aff s/L
    (score units per token), ``frequencies`` — per ℓ: ``omega``, ``folded``, nearest root ``a``,
    ``q``, ``delta``, ``near_root`` (δ ≤ ``root_tolerance``), ``fj_range`` / ``lc_range`` (the
    centred range of that frequency's FJ / LC contribution, :func:`frequency_ranges`) — ``kernel_range`` ΔK,
    ``sector_energy`` {fj, affine, lc}, ``order_mass`` M̄ list, ``functional_energy`` list, ``top_order``
    (argmax M̄, None when no FJ/LC mass), ``damping`` list.

    Raises:
        ValueError: n_test < 2.
    """
    if n_test < 2:
        raise ValueError("n_test must be ≥ 2")
    lags = torch.arange(1, n_test + 1, dtype=torch.float64)
    with torch.no_grad():
        K = enc.kernel(lags=lags)  # [H, D]
        S = sector_energies(enc, lags)
        masses = order_masses(enc)
        E = functional_energy(enc, lags)
        g = masses["gates"]
        s = enc.slope()
        c = enc.damping_rate()
        omega = enc.frequencies()
    fr = frequency_ranges(enc, lags)
    out = []
    for h in range(enc.n_heads):
        freqs = []
        for l_, w in enumerate(omega[h].tolist()):
            a, q, delta = nearest_root(w, max_root_order)
            freqs.append({"omega": w, "folded": fold_frequency(w), "a": a, "q": q, "delta": delta, "near_root": delta <= root_tolerance,
                          "damping": float(c[h, l_]), "fj_range": float(fr["fj"][h, l_]), "lc_range": float(fr["lc"][h, l_])})
        nm = masses["normalized"][h]
        has_mass = float((masses["fj"][h] + masses["lc"][h]).sum()) > 0
        hpl = getattr(enc, "heads_per_layer", enc.n_heads)
        out.append({
            "head": h % hpl,
            "layer": h // hpl if getattr(enc, "layers", 1) > 1 else None,
            "gates": {name: float(g[h, i]) for i, name in enumerate(SECTORS)},
            "slope": float(s[h]),
            "effective_slope": float(g[h, 1] * s[h]) / enc.train_length,
            "frequencies": freqs,
            "kernel_range": float(K[h].max() - K[h].min()),
            "sector_energy": {name: float(S[h, i]) for i, name in enumerate(SECTORS)},
            "order_mass": [float(v) for v in nm],
            "functional_energy": [float(v) for v in E[h]],
            "top_order": int(torch.argmax(nm)) if has_mass else None,
        })
    return out


@torch.no_grad()
def lag1_mass(model: torch.nn.Module, words: Sequence[Sequence[str]]) -> list[list[float]]:
    """Mean attention weight on the previous token, ``[layer][head]``, over the queries at sequence
    index ≥ 2 of ``words`` (index 1 under a strict mask sees only BOS).

    Args:
        model: a :class:`~langclass.models.nn.recognizer.Recognizer`.
        words: strings or letter sequences (≥ 1 letter each for a non-trivial average).
    """
    batch = model.vocab.batch(list(words))
    _, trace = model.forward_batch(batch, return_trace=True)
    valid = batch.valid.to(model.device)  # [B, T]
    T = valid.shape[1]
    out = []
    for att in trace.attention:
        w = att.weights.double()  # [B, H, T, T]
        i = torch.arange(2, T, device=w.device)
        prev = w[:, :, i, i - 1]  # [B, H, T-2]
        mask = valid[:, 2:].to(w.dtype)[:, None, :]
        denom = mask.sum(dim=(0, 2)).clamp_min(1.0)
        out.append([float(v) for v in ((prev * mask).sum(dim=(0, 2)) / denom)])
    return out


def diagnostics(enc: PJBias, n_test: int, max_root_order: int = 12, root_tolerance: float = 0.05) -> dict[str, Any]:
    """JSON-ready bundle: the encoding's config digest, ``heads`` (:func:`head_readouts`), and the
    learned values (ω, c, s, gate logits) for the run record."""
    return {
        "encoding_digest": enc.digest(),
        "window": [1, n_test],
        "max_root_order": max_root_order,
        "root_tolerance": root_tolerance,
        "heads": head_readouts(enc, n_test, max_root_order, root_tolerance),
        "learned": {
            "omega": enc.frequencies().tolist(),
            "damping": enc.damping_rate().detach().tolist(),
            "slope": enc.slope().detach().tolist(),
            "gate_logits": enc.gate_logits.detach().double().tolist(),
        },
        "source": "PJ-RoPE: A Fourier-Jet-Affine Position Space for Relative Attention, Section 6; readouts of docs/pjrope.md",
    }
