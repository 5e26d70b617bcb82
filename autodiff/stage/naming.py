"""What a node is called in the pictures: the variable it was assigned to, else its expression in the program's
own terms (`x·x`, `x·3`, `h + x·3`, `tanh(w @ x + b)`), derived from the recorded ops, with the brackets Python
needed to make it (`c + (1 + c + (−a))`, never `c + c + 1 + −a`) and a constant where the program wrote it (`1 + c`,
read from its statement: the engine records `1 + c` and `c + 1` alike). The one place node ids get their names."""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autodiff import NodeId, NodeSnapshot, Tensor
from autodiff.structure import parse_python

MAX_OPERAND = 18  # an operand whose expression is longer is written `…` (the edge into the node shows which it is)
ELIDED = "…"
MAX_EXPRESSION = 32

# binding strength: a weaker operand is parenthesised; a negation on the right of an operator is too (`b + (−a)`)
ATOM, UNARY, PRODUCT, SUM = 4, 3, 2, 1
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
CONSTANT_FIRST = {"add_scalar": "{c} + {x}", "mul_scalar": "{c}·{x}"}  # as written: `1 + c`, `3 * d`
COMMUTATIVE = {ast.Add: "add_scalar", ast.Mult: "mul_scalar"}  # the ops Python runs alike either way round
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


def expressions(
    nodes: Iterable[NodeSnapshot], names: Mapping[int, str], first: frozenset[int] = frozenset()
) -> dict[int, str]:
    """Each node's expression in terms of its inputs' names (or their own expressions when short):
    `x·x`, `h + x·3`, `sum(h + x·3)`. A leaf's expression is how it was made (`data`, `random`). `first`: the
    scalar ops the program wrote with their constant first (`constants_first`)."""
    found: dict[int, tuple[str, int]] = {}
    ops: dict[int, str] = {}
    for node in sorted(nodes, key=lambda n: int(n.id)):  # ids grow with creation: inputs come first
        ops[int(node.id)] = op_kind(node.op)
        found[int(node.id)] = _expression(node, names, found, ops, int(node.id) in first)
    return {node_id: text for node_id, (text, _) in found.items()}


def labels(
    nodes: Iterable[NodeSnapshot], names: Mapping[int, str], first: frozenset[int] = frozenset()
) -> dict[int, str]:
    """The title a picture gives each node: `h = x·x` for a named op, `x` for a named leaf, `x·3` unnamed."""
    nodes = list(nodes)
    return _titles(nodes, names, expressions(nodes, names, first))


def constants_first(
    nodes: Iterable[NodeSnapshot], source: str | None, spans: Mapping[int, tuple[int, int]] | None
) -> frozenset[int]:
    """The `add_scalar` and `mul_scalar` nodes the program wrote with the constant first (`1 + c`, `3 * d`), read
    from the statement that made each (`spans`: NodeId -> its first and last line of `source`). A statement's
    nodes of one op and constant are matched, in the order Python made them, to its expressions of that op and
    constant with a tensor on one side (a statement a loop runs again makes them again); where they do not match
    up, the engine's order stands."""
    if not source or not spans:
        return frozenset()
    lines = source.splitlines()
    made: dict[tuple[int, int], dict[tuple[str, str], list[int]]] = {}
    for node in sorted(nodes, key=lambda n: int(n.id)):
        span = spans.get(int(node.id))
        op, _, constant = node.op.rstrip(")").partition("(")
        if span is not None and op in CONSTANT_FIRST:
            made.setdefault(span, {}).setdefault((op, constant), []).append(int(node.id))
    out: set[int] = set()
    for (start, end), by_op in made.items():
        written = _scalar_sides("\n".join(lines[start - 1 : end]))
        for key, node_ids in by_op.items():
            sides = written.get(key, [])
            if sides and len(node_ids) % len(sides) == 0:
                out.update(n for k, n in enumerate(node_ids) if sides[k % len(sides)])
    return frozenset(out)


