"""Reading back what a construct record stores: its ``formula`` and its B-RASP ``program``.

A synthesized formula or program can be longer than user input may be (the local-divisor formula of
(a(ab)*b)* is 10,545 characters, one of issue 38's scan 106k, against ``max_regex_length`` = 10⁴),
so the product reads its own texts under :func:`~langclass.core.base.limits.readback_limits`; the
record holds a text only when it fits them (longer ones are recorded as None), so every recorded
text can be read back. ``plan_formula`` and ``build_formula_transformer`` read a formula given as
text the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langclass.core.base.errors import InputError
from langclass.core.base.limits import readback_limits
from langclass.core.logic import formulas as F
from langclass.core.logic.brasp import Program, parse_program

__all__ = ["recorded_formula", "recorded_program"]


def _text(record: Mapping[str, Any], key: str) -> tuple[str | None, list[str]]:
    if not isinstance(record, Mapping) or not isinstance(record.get("alphabet"), list):
        raise InputError("a construct record (with its alphabet) is expected", field="record")
    text = record.get(key)
    if text is not None and not isinstance(text, str):
        raise InputError(f"the record's {key} is not text", field=f"record.{key}")
    return text, record["alphabet"]


def recorded_formula(record: Mapping[str, Any]) -> F.Formula | None:
    """The formula of a construct record (None when it has none).

    Raises:
        InputError: not a construct record; FormulaSyntaxError: a text the product did not write.
    """
    text, alphabet = _text(record, "formula")
    return None if text is None else F.parse_formula(text, alphabet, readback_limits())


def recorded_program(record: Mapping[str, Any]) -> Program | None:
    """The B-RASP program of a hard-attention construct record (None when it has none).

    Raises:
        InputError: not a construct record; ProgramSyntaxError: a text the product did not write.
    """
    text, alphabet = _text(record, "program")
    return None if text is None else parse_program(text, alphabet, readback_limits())
