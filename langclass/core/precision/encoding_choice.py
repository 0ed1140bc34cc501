"""Which positional encoding suffices: the least sufficient encoding per attention family.

Given the decided classes of a language, name — for soft attention and for unique hard attention —
the weakest encoding in our catalogue known to recognize the language exactly, with its parameters
and the theorem that guarantees it (theory brief §2):

==========================  ==============================================  =====================================
class                       model                                           source
==========================  ==============================================  =====================================
LTL[P]                      soft, strict future mask, BOS, NoPE             Disentangling the Expressivity of RoPE §2.2
LTL[P,MOD], period k        soft + periodic RoPE (table indexed by i mod k) ibid. Thm 3.1 (periodic sinusoidal: Thm 3.2)
LTL[P,Y], Y-offsets ≤ k     soft + conventional RoPE (irrational angle g)   ibid. Cor 4.1, Eq. 9–10 (only up to N_max)
                            or soft + recency heads (ALiBi slope ≥ f_large) all lengths: docs/recency.md
LTL[P,Y,MOD], least m       soft + periodic RoPE of period m (MOD atoms)    ibid. Thm 3.1 / Lemma 3.2 with the
                            + recency heads (ALiBi slope ≥ f_large, Y)      recency proof (docs/recency.md): all
                            (conventional RoPE for Y: length-bounded)       lengths
star-free ∩ stutter-inv.    hard, non-strict mask, NoPE                     Masked Hard-Attention … Thm 18
star-free                   hard, strict future mask, rightmost, NoPE       ibid. Thm 17
FO[<,MOD] (AC⁰)             hard + position marks i mod m (``mod_onehot``,  ibid. Thm 19, Cor 20
                            finite image; m = the least working modulus)
==========================  ==============================================  =====================================

The encoding names are members of :class:`~langclass.core.precision.encoding_families.EncodingFamily`, the
families of ``langclass.models.nn.encodings.make_encoding`` (``"nope"``, ``"rope_periodic"``,
``"sinusoidal_periodic"``, ``"rope"``, ``"alibi"``, ``"mod_onehot"``), and every answer and
catalogue entry carries ``build``: the ``make_encoding`` arguments of one instance (the model's
d_model / d_head / n_heads added by the caller), so every named encoding exists; a composite name
(``"rope_periodic+alibi"``: periodic RoPE in the first layer, recency heads for Y) has ``build`` with
one ``parts`` entry per family.

A third family, ``causal``, answers for the setting most decoders are trained in — causal soft attention
with a non-strict mask, NoPE and the readout at the last position, with precision that grows with the
length (counts): NoPE suffices exactly for C-RASP (class ``crasp``; *Counting Like Transformers*, Yang &
Chiang 2024; length generalization: *A Formal Framework for Understanding Length Generalization in
Transformers*, Huang et al., ICLR 2025), with the depth of the constructed C-RASP program as an upper
bound. Every answer carries ``setting`` so a reader sees why NoPE can be "no" for fixed-precision
soft attention (LTL[P] only) and "yes" for counting precision.

A quasi-aperiodic language outside LTL[P,Y,MOD] (decided on its MOD⁺-orbits,
:mod:`langclass.core.algebra.orbits`) gets the soft answer "none known" with the non-member's reason and
witness (``outside``): no encoding of this catalogue is known to recognize it with soft attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from .encoding_families import HARD_FAMILIES, HARD_PREFIX, EncodingFamily

__all__ = [
    "SETTINGS",
    "EncodingParams",
    "DEFAULT_PARAMS",
    "choose_encodings",
    "encoding_catalogue",
    "conventional_rope_length",
]

# every encoding name below is spelled through the enum the model registry checks against
_NOPE, _ROPE, _ROPE_PERIODIC = EncodingFamily.NOPE.value, EncodingFamily.ROPE.value, EncodingFamily.ROPE_PERIODIC.value
_SINUSOIDAL_PERIODIC, _ALIBI = EncodingFamily.SINUSOIDAL_PERIODIC.value, EncodingFamily.ALIBI.value
_MOD_ONEHOT = EncodingFamily.MOD_ONEHOT.value
_RECENCY_TRAINED, _RECENCY_PERIODIC = EncodingFamily.RECENCY.value, EncodingFamily.RECENCY_PERIODIC.value

_RoPE = "Disentangling the Expressivity of RoPE"
_HARD = "Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages"
_COUNTING = "Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers (Yang & Chiang 2024)"
_LENGTH_GEN = "A Formal Framework for Understanding Length Generalization in Transformers (Huang et al., ICLR 2025)"
SETTINGS = {
    "soft": "fixed-precision soft attention, strict future mask, BOS",
    "hard": "unique hard attention (fixed precision)",
    "causal": "causal soft attention (counting precision): non-strict causal mask, readout at the last position",
}
"""The setting each family of answers is about (every answer carries it as ``setting``)."""
_RECENCY = ("recency construction (this project, docs/recency.md): an ALiBi head with slope s ≥ f_large and zero "
            "content score puts weight exactly 1 on position i − 1 at every length; with P heads (slope 0) it "
            "simulates every LTL[P,Y] formula")
RECENCY_SLOPE_FLOAT32 = 128.0
"""The recency slope of the constructions in float32: the power of two ≥ f_large(float32) ≈ 103.97."""


@dataclass(frozen=True)
class EncodingParams:
    """Parameters of the conventional-RoPE certificate.

    Attributes:
        g: rotation angle in radians per position. The default 1 rad makes g/2π irrational, as
            Cor 4.1 requires (conventional RoPE is then not a periodic schedule, Prop 4.1).
        C: score scale of the Y^k head (query/key norm product). 1e7 keeps C·δ_L(g) ≥ f_large
            far out in float32 while the realized scores stay well inside its range.
        dtype: the arithmetic of the realized scores (``float32``, ``bfloat16``, ``float16``, ``float64``).
        max_length: longest length examined for N_max (the answer is capped there).
    """

    g: float = 1.0
    C: float = 1e7
    dtype: str = "float32"
    max_length: int = 1000

    def to_dict(self) -> dict[str, Any]:
        return {"g": self.g, "C": self.C, "dtype": self.dtype, "max_length": self.max_length}


DEFAULT_PARAMS = EncodingParams()

CONSTRUCT_SCALE_NOTE = (
    f"N_max holds at the score scale C = {DEFAULT_PARAMS.C:g}; `langclass construct` and construct jobs "
    "default to the smallest C_Y that certifies target_length (300), so they report a shorter N_max; "
    f"give C_y = {DEFAULT_PARAMS.C:g} (--c-y) to build this range"
)
"""Why ``classify`` and ``construct`` report different N_max for one language by default."""


@lru_cache(maxsize=256)
def conventional_rope_length(k: int, g: float, C: float, dtype: str, max_length: int) -> dict[str, Any]:
    """N_max for simulating Y^1 … Y^k with conventional RoPE: min over j ≤ k of N_max^(j)(g, C, F)
    (Eq. 10 of "Disentangling the Expressivity of RoPE" on realized scores, via
    ``langclass.core.precision.numerics.certified_length``), plus f_large of the dtype.

    Raises:
        InputError: invalid parameters (from numerics).
        LimitExceeded: ``certified_length_work`` (max_length too large).
    """
    from .numerics import f_large

    per = {j: _certified_length_at_offset(j, g, C, dtype, max_length) for j in range(1, max(1, k) + 1)}
    return {"n_max": min(per.values()), "n_max_per_offset": per, "f_large": float(f_large(dtype))}


@lru_cache(maxsize=1024)
def _certified_length_at_offset(j: int, g: float, C: float, dtype: str, max_length: int) -> int:
    """N_max^(j) for one offset, cached per offset so that k and k+1 share the work for j ≤ k."""
    from .numerics import certified_length

    return int(certified_length(j, g, C, dtype, max_length))


def _entry(encoding: str | None, name: str, cls: str | None, parameters: dict[str, Any], guarantee: str,
           theorem: str | None, reason: str, alternatives: list[dict[str, Any]] | None = None, **extra) -> dict[str, Any]:
    out = {"encoding": encoding, "name": name, "class": cls, "parameters": parameters,
           "length_guarantee": guarantee, "theorem": theorem, "reason": reason,
           "alternatives": [a if "build" in a else dict(a, build=_build(a["encoding"], a.get("parameters", {})))
                            for a in alternatives or []],
           "build": _build(encoding, parameters)}
    out.update(extra)
    return out


def _build(encoding: str | None, parameters: Mapping[str, Any]) -> dict[str, Any] | None:
    """``make_encoding`` arguments of one instance of an answer's encoding (None for no encoding); a
    composite name (``a+b``) gets ``{"name": "a+b", "parts": [build of a, build of b]}``."""
    if encoding is None:
        return None
    if "+" in encoding:
        return {"name": encoding, "parts": [_build(part, parameters) for part in encoding.split("+")]}
    if encoding == _MOD_ONEHOT:
        return {"name": _MOD_ONEHOT, "period": int(parameters.get("period") or parameters.get("modulus") or 1)}
    if encoding in (_ROPE_PERIODIC, _SINUSOIDAL_PERIODIC, _RECENCY_PERIODIC):
        return {"name": encoding, "periods": int(parameters.get("period") or parameters.get("modulus") or 1)}
    if encoding == _ROPE:  # base 10 000: the first pair turns by θ_1 = base^0 = 1 rad = g
        return {"name": _ROPE, "base": 10_000.0}
    if encoding == _ALIBI:  # one P head (slope 0) and one recency head
        return {"name": _ALIBI, "n_heads": 2, "slopes": [0.0, float(parameters.get("slope", RECENCY_SLOPE_FLOAT32))]}
    return {"name": encoding}


def choose_encodings(members: Mapping[str, bool | None], *, period: int | None = None, delay: int | None = None,
                     stability_index: int | None = None, modulus: int | None = None,
                     params: EncodingParams = DEFAULT_PARAMS, period_y_mod: int | None = None,
                     outside_y_mod: Mapping[str, Any] | None = None, crasp_depth: int | None = None,
                     outside_crasp: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The least sufficient encoding for soft and for hard attention, and the causal (counting) answer.

    Args:
        members: class key → True/False/None (see :mod:`langclass.core.algebra.lattice`).
        period: least k of LTL[P,MOD] (when a member).
        delay: largest Y-offset k needed for LTL[P,Y] (``classes.ltl_p_y_delay``), if known.
        stability_index: s of the stable semigroup (a working modulus for FO[<,MOD]).
        modulus: the least m with L ∈ FO[<,MOD_m] (:func:`langclass.core.synthesis.fo_mod.least_modulus`); the
            FO[<,MOD] answer uses it (else s).
        params: angle g, scale C, dtype and max_length of the conventional-RoPE certificate.
        period_y_mod: least m of LTL[P,Y,MOD] (when a member; ``None`` when the membership was only
            implied through the lattice, then the period of LTL[P,MOD] or 1 from LTL[P,Y] is used).
        outside_y_mod: for a non-member of LTL[P,Y,MOD], its ``reason`` and ``witness`` (the class
            result's record), quoted by the soft answer.
        crasp_depth: the depth of the C-RASP program of a ``crasp`` member (``None`` when unknown).
        outside_crasp: for a non-member of ``crasp``, its ``reason`` and ``witness``, quoted by the
            causal answer.

    Returns:
        ``{"soft": {...}, "hard": {...}, "causal": {...}}``, each with ``setting`` (:data:`SETTINGS`),
        ``encoding`` (catalogue name or ``None``),
        ``name``, ``class``, ``parameters``, ``length_guarantee``, ``theorem``, ``reason`` and
        ``alternatives``. When a needed class is undecided (``None``) the entry says so
        (``encoding`` ``None``, ``undecided`` true).
    """
    out = {"soft": _soft(members, period, delay, params, period_y_mod, outside_y_mod),
           "hard": _hard(members, stability_index, modulus),
           "causal": _causal(members, crasp_depth, outside_crasp)}
    return {fam: dict(setting=SETTINGS[fam], **e) for fam, e in out.items()}


