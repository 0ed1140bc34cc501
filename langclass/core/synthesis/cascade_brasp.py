"""B-RASP programs from Krohn–Rhodes cascades: a counter-free automaton (or the automaton of the
m-marked language of an FO[<,MOD] language) → its holonomy cascade → one B-RASP program.

Source: *Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, §5.6:
Lemma 9 (an identity–reset automaton is simulated by rightmost future-masked attention to the last
resetting position), Lemma 10 (a cascade level reads the states of the levels above it at the
attended position), Lemma 11 (induction over the levels), then the homomorphism φ and the last
transition position-wise; Thm 19 / Cor 20 for the position marks MOD_r of B-RASP[MOD]. The cascade
is :func:`langclass.core.synthesis.holonomy.holonomy_cascade`.

**The program.** Positions i = 1 … n; a marked letter (a, r) at i is ``Q_a(i) ∧ MOD_r(i)`` (just
``Q_a`` when m = 1). Level d of the cascade has S_d states, written in binary by b_d = ⌈log₂ S_d⌉
vectors ``X{d}_{bit}``; the states of the levels 1 … d together (the reachable prefixes of the global
states, numbered) are written in binary by the vectors ``G{d}_{bit}``. For every level d:

* ``Z{d}`` (position-wise): a level-d reset happens at this position — a Boolean function of the
  previous prefix ``G{d−1}`` and the marked letter;
* ``V{d}_{bit}`` (position-wise): that bit of the state the reset goes to;
* ``X{d}_{bit} := ▶_j [j < i, Z{d}(j)] V{d}_{bit}(j) : init_bit`` — Lemma 9 with the states in
  binary (the state before position i is the target of the last reset before i, or the initial
  state) — one attention operation per state bit, all with the same score;
* ``Gp{d}_{bit}`` (position-wise) the prefix index from ``G{d−1}`` and ``X{d}`` (Lemma 10), and
  ``G{d}_{bit} := ▶_j [j ≤ i, 1] Gp{d}_{bit}(j) : 0`` — the identity operation, so the next level's
  Boolean functions read the prefix's own stream coordinates (width ⌈log₂|prefixes|⌉ plus the letter)
  instead of every level above.

The output ``ACCEPT`` reads the last prefix (the global state before position n), applies φ and
the transition on the last marked letter, and tests acceptance. The attention depth is 2k for k
levels (the compiled transformer has 2k + 1 layers); the empty word is accepted iff the initial
state is accepting.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from langclass.core.logic.brasp_program import (
    AttentionOp, BAnd, BConst, BExpr, BNot, BOr, BVar, Op, PositionOp, Program, mark_names,
)
from langclass.core.synthesis.fo_mod import SOURCE_FO_MOD, least_modulus
from langclass.core.synthesis.holonomy import SOURCE_HOLONOMY, Cascade, holonomy_cascade, marked_dfa

__all__ = ["CascadeProgram", "cascade_program", "SOURCE_CASCADE_BRASP"]

SOURCE_CASCADE_BRASP = ("Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages, §5.6 (Thm 7, "
                        "Thm 8, Lemmas 9-11), Thm 19 / Cor 20 (position marks); " + SOURCE_HOLONOMY)


@dataclass(frozen=True)
class CascadeProgram:
    """The B-RASP program of a language through its holonomy cascade.

    Attributes:
        program: the :class:`~langclass.core.logic.brasp_program.Program` (marks m when m > 1).
        cascade: the :class:`~langclass.core.synthesis.holonomy.Cascade` of the decomposed automaton.
        modulus: m (1: the language is star-free and the automaton is its minimal DFA; otherwise
            the minimal DFA of the m-marked language).
        prefix_sizes: the reachable prefixes (states of the levels 1 … d) for every d.
    """

    program: Program
    cascade: Cascade
    modulus: int
    prefix_sizes: tuple[int, ...]

    def summary(self) -> dict[str, Any]:
        """JSON-ready: ``{"route", "cascade_height", "states_per_level", "global_size", "modulus",
        "marked_automaton_states", "prefix_sizes", "source"}``."""
        return {"route": "cascade", "cascade_height": self.cascade.height,
                "states_per_level": self.cascade.states_per_level, "global_size": self.cascade.global_size,
                "modulus": self.modulus, "automaton_states": self.cascade.dfa.num_states,
                "prefix_sizes": list(self.prefix_sizes), "source": SOURCE_CASCADE_BRASP}


def _bits_needed(n: int) -> int:
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


def _qname(sym: str) -> str:
    return f"Q_{sym}" if re.fullmatch(r"\w+", sym) else f'Q("{sym}")'


def _or(terms: list[BExpr]) -> BExpr:
    if not terms:
        return BConst(False)
    return terms[0] if len(terms) == 1 else BOr(tuple(terms))


def _and(terms: list[BExpr]) -> BExpr:
    if not terms:
        return BConst(True)
    return terms[0] if len(terms) == 1 else BAnd(tuple(terms))


def _is(names: list[str], value: int, side: str = "i") -> list[BExpr]:
    """The literals saying that the binary vectors ``names`` (bit 0 first) hold ``value``."""
    return [BVar(nm, side) if (value >> b) & 1 else BNot(BVar(nm, side)) for b, nm in enumerate(names)]


def cascade_program(dfa: DFA, limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None,
                    modulus: int | None = None) -> CascadeProgram:
    """The B-RASP program of L(dfa) through the holonomy cascade (module docstring).

    Args:
        dfa: any complete DFA (minimized here) of a language in FO[<,MOD] (star-free when m = 1).
        limits: ``max_states`` and ``time_limit_s`` (the holonomy decomposition), the transition
            monoid's limits (the modulus search).
        deadline: a running deadline to share.
        modulus: the m to mark positions with (default: the least working one,
            :func:`~langclass.core.synthesis.fo_mod.least_modulus`).

    Returns:
        A :class:`CascadeProgram`; ``program.depth`` = 2 × the cascade height.

    Raises:
        UnsupportedError: the language is not in FO[<,MOD] (not quasi-aperiodic), or ``modulus``
            does not make the marked automaton counter-free.
        LimitExceeded: ``max_states``, ``max_star_free_monoid``; TimeLimitExceeded: ``time_limit_s``.

    Example:
        >>> from langclass.core.ingest.regex import regex_to_dfa
        >>> cp = cascade_program(regex_to_dfa("(a(ab)*b)*", ["a", "b"]))
        >>> cp.cascade.height, cp.program.depth, cp.modulus
        (3, 6, 1)
    """
    deadline = deadline or limits.deadline()
    A = dfa.canonical()
    if modulus is None:
        m = least_modulus(A).modulus
        if m is None:
            raise UnsupportedError("the language is not quasi-aperiodic (not in FO[<,MOD]): no cascade of "
                                   "identity-reset automata over position marks recognizes it", source=SOURCE_FO_MOD)
    else:
        m = int(modulus)
    M = marked_dfa(A, m)
    deadline.check("cascade (marked automaton)")
    casc = holonomy_cascade(M, limits, deadline)
    alphabet = A.alphabet
    initial = {_qname(a): a for a in alphabet}
    marks = mark_names(m)
    mark_of = {r: name for name, r in marks.items()}
    # marked letter index of M → its predicate Q_a ∧ MOD_r
    letter_expr: dict[int, BExpr] = {}
    for t, sym in enumerate(M.alphabet):
        if m == 1:
            letter_expr[t] = BVar(_qname(sym), "i")
        else:
            a, r = sym.rsplit("@", 1)
            letter_expr[t] = BAnd((BVar(_qname(a), "i"), BVar(mark_of[int(r)], "i")))

    K = casc.height
    glob = sorted(casc.phi)
    prefixes = [sorted({g[:d + 1] for g in glob}) for d in range(K)]
    index = [{p: n for n, p in enumerate(ps)} for ps in prefixes]
    ops: list[Op] = []
    g_prev: list[str] = []  # the vectors of the previous prefix index (none above level 1)
    for d, lv in enumerate(casc.levels):
        deadline.check("cascade (program)")
        nb = _bits_needed(lv.states)
        by_target: dict[int, list[BExpr]] = {}
        reset_terms = []
        for (upper, t), target in sorted(lv.resets.items()):
            cond = _and((_is(g_prev, index[d - 1][upper]) if d > 0 else []) + [letter_expr[t]])
            reset_terms.append(cond)
            by_target.setdefault(target, []).append(cond)
        z = f"Z{d + 1}"
        ops.append(PositionOp(z, _or(reset_terms)))
        xs = []
        for b in range(nb):
            v = f"V{d + 1}_{b}"
            ops.append(PositionOp(v, _or([c for tgt, cs in by_target.items() if (tgt >> b) & 1 for c in cs])))
            x = f"X{d + 1}_{b}"
            ops.append(AttentionOp(x, "rightmost", "future", BVar(z, "j"), BVar(v, "j"),
                                   BConst(bool((lv.initial >> b) & 1))))
            xs.append(x)
        # the prefix index of levels 1..d+1 from the previous prefix and this level's state
        nc = _bits_needed(len(prefixes[d]))
        gps, gs = [], []
        for c in range(nc):
            terms = []
            for p, idx in index[d].items():
                if (idx >> c) & 1:
                    terms.append(_and((_is(g_prev, index[d - 1][p[:-1]]) if d > 0 else []) + _is(xs, p[-1])))
            gp = f"Gp{d + 1}_{c}"
            ops.append(PositionOp(gp, _or(terms)))
            g = f"G{d + 1}_{c}"
            ops.append(AttentionOp(g, "rightmost", "future_nonstrict", BConst(True), BVar(gp, "j"), BConst(False)))
            gps.append(gp)
            gs.append(g)
        g_prev = gs
    # the output: φ, then the last transition on the marked letter at n, then acceptance
    acc_terms = []
    last = index[K - 1] if K else {(): 0}  # no level: a one-state automaton, φ(()) = its state
    for p, idx in last.items():
        q = casc.phi[p]
        letters = [letter_expr[t] for t in range(M.num_letters) if M.accepting[int(M.transitions[q, t])]]
        if letters:
            acc_terms.append(_and(_is(g_prev, idx) + [_or(letters)]))
    ops.append(PositionOp("ACCEPT", _or(acc_terms)))
    program = Program(alphabet, tuple(ops), "ACCEPT", bool(M.accepting[M.initial]), initial, m)
    return CascadeProgram(program, casc, m, tuple(len(p) for p in prefixes))
