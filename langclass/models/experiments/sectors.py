"""Sector discovery: train PJ-bias recognizers on a language and compare the sectors they select
with the classifier's prediction.

The position space is the PJ-bias kernel of *PJ-RoPE: A Fourier–Jet–Affine Position Space for
Relative Attention* (Definition 1; diagnostics of §6), trained inside the length-generalization
protocol of *Disentangling the Expressivity of RoPE* (App. E.2, the ``quick``/``paper`` profiles of
:mod:`langclass.models.experiments.experiment`). The three predictions tested (ours; docs/pjrope.md):

* **LTL[P,MOD] with least period k** — the energetic heads (centred kernel range ΔK_h ≥
  ``energy_threshold``, FJ the largest sector energy) sit within ``root_tolerance`` of roots
  e^{2πia/q} with q | k, and the lcm of their orders is k. Falsified by a run that reaches the
  longest tested length without such heads.
* **LTL[P,Y]** — some head puts ≥ 0.9 of its attention on lag 1 at every measured length, and zeroing
  the affine sector at evaluation costs accuracy (≥ 0.1) while zeroing FJ or LC costs < 0.01.
* **LTL[P]** — under the sparsity prior λ·Σ_h(Σ_{B,r,ℓ}|ζ| + s_h), some λ > 0 switches every sector
  off (max_h ΔK_h < 0.5) at an unchanged N*.

Spec (JSON-ready)::

    {"language": DFA JSON, "profile": "quick"|"paper", "seeds": [...], "learning_rates": [...],
     "overrides": {...}, "eval_seed": 0,
     "pj": {pj_bias parameters: max_order, n_freqs, sectors, omega_init, slope_init, ...},
     "prediction": {"class": "ltl_p"|"ltl_p_mod"|"ltl_p_y"|null, "period": k, "source": ...},
     "sparsity": [0.0, 0.001, 0.01],   # λ values (default [0.0], LTL[P]: [0.0, 0.001, 0.01])
     "max_root_order": 12, "root_tolerance": 0.05, "energy_threshold": 1.0}

Result: ``runs`` (per λ × seed × learning rate: accuracy by length, N*, per-head readouts of
:func:`langclass.models.experiments.pj_diagnostics.head_readouts`, the kernel K_h(d) on d = 1 … N for plots,
lag-1 mass per layer/head at three lengths, task-level leave-one-sector-out Δacc), ``verdict``
(``agrees`` / ``disagrees`` / ``inconclusive`` with the reasons), settings and timings.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import reduce
from typing import Any

import numpy as np
import torch

from langclass.core.base.errors import InputError, LimitExceeded

from langclass.models.training.evaluate import build_test_sets, evaluate_lengths, longest_perfect_length
from langclass.models.experiments.experiment import ExperimentCancelled, code_version, validate_spec
from langclass.models.nn.pj import SECTORS, PJBias
from langclass.models.experiments.pj_diagnostics import head_readouts, lag1_mass
from langclass.models.training.specs import DEFAULT_JOB_LIMITS, JobLimits, parse_sectors_spec
from langclass.models.training.train import TrainConfig, TrainingCancelled, configure_threads, make_predict, resolve_device, train_recognizer

__all__ = ["run_sectors", "validate_sectors_spec", "format_sectors", "CLASSES"]

CLASSES = ("ltl_p", "ltl_p_mod", "ltl_p_y")
ABLATION_LENGTHS = 6
"""Test lengths (evenly spaced, the longest included) on which sectors are zeroed for the task-level LOO."""
LAG1_STRINGS = 32
PJ_DEFAULTS: dict[str, Any] = {
    "max_order": 2, "n_freqs": 4, "omega_init": "random", "slope_init": 0.4, "slope_param": "exp", "lr_scale": 10.0, "omega_lr_scale": 5.0,
}
"""pj_bias defaults of a sectors run (both profiles; any key can be overridden through ``pj``).