def _scalar_sides(statement: str) -> dict[tuple[str, str], list[bool]]:
    """For a statement's `x + 1`, `1 + x`, `x * 3`, `x += 1`, in the order Python runs them: (op, constant as the
    engine writes it) -> whether each has its constant first."""
    try:
        tree = parse_python(textwrap.dedent(statement))
    except SyntaxError:
        return {}
    sides: dict[tuple[str, str], list[bool]] = {}

    def visit(node: ast.AST) -> None:  # children first, left to right: the order Python evaluates them
        for child in ast.iter_child_nodes(node):
            visit(child)
        if isinstance(node, ast.BinOp) and type(node.op) in COMMUTATIVE:
            left, right = _constant(node.left), _constant(node.right)
            if (left is None) != (right is None):
                constant = left if left is not None else right
                sides.setdefault((COMMUTATIVE[type(node.op)], f"{constant:g}"), []).append(left is not None)
        elif isinstance(node, ast.AugAssign) and type(node.op) in COMMUTATIVE:
            constant = _constant(node.value)
            if constant is not None:
                sides.setdefault((COMMUTATIVE[type(node.op)], f"{constant:g}"), []).append(False)

    visit(tree)
    return sides


def _constant(node: ast.expr) -> float | None:
    """The number a literal writes (`3`, `2.0`, `-1`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _constant(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


@dataclass(frozen=True)
class GraphNames:
    """Both names of every node of a graph, worked out once: a replay's picture, events, cards, sums and groups all
    read them, and a 5,000-node graph's expressions take a noticeable time to work out."""

    called: dict[int, str]  # what a sentence calls a node: its variable, else its expression (`short_names`)
    titles: dict[int, str]  # what its box says (`labels`)


def graph_names(
    nodes: Iterable[NodeSnapshot], names: Mapping[int, str], first: frozenset[int] = frozenset()
) -> GraphNames:
    nodes = list(nodes)
    exprs = expressions(nodes, names, first)
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
    """`operand` as an operand of an op of `strength`: bracketed when it binds weaker, or, on the right, as weakly
    (`a − (b − c)`, `a + (b + c)`: Python made it so) or when it is a negation (`b + (−a)`)."""
    text, own = operand
    on_right = right and own != ATOM and own in (strength, UNARY)
    return f"({text})" if own < strength or on_right else text


def _expression(
    node: NodeSnapshot,
    names: Mapping[int, str],
    found: Mapping[int, tuple[str, int]],
    ops: Mapping[int, str],
    constant_first: bool,
) -> tuple[str, int]:
    op, _, args = node.op.partition("(")
    args = args.rstrip(")")
    if not node.inputs:
        return LEAVES.get(op, op), ATOM
    operands = [_operand(i, names, found) for i in node.inputs]
    if op in BINARY and len(operands) == 2:
        symbol, strength = BINARY[op]
        # a·b @ c is (a·b) @ c in Python, but a reader should not have to know: mixed products keep brackets
        left = operands[0]
        left_op = ops.get(int(node.inputs[0]))
        if strength == PRODUCT and left[1] == PRODUCT and left_op != op:
            left = (f"({left[0]})", ATOM)
        text = _wrap(left, strength) + symbol + _wrap(operands[1], strength, right=True)
        return _fit(text, op), strength
    if op in SCALAR:
        template, strength = SCALAR[op]
        if op == "powf_scalar":
            constant = args.translate(SUPERSCRIPT) if re.fullmatch(r"-?\d+(\.\d+)?", args) else f"^{args}"
            return _fit(_wrap(operands[0], ATOM) + constant.lstrip("^"), op), ATOM
        if constant_first and op in CONSTANT_FIRST:
            template = CONSTANT_FIRST[op]
        right = op.startswith("r") or (constant_first and op in CONSTANT_FIRST)
        return _fit(template.format(x=_wrap(operands[0], strength, right=right), c=args), op), strength
    if op == "neg":
        return _fit("−" + _wrap(operands[0], ATOM), op), UNARY
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
