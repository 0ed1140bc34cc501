"""Decision procedures: one registered decider per class, each with typed, replayable evidence.

Every procedure works on the canonical minimal complete DFA ``A`` and, for the algebraic classes,
on its transition monoid ``M`` (= syntactic monoid; :mod:`langclass.core.algebra.monoid`). A member gets a
certificate and a non-member a witness, both frozen dataclasses (:class:`Evidence`) whose
``to_dict()`` is the JSON record; :func:`replay` reads such a record back and checks it on the DFA
alone — words are run on the DFA, element identities compared as transformations, and algebraic
certificates rebuild the monoid from its listed words and check the claim by the definition.

The families (one module each):

* :mod:`.ordered` — LTL[P] (partially ordered DFA), LTL[P,MOD] (every SCC one state or a simple
  cycle; "Disentangling the Expressivity of RoPE", Thm 3.3).
* :mod:`.letters` — stutter-invariance, group languages.
* :mod:`.aperiodic` — star-free (aperiodic; Schützenberger 1965), FO[<,MOD] (no group in the stable
  semigroup; Barrington–Compton–Straubing–Thérien 1992), counters found on the DFA alone.
* :mod:`.da` — FO²[<] (DA), FO²[<,MOD] (QDA), piecewise testable (J-trivial; Simon 1975).
* :mod:`.local` — LTL[P,Y] (locally R-trivial), locally testable (Brzozowski–Simon 1973,
  McNaughton 1974), locally threshold testable (Beauquier–Pin 1989, Thérien–Weiss 1985).
* :mod:`.temporal` — LTL[P,Y,MOD], FO²[<,+1], FO²[<,+1,MOD], LTL[F], LTL[F,X], LTL[F,MOD],
  LTL[F,X,MOD] on the C-orbits (Place & Zeitoun; :mod:`langclass.core.algebra.orbits`).
* :mod:`.delay` — the Y-offset of an LTL[P,Y] language; :mod:`.extras` — further algebraic facts;
  :mod:`.implied` — answers implied through the lattice, carrying the implying class's evidence.

:data:`REGISTRY` maps each class key to its :class:`Decider`; :data:`DECIDERS` is the key → decide
view the analysis runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import UnknownSymbolError
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .base import (CERT_LIST_MAX, REGISTRY, STATE_FIELDS, ClassResult, Decider, Evidence, parse_evidence, show,
                   state_label, with_state_names)
from .context import MULT_TABLE_MAX_ENTRIES, Context
from .evidence import CERT_MONOID_MAX, Counter, MonoidWords, Separation
from .ordered import HASSE_MAX_STATES, decide_ltl_p, decide_ltl_p_mod, qr_witness_words
from .letters import decide_group, decide_stutter_invariant
from .aperiodic import decide_fo_mod, decide_star_free, find_counter_dfa
from .da import decide_fo2, decide_fo2_mod, decide_piecewise_testable
from .local import (
    LTT_WORK_BUDGET,
    decide_locally_testable,
    decide_locally_threshold_testable,
    decide_ltl_p_y,
)
from .delay import ltl_p_y_delay
from .extras import monoid_extras
from .temporal import TEMPORAL_KEYS, decide_unary_temporal, orbit_engine
from .crasp import decide_crasp
from .implied import Implied, ImpliedWitness, implied_period, implied_result, replay_implied
from .replaykit import Checker, ReplayError, checker_for, clear_replay_cache, describe_failed_check
from langclass.core.base.wording import count_noun

__all__ = [
    "ReplayError",
    "ClassResult",
    "Context",
    "Decider",
    "Evidence",
    "REGISTRY",
    "DECIDERS",
    "AUTOMATON_KEYS",
    "decide_ltl_p",
    "decide_ltl_p_mod",
    "decide_ltl_p_y",
    "decide_star_free",
    "decide_stutter_invariant",
    "decide_fo2",
    "decide_fo2_mod",
    "decide_fo_mod",
    "decide_piecewise_testable",
    "decide_locally_testable",
    "decide_locally_threshold_testable",
    "decide_group",
    "decide_unary_temporal",
    "decide_crasp",
    "orbit_engine",
    "TEMPORAL_KEYS",
    "find_counter_dfa",
    "implied_result",
    "qr_witness_words",
    "replay",
    "clear_replay_cache",
    "render",
    "state_label",
    "with_state_names",
    "STATE_FIELDS",
    "ltl_p_y_delay",
    "monoid_extras",
    "Counter",
    "MonoidWords",
    "Separation",
    "Implied",
    "ImpliedWitness",
    "LTT_WORK_BUDGET",
    "HASSE_MAX_STATES",
    "MULT_TABLE_MAX_ENTRIES",
    "CERT_LIST_MAX",
    "CERT_MONOID_MAX",
]

_ORDER = ("ltl_p", "ltl_p_mod", "ltl_p_y", "star_free", "stutter_invariant", "fo2", "fo2_mod", "fo_mod",
          "piecewise_testable", "locally_testable", "locally_threshold_testable", "group") + TEMPORAL_KEYS + ("crasp",)
assert set(_ORDER) == set(REGISTRY), "every class of the lattice has exactly one registered decider"

DECIDERS: dict[str, Callable[[Context], ClassResult]] = {k: REGISTRY[k].decide for k in _ORDER}
"""Class key → decide function (a view of :data:`REGISTRY`)."""

AUTOMATON_KEYS: tuple[str, ...] = tuple(k for k in _ORDER if REGISTRY[k].on_automaton)
"""The classes decided on the minimal DFA alone (answered even when the monoid is over its cap)."""


def replay(dfa: DFA | Mapping[str, Any], result: ClassResult | dict[str, Any], monoid: Any = None, *,
           limits: Limits = DEFAULT_LIMITS) -> None:
    """Re-check a result's certificate (member) or witness (non-member) on the DFA alone.

    Args:
        dfa: the language's DFA (any complete DFA; minimized here), or its DFA JSON (a mapping or
            JSON text, e.g. the ``dfa`` of the record the API returns), read by
            :func:`~langclass.core.ingest.parse.parse_dfa_json`.
        result: a :class:`ClassResult` or its ``to_dict()`` record (as the API returns it).
        monoid: unused (kept for callers that pass it); the replay never reads the decider's monoid.
        limits: bounds of the replay's own enumeration of the monoid (``max_monoid_size``,
            ``max_monoid_entries``) and its deadline (``time_limit_s``).

    The verdict is decided from the DFA, never from what the evidence leaves out: a membership is a
    universal claim, so it is recomputed on the DFA (the property on the whole monoid, every orbit,
    every strong component) and every stated figure is compared with the recomputed one (the
    stability index, |η(Σ^s)|, counts, the Hasse diagram of A_k, periods, orbit sizes, group orders
    and names) — an empty list, a ``truncated`` flag or a missing monoid never stands in for a check.
    A non-membership is an existential claim: its words are run on the DFA and the violation checked
    by the definition. Every state the evidence names must be a state of the minimal DFA. What is
    checked for each class is written out in ``docs/replay.md``. Facts of the DFA alone (the monoid,
    the orbit engine's kernels) are kept between replays of one DFA (:func:`.replaykit.checker_for`).

    Raises:
        InputError (DfaFormatError, …): malformed DFA JSON.
        LimitExceeded / TimeLimitExceeded: the replay itself is over a bound (the evidence is neither
            confirmed nor refuted); the error names the bound.
        ReplayError: (an ``AssertionError``) the evidence is malformed or does not hold on the DFA;
            the message names the class key, the evidence kind and the check that failed.
    """
    if isinstance(dfa, (Mapping, str, bytes)):  # the DFA JSON as the API returns it
        from langclass.core.ingest.parse import parse_dfa_json

        dfa = parse_dfa_json(dfa if isinstance(dfa, (str, bytes)) else dict(dfa), limits)
    d = result.to_dict() if isinstance(result, ClassResult) else result
    if not isinstance(d, Mapping):
        raise ReplayError(f"a class record is an object, not {type(d).__name__}")
    key, member = d.get("key"), d.get("member")
    if not isinstance(key, str) or key not in REGISTRY:
        raise ReplayError(f"unknown class key {key!r}")
    if member is None:
        return
    if not isinstance(member, bool):
        raise ReplayError(f"{key}: member is true, false or null, not {member!r}")
    kind = "certificate" if member else "witness"
    raw = d.get(kind)
    if raw is None:
        raise ReplayError(f"{key}: a {'member needs a certificate' if member else 'non-member needs a witness'}")
    dec = REGISTRY[key]
    lattice = d.get("method") == "lattice"
    try:
        if lattice:
            ev = (Implied if member else ImpliedWitness).from_dict(raw, kind)
        else:
            ev = parse_evidence(dec.certificate_types if member else dec.witness_types, raw, kind)
    except ValueError as err:
        raise ReplayError(f"{key}: malformed evidence: {err}") from None
    # every check below raises ReplayError explicitly (no ``assert``: ``python -O`` must not skip one)
    try:
        chk = checker_for(dfa, limits)
        _states_in_range(ev.to_dict(), chk.n, kind)
        if lattice:
            want = implied_period(key, ev.implied_by)
            if member and not _same_period(d.get("period"), want):
                raise ReplayError(f"the period of an implied answer is {want}, not {d.get('period')!r}")
            replay_implied(chk, key, bool(member), ev)
        elif member:
            if key == "ltl_p_mod" and not _same_period(d.get("period"), ev.k):
                raise ReplayError("the period is the certificate's k (an integer)")
            if key == "ltl_p_y_mod" and not _same_period(d.get("period"), ev.period):
                raise ReplayError("the period is the certificate's period (an integer)")
            dec.replay_yes(chk, ev)
        else:
            dec.replay_no(chk, ev)
    except AssertionError as err:  # a ReplayError of a check, or an assert of a helper the replay calls
        raise ReplayError(f"{key}: the {kind} does not replay: {str(err) or describe_failed_check(err)}") from None
    except UnknownSymbolError as err:  # a word of the evidence uses a symbol outside Σ
        raise ReplayError(f"{key}: the {kind} does not replay: {err}") from None
    except (IndexError, KeyError) as err:  # a state or element id out of range, an element that is not one
        raise ReplayError(f"{key}: the {kind} does not replay: an id out of range or not an element ({err})") from None
    except (ArithmeticError, ValueError, TypeError) as err:  # a figure no check can use (a zero modulus, …)
        raise ReplayError(f"{key}: the {kind} does not replay: a malformed figure ({type(err).__name__}: {err})") from None
    # the evidence replayed; nothing else may ride beside it
    if member and d.get("witness") is not None:
        raise ReplayError(f"{key}: a member has no witness")
    if not member and d.get("certificate") not in (None, raw):  # a non-member's certificate repeats its witness
        raise ReplayError(f"{key}: a non-member's certificate is its witness repeated, and this one differs")


def _same_period(got: Any, want: int | None) -> bool:
    """A record's ``period`` equals ``want`` with its type: 1, not ``true`` or ``1.0``; ``None`` only for ``None``."""
    return got == want and type(got) is type(want)


def _states_in_range(ev: Any, n: int, where: str) -> None:
    """Every state the evidence names (the fields of :data:`STATE_FIELDS`, also in nested evidence)
    is a state 0..n-1 of the minimal DFA.

    Raises:
        ReplayError: naming the field and the value."""
    def check(v: Any, path: str) -> None:
        if isinstance(v, bool):
            raise ReplayError(f"{path} is a state, not {v!r}")
        if isinstance(v, int):
            if not 0 <= v < n:
                raise ReplayError(f"{path} = {v} is not a state of the minimal DFA (it has {n} states: 0..{n - 1})")
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                check(x, f"{path}[{i}]")

    def walk(x: Any, path: str) -> None:
        if isinstance(x, Mapping):
            for k, v in x.items():
                if k in STATE_FIELDS and v is not None:
                    check(v, f"{path}.{k}")
                else:
                    walk(v, f"{path}.{k}")
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")

    walk(ev, where)


_HIDDEN = frozenset({"check", "context", "truncated", "group", "hasse", "loops", "maximal_idempotents", "branch",
                     "witness", "certificate", "monoid", "cycles", "components", "component",
                     "program"})


def render(result: ClassResult, width: int = 110, state_names: Mapping[int, Sequence[str]] | None = None) -> str:
    """The evidence of one answer in one line for a text table (``""`` when there is none).

    Scalars and words are shown (words as letters, ε when empty); long structures (the monoid's
    words, contexts, loops, groups) are left to ``--json``. With ``state_names`` (``{canonical
    state: user names}`` of a DFA input) states are shown in the user's names with the canonical
    number alongside (:func:`~langclass.core.algebra.classes.base.state_label`)."""
    ev = result.witness if result.member is False else result.certificate
    if ev is None:
        return ""
    parts = []
    for k, v in with_state_names(ev.to_dict(), state_names).items():
        if k in ("maximal_idempotents", "cycles") and isinstance(v, list):
            parts.append(f"{k}: {len(v)} listed")
            continue
        if k == "monoid" and isinstance(v, dict):
            parts.append(f"monoid: {count_noun(len(v['parents']) + 1, 'word')}")
            continue
        if k in _HIDDEN:
            continue
        if state_names and k in STATE_FIELDS:
            parts.append(f"{k}={v}" if not isinstance(v, list) else f"{k}=[{', '.join(map(str, v))}]")
        elif isinstance(v, list) and v and all(isinstance(s, str) for s in v):
            parts.append(f"{k}={show(v)}")
        elif isinstance(v, list) and not v:
            parts.append(f"{k}=ε")
        elif isinstance(v, (int, str, bool)) or v is None:
            parts.append(f"{k}={v}")
        elif isinstance(v, list) and len(v) <= 8:
            parts.append(f"{k}={v}")
    if isinstance(ev, (Implied, ImpliedWitness)):
        inner = ev.certificate if isinstance(ev, Implied) else ev.witness
        if inner is not None:
            sub = render(ClassResult(ev.implied_by, result.member, "", inner, inner if result.member is False else None,
                                     "", ""), width, state_names)
            if sub:
                parts.append(f"[{ev.implied_by}: {sub}]")
    s = ", ".join(parts)
    return s if len(s) <= width else s[:width - 3] + "..."
