"""Regex syntax: the AST, the LALR(1) grammar (lark), parsing with positioned errors, and rendering.

Steps 1–2 of the pipeline in :mod:`langclass.core.ingest.regex`: the text is NFC-normalized and parsed
into a small AST (:class:`Node`); syntax errors become :class:`RegexSyntaxError` with the 0-based
``position`` and every symbol is checked against the declared alphabet. The syntax is documented in
``docs/regex.md``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, RegexSyntaxError, UnknownSymbolError
from langclass.core.base.inputs import deepest_paren, first_surrogate, located, syntax_problem
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = ["Node", "parse_regex_ast", "RESERVED", "render"]

#: Characters with a meaning in the syntax; write ``\\c`` to use one of them as an alphabet symbol.
RESERVED = frozenset("|&~*+?{}(),.\\[]^$εϵ∅")
_EPSILONS = frozenset("εϵ")  # U+03B5 and the lunate U+03F5 both mean the empty word
_NOTHING = "∅"

# ---------------------------------------------------------------------------------------- AST


@dataclass(frozen=True, eq=True)
class Node:
    """A regex AST node.

    ``op`` is one of ``"sym"`` (``value`` = letter index), ``"any"`` (``.``), ``"eps"`` (ε),
    ``"empty"`` (∅), ``"union"``, ``"inter"``, ``"concat"`` (``children`` ≥ 2), ``"star"``,
    ``"plus"``, ``"opt"``, ``"compl"`` (one child), ``"repeat"`` (one child, ``value`` =
    ``(n, m)`` with ``m`` = ``None`` for ``{n,}``). ``pos`` is the 0-based offset in the
    NFC-normalized text (``-1`` for nodes built in code).
    """

    op: str
    children: tuple["Node", ...] = ()
    value: object = None
    pos: int = -1


# ------------------------------------------------------------------------------------- grammar

# Whitespace is ignored everywhere (also inside {n,m}). ``~`` binds tighter than concatenation and
# looser than the postfix operators: ``~ab`` = ``(~a)b`` and ``~a*`` = ``~(a*)``.
_GRAMMAR = r"""
?start: alt
?alt: inter ("|" inter)+  -> union
    | inter
?inter: concat ("&" concat)+ -> inter
    | concat
?concat: unary unary+ -> concat
    | unary
?unary: "~" unary -> compl
    | postfix
?postfix: postfix "*" -> star
    | postfix "+" -> plus
    | postfix "?" -> opt
    | postfix "{" NUMBER "}" -> rep_exact
    | postfix "{" NUMBER "," "}" -> rep_min
    | postfix "{" NUMBER "," NUMBER "}" -> rep_range
    | atom
?atom: SYMBOL -> sym
    | ESCAPED -> escaped
    | "." -> any
    | EPS -> eps
    | "(" ")" -> eps_parens
    | NOTHING -> empty
    | "(" alt ")"

