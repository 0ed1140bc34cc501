"""Job specs as frozen pydantic models: one definition for the API, the CLI and the worker.

A ``train`` spec (:class:`TrainSpec`) is parsed by :func:`parse_train_spec` wherever it enters —
the route that queues it, ``langclass train``, and :func:`langclass.models.experiments.experiment.run_experiment`
in the worker — so the three can never accept different things. Parsing is in two steps, both
before anything is materialized (no list of lengths is built, no model, no tensor):

1. **shape** (pydantic, ``extra="forbid"``, strict types): unknown keys, wrong types, booleans
   posing as numbers, non-finite floats, negative or zero sizes are refused with the field's path;
2. **named limits** (:class:`JobLimits`, raisable by a ``LANGCLASS_`` setting of the same name):
   every numeric field has an upper bound, and the derived sizes (runs of the grid, number of test
   lengths × strings per length) are computed arithmetically and checked, raising
   :class:`~langclass.core.base.errors.LimitExceeded` naming the limit.

Errors are :class:`~langclass.core.base.errors.InputError` / ``LimitExceeded`` with ``field`` a path such
as ``overrides.max_steps`` or ``encodings[1].label``. Nothing here imports torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    ValidationError,
    field_validator,
)

from langclass.core.base.errors import InputError, LimitExceeded

__all__ = [
    "ProfileName",
    "JobLimits",
    "DEFAULT_JOB_LIMITS",
    "LABEL_PATTERN",
    "EncodingSpec",
    "LengthRange",
    "LengthSpan",
    "LengthSet",
    "LENGTHS_HELP",
    "expand_lengths",
    "length_notation_notes",
    "TrainOverrides",
    "Prediction",
    "SettingName",
    "TaskName",
    "TrainSpec",
    "parse_train_spec",
    "check_task",
    "SectorPrediction",
    "SectorsSpec",
    "parse_sectors_spec",
    "field_path",
    "length_count",
    "length_max",
]


@dataclass(frozen=True)
class JobLimits:
    """Upper bounds of a train job's numbers; each is a named limit with a ``LANGCLASS_`` setting
    of the same name (``max_runs`` → ``LANGCLASS_MAX_RUNS``), so a site can raise it.

    Defaults admit the paper's protocol (*Disentangling the Expressivity of RoPE*, App. E.2:
    5 layers, width 64, batch 128, 1,000,000 steps, test lengths to 500) with room to spare, and
    refuse what no machine finishes (``max_steps`` 10¹², ``d_model`` 10⁶, …).

    Attributes:
        max_runs: runs of the grid (encodings × seeds × learning rates).
        max_test_length: the longest train or test string.
        max_eval_strings: test strings over all lengths (lengths × ``eval_per_length``).
        job_max_steps: training steps per run (also bounds ``patience`` and ``warmup_steps``).
        job_max_layers / job_max_d_model / job_max_heads / job_max_d_ff: model size.
        job_max_batch_size: strings per training step.
        job_max_eval_per_length: test strings per length.
        job_max_seed: largest seed (training seeds and ``eval_seed``).
        job_max_encoding_param: largest magnitude of a number in an encoding's ``params``
            (a RoPE base, a period, a slope).
        job_max_parameters: parameters of one run's model, all dimensions together
            (:func:`langclass.models.training.footprint.footprint`).
        job_max_memory_bytes: estimated peak memory of the whole job
            (:func:`langclass.models.training.footprint.job_footprint`): the process, the test
            strings and the largest unit of runs trained at once — a stacked group of up to 32
            runs, each with weights, gradients, AdamW state and the activations kept for the
            backward pass. Keep it under the worker's hard cap (``LANGCLASS_JOB_WORKER_MAX_RSS_BYTES``).
        job_time_limit_s: wall-clock seconds a job may run (enforced by the worker, which stops
            the run and records ``limit-exceeded``).
    """

    max_runs: int = 500
    max_test_length: int = 10_000
    max_eval_strings: int = 5_000_000
    job_max_steps: int = 1_000_000
    job_max_layers: int = 48
    job_max_d_model: int = 4096
    job_max_heads: int = 64
    job_max_d_ff: int = 16384
    job_max_batch_size: int = 8192
    job_max_eval_per_length: int = 1_000_000
    job_max_seed: int = 2**32 - 1
    job_max_encoding_param: float = 1e9
    job_max_parameters: int = 100_000_000
    job_max_memory_bytes: int = 8 * 2**30
    job_time_limit_s: float = 86_400.0

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The limit names (= the settings that raise them)."""
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self, name: str, observed: int | float, field: str, what: str | None = None) -> None:
        """Raise :class:`LimitExceeded` naming ``name`` when ``observed`` exceeds that limit."""
        bound = getattr(self, name)
        if observed > bound:
            raise LimitExceeded(name, bound, f"{what or field} = {observed:g} exceeds {name}={bound:g}", field=field)


