"""Turning a request into a classified language: parse → canonical DFA → analysis → record.

This is the only place the service calls ``core``; the API routes and the CLI both use it, so
``langclass classify --json`` prints exactly the record ``POST /v1/classify`` returns.

Every step runs under the :class:`~langclass.core.limits.Limits` built from the settings; heavy work
runs off the event loop in :class:`ClassifyRunner` (worker threads, bounded concurrency, the
cooperative :class:`~langclass.core.limits.Deadline` inside ``core`` plus a hard wall-clock backstop).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.automaton import DFA
from ..core.errors import AlphabetError, InputError, TimeLimitExceeded, UnsupportedError
from ..core.limits import Limits
from ..version import code_version  # one function for records, CLI and job results

__all__ = [
    "ParsedLanguage",
    "parse_language",
    "analyze_language",
    "classification_record",
    "classify",
    "ClassifyRunner",
    "code_version",
    "dfa_from_record",
    "find_duplicate_key",
    "monoid_page",
    "parse_and_analyze",
]

T = TypeVar("T")


@dataclass(frozen=True)
class ParsedLanguage:
    """A parsed input.

    Attributes:
        dfa: the canonical minimal complete DFA.
        fingerprint: its SHA-256 fingerprint (the language id).
        source: the input as given: ``{"kind": "regex"|"dfa"|"formula", ...}``.
    """

    dfa: DFA
    fingerprint: str
    source: dict[str, Any]


def parse_language(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> ParsedLanguage:
    """Parse exactly one of ``regex`` / ``dfa`` / ``formula`` into the canonical minimal DFA.

    ``regex`` and ``formula`` need ``alphabet``; a ``dfa`` (a mapping, or JSON text so duplicate keys
    are detected) carries its own (a top-level ``alphabet``
    given with it must be the same).

    Raises:
        InputError: none or several inputs given (``field`` names them).
        AlphabetError: regex/formula without an alphabet, or one that differs from the DFA's.
        RegexSyntaxError, DfaFormatError, FormulaSyntaxError, UnknownSymbolError, LimitExceeded:
            from the parsers in ``core``.
    """
    given = [k for k, v in (("regex", regex), ("dfa", dfa), ("formula", formula)) if v is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise InputError(
            f"give exactly one of 'regex', 'dfa' or 'formula' (got {what})", field=given[1] if len(given) > 1 else "regex"
        )
    kind = given[0]
    if kind == "regex":
        if alphabet is None:
            raise AlphabetError("a regex needs an explicit 'alphabet' (a list of symbols)", field="alphabet")
        from ..core.parse import parse_regex

        machine = parse_regex(regex, list(alphabet), limits)  # type: ignore[arg-type]
        source = {"kind": "regex", "regex": regex, "alphabet": list(alphabet)}
    elif kind == "dfa":
        from ..core.parse import parse_dfa_json

        try:
            machine = parse_dfa_json(dfa if isinstance(dfa, (str, bytes)) else dict(dfa), limits)  # type: ignore[arg-type]
        except InputError as err:
            err.field = "dfa" if err.field is None else f"dfa.{err.field}"
            raise
        if alphabet is not None:
            from ..core.parse import normalize_alphabet

            if tuple(normalize_alphabet(alphabet)) != tuple(machine.alphabet):
                raise AlphabetError(
                    "'alphabet' differs from the DFA's own alphabet (omit it, or give the same symbols in the same order)",
                    field="alphabet",
                )
        source = {"kind": "dfa", "dfa": json.loads(dfa) if isinstance(dfa, (str, bytes)) else dict(dfa)}  # type: ignore[arg-type]
    else:
        if alphabet is None:
            raise AlphabetError("a formula needs an explicit 'alphabet' (a list of symbols)", field="alphabet")
        try:
            from ..core.formulas import formula_to_dfa
        except ImportError as exc:  # pragma: no cover - depends on the build
            raise UnsupportedError("formula input is not available in this build", field="formula") from exc
        from ..core.formulas import parse_formula

        try:
            parsed_formula = parse_formula(formula, list(alphabet), limits)  # type: ignore[arg-type]
            machine = formula_to_dfa(parsed_formula, list(alphabet), limits)
        except InputError as err:
            if err.field is None:
                err.field = "formula"
            raise
        source = {"kind": "formula", "formula": formula, "alphabet": list(alphabet), "parsed": parsed_formula.text()}
        notes = mod_remainder_notes(formula)  # type: ignore[arg-type]
        if notes:
            source["notes"] = notes
    machine = machine.canonical()
    return ParsedLanguage(dfa=machine, fingerprint=machine.fingerprint(), source=source)


_MOD_ATOM = re.compile(r"MOD\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)|MOD_(\d+)\^(\d+)")


def mod_remainder_notes(formula: str) -> list[str]:
    """One note per ``MOD(m, r)`` / ``MOD_m^r`` of ``formula`` whose remainder r is not in 0..m−1:
    the formula syntax reads r modulo m (docs/formulas.md), which the record says out loud.

    >>> mod_remainder_notes("MOD(2,5) & a")
    ['MOD(2,5) is read as MOD(2,1): the remainder is taken modulo m']
    """
    notes = []
    for match in _MOD_ATOM.finditer(formula):
        m, r = (int(g) for g in (match.group(1, 2) if match.group(1) is not None else match.group(3, 4)))
        if m >= 1 and r >= m:
            notes.append(f"{match.group(0)} is read as MOD({m},{r % m}): the remainder is taken modulo m")
    return notes


class _Pairs(list):
    """A JSON object kept as its list of (key, value) pairs, so repeated keys stay visible."""


def find_duplicate_key(raw: str | bytes) -> str | None:
    """The dotted path of the first key that a JSON object in ``raw`` repeats, or None.

    ``json.loads`` keeps the last of repeated keys silently; a DFA whose ``transitions`` repeat a
    state must be rejected instead (the request body is checked with this before parsing).
    """
    try:
        tree = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None  # not JSON: reported elsewhere

    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, value in node:
                where = f"{path}.{key}" if path else key
                if key in seen:
                    return where
                seen.add(key)
                stack.append((value, where))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def analyze_language(dfa: DFA, limits: Limits) -> dict[str, Any]:
    """The analysis record of ``dfa`` (``core.analysis.analyze(dfa, limits).to_dict()``)."""
    from ..core.analysis import analyze

    return analyze(dfa, limits).to_dict()


def parse_and_analyze(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> tuple[ParsedLanguage, dict[str, Any]]:
    """:func:`parse_language` then :func:`analyze_language` (one round trip to a worker process)."""
    parsed = parse_language(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet, limits=limits)
    return parsed, analyze_language(parsed.dfa, limits)


parse_and_analyze.time_phases = 2  # type: ignore[attr-defined]  # parsing, then analysis (ClassifyRunner)


def dfa_to_json(dfa: DFA) -> dict[str, Any]:
    """The canonical DFA in the DFA JSON schema (``core.export.dfa_to_json``)."""
    from ..core.export import dfa_to_json as export

    return export(dfa)


def dfa_from_record(data: Mapping[str, Any], limits: Limits) -> DFA:
    """Rebuild a stored canonical DFA from its DFA JSON."""
    from ..core.parse import parse_dfa_json

    return parse_dfa_json(dict(data), limits)


_MONOID_CACHE: "OrderedDict[tuple[str, Limits], Any]" = OrderedDict()
_MONOID_CACHE_SIZE = 8
_MONOID_LOCK = threading.Lock()


def monoid_page(fingerprint: str, dfa_json: Mapping[str, Any], limits: Limits, offset: int, limit: int) -> dict[str, Any]:
    """A page of the syntactic monoid of a stored language (``TransitionMonoid.describe``).

    The enumerated monoid of the last few languages is kept in memory (keyed by fingerprint and
    limits), so paging through a large monoid does not rebuild it for every page.

    Raises:
        LimitExceeded: ``max_monoid_size`` when the monoid is over the cap; TimeLimitExceeded.
    """
    from ..core.monoid import transition_monoid

    key = (fingerprint, limits)
    with _MONOID_LOCK:
        monoid = _MONOID_CACHE.get(key)
        if monoid is not None:
            _MONOID_CACHE.move_to_end(key)
    if monoid is None:
        monoid = transition_monoid(dfa_from_record(dfa_json, limits), limits)
        with _MONOID_LOCK:
            _MONOID_CACHE[key] = monoid
            while len(_MONOID_CACHE) > _MONOID_CACHE_SIZE:
                _MONOID_CACHE.popitem(last=False)
    return monoid.describe(offset, limit)


def classification_record(parsed: ParsedLanguage, analysis: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The Classification resource: ``id``, ``alphabet``, ``source``, ``dfa`` and the analysis fields."""
    record: dict[str, Any] = {
        "id": parsed.fingerprint,
        "alphabet": list(parsed.dfa.alphabet),
        "source": parsed.source,
        "dfa": dfa_to_json(parsed.dfa),
    }
    record.update(analysis)
    record.setdefault("num_states", parsed.dfa.num_states)
    record["code_version"] = version
    return record


