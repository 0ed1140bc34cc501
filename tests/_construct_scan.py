"""The languages of the construction scan (issue 38): FO[<,MOD] languages with at most 5 states over
2 or 3 letters, drawn by a seeded generator. Shared by ``tests/test_construct_scan.py`` (slow tier:
all of them; normal tier: a small sample) and ``bench/construct.py --scan``.

Each draw picks |Σ| ∈ {2, 3} and n ∈ {2, …, 5} uniformly, then a uniform transition table over n
states and a uniform non-empty proper set of accepting states; the minimal DFA is kept when it has at
least 2 states, its language was not drawn before, and it is in FO[<,MOD] (quasi-aperiodic,
:func:`~langclass.core.algebra.classes.aperiodic.decide_fo_mod`). Only ``numpy``'s seeded generator
decides, so a seed names the same list on every machine.
"""

from __future__ import annotations

import functools

import numpy as np

from langclass.core.algebra.classes.aperiodic import decide_fo_mod
from langclass.core.algebra.classes.context import Context
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.automata.automaton import DFA

SCAN_SEED = 38
SCAN_SIZE = 240
"""The slow tier's list: the first 240 distinct FO[<,MOD] languages of seed 38."""


@functools.lru_cache(maxsize=8)
def scan_languages(count: int = SCAN_SIZE, seed: int = SCAN_SEED, max_states: int = 5) -> tuple[dict, ...]:
    """The first ``count`` distinct FO[<,MOD] languages of the generator (module docstring), each as
    ``{"id", "dfa"}`` with ``dfa`` the canonical JSON object of the minimal DFA (alphabet included);
    cached (do not modify the entries)."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    out: list[dict] = []
    while len(out) < count:
        k = int(rng.integers(2, 4))
        n = int(rng.integers(2, max_states + 1))
        table = rng.integers(0, n, size=(n, k))
        mask = int(rng.integers(1, 2 ** n - 1))
        accepting = [q for q in range(n) if (mask >> q) & 1]
        A = DFA(tuple("abc"[:k]), table, 0, accepting).canonical()
        fp = A.fingerprint()
        if A.num_states < 2 or fp in seen:
            continue
        seen.add(fp)
        if decide_fo_mod(Context(A, transition_monoid(A))).member:
            out.append({"id": f"scan-{len(out):03d}", "dfa": A.to_canonical_dict()})
    return tuple(out)