DEFAULT_JOB_LIMITS = JobLimits()

LABEL_PATTERN = r"^[\w.,:;=+\-*^'#%@!?|~<>()\[\]{} ]{1,100}$"
"""An encoding label: 1–100 letters, digits and common punctuation; no path separators, no ``$``
(matplotlib mathtext), no control characters. Labels only name runs in results and plots — they
never become file names."""

LABEL_RULE = ("a label is 1-100 letters, digits, spaces and .,:;=+-*^'#%@!?|~<>()[]{} "
              "(no '/', '\\', '$' or control characters)")

def _integral_number(value: Any) -> Any:
    """A JSON number with no fractional part (``3.0``) as the integer it is — JSON Schema's
    ``integer`` admits it — so integer fields accept it; booleans, strings and ``3.5`` stay refused
    (the fields are strict)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


_Integral = BeforeValidator(_integral_number)
StrictInt = Annotated[int, _Integral, Strict()]
# constraints go before the BeforeValidator: after it pydantic publishes them as "ge", not "minimum"
PositiveInt = Annotated[int, Field(ge=1), _Integral, Strict()]
NonNegativeInt = Annotated[int, Field(ge=0), _Integral, Strict()]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, description="a seed (0 … job_max_seed)"), _Integral, Strict()]
LearningRate = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False, description="AdamW learning rate in (0, 1)")]


ProfileName = Literal["quick", "paper-lite", "paper"]
"""Training profiles (:data:`langclass.models.experiments.experiment.PROFILES`): ``quick`` (2-core CPU, test
lengths 41–100), ``paper-lite`` (2-core CPU, test lengths 41–500 as Table 2 of *Disentangling the
Expressivity of RoPE*, log-length attention scaling), ``paper`` (its App. E.2 settings)."""


SettingName = Literal["strict", "causal"]
"""The training setting (:data:`langclass.models.training.train.SETTINGS`): ``strict`` (strict future
mask, ``BOS w EOS``, readout at EOS — *Disentangling the Expressivity of RoPE*, §2.2) or ``causal``
(non-strict causal mask j ≤ i, ``BOS w`` without EOS, readout at the last position — the framing of
the C-RASP construction of *Counting Like Transformers*)."""

TaskName = Literal["recognition", "state_prediction"]
"""The training task: ``recognition`` (accept/reject) or ``state_prediction`` (the minimal DFA's
state after every symbol, the protocol of *Algebraic Decomposition Theory for Transformer Length
Generalization*; causal setting only)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _param_value_schema(depth: int) -> dict[str, Any]:
    """The JSON schema of one ``params`` value, as ``EncodingSpec._params`` checks it: a number, a
    string of ≤ 200 characters, a boolean, null, or a list of ≤ 256 of them nested ≤ ``depth`` deep
    (an empty list deeper still)
    (finiteness is JSON's own: it has no infinities)."""
    scalars: list[dict[str, Any]] = [{"type": "number"}, {"type": "string", "maxLength": 200}, {"type": "boolean"}, {"type": "null"}]
    # a list at the deepest level may only be empty (its items would nest too deeply)
    scalars.append({"type": "array", "maxItems": 256, "items": _param_value_schema(depth - 1)} if depth > 0
                   else {"type": "array", "maxItems": 0})
    return {"anyOf": scalars}


