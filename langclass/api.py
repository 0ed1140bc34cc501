"""The Python API for notebooks and scripts: ``langclass.classify``, ``construct``, ``train``.

``import langclass`` loads nothing heavy; :func:`classify` uses only ``langclass.core`` (numpy,
scipy, lark); :func:`construct` and :func:`train` import torch when called.

Example:
    >>> import langclass
    >>> r = langclass.classify("(ab)*", alphabet="ab")
    >>> r.classes["ltl_p_mod"].member, r.classes["ltl_p"].member, r.dfa.num_states
    (True, False, 3)
    >>> r.encodings["soft"]["encoding"]
    'rope_periodic'

Documented with more examples in docs/python.md (every example there runs in the tests).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, DfaFormatError, InputError
from langclass.core.drawing.svg import user_state_names
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:  # pragma: no cover
    from langclass.core.classification.analysis import Analysis
    from langclass.core.algebra.classes import ClassResult

__all__ = ["Classification", "RunResult", "classify", "construct", "train", "sweep", "load_model", "read_alphabet",
           "from_automata_lib", "to_automata_lib"]


def read_alphabet(alphabet: str | Sequence[str]) -> list[str]:
    """An alphabet from Python: a string is one symbol per character (``"ab"`` → ``["a", "b"]``);
    a list or tuple of strings is taken as given (multi-character symbols: ``["x1", "x2"]``).

    Raises:
        AlphabetError: not a string or a sequence of strings.
    """
    if isinstance(alphabet, str):
        return list(alphabet)
    if isinstance(alphabet, Sequence) and all(isinstance(s, str) for s in alphabet):
        return list(alphabet)
    raise AlphabetError(f"an alphabet is a string ('ab') or a list of strings, not {type(alphabet).__name__}",
                        field="alphabet")


@dataclass(frozen=True, eq=False)
class Classification:
    """One classified language (what :func:`classify` returns).

    Attributes:
        source: the input as given: ``{"kind": "regex"|"dfa"|"formula", ...}``.
        analysis: the full :class:`~langclass.core.classification.analysis.Analysis`.
        state_names: ``{canonical state: user names}`` for DFA input (empty otherwise).

    ``classes``, ``encodings``, ``dfa``, ``monoid``, ``id`` read through to the analysis;
    :meth:`to_dict` is the record ``POST /v1/classify`` returns (less ``code_version``).
    In Jupyter the object shows its DFA drawing and its class table (:meth:`_repr_html_`).
    """

    source: dict[str, Any]
    analysis: "Analysis"
    state_names: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def dfa(self) -> DFA:
        """The canonical minimal complete DFA (states numbered breadth-first)."""
        return self.analysis.dfa

    @property
    def id(self) -> str:
        """The language's fingerprint (SHA-256 of the canonical DFA), the id the service uses."""
        return self.analysis.dfa.fingerprint()

    @property
    def classes(self) -> dict[str, "ClassResult"]:
        """Class key → result (``.member``, ``.reason``, ``.certificate``, ``.witness``, ``.source``)."""
        return self.analysis.classes

    @property
    def members(self) -> dict[str, bool | None]:
        """Class key → ``True``/``False`` (``None``: a limit left it undecided)."""
        return self.analysis.members

    @property
    def encodings(self) -> dict[str, dict[str, Any]]:
        """``{"soft": {...}, "hard": {...}}``: the encoding that suffices, its parameters and theorem."""
        return self.analysis.encodings

    @property
    def monoid(self) -> Any:
        """The syntactic monoid (:class:`~langclass.core.algebra.monoid.TransitionMonoid`), or ``None`` over the cap."""
        return self.analysis.monoid

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: ``id``, ``alphabet``, ``source``, ``dfa`` (DFA JSON) and the analysis
        fields (``classes``, ``encodings``, ``monoid``, ``beyond``, ``extra``, ``timings_ms``, ...)."""
        from langclass.core.automata.export import dfa_to_json

        record: dict[str, Any] = {"id": self.id, "alphabet": list(self.dfa.alphabet), "source": self.source,
                                  "dfa": dfa_to_json(self.dfa)}
        record.update(self.analysis.to_dict())
        return record

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``json.dumps`` keyword arguments pass through)."""
        kwargs.setdefault("ensure_ascii", False)
        return json.dumps(self.to_dict(), default=str, **kwargs)

    def table(self) -> str:
        """The plain-text table ``langclass classify`` prints."""
        from langclass.core.classification.analysis import format_table

        return format_table(self.analysis)

    def svg(self, *, hide_sink: bool = False) -> str:
        """The minimal DFA drawn as SVG (:func:`langclass.core.drawing.svg.dfa_svg`), user state names shown."""
        from langclass.core.drawing.svg import dfa_svg

        return dfa_svg(self.dfa, state_names=self.state_names or None, hide_sink=hide_sink, title=self._title())

    def _title(self) -> str:
        s = self.source
        text = s.get("regex") or s.get("formula") or f"DFA {self.id[:12]}"
        return str(text)

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_html_(self) -> str:
        from langclass.core.drawing.svg import word_text

        rows = []
        for key, r in self.classes.items():
            mem = {True: "yes", False: "no", None: "?"}[r.member]
            ev = r.certificate if r.member else r.witness
            if ev is not None and hasattr(ev, "to_dict"):
                ev = ev.to_dict()
            if isinstance(ev, Mapping) and "implied_by" in ev:  # through the lattice: the implying class's words
                ev = ev.get("certificate") or ev.get("witness")
            words = ""
            if isinstance(ev, Mapping):
                shown = [f"{k}={word_text(v)}" for k, v in ev.items()
                         if isinstance(v, list) and all(isinstance(s, str) for s in v)]
                words = ", ".join(shown[:4])
            name = html.escape(r.to_dict()["name"])
            rows.append(f"<tr><td>{name}</td><td class='m-{mem}'>{mem}</td><td>{html.escape(r.reason)}</td>"
                        f"<td>{html.escape(words)}</td></tr>")
        enc = "".join(f"<li>{fam}: <b>{html.escape(str(e.get('name')))}</b> — {html.escape(str(e.get('theorem') or ''))}</li>"
                      for fam, e in self.encodings.items())
        return (f"<div class='langclass'><div>{html.escape(self._title())} over "
                f"{{{html.escape(', '.join(self.dfa.alphabet))}}}: {self.dfa.num_states} states</div>{self.svg()}"
                "<table><tr><th>class</th><th>member</th><th>reason</th><th>words</th></tr>"
                f"{''.join(rows)}</table><ul>{enc}</ul></div>")

    def __repr__(self) -> str:
        yes = [k for k, v in self.members.items() if v]
        return f"<Classification {self._title()!r}: {self.dfa.num_states} states, member of {', '.join(yes) or 'none'}>"


