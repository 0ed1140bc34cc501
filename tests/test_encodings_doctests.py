"""The runnable examples in the docstrings of floats, numerics, tokens, encodings and the recognizer."""

from __future__ import annotations

import doctest

import pytest

import langclass.core.precision.floats
import langclass.core.precision.numerics
import langclass.models.nn.encodings
import langclass.models.nn.recognizer
import langclass.models.nn.tokens


@pytest.mark.parametrize("module", [langclass.core.precision.floats, langclass.core.precision.numerics, langclass.models.nn.tokens, langclass.models.nn.encodings,
                                    langclass.models.nn.recognizer], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
