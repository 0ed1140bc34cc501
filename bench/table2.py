"""Reproduce the qualitative Table 2 of *Disentangling the Expressivity of RoPE* by training.

Trains recognizers on (aa)* and (ab)* over {a, b} with NoPE, periodic RoPE (period 2, half of the
pairs unrotated — the default of ``rope_periodic``) and conventional RoPE (base 10^4), over several
seeds, and prints per-encoding seeds, steps and the longest perfect length N* (plus max/mean
accuracy). The paper's result: periodic RoPE reaches accuracy 1.00 and N* = 500 on both
languages, NoPE fails on (aa)*; conventional RoPE does not generalize perfectly (Fig. 2, Table 4).

    .venv/bin/python bench/table2.py                       # quick profile on CPU (a few minutes)
    .venv/bin/python bench/table2.py --profile paper-lite --encodings nope rope_periodic   # test lengths 41..500
    .venv/bin/python bench/table2.py --profile paper-lite --encodings rope_periodic --length-scale none   # without the ln(keys) scaling
    .venv/bin/python bench/table2.py --profile paper --seeds 0 1 2 --lr 5e-4 --max-steps 3000
    .venv/bin/python bench/table2.py --json out.json       # also write the full results
    .venv/bin/python bench/table2.py --batched             # sequential and batched training, same run

Without ``--batched`` the grid takes the default path of ``run_experiment`` (runs sharing a model
shape trained and evaluated together, :mod:`langclass.models.training.train_batched`). ``--batched`` trains
every language both ways in one process, back to back (alternating which goes first, since the
machine's load drifts) — one run after another (``run_experiment(spec, batched=False)``) and
together (``batched=True``) — and prints both N* tables, whether every run's steps and N* agree,
whether every seed's verdict (N* = the longest tested length or not) and every encoding's verdict
agree, the wall and CPU seconds of each path with their ratios, the load average and the peak RSS.
``bench/train_batched.py`` splits the speedup into what the grouped implementation gives with one
run and what stacking runs adds.

Figures depend on the machine's load; the N* columns do not (seeded). Measured on the 2-core
development machine (load average ~2, one torch thread), quick profile, seeds 0 1 2, sequential
path, 553 s in all (``--batched`` on the idle machine: 377 s sequential, 112 s batched, 3.37×; README):
RoPE_P(k=2) reached N* = 100 in 3/3 seeds on both languages after 224–249 steps (~7 s each);
NoPE never fit (aa)* (1500 steps, accuracy 0.813, N* 0) and reached N* 44–64 on (ab)*;
RoPE(1e4) fit the training lengths but reached N* 0 on (aa)* and 42–64 on (ab)*. Profile paper-lite
(test lengths 41–500, log-length attention scaling), ``--encodings nope rope_periodic``, seeds 0 1 2:
RoPE_P(k=2) N* = 500 in 3/3 seeds on both languages (218–239 steps), NoPE N* 0 on (aa)*; 92 s of
CPU for both languages on the idle machine (README).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langclass.core.automata.automaton import DFA  # noqa: E402
from langclass.models.experiments.experiment import run_experiment  # noqa: E402
from langclass.models.training.train import configure_threads  # noqa: E402

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
    ap.add_argument("--profile", default="quick", choices=["quick", "paper-lite", "paper"])
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
    ap.add_argument("--length-scale", choices=["none", "log"], default=None,
                    help="attention scores × ln(keys seen) or not (default: the profile's — log for paper-lite)")
    ap.add_argument("--json", type=Path, default=None, help="write the full results here")
    ap.add_argument("--batched", action="store_true", help="train the grid both ways (sequential and batched, per language "
                    "back to back) and print the speedup; without it only the default (batched) path runs")
    ap.add_argument("--sequential", action="store_true", help="train only one run after another (one half of --batched, "
                    "for running the two paths in separate processes)")
    args = ap.parse_args(argv)

    overrides: dict = {}
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    if args.test_min is not None or args.test_max is not None:
        overrides["test_lengths"] = {"range": [args.test_min or 41, args.test_max or (100 if args.profile == "quick" else 500)], "step": args.test_step}
    if args.eval_per_length is not None:
        overrides["eval_per_length"] = args.eval_per_length
    if args.device is not None:
        overrides["device"] = args.device
    if args.length_scale is not None:
        overrides["length_scale"] = args.length_scale

    modes = ["sequential", "batched"] if args.batched else ["sequential"] if args.sequential else ["batched"]
    results: dict[str, dict] = {m: {} for m in modes}
    rows: dict[str, list] = {m: [] for m in modes}
    wall: dict[str, float] = {m: 0.0 for m in modes}
    cpu: dict[str, float] = {m: 0.0 for m in modes}
    load0 = os.getloadavg()
    # what run_experiment sets on a CPU, for both paths alike: the library's default (one intra-op
    # thread unless LANGCLASS_TORCH_THREADS says otherwise)
    threads = configure_threads()
    print(f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} ({os.cpu_count()} CPUs); torch intra-op threads "
          f"{threads} for both paths (configure_threads: LANGCLASS_TORCH_THREADS={os.environ.get('LANGCLASS_TORCH_THREADS', 'unset')})",
          flush=True)
    for i, lang in enumerate(args.languages):
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
        # both paths on the same language back to to back, alternating which goes first (the load drifts)
        for mode in (modes if i % 2 == 0 else modes[::-1]):
            t0, c0 = time.perf_counter(), time.process_time()
            res = run_experiment(spec, batched=(mode == "batched"))
            dw, dc = time.perf_counter() - t0, time.process_time() - c0
            wall[mode] += dw
            cpu[mode] += dc
            results[mode][lang] = res
            print(f"\n{lang} over {{a,b}}: profile {args.profile}, {mode}, test lengths "
                  f"{res['test_lengths'][0]}–{res['longest_tested_length']}, {res['settings']['eval_per_length']} strings/length, "
                  f"device {res['device']}, {dw:.1f} s wall, {dc:.1f} s CPU, load {os.getloadavg()[0]:.1f}", flush=True)
            print(f"{'encoding':<14}{'seed':>5}{'lr':>9}{'steps':>7}{'stop':>11}{'group':>6}{'train s':>9}{'eval s':>8}{'acc':>7}{'N*':>6}")
            for r in res["runs"]:
                print(f"{r['encoding']:<14}{r['seed']:>5}{r['learning_rate']:>9.1e}{r['steps']:>7}{r['stopped']:>11}{r['trained_with']:>6}"
                      f"{r['train_wall_s']:>9.1f}{r['eval_wall_s']:>8.1f}{r['accuracy']:>7.3f}{r['longest_perfect_length']:>6}")
            for label, summ in res["summary"].items():
                rows[mode].append((lang, label, summ))
    for mode in modes:
        print(f"\nTable 2, {mode} (max accuracy, N* over the run grid; mean N*; runs reaching the longest tested length)")
        print(f"{'language':<9}{'encoding':<14}{'runs':>5}{'acc max':>9}{'acc mean':>9}{'N* max':>8}{'N* mean':>9}{'N* std':>8}{'perfect':>9}  verdict")
        for lang, label, summ in rows[mode]:
            a, n = summ["accuracy"], summ["longest_perfect_length"]
            print(f"{lang:<9}{label:<14}{summ['runs']:>5}{a['max']:>9.3f}{a['mean']:>9.3f}{n['max']:>8.0f}{n['mean']:>9.1f}{n['std']:>8.1f}"
                  f"{summ['reached_longest']:>5}/{summ['runs']:<3}  {summ['verdict']['status']}")
        print(f"total {wall[mode]:.1f} s wall, {cpu[mode]:.1f} s CPU ({mode})", flush=True)
    load1 = os.getloadavg()
    print(f"load average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if args.batched:
        seq, bat = results["sequential"], results["batched"]

        def picks(res: dict, keys: tuple) -> list:
            return [[{k: r[k] for k in keys} for r in res[lang]["runs"]] for lang in args.languages]

        same_runs = picks(seq, ("encoding", "seed", "learning_rate", "steps", "longest_perfect_length")) == \
            picks(bat, ("encoding", "seed", "learning_rate", "steps", "longest_perfect_length"))
        same_reached = picks(seq, ("encoding", "seed", "reached_longest")) == picks(bat, ("encoding", "seed", "reached_longest"))
        same_verdicts = [(l, lb, x["verdict"]["status"]) for l, lb, x in rows["sequential"]] == \
            [(l, lb, x["verdict"]["status"]) for l, lb, x in rows["batched"]]
        sw, sc = wall["sequential"] / wall["batched"], cpu["sequential"] / cpu["batched"]
        print(f"\nbatched vs sequential ({threads} torch thread{'s' if threads > 1 else ''} each): wall {wall['sequential']:.1f} s → "
              f"{wall['batched']:.1f} s (speedup {sw:.2f}×), CPU {cpu['sequential']:.1f} s → {cpu['batched']:.1f} s (speedup {sc:.2f}×)")
        print(f"goal (issue 16): speedup ≥ 3× — wall {'met' if sw >= 3 else 'NOT met'} ({sw:.2f}×), CPU {'met' if sc >= 3 else 'NOT met'} ({sc:.2f}×)")
        print(f"same steps and N* for every run: {same_runs}; same per-seed verdict (N* = longest tested length or not): "
              f"{same_reached}; same verdicts per encoding: {same_verdicts}")
        if not same_runs:
            for lang in args.languages:
                for a, b in zip(seq[lang]["runs"], bat[lang]["runs"]):
                    if (a["steps"], a["longest_perfect_length"]) != (b["steps"], b["longest_perfect_length"]):
                        print(f"  differs: {lang} {a['encoding']} seed {a['seed']}: steps {a['steps']} → {b['steps']}, "
                              f"N* {a['longest_perfect_length']} → {b['longest_perfect_length']}")
    results = results if args.batched else results[modes[0]]
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
