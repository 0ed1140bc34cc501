"""langclass: place a regular language in the logic/algebra hierarchy that decides transformer
expressivity, name the positional encoding that suffices, and confirm it on transformers.

The Python API (docs/python.md) is loaded on first use, so ``import langclass`` stays light (no
torch, FastAPI or SQLAlchemy)::

    import langclass
    r = langclass.classify("(ab)*", alphabet="ab")
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _dist_version

try:
    __version__: str = _dist_version("langclass")
    """The package version (pyproject's ``version``, read from the installed metadata); the one
    :func:`langclass.version.code_version` stamps on records and job results."""
except _NotInstalled:  # pragma: no cover - a bare source tree that was never installed
    __version__ = "0.0.0"

_API = ("classify", "construct", "train", "Classification", "RunResult")


def __getattr__(name: str):  # PEP 562: import the API lazily
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'langclass' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
