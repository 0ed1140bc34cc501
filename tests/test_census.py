"""The census: the enumeration gives every language with a small minimal DFA exactly once (checked
by brute force over all DFAs), the sharded, vectorized enumeration equals the one-DFA-at-a-time
reference, totals equal the published counts, the per-monoid classification equals the
per-language one (and ``analyze``), a checkpoint resumes without recounting, and
``langclass census --states 3 --alphabet 2`` prints the table."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.core.census import run as census_mod
from langclass.core.algebra import lattice
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.census.run import (PUBLISHED, Checkpoint, CheckpointMismatch, bfs_tables, census, classify,
                                   is_minimal, local_runner, minimal_dfas, minimal_masks, run_shard, shards)


def _letters(k: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(k)]


def _dfa(table, mask: int, n: int, k: int) -> DFA:
    rows = [list(table[q * k:(q + 1) * k]) for q in range(n)]
    return DFA.from_table(_letters(k), rows, 0, [q for q in range(n) if mask >> q & 1])


def _census_fingerprints(n_max: int, k: int) -> list[str]:
    out = []
    for n in range(1, n_max + 1):
        for table, mask in minimal_dfas(n, k):
            dfa = _dfa(table, mask, n, k)
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
    for k, n_max in ((1, 6), (2, 4), (3, 3)):
        for n in range(1, n_max + 1):
            assert sum(1 for _ in minimal_dfas(n, k)) == PUBLISHED[k][n], (k, n)


def test_bfs_tables_are_initially_connected_and_canonical() -> None:
    tables = list(bfs_tables(3, 2))
    assert len(tables) == len(set(tables)) == 216  # initially connected 3-state DFAs over 2 letters, up to iso
    for t in tables:
        rows = [list(t[q * 2:(q + 1) * 2]) for q in range(3)]
        dfa = DFA.from_table(["a", "b"], rows, 0, [])
        assert dfa.reachable().all() and dfa.renumber_bfs() == dfa


@pytest.mark.parametrize("n,k", [(4, 2), (3, 3), (6, 1), (2, 4)])
def test_shards_partition_the_tables_and_the_vectorized_filter_equals_the_reference(n: int, k: int) -> None:
    """The shards' tables are exactly bfs_tables (each once, in order), and minimal_masks gives the
    same (table, accepting set) pairs as minimal_dfas, Moore's refinement one DFA at a time."""
    every = list(bfs_tables(n, k))
    parts = [s for s in shards(n, k, target=16) if s.n == n]
    assert len(parts) > 1 or k == 1  # unary tables differ in their last entry only
    assert [t for s in parts for t in bfs_tables(n, k, s.prefix)] == every
    ok = minimal_masks(np.asarray(every, dtype=np.int64), n, k)
    mine = {(t, int(m)) for t, row in zip(every, ok) for m in np.flatnonzero(row)}
    assert mine == set(minimal_dfas(n, k))
    # a prefix no table extends yields nothing: state 0's first successor can only be 0 or 1
    assert list(bfs_tables(n, k, (2,))) == []


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


def test_census_counts_equal_the_published_ones() -> None:
    for n_max, k in ((3, 2), (2, 3), (8, 1)):
        c = census(n_max, k)
        assert c.by_states == {n: PUBLISHED[k][n] for n in range(1, n_max + 1)} and c.matches_published


def test_per_monoid_classification_equals_per_language() -> None:
    """Every language with ≤ 3 states over two letters (and ≤ 2 over three) classified on its own,
    without the cache: the same profile counts as the census, which answers once per monoid."""
    for n_max, k in ((3, 2), (2, 3)):
        census_mod._CACHE.clear()
        c = census(n_max, k)
        mine: Counter = Counter()
        for n in range(1, n_max + 1):
            for table, mask in minimal_dfas(n, k):
                m = classify(_dfa(table, mask, n, k))
                mine[tuple(m[key] for key in c.class_keys)] += 1
        assert dict(mine) == c.profiles
        assert c.class_keys == lattice.CLASS_KEYS  # every class of the registry is counted


def test_cayley_graph_and_key() -> None:
    """The plain-Python closure of the census key gives transition_monoid's right Cayley graph on
    every minimal DFA with ≤ 3 states over two letters (and 2 over three); renaming the letters
    keeps the key, and equal keys come only from monoids of one size with one profile."""
    from langclass.core.algebra.monoid import transition_monoid
    from langclass.core.census.run import cayley_graph, cayley_key

    by_key: dict = {}
    for n_max, k in ((3, 2), (2, 3)):
        for n in range(1, n_max + 1):
            for table, mask in minimal_dfas(n, k):
                dfa = _dfa(table, mask, n, k)
                M = transition_monoid(dfa)
                assert cayley_graph(table, n, k, 10_000) == M.right.tolist()
                assert cayley_graph(table, n, k, M.size - 1) is None if M.size > 1 else True
                key = cayley_key(M.right.tolist())
                for perm in itertools.permutations(range(k)):
                    swapped = [table[q * k + a] for q in range(n) for a in perm]
                    assert cayley_key(cayley_graph(swapped, n, k, 10_000)) == key
                prof = tuple(classify(dfa).values())
                assert by_key.setdefault(key, (M.size, prof)) == (M.size, prof)
    assert len(by_key) > 20


