"""Reproduce the qualitative Table 2 of *Disentangling the Expressivity of RoPE* by training.

Trains recognizers on (aa)* and (ab)* over {a, b} with NoPE, periodic RoPE (period 2, half of the
pairs unrotated — the default of ``rope_periodic``) and conventional RoPE (base 10^4), over several
seeds, and prints per-encoding seeds, steps and the longest perfect length N* (plus max/mean
accuracy). The paper's result: periodic RoPE reaches accuracy 1.00 and N* = 500 on both
languages, NoPE fails on (aa)*; conventional RoPE does not generalize perfectly (Fig. 2, Table 4).

    .venv/bin/python bench/table2.py                       # quick profile on CPU (a few minutes)
    .venv/bin/python bench/table2.py --profile paper --seeds 0 1 2 --lr 5e-4 --max-steps 3000
    .venv/bin/python bench/table2.py --json out.json       # also write the full results

Figures depend on the machine's load; the N* columns do not (seeded). Measured on the 2-core
development machine (load average ~2, one torch thread), quick profile, seeds 0 1 2, 553 s in all:
RoPE_P(k=2) reached N* = 100 in 3/3 seeds on both languages after 224–249 steps (~7 s each);
NoPE never fit (aa)* (1500 steps, accuracy 0.813, N* 0) and reached N* 44–64 on (ab)*;
RoPE(1e4) fit the training lengths but reached N* 0 on (aa)* and 42–64 on (ab)*.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langclass.core.automaton import DFA  # noqa: E402
from langclass.models.experiment import run_experiment  # noqa: E402

LANGUAGES = {
    # (aa)* over {a, b}: states 0 (even a^n), 1 (odd a^n), 2 (sink)
    "(aa)*": DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0]),
    # (ab)* over {a, b}
    "(ab)*": DFA.from_table(["a", "b"], [[1, 2], [2, 0], [2, 2]], 0, [0]),
}

ENCODINGS = {
    "nope": {"name": "nope", "params": {}, "label": "NoPE"},
    "rope_periodic": {"name": "rope_periodic", "params": {"periods": 2}, "label": "RoPE_P(k=2)"},
    "rope": {"name": "rope", "params": {"base": 1e4}, "label": "RoPE(1e4)"},
    "sinusoidal_periodic": {"name": "sinusoidal_periodic", "params": {"periods": 2}, "label": "SiPE_P(k=2)"},
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="quick", choices=["quick", "paper"])
    ap.add_argument("--languages", nargs="+", default=list(LANGUAGES), choices=list(LANGUAGES))
    ap.add_argument("--encodings", nargs="+", default=["nope", "rope_periodic", "rope"], choices=list(ENCODINGS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--lr", nargs="+", type=float, default=None, help="learning rates (default: the profile's)")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--test-min", type=int, default=None)
    ap.add_argument("--test-max", type=int, default=None)
    ap.add_argument("--test-step", type=int, default=1)
    ap.add_argument("--eval-per-length", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", type=Path, default=None, help="write the full results here")
    args = ap.parse_args(argv)

    overrides: dict = {}
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    if args.test_min is not None or args.test_max is not None:
        overrides["test_lengths"] = {"min": args.test_min or 41, "max": args.test_max or (100 if args.profile == "quick" else 500), "step": args.test_step}
    if args.eval_per_length is not None:
        overrides["eval_per_length"] = args.eval_per_length
    if args.device is not None:
        overrides["device"] = args.device

    results = {}
    rows = []
    t_all = time.perf_counter()
    for lang in args.languages:
        spec = {
            "language": LANGUAGES[lang].to_canonical_dict(),
            "encodings": [ENCODINGS[e] for e in args.encodings],
            "profile": args.profile,
            "seeds": args.seeds,
            "overrides": overrides,
            "prediction": {"sufficient": ["rope_periodic", "sinusoidal_periodic"], "reason": "LTL[P,MOD] with period 2 (Thm 3.1, 3.2)"},
        }
        if args.lr:
            spec["learning_rates"] = args.lr
        t0 = time.perf_counter()
        res = run_experiment(spec)
        results[lang] = res
        print(f"\n{lang} over {{a,b}}: profile {args.profile}, test lengths {res['test_lengths'][0]}–{res['longest_tested_length']}, "
              f"{res['settings']['eval_per_length']} strings/length, device {res['device']}, {time.perf_counter() - t0:.1f} s", flush=True)
        print(f"{'encoding':<14}{'seed':>5}{'lr':>9}{'steps':>7}{'stop':>11}{'train s':>9}{'acc':>7}{'N*':>6}")
        for r in res["runs"]:
            print(f"{r['encoding']:<14}{r['seed']:>5}{r['learning_rate']:>9.1e}{r['steps']:>7}{r['stopped']:>11}{r['train_wall_s']:>9.1f}{r['accuracy']:>7.3f}{r['longest_perfect_length']:>6}")
        for label, s in res["summary"].items():
            rows.append((lang, label, s))
    print("\nTable 2 (max accuracy, N* over the run grid; mean N*; runs reaching the longest tested length)")
    print(f"{'language':<9}{'encoding':<14}{'runs':>5}{'acc max':>9}{'acc mean':>9}{'N* max':>8}{'N* mean':>9}{'N* std':>8}{'perfect':>9}  verdict")
    for lang, label, s in rows:
        a, n = s["accuracy"], s["longest_perfect_length"]
        print(f"{lang:<9}{label:<14}{s['runs']:>5}{a['max']:>9.3f}{a['mean']:>9.3f}{n['max']:>8.0f}{n['mean']:>9.1f}{n['std']:>8.1f}{s['reached_longest']:>5}/{s['runs']:<3}  {s['verdict']['status']}")
    print(f"total wall time {time.perf_counter() - t_all:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
