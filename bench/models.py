"""Throughput of the Recognizer: forward and forward+backward tokens/s.

The model is the one of *Disentangling the Expressivity of RoPE*, App. E.2 (soft attention, strict
future mask, 5 layers, d_model 64, 8 heads), measured at string lengths 40 (the training range) and
500 (the longest test length), for several positional encodings, on CPU and — when CUDA is
available — on GPU (float32 and bfloat16 autocast).

Usage:
    .venv/bin/python bench/models.py                       # CPU (and GPU if present), defaults
    .venv/bin/python bench/models.py --device cpu --lengths 40 500 --batch 128 32 --json out.json

Tokens counted = batch × (length + 2) (BOS and EOS included). Each figure is the median of
``--repeat`` timed iterations after ``--warmup`` untimed ones.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langclass.models import Recognizer, RecognizerConfig  # noqa: E402

ENCODINGS = {
    "nope": {"name": "nope"},
    "rope": {"name": "rope", "base": 10_000.0},
    "rope_periodic": {"name": "rope_periodic", "periods": 2},
    "sinusoidal": {"name": "sinusoidal"},
    "alibi": {"name": "alibi"},
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(encoding: str, length: int, batch: int, device: torch.device, autocast: str | None, warmup: int, repeat: int,
            impl: str = "exact") -> dict:
    torch.manual_seed(0)
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=64, n_heads=8, n_layers=5, encoding=ENCODINGS[encoding],
                           attention_impl=impl)
    model = Recognizer(cfg).to(device)
    g = torch.Generator().manual_seed(0)
    letters = torch.randint(0, 2, (batch, length), generator=g)
    b = model.vocab.batch_from_indices(letters.tolist(), device=device)
    target = torch.randint(0, 2, (batch,), generator=g).float().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if autocast else (lambda: torch.autocast(device.type, enabled=False))

    def fwd():
        with torch.no_grad(), ctx():
            model.forward_batch(b)

    def fwd_bwd():
        opt.zero_grad(set_to_none=True)
        with ctx():
            logits = model.forward_batch(b)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), target)
        loss.backward()
        opt.step()

    out = {"encoding": encoding, "impl": impl, "length": length, "batch": batch, "device": str(device), "autocast": autocast or "off"}
    tokens = batch * (length + 2)
    for name, fn in (("forward", fwd), ("forward_backward", fwd_bwd)):
        model.train(name == "forward_backward")
        for _ in range(warmup):
            fn()
        _sync(device)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            _sync(device)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        out[f"{name}_tokens_per_s"] = tokens / med
        out[f"{name}_ms"] = med * 1e3
    if device.type == "cuda":
        out["peak_mem_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
        torch.cuda.reset_peak_memory_stats(device)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    ap.add_argument("--lengths", type=int, nargs="+", default=[40, 500])
    ap.add_argument("--batch", type=int, nargs="+", default=None,
                    help="batch per length (default 128 on GPU; 128 at ≤100 and 16 beyond on CPU)")
    ap.add_argument("--encodings", nargs="+", default=["nope", "rope", "rope_periodic"], choices=list(ENCODINGS))
    ap.add_argument("--impls", nargs="+", default=["exact", "sdpa"], choices=["exact", "sdpa"],
                    help="attention implementation (RecognizerConfig.attention_impl)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = []
    if args.device in ("auto", "cpu"):
        devices.append(torch.device("cpu"))
    if args.device in ("auto", "cuda") and torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    if args.device == "cuda" and not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, python {platform.python_version()}, CPU threads {torch.get_num_threads()}"
          + (f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no GPU"))
    print("model: soft attention, strict mask, 5 layers, d_model 64, 8 heads, d_ff 256, pre-norm (App. E.2)")
    rows = []
    header = f"{'device':6} {'autocast':8} {'impl':5} {'encoding':14} {'len':>5} {'batch':>5} {'fwd tok/s':>12} {'fwd+bwd tok/s':>14} {'fwd ms':>9} {'fwd+bwd ms':>11}"
    print(header)
    print("-" * len(header))
    for device in devices:
        for autocast in ([None] if device.type == "cpu" else [None, "bf16"]):
            for li, length in enumerate(args.lengths):
                if args.batch:
                    batch = args.batch[min(li, len(args.batch) - 1)]
                else:
                    batch = 128 if device.type == "cuda" or length <= 100 else 16
                for impl, enc in [(i, e) for i in args.impls for e in args.encodings]:
                    r = measure(enc, length, batch, device, autocast, args.warmup, args.repeat, impl)
                    rows.append(r)
                    print(f"{device.type:6} {r['autocast']:8} {impl:5} {enc:14} {length:5d} {batch:5d} {r['forward_tokens_per_s']:12,.0f} "
                          f"{r['forward_backward_tokens_per_s']:14,.0f} {r['forward_ms']:9.1f} {r['forward_backward_ms']:11.1f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
