"""Boolean RASP (B-RASP): a text syntax, an interpreter, and the translation from LTL (the programs
as data are in :mod:`langclass.core.logic.brasp_program`, re-exported here).

Source: Yang, Chiang & Angluin, *Masked Hard-Attention Transformers Recognize Exactly the Star-Free
Languages*, §3.1 (definition), §3.2 (Dyck-1 of depth 2), Lemma 4 / Thm 3 (LTL → B-RASP).

A program runs on a non-empty word w = w_1 ⋯ w_n. Its data are Boolean vectors indexed by
positions i ∈ [1, n]; the initial vectors are ``Q_a`` (Q_a(i) ⇔ w_i = a) for each letter a. Each
line defines a new vector:

* position-wise: ``NAME := bexpr`` — a Boolean combination of earlier vectors at the same position i;
* attention: ``NAME := <j [M, S] V : D`` (leftmost, ◀) or ``NAME := >j [M, S] V : D`` (rightmost, ▶),
  with mask M ∈ {``1`` (none), ``j < i`` (future masking), ``j > i`` (past masking)} (non-strict
  ``j <= i`` / ``j >= i`` of §7.2 are accepted too), score predicate S(i, j) and value predicate
  V(i, j) Boolean combinations of ``X(i)`` and ``X(j)``, and default D(i) a combination of ``X(i)``.
  If no j satisfies M(i,j) ∧ S(i,j), the result at i is D(i); otherwise it is V(i, j_i) for the
  leftmost (◀) or rightmost (▶) such j.

Text syntax (one statement per line or separated by ``;``; ``#`` starts a comment)::

    P_l := >j [j < i, 1] Q_a(j) : 0        # predecessor is ℓ (here ℓ = a)
    I   := (Q_a & S_r) | (Q_b & P_l)        # bare names in position-wise lines mean X(i)
    Y   := >j [1, !C(j)] 0 : 1
    output Y                                # default: the last vector defined
    empty reject                            # acceptance of the empty word (default reject)

Boolean syntax: ``!`` / ``~`` / ``¬``, ``&`` / ``∧``, ``|`` / ``∨``, parentheses, constants ``0 1
true false``. Inside S and V every vector must carry ``(i)`` or ``(j)``; in D and position-wise lines
bare names and ``X(i)`` are allowed. Initial vectors are ``Q_<symbol>`` for word-character symbols
and ``Q("<symbol>")`` for any symbol. Names are defined once, before use.

Acceptance: w ∈ L ⇔ the output vector is true at the last position n (§3.1). B-RASP is defined on
Σ⁺; the empty word's membership is declared by ``empty accept|reject``.

Position marks (B-RASP[MOD], Thm 19 / Cor 20 of the source): a first statement ``marks m``
(2 ≤ m ≤ 1000) adds the initial vectors ``MOD_0 … MOD_{m−1}``, ``MOD_r(i)`` ⇔ i ≡ r (mod m) —
what a finite-image position embedding (i mod m) gives the transformer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from .brasp_program import (  # re-exported: the program as data
    MASKS,
    MAX_MARKS,
    SOURCE,
    AttentionOp,
    BAnd,
    BConst,
    BExpr,
    BNot,
    BOr,
    BVar,
    Op,
    PositionOp,
    Program,
    bexpr_eval,
    bexpr_text,
    bexpr_vars,
    mark_names,
)
from langclass.core.base.errors import AlphabetError, InputError, LimitExceeded, ProgramSyntaxError, UnknownSymbolError, UnsupportedError
from langclass.core.base.inputs import check_alphabet, located, syntax_problem
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "BVar", "BConst", "BNot", "BAnd", "BOr", "BExpr", "PositionOp", "AttentionOp", "Program",
    "parse_program", "run_program", "formula_to_brasp", "DYCK_1_DEPTH_2", "SOURCE", "MASKS", "Op",
    "bexpr_vars", "bexpr_eval", "bexpr_text",
]

# --------------------------------------------------------------------- parsing
_GRAMMAR = r"""
    start: _sep* (stmt _sep+)* stmt?
    _sep: NEWLINE | ";"
    stmt: NAME ASSIGN bexpr                                  -> posop
        | NAME ASSIGN DIR "[" mask "," bexpr "]" bexpr ":" bexpr -> attop
        | OUTPUT NAME                                        -> output
        | EMPTY EMPTYVAL                                     -> empty
        | MARKS INT                                          -> marks
    mask: ONE                                                -> nomask
        | JJ CMP II                                          -> cmpmask
    ?bexpr: bor
    ?bor: band | bor OR band                                 -> bor
    ?band: bnot | band AND bnot                              -> band
    ?bnot: NOT bnot                                          -> bneg
         | batom
    ?batom: "(" bexpr ")"
          | ONE                                              -> one
          | ZERO                                             -> zero
          | QSTR                                             -> qstr
          | NAME                                             -> var
          | NAME "(" SIDE ")"                                -> var_side
          | QSTR "(" SIDE ")"                                -> qstr_side

    ASSIGN: ":="
    DIR.3: /[<>◀▶]_?j/
    CMP: "<=" | ">=" | "<" | ">" | "≤" | "≥"
    OR: "|" | "∨"
    AND: "&" | "∧"
    NOT: "!" | "~" | "¬"
    ONE.2: /(1|true)(?!\w)/
    ZERO.2: /(0|false)(?!\w)/
    OUTPUT.2: /output(?!\w)/
    EMPTY.2: /empty(?!\w)/
    EMPTYVAL: /accept|reject/
    MARKS.2: /marks(?!\w)/
    INT: /[0-9]+/
    JJ.2: /j(?!\w)/
    II.2: /i(?!\w)/
    SIDE: "i" | "j"
    QSTR: /Q\("[^"]*"\)/
    NAME: /[^\W\d]\w*/
    NEWLINE: /(\r?\n)+/
    COMMENT: /#[^\n]*/
    %ignore COMMENT
    %ignore /[ \t\f]+/
