"""Constructions from the automaton alone: per ground-truth language, the class, the encoding, the
model size, build time, verify time and the longest verified length; then the recency (ALiBi,
slope ≥ f_large) construction of Y side by side with conventional RoPE past its N_max.

Usage:
    .venv/bin/python bench/construct.py                          # all ground-truth languages, short checks
    .venv/bin/python bench/construct.py --long 10000 --long-words 4   # the side-by-side table to 10^4
    .venv/bin/python bench/construct.py --only sigma_star_a --json out.json
    .venv/bin/python bench/construct.py --defaults --isolate --nonstrict --no-side-by-side   # the acceptance run
    .venv/bin/python bench/construct.py --hard-classes --attention hard --all-words 6 --random-words 2 \
        --max-length 100 --no-side-by-side          # every star-free / quasi-aperiodic language, hard attention

Every row runs :func:`langclass.models.construct.verify.run_construction` on the language's DFA (a formula is
synthesized: LTL[P] monomials, Prop. 3.2, LTL[P,MOD] state formulas, or the LTL[P,Y] window
product); "verified ≤" is the longest word checked (all words up to ``--all-words``, random words
up to ``--max-length``, capped at N_max for conventional RoPE). Languages without a construction
print the 422 detail (which class is missing). Star-free languages outside LTL[P,MOD] and LTL[P,Y]
build with hard attention (NoPE) from local-divisor formulas, quasi-aperiodic ones (FO[<,MOD]) with
hard attention and the position marks i mod m of the ``mod_onehot`` encoding (m = the least working
modulus, printed as ``mod_onehot/m``); large monoids make deep models, so lower --all-words for them.
``--no-side-by-side`` skips the recency/RoPE table. ``--kv-long L --kv-words K`` also runs the recency
construction of (a|b)*a and (a|b|c)*ab(a|b|c)* on K words of length L through the KV cache
(``FormulaTransformer.forward_incremental``, 2048 query positions at a time, no L × L matrix) and
prints, per word, the decision against the DFA and whether every simulated coordinate is exactly 0/1.
Single thread (torch.set_num_threads(1)).

``--defaults --isolate --nonstrict`` is issue 23's acceptance run: every ground-truth language with
``run_construction``'s own verification defaults, each row in its own process with its peak RSS, the
stutter-invariant star-free ones also with the non-strict mask (Thm 18), then a summary: models built
and exact, median and largest parameters, largest peak RSS, the slowest row and every row that failed.

``--scan [N]`` is issue 38's acceptance run: the first N (default 240) FO[<,MOD] languages with at most
5 states over 2–3 letters of the seeded generator of ``tests/_construct_scan.py`` (``--scan-seed``),
each built by ``run_construction`` with every default (route auto, the parameter budget, the time limit
``LANGCLASS_TIME_LIMIT_S`` or 60 s, verification sized to it) in its own process; per row the route
built, the parameters, whether it is exact, what was verified, seconds and peak RSS; then built /
exact / failed, the largest parameters, the slowest row, the largest peak RSS and every failure.
Run it niced: ``nice .venv/bin/python bench/construct.py --scan``.

``--refusals BUDGET`` times, per route language, how long ``validate_spec`` (what the API runs before
queueing a construct job) takes to refuse a plan over BUDGET parameters, and counts the models assembled
meanwhile (none).

``--routes`` prints instead the route table of issue 23: Tomita 1, 2, 3, 4, 7 and Dyck-1 of depth
2–5, each built with the defaults (all words to 12, 32 random words to 2000) by the old route — the
soft formula when the language has one, else the local-divisor B-RASP program — and by the new one,
the Krohn–Rhodes cascade program (``route="cascade"``), side by side: route, cascade height, layers,
heads, parameters, peak RSS (each row runs in its own process), build and verify seconds, the longest
verified length. An old-route plan over ``--budget`` parameters (default 10^8) is not built: the row
prints its planned size instead; a run past the time limit (``LANGCLASS_TIME_LIMIT_S`` or 60 s) prints
the limit and the step it stopped in. The last column says which route ``route="auto"`` takes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langclass.app.errors import http_status  # noqa: E402
from langclass.core.base.errors import LangclassError  # noqa: E402
from langclass.models.construct.verify import run_construction  # noqa: E402

GROUND_TRUTH = Path(__file__).resolve().parents[1] / "tests" / "ground_truth.json"


def _row(entry: dict, args, y_mode: str, mask: str = "strict") -> dict:
    spec = {"dfa": entry["dfa"], "alphabet": entry["alphabet"], "y_mode": y_mode, "beyond_n_max": False, "mask": mask,
            "all_words_up_to": args.all_words if len(entry["alphabet"]) <= 2 else max(3, args.all_words - 4),
            "random_words": args.random_words, "random_max_length": args.max_length, "attention": args.attention}
    if args.defaults:  # run_construction's own verification defaults (all words to 12 or fewer, 32 random to 2000)
        for key in ("all_words_up_to", "random_words", "random_max_length"):
            del spec[key]
    t = time.perf_counter()
    try:
        r = run_construction(spec)
    except LangclassError as err:
        missing = err.extra.get("missing_classes")
        return {"id": entry["id"], "y_mode": y_mode, "mask": mask, "error": f"{http_status(err)} {err.code}: "
                + (f"missing classes {', '.join(missing)} — " if missing else "") + err.detail}
    m = r["model"]
    enc = r["encoding"] + (f"/{r['modulus']}" if r.get("modulus", 1) > 1 else "")
    return {"id": entry["id"], "y_mode": y_mode, "mask": r.get("mask", mask), "class": r["fragment"], "encoding": enc,
            "attention": r["attention"], "layers": m["layers"], "heads": m["heads"], "exact": r["exact"],
            "parameters": m["parameters"], "route": (r.get("route") or {}).get("route"),
            "build_s": r["build_seconds"], "verify_s": r["verify_seconds"], "total_s": round(time.perf_counter() - t, 2),
            "verified_up_to": max(r["all_words_up_to"], r["random_words_up_to"]), "n_max": r["n_max"]}


def _isolated_row(entry: dict, args, y_mode: str, mask: str) -> dict:
    """:func:`_row` in its own process (``--isolate``), with that process's peak RSS in MB."""
    import subprocess

    cmd = [sys.executable, __file__, "--row", entry["id"], y_mode, mask, "--all-words", str(args.all_words),
           "--random-words", str(args.random_words), "--max-length", str(args.max_length), "--attention", args.attention]
    if args.defaults:
        cmd.append("--defaults")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.row_timeout)
    except subprocess.TimeoutExpired:
        return {"id": entry["id"], "y_mode": y_mode, "mask": mask, "error": f"killed after {args.row_timeout} s"}
    lines = out.stdout.strip().splitlines()
    if not lines:
        return {"id": entry["id"], "y_mode": y_mode, "mask": mask,
                "error": f"exit {out.returncode}: {out.stderr.strip()[-160:]}"}
    return json.loads(lines[-1])