def _causal(m: Mapping[str, bool | None], depth: int | None, outside: Mapping[str, Any] | None) -> dict[str, Any]:
    """NoPE under causal soft attention with counting precision: exactly the C-RASP languages."""
    member = m.get("crasp")
    theorem = (f"{_COUNTING} (every C-RASP program compiles to a NoPE softmax transformer with non-strict causal "
               f"masking); {_LENGTH_GEN} (C-RASP programs provably length-generalize under idealized inference)")
    if member is True:
        d = f"depth {depth}" if depth is not None else "depth unknown (the program is over the size limit)"
        why = ("the language is in C-RASP (class crasp: balanced morphisms of every component of the minimal DFA, "
               "docs/crasp.md), so a causal NoPE transformer that counts recognizes it at every length")
        if m.get("ltl_p") is False:
            why += ("; with fixed precision the same NoPE model recognizes only LTL[P] (the soft answer), which this "
                    "language is not in: the counts need precision growing like log n")
        return _entry(_NOPE, f"NoPE suffices — C-RASP, {d} (upper bound from the constructed program)", "crasp",
                      {"mask": "nonstrict", "readout": "last position", "depth": depth,
                       "depth_is": "an upper bound (the depth of the constructed program; the least depth of the "
                                   "Knee-Deep in C-RASP hierarchy is not decided)",
                       "precision": "counts up to n: about log2(n) bits"},
                      "all lengths while the counts are representable (precision ~ log n)", theorem, why)
    if member is False:
        reason = "the language is not in C-RASP, so no causal NoPE transformer is predicted to length-generalize on it"
        if outside and outside.get("reason"):
            reason += f": {outside['reason']}"
        extra: dict[str, Any] = {}
        if outside is not None:
            extra["outside"] = {"class": "crasp", "reason": outside.get("reason"), "witness": outside.get("witness")}
        return _entry(None, "no C-RASP program: NoPE is not predicted to length-generalize", None, {}, "—", theorem,
                      reason, **extra)
    return _entry(None, "undecided", None, {}, "—", None, "a limit left C-RASP undecided", undecided=True)


