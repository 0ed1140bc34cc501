"""Stored census runs: the only writer of ``census_runs`` / ``census_profiles`` and the reader of
their per-language data files.

A run is one row of ``census_runs`` (N, K, class keys, the counts of
:meth:`~langclass.core.census.run.Census.to_dict`, the data file's path, SHA-256 and size), its counts
per (membership profile, state number) in ``census_profiles``, and one compressed ``.npz`` file:

==================  ==========================  ==================================================
array               shape, dtype                 meaning
==================  ==========================  ==================================================
``class_keys``      ``[C]`` str                  the classes, in profile order
``profiles``        ``[P]`` str                  profile texts (``1`` member, ``0`` not, ``-`` undecided)
``n{n}_tables``     ``[m_n, n*K]`` uint8         breadth-first numbered transition table per language
``n{n}_masks``      ``[m_n]`` uint16             accepting set (bit q = state q accepts)
``n{n}_profiles``   ``[m_n]`` int32              index into ``profiles``
==================  ==========================  ==================================================

(table, mask) is the canonical form of a minimal complete DFA (its breadth-first numbering is
unique), so every language of the run appears exactly once. A member's ``index`` is its position
in the order n = 1, 2, …, then enumeration order; its fingerprint (the ``languages`` table's id) is
computed on demand (:func:`member_dfa`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from langclass.app.errors import CensusDataChanged as CensusDataError
from .orm import CensusProfileRow, CensusRunRow
from .pagination import decode_cursor, encode_cursor

__all__ = ["save_run", "list_runs", "get_run", "same_runs", "run_record", "MemberQuery", "parse_filter", "member_page",
           "iter_members", "member_dfa", "load_data", "UnknownClassKey", "CensusDataError"]

log = logging.getLogger("langclass.app")


class UnknownClassKey(ValueError):
    """A filter names a class that the run does not have (``key``, ``valid``)."""

    def __init__(self, key: str, valid: Sequence[str]) -> None:
        super().__init__(f"unknown class key {key!r}; the run's classes are: {', '.join(valid)}")
        self.key = key
        self.valid = list(valid)


def _alphabet(k: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(k)]


def _write_data(census: Any, path: Path) -> tuple[str, int]:
    from langclass.core.census.run import profile_text

    if census.members is None:
        raise ValueError("the census kept no per-language records (run it with keep_members=True)")
    arrays: dict[str, np.ndarray] = {"class_keys": np.asarray(list(census.class_keys)),
                                     "profiles": np.asarray([profile_text(p) for p in census.profiles])}
    for n, (t, m, p) in census.members.items():
        arrays[f"n{n}_tables"], arrays[f"n{n}_masks"], arrays[f"n{n}_profiles"] = t, m, p
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest(), path.stat().st_size


def save_run(session: Session, census: Any, data_dir: str | os.PathLike[str], *, code_version: str) -> CensusRunRow:
    """Store a finished census with its per-language records.

    Args:
        session: an open session (the caller commits).
        census: a :class:`~langclass.core.census.run.Census` run with ``keep_members=True``.
        data_dir: folder of the data files (``Settings.census_directory``); the file is ``<id>.npz``.
        code_version: stamped on the row.

    Returns:
        the new :class:`CensusRunRow` (flushed).

    Raises:
        ValueError: the census has no per-language records, or they do not add up to its counts.
    """
    from langclass.core.census.run import profile_text

    counted = {n: len(v[1]) for n, v in census.members.items()} if census.members is not None else None
    if counted is not None and counted != dict(census.by_states):
        raise ValueError(f"per-language records {counted} differ from the counts {census.by_states}")
    run_id = str(uuid.uuid4())
    path = Path(data_dir).resolve() / f"{run_id}.npz"
    sha, size = _write_data(census, path)
    d = census.to_dict()
    row = CensusRunRow(id=run_id, max_states=census.max_states, alphabet_size=census.alphabet_size,
                       class_keys=list(census.class_keys), counts=d, by_states=d["by_states"],
                       published=d["published"], matches_published=census.matches_published, total=census.total,
                       seconds=float(census.seconds), executor=census.executor, jobs=int(census.jobs),
                       code_version=code_version, data_path=str(path), data_sha256=sha, data_bytes=size)
    try:
        session.add(row)
        session.flush()  # the run row before the rows that refer to it
        texts = [profile_text(p) for p in census.profiles]
        for n, (_t, _m, pids) in census.members.items():
            for pid, c in enumerate(np.bincount(pids, minlength=len(texts)).tolist()):
                if c:
                    session.add(CensusProfileRow(run_id=run_id, profile=texts[pid], states=n, count=c))
        session.flush()
    except BaseException:
        path.unlink(missing_ok=True)  # no data file without its row
        raise
    return row


def run_record(row: CensusRunRow, *, full: bool = True) -> dict[str, Any]:
    """A run as JSON: identity and counts (``full``: also per class, differences, intersections)."""
    out: dict[str, Any] = {
        "id": row.id, "max_states": row.max_states, "alphabet_size": row.alphabet_size, "total": row.total,
        "by_states": row.by_states, "published": row.published, "matches_published": row.matches_published,
        "class_keys": list(row.class_keys), "seconds": row.seconds, "executor": row.executor, "jobs": row.jobs,
        "code_version": row.code_version, "created_at": row.created_at,
        "wall_seconds": (row.counts or {}).get("wall_seconds"),
        # the file's name only: the folder is the server's business (the log has the full path)
        "data": {"file": Path(row.data_path).name, "sha256": row.data_sha256, "bytes": row.data_bytes},
    }
    if full:
        c = row.counts
        out.update(classes=c["classes"], differences=c["differences"], intersections=c["intersections"],
                   undecided=c["undecided"], profiles=c["profiles"])
    return out


def list_runs(session: Session, *, limit: int, cursor: str | None = None) -> tuple[list[CensusRunRow], str | None]:
    """Runs, newest first, keyset-paginated like the other listings.

    Raises:
        ValueError: a malformed cursor (from :func:`~langclass.app.store.pagination.decode_cursor`)."""
    q = select(CensusRunRow).order_by(CensusRunRow.created_at.desc(), CensusRunRow.id.desc())
    if cursor is not None:  # an empty cursor is malformed (400), not the first page
        at, rid = decode_cursor(cursor)
        q = q.where((CensusRunRow.created_at < at) | ((CensusRunRow.created_at == at) & (CensusRunRow.id < rid)))
    rows = list(session.scalars(q.limit(limit + 1)))
    nxt = encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return rows[:limit], nxt


def get_run(session: Session, run_id: str) -> CensusRunRow | None:
    """The run, or None."""
    return session.get(CensusRunRow, run_id)


def same_runs(session: Session, max_states: int, alphabet_size: int, class_keys: Sequence[str]) -> list[str]:
    """Ids of the stored runs with this N, K and these classes (in this order), oldest first."""
    q = (select(CensusRunRow).where(CensusRunRow.max_states == max_states, CensusRunRow.alphabet_size == alphabet_size)
         .order_by(CensusRunRow.created_at, CensusRunRow.id))
    return [r.id for r in session.scalars(q) if list(r.class_keys) == list(class_keys)]


def profile_counts(session: Session, run_id: str) -> list[tuple[str, int, int]]:
    """``(profile, states, count)`` rows of a run (from ``census_profiles``, no data file read)."""
    return [(r.profile, r.states, r.count) for r in
            session.scalars(select(CensusProfileRow).where(CensusProfileRow.run_id == run_id))]


def profile_total(session: Session, run_id: str) -> int:
    """Languages of a run according to ``census_profiles`` (equals the run's total)."""
    return int(session.scalar(select(func.coalesce(func.sum(CensusProfileRow.count), 0))
                              .where(CensusProfileRow.run_id == run_id)))


# ============================================================================ the data file

@dataclass(frozen=True)
class _Cached:
    """A data file read and verified, with the :func:`_stamp` it had then."""

    sha256: str
    stamp: tuple[int, int, int, int]
    arrays: dict[str, np.ndarray]


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What changes when a file is rewritten, appended to, replaced or touched: size, mtime,
    ctime (not settable by ``utime``) and inode (a rename over it)."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


_CACHE: OrderedDict[str, _Cached] = OrderedDict()  # by run id (two runs may have equal files)
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 2


def _data_error(row: CensusRunRow, reason: str, why: str) -> CensusDataError:
    name = Path(row.data_path).name
    log.warning("census run %s: data file %s %s", row.id, row.data_path, why)
    with _CACHE_LOCK:
        _CACHE.pop(row.id, None)
    return CensusDataError(f"the data file {name} of census run {row.id} {why}", field="run", reason=reason, file=name)


def _read(row: CensusRunRow, step: Any) -> Any:
    """``step()`` (a stat or a read of the run's data file), an OS error as :class:`CensusDataError`
    (``missing``)."""
    try:
        return step()
    except FileNotFoundError:
        raise _data_error(row, "missing", "is missing") from None
    except OSError as err:
        raise _data_error(row, "missing", f"cannot be read ({err.strerror or type(err).__name__})") from None


def load_data(row: CensusRunRow) -> dict[str, np.ndarray]:
    """The arrays of a run's data file, checked against its SHA-256. The last two files read are
    cached; every call stats the file, so a cached file that was deleted since is refused, and one
    whose size or mtime changed is read and hashed again.

    Raises:
        CensusDataError: the file is missing (``reason`` ``missing``) or its SHA-256 differs
            (``altered``); the message names the file, not its folder (the log has the path)."""
    path = Path(row.data_path)
    st = _read(row, path.stat)
    with _CACHE_LOCK:
        hit = _CACHE.get(row.id)
        if hit is not None and (hit.sha256, hit.stamp) == (row.data_sha256, _stamp(st)):
            _CACHE.move_to_end(row.id)
            return hit.arrays
    if row.data_bytes is not None and st.st_size != row.data_bytes:
        raise _data_error(row, "altered", f"has {st.st_size} bytes, not the {row.data_bytes} stored with the run")
    raw = _read(row, path.read_bytes)
    if hashlib.sha256(raw).hexdigest() != row.data_sha256:
        raise _data_error(row, "altered", "differs from its stored SHA-256")
    import io

    with np.load(io.BytesIO(raw)) as z:
        arrays = {key: z[key] for key in z.files}
    with _CACHE_LOCK:
        _CACHE[row.id] = _Cached(row.data_sha256, _stamp(st), arrays)
        _CACHE.move_to_end(row.id)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return arrays


@dataclass(frozen=True)
class MemberQuery:
    """A filter of a run's languages: in every class of ``in_``, in none of ``not_in`` (decided
    non-members: an undecided answer matches neither), with a minimal DFA of ``states`` states (any
    when None)."""

    in_: tuple[str, ...] = ()
    not_in: tuple[str, ...] = ()
    states: int | None = None


def parse_filter(class_keys: Sequence[str], in_: Iterable[str] = (), not_in: Iterable[str] = (),
                 states: int | None = None) -> MemberQuery:
    """A :class:`MemberQuery` from comma-separated or repeated values.

    Raises:
        UnknownClassKey: a key is not one of ``class_keys``."""
    def split(values: Iterable[str]) -> tuple[str, ...]:
        out = tuple(p.strip() for v in values for p in v.split(",") if p.strip())
        for key in out:
            if key not in class_keys:
                raise UnknownClassKey(key, class_keys)
        return out

    return MemberQuery(split(in_), split(not_in), states)


def _matching_profiles(class_keys: Sequence[str], profiles: Sequence[str], q: MemberQuery) -> np.ndarray:
    idx = {k: i for i, k in enumerate(class_keys)}
    ok = [all(p[idx[a]] == "1" for a in q.in_) and all(p[idx[b]] == "0" for b in q.not_in) for p in profiles]
    return np.flatnonzero(np.asarray(ok, dtype=bool))


def _matches(row: CensusRunRow, data: dict[str, np.ndarray], q: MemberQuery) -> list[tuple[int, int, np.ndarray]]:
    """``(n, offset of n's first language in the run's order, positions within n)`` per state number."""
    good = _matching_profiles(list(row.class_keys), [str(p) for p in data["profiles"]], q)
    out = []
    offset = 0
    for n in range(1, row.max_states + 1):
        pids = data[f"n{n}_profiles"]
        if q.states is None or q.states == n:
            out.append((n, offset, np.flatnonzero(np.isin(pids, good))))
        offset += len(pids)
    return out


def member_dfa(row: CensusRunRow, index: int) -> tuple[Any, int, str]:
    """The ``index``-th language of a run: ``(DFA, states, profile text)``.

    Raises:
        IndexError: no such language. CensusDataError: see :func:`load_data`."""
    return _member(row, load_data(row), index)


def _member(row: CensusRunRow, data: dict[str, np.ndarray], index: int) -> tuple[Any, int, str]:
    from langclass.core.automata.automaton import DFA

    if index < 0:
        raise IndexError(index)
    k = row.alphabet_size
    for n in range(1, row.max_states + 1):
        m = len(data[f"n{n}_masks"])
        if index < m:
            table = data[f"n{n}_tables"][index]
            mask = int(data[f"n{n}_masks"][index])
            dfa = DFA.from_table(_alphabet(k), table.reshape(n, k).astype(int).tolist(), 0,
                                 [q for q in range(n) if mask >> q & 1])
            return dfa, n, str(data["profiles"][int(data[f"n{n}_profiles"][index])])
        index -= m
    raise IndexError("no such language in the run")


def _profile_dict(keys: Sequence[str], text: str) -> dict[str, bool | None]:
    return {k: (None if c == "-" else c == "1") for k, c in zip(keys, text)}


def member_page(row: CensusRunRow, q: MemberQuery, *, offset: int, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """``(total matching, members [offset, offset + limit))`` in the run's order, each ``{index,
    states, dfa (canonical DFA JSON), profile {class: bool | null}, fingerprint}``.

    Raises:
        CensusDataError: see :func:`load_data`."""
    data = load_data(row)
    parts = _matches(row, data, q)
    total = sum(len(pos) for _n, _o, pos in parts)
    out: list[dict[str, Any]] = []
    skip = offset
    for n, base, pos in parts:
        if skip >= len(pos):
            skip -= len(pos)
            continue
        for i in pos[skip:skip + limit - len(out)].tolist():
            dfa, states, text = _member(row, data, base + i)
            out.append({"index": base + i, "states": states, "dfa": dfa.to_canonical_dict(),
                        "profile": _profile_dict(row.class_keys, text), "fingerprint": dfa.fingerprint()})
        skip = 0
        if len(out) >= limit:
            break
    return total, out


def iter_members(row: CensusRunRow, in_: Iterable[str] = (), not_in: Iterable[str] = (),
                 states: int | None = None) -> Iterator[tuple[int, Any, dict[str, bool | None]]]:
    """Every language of a stored run that passes the filter, in the run's order, as ``(index,
    DFA, {class: bool | None})`` — for experiments that sample languages from a census.

    Example::

        with db.session_scope() as s:
            run = get_run(s, run_id)
        for index, dfa, profile in iter_members(run, in_=("ltl_p_y_mod",), not_in=("ltl_p_y",), states=3):
            ...

    Raises:
        UnknownClassKey: a filter names a class the run lacks. CensusDataError: see :func:`load_data`."""
    q = parse_filter(list(row.class_keys), in_, not_in, states)
    data = load_data(row)
    for _n, base, pos in _matches(row, data, q):
        for i in pos.tolist():
            dfa, _s, text = _member(row, data, base + i)
            yield base + i, dfa, _profile_dict(row.class_keys, text)
