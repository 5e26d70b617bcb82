"""The picture's data: well-formed DOT, states that follow the engine, names students use, collapse when large, and
one contract with the browser."""

import re

from autodiff import Device, Distribution, NodeStatus, Tensor
from autodiff.stage import PAYLOAD_KEYS, STAGE_JS, replay_payload, static_payload
from autodiff.stage.graph_dot import Overlay, graph_dot, picture
from autodiff.stage.naming import node_names
from autodiff.stage.recording import recorded_backward
from course.programs import PROGRAMS, memory_forward, record_program
from playground.examples import EXAMPLES
from playground.sandbox import run_program

NODE = re.compile(r"^\s+(n\d+|order\d+) \[id=", re.M)
EDGE = re.compile(r"^\s+(\w+) -> (\w+)", re.M)


def assert_well_formed(dot: str) -> tuple[set[str], list[tuple[str, str]]]:
    assert dot.startswith("digraph G {") and dot.rstrip().endswith("}")
    assert dot.count("<TABLE") == dot.count("</TABLE>")
    nodes = set(NODE.findall(dot))
    edges = EDGE.findall(dot)
    assert all(a in nodes and b in nodes for a, b in edges), "an edge points at a node that is not drawn"
    return nodes, edges


def test_every_program_graph_is_well_formed_and_complete():
    for key in PROGRAMS:
        run = record_program(key)
        nodes, edges = assert_well_formed(graph_dot(run.before, run.names))
        assert len(nodes) == len(run.before.nodes)
        assert len(edges) == sum(len(n.inputs) for n in run.before.nodes)  # one edge per input use (x * x: two)


