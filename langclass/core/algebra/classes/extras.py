"""Further algebraic facts beside the classes (the ``extra`` block of an analysis).

L- and R-triviality, (reverse) definiteness, local L-triviality, and the stable semigroup's
R-triviality and local R-triviality — the last two are the algebraic tests of LTL[P,MOD] and
LTL[P,Y] restricted to T = η(Σ^s), which :func:`langclass.core.classification.analysis.analyze` compares with the
automaton tests (J.-E. Pin, *Mathematical Foundations of Automata Theory*, ch. V and XI).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .aperiodic import need_monoid
from .context import Context

__all__ = ["monoid_extras"]


def _has_duplicates(a: np.ndarray) -> bool:
    """Some value occurs twice in the non-negative integer array ``a`` (a count when the values are
    dense, else a sort)."""
    if a.size < 2:
        return False
    if int(a.max()) <= 4 * a.size + 1024:
        return bool(np.bincount(a).max() > 1)
    return bool(np.unique(a).size < a.size)


def monoid_extras(ctx: Context) -> dict[str, Any]:
    """Further algebraic facts (the ``extra`` block of the ground truth): L-triviality, definiteness,
    local L-triviality, the stable semigroup's R-triviality (QR, algebraic test) and local R-triviality."""
    M = need_monoid(ctx)
    g = M.green
    R, L = g["R"], g["L"]
    E = ctx.semigroup_idempotents
    if ctx.table_built or E.size * M.num_states > 4 * M.size:  # letters' rows/columns: O(|Σ|·m)
        definite = bool((ctx.left_rows(M.letter_ids)[:, E] == E[None, :]).all())  # a·e = e
        reverse_definite = bool((ctx.right_cols(M.letter_ids)[E, :] == E[:, None]).all())  # e·a = e
    else:  # few idempotents: compose their transformations, O(|E|·n·|Σ|)
        gens, EE = M.elements[M.letter_ids].astype(np.intp), M.elements[E].astype(np.intp)
        definite = all((EE[:, gens[a]] == EE).all() for a in range(gens.shape[0]))  # a·e = e
        reverse_definite = all((gens[a][EE] == EE).all() for a in range(gens.shape[0]))  # e·a = e
    nontriv_L = np.bincount(L)[L] > 1
    locally_l = True
    reps = ctx.maximal_idempotent_reps  # eSe ≅ e'Se' for e D e' (see Context.maximal_idempotent_reps)
    lm, rm = ctx.rep_masks
    for i in range(reps.size):
        ctx.check_time("extra facts")
        ids = np.flatnonzero(lm[i] & rm[i] & nontriv_L)
        if _has_duplicates(L[ids]):
            locally_l = False
            break
    # QR by the stable semigroup: T is R-trivial iff no x ∈ T, x ≠ e, is R-equivalent to an idempotent e ∈ T
    T = M.stable
    idem_T = M.idempotent & T
    qr_alg = True
    Rcnt = np.bincount(R[T], minlength=int(R.max()) + 1)
    if (Rcnt[R[idem_T]] > 1).any():
        qr_alg = False
    # eTe R-trivial for idempotents e ∈ T: no two distinct M-regular elements of eTe are R-equivalent
    stable_lr = True
    # e' ≤ e ⇒ e'Te' ⊆ eTe, and E(T) = E(η(Σ⁺)) (e = η(w) ⇒ e = η(w^s)): maximal idempotents suffice
    # (all maximal idempotents here: the conjugating elements of a D-class need not lie in T)
    maxi = ctx.maximal_idempotents
    TR = T & M.regular
    chunk = max(1, 4_000_000 // max(1, M.size))
    for c0 in range(0, maxi.size, chunk):
        ctx.check_time("extra facts")
        lm, rm = ctx.fixed_masks(maxi[c0:c0 + chunk])
        rows, xs = np.nonzero(lm & rm & TR[None, :])  # x ∈ eMe ∩ T regular, for each e of the chunk
        keys = rows * (int(R.max()) + 1) + R[xs]
        if _has_duplicates(keys):  # two of them R-equivalent for the same e
            stable_lr = False
            break
    return {
        "l_trivial": bool(np.bincount(L).max() == 1),
        "r_trivial": bool(np.bincount(R).max() == 1),
        "definite": bool(definite),
        "reverse_definite": bool(reverse_definite),
        "locally_l_trivial": locally_l,
        "stable_semigroup_r_trivial": qr_alg,
        "stable_semigroup_locally_r_trivial": stable_lr,
        "identity_in_syntactic_semigroup": M.identity_in_semigroup,
    }
