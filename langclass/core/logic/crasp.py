"""C-RASP programs as data: SSA operations, a reference interpreter, depth, JSON and text.

C-RASP (Yang & Chiang, *Counting Like Transformers: Compiling Temporal Counting Logic into Softmax
Transformers*, 2024, Definition of C-RASP) over a word ``w = w_1 ... w_n``; every operation has a
value at every position ``i``:

- Boolean operations: ``Q_a(i) := [w_i = a]``; ``¬P(i)``; ``P(i) ∧ P'(i)`` (``∨`` as sugar);
  the constants true/false; the comparison ``C(i) rel C'(i)`` with ``rel`` one of
  ``< <= == != > >=`` (all sugar over ``<`` of linear combinations).
- Count operations: ``#_{j ≤ i}[P(j)]`` (non-strict: position ``i`` itself counts); integer linear
  combinations ``Σ c_t·C_t(i) + k`` (covers ``C + C'``, ``C − C'``, constants and scalar multiples).

The program's output is a Boolean operation read at the LAST position ``n``; the empty word has no
position, so the program carries its own bit ``accepts_empty``.  Depth is the greatest nesting of
count operators (the measure of the strict hierarchy of Yang, Cadilhac & Chiang, *Knee-Deep in
C-RASP*).

Operations are SSA: each name is defined once and refers to earlier names only.  Every program is
validated on construction (names, types, symbols, size limits); violations raise
:class:`~langclass.core.base.errors.InputError`, so a program read from JSON is as safe as one built
in code.  Nothing here evaluates text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import InputError

__all__ = [
    "CraspOp", "CraspProgram", "SOURCE", "BOOL_KINDS", "COUNT_KINDS", "KINDS", "RELATIONS",
    "MAX_OPS", "MAX_TERMS", "MAX_ABS_INT", "MAX_NAME_LENGTH", "MAX_ALPHABET", "MAX_ARGS",
    "JSON_FORMAT", "iter_words", "needed_ops",
]

SOURCE = ("Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers "
          "(Yang & Chiang, 2024), §3 (C-RASP)")

BOOL_KINDS = frozenset({"symbol", "const_bool", "not", "and", "or", "compare"})
COUNT_KINDS = frozenset({"count", "linear"})
KINDS = BOOL_KINDS | COUNT_KINDS
RELATIONS = ("<", "<=", "==", "!=", ">", ">=")

MAX_OPS = 10_000
"""Most operations in one program."""
MAX_TERMS = 1_000
"""Most terms of one linear combination; also the most operands of one ``and`` / ``or``."""
MAX_ARGS = MAX_TERMS
MAX_ABS_INT = 10**9
"""Largest absolute value of a coefficient or constant of a linear combination."""
MAX_NAME_LENGTH = 64
"""Longest operation name (non-empty, printable, no white space)."""
MAX_ALPHABET = 64
"""Most symbols in a program's alphabet."""

JSON_FORMAT = "crasp-program/1"

_REL_FN = {
    "<": lambda x, y: x < y, "<=": lambda x, y: x <= y, "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y,
}
_REL_TEXT = {"<": "<", "<=": "≤", "==": "=", "!=": "≠", ">": ">", ">=": "≥"}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_name(name: Any, field: str) -> str:
    if not isinstance(name, str) or not name:
        raise InputError(f"an operation name must be a non-empty string, got {name!r}", field=field)
    if len(name) > MAX_NAME_LENGTH:
        raise InputError(f"operation name longer than {MAX_NAME_LENGTH} characters: {name[:20]!r}...",
                         field=field)
    if not name.isprintable() or any(ch.isspace() for ch in name):
        raise InputError(f"operation name {name!r} must be printable without white space", field=field)
    return name


def _tuplify(x: Any) -> Any:
    """Lists (from JSON) to tuples, recursively, so ops stay hashable."""
    if isinstance(x, (list, tuple)):
        return tuple(_tuplify(y) for y in x)
    return x


