"""Response models of the census endpoints (``GET /v1/census``, ``GET /v1/census/{run}``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["CensusDataFile", "CensusRunSummary", "CensusRunPage", "CensusMember", "CensusMembers", "CensusRun"]


class CensusDataFile(BaseModel):
    """A run's per-language records (compressed ``.npz``; docs/census.md): the file's name under the
    server's LANGCLASS_CENSUS_DIR (the folder is not exposed), its SHA-256 and size."""

    file: str = Field(description="the file's name (<run id>.npz), without the server's folder")
    sha256: str = Field(description="SHA-256 hex of the file")
    bytes: int


class CensusRunSummary(BaseModel):
    """A stored census run: every language whose minimal complete DFA has at most N states over K letters."""

    id: str
    max_states: int = Field(description="N")
    alphabet_size: int = Field(description="K (letters a, b, …)")
    total: int = Field(description="languages in the run")
    by_states: dict[str, int] = Field(description="state number → languages with a minimal DFA of exactly that many states")
    published: dict[str, int] = Field(description="state number → the published count (docs/census.md names the sources)")
    matches_published: bool | None
    class_keys: list[str] = Field(description="the classes, in profile order")
    seconds: float = Field(description="compute seconds: the sum over every shard's run time (shards resumed from a "
                                        "checkpoint count with the seconds they took then)")
    wall_seconds: float | None = Field(None, description="wall-clock seconds of the invocation that finished and stored "
                                                         "the run (null for runs stored before it was recorded)")
    executor: str
    jobs: int
    code_version: str
    created_at: datetime
    data: CensusDataFile
    links: dict[str, str]


class CensusRunPage(BaseModel):
    """A page of runs, newest first."""

    items: list[CensusRunSummary]
    next_cursor: str | None
    limit: int


class CensusMember(BaseModel):
    """One language of a run."""

    index: int = Field(description="position in the run (state number 1, 2, …, then enumeration order)")
    states: int = Field(description="states of its minimal complete DFA")
    dfa: dict[str, Any] = Field(description="the canonical minimal DFA (DFA JSON: alphabet, initial 0, accepting, transitions)")
    profile: dict[str, bool | None] = Field(description="class → member (null: a limit stopped the decision)")
    fingerprint: str = Field(description="SHA-256 of the canonical DFA: the id it has (or gets) in /v1/languages")
    links: dict[str, str] = Field(description="language_url: the language page (stores the language on first visit); "
                                              "language: the stored resource, once stored")


class CensusMembers(BaseModel):
    """A page of the run's languages that pass the filter."""

    filter: dict[str, Any] = Field(description="in, not_in (class keys), states")
    total: int = Field(description="languages that pass the filter")
    offset: int
    limit: int
    items: list[CensusMember]
    next_offset: int | None


class CensusRun(CensusRunSummary):
    """A run with its counts and, when a filter is given, a page of member languages."""

    classes: dict[str, int] = Field(description="class → members")
    differences: dict[str, int] = Field(description="'sup-sub' → languages in sup and not in sub, for every inclusion of the lattice")
    intersections: dict[str, int] = Field(description="'a&b' → languages in both")
    undecided: int = Field(description="languages with an undecided class")
    profiles: dict[str, int] = Field(description="membership profile (one character per class key: 1, 0, -) → languages")
    members: CensusMembers | None = Field(None, description="present when in, not_in or states is given")