class EncodingSpec(_Frozen):
    """One encoding of an experiment: a family name, its parameters and an optional label."""

    name: str = Field(max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                      description="family: nope, sinusoidal, sinusoidal_periodic, rope, rope_periodic, alibi, …")
    params: dict[Annotated[str, Field(max_length=64)], Any] = Field(
        default_factory=dict, max_length=32, description='family parameters, e.g. {"periods": 2} or {"base": 10000}',
        json_schema_extra={"additionalProperties": _param_value_schema(3)})
    label: str | None = Field(None, pattern=LABEL_PATTERN, description="name in results (default: name(params))")

    @field_validator("label")
    @classmethod
    def _label(cls, v: str | None) -> str | None:
        if v is not None and (v.strip() != v or v.strip(". ") == ""):
            raise ValueError("a label must not start or end with spaces, nor be only dots and spaces")
        return v

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, Any]) -> dict[str, Any]:
        def walk(x: Any, depth: int) -> None:
            if depth > 3:
                raise ValueError("params nest too deeply")
            if isinstance(x, float) and not math.isfinite(x):
                raise ValueError("params must be finite numbers")
            if isinstance(x, (list, tuple)):
                if len(x) > 256:
                    raise ValueError("a params list has more than 256 entries")
                for y in x:
                    walk(y, depth + 1)
            elif isinstance(x, Mapping):
                raise ValueError("params values are numbers, strings, booleans or lists of them")
            elif isinstance(x, str) and len(x) > 200:
                raise ValueError("a params string is longer than 200 characters")

        for value in v.values():
            walk(value, 0)
        return v

    def resolved_label(self) -> str:
        """``label``, or ``name(k=v,…)`` from the sorted parameters."""
        if self.label is not None:
            return self.label
        p = self.params
        return self.name if not p else self.name + "(" + ",".join(f"{k}={p[k]}" for k in sorted(p)) + ")"


def _encoding_tag(v: Any) -> str:
    return "EncodingName" if isinstance(v, str) else "EncodingSpec"


EncodingItem = Annotated[
    Union[
        Annotated[Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], Tag("EncodingName")],
        Annotated[EncodingSpec, Tag("EncodingSpec")],
    ],
    Discriminator(_encoding_tag),
]


class LengthSpan(_Frozen):
    """``{"range": [a, b]}``: the lengths a, a+step, … up to b, both ends included (``step`` 1 unless given)."""

    range: Annotated[list[NonNegativeInt], Field(min_length=2, max_length=2)] = Field(
        description="[a, b]: from a to b inclusive")
    step: PositiveInt = 1

    @property
    def min(self) -> int:
        return self.range[0]

    @property
    def max(self) -> int:
        return self.range[1]


class LengthSet(_Frozen):
    """``{"lengths": [n1, n2, …]}``: exactly these lengths (any number of them, two included)."""

    lengths: Annotated[list[NonNegativeInt], Field(min_length=1, max_length=100_000)] = Field(
        description="exactly these lengths")


class LengthRange(_Frozen):
    """Deprecated ``{min, max, step}``: lengths ``min, min+step, …`` up to ``max`` (``max`` always
    included). Write ``{"range": [min, max], "step": step}``."""

    min: NonNegativeInt
    max: NonNegativeInt
    step: PositiveInt = 1


def _lengths_tag(v: Any) -> str:
    if isinstance(v, (LengthSpan, LengthSet, LengthRange)):
        return type(v).__name__
    if isinstance(v, Mapping):
        if "range" in v:
            return "LengthSpan"
        if "lengths" in v:
            return "LengthSet"
        return "LengthRange"
    return "LengthList"


Lengths = Annotated[
    Union[
        Annotated[LengthSpan, Tag("LengthSpan")],
        Annotated[LengthSet, Tag("LengthSet")],
        Annotated[list[NonNegativeInt], Field(min_length=1, max_length=100_000), Tag("LengthList")],
        Annotated[LengthRange, Tag("LengthRange")],
    ],
    Discriminator(_lengths_tag),
]
"""Lengths, in one explicit notation: ``{"range": [a, b]}`` (a..b inclusive, optional ``"step"``) or
``{"lengths": [n1, n2, …]}`` (exactly those). Still read, deprecated (:func:`length_notation_notes`
says so): a bare list — ``[a, b]`` is the range a..b, a list of another size is those lengths —
and ``{"min", "max", "step"}``."""

LENGTHS_HELP = ('{"range": [a, b]} = every length a..b (optional "step"); {"lengths": [n1, n2, …]} = exactly those; '
                "deprecated but read: [a, b] = a..b, a longer list = those lengths, {min, max, step}")


def _bounds(value: Any) -> tuple[int, int, int] | None:
    """``(min, max, step)`` of a range form, None for an explicit set of lengths."""
    if isinstance(value, (LengthSpan, LengthRange)):
        return value.min, value.max, value.step
    if isinstance(value, list) and len(value) == 2:
        return value[0], value[1], 1
    return None


