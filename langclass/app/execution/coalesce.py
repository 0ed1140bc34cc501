"""Identical requests in flight share one computation.

Forty clients posting the same classification at once should cost one worker call, not forty
admissions of which most are refused with 503 ``busy``: :class:`InFlight` runs the first caller of a
key (the *leader*) and makes every caller that arrives with the same key while it runs (a
*follower*) wait for the leader's outcome — its result, or the very error it raised (a limit, a
syntax error, ``busy``). A follower never starts a computation of its own unless the leader was
cancelled (its client went away), in which case the followers compute it again, one of them as the
new leader. Runs on the event loop (no locks: one task at a time touches the table).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

__all__ = ["InFlight"]

T = TypeVar("T")


class _Call:
    __slots__ = ("done", "result", "error", "finished")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = False  # the leader ended with a result or an Exception (not cancelled)


class InFlight:
    """Coalesces identical in-flight calls (see the module docstring).

    Attributes:
        leaders: calls that computed (one per distinct key in flight at a time).
        followers: calls answered by another call's computation.
        waiting: followers waiting now.
    """

    def __init__(self) -> None:
        self._calls: dict[Any, _Call] = {}
        self.leaders = 0
        self.followers = 0
        self.waiting = 0

    def in_flight(self) -> int:
        """Distinct keys being computed now."""
        return len(self._calls)

    async def run(self, key: Any, compute: Callable[[], Awaitable[T]]) -> T:
        """``await compute()``, or the outcome of the call already computing ``key``.

        Args:
            key: a hashable request key; ``None`` never coalesces.
            compute: the computation (awaited by the leader only).

        Raises:
            whatever ``compute`` raised, in the leader and in every follower.
        """
        if key is None:
            return await compute()
        while True:
            call = self._calls.get(key)
            if call is None:
                break
            self.waiting += 1
            try:
                await call.done.wait()
            finally:
                self.waiting -= 1
            if call.finished:
                self.followers += 1
                if call.error is not None:
                    raise call.error
                return call.result  # type: ignore[no-any-return]
            # the leader was cancelled: compute it again (the first follower to get here leads)
        call = self._calls[key] = _Call()
        self.leaders += 1
        try:
            call.result = await compute()
            call.finished = True
            return call.result  # type: ignore[no-any-return]
        except Exception as exc:
            call.error, call.finished = exc, True
            raise
        finally:
            del self._calls[key]
            call.done.set()
