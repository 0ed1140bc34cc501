"""Transformer models (PyTorch), one package per stage of the data flow, imports pointing down:

* :mod:`~langclass.models.nn` — the transformer itself: tokens, positional encodings, attention, the
  recognizer and its grouped (stacked) form. Imports only :mod:`langclass.core` and :mod:`langclass.version`.
* :mod:`~langclass.models.construct` — exact transformers built from automata, formulas and programs:
  plans, assembly, route choice, verification. Imports :mod:`~langclass.models.nn`.
* :mod:`~langclass.models.training` — data, job specs, footprints, the trainers and evaluation.
  Imports :mod:`~langclass.models.nn`.
* :mod:`~langclass.models.experiments` — experiments, sweeps, sectors and their reports. Imports
  :mod:`~langclass.models.training` and :mod:`~langclass.models.nn`.

Public entry points: :class:`~langclass.models.nn.recognizer.Recognizer` with
:class:`~langclass.models.nn.recognizer.RecognizerConfig`, :func:`~langclass.models.nn.encodings.make_encoding`,
:class:`~langclass.models.nn.tokens.Vocabulary`. Nothing here imports :mod:`langclass.app`.
"""

from langclass.core.base.lazy import lazy_exports

# Imported lazily (PEP 562), so that torch-free submodules such as ``langclass.models.training.specs`` (the
# job-spec models the API validates with) can be imported without loading torch.
_EXPORTS = {
    "MultiHeadAttention": "nn.attention", "hard_attention_weights": "nn.attention", "stable_softmax": "nn.attention",
    "visibility": "nn.attention", "ENCODING_FAMILIES": "nn.encodings", "PositionalEncoding": "nn.encodings",
    "make_encoding": "nn.encodings", "Recognizer": "nn.recognizer", "RecognizerConfig": "nn.recognizer",
    "BOS": "nn.tokens", "EOS": "nn.tokens", "PAD": "nn.tokens", "Batch": "nn.tokens", "Vocabulary": "nn.tokens",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "BOS", "EOS", "PAD", "Batch", "Vocabulary",
    "ENCODING_FAMILIES", "PositionalEncoding", "make_encoding",
    "MultiHeadAttention", "hard_attention_weights", "stable_softmax", "visibility",
    "Recognizer", "RecognizerConfig",
]
