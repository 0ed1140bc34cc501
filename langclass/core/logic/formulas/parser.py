"""The formula text syntax (lark, LALR(1)): parsing with positions in errors, and formulas from JSON.

See :mod:`langclass.core.logic.formulas` for the grammar.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Union

from langclass.core.base.errors import AlphabetError, FormulaSyntaxError, InputError, LimitExceeded, UnknownSymbolError
from langclass.core.base.inputs import check_alphabet, deepest_paren, located, syntax_problem
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .syntax import (
    BOTTOM, TOP, And, Atom, Formula, Iff, Implies, Mod, Not, Or, Past, Since, Yesterday, conj, disj, operators, past,
    subformulas,
)

__all__ = ["parse_formula", "formula_from_mapping"]

# ------------------------------------------------------------------ parsing
_GRAMMAR = r"""
    start: iff
    ?iff: imp
        | imp IFF imp                -> iff
    ?imp: disj
        | disj IMP imp               -> implies
    ?disj: conj
         | disj OR conj              -> or_
    ?conj: since
         | conj AND since            -> and_
    ?since: unary
          | unary SINCE since        -> since
    ?unary: NOT unary                -> not_
          | PAST unary               -> past
          | YEST unary               -> yest
          | atom
    ?atom: LPAR iff RPAR             -> paren
         | TRUE                      -> true
         | FALSE                     -> false
         | MODKW LPAR INT COMMA INT RPAR -> mod
         | MODSUB                    -> modsub
         | SYMBOL                    -> symbol
         | STRING                    -> symbol

    IFF.3: "<->" | "↔"
    IMP.3: "->" | "→"
    OR.3: "|" | "∨"
    AND.3: "&" | "∧"
    NOT.3: "!" | "~" | "¬"
    LPAR: "("
    RPAR: ")"
    COMMA: ","
    SINCE.2: /S(?!\w)/
    PAST.2: /P(?!\w)/
    YEST.2: /Y(\^[0-9]+)?(?!\w)/
    TRUE.2: /(true|⊤)(?!\w)/
    FALSE.2: /(false|⊥)(?!\w)/
    MODKW.2: /MOD(?!\w)/
    MODSUB.2: /MOD_[0-9]+\^[0-9]+(?!\w)/
    INT.1: /[0-9]+/
    SYMBOL.0: /\w+/
    STRING: /"[^"]*"/ | /'[^']*'/
    %import common.WS
    %ignore WS
