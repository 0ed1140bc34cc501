"""Portable models: size of the download and speed of the standalone runner against the original.

For each construction route (the languages of tests/test_portable.py) prints the parameters, the
bytes of config.json / model.safetensors / the zip, the seconds the original model and the runner
(loaded from the saved files) take on every word to length 10 plus 20 random words up to length
1,000, and whether every logit is equal.

    PYTHONPATH=. python bench/portable.py
"""

from __future__ import annotations

import itertools
import json
import random
import tempfile
import time

import torch

from langclass.models.construct.verify import run_construction
from langclass.models.nn.tokens import BOS, NUM_SPECIAL, Vocabulary
from langclass.models.portable.export import zip_models
from langclass.models.portable.provenance import construct_files
from langclass.models.portable.runner import load

ROUTES = {
    "soft formula (NoPE)": {"regex": "(a|b)*a(a|b)*"},
    "periodic RoPE": {"regex": "((a|b)(a|b))*"},
    "recency heads": {"regex": "(a|b)*ab", "y_mode": "recency"},
    "RoPE Y^k heads": {"regex": "(a|b)*ab", "y_mode": "rope", "target_length": 1100},
    "cascade": {"regex": "(ab)*", "route": "cascade"},
    "local divisors": {"regex": "(ab)*", "route": "local-divisors"},
    "non-strict mask": {"regex": "(a|b)*ab(a|b)*", "mask": "nonstrict"},
    "FO[<,MOD] marks": {"regex": "((a|b)(a|b))*a", "attention": "hard"},
    "C-RASP (causal)": {"regex": "(ab|ba)*", "setting": "causal"},
}


@torch.no_grad()
def original(model, words):
    out = []
    if type(model).__name__ == "BraspTransformer":
        for w in words:
            out.append((1.0 if model.program.empty_accept else -1.0) if not w else
                       float(model.decide(torch.tensor([["ab".index(c) for c in w]]))[0]))
        return out
    if type(model).__name__ == "CountingTransformer":  # BOS w, read at the last index
        return [float(model.decide(torch.tensor([[BOS] + [NUM_SPECIAL + "ab".index(c) for c in w]]))[0]) for w in words]
    vocab = Vocabulary(("a", "b"))
    for w in words:
        b = vocab.batch([w])
        out.append(float(model.decide(b.ids, b.valid, b.eos_index)[0]))
    return out


def main() -> None:
    torch.set_num_threads(1)
    rng = random.Random(0)
    words = ["".join(w) for n in range(11) for w in itertools.product("ab", repeat=n)]
    words += ["".join(rng.choice("ab") for _ in range(rng.randint(11, 1000))) for _ in range(20)]
    print(f"{'route':22} {'params':>7} {'config B':>9} {'weights B':>9} {'zip B':>7} {'orig s':>7} {'runner s':>8} equal")
    for name, spec in ROUTES.items():
        held = {}
        record = run_construction({**spec, "alphabet": ["a", "b"], "all_words_up_to": 4, "random_words": 2, "random_max_length": 30},
                                  on_model=lambda m, d: held.update(model=m, dfa=d))
        files = construct_files(held["model"], held["dfa"], record)
        folder = tempfile.mkdtemp()
        for fname, data in files.items():
            with open(f"{folder}/{fname}", "wb") as fh:
                fh.write(data)
        t = time.perf_counter()
        a = original(held["model"], words)
        t_orig = time.perf_counter() - t
        runner = load(folder)
        t = time.perf_counter()
        b = [runner.logits([w]).item() for w in words]
        t_run = time.perf_counter() - t
        print(f"{name:22} {json.loads(files['config.json'])['parameters']:>7} {len(files['config.json']):>9} "
              f"{len(files['model.safetensors']):>9} {len(zip_models({'': files})):>7} {t_orig:>7.2f} {t_run:>8.2f} {a == b}")


if __name__ == "__main__":
    main()
