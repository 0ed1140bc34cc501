"""langclass beside MeSCaL on the same random regexes: time per language and agreement, 15 classes.

MeSCaL (T. Place, https://github.com/thomas-place/mescal, GPL-3) is the membership tool of the
concatenation-hierarchy literature. This script does not build it: build it by its own README and
pass the binary with ``--mescal``. Nothing of its code is used here; it is run as a program.

Usage::

    python bench/mescal.py --mescal /path/to/mescal/src/mescal              # 300 regexes, batches of 50
    python bench/mescal.py --mescal /path/to/mescal/src/mescal --count 600 --batch 100 --seed 3

What it does, in interleaved rounds (one MeSCaL batch, then the same batch here, so both see the
same load):

* draws ``--count`` random regular expressions over {a, b} (union, concatenation, star; seeded) of
  pairwise *different languages* (distinct canonical minimal DFAs, at most ``--max-states``);
* MeSCaL: one process per batch reads ``L = "…"`` and ``membership(C, L)`` for the 15 classes both
  tools decide, output to a pipe; its CPU time (user + system, ``RUSAGE_CHILDREN``) minus that of a
  process that starts and exits at once (one such process before each batch; the median over the
  batches is subtracted) is divided by the batch size. That counts MeSCaL's regex parse, automata
  and syntactic monoid, as ours counts ours;
* langclass: ``langclass.classify(regex, alphabet="ab")`` in this process, CPU time per language —
  every class (20, certificates and encodings included), not only the 15;
* prints both per-language means, the ratio, and the agreement per class (every verdict compared;
  a disagreement is printed with its regex).

Classes compared (ours = MeSCaL's): LTL[P] = PL(ST), LTL[P,Y] = PL(DD), LTL[P,MOD] = PL(MOD),
LTL[P,Y,MOD] = PL(MOD⁺), LTL[F] = FL(ST), LTL[F,X] = FL(DD), LTL[F,MOD] = FL(MOD),
LTL[F,X,MOD] = FL(MOD⁺), FO²[<] = UL, FO²[<,+1] = TL(DD), FO²[<,MOD] = TL(MOD),
FO²[<,+1,MOD] = TL(MOD⁺), star-free = SF, FO[<,MOD] = SF(MOD), piecewise testable = PT.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import langclass  # noqa: E402
from langclass.core.base.limits import Limits  # noqa: E402
from langclass.core.ingest.parse import parse_regex  # noqa: E402

CLASSES = {  # our key → (MeSCaL's command spelling, the name its answers print)
    "ltl_p": ("PL(ST)", "PL(ST)"),
    "ltl_p_y": ("PL(DD)", "PL(DD)"),
    "ltl_p_mod": ("PL(MOD)", "PL(MOD)"),
    "ltl_p_y_mod": ("PL(MODP)", "PL(MOD⁺)"),
    "ltl_f": ("FL(ST)", "FL(ST)"),
    "ltl_f_x": ("FL(DD)", "FL(DD)"),
    "ltl_f_mod": ("FL(MOD)", "FL(MOD)"),
    "ltl_f_x_mod": ("FL(MODP)", "FL(MOD⁺)"),
    "fo2": ("UL", "UL"),
    "fo2_succ": ("TL(DD)", "TL(DD)"),
    "fo2_mod": ("TL(MOD)", "TL(MOD)"),
    "fo2_succ_mod": ("TL(MODP)", "TL(MOD⁺)"),
    "star_free": ("SF", "SF"),
    "fo_mod": ("SF(MOD)", "SF(MOD)"),
    "piecewise_testable": ("PT", "PT"),
}

_VERDICT = re.compile(r"The (?:input )?recognized language (belongs|does NOT belong) to (\S+?)\.")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def random_regex(rng: random.Random, depth: int) -> tuple[str, str]:
    """(ours, MeSCaL's) spelling of one random regex over {a, b}: union, concatenation, star."""
    if depth == 0 or rng.random() < 0.25:
        c = rng.choice("ab")
        return c, c
    op = rng.random()
    if op < 0.3:
        (a1, b1), (a2, b2) = random_regex(rng, depth - 1), random_regex(rng, depth - 1)
        return f"({a1}|{a2})", f"({b1}+{b2})"
    if op < 0.75:
        (a1, b1), (a2, b2) = random_regex(rng, depth - 1), random_regex(rng, depth - 1)
        return f"{a1}{a2}", f"{b1}{b2}"
    a1, b1 = random_regex(rng, depth - 1)
    return f"({a1})*", f"({b1})*"


def distinct_regexes(count: int, seed: int, max_states: int) -> list[tuple[str, str]]:
    """``count`` random regexes of pairwise different languages (canonical minimal DFAs), each with
    at most ``max_states`` states and at least 2 (the trivial languages say little)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    limits = Limits()
    while len(out) < count:
        ours, theirs = random_regex(rng, rng.randint(3, 6))
        dfa = parse_regex(ours, ["a", "b"], limits).canonical()
        fingerprint = dfa.fingerprint()
        if fingerprint in seen or not 2 <= dfa.num_states <= max_states:
            continue
        seen.add(fingerprint)
        out.append((ours, theirs))
    return out


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_mescal(binary: str, script: str, cwd: str) -> tuple[float, str]:
    """CPU seconds of one MeSCaL process fed ``script`` on standard input, and its output."""
    before = _children_cpu()
    proc = subprocess.run([binary], input=script.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          cwd=cwd, check=False, timeout=3600)
    return _children_cpu() - before, _ANSI.sub("", proc.stdout.decode("utf-8", "replace"))


def mescal_script(batch: list[tuple[str, str]]) -> str:
    lines = []
    for i, (_, theirs) in enumerate(batch):
        lines.append(f'L{i} = "{theirs}"')
        lines.extend(f"membership({cmd}, L{i})" for cmd, _ in CLASSES.values())
    return "\n".join(lines + ["exit", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mescal", required=True, help="path of a MeSCaL binary built by its own README")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--batch", type=int, default=50, help="languages per MeSCaL process")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-states", type=int, default=12)
    args = ap.parse_args()
    binary = os.path.abspath(args.mescal)
    regexes = distinct_regexes(args.count, args.seed, args.max_states)
    for r, _ in regexes[:3]:  # imports and lazy caches before anything is timed
        langclass.classify(r, alphabet="ab")
    work = tempfile.mkdtemp(prefix="mescal-bench-")  # MeSCaL writes its history file in its directory
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    startup: list[float] = []
    agree = {k: [0, 0] for k in CLASSES}
    disagreements: list[str] = []
    by_name = {name: key for key, (_, name) in CLASSES.items()}
    for b0 in range(0, len(regexes), args.batch):
        batch = regexes[b0:b0 + args.batch]
        start_cpu, _ = run_mescal(binary, "exit\n", work)
        startup.append(start_cpu)
        cpu, out = run_mescal(binary, mescal_script(batch), work)
        verdicts = _VERDICT.findall(out)
        if len(verdicts) != len(batch) * len(CLASSES):
            raise SystemExit(f"MeSCaL answered {len(verdicts)} memberships for {len(batch) * len(CLASSES)} asked "
                             f"(batch at {b0}); its output ends:\n{out[-2000:]}")
        theirs_ms.append((cpu, len(batch)))
        mine = []
        for ours, _ in batch:
            t0 = time.process_time()
            result = langclass.classify(ours, alphabet="ab")
            ours_ms.append((time.process_time() - t0) * 1e3)
            mine.append(result)
        for i, (ours, theirs) in enumerate(batch):
            members = mine[i].members
            for j, key in enumerate(CLASSES):
                word, name = verdicts[i * len(CLASSES) + j]
                if by_name.get(name) != key:
                    raise SystemExit(f"MeSCaL answered for {name} where {CLASSES[key][1]} was asked")
                member = word == "belongs"
                agree[key][0] += member == members[key]
                agree[key][1] += 1
                if member != members[key]:
                    disagreements.append(f"{key}: langclass {members[key]}, MeSCaL {member}: {ours}")
    start = statistics.median(startup)
    per_batch = [max(0.0, cpu - start) * 1e3 / n for cpu, n in theirs_ms]
    theirs_mean = sum(max(0.0, cpu - start) * 1e3 for cpu, _ in theirs_ms) / len(regexes)
    ours_mean = sum(ours_ms) / len(ours_ms)
    print(f"{len(regexes)} random regexes over {{a, b}} of different languages (2-{args.max_states} states, seed {args.seed}), "
          f"{len(theirs_ms)} MeSCaL processes of {args.batch}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs")
    print(f"  MeSCaL, 15 classes:        {theirs_mean:7.2f} ms CPU per language (start-up {start * 1e3:.1f} ms per process "
          f"subtracted; per batch {', '.join(f'{x:.2f}' for x in per_batch)})")
    ours_sorted = sorted(ours_ms)
    print(f"  langclass.classify, all:   {ours_mean:7.2f} ms CPU per language (p50 {ours_sorted[len(ours_sorted) // 2]:.2f}, "
          f"max {ours_sorted[-1]:.2f})")
    print(f"  ratio langclass / MeSCaL:  {ours_mean / theirs_mean:7.2f}   (goal ≤ 0.5)")
    total = sum(a for a, _ in agree.values())
    print(f"  agreement: {total}/{sum(n for _, n in agree.values())} verdicts; per class: "
          + ", ".join(f"{k} {a}/{n}" for k, (a, n) in agree.items()))
    for line in disagreements[:20]:
        print("  disagreement:", line)


if __name__ == "__main__":
    main()
