"""The runnable examples in the docstrings of floats, numerics, tokens, encodings and the recognizer."""

from __future__ import annotations

import doctest

import pytest

import langclass.core.floats
import langclass.core.numerics
import langclass.models.encodings
import langclass.models.recognizer
import langclass.models.tokens


@pytest.mark.parametrize("module", [langclass.core.floats, langclass.core.numerics, langclass.models.tokens, langclass.models.encodings,
                                    langclass.models.recognizer], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
