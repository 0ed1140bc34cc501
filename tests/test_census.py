"""The census: the enumeration gives every language with a small minimal DFA exactly once (checked
by brute force over all DFAs), its totals equal the published counts, complement symmetry holds,
and ``langclass census --states 3 --alphabet 2`` prints the table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.core.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.census import PUBLISHED, bfs_tables, census, is_minimal, minimal_dfas
from langclass.core.base.errors import LimitExceeded


def _letters(k: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(k)]


def _census_fingerprints(n_max: int, k: int) -> list[str]:
    out = []
    for n in range(1, n_max + 1):
        for table, mask in minimal_dfas(n, k):
            rows = [list(table[q * k:(q + 1) * k]) for q in range(n)]
            dfa = DFA.from_table(_letters(k), rows, 0, [q for q in range(n) if mask >> q & 1])
            canon = dfa.canonical()
            assert canon.num_states == n and canon == dfa  # minimal, and already in canonical numbering
            out.append(dfa.fingerprint())
    return out


@pytest.mark.slow
@pytest.mark.parametrize("n_max,k", [(3, 2), (2, 3), (3, 1)])
def test_enumeration_is_every_language_once_by_brute_force(n_max: int, k: int) -> None:
    """Every complete DFA with ≤ n_max states (every table and accepting set; initial state 0,
    which every DFA is isomorphic to one of), minimized: the set of languages equals the census's,
    which has no repeats."""
    mine = _census_fingerprints(n_max, k)
    assert len(mine) == len(set(mine))
    brute: set[str] = set()
    for n in range(1, n_max + 1):
        for flat in itertools.product(range(n), repeat=n * k):
            rows = [list(flat[q * k:(q + 1) * k]) for q in range(n)]
            for mask in range(1 << n):
                brute.add(DFA.from_table(_letters(k), rows, 0, [q for q in range(n) if mask >> q & 1]).fingerprint())
    assert set(mine) == brute
    assert len(mine) == sum(PUBLISHED[k][n] for n in range(1, n_max + 1))


def test_counts_per_state_number_match_the_literature() -> None:
    for k, n_max in ((1, 5), (2, 4), (3, 3)):
        for n in range(1, n_max + 1):
            assert sum(1 for _ in minimal_dfas(n, k)) == PUBLISHED[k][n], (k, n)


def test_bfs_tables_are_initially_connected_and_canonical() -> None:
    tables = list(bfs_tables(3, 2))
    assert len(tables) == len(set(tables)) == 216  # initially connected 3-state DFAs over 2 letters, up to iso
    for t in tables:
        rows = [list(t[q * 2:(q + 1) * 2]) for q in range(3)]
        dfa = DFA.from_table(["a", "b"], rows, 0, [])
        assert dfa.reachable().all() and dfa.renumber_bfs() == dfa


def test_is_minimal_agrees_with_minimization() -> None:
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        rows = rng.integers(0, n, (n, 2))
        dfa = DFA.from_table(["a", "b"], rows.tolist(), 0, [])
        if not dfa.reachable().all():
            continue
        mask = int(rng.integers(0, 1 << n))
        d = DFA.from_table(["a", "b"], rows.tolist(), 0, [q for q in range(n) if mask >> q & 1])
        assert is_minimal(tuple(rows.ravel().tolist()), mask, n, 2) == (d.minimize().num_states == n)


def test_complement_symmetry_gives_the_same_census() -> None:
    full = census(2, 2, use_complement=False)
    half = census(2, 2, use_complement=True)
    assert full.profiles == half.profiles and full.total == half.total == 26
    # and the symmetry itself: a language and its complement have the same memberships
    for table, mask in minimal_dfas(2, 2):
        rows = [list(table[q * 2:(q + 1) * 2]) for q in range(2)]
        a = analyze(DFA.from_table(["a", "b"], rows, 0, [q for q in range(2) if mask >> q & 1]))
        b = analyze(DFA.from_table(["a", "b"], rows, 0, [q for q in range(2) if not mask >> q & 1]))
        assert a.members == b.members


def test_limit() -> None:
    with pytest.raises(LimitExceeded) as err:
        census(5, 2)
    assert err.value.extra["limit"] == "max_census_languages"


@pytest.mark.slow
def test_cli_census_three_states_two_letters() -> None:
    result = CliRunner().invoke(app, ["census", "--states", "3", "--alphabet", "2", "--jobs", "2", "--no-progress"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "     3        1028        1028  ok" in out
    assert " total        1054        1054" in out
    assert "LTL[P,MOD] \\ LTL[P]: 66" in out and "star-free \\ LTL[P,Y]: 18" in out
    for name in ("LTL[P]", "star-free", "group language", "FO²[<,MOD]"):
        assert name in out
