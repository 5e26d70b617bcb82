"""Async code run from a test, whatever the test's own thread holds."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


def run_apart(main: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run(main)` on a thread of its own: a browser test earlier in the session (Playwright's sync API) may
    have left an event loop running on this one."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(anyio.run(main))
        except BaseException as error:  # handed back to the test's thread
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]
