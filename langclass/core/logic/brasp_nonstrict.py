"""Non-strict B-RASP: a program with only non-strict masks (j ≤ i, j ≥ i) for a stutter-invariant language.

*Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*, §7.2 and Thm 18:
B-RASP (and masked hard-attention transformers) with only non-strict masking recognize exactly the
stutter-invariant star-free languages; the proof adapts Peled & Wilke (1997, LTL without next is
stutter-invariant LTL). This module gives the constructive half as a program transformation.

Write d(w) for the *destuttered* word (every run aa⋯a of one letter shrunk to a) and b(i) for the
block (run) of position i, so d(w)_{b(i)} = w_i. :func:`nonstrict_program` turns any program P
without position marks into a program P′ using only the masks ``j <= i`` and ``j >= i`` such that,
for every vector X of P, every word w and every position i,

    P′.X(w, i) = P.X(d(w), b(i))                                           (★)

(the translated vector keeps its name; new vectors get fresh names). By induction on the program,
every vector of P′ is constant on each block:

* initial vectors and position-wise operations: unchanged;
* mask ``1``: the rightmost (leftmost) j with S is in the rightmost (leftmost) block with S, and all
  values are block-constant; it is rewritten as two non-strict operations —
  ▶_j[1, S] V : D = ▶_j[j ≥ i, S] V : (▶_j[j ≤ i, S] V : D), and ◀ symmetrically;
* masks ``j <= i`` / ``j >= i``: the blocks b′ ≤ b(i) are exactly the blocks of positions j ≤ i
  (block b(i) itself holds i), so the operation is kept as it is;
* strict ``j < i``: the blocks b′ < b(i) are those of the positions j ≤ p(i), p(i) the last
  position of the previous block. For every assignment u of the i-side vectors of S and V, with
  S_u, V_u the j-side predicates left, F_u(k) = ▶_j[j ≤ k, S_u(j)] 1 : 0 and G_u(k) = ▶_j[j ≤ k,
  S_u(j)] V_u(j) : 0 are read at k = p(i) by the *shift* prev(X)(i) = ⋁_a (Q_a(i) ∧
  ▶_j[j ≤ i, ¬Q_a(j)] X(j) : 0) (the rightmost j ≤ i with a letter other than w_i is p(i)), and
  X(i) = ⋁_u [u(i)] ∧ ((prev F_u ∧ prev G_u) ∨ (¬prev F_u ∧ D(i))) — the past-LTL counterpart of
  Peled & Wilke's X φ ↦ ⋁_a (a ∧ a U (¬a ∧ φ));
* strict ``j > i``: symmetrically with ``j >= i`` and next(X)(i) = ⋁_a (Q_a(i) ∧ ◀_j[j ≥ i, ¬Q_a(j)] X(j) : 0).

Reading the output at the last position (in the last block) gives P′ accepts w ⇔ P accepts d(w).
So when P recognizes a *stutter-invariant* language L (w ∈ L ⇔ d(w) ∈ L), P′ recognizes L with
non-strict masks only — the model that Thm 18 names. For a language that is not stutter-invariant
P′ recognizes {w : d(w) ∈ L} ≠ L; the caller checks stutter invariance (the construction's word
checks against the DFA would expose it too).
"""

from __future__ import annotations

import itertools

from langclass.core.base.errors import LimitExceeded, UnsupportedError

from .brasp_program import AttentionOp, BAnd, BConst, BExpr, BNot, BOr, BVar, Op, PositionOp, Program, bexpr_vars

__all__ = ["nonstrict_program", "destutter", "is_nonstrict", "NONSTRICT_MASKS", "MAX_I_VARIABLES", "SOURCE_NONSTRICT"]

NONSTRICT_MASKS = ("future_nonstrict", "past_nonstrict")
"""The masks of a non-strict program: j ≤ i and j ≥ i."""

MAX_I_VARIABLES = 10
"""Most i-side vectors one strict operation's score and value may read (the translation writes one
pair of operations per assignment of them, 2^count)."""

SOURCE_NONSTRICT = ("Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages, §7.2 and Thm 18 "
                    "(non-strict masking = stutter-invariant star-free; Peled & Wilke 1997)")


def destutter(word):
    """The destuttered word d(w) (runs of one letter shrunk to one letter) and the block index of
    every position: ``(d, blocks)`` with ``len(blocks) == len(word)`` and ``d[blocks[i]] == word[i]``.
    Works on any sequence (letters or letter indices)."""
    d: list = []
    blocks: list[int] = []
    for x in word:
        if not d or d[-1] != x:
            d.append(x)
        blocks.append(len(d) - 1)
    return d, blocks


