"""Stage 9 of core — census: enumeration into shards, census runs and the samples the sweep trains on; imports base, automata and algebra.

The census of small regular languages: enumeration into shards (:mod:`.shards`), the run that
classifies every language of at most N states over K letters once per syntactic morphism and
counts them (:mod:`.run`), and the stratified samples of its cells that the sweep trains on
(:mod:`.sample`). Imports the automata and algebra stages; nothing in core imports it.

``from langclass.core.census import census`` (documented in docs/python.md) keeps working: the
names of :mod:`.run` are re-exported here, loaded on first use (PEP 562).
"""

from langclass.core.base.lazy import lazy_exports

_EXPORTS = {
    "census": "run", "Census": "run", "classify": "run", "run_shard": "run", "local_runner": "run",
    "expected_languages": "run", "format_census": "run", "profile_text": "run",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
