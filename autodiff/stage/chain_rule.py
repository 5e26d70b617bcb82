"""The chain rule in numbers, for the stage's card: at each step of a recorded backward, the gradient the node
received times each input's local derivative is what it sends; where paths meet, what a node received, added up.

Written in the program's names with their values plugged in (`∂h/∂x = x = [1.0, 2.0]`, `[1.0, 1.0] × [1.0, 2.0] =
[1.0, 2.0]`), never in the engine's operand letters. The local derivatives are worked out here from the forward
values, independently of the engine's rules, so a test can check that upstream × derivative is what the engine sent.
Plain data only: the stage draws it (js/view/panels.mjs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from autodiff import GraphSnapshot, NodeSnapshot
from autodiff.printing import format_array
from autodiff.snapshot import ValueSummary
from autodiff.stage.naming import GraphNames, graph_names, name_or_id, op_kind
from autodiff.trace import BackwardRecorder, Event, GradientRegistered, StepStarted, TensorPreview

from .format import WHOLE, Exact, compact, format_shape

ORDINALS = ("first", "second")


class CardInput(TypedDict):
    node: int  # the input's NodeId
    input: str  # its name, as the graph calls it
    rule: str  # the local rule in the program's names: `grad × x`, `grad @ xᵀ`
    derivative: str  # `∂h/∂x = x`; "" where the op is not elementwise
    derivative_value: str  # its value, `[1.0, 2.0]`; "" where it is not elementwise or not known
    product: str  # the arithmetic, numbers plugged in: `[1.0, 1.0] × [1.0, 2.0] = [1.0, 2.0]`
    sends: str  # the value sent


class StepCard(TypedDict):
    node: int
    title: str  # the node as the graph titles it: `h = x·x`
    upstream: str  # the gradient its step received
    inputs: list[CardInput]  # aligned with the step's tracked inputs (`x·x` gives x twice: once per operand)


class SumTerm(TypedDict):
    value: str
    path: str  # where it came from: `from h = x·x (first operand)`, `seed: ones`


class GradientSum(TypedDict):
    node: int
    terms: list[SumTerm]  # every gradient registered into the node, in order
    total: str
    text: str  # `[1.0, 2.0] + [1.0, 2.0] + [3.0, 3.0] = [5.0, 7.0]`


Value = np.ndarray | ValueSummary | TensorPreview | None


@dataclass(frozen=True)
class Local:
    """An elementwise op's local derivative for one operand: its expression in names, and its value."""

    expression: Callable[[list[str], str, str], str]  # (operand names, output name, constant) -> `x`, `1 − out²`
    value: Callable[[list[np.ndarray], np.ndarray, float], np.ndarray | float]  # (operands, output, constant)


def _c(text: str) -> float:
    return float(text) if text else 0.0


# Each elementwise op: its operands' local derivatives, from the forward values (not the engine's rules)
ELEMENTWISE: dict[str, tuple[Local, ...]] = {
    "add": (Local(lambda n, o, c: "1", lambda v, out, c: 1.0), Local(lambda n, o, c: "1", lambda v, out, c: 1.0)),
    "sub": (Local(lambda n, o, c: "1", lambda v, out, c: 1.0), Local(lambda n, o, c: "−1", lambda v, out, c: -1.0)),
    "mul": (Local(lambda n, o, c: n[1], lambda v, out, c: v[1]), Local(lambda n, o, c: n[0], lambda v, out, c: v[0])),
    "div": (
        Local(lambda n, o, c: f"1 / {n[1]}", lambda v, out, c: 1 / v[1]),
        Local(lambda n, o, c: f"−{n[0]} / {n[1]}²", lambda v, out, c: -v[0] / (v[1] * v[1])),
    ),
    "add_scalar": (Local(lambda n, o, c: "1", lambda v, out, c: 1.0),),
    "sub_scalar": (Local(lambda n, o, c: "1", lambda v, out, c: 1.0),),
    "rsub_scalar": (Local(lambda n, o, c: "−1", lambda v, out, c: -1.0),),
    "mul_scalar": (Local(lambda n, o, c: c, lambda v, out, c: c),),
    "div_scalar": (Local(lambda n, o, c: f"1 / {c}", lambda v, out, c: 1 / c),),
    "rdiv_scalar": (Local(lambda n, o, c: f"−{c} / {n[0]}²", lambda v, out, c: -c / (v[0] * v[0])),),
    "powf_scalar": (Local(lambda n, o, c: _power(n[0], _c(c)), lambda v, out, c: c * v[0] ** (c - 1)),),
    "neg": (Local(lambda n, o, c: "−1", lambda v, out, c: -1.0),),
    "exp": (Local(lambda n, o, c: f"exp({n[0]})", lambda v, out, c: out),),
    "log": (Local(lambda n, o, c: f"1 / {n[0]}", lambda v, out, c: 1 / v[0]),),
    "sqrt": (Local(lambda n, o, c: f"1 / (2·{o})", lambda v, out, c: 1 / (2 * out)),),
    "sin": (Local(lambda n, o, c: f"cos({n[0]})", lambda v, out, c: np.cos(v[0])),),
    "cos": (Local(lambda n, o, c: f"−sin({n[0]})", lambda v, out, c: -np.sin(v[0])),),
    "tanh": (Local(lambda n, o, c: f"1 − {o}²", lambda v, out, c: 1 - out * out),),
    "sigmoid": (Local(lambda n, o, c: f"{o}·(1 − {o})", lambda v, out, c: out * (1 - out)),),
    "relu": (Local(lambda n, o, c: f"1 where {n[0]} > 0, else 0", lambda v, out, c: (v[0] > 0).astype(v[0].dtype)),),
}


