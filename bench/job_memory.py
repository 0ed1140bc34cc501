"""A train job's whole memory: the estimate that admits it (``job_max_memory_bytes``) vs the measured
peak resident memory of a process that runs it.

    PYTHONPATH=. .venv/bin/python bench/job_memory.py [--only NAME ...]

For each spec below: :func:`langclass.models.training.footprint.job_footprint` (what
``validate_spec`` checks against ``job_max_memory_bytes``) and the peak RSS (``VmHWM`` of
``/proc/self/status``) of a fresh ``python`` subprocess that runs
:func:`langclass.models.experiments.experiment.run_experiment` on it — the work a job worker does.
Goal (issue 35, item 1): measured / estimate within [1/1.3, 1.3]. The specs take 10–60 s each on
a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AB_STAR = {"alphabet": ["a", "b"], "states": [0, 1, 2], "initial": 0, "accepting": [0],
           "transitions": {"0": {"a": 1, "b": 2}, "1": {"a": 2, "b": 0}, "2": {"a": 2, "b": 2}}}
SIX = ["rope", "nope", "sinusoidal", "alibi", "rope_periodic", "sinusoidal_periodic"]

SPECS = {
    # issue 35's reproducer with one run (trained alone)
    "issue-1-run": {"language": AB_STAR, "encodings": ["rope"], "seeds": [0],
                    "overrides": {"d_model": 256, "n_layers": 4, "batch_size": 256, "train_lengths": {"range": [1, 100]},
                                  "max_steps": 2, "test_lengths": {"range": [101, 102]}}},
    # the reproducer's 12-run grid (one stacked group) at a quarter of the width and half the depth
    "stacked-12": {"language": AB_STAR, "encodings": SIX, "seeds": [0, 1],
                   "overrides": {"d_model": 64, "n_layers": 2, "batch_size": 128, "train_lengths": {"range": [1, 100]},
                                 "max_steps": 2, "test_lengths": {"range": [101, 102]}}},
    # a stacked group of 4 with many heads (the T² attention terms dominate)
    "stacked-4-heads": {"language": AB_STAR, "encodings": ["rope", "alibi"], "seeds": [0, 1],
                        "overrides": {"d_model": 128, "n_heads": 8, "n_layers": 3, "batch_size": 128,
                                      "train_lengths": {"range": [1, 120]}, "max_steps": 2, "test_lengths": {"range": [121, 122]}}},
}

_CHILD = """
import json, sys
from langclass.models.experiments.experiment import run_experiment
run_experiment(json.loads(sys.argv[1]))
hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]
print(json.dumps({'peak_bytes': int(hwm.split()[1]) * 1024}))
"""


def estimate(spec: dict) -> dict:
    from langclass.models.experiments.experiment import validate_spec
    from langclass.models.training.footprint import job_footprint

    v = validate_spec(spec)
    return job_footprint(v["model_configs"], v["settings"], n_seeds=len(v["seeds"]), n_learning_rates=len(v["learning_rates"]),
                         batched=v["batched"] is not False)


def measure(spec: dict) -> tuple[int, float]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(SPECS), help="run only these specs")
    args = ap.parse_args()
    gib = 2 ** 30
    print(f"{'spec':<18} {'runs/unit':>9} {'estimate GiB':>12} {'measured GiB':>12} {'measured/est':>12} {'wall s':>7}")
    worst = 1.0
    for name in args.only or SPECS:
        est = estimate(SPECS[name])
        peak, wall = measure(SPECS[name])
        ratio = peak / est["memory_bytes"]
        worst = max(worst, ratio, 1 / ratio)
        print(f"{name:<18} {est['largest_unit_runs']:>9} {est['memory_bytes'] / gib:>12.2f} {peak / gib:>12.2f} {ratio:>12.2f} {wall:>7.1f}",
              flush=True)
    print(f"worst factor {worst:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