All three sectors, jets to R = 2, and — unlike the released code's one frequency per head on a
linspace grid — F = 4 frequencies per head drawn U(0, π) from the training seed (Definition 1 sums
over ℓ; a random draw is no grid that happens to contain the predicted roots). Optimisation: the
gates, order spectra, amplitudes, slopes and damping get 10× the profile's learning rate and ω 5×
(separate AdamW groups without weight decay, :meth:`PJBias.optimizer_groups`), and the slope is
s = e^raw: with one learning rate for everything, 1500 steps at 1e-3 moved the kernels by < 1
score unit and no MOD or Y language was learned in the quick profile (docs/pjrope.md)."""


def validate_sectors_spec(spec: Mapping[str, Any], limits: JobLimits | None = None) -> dict[str, Any]:
    """Check a sectors spec without training; returns the normalized form (with ``experiment``,
    the :func:`~langclass.models.experiments.experiment.validate_spec` result of the underlying training grid).

    The shape is checked by :func:`langclass.models.training.specs.parse_sectors_spec` (frozen pydantic
    model, unknown keys refused), then the training grid by the train checks under ``limits``.

    Raises:
        InputError: malformed fields (``field`` names them).
        LimitExceeded: a named limit (``max_runs`` counts λ × seeds × rates).
    """
    limits = limits or DEFAULT_JOB_LIMITS
    parsed = parse_sectors_spec(spec)
    pred = parsed.prediction
    cls = pred.class_ if pred is not None else None
    period = pred.period if pred is not None else None
    if cls == "ltl_p_mod" and period is None:
        raise InputError("prediction.period (the least period k ≥ 1) is required for ltl_p_mod", field="prediction.period")
    pj = {**PJ_DEFAULTS, **parsed.pj}
    lams = list(parsed.sparsity) if parsed.sparsity is not None else ([0.0, 1e-3, 1e-2] if cls == "ltl_p" else [0.0])
    exp_spec: dict[str, Any] = {"language": parsed.language, "encodings": [{"name": "pj_bias", "params": dict(pj), "label": "pj_bias"}],
                                "profile": parsed.profile}
    for key in ("seeds", "learning_rates", "eval_seed"):
        if getattr(parsed, key) is not None:
            exp_spec[key] = getattr(parsed, key)
    if parsed.overrides is not None:
        exp_spec["overrides"] = parsed.overrides.model_dump(exclude_none=True)
    try:
        norm = validate_spec(exp_spec, limits)
    except InputError as err:
        field = (err.field or "").replace("encodings[0].params", "pj")
        if isinstance(err, LimitExceeded):
            raise
        raise type(err)(err.detail, field=field) from None
    n_runs = len(lams) * len(norm["seeds"]) * len(norm["learning_rates"])
    limits.check("max_runs", n_runs, "sparsity", "runs (λ values × seeds × learning rates)")
    extra = pred.model_extra if pred is not None and pred.model_extra else {}
    return {
        "experiment": norm, "pj": dict(pj), "prediction": {"class": cls, "period": period, **extra},
        "sparsity": [float(x) for x in lams],
        "max_root_order": parsed.max_root_order, "root_tolerance": float(parsed.root_tolerance),
        "energy_threshold": float(parsed.energy_threshold),
    }


def _penalty(lam: float) -> Callable[[torch.nn.Module], torch.Tensor] | None:
    if lam == 0:
        return None

    def f(model: torch.nn.Module) -> torch.Tensor:
        e: PJBias = model.encoding  # type: ignore[assignment]
        amp = sum(getattr(e, n).abs().sum() for n in ("fj_zeta_re", "fj_zeta_im", "lc_zeta_re", "lc_zeta_im"))
        return lam * (amp + e.slope().sum().to(amp.dtype))

    return f


@contextmanager
def _root_only(enc: PJBias, k: int, tol: float, max_q: int, snap: bool) -> Iterator[int]:
    """Context in which the kernel keeps only the FJ frequencies within ``tol`` of a root of order
    dividing ``k`` (every other FJ frequency, the LC and the affine sectors zeroed); with ``snap``
    those frequencies are set exactly to their roots 2πa/q (sign kept), and the jet orders r ≥ 1 and
    the damping are dropped too — the periodic kernel of :meth:`PJBias.snapped`. Yields how many
    frequencies were kept.
    The task-level reading of the MOD prediction with several frequencies per head (ours)."""
    from langclass.models.nn.pj import nearest_root

    with torch.no_grad():
        names = ("omega", "fj_zeta_re", "fj_zeta_im") + (("raw_damping",) if enc.raw_damping is not None else ())
        saved = {n: getattr(enc, n).detach().clone() for n in names}
        if snap and enc.raw_damping is not None:
            enc.raw_damping.fill_(-1e4)  # softplus → 0: no damping
        keep = torch.zeros(enc.n_heads, enc.n_freqs, dtype=torch.bool)
        for h, row in enumerate(enc.frequencies().tolist()):
            for f, w in enumerate(row):
                a, q, delta = nearest_root(w, max_q)
                if delta <= tol and k % q == 0:
                    keep[h, f] = True
                    if snap:
                        wrapped = ((w + math.pi) % (2 * math.pi)) - math.pi
                        enc.omega[h, f] = math.copysign(2 * math.pi * a / q, wrapped if wrapped != 0 else 1.0)
        m = keep.to(enc.fj_zeta_re.device)[:, :, None].to(enc.fj_zeta_re.dtype)
        enc.fj_zeta_re.mul_(m)
        enc.fj_zeta_im.mul_(m)
    keys: list[tuple[str, int | None]] = [("affine", None), ("lc", None)]
    if snap:
        keys += [("fj", r) for r in range(1, enc.max_order + 1)]
    try:
        with enc.ablated(*keys):
            yield int(keep.sum())
    finally:
        with torch.no_grad():
            for n, v in saved.items():
                getattr(enc, n).copy_(v)


def _ablation_lengths(test_lengths: list[int]) -> list[int]:
    idx = np.unique(np.linspace(0, len(test_lengths) - 1, min(ABLATION_LENGTHS, len(test_lengths))).round().astype(int))
    return [test_lengths[i] for i in idx]


def _label(h: Mapping[str, Any]) -> Any:
    """A head's name in readings: its index, or "l.h" for a per-layer pj_bias."""
    return h["head"] if h.get("layer") is None else f"{h['layer']}.{h['head']}"


