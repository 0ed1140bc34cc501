"""An explicit C-RASP program for a DFA whose components pass the counting test (the member's certificate).

The program computes, at every position j ≥ 1, the state of the minimal DFA after w_1..w_j, and
accepts at the last position when that state is accepting (the empty word: ``accepts_empty``).
Components S are handled in topological order; for each one (``docs/crasp.md`` proves each step):

* ``ent[S,s]`` (j is the position where the run enters S, at state s): the run left a predecessor
  component T for the first time at j, from a state of final class C of T, on a letter a with
  δ(C, a) = {s}. The component of the initial state is entered "at position 0" in q0.
* ``cand[S]`` (the transition at j may be internal to S): S was entered before j.
* level k of S: ``lab[k,λ]`` = cand ∧ (class of the state at j−1 after level k−1 is P) ∧ Q_a for
  each label λ = (P, a); ``Δ[k,t] = Σ_λ f_t(λ)·#lab[k,λ]`` is the potential change since the entry.
  The class of the state at j−1 after level k is C iff its parent class (level k−1) holds and
  Δ[k](j−1) = π_k(C) − π_k(s) for the entry state s, where Δ[k](j−1) = Δ[k](j) − f(P, w_j) when the
  transition at j is counted (the non-strict count includes position j; the label at j is known
  from the level below and the letter).
* ``exit[S]``: the transition at j leaves S (from the final class C on a with δ(C, a) ∉ S); the
  first such position is the true exit (before it every counted position lies inside S).
* the state at j is q ∈ S iff j is the entry at q, or the transition is internal, no exit happened
  yet, and δ(C, w_j) = {q} for the final class C of the state at j−1.

All numbers are integers (the morphisms and potentials of :mod:`.crasp_fixpoint`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langclass.core.logic.crasp import MAX_OPS, CraspOp, CraspProgram, needed_ops

from .crasp_fixpoint import ComponentFixpoint

__all__ = ["build_program", "ProgramTooLarge"]


class ProgramTooLarge(Exception):
    """The construction would exceed the program size limit (:data:`~langclass.core.logic.crasp.MAX_OPS`)."""


class _Builder:
    def __init__(self, alphabet: Sequence[str]) -> None:
        self.alphabet = tuple(alphabet)
        self.ops: list[CraspOp] = []
        self.memo: dict[tuple, str] = {}
        self._true: str | None = None  # the names of the two constants once made (made where first asked)
        self._false: str | None = None

    def _op(self, kind: str, args: tuple, hint: str) -> str:
        key = (kind, args)
        if key in self.memo:
            return self.memo[key]
        if len(self.ops) >= MAX_OPS:
            raise ProgramTooLarge(f"more than {MAX_OPS} operations")
        name = f"{hint}_{len(self.ops)}"
        self.ops.append(CraspOp.trusted(name, kind, args))
        self.memo[key] = name
        return name

    def true(self) -> str:
        if self._true is None:
            self._true = self._op("const_bool", (True,), "true")
        return self._true

    def false(self) -> str:
        if self._false is None:
            self._false = self._op("const_bool", (False,), "false")
        return self._false

    def sym(self, a: int) -> str:
        return self._op("symbol", (self.alphabet[a],), "Q")

    def neg(self, p: str, hint: str = "not") -> str:
        return self._op("not", (p,), hint)

    def all_of(self, ps: Sequence[str], hint: str = "and") -> str:
        t = self.true()
        ps = tuple(dict.fromkeys(p for p in ps if p != t))
        if self.false() in ps:
            return self.false()
        if not ps:
            return t
        return ps[0] if len(ps) == 1 else self._op("and", tuple(sorted(ps)), hint)

    def any_of(self, ps: Sequence[str], hint: str = "or") -> str:
        f = self.false()
        ps = tuple(dict.fromkeys(p for p in ps if p != f))
        if self.true() in ps:
            return self.true()
        if not ps:
            return f
        return ps[0] if len(ps) == 1 else self._op("or", tuple(sorted(ps)), hint)

    def count(self, p: str, hint: str = "cnt") -> str:
        return self.const(0) if p == self.false() else self._op("count", (p,), hint)

    def const(self, c: int) -> str:
        return self._op("linear", ((), int(c)), "k")

    def linear(self, terms: Sequence[tuple[int, str]], hint: str = "lin") -> str:
        terms = tuple((int(c), x) for c, x in terms if c)
        return self._op("linear", (terms, 0), hint) if terms else self.const(0)

    def cmp(self, x: str, rel: str, c: int, hint: str = "cmp") -> str:
        return self._op("compare", (x, rel, self.const(c)), hint)


def build_program(alphabet: Sequence[str], t: list[list[int]], initial: int, accepting: Sequence[bool],
                  comps: Sequence[ComponentFixpoint], comp_of: Sequence[int]) -> CraspProgram:
    """The C-RASP program tracking the DFA's state (see the module docstring).

    Args:
        alphabet, t, initial, accepting: a complete DFA (every state reachable).
        comps: every component's fixed point, in a topological order (predecessors first); each
            must pass the test (equal successors within every final class).
        comp_of: component index (into ``comps``) of every state.

    Raises:
        ProgramTooLarge: past :data:`~langclass.core.logic.crasp.MAX_OPS` operations.
    """
    if 4 * (len(comps) - 1) > MAX_OPS:  # every component after the first needs at least 4 operations
        raise ProgramTooLarge(f"{len(comps)} components need more than {MAX_OPS} operations")
    b = _Builder(alphabet)
    k = len(alphabet)
    entry_terms: dict[int, list[str]] = {}  # state -> Booleans "j enters its component at this state"
    at: dict[int, str] = {}
    for ci, cf in enumerate(comps):
        states = cf.states
        pos = {q: i for i, q in enumerate(states)}
        first = initial in pos
        tag = f"S{ci}"
        if first:
            entries = {initial: b.true()}  # entered before position 1, at q0
            cand = b.true()
            ent_state: dict[int, str] = {}
        else:
            ent_state = {q: b.any_of(entry_terms[q], f"ent{tag}q{q}") for q in states if entry_terms.get(q)}
            entry = b.any_of(list(ent_state.values()), f"ent{tag}")
            entries = {q: b.cmp(b.count(e, f"c_ent{tag}q{q}"), ">=", 1, f"from{tag}q{q}") for q, e in ent_state.items()}
            cand = b.all_of([b.cmp(b.count(entry, f"c_ent{tag}"), ">=", 1), b.neg(entry)], f"cand{tag}")
        # class of the state at j-1, level by level; level 0: one class (id 0)
        prev_cls: dict[int, str] = {0: b.true()}
        prev_ids: tuple[int, ...] = (0,) * len(states)
        for lv_i, lv in enumerate(cf.levels):
            d = len(lv.morphism[0]) if lv.morphism else 0
            counts = []
            for (pc, a) in lv.labels:
                lab = b.all_of([cand, prev_cls[pc], b.sym(a)], f"lab{tag}L{lv_i}")
                counts.append(b.count(lab, f"c_lab{tag}L{lv_i}"))
            delta = [b.linear([(lv.morphism[li][c], counts[li]) for li in range(len(lv.labels))], f"pot{tag}L{lv_i}")
                     for c in range(d)]
            fval = {lb: lv.morphism[li] for li, lb in enumerate(lv.labels)}
            cls: dict[int, str] = {}
            for cid in sorted(set(lv.classes)):
                v = lv.classes.index(cid)
                parent = prev_ids[v]
                pot_c = lv.potentials[v]
                per_entry = []
                for s, from_s in entries.items():
                    base = [pc - ps for pc, ps in zip(pot_c, lv.potentials[pos[s]])]
                    cases = []
                    if not first:  # not counted at j (j is the entry position or before it)
                        cases.append(b.all_of([b.neg(cand)] + [b.cmp(delta[c], "==", base[c]) for c in range(d)]))
                    for a in range(k):
                        f = fval.get((parent, a), (0,) * d)
                        cases.append(b.all_of([cand, b.sym(a)] + [b.cmp(delta[c], "==", base[c] + f[c]) for c in range(d)]))
                    per_entry.append(b.all_of([from_s, b.any_of(cases)]))
                cls[cid] = b.all_of([prev_cls[parent], b.any_of(per_entry)], f"cls{tag}L{lv_i}c{cid}")
            prev_cls, prev_ids = cls, lv.classes
        # transitions out of the final classes
        final = cf.levels[-1].classes
        succ: dict[tuple[int, int], int] = {}
        for v, q in enumerate(states):
            for a in range(k):
                succ.setdefault((final[v], a), t[q][a])
        leave = [b.all_of([prev_cls[c], b.sym(a)]) for (c, a), r in succ.items() if r not in pos]
        exit_ = b.all_of([cand, b.any_of(leave)], f"exit{tag}")
        n_exit = b.count(exit_, f"c_exit{tag}")
        first_exit = b.all_of([exit_, b.cmp(n_exit, "==", 1)], f"first_exit{tag}")
        inside = b.all_of([cand, b.cmp(n_exit, "==", 0)], f"inside{tag}")
        for (c, a), r in sorted(succ.items()):
            if r not in pos:
                entry_terms.setdefault(r, []).append(b.all_of([first_exit, prev_cls[c], b.sym(a)], f"go{tag}"))
        for q in states:
            if not accepting[q]:
                continue
            into = [b.all_of([prev_cls[c], b.sym(a)]) for (c, a), r in succ.items() if r == q]
            parts = [b.all_of([inside, b.any_of(into)])]
            if q in ent_state:
                parts.append(ent_state[q])
            at[q] = b.any_of(parts, f"at_q{q}")
    out = b.any_of([at[q] for q in sorted(at)], "accept")
    return CraspProgram(b.alphabet, needed_ops(b.ops, out), out, bool(accepting[initial]))  # only what the output reads