def _parse(regex: str | None, alphabet: str | Sequence[str] | None, dfa: Any, formula: str | None,
           limits: Limits) -> tuple[DFA, dict[str, Any], dict[int, tuple[str, ...]]]:
    """The one language parser (:mod:`langclass.core.ingest.source`) with the Python API's spellings; a
    string alphabet is one symbol per character (:func:`read_alphabet`)."""
    from langclass.core.ingest.source import language_source, parse_language

    alpha = None if alphabet is None else read_alphabet(alphabet)
    parsed = parse_language(language_source(regex=regex, dfa=dfa, formula=formula, alphabet=alpha, spelling="python"),
                            limits)
    names = user_state_names(parsed.document, parsed.dfa) if parsed.document is not None else {}
    return parsed.dfa, parsed.source, names


def _dfa_json(dfa: DFA) -> dict[str, Any]:
    from langclass.core.automata.export import dfa_to_json

    return dfa_to_json(dfa)


def classify(regex: str | None = None, *, alphabet: str | Sequence[str] | None = None, dfa: Any = None,
             formula: str | None = None, limits: Limits = DEFAULT_LIMITS, cross_check: bool = False) -> Classification:
    """Classify one regular language in every class of the lattice, with certificates and encodings.

    Give exactly one of:

    * ``regex`` with ``alphabet`` (docs/regex.md syntax),
    * ``dfa=``: a DFA JSON document (``str``/``bytes``), a mapping in the same schema (its state
      names are kept: :attr:`Classification.state_names`), or a :class:`~langclass.core.automata.automaton.DFA`,
    * ``formula=`` with ``alphabet`` (past LTL, docs/formulas.md).

    ``alphabet`` is a string (one symbol per character) or a list of symbols.

    ``cross_check=True`` runs every class's own decider, so every answer carries its class's own
    certificate or witness, and checks that they agree; by default a class the lattice already
    answers (a member of a subclass, a non-member of a superclass) carries that class's evidence
    with the inclusion (``method == "lattice"``), which a replay checks the same way.

    Returns:
        :class:`Classification`.

    Raises:
        InputError and its subclasses (RegexSyntaxError, DfaFormatError, FormulaSyntaxError,
        AlphabetError, UnknownSymbolError), each naming the offending ``field``; LimitExceeded for
        inputs over ``limits``. A limit hit *during* the analysis leaves the affected classes
        undecided (``member is None``) instead of raising.

    Sources: see each class's ``source`` (e.g. LTL[P,MOD] = QR: "Disentangling the Expressivity of
    RoPE", Thm 3.3).
    """
    from langclass.core.classification.analysis import analyze

    machine, source, names = _parse(regex, alphabet, dfa, formula, limits)
    return Classification(source, analyze(machine, limits, cross_check=cross_check), names)


