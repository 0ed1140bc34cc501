"""Verify constructed transformers on every word up to a length and on long random words.

:func:`run_construction` is the job function of experiments of kind ``construct`` (and of the CLI
command ``langclass construct``): it reads a formula, a B-RASP program, or a language (regex / DFA,
from which a formula is synthesized when one is known), builds the exact transformer of
:mod:`langclass.models.construct`, and checks it three ways on every word up to ``all_words_up_to``
and on random words up to ``random_max_length`` (half accepted, half rejected, sampled uniformly by
exact path counting):

1. the transformer's decision (accept logit > 0 at the readout) against the formula's semantics
   (:func:`langclass.core.logic.formulas.evaluate_batch`) or the B-RASP interpreter;
2. the formula / program against the language's minimal DFA (formula → DFA, or the input DFA);
3. *simulation*: every formula node's stream coordinate equals its truth value (exactly 0.0 or 1.0)
   at every position (*Disentangling the Expressivity of RoPE*, Def. C.2 / D.1), resp. every B-RASP
   vector (*Masked Hard-Attention Transformers …*, §6.3).

For formulas with Y^k (conventional RoPE) exactness is claimed only up to the certified length
N_max (Eq. 10, Cor. 4.1): words longer than N_max are checked separately and reported under
``beyond_n_max`` — this is where the construction is expected to fail, and the report says whether
it did (and with which word).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Any

import numpy as np
import torch

from langclass.core.logic import formulas as F
from langclass.core.automata.automaton import DFA
from langclass.core.logic.brasp import Program, formula_to_brasp, run_program
from langclass.core.base.errors import InputError, LimitExceeded, TimeLimitExceeded, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, RECORD_TEXT_CHARS, Deadline, Limits
from langclass.core.ingest.source import language_source, parse_language as parse_source, parse_source_program, source_from_mapping
from langclass.version import code_version  # one function for records, CLI and job results
from langclass.models.construct import (
    BraspTransformer, ConstructionOptions, FormulaTransformer,
)
from langclass.models.construct.choice import MASK_CHOICES, by_class as _by_class, language_class as _language_class
from langclass.models.construct.choice import nonstrict as _nonstrict, nonstrict_route, plan_model as _plan, unbuilt_formula_to_candidate
from langclass.models.construct.route import ROUTES, choose_hard_route, local_divisor_candidate
from langclass.models.construct.options import _OPTION_KEYS, _count_words, _float_opt, _int_opt, _lengths, _options  # noqa: F401 (re-exported)
from langclass.models.construct.options import MAX_RANDOM_LENGTH, MAX_VERIFY_WORDS, default_all_words_length, is_causal
from langclass.models.construct.route_marked import default_y_mode
from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL
from langclass.models.construct.verify_stream import CHUNK_ENTRIES, CancellableLimits as _CancellableLimits, ConstructionCancelled
from langclass.models.construct.verify_stream import Guard as _Guard, all_words as _all_words, query_block as _query_block, word_chunks as _word_chunks
from langclass.models.construct.verify_stream import dfa_accepts as _dfa_accepts, random_set as _random_set, word_text as _word_text
from langclass.models.construct.verify_budget import VerificationBudget, count_words as _count_words
from langclass.models.construct.verify_budget import default_all_words_length, verification_budget

__all__ = ["run_construction", "validate_spec", "ConstructionCancelled", "verify_formula_model", "verify_brasp_model",
           "default_all_words_length", "MAX_VERIFY_WORDS", "MAX_RANDOM_LENGTH", "CHUNK_ENTRIES", "MASK_CHOICES"]



# ============================================================================ formulas
class _FormulaChecker:
    def __init__(self, model: FormulaTransformer, formula: F.Formula, alphabet: tuple[str, ...], dfa: DFA) -> None:
        self.model = model
        self.formula = formula
        self.alphabet = alphabet
        self.dfa = dfa
        self.k = len(alphabet)
        planned = list(model.lit)
        self.aux = reduce(F.And, planned) if len(planned) > 1 else planned[0]
        self.heads = max(1, max((len(p.heads) for p in model.layers_plan), default=1))
        plan = model.plan
        units = max((len(p.units) for p in plan.layers), default=0)
        self.width = plan.d_model + units + 2 * len(planned) + plan.d_head * self.heads

    def per_word(self, N: int) -> int:
        """Tensor entries one word of length N costs (scores, stream, feed-forward, truth table)."""
        T = N + 2
        return T * (self.heads * T + self.width)

    def check(self, words: np.ndarray, guard: _Guard | None = None) -> dict[str, Any]:
        """Check a batch of equal-length words ``[B, N]``; returns counts and the first failures.
        Scores of more than :data:`CHUNK_ENTRIES` entries are computed in query blocks through the
        key/value cache (:meth:`FormulaTransformer.extend`), ``guard`` checked between blocks."""
        B, N = words.shape
        ids = np.empty((B, N + 2), dtype=np.int64)
        ids[:, 0] = BOS
        ids[:, 1:N + 1] = words + NUM_SPECIAL
        ids[:, N + 1] = EOS
        ids_t = torch.from_numpy(ids)
        valid = torch.ones_like(ids_t, dtype=torch.bool)
        block = _query_block(B, self.heads, N + 2)
        with torch.no_grad():
            if block is None:
                hidden = self.model(ids_t, valid)  # [B, T, D]
            else:  # long words: key/value cache, query blocks, no (N+2)² score matrix
                caches, outs = None, []
                for s0 in range(0, N + 2, block):
                    h, caches = self.model.extend(ids_t[:, s0:s0 + block], caches, valid[:, s0:s0 + block])
                    outs.append(h)
                    if guard is not None:
                        guard.tick()
                hidden = torch.cat(outs, dim=1)
            logits = self.model.readout(hidden[:, N + 1])[:, 0].double().numpy()
        produced = logits > 0
        table = F.truth_table(self.aux, self.alphabet, words)
        expected = table[self.formula][:, N + 1]
        by_dfa = _dfa_accepts(self.dfa, words)
        sim_bad = np.zeros(B, dtype=bool)
        values = self.model.literal_values(hidden)
        for node, v in values.items():
            got = v.numpy()[:, 1:N + 2]
            want = table[node][:, 1:N + 2].astype(np.float64)
            sim_bad |= (got != want).any(axis=1)
        return {"produced": produced, "expected": expected, "dfa": by_dfa, "sim_bad": sim_bad, "logits": logits}


def _summarize(res: dict, words: np.ndarray, alphabet, acc: dict) -> None:
    wrong = res["produced"] != res["expected"]
    mismatch_dfa = res["expected"] != res["dfa"]
    acc["checked"] += words.shape[0]
    acc["wrong"] += int(wrong.sum())
    acc["sim_inexact"] += int(res["sim_bad"].sum())
    acc["formula_dfa_mismatch"] += int(mismatch_dfa.sum())
    if wrong.any() and acc["first_failure"] is None:
        i = int(np.flatnonzero(wrong)[0])
        acc["first_failure"] = {"word": _word_text(alphabet, words[i]), "length": int(words.shape[1]),
                                "expected": bool(res["expected"][i]), "produced": bool(res["produced"][i]),
                                "logit": float(res["logits"][i])}
    if res["sim_bad"].any() and acc["first_inexact"] is None:
        i = int(np.flatnonzero(res["sim_bad"])[0])
        acc["first_inexact"] = {"word": _word_text(alphabet, words[i]), "length": int(words.shape[1])}
    if mismatch_dfa.any() and acc["first_dfa_mismatch"] is None:
        i = int(np.flatnonzero(mismatch_dfa)[0])
        acc["first_dfa_mismatch"] = {"word": _word_text(alphabet, words[i]), "formula": bool(res["expected"][i]),
                                     "dfa": bool(res["dfa"][i])}


def _new_acc() -> dict:
    return {"checked": 0, "wrong": 0, "sim_inexact": 0, "formula_dfa_mismatch": 0, "first_failure": None,
            "first_inexact": None, "first_dfa_mismatch": None, "max_length": 0}


def verify_formula_model(model: FormulaTransformer, formula: F.Formula, alphabet: Sequence[str], dfa: DFA, *,
                         all_words_up_to: int, random_lengths: Sequence[int], beyond_lengths: Sequence[int] = (),
                         seed: int = 0, progress: Callable[[dict], None] | None = None,
                         should_cancel: Callable[[], bool] | None = None, deadline: Deadline | None = None,
                         budget: VerificationBudget | None = None) -> dict[str, Any]:
    """Check a :class:`FormulaTransformer` exhaustively (all words ≤ ``all_words_up_to``), on one random
    word per entry of ``random_lengths`` and (reported apart) per entry of ``beyond_lengths``.

    Returns:
        ``{"all_words": acc, "random": acc, "beyond": acc}`` with ``acc`` = counts (``checked``,
        ``wrong``, ``sim_inexact``, ``formula_dfa_mismatch``) and first failures.

    Raises:
        ConstructionCancelled: ``should_cancel()`` became True (``partial`` = the counts so far).
        TimeLimitExceeded: ``deadline`` passed (checked before every batch; ``step`` names the phase).
    """
    alphabet = tuple(alphabet)
    chk = _FormulaChecker(model, formula, alphabet, dfa)
    rng = np.random.default_rng(seed)
    out = {"all_words": _new_acc(), "random": _new_acc(), "beyond": _new_acc()}
    guard = _Guard(deadline, should_cancel, out)
    _drive(lambda words: chk.check(words, guard), chk.per_word, chk.k, alphabet, all_words_up_to,
           (("random", random_lengths), ("beyond", beyond_lengths)), out, guard, budget, progress,
           lambda L, t: _random_set(dfa, chk.k, [L], rng, start=t)[0])
    return out


def _drive(check, per_word, k: int, alphabet, n: int, phases, out: dict, guard: _Guard,
           budget: VerificationBudget | None, progress, make_word) -> None:
    """The checks of one verification: all words up to ``n`` (by length), then one word
    ``make_word(L, t)`` per entry of each phase's lengths, each summarized into ``out[phase]``;
    ``budget`` (when given) decides how far each phase goes (:mod:`~langclass.models.construct.verify_budget`)."""
    total = _count_words(k, n)
    if budget is not None:
        budget.entries = per_word
    for L in range(n + 1):
        if budget is not None and not budget.all_words_length(L):
            break
        t0 = time.monotonic()
        try:
            for words in _word_chunks(k, L, per_word(L)):
                guard(f"verification (all words of length {L})")
                _summarize(check(words), words, alphabet, out["all_words"])
        except TimeLimitExceeded:
            if budget is None or not budget.sized_all:
                raise
            if L <= budget.minimum:
                raise budget.cannot_reach_minimum(L - 1) from None
            budget.ran_out("all words", L)
            break
        if budget is not None:
            budget.measured(L, k ** L, time.monotonic() - t0)
        out["all_words"]["max_length"] = L
        if progress:
            progress({"phase": "all_words", "length": L, "done": out["all_words"]["checked"], "total": total})
    for name, lengths in phases:
        for t, L in enumerate(lengths):
            if budget is not None and not budget.random_word(L):
                continue
            t0 = time.monotonic()
            try:
                guard(f"verification ({name} word of length {L})")
                w = make_word(L, t)
                _summarize(check(w[None, :]), w[None, :], alphabet, out[name])
            except TimeLimitExceeded:
                if budget is None or not budget.sized_random:
                    raise
                budget.ran_out(f"{name} words", L)
                continue
            if budget is not None:
                budget.random_measured(L, time.monotonic() - t0)
            out[name]["max_length"] = max(out[name]["max_length"], int(w.size))
            if progress:
                progress({"phase": name, "length": int(w.size), "done": t + 1, "total": len(lengths)})


# ============================================================================ B-RASP
def verify_brasp_model(model: BraspTransformer, program: Program, dfa: DFA | None, *, all_words_up_to: int,
                       random_lengths: Sequence[int], seed: int = 0, progress: Callable[[dict], None] | None = None,
                       should_cancel: Callable[[], bool] | None = None, deadline: Deadline | None = None,
                       budget: VerificationBudget | None = None) -> dict[str, Any]:
    """Check a :class:`BraspTransformer` against the B-RASP interpreter (decision and every vector)
    and, when ``dfa`` is given, the interpreter against the DFA. Same return shape as
    :func:`verify_formula_model` (``beyond`` is empty)."""
    alphabet = program.alphabet
    k = len(alphabet)
    rng = np.random.default_rng(seed)
    out = {"all_words": _new_acc(), "random": _new_acc(), "beyond": _new_acc()}
    guard = _Guard(deadline, should_cancel, out)
    heads = max(1, max((len(h) for h in model.attn_layers), default=1))
    plan = model.plan
    ffn = max((len(layer.units) * max(1, layer.max_inputs) for layer in plan.layers), default=0)
    width = plan.d_model + ffn + 2 * len(model.coord_of) + 4 * len(program.ops)

    def per_word(N: int) -> int:  # scores + stream + sparse feed-forward + interpreter vectors
        return max(N, 1) * (heads * max(N, 1) + width)

    def check(words: np.ndarray) -> dict[str, Any]:
        B, N = words.shape
        if N == 0:
            produced = np.full(B, program.empty_accept)
            return {"produced": produced, "expected": produced.copy(),
                    "dfa": _dfa_accepts(dfa, words) if dfa is not None else produced.copy(),
                    "sim_bad": np.zeros(B, dtype=bool), "logits": np.where(produced, 0.5, -0.5)}
        block = _query_block(B, heads, N)
        with torch.no_grad():
            hidden = model(torch.from_numpy(words), query_block=block, between=guard.tick)
            logits = model.readout(hidden[:, -1])[:, 0].double().numpy()
        vals = run_program(program, words, query_block=block)
        got = model.vector_values(hidden)
        sim_bad = np.zeros(B, dtype=bool)
        for name, v in vals.items():
            sim_bad |= (got[name].numpy() != v.astype(np.float64)).any(axis=1)
        expected = vals[program.output][:, -1]
        return {"produced": logits > 0, "expected": expected,
                "dfa": _dfa_accepts(dfa, words) if dfa is not None else expected.copy(),
                "sim_bad": sim_bad, "logits": logits}

    _drive(check, per_word, k, alphabet, all_words_up_to, (("random", random_lengths),), out, guard, budget, progress,
           lambda L, t: _random_set(dfa, k, [L], rng, start=t)[0] if dfa is not None else rng.integers(0, k, int(L)))
    return out


# ============================================================================ job entry point
def _prepare(spec: Mapping, limits: Limits) -> dict[str, Any]:
    """Parse and check a construction spec (no model is built): the shared front of
    :func:`run_construction` and :func:`validate_spec`."""
    if not isinstance(spec, Mapping):
        raise InputError("a construction spec is a JSON object", field="spec")
    if isinstance(spec.get("language"), Mapping):
        spec = {**spec["language"], **{k: v for k, v in spec.items() if k != "language"}}
    if isinstance(spec.get("dfa"), Mapping) and "alphabet" not in spec["dfa"] and "alphabet" in spec:
        spec = {**spec, "dfa": {**spec["dfa"], "alphabet": spec["alphabet"]}}
    opts = _options(spec)
    attention = opts.get("attention", "auto")
    if attention not in ("auto", "soft", "hard"):
        raise InputError("attention must be 'auto', 'soft' or 'hard'", field="options.attention")
    route = opts.get("route", "auto")
    if route not in ROUTES:
        raise InputError(f"route must be one of {list(ROUTES)}, got {route!r}", field="options.route")
    if route != "auto" and attention == "soft":
        raise InputError(f"route {route!r} builds hard attention; it cannot be combined with attention='soft'",
                         field="options.route")
    if route != "auto":
        attention = "hard"  # both routes compile a B-RASP program (hard attention)
    dtype = opts.get("dtype", "float32")
    seed = _int_opt(opts, "seed", 0, 0, 2 ** 31)
    random_words = _int_opt(opts, "random_words", 32, 0, 10_000)
    random_max = _int_opt(opts, "random_max_length", 2000, 0, MAX_RANDOM_LENGTH)
    beyond = bool(opts.get("beyond_n_max", True))
    mask = opts.get("mask", "strict")
    if mask not in MASK_CHOICES:
        raise InputError(f"mask must be one of {list(MASK_CHOICES)}, got {mask!r}", field="options.mask")
    if mask == "nonstrict":
        if attention == "soft":
            raise InputError("mask 'nonstrict' is a hard-attention model (Masked Hard-Attention Transformers …, Thm 18); "
                             "use attention 'hard' or 'auto'", field="options.mask")
        attention = "hard"
    by_class = opts.get("by_class", True)
    if not isinstance(by_class, bool):
        raise InputError("by_class must be true or false", field="options.by_class")
    max_parameters = _int_opt(opts, "max_parameters", None, 1, 10 ** 12)
    if limits.max_parameters is not None:  # the option may lower the setting's budget, never raise it
        max_parameters = limits.max_parameters if max_parameters is None else min(max_parameters, limits.max_parameters)

    # ---- input
    synthesis = None
    input_formula: F.Formula | None = None
    language_class: str | None = None
    program: Program | None = None
    formula: F.Formula | None = None
    ld_note: str | None = None
    cascade = None  # the cascade planned before the local-divisor synthesis (route auto)
    dfa: DFA | None = None
    source_input: str
    if "program" in spec:  # a program, and optionally its reference language (a regex or a DFA)
        source_input = "program"
        program = parse_source_program(
            language_source(program=spec["program"], alphabet=spec.get("alphabet"), kinds=("program",)), limits)
        if "regex" in spec or "dfa" in spec:
            reference = {k: spec[k] for k in ("regex", "dfa") if k in spec}
            dfa = parse_source(language_source(**reference, alphabet=spec.get("alphabet") if "regex" in spec else None,
                                               kinds=("regex", "dfa")), limits).dfa
            if dfa.alphabet != program.alphabet:
                raise InputError("the reference language's alphabet differs from the program's", field="alphabet")
        attention = "hard"
    elif "formula" in spec:
        source_input = "formula"
        parsed = parse_source(source_from_mapping({k: spec[k] for k in ("formula", "alphabet") if k in spec},
                                                  kinds=("formula",)), limits)
        formula, dfa = parsed.formula, parsed.dfa
        input_formula = formula
        language_class = _language_class(dfa, limits)
        if by_class and attention != "hard":
            synthesis = _by_class(formula, dfa, language_class, limits)
            if synthesis is not None:
                formula = synthesis.formula
    elif "regex" in spec or "dfa" in spec:
        from langclass.models.construct.route_marked import synthesize_soft  # synthesize(), then the LTL[P,Y,MOD] route

        source_input = "regex" if "regex" in spec else "dfa"
        dfa = parse_source(source_from_mapping({k: spec[k] for k in ("regex", "dfa", "alphabet") if k in spec}
                                               if "regex" in spec else {"dfa": spec["dfa"]}, kinds=("regex", "dfa")),
                           limits).dfa
        from_fo_mod = False
        try:
            synthesis = synthesize_soft(dfa, limits, attention)
        except UnsupportedError as soft_err:
            if attention == "soft":
                raise
            from langclass.core.synthesis.fo_mod import synthesize_fo_mod

            try:  # star-free: past LTL with S (Thm 5, 24); else FO[<,MOD_m] with position marks (Thm 19, Cor 20)
                synthesis, ld_note, cascade = local_divisor_candidate(dfa, limits, route, max_parameters)
            except UnsupportedError as hard_err:
                raise UnsupportedError(
                    f"no construction from this automaton. Soft attention: {soft_err.detail}. Hard attention: the "
                    f"language is neither star-free nor in FO[<,MOD] ({hard_err.detail})",
                    certificate=soft_err.extra.get("certificate"), source=hard_err.extra.get("source"),
                    missing_classes=["LTL[P,MOD]", "LTL[P,Y]", "LTL[P,Y,MOD]", "star-free", "FO[<,MOD]"],
                ) from None
            attention = "hard"
            from_fo_mod = True
        if attention == "hard" and not from_fo_mod and "MOD" in F.operators(synthesis.formula):
            # hard attention: the star-free formula when L is star-free (NoPE), else the least modulus m
            # UnsupportedError: L not quasi-aperiodic
            synthesis, ld_note, cascade = local_divisor_candidate(dfa, limits, route, max_parameters)
        formula = synthesis.formula if synthesis is not None else None
    else:
        raise InputError("give one of 'formula' (with 'alphabet'), 'program' (with 'alphabet'), 'regex' (with "
                         "'alphabet') or 'dfa'", field="spec")

    # ---- model
    choice = None
    if route != "auto" and source_input not in ("regex", "dfa"):
        raise InputError(f"route {route!r} applies to a language given as a regex or a DFA", field="options.route")
    if formula is None and source_input in ("regex", "dfa"):  # hard attention, no local-divisor formula: the cascade
        alphabet = dfa.alphabet
        try:
            choice = choose_hard_route(dfa, None, alphabet, route="cascade" if route == "auto" else route,
                                       limits=limits, cascade=cascade)
        except (UnsupportedError, LimitExceeded) as err:  # both routes failed: say why for each
            if ld_note and not isinstance(err, TimeLimitExceeded):
                err.detail = f"cascade: {err.detail}; local-divisors: {ld_note}"
                err.args = (err.detail,)
            raise
        if ld_note:
            choice.candidates["local-divisors"] = {"error": ld_note}
        program = choice.program
    elif formula is not None:
        alphabet = dfa.alphabet
        ops = F.operators(formula)
        if attention == "auto":
            attention = "hard" if "S" in ops else "soft"
        if attention == "hard":
            from langclass.core.logic.brasp_width import narrow_program

            if source_input in ("regex", "dfa"):  # the smaller of the cascade and the local-divisor program
                choice = choose_hard_route(dfa, formula, alphabet, route=route, limits=limits, cascade=cascade)
                program = choice.program
            else:
                program = narrow_program(formula_to_brasp(formula, alphabet, limits), deadline=limits.deadline())  # fan-in ≤ 14
        elif "S" in ops:
            raise UnsupportedError("the since operator S has no soft-attention construction here (star-free "
                                   "languages need rightmost hard attention); use attention='hard'",
                                   field="options.attention")
    else:
        alphabet = program.alphabet
    if mask == "nonstrict" and choice is not None:  # the routes compared after the Thm 18 rewrite
        choice = nonstrict_route(choice, dfa, formula, route, limits, cascade)
        program = choice.program
    elif mask == "nonstrict":
        program = _nonstrict(program, dfa, limits)
    k = len(alphabet)
    n_all = _int_opt(opts, "all_words_up_to", default_all_words_length(k), 0, 64)
    if _count_words(k, n_all) > MAX_VERIFY_WORDS:
        raise LimitExceeded("max_verify_words", MAX_VERIFY_WORDS,
                            f"all words up to length {n_all} over {k} letters are {_count_words(k, n_all)} words "
                            f"(> {MAX_VERIFY_WORDS}); lower all_words_up_to", field="options.all_words_up_to")

    copt = None
    if attention == "soft":
        copt = ConstructionOptions(
            dtype=dtype, g=_float_opt(opts, "g", 1.0), target_length=_int_opt(opts, "target_length", 300, 1, 1_000_000),
            C_y=_float_opt(opts, "C_y", None), C_p=_float_opt(opts, "C_p", None),
            mod_safety=_float_opt(opts, "mod_safety", 1.25), y_mode=opts.get("y_mode", default_y_mode(synthesis)),
            n_max_cap=_int_opt(opts, "n_max_cap", min(max(random_max, n_all, 1), 4000), 1, MAX_RANDOM_LENGTH),
        )
    elif dtype not in ("float32", "float64", "bfloat16", "float16"):
        raise InputError(f"dtype must be float32, float64, bfloat16 or float16, got {dtype!r}", field="options.dtype")
    threads = _int_opt(opts, "threads", 1, 1, 256)
    return {"mask": mask, "max_parameters": max_parameters, "input_formula": input_formula,
            "language_class": language_class, "threads": threads, "opts": opts, "attention": attention, "dtype": dtype, "seed": seed, "random_words": random_words,
            "random_max": random_max, "beyond": beyond, "synthesis": synthesis, "program": program, "formula": formula,
            "dfa": dfa, "source_input": source_input, "alphabet": alphabet, "n_all": n_all, "copt": copt,
            "route_choice": choice}


def validate_spec(spec: Mapping, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a ``construct`` spec before it is queued (same errors as :func:`run_construction`, no model
    is built and nothing is verified): the input parses, the options are valid, a formula can be
    synthesized when only a language is given, and the planned model is within the parameter budget
    (``limits.max_parameters``, checked on the plan: no tensor is allocated).

    Raises:
        InputError, UnsupportedError, LimitExceeded: as :func:`run_construction`.
    """
    if is_causal(spec):  # the C-RASP construction (docs/crasp.md, "Construction")
        from .verify_causal import validate_causal_spec
        return validate_causal_spec(spec, limits)
    _plan(_prepare(spec, limits))


