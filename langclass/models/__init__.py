"""Transformer models (PyTorch): tokens, positional encodings, attention, the recognizer.

Public entry points: :class:`~langclass.models.recognizer.Recognizer` with
:class:`~langclass.models.recognizer.RecognizerConfig`, :func:`~langclass.models.encodings.make_encoding`,
:class:`~langclass.models.tokens.Vocabulary`. Nothing here imports :mod:`langclass.app`.
"""

from importlib import import_module
from typing import Any

# Imported lazily (PEP 562), so that torch-free submodules such as ``langclass.models.specs`` (the
# job-spec models the API validates with) can be imported without loading torch.
_EXPORTS = {
    "MultiHeadAttention": "attention", "hard_attention_weights": "attention", "stable_softmax": "attention",
    "visibility": "attention", "ENCODING_FAMILIES": "encodings", "PositionalEncoding": "encodings",
    "make_encoding": "encodings", "Recognizer": "recognizer", "RecognizerConfig": "recognizer",
    "BOS": "tokens", "EOS": "tokens", "PAD": "tokens", "Batch": "tokens", "Vocabulary": "tokens",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BOS", "EOS", "PAD", "Batch", "Vocabulary",
    "ENCODING_FAMILIES", "PositionalEncoding", "make_encoding",
    "MultiHeadAttention", "hard_attention_weights", "stable_softmax", "visibility",
    "Recognizer", "RecognizerConfig",
]
