"""The picture's data: every node and edge with its one element id, states that follow the engine, names students
use, the words of a gradient line in one place, and one contract with the browser, the numbers a folded view
summarises sent as numbers. (The DOT is the stage's: tests/js/dot.test.mjs.)"""

import base64
import gzip
import json
import math
import re

import numpy as np
import pytest

from autodiff import Device, Distribution, NodeStatus, Tensor
from autodiff.printing import format_float
from autodiff.snapshot import ValueSummary
from autodiff.stage import PAYLOAD_KEYS, STAGE_JS, StagePayload, graph_dot, replay_payload, static_payload, wire
from autodiff.stage.bundle import JS
from autodiff.stage.format import four_digits
from autodiff.stage.graph_dot import GRAD_LINES, Overlay, held_gradients, picture
from autodiff.stage.naming import node_names
from autodiff.stage.recording import recorded_backward
from autodiff.trace import GradientRegistered
from course.programs import PROGRAMS, memory_forward, record_program
from playground.examples import EXAMPLES
from playground.sandbox import run_program

CONTRACT_JS = (JS / "model" / "contract.mjs").read_text()  # the typedefs: a bundle drops comment blocks


def test_every_program_picture_is_complete_each_element_once():
    for key in PROGRAMS:
        run = record_program(key)
        pic = picture(run.before, run.names)
        assert len({n.element for n in pic.nodes}) == len(pic.nodes) == len(run.before.nodes)
        assert len({e.element for e in pic.edges}) == len(pic.edges)
        assert len(pic.edges) == sum(len(n.inputs) for n in run.before.nodes)  # one edge per input use (x * x: two)


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
    assert elements == [e.element for e in picture(run.before, run.names).edges]  # the picture's, as it made them


def test_node_ids_are_made_in_graph_dot_alone_and_the_payload_reads_them(monkeypatch):
    """Spelled otherwise in graph_dot.py, a node's id is spelled so everywhere the payload says it: its element, and
    the gradient line its box is laid out for (which once composed `n3` itself and missed the node)."""
    monkeypatch.setattr(graph_dot, "node_element", lambda node_id: f"box{node_id}")
    run = record_program("seed")
    payload = replay_payload(run.before, run.recorder, run.names)
    assert {n["element"] for n in payload["nodes"]} == {f"box{int(n.id)}" for n in run.before.nodes}
    (h,) = [n for n in payload["nodes"] if n["name"] == "h"]
    assert h["wide"] == "grad [1.0, 1.0] · consumed"


@pytest.mark.parametrize("kind", ["grad_kept", "grad_consumed"])
def test_a_gradient_line_is_laid_out_in_the_words_the_stage_says_it(monkeypatch, kind):
    """The payload's words are the stage's (it says a gradient line with them), and its boxes are laid out for
    those words: a leaf's line as kept, an op's as consumed."""
    monkeypatch.setitem(GRAD_LINES, kind, "the gradient {} as the stage says it, whatever that is")
    run = record_program("seed")
    payload = replay_payload(run.before, run.recorder, run.names)
    assert payload["words"][kind] == GRAD_LINES[kind]
    (node,) = [n for n in payload["nodes"] if n["name"] == ("x" if kind == "grad_kept" else "h")]
    assert re.fullmatch(r"the gradient \[[-\d., ]+\] as the stage says it, whatever that is", node["wide"]), node


def test_abandoned_nodes_are_drawn_as_abandoned():
    ad = Device.numpy().autodiff()
    x = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
    memory_forward(x)
    assert "abandoned" in {n.state for n in picture(ad.snapshot(), {}).nodes}