def run_construction(spec: Mapping, *, progress: Callable[[dict], None] | None = None,
                     should_cancel: Callable[[], bool] | None = None, limits: Limits = DEFAULT_LIMITS,
                     on_model: Callable[[Any, DFA | None], None] | None = None) -> dict[str, Any]:
    """Build an exact transformer and verify it: the job function of kind ``construct``.

    Args:
        spec: one input form plus options (top-level or under ``"options"``):

            * ``{"formula": "P(b & Y a)", "alphabet": ["a", "b", "c"]}`` — an LTL formula
              (:mod:`langclass.core.logic.formulas` syntax);
            * ``{"program": "<B-RASP text>", "alphabet": [...]}`` — optionally with ``"regex"`` /
              ``"dfa"`` as the reference language;
            * ``{"regex": "(ab)*", "alphabet": [...]}`` or ``{"dfa": {...}}`` (also nested under
              ``"language"``) — a formula is synthesized (LTL[P] / LTL[P,MOD], verified by DFA
              equivalence) or :class:`UnsupportedError` says why none is known.

            Options: ``attention`` (``"auto"`` | ``"soft"`` | ``"hard"``), ``dtype`` (float32),
            ``all_words_up_to`` (default 12 for |Σ| ≤ 2, smaller for larger alphabets),
            ``random_words`` (default 32), ``random_max_length`` (default 2000), ``seed``, and for
            Y^k: ``g`` (1.0), ``C_y`` or ``target_length`` (300), ``beyond_n_max`` (True: also test
            words longer than N_max and report what happens), ``n_max_cap``, ``threads`` (torch
            intra-op threads while verifying, default 1: these models are tiny), ``route``
            (hard attention from a regex or DFA: ``"auto"`` — the smaller of the Krohn–Rhodes cascade
            program and the local-divisor program, :func:`~langclass.models.construct.route.choose_hard_route`
            — or ``"cascade"`` / ``"local-divisors"``, either of which implies hard attention), ``setting``
            (``"fixed"``, or ``"causal"``: the C-RASP construction of :mod:`langclass.models.construct.verify_causal`).
        progress: called with ``{"phase", "length", "done", "total"}`` dicts.
        should_cancel: polled between batches; True raises :class:`ConstructionCancelled`.
        on_model: called with the verified model and the DFA (None for a bare program): ``--save``, downloads.

    Returns:
        A JSON-ready record with ``formula``, ``fragment``, ``program`` (hard attention), ``encoding``,
        ``attention``, ``exact`` (every decision correct and every simulated coordinate exact in the
        certified range), ``all_words_up_to``, ``random_words_up_to``, ``first_failure`` (None or
        ``{word, expected, produced}``), ``n_max`` (Y^k), ``beyond_n_max``, ``model`` (sizes,
        constants, encoding manifests and digests), ``checks`` (counts), ``synthesis``, ``seconds``,
        ``route`` (``route`` — ``"cascade"``, ``"local-divisors"``, ``"formula"`` or ``"program"`` — with
        ``cascade_height``, ``layers``, ``heads``, ``d_model``, ``parameters`` and the candidates compared).

    Raises:
        InputError (and subclasses): bad spec, formula, program, regex or DFA.
        UnsupportedError: no construction or synthesis is known for the input.
        LimitExceeded: too many words requested, or a core limit.
        ConstructionCancelled: cancelled (``partial`` has the counts so far).
        TimeLimitExceeded: ``limits.time_limit_s`` passed (``step`` names synthesis, model build or the
            verification phase that was running).
    """
    t0 = time.monotonic()
    if is_causal(spec):  # setting "causal": the C-RASP construction (langclass.models.construct.verify_causal)
        from .verify_causal import run_causal_construction
        return run_causal_construction(spec, progress=progress, should_cancel=should_cancel, limits=limits, on_model=on_model)
    # one wall-clock budget (time_limit_s) for synthesis, planning, build and verification: every step's
    # deadline ends at t0 + time_limit_s, and every check polls the cancellation too
    limits = _CancellableLimits(**{name: getattr(limits, name) for name in Limits.__dataclass_fields__},
                                cancel=should_cancel,
                                end=None if limits.time_limit_s is None else t0 + limits.time_limit_s)
    deadline = Deadline(limits.time_limit_s)  # the verification's guard polls the cancellation itself (with counts)
    if limits.end is not None:
        deadline.end_by(limits.end)
    prep = _prepare(spec, limits)
    deadline.check("synthesis")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(prep["threads"])  # the constructed models are tiny: one intra-op thread is fastest
    try:
        return _run(prep, t0, limits, progress, should_cancel, deadline, on_model)
    finally:
        torch.set_num_threads(previous_threads)