def _one_row(entry_id: str, y_mode: str, mask: str, args) -> dict:
    """``--row``: one row in this process, with its peak RSS."""
    import resource

    entry = next(e for e in json.loads(GROUND_TRUTH.read_text())["languages"] if e["id"] == entry_id)
    r = _row(entry, args, y_mode, mask)
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return r


def _summary(rows: list[dict]) -> list[str]:
    """The issue-23 acceptance lines: every buildable row exact, ≤ 10⁶ parameters, ≤ 2 GB peak RSS,
    within the time limit; the median parameter count."""
    built = [r for r in rows if "parameters" in r]
    refused = [r for r in rows if "error" in r and "missing classes" not in r["error"]]
    params = sorted(r["parameters"] for r in built)
    lines = [f"{len(built)} models built ({sum(r['mask'] == 'nonstrict' for r in built)} with the non-strict mask), "
             f"{sum(bool(r['exact']) for r in built)} exact; "
             f"{sum('error' in r for r in rows) - len(refused)} rows without a construction theorem (422 naming the missing classes)"]
    if params:
        lines.append(f"parameters: median {params[len(params) // 2]:,}, largest {params[-1]:,}; "
                     f"over 10^6: {sum(p > 10 ** 6 for p in params)}")
    rss = [r["peak_rss_mb"] for r in built if "peak_rss_mb" in r]
    if rss:
        lines.append(f"peak RSS per row: largest {max(rss)} MB; over 2048 MB: {sum(m > 2048 for m in rss)}")
    if built:
        slow = max(built, key=lambda r: r["total_s"])
        lines.append(f"slowest row: {slow['id']} ({slow['y_mode']}, {slow['mask']}) {slow['total_s']} s")
    lines.append(f"rows that failed to build or verify: {len(refused)}"
                 + "".join(f"\n  {r['id']} ({r['y_mode']}, {r['mask']}): {r['error'][:150]}" for r in refused))
    return lines