@dataclass(frozen=True)
class RunResult(Mapping[str, Any]):
    """The JSON-ready record of :func:`construct` or :func:`train` (the job result the API stores).

    A read-only :class:`collections.abc.Mapping` over ``record``: ``result["exact"]``, ``"exact" in
    result``, ``result.keys()``, ``dict(result)`` and iteration all see the record's keys.

    Attributes:
        kind: ``"construct"`` or ``"train"``.
        record: the record (see :func:`langclass.models.construct.verify.run_construction` and
            :func:`langclass.models.experiments.experiment.run_experiment` for its fields).
        model: with ``return_model=True``: the constructed torch module (construct), or
            ``{encoding label: Recognizer}`` of the best run per encoding (train); else None.
        downloads: with ``return_model=True``: ``{folder: {file name: bytes}}`` of the portable
            files (docs/models.md); :meth:`save_model` writes them.
    """

    kind: str
    record: dict[str, Any]
    model: Any = None
    downloads: dict[str, dict[str, bytes]] | None = field(default=None, repr=False)

    def save_model(self, directory: str) -> list[str]:
        """Write the portable model(s) into ``directory``: ``config.json``, ``model.safetensors`` and
        ``langclass_runner.py`` (construct), or one folder per encoding with the runner at the top
        (train). Returns the folders written.

        Raises:
            InputError: the result was made without ``return_model=True``.
        """
        if not self.downloads:
            raise InputError("this result holds no model: call construct/train with return_model=True", field="return_model")
        import os

        written = []
        for folder, files in self.downloads.items():
            for name, data in files.items():
                target = os.path.join(directory, name if name == "langclass_runner.py" or not folder else os.path.join(folder, name))
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                with open(target, "wb") as fh:
                    fh.write(data)
            written.append(os.path.join(directory, folder) if folder else directory)
        return written

    def __getitem__(self, key: str) -> Any:
        return self.record[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.record)

    def __len__(self) -> int:
        return len(self.record)

    def to_dict(self) -> dict[str, Any]:
        return self.record

    def _repr_html_(self) -> str:
        if self.kind == "construct":
            r = self.record
            return (f"<div>construction: encoding <b>{html.escape(str(r.get('encoding')))}</b>, attention "
                    f"{html.escape(str(r.get('attention')))}, exact: <b>{r.get('exact')}</b>, all words up to length "
                    f"{r.get('all_words_up_to')} and {r.get('random_words_checked')} random words checked</div>")
        lines = "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v.get('text') or v.get('verdict') or v))}</li>"
                        for k, v in (self.record.get("verdict", {}).get("per_encoding") or {}).items())
        return f"<div>experiment: {html.escape(str(self.record.get('verdict', {}).get('text')))}<ul>{lines}</ul></div>"