def _soft(m: Mapping[str, bool | None], period: int | None, delay: int | None, params: EncodingParams,
          period_y_mod: int | None = None, outside_y_mod: Mapping[str, Any] | None = None) -> dict[str, Any]:
    if m.get("ltl_p") is True:
        return _entry(_NOPE, "NoPE (soft attention, strict future mask, BOS)", "ltl_p", {}, "all lengths",
                      f"{_RoPE}, §2.2 (softmax transformers without PE recognize exactly LTL[P]; Li & Cotterell)",
                      "the language is in LTL[P], which soft attention recognizes without any positional encoding")
    if m.get("ltl_p_mod") is True:
        k = int(period)
        return _entry(_ROPE_PERIODIC, f"periodic RoPE with period {k}", "ltl_p_mod",
                      {"period": k, "table": f"T(r) = round_F(Rot_(2π/{k}, r)) for 0 ≤ r < {k}, indexed by i mod {k}",
                       "bos_anchor": True, "unrotated_pairs_for_P": True},
                      "all lengths", f"{_RoPE}, Thm 3.1 (SMAT[RoPE_P] = LTL[P,MOD]), Lemma 3.2 and App. C.3",
                      f"the language is in LTL[P,MOD] with least period k = {k} but not in LTL[P]; NoPE is not enough "
                      "(soft attention without PE recognizes exactly LTL[P])",
                      [{"encoding": _SINUSOIDAL_PERIODIC, "parameters": {"period": k},
                        "theorem": f"{_RoPE}, Thm 3.2 (SMAT[SiPE_P] = LTL[P,MOD])"}])
    if m.get("ltl_p_y") is True:
        params_d = params.to_dict()
        if delay is None:
            return _entry(_ROPE, "conventional RoPE (length-bounded)", "ltl_p_y", dict(params_d, k=None, n_max=None),
                          "unknown (the Y-offset k was not determined within limits)",
                          f"{_RoPE}, Cor 4.1 and App. D (Eq. 9–10)",
                          "the language is in LTL[P,Y] but in no periodic class; conventional RoPE simulates Y^k only "
                          "up to a certified length, which needs k", [_recency_alternative(None)], undecided=False)
        k = max(1, int(delay))
        try:
            cert = conventional_rope_length(k, params.g, params.C, params.dtype, params.max_length)
        except Exception as exc:  # a limit of the numerics: report, do not fail the analysis
            cert = {"n_max": None, "error": str(exc)}
        n_max = cert.get("n_max")
        guarantee = f"lengths n ≤ {n_max}" if n_max is not None else "unknown"
        if n_max is not None and n_max >= params.max_length:
            guarantee = f"lengths n ≤ {n_max} (the examined maximum; N_max may be larger)"
        return _entry(_ROPE, f"conventional RoPE (angle g = {params.g} rad, score scale C = {params.C:g}) up to n = {n_max}",
                      "ltl_p_y",
                      dict(params_d, k=k, n_max=n_max, n_max_per_offset=cert.get("n_max_per_offset"),
                           f_large=cert.get("f_large"), construct_note=CONSTRUCT_SCALE_NOTE),
                      guarantee, f"{_RoPE}, Cor 4.1 and App. D (Y^k via C·cos(g(i−k−j)), certified by Eq. 10)",
                      f"the language is in LTL[P,Y] (Y-offsets up to {k}) but not in LTL[P,MOD]; conventional RoPE is not "
                      "periodic (Prop 4.1), so Y^k is exact only while C·δ_L(g) ≥ f_large",
                      [_recency_alternative(k)])
    undecided = any(m.get(k) is None for k in ("ltl_p", "ltl_p_mod", "ltl_p_y"))
    if undecided:
        return _entry(None, "undecided", None, {}, "—", None,
                      "a limit left LTL[P], LTL[P,MOD] or LTL[P,Y] undecided, so the least encoding is unknown", undecided=True)
    if m.get("ltl_p_y_mod") is True:
        return _y_mod_entry(period_y_mod, params)
    reason = ("the language is outside LTL[P,MOD] and LTL[P,Y]: no soft-attention encoding of this catalogue is "
              "known to recognize it exactly at all lengths")
    extra: dict[str, Any] = {}
    if m.get("ltl_p_y_mod") is False and outside_y_mod is not None:
        extra["outside"] = {"class": "ltl_p_y_mod", "reason": outside_y_mod.get("reason"),
                            "witness": outside_y_mod.get("witness")}
    if not m.get("fo_mod"):  # not quasi-aperiodic: the answer as before (with the witness of LTL[P,Y,MOD] added)
        return _entry(None, "none known", None, {}, "—", None, reason, **extra)
    if m.get("ltl_p_y_mod") is None:
        return _entry(None, "none known", None, {}, "—", None,
                      reason + "; a limit left LTL[P,Y,MOD] (Y and MOD in one formula) undecided")
    reason = ("the language is quasi-aperiodic but outside LTL[P,Y,MOD] (past LTL with P, Y and MOD atoms, which periodic "
              "RoPE plus recency heads recognize at all lengths), so no soft-attention encoding of this catalogue is "
              "known to recognize it exactly")
    why = (outside_y_mod or {}).get("reason")
    if why:
        reason += f": {why}"
    if m.get("star_free"):
        reason += "; it is star-free, so unique hard attention recognizes it without a positional encoding (the hard answer)"
    else:
        reason += "; unique hard attention with position marks i mod m recognizes it (the hard answer)"
    return _entry(None, "none known", None, {}, "—", None, reason, **extra)


