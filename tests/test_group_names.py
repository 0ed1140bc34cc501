"""Group names in the monoid summary and the CLI's beyond-AC⁰ line: certain names only."""

from __future__ import annotations

from langclass.core.classification.analysis import analyze, format_table
from langclass.core.automata.automaton import DFA
from langclass.core.algebra.monoid import transition_monoid

# PGL(2,5) on the projective line {0,…,4,∞=5}: x+1, 2x, −1/x — S5 acting on six points (order 120 ≠ 6!)
PGL25 = DFA.from_table("abc", [[1, 0, 5], [2, 2, 4], [3, 4, 2], [4, 1, 3], [0, 3, 1], [5, 5, 0]], 0, [0])
# A5 on six points (PSL(2,5)): x+1 and −1/x
PSL25 = DFA.from_table("ab", [[1, 5], [2, 4], [3, 2], [4, 3], [0, 1], [5, 0]], 0, [0])


def test_s5_on_six_points_is_named_and_the_beyond_line_says_it_once() -> None:
    """(Before: "beyond AC⁰: group group of order 120 of order 120", S5 never named.)"""
    M = transition_monoid(PGL25)
    assert M.size == 120
    (g,) = M.maximal_subgroups
    assert (g.name, g.order, g.degree, g.solvable) == ("S5", 120, 6, False)
    analysis = analyze(PGL25)
    assert "contains the group S5 of order 120, so" in analysis.beyond["reason"]
    text = format_table(analysis)
    line = next(ln for ln in text.splitlines() if ln.startswith("beyond AC⁰"))
    assert line.startswith("beyond AC⁰: group S5 of order 120, generators "), line
    assert "group group" not in text


def test_a5_on_six_points_is_named() -> None:
    M = transition_monoid(PSL25)
    (g,) = M.maximal_subgroups
    assert (g.name, g.order, g.solvable) == ("A5", 60, False)


def test_a_group_of_order_120_with_a_centre_is_not_called_s5() -> None:
    """A5×Z2 (A5 on {0..4} and a swap of {5,6} together): non-solvable of order 120, centre Z2 — left unnamed."""
    # a = (0 1 2 3 4)(5 6), b = (0 2 1): A5 × Z2 (a^5 = (5 6) is central, a^6 and b generate A5);
    # c (constant 5) only makes 5 and 6 reachable — the group of units stays <a, b>
    dfa = DFA.from_table("abc", [[1, 2, 5], [2, 0, 5], [3, 1, 5], [4, 3, 5], [0, 4, 5], [6, 5, 5], [5, 6, 5]], 0, [0, 5])
    M = transition_monoid(dfa)
    names = {(g.name, g.order) for g in M.maximal_subgroups}
    assert any(order == 120 for _, order in names), names
    assert ("S5", 120) not in names and ("group of order 120", 120) in names
