"""Lazy re-exports of a package's public names (PEP 562), one implementation for every package.

A package that re-exports names of its submodules without importing them at start-up (so that,
e.g., importing a plan module loads no torch) calls :func:`lazy_exports` once::

    __getattr__, __dir__ = lazy_exports(__name__, {"census": "run", "Census": "run"})

The first access of ``package.census`` imports ``package.run`` and caches the name in the package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose names ``exports`` maps to submodules.

    Args:
        package: the package's ``__name__``.
        exports: public name → submodule path relative to the package (``"run"``, ``"nn.attention"``).

    Returns:
        the module-level ``__getattr__`` (raises ``AttributeError`` naming the module for any other
        name) and ``__dir__`` (the module's globals and every exported name).
    """
    table = dict(exports)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