def _run(prep: dict, t0: float, limits: Limits, progress, should_cancel, deadline: Deadline, on_model=None) -> dict[str, Any]:
    opts, attention, dtype, seed = prep["opts"], prep["attention"], prep["dtype"], prep["seed"]
    random_words, random_max, beyond = prep["random_words"], prep["random_max"], prep["beyond"]
    synthesis, program, formula, dfa = prep["synthesis"], prep["program"], prep["formula"], prep["dfa"]
    source_input, alphabet, n_all = prep["source_input"], prep["alphabet"], prep["n_all"]

    result: dict[str, Any] = {
        "kind": "construct",
        "input": source_input,
        "alphabet": list(alphabet),
        "formula": _recorded(formula.text()) if formula is not None and F.formula_size(formula) <= 200_000 else None,
        "fragment": F.fragment(formula) if formula is not None else None,
        "synthesis": synthesis.to_dict() if synthesis is not None else None,
        "language": None if dfa is None else {"fingerprint": dfa.fingerprint(), "num_states": dfa.canonical().num_states},
    }
    if prep["input_formula"] is not None:
        result["input_fragment"] = F.fragment(prep["input_formula"])
        result["language_class"] = prep["language_class"]
        replaced = prep["input_formula"] is not formula
        result["formula_choice"] = ("synthesized for the language's class (the formula's fragment needs a stronger "
                                    "model)" if replaced else "as written")
        if replaced:
            text = prep["input_formula"].text(2000)
            result["input_formula"] = text
    n_max_info: dict[str, Any] = {"n_max": None}
    t_build = time.monotonic()
    plan, size = _plan(prep)  # the parameter budget is checked here, before any tensor exists
    result["planned"] = size
    deadline.check("model plan")
    if should_cancel is not None and should_cancel():
        raise ConstructionCancelled({"phase": "model plan"})
    if attention == "soft":
        copt = prep["copt"]
        model = FormulaTransformer.from_plan(plan)
        deadline.check("model build")
        build_seconds = time.monotonic() - t_build
        if model.offsets:
            n_max_info = model.certified_lengths()
        n_max = n_max_info["n_max"]
        limit_len = random_max if n_max is None else min(random_max, n_max)
        n_checked = n_all if n_max is None else min(n_all, n_max)
        rand_lengths = _lengths(n_checked + 1, limit_len, random_words)
        beyond_lengths = _lengths(n_max + 1, random_max, random_words) if (beyond and n_max is not None and n_max < random_max) else []
        vdeadline, budget = verification_budget(prep, limits, n_checked, size)
        checks = verify_formula_model(model, formula, alphabet, dfa, all_words_up_to=n_checked, random_lengths=rand_lengths,
                                      beyond_lengths=beyond_lengths, seed=seed, progress=progress, should_cancel=should_cancel,
                                      deadline=vdeadline, budget=budget)
        result["encoding"] = model.encoding_name
        result["attention"] = "soft"
        result["mask"] = "strict"
        result["program"] = None
        result["model"] = model.describe()
        result["mod_margins"] = model.mod_margins()
    else:
        model = BraspTransformer.from_plan(plan, dtype)
        deadline.check("model build")
        build_seconds = time.monotonic() - t_build
        n_checked = n_all
        rand_lengths = _lengths(n_all + 1, random_max, random_words)
        vdeadline, budget = verification_budget(prep, limits, n_all, size)
        checks = verify_brasp_model(model, program, dfa, all_words_up_to=n_all, random_lengths=rand_lengths, seed=seed,
                                    progress=progress, should_cancel=should_cancel, deadline=vdeadline, budget=budget)
        result["encoding"] = "nope" if program.modulus == 1 else "mod_onehot"
        result["modulus"] = program.modulus
        result["attention"] = "hard"
        result["mask"] = prep["mask"]
        if prep["mask"] == "nonstrict":
            from langclass.core.logic.brasp_nonstrict import SOURCE_NONSTRICT

            result["mask_source"] = SOURCE_NONSTRICT
        result["program"] = _recorded(program.text()) if len(program.ops) <= 20_000 else None
        result["model"] = model.describe()
    choice = prep.get("route_choice")
    kind = "program" if source_input == "program" else "formula"  # the one candidate: the input's (or class's) own
    result["route"] = choice.to_dict() if choice is not None else {
        "route": kind, "cascade_height": None, "candidates": {kind: {**size, "planned": True}}}
    unbuilt_formula_to_candidate(result)
    aw, rw, bw = checks["all_words"], checks["random"], checks["beyond"]
    first = aw["first_failure"] or rw["first_failure"]
    exact = (aw["wrong"] == 0 and rw["wrong"] == 0 and aw["sim_inexact"] == 0 and rw["sim_inexact"] == 0)
    result.update({
        "exact": bool(exact),
        "decisions_exact": aw["wrong"] == 0 and rw["wrong"] == 0,
        "simulation_exact": aw["sim_inexact"] == 0 and rw["sim_inexact"] == 0,
        "agrees_with_dfa": aw["formula_dfa_mismatch"] == 0 and rw["formula_dfa_mismatch"] == 0,
        "all_words_up_to": aw["max_length"],
        "words_checked": aw["checked"],
        "random_words_up_to": rw["max_length"],
        "random_words_checked": rw["checked"],
        "first_failure": first,
        "first_inexact": aw["first_inexact"] or rw["first_inexact"],
        "first_dfa_mismatch": aw["first_dfa_mismatch"] or rw["first_dfa_mismatch"],
        "n_max": n_max_info.get("n_max"),
        "n_max_detail": n_max_info if n_max_info.get("n_max") is not None else None,
        "beyond_n_max": None if not bw["checked"] else {
            "words_checked": bw["checked"], "longest": bw["max_length"], "wrong": bw["wrong"],
            "inexact": bw["sim_inexact"], "first_failure": bw["first_failure"], "first_inexact": bw["first_inexact"],
            "failure_demonstrated": bw["wrong"] > 0,
        },
        "checks": {"all_words": _public(aw), "random": _public(rw), "beyond_n_max": _public(bw)},
        "verification": budget.record(aw["max_length"], len(rand_lengths)),
        "seconds": round(time.monotonic() - t0, 3),
        "build_seconds": round(build_seconds, 4),
        "verify_seconds": round(time.monotonic() - t_build - build_seconds, 3),
        "dtype": dtype,
        "code_version": code_version(),
    })
    if on_model is not None:  # the verified model, for --save and the job's download
        on_model(model, dfa)
    if progress:
        progress({"phase": "done", "exact": result["exact"]})
    return result


def _recorded(text: str) -> str | None:
    """The text, when the product can read it back (:func:`~langclass.core.base.limits.readback_limits`)."""
    return text if len(text) <= RECORD_TEXT_CHARS else None


def _public(acc: dict) -> dict:
    return {k: acc[k] for k in ("checked", "wrong", "sim_inexact", "formula_dfa_mismatch", "max_length")}