def _y_mod_entry(period_y_mod: int | None, params: EncodingParams) -> dict[str, Any]:
    """Periodic RoPE of period m for the MOD atoms plus recency heads for Y: LTL[P,Y,MOD] at all lengths."""
    k = int(period_y_mod) if period_y_mod else None
    label = f"period {k}" if k else "the least period m"
    parameters: dict[str, Any] = {
        "period": k,
        "table": f"T(r) = round_F(Rot_(2π/{k}, r)) for 0 ≤ r < {k}, indexed by i mod {k}" if k else None,
        "bos_anchor": True, "unrotated_pairs_for_P": True,
        "slope": RECENCY_SLOPE_FLOAT32, "dtype": "float32",
        "y_heads": "slope s ≥ f_large on each Y head (Y^k = k stacked heads), 0 on the P heads",
    }
    bounded = {"encoding": f"{_ROPE_PERIODIC}+{_ROPE}",
               "name": f"periodic RoPE with {label} + conventional RoPE for Y (length-bounded)",
               "parameters": dict(params.to_dict(), period=k, k=None, n_max=None),
               "length_guarantee": "lengths n ≤ N_max^(k)(g, C, F) for the formula's Y-offsets k (Eq. 10)",
               "theorem": f"{_RoPE}, Thm 3.1 (MOD) and Cor 4.1, App. D (Y^k via C·cos(g(i−k−j)), certified by Eq. 10)"}
    return _entry(f"{_ROPE_PERIODIC}+{_ALIBI}", f"periodic RoPE with {label} + recency heads, all lengths", "ltl_p_y_mod",
                  parameters, "all lengths",
                  f"{_RoPE}, Thm 3.1 and Lemma 3.2 / App. C.3 (periodic RoPE simulates the MOD atoms), with the {_RECENCY}; "
                  "docs/recency.md: the same margin argument covers LTL[P,Y,MOD]",
                  (f"the language is in LTL[P,Y,MOD] with least period m = {k} (every MOD⁺-orbit of its syntactic morphism "
                   "is R-trivial at m" if k else "the language is in LTL[P,Y,MOD] (implied through the lattice") +
                  ") but in neither LTL[P,MOD] nor LTL[P,Y]: periodic RoPE alone misses Y, conventional RoPE alone is "
                  "length-bounded and misses MOD, so the MOD atoms take periodic RoPE and Y takes recency heads",
                  [bounded])


