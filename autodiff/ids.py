"""Node identifiers: the one engine type every layer names (observers included)."""

from __future__ import annotations


class NodeId(int):
    """Identifier of a node, from a counter owned by the device's server."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodeId({int(self)})"

    __str__ = __repr__