def test_nodes_say_their_name_expression_value_and_id():
    run = record_program("seed")
    titles = {node.title: node for node in picture(run.before, run.names).nodes}
    assert set(titles) == {"x", "unused", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"}
    assert titles["h = x·x"].value == "value [1.0, 4.0]" and titles["h = x·x"].detail == "NodeId(2) · mul"
    assert titles["loss = sum(h + x·3)"].value == "value [14.0]"
    neuron = record_program("neuron")
    assert "out = tanh(w @ x + b)" in {node.title for node in picture(neuron.before, neuron.names).nodes}


def test_states_follow_requirement_and_status():
    run = record_program("seed")
    x, loss = int(run.tensors["x"].node_id), int(run.tensors["loss"].node_id)
    states = {n.id: n.state for n in picture(run.before, run.names).nodes}
    assert states[x] == "leaf" and states[loss] == "pending"
    after = run.device.snapshot()  # after backward: every step on the loss's path consumed
    assert after.node(loss).status is NodeStatus.CONSUMED
    states = {n.id: n.state for n in picture(after, run.names, Overlay(refused=loss)).nodes}
    assert states[loss] == "refused" and states[int(run.tensors["h"].node_id)] == "consumed" and states[x] == "leaf"


def test_edges_have_one_id_each_and_replay_events_name_them():
    run = record_program("seed")
    x, h = int(run.tensors["x"].node_id), int(run.tensors["h"].node_id)
    payload = replay_payload(run.before, run.recorder, run.names)
    elements = [e["element"] for e in payload["edges"]]
    assert len(elements) == len(set(elements)) and {f"e{x}_{h}_0", f"e{x}_{h}_1"} <= set(elements)
    sent_to_x = [e["edge"] for e in payload["events"] if e["kind"] == "GradientRegistered" and e["node"] == x]
    assert sorted(sent_to_x) == sorted([f"e{x}_3_0", f"e{x}_{h}_0", f"e{x}_{h}_1"])  # each along its own edge
    assert all(f'id="{element}"' in graph_dot(run.before, run.names) for element in elements)


def test_abandoned_nodes_are_drawn_as_abandoned():
    ad = Device.numpy().autodiff()
    x = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
    memory_forward(x)
    assert "abandoned" in {n.state for n in picture(ad.snapshot(), {}).nodes}


def test_a_large_graph_is_drawn_whole_in_its_download():
    ad = Device.numpy().autodiff()
    x = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
    for _ in range(60):
        memory_forward(x)
    snapshot = ad.snapshot()
    nodes, edges = assert_well_formed(graph_dot(snapshot))
    assert nodes == {f"n{int(n.id)}" for n in snapshot.nodes}  # no box stands for others: the stage folds, not this
    assert len(edges) == sum(len(n.inputs) for n in snapshot.nodes)


def test_payload_keys_are_the_contract_the_browser_checks():
    declared = re.search(r"const PAYLOAD_KEYS = \[([^\]]*)\]", STAGE_JS).group(1)
    assert set(re.findall(r'"(\w+)"', declared)) == PAYLOAD_KEYS
    run = record_program("seed")
    assert set(replay_payload(run.before, run.recorder, run.names)) == PAYLOAD_KEYS
    assert set(static_payload(run.before, run.names)) == PAYLOAD_KEYS
    typedef = STAGE_JS.split("@typedef")[-1]  # StagePayload's JSDoc names every key too
    assert all(f"{key}:" in typedef for key in PAYLOAD_KEYS)


def test_visitor_text_in_labels_is_escaped():
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats([1.0], ad).require_grad()
    dot = graph_dot(ad.snapshot(), {int(x.node_id): "a<b>&c"})
    assert "a&lt;b&gt;&amp;c" in dot and "a<b>" not in dot


def test_the_narration_is_sentences_not_raw_fields():
    from course.programs import CHECKPOINTING_PROGRAMS

    for key in CHECKPOINTING_PROGRAMS:
        run = record_program(key, checkpointing="balanced" if key == "chain" else "none")
        payload = replay_payload(run.before, run.recorder, run.names)
        for event in payload["events"]:
            text = event["text"]
            assert text.endswith("."), text  # a sentence (it may start with a variable: `loss sends ...`)
            for raw in ("in_use", "allocs", " 0 B", "(0 B)", "MemoryUsage", "array(", "Tensor(", " = "):
                assert raw not in text, (key, text)
            assert len(text) < 300, text  # long lists are summarised


def test_a_class_stages_link_is_named_alike_on_both_sides():
    from autodiff.stage.payload import ClassroomLink

    typedef = re.search(r"@typedef \{\{(role:.*?)\}\} ClassroomLink", STAGE_JS, re.S).group(1)
    assert set(re.findall(r"(\w+):", typedef)) == set(ClassroomLink.__annotations__)


def test_the_picture_writes_four_significant_digits_never_fewer():
    """w1's gradient was drawn `11` where print gives 10.996227: the picture's short numbers keep four significant
    digits (`11.00`), and drop zeros only where the value is that number (`0.5`)."""
    ad = Device.numpy().autodiff(keep_values=True)
    w1 = Tensor.from_floats([[1.0, 2.0, 3.0, 4.0], [0.5, 0.25, -1.0, 10.996227]], ad).require_grad()
    loss = (w1 * 10.996227).sum()
    run = recorded_backward(loss)
    payload = replay_payload(run.before, run.recorder, node_names({"w1": w1, "loss": loss}))
    (node,) = [n for n in payload["nodes"] if n["name"] == "w1"]
    assert node["value"] == "value [[1, 2, 3, 4], [0.5, 0.25, -1, 11.00]]"
    (sent,) = [e for e in payload["events"] if e["kind"] == "GradientRegistered" and e["node"] == int(w1.node_id)]
    assert sent["value"] == "[[11.00, 11.00, 11.00, 11.00], [11.00, 11.00, 11.00, 11.00]]"
    assert sent["total_full"].count("10.996227") == 8  # the card and the container keep every digit


def test_the_stage_names_micrograds_nodes_as_the_program_wrote_them():
    """The Playground's micrograd: `c += 1 + c + (-a)` is drawn `c = c + (1 + c + (−a))`, `3 * d` is `3·d`, and the
    events and cards say the same names as the boxes."""
    source = EXAMPLES["micrograd's README example"]
    result = run_program(source)
    assert result.error is None, result.error
    run = result.backward
    payload = replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)
    titles = {node["title"] for node in payload["nodes"]}
    assert {"1 + c", "1 + c + (−a)", "c = c + (1 + c + (−a))", "3·d", "d = d + (3·d + relu(b − a))"} <= titles
    assert not {"c + 1 + −a", "d·3", "c = c + c + 1 + −a"} & titles, titles
    sentences = " ".join(event["text"] for event in payload["events"])
    assert "1 + c + (−a)" in sentences and "c + 1 + −a" not in sentences