def test_payload_keys_are_the_contract_the_browser_checks():
    declared = re.search(r"const PAYLOAD_KEYS = \[([^\]]*)\]", STAGE_JS).group(1)
    assert set(re.findall(r'"(\w+)"', declared)) == PAYLOAD_KEYS
    run = record_program("seed")
    assert set(replay_payload(run.before, run.recorder, run.names)) == PAYLOAD_KEYS
    assert set(static_payload(run.before, run.names)) == PAYLOAD_KEYS
    typedef = CONTRACT_JS.split("@typedef")[-1]  # StagePayload's JSDoc names every key too (the bundle drops it)
    assert all(f"{key}:" in typedef for key in PAYLOAD_KEYS)


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
    from autodiff.stage.payload import ClassroomLink, ClassWords

    typedef = re.search(r"@typedef \{\{(role:.*?)\}\} ClassroomLink", CONTRACT_JS, re.S).group(1)
    assert set(re.findall(r"(\w+):", typedef)) == set(ClassroomLink.__annotations__)
    # what the stage checks a link for before it mounts (contract.mjs checkLink): every key, and every word it says
    for constant, typed_dict in (("LINK_KEYS", ClassroomLink), ("CLASS_WORDS", ClassWords)):
        declared = re.search(rf"const {constant} = \[([^\]]*)\]", CONTRACT_JS).group(1)
        assert set(re.findall(r'"(\w+)"', declared)) == set(typed_dict.__annotations__), constant


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


def _printed(value: object) -> float:
    """A float32 as the number the engine prints it (`0.18561745`, not its double's 0.18561745196580887)."""
    return float(str(np.float32(value)))


def _range_of(values: object) -> object:
    """What the stage is sent to say a tensor by, from numpy: its shape, least and greatest number; for four numbers or
    fewer, each as the engine prints it, nested as the tensor, when one has more than four significant digits."""
    array = np.asarray(values)
    if not array.size:
        return None
    if array.size > 4:
        return {"shape": list(array.shape), "low": _printed(np.min(array)), "high": _printed(np.max(array))}
    texts = [str(np.float32(v)) for v in array.flat]
    if all(len(t.partition("e")[0].replace("-", "").replace(".", "").lstrip("0")) <= 4 for t in texts):
        return None
    return np.array([float(t) for t in texts]).reshape(array.shape).tolist()


