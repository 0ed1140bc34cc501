"""The sweep on a Ray cluster: one Ray task per language (:func:`langclass.models.experiments.sweep.run_language`).

:func:`ray_sweep_runner` returns a :data:`~langclass.models.experiments.sweep.Runner` for
:func:`langclass.models.experiments.sweep.run_sweep`: every language not yet in the output directory becomes a
task (``num_cpus`` each); records are taken as they finish (``ray.wait``) and written by the driver,
so the output directory grows while the cluster works and a rerun resumes from it. A task lost with
its worker or node is retried by Ray (``max_retries``); if its result still cannot be fetched it is
submitted again, up to ``resubmits`` times, then the sweep fails naming the language — the pattern
of :mod:`langclass.app.execution.census_ray`, whose runtime environment (this checkout on the
workers' ``PYTHONPATH``, or ``working_dir``) it shares.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langclass.models.experiments.sweep import Runner, run_language

from .census_ray import connect, resilient_results

__all__ = ["ray_sweep_runner", "LanguageLost"]


class LanguageLost(RuntimeError):
    """A language's task was lost more often than the retries allow (the message names it and the last error)."""


def ray_sweep_runner(address: str | None, *, num_cpus: float = 1, max_retries: int = 3, resubmits: int = 3,
                     working_dir: str | None = None, init_kwargs: dict[str, Any] | None = None) -> Runner:
    """Connect to a Ray cluster and return a runner with one task per language.

    Args:
        address: ``"auto"``, ``"host:port"`` of a head node, or ``None`` for a fresh single-machine Ray.
        num_cpus: CPUs a language's task reserves (its torch threads; ``num_gpus`` via ``init_kwargs``'
            cluster resources is not reserved here).
        max_retries, resubmits, working_dir, init_kwargs: as :func:`langclass.app.execution.census_ray.ray_runner`.

    Raises:
        ImportError: Ray is not installed (``pip install 'langclass[ray]'``).
        ConnectionError: no cluster at ``address`` (Ray's error).
    """
    import ray

    connect(address, working_dir, init_kwargs)
    remote = ray.remote(num_cpus=num_cpus, max_retries=max_retries)(run_language)

    def run(todo: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]) -> Iterator[dict[str, Any]]:
        def lost(args: tuple[Any, ...], tries: int, err: Exception) -> Exception:
            return LanguageLost(f"the language {args[1]} (cell {args[0]}) was lost {tries + 1} times; last error: {err}")

        for _, out in resilient_results(remote, list(todo), resubmits, lost):
            yield out

    return run