def _scan_row(dfa_json: str) -> dict:
    """``--scan-row``: one scan language built with every default, in this process, with its peak RSS."""
    import resource
    import os

    from langclass.core.base.limits import Limits

    limit = float(os.environ.get("LANGCLASS_TIME_LIMIT_S", "60"))
    t = time.perf_counter()
    dfa = json.loads(dfa_json)
    row = {"k": len(dfa["alphabet"]), "states": len(dfa["transitions"])}
    try:
        r = run_construction({"dfa": dfa}, limits=Limits(time_limit_s=limit))
    except LangclassError as err:
        row["error"] = f"{http_status(err)} {err.code}: {err.detail}"
    else:
        v = r.get("verification") or {}
        cands = (r.get("route") or {}).get("candidates") or {}
        row.update({"route": r["route"]["route"], "attention": r["attention"], "parameters": r["model"]["parameters"],
                    "exact": r["exact"], "all_words_up_to": r["all_words_up_to"], "minimum": v.get("minimum_all_words_up_to"),
                    "random_words": r["random_words_checked"], "random_up_to": r["random_words_up_to"],
                    "failed_candidates": sorted(n for n, c in cands.items() if "error" in c)})
    row["seconds"] = round(time.perf_counter() - t, 2)
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return row


def _scan(args) -> list[dict]:
    """``--scan``: every scan language in its own process (:func:`_scan_row`), printed as it finishes."""
    import subprocess

    sys.path.insert(0, str(GROUND_TRUTH.parent))
    from _construct_scan import scan_languages

    langs = scan_languages(args.scan, args.scan_seed)[args.scan_from:]
    print(f"{'language':<9} {'|Σ|':>3} {'|Q|':>3} {'route':<15} {'params':>10} {'exact':<5} {'words ≤ (min)':>13} "
          f"{'random':>11} {'s':>6} {'RSS MB':>7}", flush=True)
    rows = []
    for e in langs:
        cmd = [sys.executable, __file__, "--scan-row", json.dumps(e["dfa"])]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.row_timeout)
            lines = out.stdout.strip().splitlines()
            r = json.loads(lines[-1]) if lines else {"error": f"exit {out.returncode}: {out.stderr.strip()[-160:]}"}
        except subprocess.TimeoutExpired:
            r = {"error": f"killed after {args.row_timeout} s"}
        r = {"id": e["id"], "dfa": e["dfa"], **r}
        rows.append(r)
        head = f"{e['id']:<9} {r.get('k', '-'):>3} {r.get('states', '-'):>3}"
        if "error" in r:
            print(f"{head} FAILED {r['error'][:200]}", flush=True)
            continue
        print(f"{head} {r['route']:<15} {r['parameters']:>10,} {r['exact']!s:<5} "
              f"{str(r['all_words_up_to']) + ' (' + str(r['minimum']) + ')':>13} "
              f"{str(r['random_words']) + ' ≤ ' + str(r['random_up_to']):>11} {r['seconds']:>6} {r['peak_rss_mb']:>7}",
              flush=True)
    built = [r for r in rows if "error" not in r]
    failed = [r for r in rows if "error" in r or not r["exact"]]
    print(f"\n{len(rows)} languages: {len(built)} built, {sum(bool(r['exact']) for r in built)} exact, "
          f"{len(failed)} failed")
    if built:
        big = max(built, key=lambda r: r["parameters"])
        slow = max(built, key=lambda r: r["seconds"])
        print(f"largest parameters: {big['parameters']:,} ({big['id']}, {big['route']}); slowest row: {slow['id']} "
              f"{slow['seconds']} s; peak RSS: {max(r['peak_rss_mb'] for r in built)} MB; routes: "
              + ", ".join(f"{k} {sum(r['route'] == k for r in built)}" for k in sorted({r["route"] for r in built})))
    for r in failed:
        print(f"  {r['id']} {json.dumps(r['dfa'])}: {r.get('error', 'not exact')[:300]}")
    return rows


