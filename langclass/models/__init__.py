"""Transformer models (PyTorch): tokens, positional encodings, attention, the recognizer.

Public entry points: :class:`~langclass.models.recognizer.Recognizer` with
:class:`~langclass.models.recognizer.RecognizerConfig`, :func:`~langclass.models.encodings.make_encoding`,
:class:`~langclass.models.tokens.Vocabulary`. Nothing here imports :mod:`langclass.app`.
"""

from .attention import MultiHeadAttention, hard_attention_weights, stable_softmax, visibility
from .encodings import ENCODING_FAMILIES, PositionalEncoding, make_encoding
from . import pj as _pj  # noqa: F401  (registers the pj_bias and pj_rotary families)
from .recognizer import Recognizer, RecognizerConfig
from .tokens import BOS, EOS, PAD, Batch, Vocabulary

__all__ = [
    "BOS", "EOS", "PAD", "Batch", "Vocabulary",
    "ENCODING_FAMILIES", "PositionalEncoding", "make_encoding",
    "MultiHeadAttention", "hard_attention_weights", "stable_softmax", "visibility",
    "Recognizer", "RecognizerConfig",
]
