"""The causal setting (C-RASP construction) on a few languages: the program from the ``crasp``
certificate, the model's size, the certified lengths per format and the verification.

Usage:
    .venv/bin/python bench/construct_causal.py                       # default languages, construct defaults
    .venv/bin/python bench/construct_causal.py --regex '(ab|ba)*' --alphabet ab --random-max-length 4000
    .venv/bin/python bench/construct_causal.py --dtype bfloat16

Every row runs :func:`langclass.models.construct.verify.run_construction` with ``setting="causal"`` (all words
up to 12 over two letters, 32 random words up to ``--random-max-length``; words longer than the
certified length of the model's format are counted under "beyond"). A language without a C-RASP
program prints the refusal. Single thread.
"""

from __future__ import annotations

import argparse
import time

import torch

from langclass.core.base.errors import LangclassError
from langclass.models.construct.verify import run_construction

DEFAULT = [("(ab|ba)*", "ab"), ("(ab)*", "ab"), ("a(a|b)*", "ab"), ("(a|b)*b", "ab"), ("(aa)*", "a"),
           ("(bab|b)*", "ab"), ("(abc)*", "abc")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regex", action="append")
    ap.add_argument("--alphabet", action="append")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--random-max-length", type=int, default=2000)
    ap.add_argument("--random-words", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = list(zip(args.regex, args.alphabet)) if args.regex else DEFAULT
    print(f"{'language':<12} {'depth':>5} {'layers':>7} {'d_model':>7} {'params':>8} {'f32 N':>7} {'bf16 N':>7} "
          f"{'bf16/f32acc':>11} {'exact':>6} {'all ≤':>5} {'random ≤':>8} {'beyond':>12} {'s':>6}")
    for regex, alphabet in rows:
        t0 = time.monotonic()
        try:
            r = run_construction({"regex": regex, "alphabet": list(alphabet), "setting": "causal", "dtype": args.dtype,
                                  "random_max_length": args.random_max_length, "random_words": args.random_words})
        except LangclassError as err:
            print(f"{regex:<12} refused: {err.detail[:110]}")
            continue
        m, p, b = r["model"], r["precision"], r["beyond_n_max"] or {}
        beyond = f"{b.get('wrong', 0)}/{b.get('words_checked', 0)} wrong" if b else "—"
        print(f"{regex:<12} {r['crasp']['depth']:>5} {m['layers']:>4} ({m['attention_layers']}) {m['d_model']:>7} "
              f"{m['parameters']:>8,} {p['float32'] or '∞':>7} {p['bfloat16'] or '∞':>7} "
              f"{p['bfloat16_float32_accumulation'] or '∞':>11} {str(r['exact']):>6} {r['all_words_up_to']:>5} "
              f"{r['random_words_up_to']:>8} {beyond:>12} {time.monotonic() - t0:>6.1f}")


if __name__ == "__main__":
    main()
