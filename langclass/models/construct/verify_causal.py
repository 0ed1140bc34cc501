"""The causal setting of ``construct``: compile a language's C-RASP program into a soft-attention NoPE
transformer with a non-strict causal mask, verify it and record it.

:func:`run_causal_construction` is what :func:`langclass.models.construct.verify.run_construction` (CLI
``langclass construct --setting causal``, Python ``langclass.construct(..., setting="causal")``, job
specs with ``"setting": "causal"``) runs for that setting. The program comes from the ``crasp``
class certificate of the language's minimal DFA (field ``program``) or is given as ``crasp_program``
(C-RASP JSON, :meth:`~langclass.core.logic.crasp.CraspProgram.to_json`);
:func:`construct_causal_program` takes a :class:`~langclass.core.logic.crasp.CraspProgram` directly.
A language without a C-RASP program is refused (:class:`UnsupportedError`, 422 / exit 2).

Checks, on every word up to ``all_words_up_to`` and on random words up to ``random_max_length``
(half accepted, half rejected when a DFA is known): (1) the model's decision at the last index
against the C-RASP interpreter, (2) the interpreter against the DFA, (3) every Boolean of the
program exactly 0/1 in the model's stream at every position. Exactness is claimed up to the
certified length of the model's format (:mod:`langclass.core.precision.counting`); longer random
words are checked and reported apart (``beyond_n_max``), as for conventional RoPE.

Source: *Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers*
(Yang & Chiang, 2024), the compilation theorem.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from langclass.core.ingest.source import parse_language, source_from_mapping
from langclass.core.logic.crasp import CraspProgram
from langclass.core.precision.counting import counting_precision_report
from langclass.version import code_version
from langclass.models.construct.counting import CountingTransformer
from langclass.models.construct.counting_plan import plan_counting, planned_counting_parameters
from langclass.models.construct.options import MAX_RANDOM_LENGTH, MAX_VERIFY_WORDS, _count_words, _int_opt, _lengths, _options
from langclass.models.construct.options import default_all_words_length
from langclass.models.nn.tokens import BOS, NUM_SPECIAL
from langclass.models.construct.verify_stream import CancellableLimits, Guard, query_block, word_chunks

__all__ = ["run_causal_construction", "validate_causal_spec", "construct_causal_program", "crasp_program_of",
           "verify_counting_model", "CAUSAL_DTYPES"]

CAUSAL_DTYPES = ("float32", "float64", "bfloat16", "float16")

CAUSAL_WORD_BUDGET = 30_000
"""Words of the default exhaustive check over three or more letters (all words up to 9 over three);
two letters keep the length 12 of every construction."""

_NOT_APPLICABLE = {"attention": ("auto", "soft"), "route": ("auto",), "mask": ("nonstrict",), "g": (1.0,),
                   "target_length": (300,), "y_mode": (), "C_y": (), "C_p": (), "mod_safety": (), "n_max_cap": ()}
"""Options of the fixed-precision constructions and the values the causal setting accepts for them
(the CLI passes the defaults of ``--attention``, ``--route``, ``--g`` and ``--target-length``)."""


def crasp_program_of(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> tuple[CraspProgram, dict[str, Any]]:
    """The C-RASP program of the language, from its ``crasp`` class certificate (field ``program``).

    Returns:
        ``(program, info)`` with ``info = {"source": "crasp certificate", "reason": …}``.

    Raises:
        UnsupportedError: the language has no C-RASP program (with the decider's reason and witness),
            the decision was left open by a limit, or this build has no C-RASP decider.
        InputError: the certificate's program does not validate.
    """
    from langclass.core.algebra.classes import REGISTRY, Context

    decider = REGISTRY.get("crasp")
    if decider is None:
        raise UnsupportedError("this build has no C-RASP decider (class 'crasp'); give the program as crasp_program",
                               field="options.setting")
    result = decider.decide(Context(dfa, limits=limits, deadline=limits.deadline()))
    if result.member is None:
        raise UnsupportedError(f"C-RASP membership was left open: {result.reason}", field="options.setting")
    if not result.member:
        witness = None if result.witness is None else result.witness.to_dict()
        raise UnsupportedError(
            f"the language has no C-RASP program, so there is no construction in the causal setting: {result.reason}",
            field="options.setting", witness=witness, missing_classes=["crasp"])
    cert = None if result.certificate is None else result.certificate.to_dict()
    if not cert or "program" not in cert:
        raise UnsupportedError("the crasp certificate carries no program", field="options.setting")
    return CraspProgram.from_json(cert["program"]), {"source": "crasp certificate", "reason": result.reason}


# ============================================================================ verification
def _new_acc() -> dict:
    return {"checked": 0, "wrong": 0, "sim_inexact": 0, "program_dfa_mismatch": 0, "first_failure": None,
            "first_inexact": None, "first_dfa_mismatch": None, "max_length": 0}


def _text(alphabet: Sequence[str], w: np.ndarray) -> str | list[str]:
    syms = [alphabet[int(i)] for i in w]
    return "".join(syms) if all(len(a) == 1 for a in alphabet) else syms


def _hidden(model: CountingTransformer, words: np.ndarray, guard: Guard | None) -> torch.Tensor:
    B, N = words.shape
    ids = torch.from_numpy(np.concatenate([np.full((B, 1), BOS, dtype=np.int64), words + NUM_SPECIAL], axis=1))
    block = query_block(B, 1, N + 1)
    with torch.no_grad():
        if block is None:
            return model(ids)
        caches, outs = None, []
        for s0 in range(0, N + 1, block):
            h, caches = model.extend(ids[:, s0:s0 + block], caches)
            outs.append(h)
            if guard is not None:
                guard.tick()
        return torch.cat(outs, dim=1)


def _check(model: CountingTransformer, program: CraspProgram, dfa: DFA | None, words: np.ndarray,
           guard: Guard | None, acc: dict) -> None:
    B, N = words.shape
    hidden = _hidden(model, words, guard)
    logits = model.readout(hidden[:, -1])[:, 0].double().numpy()
    produced = logits > 0
    vals = program.evaluate_batch(words)
    expected = vals[program.output][:, -1] if N else np.full(B, program.accepts_empty)
    sim_bad = np.zeros(B, dtype=bool)
    for name, v in model.boolean_values(hidden).items():
        got = v.numpy()
        sim_bad |= got[:, 0] != 0.0
        if N:
            sim_bad |= (got[:, 1:] != vals[name].astype(np.float64)).any(axis=1)
    by_dfa = expected.copy()
    if dfa is not None:
        states = np.full(B, dfa.initial, dtype=np.int64)
        for col in range(N):
            states = dfa.transitions[states, words[:, col]]
        by_dfa = dfa.accepting[states]
    wrong, mismatch = produced != expected, expected != by_dfa
    acc["checked"] += B
    acc["wrong"] += int(wrong.sum())
    acc["sim_inexact"] += int(sim_bad.sum())
    acc["program_dfa_mismatch"] += int(mismatch.sum())
    acc["max_length"] = max(acc["max_length"], N)
    alphabet = program.alphabet
    if wrong.any() and acc["first_failure"] is None:
        i = int(np.flatnonzero(wrong)[0])
        acc["first_failure"] = {"word": _text(alphabet, words[i]), "length": N, "expected": bool(expected[i]),
                                "produced": bool(produced[i]), "logit": float(logits[i])}
    if sim_bad.any() and acc["first_inexact"] is None:
        acc["first_inexact"] = {"word": _text(alphabet, words[int(np.flatnonzero(sim_bad)[0])]), "length": N}
    if mismatch.any() and acc["first_dfa_mismatch"] is None:
        i = int(np.flatnonzero(mismatch)[0])
        acc["first_dfa_mismatch"] = {"word": _text(alphabet, words[i]), "program": bool(expected[i]),
                                     "dfa": bool(by_dfa[i])}


def _random_word(dfa: DFA | None, k: int, L: int, want: bool, rng: np.random.Generator) -> np.ndarray:
    if dfa is not None:
        from langclass.core.automata.words import sample_word

        idx = {a: i for i, a in enumerate(dfa.alphabet)}
        w = sample_word(dfa, int(L), want, rng)
        if w is None:
            w = sample_word(dfa, int(L), not want, rng)
        if w is not None:
            return np.array([idx[s] for s in w], dtype=np.int64)
    return rng.integers(0, k, int(L))


def verify_counting_model(model: CountingTransformer, program: CraspProgram, dfa: DFA | None, *, all_words_up_to: int,
                          random_lengths: Sequence[int], beyond_lengths: Sequence[int] = (), seed: int = 0,
                          progress: Callable[[dict], None] | None = None, should_cancel: Callable[[], bool] | None = None,
                          deadline: Deadline | None = None) -> dict[str, Any]:
    """Check a :class:`CountingTransformer` on every word up to ``all_words_up_to``, one random word per
    entry of ``random_lengths`` and (reported apart) of ``beyond_lengths``.

    Returns:
        ``{"all_words": acc, "random": acc, "beyond": acc}``, ``acc`` = counts (``checked``, ``wrong``,
        ``sim_inexact``, ``program_dfa_mismatch``, ``max_length``) and the first failures.

    Raises:
        ConstructionCancelled, TimeLimitExceeded: as :func:`langclass.models.construct.verify.verify_formula_model`.
    """
    k = len(program.alphabet)
    rng = np.random.default_rng(seed)
    out = {"all_words": _new_acc(), "random": _new_acc(), "beyond": _new_acc()}
    guard = Guard(deadline, should_cancel, out)
    width = model.plan.d_model + 2 * len(model.plan.literals) + max((len(la.units) for la in model.plan.layers), default=0)
    total = _count_words(k, all_words_up_to)
    for L in range(all_words_up_to + 1):
        for words in word_chunks(k, L, (L + 1) * (L + 1 + width)):
            guard(f"verification (all words of length {L})")
            _check(model, program, dfa, words, guard, out["all_words"])
        if progress:
            progress({"phase": "all_words", "length": L, "done": out["all_words"]["checked"], "total": total})
    for name, lengths in (("random", random_lengths), ("beyond", beyond_lengths)):
        for t, L in enumerate(lengths):
            guard(f"verification ({name} word of length {L})")
            w = _random_word(dfa, k, L, t % 2 == 0, rng)
            _check(model, program, dfa, w[None, :], guard, out[name])
            if progress:
                progress({"phase": name, "length": int(L), "done": t + 1, "total": len(lengths)})
    return out


# ============================================================================ spec → record
def _prepare(spec: Mapping, limits: Limits) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise InputError("a construction spec is a JSON object", field="spec")
    if isinstance(spec.get("language"), Mapping):
        spec = {**spec["language"], **{k: v for k, v in spec.items() if k != "language"}}
    opts = _options(spec)
    for key, allowed in _NOT_APPLICABLE.items():
        if opts.get(key) is not None and opts[key] not in allowed:
            raise InputError(f"option {key} does not apply to the causal setting (soft attention, non-strict "
                             f"mask, NoPE); drop it", field=f"options.{key}")
    for key in ("formula", "program"):
        if key in spec:
            raise InputError(f"the causal setting compiles a C-RASP program: give a regex or a DFA (its program comes "
                             f"from the crasp certificate) or crasp_program, not {key!r}", field=key)
    dtype = opts.get("dtype", "float32")
    if dtype not in CAUSAL_DTYPES:
        raise InputError(f"dtype must be one of {list(CAUSAL_DTYPES)}, got {dtype!r}", field="options.dtype")
    dfa = None
    if "regex" in spec or "dfa" in spec:
        keys = ("regex", "dfa", "alphabet") if "regex" in spec else ("dfa",)
        dfa = parse_language(source_from_mapping({k: spec[k] for k in keys if k in spec}, kinds=("regex", "dfa")),
                             limits).dfa
    given = opts.get("crasp_program")
    if given is not None:
        program = given if isinstance(given, CraspProgram) else CraspProgram.from_json(given)
        info: dict[str, Any] = {"source": "given"}
        if dfa is not None and tuple(dfa.alphabet) != program.alphabet:
            raise InputError("the reference language's alphabet differs from the program's", field="alphabet")
    elif dfa is not None:
        program, info = crasp_program_of(dfa, limits)
    else:
        raise InputError("give a regex (with alphabet) or a DFA, or crasp_program", field="spec")
    plan = plan_counting(program)
    max_parameters = _int_opt(opts, "max_parameters", None, 1, 10 ** 12)
    if limits.max_parameters is not None:
        max_parameters = limits.max_parameters if max_parameters is None else min(max_parameters, limits.max_parameters)
    planned = planned_counting_parameters(plan)
    if max_parameters is not None and planned > max_parameters:
        err = LimitExceeded("max_parameters", max_parameters, f"the planned model has {planned:,} parameters "
                            f"(> max_parameters = {max_parameters:,})", field="options.max_parameters")
        err.extra["planned"] = {"parameters": planned, **plan.summary()}
        raise err
    k = len(program.alphabet)
    # 12 over two letters as every construction; a smaller word budget over more letters (these models are
    # deeper: one feed-forward layer per Boolean nesting level), e.g. 9 over three letters
    n_all = _int_opt(opts, "all_words_up_to", default_all_words_length(k, budget=CAUSAL_WORD_BUDGET), 0, 64)
    if _count_words(k, n_all) > MAX_VERIFY_WORDS:
        raise LimitExceeded("max_verify_words", MAX_VERIFY_WORDS, f"all words up to length {n_all} over {k} letters "
                            f"are {_count_words(k, n_all)} words; lower all_words_up_to", field="options.all_words_up_to")
    return {"program": program, "info": info, "dfa": dfa, "plan": plan, "planned": planned, "dtype": dtype,
            "n_all": n_all, "seed": _int_opt(opts, "seed", 0, 0, 2 ** 31),
            "random_words": _int_opt(opts, "random_words", 32, 0, 10_000),
            "random_max": _int_opt(opts, "random_max_length", 2000, 0, MAX_RANDOM_LENGTH),
            "beyond": bool(opts.get("beyond_n_max", True)), "threads": _int_opt(opts, "threads", 1, 1, 256),
            "input": "crasp_program" if given is not None and dfa is None else ("regex" if "regex" in spec else "dfa")}


def validate_causal_spec(spec: Mapping, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a causal-setting spec before it is queued: options, the language, its C-RASP program and
    the planned size (no tensor). Raises as :func:`run_causal_construction`."""
    _prepare(spec, limits)


def run_causal_construction(spec: Mapping, *, progress: Callable[[dict], None] | None = None,
                            should_cancel: Callable[[], bool] | None = None, limits: Limits = DEFAULT_LIMITS,
                            on_model: Callable[[Any, DFA | None], None] | None = None) -> dict[str, Any]:
    """Build, verify and record the causal-setting transformer of a spec (module docstring).

    Args:
        spec: ``{"regex", "alphabet"}`` or ``{"dfa"}`` (also under ``"language"``) and/or
            ``crasp_program``; options as :func:`langclass.models.construct.verify.run_construction`
            (``dtype``, ``all_words_up_to``, ``random_words``, ``random_max_length``, ``seed``,
            ``beyond_n_max``, ``threads``, ``max_parameters``); the fixed-precision options
            (``attention`` other than soft, ``mask`` strict, ``route``, ``y_mode``, ``g`` …) are refused.
        on_model: called with the verified :class:`CountingTransformer` and the DFA (None for a bare
            program) after the record is complete: ``--save``, ``return_model``, the job's download.

    Returns:
        The record: ``setting`` "causal", ``crasp`` (program JSON and text, depth, where it came from),
        ``model`` (layers, heads, d_model, parameters, program depth …), ``precision`` (certified word
        lengths per format), ``n_max`` (the model format's certified length), ``exact``, ``checks``, …

    Raises:
        InputError, UnsupportedError (no C-RASP program), LimitExceeded, ConstructionCancelled,
        TimeLimitExceeded.
    """
    t0 = time.monotonic()
    limits = CancellableLimits(**{name: getattr(limits, name) for name in Limits.__dataclass_fields__},
                               cancel=should_cancel, end=None if limits.time_limit_s is None else t0 + limits.time_limit_s)
    deadline = Deadline(limits.time_limit_s)
    if limits.end is not None:
        deadline.end_by(limits.end)
    prep = _prepare(spec, limits)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(prep["threads"])
    try:
        return _run(prep, t0, progress, should_cancel, deadline, on_model)
    finally:
        torch.set_num_threads(previous_threads)


def _run(prep: dict, t0: float, progress, should_cancel, deadline: Deadline, on_model=None) -> dict[str, Any]:
    program, plan, dfa, dtype = prep["program"], prep["plan"], prep["dfa"], prep["dtype"]
    t_build = time.monotonic()
    model = CountingTransformer(plan, dtype)
    deadline.check("model build")
    build_seconds = time.monotonic() - t_build
    precision = counting_precision_report(plan.channel_bounds())
    n_max = precision[dtype]
    n_all, random_max = prep["n_all"], prep["random_max"]
    n_checked = n_all if n_max is None else min(n_all, n_max)
    limit_len = random_max if n_max is None else min(random_max, n_max)
    rand_lengths = _lengths(n_checked + 1, limit_len, prep["random_words"])
    beyond_lengths = (_lengths(n_max + 1, random_max, prep["random_words"])
                      if prep["beyond"] and n_max is not None and n_max < random_max else [])
    checks = verify_counting_model(model, program, dfa, all_words_up_to=n_checked, random_lengths=rand_lengths,
                                   beyond_lengths=beyond_lengths, seed=prep["seed"], progress=progress,
                                   should_cancel=should_cancel, deadline=deadline)
    aw, rw, bw = checks["all_words"], checks["random"], checks["beyond"]
    describe = model.describe()
    record: dict[str, Any] = {
        "kind": "construct", "setting": "causal", "input": prep["input"], "alphabet": list(program.alphabet),
        "language": None if dfa is None else {"fingerprint": dfa.fingerprint(), "num_states": dfa.canonical().num_states},
        "crasp": {"program": program.to_json(), "text": program.render(), "depth": program.depth(),
                  "operations": len(program.ops), **prep["info"]},
        "encoding": "nope", "attention": "soft", "mask": "nonstrict", "formula": None, "fragment": None,
        "program": None, "synthesis": None, "route": {"route": "crasp", "cascade_height": None},
        "model": describe, "planned": {"parameters": prep["planned"], **plan.summary()},
        "precision": precision, "n_max": n_max,
        "n_max_detail": {"n_max": n_max, "dtype": dtype, "model": "every product and sum in the model's format "
                         "(module langclass.core.precision.counting)"},
        # exact: the model decides every checked word as the language does — as its program does, and (with a
        # language given) the program as the DFA does; a program of another language is never "exact"
        "exact": bool(aw["wrong"] == 0 and rw["wrong"] == 0 and aw["sim_inexact"] == 0 and rw["sim_inexact"] == 0
                      and (dfa is None or (aw["program_dfa_mismatch"] == 0 and rw["program_dfa_mismatch"] == 0))),
        "decisions_exact": aw["wrong"] == 0 and rw["wrong"] == 0,
        "simulation_exact": aw["sim_inexact"] == 0 and rw["sim_inexact"] == 0,
        "agrees_with_dfa": None if dfa is None else (aw["program_dfa_mismatch"] == 0 and rw["program_dfa_mismatch"] == 0),
        "all_words_up_to": n_checked, "words_checked": aw["checked"],
        "random_words_up_to": rw["max_length"], "random_words_checked": rw["checked"],
        "first_failure": aw["first_failure"] or rw["first_failure"],
        "first_inexact": aw["first_inexact"] or rw["first_inexact"],
        "first_dfa_mismatch": aw["first_dfa_mismatch"] or rw["first_dfa_mismatch"],
        "beyond_n_max": None if not bw["checked"] else {
            "words_checked": bw["checked"], "longest": bw["max_length"], "wrong": bw["wrong"],
            "inexact": bw["sim_inexact"], "first_failure": bw["first_failure"], "first_inexact": bw["first_inexact"],
            "failure_demonstrated": bw["wrong"] > 0},
        "checks": {name: {k: acc[k] for k in ("checked", "wrong", "sim_inexact", "program_dfa_mismatch", "max_length")}
                   for name, acc in (("all_words", aw), ("random", rw), ("beyond_n_max", bw))},
        "seconds": round(time.monotonic() - t0, 3), "build_seconds": round(build_seconds, 4),
        "verify_seconds": round(time.monotonic() - t_build - build_seconds, 3),
        "dtype": dtype, "code_version": code_version(),
    }
    if on_model is not None:  # the verified model, for --save and the job's download
        on_model(model, dfa)
    if progress:
        progress({"phase": "done", "exact": record["exact"]})
    return record


def construct_causal_program(program: CraspProgram, *, regex: str | None = None, dfa: Any = None,
                             limits: Limits = DEFAULT_LIMITS, **options: Any) -> dict[str, Any]:
    """Build, verify and record the transformer of a given :class:`CraspProgram` (the helper for
    hand-written programs); ``regex`` (over the program's alphabet) or ``dfa`` (JSON) adds the DFA
    check. ``options`` as :func:`run_causal_construction`. Raises as it."""
    spec: dict[str, Any] = {"crasp_program": program, "options": dict(options)}
    if regex is not None:
        spec.update(regex=regex, alphabet=list(program.alphabet))
    if dfa is not None:
        spec["dfa"] = dfa
    return run_causal_construction(spec, limits=limits)
