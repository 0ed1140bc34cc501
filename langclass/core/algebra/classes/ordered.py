"""The order tests on the minimal DFA: LTL[P] (partially ordered) and LTL[P,MOD] (A_k partially ordered).

* LTL[P]: A is partially ordered — every strongly connected component is one state (Brzozowski &
  Fich 1980; "Disentangling the Expressivity of RoPE", Table 3).
* LTL[P,MOD]: every SCC is a single state or a simple cycle; the least k is the lcm of the cycle
  lengths ("Disentangling the Expressivity of RoPE", Thm 3.3 with Def. A.7/A.8: A_k partially
  ordered over *all* states).

Both are linear-time and answered even when the monoid is over its cap.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .base import CERT_LIST_MAX, ClassResult, Decider, Evidence, make_result, register, show, truncate, words
from .context import Context
from .replaykit import Checker, ReplayError

__all__ = [
    "decide_ltl_p",
    "decide_ltl_p_mod",
    "qr_witness_words",
    "HASSE_MAX_STATES",
    "TopologicalOrder",
    "MutualReach",
    "SimpleCycles",
    "Cycle",
    "QRWitness",
    "Branch",
]

HASSE_MAX_STATES = 64
"""The Hasse diagram of A_k is included in LTL[P,MOD] certificates up to this many states (and k·n ≤ 4096)."""


# ============================================================================ evidence


@dataclass(frozen=True)
class TopologicalOrder(Evidence):
    """All states in an order in which every transition p→q, p ≠ q, goes forward (complete unless ``truncated``)."""

    CHECK = "every transition p→q with p ≠ q goes forward in topological_order"
    topological_order: tuple[int, ...]
    truncated: bool


@dataclass(frozen=True)
class MutualReach(Evidence):
    """Two states p ≠ q of the minimal DFA with u: p→q and v: q→p."""

    CHECK = "p ≠ q, p·u = q and q·v = p"
    p: int
    q: int
    u: tuple[str, ...]
    v: tuple[str, ...]


@dataclass(frozen=True)
class Cycle(Evidence):
    """A simple cycle of the transition graph: each state leads to the next (the last to the first)."""

    states: tuple[int, ...]
    length: int


@dataclass(frozen=True)
class SimpleCycles(Evidence):
    """Every non-singleton strongly connected component as its simple cycle; k = lcm of the lengths;
    ``hasse``: the covering pairs [p, q] of the partial order of A_k (small automata only)."""

    CHECK = ("every listed cycle is a cycle whose states have no other successor inside it, and with each "
             "cycle contracted to one state the transition graph is acyclic (self-loops aside); k is the lcm")
    k: int
    cycles: tuple[Cycle, ...]
    truncated: bool
    hasse: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class Branch(Evidence):
    """A state with two distinct successors inside its strongly connected component."""

    state: int
    letters: tuple[str, str]
    successors: tuple[int, int]


@dataclass(frozen=True)
class QRWitness(Evidence):
    """p ≠ q mutually reachable in every A_k: u: p→q, v: q→p with |u|, |v| ≡ 0 (mod period), and
    loops at p whose lengths have gcd = period (so for every k some u·(loops), v·(loops) have
    lengths ≡ 0 mod k; :func:`qr_witness_words` builds them)."""

    CHECK = ("u: p→q and v: q→p with |u|, |v| ≡ 0 (mod period); the loops at p have lengths of gcd = period, "
             "so for every k some u·(loops) and v·(loops) have lengths ≡ 0 (mod k): p, q are mutually "
             "reachable in A_k (see qr_witness_words)")
    p: int
    q: int
    period: int
    u: tuple[str, ...]
    v: tuple[str, ...]
    loops: tuple[tuple[str, ...], ...]
    branch: Branch | None = None


# ============================================================================ LTL[P]


def decide_ltl_p(ctx: Context) -> ClassResult:
    """LTL[P] ⇔ the minimal DFA is partially ordered (Brzozowski & Fich 1980; RoPE paper Table 3)."""
    comp, sizes = ctx.scc, ctx.scc_sizes
    big = sizes[comp] > 1
    if not big.any():
        lst, cut = truncate(_topological_order(ctx))
        return make_result("ltl_p", True,
                           "every strongly connected component of the minimal DFA is a single state (only self-loops), "
                           "so it is partially ordered", TopologicalOrder(lst, cut), None, "automaton")
    p = int(np.flatnonzero(big)[0])
    same = comp[ctx.t[p]] == comp[p]
    cand = [(a, int(r)) for a, r in enumerate(ctx.t[p].tolist()) if same[a] and r != p]
    a, q = cand[0]
    u = (ctx.dfa.alphabet[a],)
    v = ctx.path(q, p, comp == comp[p])
    wit = MutualReach(p, q, words(u), words(v))
    return make_result("ltl_p", False,
                       f"states {p} and {q} of the minimal DFA are mutually reachable (u = {show(u)}: {p}→{q}, "
                       f"v = {show(v)}: {q}→{p}), so it is not partially ordered", wit, wit, "automaton")


def _topological_order(ctx: Context) -> list[int]:
    n = ctx.n
    tl = ctx.t.tolist()
    succ = [sorted({r for r in row if r != q}) for q, row in enumerate(tl)]
    indeg = [0] * n
    for s in succ:
        for r in s:
            indeg[r] += 1
    ready = deque(q for q in range(n) if indeg[q] == 0)
    out = []
    while ready:
        q = ready.popleft()
        out.append(q)
        for r in succ[q]:
            indeg[r] -= 1
            if indeg[r] == 0:
                ready.append(r)
    assert len(out) == n, "a partially ordered DFA has an acyclic transition graph (self-loops aside)"
    return out


def _replay_ltl_p_yes(chk: Checker, cert: TopologicalOrder) -> None:
    """The minimal DFA is partially ordered — every strong component (recomputed on the whole DFA,
    whatever the order lists) is one state — and the order lists distinct states, all of them unless
    ``truncated`` (which holds iff there are more than CERT_LIST_MAX states: then the first
    CERT_LIST_MAX), and is a prefix of a topological order: a transition p→q, p ≠ q, into a listed q
    comes from a state p listed before q."""
    comp = chk.scc()
    sizes = np.bincount(comp)
    if (sizes > 1).any():
        q = int(np.flatnonzero(sizes[comp] > 1)[0])
        raise ReplayError(f"state {q} lies on a cycle of {int(sizes[comp[q]])} states: the minimal DFA is not "
                          "partially ordered")
    order = cert.topological_order
    if cert.truncated != (chk.n > CERT_LIST_MAX):
        raise ReplayError(f"the DFA has {chk.n} states: truncated is {chk.n > CERT_LIST_MAX}")
    if len(set(order)) != len(order) or len(order) != min(chk.n, CERT_LIST_MAX) or not all(0 <= q < chk.n for q in order):
        raise ReplayError("the order must list every state once (the first CERT_LIST_MAX when truncated)")
    pos = np.full(chk.n, -1, dtype=np.int64)
    pos[list(order)] = np.arange(len(order))
    t = chk.A.transitions.astype(np.int64)
    src = np.repeat(np.arange(chk.n), t.shape[1])
    dst = t.ravel()
    edge = (src != dst) & (pos[dst] >= 0)
    bad = edge & ((pos[src] < 0) | (pos[src] >= pos[dst]))
    if bad.any():
        q, r = int(src[bad][0]), int(dst[bad][0])
        raise ReplayError(f"the transition {q}→{r} goes backwards")


def _replay_mutual(chk: Checker, wit: MutualReach) -> None:
    if not (wit.p != wit.q and chk.run(wit.u, wit.p) == wit.q and chk.run(wit.v, wit.q) == wit.p):
        raise ReplayError('check `wit.p != wit.q and chk.run(wit.u, wit.p) == wit.q and chk.run(wit.v, wit.q) == wit.p` in _replay_mutual does not hold')


# ============================================================================ LTL[P,MOD]


def _in_component_distinct_successors(ctx: Context) -> np.ndarray:
    comp, t = ctx.scc, ctx.t
    same = comp[t] == comp[:, None]
    S = np.where(same, t, -1)
    S.sort(axis=1)
    distinct = (S[:, 0] >= 0).astype(np.int64)
    if S.shape[1] > 1:
        distinct += ((S[:, 1:] != S[:, :-1]) & (S[:, 1:] >= 0)).sum(axis=1)
    return distinct


def decide_ltl_p_mod(ctx: Context) -> ClassResult:
    """LTL[P,MOD] ⇔ QR ⇔ ∃k: A_k partially ordered over all states ("Disentangling the Expressivity of RoPE",
    Thm 3.3, Def. A.7/A.8), decided in linear time: every SCC of the minimal DFA is a single state or a
    simple cycle; the least k is the lcm of the cycle lengths (k works iff it is a multiple of each).

    Why: a word of length k stays in an SCC only by moving k steps along it; on a simple cycle of
    length L that is the identity iff L | k. If a state r of an SCC has two distinct successors
    s₁ ≠ s₂ in it, both lie at the same level modulo the SCC's period d, and words of every large
    length ≡ 0 (mod lcm(d, k)) lead s₁ to s₂ and back, so no A_k is partially ordered.
    """
    comp, sizes = ctx.scc, ctx.scc_sizes
    distinct = _in_component_distinct_successors(ctx)
    bad = (sizes[comp] >= 2) & (distinct >= 2)
    if not bad.any():
        cycles: list[Cycle] = []
        k = 1
        seen: set[int] = set()
        for q in range(ctx.n):
            c = int(comp[q])
            if sizes[c] < 2 or c in seen:
                continue
            seen.add(c)
            cyc = [q]
            r = q
            while True:
                nxt = [int(x) for x in ctx.t[r] if comp[x] == c]
                r = nxt[0]
                if r == q:
                    break
                cyc.append(r)
            assert len(cyc) == sizes[c]
            cycles.append(Cycle(tuple(cyc), len(cyc)))
            k = k * len(cyc) // math.gcd(k, len(cyc))
        cycles_cut, cut = truncate(cycles)
        hasse = _k_automaton_hasse(ctx, k) if ctx.n <= HASSE_MAX_STATES and k * ctx.n <= 4096 else None
        cert = SimpleCycles(k, cycles_cut, cut, hasse)
        if cycles:
            lens = sorted({c.length for c in cycles})
            comps = ", ".join("{" + ", ".join(map(str, c.states)) + "}" for c in cycles[:3])
            more = "" if len(cycles) <= 3 else f" (and {len(cycles) - 3} more)"
            reason = (f"every strongly connected component of the minimal DFA is a single state or a simple cycle "
                      f"({comps}{more} of lengths {lens}), so A_{k} is partially ordered (k = lcm = {k})")
        else:
            reason = "the minimal DFA is partially ordered, so A_1 = A is (k = 1)"
        return make_result("ltl_p_mod", True, reason, cert, None, "automaton", period=k)
    r = int(np.flatnonzero(bad)[0])
    c = int(comp[r])
    succ = [(a, int(x)) for a, x in enumerate(ctx.t[r].tolist()) if comp[x] == c]
    (a1, s1) = succ[0]
    (a2, s2) = next((a, x) for a, x in succ if x != s1)
    branch = Branch(r, (ctx.dfa.alphabet[a1], ctx.dfa.alphabet[a2]), (s1, s2))
    wit = _qr_witness(ctx, c, s1, s2, branch)
    members = np.flatnonzero(comp == c)
    d = wit.period
    loops = ", ".join(show(w) for w in wit.loops[:3]) + (" …" if len(wit.loops) > 3 else "")
    reason = (f"state {r} has two successors {s1} ≠ {s2} inside its strongly connected component "
              f"(of {members.size} states, period {d}): u = {show(wit.u)} leads {s1}→{s2} and v = {show(wit.v)} "
              f"{s2}→{s1}, of lengths {len(wit.u)} and {len(wit.v)} (multiples of {d}), and loops at {s1} "
              f"({loops}) have lengths of gcd {d}; padded with those loops, u and v get lengths ≡ 0 mod k for "
              f"every k, so {s1} and {s2} are mutually reachable in every A_k: no A_k is partially ordered")
    return make_result("ltl_p_mod", False, reason, wit, wit, "automaton")


def _qr_witness(ctx: Context, c: int, p: int, q: int, branch: Branch) -> QRWitness:
    allowed = ctx.scc == c
    alpha = ctx.dfa.alphabet
    n, k = ctx.n, ctx.k
    pf, lf, of = ctx.bfs(p, allowed)
    pb, lb, ob = ctx.bfs(p, allowed, reverse=True)

    def levels(pred: np.ndarray, order: np.ndarray) -> np.ndarray:
        dist = np.full(n, -1, dtype=np.int64)
        dist[order[0]] = 0
        dl, pl = dist.tolist(), pred.tolist()
        for v in order[1:].tolist():
            dl[v] = dl[pl[v]] + 1
        return np.asarray(dl, dtype=np.int64)

    dist, bdist = levels(pf, of), levels(pb, ob)
    rows = np.repeat(np.arange(n), k)
    lets = np.tile(np.arange(k), n)
    cols = ctx.t.ravel()
    keep = allowed[rows] & allowed[cols]
    ex, ea, ey = rows[keep], lets[keep], cols[keep]
    d = int(np.gcd.reduce(np.abs(dist[ex] + 1 - dist[ey])))
    u = ctx.tree_word(pf, lf, q, p)  # shortest p → q
    v = ctx.tree_word(pb, lb, q, p, reverse=True)  # shortest q → p
    assert len(u) % d == 0 and len(v) % d == 0
    loops = [u + v]
    g = len(u) + len(v)
    if g != d:
        for x, a, y, length in zip(ex.tolist(), ea.tolist(), ey.tolist(), (dist[ex] + 1 + bdist[ey]).tolist()):
            if math.gcd(g, length) < g:
                g = math.gcd(g, length)
                loops.append(ctx.tree_word(pf, lf, x, p) + (alpha[a],) + ctx.tree_word(pb, lb, y, p, reverse=True))
                if g == d:
                    break
    assert g == d, "the edge loops through p have gcd equal to the component's period"
    return QRWitness(p, q, d, words(u), words(v), tuple(words(w) for w in loops), branch)


def qr_witness_words(witness: QRWitness | dict, k: int) -> tuple[list[str], list[str]]:
    """Words u_k: p→q and v_k: q→p of lengths divisible by k from an LTL[P,MOD] witness.

    u_k = (loops at p)·u and v_k = v·(loops at p), the loop multiplicities solving
    |u| + Σ cᵢ|ℓᵢ| ≡ 0 (mod k) (solvable because gcd(|ℓᵢ|) = period divides |u| and |v|).

    Args:
        witness: a :class:`QRWitness` or its ``to_dict()`` record.
        k: the modulus (≥ 1).

    Raises:
        ValueError: k < 1.
    """
    if k < 1:
        raise ValueError("k must be ≥ 1")
    if isinstance(witness, dict):
        witness = QRWitness.from_dict(witness)
    loops = [list(w) for w in witness.loops]

    def pad(length: int) -> list[str]:
        target = (-length) % k
        prev: dict[int, tuple[int, int] | None] = {0: None}
        dq = deque([0])
        while dq and target not in prev:
            r = dq.popleft()
            for i, lp in enumerate(loops):
                s = (r + len(lp)) % k
                if s not in prev:
                    prev[s] = (r, i)
                    dq.append(s)
        if target not in prev:
            raise ReplayError('check `target in prev` in pad does not hold')
        out: list[str] = []
        r = target
        while prev[r] is not None:
            r0, i = prev[r]
            out = loops[i] + out
            r = r0
        return out

    u, v = list(witness.u), list(witness.v)
    return pad(len(u)) + u, v + pad(len(v))


def _k_automaton_hasse(ctx: Context, k: int) -> tuple[tuple[int, int], ...]:
    """Covering pairs (p, q) of the partial order of A_k: q reachable from p by words of length ≡ 0 mod k."""
    from langclass.core.automata.graph import k_step_successors

    n = ctx.n
    R = k_step_successors(ctx.t, k) | np.eye(n, dtype=bool)
    reach = R.copy()
    for _ in range(max(1, int(math.ceil(math.log2(max(n, 2)))) + 1)):
        reach = (reach.astype(np.float64) @ reach.astype(np.float64)) > 0
    strict = reach & ~np.eye(n, dtype=bool)
    assert not (strict & strict.T).any(), "A_k is partially ordered"
    cover = strict & ~((strict.astype(np.float64) @ strict.astype(np.float64)) > 0)
    return tuple((int(p), int(q)) for p, q in np.argwhere(cover).tolist())


def _scc(t: np.ndarray) -> np.ndarray:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n, k = t.shape
    g = csr_matrix((np.ones(n * k, dtype=np.int8), (np.repeat(np.arange(n), k), t.ravel())), shape=(n, n))
    return connected_components(g, directed=True, connection="strong")[1].astype(np.int64)


def _replay_ltl_p_mod_yes(chk: Checker, cert: SimpleCycles) -> None:
    """Every strong component of the minimal DFA (recomputed) is one state or a simple cycle, the
    listed cycles are those components (the first CERT_LIST_MAX when ``truncated``, which holds iff
    there are more), k is the lcm of all their lengths, and ``hasse`` is the covering relation of
    A_k, recomputed on (state, length mod k) — present exactly when n ≤ HASSE_MAX_STATES and k·n ≤ 4096."""
    A = chk.A
    t = A.transitions.astype(np.int64)
    n = chk.n
    comp = _scc(t)
    sizes = np.bincount(comp)
    inside = comp[t] == comp[:, None]
    nxt_in = np.where(inside, t, -1)
    big = sizes[comp] >= 2
    for q in np.flatnonzero(big).tolist():
        succ = set(nxt_in[q][nxt_in[q] >= 0].tolist())
        if len(succ) != 1:
            raise ReplayError(f"state {q} has {len(succ)} successors inside its strongly connected component: not a simple cycle")
    lengths = sizes[np.unique(comp[big])] if big.any() else np.zeros(0, dtype=np.int64)
    k = 1
    for L in lengths.tolist():
        k = k * L // math.gcd(k, L)
    if cert.k != k:
        raise ReplayError(f"k is the lcm of the cycle lengths, {k}, not {cert.k}")
    if cert.truncated != (lengths.size > CERT_LIST_MAX):
        raise ReplayError(f"the DFA has {lengths.size} cycles: truncated is {lengths.size > CERT_LIST_MAX}")
    if len(cert.cycles) != min(lengths.size, CERT_LIST_MAX):
        raise ReplayError(f"{len(cert.cycles)} cycles listed; the DFA has {lengths.size}")
    seen = set()
    for c in cert.cycles:
        st = list(c.states)
        if not (len(st) == c.length >= 2 and len(set(st)) == len(st)) or not all(0 <= q < n for q in st):
            raise ReplayError("a cycle lists distinct states")
        for i, q in enumerate(st):
            nx = st[(i + 1) % len(st)]
            if set(nxt_in[q][nxt_in[q] >= 0].tolist()) != {nx} or comp[nx] != comp[q]:
                raise ReplayError(f"state {q} must have exactly one successor ({nx}) inside its cycle")
        if sizes[comp[st[0]]] != len(st) or int(comp[st[0]]) in seen:
            raise ReplayError("a listed cycle is not a whole strongly connected component (or is listed twice)")
        seen.add(int(comp[st[0]]))
    want = _hasse(t, k) if n <= HASSE_MAX_STATES and k * n <= 4096 else None
    got = None if cert.hasse is None else sorted(tuple(p) for p in cert.hasse)
    if got != want:
        raise ReplayError("hasse is not the covering relation of A_k" if want is not None else
                          "hasse is given only for n ≤ HASSE_MAX_STATES and k·n ≤ 4096")


def _hasse(t: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Sorted covering pairs (p, q) of the order of A_k: q reachable from p by a word of length ≡ 0
    (mod k) — a breadth-first search on (state, length mod k) from every p, then the pairs with no
    state strictly between."""
    n = t.shape[0]
    reach = np.zeros((n, n), dtype=bool)
    for p in range(n):
        seen = np.zeros((n, k), dtype=bool)
        seen[p, 0] = True
        frontier = [(p, 0)]
        while frontier:
            nxt = []
            for q, r in frontier:
                for s in set(t[q].tolist()):
                    if not seen[s, (r + 1) % k]:
                        seen[s, (r + 1) % k] = True
                        nxt.append((s, (r + 1) % k))
            frontier = nxt
        reach[p] = seen[:, 0]
    strict = reach & ~np.eye(n, dtype=bool)
    if (strict & strict.T).any():
        raise ReplayError("A_k is not partially ordered")
    out = []
    for p, q in np.argwhere(strict).tolist():
        between = strict[p] & strict[:, q]
        if not between.any():
            out.append((int(p), int(q)))
    return sorted(out)