def _run_verdict(run: Mapping[str, Any], pred: Mapping[str, Any], thr: float) -> dict[str, Any]:
    """Per-run reading of the prediction."""
    cls = pred.get("class")
    heads = run["heads"]
    if cls == "ltl_p_mod":
        k = int(pred["period"])
        # per frequency: a head holds F frequencies, and only those whose FJ contribution has a
        # centred range ≥ thr carry its kernel (the others kept amplitudes near their init)
        energetic = [(_label(h), f) for h in heads for f in h["frequencies"] if f.get("fj_range", h["kernel_range"]) >= thr]
        at_roots = [(hd, f) for hd, f in energetic if f["near_root"] and k % f["q"] == 0]
        valid = sorted({f["q"] for _, f in at_roots})
        lcm = reduce(math.lcm, valid, 1)
        ro = run.get("root_only") or {}
        learned, snapped = ro.get("learned"), ro.get("snapped")
        # agrees: the energetic frequencies at valid roots have orders with lcm k, and the kernel
        # reduced to the frequencies at valid roots (everything else zeroed) keeps the accuracy
        ok = bool(at_roots) and lcm == k and (learned is None or learned["accuracy_drop"] < 0.01)
        lc_hot = [(_label(h), f) for h in heads for f in h["frequencies"] if f.get("lc_range", 0.0) >= thr]
        desc = "; ".join(f"head {hd} ω̃={f['folded']:.3f} → {f['a']}/{f['q']} δ={f['delta']:.3f} range {f['fj_range'] if 'fj_range' in f else float('nan'):.2f}"
                         for hd, f in energetic)
        text = (f"{len(energetic)} energetic FJ frequenc{'y' if len(energetic) == 1 else 'ies'} (centred range ≥ {thr:g}), "
                f"{len(at_roots)} of them within τ of a root of order dividing k={k} (lcm {lcm})" + (f": {desc}" if desc else "")
                + (f"; {len(lc_hot)} LC frequenc{'y' if len(lc_hot) == 1 else 'ies'} with range ≥ {thr:g} (LC is not periodic)" if lc_hot else ""))
        for name, r_ in (("root-only kernel", learned), ("snapped root-only kernel", snapped)):
            if r_ is not None:
                text += (f"; {name} ({r_['kept_frequencies']} frequencies kept): accuracy drop {r_['accuracy_drop']:+.3f}"
                         + (f", N* {r_['longest_perfect_length']}" if "longest_perfect_length" in r_ else ""))
        return {"agrees": ok, "text": text, "energetic_heads": sorted({hd for hd, _ in energetic}),
                "energetic_frequencies": len(energetic), "at_valid_roots": len(at_roots), "root_orders": [f["q"] for _, f in at_roots],
                "lc_energetic_frequencies": len(lc_hot), "lcm": lcm}
    if cls == "ltl_p_y":
        lag1 = run["lag1_mass"]  # {length: [[layer][head]]}
        best = max((min(m[str(n)][l][h] for n in run["lag1_lengths"]), l, h)
                   for m in [lag1] for l in range(len(next(iter(lag1.values())))) for h in range(len(next(iter(lag1.values()))[0])))
        drop = run["loo_accuracy_drop"]
        ok = best[0] >= 0.9 and drop.get("affine", 0.0) >= 0.1 and drop.get("fj", 0.0) < 0.01 and drop.get("lc", 0.0) < 0.01
        text = (f"best lag-1 mass (min over lengths {run['lag1_lengths']}): {best[0]:.3f} at layer {best[1]} head {best[2]}; "
                f"accuracy drop when zeroing a sector: " + ", ".join(f"{s} {v:+.3f}" for s, v in drop.items()))
        return {"agrees": ok, "text": text, "lag1_best": {"mass": best[0], "layer": best[1], "head": best[2]}}
    if cls == "ltl_p":
        rng = max(h["kernel_range"] for h in heads)
        return {"agrees": rng < 0.5, "text": f"max_h ΔK_h = {rng:.3g} (< 0.5 means every sector is off)", "max_kernel_range": rng}
    return {"agrees": None, "text": "no sector prediction for this class (measured only)"}


