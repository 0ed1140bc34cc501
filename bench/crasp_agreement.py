"""Agreement of the ``crasp`` class with the published C-RASP labels (issue 32, "Done when").

Usage::

    python bench/crasp_agreement.py --crasp-reg PATH/all_results.txt --suite PATH/main_language_suite.csv
    python bench/crasp_agreement.py --suite      # the suite's labels as shipped (langclass/data/suites)

The two label files come from the public repositories ``pentagonalize/crasp_reg``
(``results/all_results.txt``: ``index,regex,R,C-RASP,R_infinity``, 1,000 random regexes over {a, b, c},
``+`` meaning union) and ``bveseli/state-tracking-crasp`` (``main_language_suite.csv``: 125 languages,
column ``CRasp``); this repository ships the suite's labels as data (``--suite`` without a path,
:mod:`langclass.core.ingest.suite`), not crasp_reg's: export it yourself, e.g.
``git show HEAD:results/all_results.txt > all_results.txt`` in a clone. Either option may be left out.

Each regex is parsed over the letters it uses (:func:`langclass.core.ingest.suite.suite_alphabet`, the
suite's one translation) (membership in C-RASP does not depend on letters that
only lead to a sink: they add exits, never internal edges), classified by ``decide_crasp`` on the
minimal DFA, and compared with the label. Prints per file the agreement (count and %), then every
disagreement: the regex, the published label, ours, and our reason, marked "last-letter family" when
the reference decider's own acceptance test (every class of the fixed point a single state) run on our
fixed point gives the published label; members also print the depth
and size of the program, which is checked here against the DFA on every word up to length 8 and on
200 random words of lengths 50 to 400 (a disagreement in a member's favour is then a verified program).
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time

from langclass.core.algebra.classes import decide_crasp
from langclass.core.algebra.classes.context import Context
from langclass.core.algebra.classes.crasp import crasp_components
from langclass.core.ingest.suite import SUITES, load_suite, suite_alphabet
from langclass.core.ingest.parse import parse_regex
from langclass.core.logic.crasp import CraspProgram, iter_words


def _check_program(dfa, program: dict, rng: random.Random) -> str:
    """Run the program on every word of length L (so, C-RASP being causal, on every prefix: all words up to
    L; L = 8 over two letters, 6 over three) and on 20 random words of lengths 50 to 400."""
    prog = CraspProgram.from_json(program)
    A = dfa.canonical()
    L = 8 if len(A.alphabet) <= 2 else 6
    words = [list(w) for w in iter_words(A.alphabet, L) if len(w) == L]
    words += [[rng.choice(A.alphabet) for _ in range(rng.randint(50, 400))] for _ in range(20)]
    for w in words:
        vals = prog.evaluate_all(w)[prog.output]
        q = A.initial
        for i, a in enumerate(w):
            q = A.run([a], q)
            if vals[i] != bool(A.accepting[q]):
                return f"PROGRAM WRONG on {''.join(w[:i + 1])!r}"
    return f"program verified on every word up to length {L} and 20 random words of length 50-400"


def _letter_blind(ctx: Context) -> bool:
    """The reference decider's acceptance test on our fixed point: every final class is a single state."""
    comps = crasp_components(ctx.t.tolist(), ctx.scc.tolist())
    return all(len(set(cf.classes)) == len(cf.states) for cf in comps)


def _rows(path: str, kind: str) -> list[tuple[str, str, bool]]:
    if kind == "suite" and path in SUITES:
        return [(lang.name, lang.regex, lang.labels["CRasp"]) for lang in load_suite(path)]
    out = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if kind == "crasp_reg":
                out.append((row["index"], row["regex"].replace("+", "|"), row["C-RASP"].strip() == "True"))
            else:
                out.append((row["name"], row["regex"], row["CRasp"].strip() == "True"))
    return out


def compare(path: str, kind: str) -> None:
    rng = random.Random(32)
    rows = _rows(path, kind)
    agree, errors, lines, blind_agree = 0, 0, [], 0
    t0 = time.perf_counter()
    for name, rx, label in rows:
        try:
            dfa = parse_regex(rx, list(suite_alphabet(rx)))
        except Exception as err:  # a regex our parser refuses: reported, never counted as agreement
            errors += 1
            lines.append(f"  {name}: {rx}: not parsed ({err})")
            continue
        ctx = Context(dfa)
        r = decide_crasp(ctx)
        blind = _letter_blind(ctx)
        blind_agree += blind == label
        if r.member == label:
            agree += 1
            continue
        extra = " [last-letter family: the letter-blind test gives the published label]" if blind == label else ""
        if r.member:
            c = r.certificate
            extra += f" [depth {c.depth}, {len(c.program['ops'])} ops, {_check_program(dfa, c.program, rng)}]"
        lines.append(f"  {name}: {rx}  published {label}, ours {r.member}{extra}: {r.reason}")
        print(lines[-1], file=sys.stderr, flush=True)
    n = len(rows)
    print(f"{kind}: {path}: {agree}/{n} agree ({100 * agree / max(n, 1):.1f} %), {errors} not parsed, "
          f"{time.perf_counter() - t0:.1f} s; the letter-blind test (every final class one state, as the reference "
          f"decider asks) agrees on {blind_agree}/{n}")
    for ln in lines:
        print(ln)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crasp-reg", help="crasp_reg's results/all_results.txt")
    ap.add_argument("--suite", nargs="?", const="state-tracking-crasp",
                    help="state-tracking-crasp's main_language_suite.csv (no path: the shipped suite)")
    args = ap.parse_args(argv)
    if not args.crasp_reg and not args.suite:
        ap.error("give --crasp-reg and/or --suite")
    if args.crasp_reg:
        compare(args.crasp_reg, "crasp_reg")
    if args.suite:
        compare(args.suite, "suite")


if __name__ == "__main__":
    sys.exit(main())
