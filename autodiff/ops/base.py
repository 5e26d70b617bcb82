"""`run_op`: run an op's forward on tensors and register its one step, in Burn's stages (`OpsPrep`).

1. *prepare*: the inputs' nodes, the output's order, which inputs are tracked;
2. *untracked*: no input is tracked, so the step only marks the node (`UntrackedOpsStep`); or
   *stateful*: the tracked inputs' rules and only the saved tensors they need (an operand is kept only
   when the other one is tracked), `memory_bound` (an elementwise op, whose output balanced checkpointing
   recomputes), and what the checkpointing strategy keeps;
3. *register*: the output's node, its value and its step go to the server.

The server sees nodes and buffers; the tensor is only the handle that holds the output's node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..errors import DeviceMismatchError
from ..graph import Node, NodeId, Op, Requirement, Rule, Step, UntrackedOpsStep

if TYPE_CHECKING:
    from ..backends.base import Buffer
    from ..device import Device

_UNTRACKED, _GRAD_IN_BACKWARD = Requirement.Untracked, Requirement.GradInBackward


class Operand(Protocol):
    """What `run_op` reads of a tensor, and how it makes the output (a tensor of the first input's type)."""

    data: Buffer
    device: Device
    node: Node | None

    def __init__(self, data: Buffer, device: Device, node: Node | None = None) -> None: ...


T = TypeVar("T", bound=Operand)


def run_op(op: Op, inputs: tuple[T, ...]) -> T:
    """Run `op` on `inputs` (tensors of one device); on an autodiff device, register its one step."""
    first = inputs[0]
    device = first.device
    values = tuple([t.data for t in inputs])
    out = op.forward(*values)
    server = device.server
    if server is None:  # a tensor has a node exactly when its device has a server
        return type(first)(out, device)
    nodes, order = _prepare(inputs)
    tracked = [k for k, n in enumerate(nodes) if n.requirement is not _UNTRACKED]
    if tracked:
        node, step = _stateful(op, server.new_node_id(), nodes, order, tracked, values, out)
        server.strategy.checkpoint(step, op, nodes, values)
    else:
        node = Node(server.new_node_id(), (), order, _UNTRACKED, memory_bound=not op.compute_bound)
        step = UntrackedOpsStep(node, op.name)
    output = type(first)(out, device, node)
    server.register(node, out, output, step, tuple([n.id for n in nodes]), op.forward)
    return output


def _prepare(inputs: tuple[Operand, ...]) -> tuple[tuple[Node, ...], int]:
    """The inputs' nodes, and the output's order: 1 + the highest order among them."""
    nodes = tuple([_node_of(t) for t in inputs])
    return nodes, max([n.order for n in nodes]) + 1


def _stateful(
    op: Op,
    node_id: NodeId,
    nodes: tuple[Node, ...],
    order: int,
    tracked: list[int],
    values: tuple[Buffer, ...],
    out: Buffer,
) -> tuple[Node, Step]:
    """The node and step of an op with a tracked input: the tracked inputs' rules, and the saved tensors they
    need. Every input tracked: memory-bound when elementwise (an untracked input cannot be checkpointed, so
    Burn then treats the op as compute-bound)."""
    every = len(tracked) == len(nodes)
    if every:
        parents, rules, needs = nodes, op.rules, op.needs
    else:
        parents, rules = tuple([nodes[k] for k in tracked]), tuple([op.rules[k] for k in tracked])
        needs = tuple(dict.fromkeys(source for k in tracked for source in op.sources[k]))
    shapes = tuple([values[k].array.shape for k in tracked])
    node = Node(node_id, parents, order, _GRAD_IN_BACKWARD, memory_bound=every and not op.compute_bound)
    saved = {name: out if source < 0 else values[source] for name, source in needs}
    return node, Step(node, op.name, rules, shapes, saved)


def _node_of(tensor: Operand) -> Node:
    if tensor.node is None:  # inputs share a device, so a server means every input has a node
        raise DeviceMismatchError("A tensor without a graph node was combined with tensors of an autodiff device.")
    return tensor.node


def unary(
    name: str, forward: Callable[[Buffer], Buffer], rule_text: str, rule: Callable[[Buffer, Buffer], Buffer]
) -> Op:
    """A one-input op whose rule reads its input: `rule(grad, x)` (the input `x` is saved for backward)."""
    return Op(name, forward, (Rule(rule_text, lambda g, s: rule(g, s["x"]), ("x",)),))