def is_nonstrict(program: Program) -> bool:
    """Whether every attention operation of ``program`` has a non-strict mask (j ≤ i or j ≥ i)."""
    return all(op.mask in NONSTRICT_MASKS for op in program.ops if isinstance(op, AttentionOp))


# ----------------------------------------------------------------------------- expressions
def _not(e: BExpr) -> BExpr:
    if isinstance(e, BConst):
        return BConst(not e.value)
    return e.arg if isinstance(e, BNot) else BNot(e)


def _and(*es: BExpr) -> BExpr:
    if any(isinstance(e, BConst) and not e.value for e in es):
        return BConst(False)
    rest: list[BExpr] = []
    for e in es:
        if isinstance(e, BConst):
            continue
        for x in (e.args if isinstance(e, BAnd) else (e,)):
            if x not in rest:
                rest.append(x)
    return BConst(True) if not rest else rest[0] if len(rest) == 1 else BAnd(tuple(rest))


def _or(*es: BExpr) -> BExpr:
    if any(isinstance(e, BConst) and e.value for e in es):
        return BConst(True)
    rest: list[BExpr] = []
    for e in es:
        if isinstance(e, BConst):
            continue
        for x in (e.args if isinstance(e, BOr) else (e,)):
            if x not in rest:
                rest.append(x)
    return BConst(False) if not rest else rest[0] if len(rest) == 1 else BOr(tuple(rest))


def _subst(e: BExpr, env: dict[str, bool], side: str) -> BExpr:
    """``e`` with every ``X(side)`` in ``env`` replaced by its constant, simplified."""
    if isinstance(e, BVar):
        return BConst(env[e.name]) if e.side == side and e.name in env else e
    if isinstance(e, BConst):
        return e
    if isinstance(e, BNot):
        return _not(_subst(e.arg, env, side))
    parts = [_subst(a, env, side) for a in e.args]
    return _and(*parts) if isinstance(e, BAnd) else _or(*parts)


def _to_i(e: BExpr) -> BExpr:
    """A j-side expression read at the query position (every ``X(j)`` becomes ``X(i)``)."""
    if isinstance(e, BVar):
        return BVar(e.name, "i")
    if isinstance(e, BConst):
        return e
    if isinstance(e, BNot):
        return BNot(_to_i(e.arg))
    return type(e)(tuple(_to_i(a) for a in e.args))


