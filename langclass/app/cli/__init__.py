"""Stage 4 of app — cli: the ``langclass`` command line and batch classification; imports use cases and below.

``langclass.app.cli:main`` (the console script) is :func:`langclass.app.cli.commands.main`, loaded on
first use so that importing a subcommand module does not load every command.
"""

from __future__ import annotations


def __getattr__(name: str):  # PEP 562: the entry point without importing every command up front
    if name == "main":
        from .commands import main

        return main
    raise AttributeError(f"module 'langclass.app.cli' has no attribute {name!r}")