def construct(regex: str | None = None, *, alphabet: str | Sequence[str] | None = None, dfa: Any = None,
              formula: str | None = None, program: str | None = None, limits: Limits | None = None,
              time_limit_s: float | None = None, max_parameters: int | None = None, return_model: bool = False,
              **options: Any) -> RunResult:
    """Build an exact transformer for the language and verify it (imports torch).

    Same inputs as :func:`classify` plus ``program=`` (B-RASP text, hard attention); ``options``
    are those of :func:`langclass.models.construct.verify.run_construction` (``all_words_up_to``,
    ``random_words``, ``attention``, ``dtype``, ``seed``, ``mask``, ``by_class``, ``max_parameters``, ...;
    ``setting="causal"`` compiles the language's C-RASP program, :mod:`langclass.models.construct.verify_causal`).
    ``limits`` default: the settings' (``LANGCLASS_TIME_LIMIT_S``, ``LANGCLASS_MAX_PARAMETERS``, …).
    ``time_limit_s`` replaces the time limit (as ``langclass construct --time-limit``);
    ``max_parameters`` may only lower the parameter budget of ``limits``, never raise it.
    An unknown keyword raises :class:`InputError` listing the valid option names.
    ``return_model=True`` keeps the verified model: ``r.model`` is the torch module and
    ``r.save_model(dir)`` writes the portable files (docs/models.md).

    Returns:
        :class:`RunResult` of kind ``"construct"`` (``r["exact"]``, ``r["encoding"]``, ``r["formula"]``, ...).

    Raises:
        InputError, UnsupportedError (no construction known), LimitExceeded.
    """
    from langclass.models.construct.verify import _OPTION_KEYS, run_construction

    unknown = sorted(set(options) - _OPTION_KEYS - {"options"})
    if unknown:
        import difflib

        hints = [f"{k!r} (did you mean {', '.join(repr(m) for m in close)}?)" if close else repr(k)
                 for k in unknown
                 for close in [difflib.get_close_matches(k, [*_OPTION_KEYS, "time_limit_s"], n=2, cutoff=0.6)]]
        raise InputError(f"unknown construct option(s) {', '.join(hints)}; valid: "
                         f"{', '.join(sorted([*_OPTION_KEYS, 'limits', 'time_limit_s']))}", field=unknown[0])
    spec: dict[str, Any] = dict(options)
    if max_parameters is not None:
        spec["max_parameters"] = max_parameters
    for key, value in (("regex", regex), ("formula", formula), ("program", program)):
        if value is not None:
            spec[key] = value
    if dfa is not None:
        spec["dfa"] = _dfa_json(dfa) if isinstance(dfa, DFA) else (json.loads(dfa) if isinstance(dfa, (str, bytes)) else dict(dfa))
    if alphabet is not None:
        spec["alphabet"] = read_alphabet(alphabet)
    if limits is None:
        from .app.settings import Settings

        limits = Settings().limits()
    if time_limit_s is not None:
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float)) or not time_limit_s > 0:
            raise InputError(f"time_limit_s must be a positive number of seconds, got {time_limit_s!r}", field="time_limit_s")
        import dataclasses

        limits = dataclasses.replace(limits, time_limit_s=float(time_limit_s))
    if not return_model:
        return RunResult("construct", run_construction(spec, limits=limits))
    from langclass.models.portable.provenance import construct_files

    held: dict[str, Any] = {}
    record = run_construction(spec, limits=limits, on_model=lambda m, d: held.update(model=m, dfa=d))
    return RunResult("construct", record, held["model"], {"": construct_files(held["model"], held["dfa"], record)})


def train(regex: str | None = None, *, alphabet: str | Sequence[str] | None = None, dfa: Any = None,
          formula: str | None = None, encodings: Sequence[Any] = ("nope",), profile: str = "quick",
          seeds: Sequence[int] | None = None, learning_rates: Sequence[float] | None = None,
          overrides: Mapping[str, Any] | None = None, prediction: Mapping[str, Any] | None = None,
          return_model: bool = False, setting: str = "strict", task: str = "recognition") -> RunResult:
    """Train recognizers for the language with each encoding and report accuracy by length (imports torch).

    The language is given as in :func:`classify`; the experiment fields are those of
    :func:`langclass.models.experiments.experiment.run_experiment` (``encodings`` names or
    ``{"name", "params"}`` objects, ``profile`` ``"quick"``/``"paper"``, ``overrides`` such as
    ``{"max_steps": 200, "train_lengths": [1, 20], "test_lengths": [21, 40]}``). Without a
    ``prediction`` the theory's prediction is not compared and every encoding is ``"measured"``.
    ``setting`` is ``"strict"`` (strict mask, ``BOS w EOS``, readout at EOS) or ``"causal"``
    (non-strict mask, ``BOS w``, readout at the last position); ``task`` ``"recognition"`` or
    ``"state_prediction"`` (causal only; docs/training.md).
    ``return_model=True`` keeps the best run of every encoding (longest perfect length, then
    accuracy): ``r.model`` is ``{label: Recognizer}`` and ``r.save_model(dir)`` writes one folder per encoding.

    Returns:
        :class:`RunResult` of kind ``"train"`` (``r["runs"]``, ``r["summary"]``, ``r["verdict"]``).

    Raises:
        InputError (a malformed spec, naming the field), LimitExceeded.
    """
    from langclass.models.experiments.experiment import run_experiment

    machine, _source, _names = _parse(regex, alphabet, dfa, formula, DEFAULT_LIMITS)
    spec: dict[str, Any] = {"language": _dfa_json(machine), "encodings": list(encodings), "profile": profile,
                            "setting": setting, "task": task}
    if seeds is not None:
        spec["seeds"] = list(seeds)
    if learning_rates is not None:
        spec["learning_rates"] = list(learning_rates)
    if overrides:
        spec["overrides"] = dict(overrides)
    if prediction is not None:
        spec["prediction"] = dict(prediction)
    if not return_model:
        return RunResult("train", run_experiment(spec))
    from langclass.models.portable.provenance import BestRuns, run_rank

    best, models, keys = BestRuns(machine, prediction), {}, {}

    def keep(run: dict[str, Any], model: Any) -> None:
        best.on_model(run, model)  # the download (none for a model the portable format cannot carry)
        key = run_rank(run)
        if run["encoding"] not in keys or key > keys[run["encoding"]]:  # the best run of its encoding so far
            models[run["encoding"]], keys[run["encoding"]] = model, key

    record = run_experiment(spec, on_model=keep)
    return RunResult("train", record, models, best.folders())


