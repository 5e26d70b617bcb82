"""The DOT the app draws: well-formed, coloured by state, collapsed when large."""

import re

from autodiff import Device, Distribution, NodeStatus, Tensor
from course.programs import PROGRAMS, memory_forward, record_program
from ui.graph_dot import ABANDONED_FILL, COLLAPSE_LIMIT, FILL, MAX_BOXES, REFUSED, Overlay, graph_dot

NODE = re.compile(r"^\s+(n\d+|order\d+) \[label=", re.M)
EDGE = re.compile(r"^\s+(\w+) -> (\w+)", re.M)


def assert_well_formed(dot: str) -> tuple[set[str], list[tuple[str, str]]]:
    assert dot.startswith("digraph G {") and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    assert dot.count('"') % 2 == 0
    nodes = set(NODE.findall(dot))
    edges = EDGE.findall(dot)
    assert all(a in nodes and b in nodes for a, b in edges), "an edge points at a node that is not drawn"
    return nodes, edges


def test_every_program_graph_is_well_formed_and_complete():
    for key in PROGRAMS:
        run = record_program(key)
        nodes, edges = assert_well_formed(graph_dot(run.before, run.names))
        assert len(nodes) == len(run.before.nodes)
        inputs = sum(len(n.inputs) for n in run.before.nodes)
        assert len(edges) == inputs  # one edge per input use (x * x draws two)


def test_colours_follow_requirement_and_status():
    run = record_program("seed")
    x, loss = int(run.tensors["x"].node_id), int(run.tensors["loss"].node_id)
    dot = graph_dot(run.before, run.names)
    assert FILL[run.tensors["x"].requirement] in next(line for line in dot.splitlines() if f"  n{x} [" in line)
    after = run.device.snapshot()  # after backward: every step on the loss's path consumed
    assert after.node(loss).status is NodeStatus.CONSUMED
    dot = graph_dot(after, run.names, Overlay(refused=loss))
    loss_line = next(line for line in dot.splitlines() if f"  n{loss} [" in line)
    assert "dashed" in loss_line and REFUSED in loss_line


def test_the_stage_finds_every_node_and_edge_by_id():
    run = record_program("seed")
    dot = graph_dot(run.before, run.names, element_ids=True)
    x, h = int(run.tensors["x"].node_id), int(run.tensors["h"].node_id)
    for node in run.before.nodes:
        assert f'id="n{int(node.id)}"' in dot
    assert f'id="e{x}_{h}_0"' in dot and f'id="e{x}_{h}_1"' in dot  # x * x: two edges, told apart


def test_abandoned_nodes_are_orange():
    ad = Device.numpy().autodiff()
    x = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
    memory_forward(x)
    assert ABANDONED_FILL in graph_dot(ad.snapshot())


def test_large_graphs_collapse_by_order_and_expand_on_request():
    ad = Device.numpy().autodiff()
    x = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
    for _ in range(60):
        memory_forward(x)
    snapshot = ad.snapshot()
    assert len(snapshot.nodes) > COLLAPSE_LIMIT
    nodes, edges = assert_well_formed(graph_dot(snapshot))
    assert nodes == {f"order{k}" for k in range(5)}
    assert ("order0", "order1") in edges and len(edges) == len(set(edges))
    nodes, _ = assert_well_formed(graph_dot(snapshot, expanded_orders=frozenset({1})))
    assert len([n for n in nodes if n.startswith("n")]) == 60  # the 60 exp nodes of order 1
    assert "order1" not in nodes


def test_deep_graphs_are_drawn_bottom_to_top():
    run = record_program("seed")
    assert "rankdir=LR" in graph_dot(run.before, run.names)
    assert "rankdir=BT" in graph_dot(run.before, run.names, presenter=True)
    ad = Device.numpy().autodiff()
    y = Tensor.ones([2], ad).require_grad()
    for _ in range(10):
        y = y.tanh()
    assert "rankdir=BT" in graph_dot(ad.snapshot())


def test_deep_graphs_collapse_into_at_most_sixty_boxes():
    ad = Device.numpy().autodiff()
    y = x = Tensor.ones([2], ad).require_grad()
    for _ in range(300):
        y = y * 1.0 + x  # a chain 600 orders deep
    snapshot = ad.snapshot()
    nodes, edges = assert_well_formed(graph_dot(snapshot))
    assert len(nodes) <= MAX_BOXES and all(n.startswith("order") for n in nodes)
