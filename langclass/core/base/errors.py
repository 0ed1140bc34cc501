"""One error family for the whole project.

Every failure that user input can cause is a subclass of :class:`LangclassError`.
Each subclass carries a stable ``code`` (the problem type), a ``title`` and, where one
exists, the offending ``field`` (a JSON-pointer-like path such as ``"dfa.transitions.q1.c"``).
Core knows nothing of HTTP: the service maps the error *class* (never the message text) to a
status code and an RFC 9457 problem+json response in :mod:`langclass.app.errors`.

Nothing here imports numpy, torch or the web stack.
"""

from __future__ import annotations

from typing import Any


class LangclassError(Exception):
    """Base of every error this project raises on purpose.

    Attributes:
        code: stable machine-readable problem type, e.g. ``"regex-syntax"``.
        detail: human-readable explanation naming the offending item.
        field: where in the input the problem is (``None`` when not applicable).
        extra: further JSON-serialisable facts (limit name and value, position, ...).
    """

    code: str = "langclass-error"
    title: str = "Langclass error"

    def __init__(self, detail: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        """The problem as a JSON-ready dict (without the URI prefix of ``type``)."""
        out: dict[str, Any] = {"code": self.code, "title": self.title, "detail": self.detail}
        if self.field is not None:
            out["field"] = self.field
        out.update(self.extra)
        return out


# --- input errors ---------------------------------------------------------------


class InputError(LangclassError):
    """The input does not describe a language we accept."""

    code = "invalid-input"
    title = "Invalid input"


class AlphabetError(InputError):
    """Empty alphabet, empty or duplicate symbol, or symbols that collide once NFC-normalized."""

    code = "invalid-alphabet"
    title = "Invalid alphabet"


class UnknownSymbolError(InputError):
    """A symbol that is not in the declared alphabet (never a silent alphabet extension)."""

    code = "unknown-symbol"
    title = "Symbol not in the alphabet"


class ModelFileError(InputError):
    """A portable model file (config.json / model.safetensors, docs/models.md) is malformed, changed after
    saving or over a limit; ``extra['error']`` names the runner's error class (ConfigError, WeightsError,
    DigestError, LimitError)."""

    code = "invalid-model-file"
    title = "Invalid model file"


class RegexSyntaxError(InputError):
    """The regex does not follow the documented syntax; ``extra['position']`` is the 0-based offset."""

    code = "regex-syntax"
    title = "Regex syntax error"


class DfaFormatError(InputError):
    """The DFA JSON is malformed: unknown state, nondeterminism, duplicate keys, bad names."""

    code = "invalid-dfa"
    title = "Invalid DFA"


class FormulaSyntaxError(InputError):
    """An LTL formula does not follow the documented syntax."""

    code = "formula-syntax"
    title = "Formula syntax error"


class ProgramSyntaxError(InputError):
    """A B-RASP program does not follow the documented syntax or is ill-formed."""

    code = "program-syntax"
    title = "B-RASP program error"


class UnsupportedError(InputError):
    """The request is well-formed but asks for something no known construction provides."""

    code = "unsupported"
    title = "Not supported"


# --- limit errors (naming the limit) ----------------------------------------


class TLensUnsupported(UnsupportedError):
    """A model uses something TransformerLens' ``HookedTransformer`` cannot represent exactly
    (docs/models.md, "TransformerLens export"); ``extra["reasons"]`` lists every reason."""

    code = "tlens-unsupported"
    title = "Not representable in TransformerLens"


class LimitExceeded(LangclassError):
    """An expensive step hit a configured limit.

    ``extra`` always carries ``limit`` (the limit's name, e.g. ``"max_states"``) and
    ``value`` (the configured bound) so a client can tell which knob to turn.
    """

    code = "limit-exceeded"
    title = "Limit exceeded"

    def __init__(self, limit: str, value: Any, detail: str | None = None, *, field: str | None = None) -> None:
        super().__init__(detail or f"limit {limit}={value} exceeded", field=field, limit=limit, value=value)
        self.limit = limit
        self.value = value


class TimeLimitExceeded(LimitExceeded):
    """Wall-clock limit of a computation (``limit="time_limit_s"``); ``extra['step']`` names the
    step that overran (``"subset construction"``, ``"waiting for a worker"``, ...) once known."""

    code = "time-limit-exceeded"
    title = "Time limit exceeded"

    def __init__(self, limit: str, value: Any, detail: str | None = None, *, field: str | None = None,
                 step: str | None = None) -> None:
        super().__init__(limit, value, detail, field=field)
        if step:
            self.extra["step"] = step