NUMBER: /[0-9]+/
SYMBOL: /[^|&~*+?{}(),.\\\[\]^$εϵ∅\s]/
ESCAPED: /\\[|&~*+?{}(),.\\\[\]^$εϵ∅\s]/
EPS: /[εϵ]/
NOTHING: "∅"
%ignore /\s+/
"""

_PARSER = Lark(_GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)

_TOKEN_NAMES = {
    "VBAR": "'|'",
    "AMPERSAND": "'&'",
    "TILDE": "'~'",
    "STAR": "'*'",
    "PLUS": "'+'",
    "QMARK": "'?'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "COMMA": "','",
    "LPAR": "'('",
    "RPAR": "')'",
    "DOT": "'.'",
    "NUMBER": "a number",
    "SYMBOL": "a symbol",
    "ESCAPED": "an escaped symbol",
    "EPS": "'ε'",
    "NOTHING": "'∅'",
    "$END": "the end of the regex",
}


def _describe_expected(expected: Sequence[str] | set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(t, t) for t in expected})
    if len(names) > 6:
        return ""
    return " (expected " + ", ".join(names) + ")"


def _syntax_error(text: str, pos: int, detail: str) -> RegexSyntaxError:
    snippet = text[max(0, pos - 10) : pos + 10]
    return RegexSyntaxError(f"{detail} (position {pos}, near {snippet!r})", field="regex", **located(text, pos))


def _check_paren_depth(text: str, limits: Limits) -> None:
    """Raise LimitExceeded(max_nesting_depth) when parentheses nest deeper than allowed (escapes respected)."""
    bound = limits.max_nesting_depth
    i = deepest_paren(text, bound, escape="\\")
    if i is not None:
        raise _limit_with_position(
            "max_nesting_depth", bound, text, i, f"parentheses nest deeper than max_nesting_depth={bound} (at position {i})"
        )


def _unclosed_paren(text: str) -> int | None:
    """Position of the first '(' left open (escapes respected), or None."""
    stack: list[int] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            stack.pop()
        i += 1
    return stack[0] if stack else None


def _translate_lark_error(text: str, e: UnexpectedInput) -> RegexSyntaxError:
    """Turn a lark exception (read by :func:`langclass.core.base.inputs.syntax_problem`) into a
    RegexSyntaxError naming the problem and the position."""
    p = syntax_problem(text, e)
    if p.kind == "end":
        open_at = _unclosed_paren(text)
        if open_at is not None:
            return _syntax_error(text, len(text), f"missing ')' for the '(' opened at position {open_at}")
        expected = set(p.expected)
        stripped = text.rstrip()
        if expected & {"RBRACE", "NUMBER", "COMMA"}:
            brace = stripped.rfind("{")
            return _syntax_error(text, len(text), f"the bounded repetition opened at position {brace} is not closed with '}}'")
        if stripped and stripped[-1] in "|&~" and not stripped.endswith("\\" + stripped[-1]):
            return _syntax_error(
                text, len(text), f"operator {stripped[-1]!r} at the end is missing its right operand (write ε or () for the empty word)"
            )
        return _syntax_error(text, len(text), "the regex ends where an expression is expected" + _describe_expected(expected))
    pos = p.position
    c = p.char
    if p.kind == "character" or c in "[]^$\\":
        if c == "\\":
            nxt = text[pos + 1] if pos + 1 < len(text) else ""
            if not nxt:
                return _syntax_error(text, pos, "a backslash at the end of the regex escapes nothing")
            return _syntax_error(
                text,
                pos,
                f"unsupported escape '\\{nxt}': only reserved characters ({''.join(sorted(RESERVED))}) and whitespace can be "
                "escaped; there are no character classes such as \\d or \\w (list the symbols with '|')",
            )
        if c in "[]":
            return _syntax_error(text, pos, f"character classes '[...]' are not supported; write alternatives with '|' (e.g. (a|b|c))")
        if c in "^$":
            return _syntax_error(
                text, pos, f"anchor '{c}' is not supported: a regex always describes whole words (escape it as '\\{c}' if it is a symbol)"
            )
        if c.isdigit():
            return _syntax_error(text, pos, f"unexpected digit {c!r}: inside '{{…}}' write {{n}}, {{n,}} or {{n,m}}")
        return _syntax_error(text, pos, f"unexpected character {c!r}" + _describe_expected(p.expected))
    tname = p.token_type
    if tname in ("STAR", "PLUS", "QMARK", "LBRACE"):
        return _syntax_error(text, pos, f"operator {_TOKEN_NAMES[tname]} has nothing to repeat")
    if tname == "RPAR":
        if "RPAR" not in p.expected:
            prev = text[:pos].rstrip()
            if prev.endswith("|") or prev.endswith("&") or prev.endswith("~"):
                return _syntax_error(text, pos, f"operator {prev[-1]!r} is missing its right operand (write ε or () for the empty word)")
            return _syntax_error(text, pos, "unbalanced ')' without a matching '('")
    if tname in ("VBAR", "AMPERSAND"):
        return _syntax_error(
            text, pos, f"operator {_TOKEN_NAMES[tname]} is missing its left operand (write ε or () for the empty word)"
        )
    if tname == "COMMA" and "NUMBER" not in p.expected and "RBRACE" not in p.expected:
        return _syntax_error(
            text, pos, "a comma outside '{n,m}' is not a symbol: escape it as '\\,' to use ',' as a letter (see docs/regex.md)"
        )
    if tname == "RBRACE" or tname == "COMMA" or "NUMBER" in p.expected or "RBRACE" in p.expected:
        return _syntax_error(text, pos, f"malformed bounded repetition at {p.token!r}: write {{n}}, {{n,}} or {{n,m}} with decimal n, m")
    return _syntax_error(text, pos, f"unexpected {p.token!r}" + _describe_expected(p.expected))


def parse_regex_ast(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> Node:
    """Parse ``text`` (our documented syntax, see ``docs/regex.md``) into an AST over ``alphabet``.

    Args:
        text: the regex; NFC-normalized first, whitespace ignored.
        alphabet: the ordered alphabet, already normalized (see :func:`parse.normalize_alphabet`);
            every symbol must be a single character.

    Returns:
        the root :class:`Node`; ``sym`` nodes carry the letter index.

    Raises:
        RegexSyntaxError: malformed text (``extra['position']`` = 0-based offset).
        UnknownSymbolError: a symbol outside ``alphabet`` (``extra['position']``, ``extra['symbol']``).
        AlphabetError: an alphabet symbol longer than one character (use DFA JSON for those).
        LimitExceeded: ``max_regex_length``, ``max_nesting_depth`` or ``max_repetition``.
    """
    if not isinstance(text, str):
        raise RegexSyntaxError(f"the regex must be a string, not {type(text).__name__}", field="regex", **located("", 0))
    lone = first_surrogate(text)
    if lone is not None:
        raise RegexSyntaxError(
            f"the regex holds a lone UTF-16 surrogate U+{ord(text[lone]):04X} at position {lone}, which is not Unicode text",
            field="regex", **located(text, lone),
        )
    for i, s in enumerate(alphabet):
        if len(s) != 1:
            raise AlphabetError(
                f"alphabet symbol {s!r} has {len(s)} characters; symbols in a regex are single characters "
                "(give a language over multi-character symbols as a DFA JSON)",
                field=f"alphabet[{i}]",
                symbol=s,
            )
    limits.check("max_regex_length", len(text), field="regex")
    text = unicodedata.normalize("NFC", text)
    limits.check("max_regex_length", len(text), field="regex")
    _check_paren_depth(text, limits)
    if not text.strip():
        raise RegexSyntaxError("the regex is empty; write ε (or ()) for the empty word and ∅ for the empty language", field="regex", **located(text, 0))
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as e:
        raise _translate_lark_error(text, e) from None
    index = {s: i for i, s in enumerate(alphabet)}
    return _tree_to_ast(tree, text, index, alphabet, limits)


def _tree_to_ast(tree: Tree | Token, text: str, index: dict[str, int], alphabet: Sequence[str], limits: Limits) -> Node:
    """Convert the lark tree iteratively, checking symbols, repetition counts and nesting depth."""
    max_depth = limits.max_nesting_depth
    # explicit stack of (item, depth, visited?)
    stack: list[tuple[Tree | Token, int, bool]] = [(tree, 1, False)]
    out: list[Node] = []
    while stack:
        item, depth, visited = stack.pop()
        if max_depth is not None and depth > max_depth:
            pos = _pos(item)
            raise _limit_with_position("max_nesting_depth", max_depth, text, pos, f"the regex nests deeper than max_nesting_depth={max_depth} (at position {pos})")
        if isinstance(item, Token):
            out.append(_leaf(item, text, index, alphabet))
            continue
        data = item.data
        if data in ("sym", "escaped", "any", "eps", "eps_parens", "empty"):
            tok = item.children[0] if item.children else None
            pos = item.meta.start_pos if not item.meta.empty else -1
            out.append(_atom(data, tok, pos, text, index, alphabet))
            continue
        kids = [c for c in item.children if not (isinstance(c, Token) and c.type == "NUMBER")]
        if not visited:
            stack.append((item, depth, True))
            for c in reversed(kids):
                stack.append((c, depth + 1, False))
            continue
        k = len(kids)
        children = tuple(out[len(out) - k :])
        del out[len(out) - k :]
        pos = item.meta.start_pos if not item.meta.empty else -1
        if data in ("union", "inter", "concat"):
            out.append(Node(data, children, None, pos))
        elif data in ("star", "plus", "opt", "compl"):
            out.append(Node(data, children, None, pos))
        elif data in ("rep_exact", "rep_min", "rep_range"):
            nums = [c for c in item.children if isinstance(c, Token) and c.type == "NUMBER"]
            vals = []
            for t in nums:
                v = int(t) if len(t) <= 30 else 10**30
                if limits.max_repetition is not None and v > limits.max_repetition:
                    raise _limit_with_position(
                        "max_repetition",
                        limits.max_repetition,
                        text,
                        t.start_pos,
                        f"bounded repetition count {str(t)[:30]} exceeds max_repetition={limits.max_repetition} (at position {t.start_pos})",
                    )
                vals.append(v)
            if data == "rep_exact":
                n, m = vals[0], vals[0]
            elif data == "rep_min":
                n, m = vals[0], None
            else:
                n, m = vals
                if n > m:
                    raise _syntax_error(text, nums[0].start_pos, f"bounded repetition {{{n},{m}}} has n > m")
            out.append(Node("repeat", children, (n, m), pos))
        else:  # pragma: no cover - grammar and converter out of sync
            raise AssertionError(f"unknown rule {data}")
    assert len(out) == 1
    return out[0]


def _pos(item: Tree | Token) -> int:
    if isinstance(item, Token):
        return item.start_pos or 0
    return item.meta.start_pos if not item.meta.empty else 0


def _limit_with_position(limit: str, value: int, text: str, pos: int, detail: str):
    from langclass.core.base.errors import LimitExceeded

    err = LimitExceeded(limit, value, detail, field="regex")
    err.extra.update(located(text, pos))
    return err


def _leaf(tok: Token, text: str, index: dict[str, int], alphabet: Sequence[str]) -> Node:
    kind = {"SYMBOL": "sym", "ESCAPED": "escaped", "EPS": "eps", "NOTHING": "empty"}.get(tok.type)
    if kind is None:  # pragma: no cover
        raise AssertionError(f"unexpected token {tok.type}")
    return _atom(kind, tok, tok.start_pos, text, index, alphabet)


def _atom(kind: str, tok: Token | None, pos: int, text: str, index: dict[str, int], alphabet: Sequence[str]) -> Node:
    if kind in ("sym", "escaped"):
        assert tok is not None
        ch = str(tok)[-1]
        if ch not in index:
            shown = str(tok)
            raise UnknownSymbolError(
                f"symbol {ch!r} (written {shown!r} at position {pos}) is not in the alphabet {list(alphabet)}",
                field="regex",
                symbol=ch,
                **located(text, pos),
            )
        return Node("sym", (), index[ch], pos)
    if kind == "any":
        return Node("any", (), None, pos)
    if kind in ("eps", "eps_parens"):
        return Node("eps", (), None, pos)
    if kind == "empty":
        return Node("empty", (), None, pos)
    raise AssertionError(kind)  # pragma: no cover


# ------------------------------------------------------------------------------- traversal


def _postorder(root: Node) -> Iterator[Node]:
    """Nodes children-first, iteratively (no recursion limit)."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, visited = stack.pop()
        if visited or not node.children:
            yield node
            continue
        stack.append((node, True))
        for c in reversed(node.children):
            stack.append((c, False))


