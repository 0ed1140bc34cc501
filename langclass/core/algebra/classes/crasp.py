"""C-RASP ∩ regular (class key ``crasp``): balanced morphisms per component, to the fixed point.

C-RASP here is exactly the language of *Counting Like Transformers: Compiling Temporal Counting Logic
into Softmax Transformers* (Yang & Chiang 2024) as :mod:`langclass.core.logic.crasp` implements it:
letter atoms Q_a(i), Boolean operations, non-strict counts #_{j ≤ i} P(j), integer linear
combinations and their comparisons; the output is read at the last position (ε by its own bit).

Decision (docs/crasp.md proves each step): for every strongly connected component S of the minimal
DFA, iterate the balanced morphisms to the fixed point (:mod:`.crasp_fixpoint`; the procedure of
*Algebraic Decomposition Theory for Transformer Length Generalization*, Yang et al. 2026). The
language is in C-RASP iff in every component, states that no balanced morphism separates at the
fixed point have the same successor on every letter. (The reference decider asks that they be
equal; two distinct states with equal successors differ only in acceptance, and the letter atom at
the last position tells them apart — e.g. (a|b)*b, program ``Q_b``.) A member's certificate carries
every level's morphisms and potentials and an explicit program (:mod:`.crasp_build`) that the replay
runs; a non-member's witness is the component, the two unseparated states and the letter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.automata.smallgraph import strong_labels
from langclass.core.logic.crasp import CraspProgram, iter_words

from .base import ClassResult, Decider, Evidence, make_result, register
from .context import Context
from .crasp_build import ProgramTooLarge, build_program
from .crasp_fixpoint import CRASP_WORK, ComponentFixpoint, Level, component_fixpoint, nullspace
from .replaykit import Checker, ReplayError

__all__ = ["decide_crasp", "CountingProgram", "Unseparated", "CraspComponent", "CraspLevel", "crasp_components",
           "REPLAY_WORDS"]

REPLAY_WORDS = 256
"""The replay runs a member's program on every word of the longest length L with at most this many
words (so on every word up to L: 8 over two letters, 5 over three), plus 8 seeded random words of
lengths 40 to 80."""


@dataclass(frozen=True)
class CraspLevel(Evidence):
    """One level of the iteration on a component (lists follow the component's ``states``).

    ``labels``: ``[class of the source before this level, letter]``; ``morphism``: a basis of the
    balanced morphisms, one row per label; ``potentials``: one row per state (0 at the first);
    ``classes``: the partition after this level (ids by first appearance)."""

    labels: tuple[tuple[int, str], ...]
    morphism: tuple[tuple[int, ...], ...]
    potentials: tuple[tuple[int, ...], ...]
    classes: tuple[int, ...]


@dataclass(frozen=True)
class CraspComponent(Evidence):
    """A strongly connected component (states ascending) and its levels up to the fixed point."""

    states: tuple[int, ...]
    levels: tuple[CraspLevel, ...]


@dataclass(frozen=True)
class CountingProgram(Evidence):
    """Member: every component's levels (topological order) and the C-RASP program they give."""

    CHECK = ("every listed component is a strongly connected component, listed predecessors first; at every level "
             "the labels come from the previous partition, potential differences equal the morphism on every internal "
             "edge (so it is balanced) and its columns span all balanced morphisms; the last level is the first that splits "
             "no class or leaves only single states; "
             "within every final class all states have the same successor on every letter; the program agrees with "
             "the DFA on every word to the replay's length and on seeded random long words")
    components: tuple[CraspComponent, ...]
    program: Any
    depth: int | None


@dataclass(frozen=True)
class Unseparated(Evidence):
    """Non-member: p ≠ q in one final class of ``component`` (no balanced morphism separates them at the
    fixed point) with different successors on ``letter``."""

    CHECK = ("the component is a strongly connected component and its levels replay as for a member; p and q share "
             "the final class, and the letter leads them to the two listed, different successors (the first such "
             "pair and letter in state and alphabet order)")
    component: CraspComponent
    p: int
    q: int
    letter: str
    successors: tuple[int, int]


def _topological_components(t: list[list[int]], comp: list[int]) -> list[tuple[int, ...]]:
    """The components (states ascending), predecessors first (Kahn's algorithm on the condensation)."""
    groups: dict[int, list[int]] = {}
    for q, c in enumerate(comp):
        groups.setdefault(c, []).append(q)
    succ: dict[int, set[int]] = {c: set() for c in groups}
    indeg = {c: 0 for c in groups}
    for q, row in enumerate(t):
        for r in row:
            if comp[r] != comp[q] and comp[r] not in succ[comp[q]]:
                succ[comp[q]].add(comp[r])
                indeg[comp[r]] += 1
    ready = sorted((min(groups[c]), c) for c in groups if indeg[c] == 0)
    out = []
    while ready:
        _, c = ready.pop(0)
        out.append(tuple(groups[c]))
        for d in sorted(succ[c]):
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append((min(groups[d]), d))
                ready.sort()
    return out


def crasp_components(t: list[list[int]], comp: list[int], budget: list[int] | None = None) -> list[ComponentFixpoint]:
    """Every component's fixed point, predecessors first (see :func:`.crasp_fixpoint.component_fixpoint`)."""
    return [component_fixpoint(t, states, budget) for states in _topological_components(t, comp)]


def _violation(t: list[list[int]], cf: ComponentFixpoint) -> tuple[int, int, int] | None:
    """``(p, q, a)``: two states of one final class with different successors on letter a, else ``None``."""
    rep: dict[tuple[int, int], int] = {}
    for v, p in enumerate(cf.states):
        for a in range(len(t[p])):
            key = (cf.classes[v], a)
            if key in rep and t[rep[key]][a] != t[p][a]:
                return rep[key], p, a
            rep.setdefault(key, p)
    return None


def _states_text(states: tuple[int, ...], shown: int = 12) -> str:
    """A component's states for a reason: all of them when few, else the first ``shown`` and the count
    (the witness carries the whole list)."""
    if len(states) <= shown:
        return str(list(states))
    return "[" + ", ".join(map(str, states[:shown])) + f", … ({len(states)} states)]"


def _evidence(cf: ComponentFixpoint, alphabet: tuple[str, ...]) -> CraspComponent:
    return CraspComponent(cf.states, tuple(
        CraspLevel(tuple((c, alphabet[a]) for c, a in lv.labels), lv.morphism, lv.potentials, lv.classes)
        for lv in cf.levels))


def decide_crasp(ctx: Context) -> ClassResult:
    """C-RASP membership of the language of the minimal DFA (see the module docstring).

    Polynomial: per component at most |S| levels, each one exact null space of |E_S| − |S| + 1
    fundamental-cycle equations. Source: *Algebraic Decomposition Theory for Transformer Length
    Generalization* (Yang et al. 2026, the decision procedure for C-RASP ∩ regular) with the
    last-letter step of docs/crasp.md; programs per *Counting Like Transformers* (Yang & Chiang 2024).

    A limit (``crasp_work``, the eliminations' budget :data:`CRASP_WORK`, or the deadline) gives
    ``member = None`` with the error, as for the algebraic classes.
    """
    A = ctx.dfa
    t = ctx.t.tolist()
    budget = [CRASP_WORK]
    try:
        comps = crasp_components(t, ctx.scc.tolist(), budget)
        ctx.check_time("crasp: balanced morphisms")
    except LimitExceeded as err:  # decided on the automaton before the monoid: a limit leaves it undecided
        return make_result("crasp", None, f"undecided: {err.detail}", None, None, "none", error=err.to_dict())
    for cf in comps:
        bad = _violation(t, cf)
        if bad is not None:
            p, q, a = bad
            sp, sq = t[p][a], t[q][a]
            wit = Unseparated(_evidence(cf, A.alphabet), p, q, A.alphabet[a], (sp, sq))
            return make_result(
                "crasp", False,
                f"states {p} and {q} of the strongly connected component {_states_text(cf.states)} are separated by no balanced "
                f"morphism at the fixed point ({len(cf.levels)} level(s)), yet letter {A.alphabet[a]} leads them to "
                f"different states ({sp} and {sq}): no C-RASP program tracks the state", wit, wit, "automaton")
    comp_index = {q: i for i, cf in enumerate(comps) for q in cf.states}
    try:
        prog = build_program(A.alphabet, t, A.initial, A.accepting.tolist(), comps,
                             [comp_index[q] for q in range(len(t))])
        program, depth = prog.to_json(), prog.depth()
        tail = f"; C-RASP program of {len(prog.ops)} operations, depth {depth} (an upper bound on the least depth)"
    except ProgramTooLarge:
        program, depth, tail = None, None, "; the explicit program is over the size limit and left out"
    cert = CountingProgram(tuple(_evidence(cf, A.alphabet) for cf in comps), program, depth)
    levels = max(len(cf.levels) for cf in comps)
    return make_result(
        "crasp", True,
        "in every strongly connected component the balanced morphisms separate, at their fixed point "
        f"(at most {levels} level(s)), every two states with a different successor on some letter" + tail,
        cert, None, "automaton")


# ============================================================================ replay


def _replay_component(chk: Checker, ev: CraspComponent) -> tuple[int, ...]:
    """Check one component's levels on the DFA; returns the final partition (class id per state)."""
    A = chk.A
    t = A.transitions.tolist()
    states = list(ev.states)
    if not states or sorted(set(states)) != states or not all(0 <= q < chk.n for q in states):
        raise ReplayError("a component lists distinct states in ascending order")
    pos = {q: i for i, q in enumerate(states)}
    edges = [(pos[p], a, pos[t[p][a]]) for p in states for a in range(len(A.alphabet)) if t[p][a] in pos]
    if not ev.levels:
        raise ReplayError("a component has at least one level")
    classes: tuple[int, ...] = (0,) * len(states)
    for k, lv in enumerate(ev.levels, 1):
        chk.spend(len(edges) * (len(lv.labels) + 1), "crasp: a level of balanced morphisms")
        want = list(dict.fromkeys((classes[p], A.alphabet[a]) for p, a, _ in edges))
        if [tuple(x) for x in lv.labels] != want:
            raise ReplayError(f"level {k}: the labels are (class of the source, letter) of the internal edges: {want}")
        li = {lb: i for i, lb in enumerate(want)}
        if len(lv.morphism) != len(want) or len(lv.potentials) != len(states):
            raise ReplayError(f"level {k}: one morphism row per label and one potential row per state")
        d = len(lv.potentials[0])
        if any(len(r) != d for r in lv.morphism) or any(len(r) != d for r in lv.potentials):
            raise ReplayError(f"level {k}: every row has the same number of coordinates")
        if any(x != 0 for x in lv.potentials[0]):
            raise ReplayError(f"level {k}: the potential of the first state is 0")
        for p, a, q in edges:
            f = lv.morphism[li[(classes[p], A.alphabet[a])]]
            if any(pq - pp != fx for pq, pp, fx in zip(lv.potentials[q], lv.potentials[p], f)):
                raise ReplayError(f"level {k}: potential difference along {states[p]} -{A.alphabet[a]}-> {states[q]} "
                                  "is not the morphism's value (not balanced)")
        # the columns span every balanced morphism: unknowns (f over labels, π over non-first states)
        nl, ns = len(want), len(states) - 1
        rows = []
        for p, a, q in edges:
            r = [0] * (nl + ns)
            r[li[(classes[p], A.alphabet[a])]] -= 1
            if q:
                r[nl + q - 1] += 1
            if p:
                r[nl + p - 1] -= 1
            rows.append(r)
        dim = len(nullspace(rows, nl + ns))
        rank = nl - len(nullspace([list(col) for col in zip(*lv.morphism)] if d else [], nl)) if d else 0
        if rank != d or d != dim:
            raise ReplayError(f"level {k}: the {d} morphism columns must be independent and span the {dim} balanced morphisms")
        ids: dict = {}
        new = tuple(ids.setdefault((classes[v], tuple(lv.potentials[v])), len(ids)) for v in range(len(states)))
        if tuple(lv.classes) != new:
            raise ReplayError(f"level {k}: the classes are the partition by the potentials of levels 1..{k}: {list(new)}")
        split = len(set(new)) != len(set(classes))
        done = not split or len(set(new)) == len(states)  # the fixed point: nothing split, or nothing left to split
        if done != (k == len(ev.levels)):
            raise ReplayError(f"level {k}: the iteration stops at the first level that splits no class or leaves every "
                              "class a single state (the fixed point), and only there")
        classes = new
    return classes


def _components_of(chk: Checker) -> list[tuple[int, ...]]:
    t = chk.A.transitions.tolist()
    return _topological_components(t, strong_labels([sorted(set(row)) for row in t]))


def _replay_yes(chk: Checker, cert: CountingProgram) -> None:
    A = chk.A
    t = A.transitions.tolist()
    comps = _components_of(chk)
    listed = [tuple(c.states) for c in cert.components]
    if sorted(listed) != sorted(comps):
        raise ReplayError("the components listed are not the strongly connected components of the minimal DFA")
    where = {q: i for i, c in enumerate(listed) for q in c}
    for q, row in enumerate(t):
        if any(where[r] < where[q] for r in row):
            raise ReplayError("components are listed predecessors first")
    for c in cert.components:
        classes = _replay_component(chk, c)
        fp = ComponentFixpoint(tuple(c.states), (Level((), (), (), classes),))
        bad = _violation(t, fp)
        if bad is not None:
            raise ReplayError(f"states {bad[0]} and {bad[1]} share a final class but differ on letter {A.alphabet[bad[2]]}")
    if cert.program is None:
        if cert.depth is not None:
            raise ReplayError("a certificate without its program has no depth")
        _rebuilt_is_too_large(chk, cert)
        return
    try:
        prog = CraspProgram.from_json(cert.program)
    except InputError as err:
        raise ReplayError(f"the program is malformed: {err}") from None
    if tuple(prog.alphabet) != tuple(A.alphabet):
        raise ReplayError("the program's alphabet is the DFA's")
    if cert.depth != prog.depth():
        raise ReplayError(f"the program's depth is {prog.depth()}")
    if prog.accepts_empty != bool(A.accepting[A.initial]):
        raise ReplayError("accepts_empty must equal whether the DFA accepts the empty word")
    _run_program(chk, prog)
    rebuilt = _rebuilt_program(chk)
    if rebuilt is None:
        raise ReplayError("the program the balanced morphisms give is over the size limit and is left out of a certificate")
    if prog != rebuilt:  # every operation recomputed from the DFA, not only the words run above
        raise ReplayError(f"the program is not the one the balanced morphisms of the DFA give (recomputed: "
                          f"{len(rebuilt.ops)} operations, depth {rebuilt.depth()}; stated: {len(prog.ops)} operations)")


def _rebuilt_program(chk: Checker) -> CraspProgram | None:
    """The program :func:`decide` builds, rebuilt from the DFA's own fixed point (None: over the size limit)."""
    A = chk.A
    t = A.transitions.tolist()
    fps = crasp_components(t, _scc_of(chk))
    index = {q: i for i, cf in enumerate(fps) for q in cf.states}
    try:
        return build_program(A.alphabet, t, A.initial, A.accepting.tolist(), fps, [index[q] for q in range(len(t))])
    except ProgramTooLarge:
        return None


def _rebuilt_is_too_large(chk: Checker, cert: CountingProgram) -> None:
    if _rebuilt_program(chk) is not None:
        raise ReplayError("the program is left out only when it is over the size limit")


def _scc_of(chk: Checker) -> list[int]:
    out = [0] * chk.n
    for i, c in enumerate(_components_of(chk)):
        for q in c:
            out[q] = i
    return out


def _run_program(chk: Checker, prog: CraspProgram) -> None:
    """Run the program on every word of the longest length L with |Σ|^L ≤ :data:`REPLAY_WORDS` (its value
    at each position is its answer on that prefix: C-RASP is causal, so all words up to L are checked)
    and on seeded random words of lengths 40 to 80; compare with the DFA prefix by prefix."""
    A = chk.A
    k = len(A.alphabet)
    length = 1
    while k ** (length + 1) <= REPLAY_WORDS and length < 10:
        length += 1
    rng = random.Random(20261206)
    ws = [list(w) for w in iter_words(A.alphabet, length) if len(w) == length]
    ws += [[rng.choice(A.alphabet) for _ in range(rng.randint(40, 80))] for _ in range(8)]
    for w in ws:
        chk.spend(len(prog.ops) * len(w), "crasp: running the program")
        got = prog.evaluate_all(w)[prog.output]
        q = A.initial
        for i, a in enumerate(w):
            q = int(A.transitions[q, A.encode([a])[0]])
            if bool(got[i]) != bool(A.accepting[q]):
                raise ReplayError(f"the program and the DFA disagree on the word {''.join(w[:i + 1])!r}")


def _replay_no(chk: Checker, wit: Unseparated) -> None:
    A = chk.A
    t = A.transitions.tolist()
    if tuple(wit.component.states) not in _components_of(chk):
        raise ReplayError("the component is not a strongly connected component of the minimal DFA")
    classes = _replay_component(chk, wit.component)
    pos = {q: i for i, q in enumerate(wit.component.states)}
    if wit.p not in pos or wit.q not in pos or wit.p == wit.q:
        raise ReplayError("p and q are two different states of the component")
    if classes[pos[wit.p]] != classes[pos[wit.q]]:
        raise ReplayError("p and q are separated at the fixed point")
    if wit.letter not in A.alphabet:
        raise ReplayError(f"the letter {wit.letter!r} is not in the alphabet")
    a = A.alphabet.index(wit.letter)
    got = (t[wit.p][a], t[wit.q][a])
    if tuple(wit.successors) != got or got[0] == got[1]:
        raise ReplayError(f"the letter leads p and q to {got}, which must be the listed, different successors")
    first = _violation(t, ComponentFixpoint(tuple(wit.component.states), (Level((), (), (), classes),)))
    if first != (wit.p, wit.q, a):  # one witness per language: the decider's, so every field is determined
        raise ReplayError("the witness is the first pair: p the first state of its class, q the first later state "
                          "of that class with a different successor, on the first such letter")


register(Decider("crasp", decide_crasp, (CountingProgram,), (Unseparated,), _replay_yes, _replay_no, on_automaton=True))
