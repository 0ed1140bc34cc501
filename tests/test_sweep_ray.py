"""The sweep through a local Ray cluster (one task per language): the same records as the local run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from langclass.core.automata.automaton import DFA
from langclass.models.experiments.sweep import run_sweep

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ROOT = str(Path(__file__).resolve().parents[1])
TINY = {"max_steps": 2, "eval_per_length": 2, "test_lengths": {"range": [41, 44]}, "train_lengths": {"range": [1, 8]}}


@pytest.fixture(scope="module")
def ray_local() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is a test dependency
        pytest.skip(f"ray is not installed: {exc}")
    try:
        ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}})
    except Exception as exc:  # pragma: no cover - environment without Ray support
        pytest.skip(f"a local Ray cluster could not start: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()


def _spec_for(dfa: DFA) -> dict[str, Any]:
    return {"language": dfa.to_canonical_dict(), "encodings": ["nope"],
            "prediction": {"sufficient": ["nope"], "per_encoding": {"nope": {"sufficient": True, "reason": "x"}}}}


def test_sweep_on_ray_equals_local(ray_local: Any, tmp_path: Path) -> None:
    from langclass.app.execution.sweep_ray import ray_sweep_runner

    langs = [("mod", DFA.from_table(["a", "b"], [[1, 0], [0, 1]], 0, acc), {"ltl_p": False}) for acc in ([0], [1])]
    remote = run_sweep(langs, _spec_for, tmp_path / "ray", overrides=TINY, runner=ray_sweep_runner(None))
    local = run_sweep(langs, _spec_for, tmp_path / "local", overrides=TINY)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("wall_s",)}  # noqa: E731
    assert [strip(r) for r in remote["records"]] == [strip(r) for r in local["records"]]
    assert len(list((tmp_path / "ray" / "languages").iterdir())) == 2