"""

_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        from lark import Lark

        _PARSER = Lark(_GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=False, maybe_placeholders=False)
    return _PARSER


_TOKEN_DESCRIPTIONS = {
    "IFF": "'<->'", "IMP": "'->'", "OR": "'|'", "AND": "'&'", "NOT": "'!'", "LPAR": "'('", "RPAR": "')'",
    "COMMA": "','", "SINCE": "'S'", "PAST": "'P'", "YEST": "'Y'", "TRUE": "'true'", "FALSE": "'false'",
    "MODKW": "'MOD'", "MODSUB": "'MOD_m^r'", "INT": "an integer", "SYMBOL": "a symbol", "STRING": "a quoted symbol",
    "$END": "end of formula",
}


def _describe_expected(expected: Iterable[str]) -> str:
    names = sorted({_TOKEN_DESCRIPTIONS.get(e, e) for e in expected})
    if not names:
        return ""
    if len(names) > 6:
        names = names[:6] + ["…"]
    return "; expected " + ", ".join(names)


def parse_formula(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> Formula:
    """Parse an LTL formula over ``alphabet`` (syntax and semantics in the module docstring).

    Args:
        text: the formula, e.g. ``"P(b & Y a)"``, ``"MOD(2,1) -> a"``, ``"a S b"``, ``"Y^3 a"``.
        alphabet: the symbols Σ (non-empty, distinct, non-empty strings).
        limits: ``max_regex_length`` bounds the text length, ``max_nesting_depth`` the nesting of
            parentheses and operators, ``max_repetition`` the modulus m of MOD and the offset k of Y^k.

    Returns:
        The :class:`Formula` AST.

    Raises:
        FormulaSyntaxError: the text does not follow the syntax; ``extra`` has ``position``
            (0-based offset), ``line`` and ``column``.
        UnknownSymbolError: a symbol outside ``alphabet`` (with its ``position``).
        AlphabetError: an empty alphabet or a bad symbol.
        LimitExceeded: ``max_regex_length``, ``max_nesting_depth``, ``max_repetition`` or ``max_alphabet``.

    Example:
        >>> parse_formula("P(b & Y a)", ["a", "b"]).text()
        'P (b & Y a)'
    """
    from lark import Token, Tree
    from lark.exceptions import UnexpectedInput

    alpha = check_alphabet(alphabet, limits)
    if not isinstance(text, str):
        raise FormulaSyntaxError("the formula must be a string", field="formula")
    # NFC first (as for regexes): a decomposed symbol such as "e\u0301" is one letter "é";
    # error positions refer to the normalized text.
    text = unicodedata.normalize("NFC", text)
    limits.check("max_regex_length", len(text), field="formula")
    if not text.strip():
        raise FormulaSyntaxError("the formula is empty (position 0)", field="formula", **located(text, 0))
    if deepest_paren(text, limits.max_nesting_depth) is not None:
        raise LimitExceeded("max_nesting_depth", limits.max_nesting_depth,
                            f"the formula nests parentheses deeper than max_nesting_depth={limits.max_nesting_depth}",
                            field="formula")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        p = syntax_problem(text, e)
        if p.kind == "character":
            raise FormulaSyntaxError(
                f"unexpected character {p.char!r} at position {p.position} (line {p.line}, column {p.column})"
                + _describe_expected(p.expected),
                field="formula", **located(text, p.position),
            ) from None
        what = "the formula ends too early" if p.kind == "end" else f"unexpected {p.token!r}"
        raise FormulaSyntaxError(
            f"{what} at position {p.position}" + _describe_expected(p.expected),
            field="formula", **located(text, p.position),
        ) from None

    # iterative conversion (no recursion on deep inputs); operator depth limited as well
    index = {s: s for s in alpha}

    def symbol_of(tok: Token) -> Formula:
        s = tok.value
        if tok.type == "STRING":
            s = s[1:-1]
            if not s:
                raise FormulaSyntaxError(f"empty quoted symbol at position {tok.start_pos}", field="formula",
                                         **located(text, tok.start_pos))
        import unicodedata

        s = unicodedata.normalize("NFC", s)
        if s not in index:
            hint = ""
            if tok.type == "SYMBOL" and len(s) > 1 and s[0] in "PY" and s[1:] in index:
                hint = f" (write '{s[0]} {s[1:]}' for the operator {s[0]} applied to {s[1:]!r})"
            raise UnknownSymbolError(
                f"symbol {s!r} at position {tok.start_pos} is not in the alphabet {list(alpha)}{hint}",
                field="formula", symbol=s, **located(text, tok.start_pos),
            )
        return Atom(s)

    def int_of(tok: Token, what: str, minimum: int) -> int:
        v = int(tok.value)
        if v < minimum:
            raise FormulaSyntaxError(f"{what} must be ≥ {minimum}, got {v} at position {tok.start_pos}",
                                     field="formula", **located(text, tok.start_pos))
        if v > limits.max_repetition:
            err = LimitExceeded("max_repetition", limits.max_repetition,
                                f"{what} {v} at position {tok.start_pos} exceeds max_repetition={limits.max_repetition}",
                                field="formula")
            err.extra.update(located(text, tok.start_pos))
            raise err
        return v

    def mod_of(m: int, r: int) -> Formula:
        return TOP if m == 1 else Mod(m, r % m)

    results: dict[int, Formula] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[object, bool]] = [(tree.children[0], False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, Token):
            if node.type in ("SYMBOL", "STRING"):
                results[id(node)] = symbol_of(node)
                depth[id(node)] = 1
            continue
        assert isinstance(node, Tree)
        if not done:
            stack.append((node, True))
            for c in node.children:
                if isinstance(c, Tree) or (isinstance(c, Token) and c.type in ("SYMBOL", "STRING")):
                    stack.append((c, False))
            continue
        kids = [c for c in node.children if isinstance(c, Tree) or (isinstance(c, Token) and c.type in ("SYMBOL", "STRING"))]
        sub = [results[id(c)] for c in kids]
        d = 1 + max((depth[id(c)] for c in kids), default=0)
        if d > limits.max_nesting_depth + 1:
            raise LimitExceeded("max_nesting_depth", limits.max_nesting_depth,
                                f"the formula nests operators deeper than max_nesting_depth={limits.max_nesting_depth}",
                                field="formula")
        rule = node.data
        toks = [c for c in node.children if isinstance(c, Token)]
        if rule == "symbol":
            out = symbol_of(node.children[0])
        elif rule == "true":
            out = TOP
        elif rule == "false":
            out = BOTTOM
        elif rule == "paren":
            out = sub[0]
        elif rule == "mod":
            ints = [t for t in toks if t.type == "INT"]
            m = int_of(ints[0], "the modulus m of MOD(m, r)", 1)
            r = int(ints[1].value)
            out = mod_of(m, r)
        elif rule == "modsub":
            tok = node.children[0]
            mm = re.match(r"MOD_([0-9]+)\^([0-9]+)", tok.value)
            m = int_of(Token("INT", mm.group(1), start_pos=tok.start_pos), "the modulus m of MOD_m^r", 1)
            out = mod_of(m, int(mm.group(2)))
        elif rule == "not_":
            out = Not(sub[0])
        elif rule == "past":
            out = Past(sub[0])
        elif rule == "yest":
            tok = node.children[0]
            k = 1
            if "^" in tok.value:
                k = int_of(Token("INT", tok.value.split("^")[1], start_pos=tok.start_pos), "the offset k of Y^k", 1)
            out = Yesterday(sub[0], k)
        elif rule == "and_":
            out = And(sub[0], sub[1])
        elif rule == "or_":
            out = Or(sub[0], sub[1])
        elif rule == "implies":
            out = Implies(sub[0], sub[1])
        elif rule == "iff":
            out = Iff(sub[0], sub[1])
        elif rule == "since":
            out = Since(sub[0], sub[1])
        else:  # pragma: no cover
            raise FormulaSyntaxError(f"unknown construct {rule}", field="formula", **located(text, 0))
        results[id(node)] = out
        depth[id(node)] = d
    return results[id(tree.children[0])]


def _check_alphabet(alphabet: Sequence[str]) -> tuple[str, ...]:
    return check_alphabet(alphabet)


def _coerce(formula: Union[str, Formula], alphabet: Sequence[str], limits: Limits) -> tuple[Formula, tuple[str, ...]]:
    alpha = _check_alphabet(alphabet)
    if isinstance(formula, Formula):
        for n in subformulas(formula):
            if isinstance(n, Atom) and n.symbol not in alpha:
                raise UnknownSymbolError(f"symbol {n.symbol!r} is not in the alphabet {list(alpha)}",
                                         field="formula", symbol=n.symbol)
        return formula, alpha
    return parse_formula(formula, alpha, limits), alpha


def formula_from_mapping(data: Mapping, limits: Limits = DEFAULT_LIMITS) -> tuple[Formula, tuple[str, ...]]:
    """Read ``{"formula": text, "alphabet": [...]}`` (the formula input format of the API).

    Raises:
        InputError: a missing or non-string ``formula``; the errors of :func:`parse_formula`.
    """
    if not isinstance(data, Mapping) or "formula" not in data:
        raise InputError("expected an object with 'formula' and 'alphabet'", field="formula")
    if "alphabet" not in data:
        raise AlphabetError("missing 'alphabet'", field="alphabet")
    alpha = _check_alphabet(data["alphabet"])
    return parse_formula(data["formula"], alpha, limits), alpha
