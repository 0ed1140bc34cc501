"""PJ-RoPE position space: the PJ-bias scalar kernel and the exact PJ-rotary feature transform.

Source: *PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention* (Definition 1 and
§4.1 for the kernel, §5 Table 1 / Prop. 1 / App. A.3 for the rotary transform, §7 for the light-cone
(LC) chart, App. B for the difference-module reading). Conventions follow the paper's released code
where the text leaves them open (documented in docs/pjrope.md): FJ order r carries (d/L)^r/r!, the
LC branch carries β_L(d)^r (no 1/r!, undamped), gates and order spectra are softmaxes, the affine
slope is s = softplus(raw) ≥ 0 and the softmax-invisible intercept b₀ is absent.

Two encodings, registered in :func:`langclass.models.nn.encodings.make_encoding`:

* ``pj_bias`` (:class:`PJBias`, kind ``bias``) — per head h and lag d = i − j ≥ 0

      K_h(d) = g_FJ Σ_{ℓ,r} α^FJ_r (d/L)^r/r! e^{−c_ℓ d/L} (ζ^re_ℓr cos ω_ℓ d − ζ^im_ℓr sin ω_ℓ d)
             + g_aff (−s ρ(d))                                   ρ = d/L or asinh(d/L)
             + g_LC Σ_{ℓ,r} α^LC_r β_L(d)^r (ζ'^re_ℓr cos ω_ℓ φ_L(d) − ζ'^im_ℓr sin ω_ℓ φ_L(d))

  with (g_FJ, g_aff, g_LC) = softmax over the enabled sectors (a disabled sector has gate exactly
  0 and zero gradient), φ_L(d) = L·asinh(d/L), β_L(d) = d/√(d² + L²). The kernel is evaluated once
  per call as an [H, D] table over lags 0 … D−1 in float64 (autocast off), rounded to the compute
  dtype, and gathered as a Toeplitz matrix; future entries (d < 0) are 0 (they are masked anyway).
  **Exact periodic mode** (``roots``): every frequency is a root of unity e^{2πi a/q} given as
  (a, q); cos/sin are read from tables at d mod q (never from ω·d), so scores at lags d ≡ d' (mod
  q) are bit-identical when only the FJ sector is on. :meth:`PJBias.snapped` snaps learned
  frequencies to the nearest roots of order ≤ Q.
* ``pj_rotary`` (:class:`~langclass.models.nn.pj_rotary.PJRotary`, kind ``rotary``) — the exact feature action of the jet
  generator J = iω I + ηN (N the nilpotent shift, N^m = 0) on blocks of m complex channels:
  q'_b = e^{iω_b i} exp(ε i Nᵀ) q_b and k'_b = e^{iω_b j} exp(−ε j N) k_b with ε = η/L, so that
  ⟨q'_i, k'_j⟩ = Re Σ_b e^{iω_b d} Σ_{c≤r<m} (εd)^{r−c}/(r−c)! q_{b,r} conj(k_{b,c}) depends on d only.
  m = 1 (or η = 0) is RoPE (interleaved pairs) bit for bit. The features grow like (ε·i)^{m−1} in
  absolute position and the logit comes out of cancellation, so the transform and the QKᵀ product
  run in float32 or float64 even under autocast (the encoding sets ``scores_in_fp32``).

Both keep their learnable parameters in the compute dtype on whatever device the model moves to
(see :meth:`PositionalEncoding._apply`); the optimizer excludes every parameter of the positional
encoding from weight decay (:func:`langclass.models.training.train.parameter_groups`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from langclass.models.nn.encoding_base import COMPUTE_DTYPES, PositionalEncoding, _as_float, _as_int, _check_positions, _err, exact_cos_sin, register_family

__all__ = ["PJBias", "SECTORS", "phi_l", "beta_l", "fold_frequency", "nearest_root", "MAX_LAGS"]

SECTORS = ("fj", "affine", "lc")
MAX_ORDER = 8
MAX_FREQS = 16
MAX_ROOT_ORDER = 10_000
MAX_LAGS = 1_000_000
"""Longest lag table :class:`PJBias` builds in one call (limit on T)."""
MAX_LAYERS = 64
"""Most per-layer kernel sets of one ``pj_bias`` (``layers``)."""
MAX_LR_SCALE = 1e3
"""Largest learning-rate multiplier of a PJ-bias parameter group (``lr_scale``, ``omega_lr_scale``)."""
MAX_INIT = 1e4
"""Bound on the magnitude of initial values (slopes, amplitude std, gate logits, frequencies)."""


def phi_l(d: torch.Tensor, L: float) -> torch.Tensor:
    """LC phase coordinate φ_L(d) = L·asinh(d/L) (*PJ-RoPE …*, §7); ``torch.asinh`` keeps tiny d/L exact.

    Shapes: any; computed in ``d``'s dtype (callers use float32/float64, never fp16 — see β_L).
    """
    return L * torch.asinh(d / L)


def beta_l(d: torch.Tensor, L: float) -> torch.Tensor:
    """LC amplitude β_L(d) = d/√(d² + L²) = x/hypot(1, x), x = d/L (*PJ-RoPE …*, §7), in [0, 1) for d ≥ 0.

    The hypot form never squares d, so it cannot overflow (d² + L² overflows float16 at d = 253
    for L = 40); callers still evaluate it in float32/float64.
    """
    x = d / L
    return x / torch.hypot(torch.ones_like(x), x)


def fold_frequency(omega: float) -> float:
    """ω̃ = |((ω + π) mod 2π) − π| ∈ [0, π]: integer lags alias ω ↔ ω + 2π ↔ −ω."""
    return abs(((float(omega) + math.pi) % (2 * math.pi)) - math.pi)


def nearest_root(omega: float, max_order: int = 12) -> tuple[int, int, float]:
    """The root of unity e^{2πi a/q} nearest to the folded frequency, least q first on ties.

    Returns ``(a, q, delta)`` with 0 ≤ a ≤ q/2, gcd(a, q) = 1 (a = 0 only for q = 1), q ≤ ``max_order``
    and δ = |ω̃ − 2πa/q| (radians).
    """
    w = fold_frequency(omega)
    best = (0, 1, w)
    for q in range(2, max_order + 1):
        for a in range(1, q // 2 + 1):
            if math.gcd(a, q) != 1:
                continue
            delta = abs(w - 2 * math.pi * a / q)
            if delta < best[2] - 1e-15:
                best = (a, q, delta)
    return best


def _inv_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y)) if y < 30 else y


def _roots(value: Any, n_heads: int, n_freqs: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """roots: [[a, q]] (every head/frequency), or per head a list of n_freqs pairs."""
    def pair(p: Any) -> tuple[int, int]:
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise _err(f"each root must be a pair [a, q], got {p!r}", "roots")
        a, q = _as_int(p[0], "roots", 0), _as_int(p[1], "roots", 1)
        if q > MAX_ROOT_ORDER:
            raise _err(f"root order q={q} exceeds {MAX_ROOT_ORDER}", "roots")
        return a % q, q

    if not isinstance(value, (list, tuple)) or not value:
        raise _err("roots must be a non-empty list", "roots")
    if len(value) == 1 and n_heads != 1 and isinstance(value[0], (list, tuple)) and len(value[0]) == 2 and not isinstance(value[0][0], (list, tuple)):
        return tuple(tuple(pair(value[0]) for _ in range(n_freqs)) for _ in range(n_heads))
    if len(value) != n_heads:
        raise _err(f"roots must list {n_heads} heads (or one [a, q] for all), got {len(value)}", "roots")
    out = []
    for row in value:
        if isinstance(row, (list, tuple)) and len(row) == 2 and not isinstance(row[0], (list, tuple)):
            row = [row] * n_freqs
        if not isinstance(row, (list, tuple)) or len(row) != n_freqs:
            raise _err(f"each head needs {n_freqs} roots [a, q]", "roots")
        out.append(tuple(pair(p) for p in row))
    return tuple(out)


class PJBias(PositionalEncoding):
    """PJ-bias: a learnable gated Fourier–jet + affine + LC scalar kernel per head (see module doc).

    Args:
        n_heads: H.
        train_length: L, the training scale (default 42 = 40 letters + BOS + EOS).
        max_order: R ≥ 0, the highest jet order (FJ and LC; default 2, ≤ 8).
        n_freqs: F ≥ 1 frequencies per head (Definition 1's sum over ℓ; the released code uses 1).
        sectors: enabled sectors, a subset of ``["fj", "affine", "lc"]`` (default all).
        omega_init: ``"linspace"`` (2π·linspace(1, 17, H·F)/L, the released code's), ``"uniform"``
            (the grid π·k/(H·F), k = 1 … H·F, over (0, π]), ``"random"`` (independent U(0, π) draws
            from torch's global generator, i.e. from the training seed; no grid that happens to
            contain a root) or a list of H·F (or H lists of F) radians.
        learn_omega: whether ω is trained (default True).
        damping: learnable FJ damping c = softplus(raw) ≥ 0, raw initialised at −2 (default True);
            False fixes c = 0.
        slope_init: initial affine slope s (default 0.4).
        slope_param: ``"softplus"`` (s = softplus(raw), the released code's) or ``"exp"`` (s = e^raw):
            the same function space s > 0, but Adam moves log s by about the learning rate per
            step, so a recency slope of s ≈ 10²–10³ (a lag-1 head needs g_aff·s/L ≳ 3 per token)
            is reachable in hundreds of steps instead of s/lr steps.
        lr_scale: multiplier of the optimizer's learning rate for the gates, order spectra,
            amplitudes ζ, slopes and damping (default 1; :meth:`optimizer_groups`).
        omega_lr_scale: multiplier for the frequencies ω (default 1). ∂K/∂ω grows like d, so ω
            usually wants a smaller step than the amplitudes (*PJ-RoPE …*, App. C.3).
        affine_rho: ``"linear"`` (ρ = d/L, Definition 1) or ``"lightcone"`` (ρ = asinh(d/L)).
        zeta_init_std: std of the initial amplitudes ζ (default 0.02).
        gate_init: initial gate logits [η_FJ, η_aff, η_LC] (default zeros).
        roots: exact periodic mode — [[a, q]] for every head and frequency, or one list per head
            of F pairs: ω = 2πa/q fixed, cos/sin by table on d mod q. Requires max_order = 0,
            no LC sector, damping False.
        layers: 1 (default: one kernel per head shared by every layer, as the Recognizer shares its
            encoding) or the model's layer count — one PJ-bias per attention layer, as in the
            paper's released code (one ``PJBias`` module per layer). The parameters then hold
            ``layers × n_heads`` kernels (row l·H + h is head h of layer l; diagnostics read them
            in that order) and layer l uses :meth:`for_layer` (l).
        position_origin, compute_dtype: see :class:`PositionalEncoding`.

    Raises:
        InputError: invalid values (``field="encoding.<param>"``).
    """

    family = "pj_bias"
    kind = "bias"

    def __init__(self, n_heads: int, train_length: int = 42, max_order: int = 2, n_freqs: int = 1,
                 sectors: Sequence[str] = SECTORS, omega_init: str | Sequence[Any] = "linspace", learn_omega: bool = True,
                 damping: bool = True, slope_init: float = 0.4, affine_rho: str = "linear", zeta_init_std: float = 0.02,
                 gate_init: Sequence[float] = (0.0, 0.0, 0.0), roots: Sequence[Any] | None = None,
                 slope_param: str = "softplus", lr_scale: float = 1.0, omega_lr_scale: float = 1.0,
                 layers: int = 1, position_origin: int = 0, compute_dtype: str = "float32") -> None:
        super().__init__(position_origin, compute_dtype)
        self.heads_per_layer = _as_int(n_heads, "n_heads", 1)
        self.layers = _as_int(layers, "layers", 1)
        if self.layers > MAX_LAYERS:
            raise _err(f"layers must be ≤ {MAX_LAYERS}, got {self.layers}", "layers")
        H = self.n_heads = self.heads_per_layer * self.layers  # kernels: row l·H + h
        self.train_length = _as_int(train_length, "train_length", 1)
        self.max_order = _as_int(max_order, "max_order", 0)
        if self.max_order > MAX_ORDER:
            raise _err(f"max_order must be ≤ {MAX_ORDER}, got {self.max_order}", "max_order")
        F = self.n_freqs = _as_int(n_freqs, "n_freqs", 1)
        if F > MAX_FREQS:
            raise _err(f"n_freqs must be ≤ {MAX_FREQS}, got {F}", "n_freqs")
        if (isinstance(sectors, str) or not isinstance(sectors, (list, tuple)) or not sectors or not all(isinstance(s, str) for s in sectors)
                or any(s not in SECTORS for s in sectors) or len(set(sectors)) != len(sectors)):
            raise _err(f"sectors must be a non-empty list of distinct names from {list(SECTORS)}, got {sectors!r}", "sectors")
        self.sectors = tuple(s for s in SECTORS if s in sectors)
        for key, val in (("learn_omega", learn_omega), ("damping", damping)):
            if not isinstance(val, bool):
                raise _err(f"{key} must be true or false, got {val!r}", key)
        if affine_rho not in ("linear", "lightcone"):
            raise _err(f"affine_rho must be 'linear' or 'lightcone', got {affine_rho!r}", "affine_rho")
        self.affine_rho = affine_rho
        if slope_param not in ("softplus", "exp"):
            raise _err(f"slope_param must be 'softplus' or 'exp', got {slope_param!r}", "slope_param")
        self.slope_param = slope_param
        self.lr_scale = _as_float(lr_scale, "lr_scale", positive=True)
        self.omega_lr_scale = _as_float(omega_lr_scale, "omega_lr_scale", positive=True)
        for key in ("lr_scale", "omega_lr_scale"):
            if getattr(self, key) > MAX_LR_SCALE:
                raise _err(f"{key} must be ≤ {MAX_LR_SCALE:g}", key)
        if self.train_length > MAX_LAGS:
            raise _err(f"train_length must be ≤ {MAX_LAGS}", "train_length")
        self.slope_init = _as_float(slope_init, "slope_init")
        if not 0 <= self.slope_init <= MAX_INIT:
            raise _err(f"slope_init must lie in [0, {MAX_INIT:g}]", "slope_init")
        self.zeta_init_std = _as_float(zeta_init_std, "zeta_init_std")
        if not 0 <= self.zeta_init_std <= MAX_INIT:
            raise _err(f"zeta_init_std must lie in [0, {MAX_INIT:g}]", "zeta_init_std")
        if not isinstance(gate_init, (list, tuple)) or len(gate_init) != 3:
            raise _err("gate_init must be a list of 3 numbers [fj, affine, lc]", "gate_init")
        self.gate_init = tuple(_as_float(g, "gate_init") for g in gate_init)
        if any(abs(g) > MAX_INIT for g in self.gate_init):
            raise _err(f"gate_init values must lie in [-{MAX_INIT:g}, {MAX_INIT:g}]", "gate_init")
        self.roots = None if roots is None else _roots(roots, H, F)
        if self.roots is not None:
            if self.max_order != 0:
                raise _err("periodic mode (roots) needs max_order = 0: jets (d/L)^r are not periodic", "max_order")
            if "lc" in self.sectors:
                raise _err("periodic mode (roots) excludes the LC sector: ω·φ_L(d) is not periodic in d", "sectors")
            if damping:
                raise _err("periodic mode (roots) needs damping = false: e^{-cd/L} is not periodic", "damping")
            learn_omega = False
        self.learn_omega, self.damping = learn_omega, damping
        if isinstance(omega_init, str):
            if omega_init not in ("linspace", "uniform", "random"):
                raise _err(f"omega_init must be 'linspace', 'uniform', 'random' or a list, got {omega_init!r}", "omega_init")
            self.omega_init: str | tuple[float, ...] = omega_init
        else:
            flat = [x for row in omega_init for x in (row if isinstance(row, (list, tuple)) else [row])] if isinstance(omega_init, (list, tuple)) else None
            if flat is None or len(flat) != H * F:
                raise _err(f"omega_init list must hold H·F = {H * F} numbers", "omega_init")
            self.omega_init = tuple(_as_float(x, "omega_init") for x in flat)
            if any(abs(x) > MAX_INIT for x in self.omega_init):
                raise _err(f"omega_init values must lie in [-{MAX_INIT:g}, {MAX_INIT:g}] radians", "omega_init")

        cdt = COMPUTE_DTYPES[compute_dtype]
        L, R = float(self.train_length), self.max_order
        if self.roots is not None:
            omega0 = np.array([[2 * math.pi * a / q for a, q in row] for row in self.roots])
        elif self.omega_init == "linspace":
            omega0 = (2 * math.pi * np.linspace(1.0, 17.0, H * F) / L).reshape(H, F)
        elif self.omega_init == "uniform":
            omega0 = (math.pi * np.arange(1, H * F + 1) / (H * F)).reshape(H, F)
        elif self.omega_init == "random":
            omega0 = (math.pi * torch.rand(H, F, dtype=torch.float64)).numpy()
        else:
            omega0 = np.array(self.omega_init, dtype=np.float64).reshape(H, F)
        omega_t = torch.tensor(omega0, dtype=cdt)
        if self.learn_omega:
            self.omega = nn.Parameter(omega_t)  # [H, F] radians per position
        else:
            self.register_buffer("omega", omega_t, persistent=True)
        self.raw_damping = nn.Parameter(torch.full((H, F), -2.0, dtype=cdt)) if damping else None  # [H, F]
        self.gate_logits = nn.Parameter(torch.tensor([list(self.gate_init)] * H, dtype=cdt))  # [H, 3]
        self.register_buffer("sector_mask", torch.tensor([s in self.sectors for s in SECTORS]), persistent=False)  # [3]
        std = self.zeta_init_std
        self.fj_alpha_logits = nn.Parameter(torch.zeros(H, R + 1, dtype=cdt))  # [H, R+1]
        self.fj_zeta_re = nn.Parameter(std * torch.randn(H, F, R + 1, dtype=torch.float64).to(cdt))  # [H, F, R+1]
        self.fj_zeta_im = nn.Parameter(std * torch.randn(H, F, R + 1, dtype=torch.float64).to(cdt))
        self.lc_alpha_logits = nn.Parameter(torch.zeros(H, R + 1, dtype=cdt))
        self.lc_zeta_re = nn.Parameter(std * torch.randn(H, F, R + 1, dtype=torch.float64).to(cdt))
        self.lc_zeta_im = nn.Parameter(std * torch.randn(H, F, R + 1, dtype=torch.float64).to(cdt))
        if self.slope_param == "exp":
            raw0 = math.log(self.slope_init) if self.slope_init > 0 else -30.0
        else:
            raw0 = _inv_softplus(self.slope_init) if self.slope_init > 0 else -30.0
        self.raw_slope = nn.Parameter(torch.full((H,), raw0, dtype=cdt))  # [H]
        if self.roots is not None:
            qmax = max(q for row in self.roots for _, q in row)
            cos = np.zeros((H, F, qmax))
            sin = np.zeros((H, F, qmax))
            for h, row in enumerate(self.roots):
                for f, (a, q) in enumerate(row):
                    for r in range(q):
                        cos[h, f, r], sin[h, f, r] = exact_cos_sin(a * r, q)
            self.register_buffer("root_cos", torch.tensor(cos), persistent=False)  # [H, F, q_max] float64
            self.register_buffer("root_sin", torch.tensor(sin), persistent=False)
            self.register_buffer("root_q", torch.tensor([[q for _, q in row] for row in self.roots], dtype=torch.long), persistent=False)  # [H, F]
        self.ablate: frozenset[tuple[str, int | None]] = frozenset()

    # -- parameters as the paper names them ------------------------------------------------
    def gates(self) -> torch.Tensor:
        """(g_FJ, g_aff, g_LC) ``[H, 3]`` = softmax over the enabled sectors (disabled: exactly 0)."""
        logits = self.gate_logits.double()
        masked = logits.masked_fill(~self.sector_mask.to(logits.device), float("-inf"))
        return torch.softmax(masked, dim=-1)

    def damping_rate(self) -> torch.Tensor:
        """c = softplus(raw) ``[H, F]`` (zeros when damping is off)."""
        if self.raw_damping is None:
            return torch.zeros(self.n_heads, self.n_freqs, dtype=torch.float64, device=self.omega.device)
        return nn.functional.softplus(self.raw_damping.double())

    def slope(self) -> torch.Tensor:
        """s = softplus(raw) (or e^raw with ``slope_param="exp"``) ≥ 0 ``[H]``."""
        if self.slope_param == "exp":
            return torch.exp(self.raw_slope.double())
        return nn.functional.softplus(self.raw_slope.double())

    def optimizer_groups(self) -> list[dict[str, Any]]:
        """Parameter groups for the optimizer: ``[{"name", "params", "lr_scale"}]`` — ``omega``
        (the frequencies, ``omega_lr_scale``) and ``pj`` (gates, α logits, ζ, slopes, damping,
        ``lr_scale``). The training loop multiplies its learning rate by ``lr_scale`` and applies
        no weight decay to either group (:func:`langclass.models.training.train.parameter_groups`)."""
        omega = [self.omega] if isinstance(self.omega, nn.Parameter) else []
        rest = [p for p in self.parameters() if p is not self.omega]
        groups = [{"name": "pj", "params": rest, "lr_scale": self.lr_scale}]
        if omega:
            groups.append({"name": "omega", "params": omega, "lr_scale": self.omega_lr_scale})
        return groups

    def frequencies(self) -> torch.Tensor:
        """ω ``[H, F]`` in radians per position (float64 copy)."""
        return self.omega.detach().double().clone()

    # -- the kernel ------------------------------------------------------------------------
    def _trig(self, d: torch.Tensor, phase_coord: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin ``[H, F, D]`` of ω·ψ(d) (ψ = d or φ_L); by table on d mod q in periodic mode."""
        if phase_coord is None and self.roots is not None:
            idx = d.long()[None, None, :] % self.root_q[:, :, None]  # [H, F, D]
            return torch.gather(self.root_cos, 2, idx), torch.gather(self.root_sin, 2, idx)
        psi = d if phase_coord is None else phase_coord
        phase = self.omega.double()[:, :, None] * psi[None, None, :]
        return torch.cos(phase), torch.sin(phase)

    def components(self, n_lags: int | None = None, lags: torch.Tensor | None = None) -> dict[tuple[str, int | None], torch.Tensor]:
        """The gated components of K ``{(sector, order): [H, D]}`` (float64, differentiable).

        Keys: ("fj", r) and ("lc", r) for r ≤ R when the sector is enabled, ("affine", None).
        C^FJ_r = g_FJ α^FJ_r (d/L)^r/r! Σ_ℓ e^{−c_ℓ d/L}(ζ^re cos ω_ℓd − ζ^im sin ω_ℓd); C^LC_r =
        g_LC α^LC_r β_L^r Σ_ℓ(ζ^re cos ω_ℓφ_L − ζ^im sin ω_ℓφ_L); affine = −g_aff s ρ(d). Their sum
        is K_h(d) (§6 of *PJ-RoPE …*: C_{h,r} = g_FJ C^FJ_r + g_LC C^LC_r).

        Args:
            n_lags: D, evaluate on d = 0 … D − 1; or
            lags: a float64/integer tensor ``[D]`` of lags ≥ 0.
        """
        dev = self.gate_logits.device
        if lags is None:
            if n_lags is None or n_lags < 0 or n_lags > MAX_LAGS:
                raise ValueError(f"n_lags must lie in 0..{MAX_LAGS}, got {n_lags}")
            lags = torch.arange(n_lags, device=dev)
        d = lags.to(device=dev, dtype=torch.float64)
        L = float(self.train_length)
        g = self.gates()  # [H, 3]
        out: dict[tuple[str, int | None], torch.Tensor] = {}
        with torch.autocast(device_type=dev.type, enabled=False):
            if "fj" in self.sectors:
                alpha = torch.softmax(self.fj_alpha_logits.double(), dim=-1)  # [H, R+1]
                cos, sin = self._trig(lags.to(dev) if self.roots is not None else d)  # [H, F, D]
                x = d / L
                env = torch.exp(-self.damping_rate()[:, :, None] * x[None, None, :])  # [H, F, D]
                for r in range(self.max_order + 1):
                    zr, zi = self.fj_zeta_re[..., r].double(), self.fj_zeta_im[..., r].double()  # [H, F]
                    wave = (env * (zr[:, :, None] * cos - zi[:, :, None] * sin)).sum(dim=1)  # [H, D]
                    amp = x.pow(r) / math.factorial(r) if r else torch.ones_like(x)
                    out[("fj", r)] = (g[:, 0] * alpha[:, r])[:, None] * amp[None, :] * wave
            if "affine" in self.sectors:
                rho = d / L if self.affine_rho == "linear" else torch.asinh(d / L)
                out[("affine", None)] = -(g[:, 1] * self.slope())[:, None] * rho[None, :]
            if "lc" in self.sectors:
                alpha = torch.softmax(self.lc_alpha_logits.double(), dim=-1)
                cos, sin = self._trig(d, phi_l(d, L))
                beta = beta_l(d, L)
                for r in range(self.max_order + 1):
                    zr, zi = self.lc_zeta_re[..., r].double(), self.lc_zeta_im[..., r].double()
                    wave = (zr[:, :, None] * cos - zi[:, :, None] * sin).sum(dim=1)
                    amp = beta.pow(r) if r else torch.ones_like(beta)
                    out[("lc", r)] = (g[:, 2] * alpha[:, r])[:, None] * amp[None, :] * wave
        return out

    def kernel(self, n_lags: int | None = None, lags: torch.Tensor | None = None) -> torch.Tensor:
        """K_h(d) ``[H, D]`` in float64 (differentiable), without the components in :attr:`ablate`."""
        comps = self.components(n_lags, lags)
        dev = self.gate_logits.device
        D = next(iter(comps.values())).shape[-1]
        total = torch.zeros(self.n_heads, D, dtype=torch.float64, device=dev)
        for key, c in comps.items():
            if key in self.ablate or (key[0], None) in self.ablate:
                continue
            total = total + c
        return total

    @contextmanager
    def ablated(self, *keys: tuple[str, int | None]) -> Iterator["PJBias"]:
        """Context in which the given components — (sector, order) or (sector, None) for a whole
        sector — are zeroed (task-level leave-one-out, docs/pjrope.md)."""
        for k in keys:
            if not (isinstance(k, tuple) and len(k) == 2 and k[0] in SECTORS):
                raise ValueError(f"ablation keys are (sector, order|None) with sector in {SECTORS}, got {k!r}")
        old = self.ablate
        self.ablate = frozenset(old | set(keys))
        try:
            yield self
        finally:
            self.ablate = old

    def for_layer(self, layer: int) -> PositionalEncoding:
        """The encoding attention layer ``layer`` uses: this module when ``layers`` = 1, else a
        view whose :meth:`score_bias` holds that layer's H kernels (rows l·H … l·H + H − 1).

        Raises:
            IndexError: ``layer`` outside 0 … layers − 1 (for ``layers`` > 1).
        """
        if self.layers == 1:
            return self
        if not 0 <= layer < self.layers:
            raise IndexError(f"pj_bias has {self.layers} layers, asked for layer {layer}")
        views = self.__dict__.setdefault("_layer_views", {})
        if layer not in views:
            views[layer] = _PJLayerView(self, layer)
        return views[layer]

    def score_bias(self, positions: torch.Tensor) -> torch.Tensor:
        """``[batch, heads, seq, seq]`` bias K_h(p_i − p_j) (0 where p_i < p_j) in the compute dtype
        (an expanded view of one row's bias when ``positions`` is one row expanded over the batch).

        The [H, D] table is computed once (float64, autocast off) and gathered as a Toeplitz matrix.

        Raises:
            TypeError: non-integer positions.
            ValueError: more than :data:`MAX_LAGS` lags, or ``layers`` > 1 (use :meth:`for_layer`).
        """
        if self.layers != 1:
            raise ValueError(f"this pj_bias holds one kernel set per layer ({self.layers}); use for_layer(l).score_bias")
        return self._bias(positions, slice(None))

    def _bias(self, positions: torch.Tensor, rows: slice) -> torch.Tensor:
        _check_positions(positions)
        cdt = COMPUTE_DTYPES[self.compute_dtype]
        pos = positions.long()
        batch = pos.shape[0] if pos.dim() == 2 else None
        if batch is not None and batch > 1 and pos.stride(0) == 0:
            pos = pos[:1]  # one row expanded over the batch: gather once, return an expanded view
        lag = pos[..., :, None] - pos[..., None, :]  # [batch or 1, seq, seq]
        n = int(lag.max().item()) + 1 if lag.numel() else 1
        table = self.kernel(max(n, 1))[rows].to(cdt)  # [H, D]
        idx = lag.clamp(min=0)
        bias = table[:, idx]  # [H, batch, seq, seq]
        bias = bias.masked_fill((lag < 0).unsqueeze(0), 0.0).transpose(0, 1)
        if batch is not None and bias.shape[0] != batch:
            bias = bias.expand(batch, *bias.shape[1:])
        return bias

    # -- snapping to roots -----------------------------------------------------------------
    def snapped(self, max_root_order: int = 12, sectors: Sequence[str] | None = None) -> "PJBias":
        """A periodic-mode copy whose frequencies are the nearest roots of order ≤ ``max_root_order``.

        Keeps the gates, slopes and the order-0 FJ amplitudes (α^FJ_0 is folded into ζ); the LC
        sector, jets and damping are dropped (they are not periodic). ``sectors`` defaults to the
        enabled ones among ``fj`` and ``affine``.
        """
        roots = [[list(nearest_root(float(w), max_root_order)[:2]) for w in row] for row in self.frequencies().tolist()]
        # the folded frequency aliases −ω to ω; sin changes sign with it
        sign = torch.tensor([[1.0 if ((float(w) + math.pi) % (2 * math.pi)) - math.pi >= 0 else -1.0 for w in row] for row in self.frequencies().tolist()])
        keep = [s for s in (sectors or self.sectors) if s in ("fj", "affine")]
        if not keep:
            raise ValueError("a snapped kernel needs the fj or the affine sector")
        out = PJBias(self.heads_per_layer, self.train_length, 0, self.n_freqs, keep, learn_omega=False, damping=False, layers=self.layers,
                     slope_init=self.slope_init, affine_rho=self.affine_rho, gate_init=self.gate_init, roots=roots,
                     slope_param=self.slope_param, lr_scale=self.lr_scale, omega_lr_scale=self.omega_lr_scale,
                     position_origin=self.position_origin, compute_dtype=self.compute_dtype)
        with torch.no_grad():
            out.to(self.gate_logits.device)
            out.gate_logits.copy_(self.gate_logits)
            out.raw_slope.copy_(self.raw_slope)
            a0 = torch.softmax(self.fj_alpha_logits.double(), dim=-1)[:, :1]  # [H, 1]
            out.fj_zeta_re.copy_((self.fj_zeta_re[..., :1].double() * a0[:, :, None]).to(out.fj_zeta_re.dtype))
            out.fj_zeta_im.copy_((self.fj_zeta_im[..., :1].double() * a0[:, :, None] * sign.to(a0.device)[:, :, None]).to(out.fj_zeta_im.dtype))
        return out

    # -- identity --------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {
            "n_heads": self.heads_per_layer, "layers": self.layers, "train_length": self.train_length, "max_order": self.max_order, "n_freqs": self.n_freqs,
            "sectors": list(self.sectors), "omega_init": self.omega_init if isinstance(self.omega_init, str) else list(self.omega_init),
            "learn_omega": self.learn_omega, "damping": self.damping, "slope_init": self.slope_init, "affine_rho": self.affine_rho,
            "zeta_init_std": self.zeta_init_std, "gate_init": list(self.gate_init),
            "roots": None if self.roots is None else [[list(p) for p in row] for row in self.roots],
            "slope_param": self.slope_param, "lr_scale": self.lr_scale, "omega_lr_scale": self.omega_lr_scale,
            "parameterization": "pj_bias/1: gates softmax over enabled sectors; alpha softmax over orders; FJ (d/L)^r/r! e^{-c d/L}; "
                                "LC beta^r undamped; affine -softplus(raw) rho; no b0; table [H, D] float64 gathered as Toeplitz",
            "source": "PJ-RoPE: A Fourier-Jet-Affine Position Space for Relative Attention, Definition 1 and Section 6",
        }

    def spec(self) -> dict[str, Any]:
        p = self.params()
        p.pop("parameterization")
        p.pop("source")
        if p["roots"] is None:
            p.pop("roots")
        for key, default in (("slope_param", "softplus"), ("lr_scale", 1.0), ("omega_lr_scale", 1.0), ("layers", 1)):
            if p[key] == default:  # configurations from before these options keep their digests
                p.pop(key)
        return {**super().spec(), **p}


register_family(PJBias, ("n_heads",))


class _PJLayerView(PositionalEncoding):
    """Layer l's share of a per-layer :class:`PJBias`: its bias is rows l·H … l·H + H − 1 of the
    parent's kernel table. Holds no parameters (they are the parent's, which the model registers
    and the optimizer sees once)."""

    family = "pj_bias"
    kind = "bias"

    def __init__(self, parent: PJBias, layer: int) -> None:
        super().__init__(parent.position_origin, parent.compute_dtype)
        self.__dict__["_parent"] = parent  # not a submodule
        self.layer = layer

    def score_bias(self, positions: torch.Tensor) -> torch.Tensor:
        p: PJBias = self.__dict__["_parent"]
        H = p.heads_per_layer
        return p._bias(positions, slice(self.layer * H, (self.layer + 1) * H))

    def spec(self) -> dict[str, Any]:
        return self.__dict__["_parent"].spec()

    def params(self) -> dict[str, Any]:
        return {**self.__dict__["_parent"].params(), "layer": self.layer}
