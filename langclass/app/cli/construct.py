"""``langclass construct``: build an exact transformer and verify it at every length.

Examples::

    langclass construct --formula 'MOD(2,1) & !P(MOD(2,0) & !a | MOD(2,1) & !b)' --alphabet ab
    langclass construct --regex 'a(a|b)*' --alphabet ab --json        # synthesized LTL[P] formula, NoPE
    langclass construct --formula 'P(b & Y a)' --alphabet abc --all-words 7
    langclass construct --program dyck.brasp --alphabet ab --regex '(a(ab)*b)*'   # hard attention
    langclass construct --formula 'Y a' --alphabet ab --dtype bfloat16 --target-length 20
    langclass construct --regex '(a|b)*a' --alphabet ab --y-mode recency --random-max-length 10000
    langclass construct --regex '(ab|ba)*' --alphabet ab --setting causal   # C-RASP: NoPE, non-strict mask
    langclass construct --regex '(ab)*' --alphabet ab --save tomita1/   # config.json, model.safetensors, langclass_runner.py

The result record is the one the job API stores for experiments of kind ``construct``
(:func:`langclass.models.construct.verify.run_construction`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from langclass.core.base.errors import InputError, LangclassError
from .common import fail as _fail
from .common import parse_alphabet

__all__ = ["register", "construct", "build_spec"]


def build_spec(*, formula: str | None, regex: str | None, dfa_text: str | None, program_text: str | None,
               alphabet: list[str] | None, options: dict[str, Any]) -> dict[str, Any]:
    """The job spec for :func:`~langclass.models.construct.verify.run_construction` from CLI arguments.

    Raises:
        InputError: no input, or an input that needs an alphabet without one.
    """
    spec: dict[str, Any] = {}
    given = [name for name, v in (("formula", formula), ("program", program_text)) if v is not None]
    if len(given) > 1:
        raise InputError("give at most one of --formula and --program", field="formula")
    if formula is not None:
        spec["formula"] = formula
    if program_text is not None:
        spec["program"] = program_text
    if regex is not None:
        spec["regex"] = regex
    if dfa_text is not None:
        try:
            spec["dfa"] = json.loads(dfa_text)
        except json.JSONDecodeError as exc:
            from langclass.core.base.errors import DfaFormatError

            raise DfaFormatError(f"the DFA file is not valid JSON: {exc}", field="dfa") from None
    if not spec:
        raise InputError("give --formula, --program, --regex or --dfa", field="formula")
    if regex is not None and dfa_text is not None:
        raise InputError("give at most one of --regex and --dfa", field="regex")
    if alphabet is not None:
        spec["alphabet"] = alphabet
    elif "dfa" not in spec:
        raise InputError("--alphabet is required (the alphabet is never inferred)", field="alphabet")
    spec["options"] = {k: v for k, v in options.items() if v is not None}
    return spec


def _read(path: Path, what: str) -> str:
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the {what} file {path}: {exc}", field=what) from None


def construct(
    formula: Annotated[Optional[str], typer.Option("--formula", "-f", help="LTL formula, e.g. 'P(b & Y a)'")] = None,
    regex: Annotated[Optional[str], typer.Option("--regex", "-r", help="regex (a formula is synthesized when one is known)")] = None,
    dfa: Annotated[Optional[Path], typer.Option("--dfa", help="DFA JSON file ('-' = standard input)")] = None,
    program: Annotated[Optional[Path], typer.Option("--program", help="B-RASP program file (hard attention)")] = None,
    alphabet: Annotated[Optional[str], typer.Option("--alphabet", "-a", help="'ab' = {a,b}; 'x1,x2' for longer symbols; '\\,' is a comma symbol ('a,\\,' = {a, ','})")] = None,
    attention: Annotated[str, typer.Option(help="auto | soft | hard")] = "auto",
    route: Annotated[str, typer.Option(help="hard attention from a language: auto (the smaller) | cascade (Krohn–Rhodes) | local-divisors")] = "auto",
    dtype: Annotated[str, typer.Option(help="float32 | bfloat16 | float16 | float64")] = "float32",
    all_words: Annotated[Optional[int], typer.Option("--all-words", help="check every word up to this length")] = None,
    random_words: Annotated[int, typer.Option(help="random words (half accepted, half rejected)")] = 32,
    random_max_length: Annotated[int, typer.Option(help="longest random word")] = 2000,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    y_mode: Annotated[Optional[str], typer.Option("--y-mode", help="Y heads: rope (conventional RoPE, exact up to N_max) | recency (ALiBi slope ≥ f_large, exact at every length); default recency for an LTL[P,Y,MOD] formula synthesized through the marked alphabet, else rope")] = None,
    g: Annotated[float, typer.Option(help="RoPE angle of the Y^k heads (radians per position)")] = 1.0,
    c_y: Annotated[Optional[float], typer.Option("--c-y", help="score scale of the Y^k heads (overrides --target-length)")] = None,
    target_length: Annotated[int, typer.Option(help="length the Y^k scale C_Y is chosen to certify")] = 300,
    as_json: Annotated[bool, typer.Option("--json", help="print the full result record")] = False,
    show_program: Annotated[bool, typer.Option("--show-program", help=f"print the whole B-RASP program and formula (by default only when at most {SHORT_PROGRAM_LINES} lines / {SHORT_FORMULA_CHARS} characters)")] = False,
    mask: Annotated[str, typer.Option(help="hard-attention mask: strict (j < i, every star-free language) | nonstrict (j ≤ i / j ≥ i only: stutter-invariant star-free languages, Thm 18)")] = "strict",
    as_written: Annotated[bool, typer.Option("--as-written", help="build the --formula as written, even when its language is in a class with a weaker model (by default such a formula is replaced by the synthesized formula of its class, e.g. LTL[P]: NoPE)")] = False,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help="wall-clock seconds for synthesis, build and verification (default LANGCLASS_TIME_LIMIT_S, 60)")] = None,
    max_parameters: Annotated[Optional[int], typer.Option("--max-parameters", help="parameter budget, checked on the plan before any weight is allocated (default LANGCLASS_MAX_PARAMETERS, 10000000)")] = None,
    setting: Annotated[str, typer.Option(help="fixed, also named strict as in train (fixed-precision soft attention with a strict mask, or hard attention) | causal (the language's C-RASP program: soft attention, non-strict causal mask, NoPE, read at the last position; exact up to the certified length)")] = "fixed",
    crasp_program: Annotated[Optional[Path], typer.Option("--crasp-program", help="C-RASP program JSON file for --setting causal (default: the program of the language's crasp certificate)")] = None,
    save: Annotated[Optional[Path], typer.Option("--save", help="write the verified model to this folder: config.json, model.safetensors and langclass_runner.py (docs/models.md)")] = None,
) -> None:
    """Construct the exact transformer of a formula / B-RASP program / language and verify it."""

    try:
        spec = build_spec(
            formula=formula, regex=regex,
            dfa_text=_read(dfa, "dfa") if dfa is not None else None,
            program_text=_read(program, "program") if program is not None else None,
            alphabet=parse_alphabet(alphabet) if alphabet is not None else None,
            options={"attention": attention, "dtype": dtype, "all_words_up_to": all_words, "random_words": random_words,
                     "random_max_length": random_max_length, "seed": seed, "y_mode": y_mode, "g": g, "C_y": c_y,
                     "target_length": target_length, "mask": None if mask == "strict" else mask,
                     "by_class": False if as_written else None, "route": route,
                     "setting": None if setting in ("fixed", "strict") else setting,
                     "crasp_program": _read_json(crasp_program, "crasp_program") if crasp_program is not None else None},
        )
        from langclass.models.construct.verify import run_construction

        held: dict[str, Any] = {}
        result = run_construction(spec, limits=construct_limits(time_limit, max_parameters),
                                  on_model=(lambda m, d: held.update(model=m, dfa=d)) if save is not None else None)
        if save is not None:
            _save(save, held, result)
    except LangclassError as err:
        _fail(_as_flags(err), as_json)
        return
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return
    if result.get("setting") == "causal":
        for line in causal_summary_lines(result, show_program):
            typer.echo(line)
        if not result["exact"]:
            raise typer.Exit(code=1)
        return
    m = result["model"]
    for line in summary_lines(result, show_program):
        typer.echo(line)
    mask_text = f", mask {result['mask']}" if result.get("mask") and result["attention"] == "hard" else ""
    typer.echo(f"model      {result['attention']} attention, encoding {result['encoding']}{mask_text}, {m['layers']} layers, "
               f"{m['heads']} heads, d_model {m['d_model']}, {m['parameters']:,} parameters, {m['dtype']}")
    r = result.get("route") or {}
    if r.get("cascade_height") is not None:
        c = r.get("cascade") or {}
        mod = f", positions marked mod {c['modulus']}" if c.get("modulus", 1) > 1 else ""
        typer.echo(f"route      {r['route']} (cascade height {r['cascade_height']}, states per level "
                   f"{c.get('states_per_level')}{mod}), {r['parameters']:,} parameters")
    elif r.get("route") == "local-divisors":
        typer.echo(f"route      local-divisors, {r['parameters']:,} parameters")
    if result["n_max"] is not None:
        typer.echo(f"N_max      {result['n_max']} (certified range of the Y^k heads, Eq. 10){_scale_note(m)}")
    typer.echo(f"exact      {result['exact']}   all words ≤ {result['all_words_up_to']} ({result['words_checked']} words), "
               f"random words ≤ {result['random_words_up_to']} ({result['random_words_checked']})")
    v = result.get("verification") or {}
    if v.get("sized_to_time_limit") and v.get("stopped_by_time"):  # the defaults were cut short by the time limit
        typer.echo(f"verified   sized to the time limit (minimum: all words ≤ {v['minimum_all_words_up_to']})"
                   + "".join(f"; {why}" for why in v["stopped_by_time"]))
    if result["first_failure"]:
        ff = result["first_failure"]
        word = ff["word"] if isinstance(ff["word"], str) else " ".join(ff["word"])
        typer.echo(f"failure    {word[:80]}{'…' if len(word) > 80 else ''} (length {ff['length']}): "
                   f"expected {ff['expected']}, produced {ff['produced']}")
    b = result["beyond_n_max"]
    if b:
        typer.echo(f"beyond     {b['words_checked']} words longer than N_max (≤ {b['longest']}): {b['wrong']} wrong, "
                   f"{b['inexact']} inexact")
    if not result["exact"]:
        raise typer.Exit(code=1)


def _save(folder: Path, held: dict[str, Any], result: dict[str, Any]) -> None:
    """Write the portable model into ``folder`` and note it in the record (``result["saved"]``).

    Raises:
        InputError: the folder cannot be written.
    """
    from langclass.models.portable.provenance import construct_files

    files = construct_files(held["model"], held["dfa"], result)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write the model to {folder}: {exc}", field="save") from None
    result["saved"] = {"folder": str(folder), "files": sorted(files)}
    typer.echo(f"saved      {folder}/ ({', '.join(sorted(files))}); run: python {folder}/langclass_runner.py {folder} WORD…",
               err=True)


SHORT_PROGRAM_LINES = 40
"""A B-RASP program of at most this many lines is printed whole without ``--show-program``."""
SHORT_FORMULA_CHARS = 600
"""A formula of at most this many characters is printed whole without ``--show-program``."""


def summary_lines(result: dict, show_program: bool = False) -> list[str]:
    """The formula, synthesis and program lines of the ``construct`` summary of a
    :func:`~langclass.models.construct.verify.run_construction` record: a long formula or program is summarized
    (its size; ``--show-program`` or ``--json`` has it), a formula too large to be stored says so with
    its size, and the synthesis line says whether the formula was verified equivalent to the DFA."""
    lines: list[str] = []
    if result.get("input_fragment"):
        given = result.get("input_formula") or result.get("formula") or ""
        lines.append(f"input      {given[:SHORT_FORMULA_CHARS]}   [{result['input_fragment']}]")
        lines.append(f"class      {result.get('language_class') or 'undecided'} (the language); formula "
                     f"{result.get('formula_choice', 'as written')}")
    frag = f"   [{result['fragment']}]" if result.get("fragment") else ""
    syn = result.get("synthesis") or {}
    text = result.get("formula")
    route = result.get("route") or {}
    if route.get("route") == "cascade":
        # the model was compiled from the holonomy cascade: the local-divisor formula (the candidate the
        # route chooser did not keep) is not what was built, so it is not printed as if it were
        c = route.get("cascade") or {}
        mod = f", on the automaton of the {c['modulus']}-marked language" if c.get("modulus", 1) > 1 else ""
        lines.append(f"synthesis  cascade: holonomy decomposition, {route.get('cascade_height')} levels, states per level "
                     f"{c.get('states_per_level')}, {c.get('global_size', '?')} global states{mod} ({c.get('source', '')})")
        other = (route.get("candidates") or {}).get("local-divisors") or {}
        if other.get("parameters") or other.get("parameters_at_least"):
            size = (f"{other['parameters']:,} parameters planned" if other.get("parameters")
                    else f"at least {other['parameters_at_least']:,} parameters")
            lines.append(f"not built  local-divisors route ({size}; --json has its formula)")
        text, syn = None, {}
    if text is not None:
        if show_program or len(text) <= SHORT_FORMULA_CHARS:
            lines.append(f"formula    {text}{frag}")
        else:
            size = f", {syn['formula_tree_size']:,} nodes" if syn.get("formula_tree_size") else ""
            lines.append(f"formula    {text[:120]}… ({len(text):,} characters{size}; --show-program or --json prints it){frag}")
    elif syn.get("formula_tree_size") and route.get("route") != "cascade":
        lines.append(f"formula    not shown: {syn['formula_tree_size']:,} nodes as a tree "
                     f"({syn.get('formula_distinct_subformulas', '?'):,} distinct subformulas), too large to print{frag}")
    if syn:
        verified = syn.get("verified")
        lines.append(f"synthesis  {syn['method']} ({syn['source']})")
        lines.append(f"verified   {verified}   (synthesized formula equivalent to the minimal DFA)" if verified is not None
                     else "verified   not checked")
    program = result.get("program")
    if program:
        program_lines = program.splitlines()
        if show_program or len(program_lines) <= SHORT_PROGRAM_LINES:
            lines.append("program    " + program.replace("\n", "\n           "))
        else:
            m = result.get("model") or {}
            lines.append(f"program    {len(program_lines):,} lines, depth {m.get('program_depth', '?')} "
                         f"(--show-program prints it; --json has it)")
    return lines


def causal_summary_lines(result: dict, show_program: bool = False) -> list[str]:
    """The summary of a causal-setting record (:mod:`langclass.models.construct.verify_causal`): the C-RASP
    program (whole when at most :data:`SHORT_PROGRAM_LINES` lines or ``show_program``), the model,
    the certified lengths and the checks."""
    m, c, p = result["model"], result["crasp"], result["precision"]
    lines = [f"setting    causal (C-RASP program from the {c['source']}, depth {c['depth']}, {c['operations']} operations)"]
    text = c["text"].splitlines()
    if show_program or len(text) <= SHORT_PROGRAM_LINES:
        lines.append("program    " + "\n           ".join(text))
    else:
        lines.append(f"program    {len(text) - 2} operations (--show-program prints them; --json has the program)")
    lines.append(f"model      soft attention, encoding nope, mask nonstrict, {m['layers']} layers ({m['attention_layers']} with "
                 f"attention), {m['heads']} head{'s' if m['heads'] != 1 else ''}, d_model {m['d_model']}, {m['parameters']:,} parameters, {m['dtype']}")
    def n(v):
        return "every length" if v is None else f"{v:,}"
    lines.append(f"certified  word lengths: float32 {n(p['float32'])}, bfloat16 {n(p['bfloat16'])} "
                 f"({n(p['bfloat16_float32_accumulation'])} with float32 accumulation); this model ({m['dtype']}): "
                 f"{n(result['n_max'])}")
    lines.append(f"exact      {result['exact']}   all words ≤ {result['all_words_up_to']} ({result['words_checked']} words), "
                 f"random words ≤ {result['random_words_up_to']} ({result['random_words_checked']})")
    if result["first_failure"]:
        ff = result["first_failure"]
        word = ff["word"] if isinstance(ff["word"], str) else " ".join(ff["word"])
        lines.append(f"failure    {word[:80]}{'…' if len(word) > 80 else ''} (length {ff['length']}): "
                     f"expected {ff['expected']}, produced {ff['produced']}")
    b = result["beyond_n_max"]
    if b:
        lines.append(f"beyond     {b['words_checked']} words longer than N_max (≤ {b['longest']}): {b['wrong']} wrong, "
                     f"{b['inexact']} inexact")
    return lines


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(_read(path, what))
    except json.JSONDecodeError as exc:
        raise InputError(f"the {what} file is not valid JSON: {exc}", field=what) from None


def _scale_note(model: dict) -> str:
    """Which Y^k score scale C_Y the range holds for, and why ``classify`` reports another N_max:
    the classification certifies conventional RoPE at its score scale C (``encodings.soft.parameters.C``,
    ``DEFAULT_PARAMS.C``), the construction by default picks the smallest C_Y that certifies ``--target-length``."""
    from langclass.core.precision.encoding_choice import DEFAULT_PARAMS

    constants = model.get("constants") or {}
    c_y = constants.get("C_Y")
    if c_y is None:
        return ""
    if constants.get("target_length") is not None:
        return (f" at C_Y = {c_y:.3g}, chosen for --target-length {constants['target_length']}; "
                f"classify's N_max is at C = {DEFAULT_PARAMS.C:g} (--c-y {DEFAULT_PARAMS.C:g} builds that range)")
    return f" at C_Y = {c_y:.3g} (--c-y)"


def construct_limits(time_limit: float | None = None, max_parameters: int | None = None):
    """The :class:`~langclass.core.base.limits.Limits` of one ``construct`` run: the service settings
    (``LANGCLASS_TIME_LIMIT_S``, ``LANGCLASS_MAX_PARAMETERS``, …) with ``--time-limit`` and
    ``--max-parameters`` in their place when given (``--max-parameters`` only lowers
    ``LANGCLASS_MAX_PARAMETERS``, never raises it).

    Raises:
        InputError: a non-positive ``time_limit`` or ``max_parameters``.
    """
    import dataclasses

    from langclass.app.settings import get_settings

    limits = get_settings().limits()
    if time_limit is not None:
        if not time_limit > 0:
            raise InputError("--time-limit must be a positive number of seconds", field="time_limit")
        limits = dataclasses.replace(limits, time_limit_s=float(time_limit))
    if max_parameters is not None:
        if max_parameters < 1:
            raise InputError("--max-parameters must be ≥ 1", field="max_parameters")
        # the option may lower the setting's budget, never raise it (as the API job's option)
        budget = int(max_parameters) if limits.max_parameters is None else min(int(max_parameters), limits.max_parameters)
        limits = dataclasses.replace(limits, max_parameters=budget)
    return limits


_FLAGS = {"all_words_up_to": "--all-words", "random_words": "--random-words", "random_max_length": "--random-max-length",
          "seed": "--seed", "y_mode": "--y-mode", "g": "--g", "C_y": "--c-y", "target_length": "--target-length",
          "attention": "--attention", "dtype": "--dtype", "mask": "--mask", "route": "--route", "by_class": "--as-written",
          "setting": "--setting", "crasp_program": "--crasp-program"}
"""The construct option behind each CLI flag (errors name the flag the user typed)."""


def _as_flags(err: LangclassError) -> LangclassError:
    """``err`` with an ``options.<key>`` field and ``option <key>`` in its text named by the CLI flag."""
    key = err.field[len("options."):] if err.field and err.field.startswith("options.") else None
    if key in _FLAGS:
        flag = _FLAGS[key]
        err.detail = err.detail.replace(f"option {key} ", f"{flag} ").replace(f"{key} must", f"{flag} must")
        err.field = flag
    return err


def register(app: typer.Typer) -> None:
    """Add the ``construct`` command to the ``langclass`` CLI."""
    app.command("construct")(construct)
