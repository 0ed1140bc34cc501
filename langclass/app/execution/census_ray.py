"""The census on a Ray cluster: one Ray task per shard (a table prefix, :func:`langclass.core.census.run.shards`).

:func:`ray_runner` returns a :data:`~langclass.core.census.run.ShardRunner` for
:func:`langclass.core.census.run.census`: every shard not yet in the checkpoint becomes a task
(``num_cpus=1``); results are taken as they finish (``ray.wait``), so the checkpoint grows while the
cluster works. A task lost with its worker or node is retried by Ray (``max_retries``, system
failures); if its result still cannot be fetched (the retries ran out, or the object was lost with
its node) the shard is submitted again, up to ``resubmits`` times, then the run fails naming the
shard. A shard's counts do not depend on where or how often it ran, so the totals equal a local run's.

Workers must import the same langclass: the task runtime environment puts this checkout's root on
``PYTHONPATH`` (enough for a cluster on this machine or a shared file system; on a real cluster
install the same langclass version on every node, or pass ``working_dir``; docs/census.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langclass.core.census.run import Shard, ShardResult, ShardRunner, run_shard

__all__ = ["ray_runner", "ShardLost", "package_root", "connect", "resilient_results"]


class ShardLost(RuntimeError):
    """A shard's task failed more often than the retries allow (the message names the shard and the last error)."""


def package_root() -> str:
    """The folder that holds the ``langclass`` package this process imports (what workers need on ``PYTHONPATH``)."""
    return str(Path(__file__).resolve().parents[3])  # langclass/app/execution/census_ray.py


def connect(address: str | None, working_dir: str | None = None, init_kwargs: dict[str, Any] | None = None) -> None:
    """``ray.init`` (unless already connected) with the workers' runtime environment: this checkout on
    ``PYTHONPATH``, or ``working_dir`` shipped to them (module docstring)."""
    import ray

    env: dict[str, Any] = {"working_dir": working_dir} if working_dir else {
        "env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (package_root(), os.environ.get("PYTHONPATH", "")) if p)}}
    if not ray.is_initialized():
        ray.init(address=address, runtime_env=env, log_to_driver=False, **(init_kwargs or {}))


def resilient_results(remote: Any, todo: list[tuple[Any, ...]], resubmits: int,
                      lost: Callable[[tuple[Any, ...], int, Exception], Exception]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Submit ``remote(*args)`` for every ``args`` of ``todo`` and yield ``(args, result)`` as each finishes.

    A task whose result cannot be fetched (worker or node died, object lost) is submitted again, up to
    ``resubmits`` times; then ``lost(args, tries, error)`` is raised. A task that failed in its own code
    (``RayTaskError``) is not retried: it would fail the same way. Tasks not finished when the consumer
    stops are cancelled."""
    import ray

    refs = {remote.remote(*args): (args, 0) for args in todo}
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            args, tries = refs.pop(ready[0])
            try:
                out = ray.get(ready[0])
            except ray.exceptions.RayTaskError:
                raise  # the computation itself failed: running it again gives the same error
            except ray.exceptions.RayError as err:  # worker or node died, object lost, ...
                if tries >= resubmits:
                    raise lost(args, tries, err) from err
                refs[remote.remote(*args)] = (args, tries + 1)
                continue
            yield args, out
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)


def _task(shard: Shard, keys: tuple[str, ...]) -> dict[str, Any]:
    r = run_shard(shard, keys)
    return {"counts": r.to_dict(), "members": r.members_arrays()}  # plain dict + numpy arrays: cheap to pickle


def ray_runner(address: str | None, *, max_retries: int = 3, resubmits: int = 3, working_dir: str | None = None,
               init_kwargs: dict[str, Any] | None = None) -> tuple[ShardRunner, int]:
    """Connect to a Ray cluster and return ``(runner, CPUs of the cluster)``.

    Args:
        address: ``"auto"`` (the cluster of ``RAY_ADDRESS`` or the one started on this machine),
            ``"host:port"`` of a head node, or ``None`` for a fresh single-machine Ray.
        max_retries: Ray's retries of a task whose worker or node died.
        resubmits: further submissions of a shard whose result could not be fetched.
        working_dir: ship this folder to the workers (Ray ``runtime_env`` ``working_dir``) instead of
            putting this checkout on ``PYTHONPATH``.
        init_kwargs: extra ``ray.init`` arguments.

    Raises:
        ImportError: Ray is not installed (``pip install 'langclass[ray]'``).
        ConnectionError: no cluster at ``address`` (Ray's error).
    """
    import ray

    connect(address, working_dir, init_kwargs)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    remote = ray.remote(num_cpus=1, max_retries=max_retries)(_task)

    def run(todo: list[Shard], keys: tuple[str, ...]) -> Iterator[ShardResult]:
        def lost(args: tuple[Any, ...], tries: int, err: Exception) -> Exception:
            return ShardLost(f"shard {args[0].id} was lost {tries + 1} times; last error: {err}")

        for _, out in resilient_results(remote, [(s, keys) for s in todo], resubmits, lost):
            yield ShardResult.from_dict(out["counts"]).with_members(out["members"])

    return run, cpus
