"""Where the batched path's speed comes from: per-run CPU cost of a training step and of evaluation.

Measures, in one process with one torch thread (``--threads`` to change it; CPU seconds, which the machine's load inflates far
less than wall seconds), on (aa)* with the quick model (2 layers, d_model 32, 4 heads, batch 64):

* ``sequential``: :func:`langclass.models.training.train.train_recognizer` / ``make_predict`` — one run at a time;
* ``grouped R=1``: :func:`langclass.models.training.train_batched.train_group` / ``evaluate_group`` with one
  run — the grouped implementation (length buckets, last layer at EOS only, the first layer from
  key-class counts for NoPE) without any batching across runs;
* ``grouped R=9``: the 3 encodings × 3 seeds of a Table 2 language in one group.

So ``sequential / grouped R=1`` is what the reorganised computation gives by itself and
``grouped R=1 / grouped R=9`` what stacking runs adds on this CPU. The ``sequential`` and ``grouped R=1``
rows time the three NoPE runs; the ``R=9`` row all nine (NoPE, periodic RoPE, RoPE(1e4)), so its
ratio compares a different mix of encodings (per run, averaged).

    .venv/bin/python bench/train_batched.py [--steps 40] [--lengths 10] [--threads 1]
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
from langclass.models.training.data import LanguageSampler  # noqa: E402
from langclass.models.training.evaluate import build_test_sets, evaluate_lengths  # noqa: E402
from langclass.models.nn.recognizer import RecognizerConfig  # noqa: E402
from langclass.models.training.train import TrainConfig, make_predict, train_recognizer  # noqa: E402
from langclass.models.training.train_batched import evaluate_group, train_group  # noqa: E402

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])
ENCODINGS = [{"name": "nope"}, {"name": "rope_periodic", "periods": 2}, {"name": "rope", "base": 1e4}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=40, help="training steps per run (no early stop)")
    ap.add_argument("--lengths", type=int, default=10, help="test lengths 41, 47, … (every 6th up to 100)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1, the library's default)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sampler = LanguageSampler(AA.canonical(), 100)
    tests = build_test_sets(sampler, list(range(41, 101, 6))[: args.lengths], 512, 0)
    mcs = [RecognizerConfig(alphabet=("a", "b"), d_model=32, n_heads=4, n_layers=2, d_ff=64, encoding=e) for e in ENCODINGS]
    runs = [(mc, TrainConfig(learning_rate=1e-3, max_steps=args.steps, batch_size=64, patience=None, seed=s, device="cpu",
                             precision="float32")) for mc in mcs for s in (0, 1, 2)]
    load = os.getloadavg()[0]
    print(f"(aa)*, quick model, {args.steps} steps per run, {len(tests)} test lengths × 512 strings; load {load:.1f}; "
          f"torch threads {torch.get_num_threads()}", flush=True)

    c0, w0 = time.process_time(), time.perf_counter()
    seq_models = [train_recognizer(mc, cfg, sampler).model for mc, cfg in runs[:3]]
    seq_train = (time.process_time() - c0) / 3
    c0 = time.process_time()
    for m in seq_models:
        evaluate_lengths(make_predict(m, torch.device("cpu")), tests)
    seq_eval = (time.process_time() - c0) / 3

    c0 = time.process_time()
    one = [train_group(mc, [cfg], [sampler])[0].model for mc, cfg in runs[:3]]
    g1_train = (time.process_time() - c0) / 3
    c0 = time.process_time()
    for m in one:
        evaluate_group([m], tests)
    g1_eval = (time.process_time() - c0) / 3

    c0 = time.process_time()
    nine = [r.model for r in train_group([mc for mc, _ in runs], [cfg for _, cfg in runs], [sampler] * len(runs))]
    g9_train = (time.process_time() - c0) / len(runs)
    c0 = time.process_time()
    evaluate_group(nine, tests)
    g9_eval = (time.process_time() - c0) / len(runs)
    wall = time.perf_counter() - w0

    print(f"{'per run, CPU s':<22}{'train':>8}{'ms/step':>9}{'eval':>8}{'total':>8}{'vs sequential':>15}")
    for name, t, e in (("sequential", seq_train, seq_eval), ("grouped R=1", g1_train, g1_eval), ("grouped R=9", g9_train, g9_eval)):
        print(f"{name:<22}{t:>8.2f}{1000 * t / args.steps:>9.1f}{e:>8.2f}{t + e:>8.2f}{(seq_train + seq_eval) / (t + e):>14.2f}×")
    print(f"load average at end {os.getloadavg()[0]:.1f}; {wall:.1f} s wall in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
