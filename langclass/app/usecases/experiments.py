"""The experiment use cases shared by the API and the CLI: requests, specs, validation, the prediction.

A train or construct experiment on a stored language becomes a job spec here — periodic encodings
get the language's period, each encoding gets the theory's prediction (:func:`predicted_sufficient`)
— and is checked before it is queued (:func:`validate_train_spec`, :func:`validate_construct_spec`),
so a bad request is a 422 now rather than a failed job later. ``routes/jobs.py`` and
``langclass.app.cli.jobs`` both call these; nothing here imports FastAPI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from langclass.core.base.errors import InputError, UnsupportedError
from langclass.models.training.specs import (EncodingItem, EncodingSpec, JobLimits, LearningRate, ProfileName, Seed, SettingName, TaskName,
                                            TrainOverrides, check_task)

__all__ = [
    "ExperimentRequest",
    "PERIODIC_FAMILIES",
    "predicted_sufficient",
    "predicted_sufficient_causal",
    "predict",
    "y_mod_period",
    "least_modulus",
    "build_train_spec",
    "validate_train_spec",
    "build_construct_spec",
    "validate_construct_spec",
    "sector_prediction",
    "build_sectors_spec",
    "validate_sectors_spec",
]

PERIODIC_FAMILIES = ("rope_periodic", "sinusoidal_periodic")
"""Encoding families whose ``periods`` default to the language's LTL[P,MOD] period k."""

MAX_SEEDS = 50
MAX_LEARNING_RATES = 20
MAX_ENCODINGS = 20


EncodingChoice = EncodingSpec
"""One encoding of an experiment, with explicit parameters (:class:`~langclass.models.training.specs.EncodingSpec`)."""


class ExperimentRequest(BaseModel):
    """An experiment to run as a job.

    ``kind = "train"``: train recognizers for every (encoding, seed, learning rate) and compare each
    encoding with the prediction (*Disentangling the Expressivity of RoPE*, App. E).
    ``kind = "construct"``: build a transformer by construction and verify it; further fields (e.g.
    ``formula``) go to the construction unchanged.
    ``kind = "sectors"``: train PJ-bias recognizers (*PJ-RoPE: A Fourier–Jet–Affine Position Space
    for Relative Attention*) and compare the sectors they select with the classification
    (:mod:`langclass.models.experiments.sectors`); further fields: ``pj`` (pj_bias parameters), ``sparsity``
    (λ values), ``max_root_order``, ``root_tolerance``, ``energy_threshold``
    (:class:`~langclass.models.training.specs.SectorsSpec`).
    """

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"kind": "train", "encodings": ["nope", "rope_periodic"], "profile": "quick", "seeds": [0], "learning_rates": [3e-4]},
                {"kind": "construct", "formula": "MOD_2^0"},
                {"kind": "sectors", "profile": "quick", "seeds": [0], "pj": {"max_order": 2}},
            ]
        },
    )
    kind: Literal["train", "construct", "sectors"] = "train"
    encodings: list[EncodingItem] | None = Field(
        None, min_length=1, max_length=MAX_ENCODINGS,
        description="encoding names or {name, params, label}; periodic encodings get periods = the language's period k unless given",
    )
    profile: ProfileName | None = Field(None, description="quick (2-core CPU, ~a minute), paper-lite (2-core CPU, test lengths 41–500) or paper (App. E.2)")
    seeds: list[Seed] | None = Field(None, min_length=1, max_length=MAX_SEEDS, description="training seeds (default: the profile's; each ≤ job_max_seed)")
    learning_rates: list[LearningRate] | None = Field(None, min_length=1, max_length=MAX_LEARNING_RATES, description="AdamW learning rates (default: the profile's)")
    overrides: TrainOverrides | None = Field(None, description="profile settings to change: max_steps, test_lengths, d_model, … (each under its named limit)")
    eval_seed: Seed | None = Field(None, description="seed of the test strings (shared by every run; ≤ job_max_seed)")
    batched: bool | None = Field(None, description="train (kind train): train and evaluate the runs that share a model shape "
                                 "together (default true); false trains them one after another")
    max_attempts: int | None = Field(None, ge=1, le=10, description="claims allowed if workers die (default LANGCLASS_JOB_MAX_ATTEMPTS)")
    setting: str | None = Field(None, max_length=32, description="train: strict (default; strict mask, BOS w EOS, readout at EOS) or "
                                "causal (non-strict mask, BOS w, readout at the last position); construct: fixed (default) or causal")
    task: TaskName | None = Field(None, description="train: recognition (default) or state_prediction (the minimal DFA's state "
                                  "at every position; setting causal only)")