def length_count(value: Any) -> int:
    """How many distinct lengths ``value`` (a :data:`Lengths`) stands for, without listing them."""
    bounds = _bounds(value)
    if bounds is not None:
        lo, hi, step = bounds
        if hi < lo:
            return 0
        return (hi - lo) // step + 1 + (1 if (hi - lo) % step else 0)
    return len(set(value.lengths if isinstance(value, LengthSet) else value))


def length_max(value: Any) -> int:
    """The longest length of ``value`` (a :data:`Lengths`)."""
    bounds = _bounds(value)
    if bounds is not None:
        return max(bounds[0], bounds[1])
    return max(value.lengths if isinstance(value, LengthSet) else value)


def expand_lengths(value: Any, field: str) -> list[int]:
    """The lengths ``value`` (a :data:`Lengths`) stands for, ascending (call after the limits).

    Raises:
        InputError: an empty range (b < a).
    """
    bounds = _bounds(value)
    if bounds is None:
        return sorted(set(value.lengths if isinstance(value, LengthSet) else value))
    lo, hi, step = bounds
    if hi < lo:
        raise InputError(f"{field}: the range {lo}..{hi} is empty (need a ≤ b)", field=field)
    out = list(range(lo, hi + 1, step))
    if out[-1] != hi:
        out.append(hi)
    return out


def length_notation_notes(spec: Any) -> list[str]:
    """A deprecation note per length field of ``spec`` (a train spec, mapping or :class:`TrainSpec`)
    written in an old form, saying what it was read as and how to write it now."""
    overrides = spec.get("overrides") if isinstance(spec, Mapping) else getattr(spec, "overrides", None)
    if overrides is None:
        return []
    notes = []
    for key in ("train_lengths", "test_lengths"):
        value = overrides.get(key) if isinstance(overrides, Mapping) else getattr(overrides, key, None)
        if isinstance(value, (list, tuple)):
            if len(value) == 2:
                notes.append(f"overrides.{key}: the list {list(value)} is read as the RANGE {value[0]}..{value[1]}; this "
                             f"form is deprecated — write {{\"range\": {list(value)}}} (or {{\"lengths\": {list(value)}}} "
                             "for exactly those two lengths)")
            else:
                notes.append(f"overrides.{key}: a bare list of lengths is deprecated — write {{\"lengths\": {list(value)}}}")
        elif isinstance(value, LengthRange) or (isinstance(value, Mapping) and "min" in value):
            lo, hi = (value.min, value.max) if isinstance(value, LengthRange) else (value.get("min"), value.get("max"))
            step = value.step if isinstance(value, LengthRange) else value.get("step", 1)
            notes.append(f"overrides.{key}: {{min, max, step}} is deprecated — write {{\"range\": [{lo}, {hi}]"
                         + (f", \"step\": {step}}}" if step != 1 else "}"))
    return notes


class TrainOverrides(_Frozen):
    """Profile settings a train spec may change (unset = the profile's value)."""

    n_layers: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_layers"})
    d_model: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_d_model"})
    n_heads: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_heads"})
    d_ff: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_d_ff"})
    batch_size: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_batch_size"})
    max_steps: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_steps"})
    patience: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_steps"})
    warmup_steps: NonNegativeInt | None = Field(None, json_schema_extra={"x-limit": "job_max_steps"})
    eval_per_length: PositiveInt | None = Field(None, json_schema_extra={"x-limit": "job_max_eval_per_length"})
    train_lengths: Lengths | None = Field(None, description="training lengths, from the least to the greatest: " + LENGTHS_HELP)
    test_lengths: Lengths | None = Field(None, description="test lengths: " + LENGTHS_HELP)
    near_miss_fraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    weight_decay: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] | None = None
    grad_clip: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] | None = None
    device: Annotated[str, Field(max_length=32, pattern=r"^(auto|cpu|cuda(:\d{1,3})?|mps)$")] | None = None
    precision: Literal["auto", "float32", "bfloat16"] | None = None
    length_scale: Literal["none", "log"] | None = Field(
        None, description="attention scores × ln(keys seen) for every encoding of the grid (RecognizerConfig.length_scale)")

    def check_limits(self, limits: JobLimits) -> None:
        """Raise :class:`LimitExceeded` for the first field over its named limit."""
        for name, limit in (("n_layers", "job_max_layers"), ("d_model", "job_max_d_model"), ("n_heads", "job_max_heads"),
                            ("d_ff", "job_max_d_ff"), ("batch_size", "job_max_batch_size"), ("max_steps", "job_max_steps"),
                            ("patience", "job_max_steps"), ("warmup_steps", "job_max_steps"),
                            ("eval_per_length", "job_max_eval_per_length")):
            v = getattr(self, name)
            if v is not None:
                limits.check(limit, v, f"overrides.{name}", name)
        for name in ("train_lengths", "test_lengths"):
            v = getattr(self, name)
            if v is not None:
                limits.check("max_test_length", length_max(v), f"overrides.{name}", f"the longest of {name}")


