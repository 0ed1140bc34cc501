"""Regular expressions over an explicit alphabet → canonical minimal complete DFA.

The syntax is documented in ``docs/regex.md`` (one syntax, textbook operators plus ``&`` and ``~``).
Pipeline:

1. the text is NFC-normalized and parsed with a LALR(1) grammar (lark) into a small AST
   (:class:`Node`); syntax errors become :class:`RegexSyntaxError` with the 0-based ``position``;
2. every symbol is checked against the declared alphabet (:class:`UnknownSymbolError`, never a
   silent alphabet extension);
3. the AST is compiled to a Thompson ε-NFA (K. Thompson, "Regular expression search algorithm",
   CACM 1968); ``&`` and ``~`` sub-expressions are first determinized, minimized and combined by
   the DFA product / complement, then embedded back into the NFA;
4. the subset construction (Rabin & Scott, "Finite automata and their decision problems", 1959)
   yields a complete DFA (the empty set is the sink), which :meth:`DFA.canonical` minimizes
   (Hopcroft 1971) and numbers breadth-first.

Every step is bounded by :class:`~langclass.core.limits.Limits`: ``max_regex_length``,
``max_nesting_depth``, ``max_repetition``, ``max_states`` (NFA size after expanding bounded
repetitions, every intermediate DFA, products) and ``time_limit_s`` (via a :class:`Deadline`).
All compilation is iterative, so deep nesting never hits Python's recursion limit.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from .automaton import DFA
from .errors import AlphabetError, RegexSyntaxError, UnknownSymbolError
from .inputs import deepest_paren, first_surrogate, syntax_problem
from .limits import DEFAULT_LIMITS, Deadline, Limits

__all__ = ["Node", "parse_regex_ast", "compile_regex", "regex_to_dfa", "RESERVED", "render"]

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
    return RegexSyntaxError(f"{detail} (position {pos}, near {snippet!r})", field="regex", position=pos)


def _check_paren_depth(text: str, limits: Limits) -> None:
    """Raise LimitExceeded(max_nesting_depth) when parentheses nest deeper than allowed (escapes respected)."""
    bound = limits.max_nesting_depth
    i = deepest_paren(text, bound, escape="\\")
    if i is not None:
        raise _limit_with_position(
            "max_nesting_depth", bound, i, f"parentheses nest deeper than max_nesting_depth={bound} (at position {i})"
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
    """Turn a lark exception (read by :func:`langclass.core.inputs.syntax_problem`) into a
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
        raise RegexSyntaxError(f"the regex must be a string, not {type(text).__name__}", field="regex", position=0)
    lone = first_surrogate(text)
    if lone is not None:
        raise RegexSyntaxError(
            f"the regex holds a lone UTF-16 surrogate U+{ord(text[lone]):04X} at position {lone}, which is not Unicode text",
            field="regex", position=lone,
        )
    for i, s in enumerate(alphabet):
        if len(s) != 1:
            raise AlphabetError(
                f"alphabet symbol {s!r} has {len(s)} characters; symbols in a regex are single characters "
                "(give a language over multi-character symbols as a DFA JSON)",
                field=f"alphabet[{i}]",
                symbol=s,
            )
    limits.check("max_regex_length", len(text))
    text = unicodedata.normalize("NFC", text)
    limits.check("max_regex_length", len(text))
    _check_paren_depth(text, limits)
    if not text.strip():
        raise RegexSyntaxError("the regex is empty; write ε (or ()) for the empty word and ∅ for the empty language", field="regex", position=0)
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
            raise _limit_with_position("max_nesting_depth", max_depth, pos, f"the regex nests deeper than max_nesting_depth={max_depth} (at position {pos})")
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


def _limit_with_position(limit: str, value: int, pos: int, detail: str):
    from .errors import LimitExceeded

    err = LimitExceeded(limit, value, detail, field="regex")
    err.extra["position"] = pos
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
                position=pos,
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


# ------------------------------------------------------------------------------ NFA builder