def _pop(stack: list, k: int) -> list:
    """Remove and return the last ``k`` items of ``stack`` (in order)."""
    if k == 0:
        return []
    items = stack[-k:]
    del stack[-k:]
    return items


def render(node: Node, alphabet: Sequence[str]) -> str:
    """Text of ``node`` in our syntax (fully parenthesized where needed); parsing it gives ``node`` back
    up to positions. Reserved characters in symbols are escaped."""
    out: list[str] = []  # value stack: shared sub-trees are fine
    for n in _postorder(node):
        cs = _pop(out, len(n.children))
        if n.op == "sym":
            s = alphabet[int(n.value)]  # type: ignore[arg-type]
            t = "\\" + s if (s in RESERVED or s.isspace()) else s
        elif n.op == "any":
            t = "."
        elif n.op == "eps":
            t = "ε"
        elif n.op == "empty":
            t = "∅"
        elif n.op == "union":
            t = "(" + "|".join(cs) + ")"
        elif n.op == "inter":
            t = "(" + "&".join(cs) + ")"
        elif n.op == "concat":
            t = "(" + "".join(cs) + ")"
        elif n.op == "star":
            t = "(" + cs[0] + ")*"
        elif n.op == "plus":
            t = "(" + cs[0] + ")+"
        elif n.op == "opt":
            t = "(" + cs[0] + ")?"
        elif n.op == "compl":
            t = "(~" + cs[0] + ")"
        elif n.op == "repeat":
            lo, hi = n.value  # type: ignore[misc]
            t = "(" + cs[0] + ")" + ("{%d}" % lo if hi == lo else "{%d,}" % lo if hi is None else "{%d,%d}" % (lo, hi))
        else:  # pragma: no cover
            raise AssertionError(n.op)
        out.append(t)
    return out[0]
