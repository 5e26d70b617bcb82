"""What a node is called in the pictures: the variable it was assigned to, else its expression in the program's
own terms (`x·x`, `x·3`, `h + x·3`, `tanh(w @ x + b)`), derived from the recorded ops. The one place node ids get
their names."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autodiff import NodeId, NodeSnapshot, Tensor

MAX_OPERAND = 18  # an operand whose expression is longer is written `…` (the edge into the node shows which it is)
ELIDED = "…"
MAX_EXPRESSION = 32

# binding strength: a weaker operand is parenthesised
ATOM, PRODUCT, SUM = 3, 2, 1
BINARY = {
    "add": (" + ", SUM),
    "sub": (" − ", SUM),
    "mul": ("·", PRODUCT),
    "div": (" / ", PRODUCT),
    "matmul": (" @ ", PRODUCT),
}
SCALAR = {
    "add_scalar": ("{x} + {c}", SUM),
    "sub_scalar": ("{x} − {c}", SUM),
    "rsub_scalar": ("{c} − {x}", SUM),
    "mul_scalar": ("{x}·{c}", PRODUCT),
    "div_scalar": ("{x} / {c}", PRODUCT),
    "rdiv_scalar": ("{c} / {x}", PRODUCT),
    "powf_scalar": ("{x}^{c}", ATOM),
}
LEAVES = {
    "from_floats": "data",
    "zeros": "zeros",
    "ones": "ones",
    "random": "random",
    "from_inner": "data",
    "detach": "detach",
}
SUPERSCRIPT = str.maketrans("0123456789-.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻·")


@functools.lru_cache(maxsize=1024)  # a big graph repeats a few ops thousands of times, read by several parts
def op_kind(op: str) -> str:
    """An op's name without its constants: `mul_scalar` of `mul_scalar(3)`, `index` of `index[:, 0]`."""
    return re.split(r"[(\[]", op, maxsplit=1)[0]


def node_names(variables: Mapping[str, object]) -> dict[int, str]:
    """`{node id: variable name}` for every tracked tensor among `variables` (other values are skipped)."""
    return {
        int(value.node_id): name
        for name, value in variables.items()
        if isinstance(value, Tensor) and value.node_id is not None
    }


def with_gone_inputs(
    nodes: Iterable[NodeSnapshot], names: Mapping[int, str], remembered: Mapping[int, str]
) -> dict[int, str]:
    """`names`, plus the remembered expression of each input no longer in the graph (a step a backward's sweep
    removed), so a node that used it still reads `loss = sum(h + x·3)`, never `sum(#4)`."""
    nodes = list(nodes)
    present = {int(n.id) for n in nodes}
    gone = {int(i) for n in nodes for i in n.inputs if int(i) not in present}
    return {**{i: remembered[i] for i in gone if i in remembered}, **names}


def name_or_id(names: Mapping[int, str], node_id: int | NodeId) -> str:
    """A node's name in `names`, else its id (`NodeId(7)`), written only when it is needed: a big replay's
    sentences, cards and groups name nodes some 50,000 times."""
    name = names.get(int(node_id))
    return f"NodeId({int(node_id)})" if name is None else name


def node_name(node_id: int | NodeId, names: Mapping[int, str]) -> str:
    """`h (NodeId(2))` for a named node, `NodeId(7)` otherwise (tables and sentences that need the id)."""
    name = names.get(int(node_id))
    return f"{name} (NodeId({int(node_id)}))" if name else f"NodeId({int(node_id)})"


def expressions(nodes: Iterable[NodeSnapshot], names: Mapping[int, str]) -> dict[int, str]:
    """Each node's expression in terms of its inputs' names (or their own expressions when short):
    `x·x`, `h + x·3`, `sum(h + x·3)`. A leaf's expression is how it was made (`data`, `random`)."""
    found: dict[int, tuple[str, int]] = {}
    ops: dict[int, str] = {}
    for node in sorted(nodes, key=lambda n: int(n.id)):  # ids grow with creation: inputs come first
        ops[int(node.id)] = op_kind(node.op)
        found[int(node.id)] = _expression(node, names, found, ops)
    return {node_id: text for node_id, (text, _) in found.items()}


def labels(nodes: Iterable[NodeSnapshot], names: Mapping[int, str]) -> dict[int, str]:
    """The title a picture gives each node: `h = x·x` for a named op, `x` for a named leaf, `x·3` unnamed."""
    nodes = list(nodes)
    return _titles(nodes, names, expressions(nodes, names))