def _recency_alternative(k: int | None) -> dict[str, Any]:
    parameters = {"slope": RECENCY_SLOPE_FLOAT32, "dtype": "float32", "y_heads": "slope s on each Y head, 0 on the P heads",
                  "layers_for_y_k": "Y^k = k stacked Y heads" + (f" (k = {k})" if k else "")}
    return {"encoding": _ALIBI, "name": "recency heads (ALiBi, slope ≥ f_large) — all lengths", "parameters": parameters,
            "length_guarantee": "all lengths (while −s·n is finite in the score dtype)", "theorem": _RECENCY,
            "build": _build(_ALIBI, parameters)}


def _hard(m: Mapping[str, bool | None], s: int | None, least: int | None = None) -> dict[str, Any]:
    sf, si, fm = m.get("star_free"), m.get("stutter_invariant"), m.get("fo_mod")
    if sf is True and si is True:
        return _entry(_NOPE, "NoPE, non-strict mask (unique hard attention)", "star_free",
                      {"mask": "nonstrict", "tie": "rightmost"}, "all lengths",
                      f"{_HARD}, Thm 18 (non-strict masking = stutter-invariant star-free)",
                      "the language is star-free and stutter-invariant, so even non-strict masking suffices",
                      [{"encoding": _NOPE, "parameters": {"mask": "strict", "tie": "rightmost"}, "theorem": f"{_HARD}, Thm 17"}])
    if sf is True:
        return _entry(_NOPE, "NoPE, strict future mask, rightmost ties (unique hard attention)", "star_free",
                      {"mask": "strict", "tie": "rightmost"}, "all lengths",
                      f"{_HARD}, Thm 17 (future-masked rightmost hard attention = star-free)",
                      "the language is star-free" + (" but not stutter-invariant, so the mask must be strict (Thm 18)" if si is False else ""))
    if sf is False and fm is True:
        mod = least if least is not None else s
        params: dict[str, Any] = {"mask": "strict", "tie": "rightmost"}
        if mod is not None:
            params.update(modulus=int(mod), period=int(mod), stability_index=s,
                          table=f"e_(i mod {mod}): coordinate r is 1 iff i ≡ r (mod {mod})")
        why = ("the language is in FO[<,MOD] (quasi-aperiodic) but not star-free, so hard attention needs modular "
               "position information")
        if least is not None:
            why += (f"; m = {least} is the least modulus with L ∈ FO[<,MOD_m] (η((Σ^m)^+) aperiodic; the stability "
                    f"index s = {s} always works), and `langclass construct` builds and verifies this transformer")
        elif s:
            why += f"; MOD predicates of modulus s = {s} (the stability index) suffice"
        sin_params = {"period": int(mod)} if mod is not None else {}
        return _entry(_MOD_ONEHOT, f"position marks i mod {mod} (finite-image PE; unique hard attention)",
                      "fo_mod", params, "all lengths",
                      f"{_HARD}, Thm 19 (a finite-image PE gives the predicates it marks: here MOD_m^r) and Cor 20 "
                      "(FO[<,MOD] = regular ∩ AC⁰, Barrington, Compton, Straubing & Thérien)", why,
                      [{"encoding": _SINUSOIDAL_PERIODIC, "parameters": sin_params,
                        "name": f"rational sinusoidal PE, period {mod} (marks read out by a ReLU layer, Cor 20 §7.5)",
                        "theorem": f"{_HARD}, Cor 20"}])
    if sf is None or (sf is False and fm is None):
        return _entry(None, "undecided", None, {}, "—", None,
                      "a limit left star-free or FO[<,MOD] undecided, so the least encoding is unknown", undecided=True)
    return _entry(None, "none known", None, {}, "—", None,
                  "the language is not in FO[<,MOD] (its stable semigroup contains a non-trivial group): it is not in AC⁰, "
                  "and no fixed-precision hard-attention model with finite-image PE recognizes it (Cor 20)")


