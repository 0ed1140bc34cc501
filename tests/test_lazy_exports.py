"""The packages that re-export names lazily (issue 31): documented short paths resolve to the
moved modules' objects, unknown names fail naming the module, and nothing heavy loads early."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("package", "name", "module"), [
    ("langclass.core.census", "census", "langclass.core.census.run"),
    ("langclass.core.drawing", "dfa_svg", "langclass.core.drawing.svg"),
    ("langclass.core.drawing", "eggbox", "langclass.core.drawing.svg"),
    ("langclass.models.construct", "plan_formula", "langclass.models.construct.plan"),
    ("langclass.models.construct", "run_construction", "langclass.models.construct.verify"),
    ("langclass.models", "Vocabulary", "langclass.models.nn.tokens"),
])
def test_short_path_is_the_moved_object(package: str, name: str, module: str) -> None:
    import importlib

    pkg, mod = importlib.import_module(package), importlib.import_module(module)
    assert getattr(pkg, name) is getattr(mod, name)
    assert name in dir(pkg)


def test_unknown_name_names_the_package() -> None:
    import langclass.core.census as pkg

    with pytest.raises(AttributeError, match="langclass.core.census.*no_such_name"):
        pkg.no_such_name  # noqa: B018


def test_short_paths_load_nothing_heavy_until_used() -> None:
    code = ("import sys, langclass.core.census, langclass.core.drawing, langclass.models.construct; "
            "print(' '.join(m for m in ('torch', 'langclass.core.census.run', 'langclass.core.drawing.svg') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == []
