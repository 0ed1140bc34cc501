"""``langclass export-tlens``: a saved portable model → a TransformerLens ``HookedTransformer``, checked word by word.

Example::

    langclass export-tlens MODEL_DIR --out tl/ --check-length 8   # MODEL_DIR: from construct/train --save

Writes ``tl/tlens_config.json`` and ``tl/tlens_model.safetensors`` (docs/models.md, "TransformerLens
export") after comparing the export with the original on every word up to ``--check-length`` and
``--random-words`` random longer words; a model TransformerLens cannot represent exactly is refused
(exit 2, every reason named).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from langclass.core.base.errors import LangclassError, UnsupportedError
from .common import fail as _fail

__all__ = ["register", "export_tlens"]


def export_tlens(
    model_dir: Annotated[Path, typer.Argument(help="a model folder (config.json + model.safetensors) from construct/train --save")],
    out: Annotated[Path, typer.Option("--out", help="folder to write tlens_config.json and tlens_model.safetensors into")],
    n_ctx: Annotated[int, typer.Option("--n-ctx", help="context length in tokens, BOS/EOS included (2 … 65536)")] = 1024,
    check_length: Annotated[int, typer.Option("--check-length", min=0, help="compare on every word up to this length")] = 8,
    random_words: Annotated[int, typer.Option("--random-words", min=0, help="and on this many random longer words")] = 20,
    random_max_length: Annotated[int, typer.Option("--random-max-length", min=0, help="of length up to this (at most n_ctx − 2)")] = 64,
    as_json: Annotated[bool, typer.Option("--json", help="print the check as JSON")] = False,
) -> None:
    """Export a saved model to TransformerLens where it is exact; refuse (exit 2) naming what TL cannot represent."""
    from langclass.models.portable import tlens
    from langclass.models.portable.load import load_model

    try:
        model = load_model(model_dir)
        ht = tlens.to_hooked_transformer(model, n_ctx=n_ctx)
        check = tlens.check_export(model, ht, max_length=check_length, random_words=random_words,
                                   random_max_length=min(random_max_length, n_ctx - 2))
        if not check["decisions_equal"]:
            raise UnsupportedError(f"the export disagrees with the model on {check['disagreements'][0]['word']!r}",
                                   field="model", check=check)
        written = tlens.save_hooked_transformer(ht, out)
    except LangclassError as err:
        _fail(err, as_json)
    except FileNotFoundError as exc:
        from langclass.core.base.errors import InputError

        _fail(InputError(f"{exc.filename}: no such file (a model folder holds config.json and model.safetensors)", field="model_dir"), as_json)
    check["files"] = written
    if as_json:
        typer.echo(json.dumps(check, indent=2))
    else:
        typer.echo(f"exported to {out}: {check['words_checked']} words checked (all up to length {check['all_words_up_to']}, "
                   f"{check['random_words']} random up to {check['random_max_length']}), same decisions, "
                   f"max |logit difference| {check['max_abs_diff']:.3g}")


def register(app: typer.Typer) -> None:
    """Add the ``export-tlens`` command to the ``langclass`` CLI."""
    app.command("export-tlens")(export_tlens)
