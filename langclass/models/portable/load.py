"""Load a portable model directory inside langclass: the runner's loader, its refusals as LangclassErrors."""

from __future__ import annotations

import os
from typing import Any

from langclass.core.base.errors import ModelFileError
from langclass.models.portable import runner as R

__all__ = ["load_model", "PortableTransformer"]

PortableTransformer = R.PortableTransformer


def load_model(directory: str | os.PathLike, *, max_parameters: int = R.MAX_PARAMETERS, verify_digests: bool = True) -> Any:
    """Load a model saved by ``langclass construct --save`` / ``train --save`` / :func:`~langclass.models.portable.export.save_model`.

    Returns:
        A :class:`~langclass.models.portable.runner.PortableTransformer` (a ``torch.nn.Module``):
        ``forward(ids int64 [batch, seq], valid bool [batch, seq])`` → accept logits ``[batch]``;
        ``logits(words)`` → ``[len(words)]`` float64; ``classify(words)`` → accept decisions
        (logit > ``threshold``); ``hidden(ids, valid)`` → the residual stream ``[batch, seq, d_model]``;
        ``encode(words)`` → ``(ids, valid)``; ``config`` the parsed JSON (with ``provenance``).

    Raises:
        ModelFileError: the config or the weights are malformed, inconsistent with each other,
            changed after saving (digests), or over ``max_parameters``; ``extra['error']`` names the
            runner's error class. Nothing in the files is executed (JSON and safetensors only).
        FileNotFoundError: ``config.json`` or ``model.safetensors`` is missing.
    """
    try:
        return R.load(os.fspath(directory), max_parameters=max_parameters, verify_digests=verify_digests)
    except R.ModelFileError as exc:
        raise ModelFileError(str(exc), field="model", error=type(exc).__name__) from None
