"""Plots of a ``sectors`` result: K_h(d) per head with the predicted roots marked, and the gates.

*PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*, §6 (gates) and Definition 1
(the kernel). Matplotlib object API, Agg backend.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from langclass.core.base.errors import InputError

__all__ = ["plot_sectors"]


def plot_sectors(result: Mapping[str, Any], run: int = 0, *, dpi: int = 100) -> bytes:
    """PNG bytes: one panel per head with K_h(d) on d = 1 … N (for an LTL[P,MOD] prediction with
    period k, the lags d ≡ 0 mod k are marked — where a root of order dividing k peaks), the
    nearest roots of the (at most two) frequencies with the largest FJ range in the title; and a stacked bar chart of the gates (FJ/A/LC).

    Args:
        result: the JSON result of :func:`langclass.models.experiments.sectors.run_sectors`.
        run: index into ``result["runs"]``.

    Raises:
        InputError: no such run.
    """
    runs = result.get("runs") or []
    if not isinstance(runs, list) or not 0 <= run < len(runs):
        raise InputError(f"the result has no run {run}", field="run")
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    r = runs[run]
    heads = r["heads"]
    values = r["kernel"]["values"]
    lo, _ = r["kernel"]["lags"]
    H = len(heads)
    pred = result.get("prediction") or {}
    k = pred.get("period") if pred.get("class") == "ltl_p_mod" else None
    fig = Figure(figsize=(3.2 * (H + 1), 3.2), dpi=dpi)
    for i, h in enumerate(heads):
        ax = fig.add_subplot(1, H + 1, i + 1)
        d = list(range(lo, lo + len(values[i])))
        ax.plot(d, values[i], linewidth=1)
        if k:
            marks = [x for x in d if x % k == 0]
            ax.plot(marks, [values[i][x - lo] for x in marks], "o", markersize=2.5, color="tab:red", label=f"d ≡ 0 mod {k}")
            ax.legend(fontsize=6, loc="lower left")
        # the frequencies that carry the kernel (largest FJ contribution first, at most 2 shown)
        freqs = sorted(h["frequencies"], key=lambda f: -f.get("fj_range", 0.0))[:2]
        roots = "; ".join(f"{f['a']}/{f['q']} δ={f['delta']:.3f}" + (f" ({f['fj_range']:.2g})" if "fj_range" in f else "") for f in freqs)
        name = f"head {h['head']}" if h.get("layer") is None else f"layer {h['layer']} head {h['head']}"
        ax.set_title(f"{name}: ΔK={h['kernel_range']:.2g}\nroots {roots}", fontsize=7)
        ax.set_xlabel("lag d", fontsize=8)
        ax.tick_params(labelsize=7)
    ax = fig.add_subplot(1, H + 1, H + 1)
    bottom = [0.0] * H
    for name, color in (("fj", "tab:blue"), ("affine", "tab:orange"), ("lc", "tab:green")):
        vals = [h["gates"][name] for h in heads]
        ax.bar(range(H), vals, bottom=bottom, color=color, label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(H))
    ax.set_title("gates", fontsize=8)
    ax.legend(fontsize=6)
    ax.tick_params(labelsize=7)
    fig.suptitle(f"PJ-bias sectors, λ={r['sparsity']:g}, seed {r['seed']}, N*={r['longest_perfect_length']}; "
                 f"prediction {pred.get('class') or 'none'}{f' (k={k})' if k else ''}", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