def _g(value: float) -> str:
    return f"{value:g}"


def _power(name: str, p: float) -> str:
    """d/dx of x^p in words: `2·x`, `3·x^2`, `0.5·x^-0.5`."""
    return f"{_g(p)}·{name}" if p == 2 else f"{_g(p)}·{name}^{_g(p - 1)}"


VARIABLE = re.compile(r"\w+(\[[^\]]*\])?")  # a variable, or its part (`w[0]`)


def _wrapped(name: str) -> str:
    """A name inside ∂…/∂…: an expression gets brackets (`∂(h + x·3)/∂h`), a variable (or its part, `w[0]`) does not."""
    return name if VARIABLE.fullmatch(name) else f"({name})"


def _small(value: Value) -> np.ndarray | None:
    """The value as an array when a student can check it by hand, else None."""
    if isinstance(value, np.ndarray) and value.size <= WHOLE:
        return value
    return None


def _text(value: Value | float, exact: Exact = format_array) -> str:
    if isinstance(value, float | int):
        return _g(float(value))
    if isinstance(value, np.ndarray) and value.size <= WHOLE:
        return exact(value)
    return compact(value, exact)


def step_cards(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    named: GraphNames | None = None,
    exact: Exact = format_array,
) -> dict[int, StepCard]:
    """The card of every step of `recorder`, keyed by the index of its `StepStarted` event; `named` is
    `graph_names(before.nodes, names)` when the caller has it, `exact` writes a recorded value's numbers."""
    named = named or graph_names(before.nodes, names)
    called, titles = named.called, named.titles
    by_id = {int(n.id): n for n in before.nodes}
    container: dict[int, Value] = {}
    cards: dict[int, StepCard] = {}
    events = recorder.events
    sent_by_step = _sent_by_step(events)
    for index, event in enumerate(events):
        if isinstance(event, GradientRegistered):
            container[int(event.node_id)] = event.total
        if not isinstance(event, StepStarted):
            continue
        node_id = int(event.node_id)
        sent = sent_by_step[index]
        upstream = container.get(node_id)
        node = by_id.get(node_id)
        inputs = (
            _inputs(node, event, upstream, sent, by_id, called, exact)
            if node is not None
            else [
                _unknown(int(p), called, rule, upstream, sent, k, exact)
                for k, (p, rule) in enumerate(zip(event.parents, event.rules, strict=True))
            ]
        )
        cards[index] = StepCard(
            node=node_id,
            title=titles.get(node_id, called.get(node_id, f"NodeId({node_id})")),
            upstream=_text(upstream, exact),
            inputs=inputs,
        )
    return cards


def _sent_by_step(events: Sequence[Event]) -> dict[int, list[Value]]:
    """The index of each `StepStarted` -> the values its step sent, in order (the step's gradients registered before
    the next step starts): one walk over the events, however many steps."""
    sent: dict[int, list[Value]] = {}
    step: list[Value] = []
    node_id = None
    for index, event in enumerate(events):
        if isinstance(event, StepStarted):
            step, node_id = sent.setdefault(index, []), int(event.node_id)
        elif isinstance(event, GradientRegistered) and event.source is not None and int(event.source) == node_id:
            step.append(event.value)
    return sent