# --- building the spec ------------------------------------------------------------------------------


def _period(analysis: Mapping[str, Any]) -> int | None:
    """The least k of an LTL[P,MOD] language (None when not a member or not decided)."""
    info = (analysis.get("classes") or {}).get("ltl_p_mod")
    if not isinstance(info, Mapping) or info.get("member") is not True:
        return None
    k = info.get("period")
    if k is None and isinstance(info.get("certificate"), Mapping):
        k = info["certificate"].get("period")
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def _member(analysis: Mapping[str, Any], key: str) -> bool | None:
    info = (analysis.get("classes") or {}).get(key)
    m = info.get("member") if isinstance(info, Mapping) else None
    return m if isinstance(m, bool) else None


def predicted_sufficient(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Whether the theory says the model with this encoding recognizes the language at every length.

    * NoPE: exactly LTL[P] (*Disentangling the Expressivity of RoPE*, §2.2).
    * ``recency`` (trainable recency heads beside NoPE heads): LTL[P,Y]; ``recency_periodic`` (or
      ``recency`` with ``periods``): LTL[P,Y,MOD] when a period is a multiple of the language's least
      m (the recency construction of docs/recency.md with Thm 3.1 / Lemma 3.2).
    * ``hard_nope`` (unique hard attention, strict mask, rightmost ties): exactly the star-free
      languages; ``hard_mod_onehot`` (marks i mod ``period``): FO[<,MOD_period], sufficient when the
      period is a multiple of the least modulus m (*Masked Hard-Attention Transformers Recognize
      Exactly the Star-Free Languages*, Thm 17, Thm 19, Cor 20).
    * periodic RoPE / periodic sinusoidal PE: exactly LTL[P,MOD] (Thm 3.1, 3.2); a language of
      period k needs MOD_k atoms, which a pair of period m gives when k divides m, so some
      ``periods`` entry must be a multiple of k.
    * conventional RoPE, sinusoidal, ALiBi: no length-independent guarantee (Cor. 4.1: RoPE simulates
      Y^k only up to a certified length) — reported as measured, never predicted.

    Returns:
        ``(sufficient, reason)`` — sufficient is None when the classification is undecided.
    """
    in_p, in_mod = _member(analysis, "ltl_p"), _member(analysis, "ltl_p_mod")
    if name == "nope":
        if in_p is None:
            return None, "LTL[P] membership undecided"
        return in_p, "NoPE recognizes exactly LTL[P] (Disentangling the Expressivity of RoPE, §2.2)" + ("" if in_p else "; the language is not in LTL[P]")
    if name in PERIODIC_FAMILIES:
        if in_mod is None:
            return None, "LTL[P,MOD] membership undecided"
        if not in_mod:
            return False, "the language is not in LTL[P,MOD] (Disentangling the Expressivity of RoPE, Thm 3.1/3.2)"
        k = _period(analysis) or 1
        periods = params.get("periods", 2)
        plist = periods if isinstance(periods, list) else [periods]
        ok = any(isinstance(m, int) and m % k == 0 for m in plist) or k == 1
        return ok, (f"periodic encodings recognize LTL[P,MOD] (Thm 3.1/3.2); period k = {k} "
                    + ("divides a table period" if ok else f"divides none of the periods {plist}"))
    if name in ("recency", "recency_periodic"):
        return _recency_sufficient(name, params, analysis)
    if name in ("hard_nope", "hard_mod_onehot"):
        return _hard_sufficient(name, params, analysis)
    return False, "no length-independent guarantee for this encoding (Cor. 4.1)"


_FORMAL = "A Formal Framework for Understanding Length Generalization in Transformers"
_COUNTING_SRC = "Counting Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers"


def predicted_sufficient_causal(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any]) -> tuple[bool | None, str]:
    """The causal setting's prediction (non-strict causal mask, ``BOS w``, readout at the last position).

    * NoPE: sufficient exactly on C-RASP (class ``crasp``): every C-RASP program compiles to a NoPE
      softmax transformer with a non-strict causal mask (*Counting Like Transformers*, the compilation
      theorem), and C-RASP programs length-generalize under the idealized inference procedure of
      *A Formal Framework for Understanding Length Generalization in Transformers* (its main theorem:
      functions expressible by a Limit Transformer whose positional information is periodic absolute
      and local relative are identified from bounded-length data; C-RASP without positional relations
      is such a function). Precision must grow like log n (counts), as the construction states.
    * learned absolute, RoPE, ALiBi and every other encoding: no prediction (``False``, "measured").
      The framework's theorem covers Limit Transformers whose absolute encoding is periodic and whose
      relative terms are local (zero beyond a bounded distance). A learned table whose rows past the
      training lengths never received a gradient is neither; conventional RoPE (rotations at all
      distances, non-periodic frequencies) and ALiBi (−s·|i − j| grows without bound) are not local.
      The theorem says nothing about SGD on these parameterizations, so nothing is predicted; the
      languages of C-RASP with local/periodic positional relations beyond plain C-RASP are not decided
      by the product and get no prediction either.

    Returns:
        ``(sufficient, reason)`` — None when C-RASP membership is undecided (NoPE).
    """
    if name == "nope":
        member = _member(analysis, "crasp")
        if member is None:
            return None, "C-RASP membership undecided"
        if member:
            return True, (f"the language is in C-RASP: a NoPE transformer with a non-strict causal mask recognizes it at every "
                          f"length ({_COUNTING_SRC}, compilation theorem) and it length-generalizes under idealized inference "
                          f"({_FORMAL}, main theorem)")
        return False, f"the language is not in C-RASP: no length guarantee for causal NoPE ({_COUNTING_SRC}; {_FORMAL})"
    why = {"learned": "a learned absolute table is not periodic (rows past the training lengths stay at their initialisation)",
           "rope": "conventional RoPE acts at every distance (not local) with non-periodic frequencies",
           "alibi": "the ALiBi bias −s·|i − j| is not local (it grows without bound)"}.get(
        name, "this encoding is outside the positional terms the theorem allows")
    return False, (f"measured, not predicted: {_FORMAL} guarantees length generalization only for periodic absolute and local "
                   f"relative positional terms under idealized inference; {why}")


def state_languages_in_crasp(dfa_json: Mapping[str, Any]) -> bool | None:
    """Whether, for every state q of the minimal DFA, the prefixes that lead to q form a C-RASP
    language (class ``crasp``, decided by the census classifier); None when one is undecided.

    This is what NoPE needs for the state-prediction task: the state after a prefix is known once the
    prefix's membership in each such language is, and C-RASP programs run side by side compile into
    one causal NoPE transformer whose every position carries each program's value (*Counting Like
    Transformers*, the compilation theorem gives the value at every position). Cost: one C-RASP
    decision per state (under the default limits).

    Raises:
        DfaFormatError: ``dfa_json`` is not DFA JSON (either documented form)."""
    from langclass.core.automata.automaton import DFA
    from langclass.core.census.run import classify
    from langclass.core.ingest.source import DfaSource, parse_language

    dfa = parse_language(DfaSource(dfa_json, field="language")).dfa.canonical()
    rows = dfa.transitions.tolist()
    answers = []
    for q in range(dfa.num_states):
        dfa_q = DFA.from_table(list(dfa.alphabet), rows, int(dfa.initial), [q])
        answers.append(classify(dfa_q, ("crasp",)).get("crasp"))
    if any(a is False for a in answers):
        return False
    return None if any(a is None for a in answers) else True


def predict(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any], setting: str = "strict") -> tuple[bool | None, str]:
    """:func:`predicted_sufficient` (``setting="strict"``) or :func:`predicted_sufficient_causal` (``"causal"``)."""
    if setting == "causal":
        return predicted_sufficient_causal(name, params, analysis)
    return predicted_sufficient(name, params, analysis)
_RECENCY_SOURCE = ("recency construction (docs/recency.md): heads with slope ≥ f_large put weight exactly 1 on i − 1 at every "
                   "length, heads with slope 0 are NoPE heads")
_HARD_SOURCE = "Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages"


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def y_mod_period(analysis: Mapping[str, Any]) -> int | None:
    """The least m of an LTL[P,Y,MOD] language (1 inside LTL[P,Y], the LTL[P,MOD] period k inside
    LTL[P,MOD]); None when not a member or not known."""
    if _member(analysis, "ltl_p_y_mod") is not True:
        return None
    if _member(analysis, "ltl_p_y") is True:
        return 1
    info = (analysis.get("classes") or {}).get("ltl_p_y_mod") or {}
    m = _int_or_none(info.get("period")) if isinstance(info, Mapping) else None
    soft = (analysis.get("encodings") or {}).get("soft") or {}
    if m is None and isinstance(soft, Mapping) and soft.get("class") == "ltl_p_y_mod":
        m = _int_or_none((soft.get("parameters") or {}).get("period"))
    return m if m is not None else _period(analysis)


def least_modulus(analysis: Mapping[str, Any]) -> int | None:
    """The least m with L ∈ FO[<,MOD_m] as the classification's hard answer names it (1 for star-free
    languages); None when not in FO[<,MOD] or not known."""
    if _member(analysis, "star_free") is True:
        return 1
    if _member(analysis, "fo_mod") is not True:
        return None
    hard = (analysis.get("encodings") or {}).get("hard") or {}
    params = hard.get("parameters") or {} if isinstance(hard, Mapping) else {}
    return _int_or_none(params.get("modulus")) or _int_or_none(params.get("period"))


def _periods_list(params: Mapping[str, Any], key: str, default: int) -> list[Any]:
    v = params.get(key, default)
    return v if isinstance(v, list) else [v]


def _recency_sufficient(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Trainable recency heads (``recency``; with periodic RoPE ``recency_periodic`` or ``recency`` with
    ``periods``): LTL[P,Y] at all lengths, with periodic RoPE of a period divisible by the least m
    LTL[P,Y,MOD] (*Disentangling the Expressivity of RoPE*, Thm 3.1 / Lemma 3.2, with the recency proof)."""
    if params.get("heads") == 0:
        return predicted_sufficient("nope", {}, analysis)
    periodic = name == "recency_periodic" or params.get("periods") is not None
    if not periodic:
        in_y = _member(analysis, "ltl_p_y")
        if in_y is None:
            return None, "LTL[P,Y] membership undecided"
        return in_y, (f"recency heads (learnable slope, bounded so that s ≥ f_large is reachable) beside NoPE heads simulate "
                      f"LTL[P,Y] at every length — {_RECENCY_SOURCE}" + ("" if in_y else "; the language is not in LTL[P,Y]"))
    in_ym = _member(analysis, "ltl_p_y_mod")
    if in_ym is None:
        return None, "LTL[P,Y,MOD] membership undecided"
    if not in_ym:
        return False, "the language is not in LTL[P,Y,MOD] (periodic RoPE + recency heads recognize exactly its languages)"
    m = y_mod_period(analysis)
    plist = _periods_list(params, "periods", 2)
    if m is None:
        return None, "the least period m of LTL[P,Y,MOD] is not known"
    ok = m == 1 or any(isinstance(p, int) and p % m == 0 for p in plist)
    return ok, (f"periodic RoPE (MOD atoms, Disentangling the Expressivity of RoPE, Thm 3.1 / Lemma 3.2) + recency heads (Y) "
                f"recognize LTL[P,Y,MOD] at every length — {_RECENCY_SOURCE}; least period m = {m} "
                + ("divides a table period" if ok else f"divides none of the periods {plist}"))