class Prediction(BaseModel):
    """What the theory predicts: the encodings (names or labels) it calls sufficient, with reasons."""

    model_config = ConfigDict(extra="allow", frozen=True)
    sufficient: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=100)


class TrainSpec(_Frozen):
    """The input of :func:`langclass.models.experiments.experiment.run_experiment` (a ``train`` job's ``spec``).

    ``language`` is DFA JSON (checked by ``parse_language`` when the run starts);
    ``checkpoint_dir`` is set by the worker (never by a request). ``batched`` (default true) trains
    the runs that share a model shape together (:mod:`langclass.models.training.train_batched`); false trains
    them one after another.
    """

    language: dict[str, Any] | str
    encodings: list[EncodingItem] = Field(min_length=1, max_length=100)
    profile: ProfileName = "quick"
    seeds: list[Seed] | None = Field(None, min_length=1, max_length=10_000)
    learning_rates: list[LearningRate] | None = Field(None, min_length=1, max_length=1_000)
    overrides: TrainOverrides | None = None
    prediction: Prediction | list[Annotated[str, Field(max_length=200)]] | str | None = None
    eval_seed: Seed | None = None
    batched: bool | None = None
    checkpoint_dir: str | None = Field(None, max_length=4096)
    setting: SettingName = Field("strict", description="strict (strict mask, BOS w EOS, readout at EOS) or causal "
                                 "(non-strict mask, BOS w, readout at the last position)")
    task: TaskName = Field("recognition", description="recognition, or state_prediction (the DFA state at every "
                           "position; setting causal only)")

    def encoding_specs(self) -> list[EncodingSpec]:
        return [EncodingSpec(name=e) if isinstance(e, str) else e for e in self.encodings]

    def check_limits(self, limits: JobLimits, *, n_seeds: int, n_rates: int, test_lengths: Any, eval_per_length: int) -> None:
        """Check every named limit (``n_seeds`` … are the values after the profile's defaults)."""
        for i, s in enumerate(self.seeds or ()):
            limits.check("job_max_seed", s, f"seeds[{i}]", "a seed")
        if self.eval_seed is not None:
            limits.check("job_max_seed", self.eval_seed, "eval_seed")
        for i, e in enumerate(self.encoding_specs()):
            for key, value in e.params.items():
                for x in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(x, (int, float)) and not isinstance(x, bool):
                        limits.check("job_max_encoding_param", abs(x), f"encodings[{i}].params.{key}", f"|{key}|")
        if self.overrides is not None:
            self.overrides.check_limits(limits)
        runs = len(self.encodings) * n_seeds * n_rates
        limits.check("max_runs", runs, "seeds", "runs (encodings × seeds × learning rates)")
        n_eval = length_count(test_lengths) * eval_per_length
        limits.check("max_eval_strings", n_eval, "overrides.eval_per_length", "test strings (lengths × eval_per_length)")


_TAGS = {"EncodingName", "EncodingSpec", "LengthList", "LengthRange", "LengthSpan", "LengthSet", "str", "int", "float", "list", "dict", "bool", "none"}