def _verdict(runs: list[dict[str, Any]], pred: Mapping[str, Any], longest: int) -> dict[str, Any]:
    cls = pred.get("class")
    if cls is None:
        return {"status": "measured", "text": "the classifier places the language in none of LTL[P], LTL[P,MOD], LTL[P,Y]: no sector prediction"}
    if cls == "ltl_p":
        base = [r for r in runs if r["sparsity"] == 0.0]
        ref = max((r["longest_perfect_length"] for r in base), default=longest)
        hits = [r for r in runs if r["sparsity"] > 0 and r["run_verdict"]["agrees"] and r["longest_perfect_length"] >= ref]
        at_zero = "; at λ = 0: " + ", ".join(f"seed {r['seed']} max ΔK {r['run_verdict']['max_kernel_range']:.3g}" for r in base) if base else ""
        if hits:
            h = hits[0]
            return {"status": "agrees", "text": f"λ={h['sparsity']:g} (seed {h['seed']}) switches every sector off (max ΔK "
                    f"{h['run_verdict']['max_kernel_range']:.3g}) at N*={h['longest_perfect_length']} ≥ {ref} (best at λ = 0){at_zero}"}
        sparse = [r for r in runs if r["sparsity"] > 0]
        if not sparse:
            return {"status": "inconclusive", "text": "no λ > 0 in the sweep"}
        return {"status": "disagrees", "text": "no λ > 0 switched every sector off at unchanged N*: "
                + "; ".join(f"λ={r['sparsity']:g} seed {r['seed']}: N*={r['longest_perfect_length']}, {r['run_verdict']['text']}" for r in sparse)}
    full = [r for r in runs if r["reached_longest"]]
    if not full and cls == "ltl_p_mod":
        # the learned kernel reduced to its frequencies at roots of order dividing k (a sub-kernel
        # the model learned; nothing is fitted afterwards) may recognise the language where the
        # intact model does not: evidence that the predicted sector, as learned, suffices
        reduced = [r for r in runs if (r.get("root_only") or {}).get("learned") and r["run_verdict"].get("lcm") == int(pred["period"])
                   and longest in (r["root_only"]["learned"].get("longest_perfect_length"), r["root_only"]["snapped"].get("longest_perfect_length"))]
        if reduced and len(reduced) * 2 > len(runs):
            return {"status": "supported", "text": f"no intact run reached N* = {longest}, but in {len(reduced)}/{len(runs)} runs the learned kernel "
                    f"reduced to its frequencies at roots of order dividing k={pred['period']} (lcm {pred['period']}; every other FJ frequency, "
                    "LC and affine zeroed; 'snapped': ω set to the root) reaches it — the model learned the predicted roots, and its "
                    "other components or the residual frequency error δ are what break length generalization: " + "; ".join(f"seed {r['seed']}: N* {r['longest_perfect_length']}, root-only "
                                                     f"{r['root_only']['learned']['longest_perfect_length']}, snapped root-only "
                                                     f"{r['root_only']['snapped']['longest_perfect_length']}" for r in runs)}
    if not full:
        snaps = [f"seed {r['seed']}: N* {r['longest_perfect_length']}, root-only {r['root_only']['learned']['longest_perfect_length']}, "
                 f"snapped root-only {r['root_only']['snapped']['longest_perfect_length']}"
                 for r in runs if (r.get("root_only") or {}).get("snapped", {}).get("longest_perfect_length") is not None]
        return {"status": "inconclusive", "text": f"no run reached N* = {longest}; the diagnostics of a model that did not learn the language test nothing"
                + (" (kernels reduced to the frequencies at roots of order dividing k — " + "; ".join(snaps) + ")" if snaps else "")}
    agree = sum(1 for r in full if r["run_verdict"]["agrees"])
    status = "agrees" if agree * 2 > len(full) else "disagrees"
    return {"status": status, "text": f"{agree}/{len(full)} runs reaching N* = {longest} show the predicted sector: "
            + "; ".join(f"seed {r['seed']}: {r['run_verdict']['text']}" for r in full)}


