"""Worker processes that die with their parent.

A worker process left behind by a parent that was killed (``kill -9`` of ``langclass classify
--batch``, of ``langclass serve``) keeps computing, or blocks for ever on a pipe that a sibling
still holds open, with nobody to stop it. :func:`die_with_parent`, called first thing in a worker,
ends the worker as soon as its parent is gone:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (through ``ctypes``): the kernel kills the worker
  when the *thread* that forked it exits — right for workers forked by a main thread that lives as
  long as the parent (``concurrent.futures`` pools), so ``pdeathsig=True`` there;
* everywhere, a daemon thread that watches the parent's pid every ``interval_s`` seconds and exits
  the process (``os._exit``) once the worker has been re-parented (for workers started from
  short-lived threads, such as the classification pool's replacements, where ``PR_SET_PDEATHSIG``
  would kill the worker when that thread ends).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent", "PR_SET_PDEATHSIG"]

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal the calling process gets when its parent thread dies (linux/prctl.h)."""


def _set_pdeathsig(sig: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)``; False where unavailable (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return False


def die_with_parent(parent_pid: int | None = None, *, pdeathsig: bool = False, interval_s: float = 0.5) -> None:
    """Make the calling (worker) process end when its parent ``parent_pid`` (default: the current
    parent) is gone — see the module docstring.

    Args:
        parent_pid: the parent's pid as the parent saw it (pass ``os.getpid()`` of the parent, so a
            parent that died before this call is noticed at once).
        pdeathsig: also ask the kernel for SIGKILL at the parent thread's exit (Linux).
        interval_s: how often the watch thread looks (seconds).
    """
    parent = os.getppid() if parent_pid is None else parent_pid
    if pdeathsig:
        _set_pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the lifeline was in place
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="langclass-lifeline", daemon=True).start()