def field_path(loc: tuple[Any, ...] | list[Any]) -> str | None:
    """A pydantic error location as a field path (``encodings[1].label``), without the union tags
    (``EncodingSpec``, ``LengthList``, ``function-after[…]``, ``list[int]``) pydantic inserts."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part not in _TAGS and not re.search(r"\[.*\]$", part):
            out += f".{part}" if out else part
    return out or None


def _input_error(exc: ValidationError, prefix: str = "") -> InputError:
    err = exc.errors(include_url=False, include_input=False)[0]
    path = field_path(err.get("loc", ()))
    field = (prefix + ("." + path if path and prefix else path or "")) or None
    msg = str(err.get("msg", "invalid value"))
    if err.get("type") == "extra_forbidden":
        msg = "unknown field"
    elif err.get("type") == "string_pattern_mismatch" and (field or "").endswith("label"):
        msg = LABEL_RULE
    return InputError(f"{field or 'spec'}: {msg}", field=field)


def parse_train_spec(data: Any) -> TrainSpec:
    """Validate the shape of a train spec (step 1 of the module docstring).

    Raises:
        InputError: the first problem, with ``field`` naming where it is.
    """
    if isinstance(data, TrainSpec):
        return data
    if not isinstance(data, Mapping):
        raise InputError("a train spec is a JSON object", field="spec")
    try:
        spec = TrainSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise _input_error(exc) from None
    check_task(spec.setting, spec.task)
    return spec


def check_task(setting: str, task: str, field: str = "task") -> None:
    """Refuse a task the setting cannot train: ``state_prediction`` needs ``setting="causal"``
    (a strict-mask model never sees the current letter, so it cannot emit the state after it).

    Raises:
        InputError: naming ``field``.
    """
    if task == "state_prediction" and setting != "causal":
        raise InputError(f"{field}: state_prediction needs setting 'causal' (the strict mask hides the current "
                         f"symbol), got setting {setting!r}", field=field)


def job_limits_from(values: Mapping[str, Any] | None) -> JobLimits:
    """A :class:`JobLimits` from a mapping holding some of its names (e.g. a Settings dump)."""
    if not values:
        return DEFAULT_JOB_LIMITS
    return JobLimits(**{k: values[k] for k in JobLimits.names() if k in values and values[k] is not None})


class SectorPrediction(BaseModel):
    """The sector the classification predicts for a ``sectors`` job (see :mod:`langclass.models.experiments.sectors`)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    class_: Literal["ltl_p", "ltl_p_mod", "ltl_p_y"] | None = Field(None, alias="class")
    period: Annotated[int, Field(ge=1, le=1_000_000), _Integral, Strict()] | None = None


class SectorsSpec(_Frozen):
    """The input of :func:`langclass.models.experiments.sectors.run_sectors` (a ``sectors`` job's ``spec``):
    the train protocol's fields with one fixed encoding, ``pj_bias`` (parameters in ``pj``), the
    prediction, the sparsity sweep and the reading thresholds."""

    language: dict[str, Any] | str
    profile: ProfileName = "quick"
    seeds: list[Seed] | None = Field(None, min_length=1, max_length=10_000)
    learning_rates: list[LearningRate] | None = Field(None, min_length=1, max_length=1_000)
    overrides: TrainOverrides | None = None
    eval_seed: Seed | None = None
    pj: dict[str, Any] = Field(default_factory=dict, description="pj_bias parameters (max_order, n_freqs, sectors, omega_init, …)")
    prediction: SectorPrediction | None = None
    sparsity: list[Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)]] | None = Field(None, min_length=1, max_length=8)
    max_root_order: Annotated[int, Field(ge=1, le=1000), _Integral, Strict()] = 12
    root_tolerance: Annotated[float, Field(ge=0, le=math.pi, allow_inf_nan=False)] = 0.05
    energy_threshold: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 1.0

    @field_validator("pj")
    @classmethod
    def _pj(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in ("name", "n_heads"):
            if key in v:
                raise ValueError(f"pj holds pj_bias parameters; {key!r} is fixed by the experiment")
        try:
            return EncodingSpec(name="pj_bias", params=v).params  # the same depth/size checks as any encoding's params
        except ValidationError as exc:
            raise ValueError(str(exc.errors(include_url=False)[0].get("msg", "invalid pj parameters"))) from None


def parse_sectors_spec(data: Any) -> SectorsSpec:
    """Validate the shape of a sectors spec (like :func:`parse_train_spec`).

    Raises:
        InputError: the first problem, with ``field`` naming where it is.
    """
    if isinstance(data, SectorsSpec):
        return data
    if not isinstance(data, Mapping):
        raise InputError("a sectors spec is a JSON object", field="spec")
    try:
        return SectorsSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise _input_error(exc) from None
