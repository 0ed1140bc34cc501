"""Dump, or compare against a dump, the classification records of a fixed set of languages.

A guard for speed work on the classification path: the records (the JSON bytes ``POST /v1/classify``
sends, :func:`langclass.app.usecases.service.classify_json`, with ``timings_ms`` — wall-clock milliseconds,
the only field that legitimately changes from run to run — removed, and the ``limits_hit`` set)
must stay byte-identical when an implementation gets faster. The fixed set:

* the 400 distinct-language 2–6 state DFAs ``bench/api.py`` sends (seed 0);
* the 12 regexes of ``bench/api.py``'s repeated line;
* the 42 ground-truth languages of ``tests/ground_truth.json``;
* 300 random 3–7 state DFAs over {a, b, c} (seed 1; monoids of a few to thousands of elements, so
  both sides of any small-input threshold are covered) and 60 random 7–9 state DFAs over {a, b}
  (seed 2).

    .venv/bin/python bench/records.py dump /tmp/records-main.jsonl
    .venv/bin/python bench/records.py compare /tmp/records-main.jsonl     # exit 1 on any difference

One JSON line per language: ``{"key": ..., "limits_hit": [...], "body": <record without timings_ms>}``.
Runs in-process (no server), about 10 s on one core.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _random_dfas(count: int, seed: int, sigma: list[str], low: int, high: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(low, high)
        out.append({"alphabet": sigma, "states": [str(q) for q in range(n)], "initial": "0",
                    "accepting": [str(q) for q in range(n) if rng.random() < 0.5],
                    "transitions": {str(q): {x: str(rng.randrange(n)) for x in sigma} for q in range(n)}})
    return out


def inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(key, classify_json keyword arguments)`` of the fixed set, in a fixed order."""
    import api as bench_api  # bench/api.py

    for i, body in enumerate(bench_api._distinct_dfas(400)):
        yield f"distinct-{i}", {"dfa": body["dfa"]}
    for regex, alphabet in bench_api.LANGUAGES:
        yield f"repeat-{regex}", {"regex": regex, "alphabet": alphabet}
    truth = json.loads((ROOT / "tests" / "ground_truth.json").read_text())
    for lang in truth["languages"]:
        dfa = dict(lang["dfa"])
        dfa.setdefault("alphabet", lang["alphabet"])
        yield f"truth-{lang['id']}", {"dfa": dfa}
    for i, dfa in enumerate(_random_dfas(300, 1, ["a", "b", "c"], 3, 7)):
        yield f"abc-{i}", {"dfa": dfa}
    for i, dfa in enumerate(_random_dfas(60, 2, ["a", "b"], 7, 9)):
        yield f"ab9-{i}", {"dfa": dfa}


def records() -> Iterator[dict[str, Any]]:
    """One comparable record per input (errors recorded as their class and detail)."""
    from langclass.app.usecases.service import classify_json
    from langclass.core.base.errors import LangclassError
    from langclass.core.base.limits import Limits

    limits = Limits(time_limit_s=None)  # no wall clock: the same answer on a loaded machine
    for key, kwargs in inputs():
        try:
            out = classify_json(**kwargs, limits=limits, version="records")
        except LangclassError as err:
            yield {"key": key, "error": [type(err).__name__, err.detail]}
            continue
        body = json.loads(out.body)
        body.pop("timings_ms", None)
        yield {"key": key, "limits_hit": sorted(out.limits_hit), "body": body}


def _line(rec: dict[str, Any]) -> str:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["dump", "compare"])
    ap.add_argument("path", type=Path)
    args = ap.parse_args()
    t0 = time.process_time()
    if args.mode == "dump":
        n = 0
        with args.path.open("w", encoding="utf-8") as fh:
            for rec in records():
                fh.write(_line(rec) + "\n")
                n += 1
        print(f"{n} records written to {args.path} ({time.process_time() - t0:.1f} s CPU)")
        return
    want = [json.loads(line) for line in args.path.read_text(encoding="utf-8").splitlines()]
    got = list(records())
    cpu = time.process_time() - t0
    bad = 0
    if [r["key"] for r in want] != [r["key"] for r in got]:
        print("the set of inputs differs from the dump's")
        bad += 1
    for w, g in zip(want, got):
        if _line(w) != _line(g):
            bad += 1
            if bad <= 5:
                print(f"DIFFERS: {g['key']}")
                print("  dump: " + _line(w)[:1500])
                print("  now:  " + _line(g)[:1500])
    print(f"{len(got)} records compared, {bad} differ ({cpu:.1f} s CPU)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