def load_model(directory: str, *, max_parameters: int | None = None) -> Any:
    """Load a portable model (``langclass construct --save DIR``, ``r.save_model(DIR)``, a job's
    ``/model`` download unzipped): a ``torch.nn.Module`` with ``classify(words)``, ``logits(words)``,
    ``forward(ids, valid)``, ``hidden(ids, valid)`` and ``config`` (docs/models.md; imports torch).

    Raises:
        ModelFileError: malformed, changed or oversized files (nothing in them is executed).
    """
    from langclass.models.portable.load import load_model as _load
    from langclass.models.portable.runner import MAX_PARAMETERS

    return _load(directory, max_parameters=max_parameters or MAX_PARAMETERS)


def sweep(states: int | None = None, alphabet: int | None = None, *, per_cell: int | None = None, profile: str = "cpu", seed: int = 0,
          out: str = "sweep", overrides: Mapping[str, Any] | None = None, ray: str | None = None,
          census_run: str | None = None, database_url: str | None = None, setting: str | None = None,
          suite: str | None = None, task: str = "recognition", limit: int | None = None,
          only: Sequence[str] | None = None) -> dict[str, Any]:
    """The prediction tested by training across a stratified sample of census languages (imports torch);
    ``langclass sweep`` from Python (docs/sweep.md). ``setting``: ``"strict"`` (default), ``"causal"``
    (cells split by C-RASP; NoPE, learned, RoPE, ALiBi; non-strict mask, ``BOS w``, readout last) or
    ``"both"`` (``out/strict``, ``out/causal``; the result ``{"setting": "both", "strict", "causal"}``).

    With ``suite`` (``"state-tracking-crasp"``) every language of that published suite is trained
    instead (or the ``only`` names, or the first ``limit``), in ``setting`` (``"causal"``, the
    suite's default, or ``"strict"``) on ``task`` (``"recognition"`` or ``"state_prediction"``), and the content of ``suite.json`` is returned (``rows``: per language their labels
    and outcome, the product's classes, prediction and N*; ``agreement``; docs/sweep.md, "The
    published suite"); ``states``, ``alphabet``, ``per_cell``, ``seed`` and ``census_run`` are then
    not used.

    Draws ``per_cell`` languages from each cell of the lattice among the languages with at most
    ``states`` states over ``alphabet`` letters, trains each with every catalogue encoding, and writes
    ``sweep.json`` / ``.csv`` / ``.md`` / ``.png`` to ``out`` (resumable there). ``ray``: ``"auto"``,
    ``"host:port"`` or ``"local"`` to run one Ray task per language. ``states`` / ``alphabet``
    default to 3 and 2 — or, with ``census_run`` (the id of a stored census run in
    ``database_url``, default the configured database), to that run's N and K: the sample is then
    drawn from the run's members instead of enumerating, and ``census_run`` in the result names it.

    Returns:
        The content of ``sweep.json`` (``aggregate``, ``contradictions``, ``records``, ``sample``, ``census_run``).

    Raises:
        InputError (naming the field), LimitExceeded (``max_sample_languages``, ``max_sweep_runs`` or a job limit),
        NotFoundError (no census run ``census_run``).
    """
    from .app.usecases.sweep import load_census_run, run_settings

    runner = None
    if ray is not None:
        from .app.execution.sweep_ray import ray_sweep_runner

        runner = ray_sweep_runner(None if ray == "local" else ray)
    if suite is not None:
        from .app.usecases.suite import run_suite

        return run_suite(suite, out, profile=profile, setting=setting or "causal", task=task, only=list(only) if only else None, limit=limit,
                         overrides=overrides, runner=runner)
    if limit is not None or only:
        raise InputError("limit and only need suite", field="suite")
    row = load_census_run(census_run, database_url) if census_run is not None else None
    n = states if states is not None else (row.max_states if row is not None else 3)
    k = alphabet if alphabet is not None else (row.alphabet_size if row is not None else 2)
    return run_settings(n, k, per_cell, seed, out, setting=setting or "strict", profile=profile, overrides=overrides, runner=runner,
                        census_run=row)