class _NFA:
    """Thompson ε-NFA under construction: states are ints; a fragment is (start, end, lo) where the
    fragment's states are exactly ``lo..(current size-1)`` at the time it was finished."""

    __slots__ = ("eps", "trans", "k", "max_states")

    def __init__(self, k: int, max_states: int | None) -> None:
        self.eps: list[list[int]] = []
        self.trans: list[list[tuple[int, int]]] = []
        self.k = k
        self.max_states = max_states

    def new(self) -> int:
        self.eps.append([])
        self.trans.append([])
        if self.max_states is not None and len(self.eps) > 4 * self.max_states + 16:
            from .errors import LimitExceeded

            raise LimitExceeded(
                "max_states",
                self.max_states,
                f"the regex expands to more than {4 * self.max_states} NFA states (max_states={self.max_states})",
                field="regex",
            )
        return len(self.eps) - 1

    def copy(self, frag: tuple[int, int, int], hi: int) -> tuple[int, int, int]:
        """A fresh copy of a finished fragment whose states are exactly ``lo..hi-1``."""
        start, end, lo = frag
        base = len(self.eps)
        off = base - lo
        for s in range(lo, hi):
            self.new()
        for s in range(lo, hi):
            self.eps[s + off] = [t + off for t in self.eps[s]]
            self.trans[s + off] = [(a, t + off) for a, t in self.trans[s]]
        return start + off, end + off, base


def _nfa_size_estimate(root: Node, k: int) -> int:
    """Upper bound on Thompson NFA states, bounded repetitions expanded (exact ints, no overflow risk)."""
    size: list[int] = []
    for n in _postorder(root):
        cs = _pop(size, len(n.children))
        if n.op in ("sym", "any", "eps", "empty"):
            s = 2
        elif n.op in ("union", "inter", "concat"):
            s = sum(cs) + 2
        elif n.op in ("star", "plus", "opt", "compl"):
            s = cs[0] + 2
        elif n.op == "repeat":
            lo, hi = n.value  # type: ignore[misc]
            copies = (lo + 1) if hi is None else max(hi, 1)
            s = cs[0] * copies + 2 * copies + 2
        else:  # pragma: no cover
            raise AssertionError(n.op)
        size.append(s)
    return size[0]


