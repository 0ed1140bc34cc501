"""Hopcroft's partition refinement for complete DFAs.

Source: J. Hopcroft, "An n log n algorithm for minimizing states in a finite automaton" (1971).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hopcroft_partition", "moore_rounds", "minimal_partition"]


def _relabel(keys: np.ndarray) -> np.ndarray:
    """Dense ids ``0..b-1`` for equal keys (rows of a 2-D array or entries of a 1-D array)."""
    if keys.ndim == 2:
        _, inv = np.unique(keys, axis=0, return_inverse=True)
    else:
        _, inv = np.unique(keys, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def moore_rounds(transitions: np.ndarray, accepting: np.ndarray, max_rounds: int) -> tuple[np.ndarray, bool]:
    """Moore's partition refinement, vectorized with numpy, for at most ``max_rounds`` rounds.

    Round r splits states by (block, blocks of the successors); after round r two states share a
    block iff no word of length ≤ r distinguishes them (E. F. Moore, "Gedanken-experiments on
    sequential machines", 1956).

    Returns:
        ``(block ids [n], stable)``; ``stable`` is True when the partition is the Myhill–Nerode one.
        Every returned partition refines {F, Q∖F} and is coarser than the Myhill–Nerode partition.
    """
    t = np.asarray(transitions, dtype=np.int64)
    n, k = t.shape
    block = _relabel(np.asarray(accepting, dtype=np.int64))
    nb = int(block.max()) + 1 if n else 0
    for _ in range(max_rounds):
        succ = block[t]  # [n, k]
        if nb ** (k + 1) < 2**62:
            key = block.copy()
            for a in range(k):
                key = key * nb + succ[:, a]
            new = _relabel(key)
        else:
            new = _relabel(np.column_stack([block, succ]))
        nnb = int(new.max()) + 1
        if nnb == nb:
            return block, True
        block, nb = new, nnb
    return block, False


def minimal_partition(transitions: np.ndarray, accepting: np.ndarray, moore_limit: int = 48) -> np.ndarray:
    """Myhill–Nerode partition: a few vectorized Moore rounds, then Hopcroft from there if needed.

    Moore rounds are cheap (numpy) and finish DFAs whose states are distinguished by short words;
    DFAs needing long distinguishing words (e.g. long chains) are finished by Hopcroft's
    O(n k log n) algorithm started from the Moore partition. Same result as :func:`hopcroft_partition`.
    """
    block, stable = moore_rounds(transitions, accepting, moore_limit)
    if stable:
        return block
    return hopcroft_partition(transitions, accepting, initial=block)


def hopcroft_partition(transitions: np.ndarray, accepting: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
    """Coarsest partition of the states compatible with acceptance and transitions.

    Args:
        transitions: ``int`` array ``[n, k]`` of a complete DFA.
        accepting: ``bool`` array ``[n]``.
        initial: optional starting partition (block ids ``[n]``) that refines {F, Q∖F} and is
            coarser than the result (e.g. from :func:`moore_rounds`); all its blocks but the largest
            start in the worklist, which is sound for complete DFAs.

    Returns:
        ``int64`` array ``[n]`` of block ids in ``0..b-1``; ``p`` and ``q`` share an id iff they
        accept the same language. Time O(n k log n).
    """
    acc = np.asarray(accepting, dtype=bool)
    start = np.where(acc, 0, 1) if initial is None else np.asarray(initial)
    return _hopcroft_from(transitions, _relabel(start))


def _predecessors(transitions: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    n, k = transitions.shape
    preds: list[list[int]] = []
    starts: list[list[int]] = []
    for a in range(k):
        col = np.asarray(transitions[:, a], dtype=np.int64)
        order = np.argsort(col, kind="stable")
        counts = np.bincount(col, minlength=n)
        preds.append(order.tolist())
        starts.append(np.concatenate([[0], np.cumsum(counts)]).tolist())
    return preds, starts


def _hopcroft_from(transitions: np.ndarray, block_of: np.ndarray) -> np.ndarray:
    """Hopcroft refinement starting from the partition ``block_of`` (dense ids)."""
    n, k = transitions.shape
    preds, starts = _predecessors(transitions)
    nb = int(block_of.max()) + 1 if n else 0
    order = np.argsort(block_of, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(block_of, minlength=nb))])
    blocks: list[set[int]] = [set(order[bounds[b] : bounds[b + 1]].tolist()) for b in range(nb)]
    bo = block_of.tolist()
    if nb <= 1:
        return np.asarray(bo, dtype=np.int64)
    largest = max(range(nb), key=lambda b: len(blocks[b]))
    work: set[tuple[int, int]] = {(b, a) for b in range(nb) if b != largest for a in range(k)}
    while work:
        b, a = work.pop()
        pa, sa = preds[a], starts[a]
        touched: dict[int, list[int]] = {}
        for r in blocks[b]:
            for i in range(sa[r], sa[r + 1]):
                q = pa[i]
                touched.setdefault(bo[q], []).append(q)
        for y, qs in touched.items():
            if len(qs) == len(blocks[y]):
                continue
            new_block = set(qs)
            blocks[y] -= new_block
            nid = len(blocks)
            blocks.append(new_block)
            for q in new_block:
                bo[q] = nid
            for c in range(k):
                if (y, c) in work:
                    work.add((nid, c))
                else:
                    work.add((nid, c) if len(new_block) <= len(blocks[y]) else (y, c))
    return _relabel(np.asarray(bo, dtype=np.int64))