def _slots(node: NodeSnapshot) -> list[int]:
    """For each tracked input of `node` (its step's parents, in order), the operand it is: 0 for the first."""
    slots, k = [], 0
    for slot, input_id in enumerate(node.inputs):
        if k < len(node.parents) and node.parents[k] == input_id:
            slots.append(slot)
            k += 1
    return slots


def _inputs(
    node: NodeSnapshot,
    step: StepStarted,
    upstream: Value,
    sent: list[Value],
    by_id: dict[int, NodeSnapshot],
    called: dict[int, str],
    exact: Exact,
) -> list[CardInput]:
    op, constant = op_kind(node.op), node.op.partition("(")[2].rstrip(")")
    # in a formula, an operand that is an expression gets brackets: `2·(pred − target)`, `1 − (w @ x + b)²`
    operand_names = [_wrapped(name_or_id(called, i)) for i in node.inputs]
    operand_values: list[Value] = [by_id[int(i)].value if int(i) in by_id else None for i in node.inputs]
    out = name_or_id(called, node.id)
    slots = _slots(node)
    cards = []
    for k, (parent, rule) in enumerate(zip(step.parents, step.rules, strict=True)):
        slot = slots[k] if k < len(slots) else k
        value = sent[k] if k < len(sent) else None
        name = name_or_id(called, parent)
        if op in ELEMENTWISE and slot < len(ELEMENTWISE[op]):
            local = ELEMENTWISE[op][slot]
            card = _elementwise(local, operand_names, operand_values, node, out, constant, upstream, value, name, exact)
        else:
            card = _structural(op, slot, operand_names, operand_values, node, out, upstream, value, name, rule, exact)
        cards.append(
            CardInput(
                node=int(parent),
                input=name,
                rule=card["rule"],
                derivative=card["derivative"],
                derivative_value=card["derivative_value"],
                product=card["product"],
                sends=_text(value, exact),
            )
        )
    return cards


def _elementwise(
    local: Local,
    names: list[str],
    values: list[Value],
    node: NodeSnapshot,
    out: str,
    constant: str,
    upstream: Value,
    sent: Value,
    name: str,
    exact: Exact,
) -> dict[str, str]:
    expression = local.expression(names, _wrapped(out), constant)
    derivative = f"∂{_wrapped(out)}/∂{_wrapped(name)} = {expression}"
    arrays = [_small(v) for v in values]
    output, up = _small(node.value), _small(upstream)
    known = all(a is not None for a in arrays) and output is not None
    local_value: np.ndarray | float | None = None
    if known:
        with np.errstate(all="ignore"):
            local_value = local.value([a for a in arrays if a is not None], output, _c(constant))  # type: ignore[arg-type]
    if local_value is None or up is None or _small(sent) is None:
        product = f"{_text(upstream, exact)} × ({expression}), element by element = {_text(sent, exact)}"
        return {"rule": f"grad × ({expression})", "derivative": derivative, "derivative_value": "", "product": product}
    local_text = _text(local_value if isinstance(local_value, float) else np.asarray(local_value, up.dtype))
    full = np.asarray(up * np.asarray(local_value, up.dtype))
    product = f"{_text(up, exact)} × {local_text}"
    assert isinstance(sent, np.ndarray)
    if full.shape != sent.shape:  # a broadcast operand: its gradient is the product summed back to its shape
        product += f" = {_text(full)}, summed to its shape {format_shape(sent.shape)}"
    product += f" = {_text(sent, exact)}"
    rule = f"grad × {expression}" if " " not in expression else f"grad × ({expression})"
    return {"rule": rule, "derivative": derivative, "derivative_value": local_text, "product": product}