@dataclass(frozen=True)
class CraspOp:
    """One SSA operation ``name := kind(args)``.

    ``kind`` and ``args`` (names refer to earlier operations):

    ==============  =====================================  =====  ==================================
    kind            args                                   type   meaning at position i
    ==============  =====================================  =====  ==================================
    ``symbol``      ``(a,)``                               Bool   ``w_i = a``
    ``const_bool``  ``(True,)`` or ``(False,)``            Bool   constant
    ``not``         ``(P,)``                               Bool   ``¬P(i)``
    ``and``/``or``  ``(P, P2, ...)`` (at least one)        Bool   conjunction / disjunction
    ``count``       ``(P,)``                               Count  ``#{j ≤ i : P(j)}``
    ``linear``      ``(((c1, C1), (c2, C2), ...), k)``     Count  ``Σ c_t·C_t(i) + k`` (integers)
    ``compare``     ``(C, rel, C2)``                       Bool   ``C(i) rel C2(i)``
    ==============  =====================================  =====  ==================================

    Lists are turned into tuples; the local shape of ``args`` is checked here (raising
    :class:`InputError`); names and types against the other operations are checked by
    :class:`CraspProgram`.
    """

    name: str
    kind: str
    args: tuple

    def __post_init__(self) -> None:
        field = f"ops.{self.name}" if isinstance(self.name, str) else "ops"
        _check_name(self.name, field + ".name")
        if self.kind not in KINDS:
            raise InputError(f"operation {self.name!r}: unknown kind {self.kind!r} "
                             f"(expected one of {sorted(KINDS)})", field=field + ".kind")
        args = _tuplify(self.args)
        if not isinstance(args, tuple):
            raise InputError(f"operation {self.name!r}: args must be a list", field=field + ".args")
        object.__setattr__(self, "args", args)
        k, f = self.kind, field + ".args"
        if k in ("symbol", "not", "count"):
            if len(args) != 1 or not isinstance(args[0], str):
                raise InputError(f"operation {self.name!r} ({k}) takes exactly one name", field=f)
        elif k == "const_bool":
            if len(args) != 1 or not isinstance(args[0], bool):
                raise InputError(f"operation {self.name!r} (const_bool) takes exactly one Boolean",
                                 field=f)
        elif k in ("and", "or"):
            if not 1 <= len(args) <= MAX_ARGS or not all(isinstance(a, str) for a in args):
                raise InputError(f"operation {self.name!r} ({k}) takes 1 to {MAX_ARGS} names", field=f)
        elif k == "compare":
            if (len(args) != 3 or not isinstance(args[0], str) or not isinstance(args[2], str)
                    or args[1] not in RELATIONS):
                raise InputError(f"operation {self.name!r} (compare) takes (C, rel, C2) with rel in "
                                 f"{list(RELATIONS)}", field=f)
        else:  # linear
            if len(args) != 2 or not isinstance(args[0], tuple) or not _is_int(args[1]):
                raise InputError(f"operation {self.name!r} (linear) takes (((c, C), ...), k) with "
                                 f"integers c, k", field=f)
            terms, const = args
            if len(terms) > MAX_TERMS:
                raise InputError(f"operation {self.name!r} has {len(terms)} terms (at most {MAX_TERMS})",
                                 field=f)
            if abs(const) > MAX_ABS_INT:
                raise InputError(f"operation {self.name!r}: constant {const} exceeds {MAX_ABS_INT} "
                                 f"in absolute value", field=f)
            for t in terms:
                if (not isinstance(t, tuple) or len(t) != 2 or not _is_int(t[0])
                        or not isinstance(t[1], str)):
                    raise InputError(f"operation {self.name!r}: each term is (integer, name), got {t!r}",
                                     field=f)
                if abs(t[0]) > MAX_ABS_INT:
                    raise InputError(f"operation {self.name!r}: coefficient {t[0]} exceeds "
                                     f"{MAX_ABS_INT} in absolute value", field=f)

    @property
    def type(self) -> str:
        """``"bool"`` or ``"count"``."""
        return "bool" if self.kind in BOOL_KINDS else "count"

    @classmethod
    def trusted(cls, name: str, kind: str, args: tuple) -> "CraspOp":
        """An operation built by langclass's own construction (:mod:`langclass.core.algebra.classes.crasp_build`):
        a well-formed name and ``args`` already in tuples, so the local checks of ``__post_init__``
        are skipped. The :class:`CraspProgram` that holds it still checks every name and type, and
        a test checks that ``CraspOp(name, kind, args)`` accepts every operation the construction
        makes."""
        op = object.__new__(cls)
        object.__setattr__(op, "name", name)
        object.__setattr__(op, "kind", kind)
        object.__setattr__(op, "args", args)
        return op

    def refs(self) -> tuple[str, ...]:
        """Names of the earlier operations this one reads."""
        if self.kind in ("symbol", "const_bool"):
            return ()
        if self.kind == "linear":
            return tuple(c for _, c in self.args[0])
        if self.kind == "compare":
            return (self.args[0], self.args[2])
        return tuple(self.args)

    def to_json(self) -> dict:
        if self.kind == "linear":
            args: list = [[[c, n] for c, n in self.args[0]], self.args[1]]
        else:
            args = list(self.args)
        return {"name": self.name, "kind": self.kind, "args": args}

    def text(self) -> str:
        """The right-hand side in the paper's notation."""
        k, a = self.kind, self.args
        if k == "symbol":
            return f"Q_{a[0]}"
        if k == "const_bool":
            return "true" if a[0] else "false"
        if k == "not":
            return f"¬{a[0]}"
        if k in ("and", "or"):
            return (" ∧ " if k == "and" else " ∨ ").join(a)
        if k == "count":
            return f"#[j ≤ i] {a[0]}"
        if k == "compare":
            return f"{a[0]} {_REL_TEXT[a[1]]} {a[2]}"
        parts: list[str] = []
        for c, n in a[0]:
            mag = abs(c)
            term = n if mag == 1 else f"{mag}·{n}"
            if not parts:
                parts.append(term if c >= 0 else f"−{term}")
            else:
                parts.append(("+ " if c >= 0 else "− ") + term)
        if a[1] or not parts:
            if not parts:
                parts.append(str(a[1]))
            else:
                parts.append(("+ " if a[1] >= 0 else "− ") + str(abs(a[1])))
        return " ".join(parts)


