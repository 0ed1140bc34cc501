"""Regenerate ``langclass/data/suites/state_tracking_crasp.csv`` from a checkout of the published suite.

Usage::

    python bench/suite_data.py PATH/TO/state-tracking-crasp [--commit SHA] > langclass/data/suites/state_tracking_crasp.csv

Reads ``main_language_suite.csv`` (the 125 languages and their labels) and the hyper-parameter search
logs ``results/main_language_suite/hyperparameter-search/<task>/*.txt`` (one line per trained
configuration: the architecture, then the accuracy on every length bin, then the learning rate) of the
repository ``bveseli/state-tracking-crasp`` (*Algebraic Decomposition Theory for Transformer Length
Generalization*). Only facts are copied: each language's name, source, regex and labels, the selected
configuration, and the per-bin accuracies of the selected run. The selection rule is the one the
repository's README and its ``config`` column describe: among the runs with accuracy 1.0 on the
training bin, keep the best accuracy on the longest bin, ties broken bin by bin towards the shortest,
then the smallest architecture. A language whose selected key differs from the ``config`` column is
reported on stderr (and kept, with its config column as published).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

_ARCH = re.compile(r"(\d+)l(\d+)h(\d+)d")
_BIN = re.compile(r"eval_len(\d+)-(\d+)_acc:\s*([0-9.]+)")
_LR = re.compile(r"lr:\s*([0-9.eE+-]+)")

FIELDS = ["name", "source", "regex", "config", "R", "CRasp", "Rinf", "R_G", "train_bin_acc", "longest_bin", "longest_bin_acc",
          "perfect_upto"]


def _runs(task_dir: Path) -> list[tuple[str, dict[tuple[int, int], float]]]:
    """(arch key with the 'smalllr' suffix for lr = 1e-4, {(lo, hi): accuracy}) of every logged run."""
    out = []
    for f in sorted(task_dir.glob("*.txt")):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = [p.strip() for p in line.split("\t\t")]
            if not parts or not _ARCH.fullmatch(parts[0]):
                continue
            lr = _LR.search(parts[-1])
            bins = {(int(lo), int(hi)): float(acc) for lo, hi, acc in _BIN.findall(line)}
            if lr is None or not bins:
                continue
            key = parts[0] + ("smalllr" if abs(float(lr.group(1)) - 1e-4) < 1e-9 else "")
            out.append((key, bins))
    return out


def _select(runs):
    if not runs:
        return None
    order = sorted(runs[0][1], key=lambda b: b[1])
    train = order[0]
    cands = [r for r in runs if r[1].get(train, 0.0) == 1.0]
    if not cands:
        return None
    for b in reversed(order):
        best = max(r[1].get(b, 0.0) for r in cands)
        cands = [r for r in cands if r[1].get(b, 0.0) == best]
    return min(cands, key=lambda r: tuple(int(x) for x in _ARCH.match(r[0]).groups()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    args = ap.parse_args(argv)
    logs = args.repo / "results" / "main_language_suite" / "hyperparameter-search"
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(FIELDS)
    with open(args.repo / "main_language_suite.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            name = row["name"]
            d = logs / name if (logs / name).is_dir() else logs / f"lang_id_{name}"
            sel = _select(_runs(d)) if d.is_dir() else None
            if sel is None:
                print(f"{name}: no run with accuracy 1.0 on the training bin", file=sys.stderr)
                w.writerow([name, row["source"], row["regex"], row["config"], row["R"], row["CRasp"], row["Rinf"], row["R_G"],
                            "", "", "", ""])
                continue
            key, bins = sel
            if key != row["config"]:
                print(f"{name}: selected {key}, published config {row['config']}", file=sys.stderr)
            order = sorted(bins, key=lambda b: b[1])
            perfect = 0
            for b in order:
                if bins[b] != 1.0:
                    break
                perfect = b[1]
            w.writerow([name, row["source"], row["regex"], row["config"], row["R"], row["CRasp"], row["Rinf"], row["R_G"],
                        bins[order[0]], f"{order[-1][0]}-{order[-1][1]}", bins[order[-1]], perfect])
    return 0


if __name__ == "__main__":
    sys.exit(main())
