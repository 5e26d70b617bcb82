"""Node identifiers: the one engine type every layer names (observers included)."""

from __future__ import annotations


class NodeId(int):
    """Identifier of a node, from a counter owned by the device's server, shown as `NodeId(3)`.

    The server counts with plain ints, typed as `NodeId`: an int is not an object the cyclic collector walks,
    and a graph of 5,000 ops waiting for its backward is walked often. An id handed to a person is this class
    (`Tensor.node_id`, `Gradients`' ids, an error), so it prints as Burn's does; either one is the same key.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodeId({int(self)})"

    __str__ = __repr__
