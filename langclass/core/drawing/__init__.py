"""Stage 8 of core — drawing: pictures of a language (DFA, egg-box, lattice) as SVG; imports base, automata and algebra.

Pictures of a language, as SVG or HTML strings with no Graphviz needed: the minimal DFA
(:func:`dfa_svg`, layered layout, user state names), the egg-box diagram of the syntactic monoid
(:func:`eggbox`, :func:`eggbox_html`) and the lattice of classes with a language's memberships
(:func:`lattice_svg`), all in :mod:`.svg`. Imports the automata and algebra stages only.

``from langclass.core.drawing import dfa_svg, eggbox`` (documented in docs/python.md) keeps working:
the names of :mod:`.svg` are re-exported here, loaded on first use (PEP 562).
"""

from langclass.core.base.lazy import lazy_exports

_EXPORTS = {
    "dfa_svg": "svg", "eggbox": "svg", "eggbox_html": "svg", "eggbox_of": "svg", "EggBox": "svg",
    "lattice_svg": "svg", "user_state_names": "svg", "word_text": "svg", "edge_label": "svg",
    "layered_layout": "svg",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