def _side_by_side(regex: str, alphabet: list[str], args) -> list[dict]:
    rows = []
    for y_mode in ("recency", "rope"):
        t = time.perf_counter()
        r = run_construction({"regex": regex, "alphabet": alphabet, "y_mode": y_mode, "all_words_up_to": 8,
                              "random_words": args.long_words, "random_max_length": args.long, "seed": 1})
        b = r["beyond_n_max"] or {}
        rows.append({"language": regex, "y_mode": y_mode, "encoding": r["encoding"], "n_max": r["n_max"],
                     "exact_in_range": r["exact"], "verified_up_to": max(r["all_words_up_to"], r["random_words_up_to"]),
                     "beyond_checked": b.get("words_checked", 0), "beyond_longest": b.get("longest"),
                     "beyond_wrong": b.get("wrong", 0), "beyond_inexact": b.get("inexact", 0),
                     "seconds": round(time.perf_counter() - t, 1)})
    return rows


def _kv_long(regex: str, alphabet: list[str], length: int, words: int) -> list[dict]:
    """The recency construction of ``regex`` on ``words`` words of ``length`` letters via the KV cache;
    the words alternate accepted / rejected (uniform among them, exact path counting)."""
    import numpy as np

    from langclass.core.ingest.regex import regex_to_dfa
    from langclass.core.synthesis.synthesis import synthesize
    from langclass.models.construct import ConstructionOptions, build_formula_transformer
    from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL
    from langclass.models.construct.verify import _random_set

    dfa = regex_to_dfa(regex, alphabet)
    model = build_formula_transformer(synthesize(dfa).formula, alphabet, ConstructionOptions(y_mode="recency"))
    rng = np.random.default_rng(1)
    rows = []
    sample = [dfa.alphabet.index(a) for a in alphabet]  # DFA letter index -> model letter index
    for w_dfa in _random_set(dfa, len(alphabet), [length] * words, rng):  # uniform, accepted / rejected in turn
        w = [sample[int(i)] for i in w_dfa]
        want = bool(dfa.accepts([alphabet[i] for i in w]))
        ids = torch.tensor([[BOS] + [NUM_SPECIAL + int(i) for i in w] + [EOS]])
        t0 = time.perf_counter()
        with torch.no_grad():
            h = model.forward_incremental(ids, chunk=2048)
            produced = float(model.readout(h[:, -1])[0, 0]) > 0
        vals = torch.stack(list(model.literal_values(h).values()))
        rows.append({"language": regex, "length": length, "encoding": model.encoding_name, "dfa": want,
                     "produced": produced, "coordinates_exact": bool(((vals == 0) | (vals == 1)).all()),
                     "seconds": round(time.perf_counter() - t0, 1)})
    return rows


ROUTE_LANGUAGES = [
    ("tomita1", "1*", "01"), ("tomita2", "(10)*", "01"), ("tomita3", "0*((11)+0+|1(11)*(00)+)*1*", "01"),
    ("tomita4", "(1|01|001)*(0|00)?", "01"), ("tomita7", "0*1*0*1*", "01"),
    ("dyck1_depth2", "(a(ab)*b)*", "ab"), ("dyck1_depth3", "(a(a(ab)*b)*b)*", "ab"),
    ("dyck1_depth4", "(a(a(a(ab)*b)*b)*b)*", "ab"), ("dyck1_depth5", "(a(a(a(a(ab)*b)*b)*b)*b)*", "ab"),
]


