"""Pydantic models of the REST API (requests and responses), with OpenAPI examples.

They map ``core`` records (plain dicts from ``Analysis.to_dict()``) to documented resources; they
never go into ``core``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from langclass.core.algebra.classes.aperiodic import GroupEvidence
from .evidence_models import EvidenceModel, FastEvidenceModel, evidence_model

__all__ = [
    "ClassifyInput",
    "LanguageInput",
    "LanguagePatch",
    "ClassResult",
    "Beyond",
    "Classification",
    "ServedClassification",
    "Language",
    "StoredLanguage",
    "LanguageSummary",
    "LanguagePage",
    "MonoidElement",
    "MonoidPage",
    "LanguageEncodings",
    "Health",
    "Readiness",
    "NO_NUL_PATTERN",
    "CURSOR_SCHEMA",
    "DfaDocument",
]



def _unicode_text(value: str) -> str:
    """Refuse a lone UTF-16 surrogate (valid as a JSON escape ``"\\ud800"``, but not Unicode text:
    it could not be stored, hashed or printed as UTF-8)."""
    for i, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(f"the string holds a lone UTF-16 surrogate U+{ord(ch):04X} at index {i}, which is not Unicode text")
        if ch == "\x00":
            raise ValueError(f"the string holds a NUL character (U+0000) at index {i}, which text columns cannot store")
    return value


NO_NUL_PATTERN = "^[^\\u0000]*$"
"""The JSON-schema ``pattern`` of every text field and parameter: no NUL character (the server
refuses one with 422; lone surrogates are refused too, but a JSON Schema pattern cannot name them
without also refusing astral characters in UTF-16 engines)."""

_LABEL_CHARS = "[^\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]"
LABEL_PATTERN = f"^{_LABEL_CHARS}*$"
"""The JSON-schema ``pattern`` of a label (a tag, a DFA's state name): no control character (Cc) and
no bidirectional formatting character (:data:`langclass.core.base.inputs.BIDI_CONTROLS`)."""

NAME_PATTERN = f"^(\\s*|{_LABEL_CHARS}*)$"
"""A language name: a label, or only white space (stored as no name)."""

CURSOR_SCHEMA = {"pattern": "^[A-Za-z0-9_-]+$"}
"""The form of a listing cursor (URL-safe base64 without padding, :mod:`langclass.app.store.pagination`);
its content (a ``[time, id]`` the service issued) is opaque: a well-formed cursor that does not
decode to one is 400 ``invalid-cursor``."""

_NO_NUL = Field(json_schema_extra={"pattern": NO_NUL_PATTERN})

Text = Annotated[str, AfterValidator(_unicode_text), _NO_NUL]
"""A string that is storable Unicode text (no lone surrogates, no NUL)."""

Symbol = Annotated[str, AfterValidator(_unicode_text), Field(json_schema_extra={"pattern": NO_NUL_PATTERN, "minLength": 1})]
"""An alphabet symbol: non-empty text (the schema says so; the alphabet rule
:func:`langclass.core.base.inputs.check_alphabet` enforces it with its own messages)."""

Alphabet = Annotated[list[Symbol], Field(json_schema_extra={"minItems": 1, "uniqueItems": True})]
"""An ordered alphabet: at least one symbol, no symbol twice (enforced by ``check_alphabet``, which
also refuses two spellings of one symbol after NFC normalization — a rule no schema states)."""

def _label(value: str) -> str:
    """Refuse a control character (NUL, line breaks, escape, ...) or a bidirectional override in a
    label (:func:`langclass.core.base.inputs.unsafe_character`): it would garble the tables and pages
    that show it, or display as other text."""
    from langclass.core.base.inputs import unsafe_character

    why = unsafe_character(value)
    if why is not None:
        raise ValueError(f"a label cannot hold control or bidirectional formatting characters: {why}")
    return value


Tag = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(_unicode_text), AfterValidator(_label),
                Field(json_schema_extra={"pattern": LABEL_PATTERN})]
"""A tag: 1 to 64 characters of storable text, no control or bidirectional formatting character."""

MAX_NAME_LENGTH = 200
"""Longest language name, in characters."""

def _blank_is_none(name: str) -> str | None:
    """A name of only white space (or empty) is no name: stored as null."""
    return name if name.strip() else None


Name = Annotated[str, StringConstraints(max_length=MAX_NAME_LENGTH), AfterValidator(_unicode_text),
                 Field(json_schema_extra={"pattern": NAME_PATTERN}),
                 AfterValidator(_blank_is_none), AfterValidator(lambda name: None if name is None else _label(name))]
"""A language name: up to 200 characters of storable text (the constraint sits on the string, so its
error says "characters"); an empty or white-space-only name is normalised to null (no name); any
other name with a control or bidirectional formatting character is refused (:func:`_label`)."""

MAX_TAGS = 32
"""Most tags on one language."""


def _distinct_tags(tags: list[str]) -> list[str]:
    """Refuse a tag given twice (a set of labels, kept in the order given)."""
    seen: set[str] = set()
    for i, tag in enumerate(tags):
        if tag in seen:
            raise ValueError(f"tag {tag!r} is given twice (index {i}); tags are a set of labels")
        seen.add(tag)
    return tags


Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS, json_schema_extra={"uniqueItems": True}), AfterValidator(_distinct_tags)]
"""Up to 32 distinct tags."""

_AB_STAR_DFA = {
    "alphabet": ["a", "b"],
    "states": [0, 1, 2],
    "initial": 0,
    "accepting": [0],
    "transitions": {"0": {"a": 1, "b": 2}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 2}},
}

_INPUT_EXAMPLES = [
    {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "(ab)*", "tags": ["periodic"]},
    {"dfa": _AB_STAR_DFA, "name": "(ab)* as a DFA"},
    {"regex": "(a|b)*a", "alphabet": ["a", "b"]},
]


StateName = Annotated[str, Field(min_length=1, pattern=LABEL_PATTERN)] | int
"""A state of a DFA document: a non-empty string or an integer (``1`` and ``"1"`` name one state)."""


class DfaDocument(BaseModel):
    """The DFA JSON schema (:func:`langclass.core.ingest.parse.read_dfa_json`): states by name, one target
    per state and symbol, missing transitions going to an added sink. What a schema cannot say —
    ``initial``, ``accepting`` and every target are listed in ``states``, every transition symbol is
    in ``alphabet``, two names of one state (``1`` and ``"1"``) — the parser refuses with 422
    ``invalid-dfa`` / ``unknown-symbol`` naming the item."""

    model_config = ConfigDict(extra="forbid", title="DFA")

    alphabet: Alphabet
    states: list[StateName] = Field(min_length=1, json_schema_extra={"uniqueItems": True})
    initial: StateName
    accepting: list[StateName] = Field(json_schema_extra={"uniqueItems": True})
    transitions: dict[Annotated[str, Field(min_length=1, pattern=LABEL_PATTERN)],
                      dict[Annotated[str, Field(min_length=1, pattern=NO_NUL_PATTERN)], StateName]]


DfaJson = Annotated[dict[str, Any], WithJsonSchema(DfaDocument.model_json_schema())]
"""A DFA document as the server reads it (a mapping checked by the DFA parser, whose messages name
the item), published with :class:`DfaDocument`'s schema."""

# Exactly one input, and the alphabet with a regex or formula: the parser's rule
# (``service.parse_language``), stated for the published schema. Each branch pins the other inputs to
# null-or-absent, so at most one branch holds.
_ONE_INPUT = [
    {"title": "regex", "required": ["regex", "alphabet"],
     "properties": {"regex": {"type": "string"}, "alphabet": {"type": "array"}, "dfa": {"type": "null"}, "formula": {"type": "null"}}},
    {"title": "dfa", "required": ["dfa"],
     "properties": {"dfa": {"type": "object"}, "regex": {"type": "null"}, "formula": {"type": "null"}}},
    {"title": "formula", "required": ["formula", "alphabet"],
     "properties": {"formula": {"type": "string"}, "alphabet": {"type": "array"}, "regex": {"type": "null"}, "dfa": {"type": "null"}}},
]


class ClassifyInput(BaseModel):
    """A language: exactly one of ``regex`` (with ``alphabet``), ``dfa`` or ``formula`` (with ``alphabet``).

    The regex syntax is documented in docs/regex.md; the DFA JSON schema is
    ``{"alphabet": [...], "states": [...], "initial": q, "accepting": [...], "transitions": {q: {symbol: q'}}}``
    (partial transitions go to a sink).
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": _INPUT_EXAMPLES[:1] + _INPUT_EXAMPLES[1:2],
                                                                 "oneOf": _ONE_INPUT})

    regex: Text | None = Field(None, description="regular expression over `alphabet` (docs/regex.md)")
    dfa: DfaJson | None = Field(None, description="a DFA in the DFA JSON schema")
    formula: Text | None = Field(None, description="an LTL formula over `alphabet` (docs/formulas.md)")
    alphabet: Alphabet | None = Field(None, description="ordered alphabet: a list of distinct non-empty symbols (required with regex/formula; "
                                                        "with a dfa, the DFA's own alphabet if given)")
    name: Name | None = Field(
        None, description="a label for browsing (≤ 200 characters); POST /v1/classify checks and ignores it, so one body serves both endpoints"
    )
    tags: Tags = Field(
        default_factory=list, description="distinct labels (≤ 32, each 1 to 64 characters); POST /v1/classify checks and ignores them"
    )


class LanguageInput(ClassifyInput):
    """A language to classify and store, with optional labels (not part of its identity)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": _INPUT_EXAMPLES, "oneOf": _ONE_INPUT})


class LanguagePatch(BaseModel):
    """New labels for a stored language (``PATCH /v1/languages/{id}``): the fields given replace the
    stored ones; a field left out stays as it is; ``"name": null`` removes the name, and so does a
    name that is empty or only white space (normalised to null)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"name": "(ab)* — even length", "tags": ["periodic", "group-free"]}]},
    )

    name: Name | None = Field(None, description="the new name (≤ 200 characters); null, \"\" or only white space removes it")
    # null is not a value (the route answers 422 "give [] to remove every tag"); left out = unchanged
    tags: Tags | SkipJsonSchema[None] = Field(None, description="the new tags, replacing the stored ones (distinct, ≤ 32, each 1 to 64 characters; [] removes every tag)")


class ClassResult(BaseModel):
    """Membership of the language in one class, with the reason, certificate and source."""

    model_config = ConfigDict(extra="allow")

    key: str = Field(description="stable class key, e.g. ltl_p_mod")
    name: str = Field(description="display name, e.g. LTL[P,MOD]")
    logic: str | None = None
    algebra: str | None = None
    member: bool | None = Field(description="true/false; null when undecided (a limit was hit)")
    reason: str | None = Field(None, description="one-line reason")
    certificate: EvidenceModel | None = Field(
        None, description="a member's evidence as data (states, words, the monoid as words) that "
        "langclass.core.algebra.classes.replay checks on the DFA alone; a non-member's repeats the witness")
    witness: EvidenceModel | None = Field(None, description="a non-member's counterexample as data (words, states)")
    source: str | None = Field(None, description="paper title and theorem")
    period: int | None = Field(None, description="for ltl_p_mod: the period k of the periodic encoding; for ltl_p_y_mod: "
                               "the least m (periodic RoPE of period m plus recency heads)")


_CLASSIFICATION_EXAMPLE = {
    "id": "3f1c…(sha-256 hex)",
    "alphabet": ["a", "b"],
    "source": {"kind": "regex", "regex": "(ab)*", "alphabet": ["a", "b"]},
    "dfa": _AB_STAR_DFA,
    "num_states": 3,
    "monoid": {"size": 6, "idempotents": 4},
    "classes": {
        "ltl_p": {"key": "ltl_p", "name": "LTL[P]", "member": False, "reason": "…", "certificate": {}},
        "ltl_p_mod": {"key": "ltl_p_mod", "name": "LTL[P,MOD]", "member": True, "period": 2, "reason": "…", "certificate": {}},
    },
    "encodings": {"soft": {}, "hard": {}},
    "code_version": "0.1.0+g0123abcd",
}


GroupModel = evidence_model(GroupEvidence)


class Beyond(BaseModel):
    """For a language outside AC⁰ (not in FO[<,MOD]): the group in its stable semigroup and the
    circuit-complexity consequence. Languages in AC⁰ have ``beyond: null`` even when their monoid
    holds groups — those groups lie outside the stable semigroup; every language's groups are listed
    in ``monoid.nontrivial_groups``."""

    model_config = ConfigDict(extra="forbid")

    group: GroupModel | None = Field(description="the largest group of the stable semigroup η(Σ^s), generators as words of length s; null when the monoid was over its cap")  # type: ignore[valid-type]
    stable_semigroup_groups: list[GroupModel] | None = None  # type: ignore[valid-type]
    all_groups_solvable: bool | None = None
    complexity: str | None = Field(None, description="ACC⁰ (all groups solvable) or NC¹-complete")
    reason: str


class Classification(BaseModel):
    """The classification of one language (``POST /v1/classify``; stored records add labels)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [_CLASSIFICATION_EXAMPLE]})

    id: str = Field(description="fingerprint: SHA-256 hex of the canonical minimal complete DFA")
    alphabet: list[str]
    source: dict[str, Any] = Field(description="the input as given")
    dfa: dict[str, Any] = Field(description="the canonical minimal complete DFA (DFA JSON, integer states)")
    num_states: int
    monoid: dict[str, Any] = Field(description="syntactic monoid summary (size, idempotents, stability index, …)")
    classes: dict[str, ClassResult]
    beyond: Beyond | None = Field(None, description="only for languages outside AC⁰; see Beyond")
    encodings: dict[str, Any] = Field(description="which positional encoding suffices, per attention family")
    code_version: str
    state_names: dict[str, list[str]] | None = Field(
        None, description="DFA input only: canonical state (as in `dfa` and every certificate and witness) → the "
                          "input's names of the states merged into it")


