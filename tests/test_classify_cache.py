"""The per-app cache of POST /v1/classify (langclass.app.usecases.service.ClassificationCache)."""

from __future__ import annotations

from typing import Any, Callable

from langclass.app.usecases.service import ClassificationCache, parse_language
from langclass.core.base.limits import Limits


def test_cache_is_an_lru_keyed_by_request_and_limits():
    cache = ClassificationCache(size=2, max_states=3)
    lim = Limits()
    parsed = {rx: parse_language(regex=rx, alphabet=["a", "b"], limits=lim) for rx in ("a*", "(ab)*", "b*", "(aaaa)*")}
    k = {rx: cache.key(regex=rx, dfa=None, formula=None, alphabet=["a", "b"], limits=lim) for rx in parsed}
    assert cache.get(k["a*"]) is None and cache.misses == 1
    n = {rx: p.dfa.num_states for rx, p in parsed.items()}
    cache.put(k["a*"], {"x": 1}, num_states=n["a*"])
    cache.put(k["(ab)*"], {"x": 2}, num_states=n["(ab)*"])
    assert cache.get(k["a*"]) == {"x": 1}  # a* is now the most recent
    cache.put(k["b*"], {"x": 3}, num_states=n["b*"])  # evicts (ab)*
    assert cache.get(k["(ab)*"]) is None and cache.get(k["b*"]) == {"x": 3} and cache.get(k["a*"]) is not None
    cache.put(k["(aaaa)*"], {"x": 4}, num_states=n["(aaaa)*"])  # 5 states > max_states: not stored
    assert cache.get(k["(aaaa)*"]) is None
    # other limits, alphabet order or DFA JSON key order: other keys / the same key
    assert cache.key(regex="a*", dfa=None, formula=None, alphabet=["a", "b"], limits=Limits(max_states=7)) != k["a*"]
    assert cache.key(regex="a*", dfa=None, formula=None, alphabet=["b", "a"], limits=lim) != k["a*"]
    d1 = {"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [0], "transitions": {"0": {"a": 0}}}
    d2 = dict(reversed(list(d1.items())))
    assert cache.key(regex=None, dfa=d1, formula=None, alphabet=None, limits=lim) == \
        cache.key(regex=None, dfa=d2, formula=None, alphabet=None, limits=lim)
    assert cache.key(regex=None, dfa={"x": float("nan")}, formula=None, alphabet=None, limits=lim) is None
    assert ClassificationCache(size=0).get(k["a*"]) is None


def test_classify_answers_a_repeated_request_from_the_cache(make_client: Callable[..., Any], sqlite_url: str):
    """The second identical request is a hit and returns the same record; errors are never stored;
    other limits are another key."""
    api = make_client(sqlite_url)
    body = {"regex": "(ab)*(ba)*b", "alphabet": ["a", "b"]}
    first = api.post("/v1/classify", json=body)
    second = api.post("/v1/classify", json=body)
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    cache = api.app.state.classification_cache
    assert (cache.hits, cache.misses) == (1, 1)
    bad = {"regex": "(ab", "alphabet": ["a", "b"]}
    assert api.post("/v1/classify", json=bad).status_code == 422
    assert api.post("/v1/classify", json=bad).status_code == 422
    assert (cache.hits, cache.misses) == (1, 3) and len(cache._items) == 1
    other = make_client(sqlite_url)  # another app (another process in production) has its own cache
    strip = lambda r: {k: v for k, v in r.items() if k != "timings_ms"}  # noqa: E731
    assert strip(other.post("/v1/classify", json=body).json()) == strip(first.json())
    assert other.app.state.classification_cache.hits == 0 and cache.hits == 1
