"""The notebook widget from the installed wheel with its `notebook` extra: a notebook executed headless (nbclient, a
real kernel), as a course's notebook runs. Copied outside the repository by .ci/wheel, so only the installed package
is seen."""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json

import nbformat
from nbclient import NotebookClient

from autodiff.stage import GRAPHVIZ

SEED = """\
from autodiff import Device, Tensor
from autodiff.notebook import replay
ad = Device.numpy().autodiff(keep_values=True)
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
h = x * x
loss = (h + x * 3.0).sum()
stage = replay(loss)
stage"""
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def unpacked(wired: dict) -> dict:
    """The widget's payload as its browser reads it: the packed part (gzip-compressed JSON in base64) restored."""
    rest = {key: value for key, value in wired.items() if key != "packed"}
    return {**json.loads(gzip.decompress(base64.b64decode(wired["packed"]))), **rest}


def _run(*cells: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    return notebook


def _shown(cell: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """A stage's two outputs: its still picture (for where no kernel runs), then the live widget."""
    still, live = cell.outputs
    assert still.output_type == live.output_type == "display_data"
    assert "text/html" in still.data and VIEW not in still.data and VIEW in live.data and "text/html" not in live.data
    return still, live


def test_replay_is_the_cells_value_and_its_state_holds_the_backward():
    notebook = _run(SEED, "print(x.grad(stage.grads).tolist())")
    still, output = _shown(notebook.cells[0])
    state = notebook.metadata.widgets[STATE]["state"]
    model = state[output.data[VIEW]["model_id"]]
    assert model["model_name"] == "AnyModel"
    payload = unpacked(model["state"]["payload"])
    assert payload["mode"] == "replay"
    # the nodes carry the notebook's own variable names
    assert [n["title"] for n in payload["nodes"]] == ["x", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"]
    # x's gradient as the stage ends it: 2x + 3 at x = [1, 2], summed over its two paths
    x_id = next(n["id"] for n in payload["nodes"] if n["name"] == "x")
    last = [e for e in payload["events"] if e["kind"] == "GradientRegistered" and e["node"] == x_id][-1]
    assert json.loads(last["total_full"]) == [5.0, 7.0]
    # the module is the app's stage (bundled); Graphviz is the kernel's one model, which the stage names: no network
    esm = model["state"]["_esm"]
    assert "function mountStage" in esm and "export default {" in esm and GRAPHVIZ.read_text()[:4000] not in esm
    graphviz = state[model["state"]["graphviz"].removeprefix("IPY_MODEL_")]["state"]
    assert graphviz["source"] == GRAPHVIZ.read_text()
    assert graphviz["sha256"] == hashlib.sha256(GRAPHVIZ.read_bytes()).hexdigest()
    assert notebook.cells[1].outputs[0].text.strip() == "[5.0, 7.0]"
    # the still names each node, says x's gradient in its table, and is found by the live stage by its marker
    picture = still.data["text/html"]
    assert f'data-autodiff-still="{model["state"]["still"]}"' in picture
    for title in ("x", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"):
        assert f">{html.escape(title)}</text>" in picture, title
    assert '<th scope="row" style="text-align:left;padding:2px 12px 2px 0">x</th>' in picture
    assert ">[5.0, 7.0]</td>" in picture and "grad [5.0, 7.0] · kept" in picture
    assert "Gradients kept:\n  x: [5.0, 7.0]" in still.data["text/plain"]  # a text-only viewer reads it too


def test_ten_replays_save_graphviz_once(tmp_path):
    ten = """
for _ in range(10):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    display(replay(((x * x) + x * 3.0).sum()))"""
    cell = SEED.replace("stage = replay(loss)\nstage", ten)
    notebook = _run(cell)
    assert len(notebook.cells[0].outputs) == 20  # ten stills, ten stages
    saved = tmp_path / "ten.ipynb"
    nbformat.write(notebook, saved)
    text = saved.read_text()
    marker = json.dumps(GRAPHVIZ.read_text()[:4000])[1:-1]  # the module's first 4,000 characters, as JSON holds them
    print(f"a notebook of 10 replays saves {saved.stat().st_size:,} bytes with Graphviz {text.count(marker)} time(s)")
    assert text.count(marker) == 1


def test_graph_draws_a_tensor_without_a_backward():
    notebook = _run(SEED.replace("stage = replay(loss)\nstage", "from autodiff.notebook import graph\ngraph(h)"))
    still, output = _shown(notebook.cells[0])
    assert "The graph that made h, as it is now." in still.data["text/html"]
    model = notebook.metadata.widgets[STATE]["state"][output.data[VIEW]["model_id"]]
    payload = unpacked(model["state"]["payload"])
    assert payload["mode"] == "static" and payload["events"] == []
    assert [n["title"] for n in payload["nodes"]] == ["x", "h = x·x"]  # h's graph only, not loss's nodes


def test_a_bad_argument_is_a_sentence_in_the_cell():
    cell = nbformat.v4.new_code_cell("from autodiff.notebook import replay\nreplay(3)")
    notebook = nbformat.v4.new_notebook(cells=[cell])
    client = NotebookClient(notebook, timeout=60, kernel_name="python3", allow_errors=True)
    client.execute()
    (output,) = notebook.cells[0].outputs
    assert output.output_type == "error" and output.ename == "TypeError"
    assert output.evalue == "replay() takes a Tensor, not int."


def test_only_this_graphs_own_tensors_name_its_nodes():
    notebook = _run(
        SEED.replace("stage = replay(loss)\nstage", "h"),  # the student looks at h: IPython keeps it as `_1`
        "ad2 = Device.numpy().autodiff(keep_values=True)\ny = Tensor.from_floats([3.0], ad2).require_grad()\n"
        "stage = replay((y * y).sum())\nstage",
    )
    _, output = _shown(notebook.cells[1])
    model = notebook.metadata.widgets[STATE]["state"][output.data[VIEW]["model_id"]]
    # y·y has h's node id on its own device: h (another device's) and `_1` (the history) name nothing here
    assert [n["title"] for n in unpacked(model["state"]["payload"])["nodes"]] == ["y", "y·y", "sum(y·y)"]