# ----------------------------------------------------------------------------- translation
class _Translator:
    def __init__(self, program: Program) -> None:
        self.program = program
        self.taken = set(program.names)
        self.ops: list[Op] = []
        self.counter = 0
        # one initial vector per letter (several names may denote one symbol)
        self.letter: dict[str, str] = {}
        for name, sym in program.initial.items():
            self.letter.setdefault(sym, name)
        self.shift_cache: dict[tuple[str, BExpr], BExpr] = {}
        self.vec_cache: dict[BExpr, BExpr] = {}

    def fresh(self, base: str) -> str:
        while True:
            self.counter += 1
            name = f"{base}~s{self.counter}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def emit(self, op: Op) -> BExpr:
        self.ops.append(op)
        return BVar(op.name, "i")

    def vector(self, e: BExpr, base: str) -> BExpr:
        """An i-side expression as something a j-side read can use: a constant or a vector name."""
        if isinstance(e, (BConst, BVar)):
            return e
        if e not in self.vec_cache:
            self.vec_cache[e] = self.emit(PositionOp(self.fresh(base), e))
        return self.vec_cache[e]

    def shift(self, e: BExpr, direction: str, base: str) -> BExpr:
        """prev(e) (``direction="future"``: e at the last position of the previous block, 0 in the
        first block) or next(e) (``"past"``: at the first position of the next block, 0 in the last)."""
        v = self.vector(e, base)
        if isinstance(v, BConst) and not v.value:
            return BConst(False)
        key = (direction, v)
        if key in self.shift_cache:
            return self.shift_cache[key]
        tie, mask = ("rightmost", "future_nonstrict") if direction == "future" else ("leftmost", "past_nonstrict")
        value = BConst(True) if isinstance(v, BConst) else BVar(v.name, "j")
        terms = []
        for sym, q in self.letter.items():
            other = self.emit(AttentionOp(self.fresh(base), tie, mask, BNot(BVar(q, "j")), value, BConst(False)))
            terms.append(_and(BVar(q, "i"), other))
        out = self.vector(_or(*terms), base)
        self.shift_cache[key] = out
        return out

    def strict(self, op: AttentionOp) -> None:
        """A strict operation (mask j < i or j > i) by the shift construction (module docstring)."""
        ivars = sorted({n for n, s in bexpr_vars(op.score) | bexpr_vars(op.value) if s == "i"})
        if len(ivars) > MAX_I_VARIABLES:
            raise LimitExceeded("max_nonstrict_i_variables", MAX_I_VARIABLES,
                                f"the operation {op.name} reads {len(ivars)} i-side vectors in its score and value "
                                f"(> {MAX_I_VARIABLES}); the non-strict translation writes 2^{len(ivars)} operation pairs")
        nonstrict = "future_nonstrict" if op.mask == "future" else "past_nonstrict"
        # ▶ with score 1 and mask j ≤ k finds k itself (◀ with j ≥ k likewise): the value is read at k
        finds_k = (op.direction == "rightmost") == (op.mask == "future")
        terms = []
        for bits in itertools.product([False, True], repeat=len(ivars)):
            env = dict(zip(ivars, bits))
            cond = _and(*(BVar(n, "i") if b else BNot(BVar(n, "i")) for n, b in env.items()))
            s_u, v_u = _subst(op.score, env, "i"), _subst(op.value, env, "i")
            if isinstance(s_u, BConst) and not s_u.value:
                terms.append(_and(cond, op.default))
                continue
            if isinstance(s_u, BConst) and finds_k:
                found: BExpr = BConst(True)
                got = _to_i(v_u)
            else:
                found = self.emit(AttentionOp(self.fresh(op.name), op.direction, nonstrict, s_u, BConst(True),
                                              BConst(False)))
                if isinstance(v_u, BConst):
                    got = found if v_u.value else BConst(False)
                else:
                    got = self.emit(AttentionOp(self.fresh(op.name), op.direction, nonstrict, s_u, v_u, BConst(False)))
            f_sh = self.shift(found, op.mask, op.name)
            g_sh = f_sh if got == found else self.shift(got, op.mask, op.name)
            terms.append(_and(cond, _or(_and(f_sh, g_sh), _and(_not(f_sh), op.default))))
        self.ops.append(PositionOp(op.name, _or(*terms)))

    def run(self) -> Program:
        prog = self.program
        if prog.modulus > 1:
            raise UnsupportedError(
                f"the program reads position marks (marks {prog.modulus}); they are not constant on runs of a letter, so "
                "there is no non-strict translation (non-strict masking captures the stutter-invariant star-free "
                "languages only, Thm 18)", field="program")
        for op in prog.ops:
            if isinstance(op, PositionOp) or op.mask in NONSTRICT_MASKS:
                self.ops.append(op)
            elif op.mask == "none":
                first, second = (("past_nonstrict", "future_nonstrict") if op.direction == "rightmost"
                                 else ("future_nonstrict", "past_nonstrict"))
                inner = self.emit(AttentionOp(self.fresh(op.name), op.direction, second, op.score, op.value, op.default))
                self.ops.append(AttentionOp(op.name, op.direction, first, op.score, op.value, inner))
            else:
                self.strict(op)
        return Program(prog.alphabet, tuple(self.ops), prog.output, prog.empty_accept, dict(prog.initial), 1)


def nonstrict_program(program: Program) -> Program:
    """The non-strict program P′ of ``program`` P: only masks ``j <= i`` / ``j >= i``, and
    P′.X(w, i) = P.X(d(w), b(i)) for every vector X, word w and position i (module docstring, (★)).

    So P′ accepts w ⇔ P accepts the destuttered word d(w): when P recognizes a stutter-invariant
    language, P′ recognizes the same language (*Masked Hard-Attention Transformers Recognize Exactly
    the Star-Free Languages*, Thm 18; Peled & Wilke 1997).

    Args:
        program: a B-RASP program without position marks (any masks and ties).

    Returns:
        A :class:`~langclass.core.logic.brasp_program.Program` with the same alphabet, initial
        vectors, output name and empty-word answer; a strict operation becomes 2 non-strict
        operations per assignment of its i-side vectors plus |Σ| shift operations per shifted vector.

    Raises:
        UnsupportedError: the program has position marks (``marks m``).
        LimitExceeded: ``max_nonstrict_i_variables`` — a strict operation reads more than
            :data:`MAX_I_VARIABLES` i-side vectors in its score and value.
    """
    return _Translator(program).run()
