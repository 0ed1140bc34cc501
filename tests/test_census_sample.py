"""The sweep's cells and stratified sample (langclass.core.census.sample)."""

from __future__ import annotations

import pytest

from langclass.core.algebra.lattice import INCLUSIONS
from langclass.core.census.sample import (CELLS, cell_conditions, cell_of, census_languages, stratified_sample,
                                          two_class_lengths)
from langclass.core.base.errors import InputError, LimitExceeded


@pytest.fixture(scope="module")
def n3():
    return list(census_languages(3, 2))


def test_cell_classes_follow_the_lattice():
    # the chains the cell table relies on
    for sub, sup in [("ltl_p", "ltl_p_mod"), ("ltl_p", "ltl_p_y"), ("ltl_p_y", "ltl_p_y_mod"), ("ltl_p_mod", "ltl_p_y_mod"),
                     ("ltl_p_y", "star_free"), ("star_free", "fo_mod")]:
        assert (sub, sup) in INCLUSIONS
    assert ("ltl_p_y_mod", "fo2_succ_mod") in INCLUSIONS and ("fo2_succ_mod", "fo_mod") in INCLUSIONS


def test_cells_partition_the_census_n3(n3):
    assert len(n3) == 1054
    seen = {c: 0 for c in CELLS}
    for dfa, prof in n3:
        conds = cell_conditions(prof)
        assert None not in conds.values(), dfa.to_canonical_dict()
        held = [c for c, v in conds.items() if v]
        assert len(held) == 1, (held, dfa.to_canonical_dict())
        assert cell_of(prof) == held[0]
        seen[held[0]] += 1
        # the wording of cell 5 (star-free \ LTL[P,Y]) agrees on these languages
        if prof["star_free"] and not prof["ltl_p_y"]:
            assert held[0] == "sf"
    assert all(v > 0 for v in seen.values()), seen


def test_undecided_goes_to_no_cell():
    prof = {"ltl_p": False, "ltl_p_mod": None, "ltl_p_y": False, "ltl_p_y_mod": None, "star_free": None, "fo_mod": True}
    assert cell_of(prof) is None
    s = stratified_sample([(None, prof)], 1, 0)
    assert s.undecided == 1 and s.seen == 1 and not any(s.languages.values())


def test_sampling_is_deterministic_and_stratified(n3):
    a = stratified_sample(n3, 3, 7, test_lengths=range(41, 61))
    b = stratified_sample(n3, 3, 7, test_lengths=range(41, 61))
    c = stratified_sample(n3, 3, 8, test_lengths=range(41, 61))
    fa = {k: [d.fingerprint() for d, _ in v] for k, v in a.languages.items()}
    assert fa == {k: [d.fingerprint() for d, _ in v] for k, v in b.languages.items()}
    assert fa != {k: [d.fingerprint() for d, _ in v] for k, v in c.languages.items()}
    for cell, items in a.languages.items():
        assert len(items) == 3
        assert all(cell_of(p) == cell for _d, p in items)
        assert all(two_class_lengths(d, range(41, 61)) for d, _ in items)
    assert a.trivial >= 2  # ∅ and Σ* at least
    assert sum(a.counts.values()) + a.trivial + a.undecided == a.seen == 1054


def test_two_class_lengths():
    from langclass.core.automata.automaton import DFA

    even = DFA.from_table(["a"], [[1], [0]], 0, [0])  # (aa)*: one class at every length over one letter
    assert two_class_lengths(even, [3, 4]) == []
    ends_b = DFA.from_table(["a", "b"], [[0, 1], [0, 1]], 0, [1])
    assert two_class_lengths(ends_b, [0, 1, 5]) == [1, 5]


def test_sample_limits():
    with pytest.raises(InputError):
        stratified_sample([], 0, 0)
    with pytest.raises(LimitExceeded) as err:
        next(census_languages(5, 2, max_languages=1000))
    assert err.value.limit == "max_sample_languages"