def encoding_catalogue() -> list[dict[str, Any]]:
    """Every encoding family the service reasons about: name, attention family, class captured,
    parameters, length guarantee, source and ``build`` (``make_encoding`` arguments of one instance;
    for ``GET /v1/encodings``). Every entry names its ``family`` (``soft``, ``hard``, ``causal``: the
    families of :func:`choose_encodings`), ``setting`` (:data:`SETTINGS`), ``mask`` and ``precision``
    (:data:`PRECISION`), so the causal NoPE entry (C-RASP, non-strict mask, counting precision) is not
    read as the fixed-precision one (LTL[P], strict mask); ``train`` is the train-spec encoding that
    trains the entry's model (:func:`_train`; an item of a spec's ``encodings`` as is) and
    ``train_setting`` the spec's ``setting`` it trains in (``strict`` or ``causal``; null with ``train``)."""
    out = []
    for e in _CATALOGUE:
        fam = "causal" if e["class"] == "crasp" else e["attention"]
        train = _train(e)
        out.append(dict(e, family=fam, setting=SETTINGS[fam], precision=PRECISION[fam], build=_build(e["encoding"], {"period": 2}),
                        train=train, train_setting=None if train is None else "causal" if fam == "causal" else "strict"))
    return out


PRECISION = {
    "soft": "fixed: the dtype's bits at every length",
    "hard": "fixed: the dtype's bits at every length",
    "causal": "counting: O(log n) bits at length n (exact while the counts i/n are representable)",
}
"""The numeric precision each family's answers assume (``precision`` of every catalogue entry)."""