"""

_PARSER = None
_RESERVED = {"output", "empty", "accept", "reject", "true", "false", "i", "j", "marks"}


def _parser():
    global _PARSER
    if _PARSER is None:
        from lark import Lark

        _PARSER = Lark(_GRAMMAR, parser="lalr", lexer="contextual")
    return _PARSER


def _initial_names(alphabet: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for a in alphabet:
        if re.fullmatch(r"\w+", a):
            out[f"Q_{a}"] = a
        out[f'Q("{a}")'] = a
    return out


def parse_program(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> Program:
    """Parse a B-RASP program (syntax in the module docstring).

    Raises:
        ProgramSyntaxError: bad syntax (``extra['position']``, ``line``, ``column``), an undefined or
            redefined name, a j-side read outside S/V, an unknown output.
        AlphabetError: bad alphabet. LimitExceeded: ``max_regex_length`` on the text.
    """
    from lark import Token, Tree
    from lark.exceptions import UnexpectedInput

    alpha = _alphabet(alphabet)
    if not isinstance(text, str):
        raise ProgramSyntaxError("the program must be a string", field="program")
    limits.check("max_regex_length", len(text))
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        p = syntax_problem(text, e)
        if p.kind == "character":
            detail = f"unexpected character {p.char!r} at line {p.line}, column {p.column}"
        elif p.kind == "end" and p.token_type is None:
            detail = f"the program ends too early at line {p.line}, column {p.column}"
        else:
            what = "end of program" if p.kind == "end" else repr(p.token)
            detail = f"unexpected {what} at line {p.line}, column {p.column}"
        raise ProgramSyntaxError(detail, field="program", **located(text, p.position)) from None

    initial = _initial_names(alpha)
    defined: set[str] = set(initial)
    ops: list[Op] = []
    output = None
    empty_accept = False
    modulus = 1

    def err(msg: str, tok) -> ProgramSyntaxError:
        at = located(text, tok.start_pos)
        return ProgramSyntaxError(f"{msg} (line {at['line']}, column {at['column']})", field="program", **at)

    def canon_name(tok: Token) -> str:
        if tok.type == "QSTR":
            sym = unicodedata.normalize("NFC", tok.value[3:-2])
            if sym not in alpha:
                raise UnknownSymbolError(f"Q(\"{sym}\") names a symbol outside the alphabet {list(alpha)} "
                                         f"(line {tok.line})", field="program", symbol=sym, **located(text, tok.start_pos))
            return f'Q("{sym}")'
        name = tok.value
        if name.startswith("Q_") and name not in initial and name[2:] and name not in defined:
            raise UnknownSymbolError(f"{name} names a symbol {name[2:]!r} outside the alphabet {list(alpha)} "
                                     f"(line {tok.line})", field="program", symbol=name[2:], **located(text, tok.start_pos))
        return name

    def conv(t, allow_j: bool, bare_side: str | None) -> BExpr:
        if isinstance(t, Token):  # pragma: no cover - all atoms are wrapped in rules
            raise err("unexpected token", t)
        r = t.data
        kids = [c for c in t.children if isinstance(c, Tree)]
        if r == "one":
            return BConst(True)
        if r == "zero":
            return BConst(False)
        if r in ("var", "qstr", "var_side", "qstr_side"):
            tok = t.children[0]
            name = canon_name(tok)
            if name in _RESERVED:
                raise err(f"{name!r} is a reserved word, not a vector", tok)
            if name not in defined:
                raise err(f"vector {name!r} is used before it is defined", tok)
            if r in ("var", "qstr"):
                if bare_side is None:
                    raise err(f"write {name}(i) or {name}(j) inside a score or value predicate", tok)
                side = bare_side
            else:
                side = t.children[1].value
            if side == "j" and not allow_j:
                raise err(f"{name}(j) may only appear in a score or value predicate", tok)
            return BVar(name, side)
        if r == "bneg":
            return BNot(conv(kids[0], allow_j, bare_side))
        if r in ("band", "bor"):
            args = []
            for k in kids:
                sub = conv(k, allow_j, bare_side)
                if type(sub) is (BAnd if r == "band" else BOr):
                    args.extend(sub.args)
                else:
                    args.append(sub)
            return BAnd(tuple(args)) if r == "band" else BOr(tuple(args))
        if r == "bexpr":  # pragma: no cover
            return conv(kids[0], allow_j, bare_side)
        raise ProgramSyntaxError(f"unexpected construct {r}", field="program")  # pragma: no cover

    for stmt in tree.children:
        if not isinstance(stmt, Tree):
            continue
        if stmt.data in ("posop", "attop"):
            name_tok = stmt.children[0]
            name = name_tok.value
            if name in _RESERVED:
                raise err(f"{name!r} is a reserved word", name_tok)
            if name in defined:
                raise err(f"vector {name!r} is defined twice (or shadows an initial vector)", name_tok)
            if stmt.data == "posop":
                ops.append(PositionOp(name, conv(stmt.children[2], False, "i")))
            else:
                dir_tok = stmt.children[2]
                direction = "leftmost" if dir_tok.value[0] in "<◀" else "rightmost"
                mask_tree = stmt.children[3]
                if mask_tree.data == "nomask":
                    mask = "none"
                else:
                    cmp = mask_tree.children[1].value.replace("≤", "<=").replace("≥", ">=")
                    mask = {"<": "future", ">": "past", "<=": "future_nonstrict", ">=": "past_nonstrict"}[cmp]
                score = conv(stmt.children[4], True, None)
                value = conv(stmt.children[5], True, None)
                default = conv(stmt.children[6], False, "i")
                ops.append(AttentionOp(name, direction, mask, score, value, default))
            defined.add(name)
        elif stmt.data == "output":
            tok = stmt.children[1]
            if tok.value not in defined:
                raise err(f"output vector {tok.value!r} is not defined", tok)
            output = tok.value
        elif stmt.data == "empty":
            empty_accept = stmt.children[1].value == "accept"
        elif stmt.data == "marks":
            tok = stmt.children[1]
            m = int(tok.value)
            if modulus != 1 or ops:
                raise err("'marks m' may appear once, before every definition", tok)
            if not 2 <= m <= MAX_MARKS:
                raise err(f"marks needs a modulus in [2, {MAX_MARKS}]", tok)
            clash = sorted(set(mark_names(m)) & defined)
            if clash:
                raise err(f"the mark vector {clash[0]} would shadow an initial vector", tok)
            modulus = m
            defined.update(mark_names(m))
    if not ops and output is None:
        raise ProgramSyntaxError("the program defines no vector", field="program", **located(text, 0))
    if output is None:
        output = ops[-1].name
    return Program(alpha, tuple(ops), output, empty_accept, initial, modulus)


def _alphabet(alphabet: Sequence[str]) -> tuple[str, ...]:
    """:func:`langclass.core.base.inputs.check_alphabet`, and no '"' in a symbol (the syntax quotes symbols)."""
    alpha = check_alphabet(alphabet)
    for i, s in enumerate(alpha):
        if '"' in s:
            raise AlphabetError(f"alphabet symbol {s!r} at index {i} holds '\"', which a B-RASP program cannot quote",
                                field=f"alphabet[{i}]", index=i)
    return alpha


# --------------------------------------------------------------------- interpreter
def _mask_matrix(mask: str, n: int) -> np.ndarray:
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return {"none": np.ones((n, n), dtype=bool), "future": j < i, "past": j > i,
            "future_nonstrict": j <= i, "past_nonstrict": j >= i}[mask]


def run_program(program: Program, words: np.ndarray, query_block: int | None = None) -> dict[str, np.ndarray]:
    """Run ``program`` on a batch of equal-length words.

    Args:
        words: ``int`` array ``[B, n]`` of letter indices into ``program.alphabet`` (n ≥ 1).
        query_block: evaluate each attention operation ``query_block`` positions i at a time (memory
            ``[B, query_block, n]`` instead of ``[B, n, n]``; the same result); None = all at once.

    Returns:
        ``{vector name: bool [B, n]}`` for every initial and defined vector.
    """
    w = np.asarray(words, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] < 1:
        raise InputError("B-RASP runs on non-empty words: words must be [batch, n] with n ≥ 1", field="words")
    B, n = w.shape
    idx = {s: k for k, s in enumerate(program.alphabet)}
    vals: dict[str, np.ndarray] = {name: (w == idx[sym]) for name, sym in program.initial.items()}
    pos = np.arange(1, n + 1)
    for name, r in program.marks.items():
        vals[name] = np.broadcast_to(pos % program.modulus == r, (B, n)).copy()
    for op in program.ops:
        if isinstance(op, PositionOp):
            v = bexpr_eval(op.expr, lambda name, side: vals[name])
            vals[op.name] = np.broadcast_to(np.asarray(v, dtype=bool), (B, n)).copy()
            continue
        if _rightmost_past_only(op):
            vals[op.name] = _rightmost_past(op, vals, B, n)
            continue

        default = np.broadcast_to(np.asarray(bexpr_eval(op.default, lambda name, side: vals[name]), dtype=bool), (B, n))
        mask = _mask_matrix(op.mask, n)
        result = np.empty((B, n), dtype=bool)
        step = n if query_block is None else max(1, int(query_block))
        for r0 in range(0, n, step):
            rows = slice(r0, min(n, r0 + step))
            m = rows.stop - rows.start

            def env(name, side, rows=rows):
                return vals[name][:, rows, None] if side == "i" else vals[name][:, None, :]

            ok = np.broadcast_to(np.asarray(bexpr_eval(op.score, env), dtype=bool), (B, m, n)) & mask[rows]
            value = np.broadcast_to(np.asarray(bexpr_eval(op.value, env), dtype=bool), (B, m, n))
            any_ok = ok.any(axis=2)
            if op.direction == "leftmost":
                jsel = np.argmax(ok, axis=2)
            else:
                jsel = n - 1 - np.argmax(ok[:, :, ::-1], axis=2)
            picked = np.take_along_axis(value, jsel[:, :, None], axis=2)[:, :, 0]
            result[:, rows] = np.where(any_ok, picked, default[:, rows])
        vals[op.name] = result
    return vals


def _rightmost_past_only(op: AttentionOp) -> bool:
    """A rightmost operation with mask j < i or j ≤ i whose score and value read only the key side
    (every operation of :func:`formula_to_brasp` and of the cascade programs)."""
    return (op.direction == "rightmost" and op.mask in ("future", "future_nonstrict")
            and all(side == "j" for _, side in bexpr_vars(op.score) | bexpr_vars(op.value)))


def _rightmost_past(op: AttentionOp, vals: dict[str, np.ndarray], B: int, n: int) -> np.ndarray:
    """:func:`run_program`'s result for a :func:`_rightmost_past_only` operation in O(B·n) instead of
    O(B·n²): the attended key of query i is the last j < i (j ≤ i) with S(j), a running maximum."""
    def env(name, side):
        return vals[name]

    score = np.broadcast_to(np.asarray(bexpr_eval(op.score, env), dtype=bool), (B, n))
    value = np.broadcast_to(np.asarray(bexpr_eval(op.value, env), dtype=bool), (B, n))
    default = np.broadcast_to(np.asarray(bexpr_eval(op.default, env), dtype=bool), (B, n))
    last = np.maximum.accumulate(np.where(score, np.arange(n)[None, :], -1), axis=1)  # last j ≤ i with S(j)
    if op.mask == "future":
        last = np.concatenate([np.full((B, 1), -1), last[:, :-1]], axis=1)  # last j < i
    picked = np.take_along_axis(value, np.maximum(last, 0), axis=1)
    return np.where(last >= 0, picked, default)


def accepts_batch(program: Program, words: np.ndarray) -> np.ndarray:
    """Acceptance (output vector at the last position; ``empty_accept`` for n = 0): bool ``[B]``."""
    w = np.asarray(words, dtype=np.int64)
    if w.shape[1] == 0:
        return np.full(w.shape[0], program.empty_accept)
    return run_program(program, w)[program.output][:, -1]


def accepts(program: Program, word: Sequence[str]) -> bool:
    """Membership of one word (sequence of symbols)."""
    idx = {s: k for k, s in enumerate(program.alphabet)}
    try:
        enc = [idx[s] for s in word]
    except KeyError as e:
        raise UnknownSymbolError(f"symbol {e.args[0]!r} is not in the alphabet", symbol=e.args[0]) from None
    return bool(accepts_batch(program, np.asarray([enc], dtype=np.int64).reshape(1, len(enc)))[0])


# --------------------------------------------------------------------- LTL → B-RASP
def formula_to_brasp(formula, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> Program:
    """Translate an LTL formula with P, Y, Y^k, S and MOD to a B-RASP program (future-masked ▶ only).

    Following Lemma 4 of *Masked Hard-Attention Transformers Recognize Exactly the Star-Free
    Languages*: ``P ψ := ▶_j[j<i, ψ(j)] 1 : 0``, ``Y ψ := ▶_j[j<i, 1] ψ(j) : 0`` and
    ``ψ1 S ψ2 := ▶_j[j<i, ψ2(j) ∨ ¬ψ1(j)] ψ2(j) : 0``. The formula is read at the readout position
    N + 1 (*Disentangling the Expressivity of RoPE*, Eq. 11) while a B-RASP program answers at the last
    position n = N, so the program ends with position-wise "readout" vectors R_ψ giving ψ at n + 1
    from values at n: R_a = 0, R_{Pψ} = Pψ ∨ ψ, R_{Yψ} = ψ, R_{Y^kψ} = Y^{k−1}ψ, R_{ψ1 S ψ2} = ψ2 ∨
    (ψ1 ∧ (ψ1 S ψ2)), Booleans pointwise. The empty word's membership is evaluated directly.

    MOD_m'^r becomes a disjunction of the program's position marks ``MOD_r''`` (r'' ≡ r mod m'; the
    program's modulus is the lcm of the formula's moduli), its readout the marks with r'' + 1 ≡ r:
    B-RASP[MOD] of Thm 19 / Cor 20 of the same paper, whose transformer takes the marks from a
    finite-image position embedding.

    Raises:
        LimitExceeded: the lcm of the moduli exceeds :data:`MAX_MARKS` (``max_marks``).
    """
    from . import formulas as F

    f, alpha = F._coerce(formula, alphabet, limits)
    alpha = _alphabet(alpha)
    modulus = 1
    for node in F.subformulas(f):
        if isinstance(node, F.Mod):
            modulus = modulus * node.m // math.gcd(modulus, node.m)
            if modulus > MAX_MARKS:
                raise LimitExceeded("max_marks", MAX_MARKS, f"the formula's MOD moduli have lcm > {MAX_MARKS}")
    marks = mark_names(modulus)

    def mod_expr(m: int, r: int) -> BExpr:
        """MOD_m^r (m | modulus) as a disjunction of the program's marks."""
        if modulus == 1:  # MOD_1^0
            return BConst(True)
        names = [name for name, rr in marks.items() if rr % m == r % m]
        return BVar(names[0], "i") if len(names) == 1 else BOr(tuple(BVar(n, "i") for n in names))
    initial = _initial_names(alpha)
    ops: list[Op] = []
    name_of: dict[object, str] = {}
    readout: dict[object, str] = {}
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def var(node, side="i") -> BVar:
        return BVar(name_of[node], side)

    def qname(sym: str) -> str:
        return f"Q_{sym}" if f"Q_{sym}" in initial else f'Q("{sym}")'

    nodes = F.subformulas(f)
    deadline = limits.deadline()
    # Y^k ψ is compiled as k nested Y's so that R_{Y^k ψ} = Y^{k−1} ψ exists as a vector
    for index, n in enumerate(nodes):
        if index % 512 == 0:
            deadline.check(f"formula → B-RASP (subformula {index} of {len(nodes)})")
        if isinstance(n, F.Atom):
            name_of[n] = qname(n.symbol)
            continue
        if isinstance(n, F.Top):
            expr: BExpr = BConst(True)
        elif isinstance(n, F.Bottom):
            expr = BConst(False)
        elif isinstance(n, F.Mod):
            expr = mod_expr(n.m, n.r)
        elif isinstance(n, F.Not):
            expr = BNot(var(n.arg))
        elif isinstance(n, F.And):
            expr = BAnd((var(n.left), var(n.right)))
        elif isinstance(n, F.Or):
            expr = BOr((var(n.left), var(n.right)))
        elif isinstance(n, F.Implies):
            expr = BOr((BNot(var(n.left)), var(n.right)))
        elif isinstance(n, F.Iff):
            expr = BOr((BAnd((var(n.left), var(n.right))), BAnd((BNot(var(n.left)), BNot(var(n.right))))))
        elif isinstance(n, F.Past):
            name = fresh("P")
            ops.append(AttentionOp(name, "rightmost", "future", var(n.arg, "j"), BConst(True), BConst(False)))
            name_of[n] = name
            continue
        elif isinstance(n, F.Yesterday):
            prev = name_of[n.arg]
            chain = []
            for _ in range(n.k):
                name = fresh("Y")
                ops.append(AttentionOp(name, "rightmost", "future", BConst(True), BVar(prev, "j"), BConst(False)))
                chain.append(prev)
                prev = name
            name_of[n] = prev
            readout[n] = chain[-1]  # Y^{k−1} ψ (ψ itself for k = 1)
            continue
        elif isinstance(n, F.Since):
            name = fresh("S")
            ops.append(AttentionOp(name, "rightmost", "future", BOr((var(n.right, "j"), BNot(var(n.left, "j")))),
                                   var(n.right, "j"), BConst(False)))
            name_of[n] = name
            continue
        else:  # pragma: no cover
            raise UnsupportedError(f"cannot translate {n!r}")
        name = fresh("B")
        ops.append(PositionOp(name, expr))
        name_of[n] = name
    # readout vectors: ψ at position n + 1 from values at n (constants folded, no vector for them)
    def bnot(e: BExpr) -> BExpr:
        return BConst(not e.value) if isinstance(e, BConst) else (e.arg if isinstance(e, BNot) else BNot(e))

    def band(*es: BExpr) -> BExpr:
        if any(isinstance(e, BConst) and not e.value for e in es):
            return BConst(False)
        rest = tuple(e for e in es if not isinstance(e, BConst))
        return BConst(True) if not rest else (rest[0] if len(rest) == 1 else BAnd(rest))

    def bor(*es: BExpr) -> BExpr:
        if any(isinstance(e, BConst) and e.value for e in es):
            return BConst(True)
        rest = tuple(e for e in es if not isinstance(e, BConst))
        return BConst(False) if not rest else (rest[0] if len(rest) == 1 else BOr(rest))

    rname: dict[object, BExpr] = {}
    for n in nodes:
        if isinstance(n, F.Atom) or isinstance(n, F.Bottom):
            e: BExpr = BConst(False)
        elif isinstance(n, F.Top):
            e = BConst(True)
        elif isinstance(n, F.Mod):
            e = mod_expr(n.m, n.r - 1)
        elif isinstance(n, F.Not):
            e = bnot(rname[n.arg])
        elif isinstance(n, F.And):
            e = band(rname[n.left], rname[n.right])
        elif isinstance(n, F.Or):
            e = bor(rname[n.left], rname[n.right])
        elif isinstance(n, F.Implies):
            e = bor(bnot(rname[n.left]), rname[n.right])
        elif isinstance(n, F.Iff):
            a, b = rname[n.left], rname[n.right]
            e = bor(band(a, b), band(bnot(a), bnot(b)))
        elif isinstance(n, F.Past):
            e = bor(var(n), var(n.arg))
        elif isinstance(n, F.Yesterday):
            e = BVar(readout[n], "i")
        elif isinstance(n, F.Since):
            e = bor(var(n.right), band(var(n.left), var(n)))
        else:  # pragma: no cover
            raise UnsupportedError(f"cannot translate {n!r}")
        if isinstance(e, (BConst, BVar)) and n is not f:
            rname[n] = e
            continue
        name = fresh("R")
        ops.append(PositionOp(name, e))
        rname[n] = BVar(name, "i")
    out = ops[-1].name
    empty = F.evaluate(f, [], alpha)
    return Program(alpha, tuple(ops), out, bool(empty), initial, modulus)


DYCK_1_DEPTH_2 = """\
# Dyck-1 of depth 2 (L_{1,2}), Yang, Chiang & Angluin, Masked Hard-Attention Transformers ..., §3.2
# with the left bracket ℓ = a and the right bracket r = b
P_l := >j [j < i, 1] Q_a(j) : 0          # the predecessor is ℓ
S_r := <j [j > i, 1] Q_b(j) : 0          # the successor is r
I   := (Q_a & S_r) | (Q_b & P_l)         # i is in an immediately matched pair ℓr
B_l := >j [j < i, !I(j)] Q_a(j) : 0      # the preceding not-immediately-matched symbol is ℓ
A_r := <j [j > i, !I(j)] Q_b(j) : 0      # the following not-immediately-matched symbol is r
C   := I | (Q_a & A_r) | (Q_b & B_l)
Y   := >j [1, !C(j)] 0 : 1               # C holds everywhere
output Y
empty accept
"""
"""The B-RASP program for Dyck-1 of depth 2 over {a, b} (a = ℓ, b = r), §3.2 of the source."""
