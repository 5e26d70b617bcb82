"""Which variable of a program holds which node: the one place node ids get their names."""

from __future__ import annotations

from collections.abc import Mapping

from autodiff import NodeId, Tensor


def node_names(variables: Mapping[str, object]) -> dict[int, str]:
    """`{node id: variable name}` for every tracked tensor among `variables` (other values are skipped)."""
    return {
        int(value.node_id): name
        for name, value in variables.items()
        if isinstance(value, Tensor) and value.node_id is not None
    }


def node_name(node_id: int | NodeId, names: Mapping[int, str]) -> str:
    """`h (NodeId(2))` for a named node, `NodeId(7)` otherwise."""
    name = names.get(int(node_id))
    return f"{name} (NodeId({int(node_id)}))" if name else f"NodeId({int(node_id)})"
