"""The positional-encoding families, named once for core and models alike.

:class:`EncodingFamily` is the contract between the theory side (``langclass.core.precision.encoding_choice``
names the encoding that suffices for a language) and the model side (``langclass.models.nn.encodings``
registers one class per family and builds it with ``make_encoding``; the constructions of
``langclass.models.construct`` name the encodings they use). The registry refuses a family that is
not a member, core spells every name through the enum, and ``tests/test_encoding_families.py``
checks that the registry, the catalogue, every answer and every construction agree.

Sources: *Disentangling the Expressivity of RoPE* (NoPE §2.2; periodic RoPE §2.4 / Eq. 7, Thm 3.1;
periodic sinusoidal PE Thm 3.2; conventional RoPE Cor. 4.1), *Masked Hard-Attention Transformers
Recognize Exactly the Star-Free Languages* (finite-image sinusoidal PE, Cor. 20), *PJ-RoPE: A
Fourier–Jet–Affine Position Space for Relative Attention* (ALiBi as its affine sector, the PJ
families).
"""

from __future__ import annotations

from enum import StrEnum

from langclass.core.base.errors import InputError

__all__ = ["EncodingFamily", "COMPOSITE_SEPARATOR", "families_of", "HARD_PREFIX", "HARD_FAMILIES", "attention_of"]


class EncodingFamily(StrEnum):
    """A positional-encoding family; the value is the name ``make_encoding`` takes and records carry."""

    NOPE = "nope"
    """No positional information (order from the mask only)."""
    SINUSOIDAL = "sinusoidal"
    """Absolute sinusoidal PE added to the embedding."""
    SINUSOIDAL_PERIODIC = "sinusoidal_periodic"
    """Absolute PE from finite tables indexed by i mod m (finite image)."""
    ROPE = "rope"
    """Conventional rotary embedding (phase ω_t·i)."""
    ROPE_PERIODIC = "rope_periodic"
    """Component-periodic rotary embedding from precomputed tables indexed by i mod m."""
    ALIBI = "alibi"
    """Linear recency bias −s_h·|i − j| on the scores."""
    LEARNED = "learned"
    """Learned absolute positions: one trained embedding row per position (a table of fixed size)."""
    RECENCY = "recency"
    """Learnable recency heads: −s_h·|i − j| with s_h = s_max·sigmoid(θ_h) on some heads, 0 on the rest
    (the recency construction of docs/recency.md made trainable; optional periodic RoPE tables)."""
    RECENCY_PERIODIC = "recency_periodic"
    """``recency`` with periodic RoPE tables (i mod m) on every head: the LTL[P,Y,MOD] model, trainable."""
    MOD_ONEHOT = "mod_onehot"
    """Absolute one-hot marks e_(i mod m) (finite image; the predicates MOD_m^r of Thm 19)."""
    PJ_BIAS = "pj_bias"
    """The learnable Fourier–jet–affine score bias of PJ-RoPE."""
    PJ_ROTARY = "pj_rotary"
    """The exact jet feature transform of PJ-RoPE."""


COMPOSITE_SEPARATOR = "+"
"""Joins the families of a model that uses several (e.g. ``rope_periodic+rope``: periodic tables in
layer 0, conventional RoPE after)."""


def families_of(name: str) -> tuple[EncodingFamily, ...]:
    """The families of an encoding name, single (``"rope"``) or composite (``"rope_periodic+alibi"``).

    Raises:
        InputError: a part that is not a family (``field="encoding"``).
    """
    out = []
    for part in str(name).split(COMPOSITE_SEPARATOR):
        try:
            out.append(EncodingFamily(part))
        except ValueError:
            raise InputError(f"unknown positional encoding {part!r}; expected one of "
                             f"{', '.join(f.value for f in EncodingFamily)} (trained hard attention: "
                             f"{', '.join(HARD_PREFIX + f.value for f in HARD_FAMILIES)})", field="encoding") from None
    return tuple(out)


HARD_PREFIX = "hard_"
"""A trained model's encoding name ``hard_<family>`` (``hard_nope``, ``hard_mod_onehot``) means unique
hard attention (strict future mask, rightmost ties, the models of *Masked Hard-Attention Transformers
Recognize Exactly the Star-Free Languages*, Thm 17 and Thm 19) with the positional encoding
``<family>``; a bare family name means soft attention. One name per model keeps results, sweep
tables and heat maps keyed by one string."""

HARD_FAMILIES: tuple[EncodingFamily, ...] = (EncodingFamily.NOPE, EncodingFamily.MOD_ONEHOT)
"""The families a hard-attention model can be trained with (the theorems' NoPE and finite-image marks)."""


def attention_of(name: str) -> tuple[str, str]:
    """``(attention, family)`` of a trained model's encoding name: ``"hard_nope"`` → ``("hard", "nope")``,
    ``"rope"`` → ``("soft", "rope")``.

    Raises:
        InputError: ``hard_<x>`` with x not in :data:`HARD_FAMILIES` (``field="encoding"``).
    """
    name = str(name)
    if not name.startswith(HARD_PREFIX):
        return "soft", name
    family = name[len(HARD_PREFIX):]
    if family not in {f.value for f in HARD_FAMILIES}:
        raise InputError(f"unknown hard-attention model {name!r}; expected one of "
                         f"{', '.join(HARD_PREFIX + f.value for f in HARD_FAMILIES)}", field="encoding")
    return "hard", family