class _ServedClassResult(ClassResult):
    """:class:`ClassResult` with :data:`~langclass.app.usecases.evidence_models.FastEvidenceModel` (same fields, order,
    validation and bytes; not published)."""

    certificate: FastEvidenceModel | None = None  # type: ignore[valid-type]
    witness: FastEvidenceModel | None = None  # type: ignore[valid-type]


class ServedClassification(Classification):
    """:class:`Classification` as a classification worker validates and serializes it
    (``service.classification_json``): the same fields in the same order, the same validation and
    the same JSON bytes, with each evidence record tried only against the shapes its keys allow
    (:data:`~langclass.app.usecases.evidence_models.FastEvidenceModel`). Not published: the OpenAPI document
    shows :class:`Classification`."""

    classes: dict[str, _ServedClassResult]


class Language(Classification):
    """A stored language."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: datetime


class StoredLanguage(Language):
    """The answer of ``POST /v1/languages``: the stored language and whether this request stored it."""

    model_config = ConfigDict(extra="allow")

    already_stored: bool = Field(
        description="POST /v1/languages only: false when this request stored the language (201); true when it was "
        "already stored (200) and the stored record is returned unchanged — its name and tags are NOT replaced by the "
        "request's (PATCH /v1/languages/{id} changes them)",
    )
    labels_not_applied: dict[str, Any] | None = Field(
        None, description="with already_stored: the request's name/tags that differ from the stored ones and were not applied"
    )


class LanguageSummary(BaseModel):
    """One row of a listing: identity, labels, input, size and class memberships."""

    id: str
    name: str | None
    tags: list[str]
    alphabet: list[str]
    source: dict[str, Any] = Field(
        description="the input as given: {kind: regex, regex, alphabet} or {kind: formula, formula, alphabet, parsed}; "
        "a DFA input is {kind: dfa} (the DFA is in the full record)"
    )
    num_states: int
    monoid_size: int | None = Field(description="null when the monoid was over its size limit")
    classes: dict[str, bool | None] = Field(description="class key → member")
    created_at: datetime


class LanguagePage(BaseModel):
    """A page of languages in a stable order (creation time, then id)."""

    items: list[LanguageSummary]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last page")
    limit: int


class MonoidElement(BaseModel):
    """One element of the syntactic monoid, named by its shortlex-least word."""

    model_config = ConfigDict(extra="allow")

    id: int
    word: list[str] = Field(description="shortlex-least word mapping to the element ([] = identity)")
    idempotent: bool
    R: int | None = Field(None, description="Green's R-class id")
    L: int | None = Field(None, description="Green's L-class id")
    H: int | None = Field(None, description="Green's H-class id")
    J: int | None = Field(None, description="Green's J-class id (= D-class in a finite monoid)")


class MonoidPage(BaseModel):
    """A page of the syntactic monoid (``core.monoid.TransitionMonoid.describe``): size, idempotents,
    stability index, Green's classes and D-class structure, and ``limit`` elements from ``offset``."""

    model_config = ConfigDict(extra="allow")

    id: str
    size: int
    idempotents: int | None = None
    stability_index: int | None = None
    offset: int
    limit: int
    elements: list[MonoidElement]


class LanguageEncodings(BaseModel):
    """Which encoding suffices for this language, per attention family, with the theorems."""

    id: str
    classes: dict[str, bool | None]
    encodings: dict[str, Any]


class Health(BaseModel):
    status: str = Field(examples=["ok"])


class Readiness(BaseModel):
    status: str = Field(examples=["ready"])
    database: str
    schema_revision: list[str]
    schema_head: list[str]
