"""Holonomy (Krohn–Rhodes) decomposition of a counter-free automaton into a cascade of
identity–reset automata, with the homomorphism φ from the cascade onto the automaton.

Sources: Eilenberg, *Automata, Languages and Machines* vol. B (the holonomy theorem, after Zeiger);
Maler, *On the Krohn–Rhodes Cascaded Decomposition Theorem* (2010), Theorem 3; Egri-Nagy & Nehaniv's
holonomy coordinatization (the GAP package SgpDec: tile chains, dominating chains); *Masked
Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, Theorem 8 and §5.6 (the
counter-free case: every level an identity–reset automaton). The implementation is this project's.

**The skeleton.** Let A = (Σ, Q, δ) act on the right on subsets of Q. The *extended image set* I holds
Q, every image Q·w (w ∈ Σ⁺) and every singleton. Sets of I are nodes of a graph with edges P → P·a;
its strongly connected components are the *subduction classes* (P ≡ R ⇔ P = R·u and R = P·v). The
*tiles* of P ∈ I (|P| > 1) are the maximal members of I properly inside P; they cover P. The classes
form a DAG under "image of" and "tile of"; the *depth* of a class is its longest distance from the
class of Q. Each class has a representative R, and every member P a bijection R → P induced by a
word (for a counter-free automaton it is unique on R, the holonomy groups being trivial).

**The cascade.** A *tile chain* Q = P_0 ⊃ P_1 ⊃ ⋯ ⊃ P_t = {q} has P_{k+1} a tile of P_k, so the depths
strictly increase along it. Level d (one per depth that holds a class of non-singletons) has as
states the tiles of the representatives of depth d (disjoint union); the chain is encoded by giving
level depth(P_k) the tile of rep(P_k) that corresponds to P_{k+1}, and every other level the state 0.
φ(chain) = q. A letter a maps the chain to the *dominating chain* of P_0·a ⊇ P_1·a ⊇ ⋯: Q first, then
the image sets, and between two consecutive sets that are not tile and parent the first tile (in a
fixed order) of the larger one that contains the smaller. The level-d coordinate of the new chain
depends only on the letter and the coordinates of levels ≤ d, and for a counter-free automaton it is
either the old coordinate (the set at depth d is carried onto an equivalent set: the holonomy group
is trivial) or a value fixed by the letter and the levels above (a reset). :func:`holonomy_cascade`
computes the levels *extensionally* on the reachable chains and checks both facts, so a failing
check is an error (it names the level), never a wrong cascade.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits

__all__ = ["Level", "Cascade", "holonomy_cascade", "cascade_mismatch", "marked_dfa", "SOURCE_HOLONOMY"]

SOURCE_HOLONOMY = ("Eilenberg, Automata, Languages and Machines B (holonomy theorem); Maler, On the Krohn-Rhodes "
                   "Cascaded Decomposition Theorem (2010), Thm 3; Egri-Nagy & Nehaniv, holonomy coordinatization "
                   "(SgpDec); Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages, Thm 8")


@dataclass(frozen=True)
class Level:
    """One identity–reset automaton B_d of the cascade.

    Attributes:
        states: the number of states (state r is ``labels[r]``).
        labels: for every state, ``(representative set, tile)`` as sorted tuples of automaton states.
        initial: the state of B_d in the cascade's initial state.
        resets: ``{(upper, letter): r}``: on the letter index ``letter`` with the levels above in the
            states ``upper`` (a tuple, one entry per level above), B_d resets to ``r``; every pair not
            listed (and reachable) is the identity.
    """

    states: int
    labels: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    initial: int
    resets: dict[tuple[tuple[int, ...], int], int]

    def step(self, upper: tuple[int, ...], letter: int, state: int) -> int:
        """δ_d(state, (upper, letter)): the reset target, or ``state`` (identity)."""
        return self.resets.get((upper, letter), state)


@dataclass(frozen=True)
class Cascade:
    """A cascade B_1 ∘ ⋯ ∘ B_k of identity–reset automata and its homomorphism φ onto a DFA
    (*Masked Hard-Attention Transformers …*, Theorem 8; module docstring).

    Attributes:
        dfa: the decomposed automaton (alphabet, transitions, initial, accepting as given).
        levels: B_1, …, B_k (top first).
        phi: ``{global state: automaton state}`` on the reachable global states (tuples, one
            state per level).
        initial: the initial global state (φ(initial) = the DFA's initial state).
        sets: |I|, the size of the extended image set.
    """

    dfa: DFA
    levels: tuple[Level, ...]
    phi: dict[tuple[int, ...], int]
    initial: tuple[int, ...]
    sets: int

    @property
    def height(self) -> int:
        """k, the number of levels."""
        return len(self.levels)

    @property
    def states_per_level(self) -> list[int]:
        return [lv.states for lv in self.levels]

    @property
    def global_size(self) -> int:
        """The reachable global states (the global automaton's size)."""
        return len(self.phi)

    def step(self, state: tuple[int, ...], letter: int) -> tuple[int, ...]:
        """The global automaton's transition: every level reads the *old* states of the levels above."""
        return tuple(lv.step(state[:d], letter, state[d]) for d, lv in enumerate(self.levels))

    def summary(self) -> dict[str, Any]:
        """``{"height", "states_per_level", "global_size" (reachable global states = reachable tile chains),
        "image_sets", "source"}``."""
        return {"height": self.height, "states_per_level": self.states_per_level, "global_size": self.global_size,
                "image_sets": self.sets, "source": SOURCE_HOLONOMY}


def _bits(mask: int) -> tuple[int, ...]:
    out, q = [], 0
    while mask:
        if mask & 1:
            out.append(q)
        mask >>= 1
        q += 1
    return tuple(out)


def _scc(nodes: list[int], succ: dict[int, list[int]]) -> dict[int, int]:
    """Tarjan's strongly connected components, iterative: ``{node: component id}``."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    comp: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    counter = 0
    ncomp = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            recurse = False
            out = succ[v]
            while i < len(out):
                w = out[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return comp


def holonomy_cascade(dfa: DFA, limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> Cascade:
    """The holonomy decomposition of a counter-free DFA into identity–reset levels (module docstring).

    Args:
        dfa: a complete DFA (its own states are decomposed; pass the minimal DFA for the smallest
            cascade). It must be counter-free (aperiodic transition monoid).
        limits: ``max_states`` bounds the extended image set and the reachable tile chains;
            ``time_limit_s`` the whole computation.
        deadline: a running deadline to share (default: a new one from ``limits``).

    Returns:
        A :class:`Cascade` whose global automaton maps onto ``dfa`` by φ.

    Raises:
        UnsupportedError: the automaton is not counter-free (a level is neither identity nor reset;
            the detail names the level).
        LimitExceeded: ``max_states`` (image sets or tile chains). TimeLimitExceeded: ``time_limit_s``.
    """
    deadline = deadline or limits.deadline()
    T = np.asarray(dfa.transitions, dtype=np.int64)
    n, k = T.shape
    full = (1 << n) - 1
    succ_of = [[int(T[q, a]) for q in range(n)] for a in range(k)]

    def image(mask: int, a: int) -> int:
        out = 0
        row = succ_of[a]
        q = 0
        while mask:
            if mask & 1:
                out |= 1 << row[q]
            mask >>= 1
            q += 1
        return out

    # ---- the extended image set: Q, its images, the singletons
    order = [full]
    seen = {full}
    queue = deque([full])
    for q in range(n):
        if (1 << q) not in seen:
            seen.add(1 << q)
            order.append(1 << q)
            queue.append(1 << q)
    succ: dict[int, list[int]] = {}
    while queue:
        P = queue.popleft()
        deadline.check("holonomy decomposition (image sets)")
        outs = []
        for a in range(k):
            X = image(P, a)
            outs.append(X)
            if X not in seen:
                seen.add(X)
                order.append(X)
                queue.append(X)
                limits.check("max_states", len(order))
        succ[P] = outs
    comp = _scc(order, succ)
    # ---- tiles: maximal members of I properly inside P (first in a fixed order: larger sets first)
    by_size = sorted(order, key=lambda X: (-bin(X).count("1"), X))
    tiles: dict[int, list[int]] = {}
    for P in by_size:
        if P & (P - 1) == 0:
            continue
        deadline.check("holonomy decomposition (tiles)")
        ts: list[int] = []
        for X in by_size:
            if X != P and X & P == X and not any(X & t == X for t in ts):
                ts.append(X)
        tiles[P] = ts
    # ---- depth of every class: longest path from the class of Q under "image of" and "tile of"
    ncomp = max(comp.values()) + 1
    cedges: list[set[int]] = [set() for _ in range(ncomp)]
    for P in order:
        for X in succ[P] + tiles.get(P, []):
            if comp[X] != comp[P]:
                cedges[comp[P]].add(comp[X])
    indeg = [0] * ncomp
    for c in range(ncomp):
        for e in cedges[c]:
            indeg[e] += 1
    depth = [-1] * ncomp
    depth[comp[full]] = 0
    topo = [c for c in range(ncomp) if indeg[c] == 0]
    while topo:  # Kahn's order; classes not below Q keep depth −1 (none: everything is below Q)
        c = topo.pop()
        for e in cedges[c]:
            if depth[c] >= 0:
                depth[e] = max(depth[e], depth[c] + 1)
            indeg[e] -= 1
            if indeg[e] == 0:
                topo.append(e)
    # ---- representatives and the bijections rep(P) → P (BFS inside the class from the representative)
    rep: dict[int, int] = {}
    from_rep: dict[int, dict[int, int]] = {}
    for P in order:
        c = comp[P]
        if P in rep:
            continue
        rep[P] = P
        from_rep[P] = {q: q for q in _bits(P)}
        bfs = deque([P])
        while bfs:
            X = bfs.popleft()
            for a in range(k):
                Y = succ[X][a]
                if comp[Y] == c and Y not in rep:
                    rep[Y] = P
                    from_rep[Y] = {r: succ_of[a][x] for r, x in from_rep[X].items()}
                    bfs.append(Y)
    to_rep = {P: {x: r for r, x in m.items()} for P, m in from_rep.items()}
    # ---- levels: depths holding a representative with tiles
    level_of_depth: dict[int, int] = {}
    slot: dict[tuple[int, int], int] = {}  # (representative, tile) → state of its level
    labels: list[list[tuple[tuple[int, ...], tuple[int, ...]]]] = []
    for d in sorted({depth[comp[R]] for R in tiles if rep[R] == R}):
        level_of_depth[d] = len(labels)
        labels.append([])
    for R in by_size:
        if R in tiles and rep[R] == R:
            lv = level_of_depth[depth[comp[R]]]
            for t in tiles[R]:
                slot[(R, t)] = len(labels[lv])
                labels[lv].append((_bits(R), _bits(t)))
    K = len(labels)

    def encode(chain: tuple[int, ...]) -> tuple[int, ...]:
        x = [0] * K
        for P, X in zip(chain, chain[1:]):
            R = rep[P]
            m = to_rep[P]
            t = 0
            for q in _bits(X):
                t |= 1 << m[q]
            x[level_of_depth[depth[comp[P]]]] = slot[(R, t)]
        return tuple(x)

    def dominating(images: list[int]) -> tuple[int, ...]:
        chain = [full]
        for X in images:
            while chain[-1] != X:
                top = chain[-1]
                if X in tiles[top]:
                    chain.append(X)
                else:
                    chain.append(next(t for t in tiles[top] if t & X == X))
        return tuple(chain)

    def act(chain: tuple[int, ...], a: int) -> tuple[int, ...]:
        return dominating([image(P, a) for P in chain])

    start = dominating([1 << dfa.initial])
    chains = {start: encode(start)}
    queue2 = deque([start])
    # per level: (upper, letter) → {old state: new state}
    tables: list[dict[tuple[tuple[int, ...], int], dict[int, int]]] = [dict() for _ in range(K)]
    while queue2:
        c = queue2.popleft()
        deadline.check("holonomy decomposition (tile chains)")
        x = chains[c]
        for a in range(k):
            c2 = act(c, a)
            if c2 not in chains:
                chains[c2] = encode(c2)
                queue2.append(c2)
                limits.check("max_states", len(chains))
            y = chains[c2]
            for d in range(K):
                m = tables[d].setdefault((x[:d], a), {})
                if m.setdefault(x[d], y[d]) != y[d]:
                    raise UnsupportedError(f"the holonomy level {d + 1} is not a cascade level here (internal check)")
    levels = []
    for d in range(K):
        resets: dict[tuple[tuple[int, ...], int], int] = {}
        for key, m in tables[d].items():
            if all(o == v for o, v in m.items()):
                continue  # identity
            targets = set(m.values())
            if len(targets) != 1:
                raise UnsupportedError(
                    f"the automaton is not counter-free: holonomy level {d + 1} permutes its states "
                    f"{sorted(m.items())} (a non-trivial holonomy group)", field="dfa")
            resets[key] = targets.pop()
        levels.append(Level(len(labels[d]), tuple(labels[d]), chains[start][d], resets))
    phi = {x: _bits(c[-1])[0] for c, x in chains.items()}
    if len(phi) != len(chains):
        raise UnsupportedError("two tile chains share one coordinate tuple (internal check)")
    return Cascade(dfa, tuple(levels), phi, chains[start], len(order))


def cascade_mismatch(cascade: Cascade, max_length: int, limits: Limits = DEFAULT_LIMITS) -> tuple[int, ...] | None:
    """An independent check of property (2) of Theorem 8: run the cascade's global automaton and the
    DFA side by side on every word of length ≤ ``max_length`` (breadth-first over the pairs reached,
    so each pair is expanded once) and return the first word (letter indices) after which
    φ(cascade state) ≠ DFA state, or None.

    Raises:
        LimitExceeded: ``max_states`` on the pairs reached.
    """
    T = cascade.dfa.transitions
    start = (cascade.initial, int(cascade.dfa.initial))
    if cascade.phi.get(start[0]) != start[1]:
        return ()
    frontier = {start: ()}
    seen = {start}
    for _ in range(max_length):
        nxt: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}
        for (x, q), w in frontier.items():
            for a in range(cascade.dfa.num_letters):
                y, r = cascade.step(x, a), int(T[q, a])
                if cascade.phi.get(y) != r:
                    return w + (a,)
                if (y, r) not in seen:
                    seen.add((y, r))
                    nxt[(y, r)] = w + (a,)
                    limits.check("max_states", len(seen))
        frontier = nxt
    return None


def marked_dfa(dfa: DFA, m: int) -> DFA:
    """The minimal DFA of the m-marked language K_m (*langclass.core.synthesis.fo_mod*, module
    docstring): letters ``(a, r)`` (symbol ``f"{a}@{r}"``) at position i carry r = i mod m; a word
    is accepted iff its marks are well formed (the i-th letter has mark i mod m) and its letters
    spell a word of L. For m = 1 the automaton itself (minimized).

    Raises:
        ValueError: m < 1.
    """
    if m < 1:
        raise ValueError("m must be ≥ 1")
    A = dfa.canonical()
    if m == 1:
        return A
    n, k = A.num_states, A.num_letters
    sink = n * m
    rows = np.full((n * m + 1, k * m), sink, dtype=np.int32)
    for q in range(n):
        for ph in range(m):
            r = (ph + 1) % m
            for a in range(k):
                rows[q * m + ph, a * m + r] = int(A.transitions[q, a]) * m + r
    acc = [q * m + ph for q in range(n) for ph in range(m) if A.accepting[q]]
    alphabet = [f"{a}@{r}" for a in A.alphabet for r in range(m)]
    return DFA.from_table(alphabet, rows, A.initial * m, acc).canonical()