def _structural(
    op: str,
    slot: int,
    names: list[str],
    values: list[Value],
    node: NodeSnapshot,
    out: str,
    upstream: Value,
    sent: Value,
    name: str,
    rule: str,
    exact: Exact,
) -> dict[str, str]:
    """An op that moves or combines elements (a sum, a matmul, a reshape): its rule, with the values it used."""
    up, result = _text(upstream, exact), _text(sent, exact)
    shape = format_shape(_shape(sent))
    if op == "matmul":
        other = names[1 - slot] if len(names) > 1 else "?"
        other_value = values[1 - slot] if len(values) > 1 else None
        small = _small(other_value)
        transposed = _text(np.swapaxes(small, -1, -2)) if small is not None else f"{other}ᵀ"
        if slot == 0:
            return _plain(f"grad @ {other}ᵀ", f"{up} @ {transposed} = {result}")
        return _plain(f"{other}ᵀ @ grad", f"{transposed} @ {up} = {result}")
    if op == "sum":
        return _plain(f"grad copied to every element of {name}", f"{up} copied over shape {shape} = {result}")
    if op == "mean":
        count = int(np.prod(_shape(sent))) if _shape(sent) else 1
        return _plain(f"grad / {count}, copied to every element", f"{up} / {count} copied over {shape} = {result}")
    if op in ("sum_dim", "mean_dim"):
        share = "" if op == "sum_dim" else " divided by its length"
        return _plain(f"grad{share}, copied along the summed dimension", f"{up}{share} copied to {shape} = {result}")
    if op == "reshape":
        return _plain("grad reshaped back", f"{up} reshaped to {shape} = {result}")
    if op in ("swap_dims", "transpose"):
        return _plain("grad with the dimensions swapped back", f"{up} swapped back = {result}")
    if op == "index":  # Python's indexing: the part's gradient goes back to where the part was, zeros elsewhere
        part = _wrapped(name) + node.op[len("index") :]
        return _plain(f"grad placed at {part}, zeros elsewhere", f"{up} placed in zeros of shape {shape} = {result}")
    # an op this card has no words for yet: the engine's rule, its operand letters replaced by the names
    letters = {
        "a": names[0] if names else "a",
        "b": names[1] if len(names) > 1 else "b",
        "x": names[0] if names else "x",
    }
    named = re.sub(r"\b[abx]\b", lambda m: letters[m.group(0)], rule)
    return _plain(named, f"with grad = {up}: {result}")


def _plain(rule: str, product: str) -> dict[str, str]:
    return {"rule": rule, "derivative": "", "derivative_value": "", "product": product}


def _shape(value: Value) -> tuple[int, ...]:
    if isinstance(value, np.ndarray | ValueSummary | TensorPreview):
        return tuple(value.shape)
    return ()


def _unknown(
    parent: int, called: dict[int, str], rule: str, upstream: Value, sent: list[Value], k: int, exact: Exact
) -> CardInput:
    value = sent[k] if k < len(sent) else None
    return CardInput(
        node=parent,
        input=name_or_id(called, parent),
        rule=rule,
        derivative="",
        derivative_value="",
        product=f"with grad = {_text(upstream, exact)}: {_text(value, exact)}",
        sends=_text(value, exact),
    )


def gradient_sums(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    named: GraphNames | None = None,
    exact: Exact = format_array,
) -> dict[int, GradientSum]:
    """Every node that received a gradient: each term with the path it came along, and their sum; `named` is
    `graph_names(before.nodes, names)` when the caller has it, `exact` writes a recorded value's numbers."""
    titles = (named or graph_names(before.nodes, names)).titles
    by_id = {int(n.id): n for n in before.nodes}
    terms: dict[int, list[tuple[tuple[int, int], SumTerm]]] = {}
    totals: dict[int, Value] = {}
    used: dict[tuple[int, int], int] = {}
    for event in recorder.events:
        if not isinstance(event, GradientRegistered):
            continue
        node_id = int(event.node_id)
        totals[node_id] = event.total
        if event.source is None:
            path = "seed: backward() starts from ones"
        else:
            source = int(event.source)
            path = f"from {name_or_id(titles, source)}"
            pair = (source, node_id)
            k = used.get(pair, 0)
            used[pair] = k + 1
            user = by_id.get(source)
            if user is not None and user.parents.count(event.node_id) > 1:  # x·x: once per operand
                path += f" ({ORDINALS[k] if k < len(ORDINALS) else f'operand {k + 1}'} operand)"
        order = (-1, 0) if event.source is None else (int(event.source), used[(int(event.source), node_id)])
        terms.setdefault(node_id, []).append((order, SumTerm(value=_text(event.value, exact), path=path)))
    sums = {}
    for node_id, ordered in terms.items():
        parts = [term for _, term in sorted(ordered, key=lambda t: t[0])]  # in the order the program made the paths
        total = _text(totals[node_id], exact)
        text = " + ".join(t["value"] for t in parts) + (f" = {total}" if len(parts) > 1 else "")
        sums[node_id] = GradientSum(node=node_id, terms=parts, total=total, text=text)
    return sums