def _route_row(name: str, which: str, budget: int) -> dict:
    """One row of the route table, in this process (``--route-row``): ``which`` is ``old`` or ``new``."""
    import os
    import resource

    from langclass.core.base.limits import Limits
    from langclass.core.ingest.regex import regex_to_dfa
    from langclass.core.synthesis.fo_mod import synthesize_fo_mod
    from langclass.core.synthesis.synthesis import synthesize
    from langclass.models.construct.route import choose_hard_route

    regex, alphabet = next((r, list(a)) for n, r, a in ROUTE_LANGUAGES if n == name)
    limits = Limits(time_limit_s=float(os.environ.get("LANGCLASS_TIME_LIMIT_S", 60)))
    spec: dict = {"regex": regex, "alphabet": alphabet}
    row: dict = {"language": name, "which": which}
    t0 = time.perf_counter()
    try:
        if which == "new":
            spec["route"] = "cascade"
        else:
            dfa = regex_to_dfa(regex, alphabet)
            try:
                synthesize(dfa, limits)  # a soft formula exists: the old default was the soft construction
            except LangclassError:
                choice = choose_hard_route(dfa, synthesize_fo_mod(dfa, limits).formula, dfa.alphabet,
                                           route="local-divisors", limits=limits)
                planned = choice.to_dict()
                row.update({k: planned[k] for k in ("route", "layers", "heads", "d_model", "parameters")})
                if planned["parameters"] > budget:
                    row["error"] = (f"not built: planned {planned['parameters']:,} parameters > budget {budget:,} "
                                    f"(plan {time.perf_counter() - t0:.0f} s)")
                    return row
                spec["route"] = "local-divisors"
        r = run_construction(spec, limits=limits)
        m = r["model"]
        row.update({"route": r["route"]["route"] if r["attention"] == "hard" else "soft formula",
                    "cascade_height": r["route"].get("cascade_height"), "layers": m["layers"], "heads": m["heads"],
                    "d_model": m["d_model"], "parameters": m["parameters"], "build_s": r["build_seconds"],
                    "verify_s": r["verify_seconds"], "total_s": r["seconds"], "exact": r["exact"],
                    "verified_up_to": max(r["all_words_up_to"], r["random_words_up_to"])})
    except LangclassError as err:
        row["error"] = f"{http_status(err)} {err.code}: {err.detail}"[:160]
    finally:
        row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def _refusals(budget: int) -> list[dict]:
    """``--refusals``: per route language, the seconds :func:`validate_spec` (the check the API runs
    before it queues a construct job, and the front of ``run_construction``) takes to refuse a plan
    over ``budget`` parameters, with the planned size it names; no model is assembled."""
    from langclass.core.base.errors import LimitExceeded
    from langclass.models.construct import FormulaTransformer
    from langclass.models.construct.hard import BraspTransformer
    from langclass.models.construct.verify import validate_spec

    assembled: list[str] = []
    for cls in (FormulaTransformer, BraspTransformer):  # count every weight allocation
        def counted(self, *a, _orig=cls._assemble, **k):
            assembled.append(type(self).__name__)
            return _orig(self, *a, **k)
        cls._assemble = counted

    def assembled_count() -> int:
        return len(assembled)

    rows = []
    for name, regex, alphabet in ROUTE_LANGUAGES:
        before = assembled_count()
        t = time.perf_counter()
        try:
            validate_spec({"regex": regex, "alphabet": list(alphabet), "max_parameters": budget})
            row = {"language": name, "refused": False}
        except LimitExceeded as err:
            row = {"language": name, "refused": err.limit, "planned": err.extra.get("planned")}
        row.update(seconds=round(time.perf_counter() - t, 3), assembled=assembled_count() - before)
        rows.append(row)
        print(f"{name:<14} {str(row['refused']):<15} {row['seconds']:>7.3f} s  planned {row.get('planned')}  "
              f"models assembled: {row['assembled']}", flush=True)
    return rows


