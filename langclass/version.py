"""The code version stamped on stored records and job results — one function for the whole package.

``code_version()`` = ``LANGCLASS_CODE_VERSION`` when set (e.g. at image build time), otherwise the
package version (:data:`__version__`, re-exported as ``langclass.__version__``) followed by ``+g<commit>`` when the code runs from a git checkout. The
service (records, OpenAPI ``version``), the CLI (``classify --json``) and the job functions
(``result.code_version`` of train and construct jobs) all call it, so one build stamps one version.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
from pathlib import Path

__all__ = ["__version__", "code_version", "package_version"]


def _distribution_version() -> str:
    try:
        return importlib.metadata.version("langclass")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a bare source tree never installed
        return "0.0.0"


__version__: str = _distribution_version()
"""The package version (pyproject's ``version``, from the installed metadata); ``langclass.__version__``
re-exports it, so this module never imports the package root (it sits below every layer)."""


def package_version() -> str:
    """The package version without the commit: :data:`__version__`."""
    return __version__


@functools.lru_cache(maxsize=1)
def _from_checkout() -> str:
    version = package_version()
    root = Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        try:
            sha = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5, check=False
            ).stdout.strip()
            if sha:
                version = f"{version}+g{sha}"
        except (OSError, subprocess.SubprocessError):
            pass
    return version


def code_version() -> str:
    """The version stamped on every stored record and job result (see the module docstring)."""
    return os.environ.get("LANGCLASS_CODE_VERSION") or _from_checkout()
