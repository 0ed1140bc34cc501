"""langclass: place a regular language in the logic/algebra hierarchy that decides transformer
expressivity, name the positional encoding that suffices, and confirm it on transformers.

The Python API (docs/python.md) is loaded on first use, so ``import langclass`` stays light (no
torch, FastAPI or SQLAlchemy)::

    import langclass
    r = langclass.classify("(ab)*", alphabet="ab")
"""

from .version import __version__  # the package version, one declaration (langclass/version.py)

_API = ("classify", "construct", "train", "sweep", "load_model", "Classification", "RunResult", "from_automata_lib",
        "to_automata_lib")


def __getattr__(name: str):  # PEP 562: import the API lazily
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'langclass' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
