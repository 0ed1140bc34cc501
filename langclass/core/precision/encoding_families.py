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

__all__ = ["EncodingFamily", "COMPOSITE_SEPARATOR", "families_of"]


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
                             f"{', '.join(f.value for f in EncodingFamily)}", field="encoding") from None
    return tuple(out)