def test_the_numbers_a_summary_is_written_from_are_the_engines_tensors_own():
    # mlp3's recorded tensors, not their text: each node's value, each gradient sent and each entry after it, each
    # edge's longest value and what each part sent out, added up in numpy
    run = record_program("mlp3")
    payload = replay_payload(run.before, run.recorder, run.names)
    values = {int(node.id): node.value for node in run.before.nodes}
    assert [node["value_range"] for node in payload["nodes"]] == [_range_of(values[n["id"]]) for n in payload["nodes"]]
    recorded = [e for e in run.recorder.events if isinstance(e, GradientRegistered)]
    sent = [e for e in payload["events"] if e["kind"] == "GradientRegistered"]
    for event, record in zip(recorded, sent, strict=True):
        assert (record["value_range"], record["total_range"]) == (_range_of(event.value), _range_of(event.total))
    for edge in payload["edges"]:
        along = [
            e
            for e, r in zip(recorded, sent, strict=True)
            if r["edge"] == edge["element"] and r["value"] == edge["label"]
        ]
        assert edge["label_range"] == (_range_of(along[0].value) if along else None), edge["element"]
    ranged = [r for r in sent if isinstance(r["total_range"], dict)] + [n for n in payload["nodes"] if n["value_range"]]
    assert len(ranged) >= 10 and any(
        r["total_range"]["low"] < 0 < r["total_range"]["high"] for r in ranged if "total_range" in r
    )
    group_of = {node["id"]: node["group"] for node in payload["nodes"]}
    parent = {group["element"]: group["parent"] for group in payload["groups"]}

    def inside(node_id: int, element: str) -> bool:
        at = group_of.get(node_id, "")
        while at and at != element:
            at = parent[at]
        return at == element

    flows = 0
    for group in payload["groups"]:
        for part_run in group["runs"]:
            for flow in part_run["sent"]:  # every gradient sent from inside the part to the node over the run, summed
                span = run.recorder.events[part_run["first"] : part_run["last"] + 1]
                sent_to = [
                    e.value
                    for e in span
                    if isinstance(e, GradientRegistered)
                    and int(e.node_id) == flow["node"]
                    and e.source is not None
                    and inside(int(e.source), group["element"])
                ]
                assert flow["value_range"] == _range_of(np.sum(sent_to, axis=0)), (group["name"], flow)
                flows += flow["value_range"] is not None
    assert flows >= 1
    few = [r["total_range"] for r in sent if isinstance(r["total_range"], list)]
    assert len(few) >= 5, few  # four numbers or fewer travel as numbers too
    large = np.linspace(-0.8123457, 0.96, 64 * 4, dtype=np.float32).reshape(64, 4)
    held = held_gradients(
        {
            2: np.arange(-3, 5, dtype=np.float32).reshape(2, 4),
            3: np.array([0.1, -2.5, 3.0], dtype=np.float32),
            8: np.array([0.1, -2.5, 3.12345], dtype=np.float32),
            4: np.array([1.0, np.nan], dtype=np.float32),  # JSON has no NaN: its text is said as it is
            5: np.zeros(0, dtype=np.float32),
            6: large,  # more than 16 numbers: Python writes its shape and range, and sends them
        }
    )
    assert held is not None
    assert held[2].range == {"shape": [2, 4], "low": -3.0, "high": 4.0}
    assert held[3].range is None  # every number short already: its text is said as it is
    # 0.1 as the engine prints it, which its JSON text writes: not float32's own 0.10000000149011612
    assert held[8].range == [0.1, -2.5, 3.12345]
    assert held[4].range is None and held[5].range is None
    assert held[6] == (
        "[64, 4] from -0.8123457 to 0.96",
        {"shape": [64, 4], "low": -0.8123457, "high": 0.96},
    )
    assert held_gradients({7: ValueSummary((20, 3), -0.5, 0.1, 0.30000001)}) == {  # a worker's summary of a value
        7: ("[20, 3] from -0.5 to 0.3", {"shape": [20, 3], "low": -0.5, "high": 0.3})
    }


WIDE = """w = Tensor.random([5, 4], Distribution.Default, ad).require_grad()
b = Tensor.zeros([6, 4], ad).require_grad()
x = Tensor.random([3, 5], Distribution.Default, ad)
loss = (b * 3.0).sum() + (x.matmul(w).tanh() * 2.0).sum()
grads = loss.backward()
"""
_WORD = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?")  # a number as a text writes it, a shape's sizes too


def _replayed(program: str) -> StagePayload:
    if program in PROGRAMS:
        run = record_program(program)
        return replay_payload(run.before, run.recorder, run.names)
    source = WIDE if program == "wide" else EXAMPLES["Per-sample loop (30 samples)"]
    result = run_program(source)
    assert result.backward is not None, result.error
    backward = result.backward
    return replay_payload(backward.before, backward.recorder, backward.names, source=source, lines=result.lines)


