"""Hopcroft's partition refinement for complete DFAs.

Source: J. Hopcroft, "An n log n algorithm for minimizing states in a finite automaton" (1971).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hopcroft_partition"]


def hopcroft_partition(transitions: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Coarsest partition of the states compatible with acceptance and transitions.

    Args:
        transitions: ``int`` array ``[n, k]`` of a complete DFA.
        accepting: ``bool`` array ``[n]``.

    Returns:
        ``int64`` array ``[n]`` of block ids in ``0..b-1``; ``p`` and ``q`` share an id iff they
        accept the same language. Time O(n k log n).
    """
    n, k = transitions.shape
    # predecessor lists per letter in CSR form: preds[a][starts[a][r]:starts[a][r+1]] = {q : δ(q,a)=r}
    preds: list[list[int]] = []
    starts: list[list[int]] = []
    for a in range(k):
        col = np.asarray(transitions[:, a], dtype=np.int64)
        order = np.argsort(col, kind="stable")
        counts = np.bincount(col, minlength=n)
        preds.append(order.tolist())
        starts.append(np.concatenate([[0], np.cumsum(counts)]).tolist())

    acc = np.asarray(accepting, dtype=bool)
    block_of = np.where(acc, 0, 1).astype(np.int64)
    initial_blocks = [set(np.flatnonzero(acc).tolist()), set(np.flatnonzero(~acc).tolist())]
    if not initial_blocks[0] or not initial_blocks[1]:
        return np.zeros(n, dtype=np.int64)
    blocks: list[set[int]] = initial_blocks
    bo = block_of.tolist()
    smaller = 0 if len(blocks[0]) <= len(blocks[1]) else 1
    work: set[tuple[int, int]] = {(smaller, a) for a in range(k)}
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
    return np.asarray(bo, dtype=np.int64)