def test_classify_equals_analyze() -> None:
    """The lattice-skipping classification gives analyze's answers (every decider, then the checks)
    on a sample of languages with 3 states over two letters, 2 over three, and 4 and 5 over two."""
    rng = np.random.default_rng(7)
    langs = [(t, m, 3, 2) for t, m in minimal_dfas(3, 2)] + [(t, m, 2, 3) for t, m in minimal_dfas(2, 3)]
    picks = [langs[i] for i in rng.choice(len(langs), 100, replace=False)]
    for n in (4, 5):
        for t in itertools.islice(bfs_tables(n, 2), 0, 6000, 211):
            masks = [m for m in range(1 << n) if is_minimal(t, m, n, 2)]
            if masks:
                picks.append((t, masks[len(masks) // 2], n, 2))
    for table, mask, n, k in picks:
        dfa = _dfa(table, mask, n, k)
        assert classify(dfa) == analyze(dfa).members, (table, mask)


def test_acceptance_dependent_classes_are_decided_per_language(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class marked as depending on the accepting set goes through the per-language path; (the
    marked classes here do not really depend on it, so) the counts are unchanged."""
    base = census(3, 2).profiles
    census_mod._CACHE.clear()
    monkeypatch.setattr(lattice, "ACCEPTANCE_DEPENDENT", frozenset({"star_free", "group"}))
    assert census(3, 2).profiles == base


def test_checkpoint_resumes_without_recounting(tmp_path) -> None:
    """A run cut after some shards (the file ends mid-line, as after a kill) resumes with only the
    missing shards, and the totals equal a run without a checkpoint."""
    path = tmp_path / "c.jsonl"
    ran: list[str] = []
    stop_after = 3

    def interrupted(todo, keys):
        for s in todo:
            if len(ran) == stop_after:
                raise KeyboardInterrupt
            ran.append(s.id)
            yield run_shard(s, keys)

    with pytest.raises(KeyboardInterrupt):
        census(3, 2, runner=interrupted, checkpoint=path, shard_target=16)
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + stop_after
    with open(path, "a") as f:
        f.write('{"shard": "3:01')  # a line cut short by a kill
    first = set(ran)
    ran.clear()

    def counting(todo, keys):
        for s in todo:
            ran.append(s.id)
            yield run_shard(s, keys)

    stop_after = -1
    resumed = census(3, 2, runner=counting, checkpoint=path, shard_target=16)
    assert first.isdisjoint(ran) and len(first) + len(ran) == resumed.shards and resumed.resumed == len(first)
    full = census(3, 2, shard_target=16)
    assert resumed.profiles == full.profiles and resumed.by_states == full.by_states
    ran.clear()
    again = census(3, 2, runner=counting, checkpoint=path, shard_target=16)
    assert ran == [] and again.profiles == full.profiles  # a finished census is read back, nothing recounted


def test_checkpoint_of_another_census_is_refused(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    census(2, 2, checkpoint=path)
    with pytest.raises(CheckpointMismatch) as err:
        census(3, 2, checkpoint=path)
    assert "max_states" in str(err.value)
    with pytest.raises(CheckpointMismatch):
        Checkpoint(path, {**json.loads(path.read_text().splitlines()[0]), "class_keys": ["ltl_p"]})


def test_two_local_processes_give_the_same_counts() -> None:
    one = census(3, 2)
    two = census(3, 2, runner=local_runner(2), jobs=2)
    assert one.profiles == two.profiles and one.by_states == two.by_states


def test_limit() -> None:
    with pytest.raises(LimitExceeded) as err:
        census(6, 2)
    assert err.value.extra["limit"] == "max_census_languages"
    with pytest.raises(LimitExceeded):
        census(4, 2, max_languages=1000)


def test_cli_census_three_states_two_letters(tmp_path) -> None:
    ck = tmp_path / "c.jsonl"
    result = CliRunner().invoke(app, ["census", "--states", "3", "--alphabet", "2", "--jobs", "1", "--no-progress",
                                      "--checkpoint", str(ck)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "     3        1028        1028  ok" in out
    assert " total        1054        1054" in out
    assert "LTL[P,MOD] \\ LTL[P]: 66" in out and "star-free \\ LTL[P,Y]: 18" in out
    for name in ("LTL[P]", "star-free", "group language", "FO²[<,MOD]"):
        assert name in out
    assert not ck.exists() and not ck.with_name(ck.name + ".members").exists()  # kept: the checkpoint goes


def test_cli_exits_1_on_a_mismatch(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PUBLISHED, 2, {**PUBLISHED[2], 2: 25})
    result = CliRunner().invoke(app, ["census", "--states", "2", "--alphabet", "2", "--jobs", "1", "--no-progress",
                                      "--no-checkpoint"])
    assert result.exit_code == 1
    assert "MISMATCH" in result.output