def needed_ops(ops: Sequence[CraspOp], output: str) -> tuple[CraspOp, ...]:
    """The operations of ``ops`` (in SSA order) that ``output`` depends on, in that order."""
    need = {output}
    for op in reversed(ops):
        if op.name in need:
            need.update(op.refs())
    return tuple(op for op in ops if op.name in need)


@dataclass(frozen=True)
class CraspProgram:
    """A C-RASP program: alphabet, SSA operations, the output operation and the empty word's bit.

    Validated on construction: names defined once and before use, Bool/Count types of every
    argument, symbols in the alphabet, ``output`` a Bool operation, size limits (``MAX_OPS``,
    ``MAX_TERMS``, ``MAX_ABS_INT``, ``MAX_NAME_LENGTH``, ``MAX_ALPHABET``).  Raises
    :class:`InputError` naming the offending field.

    Source: Yang & Chiang, *Counting Like Transformers: Compiling Temporal Counting Logic into
    Softmax Transformers*, §3.
    """

    alphabet: tuple[str, ...]
    ops: tuple[CraspOp, ...]
    output: str
    accepts_empty: bool

    def __post_init__(self) -> None:
        alphabet = _tuplify(self.alphabet)
        if not isinstance(alphabet, tuple) or not alphabet:
            raise InputError("a C-RASP program needs a non-empty alphabet", field="alphabet")
        if len(alphabet) > MAX_ALPHABET:
            raise InputError(f"alphabet of {len(alphabet)} symbols (at most {MAX_ALPHABET})",
                             field="alphabet")
        for s in alphabet:
            if not isinstance(s, str) or not s or len(s) > MAX_NAME_LENGTH or not s.isprintable():
                raise InputError(f"alphabet symbol {s!r} must be a non-empty printable string",
                                 field="alphabet")
        if len(set(alphabet)) != len(alphabet):
            raise InputError("alphabet symbols must be distinct", field="alphabet")
        object.__setattr__(self, "alphabet", alphabet)
        ops = tuple(self.ops) if isinstance(self.ops, (list, tuple)) else None
        if ops is None or not ops:
            raise InputError("a C-RASP program needs at least one operation", field="ops")
        if len(ops) > MAX_OPS:
            raise InputError(f"program of {len(ops)} operations (at most {MAX_OPS})", field="ops")
        object.__setattr__(self, "ops", ops)
        if not isinstance(self.accepts_empty, bool):
            raise InputError("accepts_empty must be a Boolean", field="accepts_empty")
        types: dict[str, str] = {}
        symbols = set(alphabet)
        for idx, op in enumerate(ops):
            if not isinstance(op, CraspOp):
                raise InputError(f"ops[{idx}] is not a CraspOp", field=f"ops.{idx}")
            if op.name in types:
                raise InputError(f"operation name {op.name!r} defined twice", field=f"ops.{idx}.name")
            if op.kind == "symbol" and op.args[0] not in symbols:
                raise InputError(f"operation {op.name!r}: symbol {op.args[0]!r} not in the alphabet "
                                 f"{list(alphabet)}", field=f"ops.{idx}.args")
            want = "count" if op.kind == "compare" or op.kind == "linear" else "bool"
            for r in op.refs():
                if r not in types:
                    raise InputError(f"operation {op.name!r} reads {r!r}, which is not defined before it",
                                     field=f"ops.{idx}.args")
                if types[r] != want:
                    raise InputError(f"operation {op.name!r} ({op.kind}) needs a {want} operand, but "
                                     f"{r!r} is {types[r]}", field=f"ops.{idx}.args")
            types[op.name] = op.type
        if not isinstance(self.output, str) or self.output not in types:
            raise InputError(f"output {self.output!r} is not an operation of the program", field="output")
        if types[self.output] != "bool":
            raise InputError(f"output {self.output!r} must be a Boolean operation", field="output")

    # ------------------------------------------------------------------ structure
    def op(self, name: str) -> CraspOp:
        """The operation called ``name`` (KeyError if none)."""
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(name)

    def depths(self) -> dict[str, int]:
        """Count-nesting depth of every operation: a count adds one to its argument's depth."""
        d: dict[str, int] = {}
        for op in self.ops:
            below = max((d[r] for r in op.refs()), default=0)
            d[op.name] = below + 1 if op.kind == "count" else below
        return d

    def depth(self) -> int:
        """Greatest nesting of count operators under the output (0 for a program without counts)."""
        return self.depths()[self.output]

    def needed(self) -> tuple[CraspOp, ...]:
        """The operations the output depends on, in program order."""
        return needed_ops(self.ops, self.output)

    # ------------------------------------------------------------------ interpreter
    def _symbols(self, word: str | Sequence[str]) -> list[str]:
        syms = list(word)
        allowed = set(self.alphabet)
        for p, s in enumerate(syms):
            if s not in allowed:
                raise InputError(f"symbol {s!r} at position {p} is not in the alphabet {list(self.alphabet)}",
                                 field="word")
        return syms

    def evaluate_all(self, word: str | Sequence[str]) -> dict[str, list]:
        """Every operation's value at every position ``0 .. n-1`` (bool or int), exact.

        ``word`` is a string (one character per symbol) or a sequence of symbols.  O(n·|ops|).
        Raises :class:`InputError` for a symbol outside the alphabet.
        """
        syms = self._symbols(word)
        n = len(syms)
        vals: dict[str, list] = {}
        for op in self.ops:
            k, a = op.kind, op.args
            if k == "symbol":
                v: list = [s == a[0] for s in syms]
            elif k == "const_bool":
                v = [a[0]] * n
            elif k == "not":
                v = [not x for x in vals[a[0]]]
            elif k == "and":
                cols = [vals[x] for x in a]
                v = [all(c[i] for c in cols) for i in range(n)]
            elif k == "or":
                cols = [vals[x] for x in a]
                v = [any(c[i] for c in cols) for i in range(n)]
            elif k == "count":
                v, acc = [], 0
                for x in vals[a[0]]:
                    acc += 1 if x else 0
                    v.append(acc)
            elif k == "linear":
                terms = [(c, vals[x]) for c, x in a[0]]
                v = [sum(c * col[i] for c, col in terms) + a[1] for i in range(n)]
            else:  # compare
                fn, left, right = _REL_FN[a[1]], vals[a[0]], vals[a[2]]
                v = [fn(left[i], right[i]) for i in range(n)]
            vals[op.name] = v
        return vals

    def evaluate_batch(self, words: "np.ndarray") -> dict[str, "np.ndarray"]:
        """Every operation at every position of a batch of equal-length words, vectorized.

        Args:
            words: ``int [batch, n]`` letter indices into :attr:`alphabet`.

        Returns:
            ``{name: [batch, n]}`` — bool arrays for Boolean ops, int64 arrays for counts (Python
            integers in an object array when a count could exceed 2^62 at this length).

        Raises:
            InputError: an index outside the alphabet.
        """
        import numpy as np

        words = np.asarray(words)
        if words.ndim != 2:
            raise InputError("words must be a [batch, n] array of letter indices", field="words")
        if words.size and (words.min() < 0 or words.max() >= len(self.alphabet)):
            raise InputError("a letter index is outside the alphabet", field="words")
        B, n = words.shape
        bound: dict[str, int] = {}
        for op in self.ops:  # largest |count| per position, to pick an exact integer type
            if op.kind == "count":
                bound[op.name] = n
            elif op.kind == "linear":
                bound[op.name] = sum(abs(c) * bound[x] for c, x in op.args[0]) + abs(op.args[1])
        big = any(b >= 2 ** 62 for b in bound.values())
        itype = object if big else np.int64
        vals: dict[str, np.ndarray] = {}
        for op in self.ops:
            k, a = op.kind, op.args
            if k == "symbol":
                v = words == self.alphabet.index(a[0])
            elif k == "const_bool":
                v = np.full((B, n), a[0], dtype=bool)
            elif k == "not":
                v = ~vals[a[0]]
            elif k == "and":
                v = np.logical_and.reduce([vals[x] for x in a])
            elif k == "or":
                v = np.logical_or.reduce([vals[x] for x in a])
            elif k == "count":
                v = np.cumsum(vals[a[0]].astype(itype), axis=1, dtype=itype)
            elif k == "linear":
                v = np.full((B, n), a[1], dtype=itype)
                for c, x in a[0]:
                    v = v + c * vals[x]
            else:
                v = _REL_FN[a[1]](vals[a[0]], vals[a[2]])
                v = np.asarray(v, dtype=bool)
            vals[op.name] = v
        return vals

    def evaluate(self, word: str | Sequence[str]) -> bool:
        """Membership: ``accepts_empty`` for the empty word, else the output at the last position."""
        syms = self._symbols(word)
        if not syms:
            return self.accepts_empty
        return bool(self.evaluate_all(syms)[self.output][-1])

    # ------------------------------------------------------------------ JSON and text
    def to_json(self) -> dict:
        """A JSON-ready dict; :meth:`from_json` reads it back to an equal program."""
        return {"format": JSON_FORMAT, "alphabet": list(self.alphabet),
                "ops": [op.to_json() for op in self.ops], "output": self.output,
                "accepts_empty": self.accepts_empty}

    @classmethod
    def from_json(cls, d: Any) -> "CraspProgram":
        """Read and validate a program written by :meth:`to_json`.

        Raises :class:`InputError` (naming the field) for anything else: a non-object, unknown or
        missing keys, a wrong ``format``, malformed operations, undefined or mistyped names, symbols
        outside the alphabet, or a program beyond the size limits.
        """
        if not isinstance(d, Mapping):
            raise InputError("a C-RASP program must be a JSON object", field="program")
        keys = {"format", "alphabet", "ops", "output", "accepts_empty"}
        extra = set(d) - keys
        if extra:
            raise InputError(f"unknown keys in a C-RASP program: {sorted(map(str, extra))}", field="program")
        missing = keys - {"format"} - set(d)
        if missing:
            raise InputError(f"missing keys in a C-RASP program: {sorted(missing)}", field="program")
        if "format" in d and d["format"] != JSON_FORMAT:
            raise InputError(f"unknown program format {d['format']!r} (expected {JSON_FORMAT!r})",
                             field="format")
        if not isinstance(d["alphabet"], list):
            raise InputError("alphabet must be a list of symbols", field="alphabet")
        raw_ops = d["ops"]
        if not isinstance(raw_ops, list):
            raise InputError("ops must be a list", field="ops")
        if len(raw_ops) > MAX_OPS:
            raise InputError(f"program of {len(raw_ops)} operations (at most {MAX_OPS})", field="ops")
        ops = []
        for idx, o in enumerate(raw_ops):
            if not isinstance(o, Mapping) or set(o) != {"name", "kind", "args"}:
                raise InputError(f"ops[{idx}] must be an object with exactly name, kind and args",
                                 field=f"ops.{idx}")
            if not isinstance(o["args"], list):
                raise InputError(f"ops[{idx}].args must be a list", field=f"ops.{idx}.args")
            _check_shallow(o["args"], f"ops.{idx}.args")
            ops.append(CraspOp(o["name"], o["kind"], o["args"]))
        return cls(tuple(d["alphabet"]), tuple(ops), d["output"], d["accepts_empty"])

    def render(self) -> str:
        """Readable text, one operation per line, then the output line."""
        d = self.depths()
        width = max(len(op.name) for op in self.ops)
        lines = [f"C-RASP program over {{{', '.join(self.alphabet)}}}  (depth {self.depth()}, "
                 f"{len(self.ops)} operations)"]
        rhs = [op.text() for op in self.ops]
        rw = max(len(r) for r in rhs)
        for op, r in zip(self.ops, rhs):
            lines.append(f"  {op.name.ljust(width)} := {r.ljust(rw)}   # {op.type}, depth {d[op.name]}")
        lines.append(f"accept a non-empty word iff {self.output} holds at the last position; "
                     f"the empty word is {'accepted' if self.accepts_empty else 'rejected'}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _check_shallow(x: Any, field: str, depth: int = 0) -> None:
    """Refuse deeply nested or non-JSON-scalar args before they reach the op checks."""
    if depth > 3:
        raise InputError("operation args nested too deeply", field=field)
    if isinstance(x, list):
        if len(x) > MAX_TERMS + 2:
            raise InputError(f"operation args longer than {MAX_TERMS}", field=field)
        for y in x:
            _check_shallow(y, field, depth + 1)
    elif not (isinstance(x, (str, bool, int)) or x is None):
        raise InputError(f"operation args hold a {type(x).__name__}; only names, integers and "
                         f"Booleans are allowed", field=field)


def iter_words(alphabet: Sequence[str], max_len: int) -> Iterable[tuple[str, ...]]:
    """All words over ``alphabet`` of length 0..max_len, shortest first (for tests and checks)."""
    from itertools import product
    for n in range(max_len + 1):
        yield from product(alphabet, repeat=n)
