"""Rules every parser applies to user text: alphabets, nesting depth, and lark syntax errors.

One place for what the regex, formula, B-RASP and DFA JSON parsers (and the DFA constructor) accept:

* an **alphabet** is a non-empty list (any sequence) of distinct non-empty strings; each symbol is
  put in Unicode NFC, may not hold a lone UTF-16 surrogate (U+D800–U+DFFF, valid in JSON escapes
  but not Unicode text) or NUL (U+0000, which PostgreSQL text cannot store), and two symbols equal
  after NFC are a duplicate. A plain string is refused by every parser alike: symbols may have
  several characters, so ``"ab"`` could be one symbol or two (write ``["a", "b"]`` or ``list("ab")``).
* **nesting depth**: the position where parentheses first nest deeper than the limit.
* **lark errors**: :func:`syntax_problem` reads any lark ``UnexpectedInput`` into one
  :class:`SyntaxProblem` (position, line, column, the offending character or token, what was
  expected), from which each parser words its own message.
* **where an error is**: every parser error that points into the text (regex, formula, B-RASP)
  carries ``position`` — the 0-based character offset into the text as parsed (after NFC),
  ``len(text)`` when the text ended too early — and ``line`` / ``column`` — 1-based, of that same
  offset (column 1 is a line's first character; at the end, the place just after the last
  character). All three come from :func:`located`, never from lark's own counters (lark reports
  an early end at the last token, not at the end).

Nothing here imports lark at module level (it is imported by the parsers when they parse).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import AlphabetError
from .limits import Limits

__all__ = ["check_alphabet", "has_surrogate", "unsafe_character", "BIDI_CONTROLS", "first_surrogate", "deepest_paren", "SyntaxProblem", "syntax_problem",
           "line_column", "located"]


def first_surrogate(text: str) -> int | None:
    """Index of the first lone UTF-16 surrogate in ``text``, or ``None``."""
    return next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)


def has_surrogate(text: str) -> bool:
    """``text`` holds a lone UTF-16 surrogate (not Unicode text)."""
    return first_surrogate(text) is not None


BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""The bidirectional formatting characters (Unicode Standard Annex #9: ALM, LRM, RLM, the embeddings
LRE RLE PDF, the overrides LRO RLO, the isolates LRI RLI FSI PDI): in a label they reorder the text
shown around them ("Trojan Source"), so a name could display as something else."""


def unsafe_character(text: str) -> str | None:
    """Why ``text`` cannot be a label (a state name, a language's name, a tag), or None: the first
    control character (Unicode category Cc: NUL, line breaks, tabs, escape, DEL, C1 controls) or
    bidirectional formatting character (:data:`BIDI_CONTROLS`), named with its code point and index."""
    import unicodedata

    for i, ch in enumerate(text):
        if ch in BIDI_CONTROLS:
            return f"it holds the bidirectional formatting character U+{ord(ch):04X} ({unicodedata.name(ch, '?')}) at index {i}"
        if unicodedata.category(ch) == "Cc":
            return f"it holds the control character U+{ord(ch):04X} at index {i}"
    return None


def check_alphabet(symbols: Any, limits: Limits | None = None, *, field: str = "alphabet") -> tuple[str, ...]:
    """Validate an ordered alphabet and NFC-normalize its symbols (the one alphabet rule).

    Args:
        symbols: a sequence (list, tuple) of non-empty strings; a plain ``str`` is refused.
        limits: when given, ``max_alphabet`` bounds the number of symbols.
        field: the field name used in errors (``"alphabet"``; a symbol is ``"alphabet[i]"``).

    Returns:
        the symbols in the given order, each in Unicode NFC.

    Raises:
        AlphabetError: not a sequence (a plain string included), empty, a symbol
            that is not a non-empty string, holds a lone surrogate or NUL, or equals an earlier one
            once NFC-normalized (``field`` = ``"alphabet[i]"`` of the offending symbol).
        LimitExceeded: more than ``max_alphabet`` symbols.

    Example:
        >>> check_alphabet(["a", "e\\u0301"])  # e + combining acute → é
        ('a', 'é')
        >>> check_alphabet(list("ab"))
        ('a', 'b')
    """
    if isinstance(symbols, (str, bytes, bytearray)) or not isinstance(symbols, Sequence):
        raise AlphabetError(
            f"the alphabet must be a list of symbols (strings), not {type(symbols).__name__}", field=field
        )
    if len(symbols) == 0:
        raise AlphabetError("the alphabet is empty", field=field)
    if limits is not None:
        limits.check("max_alphabet", len(symbols), field=field)
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, s in enumerate(symbols):
        where = f"{field}[{i}]"
        if not isinstance(s, str):
            raise AlphabetError(f"alphabet symbol {s!r} at index {i} is not a string", field=where, index=i)
        if s == "":
            raise AlphabetError(f"alphabet symbol at index {i} is the empty string", field=where, index=i)
        if has_surrogate(s):
            raise AlphabetError(
                f"alphabet symbol at index {i} holds a lone UTF-16 surrogate, which is not Unicode text",
                field=where, index=i,
            )
        if "\x00" in s:
            raise AlphabetError(f"alphabet symbol at index {i} holds the NUL character (U+0000)", field=where, index=i)
        n = unicodedata.normalize("NFC", s)
        if n in seen:
            j = seen[n]
            same = "is a duplicate of" if symbols[j] == s else "collides after Unicode NFC normalization with"
            raise AlphabetError(
                f"alphabet symbol {s!r} at index {i} {same} symbol {symbols[j]!r} at index {j}",
                field=where, index=i, symbol=n,
            )
        seen[n] = i
        out.append(n)
    return tuple(out)