def classify(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> dict[str, Any]:
    """Parse and classify one language; the record ``POST /v1/classify`` returns (synchronous)."""
    parsed = parse_language(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet, limits=limits)
    return classification_record(parsed, analyze_language(parsed.dfa, limits), code_version())


class ClassifyRunner:
    """Runs blocking, CPU-heavy calls off the event loop under a wall-clock limit.

    ``isolation="process"`` (default): each call runs in a worker process of a shared
    :class:`~langclass.app.isolation.ProcessPool` of ``concurrency`` processes; past
    ``time_limit_s + max(1, time_limit_s / 4)`` seconds the process is killed (its CPU is freed at
    once) and the request ends with :class:`~langclass.core.errors.TimeLimitExceeded`. ``fn`` must be
    a module-level function and its arguments and result picklable.

    A call that finds every worker busy waits at most ``queue_timeout_s`` for one, then ends with
    :class:`~langclass.app.isolation.ClassifierBusy` (HTTP 503 with ``Retry-After``).

    ``isolation="thread"``: worker threads (at most ``concurrency`` at once) with a hard backstop of
    ``1.5 × time_limit_s + 5`` s; a thread that outlives it is abandoned and stops only at its next
    cooperative deadline check in ``core``.
    """

    def __init__(
        self, concurrency: int, time_limit_s: float | None, isolation: str = "process", queue_timeout_s: float | None = None
    ) -> None:
        self.concurrency = concurrency
        self.time_limit_s = time_limit_s
        self.isolation = isolation
        self.queue_timeout_s = queue_timeout_s
        self._limiter: Any = None  # anyio.CapacityLimiter, made on first use

    @property
    def backstop_s(self) -> float | None:
        return self.backstop_for(1)

    def backstop_for(self, phases: int) -> float | None:
        """The hard limit for a call that runs ``phases`` steps each under its own cooperative
        deadline of ``time_limit_s`` (e.g. parsing, then analysis): late enough that a cooperative
        deadline fires first and names the step that overran."""
        if self.time_limit_s is None:
            return None
        budget = phases * self.time_limit_s
        if self.isolation == "process":
            return budget + max(1.0, budget / 4)
        return 1.5 * budget + 5.0

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` under the limits; returns its result. ``fn.time_phases``
        (default 1) is the number of steps it runs under separate deadlines."""
        import anyio  # here, not at the top: the CLI uses this module without an event loop

        backstop = self.backstop_for(int(getattr(fn, "time_phases", 1)))
        if self.isolation == "process":
            from .isolation import get_pool

            pool = get_pool(self.concurrency)
            call = functools.partial(pool.call, fn, args, kwargs, backstop, self.time_limit_s, self.queue_timeout_s)
            return await anyio.to_thread.run_sync(call)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.concurrency)
        call = functools.partial(fn, *args, **kwargs)
        async with self._limiter:
            if backstop is None:
                return await anyio.to_thread.run_sync(call)
            try:
                with anyio.fail_after(backstop):
                    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
            except TimeoutError:
                raise TimeLimitExceeded(
                    "time_limit_s", self.time_limit_s, f"time limit of {self.time_limit_s} s exceeded (hard backstop at {backstop:.1f} s)"
                ) from None

