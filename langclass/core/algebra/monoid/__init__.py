"""The transition monoid of a minimal complete DFA (= the syntactic monoid of its language).

Every element is a transformation of the states ``Q = {0..n-1}`` written as an integer array of
length ``n`` (``x[q] = q·x``, right action), produced by a breadth-first Froidure–Pin style closure
of the letters under composition. Because layers are processed in order (element order, then letter
order), the first word found for an element is its *shortlex-least* word; the identity (word ε) is
element ``0``. The syntactic *semigroup* η(Σ⁺) is the monoid minus the identity unless some nonempty
word acts as the identity (``identity_in_semigroup``).

On top of the closure: the right and left Cayley graphs, idempotents, idempotent powers x^ω,
Green's relations R, L, H, J (= D, finite monoid) as strongly connected components of the right,
left and two-sided Cayley graphs, regular D-classes, maximal subgroups (as permutation groups on the
image of their idempotent), the stability index s (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})) and the
stable semigroup T = η(Σ^s), with a word of length exactly s for each of its elements.

Sources: V. Froidure & J.-E. Pin, "Algorithms for computing finite semigroups" (1997) for the closure
and Cayley graphs; J. A. Green, "On the structure of semigroups" (1951); J.-E. Pin, *Mathematical
Foundations of Automata Theory*, ch. V (Green's relations) and XI (stable semigroup; the stability
index appears in D. A. M. Barrington, K. Compton, H. Straubing & D. Thérien, "Regular languages in
NC¹", 1992).

The package: :mod:`.closure` (the enumeration), :mod:`.transition` (the value, products and Cayley
graphs), :mod:`.lookup` (transformation → id), :mod:`.green`, :mod:`.stable`, :mod:`.groups`,
:mod:`.describe`.

Example:
    >>> from langclass.core.automata.automaton import DFA
    >>> parity = DFA.from_table(["0", "1"], [[0, 1], [1, 0]], 0, [0])
    >>> M = transition_monoid(parity)
    >>> M.size, M.identity_in_semigroup, M.word(1), M.stability_index
    (2, True, ('1',), 1)
    >>> [g.name for g in M.maximal_subgroups]
    ['Z2']
"""

from __future__ import annotations

from .closure import MAX_MONOID_ENTRIES, transition_monoid
from .describe import monoid_summary
from .groups import MAX_GROUPS_REPORTED, GroupInfo, nontrivial_groups
from .lookup import canonical_labels, strong_components
from .transition import TransitionMonoid

__all__ = [
    "TransitionMonoid",
    "transition_monoid",
    "GroupInfo",
    "MAX_MONOID_ENTRIES",
    "MAX_GROUPS_REPORTED",
    "strong_components",
    "canonical_labels",
    "nontrivial_groups",
    "monoid_summary",
]