def deepest_paren(text: str, bound: int | None, *, escape: str | None = None) -> int | None:
    """The position of the first '(' that nests deeper than ``bound``, or ``None``.

    Args:
        text: the source text.
        bound: the largest allowed depth (``None``: no bound).
        escape: a character that makes the next one literal (``"\\\\"`` for regexes).
    """
    if bound is None:
        return None
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if escape is not None and c == escape:
            i += 2
            continue
        if c == "(":
            depth += 1
            if depth > bound:
                return i
        elif c == ")":
            depth = max(0, depth - 1)
        i += 1
    return None


def line_column(text: str, position: int) -> tuple[int, int]:
    """The 1-based (line, column) of the 0-based character offset ``position`` in ``text``
    (clamped to 0..len(text); lines end at ``\n``).

    >>> line_column("ab\ncd", 4), line_column("ab\ncd", 5), line_column("ab", 0)
    ((2, 2), (2, 3), (1, 1))
    """
    position = max(0, min(int(position), len(text)))
    line = text.count("\n", 0, position) + 1
    return line, position - (text.rfind("\n", 0, position) + 1) + 1


def located(text: str, position: int) -> dict[str, int]:
    """``{"position", "line", "column"}`` of an offset (see :func:`line_column`): the extra members
    of every parser error that points into the text."""
    line, column = line_column(text, position)
    return {"position": int(position), "line": line, "column": column}


@dataclass(frozen=True)
class SyntaxProblem:
    """What a lark parse error says, independent of the grammar.

    Attributes:
        kind: ``"character"`` (the lexer met a character no token starts with), ``"token"`` (an
            unexpected token) or ``"end"`` (the text ended where more was expected).
        position: 0-based offset (``len(text)`` at the end).
        line, column: 1-based, of ``position`` (:func:`line_column`).
        char: the character at ``position`` (``""`` at the end).
        token: the unexpected token's text (``None`` unless ``kind == "token"``).
        token_type: the unexpected token's grammar name (``"$END"`` when the parser, rather than
            the lexer, met the end; ``None`` for characters and a lexer end).
        expected: the grammar's names of what would have been accepted there.
    """

    kind: str
    position: int
    line: int
    column: int
    char: str
    token: str | None
    token_type: str | None
    expected: frozenset[str]


def syntax_problem(text: str, e: Exception) -> SyntaxProblem:
    """Read a lark ``UnexpectedInput`` (characters, token or end of input) into a :class:`SyntaxProblem`;
    line and column are computed from the position (lark's point at the last token for an early end)."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    def problem(kind: str, pos: int, token: str | None, token_type: str | None, expected: Any) -> SyntaxProblem:
        line, column = line_column(text, pos)
        return SyntaxProblem(kind, pos, line, column, text[pos] if 0 <= pos < len(text) else "", token, token_type,
                             frozenset(expected or ()))

    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        return problem("end", len(text), None, None if isinstance(e, UnexpectedEOF) else "$END", getattr(e, "expected", None))
    if isinstance(e, UnexpectedCharacters):
        return problem("character", e.pos_in_stream, None, None, e.allowed)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        pos = tok.start_pos if getattr(tok, "start_pos", None) is not None else (getattr(e, "pos_in_stream", 0) or 0)
        return problem("token", pos, str(tok), tok.type, e.expected)
    return problem("character", getattr(e, "pos_in_stream", 0) or 0, None, None, ())  # other lark errors
