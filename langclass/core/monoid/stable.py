"""The stable semigroup T = η(Σ^s) and the stability index s (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})).

The sets η(Σ^j) are computed one after the other on the right Cayley graph; every element of T
gets a word of length exactly s (J.-E. Pin, *Mathematical Foundations of Automata Theory*, ch. XI;
the stability index appears in D. A. M. Barrington, K. Compton, H. Straubing & D. Thérien,
"Regular languages in NC¹", 1992).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

__all__ = ["StableMixin"]


class StableMixin:
    """The stable semigroup of a :class:`~langclass.core.monoid.TransitionMonoid`."""

    @cached_property
    def _stable(self) -> tuple[int, int, int, list[np.ndarray]]:
        """(s, preperiod, period, levels): levels[j-1] = packed boolean mask of η(Σ^j), 1 ≤ j ≤ s.

        The sets η(Σ^j) = η(Σ^{j-1})·Σ form an eventually periodic sequence with preperiod i and
        period p; η(Σ^s) = η(Σ^{2s}) iff s ≥ i and p | s, so s = p·⌈i/p⌉.
        """
        m = self.size
        mask = np.zeros(m, dtype=bool)
        mask[self.right[0]] = True
        key = np.packbits(mask).tobytes()
        seen: dict[bytes, int] = {key: 1}
        levels = [np.packbits(mask)]
        j = 1
        while True:
            cur = np.flatnonzero(mask)
            mask = np.zeros(m, dtype=bool)
            mask[self.right[cur].ravel()] = True
            j += 1
            packed = np.packbits(mask)
            key = packed.tobytes()
            if key in seen:
                pre, per = seen[key], j - seen[key]
                break
            seen[key] = j
            levels.append(packed)
        s = per * max(1, -(-pre // per))
        return s, pre, per, levels[:s]

    def _level_mask(self, j: int) -> np.ndarray:
        return np.unpackbits(self._stable[3][j - 1], count=self.size).astype(bool)

    @property
    def stability_index(self) -> int:
        """s = least s ≥ 1 with η(Σ^s) = η(Σ^{2s})."""
        return self._stable[0]

    @cached_property
    def stable(self) -> np.ndarray:
        """Boolean ``[m]``: membership in the stable semigroup T = η(Σ^s)."""
        mask = self._level_mask(self.stability_index)
        mask.setflags(write=False)
        return mask

    @property
    def stable_size(self) -> int:
        """|T| = |η(Σ^s)|."""
        return int(self.stable.sum())

    def stable_word(self, x: int) -> tuple[str, ...]:
        """A word of length exactly s for an element x of T = η(Σ^s) (traced back through η(Σ^j)).

        Raises:
            ValueError: x is not in T.
        """
        s = self.stability_index
        x = int(x)
        if not self.stable[x]:
            raise ValueError(f"element {x} is not in the stable semigroup")
        order, starts = self._right_predecessors
        k = self.right.shape[1]
        levels = self._stable[3]
        letters = []
        for j in range(s, 1, -1):
            packed = levels[j - 2]  # η(Σ^{j-1})
            for pos in order[starts[x]:starts[x + 1]].tolist():
                y = pos // k
                if (packed[y >> 3] >> (7 - (y & 7))) & 1:
                    letters.append(pos % k)
                    x = y
                    break
            else:  # pragma: no cover - x ∈ η(Σ^j) always has a predecessor in η(Σ^{j-1})
                raise AssertionError("broken stable-semigroup levels")
        letters.append(int(np.flatnonzero(self.right[0] == x)[0]))
        letters.reverse()
        return tuple(self.dfa.alphabet[a] for a in letters)

    @cached_property
    def _right_predecessors(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the reversed right Cayley graph: positions p = y·k + a with y·a = x are
        ``order[starts[x]:starts[x+1]]``."""
        flat = self.right.ravel()
        order = np.argsort(flat, kind="stable")
        starts = np.searchsorted(flat[order], np.arange(self.size + 1))
        return order, starts
