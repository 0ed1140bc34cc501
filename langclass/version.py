"""The code version stamped on stored records and job results — one function for the whole package.

``code_version()`` = ``LANGCLASS_CODE_VERSION`` when set (e.g. at image build time), otherwise the
package version (``langclass.__version__`` when the package declares one, else the installed
distribution's metadata) followed by ``+g<commit>`` when the code runs from a git checkout. The
service (records, OpenAPI ``version``), the CLI (``classify --json``) and the job functions
(``result.code_version`` of train and construct jobs) all call it, so one build stamps one version.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
from pathlib import Path

__all__ = ["code_version", "package_version"]


def package_version() -> str:
    """The package version without the commit: ``langclass.__version__`` if declared, else the
    installed distribution's version, else ``0.0.0`` (a bare source tree)."""
    import langclass

    declared = getattr(langclass, "__version__", None)
    if declared:
        return str(declared)
    try:
        return importlib.metadata.version("langclass")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0.0.0"


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