def _train(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The train-spec encoding (``{"name", "params"}``, docs/training.md) that trains a model of a catalogue
    entry, or None when training does not reach it (a non-strict mask outside C-RASP); the C-RASP
    entry trains NoPE in the causal setting (``train_setting``; docs/training.md); soft
    attention under the strict mask trains the family itself — the recency constructions (``alibi``
    with slope ≥ f_large, ``rope_periodic+alibi``) train as ``recency`` / ``recency_periodic``, whose
    slopes are learned — and unique hard attention with rightmost ties under the strict mask trains
    ``hard_<family>`` (NoPE, or marks i mod m). No period is given: a train job on a stored language
    takes the language's own (k, m or the least modulus, docs/jobs.md), where a fixed one would be
    wrong for most languages."""
    enc, attention = entry["encoding"], entry.get("attention")
    if entry.get("class") == "crasp":  # the causal setting's NoPE (non-strict mask, BOS w, readout at the last position)
        return {"name": enc, "params": {}}
    if entry.get("mask") != "strict" or entry.get("setting") is not None:
        return None
    if attention == "soft" and enc == _ALIBI:  # the recency construction: its slopes are learned by ``recency``
        return {"name": _RECENCY_TRAINED, "params": {}}
    if attention == "soft" and enc == f"{_ROPE_PERIODIC}+{_ALIBI}":
        return {"name": _RECENCY_PERIODIC, "params": {}}
    if "+" in enc:
        return None
    if attention == "soft":
        return {"name": enc, "params": {}}
    if attention == "hard" and entry.get("tie") == "rightmost" and enc in {f.value for f in HARD_FAMILIES}:
        return {"name": HARD_PREFIX + enc, "params": {}}
    return None


_CATALOGUE: list[dict[str, Any]] = [
        {"encoding": _NOPE, "attention": "soft", "mask": "strict", "class": "ltl_p", "captures": "LTL[P]",
         "parameters": [], "length_guarantee": "all lengths",
         "source": f"{_RoPE}, §2.2 (Li & Cotterell: softmax transformers without PE = LTL[P])"},
        {"encoding": _ROPE_PERIODIC, "attention": "soft", "mask": "strict", "class": "ltl_p_mod", "captures": "LTL[P,MOD]",
         "parameters": ["period k (rotation table T(r), r = i mod k)"], "length_guarantee": "all lengths",
         "source": f"{_RoPE}, Thm 3.1, Prop 2.2 and Eq. 7 (realized by table lookup, never θ·i)"},
        {"encoding": _SINUSOIDAL_PERIODIC, "attention": "soft", "mask": "strict", "class": "ltl_p_mod", "captures": "LTL[P,MOD]",
         "parameters": ["period k"], "length_guarantee": "all lengths", "source": f"{_RoPE}, Thm 3.2"},
        {"encoding": _ROPE, "attention": "soft", "mask": "strict", "class": "ltl_p_y", "captures": "LTL[P,Y] up to a length",
         "parameters": ["angle g (irrational g/2π)", "scale C", "dtype", "Y-offset k"],
         "length_guarantee": "n ≤ N_max^(k)(g, C, F) (Eq. 10)", "source": f"{_RoPE}, Cor 4.1, Prop 4.1 and App. D"},
        {"encoding": _NOPE, "attention": "hard", "mask": "strict", "tie": "rightmost", "class": "star_free",
         "captures": "star-free = FO[<] = LTL[S]", "parameters": [], "length_guarantee": "all lengths",
         "source": f"{_HARD}, Thm 17"},
        {"encoding": _NOPE, "attention": "hard", "mask": "nonstrict", "class": "star_free",
         "captures": "stutter-invariant star-free", "parameters": [], "length_guarantee": "all lengths",
         "source": f"{_HARD}, Thm 18"},
        {"encoding": _SINUSOIDAL_PERIODIC, "attention": "hard", "mask": "strict", "class": "fo_mod",
         "captures": "FO[<,MOD] = regular ∩ AC⁰", "parameters": ["period m (frequencies r/m: a finite image)"],
         "length_guarantee": "all lengths",
         "source": f"{_HARD}, Thm 19 and Cor 20 (Barrington, Compton, Straubing & Thérien 1992)"},
        {"encoding": _MOD_ONEHOT, "attention": "hard", "mask": "strict", "tie": "rightmost", "class": "fo_mod",
         "captures": "FO[<,MOD_m] (with the least working m: FO[<,MOD] = regular ∩ AC⁰)",
         "parameters": ["period m (one-hot of i mod m: a finite image)"], "length_guarantee": "all lengths",
         "source": f"{_HARD}, Thm 19 (finite-image PE ⇔ B-RASP/LTL with its predicates) and Cor 20"},
        {"encoding": _NOPE, "attention": "soft", "mask": "nonstrict", "class": "crasp",
         "captures": "C-RASP (counting)", "parameters": [],
         "length_guarantee": "all lengths while the counts are representable (precision ~ log n)",
         "source": f"{_COUNTING}; {_LENGTH_GEN}"},
        {"encoding": _ALIBI, "attention": "soft", "mask": "strict", "class": "ltl_p_y", "captures": "LTL[P,Y] at all lengths",
         "parameters": ["slope s ≥ f_large(dtype) on the Y heads, 0 on the P heads"], "length_guarantee": "all lengths",
         "source": _RECENCY},
        {"encoding": _RECENCY_TRAINED, "attention": "soft", "mask": "strict", "class": "ltl_p_y",
         "captures": "LTL[P,Y] at all lengths, trainable",
         "parameters": ["heads: how many heads carry a learnable slope s_h = s_max·sigmoid(θ_h) (the others are NoPE heads)",
                        "slope_max s_max = 2·2^⌈log₂ f_large⌉ (256 in float32), so s ≥ f_large is reachable",
                        "slope_init (default 8)"],
         "length_guarantee": "all lengths once the Y heads' slopes reach f_large(dtype)", "source": _RECENCY},
        {"encoding": _RECENCY_PERIODIC, "attention": "soft", "mask": "strict", "class": "ltl_p_y_mod",
         "captures": "LTL[P,Y,MOD] at all lengths, trainable",
         "parameters": ["period m (periodic RoPE table, i mod m) for the MOD atoms",
                        "heads, slope_max, slope_init as for recency"],
         "length_guarantee": "all lengths once the Y heads' slopes reach f_large(dtype)",
         "source": f"{_RoPE}, Thm 3.1 and Lemma 3.2, with the {_RECENCY}"},
        {"encoding": f"{_ROPE_PERIODIC}+{_ALIBI}", "attention": "soft", "mask": "strict", "class": "ltl_p_y_mod",
         "captures": "LTL[P,Y,MOD] at all lengths",
         "parameters": ["period m (rotation table, i mod m) for the MOD atoms",
                        "slope s ≥ f_large(dtype) on the Y heads, 0 on the P heads"],
         "length_guarantee": "all lengths", "source": f"{_RoPE}, Thm 3.1 and Lemma 3.2, with the {_RECENCY}"},
    ]