def compile_regex(root: Node, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> DFA:
    """Compile an AST to a complete DFA (not yet minimized; the caller canonicalizes).

    Raises:
        LimitExceeded: ``max_states`` (NFA after expansion, any DFA, any product) or
            ``time_limit_s`` (:class:`TimeLimitExceeded`).
    """
    deadline = deadline or limits.deadline()
    k = len(alphabet)
    if limits.max_states is not None:
        est = _nfa_size_estimate(root, k)
        if est > 4 * limits.max_states:
            from .errors import LimitExceeded

            raise LimitExceeded(
                "max_states",
                limits.max_states,
                f"the regex expands (bounded repetitions written out) to about {est} NFA states, more than "
                f"4·max_states={4 * limits.max_states}",
                field="regex",
            )
    nfa = _NFA(k, limits.max_states)
    frags: list[tuple[int, int, int]] = []
    for n in _postorder(root):
        deadline.check("regex compilation")
        cs = _pop(frags, len(n.children))
        lo = cs[0][2] if cs else len(nfa.eps)
        op = n.op
        if op in ("sym", "any", "empty"):
            s, e = nfa.new(), nfa.new()
            if op == "sym":
                nfa.trans[s].append((int(n.value), e))  # type: ignore[arg-type]
            elif op == "any":
                nfa.trans[s].extend((a, e) for a in range(k))
            frag = (s, e, lo)
        elif op == "eps":
            s = nfa.new()
            frag = (s, s, lo)
        elif op == "concat":
            for (s1, e1, _), (s2, e2, _) in zip(cs, cs[1:]):
                nfa.eps[e1].append(s2)
            frag = (cs[0][0], cs[-1][1], lo)
        elif op == "union":
            s, e = nfa.new(), nfa.new()
            for cs_, ce_, _ in cs:
                nfa.eps[s].append(cs_)
                nfa.eps[ce_].append(e)
            frag = (s, e, lo)
        elif op in ("star", "plus", "opt"):
            (cs_, ce_, _), = cs
            s, e = nfa.new(), nfa.new()
            nfa.eps[s].append(cs_)
            nfa.eps[ce_].append(e)
            if op in ("star", "plus"):
                nfa.eps[ce_].append(cs_)
            if op in ("star", "opt"):
                nfa.eps[s].append(e)
            frag = (s, e, lo)
        elif op == "repeat":
            nlo, nhi = n.value  # type: ignore[misc]
            base = cs[0]
            pieces: list[tuple[int, int, int]] = []
            copies_needed = nlo + (1 if nhi is None else nhi - nlo)
            base_hi = len(nfa.eps)
            for i in range(copies_needed):
                pieces.append(base if i == 0 else nfa.copy(base, base_hi))
            s, e = nfa.new(), nfa.new()
            if copies_needed == 0:  # X{0} = X{0,0} = {ε}: the copy of X is dropped
                nfa.eps[s].append(e)
            else:
                nfa.eps[s].append(pieces[0][0])
                for (s1, e1, _), (s2, e2, _) in zip(pieces, pieces[1:]):
                    nfa.eps[e1].append(s2)
                nfa.eps[pieces[-1][1]].append(e)
                if nlo == 0:
                    nfa.eps[s].append(e)
                if nhi is None:  # last copy starred: X{n,} = X^n X*  (n ≥ 1 here, or X{0,} = X*)
                    ls, le, _ = pieces[-1]
                    nfa.eps[le].append(ls)
                    if nlo > 0:
                        # pieces[-1] is the (n+1)-th copy and must be optional
                        prev_end = pieces[-2][1] if len(pieces) >= 2 else s
                        nfa.eps[prev_end].append(e)
                else:
                    # copies nlo+1..nhi are optional: from the end of copy i (i ≥ nlo) one may jump to e
                    for i in range(max(nlo, 1), nhi):
                        nfa.eps[pieces[i - 1][1]].append(e)
            frag = (s, e, lo)
        elif op in ("inter", "compl"):
            dfas = [_determinize(nfa, c[0], c[1], k, alphabet, limits, deadline).canonical() for c in cs]
            if op == "compl":
                d = dfas[0].complement()
            else:
                d = dfas[0]
                for other in dfas[1:]:
                    d = d.product(other, "and", limits=limits).canonical()
            frag = _embed(nfa, d, lo)
        else:  # pragma: no cover
            raise AssertionError(op)
        frags.append(frag)
    s, e, _ = frags[0]
    return _determinize(nfa, s, e, k, alphabet, limits, deadline)


def _embed(nfa: _NFA, d: DFA, lo: int) -> tuple[int, int, int]:
    """Add the useful part of DFA ``d`` (states that can reach acceptance) as an NFA fragment."""
    d = d.canonical()
    t = d.transitions
    n = d.num_states
    # co-reachable states (can reach an accepting state)
    alive = d.accepting.copy()
    rev: list[list[int]] = [[] for _ in range(n)]
    for q, row in enumerate(t.tolist()):
        for r in row:
            rev[r].append(q)
    stack = [int(q) for q in np.flatnonzero(alive)]
    while stack:
        r = stack.pop()
        for q in rev[r]:
            if not alive[q]:
                alive[q] = True
                stack.append(q)
    ids = {}
    for q in range(n):
        ids[q] = nfa.new()
    e = nfa.new()
    tl = t.tolist()
    for q in range(n):
        if not alive[q]:
            continue
        for a, r in enumerate(tl[q]):
            if alive[r]:
                nfa.trans[ids[q]].append((a, ids[r]))
        if d.accepting[q]:
            nfa.eps[ids[q]].append(e)
    return ids[d.initial], e, lo


_CHUNK = 12
_CHUNK_MASK = (1 << _CHUNK) - 1


def _determinize(nfa: _NFA, start: int, final: int, k: int, alphabet: Sequence[str], limits: Limits, deadline: Deadline) -> DFA:
    """Subset construction on the part of ``nfa`` reachable from ``start`` with accepting state ``final``.

    Subsets are restricted to *important* NFA states (with a letter transition, or ``final``), encoded
    as Python-int bitmasks; the empty subset is the sink. Raises LimitExceeded(``max_states``).
    """
    eps, trans = nfa.eps, nfa.trans
    bit: dict[int, int] = {}  # important NFA state -> bit index
    closure_memo: dict[int, int] = {}

    def closure(s0: int) -> int:
        m = closure_memo.get(s0)
        if m is not None:
            return m
        seen = {s0}
        stack = [s0]
        mask = 0
        while stack:
            s = stack.pop()
            if trans[s] or s == final:
                b = bit.get(s)
                if b is None:
                    b = bit[s] = len(bit)
                    members.append(s)
                mask |= 1 << b
            for t in eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        closure_memo[s0] = mask
        return mask

    members: list[int] = []  # bit index -> NFA state
    succ: list[list[tuple[int, int]] | None] = []  # bit index -> [(letter, closure mask)]

    def successors(b: int) -> list[tuple[int, int]]:
        while len(succ) <= b:
            succ.append(None)
        v = succ[b]
        if v is None:
            acc: dict[int, int] = {}
            for a, t in trans[members[b]]:
                acc[a] = acc.get(a, 0) | closure(t)
            v = succ[b] = list(acc.items())
        return v

    chunk_cache: list[dict[int, list[tuple[int, int]]]] = []
    start_mask = closure(start)
    index: dict[int, int] = {start_mask: 0}
    order = [start_mask]
    rows: list[list[int]] = []
    max_states = limits.max_states
    head = 0
    while head < len(order):
        if head & 1023 == 0:
            deadline.check("subset construction")
        S = order[head]
        head += 1
        nxt = [0] * k
        m = S
        while m:
            # take the 12-bit chunk holding the lowest set bit; its successor masks are memoized
            low = m & -m
            c = (low.bit_length() - 1) // _CHUNK
            shift = c * _CHUNK
            v = (m >> shift) & _CHUNK_MASK
            m &= ~(_CHUNK_MASK << shift)
            while len(chunk_cache) <= c:
                chunk_cache.append({})
            cached = chunk_cache[c].get(v)
            if cached is None:
                acc_masks: dict[int, int] = {}
                w = v
                while w:
                    lw = w & -w
                    b = shift + lw.bit_length() - 1
                    w ^= lw
                    for a, mask in successors(b):
                        acc_masks[a] = acc_masks.get(a, 0) | mask
                cached = chunk_cache[c][v] = list(acc_masks.items())
            for a, mask in cached:
                nxt[a] |= mask
        row = []
        for T in nxt:
            j = index.get(T)
            if j is None:
                j = index[T] = len(order)
                order.append(T)
                if max_states is not None and len(order) > max_states:
                    from .errors import LimitExceeded

                    raise LimitExceeded(
                        "max_states",
                        max_states,
                        f"determinization produced more than max_states={max_states} DFA states",
                        field="regex",
                    )
            row.append(j)
        rows.append(row)
    fbit = bit.get(final)
    if fbit is None:
        acc = np.zeros(len(order), dtype=bool)
    else:
        acc = np.fromiter(((S >> fbit) & 1 for S in order), dtype=bool, count=len(order))
    return DFA(tuple(alphabet), np.asarray(rows, dtype=np.int32).reshape(len(order), k), 0, acc)


def regex_to_dfa(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> DFA:
    """Parse and compile ``text`` over the (normalized) ``alphabet``; returns the canonical minimal complete DFA."""
    deadline = deadline or limits.deadline()
    root = parse_regex_ast(text, alphabet, limits)
    dfa = compile_regex(root, alphabet, limits, deadline)
    deadline.check("minimization")
    return dfa.canonical()
