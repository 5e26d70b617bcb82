"""What made each node: the program's own structure (loops and their iterations, the functions on the call stack,
explicit scopes), recorded for the pictures so that a big graph folds into the parts a student wrote.

A node's `group` is a path of `GroupFrame`s, outermost first. Recording costs nothing unless a device keeps
values for pictures (`Device.autodiff(keep_values=True)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GroupKind = Literal["function", "loop", "iteration", "scope"]


@dataclass(frozen=True, slots=True)
class GroupFrame:
    """One level of what made a node. Consecutive nodes whose frames at a depth have the same `key` belong to one
    group there (one call, one iteration, one `with scope(...)` block)."""

    kind: GroupKind
    name: str  # what its box says: `layer1`, `lambda`, `for i in range(30)`, `i = 3`, `layer 1`
    key: str  # identity of this instance: two calls of one function, or two iterations, differ


GroupPath = tuple[GroupFrame, ...]