def _hard_sufficient(name: str, params: Mapping[str, Any], analysis: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Unique hard attention, strict future mask, rightmost ties: NoPE = star-free (Thm 17); one-hot
    marks i mod m = FO[<,MOD_m] (Thm 19; Cor 20 for FO[<,MOD] = regular ∩ AC⁰)."""
    sf = _member(analysis, "star_free")
    if name == "hard_nope":
        if sf is None:
            return None, "star-freeness undecided"
        return sf, (f"{_HARD_SOURCE}, Thm 17: future-masked rightmost unique hard attention without PE recognizes exactly "
                    "the star-free languages" + ("" if sf else "; the language is not star-free"))
    fm = _member(analysis, "fo_mod")
    if fm is None:
        return None, "FO[<,MOD] membership undecided"
    if not fm:
        return False, f"the language is not in FO[<,MOD] ({_HARD_SOURCE}, Cor 20: not in AC⁰)"
    m = least_modulus(analysis)
    if m is None:
        return None, "the least modulus m with L ∈ FO[<,MOD_m] is not known"
    period = params.get("period", 2)
    ok = m == 1 or (isinstance(period, int) and period % m == 0)
    return ok, (f"{_HARD_SOURCE}, Thm 19 (finite-image marks i mod m give the predicates MOD_m^r) and Cor 20; least modulus "
                f"m = {m} " + ("divides the marks' period" if ok else f"does not divide the period {period}"))


def build_train_spec(body: ExperimentRequest, language: Mapping[str, Any]) -> dict[str, Any]:
    """The ``run_experiment`` spec of a train request on a stored language.

    Periodic encodings without ``periods`` get the language's LTL[P,MOD] period k (left to the
    encoding's default when the language has none); ``prediction.sufficient`` lists the labels the
    theory predicts sufficient (:func:`predicted_sufficient`), with reasons.

    Raises:
        InputError: no encodings, or extra fields a train job does not take (``field`` names it).
    """
    extra = sorted((body.model_extra or {}).keys())
    if extra:
        raise InputError(f"unknown field {extra[0]!r} for a train experiment", field=extra[0])
    if not body.encodings:
        raise InputError("a train experiment needs at least one encoding", field="encodings")
    setting, task = body.setting or "strict", body.task or "recognition"
    if setting not in get_args(SettingName):
        raise InputError(f"setting: a train experiment's setting is one of {', '.join(get_args(SettingName))}, got {setting!r}",
                         field="setting")
    check_task(setting, task)
    analysis = language.get("analysis") or language
    if task == "state_prediction":  # NoPE needs every state's prefix language in C-RASP (state_languages_in_crasp)
        states_ok = state_languages_in_crasp(language["dfa"])
        analysis = {**analysis, "classes": {"crasp": {"member": states_ok}}}
    period = _period(analysis)
    encodings: list[dict[str, Any]] = []
    sufficient: list[str] = []
    reasons: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for i, e in enumerate(body.encodings):
        choice = EncodingSpec(name=e) if isinstance(e, str) else e
        params = dict(choice.params)
        if choice.name in PERIODIC_FAMILIES and "periods" not in params and period is not None:
            params["periods"] = period
            defaults[f"encodings[{i}].params.periods"] = period
        elif choice.name == "recency_periodic" and "periods" not in params and (m := y_mod_period(analysis)) is not None:
            params["periods"] = m  # the least m of LTL[P,Y,MOD]
            defaults[f"encodings[{i}].params.periods"] = m
        elif choice.name == "hard_mod_onehot" and "period" not in params and (m := least_modulus(analysis)) is not None:
            params["period"] = m  # the least modulus of FO[<,MOD_m]
            defaults[f"encodings[{i}].params.period"] = m
        label = choice.label or EncodingSpec(name=choice.name, params=params).resolved_label()
        encodings.append({"name": choice.name, "params": params, "label": label})
        ok, why = predict(choice.name, params, analysis, setting)
        reasons[label] = {"sufficient": ok, "reason": why}
        if ok:
            sufficient.append(label)
    spec: dict[str, Any] = {
        "language": language["dfa"],
        "encodings": encodings,
        "profile": body.profile or "quick",
        "prediction": {"sufficient": sufficient, "per_encoding": reasons, "language_period": period,
                       "source": (f"{_COUNTING_SRC}; {_FORMAL}" if setting == "causal"
                                  else "Disentangling the Expressivity of RoPE, §2.2, Thm 3.1, Thm 3.2, Cor. 4.1; recency heads: "
                                       "docs/recency.md; hard attention: Masked Hard-Attention Transformers Recognize Exactly "
                                       "the Star-Free Languages, Thm 17, Thm 19, Cor 20")},
    }
    # only when not the defaults: a strict recognition spec stays what it was (a sweep resumes from its records)
    if setting != "strict":
        spec["setting"] = spec["prediction"]["setting"] = setting
    if task != "recognition":
        spec["task"] = task
    if body.seeds is not None:
        spec["seeds"] = list(body.seeds)
    if body.learning_rates is not None:
        spec["learning_rates"] = list(body.learning_rates)
    if body.overrides is not None:
        spec["overrides"] = body.overrides.model_dump(exclude_none=True, mode="json")
    if body.eval_seed is not None:
        spec["eval_seed"] = body.eval_seed
    if body.batched is not None:
        spec["batched"] = body.batched
    if defaults:
        spec["prediction"]["defaults_from_classification"] = defaults
    soft = (analysis.get("encodings") or {}).get("causal" if setting == "causal" else "soft")
    if isinstance(soft, Mapping):
        spec["prediction"]["classification"] = {k: soft.get(k) for k in ("encoding", "name", "class", "length_guarantee", "theorem", "reason")}
    return spec


def validate_train_spec(spec: Mapping[str, Any], limits: JobLimits | None = None) -> None:
    """Check a train spec before it is queued, so a bad request is a 422 now, not a failed job later.

    Delegates to :func:`langclass.models.experiments.experiment.validate_spec` — the very checks the run makes
    first (the :class:`~langclass.models.training.specs.TrainSpec` model, every named limit of
    :class:`~langclass.models.training.specs.JobLimits` before anything is materialized, and every encoding
    built once with its parameters).

    Raises:
        InputError / LimitExceeded: naming the field or limit.
    """
    from langclass.models.experiments.experiment import validate_spec
    from langclass.models.training.specs import DEFAULT_JOB_LIMITS

    validate_spec(spec, limits or DEFAULT_JOB_LIMITS)


SECTORS_FIELDS = ("pj", "sparsity", "max_root_order", "root_tolerance", "energy_threshold")


def sector_prediction(analysis: Mapping[str, Any]) -> dict[str, Any]:
    """The sector the classification predicts (docs/pjrope.md, ours): ``ltl_p`` (no positional
    sector), else ``ltl_p_mod`` with its least period k (roots of order dividing k), else ``ltl_p_y``
    (an affine/recency head), else None (no prediction)."""
    src = "classification of this language; LTL[P] -> no sector, LTL[P,MOD] -> roots of order dividing k, LTL[P,Y] -> affine (docs/pjrope.md)"
    if _member(analysis, "ltl_p"):
        return {"class": "ltl_p", "period": None, "source": src}
    if _member(analysis, "ltl_p_mod"):
        return {"class": "ltl_p_mod", "period": _period(analysis) or 1, "source": src}
    if _member(analysis, "ltl_p_y"):
        return {"class": "ltl_p_y", "period": None, "source": src}
    return {"class": None, "period": None, "source": src}


def build_sectors_spec(body: ExperimentRequest, language: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`langclass.models.experiments.sectors.run_sectors` spec of a sectors request on a stored
    language, with the prediction from its stored classification.

    Raises:
        InputError: ``encodings`` given (the encoding is pj_bias), or an unknown field.
    """
    if body.encodings is not None:
        raise InputError("a sectors experiment always trains pj_bias; configure it with 'pj', not 'encodings'", field="encodings")
    for key in ("setting", "task"):
        if getattr(body, key) is not None:
            raise InputError(f"{key!r} is a field of train experiments; a sectors experiment trains in the strict setting", field=key)
    spec: dict[str, Any] = {"language": language["dfa"], "profile": body.profile or "quick",
                            "prediction": sector_prediction(language.get("analysis") or {})}
    for key, value in (body.model_extra or {}).items():
        if key not in SECTORS_FIELDS:
            raise InputError(f"unknown field {key!r} for a sectors experiment; expected one of {list(SECTORS_FIELDS)}", field=key)
        spec[key] = value
    for key in ("seeds", "learning_rates"):
        if getattr(body, key) is not None:
            spec[key] = list(getattr(body, key))
    if body.eval_seed is not None:
        spec["eval_seed"] = body.eval_seed
    if body.overrides is not None:
        spec["overrides"] = body.overrides.model_dump(mode="json", exclude_none=True)
    return spec


def validate_sectors_spec(spec: Mapping[str, Any], limits: JobLimits | None = None) -> None:
    """The checks :func:`langclass.models.experiments.sectors.run_sectors` makes first (shape, named limits,
    the pj_bias parameters built once).

    Raises:
        InputError / LimitExceeded: naming the field or limit.
    """
    from langclass.models.experiments.sectors import validate_sectors_spec as check

    check(spec, limits)


CONSTRUCT_FIELDS = ("formula", "program", "options")
TRAIN_ONLY_FIELDS = ("encodings", "profile", "seeds", "learning_rates", "overrides", "eval_seed", "task")


def build_construct_spec(body: ExperimentRequest, language: Mapping[str, Any]) -> dict[str, Any]:
    """The ``run_construction`` spec: the request's ``formula`` / ``program`` / options, with the
    stored canonical DFA as the reference language (without either, a formula is synthesized from it).

    Raises:
        InputError: a training field or an unknown field (``field`` names it).
    """
    for key in TRAIN_ONLY_FIELDS:
        if getattr(body, key) is not None:
            raise InputError(f"{key!r} is a field of train experiments, not of construct", field=key)
    try:
        from langclass.models.construct.verify import _OPTION_KEYS as option_keys
    except ImportError:  # pragma: no cover - partial installation
        option_keys = set()
    spec: dict[str, Any] = {}
    for key, value in (body.model_extra or {}).items():
        if key not in CONSTRUCT_FIELDS and key not in option_keys:
            raise InputError(f"unknown field {key!r} for a construct experiment; expected formula, program, options "
                             f"or one of {sorted(option_keys)}", field=key)
        spec[key] = value
    if body.setting is not None:  # the construction's own settings (fixed | strict | causal)
        from langclass.models.construct.options import SETTINGS

        if body.setting not in SETTINGS:  # named as the body names it (the construction would say options.setting)
            raise InputError(f"setting must be one of {list(SETTINGS)} for a construct experiment, got {body.setting!r}",
                             field="setting")
        spec["setting"] = body.setting
    if "formula" in spec and "program" in spec:
        raise InputError("give a formula or a program, not both", field="program")
    spec["alphabet"] = list(language.get("alphabet") or language["dfa"].get("alphabet", []))
    if "formula" not in spec:
        spec["dfa"] = language["dfa"]  # the reference language (program) or the synthesis input
    return spec


def validate_construct_spec(spec: Mapping[str, Any], stored_dfa: Mapping[str, Any], limits: Any) -> None:
    """Check a construct spec before it is queued: options, program syntax, that a formula
    defines the stored language (a counterexample word otherwise), and that the planned model is
    within ``limits.max_parameters`` (``limit-exceeded`` with the planned size; nothing is allocated).

    Raises:
        InputError (FormulaSyntaxError, ProgramSyntaxError, …): naming the field.
    """
    try:
        from langclass.models.construct import verify
    except ImportError:
        raise UnsupportedError("construction jobs are not available in this installation", field="kind") from None
    check = getattr(verify, "validate_spec", None)
    if check is not None:
        check(spec, limits)  # parses, synthesizes and plans: a plan over max_parameters is refused here (422)
    elif hasattr(verify, "_options"):
        verify._options(spec)
    from .service import dfa_from_record

    from langclass.core.ingest.source import language_source, parse_language, parse_source_program, source_from_mapping

    if "formula" in spec:
        fdfa = parse_language(source_from_mapping({k: spec[k] for k in ("formula", "alphabet") if k in spec},
                                                  kinds=("formula",)), limits).dfa
        target = dfa_from_record(stored_dfa, limits)
        if fdfa.fingerprint() != target.fingerprint():
            word = fdfa.counterexample(target) if fdfa.alphabet == target.alphabet else None
            raise InputError(
                "the formula does not define this language" + (f": they differ on {''.join(word)!r}" if word is not None else ""),
                field="formula", counterexample=list(word) if word is not None else None,
            )
    if "program" in spec:
        if not isinstance(spec["program"], str):
            raise InputError("program must be B-RASP text", field="program")
        parse_source_program(language_source(program=spec["program"], alphabet=spec.get("alphabet"), kinds=("program",)),
                             limits)