@pytest.mark.parametrize("program", ["seed", "mlp3", "loop", "wide"])
def test_each_number_sent_beside_a_text_is_the_number_the_text_writes(program):
    # the numbers travel as the engine prints them (format_float, float32's shortest form): the JSON text of each is
    # the text's own word for it, never a double's 17 digits (what gzip packs nearly free beside the text)
    payload = _replayed(program)
    flows = [f for g in payload["groups"] for r in g["runs"] for f in r["came_in"] + r["sent"]]
    said = [
        *[(n[key], n[f"{key}_range"]) for n in payload["nodes"] for key in ("value", "grad", "wide")],
        *[(e["label"], e["label_range"]) for e in payload["edges"]],
        *[
            (e[k], e[f"{k}_range"])
            for e in payload["events"]
            if e["kind"] == "GradientRegistered"
            for k in ("value", "total")
        ],
        *[(f["value"], f["value_range"]) for f in flows],
    ]
    sizes = set()
    for text, numbers in [(t, r) for t, r in said if r is not None]:
        words = _WORD.findall(text)
        if not isinstance(numbers, dict):  # four or fewer: every number, written out in its place, nested as the text
            every = list(np.ravel(numbers))
            assert words == [json.dumps(n) for n in every], text
            if isinstance(numbers, list):  # nested as the text nests them: the tensor the text writes, read as JSON
                assert json.loads(text[text.find("[") : text.rfind("]") + 1]) == numbers, text
            assert any(len(w.partition("e")[0].replace("-", "").replace(".", "").lstrip("0")) > 4 for w in words), text
            sizes.add(1)
            continue
        size, low, high = math.prod(numbers["shape"]), json.dumps(numbers["low"]), json.dumps(numbers["high"])
        if size > 16:  # more: Python's summary, its shape then its least and greatest number as the engine prints them
            assert words == [str(d) for d in numbers["shape"]] + ([low] if low == high else [low, high]), text
        else:  # 5 to 16, written out, whole (a part's flow) or each to four digits (a box)
            floats = [float(w) for w in words]
            shown = {low, high} <= set(words) or {four_digits(numbers["low"]), four_digits(numbers["high"])} <= set(
                words
            )
            assert shown, text
            assert min(floats) == pytest.approx(numbers["low"], rel=1e-3), text
            assert max(floats) == pytest.approx(numbers["high"], rel=1e-3), text
        sizes.add(16 if size <= 16 else 17)
    # the seed's numbers are all short ([5.0, 7.0]): none is sent, its texts are said as they are
    assert sizes == {"seed": set(), "wide": {1, 16, 17}}.get(program, {1, 16}), sizes
    # what each step sent, every number (an exercise checks answers, a folded part adds them): printed as the engine
    # prints it too
    sent = [n for e in payload["events"] if e["kind"] == "GradientRegistered" and e["numbers"] for n in e["numbers"]]
    assert sent and all(json.dumps(n) == format_float(n) for n in sent), sent
    if program != "seed":
        assert any(len(json.dumps(n)) > 8 for n in sent)  # long numbers among them, each sent as printed


def test_a_gradient_that_is_not_finite_travels_as_json_the_browser_can_read():
    """log(0) makes -inf and inf·0 NaN: JSON has neither, and the browser's JSON.parse refused the whole stage
    ("No number after minus sign in JSON"). Such a step sends no numbers (the exercise does not ask it); the others
    still do."""
    ad = Device.numpy().autodiff(keep_values=True)
    w = Tensor.from_floats([0.0, 1.0, 2.0], ad).require_grad()
    v = Tensor.from_floats([0.5, 1.5, 2.5], ad).require_grad()
    loss = (w.log() * w).sum() + (v * v).sum()
    run = recorded_backward(loss)
    payload = replay_payload(run.before, run.recorder, node_names({"w": w, "v": v, "loss": loss}))

    def refused(constant: str) -> None:
        raise AssertionError(f"the browser cannot parse {constant}")

    packed = wire(payload)["packed"]
    json.loads(gzip.decompress(base64.b64decode(packed)), parse_constant=refused)
    registered = [e for e in payload["events"] if e["kind"] == "GradientRegistered"]
    into_w = [e for e in registered if e["node"] == int(w.node_id)]  # w·log(w) sends -inf·0 and log(0)
    assert [e["total_full"] for e in into_w] == ["[-inf, 0.0, 0.6931472]", "[nan, 1.0, 1.6931472]"]
    assert [e["numbers"] for e in into_w] == [None, None]
    into_v = [e["numbers"] for e in registered if e["node"] == int(v.node_id)]
    assert into_v == [[0.5, 1.5, 2.5]] * 2  # v·v sends v twice: a finite gradient is still checked
