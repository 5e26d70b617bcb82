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
from typing import TYPE_CHECKING, NoReturn, Protocol, TypeVar

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
    # nearly every op has one or two inputs: gathered without a loop or a call (every op runs through here)
    n = len(inputs)
    values = (first.data,) if n == 1 else (first.data, inputs[1].data) if n == 2 else tuple([t.data for t in inputs])
    out = op.forward(*values)
    server = device.server
    if server is None:  # a tensor has a node exactly when its device has a server
        return type(first)(out, device)
    if n == 1:  # nearly every op: prepared here, without a call
        a = first.node or _no_node()
        nodes: tuple[Node, ...] = (a,)
        order = a.order + 1
        tracked = _FIRST if a.requirement is not _UNTRACKED else ()
    elif n == 2:
        a, b = first.node or _no_node(), inputs[1].node or _no_node()
        nodes = (a, b)
        order = (a.order if a.order > b.order else b.order) + 1
        tracked = _TRACKED[a.requirement is not _UNTRACKED, b.requirement is not _UNTRACKED]
    else:
        nodes, order, tracked = _prepare(inputs)
    shape = out.array.shape
    if shape == nodes[0].shape:  # most ops keep their first input's shape: its tuple, one object fewer per op
        shape = nodes[0].shape
    node_id = server.next_id  # `server.new_node_id()` without the call: every op runs through here
    server.next_id = node_id + 1
    if not tracked:
        node = Node(node_id, (), order, _UNTRACKED, shape, not op.compute_bound)
        step: Step = UntrackedOpsStep(node, op.name)
    elif len(tracked) == n:  # every input tracked: the op's own rules, and every saved tensor they need
        node = Node(node_id, nodes, order, _GRAD_IN_BACKWARD, shape, not op.compute_bound)
        step = Step(node, op.name, op.rules)
        for name, source in op.needs:  # the tensors the rules read
            step[name] = out if source < 0 else values[source]
    else:
        node, step = _partly_tracked(node_id, op, nodes, order, tracked, values, out, shape)
    if tracked and server.strategy.keeps_recipes:
        server.strategy.checkpoint(step, op, nodes, values)
    output = type(first)(out, device, node)
    server.register(node, out, output, step, nodes, op.forward)
    return output


_FIRST: tuple[int, ...] = (0,)


# which of two inputs are tracked, by (first tracked, second tracked)
_TRACKED: dict[tuple[bool, bool], tuple[int, ...]] = {
    (True, True): (0, 1),
    (True, False): (0,),
    (False, True): (1,),
    (False, False): (),
}


def _prepare(inputs: tuple[Operand, ...]) -> tuple[tuple[Node, ...], int, tuple[int, ...]]:
    """The inputs' nodes, the output's order (1 + the highest order among them) and which inputs are tracked (three
    inputs or more: one and two are prepared in `run_op`)."""
    nodes = tuple([t.node or _no_node() for t in inputs])
    tracked = tuple([k for k, n in enumerate(nodes) if n.requirement is not _UNTRACKED])
    return nodes, max([n.order for n in nodes]) + 1, tracked


def _partly_tracked(
    node_id: NodeId,
    op: Op,
    nodes: tuple[Node, ...],
    order: int,
    tracked: tuple[int, ...],
    values: tuple[Buffer, ...],
    out: Buffer,
    shape: tuple[int, ...],
) -> tuple[Node, Step]:
    """Some inputs untracked: the node's parents are the tracked ones, the step has their rules and keeps only the
    saved tensors those need (an operand is kept only when the other one is tracked). Compute-bound whatever the
    op: an untracked input cannot be checkpointed, so Burn treats the op as compute-bound."""
    node = Node(node_id, tuple([nodes[k] for k in tracked]), order, _GRAD_IN_BACKWARD, shape)
    step = Step(node, op.name, tuple([op.rules[k] for k in tracked]))
    for name, source in dict.fromkeys(source for k in tracked for source in op.sources[k]):
        step[name] = out if source < 0 else values[source]
    return node, step


def _no_node() -> NoReturn:
    # inputs share a device, so a server means every input has a node
    raise DeviceMismatchError("A tensor without a graph node was combined with tensors of an autodiff device.")


def unary(
    name: str,
    forward: Callable[[Buffer], Buffer],
    rule_text: str,
    rule: Callable[[Buffer, dict[str, Buffer]], Buffer],
) -> Op:
    """A one-input op whose rule reads its input, saved for backward as `s["x"]` (as Burn's: the input is kept,
    what the rule needs of it is recomputed)."""
    return Op(name, forward, (Rule(rule_text, rule, ("x",)),))