# ============================================================================ automata-lib interop


def from_automata_lib(adfa: Any) -> DFA:
    """The canonical minimal complete DFA of an automata-lib ``automata.fa.dfa.DFA`` (optional extra
    ``langclass[automata]``; automata-lib 8 or later).

    automata-lib states may be any hashable values (``frozenset`` states come from
    ``DFA.from_nfa``); they are numbered here, so names never collide (``2`` and ``"2"`` stay two
    states). A partial DFA (``allow_partial=True``) gets an explicit sink for its missing
    transitions. The alphabet is ``sorted(input_symbols)``; symbols must be non-empty strings.

    Raises:
        DfaFormatError: not an automata-lib DFA (an NFA, say: determinize it with ``DFA.from_nfa``),
            or a transition to an unknown state.
        AlphabetError: a symbol that is not a non-empty string (the shared alphabet rules apply).
        LimitExceeded: ``max_states`` / ``max_alphabet``.
    """
    needed = ("states", "input_symbols", "transitions", "initial_state", "final_states")
    if not all(hasattr(adfa, a) for a in needed) or type(adfa).__name__ != "DFA":
        raise DfaFormatError(f"expected an automata-lib DFA (automata.fa.dfa.DFA), got {type(adfa).__name__}", field="dfa")
    symbols = list(adfa.input_symbols)
    if not all(isinstance(s, str) for s in symbols):
        raise AlphabetError("automata-lib input symbols must be strings to become a langclass alphabet", field="alphabet")
    alphabet = sorted(symbols)
    order: list[Any] = [adfa.initial_state]
    index = {adfa.initial_state: 0}
    rows: list[list[int]] = []
    sink: int | None = None
    for state in order:  # breadth-first from the initial state: unreachable states never matter
        row = []
        out = adfa.transitions.get(state, {})
        for sym in alphabet:
            if sym in out:
                target = out[sym]
                if target not in adfa.states:
                    raise DfaFormatError(f"transition {state!r} --{sym}--> {target!r}: unknown state", field="dfa.transitions")
                if target not in index:
                    index[target] = len(order)
                    order.append(target)
                row.append(index[target])
            else:  # partial DFA: the missing transition goes to a sink
                if sink is None:
                    sink = -1
                row.append(sink)
        rows.append(row)
    n = len(order)
    if sink is not None:
        rows = [[n if t == -1 else t for t in row] for row in rows] + [[n] * len(alphabet)]
    accepting = [index[s] for s in adfa.final_states if s in index]
    DEFAULT_LIMITS.check("max_states", len(rows))
    return DFA.from_table(alphabet, rows, 0, accepting).canonical()


def to_automata_lib(dfa: "DFA | Classification") -> Any:
    """An automata-lib ``automata.fa.dfa.DFA`` of the same language (states ``0..n-1`` of the
    canonical DFA, complete, input symbols the alphabet). Needs the optional extra
    ``langclass[automata]``.

    Raises:
        ImportError: automata-lib is not installed.
    """
    from automata.fa.dfa import DFA as AutomataDFA

    machine = dfa.dfa if isinstance(dfa, Classification) else dfa
    table = machine.transitions.tolist()
    return AutomataDFA(
        states=set(range(machine.num_states)),
        input_symbols=set(machine.alphabet),
        transitions={q: {s: int(r) for s, r in zip(machine.alphabet, row)} for q, row in enumerate(table)},
        initial_state=int(machine.initial),
        final_states=set(machine.accepting_states),
    )
