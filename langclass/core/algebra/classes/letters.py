"""Tests on single letters of the minimal DFA: stutter-invariance and group languages.

* stutter-invariant ⇔ η(a) = η(aa) ⇔ δ(δ(q,a),a) = δ(q,a) for all q, a (minimal DFA; Peled & Wilke 1997).
* group language ⇔ every letter permutes the states of the minimal DFA (its syntactic monoid is a group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import ClassResult, Decider, Evidence, make_result, register, show, words
from .context import Context
from .replaykit import Checker, ReplayError

__all__ = ["decide_stutter_invariant", "decide_group", "LettersIdempotent", "Stutter", "LetterPermutations",
           "MergedStates"]


@dataclass(frozen=True)
class LettersIdempotent(Evidence):
    """δ(δ(q,a),a) = δ(q,a) for each of the ``pairs_checked`` = |Q|·|Σ| pairs (q, a)."""

    CHECK = "δ(δ(q,a),a) = δ(q,a) for every state q and letter a"
    pairs_checked: int


@dataclass(frozen=True)
class Stutter(Evidence):
    """u·a·v and u·a·a·v differ in membership (``state`` = the state u leads to)."""

    CHECK = "exactly one of u·a·v and u·a·a·v is accepted"
    u: tuple[str, ...]
    a: str
    v: tuple[str, ...]
    state: int
    uav_accepted: bool
    uaav_accepted: bool


@dataclass(frozen=True)
class LetterPermutations(Evidence):
    """Every letter of ``letters`` (all of Σ) permutes the states."""

    CHECK = "every letter maps the states one-to-one"
    letters: tuple[str, ...]


@dataclass(frozen=True)
class MergedStates(Evidence):
    """A letter mapping two states to one (so it is no permutation)."""

    CHECK = "states[0] ≠ states[1] and both go to image on letter"
    letter: str
    states: tuple[int, int]
    image: int


def decide_stutter_invariant(ctx: Context) -> ClassResult:
    """Stutter-invariant ⇔ η(a) = η(aa) ⇔ δ(δ(q,a),a) = δ(q,a) for all q, a (minimal DFA; Peled & Wilke 1997)."""
    t = ctx.t
    once = t
    twice = np.take_along_axis(t[t], np.arange(ctx.k)[None, :, None], axis=2)[:, :, 0]  # δ(δ(q,a),a)
    bad = once != twice
    if not bad.any():
        return make_result("stutter_invariant", True,
                           "δ(δ(q,a),a) = δ(q,a) for every state q and letter a, so doubling a letter never changes membership",
                           LettersIdempotent(int(ctx.n * ctx.k)), None, "automaton")
    q, a = (int(x) for x in np.argwhere(bad)[0])
    sym = ctx.dfa.alphabet[a]
    u = ctx.access_word(q)
    v = ctx.separating_word(int(once[q, a]), int(twice[q, a]))
    in1 = bool(ctx.dfa.accepts(u + (sym,) + v))
    wit = Stutter(words(u), sym, words(v), q, in1, not in1)
    return make_result("stutter_invariant", False,
                       f"u·a·v and u·a·a·v differ (u = {show(u)}, a = {sym}, v = {show(v)}): "
                       f"{'only the first' if in1 else 'only the second'} is accepted",
                       wit, wit, "automaton")


def decide_group(ctx: Context) -> ClassResult:
    """Group language ⇔ every letter permutes the states of the minimal DFA."""
    t = ctx.t
    for a in range(ctx.k):
        col = t[:, a]
        if np.unique(col).size != ctx.n:
            vals, counts = np.unique(col, return_counts=True)
            r = int(vals[counts > 1][0])
            p, q = (int(x) for x in np.flatnonzero(col == r)[:2])
            wit = MergedStates(ctx.dfa.alphabet[a], (p, q), r)
            return make_result("group", False,
                               f"letter {ctx.dfa.alphabet[a]} maps states {p} and {q} both to {r}, so it is not a permutation",
                               wit, wit, "automaton")
    return make_result("group", True,
                       "every letter permutes the states of the minimal DFA, so the syntactic monoid is a group",
                       LetterPermutations(tuple(ctx.dfa.alphabet)), None, "automaton")


def _replay_stutter_yes(chk: Checker, cert: LettersIdempotent) -> None:
    t = chk.A.transitions.astype(np.int64)
    if cert.pairs_checked != t.size:
        raise ReplayError('check `cert.pairs_checked == t.size` in _replay_stutter_yes does not hold')
    twice = np.take_along_axis(t[t], np.arange(t.shape[1])[None, :, None], axis=2)[:, :, 0]
    if not (twice == t).all():
        raise ReplayError("some letter is not idempotent on some state")


def _replay_stutter_no(chk: Checker, wit: Stutter) -> None:
    u, a, v = wit.u, wit.a, wit.v
    if chk.run(u) != wit.state:
        raise ReplayError('check `chk.run(u) == wit.state` in _replay_stutter_no does not hold')
    if chk.accepts(chk.cat(u, [a], v)) != wit.uav_accepted:
        raise ReplayError('check `chk.accepts(chk.cat(u, [a], v)) == wit.uav_accepted` in _replay_stutter_no does not hold')
    if not (chk.accepts(chk.cat(u, [a, a], v)) == wit.uaav_accepted != wit.uav_accepted):
        raise ReplayError('check `chk.accepts(chk.cat(u, [a, a], v)) == wit.uaav_accepted != wit.uav_accepted` in _replay_stutter_no does not hold')


def _replay_group_yes(chk: Checker, cert: LetterPermutations) -> None:
    if tuple(cert.letters) != tuple(chk.A.alphabet):
        raise ReplayError("letters must be the alphabet, in its order")
    for a in cert.letters:
        col = chk.A.transitions[:, chk.A.letter_index(a)]
        if np.unique(col).size != chk.n:
            raise ReplayError(f"letter {a} is not a permutation")


def _replay_group_no(chk: Checker, wit: MergedStates) -> None:
    a = chk.A.letter_index(wit.letter)
    p, q = wit.states
    if not (p != q and chk.A.transitions[p, a] == chk.A.transitions[q, a] == wit.image):
        raise ReplayError('check `p != q and chk.A.transitions[p, a] == chk.A.transitions[q, a] == wit.image` in _replay_group_no does not hold')


register(Decider("stutter_invariant", decide_stutter_invariant, (LettersIdempotent,), (Stutter,),
                 _replay_stutter_yes, _replay_stutter_no, on_automaton=True))
register(Decider("group", decide_group, (LetterPermutations,), (MergedStates,), _replay_group_yes, _replay_group_no,
                 on_automaton=True))