def run_sectors(spec: Mapping[str, Any], *, progress: Callable[[dict[str, Any]], None] | None = None,
                should_cancel: Callable[[], bool] | None = None, limits: JobLimits | None = None) -> dict[str, Any]:
    """Train PJ-bias recognizers for every (λ, seed, learning rate), read their sectors and give a
    verdict against the prediction (see the module doc).

    Args:
        spec: the experiment (module doc).
        progress: called with ``{"phase", "run", "runs", "step", "total", ...}``.
        should_cancel: polled every training step and between evaluations.
        limits: the named job limits (default :data:`~langclass.models.training.specs.DEFAULT_JOB_LIMITS`).

    Returns:
        JSON-ready result: ``runs``, ``verdict`` {status (``agrees``, ``disagrees``, ``supported``,
        ``inconclusive`` or ``measured``), text}, ``prediction``, ``settings``, timings.

    Raises:
        InputError / LimitExceeded: a malformed spec or a limit.
        ExperimentCancelled: ``should_cancel()`` returned True (``.partial`` holds finished runs).
    """
    t0 = time.perf_counter()
    norm = validate_sectors_spec(spec, limits)
    exp = norm["experiment"]
    dfa, settings = exp["dfa"], exp["settings"]
    test_lengths, train_lengths = settings["test_lengths"], settings["train_lengths"]
    longest = test_lengths[-1]
    device = resolve_device(settings["device"])
    if device.type == "cpu":
        configure_threads()
    from langclass.models.training.data import LanguageSampler

    sampler = LanguageSampler(dfa, max(longest, train_lengths[-1]))
    pj = dict(norm["pj"])
    pj.setdefault("train_length", train_lengths[-1] + 2)
    model_config = exp["model_configs"]["pj_bias"]
    model_config = type(model_config)(**{**model_config.to_dict(), "alphabet": tuple(dfa.alphabet), "encoding": {"name": "pj_bias", **pj}})
    grid = [(lam, s, lr) for lam in norm["sparsity"] for s in exp["seeds"] for lr in exp["learning_rates"]]
    runs: list[dict[str, Any]] = []
    head = {"language": {"fingerprint": dfa.fingerprint(), "alphabet": list(dfa.alphabet), "num_states": dfa.num_states},
            "profile": exp["profile"], "settings": settings, "pj": pj, "prediction": norm["prediction"],
            "sparsity": norm["sparsity"], "thresholds": {k: norm[k] for k in ("max_root_order", "root_tolerance", "energy_threshold")},
            "test_lengths": test_lengths, "longest_tested_length": longest, "code_version": code_version(),
            "source": "PJ-RoPE: A Fourier-Jet-Affine Position Space for Relative Attention (Definition 1, Section 6); protocol of "
                      "Disentangling the Expressivity of RoPE, App. E.2"}

    def finish(partial: bool) -> dict[str, Any]:
        return {**head, "runs": runs, "verdict": _verdict(runs, norm["prediction"], longest), "complete": not partial,
                "wall_s": time.perf_counter() - t0, "spec": copy.deepcopy(dict(spec))}

    def report(p: dict[str, Any]) -> None:
        if progress is not None:
            progress(p)

    test_sets: dict[int, Any] = {}
    for n in test_lengths:
        if should_cancel is not None and should_cancel():
            raise ExperimentCancelled(finish(True))
        test_sets.update(build_test_sets(sampler, [n], settings["eval_per_length"], exp["eval_seed"], settings["near_miss_fraction"]))
    abl_sets = {n: test_sets[n] for n in _ablation_lengths(test_lengths)}
    lag_lengths = sorted({test_lengths[0], test_lengths[len(test_lengths) // 2], longest})
    for idx, (lam, seed, lr) in enumerate(grid):
        ctx = {"run": idx, "runs": len(grid), "sparsity": lam, "seed": seed, "learning_rate": lr}
        tconf = TrainConfig(learning_rate=lr, max_steps=settings["max_steps"], batch_size=settings["batch_size"],
                            train_lengths=(train_lengths[0], train_lengths[-1]), near_miss_fraction=settings["near_miss_fraction"],
                            weight_decay=settings["weight_decay"], grad_clip=settings["grad_clip"], warmup_steps=settings["warmup_steps"],
                            patience=settings["patience"], seed=seed, device=settings["device"], precision=settings["precision"],
                            progress_every=max(1, min(50, settings["max_steps"] // 100 or 1)))
        try:
            tr = train_recognizer(model_config, tconf, sampler, progress=lambda p, ctx=ctx: report({**ctx, **p}),
                                  should_cancel=should_cancel, extra_loss=_penalty(lam))
        except TrainingCancelled:
            raise ExperimentCancelled(finish(True)) from None
        report({**ctx, "phase": "evaluate", "step": tr.steps, "total": settings["max_steps"]})
        model = tr.model
        predict = make_predict(model, resolve_device(tr.device), tr.precision)
        acc = evaluate_lengths(predict, test_sets, should_cancel=should_cancel)
        if len(acc) < len(test_sets):
            raise ExperimentCancelled(finish(True))
        n_star = longest_perfect_length(acc)
        enc: PJBias = model.encoding  # type: ignore[assignment]
        heads = head_readouts(enc, longest + 1, norm["max_root_order"], norm["root_tolerance"])
        with torch.no_grad():
            kernel = enc.kernel(lags=torch.arange(1, longest + 2)).cpu().numpy()
        base_abl = float(np.mean(list(evaluate_lengths(predict, abl_sets).values())))
        drop: dict[str, float] = {}
        for sector in enc.sectors:
            with enc.ablated((sector, None)):
                drop[sector] = base_abl - float(np.mean(list(evaluate_lengths(predict, abl_sets).values())))
        root_only: dict[str, Any] | None = None
        pred = norm["prediction"]
        if pred.get("class") == "ltl_p_mod" and "fj" in enc.sectors and enc.roots is None:
            root_only = {}
            for snap in (False, True):
                with _root_only(enc, int(pred["period"]), norm["root_tolerance"], norm["max_root_order"], snap) as kept:
                    acc_by = evaluate_lengths(predict, test_sets, should_cancel=should_cancel)  # every test length: its N*
                if len(acc_by) < len(test_sets):
                    raise ExperimentCancelled(finish(True))
                acc_r = float(np.mean(list(acc_by.values())))
                root_only["snapped" if snap else "learned"] = {
                    "kept_frequencies": kept, "accuracy": acc_r, "accuracy_drop": float(np.mean(list(acc.values()))) - acc_r,
                    "longest_perfect_length": longest_perfect_length(acc_by)}
        lag1: dict[str, Any] = {}
        for n in lag_lengths:
            words = [tuple(dfa.alphabet[i] for i in w) for w in test_sets[n].words[:LAG1_STRINGS]]
            lag1[str(n)] = lag1_mass(model, words)
        run = {"sparsity": lam, "seed": seed, "learning_rate": lr, "steps": tr.steps, "stopped": tr.stopped,
               "train_accuracy": tr.train_accuracy, "accuracy": float(np.mean(list(acc.values()))),
               "accuracy_by_length": {str(n): a for n, a in acc.items()}, "longest_perfect_length": n_star,
               "reached_longest": n_star == longest, "heads": heads,
               "kernel": {"lags": [1, longest + 1], "values": [[round(float(v), 6) for v in row] for row in kernel]},
               "lag1_lengths": lag_lengths, "lag1_mass": lag1, "loo_lengths": list(abl_sets), "loo_accuracy_drop": drop,
               "loo_accuracy": base_abl, "root_only": root_only,
               "manifest_digest": enc.digest(), "train_wall_s": tr.wall_s}
        run["run_verdict"] = _run_verdict(run, norm["prediction"], norm["energy_threshold"])
        runs.append(run)
        report({**ctx, "phase": "evaluated", "step": tr.steps, "total": settings["max_steps"],
                "last_evaluation": {"seed": seed, "sparsity": lam, "longest_perfect_length": n_star}})
    result = finish(False)
    report({"phase": "done", "run": len(grid), "runs": len(grid), "step": None, "total": None})
    return result


def format_sectors(result: Mapping[str, Any]) -> str:
    """Plain-text report: per run N*, then per head gates, sector energies, ΔK, nearest root, lag-1
    mass; then the verdict."""
    lines = []
    pred = result.get("prediction") or {}
    lines.append(f"prediction: {pred.get('class') or 'none'}" + (f" (period k = {pred['period']})" if pred.get("period") else ""))
    for r in result.get("runs", []):
        lines.append(f"\nλ={r['sparsity']:g} seed={r['seed']} lr={r['learning_rate']:g}: steps {r['steps']}, accuracy {r['accuracy']:.3f}, "
                     f"N* = {r['longest_perfect_length']}{' (longest)' if r['reached_longest'] else ''}")
        last = str(r["lag1_lengths"][-1])
        for h in r["heads"]:
            g = h["gates"]
            e = h["sector_energy"]
            roots = ", ".join(f"ω̃={f['folded']:.3f} → {f['a']}/{f['q']} (δ={f['delta']:.3f}"
                              + (f", FJ range {f['fj_range']:.2f}" if "fj_range" in f else "") + ")" for f in h["frequencies"])
            per_layer = h.get("layer") is not None
            lag = r["lag1_mass"][last][h["layer"]][h["head"]] if per_layer else max(layer[h["head"]] for layer in r["lag1_mass"][last])
            label = f"layer {h['layer']} head {h['head']}" if per_layer else f"head {h['head']}"
            lines.append(f"  {label}: gates FJ/A/LC {g['fj']:.2f}/{g['affine']:.2f}/{g['lc']:.2f}; energy "
                         f"{e['fj']:.2f}/{e['affine']:.2f}/{e['lc']:.2f}; ΔK {h['kernel_range']:.3g}; σ {h['effective_slope']:.3g}; "
                         f"{roots}; lag-1 mass (n={last}{'' if per_layer else ', max over layers'}) {lag:.2f}")
        drop = ", ".join(f"{s} {v:+.3f}" for s, v in r["loo_accuracy_drop"].items())
        lines.append(f"  accuracy drop when a sector is zeroed: {drop}")
        lines.append(f"  reading: {r['run_verdict']['text']}")
    v = result.get("verdict") or {}
    lines.append(f"\nverdict: {v.get('status')} — {v.get('text')}")
    return "\n".join(lines)