@dataclass(frozen=True)
class GraphNames:
    """Both names of every node of a graph, worked out once: a replay's picture, events, cards, sums and groups all
    read them, and a 5,000-node graph's expressions take a noticeable time to work out."""

    called: dict[int, str]  # what a sentence calls a node: its variable, else its expression (`short_names`)
    titles: dict[int, str]  # what its box says (`labels`)


def graph_names(nodes: Iterable[NodeSnapshot], names: Mapping[int, str]) -> GraphNames:
    nodes = list(nodes)
    exprs = expressions(nodes, names)
    return GraphNames(called={**exprs, **names}, titles=_titles(nodes, names, exprs))


def _titles(nodes: list[NodeSnapshot], names: Mapping[int, str], exprs: Mapping[int, str]) -> dict[int, str]:
    out = {}
    for node in nodes:
        node_id = int(node.id)
        name, expr = names.get(node_id), exprs[node_id]
        if name is None:
            out[node_id] = expr
        elif node.inputs:
            out[node_id] = f"{name} = {expr}"
        else:
            out[node_id] = name
    return out


def _operand(node_id: NodeId, names: Mapping[int, str], found: Mapping[int, tuple[str, int]]) -> tuple[str, int]:
    name = names.get(int(node_id))
    if name is not None:
        return name, ATOM
    text, strength = found.get(int(node_id), (ELIDED, ATOM))
    return (text, strength) if len(text) <= MAX_OPERAND else (ELIDED, ATOM)


def _wrap(operand: tuple[str, int], strength: int, right: bool = False) -> str:
    text, own = operand
    return f"({text})" if own < strength or (right and own == strength and strength != ATOM) else text


def _expression(
    node: NodeSnapshot, names: Mapping[int, str], found: Mapping[int, tuple[str, int]], ops: Mapping[int, str]
) -> tuple[str, int]:
    op, _, args = node.op.partition("(")
    args = args.rstrip(")")
    if not node.inputs:
        return LEAVES.get(op, op), ATOM
    operands = [_operand(i, names, found) for i in node.inputs]
    if op in BINARY and len(operands) == 2:
        symbol, strength = BINARY[op]
        # a + (b + c) reads as a + b + c; any other right operand as strong as the op keeps its brackets
        right = names.get(int(node.inputs[1])) is None and not (
            op in ("add", "mul") and ops.get(int(node.inputs[1])) == op
        )
        # a·b @ c is (a·b) @ c in Python, but a reader should not have to know: mixed products keep brackets
        left_op = ops.get(int(node.inputs[0]))
        left = operands[0]
        if names.get(int(node.inputs[0])) is None and strength == PRODUCT and left[1] == PRODUCT and left_op != op:
            left = (f"({left[0]})", ATOM)
        text = _wrap(left, strength) + symbol + _wrap(operands[1], strength, right=right)
        return _fit(text, op), strength
    if op in SCALAR:
        template, strength = SCALAR[op]
        if op == "powf_scalar":
            constant = args.translate(SUPERSCRIPT) if re.fullmatch(r"-?\d+(\.\d+)?", args) else f"^{args}"
            return _fit(_wrap(operands[0], ATOM) + constant.lstrip("^"), op), ATOM
        return _fit(template.format(x=_wrap(operands[0], strength, right=op.startswith("r")), c=args), op), strength
    if op == "neg":
        return _fit("−" + _wrap(operands[0], ATOM), op), ATOM
    if op.startswith("index["):  # Python's indexing, as written: `w[0]`, `(a + b)[:, 0]`
        return _fit(_wrap(operands[0], ATOM) + op[len("index") :], "index"), ATOM
    if op == "swap_dims" or op == "transpose":
        return _fit(_wrap(operands[0], ATOM) + "ᵀ", op), ATOM
    inner = ", ".join(text for text, _ in operands)
    if op in ("sum_dim", "mean_dim"):
        return _fit(f"{op[:-4]}({inner}, dim {args})", op), ATOM
    return _fit(f"{op}({inner})", op), ATOM


def _fit(text: str, op: str) -> str:
    return text if len(text) <= MAX_EXPRESSION else f"{op}(…)"  # the inputs' own nodes say the rest