def _routes(args) -> list[dict]:
    import subprocess

    print(f"{'language':<14} {'':<4} {'route':<15} {'height':>6} {'layers':>6} {'heads':>5} {'parameters':>14} "
          f"{'RSS MB':>7} {'build s':>8} {'verify s':>8} {'verified ≤':>10} exact")
    rows = []
    for name, _, _ in ROUTE_LANGUAGES:
        for which in ("old", "new"):
            cmd = [sys.executable, __file__, "--route-row", name, which, "--budget", str(args.budget)]
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.row_timeout)
                r = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {
                    "language": name, "which": which, "error": f"exit {out.returncode}: {out.stderr.strip()[-160:]}"}
            except subprocess.TimeoutExpired:
                r = {"language": name, "which": which, "error": f"killed after {args.row_timeout} s"}
            rows.append(r)
            size = (f"{str(r.get('cascade_height') or '-'):>6} {str(r.get('layers', '-')):>6} {str(r.get('heads', '-')):>5} "
                    f"{r['parameters']:>14,}" if "parameters" in r else f"{'':>6} {'':>6} {'':>5} {'':>14}")
            if "exact" in r:
                print(f"{name:<14} {which:<4} {r['route']:<15} {size} {r['peak_rss_mb']:>7} {r['build_s']:>8.2f} "
                      f"{r['verify_s']:>8.1f} {r['verified_up_to']:>10} {r['exact']}", flush=True)
            else:
                print(f"{name:<14} {which:<4} {r.get('route', ''):<15} {size} {r.get('peak_rss_mb', ''):>7}  "
                      f"{r['error']}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all-words", type=int, default=8, help="all words up to this length (|Σ| ≤ 2; 4 less otherwise)")
    ap.add_argument("--random-words", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=1000, help="longest random word per language")
    ap.add_argument("--long", type=int, default=2000, help="longest word of the side-by-side table")
    ap.add_argument("--long-words", type=int, default=4, help="random words per row of the side-by-side table")
    ap.add_argument("--only", nargs="*", help="ground-truth ids")
    ap.add_argument("--attention", choices=["auto", "soft", "hard"], default="auto",
                    help="attention of every row (hard: star-free and quasi-aperiodic languages by B-RASP)")
    ap.add_argument("--hard-classes", action="store_true",
                    help="only the ground-truth languages that are star-free or quasi-aperiodic (FO[<,MOD])")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-side-by-side", action="store_true", help="skip the recency / RoPE table")
    ap.add_argument("--kv-long", type=int, default=0, help="length of the KV-cache recency check (0 = off)")
    ap.add_argument("--kv-words", type=int, default=2, help="words per language of the KV-cache recency check")
    ap.add_argument("--defaults", action="store_true",
                    help="verify with run_construction's defaults (ignores --all-words, --random-words, --max-length)")
    ap.add_argument("--routes", action="store_true", help="the old-route / cascade-route table of issue 23 (only)")
    ap.add_argument("--budget", type=int, default=10 ** 8, help="largest old-route plan built by --routes (parameters)")
    ap.add_argument("--row-timeout", type=int, default=400, help="seconds before a --routes row's process is killed")
    ap.add_argument("--route-row", nargs=2, metavar=("LANGUAGE", "WHICH"), help=argparse.SUPPRESS)
    ap.add_argument("--refusals", type=int, default=0, metavar="BUDGET",
                    help="time the refusal of every route language's plan over BUDGET parameters (only)")
    ap.add_argument("--row", nargs=3, metavar=("LANGUAGE", "Y_MODE", "MASK"), help=argparse.SUPPRESS)
    ap.add_argument("--isolate", action="store_true",
                    help="run every row in its own process and print its peak RSS (the acceptance run: with --defaults)")
    ap.add_argument("--nonstrict", action="store_true",
                    help="also build every stutter-invariant star-free language with the non-strict mask (Thm 18)")
    ap.add_argument("--scan", type=int, nargs="?", const=240, default=0, metavar="N",
                    help="issue 38's scan: N FO[<,MOD] languages (≤ 5 states, 2-3 letters) with every default (only)")
    ap.add_argument("--scan-seed", type=int, default=38, help="seed of the scan's generator")
    ap.add_argument("--scan-from", type=int, default=0, metavar="I", help="start the scan at its I-th language")
    ap.add_argument("--scan-row", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.scan_row:
        print(json.dumps(_scan_row(args.scan_row)))
        return
    if args.scan:
        rows = _scan(args)
        if args.json:
            args.json.write_text(json.dumps({"scan": rows}, indent=2))
        return
    if args.row:
        print(json.dumps(_one_row(*args.row, args)))
        return
    if args.route_row:
        print(json.dumps(_route_row(args.route_row[0], args.route_row[1], args.budget)))
        return
    if args.refusals:
        print(f"validate_spec with max_parameters = {args.refusals} (route auto, defaults):")
        rows = _refusals(args.refusals)
        if args.json:
            args.json.write_text(json.dumps({"refusals": rows}, indent=2))
        return
    if args.routes:
        rows = _routes(args)
        if args.json:
            args.json.write_text(json.dumps({"routes": rows}, indent=2))
        return
    if args.kv_long:
        print(f"recency construction through the KV cache, words of length {args.kv_long}:")
        for regex, sigma in (("(a|b)*a", ["a", "b"]), ("(a|b|c)*ab(a|b|c)*", ["a", "b", "c"])):
            for r in _kv_long(regex, sigma, args.kv_long, args.kv_words):
                print(f"{r['language']:<22} {r['encoding']:<6} L={r['length']} dfa={r['dfa']!s:<5} produced={r['produced']!s:<5} "
                      f"coordinates exactly 0/1: {r['coordinates_exact']}  {r['seconds']} s", flush=True)
    langs = json.loads(GROUND_TRUTH.read_text())["languages"]
    if args.only:
        langs = [e for e in langs if e["id"] in set(args.only)]
    if args.hard_classes:
        langs = [e for e in langs if e["expected"]["star_free"] or e["expected"]["quasi_aperiodic"]]
    rows = []
    print(f"{'language':<30} {'Y':<7} {'mask':<9} {'class':<10} {'encoding':<16} {'attn':<5} {'route':<8} {'L/H':>6} "
          f"{'params':>9} {'RSS MB':>7} {'build s':>8} {'verify s':>9} {'verified ≤':>10} {'N_max':>6} exact")
    for e in langs:
        modes = [(y, "strict") for y in (["rope", "recency"] if (e["expected"]["lr_or_ltl_p_y"] and not e["expected"]["qr"])
                                          and args.attention != "hard" else ["rope"])]  # Y-heads' mode: soft only
        if args.nonstrict and e["expected"]["stutter_invariant"] and e["expected"]["star_free"]:
            modes.append(("rope", "nonstrict"))
        for y_mode, mask in modes:
            r = _isolated_row(e, args, y_mode, mask) if args.isolate else _row(e, args, y_mode, mask)
            rows.append(r)
            if "error" in r:
                print(f"{e['id']:<30} {y_mode:<7} {mask:<9} {r['error'][:150]}", flush=True)
                continue
            print(f"{e['id']:<30} {y_mode:<7} {mask:<9} {r['class']:<10} {r['encoding']:<16} {r['attention']:<5} "
                  f"{r['route'] or '-':<8} {str(r['layers']) + '/' + str(r['heads']):>6} {r['parameters']:>9,} "
                  f"{str(r.get('peak_rss_mb', '-')):>7} {r['build_s']:>8.3f} {r['verify_s']:>9.2f} "
                  f"{r['verified_up_to']:>10} {str(r['n_max'] or '-'):>6} {r['exact']}", flush=True)
    if rows:
        import resource

        print("\n".join(_summary(rows)))
        if not args.isolate:
            print(f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    if args.no_side_by_side:
        if args.json:
            args.json.write_text(json.dumps({"languages": rows}, indent=2))
        return
    print()
    print(f"Y by recency heads vs conventional RoPE (float32, g = 1, C_Y for L = 300), random words to {args.long}:")
    side = _side_by_side("(a|b)*a", ["a", "b"], args) + _side_by_side("(a|b|c)*ab(a|b|c)*", ["a", "b", "c"], args)
    print(f"{'language':<22} {'Y heads':<8} {'encoding':<9} {'N_max':>6} {'exact ≤':>8} {'beyond N_max: words / longest / wrong / inexact':>50} {'s':>6}")
    for r in side:
        beyond = (f"{r['beyond_checked']} / {r['beyond_longest']} / {r['beyond_wrong']} / {r['beyond_inexact']}"
                  if r["beyond_checked"] else "— (no N_max)")
        print(f"{r['language']:<22} {r['y_mode']:<8} {r['encoding']:<9} {str(r['n_max'] or '∞'):>6} "
              f"{r['verified_up_to']:>8} {beyond:>50} {r['seconds']:>6}")
    if args.json:
        args.json.write_text(json.dumps({"languages": rows, "side_by_side": side}, indent=2))


if __name__ == "__main__":
    main()
