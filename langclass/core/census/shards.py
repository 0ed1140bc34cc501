"""The shards of a census and the checkpoint of finished ones.

A shard (:class:`Shard`) is the set of breadth-first numbered transition tables with n states over
k letters that start with one prefix; the shards of :func:`shards` partition the tables of
:func:`~langclass.core.automata.enumerate.bfs_tables`, so finished shards count disjoint sets of
languages. :class:`ShardResult` is what one shard counted (and, optionally, its per-language
records); :class:`Checkpoint` keeps finished shards on disk so a stopped census resumes.
:mod:`langclass.core.census.run` runs the shards and re-exports these names.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from langclass.core.automata.enumerate import table_prefixes
from langclass.core.base.errors import LangclassError

__all__ = ["SHARD_TARGET", "Shard", "ShardResult", "shards", "Checkpoint", "CheckpointMismatch"]

SHARD_TARGET = 256
"""Shards per state number aimed at by :func:`shards` (the prefix grows until there are at least
this many, or the whole table is the prefix)."""

# ============================================================================ shards


@dataclass(frozen=True, order=True)
class Shard:
    """The tables with ``n`` states over ``k`` letters that start with ``prefix`` (see :func:`shards`)."""

    n: int
    k: int
    prefix: tuple[int, ...]

    @property
    def id(self) -> str:
        """``"n:prefix"`` with the prefix's entries as digits (n ≤ 10) — the checkpoint's key."""
        return f"{self.n}:{''.join(str(v) for v in self.prefix)}"


@dataclass(frozen=True)
class ShardResult:
    """What one shard counted.

    Attributes:
        shard_id: :attr:`Shard.id`.
        n: its state number.
        tables: tables enumerated.
        languages: languages (table, minimal accepting set) counted.
        profiles: ``{profile_text: languages}`` (:func:`profile_text`, class keys in the census's order).
        seconds: wall time of the shard in its worker.
        member_tables: ``uint8 [languages, n*k]``: the breadth-first numbered transition table of
            each language's minimal DFA (``t[q*k + a]`` = q·a), in enumeration order; with the mask
            the canonical form of the language (each language once, see the module docstring).
            ``None`` when the shard was run without per-language records.
        member_masks: ``uint16 [languages]``: its accepting set (bit q = state q accepts).
        member_profiles: ``uint16 [languages]``: index of its profile in ``profiles`` (dict order).
    """

    shard_id: str
    n: int
    tables: int
    languages: int
    profiles: dict[str, int]
    seconds: float = 0.0
    member_tables: np.ndarray | None = field(default=None, compare=False, repr=False)
    member_masks: np.ndarray | None = field(default=None, compare=False, repr=False)
    member_profiles: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def has_members(self) -> bool:
        """Whether the per-language records are present."""
        return self.member_tables is not None

    def to_dict(self) -> dict[str, Any]:
        """The counts as JSON (the checkpoint line); the per-language arrays are not in it
        (:meth:`members_arrays`)."""
        return {"shard": self.shard_id, "n": self.n, "tables": self.tables, "languages": self.languages,
                "profiles": self.profiles, "seconds": round(self.seconds, 3)}

    def members_arrays(self) -> dict[str, np.ndarray]:
        """``{"tables", "masks", "profiles"}``: the per-language arrays (for a ``.npz`` file).

        Raises:
            ValueError: the shard carries no per-language records."""
        if self.member_tables is None or self.member_masks is None or self.member_profiles is None:
            raise ValueError(f"shard {self.shard_id} carries no per-language records")
        return {"tables": self.member_tables, "masks": self.member_masks, "profiles": self.member_profiles}

    def with_members(self, arrays: Mapping[str, np.ndarray]) -> ShardResult:
        """This result with the per-language arrays of :meth:`members_arrays` attached (checked
        against the counts).

        Raises:
            ValueError: the arrays' lengths, widths or profile indices do not fit this shard."""
        t, m, p = (np.asarray(arrays[x]) for x in ("tables", "masks", "profiles"))
        if not (len(t) == len(m) == len(p) == self.languages) or (t.ndim != 2) or \
                (len(p) and int(p.max()) >= len(self.profiles)):
            raise ValueError(f"per-language arrays of shard {self.shard_id} do not fit its counts")
        if len(p) and np.bincount(p, minlength=len(self.profiles)).tolist() != list(self.profiles.values()):
            raise ValueError(f"per-language profiles of shard {self.shard_id} do not add up to its counts")
        return replace(self, member_tables=t.astype(np.uint8), member_masks=m.astype(np.uint16),
                       member_profiles=p.astype(np.uint16))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardResult:
        return cls(str(d["shard"]), int(d["n"]), int(d["tables"]), int(d["languages"]),
                   {str(p): int(c) for p, c in d["profiles"].items()}, float(d.get("seconds", 0.0)))


def shards(max_states: int, k: int, target: int = SHARD_TARGET) -> list[Shard]:
    """The shards of a census: per state number n ≤ ``max_states``, the valid table prefixes of the
    least length that gives at least ``target`` of them (whole tables at most). They partition the
    tables of :func:`bfs_tables`: every table has exactly one prefix of each length."""
    out: list[Shard] = []
    for n in range(1, max_states + 1):
        depth = 0
        pre = table_prefixes(n, k, 0)
        while len(pre) < target and depth < n * k - 4:
            depth += 1
            pre = table_prefixes(n, k, depth)
        out.extend(Shard(n, k, p) for p in pre)
    return out


# ============================================================================ checkpoint


class CheckpointMismatch(LangclassError):
    """A checkpoint file belongs to another census (other N, K, classes, shards or package version)."""

    code = "checkpoint-mismatch"
    title = "Checkpoint of another census"


class Checkpoint:
    """A JSON-lines file of finished shards: a header line (N, K, class keys, package version —
    the release, not the commit, so a checkout's commits do not invalidate it — and the shards), then one :meth:`ShardResult.to_dict` line per finished shard, flushed and fsynced as each
    arrives, so a run stopped by Ctrl-C or a kill loses at most the shards in flight. A last line cut
    short by a kill is dropped when the file is opened again.

    Per-language records (:meth:`ShardResult.members_arrays`) go to a sidecar folder
    ``<path>.members/`` as one ``<n>-<prefix>.npz`` per shard, written (to a temporary name, fsynced,
    renamed) before the shard's line is appended; a shard whose line is there but whose ``.npz`` is
    missing or does not fit its counts is dropped on reading when ``members`` is asked for, so it runs
    again and a resumed run still has every language.

    Args:
        path: the file (created with its parent folders when missing).
        header: the census's identity; an existing file with another header is refused.
        members: read (and require) the per-language records of each finished shard.

    Raises:
        CheckpointMismatch: the file's header differs (the message names the fields).
    """

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any], *, members: bool = False) -> None:
        self.path = Path(path)
        self.header = header
        self.members = members
        self.members_dir = self.path.with_name(self.path.name + ".members")
        self.done: dict[str, ShardResult] = {}
        if self.path.exists() and self.path.stat().st_size:
            self._read()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(json.dumps({"census_checkpoint": 1, **header}) + "\n")
                f.flush()
                os.fsync(f.fileno())

    def _read(self) -> None:
        raw = self.path.read_bytes()
        *complete, _tail = raw.split(b"\n")  # the piece after the last newline is empty or cut short
        good_end = 0
        for i, line in enumerate(complete):
            try:
                d = json.loads(line)
            except ValueError:
                break  # a damaged line: it and what follows are dropped
            if i == 0:
                head = {k: v for k, v in d.items() if k != "census_checkpoint"}
                diff = sorted(k for k in set(head) | set(self.header) if head.get(k) != self.header.get(k))
                if diff:
                    raise CheckpointMismatch(f"the checkpoint {self.path} is of another census (differs in "
                                             f"{', '.join(diff)}); pass another --checkpoint or --fresh",
                                             field="checkpoint")
            else:
                r = ShardResult.from_dict(d)
                if self.members:
                    r = self._attach(r)
                if r is not None:
                    self.done[r.shard_id] = r
            good_end += len(line) + 1
        if good_end == 0:
            raise CheckpointMismatch(f"the checkpoint {self.path} has no header line; pass another --checkpoint "
                                     "or --fresh", field="checkpoint")
        if good_end < len(raw):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)

    def _members_file(self, shard_id: str) -> Path:
        return self.members_dir / (shard_id.replace(":", "-") + ".npz")

    def _attach(self, r: ShardResult) -> ShardResult | None:
        f = self._members_file(r.shard_id)
        try:
            with np.load(f) as z:
                return r.with_members({key: z[key] for key in ("tables", "masks", "profiles")})
        except (OSError, KeyError, ValueError):
            return None  # missing or damaged: the shard runs again

    @staticmethod
    def remove(path: str | os.PathLike[str]) -> bool:
        """Delete a checkpoint file and its sidecar folder ``<path>.members/`` (once the census it
        holds is kept elsewhere, so the same command later counts afresh); whether anything was there."""
        p = Path(path)
        side = p.with_name(p.name + ".members")
        found = p.exists() or side.exists()
        p.unlink(missing_ok=True)
        shutil.rmtree(side, ignore_errors=True)
        return found

    def add(self, result: ShardResult) -> None:
        """Append one finished shard (durably; its per-language records first, when it has them)."""
        self.done[result.shard_id] = result
        if result.has_members:
            self.members_dir.mkdir(parents=True, exist_ok=True)
            target = self._members_file(result.shard_id)
            tmp = target.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                np.savez(f, **result.members_arrays())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(result.to_dict()) + "\n")
            f.flush()
            os.fsync(f.fileno())
