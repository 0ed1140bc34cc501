"""``langclass sectors``: PJ-RoPE sector discovery for one language, in the foreground.

::

    langclass sectors --regex '(aa)*' --alphabet ab                       # quick profile, seed 0
    langclass sectors --regex '(a|b|c)*a' --alphabet abc --seed 0 --seed 1 --plot sectors.png
    langclass sectors --regex 'a(a|b)*' --alphabet ab --sparsity 0 --sparsity 0.01 --json

The language is classified first; the class gives the prediction (LTL[P]: no positional sector;
LTL[P,MOD] with period k: roots of order dividing k; LTL[P,Y]: an affine/recency head). PJ-bias
recognizers (*PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*) are trained
with the length-generalization protocol, and the per-head roots, sector energies, lag-1 mass and
the verdict are printed (:mod:`langclass.models.experiments.sectors`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from langclass.core.base.errors import InputError, LangclassError

__all__ = ["register", "sectors"]


def _json_pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"{what} {item!r}: expected KEY=VALUE", field=what.lstrip("-"))
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def sectors(
    regex: Annotated[Optional[str], typer.Option("--regex", "-r", help="regex over the alphabet")] = None,
    alphabet: Annotated[Optional[str], typer.Option("--alphabet", "-a", help="'ab' = {a,b}; 'x1,x2' for longer symbols")] = None,
    dfa: Annotated[Optional[Path], typer.Option("--dfa", help="DFA JSON file ('-' = standard input)")] = None,
    profile: Annotated[str, typer.Option(help="quick (2-core CPU) or paper (App. E.2)")] = "quick",
    seed: Annotated[Optional[list[int]], typer.Option("--seed", help="training seed (repeat; default: the profile's)")] = None,
    lr: Annotated[Optional[list[float]], typer.Option("--lr", help="learning rate (repeat; default: the profile's)")] = None,
    sparsity: Annotated[Optional[list[float]], typer.Option("--sparsity", help="λ of the sparsity prior (repeat; default 0, or 0 0.001 0.01 for LTL[P])")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="training step budget per run")] = None,
    test_lengths: Annotated[Optional[str], typer.Option(help="'41..100' = every length 41 to 100 (':STEP' adds a step); '41,60,100' = exactly those")] = None,
    pj: Annotated[Optional[list[str]], typer.Option("--pj", help="pj_bias parameter KEY=JSON, e.g. max_order=1 (repeat)")] = None,
    override: Annotated[Optional[list[str]], typer.Option("--set", help="profile override KEY=JSON, e.g. d_model=64 (repeat)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the full JSON result instead of the report")] = False,
    save: Annotated[Optional[Path], typer.Option("--save", help="also write the full JSON result to this file")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="write K_h(d) per head and the gates as PNG")] = None,
) -> None:
    """Train PJ-bias recognizers and report which position sectors they select, against the classification."""
    from langclass.models.experiments.sectors import run_sectors, validate_sectors_spec
    from .jobs import _analysis, _language, _run_with_progress, parse_lengths
    from langclass.app.usecases.experiments import sector_prediction
    from langclass.app.settings import get_settings

    limits = get_settings().limits()
    try:
        lang = _language(regex, alphabet, dfa, limits)
        overrides = _json_pairs(override, "--set")
        if max_steps is not None:
            overrides["max_steps"] = max_steps
        if test_lengths is not None:
            overrides["test_lengths"] = parse_lengths(test_lengths)
        from langclass.core.automata.export import dfa_to_json

        spec: dict[str, Any] = {"language": dfa_to_json(lang), "profile": profile, "prediction": sector_prediction(_analysis(lang, limits)),
                                "pj": _json_pairs(pj, "--pj")}
        if overrides:
            spec["overrides"] = overrides
        if seed:
            spec["seeds"] = list(seed)
        if lr:
            spec["learning_rates"] = list(lr)
        if sparsity:
            spec["sparsity"] = list(sparsity)
        validate_sectors_spec(spec)
    except LangclassError as err:
        where = f" [{err.field}]" if err.field else ""
        typer.echo(f"error ({err.code}){where}: {err.detail}", err=True)
        raise typer.Exit(code=2) from None
    result, cancelled = _run_with_progress(spec, quiet=as_json, runner=run_sectors)
    if result is None:
        raise typer.Exit(code=130)
    if save is not None:
        save.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    if plot is not None and result.get("runs"):
        from langclass.app.usecases.plot_sectors import plot_sectors

        plot.write_bytes(plot_sectors(result))
    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    else:
        from langclass.models.experiments.sectors import format_sectors

        typer.echo(format_sectors(result))
    if cancelled:
        raise typer.Exit(code=130)


def register(app: typer.Typer) -> None:
    """Add ``sectors`` to the ``langclass`` command line."""
    app.command("sectors")(sectors)