def _replay_ltl_p_mod_no(chk: Checker, wit: QRWitness) -> None:
    p, q, d_ = wit.p, wit.q, wit.period
    if not 1 <= d_ <= chk.n:
        raise ReplayError(f"the period of a strong component is between 1 and the number of states, not {d_}")
    b = wit.branch
    if b is None:
        raise ReplayError("the witness names the branching state")
    if tuple(b.successors) != (p, q) or b.letters[0] == b.letters[1]:
        raise ReplayError("the branch's successors are p and q, on two letters")
    for a, s in zip(b.letters, b.successors):
        if chk.run([a], b.state) != s:
            raise ReplayError(f"letter {a} does not lead state {b.state} to {s}")
    if _scc(chk.A.transitions.astype(np.int64))[b.state] != _scc(chk.A.transitions.astype(np.int64))[p]:
        raise ReplayError("the branching state is not in the strongly connected component of p and q")
    if not (p != q and chk.run(wit.u, p) == q and chk.run(wit.v, q) == p):
        raise ReplayError('check `p != q and chk.run(wit.u, p) == q and chk.run(wit.v, q) == p` in _replay_ltl_p_mod_no does not hold')
    if not (len(wit.u) % d_ == 0 and len(wit.v) % d_ == 0):
        raise ReplayError('check `len(wit.u) % d_ == 0 and len(wit.v) % d_ == 0` in _replay_ltl_p_mod_no does not hold')
    g = 0
    for lp in wit.loops:
        if chk.run(lp, p) != p:
            raise ReplayError('check `chk.run(lp, p) == p` in _replay_ltl_p_mod_no does not hold')
        g = math.gcd(g, len(lp))
    if g != d_:
        raise ReplayError('check `g == d_` in _replay_ltl_p_mod_no does not hold')
    for k in range(1, 13):
        uk, vk = qr_witness_words(wit, k)
        if not (len(uk) % k == 0 and len(vk) % k == 0 and chk.run(uk, p) == q and chk.run(vk, q) == p):
            raise ReplayError('check `len(uk) % k == 0 and len(vk) % k == 0 and chk.run(uk, p) == q and chk.run(vk, q) == p` in _replay_ltl_p_mod_no does not hold')


register(Decider("ltl_p", decide_ltl_p, (TopologicalOrder,), (MutualReach,), _replay_ltl_p_yes, _replay_mutual,
                 on_automaton=True))
register(Decider("ltl_p_mod", decide_ltl_p_mod, (SimpleCycles,), (QRWitness,), _replay_ltl_p_mod_yes,
                 _replay_ltl_p_mod_no, on_automaton=True))
