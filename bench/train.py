"""Training throughput and wall time to N* for (aa)* over {a, b} with periodic RoPE.

Runs the quick profile on CPU (default) or the paper profile (App. E.2 of *Disentangling the
Expressivity of RoPE*: 5 layers, d_model 64, 8 heads, batch 128, test lengths 41–500) on a GPU,
and prints per seed: training steps until early stop, steps/s, tokens/s, training wall time,
evaluation wall time, and the longest perfect length N*; "wall to N*" is training + evaluation,
i.e. the time after which the run's N* is known.

    .venv/bin/python bench/train.py                              # quick, CPU, seeds 0 1 2
    .venv/bin/python bench/train.py --profile paper --device cuda --seeds 0 --lr 5e-4
    LANGCLASS_TORCH_THREADS=2 .venv/bin/python bench/train.py    # two intra-op threads

Figures depend on the machine and its load (print ``os.getloadavg()`` alongside).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from langclass.core.automata.automaton import DFA  # noqa: E402
from langclass.models.experiments.experiment import run_experiment  # noqa: E402

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a, b}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="quick", choices=["quick", "paper-lite", "paper"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--lr", nargs="+", type=float, default=None)
    ap.add_argument("--device", default=None, help="cpu / cuda (default: the profile's)")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--test-max", type=int, default=None)
    ap.add_argument("--eval-per-length", type=int, default=None)
    args = ap.parse_args(argv)
    overrides: dict = {}
    if args.device:
        overrides["device"] = args.device
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    if args.test_max:
        overrides["test_lengths"] = {"min": 41, "max": args.test_max}
    if args.eval_per_length:
        overrides["eval_per_length"] = args.eval_per_length
    spec = {
        "language": AA.to_canonical_dict(),
        "encodings": [{"name": "rope_periodic", "params": {"periods": 2}}],
        "profile": args.profile,
        "seeds": args.seeds,
        "overrides": overrides,
        "prediction": {"sufficient": ["rope_periodic"]},
    }
    if args.lr:
        spec["learning_rates"] = args.lr
    t0 = time.perf_counter()
    res = run_experiment(spec)
    total = time.perf_counter() - t0
    s = res["settings"]
    mean_tokens = (s["train_lengths"][0] + s["train_lengths"][-1]) / 2 + 2
    print(f"(aa)* over {{a,b}}, rope_periodic(periods=2), profile {res['profile']}: {s['n_layers']} layers, d_model {s['d_model']}, "
          f"{s['n_heads']} heads, batch {s['batch_size']}, train lengths {s['train_lengths'][0]}–{s['train_lengths'][-1]}, "
          f"test {res['test_lengths'][0]}–{res['longest_tested_length']} × {s['eval_per_length']}")
    print(f"device {res['device']}, torch threads {torch.get_num_threads()}, torch {res['torch_version']}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'seed':>4}{'lr':>9}{'steps':>7}{'stop':>11}{'steps/s':>9}{'tokens/s':>10}{'train s':>9}{'eval s':>8}{'wall to N*':>11}{'N*':>6}{'acc':>7}")
    for r in res["runs"]:
        sps = r["steps"] / r["train_wall_s"] if r["train_wall_s"] > 0 else float("nan")
        print(f"{r['seed']:>4}{r['learning_rate']:>9.1e}{r['steps']:>7}{r['stopped']:>11}{sps:>9.1f}{sps * s['batch_size'] * mean_tokens:>10.0f}"
              f"{r['train_wall_s']:>9.1f}{r['eval_wall_s']:>8.1f}{r['train_wall_s'] + r['eval_wall_s']:>11.1f}{r['longest_perfect_length']:>6}{r['accuracy']:>7.3f}")
    n = res["summary"][next(iter(res["summary"]))]
    print(f"N* reached {n['reached_longest']}/{n['runs']} runs; total wall time incl. test-set sampling {total:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
